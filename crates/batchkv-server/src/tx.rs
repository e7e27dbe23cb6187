//! The mechanism behind MULTI/EXEC/WATCH (`commands/tx.rs` has the
//! commands): the transaction *overlay* that makes EXEC one engine write,
//! and the *modification table* that WATCH reads.
//!
//! # The overlay (atomicity and isolation of EXEC)
//! EXEC locks the stripes of every key its queued commands name (all
//! stripes when that cannot be known), then runs the commands with an
//! [`Overlay`] installed in a thread-local of the thread running EXEC.
//! While it is installed:
//! 1. [`Shared::write`](crate::shared::Shared::write) records the batch in
//!    the overlay instead of writing it: every put, delete and range
//!    deletion goes into one combined [`WriteBatch`], in order, and into
//!    the overlay's view (`points`: key → value or deleted; `ranges`:
//!    range deletions).
//! 2. Every read primitive of `Shared` (`get_raw`, and through it
//!    `read`/`read_value`/`read_meta`; `read_many`, `get_many`, `scan`)
//!    answers from the overlay's view on top of the engine, so each queued
//!    command sees the writes of the ones before it.
//! 3. `Shared::lock_keys` locks nothing (the stripes are held by EXEC, and
//!    std mutexes are not reentrant); it checks that the stripes asked for
//!    are held and marks the overlay [`escaped`](Overlay::escaped) if not.
//!    EXEC then throws the overlay away and runs the transaction again
//!    with every stripe locked, so a command whose keys the command table
//!    does not name is still isolated.
//!
//! EXEC then writes the combined batch with one `Shared::write`: one
//! engine write, hence one WAL record, all or nothing after a crash.
//! Other clients read the engine only, so they see none of the
//! transaction before that write and all of it after. Messages PUBLISHed
//! by the transaction are kept in the overlay too and delivered after
//! that write ([`defer_publish`]), so a transaction run again sends each
//! once.
//!
//! View invariants: a key in `points` holds the last operation the
//! transaction applied to it; a range deletion removes the `points` it
//! covers when recorded, so a key in `points` inside a recorded range
//! was written after the range and wins over it. The server never writes
//! merge operands; a batch holding one is written as is, but reads do not
//! see it (a debug assertion catches that).
//!
//! # The modification table (WATCH)
//! [`Mods`] holds [`SLOTS`] counters indexed by a hash of the stored key
//! ([`slot_of`]). Every engine write made through `Shared::write` while
//! a [`KeyGuard`](crate::shared::KeyGuard) is held notes, in a
//! thread-local, the slots of the stored keys its batch changes
//! ([`owner_slot`]: a key's value or metadata, or one of its elements);
//! when the guard is dropped it bumps those of its own keys' slots that
//! were noted (a guard of every stripe: all noted slots) — before its
//! stripes are released. So a command bumps the keys it wrote or
//! deleted, not every key it locked: as Redis's `signalModifiedKey`,
//! `DEL a b` with only `a` live, or an `SINTERSTORE` whose sources are
//! read, changes no watched `b` or source. A command that changes a key
//! without writing (Redis signals LTRIM even when it trims nothing) calls
//! [`note_modified`]. Inside EXEC nothing is noted until the combined
//! write, which EXEC makes holding its stripes, then bumps what it noted
//! (and what [`note_modified`] collected in the overlay). WATCH records
//! the slot's value and whether the key was live; EXEC aborts if the slot
//! moved, or if the key was live and is not any more, checked under the
//! stripe locks of the watched keys. The liveness check covers the
//! changes that bump no slot: expiry (lazy or active), and
//! FLUSHDB/FLUSHALL (a flush leaves no key live; a key written after it
//! bumped its slot). As in Redis 7, a key absent or already expired at
//! WATCH is not changed by its expiry, deletion by expiry, or a flush.
//!
//! While no client watches a key, writes note and bump nothing: a write
//! checks [`Mods::watched`] when it is noted, and its guard checks again
//! after the engine write, before the stripes are released
//! ([`Mods::watched_now`]: a `SeqCst` fence, then the count). WATCH counts
//! its client in ([`Mods::watch`]: an increment and a fence) before it
//! reads the slot and the key. Either the guard's check sees the watcher,
//! or WATCH's reads see the write (the two fences order them), so a write
//! after WATCH is never missed: a guard whose writes went un-noted and
//! that then sees a watcher bumps every slot it holds (every slot, for a
//! guard of all stripes), which may abort a watcher falsely, never misses
//! a change. Pipelined INCR: ~330 instructions per command (the slot
//! hashes of `note_written`, the guard's sort and atomic bumps on a
//! 512 KiB table) not spent while nobody watches.
//!
//! False aborts (EXEC answers null although the watched key did not
//! change): two keys whose hashes share a slot (probability 1/65536 per
//! pair), a write that raced WATCH itself (it bumped the slot just after
//! WATCH read it), and a few writes that rewrite a key without changing it
//! where Redis would not signal it. A change is never missed: every write
//! to a key notes its slot under the key's stripe lock, and the guard
//! bumps it before the lock is released; active expiry of a key live at
//! WATCH is caught by the liveness check, and FLUSHDB holds every stripe
//! (so it is ordered with EXEC's check and write).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use batchkv::{BatchOp, InsertHint, WriteBatch};
use bytes::Bytes;

