//! Exact key counts per database (DBSIZE, INFO keyspace) without a scan.
//!
//! A database's count is the number of keys stored in `[db, db+1)` —
//! strings and collection metadata, expired or not, as Redis's DBSIZE
//! counts keys its expiry has not removed yet — and how many of them have
//! an expiry. It is kept as
//!
//! ```text
//! count(db) = base(db) + delta(db)
//! ```
//!
//! - `base`: one scan of a snapshot taken when the server starts, before
//!   any write (a background thread: the server serves at once; DBSIZE
//!   waits for the scan only in the first moments after start).
//! - `delta`: what every write applied since then changed. Every write
//!   goes through [`KeyCounts::delta_of`] before it is applied (`Shared::
//!   write` and the sweeper): the batch's keys of the `[0, NUM_DBS)` range
//!   are read in one batched lookup, and the batch's operations replayed
//!   over what they held.
//!
//! # Invariants
//! 1. A key's writers hold its stripe lock from the read in `delta_of`
//!    until the delta is added (`shared.rs`: every write command locks
//!    the keys it writes; the sweeper locks the key it deletes; FLUSHDB,
//!    FLUSHALL and SWAPDB lock everything), so no write to the same key
//!    lands between the read and the write.
//! 2. Nothing removes a key without a write through here: compaction
//!    filters do not run on the server's keyspace (an expired string that
//!    a filter turned into a tombstone would leave the count one too high).
//! 3. What a write command read of a key it holds locked is what the key
//!    holds until that command writes it: such reads are remembered
//!    ([`Recording`]) and spare `delta_of` a second lookup.
//! 4. Range deletions over the keyspace cover whole databases (FLUSHDB,
//!    FLUSHALL, SWAPDB); a database so cleared counts from zero.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use batchkv::{BatchOp, Db, ReadOptions, WriteBatch};

use crate::keyspace::{decode_entry, NUM_DBS};

/// Keys and keys with an expiry, of one database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub keys: u64,
    pub expires: u64,
}

/// The change a write makes to the counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// Per database: cleared by a range deletion first?
    reset: [bool; NUM_DBS],
    /// Per database: keys and expiring keys added (after the reset, if
    /// any).
    keys: [i64; NUM_DBS],
    expires: [i64; NUM_DBS],
}

impl Delta {
    /// Database `db`'s count `c` once the write is applied.
    pub fn applied_to(&self, c: Count, db: usize) -> Count {
        let (k, e) = if self.reset[db] {
            (0, 0)
        } else {
            (c.keys as i64, c.expires as i64)
        };
        Count {
            keys: (k + self.keys[db]).max(0) as u64,
            expires: (e + self.expires[db]).max(0) as u64,
        }
    }

    /// Whether the write changes no count.
    pub fn is_empty(&self) -> bool {
        *self == Delta::default()
    }
}

/// What a key holds, as far as counting goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Absent,
    /// Stored (live or expired), with its expiry time if it has one.
    Present {
        expire_at: Option<u64>,
    },
}

impl State {
    fn of(stored: Option<&[u8]>) -> State {
        match stored {
            None => State::Absent,
            Some(v) => State::Present {
                // Values not written by the server count, without expiry.
                expire_at: decode_entry(v).and_then(|e| e.expire_at()),
            },
        }
    }

    fn counts(self) -> (i64, i64) {
        match self {
            State::Absent => (0, 0),
            State::Present { expire_at } => (1, i64::from(expire_at.is_some())),
        }
    }
}

/// The database of a keyspace key (`None`: element, index or marker keys).
fn db_of(key: &[u8]) -> Option<usize> {
    key.first()
        .map(|&d| usize::from(d))
        .filter(|&d| d < NUM_DBS)
}

/// The databases a range deletion `[begin, end)` clears whole.
fn cleared_dbs<'a>(begin: &'a [u8], end: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    (0..NUM_DBS).filter(move |&d| {
        let (lo, hi) = ([d as u8], [d as u8 + 1]);
        let whole = begin <= &lo[..] && &hi[..] <= end;
        debug_assert!(
            whole || end <= &lo[..] || &hi[..] <= begin,
            "range deletions over the keyspace cover whole databases"
        );
        whole
    })
}

