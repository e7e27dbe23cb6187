//! Active expiry: a background task that deletes entries whose expiry has
//! passed, so their bytes do not stay on disk forever.
//!
//! Reads already treat expired entries as absent (lazy expiry, see
//! `keyspace.rs`); this task reclaims their space and removes them from
//! the key counts (DBSIZE), as Redis's active expiry does.
//!
//! Every [`TICK`] it reads the expiry index (`keyspace.rs`: one entry per
//! value with an expiry, sorted by expiry time) from the start up to now,
//! in slices of [`SLICE`] entries, for at most [`BUDGET_PER_TICK`] (a
//! quarter of a core, as Redis's active expire cycle allows itself). Its
//! cost follows the number of keys that expire, not the size of the
//! keyspace. It is the only way expired values leave the keyspace (no
//! compaction filter drops them: `keycount.rs`, invariant 2). Each due
//! entry's key is re-read under its stripe lock: if its
//! value has expired, the key and the entry are deleted together; if not
//! (a later SET or EXPIRE gave it a new expiry, with an entry of its own,
//! or none), only the stale entry is. A concurrent write that revived the
//! key is never undone.
//!
//! A database written before the index has values with an expiry and no
//! entry. Until the marker `keyspace::EXPIRY_INDEX_COMPLETE` exists, the
//! task also walks the keyspace one slice per tick (more while it finds
//! many expired entries), deleting expired values and indexing the others,
//! and writes the marker once a pass has covered every database.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{DbIterator, ReadOptions, WriteBatch, WriteOptions};
use tokio::sync::watch;

use crate::keyspace::{
    decode_expiry_index_key, expiry_index_key, live_entry, now_ms, EXPIRY_INDEX,
    EXPIRY_INDEX_COMPLETE, NUM_DBS,
};
use crate::shared::Shared;

/// Time between sweeps.
const TICK: Duration = Duration::from_millis(100);
/// Entries read per slice (index entries, or keys of the walk).
const SLICE: usize = 2_000;
/// Most time the sweeper spends per tick (Redis's
/// `ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC`: 25 % of a core).
const BUDGET_PER_TICK: Duration = Duration::from_millis(25);
/// A walk slice with more than this share of expired entries is followed
/// by another within the tick (Redis's
/// `ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE`).
const STALE_PERCENT: usize = 10;

/// What one slice did.
pub struct Slice {
    /// Where the next slice resumes (empty: the range is done).
    pub next: Vec<u8>,
    /// Entries examined.
    pub seen: usize,
    /// Entries found expired (deleted unless a write revived them).
    pub expired: usize,
}

impl Slice {
    /// Whether another walk slice should follow at once: many entries had
    /// expired, and the pass is not over.
    fn worth_another(&self) -> bool {
        !self.next.is_empty() && self.expired * 100 > self.seen * STALE_PERCENT
    }
}

/// Runs until `stop` changes.
pub async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Where the walk of a database from before the index resumes.
    let mut walk = match shared.db.get(EXPIRY_INDEX_COMPLETE) {
        Ok(Some(_)) => {
            shared
                .stats
                .expiry_index_complete
                .store(true, Ordering::Relaxed);
            None
        }
        _ => Some(Vec::new()),
    };
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let start = Instant::now();
        let mut from = Vec::new();
        loop {
            let s = shared.clone();
            let Ok(slice) =
                tokio::task::spawn_blocking(move || sweep_index(&s, &from, SLICE)).await
            else {
                break;
            };
            from = slice.next;
            if from.is_empty() || start.elapsed() >= BUDGET_PER_TICK {
                break;
            }
        }
        while let Some(pos) = walk.take() {
            let s = shared.clone();
            let at = pos.clone();
            let Ok(slice) = tokio::task::spawn_blocking(move || walk_slice(&s, &at, SLICE)).await
            else {
                walk = Some(pos);
                break;
            };
            if slice.next.is_empty() {
                // A whole pass: every value with an expiry is indexed.
                let mut b = WriteBatch::new();
                b.put(EXPIRY_INDEX_COMPLETE, []);
                match shared.write(b) {
                    Ok(()) => shared
                        .stats
                        .expiry_index_complete
                        .store(true, Ordering::Relaxed),
                    Err(_) => walk = Some(Vec::new()),
                }
                break;
            }
            let more = slice.worth_another();
            walk = Some(slice.next);
            if !more || start.elapsed() >= BUDGET_PER_TICK {
                break;
            }
        }
    }
}

/// The sweeper's writes are never fsynced, whatever `--appendfsync` says:
/// losing one to a power cut loses nothing a client could see. A deleted
/// value had expired, so reads hide it anyway and the next sweep deletes
/// it again; a lost index entry of the walk is written again by the next
/// walk, because the marker that ends the walk is written after it in the
/// WAL (and through [`Shared::write`], so it is as durable as the policy
/// makes writes). With `always` this spares one fsync per expired key.
const SWEEP_WRITE: WriteOptions = WriteOptions {
    sync: false,
    disable_wal: false,
};

