//! The write queue (group commit, `db/write.rs`): writers that queue behind
//! a leader, with and without `sync`, each yielding first or sleeping at
//! once, all return with their writes applied, none lost or applied twice.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, WriteOptions};

const THREADS: u64 = 6;
const PUTS: u64 = 1500;

#[test]
fn queued_writers_with_and_without_sync_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    let before = db.read_view().sequence();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for i in 0..PUTS {
                    // Half the threads make every 7th write a synced one.
                    let opts = WriteOptions {
                        sync: t % 2 == 0 && i % 7 == 0,
                        ..Default::default()
                    };
                    let key = format!("t{t}-k{:03}", i % 500);
                    db.put_opt(&opts, key, format!("v{i}")).unwrap();
                }
            });
        }
    });
    // One sequence number per put: each applied exactly once.
    assert_eq!(db.read_view().sequence() - before, THREADS * PUTS);
    for t in 0..THREADS {
        for k in 0..500 {
            // The last put of key k: i = k + 1000 (PUTS = 3 × 500).
            let last = k + PUTS - 500;
            let got = db.get(format!("t{t}-k{k:03}")).unwrap();
            assert_eq!(got, Some(format!("v{last}").into_bytes()), "t{t}-k{k:03}");
        }
    }
}
