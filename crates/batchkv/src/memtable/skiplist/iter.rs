//! The skip-list memtable's iterator: every entry (all versions) in
//! internal-key order, forward via level-0 links and backward by searching
//! for the last node before the current key (as LevelDB does: nodes have no
//! back links), from the last search's path (`finger.rs`), which makes
//! consecutive steps back cheap.
//!
//! It holds an `Arc` of the memtable, so the arena outlives it. It sees
//! entries inserted concurrently if they land ahead of its position.
#![allow(unsafe_code)]

use std::sync::Arc;

use super::finger::Finger;
use super::node::{self, Node};
use super::SkipListMemTable;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{trailer, user_key, TRAILER_LEN};

/// Iterator over a [`SkipListMemTable`].
pub(super) struct SkipListIter {
    mt: Arc<SkipListMemTable>,
    /// Current node; null when not valid.
    node: *mut Node,
    /// The last `seek_near`'s or `prev`'s search path: a `seek_near` near
    /// it costs O(log distance), not a descent from the top, and a `prev`
    /// after a `prev` a few steps.
    finger: Finger,
    err: Option<Error>,
    /// Tests: runs in `seek_for_prev` right after its seek, where another
    /// thread's insert can land between the target and the position.
    #[cfg(test)]
    pub(super) after_seek: Option<Box<dyn FnMut() + Send>>,
}

// SAFETY: `node` points into the arena owned by `mt`, which this iterator
// keeps alive; the bytes it reads are published and immutable.
unsafe impl Send for SkipListIter {}

impl SkipListIter {
    pub(super) fn new(mt: Arc<SkipListMemTable>) -> SkipListIter {
        SkipListIter {
            finger: Finger::new(&mt.list),
            mt,
            node: std::ptr::null_mut(),
            err: None,
            #[cfg(test)]
            after_seek: None,
        }
    }

    /// Sets the position, mapping the head to "not valid".
    fn set(&mut self, n: *mut Node) {
        self.node = if n == self.mt.list.head {
            std::ptr::null_mut()
        } else {
            n
        };
        if self.mt.paranoid && !self.node.is_null() {
            // SAFETY: `self.node` is non-null and not the head: a linked
            // node of `self.mt.list`.
            if let Err(e) = unsafe { self.mt.list.check_entry(self.node) } {
                self.fail(e);
            }
        }
    }

    fn fail(&mut self, e: Error) {
        self.node = std::ptr::null_mut();
        self.err = Some(e);
    }

    fn check_target(&mut self, target: &[u8]) -> bool {
        if target.len() < TRAILER_LEN {
            self.fail(Error::InvalidArgument(format!(
                "seek target of {} bytes is not an internal key",
                target.len()
            )));
            return false;
        }
        true
    }
}

impl InternalIterator for SkipListIter {
    fn valid(&self) -> bool {
        !self.node.is_null()
    }

    fn seek_to_first(&mut self) {
        // SAFETY: the head has every level.
        let n = unsafe { node::next(self.mt.list.head, 0) };
        self.set(n);
    }

    fn seek_to_last(&mut self) {
        let n = self.mt.list.find_last();
        self.set(n);
    }

    fn seek(&mut self, target: &[u8]) {
        if !self.check_target(target) {
            return;
        }
        match self
            .mt
            .list
            .find_ge::<false>(user_key(target), trailer(target))
        {
            Ok(n) => self.set(n),
            Err(e) => self.fail(e),
        }
    }

    fn seek_near(&mut self, target: &[u8]) {
        if !self.check_target(target) {
            return;
        }
        match self
            .finger
            .search::<false>(&self.mt.list, user_key(target), trailer(target))
        {
            Ok(n) => self.set(n),
            Err(e) => self.fail(e),
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if !self.check_target(target) {
            return;
        }
        self.seek(target);
        #[cfg(test)]
        if let Some(f) = self.after_seek.as_mut() {
            f();
        }
        if !self.valid() {
            if self.err.is_some() {
                return;
            }
            self.seek_to_last();
        }
        // Entries inserted since the seek may sit between the target and
        // the seek's position (or after the end, where the seek found
        // nothing): one step back could stop on one of them, past the
        // target. Step back until at or below it (RocksDB's memtable
        // iterator loops too). A merging iterator repositioned this way
        // for moving backward took such an entry as the largest of its
        // children and went on from the wrong child: a reverse bounded
        // scan showed a key at or above its upper bound.
        while self.valid() && crate::key::compare_internal_keys(self.key(), target).is_gt() {
            self.prev();
        }
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.node;
        // SAFETY: `cur` is a linked non-head node (valid iterator).
        let n = unsafe { node::next(cur, 0) };
        if self.mt.paranoid && !n.is_null() {
            // SAFETY: `cur` is a linked non-head node, `n` its non-null
            // successor.
            if let Err(e) = unsafe { self.mt.list.check_step(cur, n, 0) } {
                self.fail(e);
                return;
            }
        }
        self.set(n);
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        // The last node below the current key: the finger's level-0 `prev`
        // after a search for that key. When the finger's level-0 `prev` is
        // the current node (after a step back, whose finger is the path of
        // the key stepped from; or a seek that landed where an older
        // finger's `prev[0]` is), the finger is a path of some target
        // above the current node whose `prev`s never lie right of the
        // level below: `step_back` reuses it (O(1) expected node visits,
        // mostly pointer compares) instead of a descent from the top.
        let stepped = if self.finger.below() == self.node {
            self.finger.step_back(&self.mt.list)
        } else {
            // SAFETY: `node` is a linked non-head node (valid iterator); its
            // key lives in the arena `self.mt` keeps alive.
            let k = unsafe { node::key(self.node) };
            self.finger
                .search::<false>(&self.mt.list, user_key(k), trailer(k))
                .map(|_| self.finger.below())
        };
        match stepped {
            Ok(n) => self.set(n),
            Err(e) => self.fail(e),
        }
    }

    fn key(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        // SAFETY: `node` is a linked non-head node; the arena lives as long
        // as `self.mt`, which outlives the borrow of `self`.
        unsafe { node::key(self.node) }
    }

    fn value(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        // SAFETY: as for `key`.
        unsafe { node::entry(self.node) }.value
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
