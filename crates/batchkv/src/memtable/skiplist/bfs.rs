//! Breadth-first prefetching descent of a sorted batch (docs/design.md §4.3).
//!
//! The batch is cut into chunks of at most [`CHUNK`] keys (a core keeps only
//! ~16 misses in flight and L1 holds ~500 lines, so prefetching thousands of
//! nodes ahead would evict them before use). Each chunk descends as a set of
//! *items* `(x, level, keys lo..hi, bound)`: `x` is a node before every
//! target in `lo..hi`, `bound` the node known to be ≥ all of them (x's
//! successor at the level above; null = +∞). Ranges of live items are
//! disjoint, so there are never more items than keys.
//!
//! One *round* advances every item by one step:
//! 1. load `z = x.next[level]`; if `z == bound` nothing needs comparing, so
//!    the item descends at once (or finishes at level 0); otherwise prefetch
//!    `z`'s key line and the slot `z.next[level]` the next round will read.
//! 2. compare the item's keys with `key(z)` (by then the lines are in flight
//!    or arrived): the keys `> key(z)` move right (item `(z, level)`), the
//!    rest go down (item `(x, level-1, bound = z)`), or at level 0 take `z`
//!    as their candidate.
//!
//! No recursion; the item lists are two fixed arrays on the stack. Each node
//! is compared once per item that reaches it and never re-compared after
//! descending (the `bound` rule), so shared top levels are read once for the
//! whole chunk.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

use super::list::{node_lt, SkipList};
use super::node::{self, Node};
use crate::error::Result;
use crate::prefetch::prefetch_read;

/// Keys per breadth-first chunk (≈ the misses a core can keep in flight,
/// times the ~4 items that typically share a miss; measured in `mod.rs`).
pub(super) const CHUNK: usize = 64;

#[derive(Clone, Copy)]
struct Item {
    x: *mut Node,
    bound: *mut Node,
    z: *mut Node,
    level: u32,
    lo: u32,
    hi: u32,
}

/// An item list: a fixed array whose first `len` slots are initialised.
/// (Left uninitialised: zeroing 2 × 2 KiB per call cost more than a whole
/// single-key descent in instruction counts.)
struct Items {
    slots: [MaybeUninit<Item>; CHUNK],
    len: usize,
}

impl Items {
    fn new() -> Items {
        Items {
            slots: [const { MaybeUninit::uninit() }; CHUNK],
            len: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, it: Item) {
        // Ranges of live items are disjoint and non-empty, so there are at
        // most CHUNK of them; the index check is a cheap guard.
        self.slots[self.len] = MaybeUninit::new(it);
        self.len += 1;
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Item {
        debug_assert!(i < self.len);
        // SAFETY: slots `0..len` were written by `push` (or `set`), and
        // `i < len` at every call site.
        unsafe { self.slots[i].assume_init() }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, it: Item) {
        debug_assert!(i <= self.len);
        self.slots[i] = MaybeUninit::new(it);
    }
}

/// Looks up `keys` (sorted, distinct user keys) at `trailer`; calls
/// `emit(i, candidate)` with each key's first node ≥ its lookup key (maybe
/// null, maybe another user key). Keys are reported out of order.
pub(super) fn multi_get<const P: bool>(
    list: &SkipList,
    keys: &[&[u8]],
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node) -> Result<()>,
) -> Result<()> {
    let mut base = 0;
    for chunk in keys.chunks(CHUNK) {
        if P {
            descend_paranoid(list, chunk, base, trailer, emit)?;
        } else {
            descend::<false>(list, chunk, base, trailer, emit)?;
        }
        base += chunk.len();
    }
    Ok(())
}

/// The checked descent, compiled for SSE4.2 when the CPU has it so that the
/// key CRCs ([`node::key_protection`]) inline into it.
fn descend_paranoid(
    list: &SkipList,
    keys: &[&[u8]],
    base: usize,
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node) -> Result<()>,
) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2 (checked just above).
        return unsafe { descend_paranoid_sse42(list, keys, base, trailer, emit) };
    }
    descend::<true>(list, keys, base, trailer, emit)
}

/// [`descend`] with checks, compiled with SSE4.2.
///
/// # Safety
/// The CPU must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn descend_paranoid_sse42(
    list: &SkipList,
    keys: &[&[u8]],
    base: usize,
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node) -> Result<()>,
) -> Result<()> {
    descend::<true>(list, keys, base, trailer, emit)
}

