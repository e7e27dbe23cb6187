//! Finger search (docs/design.md §4.2): the complete search path of the
//! last target is the starting point for the next one, so a search costs
//! O(log d) for a distance d from the previous target. Used by sorted
//! batches ([`multi_get`]) and by the memtable iterator's `seek_near` (a
//! cursor re-seeked near where it was, e.g. the server's rank-index
//! levels) and `prev` (a search for the current key, whose level-0
//! `prev` is the step back).
//!
//! Each search depends on the previous one, so the out-of-order core cannot
//! overlap their misses: on random batches finger is no faster than
//! per-key descents (measured, see `mod.rs`), and `Auto` never picks it.
//!
//! Valid under concurrent inserts: nodes are never freed and keys never
//! change, so a bracket `prev[l] < target ≤ next[l]` only goes stale by
//! new nodes between its ends, which the rightward walk absorbs.
#![allow(unsafe_code)]

use super::list::{node_lt, prefetch_down, Path, SkipList};
use super::node::{self, Node, MAX_HEIGHT};
use crate::error::Result;
use crate::key::{trailer, user_key};
use crate::memtable::HINT_LEVELS;

const _: () = assert!(HINT_LEVELS <= MAX_HEIGHT);

/// The level whose bracket tells a near target (search up from the
/// finger) from a far one (search from the top).
const NEAR_LEVEL: usize = 3;

/// The search path of the last target: per level `l < height`,
/// `prev[l] < target ≤ next[l]` (null = +∞) at the time it was searched,
/// `prev[l]` being the head or a node of height > l. Going up, `prev`
/// never moves right and `next` never moves left.
pub(super) struct Finger {
    prev: [*mut Node; MAX_HEIGHT],
    next: [*mut Node; MAX_HEIGHT],
    /// Levels `0..height` are filled; 0: no search yet.
    height: usize,
}

// SAFETY: the pointers are nodes (or the head) of a list its owner keeps
// alive (the memtable iterator holds its `Arc`); they are only read.
unsafe impl Send for Finger {}

impl Finger {
    /// A finger of `list` before its first search (every `prev` the head:
    /// [`Finger::path`] of levels the list does not reach).
    pub(super) fn new(list: &SkipList) -> Finger {
        Finger {
            prev: [list.head; MAX_HEIGHT],
            next: [std::ptr::null_mut(); MAX_HEIGHT],
            height: 0,
        }
    }

    /// The first node ≥ `(user, trailer)` (null if none), searched from the
    /// last target's path, which it replaces: up from level 0 to the lowest
    /// level whose bracket (for a larger target: whose `next`; for a smaller
    /// one: whose `prev`) still holds the target, then right and down.
    pub(super) fn search<const P: bool>(
        &mut self,
        list: &SkipList,
        user: &[u8],
        trailer: u64,
    ) -> Result<*mut Node> {
        // Concurrent inserts may have raised the list: new top levels start
        // with the bracket (head, +∞).
        let top = list.max_height();
        let fresh = self.height == 0;
        while self.height < top {
            self.prev[self.height] = list.head;
            self.next[self.height] = std::ptr::null_mut();
            self.height += 1;
        }
        let is_head = |n: *mut Node| n == list.head;
        // The nodes compared by these two were checked when a search first
        // compared them.
        let prev_below = |p: *mut Node| {
            // SAFETY: finger entries are the head (excluded first) or linked
            // nodes of `list`, never freed while the list lives.
            is_head(p) || unsafe { node_lt(p, user, trailer) }
        };
        let next_at_or_above = |n: *mut Node| {
            // SAFETY: as above, null (+∞) excluded first.
            n.is_null() || !unsafe { node_lt(n, user, trailer) }
        };
        // A smaller target than the last: level l's bracket holds it when
        // its `prev` is below it; a larger (or equal) one: when its `next`
        // is not. Going up, `prev` moves left and `next` right, so the
        // levels that hold it are the ones from some level up. If level
        // NEAR_LEVEL holds it (a near target), the lowest is found
        // trying the levels below one by one; if not (a far one), the
        // search starts at the top, as a fresh one would, having spent one
        // comparison on the finger.
        let smaller = !fresh && !prev_below(self.prev[0]);
        let holds = |f: &Finger, l: usize| {
            if smaller {
                prev_below(f.prev[l])
            } else {
                next_at_or_above(f.next[l])
            }
        };
        let mut l = top - 1;
        if !fresh {
            let near = NEAR_LEVEL.min(l);
            if holds(self, near) {
                l = (0..near).find(|&i| holds(self, i)).unwrap_or(near);
            } else if smaller {
                // Whether a level between holds it is not known: the head
                // is below every target.
                self.prev[l] = list.head;
            }
            // Levels above l keep valid brackets: for a smaller target
            // their `prev` lies further left and their `next` ≥ the old
            // target; for a larger one their `prev` < the old target.
        }
        // Search right from prev[l] and descend, filling the finger down to
        // level 0 (no early exit: the finger must stay complete). Every
        // start is below the target, so this is a plain descent from
        // (prev[l], l); the climb bounds the walk at each level. Only
        // `next` may pass the versions of a user key; `prev[0]` never moves
        // past a node ≥ the target (the RocksDB duplicate-key pitfall).
        let mut x = self.prev[l];
        // The node known ≥ the target from the level above (not compared
        // again, unless paranoid checks want every level-0 step checked);
        // null: none yet.
        let mut bound: *mut Node = std::ptr::null_mut();
        loop {
            // SAFETY: `x` is the head or a node reached at level l (height > l).
            let mut z = unsafe { node::next(x, l) };
            // SAFETY: as above.
            unsafe { prefetch_down(x, l, z) };
            while !z.is_null() && (P || z != bound) {
                if P {
                    // SAFETY: `x` is the head or a linked node, `z` its
                    // non-null successor.
                    unsafe { list.check_step(x, z, l)? };
                }
                // SAFETY: `z` is a linked non-head node.
                if !unsafe { node_lt(z, user, trailer) } {
                    break;
                }
                x = z;
                // SAFETY: as above.
                z = unsafe { node::next(x, l) };
                // SAFETY: as above.
                unsafe { prefetch_down(x, l, z) };
            }
            self.prev[l] = x;
            self.next[l] = z;
            if l == 0 {
                break;
            }
            bound = z;
            l -= 1;
        }
        if P {
            // SAFETY: finger entries are the head or linked nodes.
            unsafe { list.check_key(self.prev[0])? };
        }
        Ok(self.next[0])
    }

