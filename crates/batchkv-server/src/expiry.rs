//! Active expiry: a background task that walks the keyspace a slice at a
//! time and deletes entries whose expiry has passed, so their bytes do not
//! stay on disk forever.
//!
//! Reads already treat expired entries as absent (lazy expiry, see
//! `keyspace.rs`); this task only reclaims space. Compaction also drops
//! expired values (`keyspace::ttl_filter`), but only when it happens to
//! rewrite them; this task bounds how long they stay.
//!
//! Every [`TICK`], slices of up to [`SLICE`] entries are examined, each
//! resuming where the previous one stopped and wrapping around at the end.
//! As in Redis's active expire cycle, the effort adapts: while the last
//! slice found more than [`STALE_PERCENT`] % of its entries expired (many
//! more probably are), the next slice follows at once, until
//! [`BUDGET_PER_TICK`] of the tick is spent or the pass reaches the end of
//! the keyspace. So the cost stays bounded (one slice per tick when little
//! expires, at most a quarter of a core when much does), and a mass expiry
//! is reclaimed at up to ~SLICE entries per slice rather than per tick. A
//! candidate is deleted under its stripe lock after re-reading it, so a
//! concurrent SET that revived the key is never undone.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{ReadOptions, WriteBatch, WriteOptions};
use tokio::sync::watch;

use crate::config::AppendFsync;
use crate::keyspace::{live_value, now_ms, NUM_DBS};
use crate::server::Shared;

/// Time between slices.
const TICK: Duration = Duration::from_millis(100);
/// Entries examined per slice.
const SLICE: usize = 2_000;
/// Most time the sweeper spends per tick (Redis's
/// `ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC`: 25 % of a core).
const BUDGET_PER_TICK: Duration = Duration::from_millis(25);
/// A slice with more than this share of expired entries is followed by
/// another within the tick (Redis's `ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE`).
const STALE_PERCENT: usize = 10;

/// What one slice did.
pub struct Slice {
    /// The stored key to resume at (empty: the pass is over, start over).
    pub next: Vec<u8>,
    /// Entries examined.
    pub seen: usize,
    /// Entries found expired (deleted unless a write revived them).
    pub expired: usize,
}

impl Slice {
    /// Whether another slice should follow at once: many entries had
    /// expired, and the pass is not over.
    fn worth_another(&self) -> bool {
        !self.next.is_empty() && self.expired * 100 > self.seen * STALE_PERCENT
    }
}

/// Runs until `stop` changes.
pub async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pos = Vec::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let start = Instant::now();
        loop {
            let s = shared.clone();
            let from = std::mem::take(&mut pos);
            let Ok(slice) = tokio::task::spawn_blocking(move || sweep(&s, &from, SLICE)).await
            else {
                break;
            };
            pos = slice.next.clone();
            if !slice.worth_another() || start.elapsed() >= BUDGET_PER_TICK {
                break;
            }
        }
    }
}

/// Examines up to `budget` entries from stored key `from` and deletes the
/// expired ones.
pub fn sweep(shared: &Shared, from: &[u8], budget: usize) -> Slice {
    let opts = ReadOptions {
        upper_bound: Some(vec![NUM_DBS as u8]),
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
    it.seek(from);
    let now = now_ms();
    let mut candidates = Vec::new();
    let mut seen = 0;
    while it.valid() && seen < budget {
        if let Ok(None) = live_value(it.value(), now) {
            candidates.push(it.key().to_vec());
        }
        seen += 1;
        it.next();
    }
    let next = if it.valid() {
        it.key().to_vec()
    } else {
        Vec::new()
    };
    drop(it);
    let expired = candidates.len();
    for key in candidates {
        let _g = shared.lock_keys(&[&key]);
        let still_expired = matches!(
            shared.db.get(&key),
            Ok(Some(v)) if matches!(live_value(&v, now_ms()), Ok(None))
        );
        if !still_expired {
            continue;
        }
        let mut b = WriteBatch::new();
        b.delete(&key);
        let opts = WriteOptions {
            sync: shared.cfg.appendfsync == AppendFsync::Always,
            ..Default::default()
        };
        if shared.db.write(&opts, b).is_ok() {
            shared.mark_dirty();
            shared.stats.expired_keys.fetch_add(1, Ordering::Relaxed);
        }
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
    fn another_slice_follows_only_when_many_expired_and_the_pass_goes_on() {
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
