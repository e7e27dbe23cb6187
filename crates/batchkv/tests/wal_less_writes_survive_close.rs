//! Writes with `disable_wal` live only in memory until a flush; a clean
//! `close()` must persist them.
//!
//! Issue 12, bug 3: `flush()` cleared the "unpersisted" flag after waiting
//! for its memtable, so a WAL-less write that landed in the *new* memtable
//! during that wait was neither in the WAL nor flushed by `close()`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, WriteBatch, WriteOptions};
use common::gate_fs::{gated_db, GateOp};

fn no_wal() -> WriteOptions {
    WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    }
}

fn put(db: &Db, k: &[u8], v: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write(&no_wal(), b).unwrap();
}

#[test]
fn wal_less_write_during_a_flush_survives_close() {
    let (dir, fs, db, opts) = gated_db(common::opts());
    put(&db, b"before", b"1");
    // Stop the flush thread before it creates the table.
    let gate = fs.hold(GateOp::Create, ".sst");
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    fs.wait_held(gate);
    // Lands in the memtable that replaced the one being flushed.
    put(&db, b"during", b"2");
    fs.release(gate);
    flusher.join().unwrap().unwrap();
    db.close().unwrap();

    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(b"before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        db.get(b"during").unwrap(),
        Some(b"2".to_vec()),
        "the WAL-less write made during flush() was lost on close"
    );
}

#[test]
fn wal_less_writes_survive_close_on_every_memtable() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        for i in 0..2000u64 {
            put(&db, &common::key(i), format!("v{i}").as_bytes());
        }
        db.close().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        for i in 0..2000u64 {
            assert_eq!(
                db.get(common::key(i)).unwrap(),
                Some(format!("v{i}").into_bytes()),
                "key {i}"
            );
        }
    });
}
