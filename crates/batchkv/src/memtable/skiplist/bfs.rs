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

use super::list::{key_lt_div, prefetch_down, Divergence, Path, SkipList};
use super::node::{self, Node};
use crate::error::Result;
use crate::memtable::HINT_LEVELS;
use crate::prefetch::prefetch_read;

/// Keys per breadth-first chunk (≈ the misses a core can keep in flight,
/// times the ~4 items that typically share a miss; measured in `mod.rs`).
pub(super) const CHUNK: usize = 64;
const _: () = assert!(CHUNK.is_power_of_two(), "slot() masks with CHUNK - 1");

/// Rounds with at most this many live items also prefetch each item's
/// next level ([`prefetch_down`]); more items keep enough misses in
/// flight on their own.
const DOWN_PREFETCH_ITEMS: usize = 16;

#[derive(Clone, Copy)]
struct Item {
    x: *mut Node,
    bound: *mut Node,
    z: *mut Node,
    level: u32,
    lo: u32,
    hi: u32,
}

/// The kept rank of the head's divergence. The head sorts before every key,
/// so a rank below every known divergence is true of it, and proves
/// "head < z" for every `z` whose divergence is known without a test for
/// the head (where it proves nothing, the full check passes for the head:
/// [`SkipList::check_order`]).
const HEAD_RANK: u128 = Divergence::LOWEST_RANK;

