//! The concurrent skip list: insert by splice + CAS, and the single-key
//! searches (point lookup, iterator positioning) with optional paranoid
//! checks.
//!
//! # Thread safety
//! `insert` runs concurrently with itself and with every search; there is no
//! global lock (only the arena's short allocation mutex).
//!
//! # Invariants
//! 1. Nodes are never freed or unlinked while the list lives, and a node's
//!    entry bytes never change after it is linked at level 0.
//! 2. Every level is a sorted chain: `key(n) < key(next(n, l))` (strict;
//!    internal keys are unique).
//! 3. A node linked at level `l` is linked at every level below `l`
//!    (links are made bottom-up).
//! 4. `max_height` only grows; head's slots above it are null.
//! 5. A node becomes reachable only through a release CAS made after all
//!    its bytes were written; readers load links with acquire.
#![allow(unsafe_code)]

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::node::{self, Node, MAX_HEIGHT};
use super::point_index::PointIndex;
use crate::error::{Error, Result};
use crate::key::{compare_internal_key_parts, TRAILER_LEN};
use crate::memtable::arena::Arena;
use crate::memtable::{InsertHint, HINT_LEVELS};
use crate::prefetch::prefetch_read;

/// A search's predecessors of its key at levels `0..HINT_LEVELS`: at each
/// level the last node before the key (the head where the list was lower
/// than that level). Level `l`'s node is never after level `l - 1`'s (a
/// search moves only right as it goes down), so if the level-0 node sorts
/// before a key, all of them do. An [`InsertHint`] carries it.
pub(super) type Path = [*mut Node; HINT_LEVELS];

/// The skip list core (see the module docs).
pub(super) struct SkipList {
    pub(super) arena: Arena,
    /// Sentinel of height `MAX_HEIGHT` with an empty entry; never compared.
    pub(super) head: *mut Node,
    /// Height of the tallest node ever linked (≥ 1).
    max_height: AtomicUsize,
    /// "memtable#<id>", the file name in errors.
    pub(super) name: String,
    /// Names this list in the insert hints its searches give
    /// ([`InsertHint`]): unique in the process, never reused (a hint of a
    /// dropped list must never match a newer list's).
    pub(super) identity: u64,
    /// Each key's newest node, for point lookups (`memtable_point_index`;
    /// `point_index.rs`); every linked node is recorded there.
    pub(super) index: Option<PointIndex>,
}

/// The next list's [`SkipList::identity`].
static NEXT_IDENTITY: AtomicU64 = AtomicU64::new(1);

// SAFETY: the raw pointers point into the list's own arena, which lives as
// long as the list; cross-thread access follows invariant 5 (release CAS to
// publish, acquire loads to read), and published bytes are immutable.
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

/// Is `key(n) < (user, trailer)`?
///
/// # Safety
/// `n` is a non-head node of a live list.
#[inline(always)]
pub(super) unsafe fn node_lt(n: *mut Node, user: &[u8], trailer: u64) -> bool {
    compare_internal_key_parts(node::key(n), user, trailer) == CmpOrdering::Less
}

/// Prefetches what the next step of a search at `level` reads of `z` (its
/// key's first line and its `next` slot at `level`); nothing for null.
#[inline(always)]
pub(super) fn prefetch_node(z: *mut Node, level: usize) {
    if !z.is_null() {
        prefetch_read(node::slot_addr(z, level));
        prefetch_read(z);
        prefetch_read(z.cast::<u8>().wrapping_add(40));
    }
}

/// Prefetches where a search at `x` goes if its successor `z` at `level`
/// stops it there: `x`'s successor one level down (unless that is `z`,
/// being fetched anyway). Issued before `z`'s key is compared, so a
/// level's stop and the next level's first step overlap their misses
/// (readrandom of a 2M-entry memtable: +16 %, median of 5 rounds).
///
/// # Safety
/// `x` is the head or a linked node of height > `level`.
#[inline(always)]
pub(super) unsafe fn prefetch_down(x: *mut Node, level: usize, z: *mut Node) {
    if level > 0 {
        let down = node::next(x, level - 1);
        if down != z {
            prefetch_node(down, level - 1);
        }
    }
}

