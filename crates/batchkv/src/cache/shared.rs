//! [`Cache`]: the public handle to a block cache, which several databases
//! (and so all their column families) in one process can share —
//! rust-rocksdb's `Cache` given to `BlockBasedOptions::set_block_cache`.
//!
//! Without one, each database makes a cache of its own of
//! [`Options::block_cache_size`](crate::Options::block_cache_size) bytes.
//! With one ([`Options::block_cache`](crate::Options::block_cache)), every
//! database given the same handle caches its data blocks there, charged
//! once against the one capacity. Block keys cannot collide across
//! databases: each table reader is given a cache id unique within the
//! cache (`BlockCache::new_id`, kept per file by the table cache).

use std::sync::Arc;

use super::BlockCache;

/// A block cache of decoded SST data blocks with a byte capacity: a
/// sharded CLOCK cache (a hit sets one flag instead of relinking a list).
/// Cheap to clone; every clone is the same cache.
///
/// ```
/// use batchkv::{Cache, Db, Options};
/// let dir = tempfile::tempdir()?;
/// let cache = Cache::new(64 << 20);
/// let opts = Options {
///     block_cache: Some(cache.clone()),
///     ..Options::default()
/// };
/// let a = Db::open(dir.path().join("a"), opts.clone())?;
/// let b = Db::open(dir.path().join("b"), opts)?;
/// a.put(b"k", b"from a")?;
/// b.put(b"k", b"from b")?;
/// assert!(cache.usage() <= cache.capacity());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[doc(alias = "new_lru_cache")]
pub struct Cache {
    blocks: Arc<BlockCache>,
}

impl Cache {
    /// A cache holding at most `capacity` bytes of blocks (split evenly
    /// over its shards; 0 caches nothing). rust-rocksdb's
    /// `Cache::new_lru_cache(capacity)`.
    #[doc(alias = "new_lru_cache")]
    pub fn new(capacity: usize) -> Cache {
        Cache {
            blocks: Arc::new(BlockCache::new(capacity)),
        }
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.blocks.capacity()
    }

    /// Bytes of blocks held now, by every database using the cache. A
    /// closed database's blocks stay (and are charged) until evicted.
    pub fn usage(&self) -> usize {
        self.blocks.usage()
    }

    /// The cache the table readers use.
    pub(crate) fn blocks(&self) -> &Arc<BlockCache> {
        &self.blocks
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .finish()
    }
}
