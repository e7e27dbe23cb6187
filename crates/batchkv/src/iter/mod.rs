//! Iterators over internal keys: one trait that memtable, block, table,
//! merging and level iterators all implement.

use crate::error::Result;

pub(crate) mod db_iter;
pub(crate) mod level_iter;
pub(crate) mod merging;
#[cfg(test)]
pub(crate) mod vec_iter;

pub(crate) use {db_iter::DbIter, level_iter::LevelIterator, merging::MergingIterator};

/// A positioned cursor over entries sorted by internal key
/// (see [`crate::key`] for the order).
///
/// Contract: `key`/`value` may be called only while `valid()`; after an error
/// the iterator becomes invalid and `status()` returns the error.
pub trait InternalIterator: Send {
    /// True if positioned at an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose internal key is ≥ `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// [`InternalIterator::seek`] for a target near the last `seek_near`'s
    /// (either side): where a search can start from the last one's path
    /// (the skip-list memtable's finger), it costs O(log distance).
    fn seek_near(&mut self, target: &[u8]) {
        self.seek(target);
    }
    /// Positions at the last entry whose internal key is ≤ `target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// Every `(key, value)` of `it`, read front to back (tests). Leaves the
/// status unchecked: callers that expect an error look at it themselves.
#[cfg(test)]
pub(crate) fn scan_forward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

/// Every `(key, value)` of `it`, read back to front and returned in
/// ascending order (tests). Leaves the status unchecked.
#[cfg(test)]
pub(crate) fn scan_backward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}