/// The index of key `k` (< CHUNK) in per-key arrays; the mask (a no-op on
/// valid indexes) spares the bounds check.
#[inline(always)]
fn slot(k: u32) -> usize {
    debug_assert!((k as usize) < CHUNK);
    k as usize & (CHUNK - 1)
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

/// What a descent keeps of each key's [`Path`] above level 0 (the item
/// that reaches level 0 holds the level-0 node): all of it for reads that
/// give insert hints, nothing for the others.
trait Paths {
    /// Node `x` is the predecessor of keys `lo..hi` at `level` (> 0).
    fn note(&mut self, x: *mut Node, level: u32, lo: u32, hi: u32);
    /// Key `k`'s path, `x` its predecessor at level 0.
    fn path(&self, k: u32, x: *mut Node) -> Path;
}

/// Paths not kept: a key's path is its level-0 node at every level (only
/// `path[0]` is meaningful).
struct NoPaths;

impl Paths for NoPaths {
    #[inline(always)]
    fn note(&mut self, _: *mut Node, _: u32, _: u32, _: u32) {}

    #[inline(always)]
    fn path(&self, _: u32, x: *mut Node) -> Path {
        [x; HINT_LEVELS]
    }
}

/// Per key of a chunk, its predecessors at levels `1..HINT_LEVELS`; the
/// head until a level is reached (levels above the list's height).
struct KeyPaths([[*mut Node; HINT_LEVELS - 1]; CHUNK]);

impl Paths for KeyPaths {
    #[inline(always)]
    fn note(&mut self, x: *mut Node, level: u32, lo: u32, hi: u32) {
        let l = level as usize;
        if (1..HINT_LEVELS).contains(&l) {
            for k in lo..hi {
                self.0[slot(k)][l - 1] = x;
            }
        }
    }

    #[inline(always)]
    fn path(&self, k: u32, x: *mut Node) -> Path {
        let upper = &self.0[slot(k)];
        std::array::from_fn(|l| if l == 0 { x } else { upper[l - 1] })
    }
}

/// Looks up `keys` (sorted, distinct user keys) at `trailer`; calls
/// `emit(i, candidate, path)` with each key's first node ≥ its lookup key
/// (maybe null, maybe another user key) and the search's [`Path`] (with
/// `PATHS`; otherwise only `path[0]`, the node before the candidate at
/// level 0, is meaningful). Keys are reported out of order.
pub(super) fn multi_get<const P: bool, const PATHS: bool>(
    list: &SkipList,
    keys: &[&[u8]],
    trailer: u64,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    let mut base = 0;
    for chunk in keys.chunks(CHUNK) {
        if P {
            descend_paranoid(list, chunk, base, trailer, emit)?;
        } else if PATHS {
            let mut paths = KeyPaths([[list.head; HINT_LEVELS - 1]; CHUNK]);
            descend::<false, false>(list, chunk, base, trailer, &mut paths, emit)?;
        } else {
            descend::<false, false>(list, chunk, base, trailer, &mut NoPaths, emit)?;
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
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2 (checked just above).
        return unsafe { descend_paranoid_sse42(list, keys, base, trailer, emit) };
    }
    descend::<true, false>(list, keys, base, trailer, &mut NoPaths, emit)
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
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    descend::<true, true>(list, keys, base, trailer, &mut NoPaths, emit)
}

/// [`node::key_protection`] in [`descend`]: with `SSE42` (only in the
/// instance that [`descend_paranoid_sse42`] calls, after detecting
/// SSE4.2), the `crc32` loop without detecting the feature again (~6
/// instructions per CRC: a load of std's feature cache and two tests).
#[inline(always)]
fn key_protection<const SSE42: bool>(k: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if SSE42 {
        // SAFETY: `descend::<_, true>` runs only from
        // `descend_paranoid_sse42`, whose caller checked that the CPU
        // supports SSE4.2.
        return unsafe { node::crc32c_sse42(0, k) };
    }
    node::key_protection(k)
}

/// One chunk. With `P`, the paranoid checks (docs/design.md §4.4):
/// - order, every traversed pair `x → z`: on a step on which some key `t`
///   of the item goes down, `key(x) < t ≤ key(z)` (x is before every
///   target of its item), so the comparisons just made prove it. On a step
///   on which all of them move right, `key(x) < t` and `key(z) < t` for the
///   item's first key `t`, which orders neither; the search keeps, per
///   item, the [`Divergence`] of `key(x)` from `t` (from the comparison
///   that made `x` the item's node, against that same first key: an item
///   keeps its first key while it moves right or goes down, and a split
///   starts the right item at the key it just compared), the comparison
///   just made gives that of `key(z)`, and the two divergences prove
///   `key(x) < key(z)` or the two keys are compared in full, which reports
///   an out-of-order pair. (Before 2026-11-23 every such step compared the
///   keys in full: ~15 comparisons per key in a 2M list.) Tests:
///   `divergence_proves_only_true_orders`,
///   `paranoid_checks_catch_an_out_of_order_pair_wherever_the_keys_diverge`;
/// - key protection: every node compared at level 0, each item's final
///   predecessor `x`, and its candidate when that was only the bound known
///   from above (see [`SkipList::check_step`] for
///   why these suffice to catch a damaged key that misleads a search).
///
/// `SSE42`: the caller checked that the CPU has SSE4.2 (only
/// [`descend_paranoid_sse42`]; see [`key_protection`]).
#[inline(always)]
fn descend<const P: bool, const SSE42: bool>(
    list: &SkipList,
    keys: &[&[u8]],
    base: usize,
    trailer: u64,
    paths: &mut impl Paths,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    debug_assert!(!keys.is_empty() && keys.len() <= CHUNK);
    let mut buf_a = Items::new();
    let mut buf_b = Items::new();
    let (mut cur, mut nxt) = (&mut buf_a, &mut buf_b);
    // With `P`: `ranks[lo]` is the kept rank of the divergence of `key(x)`
    // from `keys[lo]` for the live item `(x, lo..hi)` (ranges are disjoint,
    // so `lo` names one item; written whenever an item gets a new `x`).
    // 1 KiB to initialise per chunk; unused (and removed) without `P`.
    // (A like array of "x's key already hashed at level 0" flags, to skip
    // re-hashing a final predecessor, cost more to keep than the CRCs it
    // saved: +39 instructions per key.)
    let mut ranks = [HEAD_RANK; CHUNK];
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
        if P {
            advance_paranoid(list, cur, base, emit)?;
        } else {
            advance::<false>(list, cur, base, paths, emit)?;
        }
        // Pass 2: compare and split.
        let live = cur.len;
        nxt.len = 0;
        for i in 0..live {
            let it = cur.get(i);
            let z = it.z;
            // SAFETY: `z` is a linked non-head node.
            let (kz, kz_prot) = unsafe { node::key_with_protection(z) };
            // `dz` is unused (and not computed) without `P`.
            let (m, dz) = split(keys, it.lo, it.hi, kz, trailer);
            if P {
                // Some target ≤ key(z) (m > lo): key(x) < key(z) is already
                // proven by the comparisons just made. All move right
                // (m == lo): the divergences from keys[lo] may prove it
                // (always, for the head: see `HEAD_RANK`); otherwise
                // compare the keys.
                if it.level == 0 {
                    // SAFETY: `z` is a linked non-head node (its key `kz`
                    // was read above).
                    unsafe { list.check_key_protection(z, key_protection::<SSE42>(kz), kz_prot)? };
                }
                if m == it.lo {
                    let rx = ranks[slot(it.lo)];
                    if !dz.proven_after(rx) {
                        // SAFETY: `it.x` is the head or a linked node, `z`
                        // its linked successor.
                        unsafe { list.check_order_from(it.x, z, kz, dz.shared_prefix(rx))? };
                    }
                }
            }
            if m > it.lo {
                if it.level == 0 {
                    if P {
                        // SAFETY: `it.x` is the head or a linked node.
                        unsafe { list.check_key_with(it.x, key_protection::<SSE42>)? };
                    }
                    finish(base, it.lo, m, it.x, z, paths, emit)?;
                } else {
                    paths.note(it.x, it.level, it.lo, m);
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
                if P {
                    // `dz` is z's divergence from keys[m] (see split).
                    ranks[slot(m)] = dz.rank();
                }
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

/// Pass 1 of a round (see the module docs): loads each item's successor,
/// descends through `bound`s (finishing items at level 0), prefetches, and
/// keeps the live items at the front of `cur`.
#[inline(always)]
fn advance<const P: bool>(
    list: &SkipList,
    cur: &mut Items,
    base: usize,
    paths: &mut impl Paths,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    let mut live = 0;
    // Few items leave the core's line-fill buffers idle: each also
    // prefetches where it goes if `z` stops it (`prefetch_down`).
    let few = cur.len <= DOWN_PREFETCH_ITEMS;
    for i in 0..cur.len {
        let mut it = cur.get(i);
        loop {
            // SAFETY: `it.x` is the head or a linked node reached at
            // `it.level`, so its height is > level.
            let z = unsafe { node::next(it.x, it.level as usize) };
            if z == it.bound {
                if it.level == 0 {
                    if P {
                        // SAFETY: `it.x` is the head or a linked node; `z`
                        // is null or its successor.
                        unsafe { list.check_key(it.x)? };
                        // `z` (the bound) was compared above level 0
                        // only, where keys are not checksummed.
                        // SAFETY: as above.
                        unsafe { list.check_key(z)? };
                    }
                    finish(base, it.lo, it.hi, it.x, z, paths, emit)?;
                    break;
                }
                paths.note(it.x, it.level, it.lo, it.hi);
                it.level -= 1;
                continue;
            }
            // `z` is non-null: it lies between `x` and `bound` (≤ +∞).
            prefetch_read(node::slot_addr(z, it.level as usize));
            prefetch_read(z);
            prefetch_read(z.cast::<u8>().wrapping_add(40));
            if few {
                // SAFETY: as above.
                unsafe { prefetch_down(it.x, it.level as usize, z) };
            }
            it.z = z;
            // live ≤ i: overwrites an item already read.
            cur.set(live, it);
            live += 1;
            break;
        }
    }
    cur.len = live;
    Ok(())
}

/// [`advance`] with checks, out of line: inlined into the paranoid
/// descent, its loop lost registers to pass 2 (spills on every item). Not
/// compiled with SSE4.2, so its key CRCs (~1.5 per key: items that end on
/// a bound) detect the feature and call the `crc32` loop. Alone: -13
/// instructions per key checked, -19 unchecked (callgrind, 200k entries,
/// batch 64; register allocation in `descend` moves such figures by tens
/// either way).
#[inline(never)]
fn advance_paranoid(
    list: &SkipList,
    cur: &mut Items,
    base: usize,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    advance::<true>(list, cur, base, &mut NoPaths, emit)
}

/// The first index `m` in `lo..hi` whose target is after `kz = key(z)` (the keys
/// from there on move right past `z`), and, when `m < hi`, the
/// [`Divergence`] of `key(z)` from `keys[m]` (`key(z) < keys[m]` was just
/// compared; paranoid searches use it, the others let it be optimised
/// away). The comparison decodes `key(z)` once and compares whole words
/// (`key_lt_div`): the generic `compare_internal_key_parts` per target
/// cost ~500 more instructions per key (callgrind, 200k entries, b64).
#[inline(always)]
fn split(keys: &[&[u8]], lo: u32, hi: u32, kz: &[u8], trailer: u64) -> (u32, Divergence) {
    let lt = |k: u32| key_lt_div(kz, keys[k as usize], trailer);
    let (below, d_last) = lt(hi - 1);
    if !below {
        return (hi, Divergence::UNKNOWN);
    }
    if hi - 1 == lo {
        // A one-key item: that comparison was the whole split.
        return (lo, d_last);
    }
    let (below, d_lo) = lt(lo);
    if below {
        return (lo, d_lo);
    }
    // Now target(lo) ≤ z < target(hi-1): binary search the boundary,
    // keeping the divergence of the smallest index known to be after z.
    let (mut a, mut b, mut d_b) = (lo + 1, hi - 1, d_last);
    while a < b {
        let mid = a + (b - a) / 2;
        let (below, d_mid) = lt(mid);
        if below {
            b = mid;
            d_b = d_mid;
        } else {
            a = mid + 1;
        }
    }
    (a, d_b)
}

/// Keys `lo..hi` all have `z` as their candidate and `x` (the head or a
/// linked node) as their predecessor at level 0.
#[inline(always)]
fn finish(
    base: usize,
    lo: u32,
    hi: u32,
    x: *mut Node,
    z: *mut Node,
    paths: &impl Paths,
    emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
) -> Result<()> {
    for k in lo..hi {
        emit(base + k as usize, z, &paths.path(k, x))?;
    }
    Ok(())
}
