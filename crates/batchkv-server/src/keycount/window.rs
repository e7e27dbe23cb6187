//! The write window: keys written since a snapshot, counted when the
//! window closes, so a write does not look its keys up.
//!
//! A write records, for each keyspace key it writes, the state the key
//! holds after it, and the state before if the command read the key under
//! its lock (`Recording`). A window closes when DBSIZE or INFO asks, when
//! it holds [`WINDOW_KEYS`] keys, or when it is [`WINDOW_AGE`] old; a new
//! one opens at a new snapshot, and the closed one is counted: per key,
//! `counts(after) - counts(before)`, where an unknown `before` is the
//! key's state at the closed window's snapshot, read then in batched
//! lookups (`multi_get`).
//!
//! # Why `before` is the state at the window's snapshot
//! A key enters a window at its first write since the window opened. No
//! earlier write of it falls in the window, so what it held before that
//! write is what it held when the window opened: its state at the
//! window's snapshot, provided that snapshot is exactly the window's
//! start. The gate makes it so: every write holds the gate shared from its
//! engine write until it has recorded its keys, and a window closes
//! holding it exclusively while it takes the next window's snapshot and
//! swaps the windows. A write is thus in the engine before the snapshot
//! and recorded in the old window, or after it and in the new one.
//!
//! A key's writers hold its stripe lock across the engine write and the
//! recording (`keycount` invariant 1), so the last state recorded for a
//! key is its latest.
//!
//! Writes that clear a database (FLUSHDB, FLUSHALL, SWAPDB) or merge into
//! a keyspace key are counted exactly and alone: the gate held
//! exclusively, the open window counted first, the next one opened after
//! the write (`KeyCounts::write_alone`).

use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use batchkv::{Db, ReadOptions, Snapshot};
use hashbrown::HashTable;

use super::{db_of, Delta, State};

/// Keys a window holds before the counting thread closes it (memory: the
/// keys' bytes and ~64 bytes each; a close reads up to this many keys).
pub const WINDOW_KEYS: usize = 16 * 1024;
/// Keys at which a writer closes the window itself, should the counting
/// thread fall behind.
pub const WINDOW_KEYS_HARD: usize = 4 * WINDOW_KEYS;
/// Age at which the counting thread closes a window that holds a key (the
/// window's snapshot keeps the versions it sees from compaction).
pub const WINDOW_AGE: Duration = Duration::from_secs(1);
/// Keys read per `multi_get` when a window is counted.
const LOOKUP_CHUNK: usize = 1024;

/// What the writes of a window did to one key.
#[derive(Debug, Clone, Copy)]
struct Change {
    /// Its state before the window's first write of it; `None`: read it
    /// at the window's snapshot.
    before: Option<State>,
    /// Its state after the window's last write of it.
    after: State,
}

/// A key of a window: where its bytes lie in the window's `key_bytes`,
/// and what its writes did.
#[derive(Debug, Clone, Copy)]
struct Recorded {
    start: usize,
    end: usize,
    change: Change,
}

/// The keyspace keys written since `since` (module doc).
pub struct Window {
    /// The snapshot the window opened at (`None`: counting not started,
    /// or between a close and an open under the gate).
    since: Option<Snapshot>,
    opened: Instant,
    /// The keys' bytes, one after another, in the order of their first
    /// write (one buffer: no allocation per key).
    key_bytes: Vec<u8>,
    /// The keys, found by the hash of their bytes (`hasher`).
    keys: HashTable<Recorded>,
    /// A per-process random seed (the keys are clients').
    hasher: foldhash::fast::RandomState,
}

impl Window {
    /// A window opening at `since`.
    pub fn open(since: Option<Snapshot>) -> Window {
        Window {
            since,
            opened: Instant::now(),
            key_bytes: Vec::new(),
            keys: HashTable::new(),
            hasher: Default::default(),
        }
    }

    /// A window opening at `since` after `last`, sized for as many keys as
    /// `last` held (up to [`WINDOW_KEYS`]): windows of a steady load grow
    /// no table.
    pub fn open_after(since: Option<Snapshot>, last: &Window) -> Window {
        let keys = last.len().min(WINDOW_KEYS);
        let bytes = last.key_bytes.len() / last.len().max(1) * keys;
        Window {
            key_bytes: Vec::with_capacity(bytes),
            keys: HashTable::with_capacity(keys),
            ..Window::open(since)
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether the counting thread should close it now.
    pub fn due(&self) -> bool {
        self.len() >= WINDOW_KEYS || (!self.is_empty() && self.opened.elapsed() >= WINDOW_AGE)
    }

    /// Records that a write left `key` in state `after`; `before` is its
    /// state before that write, if the writer read it.
    pub fn record(&mut self, key: &[u8], before: Option<State>, after: State) {
        let (keys, bytes, hasher) = (&mut self.keys, &mut self.key_bytes, &self.hasher);
        let hash = hasher.hash_one(key);
        if let Some(w) = keys.find_mut(hash, |w| &bytes[w.start..w.end] == key) {
            w.change.after = after;
            return;
        }
        let start = bytes.len();
        bytes.extend_from_slice(key);
        let recorded = Recorded {
            start,
            end: bytes.len(),
            change: Change { before, after },
        };
        let bytes = &*bytes;
        keys.insert_unique(hash, recorded, |w| hasher.hash_one(&bytes[w.start..w.end]));
    }

    /// The keys recorded, with what their writes did.
    fn entries(&self) -> impl Iterator<Item = (&[u8], Change)> + '_ {
        self.keys
            .iter()
            .map(|w| (&self.key_bytes[w.start..w.end], w.change))
    }

    /// What the window's writes changed in the counts (reads the keys whose
    /// `before` is unknown at the window's snapshot).
    pub fn delta(&self, db: &Db) -> batchkv::Result<Delta> {
        let mut delta = Delta::default();
        let mut add = |key: &[u8], before: State, after: State| {
            if let Some(d) = db_of(key) {
                let ((k0, e0), (k1, e1)) = (before.counts(), after.counts());
                delta.keys[d] += k1 - k0;
                delta.expires[d] += e1 - e0;
            }
        };
        let mut unknown: Vec<(&[u8], State)> = Vec::new();
        for (k, c) in self.entries() {
            match c.before {
                Some(b) => add(k, b, c.after),
                None => unknown.push((k, c.after)),
            }
        }
        if unknown.is_empty() {
            return Ok(delta);
        }
        let Some(since) = &self.since else {
            return Err(batchkv::Error::InvalidArgument(
                "key counts: a window without a snapshot".into(),
            ));
        };
        let opts = ReadOptions {
            snapshot: Some(since.clone()),
            ..Default::default()
        };
        for chunk in unknown.chunks(LOOKUP_CHUNK) {
            let keys: Vec<&[u8]> = chunk.iter().map(|(k, _)| *k).collect();
            let mut err = None;
            db.multi_get_with(&opts, &keys, |i, r| match r {
                Ok(v) => add(chunk[i].0, State::of(v), chunk[i].1),
                Err(e) => {
                    err.get_or_insert(e);
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(delta)
    }
}