/// Where a node's key first differs from a lookup target it sorts before:
/// the byte offset `at` (a multiple of 8) of the first 8-byte word of the
/// user keys that differs, and the node's word there (big-endian, so word
/// order is byte order). [`Divergence::UNKNOWN`] when the keys differ only
/// in a tail shorter than a word, in length or in the trailer.
///
/// The paranoid breadth-first descent uses it to prove `key(x) < key(z)`
/// on the steps where every key of an item moves right: both nodes were
/// compared with the same target `t` (the item's first key) and are `< t`,
/// so their divergences from `t` order them without reading either key
/// again (see [`Divergence::proves_before`]).
///
/// Stored as one `u128` rank `(at + 1) << 64 | word`, so that comparing
/// ranks compares `(at, word)` lexicographically in two instructions; rank
/// 0 is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Divergence(u128);

impl Divergence {
    /// Nothing known: proves nothing.
    pub(super) const UNKNOWN: Divergence = Divergence(0);

    /// A divergence in the whole, 8-aligned word at `at` of both keys. A
    /// shorter key's tail word (ending at its last byte, not aligned) must
    /// stay unknown: a second key diverging in the next aligned word could
    /// differ from the target inside the tail word's span, which the rank
    /// order would not see.
    #[inline(always)]
    fn known(at: usize, word: u64) -> Divergence {
        Divergence(((at as u128 + 1) << 64) | u128::from(word))
    }

    /// The rank to keep for a node that becomes an item's `x` (0 when
    /// unknown: [`Divergence::proven_after`] treats it as proving nothing).
    #[inline(always)]
    pub(super) fn rank(self) -> u128 {
        self.0
    }

    /// A kept rank below every known divergence: for a node known to sort
    /// before every key (the head).
    pub(super) const LOWEST_RANK: u128 = 1;

    /// `dx.proves_before(self)` for the `dx` whose [`Divergence::rank`] is
    /// `pred`.
    #[inline(always)]
    pub(super) fn proven_after(self, pred: u128) -> bool {
        pred != 0 && pred < self.0
    }

    /// With `pred` the rank of `key(x)`'s divergence from `t` and `self`
    /// that of `key(z)` (the same `t`, as in [`Divergence::proven_after`]),
    /// how many leading bytes the two keys are known to share: when the
    /// ranks are equal and known, both equal `t` before the divergence word
    /// and hold the same whole word there, so they agree through its end;
    /// otherwise nothing is known (0). The order check of a pair the ranks
    /// do not prove (versions of one user key, mostly) compares from there.
    #[inline(always)]
    pub(super) fn shared_prefix(self, pred: u128) -> usize {
        if pred == self.0 && pred != 0 {
            // rank = (at + 1) << 64 | word: the word ends at `at + 8`.
            (pred >> 64) as usize + 7
        } else {
            0
        }
    }

    /// With `self` the divergence of `key(x) < t` and `dz` that of
    /// `key(z) < t` (the same `t`), is `key(x) < key(z)` proven?
    ///
    /// Let `x` diverge at `i` with word `a`, `z` at `j` with word `c`. Both
    /// user keys equal `t`'s before their divergence and have a whole word
    /// there. If `i < j`, `z` still equals `t` in word `i`, which is > `a`:
    /// `x` and `z` agree before `i` and `x` is smaller in word `i`. If
    /// `i == j`, they agree before `i` and `a < c` decides. (`i > j`, or
    /// `i == j` with `a ≥ c`, means `key(z) ≤ key(x)`, or unknown: the
    /// caller compares the keys themselves.) The ranks compare exactly
    /// `(i, a) < (j, c)`; an unknown `z` (rank 0) is below every rank, and
    /// an unknown `x` (rank 0) is excluded. Tested against the
    /// full comparison in `tests.rs` (`divergence_proves_only_true_orders`).
    #[cfg(test)]
    pub(super) fn proves_before(self, dz: Divergence) -> bool {
        dz.proven_after(self.rank())
    }
}

