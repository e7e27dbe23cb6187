//! Active expiry: a background task that walks the keyspace a slice at a
//! time and deletes entries whose expiry has passed, so their bytes do not
//! stay on disk forever.
//!
//! Reads already treat expired entries as absent (lazy expiry, see
//! `keyspace.rs`); this task only reclaims space. Compaction also drops
//! expired values (`keyspace::ttl_filter`), but only when it happens to
//! rewrite them; this task bounds how long they stay.
//!
//! Every [`TICK`], up to [`SLICE`] entries are examined, resuming where the
//! previous slice stopped and wrapping around at the end, so the cost is
//! bounded (a full pass over N keys takes N / SLICE ticks). A candidate is
//! deleted under its stripe lock after re-reading it, so a concurrent SET
//! that revived the key is never undone.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use batchkv::{ReadOptions, WriteBatch, WriteOptions};
use tokio::sync::watch;

use crate::config::AppendFsync;
use crate::keyspace::{live_value, now_ms, NUM_DBS};
use crate::server::Shared;

/// Time between slices.
const TICK: Duration = Duration::from_millis(100);
/// Entries examined per slice.
const SLICE: usize = 2_000;

/// Runs until `stop` changes.
pub async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    let mut pos = Vec::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let s = shared.clone();
        let from = std::mem::take(&mut pos);
        if let Ok(next) = tokio::task::spawn_blocking(move || sweep(&s, &from, SLICE)).await {
            pos = next;
        }
    }
}

/// Examines up to `budget` entries from stored key `from`, deletes the
/// expired ones, and returns the stored key to resume at (empty: start
/// over).
pub fn sweep(shared: &Shared, from: &[u8], budget: usize) -> Vec<u8> {
    let opts = ReadOptions {
        upper_bound: Some(vec![NUM_DBS as u8]),
        fill_cache: false,
        ..Default::default()
    };
    let Ok(mut it) = shared.db.iter(&opts) else {
        return Vec::new();
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
    next
}
