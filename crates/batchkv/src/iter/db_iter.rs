//! `DbIter`: turns an iterator over internal keys (every version of every
//! key) into the user's view at one snapshot — one entry per user key, its
//! newest version with `sequence ≤ snapshot`, keys whose visible version is a
//! tombstone skipped, all within optional `[lower, upper)` user-key bounds, in
//! both directions.
//!
//! # Design (LevelDB's `DBIter`)
//! Internal keys sort by user key ascending, then newest first, so:
//! - **Forward**: `inner` is positioned *at* the visible version of the
//!   current user key; `key()`/`value()` read straight from `inner`.
//!   Moving forward skips the rest of the current key's versions, versions
//!   newer than the snapshot, and keys whose newest visible version is a
//!   tombstone (`saved_key` holds the key being skipped).
//! - **Reverse**: walking backward meets a key's *oldest* version first, so
//!   the visible (newest) one is only known after passing all of them.
//!   `inner` is therefore positioned *before* all entries of the current
//!   user key (or invalid if there are none before), and the current key and
//!   value are copies in `saved_key`/`saved_value`.
//!
//! A direction switch converts one invariant into the other: reverse →
//! forward steps `inner` onto the entries after the current key and skips
//! them up to and including the current key; forward → reverse steps `inner`
//! back past every entry of the current key.
//!
//! # Range tombstones
//! `range_dels` holds every range tombstone of the iterator's memtables and
//! tables, fragmented. A value whose sequence is below the newest visible
//! tombstone covering its key is treated exactly like a point tombstone at
//! that position (its older versions are older still, so also covered).
//!
//! # Merge operands
//! A key whose newest visible version is a merge operand shows the merge
//! operator's result over the operands down to the key's base (`merge.rs`).
//! Forward: the operands are collected by stepping `inner` on through the
//! key's versions; the key and merged value are then copies in
//! `saved_key`/`saved_value` (`merged` is set) and `inner` is somewhere
//! among or after the key's entries — `next` skips the rest of them as
//! usual, `prev` re-seeks to the key's first entry. Reverse: the walk
//! already passes every version oldest → newest; it keeps the base and the
//! operands above it and merges once the key is passed. A missing
//! operator or a failed merge ends iteration with that error in `status`.
//!
//! # Errors
//! An error of `inner` ends iteration (`valid()` false, `status()` returns
//! it). An internal key that does not parse is reported as
//! [`Error::Corruption`] and is sticky: the iterator stays invalid.

use std::cmp::Ordering;

use crate::coding::put_fixed64;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{
    lookup_key, parse_internal_key, user_key, SequenceNumber, ValueType, MAX_SEQUENCE,
};
use crate::merge::{full_merge, full_merge_newest_first, MergeOperator};
use crate::range_del::FragmentedTombstones;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// The user-facing iteration logic over an internal-key iterator (the
/// public `DbIterator` wraps it together with what keeps `inner` alive).
pub(crate) struct DbIter {
    inner: Box<dyn InternalIterator>,
    /// Snapshot: versions with a larger sequence are invisible.
    sequence: SequenceNumber,
    /// Inclusive lower bound on user keys.
    lower: Option<Vec<u8>>,
    /// Exclusive upper bound on user keys.
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// Forward: the user key being skipped. Reverse: the current user key.
    saved_key: Vec<u8>,
    /// Reverse: the current value.
    saved_value: Vec<u8>,
    /// A corrupt internal key seen; sticky.
    err: Option<Error>,
    /// Range tombstones hiding older values; `None` when there are none.
    range_dels: Option<Arc<FragmentedTombstones>>,
    /// Applied to keys whose visible version is a merge operand.
    merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Forward only: the current entry is a merge result, held in
    /// `saved_key`/`saved_value` (see the module docs).
    merged: bool,
    /// Merge operands being collected (forward: newest first; reverse:
    /// oldest first).
    operands: Vec<Vec<u8>>,
}

fn corrupt_key(ik: &[u8]) -> Error {
    Error::corruption(
        "iterator",
        0,
        format!(
            "unparsable or misplaced internal key \"{}\"",
            ik.escape_ascii()
        ),
    )
}