/// `compare_internal_key_parts(k, user, trailer).is_lt()`, plus the
/// divergence of `k` from the target (meaningful when the result is true).
#[inline(always)]
pub(super) fn key_lt_div(k: &[u8], user: &[u8], trailer: u64) -> (bool, Divergence) {
    if k.len() >= TRAILER_LEN {
        let n = (k.len() - TRAILER_LEN).min(user.len());
        let (pk, pu) = (k.as_ptr(), user.as_ptr());
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: `i + 8 ≤ n`, and `n` is at most both lengths.
            let (a, b) = unsafe {
                (
                    u64::from_be(pk.add(i).cast::<u64>().read_unaligned()),
                    u64::from_be(pu.add(i).cast::<u64>().read_unaligned()),
                )
            };
            if a != b {
                return (a < b, Divergence::known(i, a));
            }
            i += 8;
        }
        // Every whole word is equal: the tail, then the lengths, then the
        // trailers decide, from where the words stopped (the divergence of
        // a partial word stays unknown: see `Divergence::known`).
        // SAFETY: both user keys hold at least `n` bytes.
        let lt = match unsafe { tail_lt(pk, pu, i, n) } {
            Some(lt) => lt,
            None if k.len() - TRAILER_LEN != user.len() => k.len() - TRAILER_LEN < user.len(),
            // Same user key: the newer (larger) trailer sorts first.
            None => crate::key::trailer(k) > trailer,
        };
        return (lt, Divergence::UNKNOWN);
    }
    (
        compare_internal_key_parts(k, user, trailer) == CmpOrdering::Less,
        Divergence::UNKNOWN,
    )
}

/// The order of bytes `[i, n)` of two user keys at `pa` and `pb` that are
/// equal on `[0, i)`, with `n - i < 8`: `Some(a < b)` at the first
/// difference, `None` when they are equal through `n`. Where `n ≥ 8` it is
/// one big-endian word ending at `n` (its bytes before `i` are equal, so
/// its first difference is the tail's).
///
/// # Safety
/// Both `pa` and `pb` must be readable for `n` bytes.
#[inline(always)]
unsafe fn tail_lt(pa: *const u8, pb: *const u8, i: usize, n: usize) -> Option<bool> {
    debug_assert!(i <= n && n - i < 8);
    if i == n {
        return None;
    }
    if n >= 8 {
        // SAFETY: `n - 8 + 8 = n` bytes are readable (the caller's promise).
        let (a, b) = unsafe {
            (
                u64::from_be(pa.add(n - 8).cast::<u64>().read_unaligned()),
                u64::from_be(pb.add(n - 8).cast::<u64>().read_unaligned()),
            )
        };
        return (a != b).then_some(a < b);
    }
    (i..n).find_map(|j| {
        // SAFETY: `j < n`.
        let (a, b) = unsafe { (*pa.add(j), *pb.add(j)) };
        (a != b).then_some(a < b)
    })
}

/// [`internal_key_lt_from`] from the first byte (the tests check it against
/// `compare_internal_keys`).
#[cfg(test)]
pub(super) fn internal_key_lt(a: &[u8], b: &[u8]) -> bool {
    internal_key_lt_from(a, b, 0)
}