use crate::keyspace::NUM_DBS;
use crate::meta::{ELEMENTS, RANKS, SCORES};
use crate::shared::STRIPES;

/// Engine values read ahead for EXEC and write groups, by engine key, as
/// [`crate::shared::Shared::prefetch`] reads them.
pub type Prefetched = HashMap<Vec<u8>, Fetched, foldhash::fast::RandomState>;

/// A key read ahead: its engine value (`None`: absent), and where a new
/// version of it goes in the memtable, which the transaction's write of
/// the key passes on (`WriteBatch::put_hinted`).
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    pub value: Option<Vec<u8>>,
    pub hint: Option<InsertHint>,
}

/// Counters of the modification table.
pub const SLOTS: usize = 1 << 16;

// A key's stripe is its slot modulo `STRIPES`: one hash serves both.
const _: () = assert!(SLOTS.is_multiple_of(STRIPES));

/// The modification-table slot of stored key `key` (FNV-1a; its value
/// modulo `STRIPES` is the key's lock stripe).
pub fn slot_of(key: &[u8]) -> u32 {
    slot_of_parts(&[key])
}

/// [`slot_of`] of the concatenation of `parts`.
fn slot_of_parts(parts: &[&[u8]]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % SLOTS as u64) as u32
}

/// The slot of the stored key whose value an engine key `k` belongs to:
/// `k` itself for a stored key (`db ‖ user key`), the collection's key for
/// an element or score-index key (`meta.rs`). `None` for the engine keys
/// outside the databases (expiry index, markers) and for a prefix shorter
/// than an owner (a range deletion over a whole database).
pub fn owner_slot(k: &[u8]) -> Option<u32> {
    match *k.first()? {
        db if usize::from(db) < NUM_DBS => Some(slot_of(k)),
        ELEMENTS | SCORES | RANKS => {
            let db = k.get(1..2)?;
            let len = u32::from_be_bytes(k.get(2..6)?.try_into().ok()?) as usize;
            let user = k.get(6..6usize.checked_add(len)?)?;
            Some(slot_of_parts(&[db, user]))
        }
        _ => None,
    }
}

/// The lock stripe of a slot.
pub fn stripe_of_slot(slot: u32) -> usize {
    slot as usize % STRIPES
}

/// Modification counters (see the module doc). Bumps are `Release` and
/// reads `Acquire`: a reader that sees a bump sees the write before it.
pub struct Mods {
    slots: Box<[AtomicU64]>,
    /// Clients that watch a key ([`WatchToken`]s alive).
    watchers: Arc<AtomicUsize>,
}

impl Default for Mods {
    fn default() -> Mods {
        Mods {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            watchers: Arc::default(),
        }
    }
}

/// A client counted among the watchers while it lives ([`Mods::watch`]).
#[derive(Debug)]
pub struct WatchToken(Arc<AtomicUsize>);

impl Drop for WatchToken {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Mods {
    /// Counts a client among the watchers until the token is dropped. Call
    /// it before reading what WATCH records (the module doc: the fence
    /// orders this count before those reads).
    pub fn watch(&self) -> WatchToken {
        self.watchers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        WatchToken(self.watchers.clone())
    }

