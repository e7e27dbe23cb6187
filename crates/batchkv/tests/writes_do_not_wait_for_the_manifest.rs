//! Writers never wait for a MANIFEST fsync (issue 12: the MANIFEST append,
//! its fsync and the obsolete-file unlinks ran under the state lock, which
//! every write group takes, so writes stalled for each flush's and
//! compaction's fsync).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::mpsc;
use std::time::Duration;

use batchkv::Db;
use common::gate_fs::{gated_db, GateOp};

#[test]
fn puts_complete_while_a_flush_is_stuck_in_the_manifest_fsync() {
    let (dir, fs, db, opts) = gated_db(common::opts());
    db.put(b"flushed", b"1").unwrap();
    let gate = fs.hold(GateOp::Sync, "MANIFEST");
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    fs.wait_held(gate);
    let (tx, rx) = mpsc::channel();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..100u64 {
                db.put(common::key(i), b"during the fsync").unwrap();
            }
            assert_eq!(db.get(b"flushed").unwrap(), Some(b"1".to_vec()));
            tx.send(()).unwrap();
        })
    };
    let done = rx.recv_timeout(Duration::from_secs(10));
    fs.release(gate);
    writer.join().unwrap();
    flusher.join().unwrap().unwrap();
    assert!(done.is_ok(), "writes waited for the MANIFEST fsync");
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(b"flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        db.get(common::key(99)).unwrap(),
        Some(b"during the fsync".to_vec())
    );
}
