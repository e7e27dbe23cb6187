//! Sorted runs: the ordered view of a write list, shared by the sorted-hash
//! memtable (cut by its background sorter or by an iterator) and the vector
//! memtable (cut by the first read after writes).
//!
//! A *cut* takes every node on the write list, sorts it into one or more
//! runs (at most `limit` nodes each) and appends them to the run list. Runs
//! are immutable `Arc<Run>`s and the list is swapped whole ([`ArcSwap`]), so a
//! reader or iterator keeps the runs it started with while a merge replaces
//! two adjacent runs by one: merging can never free what an iterator reads
//! (the use-after-free Speedb removed its merge for, docs/design.md §4.6).
//!
//! Merge policy ([`pick_tiered`]): merge adjacent runs `i, i+1` when
//! `len(i) ≤ 2·len(i+1)`, so sizes fall geometrically from old to new and a
//! memtable of n entries has O(log n) runs; an idle memtable is merged down
//! to one run ([`Runs::merge_step`] with `all`).
//!
//! Sorting compares a 16-byte big-endian prefix of the user key kept beside
//! each node pointer, dereferencing nodes (a cache miss each) only on ties,
//! so sorting a large cut is not dominated by misses.
//!
//! # Thread safety
//! Cuts and installs are serialized by `lock`; readers use `snapshot()` and
//! never block. Merges run outside the lock and install only if the two runs
//! are still in place (only one merging thread exists per memtable).
#![allow(unsafe_code)]

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

use super::arena::{NodeRef, WriteList};
use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{
    compare_internal_key_parts, compare_internal_keys, trailer, user_key, TRAILER_LEN,
};
use crate::prefetch::prefetch_read;

/// One sorted vector of nodes (internal-key order).
pub(crate) struct Run {
    nodes: Vec<NodeRef>,
}

/// The runs of a memtable at one moment, oldest first.
pub(crate) type RunList = Arc<Vec<Arc<Run>>>;

impl Run {
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
}

/// The write list and run list of one memtable, plus counters.
///
/// # Invariants
/// 1. `pending` ≥ the number of nodes pushed and not yet in an installed
///    run: a push counts the node *before* linking it, a cut subtracts only
///    after installing. So `pending == 0` (acquire) proves every node counted
///    so far is in `snapshot()`.
/// 2. Runs hold disjoint node sets; their union plus the write list is every
///    node pushed.
pub(crate) struct Runs {
    list: WriteList,
    /// Nodes counted but not yet in installed runs (invariant 1).
    pending: AtomicU64,
    /// Serializes cuts and installs of a new list.
    lock: Mutex<()>,
    current: ArcSwap<Vec<Arc<Run>>>,
    /// Cuts that sorted at least one node.
    sorts: AtomicU64,
    /// Pairs of runs merged.
    merges: AtomicU64,
    /// Bytes of the current runs' node vectors.
    bytes: AtomicUsize,
}

/// Sort key: the first 16 bytes of the user key, big-endian, zero-padded.
fn prefix(n: NodeRef) -> (u64, u64) {
    // SAFETY: called only during a cut, whose caller keeps the arena alive.
    let ik = unsafe { n.ikey() };
    let u = user_key(ik);
    let mut b = [0u8; 16];
    let l = u.len().min(16);
    b[..l].copy_from_slice(&u[..l]);
    let both = u128::from_be_bytes(b);
    ((both >> 64) as u64, both as u64)
}

/// Internal-key order of two nodes.
///
/// # Safety
/// Both nodes' arenas must be alive.
#[inline]
unsafe fn cmp_nodes(a: NodeRef, b: NodeRef) -> Ordering {
    // SAFETY: the caller keeps the arena alive (this function's contract).
    unsafe { compare_internal_keys(a.ikey(), b.ikey()) }
}

