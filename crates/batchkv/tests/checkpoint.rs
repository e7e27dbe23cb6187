//! `Db::checkpoint`: a consistent, openable copy made while writes go on.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{Db, Error, Options, WriteBatch, WriteOptions};
use common::gate_fs::{gated_db, GateOp};

#[test]
fn checkpoint_under_writes_is_a_consistent_prefix_and_opens() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        // One writer, keys in order: any consistent copy holds 0..n.
        let acked = Arc::new(AtomicU64::new(0));
        let writer = {
            let (db, acked) = (db.clone(), Arc::clone(&acked));
            std::thread::spawn(move || {
                for i in 0..6000u64 {
                    let mut b = WriteBatch::new();
                    b.put(common::key(i), format!("v{i}"));
                    // Some writes skip the WAL: the checkpoint flushes them.
                    let no_wal = i.is_multiple_of(7);
                    db.write(
                        &WriteOptions {
                            disable_wal: no_wal,
                            ..Default::default()
                        },
                        b,
                    )
                    .unwrap();
                    acked.store(i + 1, Ordering::Release);
                }
            })
        };
        while acked.load(Ordering::Acquire) < 2000 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let ckpt = dir.path().join("ckpt");
        db.checkpoint(&ckpt).unwrap();
        writer.join().unwrap();
        assert!(matches!(
            db.checkpoint(&ckpt),
            Err(Error::InvalidArgument(_))
        ));
        // The source goes on and rewrites its files; the copy is unaffected.
        db.compact_range(None, None).unwrap();
        db.close().unwrap();

        // A checkpoint opens read-only too (nothing written into it).
        let ro = Db::open_read_only(&ckpt, common::small_buffers()).unwrap();
        assert_eq!(ro.get(common::key(0)).unwrap(), Some(b"v0".to_vec()));
        ro.close().unwrap();
        let copy = Db::open(&ckpt, common::small_buffers()).unwrap();
        let present: Vec<bool> = (0..6000u64)
            .map(|i| match copy.get(common::key(i)).unwrap() {
                Some(v) => {
                    assert_eq!(v, format!("v{i}").into_bytes());
                    true
                }
                None => false,
            })
            .collect();
        // Everything acknowledged before the checkpoint began is there.
        let missing: Vec<u64> = (0..before).filter(|&i| !present[i as usize]).collect();
        assert!(
            missing.is_empty(),
            "acknowledged writes missing: {missing:?}"
        );
        // Logged writes after that form a prefix (WAL-less ones made during
        // the checkpoint may or may not be in it, as after a crash).
        let logged = |i: &u64| !i.is_multiple_of(7);
        let last = (0..6000u64)
            .filter(logged)
            .rfind(|&i| present[i as usize])
            .unwrap();
        let gaps: Vec<u64> = (0..last)
            .filter(logged)
            .filter(|&i| !present[i as usize])
            .collect();
        assert!(
            gaps.is_empty(),
            "logged writes missing before {last}: {gaps:?}"
        );
        assert!(!copy.recovery_report().lost_writes());
        // The copy is a normal, writable database.
        copy.put(b"new", b"1").unwrap();
        copy.close().unwrap();
        let source = Db::open(dir.path(), common::small_buffers()).unwrap();
        assert_eq!(source.get(b"new").unwrap(), None);
        assert_eq!(
            source.get(common::key(5999)).unwrap(),
            Some(b"v5999".to_vec())
        );
    });
}

/// Found hung in the test suite: a checkpoint took the MANIFEST lock and
/// then waited for the WAL lock, held by a writer stalled for room, whose
/// flush waited for the MANIFEST lock. Here every party is stopped at the
/// exact point: the checkpoint before it takes its locks, the flush before
/// it writes its table, the writer in its stall; then the checkpoint and
/// the flush go on. With the old lock order this never finished.
#[test]
fn checkpoint_beside_a_writer_stalled_for_a_flush_does_not_deadlock() {
    let (dir, fs, db, _) = gated_db(Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        ..common::opts()
    });
    db.put(b"before", b"1").unwrap();
    // The checkpoint flushes, then stops at its staging directory.
    let at_staging = fs.hold(GateOp::CreateDir, "checkpoint-tmp");
    let ckpt = dir.path().join("ckpt");
    let (tx, rx) = std::sync::mpsc::channel();
    let checkpointer = {
        let (db, ckpt) = (db.clone(), ckpt.clone());
        std::thread::spawn(move || tx.send(db.checkpoint(&ckpt)).unwrap())
    };
    fs.wait_held(at_staging);
    // The next flush stops before writing its table; the writer fills the
    // active memtable again and stalls (two memtables: the limit).
    let at_table = fs.hold(GateOp::Create, ".sst");
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..2000u64 {
                db.put(common::key(i), [7u8; 100]).unwrap();
            }
        })
    };
    fs.wait_held(at_table);
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.property_int("batchkv.is-write-stopped") != Some(1) {
        assert!(Instant::now() < deadline, "the writer never stalled");
        std::thread::sleep(Duration::from_millis(1));
    }
    // The checkpoint goes on to take its locks (give it time to block);
    // then the flush goes on to install its table.
    fs.release(at_staging);
    std::thread::sleep(Duration::from_millis(200));
    fs.release(at_table);
    let result = rx.recv_timeout(Duration::from_secs(30));
    assert!(
        result.is_ok(),
        "deadlock: checkpoint, flush and stalled writer waited for each other"
    );
    result.unwrap().unwrap();
    checkpointer.join().unwrap();
    writer.join().unwrap();
    assert_eq!(db.property_int("batchkv.is-write-stopped"), Some(0));
    db.close().unwrap();
    let copy = Db::open(&ckpt, common::opts()).unwrap();
    assert_eq!(copy.get(b"before").unwrap(), Some(b"1".to_vec()));
}