/// The start-up scan's outcome: the counts, or why there are none.
type Base = Result<[Count; NUM_DBS], String>;

/// Per-database key counts (module doc).
pub struct KeyCounts {
    base: Mutex<Option<Base>>,
    base_ready: Condvar,
    keys: [AtomicI64; NUM_DBS],
    expires: [AtomicI64; NUM_DBS],
    /// Asks the start-up scan to stop (server shutdown).
    cancel: AtomicBool,
    scan: Mutex<Option<JoinHandle<()>>>,
}

impl KeyCounts {
    /// Counts waiting for their base ([`KeyCounts::start`] or
    /// [`KeyCounts::set_base`]).
    pub fn new() -> KeyCounts {
        KeyCounts {
            base: Mutex::new(None),
            base_ready: Condvar::new(),
            keys: Default::default(),
            expires: Default::default(),
            cancel: AtomicBool::new(false),
            scan: Mutex::new(None),
        }
    }

    /// Starts counting `db` as it is now, on a background thread. Call
    /// before anything writes (the deltas count from this moment).
    pub fn start(self: &Arc<Self>, db: &Db) {
        let opts = ReadOptions {
            snapshot: Some(db.snapshot()),
            ..Default::default()
        };
        let (me, db) = (self.clone(), db.clone());
        let spawned = std::thread::Builder::new()
            .name("batchkv-keycount".into())
            .spawn(move || {
                let r = KeyCounts::count_snapshot(&db, &opts, &me.cancel)
                    .map_err(|e| format!("ERR key count unavailable: {e}"));
                me.install(r);
            });
        match spawned {
            Ok(h) => *lock(&self.scan) = Some(h),
            Err(e) => self.install(Err(format!("ERR key count unavailable: {e}"))),
        }
    }

    /// Stops and joins the start-up scan (before the engine closes).
    pub fn stop(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(h) = lock(&self.scan).take() {
            let _ = h.join();
        }
    }

    /// Counts that start from a known state (tests).
    #[cfg(test)]
    pub fn with_base(base: [Count; NUM_DBS]) -> KeyCounts {
        let c = KeyCounts::new();
        c.set_base(base);
        c
    }

