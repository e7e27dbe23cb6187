//! `flush()` waits for the memtables frozen up to its call, not for those
//! frozen after it (issue 12: it waited until the whole queue was empty, so
//! under a steady write load it could wait forever).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::mpsc;
use std::time::Duration;

use batchkv::Options;
use common::gate_fs::{gated_db, GateOp};

#[test]
fn flush_returns_once_its_memtables_are_flushed() {
    let (_dir, fs, db, _) = gated_db(Options {
        write_buffer_size: 64 * 1024,
        max_write_buffer_number: 4,
        ..common::opts()
    });
    db.put(b"mine", b"1").unwrap();
    let first = fs.hold(GateOp::Create, ".sst");
    let (done_tx, done_rx) = mpsc::channel();
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || {
            let r = db.flush();
            done_tx.send(()).unwrap();
            r
        })
    };
    fs.wait_held(first);
    // Writers fill and freeze another memtable behind the one being flushed.
    let frozen_before = db.stats().immutable_memtables;
    let mut i = 0u64;
    while db.stats().immutable_memtables == frozen_before {
        db.put(common::key(i), vec![b'x'; 1000]).unwrap();
        i += 1;
    }
    // Its flush stops at the next gate; `flush()` must not wait for it.
    let second = fs.hold(GateOp::Create, ".sst");
    fs.release(first);
    fs.wait_held(second);
    let returned = done_rx.recv_timeout(Duration::from_secs(10));
    fs.release(second);
    flusher.join().unwrap().unwrap();
    assert!(
        returned.is_ok(),
        "flush() waited for a memtable frozen after it was called"
    );
    assert_eq!(db.get(b"mine").unwrap(), Some(b"1".to_vec()));
}
