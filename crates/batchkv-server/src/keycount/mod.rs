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
//!   goes through [`KeyCounts::write`] (`Shared::apply`: commands and the
//!   sweeper), which records the keyspace keys it writes in the open
//!   write window without looking them up; a window is counted when it
//!   closes, with one batched lookup of its keys at the snapshot it opened
//!   at (`window.rs`). DBSIZE and INFO keyspace close the open window
//!   first, so they count every write acknowledged before them.
//!
//! # Invariants
//! 1. A key's writers hold its stripe lock from their read of it (if
//!    any) until [`KeyCounts::write`] has recorded the write
//!    (`shared.rs`: every write command locks the keys it writes; the
//!    sweeper locks the key it deletes; FLUSHDB, FLUSHALL and SWAPDB lock
//!    everything), so the states recorded for a key follow its writes.
//! 2. Nothing removes a key without a write through here: compaction
//!    filters do not run on the server's keyspace (an expired string that
//!    a filter turned into a tombstone would leave the count one too high).
//! 3. What a write command read of a key it holds locked is what the key
//!    holds until that command writes it: such reads are remembered
//!    ([`Recording`]) and spare the window's close a lookup.
//! 4. Range deletions over the keyspace cover whole databases (FLUSHDB,
//!    FLUSHALL, SWAPDB); a database so cleared counts from zero.

mod window;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use batchkv::{BatchOp, Db, ReadOptions, WriteBatch};
use hashbrown::HashTable;

use crate::keyspace::{decode_entry, NUM_DBS};
use window::{Window, WINDOW_AGE, WINDOW_KEYS, WINDOW_KEYS_HARD};

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

/// Key bytes per batch entry [`KeyCounts::write`] reserves room for at
/// first (it grows past that for longer keys).
const KEY_BYTES_GUESS: usize = 24;

/// Per-database key counts (module doc).
pub struct KeyCounts {
    base: Mutex<Option<Base>>,
    base_ready: Condvar,
    keys: [AtomicI64; NUM_DBS],
    expires: [AtomicI64; NUM_DBS],
    /// Asks the counting thread to stop (server shutdown).
    cancel: AtomicBool,
    /// The counting thread: the start-up scan, then closing due windows.
    scan: Mutex<Option<JoinHandle<()>>>,
    /// Held shared by a write from its engine write until it is recorded,
    /// exclusively to close a window (`window.rs`).
    gate: RwLock<()>,
    /// The open write window.
    window: Mutex<Window>,
    /// Windows closed but not counted yet (their lookup failed: counted
    /// first at the next close). Held while windows are counted, which it
    /// serialises; taken before `gate`.
    closed: Mutex<Vec<Window>>,
    /// Set (and `wake` notified) when a window is due.
    due: Mutex<bool>,
    wake: Condvar,
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
            gate: RwLock::new(()),
            window: Mutex::new(Window::open(None)),
            closed: Mutex::new(Vec::new()),
            due: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    /// Starts counting `db` as it is now, on a background thread that
    /// then closes due write windows. Call before anything writes (the
    /// deltas count from this moment: the first window opens here).
    pub fn start(self: &Arc<Self>, db: &Db) {
        let snapshot = db.snapshot();
        *lock(&self.window) = Window::open(Some(snapshot.clone()));
        let opts = ReadOptions {
            snapshot: Some(snapshot),
            ..Default::default()
        };
        let (me, db) = (self.clone(), db.clone());
        let spawned = std::thread::Builder::new()
            .name("batchkv-keycount".into())
            .spawn(move || {
                let r = KeyCounts::count_snapshot(&db, &opts, &me.cancel)
                    .map_err(|e| format!("ERR key count unavailable: {e}"));
                drop(opts);
                me.install(r);
                me.close_due_windows(&db);
            });
        match spawned {
            Ok(h) => *lock(&self.scan) = Some(h),
            Err(e) => self.install(Err(format!("ERR key count unavailable: {e}"))),
        }
    }

