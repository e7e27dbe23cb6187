//! Issue 12, bug 4: one flipped byte in the middle of a WAL silently
//! dropped everything after it (1,000 synced writes → 434 after reopen, no
//! message, and the damaged WAL deleted). Now point-in-time recovery still
//! keeps the prefix, but reports what it dropped, copies the damaged WAL to
//! `lost/`, and a torn tail is told apart from corruption. (Since issue 27
//! the default mode refuses such an open: `wal_damage_default.rs`.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::{Path, PathBuf};

use batchkv::{Db, Error, Options, WalRecoveryMode, WriteBatch, WriteOptions};

const N: u64 = 1000;

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-").repeat(8).into_bytes()
}

/// `N` synced writes, left in the WAL (a clean close does not flush
/// memtables whose writes are logged).
fn write_synced(dir: &Path) -> PathBuf {
    let db = Db::open(dir, common::opts()).unwrap();
    for i in 0..N {
        let mut b = WriteBatch::new();
        b.put(common::key(i), value(i));
        db.write(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            b,
        )
        .unwrap();
    }
    db.close().unwrap();
    common::newest_wal(dir)
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn opts(mode: WalRecoveryMode) -> Options {
    Options {
        wal_recovery_mode: mode,
        ..common::opts()
    }
}

/// Keys present, in order; asserts they are a set of whole writes with
/// the right values.
fn present(db: &Db) -> Vec<u64> {
    (0..N)
        .filter(|&i| match db.get(common::key(i)).unwrap() {
            Some(v) => {
                assert_eq!(v, value(i), "key {i} has a wrong value");
                true
            }
            None => false,
        })
        .collect()
}

#[test]
fn corruption_in_the_middle_is_reported_and_the_wal_kept() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_synced(dir.path());
    let mut data = std::fs::read(&wal).unwrap();
    assert!(data.len() > 3 * 32 * 1024, "the WAL spans several blocks");
    let bad = 40_000; // inside the second 32 KiB block
    data[bad] ^= 0x55;
    std::fs::write(&wal, &data).unwrap();
    let pristine = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), pristine.path());

    // Modes that refuse (the default among them): the open fails and
    // changes nothing.
    for mode in [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        Options::default().wal_recovery_mode,
    ] {
        match Db::open(dir.path(), opts(mode)) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert!(file.ends_with(wal.file_name().unwrap().to_str().unwrap()));
                assert!(
                    offset <= bad as u64 && offset > 32 * 1024,
                    "offset {offset}"
                );
            }
            Err(e) => panic!("{mode:?}: expected Corruption, got {e}"),
            Ok(_) => panic!("{mode:?}: opened over a corrupted WAL"),
        }
    }

    // Point in time: the prefix, and a report of what was not applied.
    let db = Db::open(dir.path(), opts(WalRecoveryMode::PointInTime)).unwrap();
    let report = db.recovery_report().clone();
    assert!(report.lost_writes(), "{report:#?}");
    assert_eq!(report.damage.len(), 1, "{report:#?}");
    let d = &report.damage[0];
    assert_eq!(d.file, wal);
    assert!(!d.torn_tail);
    assert!(d.offset > 32 * 1024 && d.offset <= bad as u64, "{d:?}");
    assert!(
        d.records_dropped > 100,
        "intact writes after the damage: {d:?}"
    );
    assert_eq!(d.bytes_dropped, data.len() as u64 - d.offset);
    let kept = present(&db);
    let prefix = kept.len() as u64;
    assert_eq!(kept, (0..prefix).collect::<Vec<_>>(), "a prefix");
    assert_eq!(report.records_replayed, prefix);
    // The rest of the damaged block cannot be framed (its lengths are
    // untrusted); the intact records counted are those after it.
    assert!(prefix + d.records_dropped < N, "{d:?}");
    let readable_after = d.records_dropped;
    // The damaged WAL is kept aside byte for byte, even after a flush that
    // makes the original obsolete.
    assert_eq!(
        report.kept_aside,
        vec![dir.path().join("lost").join(wal.file_name().unwrap())]
    );
    db.flush().unwrap();
    db.close().unwrap();
    assert_eq!(std::fs::read(&report.kept_aside[0]).unwrap(), data);

    // Salvage: skip the damaged records, apply every intact one after them.
    let db = Db::open(
        pristine.path(),
        opts(WalRecoveryMode::SkipAnyCorruptedRecords),
    )
    .unwrap();
    let salvaged = present(&db);
    assert_eq!(salvaged.len() as u64, prefix + readable_after);
    assert!(salvaged.starts_with(&kept) && salvaged.ends_with(&[N - 1]));
    let r = db.recovery_report();
    assert_eq!(r.records_replayed, prefix + readable_after);
    assert!(r.lost_writes() && !r.damage[0].torn_tail && r.damage[0].records_dropped == 0);
}

#[test]
fn torn_tail_is_reported_as_a_normal_crash_end() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_synced(dir.path());
    let data = std::fs::read(&wal).unwrap();
    std::fs::write(&wal, &data[..data.len() - 7]).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let report = db.recovery_report();
    assert!(!report.lost_writes(), "{report:#?}");
    assert_eq!(report.damage.len(), 1);
    assert!(report.damage[0].torn_tail);
    assert_eq!(report.damage[0].records_dropped, 0);
    assert!(report.kept_aside.is_empty());
    assert_eq!(present(&db), (0..N - 1).collect::<Vec<_>>());
}

#[test]
fn clean_reopen_reports_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    write_synced(dir.path());
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let report = db.recovery_report();
    assert!(report.damage.is_empty() && report.wals_dropped.is_empty());
    assert_eq!(report.records_replayed, N);
    assert!(!dir.path().join("lost").exists());
}
