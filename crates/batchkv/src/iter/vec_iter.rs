//! `VecIterator`: an [`InternalIterator`] over an owned, sorted vector of
//! `(internal key, value)` pairs.
//!
//! Used by tests as a reference child for the merging and DB iterators, and
//! usable wherever a small sorted run is already in memory (for example a
//! flush that sorts a memtable snapshot).
//!
//! Invariant: `entries` is strictly ascending by [`compare_keys`]
//! (checked with `debug_assert!` in [`VecIterator::new`]).
//! Positions are indices; `pos == entries.len()` means "not valid".

use std::cmp::Ordering;

use crate::error::Result;
use crate::iter::merging::compare_keys;
use crate::iter::InternalIterator;

/// An iterator over an owned sorted vector of `(internal key, value)` pairs.
#[derive(Debug, Clone, Default)]
pub(crate) struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Index of the current entry; `entries.len()` when not valid.
    pos: usize,
}

impl VecIterator {
    /// Wraps entries already sorted by internal key with no duplicate keys.
    pub(crate) fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIterator {
        debug_assert!(
            entries
                .windows(2)
                .all(|w| compare_keys(&w[0].0, &w[1].0) == Ordering::Less),
            "VecIterator entries must be strictly ascending by internal key"
        );
        let pos = entries.len();
        VecIterator { entries, pos }
    }

    /// Sorts `entries` by internal key (dropping exact duplicate keys, the
    /// first occurrence wins) and wraps them.
    pub(crate) fn from_unsorted(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIterator {
        entries.sort_by(|a, b| compare_keys(&a.0, &b.0));
        entries.dedup_by(|later, earlier| compare_keys(&later.0, &earlier.0) == Ordering::Equal);
        VecIterator::new(entries)
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn invalidate(&mut self) {
        self.pos = self.entries.len();
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }

    fn seek_to_first(&mut self) {
        self.pos = 0;
    }

    fn seek_to_last(&mut self) {
        // Empty: 0 == len, which is "not valid".
        self.pos = self.entries.len().saturating_sub(1);
    }

    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|(k, _)| compare_keys(k, target) == Ordering::Less);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // Count of entries <= target; the last of them is the answer.
        let n = self
            .entries
            .partition_point(|(k, _)| compare_keys(k, target) != Ordering::Greater);
        match n.checked_sub(1) {
            Some(p) => self.pos = p,
            None => self.invalidate(),
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.pos += 1;
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        match self.pos.checked_sub(1) {
            Some(p) => self.pos = p,
            None => self.invalidate(),
        }
    }

    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// Test helper: a [`VecIterator`] that fails — becomes invalid with a
/// corruption status — as soon as it would position at entry `fail_at`.
#[cfg(test)]
pub(crate) struct FailingIterator {
    inner: VecIterator,
    fail_at: usize,
    failed: bool,
}

#[cfg(test)]
impl FailingIterator {
    pub(crate) fn new(entries: Vec<(Vec<u8>, Vec<u8>)>, fail_at: usize) -> FailingIterator {
        FailingIterator {
            inner: VecIterator::new(entries),
            fail_at,
            failed: false,
        }
    }

    fn check(&mut self) {
        if self.inner.valid() && self.inner.pos == self.fail_at {
            self.failed = true;
        }
    }
}

#[cfg(test)]
impl InternalIterator for FailingIterator {
    fn valid(&self) -> bool {
        !self.failed && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.check();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.check();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.check();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
        self.check();
    }
    fn next(&mut self) {
        self.inner.next();
        self.check();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.check();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        if self.failed {
            Err(crate::error::Error::corruption(
                "test-child",
                self.fail_at as u64,
                "injected failure",
            ))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{append_internal_key, ValueType};

    fn ik(k: &[u8], seq: u64) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, ValueType::Value);
        v
    }

    fn sample() -> VecIterator {
        VecIterator::from_unsorted(vec![
            (ik(b"b", 1), b"b1".to_vec()),
            (ik(b"a", 1), b"a1".to_vec()),
            (ik(b"b", 7), b"b7".to_vec()),
            (ik(b"d", 3), b"d3".to_vec()),
        ])
    }

    #[test]
    fn walks_forward_and_backward_in_internal_key_order() {
        let mut it = sample();
        assert_eq!(it.len(), 4);
        assert!(!it.valid());
        let mut fwd = Vec::new();
        it.seek_to_first();
        while it.valid() {
            fwd.push(it.value().to_vec());
            it.next();
        }
        assert_eq!(
            fwd,
            vec![
                b"a1".to_vec(),
                b"b7".to_vec(),
                b"b1".to_vec(),
                b"d3".to_vec()
            ]
        );
        let mut bwd = Vec::new();
        it.seek_to_last();
        while it.valid() {
            bwd.push(it.value().to_vec());
            it.prev();
        }
        fwd.reverse();
        assert_eq!(bwd, fwd);
    }

    #[test]
    fn seek_and_seek_for_prev_find_neighbours() {
        let mut it = sample();
        it.seek(&ik(b"b", 5)); // between b@7 and b@1
        assert_eq!(it.value(), b"b1");
        it.seek_for_prev(&ik(b"b", 5));
        assert_eq!(it.value(), b"b7");
        it.seek(&ik(b"b", 7));
        assert_eq!(it.value(), b"b7");
        it.seek_for_prev(&ik(b"b", 7));
        assert_eq!(it.value(), b"b7");
        it.seek(&ik(b"e", 1));
        assert!(!it.valid());
        it.seek_for_prev(&ik(b"0", 1));
        assert!(!it.valid());
        it.seek_for_prev(&ik(b"z", 1));
        assert_eq!(it.value(), b"d3");
    }

    #[test]
    fn empty_iterator_is_never_valid() {
        let mut it = VecIterator::new(Vec::new());
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&ik(b"a", 1));
        assert!(!it.valid());
        it.seek_for_prev(&ik(b"a", 1));
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }
}
