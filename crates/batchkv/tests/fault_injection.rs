//! I/O failures and power loss through [`FaultInjectionFs`]: a failed WAL
//! write or fsync is reported to the writer and makes the database refuse
//! writes (never acknowledged-then-lost); a failed SST or MANIFEST write
//! during flush keeps the previous version and the database reopens with
//! every acknowledged write; after a simulated power loss every synced write
//! survives and non-synced ones survive as a prefix of the write order.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::Arc;

use batchkv::{
    Db, Error, Fault, FaultInjectionFs, FaultOp, Options, PosixFs, WriteBatch, WriteOptions,
};
use common::power_loss::{assert_prefix, value, write_in_order};
use rand::{Rng, SeedableRng};

fn fault_fs() -> FaultInjectionFs {
    FaultInjectionFs::new(Arc::new(PosixFs))
}

fn open(dir: &std::path::Path, fs: &FaultInjectionFs, opts: Options) -> Db {
    Db::open_with_fs(dir, opts, Arc::new(fs.clone())).unwrap()
}

const SYNC: WriteOptions = WriteOptions {
    sync: true,
    disable_wal: false,
};

/// Writes keys `range` (one put each), returning on the first error.
fn put_range(db: &Db, range: std::ops::Range<u64>, opts: &WriteOptions) -> batchkv::Result<()> {
    for i in range {
        let mut b = WriteBatch::new();
        b.put(common::key(i), value(i));
        db.write(opts, b)?;
    }
    Ok(())
}

fn assert_present(db: &Db, range: std::ops::Range<u64>) {
    for i in range {
        assert_eq!(
            db.get(common::key(i)).unwrap(),
            Some(value(i)),
            "acknowledged key {i} lost"
        );
    }
}

/// Runs `fault` against the WAL while `trigger` writes (or syncs) after
/// 100 writes with `opts`; checks the caller sees the error, later writes,
/// flushes and WAL syncs are refused, reads still work, and a reopen (on
/// the real filesystem) has every acknowledged write.
fn wal_fault_is_reported_then_read_only(
    fault: Fault,
    opts: WriteOptions,
    trigger: &dyn Fn(&Db) -> batchkv::Result<()>,
) {
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, Options::default());
    put_range(&db, 0..100, &opts).unwrap();
    fs.inject(fault);
    let err = trigger(&db).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert_eq!(fs.failures(), 1);
    let err = db.put(common::key(500), b"after").unwrap_err();
    assert!(matches!(err, Error::Background(_)), "{err}");
    let err = db.flush().unwrap_err();
    assert!(matches!(err, Error::Background(_)), "{err}");
    let err = db.sync_wal().unwrap_err();
    assert!(matches!(err, Error::Background(_)), "{err}");
    assert_present(&db, 0..100);
    assert_eq!(db.get(common::key(500)).unwrap(), None);
    assert!(db.close().is_err(), "close reports the background error");

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..100);
    assert_eq!(db.get(common::key(500)).unwrap(), None);
    db.put(common::key(600), b"writable again").unwrap();
    db.close().unwrap();
}

#[test]
fn failed_wal_append_is_reported_and_db_turns_read_only() {
    let opts = WriteOptions::default();
    wal_fault_is_reported_then_read_only(
        Fault::next(FaultOp::Write).on_files(".log"),
        opts,
        &|db| put_range(db, 100..101, &opts),
    );
}

#[test]
fn failed_wal_fsync_is_reported_and_db_turns_read_only() {
    wal_fault_is_reported_then_read_only(
        Fault::next(FaultOp::Sync).on_files(".log"),
        SYNC,
        &|db| put_range(db, 100..101, &SYNC),
    );
}

/// A failed `sync_wal` (RocksDB's `SyncWAL`) as a failed synced write:
/// the writes before it stay readable and are found after a reopen (their
/// WAL bytes reached the file, only the fsync failed).
#[test]
fn failed_sync_wal_is_reported_and_db_turns_read_only() {
    wal_fault_is_reported_then_read_only(
        Fault::next(FaultOp::Sync).on_files(".log"),
        WriteOptions::default(),
        &|db| db.sync_wal(),
    );
}

