//! Damaged WALs: a torn tail recovers the complete prefix; a corrupted
//! middle stops recovery there under point-in-time recovery and fails with
//! `Corruption` (file and offset) under absolute consistency.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::{Path, PathBuf};

use batchkv::{Db, Error, Options, WalRecoveryMode, WriteBatch, WriteOptions};
use common::key;

/// Writes `n` batches of 3 keys (one WAL record each) and closes without a
/// flush; returns the WAL holding them.
fn write_batches(dir: &Path, n: u64) -> PathBuf {
    let db = Db::open(dir, common::opts()).unwrap();
    for i in 0..n {
        let mut b = WriteBatch::new();
        for j in 0..3 {
            b.put(key(i * 3 + j), vec![b'v'; 1000]);
        }
        db.write(&WriteOptions::default(), b).unwrap();
    }
    db.close().unwrap();
    common::newest_wal(dir)
}

/// Number of leading batches fully present; asserts that no batch is partial
/// and nothing follows the prefix.
fn recovered_prefix(db: &Db, n: u64) -> u64 {
    let mut prefix = None;
    for i in 0..n {
        let present: Vec<bool> = (0..3)
            .map(|j| db.get(key(i * 3 + j)).unwrap().is_some())
            .collect();
        assert!(
            present.iter().all(|p| *p) || present.iter().all(|p| !p),
            "batch {i} partial"
        );
        match (present[0], prefix) {
            (true, None) => {}
            (false, None) => prefix = Some(i),
            (true, Some(p)) => panic!("batch {i} present after missing batch {p}"),
            (false, Some(_)) => {}
        }
    }
    prefix.unwrap_or(n)
}

fn opts(mode: WalRecoveryMode) -> Options {
    Options {
        wal_recovery_mode: mode,
        ..common::opts()
    }
}

#[test]
fn every_truncation_of_the_wal_recovers_a_prefix() {
    // The full sweep (fsync-bound, ~20 s here) runs on the default memtable;
    // the others replay a sparser sample of cut points.
    common::for_each_memtable(|m| {
        every_truncation_of_the_wal_recovers_a_prefix_with(if m == "skiplist" {
            97
        } else {
            97 * 7
        })
    });
}

fn every_truncation_of_the_wal_recovers_a_prefix_with(stride: usize) {
    let src = tempfile::tempdir().unwrap();
    let wal = write_batches(src.path(), 20);
    let full = std::fs::read(&wal).unwrap();
    let mut last_prefix = 0;
    for cut in (0..=full.len())
        .step_by(stride)
        .chain([full.len() - 1, full.len()])
    {
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(src.path()).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
        }
        std::fs::write(dir.path().join(wal.file_name().unwrap()), &full[..cut]).unwrap();
        let db = Db::open(dir.path(), opts(WalRecoveryMode::PointInTime)).unwrap();
        let prefix = recovered_prefix(&db, 20);
        if cut == full.len() {
            assert_eq!(prefix, 20);
        }
        assert!(
            prefix >= last_prefix,
            "cut {cut}: prefix shrank from {last_prefix} to {prefix}"
        );
        last_prefix = prefix;
        db.close().unwrap();
    }
    assert_eq!(last_prefix, 20);
}

#[test]
fn torn_tail_is_tolerated_by_tolerate_corrupted_tail_mode() {
    common::for_each_memtable(|_| torn_tail_is_tolerated_by_tolerate_corrupted_tail_mode_with());
}

fn torn_tail_is_tolerated_by_tolerate_corrupted_tail_mode_with() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_batches(dir.path(), 10);
    let data = std::fs::read(&wal).unwrap();
    std::fs::write(&wal, &data[..data.len() - 500]).unwrap();
    let db = Db::open(
        dir.path(),
        opts(WalRecoveryMode::TolerateCorruptedTailRecords),
    )
    .unwrap();
    assert_eq!(recovered_prefix(&db, 10), 9);
}

#[test]
fn corrupted_middle_stops_point_in_time_and_fails_absolute_consistency() {
    common::for_each_memtable(|_| {
        corrupted_middle_stops_point_in_time_and_fails_absolute_consistency_with()
    });
}

fn corrupted_middle_stops_point_in_time_and_fails_absolute_consistency_with() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_batches(dir.path(), 10);
    let mut data = std::fs::read(&wal).unwrap();
    // Batch records are ~3 KB each; flip a byte inside the fifth one.
    let offset = 4 * (data.len() / 10) + 500;
    data[offset] ^= 0x55;
    std::fs::write(&wal, &data).unwrap();

    for mode in [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
    ] {
        match Db::open(dir.path(), opts(mode)) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert!(
                    file.ends_with(wal.file_name().unwrap().to_str().unwrap()),
                    "{file}"
                );
                assert!(offset < data.len() as u64);
            }
            Err(e) => panic!("{mode:?}: expected Corruption, got {e}"),
            Ok(_) => panic!("{mode:?}: open succeeded over a corrupted WAL"),
        }
    }
    // The failed opens changed nothing: point-in-time recovery still sees the prefix.
    let db = Db::open(dir.path(), opts(WalRecoveryMode::PointInTime)).unwrap();
    let prefix = recovered_prefix(&db, 10);
    assert!((3..=4).contains(&prefix), "prefix {prefix}");
}