/// Is internal key `a` < internal key `b` (user key ascending, then
/// trailer descending; the order of `compare_internal_keys`), for two keys
/// whose user keys are known to agree on their first `from` bytes (`from`
/// a multiple of 8, at most both user-key lengths: 0, or
/// [`Divergence::shared_prefix`])? Both are at least [`TRAILER_LEN`] bytes.
/// The paranoid order checks run it on the node pairs the divergences do
/// not order (~1.6 per lookup in a db_bench fillrandom memtable, mostly
/// versions of one user key, where `from` skips the whole user key of
/// 16-byte keys); the generic comparison (slices, `Ordering`) cost about
/// twice as many instructions.
#[inline(always)]
pub(super) fn internal_key_lt_from(a: &[u8], b: &[u8], from: usize) -> bool {
    debug_assert!(a.len() >= TRAILER_LEN && b.len() >= TRAILER_LEN);
    let (ua, ub) = (a.len() - TRAILER_LEN, b.len() - TRAILER_LEN);
    let n = ua.min(ub);
    debug_assert!(from.is_multiple_of(8) && from <= n && a[..from] == b[..from]);
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let word = |p: *const u8, i: usize| {
        // SAFETY: callers pass `i + 8 ≤ a.len()` (resp. `b.len()`).
        unsafe { p.add(i).cast::<u64>().read_unaligned() }
    };
    let mut i = from;
    while i + 8 <= n {
        let (wa, wb) = (u64::from_be(word(pa, i)), u64::from_be(word(pb, i)));
        if wa != wb {
            return wa < wb;
        }
        i += 8;
    }
    // SAFETY: both user keys hold at least `n` bytes.
    if let Some(lt) = unsafe { tail_lt(pa, pb, i, n) } {
        return lt;
    }
    if ua != ub {
        return ua < ub;
    }
    // Same user key: the newer (larger) trailer sorts first.
    u64::from_le(word(pa, ua)) > u64::from_le(word(pb, ub))
}

impl SkipList {
    pub(super) fn new(name: String, arena: Arena, index: Option<PointIndex>) -> SkipList {
        let mem = arena.allocate(node::node_size(MAX_HEIGHT, TRAILER_LEN, 0));
        // SAFETY: fresh, 8-aligned memory of the right size, not yet shared.
        let head = unsafe { node::init_node(mem, MAX_HEIGHT, &[], 0, &[]) };
        SkipList {
            arena,
            head,
            max_height: AtomicUsize::new(1),
            name,
            identity: NEXT_IDENTITY.fetch_add(1, Ordering::Relaxed),
            index,
        }
    }

    /// Current height to start searches at. Relaxed: a stale (lower) value
    /// only means a search starts lower than needed, which is still correct
    /// (lower levels are complete chains); higher levels' links are read
    /// with acquire.
    #[inline(always)]
    pub(super) fn max_height(&self) -> usize {
        self.max_height.load(Ordering::Relaxed)
    }

    /// The hint of a search whose [`Path`] was `path`.
    pub(super) fn hint(&self, path: &Path) -> InsertHint {
        InsertHint {
            table: self.identity,
            path: path.map(|p| p as usize),
        }
    }

    /// Where the search for `(user, trailer)` may start at each of levels
    /// `0..HINT_LEVELS`: the hint's path, if the hint is this list's and
    /// its level-0 node still sorts before the key (a newer version of the
    /// key written since the read sorts after it); `None`: search from the
    /// top. The path's other nodes then sort before the key too: a search
    /// reaches a level's predecessor before the lower levels' (invariant
    /// of [`Path`]).
    #[inline]
    pub(super) fn hinted_path(
        &self,
        hint: Option<InsertHint>,
        user: &[u8],
        trailer: u64,
    ) -> Option<Path> {
        let h = hint.filter(|h| h.table == self.identity)?;
        let path = h.path.map(|p| p as *mut Node);
        // SAFETY: a hint of this list (`identity` is never reused) holds
        // the head or nodes its search reached, so linked nodes; nodes are
        // never freed while the list lives (invariant 1).
        (path[0] == self.head || unsafe { node_lt(path[0], user, trailer) }).then_some(path)
    }

    /// Inserts `(user ‖ trailer) → value`. The internal key must be new.
    pub(super) fn insert(&self, user: &[u8], trailer: u64, value: &[u8]) {
        self.insert_hinted(user, trailer, value, None);
    }

