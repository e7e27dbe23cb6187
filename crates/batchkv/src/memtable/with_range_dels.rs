//! Range tombstones in memtables: [`MemRangeDels`], a small list kept beside
//! a memtable's point entries, and [`WithRangeDels`], the wrapper that gives
//! any [`MemTable`] one (the engine wraps every memtable it creates).
//!
//! A `delete_range` is one insert into the list — O(1) whatever the range
//! covers. Reads use a fragmented copy ([`FragmentedTombstones`]) rebuilt
//! lazily when tombstones were added since the last one; a memtable without
//! tombstones answers "none" from one atomic load.
//!
//! # Thread safety
//! `add` takes the list's mutex; readers load `count` and the cached
//! fragments lock-free, taking the mutex only to rebuild a stale cache.
//!
//! # Invariants
//! 1. `count` = `list.len()`, stored (Release) after the push under the
//!    mutex. The write path publishes the batch's sequence only after the
//!    insert, so a reader at sequence `s` that loads `count` (Acquire)
//!    counts every tombstone with sequence ≤ `s`.
//! 2. `cache.from` tombstones of `list` (a prefix: the list only grows)
//!    are in `cache.frags`; a cache with `from ≥ count` is current enough.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

use super::{BatchLookup, EntryRef, InsertHint, MemTable, NewEntry};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{SequenceNumber, ValueType};
use crate::range_del::{FragmentedTombstones, RangeTombstone};

/// Fragments built from the first `from` tombstones of the list.
#[derive(Default)]
struct Cached {
    from: usize,
    frags: Arc<FragmentedTombstones>,
}

/// The range tombstones of one memtable (see the module docs).
#[derive(Default)]
pub struct MemRangeDels {
    list: Mutex<Vec<RangeTombstone>>,
    count: AtomicUsize,
    bytes: AtomicUsize,
    cache: ArcSwap<Cached>,
}

impl MemRangeDels {
    /// Adds `[begin, end) @ seq`; an empty range is a no-op.
    pub(crate) fn add(&self, begin: &[u8], end: &[u8], seq: SequenceNumber) {
        if begin >= end {
            return;
        }
        let t = RangeTombstone {
            begin: begin.to_vec(),
            end: end.to_vec(),
            seq,
        };
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        // Relaxed: a statistic.
        self.bytes.fetch_add(t.bytes(), Ordering::Relaxed);
        list.push(t);
        // Release: invariant 1.
        self.count.store(list.len(), Ordering::Release);
    }

    /// Number of tombstones.
    pub(crate) fn len(&self) -> usize {
        // Acquire: invariant 1.
        self.count.load(Ordering::Acquire)
    }

    /// Bytes held by the tombstones.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The tombstones, fragmented; `None` when there are none (the common
    /// case, one atomic load).
    pub(crate) fn fragmented(&self) -> Option<Arc<FragmentedTombstones>> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let c = self.cache.load();
        if c.from >= n {
            return Some(Arc::clone(&c.frags));
        }
        drop(c);
        let list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        let c = self.cache.load();
        if c.from >= n {
            return Some(Arc::clone(&c.frags));
        }
        let frags = Arc::new(FragmentedTombstones::new(list.iter()));
        self.cache.store(Arc::new(Cached {
            from: list.len(),
            frags: Arc::clone(&frags),
        }));
        Some(frags)
    }

    /// A copy of every tombstone (flush writes them to the table).
    pub(crate) fn tombstones(&self) -> Vec<RangeTombstone> {
        self.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The largest sequence ≤ `seq` of a tombstone covering `key`, or 0.
    /// (Reads fetch [`MemRangeDels::fragmented`] once per stage instead:
    /// `db/lookup.rs`.)
    #[cfg(test)]
    pub(crate) fn max_covering(&self, key: &[u8], seq: SequenceNumber) -> SequenceNumber {
        match self.fragmented() {
            Some(f) => f.max_covering(key, seq),
            None => 0,
        }
    }
}

/// A memtable plus its range tombstones. Point operations go to `inner`;
/// an insert of type [`ValueType::RangeDeletion`] (key = begin, value =
/// end) goes to the tombstone list instead.
pub(crate) struct WithRangeDels<M> {
    inner: Arc<M>,
    dels: MemRangeDels,
}

impl<M: MemTable> WithRangeDels<M> {
    pub(crate) fn new(inner: M) -> WithRangeDels<M> {
        WithRangeDels {
            inner: Arc::new(inner),
            dels: MemRangeDels::default(),
        }
    }
}

impl<M: MemTable> MemTable for WithRangeDels<M> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn insert(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        if t == ValueType::RangeDeletion {
            self.dels.add(user_key, value, seq);
            return Ok(());
        }
        self.inner.insert(seq, t, user_key, value)
    }

    fn insert_many(&self, entries: &[NewEntry<'_>]) -> Result<usize> {
        if entries.iter().any(|e| e.t == ValueType::RangeDeletion) {
            for e in entries {
                self.insert(e.seq, e.t, e.user_key, e.value)?;
            }
            return Ok(0);
        }
        self.inner.insert_many(entries)
    }

    #[inline]
    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>> {
        self.inner.get(user_key, seq)
    }

    #[inline]
    fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        self.inner.get_versioned(user_key, seq)
    }

    #[inline]
    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        self.inner.multi_get(keys, seq, strategy, found)
    }

    #[inline]
    fn multi_get_hinted<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
        hint: &mut dyn FnMut(usize, InsertHint),
    ) -> Result<()> {
        self.inner
            .multi_get_hinted(keys, seq, strategy, found, hint)
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Arc::clone(&self.inner).iter()
    }

    fn approximate_memory_usage(&self) -> usize {
        self.inner.approximate_memory_usage() + self.dels.bytes()
    }

    fn bytes_in_use(&self) -> usize {
        self.inner.bytes_in_use() + self.dels.bytes()
    }

    fn num_entries(&self) -> u64 {
        self.inner.num_entries() + self.dels.len() as u64
    }

    fn range_dels(&self) -> Option<&MemRangeDels> {
        Some(&self.dels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::skiplist::{SkipListMemTable, SkipListOptions};

    #[test]
    fn tombstones_bypass_the_point_entries_and_are_fragmented_lazily() {
        let m = WithRangeDels::new(SkipListMemTable::new(SkipListOptions {
            huge_pages: false,
            arena_block_size: 4096,
            ..SkipListOptions::default()
        }));
        m.insert(1, ValueType::Value, b"b", b"v").unwrap();
        assert!(m.range_dels().unwrap().fragmented().is_none());
        m.insert(2, ValueType::RangeDeletion, b"a", b"c").unwrap();
        m.insert(3, ValueType::RangeDeletion, b"x", b"x").unwrap(); // empty: no-op
        assert_eq!(m.num_entries(), 2);
        assert_eq!(m.inner.num_entries(), 1, "not a point entry");
        let d = m.range_dels().unwrap();
        assert_eq!(d.max_covering(b"b", 5), 2);
        assert_eq!(d.max_covering(b"b", 1), 0);
        assert_eq!(d.max_covering(b"c", 5), 0);
        let first = d.fragmented().unwrap();
        assert!(Arc::ptr_eq(&first, &d.fragmented().unwrap()), "cached");
        m.insert(4, ValueType::RangeDeletion, b"b", b"z").unwrap();
        assert_eq!(d.max_covering(b"b", 5), 4, "the cache was refreshed");
        assert_eq!(
            m.get_versioned(b"b", 9).unwrap(),
            Some((1, EntryRef::Value(b"v")))
        );
        assert!(m.approximate_memory_usage() >= d.bytes() && d.bytes() > 0);
    }
}
