//! Cumulative counters since open ([`Db::statistics`]): what the engine
//! did, for monitoring and for write amplification. Each counter is a
//! relaxed atomic bumped once per call (not per key). The write path's
//! counters are bumped by one thread at a time (the group's leader); the
//! read path's ([`ReadCounters`]) by every reading thread, so they are
//! sharded: each thread adds to a cache line of its own.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::latency::LatencyStats;
use super::Db;

/// The live counters, in `DbCore`.
#[derive(Default)]
pub(crate) struct Counters {
    pub keys_written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    /// `get` and `multi_get` calls (sharded per thread).
    pub reads: ReadCounters,
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

/// The read path's counters, one shard per thread (threads beyond the
/// shard count share). A counter all readers bump is a cache line every
/// `get` of every thread writes: with two threads reading, it moved
/// between their cores on each call.
pub(crate) struct ReadCounters {
    /// A power of two: the CPUs available at open, at least 1, at most
    /// [`MAX_READ_SHARDS`].
    shards: Box<[ReadShard]>,
}

/// Shards at most (a thread index is masked into them).
const MAX_READ_SHARDS: usize = 64;

/// One thread's read counters, alone on their cache lines (128 bytes:
/// the adjacent-line prefetcher pairs lines).
#[derive(Default)]
#[repr(align(128))]
struct ReadShard {
    gets: AtomicU64,
    multi_gets: AtomicU64,
    multi_get_keys: AtomicU64,
}

/// The next thread's shard index (threads number themselves on first use).
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's index, masked by each [`ReadCounters`] into its shards.
    static THREAD_INDEX: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

impl Default for ReadCounters {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let n = cpus.next_power_of_two().min(MAX_READ_SHARDS);
        ReadCounters {
            shards: (0..n).map(|_| ReadShard::default()).collect(),
        }
    }
}

impl ReadCounters {
    fn mine(&self) -> &ReadShard {
        let i = THREAD_INDEX.with(|i| *i);
        // `len` is a power of two: the mask keeps the index in bounds.
        &self.shards[i & (self.shards.len() - 1)]
    }

    /// Counts a `get`.
    pub fn get(&self) {
        Counters::add(&self.mine().gets, 1);
    }

    /// Counts a `multi_get` of `keys` keys.
    pub fn multi_get(&self, keys: u64) {
        let s = self.mine();
        Counters::add(&s.multi_gets, 1);
        Counters::add(&s.multi_get_keys, keys);
    }

    /// (gets, multi_gets, multi_get_keys) summed over the shards.
    fn totals(&self) -> (u64, u64, u64) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.shards.iter().fold((0, 0, 0), |(g, m, k), s| {
            (
                g + get(&s.gets),
                m + get(&s.multi_gets),
                k + get(&s.multi_get_keys),
            )
        })
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
        let (gets, multi_gets, multi_get_keys) = c.reads.totals();
        Statistics {
            keys_written: get(&c.keys_written),
            bytes_written: get(&c.bytes_written),
            wal_bytes: get(&c.wal_bytes),
            wal_syncs: get(&c.wal_syncs),
            gets,
            multi_gets,
            multi_get_keys,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads counted on many threads (more than there are shards, so some
    /// share one) add up to every call and key.
    #[test]
    fn read_counters_sum_every_threads_shard() {
        let c = ReadCounters::default();
        let threads = c.shards.len() * 2 + 1;
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.get();
                        c.multi_get(3);
                    }
                });
            }
        });
        let n = threads as u64 * 1000;
        assert_eq!(c.totals(), (n, n, 3 * n));
    }
}
