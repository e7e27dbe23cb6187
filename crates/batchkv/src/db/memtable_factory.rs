//! Creates memtables of the configured kind (`memtable` option).
//!
//! For `sorted_hash` it keeps one *standby* memtable ready: a background
//! thread builds it (allocating and faulting in the bucket array, ~8 MB for
//! 1M buckets, and starting its sorter), and [`MemTableFactory::create`]
//! takes it, so a memtable switch — which runs under the database state
//! lock, with writers waiting — never pays for the allocation. The builder
//! then prepares the next one. If no standby is ready (two switches in quick
//! succession) `create` builds one inline and counts a miss.
//!
//! Every memtable it creates allocates from one [`BlockPool`], which keeps
//! up to a write buffer of a dropped memtable's arena blocks for the next
//! memtable (see "Recycling" in `memtable/arena.rs`).
//!
//! # Thread safety
//! `create` may be called from any thread. The builder thread is stopped
//! and joined when the factory is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::memtable::arena::BlockPool;
use crate::memtable::skiplist::{SkipListMemTable, SkipListOptions};
use crate::memtable::sorted_hash::{SortedHashMemTable, SortedHashOptions};
use crate::memtable::vector::{VectorMemTable, VectorOptions};
use crate::memtable::with_range_dels::WithRangeDels;
use crate::memtable::{MemTable, MemTableKind};
use crate::options::Options;

/// The slot the builder fills and `create` empties.
struct StandbySlot {
    ready: Mutex<Option<SortedHashMemTable>>,
    cv: Condvar,
    stop: AtomicBool,
}

/// Builds memtables (see the module docs).
pub(crate) struct MemTableFactory {
    kind: MemTableKind,
    paranoid: bool,
    huge_pages: bool,
    arena_block_size: usize,
    /// Skip-list point index buckets (0: none; `memtable_point_index`).
    point_index_buckets: usize,
    window: usize,
    /// The arena blocks of dropped memtables, for the next ones.
    pool: Arc<BlockPool>,
    standby: Option<Arc<StandbySlot>>,
    builder: Option<JoinHandle<()>>,
    /// Switches that took the pre-built standby.
    standby_hits: AtomicU64,
    /// Switches that had to build a sorted-hash memtable inline.
    standby_misses: AtomicU64,
}

impl MemTableFactory {
    /// A factory for `opts.memtable`; starts the standby builder for
    /// `sorted_hash` (without one if the thread cannot start: every create
    /// then builds inline).
    pub(crate) fn new(opts: &Options) -> MemTableFactory {
        // Arena blocks are an eighth of the write buffer (as in RocksDB),
        // capped at 8 MiB; huge pages need 2 MiB blocks.
        let arena_block_size = (opts.write_buffer_size / 8).clamp(4096, 8 << 20);
        let huge_pages = opts.memtable_huge_pages && arena_block_size >= 2 << 20;
        let mut f = MemTableFactory {
            kind: opts.memtable,
            paranoid: opts.paranoid_memory_checks,
            huge_pages,
            arena_block_size,
            // 64-byte buckets: an eighth of the write buffer.
            point_index_buckets: match opts.memtable_point_index {
                true => opts.write_buffer_size / 512,
                false => 0,
            },
            window: opts.hash_pipeline_window,
            // One write buffer: what the memtable being replaced held.
            pool: Arc::new(BlockPool::new(
                arena_block_size,
                huge_pages,
                opts.write_buffer_size,
            )),
            standby: None,
            builder: None,
            standby_hits: AtomicU64::new(0),
            standby_misses: AtomicU64::new(0),
        };
        if let MemTableKind::SortedHash { .. } = f.kind {
            let slot = Arc::new(StandbySlot {
                ready: Mutex::new(None),
                cv: Condvar::new(),
                stop: AtomicBool::new(false),
            });
            let worker = Arc::clone(&slot);
            let opts = f.sorted_hash_options(0);
            let pool = Arc::clone(&f.pool);
            if let Ok(h) = std::thread::Builder::new()
                .name("batchkv-standby".into())
                .spawn(move || build_standbys(&worker, &opts, &pool))
            {
                f.standby = Some(slot);
                f.builder = Some(h);
            }
        }
        f
    }

    fn sorted_hash_options(&self, id: u64) -> SortedHashOptions {
        let (buckets, vector_limit) = match self.kind {
            MemTableKind::SortedHash {
                buckets,
                vector_limit,
            } => (buckets, vector_limit),
            _ => (
                crate::memtable::sorted_hash::DEFAULT_BUCKETS,
                crate::memtable::sorted_hash::DEFAULT_VECTOR_LIMIT,
            ),
        };
        SortedHashOptions {
            id,
            buckets,
            vector_limit,
            pipeline_window: self.window,
            arena_block_size: self.arena_block_size,
            huge_pages: self.huge_pages,
        }
    }