/// Deletes stored key `key` if its value has expired, in one write with
/// the deletions already in `also` (written either way). The value is
/// re-read under the key's stripe lock, so a write that revived the key
/// is never undone. Returns whether the key was deleted.
fn delete_if_expired(shared: &Shared, key: &[u8], mut also: WriteBatch) -> bool {
    let _g = shared.lock_keys(&[key]);
    let expired = matches!(
        shared.db.get(key),
        Ok(Some(v)) if matches!(live_entry(&v, now_ms()), Ok(None))
    );
    if expired {
        // A collection's elements go in the same write (`meta.rs`).
        if shared.clear_old(&mut also, key).is_err() {
            return false;
        }
        also.delete(key);
    }
    if also.is_empty() || shared.apply(&SWEEP_WRITE, also).is_err() {
        return false;
    }
    shared.mark_dirty();
    if expired {
        shared.stats.expired_keys.fetch_add(1, Ordering::Relaxed);
        shared.notify(crate::notify::EXPIRED, "expired", key);
    }
    expired
}

/// Where a slice that stopped at `it` resumes: its key (empty at the end).
fn resume_point(it: DbIterator) -> Vec<u8> {
    if it.valid() {
        it.key().to_vec()
    } else {
        Vec::new()
    }
}

/// Handles up to `budget` expiry-index entries due by now, from index key
/// `from` (empty: the start): deletes each entry, and its key if that has
/// expired.
pub fn sweep_index(shared: &Shared, from: &[u8], budget: usize) -> Slice {
    let opts = ReadOptions {
        lower_bound: Some(vec![EXPIRY_INDEX]),
        // Entries with t ≤ now sort before (now + 1, empty key).
        upper_bound: Some(expiry_index_key(now_ms() + 1, &[])),
        fill_cache: false,
        ..Default::default()
    };
    let Ok(mut it) = shared.db.iter(&opts) else {
        return Slice {
            next: Vec::new(),
            seen: 0,
            expired: 0,
        };
    };
    it.seek(if from.is_empty() {
        &[EXPIRY_INDEX][..]
    } else {
        from
    });
    let mut due = Vec::new();
    while it.valid() && due.len() < budget {
        due.push(it.key().to_vec());
        it.next();
    }
    let next = resume_point(it);
    let seen = due.len();
    let mut expired = 0;
    for entry in due {
        let mut b = WriteBatch::new();
        b.delete(&entry);
        match decode_expiry_index_key(&entry) {
            Some((_, key)) => expired += usize::from(delete_if_expired(shared, key, b)),
            // Too short to name a key: only the entry goes.
            None => {
                let _ = shared.apply(&SWEEP_WRITE, b);
            }
        }
    }
    Slice {
        next,
        seen,
        expired,
    }
}

/// One slice of the walk over a database from before the index: examines
/// up to `budget` entries from stored key `from`, deletes the expired ones
/// and indexes the others that expire.
pub fn walk_slice(shared: &Shared, from: &[u8], budget: usize) -> Slice {
    let opts = ReadOptions {
        upper_bound: Some(vec![NUM_DBS as u8]),
        fill_cache: false,
        ..Default::default()
    };
    let Ok(mut it) = shared.db.iter(&opts) else {
        return Slice {
            next: from.to_vec(),
            seen: 0,
            expired: 0,
        };
    };
    it.seek(from);
    let now = now_ms();
    let mut candidates = Vec::new();
    // Index entries for values that expire later. Written without the
    // stripe lock: if the key changes meanwhile, the entry is merely stale.
    let mut index = WriteBatch::new();
    let mut seen = 0;
    while it.valid() && seen < budget {
        match live_entry(it.value(), now) {
            Ok(None) => candidates.push(it.key().to_vec()),
            Ok(Some(d)) => {
                if let Some(t) = d.expire_at() {
                    index.put(expiry_index_key(t, it.key()), []);
                }
            }
            Err(()) => {}
        }
        seen += 1;
        it.next();
    }
    let next = resume_point(it);
    if shared.apply(&SWEEP_WRITE, index).is_err() {
        // Not indexed: walk this slice again next time.
        return Slice {
            next: from.to_vec(),
            seen,
            expired: 0,
        };
    }
    let expired = candidates.len();
    for key in candidates {
        delete_if_expired(shared, &key, WriteBatch::new());
    }
    Slice {
        next,
        seen,
        expired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(next: &[u8], seen: usize, expired: usize) -> Slice {
        Slice {
            next: next.to_vec(),
            seen,
            expired,
        }
    }

    #[test]
    fn another_walk_slice_follows_only_when_many_expired_and_the_pass_goes_on() {
        assert!(slice(b"k", 2000, 201).worth_another());
        assert!(slice(b"k", 2000, 2000).worth_another());
        assert!(
            !slice(b"k", 2000, 200).worth_another(),
            "10 % is acceptable"
        );
        assert!(!slice(b"k", 2000, 0).worth_another());
        assert!(!slice(b"", 2000, 2000).worth_another(), "the pass is over");
        assert!(!slice(b"", 0, 0).worth_another());
    }
}