    /// [`SkipList::insert`], a node of at most [`HINT_LEVELS`] levels
    /// linked from the hint's path when [`SkipList::hinted_path`] accepts
    /// it; whether it was.
    pub(super) fn insert_hinted(
        &self,
        user: &[u8],
        trailer: u64,
        value: &[u8],
        hint: Option<InsertHint>,
    ) -> bool {
        if let Some(index) = &self.index {
            // The bucket loads while the search runs.
            index.prefetch(user);
        }
        let (n, height) = self.new_node(user, trailer, value);
        let top = self.raise_max_height(height);
        let hinted = match height <= HINT_LEVELS {
            true => self.hinted_path(hint, user, trailer),
            false => None,
        };
        if let Some(path) = hinted {
            let mut prev = [self.head; HINT_LEVELS];
            let mut next = [std::ptr::null_mut(); HINT_LEVELS];
            for l in 0..height {
                // SAFETY: `path[l]` is the head or a linked node of height
                // > l, < the key (`hinted_path`).
                (prev[l], next[l]) =
                    unsafe { self.find_splice_for_level(user, trailer, path[l], l) };
            }
            // SAFETY: `n` is a fresh node of height `height`, not yet
            // linked; every `prev[l]` is the head or a linked node < the
            // key.
            unsafe { self.link(n, height, user, trailer, &mut prev, &mut next) };
            return true;
        }
        // Find the splice: per level, prev < key ≤ next.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next = [std::ptr::null_mut(); MAX_HEIGHT];
        let mut x = self.head;
        for l in (0..top).rev() {
            // SAFETY: `x` is the head or a linked node of height > l.
            let (p, q) = unsafe { self.find_splice_for_level(user, trailer, x, l) };
            prev[l] = p;
            next[l] = q;
            x = p;
        }
        // SAFETY: `n` is a fresh node of height `height`, not yet linked;
        // every `prev[l]` is the head or a linked node < the key.
        unsafe { self.link(n, height, user, trailer, &mut prev, &mut next) };
        false
    }

    /// A new node for `(user ‖ trailer) → value` of random height, not yet
    /// linked, and its height.
    fn new_node(&self, user: &[u8], trailer: u64, value: &[u8]) -> (*mut Node, usize) {
        let height = node::random_height();
        let size = node::node_size(height, user.len() + TRAILER_LEN, value.len());
        let mem = self.arena.allocate(size);
        // SAFETY: `mem` is fresh arena memory of `size` bytes, 8-aligned, not
        // yet visible to any other thread.
        let n = unsafe { node::init_node(mem, height, user, trailer, value) };
        (n, height)
    }

    /// Raises `max_height` to at least `height` (relaxed CAS loop: the
    /// value is a search hint) and returns the height to search from.
    pub(super) fn raise_max_height(&self, height: usize) -> usize {
        let mut top = self.max_height();
        while height > top {
            match self.max_height.compare_exchange_weak(
                top,
                height,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => top = height,
                Err(v) => top = v,
            }
        }
        top
    }