    /// A new, empty memtable named `memtable#<id>`, able to hold range
    /// tombstones.
    pub(crate) fn create(&self, id: u64) -> Arc<dyn MemTable> {
        match self.kind {
            MemTableKind::SkipList => Arc::new(WithRangeDels::new(SkipListMemTable::with_pool(
                SkipListOptions {
                    id,
                    paranoid_checks: self.paranoid,
                    huge_pages: self.huge_pages,
                    arena_block_size: self.arena_block_size,
                    point_index_buckets: self.point_index_buckets,
                },
                Some(Arc::clone(&self.pool)),
            ))),
            MemTableKind::Vector => Arc::new(WithRangeDels::new(VectorMemTable::with_pool(
                VectorOptions {
                    id,
                    arena_block_size: self.arena_block_size,
                    huge_pages: self.huge_pages,
                },
                Some(Arc::clone(&self.pool)),
            ))),
            MemTableKind::SortedHash { .. } => {
                if let Some(m) = self.take_standby() {
                    m.set_id(id);
                    // Relaxed: statistics.
                    self.standby_hits.fetch_add(1, Ordering::Relaxed);
                    return Arc::new(WithRangeDels::new(m));
                }
                self.standby_misses.fetch_add(1, Ordering::Relaxed);
                Arc::new(WithRangeDels::new(SortedHashMemTable::with_pool(
                    self.sorted_hash_options(id),
                    Some(Arc::clone(&self.pool)),
                )))
            }
        }
    }

    fn take_standby(&self) -> Option<SortedHashMemTable> {
        let slot = self.standby.as_ref()?;
        let m = slot
            .ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if m.is_some() {
            slot.cv.notify_all(); // build the next one
        }
        m
    }

    /// (hits, misses): switches that took the standby / built inline.
    #[cfg(test)]
    pub(crate) fn standby_counts(&self) -> (u64, u64) {
        (
            self.standby_hits.load(Ordering::Relaxed),
            self.standby_misses.load(Ordering::Relaxed),
        )
    }

