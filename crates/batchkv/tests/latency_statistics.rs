//! `Db::statistics()` latency histograms: each `get`, `multi_get` (per call
//! and per key) and `write` is counted, percentiles are ordered and bounded
//! by the max, `batchkv.stats` prints them, and `statistics = false` turns
//! them off.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn exercise(db: &Db) {
    for i in 0..50u64 {
        db.put(common::key(i), b"v").unwrap();
    }
    let mut b = WriteBatch::new();
    b.put(b"x", b"y");
    b.delete_range(b"a", b"b");
    db.write(&WriteOptions::default(), b).unwrap();
    for i in 0..30u64 {
        db.get(common::key(i)).unwrap();
    }
    let keys: Vec<Vec<u8>> = (0..10u64).map(common::key).collect();
    for _ in 0..3 {
        db.multi_get(&ReadOptions::default(), &keys);
    }
    db.multi_get(&ReadOptions::default(), &Vec::<Vec<u8>>::new());
}

#[test]
fn latencies_are_recorded_per_call_and_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    exercise(&db);
    let s = db.statistics();
    assert_eq!(s.write_latency.count, 51);
    assert_eq!(s.get_latency.count, 30);
    assert_eq!(s.multi_get_latency.count, 4);
    assert_eq!(s.multi_get_per_key_latency.count, 30);
    for l in [
        s.write_latency,
        s.get_latency,
        s.multi_get_latency,
        s.multi_get_per_key_latency,
    ] {
        assert!(l.max > std::time::Duration::ZERO, "{l:?}");
        assert!(
            l.p50 <= l.p95 && l.p95 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
            "{l:?}"
        );
        assert!(l.mean <= l.max, "{l:?}");
    }
    let text = db.property("batchkv.stats").unwrap();
    for name in [
        "latency (µs):",
        "get ",
        "multi_get ",
        "multi_get/key",
        "write ",
    ] {
        assert!(text.contains(name), "{name:?} missing from:\n{text}");
    }
    assert!(text.contains("count 30 "), "{text}");
    db.close().unwrap();
}

#[test]
fn statistics_off_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        statistics: false,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    exercise(&db);
    let s = db.statistics();
    assert_eq!(s.get_latency, Default::default());
    assert_eq!(s.write_latency, Default::default());
    assert_eq!(s.multi_get_latency, Default::default());
    // The call counters stay on.
    assert_eq!(s.gets, 30);
    assert!(!db.property("batchkv.stats").unwrap().contains("latency"));
    assert_eq!(
        "statistics=false"
            .parse::<Options>()
            .map(|o| o.statistics)
            .ok(),
        Some(false)
    );
    db.close().unwrap();
}
