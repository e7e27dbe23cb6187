//! The sorted-hash memtable (Speedb's design, docs/design.md §4.6): O(1) point
//! lookups in a fixed bucket array, and ordered iteration from sorted runs
//! that a background thread cuts from the write list.
//!
//! Files: `arena.rs` (nodes, write list), `buckets.rs` (lock-free sorted
//! chains, the pipeline adapter), `runs.rs` (cuts, merges, run iterators).
//! The vector memtable reuses `arena.rs` and `runs.rs`.
//!
//! # Write
//! Copy the entry into an arena node, link it into its bucket's chain (CAS),
//! push it onto the write list (CAS on the anchor). Writers never wait for
//! sorting: they only wake the sorter every `vector_limit` inserts.
//!
//! # Read
//! `get` walks one chain; `multi_get` runs the keys through the software
//! pipeline of [`pipeline`] (a single key skips it).
//!
//! # Iterate
//! `iter` cuts: it sorts whatever the sorter has not (waiting for a cut in
//! progress), then iterates a heap over the runs that exist at that moment;
//! with nothing written since the last cut it reuses the runs as they are.
//! Entries written after the iterator's creation are not in it (the Db only
//! ever reads them at later sequence numbers).
//!
//! # Background sorter (one thread per memtable)
//! Cuts the write list into runs of ≤ `vector_limit` entries when that many
//! are pending (or when writes have paused), merges adjacent runs by the
//! tiered policy, and merges everything into one run once writes pause, so
//! a settled memtable seeks with one binary search. It exits when the
//! memtable is dropped. If the thread cannot be started, iterators still
//! cut for themselves (correct, only slower).
//!
//! # Memory
//! Arena blocks + bucket array (8 bytes/bucket) + run vectors (8 bytes per
//! sorted entry): all of it is reported.
//!
//! Paranoid memory checks (docs/design.md §4.4) are not implemented for this
//! memtable: the option is ignored.
#![allow(unsafe_code)]

pub(crate) mod arena;
mod buckets;
pub(crate) mod pipeline;
pub(crate) mod runs;

#[cfg(test)]
mod tests;

/// The user-key hash of the buckets, shared with the skip list's point
/// index.
pub(crate) use buckets::hash as key_hash;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{lookup_trailer, pack_trailer, SequenceNumber, ValueType};
use crate::memtable::arena::BlockPool;
use crate::memtable::{BatchLookup, EntryRef, MemTable};
use arena::{Arena, NodeRef};
use buckets::{Buckets, PipelinedLookup};
#[cfg(test)]
use pipeline::PipelineCounts;
use pipeline::{lookup_batch, PipelineStats, DEFAULT_WINDOW};
use runs::Runs;

/// Default number of buckets.
pub const DEFAULT_BUCKETS: usize = 1_000_000;
/// Default maximum entries per cut run.
pub const DEFAULT_VECTOR_LIMIT: usize = 10_000;
/// Writes must have paused this long before the sorter merges down to one run.
const IDLE: Duration = Duration::from_millis(20);

/// Options of a [`SortedHashMemTable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedHashOptions {
    /// Names the memtable in errors: `memtable#<id>`.
    pub id: u64,
    /// Number of buckets.
    pub buckets: usize,
    /// Maximum entries per run cut by the sorter.
    pub vector_limit: usize,
    /// Lookups in flight in `multi_get`'s pipeline.
    pub pipeline_window: usize,
    /// Arena block size in bytes.
    pub arena_block_size: usize,
    /// Back arena blocks with transparent huge pages.
    pub huge_pages: bool,
}

impl Default for SortedHashOptions {
    fn default() -> Self {
        SortedHashOptions {
            id: 0,
            buckets: DEFAULT_BUCKETS,
            vector_limit: DEFAULT_VECTOR_LIMIT,
            pipeline_window: DEFAULT_WINDOW,
            arena_block_size: crate::memtable::arena::HUGE_PAGE,
            huge_pages: true,
        }
    }
}

/// What the memtable and its sorter share.
struct Shared {
    arena: Arena,
    buckets: Buckets,
    runs: Runs,
    entries: AtomicU64,
    vector_limit: usize,
    stop: AtomicBool,
}

/// The sorted-hash memtable (see the module docs).
pub struct SortedHashMemTable {
    shared: Arc<Shared>,
    sorter: Option<Thread>,
    id: AtomicU64,
    window: usize,
    pipeline: PipelineStats,
}

impl SortedHashMemTable {
    /// An empty memtable with its sorter thread started. Allocating the
    /// bucket array is the slow part (see the standby in the memtable
    /// factory).
    #[cfg(test)]
    pub fn new(opts: SortedHashOptions) -> SortedHashMemTable {
        SortedHashMemTable::with_pool(opts, None)
    }

    /// An empty memtable with its sorter thread started, whose arena takes
    /// its blocks from `pool` first (and gives them back when dropped).
    /// Allocating the bucket array is the slow part (see the standby in the
    /// memtable factory).
    pub(crate) fn with_pool(
        opts: SortedHashOptions,
        pool: Option<Arc<BlockPool>>,
    ) -> SortedHashMemTable {
        let shared = Arc::new(Shared {
            arena: Arena::over(arena::BlockArena::with_pool(
                opts.arena_block_size,
                opts.huge_pages,
                pool,
            )),
            buckets: Buckets::new(opts.buckets),
            runs: Runs::new(),
            entries: AtomicU64::new(0),
            vector_limit: opts.vector_limit.max(1),
            stop: AtomicBool::new(false),
        });
        let worker = Arc::clone(&shared);
        let sorter = std::thread::Builder::new()
            .name("batchkv-sort".into())
            .spawn(move || sorter_loop(&worker))
            .ok()
            .map(|h| h.thread().clone());
        SortedHashMemTable {
            shared,
            sorter,
            id: AtomicU64::new(opts.id),
            window: opts.pipeline_window.max(1),
            pipeline: PipelineStats::default(),
        }
    }