#[test]
fn failed_wal_append_of_a_fragmented_record_is_never_half_applied() {
    // A batch larger than a WAL block is several fragments; fail the third.
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, Options::default());
    put_range(&db, 0..10, &SYNC).unwrap();
    fs.inject(Fault::next(FaultOp::Write).on_files(".log").nth(3));
    let mut b = WriteBatch::new();
    for i in 1000..1100 {
        b.put(common::key(i), vec![b'b'; 1000]);
    }
    assert!(db.write(&SYNC, b).is_err());
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..10);
    let present = (1000..1100)
        .filter(|&i| db.get(common::key(i)).unwrap().is_some())
        .count();
    assert!(
        present == 0 || present == 100,
        "batch half applied: {present}"
    );
}

/// Fails a flush with `fault`, then checks the previous version is intact,
/// the error is reported, and a reopen has every acknowledged write.
fn flush_fault_keeps_previous_version(fault: Fault) {
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, Options::default());
    put_range(&db, 0..200, &WriteOptions::default()).unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().files_per_level[0], 1);
    put_range(&db, 200..400, &WriteOptions::default()).unwrap();
    fs.inject(fault);
    let err = db.flush().unwrap_err();
    assert!(matches!(err, Error::Background(_)), "{err}");
    assert!(fs.failures() >= 1);
    // The previous version and the frozen memtable still serve reads.
    assert_eq!(db.stats().files_per_level[0], 1);
    assert_present(&db, 0..400);
    assert!(matches!(
        db.put(b"refused", b"x").unwrap_err(),
        Error::Background(_)
    ));
    drop(db);

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..400);
    assert_eq!(common::scan_all(&db).len(), 400);
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..400);
    db.close().unwrap();
}

#[test]
fn failed_sst_write_during_flush_keeps_previous_version() {
    flush_fault_keeps_previous_version(Fault::next(FaultOp::Write).on_files(".sst").nth(2));
}

#[test]
fn failed_sst_fsync_during_flush_keeps_previous_version() {
    flush_fault_keeps_previous_version(Fault::next(FaultOp::Sync).on_files(".sst"));
}

#[test]
fn failed_sst_create_during_flush_keeps_previous_version() {
    flush_fault_keeps_previous_version(Fault::next(FaultOp::Create).on_files(".sst"));
}

#[test]
fn failed_manifest_write_during_flush_keeps_previous_version() {
    flush_fault_keeps_previous_version(Fault::next(FaultOp::Sync).on_files("MANIFEST"));
}

#[test]
fn failed_current_rename_at_open_fails_the_open_and_the_next_open_works() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        put_range(&db, 0..50, &SYNC).unwrap();
        db.close().unwrap();
    }
    let fs = fault_fs();
    fs.inject(Fault::next(FaultOp::Rename));
    let err = Db::open_with_fs(dir.path(), Options::default(), Arc::new(fs.clone()));
    assert!(err.is_err());
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..50);
    db.close().unwrap();
}

/// One power-loss round: writes keys in order (some synced, some batched,
/// small memtables so flushes run), cuts the power at a random point, and
/// checks what survives: every key up to the last synced write (or
/// `sync_wal` call), and in all a contiguous prefix of the write order.
fn power_loss_round(seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let opts = Options {
        write_buffer_size: 32 * 1024,
        max_write_buffer_number: 3,
        ..Options::default()
    };
    let db = open(dir.path(), &fs, opts.clone());
    let total = rng.random_range(50..1500u64);
    let last_synced = write_in_order(
        &db,
        &mut rng,
        total,
        &format!("seed {seed}"),
        |db, rng, _| {
            if rng.random_ratio(1, 400) {
                db.flush().unwrap();
            }
        },
    );
    fs.power_off();
    drop(db);
    fs.lose_unsynced_data().unwrap();

    let db = Db::open(dir.path(), opts)
        .unwrap_or_else(|e| panic!("seed {seed}: reopen after power loss failed: {e}"));
    let survived = assert_prefix(&db, &format!("seed {seed}"));
    if let Some(s) = last_synced {
        assert!(
            survived > s,
            "seed {seed}: synced key {s} lost ({survived} keys survived)"
        );
    }
    db.close().unwrap();
}

