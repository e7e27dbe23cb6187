//! Caches: [`lru::LruCache`], a single-threaded least-recently-used map
//! with a byte (or count) capacity, and [`BlockCache`], the sharded,
//! thread-safe cache of decoded SST data blocks built from it. The table
//! cache (open files, in `db/table_cache.rs`) uses `LruCache` too.

pub(crate) mod block_cache;
pub(crate) mod lru;

pub(crate) use block_cache::{BlockCache, CacheStats};