    /// Whether a client watches a key (for noting a write: a stale answer
    /// is caught by [`Mods::watched_now`]).
    pub fn watched(&self) -> bool {
        self.watchers.load(Ordering::Relaxed) > 0
    }

    /// Whether a client watches a key, ordered after the caller's engine
    /// writes (the module doc).
    pub fn watched_now(&self) -> bool {
        fence(Ordering::SeqCst);
        self.watchers.load(Ordering::Relaxed) > 0
    }

    /// Records a change of the keys of `slots`.
    pub fn touch(&self, slots: &[u32]) {
        for &s in slots {
            self.slots[s as usize].fetch_add(1, Ordering::Release);
        }
    }

    /// Records a change of every key.
    pub fn touch_all(&self) {
        for s in self.slots.iter() {
            s.fetch_add(1, Ordering::Release);
        }
    }

    /// The counter of `slot`.
    pub fn slot(&self, slot: u32) -> u64 {
        self.slots[slot as usize].load(Ordering::Acquire)
    }
}

thread_local! {
    /// Key guards alive on this thread.
    static GUARDS: Cell<usize> = const { Cell::new(0) };
    /// Slots of the keys changed by this thread's engine writes since the
    /// oldest live guard was taken (consecutive repeats dropped).
    static TOUCHED: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// A write since the oldest live guard was taken went un-noted: no
    /// client watched then ([`Mods::watched`]).
    static SKIPPED: Cell<bool> = const { Cell::new(false) };
    /// An overlay is installed on this thread (the one-branch fast check).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static OVERLAY: RefCell<Option<Overlay>> = const { RefCell::new(None) };
}

/// Starts a key guard on this thread; returns the position in the noted
/// slots from which its changes are noted (give it to [`end_guard`]).
pub fn begin_guard() -> usize {
    GUARDS.with(|g| g.set(g.get() + 1));
    TOUCHED.with(|t| t.borrow().len())
}

/// Ends the guard begun at `at`: calls `f` with the slots noted since
/// (sorted; repeats possible) and whether a write went un-noted since the
/// oldest live guard was taken (no client watched then), if either; then
/// forgets both once no guard is left.
pub fn end_guard(at: usize, f: impl FnOnce(&[u32], bool)) {
    let skipped = SKIPPED.with(Cell::get);
    TOUCHED.with(|t| {
        let mut t = t.borrow_mut();
        let noted = t.get_mut(at..).unwrap_or_default();
        if !noted.is_empty() || skipped {
            // In place: an enclosing guard's part is this one's and more,
            // in any order.
            noted.sort_unstable();
            f(noted, skipped);
        }
    });
    let left = GUARDS.with(|g| {
        let left = g.get().saturating_sub(1);
        g.set(left);
        left
    });
    if left == 0 {
        TOUCHED.with(|t| t.borrow_mut().clear());
        SKIPPED.with(|s| s.set(false));
    }
}

/// Notes the keys `batch` changes, if a key guard is alive on this thread
/// (`Shared::write` calls it before each engine write) and a client
/// watches a key (otherwise only that a write went un-noted). `live(key)`
/// says whether stored key `key` holds a live value: deleting one that
/// does not changes nothing (Redis signals no key `dbDelete` did not find,
/// and a value that expired is no change to a watcher that saw it
/// expired).
pub fn note_written(mods: &Mods, batch: &WriteBatch, live: impl Fn(&[u8]) -> bool) {
    if GUARDS.with(Cell::get) == 0 {
        return;
    }
    if !mods.watched() {
        SKIPPED.with(|s| s.set(true));
        return;
    }
    TOUCHED.with(|t| {
        let mut t = t.borrow_mut();
        for op in batch.ops() {
            let slot = match op {
                BatchOp::Delete { key }
                    if key.first().is_some_and(|&d| usize::from(d) < NUM_DBS) =>
                {
                    live(key).then(|| slot_of(key))
                }
                BatchOp::Put { key, .. } | BatchOp::Delete { key } | BatchOp::Merge { key, .. } => {
                    owner_slot(key)
                }
                // A range over one collection's elements (their prefix);
                // a wider one (FLUSHDB, SWAPDB) names no single key.
                BatchOp::DeleteRange { begin, .. } => match begin.first() {
                    Some(&(ELEMENTS | SCORES | RANKS)) => owner_slot(begin),
                    _ => None,
                },
            };
            if let Some(s) = slot.filter(|&s| t.last() != Some(&s)) {
                t.push(s);
            }
        }
    });
}

/// Records that stored key `key` changed although no write may show it
/// (Redis signals it anyway): bumped when the key's guard is dropped, or
/// inside EXEC after the transaction's write.
pub fn note_modified(key: &[u8]) {
    let slot = slot_of(key);
    if active() {
        with(|o| o.touched.push(slot));
        return;
    }
    if GUARDS.with(Cell::get) > 0 {
        TOUCHED.with(|t| t.borrow_mut().push(slot));
    }
}

/// Whether an overlay is installed on this thread (EXEC is running).
#[inline]
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// What a running EXEC has written but not yet committed.
pub struct Overlay {
    /// Point writes: `Some(value)` put, `None` deleted.
    points: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Range deletions `[begin, end)`, in order.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Everything recorded, in order: the transaction's one write.
    pub batch: WriteBatch,
    /// The stripes EXEC holds, ascending (`None`: all).
    held: Option<Vec<usize>>,
    /// A command asked for a stripe EXEC does not hold.
    pub escaped: bool,
    /// Slots of keys changed without a write ([`note_modified`]), to bump
    /// after the transaction's write.
    pub touched: Vec<u32>,
    /// Messages PUBLISHed and keyspace notifications, `(channel, payload,
    /// publisher)` in order, to deliver after the transaction's write (to
    /// every subscriber but the publishing connection, which has its own
    /// in PUBLISH's reply; notifications have publisher 0, no connection).
    pub published: Vec<(Bytes, Bytes, u64)>,
    /// Engine values of keys the transaction names, read with one
    /// `multi_get` once its stripes were locked (so still the latest
    /// state): reads of these keys the overlay does not answer take them
    /// from here instead of the engine.
    prefetched: Prefetched,
}

impl Overlay {
    fn new(held: Option<Vec<usize>>) -> Overlay {
        Overlay {
            points: BTreeMap::new(),
            ranges: Vec::new(),
            batch: WriteBatch::new(),
            held,
            escaped: false,
            touched: Vec::new(),
            published: Vec::new(),
            prefetched: Prefetched::default(),
        }
    }