    /// Renames the memtable (a standby gets its id when it is taken).
    pub(crate) fn set_id(&self, id: u64) {
        // Relaxed: only used to name errors.
        self.id.store(id, Ordering::Relaxed);
    }

    /// Pipeline counters of `multi_get` (separate from other statistics).
    #[cfg(test)]
    pub(crate) fn pipeline_counts(&self) -> PipelineCounts {
        self.pipeline.get()
    }

    fn resolve(&self, n: Option<NodeRef>) -> Result<Option<EntryRef<'_>>> {
        let name = || format!("memtable#{}", self.id.load(Ordering::Relaxed));
        n.map(|n| self.shared.arena.resolve(n, name)).transpose()
    }

    #[cfg(test)]
    fn runs_snapshot(&self) -> runs::RunList {
        self.shared.runs.snapshot()
    }
}

impl Drop for SortedHashMemTable {
    fn drop(&mut self) {
        // Release: the sorter's acquire load sees the request.
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = &self.sorter {
            t.unpark();
        }
    }
}

fn sorter_loop(sh: &Shared) {
    let limit = sh.vector_limit as u64;
    let mut seen = sh.entries.load(Ordering::Relaxed);
    let mut last_change = Instant::now();
    loop {
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        let entries = sh.entries.load(Ordering::Relaxed);
        if entries != seen {
            seen = entries;
            last_change = Instant::now();
        }
        let idle = last_change.elapsed() >= IDLE;
        let pending = sh.runs.pending();
        if pending >= limit || (idle && pending > 0) {
            // SAFETY: `sh` owns the arena the nodes live in and outlives the call.
            unsafe { sh.runs.cut(sh.vector_limit, false) };
            continue;
        }
        // SAFETY: `sh` owns the arena and outlives the call; this sorter
        // thread is the only caller of `merge_step` for this memtable.
        if unsafe { sh.runs.merge_step(idle) } {
            continue;
        }
        std::thread::park_timeout(IDLE);
    }
}

impl MemTable for SortedHashMemTable {
    fn kind(&self) -> &'static str {
        "sorted_hash"
    }

    fn insert(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let sh = &*self.shared;
        let n = sh.arena.alloc_node(user_key, pack_trailer(seq, t), value);
        // SAFETY: `n` is fresh and unlinked; the arena lives in `sh`.
        unsafe { sh.buckets.insert(n) };
        sh.runs.push(n);
        // Relaxed: a statistic (and the sorter's heuristic).
        let count = sh.entries.fetch_add(1, Ordering::Relaxed) + 1;
        if count.is_multiple_of(sh.vector_limit as u64) {
            if let Some(t) = &self.sorter {
                t.unpark();
            }
        }
        Ok(())
    }

    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>> {
        // SAFETY: the arena lives as long as `self`.
        let n = unsafe { self.shared.buckets.find(user_key, lookup_trailer(seq)) };
        self.resolve(n)
    }

    fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        // SAFETY: the arena lives as long as `self`.
        let n = unsafe { self.shared.buckets.find(user_key, lookup_trailer(seq)) };
        let Some(e) = self.resolve(n)? else {
            return Ok(None);
        };
        // SAFETY: `resolve` returned an entry, so `n` is a node of this
        // memtable's arena, which lives as long as `self`.
        let ik = unsafe { n.map(|n| n.ikey()) }.unwrap_or_default();
        Ok(Some((super::vector::node_sequence(ik), e)))
    }

    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        _strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        if keys.len() == 1 {
            if let Some(e) = self.get(keys[0], seq)? {
                found(0, e);
            }
            return Ok(());
        }
        let table = PipelinedLookup {
            buckets: &self.shared.buckets,
            lookup: lookup_trailer(seq),
        };
        let mut err = None;
        let counts = lookup_batch(&table, keys, self.window, |i, n| {
            match self.resolve(Some(n)) {
                Ok(Some(e)) => found(i, e),
                Ok(None) => {}
                Err(e) => err = Some(e),
            }
        });
        self.pipeline.add(counts);
        err.map_or(Ok(()), Err)
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        let cutting = self.shared.runs.pending() > 0;
        // SAFETY: `self` owns the arena and is kept by the iterator.
        let runs = unsafe { self.shared.runs.cut(self.shared.vector_limit, false) };
        if cutting {
            if let Some(t) = &self.sorter {
                t.unpark(); // it may merge the runs this cut added
            }
        }
        runs::iter_runs(self, &runs)
    }

    fn approximate_memory_usage(&self) -> usize {
        let sh = &*self.shared;
        sh.arena.memory_usage() + sh.buckets.memory_usage() + sh.runs.memory_usage()
    }

    fn bytes_in_use(&self) -> usize {
        let sh = &*self.shared;
        sh.arena.bytes_in_use() + sh.buckets.memory_usage() + sh.runs.memory_usage()
    }

    fn num_entries(&self) -> u64 {
        self.shared.entries.load(Ordering::Relaxed)
    }
}