    /// The last node below the last target when it was searched (the head
    /// if none): the node a backward step from the target lands on.
    pub(super) fn below(&self) -> *mut Node {
        self.prev[0]
    }

    /// One step back from `x` = [`Finger::below`] (not the head): the
    /// finger becomes `x`'s key's search path, and the last node below `x`
    /// (the head if none) is returned.
    ///
    /// The levels of `x`'s tower hold `x` as their `prev`; the level above
    /// them has a `prev` below `x` (levels up only move left), and levels
    /// from there up keep valid brackets (their `next` ≥ the last target >
    /// `x`). The search descends from there comparing keys, and at level 0,
    /// where `x` is linked (the last search reached it there), it walks to
    /// the node whose successor is `x` comparing pointers only. Towers are
    /// linked bottom-up, so `x` may not be linked yet at its upper levels:
    /// those compare keys. A node inserted since, between the start and
    /// `x`, is walked over, so the step lands on `x`'s predecessor now.
    pub(super) fn step_back(&mut self, list: &SkipList) -> Result<*mut Node> {
        let x = self.prev[0];
        // SAFETY: `x` is a linked non-head node of `list` (the caller's
        // position); nodes are never freed while the list lives.
        let key = unsafe { node::key(x) };
        let (user, trailer) = (user_key(key), trailer(key));
        let mut l = 1;
        while l < self.height && self.prev[l] == x {
            l += 1;
        }
        // Start at (cur, l): cur < x, of height > l - 1.
        let mut cur = if l < self.height {
            self.prev[l]
        } else {
            list.head
        };
        for level in (1..l).rev() {
            // SAFETY: `cur` is the head or a linked node of height > level.
            let mut z = unsafe { node::next(cur, level) };
            // SAFETY: `z` is a linked non-head node when non-null.
            while !z.is_null() && z != x && unsafe { node_lt(z, user, trailer) } {
                cur = z;
                // SAFETY: as above.
                z = unsafe { node::next(cur, level) };
            }
            self.prev[level] = cur;
            self.next[level] = z;
        }
        // SAFETY: as above, at level 0.
        let mut z = unsafe { node::next(cur, 0) };
        while z != x {
            if z.is_null() {
                // `x` not reached: not expected for a linked node, so a
                // damaged list; a full search decides (and reports).
                self.search::<true>(list, user, trailer)?;
                return Ok(self.prev[0]);
            }
            cur = z;
            // SAFETY: `z` was a linked non-head node.
            z = unsafe { node::next(cur, 0) };
        }
        self.prev[0] = cur;
        self.next[0] = x;
        Ok(cur)
    }

    /// The lowest levels of the path (for insert hints).
    pub(super) fn path(&self) -> Path {
        // Levels the list does not reach hold the head (set by `new`).
        std::array::from_fn(|l| self.prev[l])
    }
}

/// Looks up `keys` (sorted, distinct user keys) at `trailer`; calls
/// `emit(i, candidate, path)` with each key's first node ≥ its lookup key
/// (maybe null, maybe another user key) and the search's [`Path`] (the
/// finger's lowest levels).
pub(super) fn multi_get<const P: bool>(
    list: &SkipList,
    keys: &[&[u8]],
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    let mut f = Finger::new(list);
    for (i, user) in keys.iter().enumerate() {
        let z = f.search::<P>(list, user, trailer)?;
        emit(i, z, &f.path())?;
    }
    Ok(())
}