    /// Counts the keys of every database in `opts`'s snapshot (one scan;
    /// an error if `cancel` is set meanwhile).
    pub fn count_snapshot(
        db: &Db,
        opts: &ReadOptions,
        cancel: &AtomicBool,
    ) -> batchkv::Result<[Count; NUM_DBS]> {
        let mut out = [Count::default(); NUM_DBS];
        let opts = ReadOptions {
            lower_bound: Some(vec![0]),
            upper_bound: Some(vec![NUM_DBS as u8]),
            fill_cache: false,
            ..opts.clone()
        };
        let mut it = db.iter(&opts)?;
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            if n.is_multiple_of(4096) && cancel.load(Ordering::Relaxed) {
                return Err(batchkv::Error::InvalidArgument("shutting down".into()));
            }
            if let Some(d) = db_of(it.key()) {
                let (k, e) = State::of(Some(it.value())).counts();
                out[d].keys += k as u64;
                out[d].expires += e as u64;
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Sets the counts as of the moment deltas started (tests).
    #[cfg(test)]
    pub fn set_base(&self, base: [Count; NUM_DBS]) {
        self.install(Ok(base));
    }

    /// Installs the start-up scan's outcome and wakes waiting readers.
    fn install(&self, base: Base) {
        *lock(&self.base) = Some(base);
        self.base_ready.notify_all();
    }

    /// The start-up counts, waiting for the scan if it is still running.
    fn base(&self) -> Base {
        let mut g = lock(&self.base);
        loop {
            if let Some(b) = &*g {
                return b.clone();
            }
            g = self.base_ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The current count of database `db` (an error text if the start-up
    /// scan failed).
    pub fn get(&self, db: usize) -> Result<Count, String> {
        let base = self.base()?[db];
        let add = |b: u64, d: &AtomicI64| (b as i64 + d.load(Ordering::Acquire)).max(0) as u64;
        Ok(Count {
            keys: add(base.keys, &self.keys[db]),
            expires: add(base.expires, &self.expires[db]),
        })
    }

    /// What applying `batch` to `db` changes (reads the keyspace keys the
    /// batch writes, in one batched lookup). The caller holds the keys'
    /// locks until [`KeyCounts::add`] (invariant 1).
    pub fn delta_of(db: &Db, batch: &WriteBatch) -> batchkv::Result<Delta> {
        let delta = match single_key(batch) {
            Some(key) => {
                let from = match recall(key) {
                    Some(s) => s,
                    None => State::of(db.get_opt(&ReadOptions::default(), key)?.as_deref()),
                };
                Ok(single_key_delta(batch, key, from))
            }
            None => Self::delta_of_many(db, batch),
        };
        // The batch changes what was read: a later write of the same
        // command looks again.
        forget();
        delta
    }

    /// [`KeyCounts::delta_of`] of a batch that writes several keyspace
    /// keys or clears a database.
    fn delta_of_many(db: &Db, batch: &WriteBatch) -> batchkv::Result<Delta> {
        delta_over(batch, |keys| {
            // Keys the command read under its locks need no lookup.
            let mut states: Vec<Option<State>> = keys.iter().map(|k| recall(k)).collect();
            let missing: Vec<&[u8]> = keys
                .iter()
                .zip(&states)
                .filter(|(_, s)| s.is_none())
                .map(|(k, _)| *k)
                .collect();
            let mut read = Vec::with_capacity(missing.len());
            let opts = ReadOptions::default();
            if let [k] = missing[..] {
                read.push(State::of(db.get_opt(&opts, k)?.as_deref()));
            } else if !missing.is_empty() {
                let mut err = None;
                db.multi_get_with(&opts, &missing, |_, r| match r {
                    Ok(v) => read.push(State::of(v)),
                    Err(e) => {
                        err.get_or_insert(e);
                        read.push(State::Absent);
                    }
                });
                if let Some(e) = err {
                    return Err(e);
                }
            }
            let mut read = read.into_iter();
            for s in &mut states {
                if s.is_none() {
                    *s = read.next();
                }
            }
            Ok(states
                .into_iter()
                .map(|s| s.unwrap_or(State::Absent))
                .collect())
        })
    }

    /// Adds a delta computed by [`KeyCounts::delta_of`] once its write is
    /// applied.
    pub fn add(&self, d: &Delta) {
        for db in 0..NUM_DBS {
            if d.reset[db] {
                // Count from zero: cancel base and earlier deltas.
                let base = self.base().map_or(Count::default(), |b| b[db]);
                self.keys[db].store(d.keys[db] - base.keys as i64, Ordering::Release);
                self.expires[db].store(d.expires[db] - base.expires as i64, Ordering::Release);
            } else {
                self.keys[db].fetch_add(d.keys[db], Ordering::AcqRel);
                self.expires[db].fetch_add(d.expires[db], Ordering::AcqRel);
            }
        }
    }
}

impl Default for KeyCounts {
    fn default() -> Self {
        KeyCounts::new()
    }
}

/// What the current write command read of keyspace keys (invariant 3),
/// per thread. Entries live from a [`Recording`]'s start to its end or
/// the next write, whichever comes first.
#[derive(Default)]
struct Prior {
    /// Recordings alive on this thread.
    depth: u32,
    seen: Vec<(Vec<u8>, State)>,
}

thread_local! {
    static PRIOR: RefCell<Prior> = RefCell::new(Prior::default());
}

/// Most reads remembered per command (multi-key commands read more; their
/// other keys are looked up again).
const PRIOR_MAX: usize = 32;

/// Marks a span in which this thread's reads of keyspace keys are the
/// state of keys it holds locked (a `KeyGuard`'s lifetime).
pub struct Recording(());

impl Recording {
    pub fn start() -> Recording {
        PRIOR.with(|p| {
            let mut p = p.borrow_mut();
            p.depth += 1;
            p.seen.clear();
        });
        Recording(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        PRIOR.with(|p| {
            let mut p = p.borrow_mut();
            p.depth -= 1;
            p.seen.clear();
        });
    }
}

/// Notes that `key` holds `stored` in the latest state, read under the
/// current [`Recording`] (no-op outside one, and for non-keyspace keys).
pub fn remember(key: &[u8], stored: Option<&[u8]>) {
    if db_of(key).is_none() {
        return;
    }
    PRIOR.with(|p| {
        let mut p = p.borrow_mut();
        if p.depth > 0 && p.seen.len() < PRIOR_MAX && !p.seen.iter().any(|(k, _)| k == key) {
            p.seen.push((key.to_vec(), State::of(stored)));
        }
    });
}

/// Whether `key` holds a live (unexpired) value at time `now`, if the
/// current write command read it under its lock (`None`: not read).
pub fn recall_live(key: &[u8], now: u64) -> Option<bool> {
    recall(key).map(|s| match s {
        State::Absent => false,
        State::Present { expire_at } => expire_at.is_none_or(|t| t > now),
    })
}

fn recall(key: &[u8]) -> Option<State> {
    PRIOR.with(|p| {
        let p = p.borrow();
        p.seen.iter().find(|(k, _)| k == key).map(|(_, s)| *s)
    })
}

fn forget() {
    PRIOR.with(|p| p.borrow_mut().seen.clear());
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The one keyspace key `batch` writes, if it writes exactly one and
/// clears no database (most writes: the common case, without
/// allocation).
fn single_key(batch: &WriteBatch) -> Option<&[u8]> {
    let mut only: Option<&[u8]> = None;
    for op in batch.ops() {
        match op {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } if db_of(key).is_some() => {
                match only {
                    None => only = Some(key),
                    Some(k) if k == key => {}
                    Some(_) => return None,
                }
            }
            BatchOp::DeleteRange { begin, end } if cleared_dbs(begin, end).next().is_some() => {
                return None;
            }
            _ => {}
        }
    }
    only
}

/// The delta of `batch`, whose only keyspace key is `key`, held `from`.
fn single_key_delta(batch: &WriteBatch, key: &[u8], from: State) -> Delta {
    let mut to = from;
    for op in batch.ops() {
        match op {
            BatchOp::Put { key: k, value } if k == key => to = State::of(Some(value)),
            BatchOp::Delete { key: k } if k == key => to = State::Absent,
            _ => {}
        }
    }
    let mut delta = Delta::default();
    if let Some(d) = db_of(key) {
        let ((k0, e0), (k1, e1)) = (from.counts(), to.counts());
        delta.keys[d] = k1 - k0;
        delta.expires[d] = e1 - e0;
    }
    delta
}

/// The keyspace keys of a batch with what they hold, in first-touch
/// order. Searched linearly while small (most batches write one key); a
/// hash index once larger.
struct States<'a> {
    list: Vec<(&'a [u8], State)>,
    index: HashMap<&'a [u8], usize>,
}

impl<'a> States<'a> {
    const LINEAR: usize = 16;

    fn new() -> States<'a> {
        States {
            list: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        if self.list.len() <= Self::LINEAR {
            self.list.iter().position(|(k, _)| *k == key)
        } else {
            self.index.get(key).copied()
        }
    }

    /// Adds `key` (absent) unless present; returns whether it was added.
    fn add(&mut self, key: &'a [u8]) -> bool {
        if self.find(key).is_some() {
            return false;
        }
        self.list.push((key, State::Absent));
        match self.list.len() {
            n if n == Self::LINEAR + 1 => {
                self.index = self
                    .list
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (*k, i))
                    .collect();
            }
            n if n > Self::LINEAR => {
                self.index.insert(key, n - 1);
            }
            _ => {}
        }
        true
    }
}

/// Replays `batch` over the states `read` returns for the keyspace keys
/// it touches before clearing their database (in first-touch order).
fn delta_over(
    batch: &WriteBatch,
    read: impl FnOnce(&[&[u8]]) -> batchkv::Result<Vec<State>>,
) -> batchkv::Result<Delta> {
    // Every keyspace key the batch writes; those touched before any clear
    // of their database need their stored state.
    let mut states = States::new();
    let mut cleared = [false; NUM_DBS];
    let mut unknown: Vec<usize> = Vec::new();
    for op in batch.ops() {
        match op {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } => {
                if let Some(d) = db_of(key) {
                    if states.add(key) && !cleared[d] {
                        unknown.push(states.list.len() - 1);
                    }
                }
            }
            BatchOp::DeleteRange { begin, end } => {
                for d in cleared_dbs(begin, end) {
                    cleared[d] = true;
                }
            }
            BatchOp::Merge { .. } => {}
        }
    }
    if !unknown.is_empty() {
        let keys: Vec<&[u8]> = unknown.iter().map(|&i| states.list[i].0).collect();
        for (&i, s) in unknown.iter().zip(read(&keys)?) {
            states.list[i].1 = s;
        }
    }
    let mut delta = Delta::default();
    for op in batch.ops() {
        let (key, to) = match op {
            BatchOp::Put { key, value } => (key, State::of(Some(value))),
            BatchOp::Delete { key } => (key, State::Absent),
            BatchOp::DeleteRange { begin, end } => {
                // What the batch did to the database so far is undone: it
                // counts from zero, every key in it absent.
                for d in cleared_dbs(begin, end) {
                    delta.reset[d] = true;
                    delta.keys[d] = 0;
                    delta.expires[d] = 0;
                    for (k, s) in &mut states.list {
                        if db_of(k) == Some(d) {
                            *s = State::Absent;
                        }
                    }
                }
                continue;
            }
            BatchOp::Merge { .. } => continue,
        };
        let (Some(d), Some(i)) = (db_of(key), states.find(key)) else {
            continue;
        };
        let from = std::mem::replace(&mut states.list[i].1, to);
        let ((k0, e0), (k1, e1)) = (from.counts(), to.counts());
        delta.keys[d] += k1 - k0;
        delta.expires[d] += e1 - e0;
    }
    Ok(delta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::encode_value;

    /// `delta_over` with the stored states given by `stored`.
    fn delta(batch: &WriteBatch, stored: &[(&[u8], Option<Vec<u8>>)]) -> Delta {
        let state = |k: &[u8]| {
            let v = stored
                .iter()
                .find(|(s, _)| *s == k)
                .and_then(|(_, v)| v.clone());
            State::of(v.as_deref())
        };
        let d = delta_over(batch, |keys| Ok(keys.iter().map(|k| state(k)).collect())).unwrap();
        if let Some(k) = single_key(batch) {
            assert_eq!(single_key_delta(batch, k, state(k)), d, "single-key path");
        }
        d
    }

    fn plain() -> Vec<u8> {
        encode_value(b"v", None)
    }

    fn expiring() -> Vec<u8> {
        encode_value(b"v", Some(1))
    }

    #[test]
    fn puts_count_new_keys_only_and_deletes_existing_ones_only() {
        let mut b = WriteBatch::new();
        b.put(b"\0new", plain());
        b.put(b"\0old", plain());
        b.delete(b"\0gone");
        b.delete(b"\0missing");
        b.put(b"\x12elements are not keys", b"");
        let d = delta(
            &b,
            &[(b"\0old", Some(plain())), (b"\0gone", Some(expiring()))],
        );
        assert_eq!(d.keys[0], 0, "+new -gone");
        assert_eq!(d.expires[0], -1, "gone had an expiry");
        assert!(!d.reset[0]);
    }

    #[test]
    fn single_key_batches_take_the_short_path() {
        let mut b = WriteBatch::new();
        b.put(b"\x12element", b"");
        b.put(b"\0k", plain());
        b.delete(b"\x10index");
        assert_eq!(single_key(&b), Some(&b"\0k"[..]));
        let d = delta(&b, &[(b"\0k", Some(expiring()))]);
        assert_eq!((d.keys[0], d.expires[0]), (0, -1));
        b.delete(b"\0other");
        assert_eq!(single_key(&b), None);
        let mut b = WriteBatch::new();
        b.put(b"\0k", plain());
        b.delete_range([0u8], [1u8]);
        assert_eq!(single_key(&b), None, "a clear takes the general path");
    }

    #[test]
    fn expiry_changes_move_the_expires_count() {
        let mut b = WriteBatch::new();
        b.put(b"\x03a", expiring());
        b.put(b"\x03b", plain());
        let d = delta(
            &b,
            &[(b"\x03a", Some(plain())), (b"\x03b", Some(expiring()))],
        );
        assert_eq!((d.keys[3], d.expires[3]), (0, 0));
        let mut b = WriteBatch::new();
        b.put(b"\x03a", expiring());
        let d = delta(&b, &[(b"\x03a", Some(plain()))]);
        assert_eq!((d.keys[3], d.expires[3]), (0, 1));
    }

    #[test]
    fn a_key_written_twice_in_a_batch_counts_once() {
        let mut b = WriteBatch::new();
        b.put(b"\0k", plain());
        b.delete(b"\0k");
        b.put(b"\0k", expiring());
        let d = delta(&b, &[]);
        assert_eq!((d.keys[0], d.expires[0]), (1, 1));
    }

    #[test]
    fn large_batches_count_each_key_once() {
        let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("\0k{i}").into_bytes()).collect();
        let mut b = WriteBatch::new();
        for round in 0..2 {
            for (i, k) in keys.iter().enumerate() {
                if (i + round) % 3 == 0 {
                    b.delete(k);
                } else {
                    b.put(k, plain());
                }
            }
        }
        // k0..k9 were stored before.
        let stored: Vec<(&[u8], Option<Vec<u8>>)> = keys[..10]
            .iter()
            .map(|k| (&k[..], Some(expiring())))
            .collect();
        let d = delta(&b, &stored);
        // Present at the end: the keys the second round put ((i+1) % 3 != 0).
        let end = (0..40).filter(|i| (i + 1) % 3 != 0).count() as i64;
        assert_eq!(d.keys[0], end - 10);
        assert_eq!(d.expires[0], -10, "every put was plain");
    }

    #[test]
    fn a_cleared_database_counts_only_what_follows_the_clear() {
        let mut b = WriteBatch::new();
        b.put(b"\x01before", plain());
        b.delete_range([1u8], [2u8]);
        b.delete_range([2u8], [3u8]);
        b.put(b"\x01after", plain());
        b.put(b"\x02x", expiring());
        b.put(b"\x02y", plain());
        b.put(b"\x05other", plain());
        let d = delta(&b, &[(b"\x01before", Some(plain()))]);
        assert!(d.reset[1] && d.reset[2] && !d.reset[5] && !d.reset[0]);
        assert_eq!((d.keys[1], d.expires[1]), (1, 0));
        assert_eq!((d.keys[2], d.expires[2]), (2, 1));
        assert_eq!((d.keys[5], d.expires[5]), (1, 0));
    }

    #[test]
    fn counts_are_base_plus_deltas_and_a_reset_starts_from_zero() {
        let mut base = [Count::default(); NUM_DBS];
        base[0] = Count {
            keys: 10,
            expires: 4,
        };
        let c = KeyCounts::with_base(base);
        let mut d = Delta::default();
        d.keys[0] = 3;
        d.expires[0] = -1;
        c.add(&d);
        assert_eq!(
            c.get(0),
            Ok(Count {
                keys: 13,
                expires: 3
            })
        );
        let mut d = Delta::default();
        d.reset[0] = true;
        d.keys[0] = 2;
        c.add(&d);
        assert_eq!(
            c.get(0),
            Ok(Count {
                keys: 2,
                expires: 0
            })
        );
        assert_eq!(c.get(1), Ok(Count::default()));
    }
}
