//! `Db::property` / `Db::property_int`: RocksDB-style named properties.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, Options};

/// A database in `dir` whose files change only by flushes.
fn open_without_compactions(dir: &std::path::Path) -> Db {
    Db::open(
        dir,
        Options {
            disable_auto_compactions: true,
            ..common::opts()
        },
    )
    .unwrap()
}

#[test]
fn properties_describe_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_without_compactions(dir.path());
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
    // RocksDB's names answer only where batchkv has the figure.
    assert!(db.property("rocksdb.stats").unwrap().contains("flushes: 1"));
    assert_eq!(db.property("rocksdb.no-such-property"), None);
    drop(snap);
    assert_eq!(db.property_int("batchkv.num-snapshots"), Some(0));
}

/// `estimate-table-readers-mem` counts what open table readers hold
/// outside the block cache (index, filter, index fences): nothing without
/// tables, more with each table opened.
#[test]
fn table_readers_memory_grows_with_the_open_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_without_compactions(dir.path());
    let mem = || {
        db.property_int("batchkv.estimate-table-readers-mem")
            .unwrap()
    };
    assert_eq!(mem(), 0);
    for i in 0..1000u64 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(
        db.get(common::key(7)).unwrap().as_deref(),
        Some(&[b'v'; 100][..])
    );
    let one = mem();
    // A 10-bit filter of 1,000 keys alone is over 1 KB.
    assert!(one > 1000, "{one}");
    for i in 1000..2000u64 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert!(db.get(common::key(1500)).unwrap().is_some());
    let two = mem();
    assert!(two > one + 1000, "{one} then {two}");
}

#[test]
fn statistics_count_what_the_engine_did() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    assert_eq!(db.statistics(), batchkv::Statistics::default());
    for i in 0..2000u64 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    let mut b = batchkv::WriteBatch::new();
    b.put(b"synced", b"1");
    db.write(
        &batchkv::WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
    .unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..10u64 {
        db.get(common::key(i)).unwrap();
    }
    let keys: Vec<Vec<u8>> = (0..64u64).map(common::key).collect();
    let _ = db.multi_get(&batchkv::ReadOptions::default(), &keys);
    let s = db.statistics();
    assert_eq!(s.keys_written, 2001);
    assert!(s.bytes_written >= 2000 * 110, "{s:?}");
    assert!(s.wal_bytes >= s.bytes_written, "{s:?}");
    assert_eq!(s.wal_syncs, 1);
    assert_eq!((s.gets, s.multi_gets, s.multi_get_keys), (10, 1, 64));
    assert!(s.flushes >= 1 && s.flush_bytes > 0, "{s:?}");
    assert!(
        s.compactions >= 1 && s.compaction_bytes_written > 0,
        "{s:?}"
    );
    assert!(s.compaction_bytes_read > 0, "{s:?}");
    assert!(s.block_cache_hits + s.block_cache_misses > 0, "{s:?}");
    assert!(s.write_amplification() > 0.0);
}

/// RocksDB's property names answer with batchkv's figure where batchkv
/// has the same one (also per column family); the others stay unknown.
#[test]
fn rocksdb_property_names_are_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_without_compactions(dir.path());
    for i in 0..50u64 {
        db.put(common::key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.put(common::key(1), b"w").unwrap();
    let _snap = db.snapshot();
    for (rocks, ours) in [
        ("rocksdb.estimate-num-keys", "batchkv.estimate-num-keys"),
        ("rocksdb.num-files-at-level0", "batchkv.num-files-at-level0"),
        ("rocksdb.num-files-at-level1", "batchkv.num-files-at-level1"),
        (
            "rocksdb.total-sst-files-size",
            "batchkv.total-sst-files-size",
        ),
        (
            "rocksdb.live-sst-files-size",
            "batchkv.total-sst-files-size",
        ),
        (
            "rocksdb.cur-size-all-mem-tables",
            "batchkv.cur-size-all-mem-tables",
        ),
        (
            "rocksdb.num-immutable-mem-table",
            "batchkv.num-immutable-mem-table",
        ),
        ("rocksdb.num-snapshots", "batchkv.num-snapshots"),
        ("rocksdb.background-errors", "batchkv.background-errors"),
        ("rocksdb.is-write-stopped", "batchkv.is-write-stopped"),
    ] {
        let got = db.property_int(rocks);
        assert!(got.is_some(), "{rocks} is unknown");
        assert_eq!(got, db.property_int(ours), "{rocks} vs {ours}");
        assert_eq!(db.property(rocks), db.property(ours), "{rocks} vs {ours}");
    }
    assert_eq!(db.property_int("rocksdb.estimate-num-keys"), Some(51));
    assert_eq!(db.property_int("rocksdb.num-files-at-level0"), Some(1));
    assert_eq!(db.property_int("rocksdb.num-snapshots"), Some(1));
    let stats = db.property("rocksdb.stats").unwrap();
    assert!(stats.contains("L0"), "{stats}");
    assert!(db.property("rocksdb.levelstats").unwrap().contains("L0"));
    // Names batchkv has no figure for, or only under its own prefix.
    for unknown in [
        "rocksdb.num-running-compactions",
        "rocksdb.last-sequence",
        "rocksdb.num-files-at-levelx",
        "rocksdb.",
        "rocksdb.estimate-num-keys ",
    ] {
        assert_eq!(db.property(unknown), None, "{unknown}");
        assert_eq!(db.property_int(unknown), None, "{unknown}");
    }
    // Per column family.
    let cf = db.create_cf("c", &Options::default()).unwrap();
    db.put_cf(&cf, b"x", b"1").unwrap();
    assert_eq!(
        db.property_int_cf(&cf, "rocksdb.estimate-num-keys"),
        Some(1)
    );
    assert_eq!(
        db.property_cf(&cf, "rocksdb.num-files-at-level0")
            .as_deref(),
        Some("0")
    );
}