    /// Stops and joins the counting thread (before the engine closes).
    pub fn stop(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        *lock(&self.due) = true;
        self.wake.notify_all();
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

    /// The count of database `d` including every write recorded before
    /// the call (closes the open window; an error text if the start-up
    /// scan or a window's lookup failed).
    pub fn get(&self, db: &Db, d: usize) -> Result<Count, String> {
        self.close_window(db)
            .map_err(|e| format!("ERR key count unavailable: {e}"))?;
        self.counted(d)
    }

    /// The count of database `d` as far as windows are counted.
    fn counted(&self, db: usize) -> Result<Count, String> {
        let base = self.base()?[db];
        let add = |b: u64, d: &AtomicI64| (b as i64 + d.load(Ordering::Acquire)).max(0) as u64;
        Ok(Count {
            keys: add(base.keys, &self.keys[db]),
            expires: add(base.expires, &self.expires[db]),
        })
    }

    /// Applies `batch` to `db` with `write` (the engine write) and counts
    /// it. The caller holds the locks of the keys it writes (invariant 1).
    pub fn write(
        &self,
        db: &Db,
        batch: WriteBatch,
        write: impl FnOnce(WriteBatch) -> batchkv::Result<()>,
    ) -> batchkv::Result<()> {
        if counted_alone(&batch) {
            return self.write_alone(db, batch, write);
        }
        // The states before, where the command read them; the batch's keys
        // in order (a key may repeat: its last state wins), copied into
        // one buffer (`key_bytes[start..end]`), not one allocation each.
        // (Not sized by the batch: its size includes the values, which
        // can be hundreds of megabytes; a guess per entry instead.)
        let mut key_bytes: Vec<u8> =
            Vec::with_capacity(batch.len().saturating_mul(KEY_BYTES_GUESS));
        let mut changes: Vec<(usize, usize, Option<State>, State)> =
            Vec::with_capacity(batch.len());
        for op in batch.ops() {
            let (key, after) = match op {
                BatchOp::Put { key, value } if db_of(key).is_some() => {
                    (key, State::of(Some(value)))
                }
                BatchOp::Delete { key } if db_of(key).is_some() => (key, State::Absent),
                _ => continue,
            };
            let start = key_bytes.len();
            key_bytes.extend_from_slice(key);
            changes.push((start, key_bytes.len(), recall(key), after));
        }
        forget();
        if changes.is_empty() {
            // Elements and indexes only: nothing to count.
            return write(batch);
        }
        let held = {
            let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
            write(batch)?;
            let mut w = lock(&self.window);
            for &(start, end, before, after) in &changes {
                w.record(&key_bytes[start..end], before, after);
            }
            w.len()
        };
        if held >= WINDOW_KEYS_HARD {
            // The counting thread is behind: close it here (the gate is
            // released; the stripe locks held are not in its way).
            self.close_window(db)?;
        } else if held >= WINDOW_KEYS {
            *lock(&self.due) = true;
            self.wake.notify_one();
        }
        Ok(())
    }

    /// [`KeyCounts::write`] of a batch that clears a database or merges
    /// into a keyspace key: counted exactly, with no other write in flight
    /// (the gate held exclusively), after the open window is counted; the
    /// next window opens after it.
    fn write_alone(
        &self,
        db: &Db,
        batch: WriteBatch,
        write: impl FnOnce(WriteBatch) -> batchkv::Result<()>,
    ) -> batchkv::Result<()> {
        let mut closed = lock(&self.closed);
        let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
        let open = std::mem::replace(&mut *lock(&self.window), Window::open(None));
        if !open.is_empty() {
            closed.push(open);
        }
        let r = self.count_closed(db, &mut closed).and_then(|()| {
            let delta = KeyCounts::delta_of(db, &batch)?;
            write(batch)?;
            self.add(&delta);
            Ok(())
        });
        *lock(&self.window) = Window::open(Some(db.snapshot()));
        r
    }

    /// Closes the open window (a new one opens at a snapshot taken now)
    /// and counts every closed window.
    fn close_window(&self, db: &Db) -> batchkv::Result<()> {
        let mut closed = lock(&self.closed);
        if lock(&self.window).is_empty() && closed.is_empty() {
            return Ok(());
        }
        {
            let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
            let mut w = lock(&self.window);
            if !w.is_empty() {
                let next = Window::open_after(Some(db.snapshot()), &w);
                closed.push(std::mem::replace(&mut *w, next));
            }
        }
        self.count_closed(db, &mut closed)
    }

    /// Counts the windows in `closed`, removing each once added.
    fn count_closed(&self, db: &Db, closed: &mut Vec<Window>) -> batchkv::Result<()> {
        while let Some(w) = closed.last() {
            let delta = w.delta(db)?;
            self.add(&delta);
            closed.pop();
        }
        Ok(())
    }

    /// The counting thread's loop after the start-up scan: closes the
    /// open window when it is due, until [`KeyCounts::stop`].
    fn close_due_windows(&self, db: &Db) {
        loop {
            {
                let mut due = lock(&self.due);
                if !*due {
                    due = self
                        .wake
                        .wait_timeout(due, WINDOW_AGE)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                *due = false;
            }
            if self.cancel.load(Ordering::Relaxed) {
                return;
            }
            if lock(&self.window).due() {
                if let Err(e) = self.close_window(db) {
                    log::warn!("batchkv serve: key counts: a write window's lookup failed: {e}");
                }
            }
        }
    }

    /// What applying `batch` to `db` changes (reads the keyspace keys the
    /// batch writes, in one batched lookup). The caller holds the keys'
    /// locks until the write is applied (invariant 1).
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
    /// The keys read, one after another (`seen` says where each ends);
    /// kept allocated between commands up to [`PRIOR_KEPT_BYTES`].
    key_bytes: Vec<u8>,
    /// Per key read: where it ends in `key_bytes`, its [`fingerprint`]
    /// and its state. No key appears twice.
    seen: Vec<(usize, u64, State)>,
    /// Where [`recall`] looks first: after the entry it found last (a
    /// write's keys mostly come in the order they were read).
    next: usize,
    /// Once more than [`INDEX_FROM`] keys were read (a combined batch of
    /// string updates reads hundreds), every entry of `seen` by the hash
    /// of its key, so that finding one does not scan them all; empty
    /// before.
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

/// Entries [`Prior`] finds by scanning them; past this many, by its index.
const INDEX_FROM: usize = 16;

/// Key `i` of `seen` in `key_bytes` (the layout of [`Prior`]).
fn prior_key<'a>(key_bytes: &'a [u8], seen: &[(usize, u64, State)], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { seen[i - 1].0 };
    &key_bytes[start..seen[i].0]
}

/// A cheap summary of a key that differs for most pairs of keys that
/// differ (its length and last bytes): compared before the bytes.
fn fingerprint(key: &[u8]) -> u64 {
    let tail = &key[key.len().saturating_sub(7)..];
    let mut word = [0u8; 8];
    word[..tail.len()].copy_from_slice(tail);
    word[7] = key.len() as u8;
    u64::from_le_bytes(word)
}

impl Prior {
    /// The key of entry `i`.
    fn key(&self, i: usize) -> &[u8] {
        prior_key(&self.key_bytes, &self.seen, i)
    }

    /// The entry holding `key`, if any.
    fn find(&self, key: &[u8]) -> Option<usize> {
        self.lookup(key).0
    }

    /// The entry holding `key`, if any, and the key's hash if the index
    /// was consulted (for [`Prior::push`], so a key is hashed once).
    fn lookup(&self, key: &[u8]) -> (Option<usize>, Option<u64>) {
        let f = fingerprint(key);
        let is = |i: usize| self.seen[i].1 == f && self.key(i) == key;
        if self.next < self.seen.len() && is(self.next) {
            return (Some(self.next), None);
        }
        if self.seen.len() > INDEX_FROM {
            let hash = self.hasher.hash_one(key);
            let found = self.index.find(hash, |&i| is(i as usize));
            return (found.map(|&i| i as usize), Some(hash));
        }
        ((0..self.seen.len()).find(|&i| is(i)), None)
    }

    /// Adds `key`, not yet in it, in state `state`; `hash` is its hash
    /// if [`Prior::lookup`] computed it.
    fn push(&mut self, key: &[u8], state: State, hash: Option<u64>) {
        self.key_bytes.extend_from_slice(key);
        let end = self.key_bytes.len();
        self.seen.push((end, fingerprint(key), state));
        let n = self.seen.len();
        if n <= INDEX_FROM {
            return;
        }
        // Past the threshold every entry is indexed: the ones before it
        // when it is crossed, each new one after.
        let Prior {
            key_bytes,
            seen,
            index,
            hasher,
            ..
        } = self;
        let rehash = |&i: &u32| hasher.hash_one(prior_key(key_bytes, seen, i as usize));
        if n > INDEX_FROM + 1 {
            let hash = hash.unwrap_or_else(|| hasher.hash_one(key));
            index.insert_unique(hash, (n - 1) as u32, rehash);
            return;
        }
        for i in 0..n {
            let hash = hasher.hash_one(prior_key(key_bytes, seen, i));
            index.insert_unique(hash, i as u32, rehash);
        }
    }

    fn clear(&mut self) {
        self.seen.clear();
        self.next = 0;
        self.key_bytes.clear();
        self.index.clear();
        if self.key_bytes.capacity() > PRIOR_KEPT_BYTES {
            self.key_bytes = Vec::new();
            self.index = HashTable::new();
        }
    }
}

thread_local! {
    static PRIOR: RefCell<Prior> = RefCell::new(Prior::default());
}

/// Most reads remembered per command (a combined batch of string updates
/// reads about one key per command; beyond this, keys are looked up
/// again when their window closes).
const PRIOR_MAX: usize = 4096;
/// Key bytes a thread keeps allocated for [`Prior`] between commands (its
/// index is dropped with them).
const PRIOR_KEPT_BYTES: usize = 64 << 10;

/// Marks a span in which this thread's reads of keyspace keys are the
/// state of keys it holds locked (a `KeyGuard`'s lifetime).
pub struct Recording(());

impl Recording {
    pub fn start() -> Recording {
        PRIOR.with(|p| {
            let mut p = p.borrow_mut();
            p.depth += 1;
            p.clear();
        });
        Recording(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        PRIOR.with(|p| {
            let mut p = p.borrow_mut();
            p.depth -= 1;
            p.clear();
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
        if p.depth == 0 || p.seen.len() >= PRIOR_MAX {
            return;
        }
        if let (None, hash) = p.lookup(key) {
            p.push(key, State::of(stored), hash);
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
        let mut p = p.borrow_mut();
        let i = p.find(key)?;
        p.next = i + 1;
        Some(p.seen[i].2)
    })
}

fn forget() {
    PRIOR.with(|p| p.borrow_mut().clear());
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `batch` is counted alone ([`KeyCounts::write_alone`]): it
/// clears a database, or merges into a keyspace key (whose state after
/// the merge a window could not record).
fn counted_alone(batch: &WriteBatch) -> bool {
    batch.ops().any(|op| match op {
        BatchOp::DeleteRange { begin, end } => cleared_dbs(begin, end).next().is_some(),
        BatchOp::Merge { key, .. } => db_of(key).is_some(),
        _ => false,
    })
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
    fn reads_under_a_recording_are_recalled_until_the_write() {
        remember(b"\0outside", None);
        assert_eq!(recall(b"\0outside"), None, "no recording: nothing kept");
        let rec = Recording::start();
        let keys: Vec<Vec<u8>> = (0..PRIOR_MAX + 3)
            .map(|i| format!("\0key-{i}").into_bytes())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let stored = if i % 2 == 0 { Some(expiring()) } else { None };
            remember(k, stored.as_deref());
        }
        // A second read of a key keeps the first (the state under the lock),
        // among the first keys (scanned) and past them (indexed).
        remember(&keys[1], Some(&plain()));
        remember(&keys[INDEX_FROM + 5], Some(&plain()));
        remember(b"\x12element", None);
        let want = |i: usize| match i {
            _ if i >= PRIOR_MAX => None,
            _ if i.is_multiple_of(2) => Some(State::Present { expire_at: Some(1) }),
            _ => Some(State::Absent),
        };
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(recall(k), want(i), "key {i}");
        }
        // Out of order (the index, not the next entry, finds them).
        for (i, k) in keys.iter().enumerate().rev().step_by(7) {
            assert_eq!(recall(k), want(i), "key {i}, backwards");
        }
        assert_eq!(recall(b"\0key-never-read"), None);
        assert_eq!(recall(b"\x12element"), None, "not a keyspace key");
        assert_eq!(recall_live(&keys[0], 0), Some(true));
        assert_eq!(recall_live(&keys[0], 1), Some(false), "expired at 1");
        forget();
        assert_eq!(recall(&keys[0]), None, "a write forgets");
        remember(&keys[0], None);
        drop(rec);
        assert_eq!(recall(&keys[0]), None, "the recording's end forgets");
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    fn open_counted() -> (tempfile::TempDir, Db, Arc<KeyCounts>) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            dir.path(),
            batchkv::Options {
                create_if_missing: true,
                ..Default::default()
            },
        )
        .unwrap();
        let c = Arc::new(KeyCounts::new());
        c.start(&db);
        (dir, db, c)
    }

    /// What a full scan of the latest state counts, per database.
    fn scanned(db: &Db) -> Vec<Count> {
        let never = AtomicBool::new(false);
        KeyCounts::count_snapshot(db, &ReadOptions::default(), &never)
            .unwrap()
            .to_vec()
    }

    fn counted_now(db: &Db, c: &KeyCounts) -> Vec<Count> {
        (0..NUM_DBS).map(|d| c.get(db, d).unwrap()).collect()
    }

    /// A random batch over `keys` keys of databases 0..3 (from key
    /// `first` on): puts with and without expiry, deletes, a key repeated,
    /// and now and then a database cleared.
    fn random_batch(rng: &mut Rng, first: u64, keys: u64, clears: bool) -> WriteBatch {
        let mut b = WriteBatch::new();
        for _ in 0..1 + rng.below(6) {
            let d = rng.below(3) as u8;
            let mut key = vec![d];
            key.extend_from_slice(format!("k{}", first + rng.below(keys)).as_bytes());
            match rng.below(10) {
                0..=3 => b.put(&key, plain()),
                4..=5 => b.put(&key, expiring()),
                6..=8 => b.delete(&key),
                _ if clears => b.delete_range([d], [d + 1]),
                _ => b.put(&key, plain()),
            }
            // Elements are not counted.
            b.put(b"\x12element", b"");
        }
        b
    }

    #[test]
    fn write_windows_count_what_a_scan_counts() {
        let (_dir, db, c) = open_counted();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let opts = batchkv::WriteOptions::default();
        for i in 0..3000 {
            let b = random_batch(&mut rng, 0, 300, true);
            // Some writers read their keys first (a command that looked):
            // their states are remembered and spare the lookup.
            let _rec = Recording::start();
            if rng.below(3) == 0 {
                for op in b.ops() {
                    if let BatchOp::Put { key, .. } | BatchOp::Delete { key } = op {
                        remember(key, db.get(key).unwrap().as_deref());
                    }
                }
            }
            c.write(&db, b, |b| db.write(&opts, b)).unwrap();
            if i % 97 == 0 {
                assert_eq!(counted_now(&db, &c), scanned(&db), "after batch {i}");
            }
        }
        assert_eq!(counted_now(&db, &c), scanned(&db));
        c.stop();
    }

    #[test]
    fn write_windows_count_concurrent_writers_and_overflow() {
        let (_dir, db, c) = open_counted();
        // Four writers on disjoint keys (a key's writers are serialised by
        // its stripe lock in the server), one thread asking for counts;
        // the first writer alone writes more keys than a window holds.
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..4u64)
                .map(|t| {
                    let (db, c) = (&db, &c);
                    s.spawn(move || {
                        let mut rng = Rng(t + 1);
                        let opts = batchkv::WriteOptions::default();
                        let (n, keys) = if t == 0 {
                            (3 * WINDOW_KEYS_HARD as u64 / 5, 2 * WINDOW_KEYS_HARD as u64)
                        } else {
                            (4000, 500)
                        };
                        for _ in 0..n {
                            let b = random_batch(&mut rng, t * 1_000_000, keys, false);
                            c.write(db, b, |b| db.write(&opts, b)).unwrap();
                        }
                    })
                })
                .collect();
            let reader = s.spawn(|| {
                let mut asked = 0;
                while !stop.load(Ordering::Relaxed) {
                    c.get(&db, 0).unwrap();
                    asked += 1;
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
                asked
            });
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
        });
        assert_eq!(counted_now(&db, &c), scanned(&db));
        c.stop();
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
            c.counted(0),
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
            c.counted(0),
            Ok(Count {
                keys: 2,
                expires: 0
            })
        );
        assert_eq!(c.counted(1), Ok(Count::default()));
    }
}
