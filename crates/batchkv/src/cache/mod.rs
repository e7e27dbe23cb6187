//! Caches: [`lru::LruCache`], a single-threaded least-recently-used map
//! with a byte (or count) capacity, used by the table cache (open files,
//! in `db/table_cache.rs`); [`clock::ClockTable`], an open-addressing
//! table with CLOCK eviction; [`BlockCache`], the sharded, thread-safe
//! cache of decoded SST data blocks built from it; and [`Cache`], the
//! public handle to a block cache that several databases can share.

pub(crate) mod block_cache;
pub(crate) mod clock;
pub(crate) mod lru;
mod shared;

pub(crate) use block_cache::{BlockCache, CacheStats};
pub use shared::Cache;
