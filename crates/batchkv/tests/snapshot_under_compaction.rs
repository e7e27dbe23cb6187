//! A snapshot sees exactly the state when it was taken, while writes,
//! flushes and compactions race its creation (issue 12: the snapshot read
//! its sequence before registering, so a compaction in between could drop
//! the version it needed). A stress guard: one key overwritten with a
//! counter; every snapshot's read must fall between the counters
//! acknowledged just before and just after it was taken.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{Db, Options, ReadOptions};

#[test]
fn snapshots_taken_during_compactions_read_their_own_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 16 * 1024,
            level0_file_num_compaction_trigger: 2,
            max_bytes_for_level_base: 64 * 1024,
            ..common::opts()
        },
    )
    .unwrap();
    db.put(b"k", 0u64.to_be_bytes()).unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                db.put(b"k", i.to_be_bytes()).unwrap();
                // Filler so memtables fill and flushes/compactions run.
                db.put(format!("f{}", i % 500), [0u8; 64]).unwrap();
                acked.store(i, Ordering::Release);
            }
        })
    };
    let compactor = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.compact_range(None, None).unwrap();
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut checked = 0u64;
    let mut snaps = Vec::new();
    while Instant::now() < deadline {
        let before = acked.load(Ordering::Acquire);
        let snap = db.snapshot();
        let after = acked.load(Ordering::Acquire);
        snaps.push((before, after, snap));
        // Read each snapshot a while later, after more compactions ran.
        if snaps.len() > 20 {
            let (before, after, snap) = snaps.remove(0);
            let ro = ReadOptions {
                snapshot: Some(snap),
                ..ReadOptions::default()
            };
            let v = db.get_opt(&ro, b"k").unwrap().expect("k always exists");
            let v = u64::from_be_bytes(v.try_into().unwrap());
            assert!(
                (before..=after + 1).contains(&v),
                "snapshot read {v}, taken between {before} and {after}"
            );
            checked += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    compactor.join().unwrap();
    assert!(checked > 100, "only {checked} snapshots checked");
    assert!(db.stats().compactions > 0);
}
