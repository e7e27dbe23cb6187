//! `delete_range` (range tombstones, RocksDB semantics): every read path
//! hides the covered keys wherever the tombstone and the keys live —
//! memtable, L0, deeper levels, across reopen — snapshots taken before it
//! still see them, and later writes are visible again.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;

use batchkv::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn k(i: u64) -> Vec<u8> {
    common::key(i)
}

fn v(i: u64, gen: u32) -> Vec<u8> {
    format!("value-{i}-{gen}").into_bytes()
}

fn put_all(db: &Db, model: &mut Model, keys: impl IntoIterator<Item = u64>, gen: u32) {
    for i in keys {
        db.put(k(i), v(i, gen)).unwrap();
        model.insert(k(i), v(i, gen));
    }
}

fn delete_range(db: &Db, model: &mut Model, a: u64, b: u64) {
    db.delete_range(&WriteOptions::default(), k(a), k(b))
        .unwrap();
    let gone: Vec<Vec<u8>> = model.range(k(a)..k(b)).map(|(k, _)| k.clone()).collect();
    for key in gone {
        model.remove(&key);
    }
}

/// Every read path of `db` at `ro` against `model` over keys `0..n`.
fn check(db: &Db, ro: &ReadOptions, model: &Model, n: u64) {
    common::read_paths::check_every_read_path(db, ro, model, n);
}

fn latest() -> ReadOptions {
    ReadOptions::default()
}

fn no_auto_compaction() -> Options {
    Options {
        disable_auto_compactions: true,
        ..common::opts()
    }
}

#[test]
fn memtable_only() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let mut m = Model::new();
        put_all(&db, &mut m, 0..200, 0);
        delete_range(&db, &mut m, 20, 80);
        delete_range(&db, &mut m, 150, 151);
        assert_eq!(db.stats().files_per_level.iter().sum::<usize>(), 0);
        check(&db, &latest(), &m, 210);
    });
}

#[test]
fn after_flush_and_with_a_newer_memtable_on_top() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        let mut m = Model::new();
        put_all(&db, &mut m, 0..200, 0);
        db.flush().unwrap();
        delete_range(&db, &mut m, 20, 80);
        // Tombstone in the memtable over keys in an SST.
        check(&db, &latest(), &m, 210);
        db.flush().unwrap();
        // Tombstone in an L0 SST over keys in an older SST.
        check(&db, &latest(), &m, 210);
        // Newer writes in the range are visible again, in memory and flushed.
        put_all(&db, &mut m, 30..40, 1);
        check(&db, &latest(), &m, 210);
        db.flush().unwrap();
        check(&db, &latest(), &m, 210);
    });
}

#[test]
fn after_compaction_into_deeper_levels() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            target_file_size_base: 4096,
            ..no_auto_compaction()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        let mut m = Model::new();
        // Old data pushed down, newer data above it.
        put_all(&db, &mut m, 0..600, 0);
        db.compact_range(None, None).unwrap();
        put_all(&db, &mut m, (0..600).step_by(3), 1);
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        put_all(&db, &mut m, (0..600).step_by(5), 2);
        db.flush().unwrap();
        // The tombstone spans many small files of the levels below.
        delete_range(&db, &mut m, 100, 450);
        put_all(&db, &mut m, 200..210, 3);
        db.flush().unwrap();
        check(&db, &latest(), &m, 620);
        let levels_before = db.stats().files_per_level;
        db.compact_range(None, None).unwrap();
        let s = db.stats();
        assert!(
            s.files_per_level.iter().skip(1).filter(|&&n| n > 0).count() >= 1,
            "{levels_before:?} -> {:?}",
            s.files_per_level
        );
        check(&db, &latest(), &m, 620);
        // Again, now that everything sits at the bottom: covered keys and
        // the tombstone are gone, nothing comes back.
        db.compact_range(None, None).unwrap();
        check(&db, &latest(), &m, 620);
        drop(db);
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        check(&db, &latest(), &m, 620);
    });
}

#[test]
fn compaction_drops_covered_keys_and_then_the_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    let mut m = Model::new();
    put_all(&db, &mut m, 0..1000, 0);
    db.compact_range(None, None).unwrap();
    let before = db.stats().sst_bytes_per_level.iter().sum::<u64>();
    delete_range(&db, &mut m, 0, 990);
    db.compact_range(None, None).unwrap();
    let after = db.stats().sst_bytes_per_level.iter().sum::<u64>();
    assert!(
        after * 10 < before,
        "covered keys were not dropped: {before} -> {after} bytes"
    );
    check(&db, &latest(), &m, 1000);
}