    /// Links node `n` of height `height` at its splice `prev`/`next`
    /// (per level, `prev[l] < key ≤ next[l]` when found), bottom-up
    /// (invariant 3); a level whose `prev[l]` gained a successor since is
    /// searched again from `prev[l]`.
    ///
    /// # Safety
    /// `n` is a fresh, unlinked node of height `height` holding `(user,
    /// trailer)`; `prev` and `next` hold at least `height` entries, and
    /// each `prev[l]` (l < height) is the head or a linked node taller
    /// than `l` whose key is < `(user, trailer)`.
    pub(super) unsafe fn link(
        &self,
        n: *mut Node,
        height: usize,
        user: &[u8],
        trailer: u64,
        prev: &mut [*mut Node],
        next: &mut [*mut Node],
    ) {
        debug_assert!(prev.len() >= height && next.len() >= height);
        for l in 0..height {
            loop {
                // SAFETY: `n` has height > l; nobody else can see it at level l
                // yet, so this relaxed store is published by the CAS below.
                unsafe { node::next_slot(n, l) }.store(next[l], Ordering::Relaxed);
                // Release: publishes the entry bytes and `n.next[l]` to readers
                // that acquire-load `prev[l].next[l]`. Failure: Relaxed, the
                // new value is re-read with acquire by the re-search.
                // SAFETY: `prev[l]` is the head or a node of height > l.
                let slot = unsafe { node::next_slot(prev[l], l) };
                if slot
                    .compare_exchange(next[l], n, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
                // Someone linked a node after prev[l]: re-find this level from
                // prev[l], which is still < key (nodes never move).
                // SAFETY: as above.
                let (p, q) = unsafe { self.find_splice_for_level(user, trailer, prev[l], l) };
                prev[l] = p;
                next[l] = q;
            }
        }
        if let Some(index) = &self.index {
            // SAFETY: `n` is now linked (on every level) in this list.
            unsafe { index.record(n, user, trailer) };
        }
    }

    /// Walks right at `level` from `start` (< key) to the pair
    /// `prev < (user, trailer) ≤ next`.
    ///
    /// # Safety
    /// `start` is the head or a linked node of height > `level`, < the key.
    unsafe fn find_splice_for_level(
        &self,
        user: &[u8],
        trailer: u64,
        start: *mut Node,
        level: usize,
    ) -> (*mut Node, *mut Node) {
        let mut x = start;
        loop {
            let z = node::next(x, level);
            prefetch_down(x, level, z);
            if z.is_null() || !node_lt(z, user, trailer) {
                debug_assert!(
                    z.is_null() || compare_internal_key_parts(node::key(z), user, trailer).is_gt(),
                    "internal key inserted twice"
                );
                return (x, z);
            }
            x = z;
        }
    }

    /// The first node whose key is ≥ `(user, trailer)`, or null. With `P`,
    /// checks every node compared (protection) and every pair walked (order).
    #[inline(always)]
    pub(super) fn find_ge<const P: bool>(&self, user: &[u8], trailer: u64) -> Result<*mut Node> {
        self.find_ge_path::<P>(user, trailer).map(|(_, z)| z)
    }

    /// [`SkipList::find_ge`] and the search's [`Path`]: `(path, z)`.
    pub(super) fn find_ge_path<const P: bool>(
        &self,
        user: &[u8],
        trailer: u64,
    ) -> Result<(Path, *mut Node)> {
        let mut path = [self.head; HINT_LEVELS];
        let mut x = self.head;
        let mut level = self.max_height() - 1;
        // The node already known to be ≥ the key (skip re-comparing it).
        let mut bound: *mut Node = std::ptr::null_mut();
        loop {
            // SAFETY: `x` is the head or a linked node reached at `level`,
            // so its height is > level.
            let z = unsafe { node::next(x, level) };
            // SAFETY: as above.
            unsafe { prefetch_down(x, level, z) };
            if z != bound {
                // `z` non-null here: null is only ever met as `bound` or at a
                // level whose higher successor was null, i.e. bound == null.
                if P {
                    // SAFETY: `x` is the head or a linked node, `z` its
                    // non-null successor.
                    unsafe { self.check_step(x, z, level)? };
                }
                // SAFETY: `z` is a linked non-head node.
                if unsafe { node_lt(z, user, trailer) } {
                    x = z;
                    continue;
                }
            }
            if level == 0 {
                if P {
                    // SAFETY: `x` is the head or a linked node; `z` is null
                    // or `x`'s successor.
                    unsafe { self.check_key(x)? };
                    if z == bound {
                        // Compared above level 0 only: a damaged key that
                        // stopped the search wrongly would go unnoticed
                        // (check_step CRCs level-0 comparisons only).
                        // SAFETY: as above.
                        unsafe { self.check_key(z)? };
                    }
                }
                path[0] = x;
                return Ok((path, z));
            }
            if level < HINT_LEVELS {
                path[level] = x;
            }
            bound = z;
            level -= 1;
        }
    }

    /// The last node, or the head if the list is empty.
    pub(super) fn find_last(&self) -> *mut Node {
        let mut x = self.head;
        let mut level = self.max_height() - 1;
        loop {
            // SAFETY: as in `find_ge`.
            let z = unsafe { node::next(x, level) };
            if !z.is_null() {
                x = z;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Paranoid check of one traversal step `x → z` at `level` (z non-null):
    /// `key(x) < key(z)` unless `x` is the head, and at level 0 `z`'s key
    /// protection. Upper levels are checked for order only (a CRC of every
    /// key passed on the way down cost 25–50% of a lookup). That is enough:
    /// a node's key is stored once for all its levels, so a damaged key can
    /// mislead a search in two ways only — it is passed when it should not
    /// be, and then it is the search's final level-0 predecessor, which
    /// [`SkipList::check_key`] verifies; or it stops the search when it
    /// should not, and then it is the search's candidate (every intact node
    /// before it is below the target): compared at level 0 and checked
    /// here, or reached at level 0 as the bound known from the level above
    /// and checked by [`SkipList::check_key`].
    ///
    /// # Safety
    /// `x` is this list's head or a linked node of it, and `z` a linked
    /// non-head node of it.
    #[inline]
    pub(super) unsafe fn check_step(&self, x: *mut Node, z: *mut Node, level: usize) -> Result<()> {
        // SAFETY: the caller's contract covers both nodes.
        unsafe {
            if level == 0 {
                self.check_key(z)?;
            }
            self.check_order(x, z)
        }
    }

    /// Paranoid order check of one step `x → z`: `key(x) < key(z)` unless
    /// `x` is the head.
    ///
    /// # Safety
    /// As for [`SkipList::check_step`].
    #[inline(always)]
    pub(super) unsafe fn check_order(&self, x: *mut Node, z: *mut Node) -> Result<()> {
        // SAFETY: `z` is a linked non-head node (the caller's contract),
        // and so `x` is for `check_order_from`.
        unsafe { self.check_order_from(x, z, node::key(z), 0) }
    }

    /// [`SkipList::check_order`] with `z`'s key `kz` already decoded and
    /// the two user keys known to agree on their first `from` bytes
    /// ([`Divergence::shared_prefix`]).
    ///
    /// # Safety
    /// As for [`SkipList::check_step`].
    #[inline(always)]
    pub(super) unsafe fn check_order_from(
        &self,
        x: *mut Node,
        z: *mut Node,
        kz: &[u8],
        from: usize,
    ) -> Result<()> {
        if x == self.head {
            return Ok(());
        }
        // SAFETY: `x` is a linked non-head node (the caller's contract).
        let kx = unsafe { node::key(x) };
        if kx.len() >= TRAILER_LEN && kz.len() >= TRAILER_LEN && internal_key_lt_from(kx, kz, from)
        {
            return Ok(());
        }
        Err(self.order_error(x, z))
    }

    /// The error of a failed [`SkipList::check_order`] (cold: kept out of
    /// the searches' loops).
    #[cold]
    #[inline(never)]
    fn order_error(&self, x: *mut Node, z: *mut Node) -> Error {
        // SAFETY: only `check_order_from` calls this, for two linked
        // non-head nodes (its caller's contract).
        let (kx, kz) = unsafe { (node::key(x), node::key(z)) };
        self.corruption(
            z,
            format!("skip list out of order: {kx:?} is not before {kz:?}"),
        )
    }

    /// Paranoid check of a node at a search's end (see
    /// [`SkipList::check_step`]): the final level-0 predecessor, or the
    /// candidate when it was not compared at level 0 (it was only the known
    /// bound from the level above). Its key protection must match; the head
    /// and null (+∞) have nothing to check.
    ///
    /// # Safety
    /// `x` is null, this list's head or a linked node of it.
    #[inline(always)]
    pub(super) unsafe fn check_key(&self, x: *mut Node) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.check_key_with(x, node::key_protection) }
    }

    /// [`SkipList::check_key`] with the key protection computed by
    /// `protection` (the checked batched descent passes a CRC that skips
    /// the CPU-feature test).
    ///
    /// # Safety
    /// As for [`SkipList::check_key`].
    #[inline(always)]
    pub(super) unsafe fn check_key_with(
        &self,
        x: *mut Node,
        protection: impl FnOnce(&[u8]) -> u32,
    ) -> Result<()> {
        if x == self.head || x.is_null() {
            return Ok(());
        }
        // SAFETY: `x` is neither null nor the head, so a linked node (the
        // caller's contract).
        let (kx, stored) = unsafe { node::key_with_protection(x) };
        // SAFETY: as above.
        unsafe { self.check_key_protection(x, protection(kx), stored) }
    }

    /// A node `x`'s key check with its key protection already computed
    /// (`computed`) and its stored one decoded (`stored`).
    ///
    /// # Safety
    /// `x` is a linked non-head node of this list (read for the error).
    #[inline(always)]
    pub(super) unsafe fn check_key_protection(
        &self,
        x: *mut Node,
        computed: u32,
        stored: u32,
    ) -> Result<()> {
        if computed == stored {
            return Ok(());
        }
        Err(self.key_error(x))
    }

    /// The error of a failed [`SkipList::check_key`] (cold).
    #[cold]
    #[inline(never)]
    fn key_error(&self, x: *mut Node) -> Error {
        // SAFETY: only `check_key_protection` calls this, for a linked
        // non-head node (its caller's contract).
        let (kx, stored) = unsafe { node::key_with_protection(x) };
        let computed = node::key_protection(kx);
        self.corruption(
            x,
            format!("key checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
        )
    }

    /// Paranoid check of one entry's protection bytes (key and whole entry).
    ///
    /// # Safety
    /// `n` is a linked non-head node of this list.
    pub(super) unsafe fn check_entry(&self, n: *mut Node) -> Result<()> {
        // SAFETY: `n` is a linked non-head node (the caller's contract).
        let e = unsafe { node::entry(n) };
        let key_prot = node::key_protection(e.key);
        let computed = node::crc32c_append(key_prot, e.value);
        if e.key.len() < TRAILER_LEN || key_prot != e.key_protection || computed != e.protection {
            return Err(self.corruption(
                n,
                format!(
                    "entry checksum mismatch: stored {:#010x}, computed {computed:#010x}",
                    e.protection
                ),
            ));
        }
        Ok(())
    }

    /// Paranoid check of the entry of node `n`, which a paranoid search
    /// returned as its candidate: the protection word over key and value. Every paranoid
    /// search verifies its candidate's key protection (compared at level 0,
    /// or checked as the bound: `find_ge`, `finger.rs`, `bfs.rs`), so the
    /// CRC continues from the stored key protection instead of hashing the
    /// key again — the same word [`SkipList::check_entry`] computes.
    ///
    /// # Safety
    /// As for [`SkipList::check_entry`].
    #[inline]
    pub(super) unsafe fn check_found_entry(&self, n: *mut Node) -> Result<()> {
        // SAFETY: `n` is a linked non-head node (the caller's contract).
        let e = unsafe { node::entry(n) };
        let computed = node::crc32c_append(e.key_protection, e.value);
        if e.key.len() < TRAILER_LEN || computed != e.protection {
            return Err(self.corruption(
                n,
                format!(
                    "entry checksum mismatch: stored {:#010x}, computed {computed:#010x}",
                    e.protection
                ),
            ));
        }
        Ok(())
    }

    /// A `Corruption` error naming this memtable and `n`'s arena offset.
    pub(super) fn corruption(&self, n: *mut Node, detail: String) -> Error {
        Error::corruption(self.name.clone(), self.arena.offset_of(n.cast()), detail)
    }
}