    fn record(&mut self, batch: &WriteBatch) {
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => {
                    self.points.insert(key.to_vec(), Some(value.to_vec()));
                    let hint = self.prefetched.get(key).and_then(|f| f.hint);
                    self.batch.put_hinted(key, value, hint);
                }
                BatchOp::Delete { key } => {
                    self.points.insert(key.to_vec(), None);
                    self.batch.delete(key);
                }
                BatchOp::DeleteRange { begin, end } => {
                    if begin < end {
                        // Drop the points in [begin, end): split off the
                        // part from `begin`, keep what lies from `end`.
                        let mut from_begin = self.points.split_off(begin);
                        let mut from_end = from_begin.split_off(end);
                        self.points.append(&mut from_end);
                        self.ranges.push((begin.to_vec(), end.to_vec()));
                    }
                    self.batch.delete_range(begin, end);
                }
                BatchOp::Merge { key, operand } => {
                    debug_assert!(false, "the server writes no merge operands");
                    self.batch.merge(key, operand);
                }
            }
        }
    }

    fn lookup(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        if let Some(v) = self.points.get(key) {
            return Some(v.clone());
        }
        self.covered(key).then_some(None)
    }

    fn covered(&self, key: &[u8]) -> bool {
        self.ranges
            .iter()
            .any(|(b, e)| b.as_slice() <= key && key < e.as_slice())
    }

    fn holds(&self, stripe: usize) -> bool {
        self.held
            .as_ref()
            .is_none_or(|h| h.binary_search(&stripe).is_ok())
    }
}

/// Clears the overlay of this thread when dropped (also on unwinding, so
/// a panicking command cannot leave it installed for the thread's next
/// task).
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(false));
        OVERLAY.with(|o| o.borrow_mut().take());
    }
}