/// Sorts nodes into internal-key order (prefix first; see module docs).
fn sort_nodes(nodes: &[NodeRef]) -> Run {
    let mut keyed: Vec<((u64, u64), NodeRef)> = nodes.iter().map(|&n| (prefix(n), n)).collect();
    keyed.sort_unstable_by(|a, b| {
        // A zero-padded prefix orders like the user keys unless equal
        // (a shorter key pads with zeros and is the smaller one).
        // SAFETY: the cut's caller keeps the arena alive.
        a.0.cmp(&b.0).then_with(|| unsafe { cmp_nodes(a.1, b.1) })
    });
    Run {
        nodes: keyed.into_iter().map(|(_, n)| n).collect(),
    }
}

/// How far ahead [`merge_two`] prefetches in each run: enough to cover a
/// miss at one comparison per ~10 ns, few enough for L1.
const MERGE_AHEAD: usize = 16;

/// Merges two sorted runs into one.
///
/// # Safety
/// The runs' arena must be alive.
unsafe fn merge_two(a: &Run, b: &Run) -> Run {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.nodes.len() && j < b.nodes.len() {
        // A run's nodes lie anywhere in the arena, so each comparison
        // reads two lines that are likely not cached: keep the keys
        // MERGE_AHEAD places ahead in both runs in flight (each step
        // advances one run, so every key is requested before it is read).
        if let Some(n) = a.nodes.get(i + MERGE_AHEAD) {
            prefetch_read(n.key_addr());
        }
        if let Some(n) = b.nodes.get(j + MERGE_AHEAD) {
            prefetch_read(n.key_addr());
        }
        // SAFETY: the caller keeps the arena alive (this function's contract).
        if unsafe { cmp_nodes(a.nodes[i], b.nodes[j]) }.is_le() {
            out.push(a.nodes[i]);
            i += 1;
        } else {
            out.push(b.nodes[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a.nodes[i..]);
    out.extend_from_slice(&b.nodes[j..]);
    Run { nodes: out }
}

/// The pair `(i, i+1)` the tiered policy merges next, newest first.
pub(crate) fn pick_tiered(lens: &[usize]) -> Option<usize> {
    (0..lens.len().saturating_sub(1))
        .rev()
        .find(|&i| lens[i] <= 2 * lens[i + 1])
}

impl Runs {
    pub(crate) fn new() -> Runs {
        Runs {
            list: WriteList::new(),
            pending: AtomicU64::new(0),
            lock: Mutex::new(()),
            current: ArcSwap::from_pointee(Vec::new()),
            sorts: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            bytes: AtomicUsize::new(0),
        }
    }

    /// Adds a fully written node to the write list.
    pub(crate) fn push(&self, n: NodeRef) {
        // Relaxed: the node is published by the list's release CAS, and the
        // caller's later release (the visible sequence) orders this count
        // before any reader that needs the node (invariant 1).
        self.pending.fetch_add(1, AtomicOrdering::Relaxed);
        self.list.push(n);
    }

    /// Nodes pushed but not yet sorted into a run (an upper bound).
    pub(crate) fn pending(&self) -> u64 {
        // Acquire: pairs with the cut's release subtraction, so seeing 0
        // means the cut's install is visible.
        self.pending.load(AtomicOrdering::Acquire)
    }

    /// The current runs (never blocks).
    pub(crate) fn snapshot(&self) -> RunList {
        self.current.load_full()
    }

    fn install(&self, runs: Vec<Arc<Run>>) -> RunList {
        let bytes = runs
            .iter()
            .map(|r| r.nodes.capacity() * std::mem::size_of::<NodeRef>())
            .sum();
        // Relaxed: a statistic.
        self.bytes.store(bytes, AtomicOrdering::Relaxed);
        let runs = Arc::new(runs);
        self.current.store(Arc::clone(&runs));
        runs
    }

    /// Sorts everything on the write list into runs of at most `limit` nodes and
    /// returns the resulting list; with `merge_inline`, also applies the
    /// tiered merge policy before returning. If the list is empty this only
    /// returns the current runs (so an iterator reuses them).
    ///
    /// # Safety
    /// The arena of the nodes on the write list must be alive during the call.
    pub(crate) unsafe fn cut(&self, limit: usize, merge_inline: bool) -> RunList {
        if self.pending() == 0 {
            return self.snapshot();
        }
        let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the caller keeps the arena alive (this function's contract).
        let nodes = unsafe { self.list.take_all() };
        if nodes.is_empty() {
            // Another thread cut (and installed, under the lock) while we
            // waited, or a counted node is not linked yet (its write is not
            // visible to any reader yet).
            return self.snapshot();
        }
        let mut runs: Vec<Arc<Run>> = self.snapshot().as_ref().clone();
        for chunk in nodes.chunks(limit.max(1)) {
            runs.push(Arc::new(sort_nodes(chunk)));
        }
        // Relaxed: statistics.
        self.sorts.fetch_add(1, AtomicOrdering::Relaxed);
        if merge_inline {
            loop {
                let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
                let Some(i) = pick_tiered(&lens) else { break };
                // SAFETY: the caller keeps the arena alive (this function's contract).
                let m = unsafe { merge_two(&runs[i], &runs[i + 1]) };
                runs.splice(i..i + 2, [Arc::new(m)]);
                self.merges.fetch_add(1, AtomicOrdering::Relaxed);
            }
        }
        let runs = self.install(runs);
        // Release: the install above happens-before a reader seeing 0.
        self.pending
            .fetch_sub(nodes.len() as u64, AtomicOrdering::Release);
        runs
    }

    /// Merges one pair of adjacent runs outside the lock: the tiered pair,
    /// or with `all` the newest pair if any. Returns false if there was
    /// nothing to merge. Only one thread may call this per memtable.
    ///
    /// # Safety
    /// The runs' arena must be alive during the call.
    pub(crate) unsafe fn merge_step(&self, all: bool) -> bool {
        let snap = self.snapshot();
        let lens: Vec<usize> = snap.iter().map(|r| r.len()).collect();
        let i = match pick_tiered(&lens) {
            Some(i) => i,
            None if all && snap.len() >= 2 => snap.len() - 2,
            None => return false,
        };
        let (a, b) = (Arc::clone(&snap[i]), Arc::clone(&snap[i + 1]));
        // SAFETY: the caller keeps the arena alive (this function's contract).
        let merged = Arc::new(unsafe { merge_two(&a, &b) });
        let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut runs: Vec<Arc<Run>> = self.snapshot().as_ref().clone();
        // Cuts only append, so the pair is still at `i` (checked anyway).
        if runs.len() > i + 1 && Arc::ptr_eq(&runs[i], &a) && Arc::ptr_eq(&runs[i + 1], &b) {
            runs.splice(i..i + 2, [merged]);
            self.install(runs);
            // Relaxed: a statistic.
            self.merges.fetch_add(1, AtomicOrdering::Relaxed);
        }
        true
    }

    /// Bytes held by the current runs' vectors.
    pub(crate) fn memory_usage(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    /// Cuts that sorted nodes so far.
    #[cfg(test)]
    pub(crate) fn sorts(&self) -> u64 {
        self.sorts.load(AtomicOrdering::Relaxed)
    }

    /// Pairs of runs merged so far.
    #[cfg(test)]
    pub(crate) fn merges(&self) -> u64 {
        self.merges.load(AtomicOrdering::Relaxed)
    }
}

/// The newest version of `user` with trailer ≤ `trailer_bound` across
/// `runs` (binary search in each run).
///
/// # Safety
/// The runs' arena must be alive during the call and while the returned
/// node is read.
pub(crate) unsafe fn find_in_runs(runs: &[Arc<Run>], user: &[u8], lookup: u64) -> Option<NodeRef> {
    let mut best: Option<(u64, NodeRef)> = None;
    for r in runs {
        let i = r.nodes.partition_point(|&n| {
            // SAFETY: the caller keeps the runs' arena alive (this function's
            // contract), so every node of a run is readable.
            unsafe { compare_internal_key_parts(n.ikey(), user, lookup) }.is_lt()
        });
        if let Some(&n) = r.nodes.get(i) {
            // SAFETY: as above, the caller keeps the arena alive.
            let ik = unsafe { n.ikey() };
            if user_key(ik) == user {
                let t = trailer(ik);
                if best.is_none_or(|(bt, _)| t > bt) {
                    best = Some((t, n));
                }
            }
        }
    }
    best.map(|(_, n)| n)
}

/// An iterator over one run; holds the memtable (`owner`) so the arena
/// outlives it.
struct RunIter {
    run: Arc<Run>,
    /// Current index; `run.len()` when not valid.
    pos: usize,
    err: Option<Error>,
    _owner: Arc<dyn Send + Sync>,
}

impl RunIter {
    fn key_at(&self, i: usize) -> &[u8] {
        // SAFETY: `_owner` keeps the arena of every node of `run` alive as
        // long as `self`.
        unsafe { self.run.nodes[i].ikey() }
    }

    fn check_target(&mut self, target: &[u8]) -> bool {
        if target.len() < TRAILER_LEN {
            self.pos = self.run.len();
            self.err = Some(Error::InvalidArgument(format!(
                "seek target of {} bytes is not an internal key",
                target.len()
            )));
            return false;
        }
        true
    }

    fn lower_bound(&self, target: &[u8], inclusive: bool) -> usize {
        let n = &self.run.nodes;
        n.partition_point(|&x| {
            // SAFETY: as in `key_at`.
            let c = compare_internal_keys(unsafe { x.ikey() }, target);
            c.is_lt() || (inclusive && c.is_eq())
        })
    }
}

impl InternalIterator for RunIter {
    fn valid(&self) -> bool {
        self.pos < self.run.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.run.len().checked_sub(1).unwrap_or(self.run.len());
    }
    fn seek(&mut self, target: &[u8]) {
        if self.check_target(target) {
            self.pos = self.lower_bound(target, false);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.check_target(target) {
            let i = self.lower_bound(target, true);
            self.pos = i.checked_sub(1).unwrap_or(self.run.len());
        }
    }
    fn next(&mut self) {
        if self.valid() {
            self.pos += 1;
        }
    }
    fn prev(&mut self) {
        if self.valid() {
            self.pos = self.pos.checked_sub(1).unwrap_or(self.run.len());
        }
    }
    fn key(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        self.key_at(self.pos)
    }
    fn value(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        // SAFETY: as in `key_at`.
        unsafe { self.run.nodes[self.pos].value() }
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// An iterator over the union of `runs`, keeping `owner` (the memtable that
/// owns their arena) alive: the run itself for one run, else a heap merge.
pub(crate) fn iter_runs(owner: Arc<dyn Send + Sync>, runs: &RunList) -> Box<dyn InternalIterator> {
    let one = |run: Arc<Run>| -> Box<dyn InternalIterator> {
        let pos = run.len();
        Box::new(RunIter {
            run,
            pos,
            err: None,
            _owner: Arc::clone(&owner),
        })
    };
    match runs.len() {
        0 => one(Arc::new(Run { nodes: Vec::new() })),
        1 => one(Arc::clone(&runs[0])),
        _ => Box::new(MergingIterator::new(
            runs.iter().map(|r| one(Arc::clone(r))).collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiered_policy_keeps_sizes_geometric() {
        assert_eq!(pick_tiered(&[]), None);
        assert_eq!(pick_tiered(&[10]), None);
        assert_eq!(pick_tiered(&[100, 10]), None);
        assert_eq!(pick_tiered(&[100, 10, 5]), Some(1));
        assert_eq!(pick_tiered(&[100, 60, 5]), Some(0));
        // Simulate single-entry cuts: the run count stays logarithmic.
        let mut lens: Vec<usize> = Vec::new();
        for _ in 0..10_000 {
            lens.push(1);
            while let Some(i) = pick_tiered(&lens) {
                let m = lens[i] + lens[i + 1];
                lens.splice(i..i + 2, [m]);
            }
            assert!(lens.len() <= 2 * 14, "{} runs", lens.len());
        }
        assert_eq!(lens.iter().sum::<usize>(), 10_000);
    }
}
