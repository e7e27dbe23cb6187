//! The vector memtable, for bulk loads (docs/design.md §4.5): writes append, reads
//! sort.
//!
//! # Write
//! Copy the entry into an arena node and push it onto the write list: an
//! arena bump under a short mutex and one CAS, no search at all. (Per-thread
//! buffers were not needed: the engine inserts from one write leader at a
//! time, so the critical section is never contended.)
//!
//! # Read, iterate, flush
//! The first read or iterator after writes *cuts*: it sorts the unsorted
//! tail (everything written since the last cut) into a new sorted run and
//! merges runs by the tiered policy of [`super::sorted_hash::runs`] (merge
//! adjacent runs while the older is at most twice the newer). Reads then
//! binary-search each run.
//!
//! Cost, for n entries: a bulk load then a flush (or first read) sorts once,
//! O(n log n), and never again. Reads with no writes in between are
//! O(r · log n) with r runs; interleaving writes and reads keeps
//! r = O(log n) runs and costs O(log n) amortized merge work per written
//! entry plus the sort of the tail. Never a full re-sort per read (RocksDB's
//! vector rep copies and sorts the whole vector on every read of a mutable
//! memtable, which made reads take seconds — nimbus-eth1 #3514).
//!
//! `multi_get` ignores the batch strategy: each key is a binary search.
//! Paranoid memory checks are not implemented for this memtable.
//!
//! # Thread safety
//! All methods may be called concurrently. Cuts are serialized; readers
//! that need a cut in progress wait for it, others read the last runs
//! without locking.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::arena::BlockPool;
use super::sorted_hash::arena::{Arena, BlockArena, NodeRef};
use super::sorted_hash::runs::{self, find_in_runs, Runs};
use super::{BatchLookup, EntryRef, MemTable};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{lookup_trailer, pack_trailer, SequenceNumber, ValueType};

/// Options of a [`VectorMemTable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorOptions {
    /// Names the memtable in errors: `memtable#<id>`.
    pub id: u64,
    /// Arena block size in bytes.
    pub arena_block_size: usize,
    /// Back arena blocks with transparent huge pages.
    pub huge_pages: bool,
}

/// The vector memtable (see the module docs).
pub struct VectorMemTable {
    arena: Arena,
    runs: Runs,
    entries: AtomicU64,
    id: u64,
}

impl VectorMemTable {
    /// An empty memtable.
    #[cfg(test)]
    pub fn new(opts: VectorOptions) -> VectorMemTable {
        VectorMemTable::with_pool(opts, None)
    }

    /// An empty memtable whose arena takes its blocks from `pool` first
    /// (and gives them back when dropped).
    pub(crate) fn with_pool(opts: VectorOptions, pool: Option<Arc<BlockPool>>) -> VectorMemTable {
        VectorMemTable {
            arena: Arena::over(BlockArena::with_pool(
                opts.arena_block_size,
                opts.huge_pages,
                pool,
            )),
            runs: Runs::new(),
            entries: AtomicU64::new(0),
            id: opts.id,
        }
    }

    /// Sorts the unsorted tail, if any, and returns the runs.
    fn sorted(&self) -> runs::RunList {
        // SAFETY: the arena lives as long as `self`.
        unsafe { self.runs.cut(usize::MAX, true) }
    }

    /// Number of sorts so far (a bulk load then a flush sorts once).
    #[cfg(test)]
    pub(crate) fn sorts(&self) -> u64 {
        self.runs.sorts()
    }

    /// Number of sorted runs (tests).
    #[cfg(test)]
    pub(crate) fn run_count(&self) -> usize {
        self.runs.snapshot().len()
    }

    fn resolve(&self, n: Option<NodeRef>) -> Result<Option<EntryRef<'_>>> {
        n.map(|n| self.arena.resolve(n, || format!("memtable#{}", self.id)))
            .transpose()
    }
}

/// The sequence number in an internal key's trailer (0 for a short key,
/// which `resolve` would have rejected).
pub(super) fn node_sequence(ik: &[u8]) -> SequenceNumber {
    if ik.len() < crate::key::TRAILER_LEN {
        return 0;
    }
    crate::key::trailer(ik) >> 8
}

impl MemTable for VectorMemTable {
    fn kind(&self) -> &'static str {
        "vector"
    }

    fn insert(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let n = self.arena.alloc_node(user_key, pack_trailer(seq, t), value);
        self.runs.push(n);
        // Relaxed: a statistic.
        self.entries.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>> {
        let runs = self.sorted();
        // SAFETY: the arena lives as long as `self`.
        let n = unsafe { find_in_runs(&runs, user_key, lookup_trailer(seq)) };
        self.resolve(n)
    }

    fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        let runs = self.sorted();
        // SAFETY: the arena lives as long as `self`.
        let n = unsafe { find_in_runs(&runs, user_key, lookup_trailer(seq)) };
        let Some(e) = self.resolve(n)? else {
            return Ok(None);
        };
        // SAFETY: `resolve` returned an entry, so `n` is a node of this
        // memtable's arena, which lives as long as `self`.
        let ik = unsafe { n.map(|n| n.ikey()) }.unwrap_or_default();
        Ok(Some((node_sequence(ik), e)))
    }

    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        _strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        let runs = self.sorted();
        let lookup = lookup_trailer(seq);
        for (i, k) in keys.iter().enumerate() {
            // SAFETY: the arena lives as long as `self`.
            let n = unsafe { find_in_runs(&runs, k, lookup) };
            if let Some(e) = self.resolve(n)? {
                found(i, e);
            }
        }
        Ok(())
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        let runs = self.sorted();
        runs::iter_runs(self, &runs)
    }

    fn approximate_memory_usage(&self) -> usize {
        self.arena.memory_usage() + self.runs.memory_usage()
    }

    fn bytes_in_use(&self) -> usize {
        self.arena.bytes_in_use() + self.runs.memory_usage()
    }

    fn num_entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }
}