/// Runs `f` with an empty overlay installed on this thread; `held` are
/// the stripes the caller holds, ascending (`None`: all); `prefetched`
/// the engine values of keys in those stripes, read while they were held
/// (see [`Overlay`]). Returns `f`'s result and the overlay. Must not be
/// nested.
pub fn with_overlay<R>(
    held: Option<Vec<usize>>,
    prefetched: Prefetched,
    f: impl FnOnce() -> R,
) -> (R, Overlay) {
    debug_assert!(!active(), "overlays do not nest");
    let mut overlay = Overlay::new(held);
    overlay.prefetched = prefetched;
    OVERLAY.with(|o| *o.borrow_mut() = Some(overlay));
    ACTIVE.with(|a| a.set(true));
    let installed = Installed;
    let r = f();
    let overlay = OVERLAY.with(|o| o.borrow_mut().take());
    drop(installed);
    (r, overlay.unwrap_or_else(|| Overlay::new(None)))
}

/// Runs `f` on the installed overlay (`None` if there is none).
fn with<R>(f: impl FnOnce(&mut Overlay) -> R) -> Option<R> {
    OVERLAY.with(|o| o.borrow_mut().as_mut().map(f))
}

/// Records `batch` in the installed overlay.
pub fn record(batch: &WriteBatch) {
    with(|o| o.record(batch));
}

/// Runs `f` on what the installed overlay has recorded so far (`None`
/// if there is none).
pub fn pending<R>(f: impl FnOnce(&WriteBatch) -> R) -> Option<R> {
    with(|o| f(&o.batch))
}

/// The engine value of `key` the installed overlay prefetched
/// (`Some(None)`: absent), if it did; the caller asks only for a key the
/// overlay's view ([`lookup`]) does not hold.
pub fn prefetched(key: &[u8]) -> Option<Option<Vec<u8>>> {
    with(|o| o.prefetched.get(key).map(|f| f.value.clone())).flatten()
}

/// The installed overlay's view of `key`: `Some(Some(v))` written,
/// `Some(None)` deleted, `None` untouched (read the engine).
pub fn lookup(key: &[u8]) -> Option<Option<Vec<u8>>> {
    with(|o| o.lookup(key)).flatten()
}

/// Inside EXEC: records a message published to `channel` by connection
/// `publisher` (0 for a keyspace notification), for EXEC to deliver once
/// the transaction has committed, and returns true. Outside EXEC returns
/// false (deliver it now).
pub fn defer_publish(channel: &Bytes, payload: &Bytes, publisher: u64) -> bool {
    active()
        && with(|o| {
            o.published
                .push((channel.clone(), payload.clone(), publisher))
        })
        .is_some()
}

/// Checks that EXEC holds `stripes`; marks the overlay escaped if not.
pub fn check_held(stripes: &[usize]) {
    with(|o| {
        if !stripes.iter().all(|&s| o.holds(s)) {
            o.escaped = true;
        }
    });
}

