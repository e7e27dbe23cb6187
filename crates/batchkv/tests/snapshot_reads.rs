//! Reads at a snapshot stay stable while newer writes (and flushes) land.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, ReadOptions};
use common::{key, small_buffers};

#[test]
fn snapshot_reads_stay_stable_across_writes_and_flushes() {
    common::for_each_memtable(|_| snapshot_reads_stay_stable_across_writes_and_flushes_with());
}

fn snapshot_reads_stay_stable_across_writes_and_flushes_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_buffers()).unwrap();
    for i in 0..1000 {
        db.put(key(i), "old").unwrap();
    }
    let snap = db.snapshot();
    let at_snap = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for i in 0..1000 {
        if i % 2 == 0 {
            db.put(key(i), "new").unwrap();
        } else {
            db.delete(key(i)).unwrap();
        }
    }
    db.put(key(5000), "added").unwrap();
    db.flush().unwrap();
    for i in (0..1000).step_by(37) {
        assert_eq!(db.get_opt(&at_snap, key(i)).unwrap(), Some(b"old".to_vec()));
    }
    assert_eq!(db.get_opt(&at_snap, key(5000)).unwrap(), None);
    let keys: Vec<Vec<u8>> = (0..1000).map(key).chain([key(5000)]).collect();
    let batch = db.multi_get(&at_snap, &keys);
    for (i, r) in batch.into_iter().enumerate() {
        let want = (i < 1000).then(|| b"old".to_vec());
        assert_eq!(r.unwrap(), want, "key {i}");
    }
    let mut it = db.iter(&at_snap).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), b"old");
        n += 1;
        it.next();
    }
    assert_eq!(n, 1000);
    // The latest state differs.
    assert_eq!(db.get(key(1)).unwrap(), None);
    assert_eq!(db.get(key(2)).unwrap(), Some(b"new".to_vec()));
}

#[test]
fn iterators_do_not_see_later_writes_and_outlive_the_handle() {
    common::for_each_memtable(|_| iterators_do_not_see_later_writes_and_outlive_the_handle_with());
}

fn iterators_do_not_see_later_writes_and_outlive_the_handle_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_buffers()).unwrap();
    for i in 0..100 {
        db.put(key(i), "v").unwrap();
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    for i in 100..3000 {
        db.put(key(i), "later").unwrap();
    }
    db.flush().unwrap();
    // Moved to another thread, used there.
    let n = std::thread::spawn(move || {
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        n
    })
    .join()
    .unwrap();
    assert_eq!(n, 100);
}

/// A flush leaves out the versions nobody can read (RocksDB's flush does;
/// before, every overwritten version went to L0 until a compaction) and
/// keeps those a live snapshot still sees, for every memtable kind.
#[test]
fn flush_keeps_only_what_a_reader_can_see() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let opts = batchkv::Options {
            write_buffer_size: 64 << 20,
            disable_auto_compactions: true,
            ..common::opts()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        // 1 KiB that does not compress.
        let value = |round: usize| -> String {
            let mut x = round as u64 * 0x9e37_79b9_7f4a_7c15 + 1;
            (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{x:016x}")
                })
                .collect()
        };
        for round in 0..200 {
            db.put("hot", value(round)).unwrap();
            if round == 100 {
                let snap = db.snapshot();
                let at = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..ReadOptions::default()
                };
                for later in 101..200 {
                    db.put("hot", value(later)).unwrap();
                }
                db.delete("gone").unwrap();
                db.flush().unwrap();
                // The snapshot still reads round 100, the head the last round.
                assert_eq!(
                    db.get_opt(&at, "hot").unwrap(),
                    Some(value(100).into_bytes())
                );
                assert_eq!(db.get("hot").unwrap(), Some(value(199).into_bytes()));
                let l0 = db.stats().sst_bytes_per_level[0];
                // Two 1 KiB versions (round 100 for the snapshot, 199),
                // not 200: well under 10 KiB with the table's overhead.
                assert!(l0 < 10 << 10, "L0 holds {l0} bytes after the flush");
                drop(at);
                drop(snap);
                break;
            }
        }
        db.close().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(db.get("hot").unwrap(), Some(value(199).into_bytes()));
    });
}
