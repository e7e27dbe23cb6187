//! The table cache: open SST readers by file number, at most
//! `max_open_files` of them (least recently used closed first), and the
//! block cache every table it opens reads through: the database's own, or
//! a [`Cache`](crate::Cache) shared with other databases.
//!
//! # Thread safety
//! `TableCache` is `Send + Sync`; the map of open tables is behind one
//! `Mutex`, never held while a file is opened. A table evicted (closed)
//! while a reader or iterator holds its `Arc<Table>` stays valid until the
//! last holder drops it; the file is closed then.
//!
//! # Invariants
//! 1. At most `max_open_files` tables are held by the cache (readers may
//!    hold more for a while, see above).
//! 2. Blocks are cached under (cache id, offset). A table's cache id comes
//!    from the block cache (unique there, so databases sharing it never
//!    share a key) and is kept per file number until the file is deleted
//!    ([`TableCache::evict`]), so a table reopened after eviction finds its
//!    blocks still cached; file numbers are never reused within a database.
//! 3. With `max_open_files` unlimited the cache never closes a table, and
//!    [`TableCache::reader`] pins each reader in the file's metadata
//!    ([`PinnedTable`](crate::version::edit::PinnedTable)), where reads find it without a lock. It is the
//!    `Arc<Table>` the cache holds, so a file has one reader (two only if
//!    two threads opened it at once; both stay valid, as above).

use std::collections::HashMap;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::cache::lru::LruCache;
use crate::cache::{BlockCache, Cache};
use crate::error::Result;
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::sst::{Table, TableOptions};
use crate::version::FileMetaData;

pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    opts: TableOptions,
    /// Open tables, each charged 1.
    open: Mutex<LruCache<u64, Arc<Table>>>,
    /// `None` when there is no shared cache and `block_cache_size` is 0.
    block_cache: Option<Arc<BlockCache>>,
    /// Block-cache id of each live table file opened so far (invariant 2).
    cache_ids: Mutex<HashMap<u64, u64>>,
    /// `max_open_files` is unlimited: readers are pinned (invariant 3).
    pin_readers: bool,
}

/// A table reader as [`TableCache::reader`] hands it out: borrowed from the
/// file's metadata when pinned there, else a counted reference.
pub(crate) enum TableRef<'f> {
    Pinned(&'f Arc<Table>),
    Counted(Arc<Table>),
}

impl Deref for TableRef<'_> {
    type Target = Arc<Table>;

    #[inline]
    fn deref(&self) -> &Arc<Table> {
        match self {
            TableRef::Pinned(t) => t,
            TableRef::Counted(t) => t,
        }
    }
}

