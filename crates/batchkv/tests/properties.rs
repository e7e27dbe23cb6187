//! `Db::property` / `Db::property_int`: RocksDB-style named properties.
mod common;

use batchkv::{Db, Options};

#[test]
fn properties_describe_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            disable_auto_compactions: true,
            ..common::opts()
        },
    )
    .unwrap();
    assert_eq!(db.property_int("batchkv.num-files-at-level0"), Some(0));
    for i in 0..100u64 {
        db.put(common::key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    for i in 0..10u64 {
        db.put(common::key(i), b"w").unwrap();
    }
    let snap = db.snapshot();
    assert_eq!(db.property_int("batchkv.num-files-at-level0"), Some(1));
    assert_eq!(
        db.property("batchkv.num-files-at-level0").as_deref(),
        Some("1")
    );
    assert_eq!(db.property_int("batchkv.num-files-at-level1"), Some(0));
    assert_eq!(db.property_int("batchkv.num-files-at-level99"), None);
    assert_eq!(db.property_int("batchkv.estimate-num-keys"), Some(110));
    assert_eq!(db.property_int("batchkv.num-snapshots"), Some(1));
    assert_eq!(db.property_int("batchkv.last-sequence"), Some(110));
    assert_eq!(db.property_int("batchkv.background-errors"), Some(0));
    assert_eq!(db.property_int("batchkv.num-flushes"), Some(1));
    assert!(db.property_int("batchkv.total-sst-files-size").unwrap() > 0);
    assert!(db.property_int("batchkv.cur-size-all-mem-tables").unwrap() > 0);
    let stats = db.property("batchkv.stats").unwrap();
    assert!(
        stats.contains("L0") && stats.contains("flushes: 1"),
        "{stats}"
    );
    assert_eq!(db.property("batchkv.unknown"), None);
    assert_eq!(db.property("rocksdb.stats"), None);
    drop(snap);
    assert_eq!(db.property_int("batchkv.num-snapshots"), Some(0));
}
