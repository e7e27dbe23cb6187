//! Finger search over a sorted batch (docs/design.md §4.2): the complete search path
//! of key *i* is the starting point for key *i + 1*, so a lookup costs
//! O(log d) for a distance d from the previous key.
//!
//! Each search depends on the previous one, so the out-of-order core cannot
//! overlap their misses: on random batches finger is no faster than
//! per-key descents (measured, see `mod.rs`), and `Auto` never picks it.
//!
//! Valid under concurrent inserts: nodes are never freed and keys never
//! change, so every `prev[l]` stays < every later target; brackets only go
//! stale (new nodes between `prev[l]` and `next[l]`), which the rightward
//! walk absorbs.
#![allow(unsafe_code)]

use super::list::{node_lt, Path, SkipList};
use super::node::{self, Node, MAX_HEIGHT};
use crate::error::Result;
use crate::memtable::HINT_LEVELS;

const _: () = assert!(HINT_LEVELS <= MAX_HEIGHT);

/// The search path of the last key: per level, `prev[l] < target ≤ next[l]`
/// (null = +∞) at the time it was searched.
struct Finger {
    prev: [*mut Node; MAX_HEIGHT],
    next: [*mut Node; MAX_HEIGHT],
    /// Levels `0..height` are filled.
    height: usize,
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
    let mut f = Finger {
        prev: [list.head; MAX_HEIGHT],
        next: [std::ptr::null_mut(); MAX_HEIGHT],
        height: 0,
    };
    for (i, user) in keys.iter().enumerate() {
        // Concurrent inserts may have raised the list: new top levels start
        // with the bracket (head, +∞).
        let top = list.max_height();
        // The first search has no finger yet: a full descent from the top.
        let fresh = f.height == 0;
        while f.height < top {
            f.prev[f.height] = list.head;
            f.next[f.height] = std::ptr::null_mut();
            f.height += 1;
        }
        // Walk up while the target is beyond next[l]. The nodes compared here
        // were checked when the previous search first compared them.
        let mut l = if fresh { top - 1 } else { 0 };
        while l + 1 < f.height
            && !f.next[l].is_null()
            // SAFETY: a finger's `next` entries are linked non-head nodes
            // of `list` (null is excluded just above), and nodes are never
            // freed while the list lives.
            && unsafe { node_lt(f.next[l], user, trailer) }
        {
            l += 1;
        }
        // Search right from prev[l] and descend, filling the finger down to
        // level 0 (no early exit: the finger must stay complete). Only
        // `next` may pass the versions of a user key; `prev[0]` never moves
        // past a node ≥ the target (the RocksDB duplicate-key pitfall).
        let mut x = f.prev[l];
        loop {
            // SAFETY: `x` is the head or a node reached at level l (height > l).
            let mut z = unsafe { node::next(x, l) };
            while !z.is_null() {
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
            }
            f.prev[l] = x;
            f.next[l] = z;
            if l == 0 {
                break;
            }
            l -= 1;
        }
        if P {
            // SAFETY: finger entries are the head or linked nodes.
            unsafe { list.check_key(f.prev[0])? };
        }
        // Levels the list does not reach hold the head (`f`'s start).
        let path: Path = std::array::from_fn(|l| f.prev[l]);
        emit(i, f.next[0], &path)?;
    }
    Ok(())
}