/// One chunk. With `P`, the paranoid checks (docs/design.md §4.4):
/// - order: every step `x → z` on which all of an item's keys move right is
///   checked explicitly (`key(x) < key(z)`); on any other step some target
///   `t` satisfies `key(x) < t ≤ key(z)` (x is before every target of its
///   item), so the comparisons already made prove it;
/// - key protection: every node compared at level 0, each item's final
///   predecessor `x`, and its candidate when that was only the bound known
///   from above (see [`SkipList::check_step`] for why
///   these suffice to catch a damaged key that misleads a search).
#[inline(always)]
fn descend<const P: bool>(
    list: &SkipList,
    keys: &[&[u8]],
    base: usize,
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node) -> Result<()>,
) -> Result<()> {
    debug_assert!(!keys.is_empty() && keys.len() <= CHUNK);
    let mut buf_a = Items::new();
    let mut buf_b = Items::new();
    let (mut cur, mut nxt) = (&mut buf_a, &mut buf_b);
    cur.push(Item {
        x: list.head,
        bound: std::ptr::null_mut(),
        z: std::ptr::null_mut(),
        level: (list.max_height() - 1) as u32,
        lo: 0,
        hi: keys.len() as u32,
    });
    while cur.len > 0 {
        // Pass 1: load successors, descend through `bound`s, prefetch.
        let mut live = 0;
        for i in 0..cur.len {
            let mut it = cur.get(i);
            loop {
                // SAFETY: `it.x` is the head or a linked node reached at
                // `it.level`, so its height is > level.
                let z = unsafe { node::next(it.x, it.level as usize) };
                if z == it.bound {
                    if it.level == 0 {
                        if P {
                            list.check_key(it.x)?;
                            // `z` (the bound) was compared above level 0
                            // only, where keys are not checksummed.
                            list.check_key(z)?;
                        }
                        finish(base, it.lo, it.hi, z, emit)?;
                        break;
                    }
                    it.level -= 1;
                    continue;
                }
                // `z` is non-null: it lies between `x` and `bound` (≤ +∞).
                prefetch_read(node::slot_addr(z, it.level as usize));
                prefetch_read(z);
                prefetch_read(z.cast::<u8>().wrapping_add(40));
                it.z = z;
                // live ≤ i: overwrites an item already read.
                cur.set(live, it);
                live += 1;
                break;
            }
        }
        // Pass 2: compare and split.
        cur.len = live;
        nxt.len = 0;
        for i in 0..live {
            let it = cur.get(i);
            let z = it.z;
            let m = split(keys, it.lo, it.hi, z, trailer);
            if P {
                // Every target of the item is after key(x); if some target
                // is ≤ key(z) (m > lo), key(x) < key(z) is already proven by
                // the comparisons just made, so only the all-move-right
                // case needs the explicit order check.
                if it.level == 0 {
                    list.check_key(z)?;
                }
                if m == it.lo {
                    list.check_order(it.x, z)?;
                }
            }
            if m > it.lo {
                if it.level == 0 {
                    if P {
                        list.check_key(it.x)?;
                    }
                    finish(base, it.lo, m, z, emit)?;
                } else {
                    nxt.push(Item {
                        x: it.x,
                        bound: z,
                        z: std::ptr::null_mut(),
                        level: it.level - 1,
                        lo: it.lo,
                        hi: m,
                    });
                }
            }
            if m < it.hi {
                nxt.push(Item {
                    x: z,
                    bound: it.bound,
                    z: std::ptr::null_mut(),
                    level: it.level,
                    lo: m,
                    hi: it.hi,
                });
            }
        }
        std::mem::swap(&mut cur, &mut nxt);
    }
    Ok(())
}

/// The first index in `lo..hi` whose target is after `key(z)` (the keys
/// from there on move right past `z`).
#[inline(always)]
fn split(keys: &[&[u8]], lo: u32, hi: u32, z: *mut Node, trailer: u64) -> u32 {
    let lt = |k: u32| {
        // SAFETY: `z` is a linked non-head node.
        unsafe { node_lt(z, keys[k as usize], trailer) }
    };
    // Common cases first: everything goes down, or everything moves right.
    if !lt(hi - 1) {
        return hi;
    }
    if lt(lo) {
        return lo;
    }
    // Now target(lo) ≤ z < target(hi-1): binary search the boundary.
    let (mut a, mut b) = (lo + 1, hi - 1);
    while a < b {
        let mid = a + (b - a) / 2;
        if lt(mid) {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    a
}

/// Keys `lo..hi` all have `z` as their candidate.
#[inline]
fn finish(
    base: usize,
    lo: u32,
    hi: u32,
    z: *mut Node,
    emit: &mut impl FnMut(usize, *mut Node) -> Result<()>,
) -> Result<()> {
    for k in lo..hi {
        emit(base + k as usize, z)?;
    }
    Ok(())
}