impl TableCache {
    /// A cache of tables in `dir`, bounded by `opts.max_open_files`, whose
    /// tables read through `shared` if given, else through a block cache
    /// of its own of `opts.block_cache_size` bytes.
    pub fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        opts: TableOptions,
        shared: Option<&Cache>,
    ) -> TableCache {
        let block_cache = match shared {
            Some(cache) => Some(Arc::clone(cache.blocks())),
            None => (opts.block_cache_size > 0)
                .then(|| Arc::new(BlockCache::new(opts.block_cache_size))),
        };
        TableCache {
            dir,
            fs,
            open: Mutex::new(LruCache::new(opts.max_open_files.max(1))),
            pin_readers: opts.max_open_files == usize::MAX,
            opts,
            block_cache,
            cache_ids: Mutex::new(HashMap::new()),
        }
    }

    /// The reader of live table `file`: the one pinned in its metadata,
    /// else [`get`](TableCache::get)'s, which is pinned there when
    /// `max_open_files` is unlimited (invariant 3).
    #[inline]
    pub fn reader<'f>(&self, file: &'f FileMetaData) -> Result<TableRef<'f>> {
        if let Some(t) = file.pinned.get() {
            return Ok(TableRef::Pinned(t));
        }
        let table = self.get(file.number)?;
        Ok(if self.pin_readers {
            TableRef::Pinned(file.pinned.pin(table))
        } else {
            TableRef::Counted(table)
        })
    }

    /// The reader for table `number`, opening (and verifying) it if it is
    /// not open.
    pub fn get(&self, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&number)
        {
            return Ok(t);
        }
        // Opened outside the lock: two threads may both open it; the later
        // insert replaces the earlier, and both readers stay valid.
        let path = filename::path(&self.dir, FileKind::Table, number);
        let file = self.fs.open_random_access(&path)?;
        let cache = self.block_cache.as_ref().map(|c| {
            let id = *self
                .cache_ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(number)
                .or_insert_with(|| c.new_id());
            (Arc::clone(c), id)
        });
        let table = Table::open_cached(file, path.display().to_string(), self.opts.clone(), cache)?;
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(number, Arc::clone(&table), 1);
        Ok(table)
    }

    /// Forgets table `number` (its file is being deleted), and its
    /// block-cache id: its blocks are no longer found and age out.
    pub fn evict(&self, number: u64) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
        self.cache_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
    }

    /// Number of tables held open by the cache.
    #[cfg(test)]
    pub fn open_count(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Bytes the open table readers hold outside the block cache
    /// ([`Table::memory_usage`]).
    pub fn readers_memory(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|t| t.memory_usage())
            .sum()
    }

    /// The block cache's counters, if there is a cache (a shared cache's
    /// count the lookups of every database using it).
    pub fn cache_stats(&self) -> Option<crate::cache::CacheStats> {
        self.block_cache.as_ref().map(|c| c.stats())
    }

    /// The shared block cache, if enabled.
    #[cfg(test)]
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::PosixFs;
    use crate::iter::InternalIterator;
    use crate::key::{append_internal_key, ValueType};
    use crate::sst::{BlockReadOptions, TableBuilder};
    use crate::version::edit::PinnedTable;

    fn write_table(dir: &std::path::Path, number: u64, n: usize, opts: &TableOptions) {
        let path = filename::path(dir, FileKind::Table, number);
        let mut b = TableBuilder::new(
            PosixFs.new_writable(&path).unwrap(),
            path.display().to_string(),
            opts.clone(),
        )
        .unwrap();
        for i in 0..n {
            let mut k = Vec::new();
            append_internal_key(
                &mut k,
                format!("t{number}-k{i:05}").as_bytes(),
                1,
                ValueType::Value,
            );
            b.add(&k, format!("value-{i}-{}", "v".repeat(50)).as_bytes())
                .unwrap();
        }
        b.finish().unwrap();
    }

    fn opts(max_open_files: usize, block_cache_size: usize) -> TableOptions {
        TableOptions {
            block_size: 512,
            max_open_files,
            block_cache_size,
            ..TableOptions::default()
        }
    }

    #[test]
    fn open_tables_are_bounded_and_evicted_tables_stay_usable() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(3, 1 << 20);
        for n in 1..=6 {
            write_table(dir.path(), n, 100, &o);
        }
        let cache = TableCache::new(dir.path().to_path_buf(), Arc::new(PosixFs), o, None);
        let held = cache.get(1).unwrap();
        for n in 2..=6 {
            cache.get(n).unwrap();
            assert!(cache.open_count() <= 3);
        }
        assert_eq!(cache.open_count(), 3);
        // Table 1 was closed by the cache but the held Arc still reads.
        let ro = BlockReadOptions::default();
        assert_eq!(
            held.get_with(b"t1-k00042", 5, ro).unwrap().unwrap().1,
            format!("value-42-{}", "v".repeat(50)).into_bytes()
        );
        // Reopening table 1 finds its blocks in the block cache.
        let bc = Arc::clone(cache.block_cache().unwrap());
        let before = bc.stats();
        let again = cache.get(1).unwrap();
        assert!(!Arc::ptr_eq(&held, &again), "table 1 was reopened");
        again.get_with(b"t1-k00042", 5, ro).unwrap().unwrap();
        let after = bc.stats();
        assert_eq!(after.hits, before.hits + 1);
        assert_eq!(after.misses, before.misses);
        cache.evict(1);
        assert_eq!(cache.open_count(), 2);
    }

    fn meta(number: u64) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            num_entries: 0,
            global_seqno: 0,
            pinned: PinnedTable::default(),
        }
    }

    #[test]
    fn unlimited_open_files_pin_the_cached_reader_in_the_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(usize::MAX, 1 << 20);
        write_table(dir.path(), 4, 50, &o);
        let cache = TableCache::new(dir.path().to_path_buf(), Arc::new(PosixFs), o, None);
        let file = meta(4);
        assert!(file.pinned.get().is_none());
        let first = cache.reader(&file).unwrap();
        assert!(matches!(first, TableRef::Pinned(_)));
        // The pinned reader is the cache's, and later reads borrow it.
        assert!(Arc::ptr_eq(&first, &cache.get(4).unwrap()));
        assert!(Arc::ptr_eq(&first, file.pinned.get().unwrap()));
        let again = cache.reader(&file).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let ro = BlockReadOptions::default();
        assert!(again.get_with(b"t4-k00007", 5, ro).unwrap().is_some());
        // A copy of the metadata (a version built from an edit) keeps it;
        // the pin is not part of what metadata compare by.
        assert!(Arc::ptr_eq(&first, file.clone().pinned.get().unwrap()));
        assert_eq!(file, meta(4));
    }

    #[test]
    fn bounded_open_files_read_through_the_cache_and_pin_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(1, 1 << 20);
        write_table(dir.path(), 5, 50, &o);
        write_table(dir.path(), 6, 50, &o);
        let cache = TableCache::new(dir.path().to_path_buf(), Arc::new(PosixFs), o, None);
        let (five, six) = (meta(5), meta(6));
        let r5 = cache.reader(&five).unwrap();
        assert!(matches!(r5, TableRef::Counted(_)));
        let r6 = cache.reader(&six).unwrap();
        assert!(matches!(r6, TableRef::Counted(_)));
        assert!(five.pinned.get().is_none() && six.pinned.get().is_none());
        // The bound holds: opening 6 closed 5 in the cache (5's reader
        // stays usable while held).
        assert_eq!(cache.open_count(), 1);
        let ro = BlockReadOptions::default();
        assert!(r5.get_with(b"t5-k00007", 5, ro).unwrap().is_some());
        assert!(r6.get_with(b"t6-k00007", 5, ro).unwrap().is_some());
    }

    #[test]
    fn fill_cache_false_reads_without_inserting() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(10, 1 << 20);
        write_table(dir.path(), 7, 300, &o);
        let cache = TableCache::new(dir.path().to_path_buf(), Arc::new(PosixFs), o, None);
        let t = cache.get(7).unwrap();
        let bc = Arc::clone(cache.block_cache().unwrap());
        let no_fill = BlockReadOptions {
            fill_cache: false,
            ..BlockReadOptions::default()
        };
        for _ in 0..3 {
            assert!(t.get_with(b"t7-k00100", 5, no_fill).unwrap().is_some());
        }
        assert_eq!(bc.stats().inserts, 0);
        assert_eq!(bc.usage(), 0);
        assert_eq!(bc.stats().misses, 3);
        // A filling read inserts once; later reads hit.
        for _ in 0..3 {
            assert!(t
                .get_with(b"t7-k00100", 5, BlockReadOptions::default())
                .unwrap()
                .is_some());
        }
        let st = bc.stats();
        assert_eq!((st.inserts, st.hits, st.misses), (1, 2, 4));
        assert!(bc.usage() > 0);
        // A scan with fill_cache = false leaves the cache as it was.
        let mut it = Arc::clone(&t).iter_with(no_fill);
        let mut n = 0;
        it.seek_to_first();
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 300);
        assert_eq!(bc.stats().inserts, 1);
    }

    #[test]
    fn zero_block_cache_size_disables_the_block_cache() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(10, 0);
        write_table(dir.path(), 2, 10, &o);
        let cache = TableCache::new(dir.path().to_path_buf(), Arc::new(PosixFs), o, None);
        assert!(cache.block_cache().is_none());
        assert!(cache
            .get(2)
            .unwrap()
            .get_with(b"t2-k00003", 5, BlockReadOptions::default())
            .unwrap()
            .is_some());
    }
}
