//! A compaction filter and TTL built on it: expired values disappear when
//! compaction rewrites them, a removal hides older versions in deeper
//! levels, and snapshots keep seeing what they saw.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::Arc;

use batchkv::{Db, Options, ReadOptions, TtlFilter};

/// Values are `expiry_ms (8 bytes, big endian; 0 = never) ‖ payload`.
fn value(expiry_ms: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = expiry_ms.to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

fn expiry_of(v: &[u8]) -> Option<u64> {
    let at = u64::from_be_bytes(v.get(..8)?.try_into().ok()?);
    (at != 0).then_some(at)
}

const NOW: u64 = 1_000_000;

fn opts() -> Options {
    Options {
        compaction_filter: Some(Arc::new(TtlFilter::with_clock(expiry_of, || NOW))),
        disable_auto_compactions: true,
        ..common::opts()
    }
}

#[test]
fn expired_values_are_dropped_by_compaction_and_stay_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    // An old, never-expiring version of k1 deep down.
    db.put(b"k1", value(0, b"old")).unwrap();
    db.compact_range(None, None).unwrap();
    // Newer versions: k1 expired, k2 alive, k3 never expires.
    db.put(b"k1", value(NOW - 1, b"expired")).unwrap();
    db.put(b"k2", value(NOW + 60_000, b"alive")).unwrap();
    db.put(b"k3", value(0, b"forever")).unwrap();
    let snap = db.snapshot();
    db.put(b"k4", value(NOW - 5, b"expired after the snapshot"))
        .unwrap();
    db.flush().unwrap();
    // Before compaction the expired value is still stored (readers check).
    assert_eq!(db.get(b"k1").unwrap(), Some(value(NOW - 1, b"expired")));
    db.compact_range(None, None).unwrap();

    // k4 was written after the snapshot: no snapshot sees it, removed.
    // k1's expired value is seen by the snapshot, so it is not offered to
    // the filter yet (RocksDB's rule) and the latest state still holds it.
    assert_eq!(db.get(b"k4").unwrap(), None);
    assert_eq!(db.get(b"k1").unwrap(), Some(value(NOW - 1, b"expired")));
    assert_eq!(db.get(b"k2").unwrap(), Some(value(NOW + 60_000, b"alive")));
    assert_eq!(db.get(b"k3").unwrap(), Some(value(0, b"forever")));
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    let seen: Vec<Option<Vec<u8>>> = db
        .multi_get(&ro, &[b"k1".as_slice(), b"k4"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(seen, vec![Some(value(NOW - 1, b"expired")), None]);
    drop((snap, ro));
    // With the snapshot gone the next compaction removes k1, and the old
    // never-expiring version below it does not come back.
    db.compact_range(None, None).unwrap();
    let keys: Vec<Vec<u8>> = common::scan_all(&db).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![b"k2".to_vec(), b"k3".to_vec()]);
    db.close().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(db.get(b"k1").unwrap(), None);
}