#[test]
fn power_loss_keeps_synced_writes_and_a_prefix_of_the_rest() {
    for seed in 0..40 {
        power_loss_round(seed);
    }
}

#[test]
fn power_loss_after_sync_only_writes_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, common::small_buffers());
    put_range(&db, 0..2000, &SYNC).unwrap();
    let db = cut_power_and_reopen(db, &fs, dir.path());
    assert_present(&db, 0..2000);
    assert_eq!(common::scan_all(&db).len(), 2000);
    db.close().unwrap();
}

/// Cuts the power under `db` (opened on `fs` with small buffers), drops
/// what was not synced, and reopens the database on the real filesystem.
fn cut_power_and_reopen(db: Db, fs: &FaultInjectionFs, dir: &std::path::Path) -> Db {
    fs.power_off();
    drop(db);
    fs.lose_unsynced_data().unwrap();
    Db::open(dir, common::small_buffers()).unwrap()
}

/// `Db::sync_wal` makes the unsynced writes before it durable, across
/// memtable switches (several WALs), without writing a record; the
/// unsynced writes after it are lost to the power cut, so the check is not
/// vacuous.
#[test]
fn sync_wal_makes_earlier_unsynced_writes_survive_power_loss() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, common::small_buffers());
    put_range(&db, 0..2000, &WriteOptions::default()).unwrap();
    let seq = db.stats().last_sequence;
    db.sync_wal().unwrap();
    assert_eq!(db.stats().last_sequence, seq, "sync_wal writes no record");
    put_range(&db, 2000..2100, &WriteOptions::default()).unwrap();
    let db = cut_power_and_reopen(db, &fs, dir.path());
    assert_present(&db, 0..2000);
    assert_eq!(common::scan_all(&db).len(), 2000, "only the synced writes");
    db.close().unwrap();
}

#[test]
fn power_loss_model_drops_unsynced_bytes_and_unsynced_directory_entries() {
    use batchkv::FileSystem;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fs = fault_fs();
    let mut a = fs.new_writable(&d.join("a")).unwrap();
    a.append(b"durable").unwrap();
    a.sync().unwrap();
    a.append(b"-lost").unwrap();
    a.flush().unwrap();
    fs.sync_dir(d).unwrap();
    let mut b = fs.new_writable(&d.join("b")).unwrap();
    b.append(b"synced data, unsynced name").unwrap();
    b.sync().unwrap();
    fs.rename(&d.join("a"), &d.join("c")).unwrap();
    drop((a, b));
    assert_eq!(std::fs::read(d.join("c")).unwrap(), b"durable-lost");
    fs.lose_unsynced_data().unwrap();
    assert_eq!(std::fs::read(d.join("a")).unwrap(), b"durable");
    assert!(!d.join("b").exists(), "creation without sync_dir is undone");
    assert!(!d.join("c").exists(), "rename without sync_dir is undone");
}

/// Regression (found by the power-loss tests): a flushed table's directory
/// entry was never fsynced, so after a power loss the MANIFEST named a table
/// that did not exist while the WAL holding its data was already deleted.
#[test]
fn regression_flushed_table_name_is_durable_before_the_manifest_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fault_fs();
    let db = open(dir.path(), &fs, Options::default());
    put_range(&db, 0..100, &SYNC).unwrap();
    db.flush().unwrap();
    fs.power_off();
    drop(db);
    fs.lose_unsynced_data().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_present(&db, 0..100);
    db.close().unwrap();
}