    /// Waits until a standby is ready (tests).
    #[cfg(test)]
    pub(crate) fn wait_for_standby(&self) {
        let Some(slot) = &self.standby else { return };
        let mut g = slot.ready.lock().unwrap_or_else(PoisonError::into_inner);
        while g.is_none() {
            g = slot.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The builder thread: keep one standby ready until stopped.
fn build_standbys(slot: &StandbySlot, opts: &SortedHashOptions, pool: &Arc<BlockPool>) {
    loop {
        {
            let mut g = slot.ready.lock().unwrap_or_else(PoisonError::into_inner);
            // Acquire: pairs with the factory's release store at drop.
            while g.is_some() && !slot.stop.load(Ordering::Acquire) {
                g = slot.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
            }
            if slot.stop.load(Ordering::Acquire) {
                return;
            }
        }
        let m = SortedHashMemTable::with_pool(opts.clone(), Some(Arc::clone(pool)));
        *slot.ready.lock().unwrap_or_else(PoisonError::into_inner) = Some(m);
        slot.cv.notify_all();
    }
}

impl Drop for MemTableFactory {
    fn drop(&mut self) {
        if let Some(slot) = &self.standby {
            slot.stop.store(true, Ordering::Release);
            // Taking the lock orders the store before the builder's check.
            let _g = slot.ready.lock().unwrap_or_else(PoisonError::into_inner);
            slot.cv.notify_all();
        }
        if let Some(h) = self.builder.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueType;

    fn opts(kind: &str) -> Options {
        format!("memtable={kind};write_buffer_size=1MB")
            .parse()
            .unwrap()
    }

    #[test]
    fn each_kind_builds_its_memtable() {
        for (spec, kind) in [
            ("skiplist", "skiplist"),
            ("vector", "vector"),
            ("sorted_hash:1000:10", "sorted_hash"),
        ] {
            let f = MemTableFactory::new(&opts(spec));
            let m = f.create(7);
            assert_eq!(m.kind(), kind);
            m.insert(1, crate::key::ValueType::Value, b"k", b"v")
                .unwrap();
            assert_eq!(
                m.get(b"k", 1).unwrap(),
                Some(crate::memtable::EntryRef::Value(b"v"))
            );
        }
    }

    /// A memtable of each kind fills blocks a dropped one left in the pool,
    /// and reads back what it holds, not what the blocks held before.
    #[test]
    fn a_memtable_reuses_the_blocks_of_a_dropped_one() {
        for spec in ["skiplist", "vector", "sorted_hash:1000:10"] {
            let f = MemTableFactory::new(&opts(spec));
            let value = [7u8; 200];
            let first = f.create(1);
            for i in 0..2000u32 {
                first
                    .insert(u64::from(i) + 1, ValueType::Value, &i.to_be_bytes(), &value)
                    .unwrap();
            }
            assert!(first.approximate_memory_usage() > 256 << 10, "{spec}");
            drop(first);
            // A sorted-hash memtable's sorter thread lets go of the arena
            // when it sees the stop.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while f.pool.kept_bytes() == 0 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(f.pool.kept_bytes() > 0, "{spec}: nothing kept");
            let second = f.create(2);
            for i in 0..2000u32 {
                let v = (i % 251) as u8;
                second
                    .insert(
                        u64::from(i) + 1,
                        ValueType::Value,
                        &i.to_be_bytes(),
                        &[v; 100],
                    )
                    .unwrap();
            }
            assert!(f.pool.reused_blocks() > 0, "{spec}: no block reused");
            for i in 0..2000u32 {
                let v = (i % 251) as u8;
                assert_eq!(
                    second.get(&i.to_be_bytes(), u64::MAX >> 8).unwrap(),
                    Some(crate::memtable::EntryRef::Value(&[v; 100][..])),
                    "{spec}: key {i}"
                );
            }
            assert_eq!(
                second.get(&5000u32.to_be_bytes(), u64::MAX >> 8).unwrap(),
                None
            );
        }
    }

    #[test]
    fn a_switch_takes_the_prebuilt_standby() {
        let f = MemTableFactory::new(&opts("sorted_hash:5000:10"));
        for round in 1..=3u64 {
            f.wait_for_standby();
            let m = f.create(round);
            assert_eq!(m.kind(), "sorted_hash");
            assert_eq!(f.standby_counts(), (round, 0), "round {round}");
        }
        // Without waiting, a create may race the builder: then it counts a
        // miss, never a silent hit.
        let _ = f.create(9);
        let (h, m) = f.standby_counts();
        assert_eq!(h + m, 4);
    }
}

#[cfg(test)]
mod db_tests {
    use crate::db::Db;
    use crate::options::Options;

    /// Memtable switches inside a running Db take the pre-built standby
    /// (Speedb's standby became dead code after a hang fix: this proves ours
    /// is used).
    #[test]
    fn db_switches_use_the_standby() {
        let dir = tempfile::tempdir().unwrap();
        let opts: Options = "memtable=sorted_hash:4096:64;write_buffer_size=1MB"
            .parse()
            .unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        let counts = || {
            let st = crate::db::lock(&db.core().state);
            st.default_cf().memtables.standby_counts()
        };
        let (h0, m0) = counts();
        for round in 0..3u32 {
            // The builder thread never takes the state lock.
            crate::db::lock(&db.core().state)
                .default_cf()
                .memtables
                .wait_for_standby();
            db.put(format!("k{round}"), b"v").unwrap();
            db.flush().unwrap();
        }
        let (h, m) = counts();
        assert_eq!((h - h0, m - m0), (3, 0));
        assert_eq!(db.stats().memtable_kind, "sorted_hash");
        assert_eq!(db.get(b"k1").unwrap(), Some(b"v".to_vec()));
    }
}

#[cfg(test)]
mod measure {
    use std::time::{Duration, Instant};

    use super::*;

    fn percentiles(mut v: Vec<Duration>) -> String {
        v.sort();
        let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
        format!(
            "p50 {:?} p90 {:?} p99 {:?} max {:?}",
            p(0.5),
            p(0.9),
            p(0.99),
            v[v.len() - 1]
        )
    }

    /// The memtable-specific part of a switch is `create`: with the standby
    /// ready it is a slot take; without, it allocates and faults in the
    /// bucket array. Run with
    /// `cargo test -p batchkv --release measure_switch -- --ignored --nocapture`.
    #[test]
    #[ignore = "measurement"]
    fn measure_switch_create_with_and_without_standby() {
        let opts: Options = "memtable=sorted_hash".parse().unwrap();
        let f = MemTableFactory::new(&opts);
        let mut with = Vec::new();
        for i in 0..200 {
            // A switch every ~20 ms (a 64 MiB memtable fills in ≥ 100 ms).
            std::thread::sleep(Duration::from_millis(20));
            let t = Instant::now();
            let m = f.create(i);
            with.push(t.elapsed());
            drop(m);
        }
        let (hits, misses) = f.standby_counts();
        let mut without = Vec::new();
        for i in 0..50 {
            let t = Instant::now();
            let m = SortedHashMemTable::new(f.sorted_hash_options(i));
            without.push(t.elapsed());
            drop(m);
        }
        println!(
            "switch create, standby ready ({hits} hits, {misses} misses): {}",
            percentiles(with)
        );
        println!(
            "switch create, inline build (1M buckets): {}",
            percentiles(without)
        );
    }
}