/// Visits `[lo, hi)` as the engine would hold it with the installed
/// overlay applied: `engine(g)` must visit the engine's entries in that
/// range in scan order (ascending, or descending with `reverse`), calling
/// `g` until it returns false. Calls `f(key, value)` until it returns
/// false.
pub fn scan_merged<E>(
    lo: &[u8],
    hi: &[u8],
    reverse: bool,
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
    engine: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(), E>,
) -> Result<(), E> {
    // Copied out: `f` may read through `Shared` (and so the overlay).
    let (mut pending, ranges) = with(|o| {
        let pts: Vec<(Vec<u8>, Option<Vec<u8>>)> = if lo < hi {
            o.points
                .range::<[u8], _>((std::ops::Bound::Included(lo), std::ops::Bound::Excluded(hi)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            Vec::new()
        };
        (pts, o.ranges.clone())
    })
    .unwrap_or_default();
    if reverse {
        pending.reverse();
    }
    let covered = |k: &[u8]| {
        ranges
            .iter()
            .any(|(b, e)| b.as_slice() <= k && k < e.as_slice())
    };
    let ahead = |p: &[u8], k: &[u8]| if reverse { p > k } else { p < k };
    let mut i = 0;
    let mut stopped = false;
    engine(&mut |k, v| {
        while let Some((pk, pv)) = pending.get(i) {
            if !ahead(pk, k) {
                break;
            }
            i += 1;
            if let Some(pv) = pv {
                if !f(pk, pv) {
                    stopped = true;
                    return false;
                }
            }
        }
        if let Some((pk, pv)) = pending.get(i) {
            if pk.as_slice() == k {
                i += 1;
                if let Some(pv) = pv {
                    stopped = !f(pk, pv);
                }
                return !stopped;
            }
        }
        if covered(k) {
            return true;
        }
        stopped = !f(k, v);
        !stopped
    })?;
    if !stopped {
        for (pk, pv) in &pending[i..] {
            if let Some(pv) = pv {
                if !f(pk, pv) {
                    break;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta;

    /// `scan_merged` over an engine holding `engine` (sorted).
    fn merged(engine: &[(&str, &str)], lo: &str, hi: &str, reverse: bool) -> Vec<String> {
        let mut out = Vec::new();
        let r: Result<(), ()> = scan_merged(
            lo.as_bytes(),
            hi.as_bytes(),
            reverse,
            |k, v| {
                out.push(format!(
                    "{}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ));
                true
            },
            |g| {
                let mut e: Vec<_> = engine.iter().filter(|(k, _)| *k >= lo && *k < hi).collect();
                if reverse {
                    e.reverse();
                }
                for (k, v) in e {
                    if !g(k.as_bytes(), v.as_bytes()) {
                        break;
                    }
                }
                Ok(())
            },
        );
        r.unwrap();
        out
    }

    #[test]
    fn reads_see_puts_deletes_and_ranges_in_order() {
        let engine = [("a", "1"), ("b", "1"), ("c", "1"), ("d", "1"), ("f", "1")];
        let (got, o) = with_overlay(None, Prefetched::default(), || {
            let mut b = WriteBatch::new();
            b.put("b", "2");
            b.put("e", "2");
            b.delete("a");
            record(&b);
            let mut b = WriteBatch::new();
            // Hides engine c, d and the overlay's e; g is written after.
            b.delete_range("c", "f");
            b.put("d", "3");
            b.put("zz", "3");
            record(&b);
            assert!(active());
            assert_eq!(lookup(b"a"), Some(None));
            assert_eq!(lookup(b"b"), Some(Some(b"2".to_vec())));
            assert_eq!(lookup(b"c"), Some(None));
            assert_eq!(lookup(b"d"), Some(Some(b"3".to_vec())));
            assert_eq!(lookup(b"e"), Some(None));
            assert_eq!(lookup(b"f"), None);
            (
                merged(&engine, "a", "z", false),
                merged(&engine, "a", "z", true),
                merged(&engine, "c", "zzz", false),
            )
        });
        assert!(!active());
        assert_eq!(got.0, ["b=2", "d=3", "f=1"]);
        assert_eq!(got.1, ["f=1", "d=3", "b=2"]);
        assert_eq!(got.2, ["d=3", "f=1", "zz=3"]);
        let ops: Vec<_> = o.batch.ops().collect();
        assert_eq!(ops.len(), 6, "one combined batch, in order");
        assert_eq!(
            ops[3],
            BatchOp::DeleteRange {
                begin: b"c",
                end: b"f"
            }
        );
    }

    #[test]
    fn merged_scans_stop_when_asked() {
        let engine = [("a", "1"), ("c", "1")];
        let ((), _) = with_overlay(None, Prefetched::default(), || {
            let mut b = WriteBatch::new();
            b.put("b", "2");
            b.put("d", "2");
            record(&b);
            let mut seen = Vec::new();
            let r: Result<(), ()> = scan_merged(
                b"a",
                b"z",
                false,
                |k, _| {
                    seen.push(k.to_vec());
                    seen.len() < 2
                },
                |g| {
                    for (k, v) in engine {
                        if !g(k.as_bytes(), v.as_bytes()) {
                            break;
                        }
                    }
                    Ok(())
                },
            );
            r.unwrap();
            assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
        });
    }

    #[test]
    fn held_stripes_are_checked_and_the_overlay_is_removed_on_panic() {
        let ((), o) = with_overlay(Some(vec![3, 9]), Prefetched::default(), || {
            check_held(&[3, 9]);
        });
        assert!(!o.escaped);
        let ((), o) = with_overlay(Some(vec![3, 9]), Prefetched::default(), || {
            check_held(&[3, 4])
        });
        assert!(o.escaped);
        let r = std::panic::catch_unwind(|| {
            with_overlay(None, Prefetched::default(), || panic!("boom"))
        });
        assert!(r.is_err());
        assert!(!active());
        assert_eq!(lookup(b"x"), None);
    }

    #[test]
    fn written_keys_are_noted_by_their_owner() {
        use crate::keyspace::{db_key, expiry_index_key};
        let key = db_key(3, b"k");
        let slot = slot_of(&key);
        assert_eq!(owner_slot(&key), Some(slot));
        assert_eq!(owner_slot(&meta::element_key(&key, 7, b"f")), Some(slot));
        assert_eq!(
            owner_slot(&meta::score_index_key(&key, 7, 1.5, b"m")),
            Some(slot)
        );
        assert_eq!(owner_slot(&expiry_index_key(1, &key)), None);
        assert_eq!(
            owner_slot(&[ELEMENTS, 3]),
            None,
            "a whole database's elements"
        );
        assert_eq!(
            owner_slot(&[ELEMENTS, 3, 0, 0, 0, 9, b'k']),
            None,
            "truncated"
        );
        assert_eq!(owner_slot(b""), None);
        // Noted only while a guard is alive; deleting a key with no live
        // value is no change.
        let mut b = WriteBatch::new();
        b.delete(db_key(0, b"gone"));
        b.put(meta::element_key(&key, 7, b"f"), b"v");
        b.delete_range(meta::element_prefix(&key, 8), meta::prefix_end(&key));
        b.delete_range([0u8], [1u8]);
        let mods = Mods::default();
        let _watching = mods.watch();
        note_written(&mods, &b, |_| false);
        let at = begin_guard();
        let inner = begin_guard();
        note_written(&mods, &b, |_| false);
        end_guard(inner, |noted, skipped| {
            assert_eq!(noted, [slot]);
            assert!(!skipped);
        });
        note_written(&mods, &b, |k| k == db_key(0, b"gone"));
        let mut all = vec![slot, slot_of(&db_key(0, b"gone"))];
        all.sort_unstable();
        end_guard(at, |noted, _| {
            let mut distinct = noted.to_vec();
            distinct.dedup();
            assert_eq!(distinct, all, "sorted, repeats allowed");
        });
        let at = begin_guard();
        end_guard(at, |_, _| panic!("nothing was noted"));
    }

    /// While no client watches, writes are not noted, but their guards
    /// learn that a write went un-noted (so that one that then sees a
    /// watcher bumps all it holds), until no guard is left.
    #[test]
    fn writes_while_no_one_watches_are_skipped_not_lost() {
        let mods = Mods::default();
        let mut b = WriteBatch::new();
        b.put(crate::keyspace::db_key(0, b"k"), b"v");
        assert!(!mods.watched() && !mods.watched_now());
        let at = begin_guard();
        note_written(&mods, &b, |_| true);
        let watching = mods.watch();
        assert!(mods.watched_now());
        let mut called = false;
        end_guard(at, |noted, skipped| {
            called = true;
            assert!(noted.is_empty(), "nothing noted while no one watched");
            assert!(skipped);
        });
        assert!(called);
        // A new guard starts clean, and notes while someone watches.
        let at = begin_guard();
        note_written(&mods, &b, |_| true);
        end_guard(at, |noted, skipped| {
            assert_eq!(noted, [slot_of(&crate::keyspace::db_key(0, b"k"))]);
            assert!(!skipped);
        });
        drop(watching);
        assert!(!mods.watched_now(), "a dropped token counts out");
        let at = begin_guard();
        end_guard(at, |_, _| panic!("nothing was written"));
    }

    #[test]
    fn slots_count() {
        let m = Mods::default();
        let s = slot_of(b"\0key");
        assert_eq!(stripe_of_slot(s), s as usize % STRIPES);
        m.touch(&[s, s]);
        assert_eq!(m.slot(s), 2);
        assert_eq!(m.slot((s + 1) % SLOTS as u32), 0);
    }
}
