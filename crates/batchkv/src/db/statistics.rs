//! Cumulative counters since open ([`Db::statistics`]): what the engine
//! did, for monitoring and for write amplification. Each counter is a
//! relaxed atomic bumped once per call (not per key), so the hot paths pay
//! one uncontended add.

use std::sync::atomic::{AtomicU64, Ordering};

use super::latency::LatencyStats;
use super::Db;

/// The live counters, in `DbCore`.
#[derive(Default)]
pub(crate) struct Counters {
    pub keys_written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub gets: AtomicU64,
    pub multi_gets: AtomicU64,
    pub multi_get_keys: AtomicU64,
    pub hinted_inserts: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub stall_micros: AtomicU64,
    /// A gauge, not a counter: writers waiting now for a flush or an L0
    /// compaction to make room (`batchkv.is-write-stopped`).
    pub writers_stopped: AtomicU64,
    /// Latency histograms (when `Options::statistics`).
    pub latency: super::latency::Latencies,
    pub ingested_files: AtomicU64,
    pub ingested_bytes: AtomicU64,
}

impl Counters {
    /// Relaxed: statistics only; no ordering with the data they count.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// A snapshot of the engine's counters since open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Statistics {
    /// Entries (puts and deletes) written by acknowledged writes.
    pub keys_written: u64,
    /// Bytes of those write batches (keys, values and framing).
    pub bytes_written: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// WAL fsyncs for `sync` writes.
    pub wal_syncs: u64,
    /// `get` calls.
    pub gets: u64,
    /// `multi_get` / `multi_get_with` calls, and the keys they asked for.
    pub multi_gets: u64,
    /// Keys asked for by `multi_get` calls.
    pub multi_get_keys: u64,
    /// Memtable inserts that started their search at the insert hint
    /// their write carried (`WriteBatch::put_hinted`); hints of another
    /// memtable, of a node a newer version overtook, or of a taller node
    /// than one level are not counted.
    pub hinted_inserts: u64,
    /// Flushes completed, and the bytes of the tables they wrote.
    pub flushes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Bytes of the input tables of completed compactions.
    pub compaction_bytes_read: u64,
    /// Bytes of the tables completed compactions wrote.
    pub compaction_bytes_written: u64,
    /// Microseconds writers spent stalled or slowed down (L0 triggers, too
    /// many memtables).
    pub stall_micros: u64,
    /// Block cache lookups that found the block. With a shared
    /// [`Cache`](crate::Cache) (`Options::block_cache`), the lookups of
    /// every database using it since the cache was made.
    pub block_cache_hits: u64,
    /// Block cache lookups that missed (shared caches: as for hits).
    pub block_cache_misses: u64,
    /// Latency of `get` calls (all zero with `Options::statistics` off).
    pub get_latency: LatencyStats,
    /// Latency of `multi_get` / `multi_get_with` calls.
    pub multi_get_latency: LatencyStats,
    /// Latency of `multi_get` calls divided by their keys, counted once
    /// per key.
    pub multi_get_per_key_latency: LatencyStats,
    /// Latency of `write` calls (and `put`, `delete`, `delete_range`),
    /// including waiting for the group commit and stalls.
    pub write_latency: LatencyStats,
    /// Files added by `ingest_external_file`.
    pub ingested_files: u64,
    /// Bytes of those files.
    pub ingested_bytes: u64,
}

impl Statistics {
    /// Bytes written to tables (flushes and compactions) per byte written
    /// by users; 0 before any write.
    pub fn write_amplification(&self) -> f64 {
        if self.bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes + self.compaction_bytes_written) as f64 / self.bytes_written as f64
    }
}

impl Db {
    /// The engine's counters since open.
    pub fn statistics(&self) -> Statistics {
        let core = self.core();
        let c = &core.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let stats = self.stats();
        let cache = core.tables.cache_stats();
        Statistics {
            keys_written: get(&c.keys_written),
            bytes_written: get(&c.bytes_written),
            wal_bytes: get(&c.wal_bytes),
            wal_syncs: get(&c.wal_syncs),
            gets: get(&c.gets),
            multi_gets: get(&c.multi_gets),
            multi_get_keys: get(&c.multi_get_keys),
            hinted_inserts: get(&c.hinted_inserts),
            flushes: stats.flushes,
            flush_bytes: get(&c.flush_bytes),
            compactions: stats.compactions,
            compaction_bytes_read: get(&c.compaction_bytes_read),
            compaction_bytes_written: get(&c.compaction_bytes_written),
            stall_micros: get(&c.stall_micros),
            block_cache_hits: cache.map_or(0, |s| s.hits),
            block_cache_misses: cache.map_or(0, |s| s.misses),
            get_latency: c.latency.get.snapshot(),
            multi_get_latency: c.latency.multi_get.snapshot(),
            multi_get_per_key_latency: c.latency.multi_get_per_key.snapshot(),
            write_latency: c.latency.write.snapshot(),
            ingested_files: get(&c.ingested_files),
            ingested_bytes: get(&c.ingested_bytes),
        }
    }
}
