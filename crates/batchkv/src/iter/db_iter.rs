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
}

fn corrupt_key(ik: &[u8]) -> Error {
    Error::corruption(
        "iterator",
        0,
        format!("unparsable internal key \"{}\"", ik.escape_ascii()),
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
        self.reset(Direction::Forward);
        let target = match &self.lower {
            Some(lower) if target < lower.as_slice() => lower.as_slice(),
            _ => target,
        };
        if matches!(&self.upper, Some(upper) if target >= upper.as_slice()) {
            return;
        }
        let lk = lookup_key(target, self.sequence);
        self.inner.seek(&lk);
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
            let cur = user_key(self.inner.key());
            self.saved_key.clear();
            self.saved_key.extend_from_slice(cur);
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
                match p.value_type {
                    ValueType::Deletion => {
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
                }
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Reverse: from `inner`'s position, walks backward to the previous user
    /// key with a visible value, leaving `inner` before all of its entries
    /// and the key and value in `saved_key`/`saved_value`.
    fn find_prev_user_entry(&mut self) {
        debug_assert_eq!(self.direction, Direction::Reverse);
        // Type of the newest visible version seen so far of the key in
        // `saved_key` (Deletion also when no candidate yet).
        let mut candidate = ValueType::Deletion;
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
                if candidate == ValueType::Value
                    && p.user_key.cmp(&self.saved_key) == Ordering::Less
                {
                    // Passed every version of the candidate key.
                    break;
                }
                candidate = p.value_type;
                match p.value_type {
                    ValueType::Deletion => {
                        self.saved_key.clear();
                        self.saved_value.clear();
                    }
                    ValueType::Value => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
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
        } else {
            self.valid = true;
        }
    }
}