#[test]
fn snapshots_taken_before_still_see_the_keys() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        let mut m = Model::new();
        put_all(&db, &mut m, 0..300, 0);
        db.flush().unwrap();
        let before = m.clone();
        let snap = db.snapshot();
        delete_range(&db, &mut m, 50, 250);
        put_all(&db, &mut m, 100..110, 1);
        let snap_ro = ReadOptions {
            snapshot: Some(snap.clone()),
            ..ReadOptions::default()
        };
        check(&db, &snap_ro, &before, 310);
        check(&db, &latest(), &m, 310);
        // Compaction must keep what the snapshot sees.
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.compact_range(None, None).unwrap();
        check(&db, &snap_ro, &before, 310);
        check(&db, &latest(), &m, 310);
        // Released: the next compaction may drop everything covered.
        drop(snap_ro);
        drop(snap);
        db.compact_range(None, None).unwrap();
        check(&db, &latest(), &m, 310);
    });
}

#[test]
fn overlapping_tombstones_and_writes_between_them() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        let mut m = Model::new();
        put_all(&db, &mut m, 0..200, 0);
        delete_range(&db, &mut m, 10, 100);
        put_all(&db, &mut m, 40..60, 1);
        db.flush().unwrap();
        delete_range(&db, &mut m, 50, 150);
        put_all(&db, &mut m, 120..130, 2);
        delete_range(&db, &mut m, 0, 15);
        check(&db, &latest(), &m, 210);
        db.flush().unwrap();
        check(&db, &latest(), &m, 210);
        db.compact_range(Some(&k(0)), Some(&k(60))).unwrap();
        check(&db, &latest(), &m, 210);
        db.compact_range(None, None).unwrap();
        check(&db, &latest(), &m, 210);
    });
}

#[test]
fn survives_reopen_from_the_wal_and_from_tables() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Model::new();
        {
            let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
            put_all(&db, &mut m, 0..100, 0);
            db.flush().unwrap();
            delete_range(&db, &mut m, 10, 60);
            put_all(&db, &mut m, 20..25, 1);
            // Closed with the tombstone only in the WAL.
        }
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        check(&db, &latest(), &m, 110);
        db.flush().unwrap();
        drop(db);
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        check(&db, &latest(), &m, 110);
    });
}

#[test]
fn write_batch_range_deletes_are_atomic_and_ordered() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let mut m = Model::new();
    put_all(&db, &mut m, 0..50, 0);
    let mut b = WriteBatch::new();
    b.put(k(100), b"before");
    b.put(k(12), b"written before the range delete");
    b.delete_range(k(10), k(20));
    b.put(k(15), b"written after");
    b.delete_range(k(30), k(30)); // empty
    db.write(&WriteOptions::default(), b).unwrap();
    for i in 10..20 {
        m.remove(&k(i));
    }
    m.insert(k(100), b"before".to_vec());
    m.insert(k(15), b"written after".to_vec());
    check(&db, &latest(), &m, 110);
    // An inverted range refuses the whole batch.
    let mut b = WriteBatch::new();
    b.put(k(1), b"never");
    b.delete_range(k(5), k(4));
    assert!(matches!(
        db.write(&WriteOptions::default(), b),
        Err(Error::InvalidArgument(msg)) if msg.contains("delete_range")
    ));
    check(&db, &latest(), &m, 110);
}

#[test]
fn begin_after_end_is_invalid_and_equal_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    db.put(b"b", b"1").unwrap();
    let seq = db.stats().last_sequence;
    let e = db
        .delete_range(&WriteOptions::default(), b"c", b"a")
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    db.delete_range(&WriteOptions::default(), b"b", b"b")
        .unwrap();
    assert_eq!(db.stats().last_sequence, seq, "nothing was written");
    assert_eq!(db.get(b"b").unwrap(), Some(b"1".to_vec()));
    // The end is exclusive.
    db.delete_range(&WriteOptions::default(), b"a", b"b")
        .unwrap();
    assert_eq!(db.get(b"b").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn deleting_a_million_keys_is_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let before = db.stats();
    db.delete_range(&WriteOptions::default(), k(0), k(1_000_000))
        .unwrap();
    let after = db.stats();
    assert_eq!(after.last_sequence, before.last_sequence + 1);
    assert_eq!(after.memtable_entries, before.memtable_entries + 1);
    assert!(after.memtable_bytes - before.memtable_bytes < 1024);
}
