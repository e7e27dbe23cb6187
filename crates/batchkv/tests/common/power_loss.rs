//! The write load and the check of the power-loss tests: keys written in
//! order in small batches, some made durable (synced writes or `sync_wal`),
//! and, after the power cut and a reopen, the check that what survived is
//! a prefix of the write order with the right values.
#![allow(dead_code)]

use batchkv::{Db, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::Rng;

/// The value written for key `i`.
pub fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

/// Writes keys `0..total` in order, one to four per batch. An eighth of the
/// batches are synced or, in a third of the runs, an eighth of them are
/// followed by `Db::sync_wal` instead. `between` runs after each batch
/// with the number of keys written so far. Returns the last key made
/// durable, if any.
pub fn write_in_order(
    db: &Db,
    rng: &mut StdRng,
    total: u64,
    what: &str,
    mut between: impl FnMut(&Db, &mut StdRng, u64),
) -> Option<u64> {
    let by_sync_wal = rng.random_ratio(1, 3);
    let mut last_durable = None;
    let mut i = 0;
    while i < total {
        let sync = !by_sync_wal && rng.random_ratio(1, 8);
        let n = rng.random_range(1..=4u64).min(total - i);
        let mut b = WriteBatch::new();
        for j in i..i + n {
            b.put(super::key(j), value(j));
        }
        db.write(
            &WriteOptions {
                sync,
                disable_wal: false,
            },
            b,
        )
        .unwrap_or_else(|e| panic!("{what}: write {i} failed: {e}"));
        i += n;
        if sync {
            last_durable = Some(i - 1);
        }
        between(db, rng, i);
        // A sync of the WAL alone makes everything before it durable.
        if by_sync_wal && rng.random_ratio(1, 8) {
            db.sync_wal().unwrap();
            last_durable = Some(i - 1);
        }
    }
    last_durable
}

/// Checks `db` holds keys `0..n` with their values and nothing else (no
/// hole in the write order); returns `n`.
pub fn assert_prefix(db: &Db, what: &str) -> u64 {
    let all = super::scan_all(db);
    for (n, (k, v)) in all.iter().enumerate() {
        let n = n as u64;
        assert_eq!(k, &super::key(n), "{what}: hole before key {n}");
        assert_eq!(v, &value(n), "{what}: wrong value for key {n}");
    }
    all.len() as u64
}