impl DbIter {
    /// Iterates `inner` as of snapshot `sequence`, within user keys
    /// `[lower, upper)`. The iterator starts unpositioned.
    pub(crate) fn new(
        inner: Box<dyn InternalIterator>,
        sequence: SequenceNumber,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> DbIter {
        DbIter {
            inner,
            sequence: sequence.min(MAX_SEQUENCE),
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            err: None,
            range_dels: None,
            merge_operator: None,
            merged: false,
            operands: Vec::new(),
        }
    }

    /// Merges operands with `op` (see the module docs).
    pub(crate) fn with_merge_operator(mut self, op: Option<Arc<dyn MergeOperator>>) -> DbIter {
        self.merge_operator = op;
        self
    }

    /// Hides the values that `range_dels` covers (see the module docs).
    pub(crate) fn with_range_dels(
        mut self,
        range_dels: Option<Arc<FragmentedTombstones>>,
    ) -> DbIter {
        self.range_dels = range_dels.filter(|f| !f.is_empty());
        self
    }

    /// The type a visible entry acts as: a value covered by a newer visible
    /// range tombstone acts as a deletion; a `RangeDeletion` among point
    /// entries is corruption (`None`).
    #[inline]
    fn effective_type(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        t: ValueType,
    ) -> Option<ValueType> {
        match t {
            ValueType::Value | ValueType::Merge => match &self.range_dels {
                Some(f) if f.max_covering(user_key, self.sequence) > seq => {
                    Some(ValueType::Deletion)
                }
                _ => Some(t),
            },
            ValueType::Deletion => Some(ValueType::Deletion),
            ValueType::RangeDeletion => None,
        }
    }

    /// True if positioned at a visible entry.
    pub(crate) fn valid(&self) -> bool {
        self.valid && self.err.is_none()
    }

    /// The current user key. Requires `valid()`.
    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        match self.direction {
            Direction::Forward if self.merged => &self.saved_key,
            // `inner.key()` parsed successfully when we stopped on it, so it
            // holds a full trailer and `user_key` cannot panic.
            Direction::Forward => user_key(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. Requires `valid()`.
    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        match self.direction {
            Direction::Forward if self.merged => &self.saved_value,
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// The first error met (a corrupt key, or the inner iterator's error).
    pub(crate) fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }

    /// Positions at the first visible key (≥ the lower bound).
    pub(crate) fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek(&lower),
            None => {
                self.reset(Direction::Forward);
                self.inner.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    /// Positions at the last visible key (< the upper bound).
    pub(crate) fn seek_to_last(&mut self) {
        self.reset(Direction::Reverse);
        match &self.upper {
            Some(upper) => {
                // First entry of any user key ≥ upper, then one step back.
                self.inner.seek(&lookup_key(upper, MAX_SEQUENCE));
                if self.inner.valid() {
                    self.inner.prev();
                } else if self.inner.status().is_ok() {
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Positions at the first visible key ≥ `target` (and ≥ the lower bound).
    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.seek_with(target, false);
    }

    /// [`DbIter::seek`] for a target near the last `seek_near`'s
    /// ([`InternalIterator::seek_near`]).
    pub(crate) fn seek_near(&mut self, target: &[u8]) {
        self.seek_with(target, true);
    }

    fn seek_with(&mut self, target: &[u8], near: bool) {
        self.reset(Direction::Forward);
        let target = match &self.lower {
            Some(lower) if target < lower.as_slice() => lower.as_slice(),
            _ => target,
        };
        if matches!(&self.upper, Some(upper) if target >= upper.as_slice()) {
            return;
        }
        let lk = lookup_key(target, self.sequence);
        if near {
            self.inner.seek_near(&lk);
        } else {
            self.inner.seek(&lk);
        }
        self.find_next_user_entry(false);
    }

    /// Positions at the last visible key ≤ `target` (and < the upper bound).
    pub(crate) fn seek_for_prev(&mut self, target: &[u8]) {
        if matches!(&self.upper, Some(upper) if target >= upper.as_slice()) {
            self.seek_to_last();
            return;
        }
        self.reset(Direction::Reverse);
        if matches!(&self.lower, Some(lower) if target < lower.as_slice()) {
            return;
        }
        // The last possible internal key of `target`: sequence 0, type 0.
        let mut k = Vec::with_capacity(target.len() + 8);
        k.extend_from_slice(target);
        put_fixed64(&mut k, 0);
        self.inner.seek_for_prev(&k);
        self.find_prev_user_entry();
    }

    /// Moves to the next visible key. Requires `valid()`.
    pub(crate) fn next(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        if self.direction == Direction::Reverse {
            // `inner` is before the current key's entries and `saved_key`
            // is the current key: step onto the entries after the
            // position and skip everything up to the current key.
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next();
            } else if self.inner.status().is_ok() {
                match &self.lower {
                    Some(lower) => self.inner.seek(&lookup_key(lower, MAX_SEQUENCE)),
                    None => self.inner.seek_to_first(),
                }
            }
        } else if self.merged {
            // `saved_key` is the current key; `inner` is at or after its
            // remaining entries, which the search skips.
            self.merged = false;
        } else {
            let cur = user_key(self.inner.key());
            self.saved_key.clear();
            self.saved_key.extend_from_slice(cur);
            self.inner.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous visible key. Requires `valid()`.
    pub(crate) fn prev(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        if self.direction == Direction::Forward {
            // Step back past every entry of the current key.
            if self.merged {
                // `inner` may be past the key: go back to its first entry.
                self.merged = false;
                self.inner.seek(&lookup_key(&self.saved_key, MAX_SEQUENCE));
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    return;
                }
            } else {
                let cur = user_key(self.inner.key());
                self.saved_key.clear();
                self.saved_key.extend_from_slice(cur);
            }
            self.direction = Direction::Reverse;
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    return;
                }
                let ik = self.inner.key();
                match parse_internal_key(ik) {
                    None => {
                        let e = corrupt_key(ik);
                        self.fail(e);
                        return;
                    }
                    Some(p) if p.user_key < self.saved_key.as_slice() => break,
                    Some(_) => {}
                }
            }
        }
        self.find_prev_user_entry();
    }

    fn reset(&mut self, dir: Direction) {
        self.direction = dir;
        self.valid = false;
        self.merged = false;
        self.saved_key.clear();
        self.saved_value.clear();
    }

    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.valid = false;
    }

    /// Forward: advances `inner` to the visible version of the next user
    /// key to show. If `skipping`, user keys ≤ `saved_key` are hidden.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        debug_assert_eq!(self.direction, Direction::Forward);
        while self.inner.valid() {
            let ik = self.inner.key();
            let Some(p) = parse_internal_key(ik) else {
                let e = corrupt_key(ik);
                self.fail(e);
                return;
            };
            if matches!(&self.upper, Some(upper) if p.user_key >= upper.as_slice()) {
                break;
            }
            if p.sequence <= self.sequence {
                let Some(t) = self.effective_type(p.user_key, p.sequence, p.value_type) else {
                    let e = corrupt_key(ik);
                    self.fail(e);
                    return;
                };
                match t {
                    ValueType::Deletion | ValueType::RangeDeletion => {
                        // Hide this key's older versions.
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    ValueType::Value => {
                        if !skipping || p.user_key > self.saved_key.as_slice() {
                            self.valid = true;
                            self.saved_key.clear();
                            return;
                        }
                    }
                    ValueType::Merge => {
                        if !skipping || p.user_key > self.saved_key.as_slice() {
                            self.merge_forward();
                            return;
                        }
                    }
                }
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Forward, `inner` at the visible version of a key, a merge operand:
    /// collects the operands down to the base and shows the merge result
    /// (see the module docs).
    fn merge_forward(&mut self) {
        let key = user_key(self.inner.key()).to_vec();
        self.operands.clear();
        self.operands.push(self.inner.value().to_vec());
        let mut base: Option<Vec<u8>> = None;
        self.inner.next();
        while self.inner.valid() {
            let ik = self.inner.key();
            let Some(p) = parse_internal_key(ik) else {
                let e = corrupt_key(ik);
                self.fail(e);
                return;
            };
            if p.user_key != key.as_slice() {
                break;
            }
            // Versions after a visible one are older, so visible too.
            match self.effective_type(p.user_key, p.sequence, p.value_type) {
                None => {
                    let e = corrupt_key(ik);
                    self.fail(e);
                    return;
                }
                Some(ValueType::Merge) => self.operands.push(self.inner.value().to_vec()),
                Some(ValueType::Value) => {
                    base = Some(self.inner.value().to_vec());
                    break;
                }
                Some(ValueType::Deletion | ValueType::RangeDeletion) => break,
            }
            self.inner.next();
        }
        if !self.inner.valid() && self.inner.status().is_err() {
            // The base may be in what failed to load; `status` reports it.
            self.valid = false;
            return;
        }
        match full_merge_newest_first(
            self.merge_operator.as_ref(),
            &key,
            base.as_deref(),
            &self.operands,
        ) {
            Ok(v) => {
                self.saved_key = key;
                self.saved_value = v;
                self.merged = true;
                self.valid = true;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Reverse: from `inner`'s position, walks backward to the previous user
    /// key with a visible value, leaving `inner` before all of its entries
    /// and the key and value in `saved_key`/`saved_value`.
    fn find_prev_user_entry(&mut self) {
        debug_assert_eq!(self.direction, Direction::Reverse);
        // Type of the newest visible version seen so far of the key in
        // `saved_key` (Deletion also when no candidate yet).
        let mut candidate = ValueType::Deletion;
        // Whether `saved_value` holds a value under the operands in
        // `operands` (oldest first) of the key in `saved_key`.
        let mut base_is_value = false;
        self.operands.clear();
        while self.inner.valid() {
            let ik = self.inner.key();
            let Some(p) = parse_internal_key(ik) else {
                let e = corrupt_key(ik);
                self.fail(e);
                return;
            };
            debug_assert!(
                !matches!(&self.upper, Some(u) if p.user_key >= u.as_slice()),
                "reverse iteration starts below the upper bound"
            );
            if matches!(&self.lower, Some(lower) if p.user_key < lower.as_slice()) {
                break;
            }
            if p.sequence <= self.sequence {
                if matches!(candidate, ValueType::Value | ValueType::Merge)
                    && p.user_key.cmp(&self.saved_key) == Ordering::Less
                {
                    // Passed every version of the candidate key.
                    break;
                }
                let Some(t) = self.effective_type(p.user_key, p.sequence, p.value_type) else {
                    let e = corrupt_key(ik);
                    self.fail(e);
                    return;
                };
                candidate = t;
                match t {
                    ValueType::Deletion | ValueType::RangeDeletion => {
                        self.saved_key.clear();
                        self.saved_value.clear();
                        self.operands.clear();
                        base_is_value = false;
                    }
                    ValueType::Value => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                        self.operands.clear();
                        base_is_value = true;
                    }
                    ValueType::Merge => {
                        // Either the same key as the state (a newer version)
                        // or a new key after a deletion (state cleared).
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        self.operands.push(self.inner.value().to_vec());
                    }
                }
            }
            self.inner.prev();
        }
        if candidate == ValueType::Deletion || (!self.inner.valid() && self.inner.status().is_err())
        {
            // Nothing visible, or `inner` failed before we saw all versions
            // of the candidate (a newer one may hide it).
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
        } else if candidate == ValueType::Merge {
            let operands: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
            let base = base_is_value.then_some(self.saved_value.as_slice());
            match full_merge(
                self.merge_operator.as_ref(),
                &self.saved_key,
                base,
                &operands,
            ) {
                Ok(v) => {
                    self.saved_value = v;
                    self.valid = true;
                }
                Err(e) => self.fail(e),
            }
        } else {
            self.valid = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::iter::merging::MergingIterator;
    use crate::iter::vec_iter::{FailingIterator, VecIterator};
    use crate::key::append_internal_key;
    use proptest::prelude::*;

    /// User keys the model writes (note "" and prefixes of each other).
    const KEYS: [&[u8]; 8] = [b"", b"a", b"aa", b"ab", b"b", b"ba", b"c", b"cc"];
    /// Seek targets and bounds: the keys plus keys between and beyond them.
    const TARGETS: [&[u8]; 13] = [
        b"", b"\x00", b"a", b"a\x00", b"aa", b"ab", b"abc", b"b", b"ba", b"bb", b"c", b"cc", b"d",
    ];

    fn ik(k: &[u8], seq: u64, t: ValueType) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, t);
        v
    }

    /// A write: key index, deletion?, and which child holds it.
    type Write = (usize, bool, usize);

    /// Versions of write `i` get sequence `i + 1` and value `v{i+1}`.
    fn db_iter(
        writes: &[Write],
        children: usize,
        snapshot: u64,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> DbIter {
        let mut parts: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); children];
        for (i, &(k, del, c)) in writes.iter().enumerate() {
            let seq = i as u64 + 1;
            let t = if del {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let v = if del {
                Vec::new()
            } else {
                format!("v{seq}").into_bytes()
            };
            parts[c % children].push((ik(KEYS[k], seq, t), v));
        }
        let kids: Vec<Box<dyn InternalIterator>> = parts
            .into_iter()
            .map(|p| Box::new(VecIterator::from_unsorted(p)) as Box<dyn InternalIterator>)
            .collect();
        DbIter::new(
            Box::new(MergingIterator::new(kids)),
            snapshot,
            lower.map(<[u8]>::to_vec),
            upper.map(<[u8]>::to_vec),
        )
    }

    /// The visible (key, value) pairs at `snapshot` within the bounds.
    fn model(
        writes: &[Write],
        snapshot: u64,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut m = BTreeMap::new();
        for (i, &(k, del, _)) in writes.iter().enumerate() {
            let seq = i as u64 + 1;
            if seq > snapshot {
                break;
            }
            if del {
                m.remove(KEYS[k]);
            } else {
                m.insert(KEYS[k].to_vec(), format!("v{seq}").into_bytes());
            }
        }
        m.into_iter()
            .filter(|(k, _)| lower.is_none_or(|l| k.as_slice() >= l))
            .filter(|(k, _)| upper.is_none_or(|u| k.as_slice() < u))
            .collect()
    }

    fn current(it: &DbIter) -> Option<(Vec<u8>, Vec<u8>)> {
        it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
    }

    #[derive(Debug, Clone)]
    enum Op {
        First,
        Last,
        Seek(usize),
        SeekForPrev(usize),
        Next,
        Prev,
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => Just(Op::First),
            1 => Just(Op::Last),
            2 => (0..TARGETS.len()).prop_map(Op::Seek),
            2 => (0..TARGETS.len()).prop_map(Op::SeekForPrev),
            5 => Just(Op::Next),
            5 => Just(Op::Prev),
        ]
    }

    fn case_strategy(
    ) -> impl Strategy<Value = (Vec<Write>, usize, u64, Option<usize>, Option<usize>)> {
        (
            prop::collection::vec((0..KEYS.len(), prop::bool::weighted(0.3), 0..5usize), 0..40),
            1..5usize,
        )
            .prop_flat_map(|(writes, children)| {
                let n = writes.len() as u64;
                (
                    Just(writes),
                    Just(children),
                    0..=n + 1,
                    prop::option::weighted(0.4, 0..TARGETS.len()),
                    prop::option::weighted(0.4, 0..TARGETS.len()),
                )
            })
    }

    proptest! {
        #[test]
        fn full_scans_match_model((writes, children, snap, lo, up) in case_strategy()) {
            let (lo, up) = (lo.map(|i| TARGETS[i]), up.map(|i| TARGETS[i]));
            let expect = model(&writes, snap, lo, up);
            let mut it = db_iter(&writes, children, snap, lo, up);
            let mut fwd = Vec::new();
            it.seek_to_first();
            while let Some(kv) = current(&it) {
                fwd.push(kv);
                it.next();
            }
            prop_assert_eq!(&fwd, &expect);
            let mut bwd = Vec::new();
            it.seek_to_last();
            while let Some(kv) = current(&it) {
                bwd.push(kv);
                it.prev();
            }
            bwd.reverse();
            prop_assert_eq!(&bwd, &expect);
            prop_assert!(it.status().is_ok());
        }

        #[test]
        fn random_walks_match_model(
            (writes, children, snap, lo, up) in case_strategy(),
            ops in prop::collection::vec(op_strategy(), 1..40),
        ) {
            let (lo, up) = (lo.map(|i| TARGETS[i]), up.map(|i| TARGETS[i]));
            let expect = model(&writes, snap, lo, up);
            let mut it = db_iter(&writes, children, snap, lo, up);
            let mut pos: Option<usize> = None;
            for op in ops {
                match op {
                    Op::First => {
                        it.seek_to_first();
                        pos = (!expect.is_empty()).then_some(0);
                    }
                    Op::Last => {
                        it.seek_to_last();
                        pos = expect.len().checked_sub(1);
                    }
                    Op::Seek(t) => {
                        it.seek(TARGETS[t]);
                        let p = expect.partition_point(|(k, _)| k.as_slice() < TARGETS[t]);
                        pos = (p < expect.len()).then_some(p);
                    }
                    Op::SeekForPrev(t) => {
                        it.seek_for_prev(TARGETS[t]);
                        let p = expect.partition_point(|(k, _)| k.as_slice() <= TARGETS[t]);
                        pos = p.checked_sub(1);
                    }
                    Op::Next => {
                        if pos.is_none() {
                            continue;
                        }
                        it.next();
                        pos = pos.map(|p| p + 1).filter(|&p| p < expect.len());
                    }
                    Op::Prev => {
                        if pos.is_none() {
                            continue;
                        }
                        it.prev();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                }
                prop_assert_eq!(current(&it), pos.map(|p| expect[p].clone()), "after {:?}", op);
            }
            prop_assert!(it.status().is_ok());
        }
    }

    #[test]
    fn snapshot_hides_newer_versions_and_tombstones_hide_older_ones() {
        // a: v1, deleted at 2, v3.  b: v4, deleted at 5.  c: v6.
        let writes: Vec<Write> = vec![
            (1, false, 0),
            (1, true, 1),
            (1, false, 2),
            (4, false, 0),
            (4, true, 1),
            (6, false, 2),
        ];
        let scan = |snap| {
            let mut it = db_iter(&writes, 3, snap, None, None);
            let mut out = Vec::new();
            it.seek_to_first();
            while it.valid() {
                out.push(format!(
                    "{}={}",
                    it.key().escape_ascii(),
                    it.value().escape_ascii()
                ));
                it.next();
            }
            out.join(" ")
        };
        assert_eq!(scan(0), "");
        assert_eq!(scan(1), "a=v1");
        assert_eq!(scan(2), "");
        assert_eq!(scan(4), "a=v3 b=v4");
        assert_eq!(scan(5), "a=v3");
        assert_eq!(scan(6), "a=v3 c=v6");
        assert_eq!(scan(u64::MAX), "a=v3 c=v6");
    }

    #[test]
    fn bounds_clamp_seeks_in_both_directions() {
        let writes: Vec<Write> = (0..KEYS.len()).map(|k| (k, false, k)).collect();
        let mut it = db_iter(&writes, 2, 100, Some(b"aa"), Some(b"c"));
        it.seek(b"");
        assert_eq!(it.key(), b"aa");
        it.seek_for_prev(b"zzz");
        assert_eq!(it.key(), b"ba");
        it.seek_for_prev(b"a");
        assert!(!it.valid());
        it.seek(b"c");
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(it.key(), b"ba");
        it.next();
        assert!(!it.valid());
        it.seek_to_first();
        it.prev();
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn unparsable_internal_key_is_corruption() {
        // "zz" is too short to hold a trailer; it sorts after the valid keys.
        let entries = vec![
            (ik(b"a", 1, ValueType::Value), b"x".to_vec()),
            (b"zz".to_vec(), b"y".to_vec()),
        ];
        let mut it = DbIter::new(Box::new(VecIterator::new(entries.clone())), 10, None, None);
        it.seek_to_first();
        assert_eq!(it.key(), b"a");
        it.next();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());

        let mut it = DbIter::new(Box::new(VecIterator::new(entries)), 10, None, None);
        it.seek_to_last();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());

        // An unknown value type is corruption too.
        let mut bad = ik(b"b", 1, ValueType::Value);
        let n = bad.len();
        bad[n - 8] = 9;
        let mut it = DbIter::new(
            Box::new(VecIterator::new(vec![(bad, Vec::new())])),
            10,
            None,
            None,
        );
        it.seek(b"a");
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
    }

    #[test]
    fn child_error_ends_iteration_with_status() {
        let ok: Vec<_> = (0..3u8)
            .map(|i| (ik(&[b'a', i], 1, ValueType::Value), vec![i]))
            .collect();
        let failing: Vec<_> = (0..3u8)
            .map(|i| (ik(&[b'b', i], 1, ValueType::Value), vec![i]))
            .collect();
        let make = || {
            let kids: Vec<Box<dyn InternalIterator>> = vec![
                Box::new(VecIterator::new(ok.clone())),
                Box::new(FailingIterator::new(failing.clone(), 1)),
            ];
            DbIter::new(Box::new(MergingIterator::new(kids)), 10, None, None)
        };
        let mut it = make();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(
            n, 4,
            "three keys from the good child, one before the failure"
        );
        assert!(it.status().unwrap_err().is_corruption());

        // Backward: the failing child errors during the scan.
        let mut it = make();
        it.seek_to_last();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.prev();
        }
        assert_eq!(
            n, 0,
            "b2 cannot be confirmed: the entry before it (b1) fails"
        );
        assert!(it.status().is_err());
    }
}
