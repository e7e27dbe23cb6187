//! A memtable switch does not fsync the WAL it closes (nor the directory
//! entry of the WAL it creates) on the write path: the flush job or the next
//! `sync` write pays for them (`db/closed_wals.rs`). These tests cut the
//! power (`FaultInjectionFs`) while closed WALs are still unsynced — the
//! flush thread is held at a gate (`GateFs`) so it cannot pay for them — and
//! check recovery yields a prefix of the write order that holds every write
//! acknowledged with `sync` (or before a `sync_wal`): a synced record in a
//! newer WAL must never be durable while an older WAL's records are not.
//!
//! The OS may also write a newer WAL's pages back before the unsynced end
//! of an older one (`FaultInjectionFs::write_back`): each WAL a switch
//! creates starts with a predecessor record, and recovery ends the history
//! at the older WAL's lost end instead of applying the newer writes after
//! a hole.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::Path;
use std::sync::Arc;

use batchkv::{Db, FaultInjectionFs, Options, PosixFs, WriteBatch, WriteOptions};
use common::gate_fs::{GateFs, GateOp, Ticket};
use common::power_loss::{assert_prefix, value, write_in_order};
use rand::{Rng, SeedableRng};

fn put(db: &Db, i: u64, sync: bool) {
    let mut b = WriteBatch::new();
    b.put(common::key(i), value(i));
    db.write(
        &WriteOptions {
            sync,
            disable_wal: false,
        },
        b,
    )
    .unwrap_or_else(|e| panic!("write {i} failed: {e}"));
}

/// Writes unsynced keys from `*i` on until at least `frozen` memtables
/// wait for flush.
fn fill_until_frozen(db: &Db, i: &mut u64, frozen: usize) {
    while db.stats().immutable_memtables < frozen {
        put(db, *i, false);
        *i += 1;
    }
}

/// Writes unsynced keys from `*i` on until a memtable switch starts a new
/// WAL in `dir`.
fn fill_until_switch(db: &Db, dir: &Path, i: &mut u64) {
    let wal = common::newest_wal(dir);
    while common::newest_wal(dir) == wal {
        put(db, *i, false);
        *i += 1;
    }
}

/// Tiny memtables (a switch every ~100 writes), room for many of them
/// while the flush thread is held, and no compactions (the gate on table
/// creation then holds only the flush thread).
fn options() -> Options {
    Options {
        write_buffer_size: 8 * 1024,
        max_write_buffer_number: 64,
        disable_auto_compactions: true,
        ..common::opts()
    }
}

/// The power-loss model under a gate: the database's file operations pass
/// `gate` first, then `fault`.
fn open(dir: &Path) -> (FaultInjectionFs, Arc<GateFs>, Db) {
    let fault = FaultInjectionFs::new(Arc::new(PosixFs));
    let gate = GateFs::new(Arc::new(fault.clone()));
    let db = Db::open_with_fs(dir, options(), gate.clone()).unwrap();
    (fault, gate, db)
}

/// Cuts the power, lets a held flush thread go on (its operations now
/// fail), drops what was not durable and reopens on the real filesystem.
/// Returns the surviving keys, checked to be a prefix `0..n` of the write
/// order with the right values.
fn cut_power(
    db: Db,
    fault: &FaultInjectionFs,
    gate: &GateFs,
    held: Option<Ticket>,
    dir: &Path,
    what: &str,
) -> u64 {
    fault.power_off();
    if let Some(t) = held {
        gate.release(t);
    }
    drop(db);
    fault.lose_unsynced_data().unwrap();
    let db = Db::open(dir, options())
        .unwrap_or_else(|e| panic!("{what}: reopen after power loss failed: {e}"));
    let survived = assert_prefix(&db, what);
    db.close().unwrap();
    survived
}

/// The case the design must get right, step by step: memtable A is frozen
/// and its flush is stuck (after paying the fsyncs owed then); memtable B
/// is frozen, so WAL B is closed and unsynced; a synced write lands in WAL
/// C. It must make WAL B (and C's directory entry) durable before it is
/// acknowledged, or the power loss keeps it and loses B's writes before it.
#[test]
fn synced_write_after_a_switch_makes_the_closed_wals_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (fault, gate, db) = open(dir.path());
    let held = gate.hold(GateOp::Create, ".sst");
    let mut i = 0;
    // Fill A; its switch wakes the flush thread, which stops at the gate.
    fill_until_frozen(&db, &mut i, 1);
    gate.wait_held(held);
    // Fill B while that flush is held: B's switch closes WAL B unsynced.
    fill_until_frozen(&db, &mut i, 2);
    put(&db, i, true);
    let synced = i;
    // Unsynced writes after it may be lost, never the ones before it.
    for j in i + 1..i + 20 {
        put(&db, j, false);
    }
    let survived = cut_power(db, &fault, &gate, Some(held), dir.path(), "one switch");
    assert!(
        survived > synced,
        "synced key {synced} lost: {survived} keys survived"
    );
}

/// `Db::sync_wal` after switches makes the closed WALs durable as well as
/// the current one, while the flush that would pay for them is held.
#[test]
fn sync_wal_after_switches_makes_the_closed_wals_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (fault, gate, db) = open(dir.path());
    let held = gate.hold(GateOp::Create, ".sst");
    let mut i = 0;
    fill_until_frozen(&db, &mut i, 4);
    gate.wait_held(held);
    db.sync_wal().unwrap();
    let synced = i - 1;
    let survived = cut_power(db, &fault, &gate, Some(held), dir.path(), "sync_wal");
    assert!(
        survived > synced,
        "key {synced}, written before sync_wal, lost: {survived} keys survived"
    );
}

/// The reordering the predecessor record exists for, step by step: WAL B
/// is closed with an unsynced end (its fsync owed, the flush that would
/// pay it held), and the OS writes WAL C back — its pages and its name —
/// before B's end. Without the check, recovery found B ending cleanly at
/// a record boundary and applied C's writes after the hole.
#[test]
fn newer_wal_written_back_before_the_older_ones_end_keeps_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (fault, gate, db) = open(dir.path());
    let held = gate.hold(GateOp::Create, ".sst");
    let mut i = 0;
    fill_until_frozen(&db, &mut i, 1);
    gate.wait_held(held);
    // WAL B: a synced write, then unsynced ones until B is closed.
    put(&db, i, true);
    let synced = i;
    i += 1;
    fill_until_frozen(&db, &mut i, 2);
    let first_in_c = i;
    for _ in 0..20 {
        put(&db, i, false);
        i += 1;
    }
    fault.write_back(&common::newest_wal(dir.path())).unwrap();
    let survived = cut_power(db, &fault, &gate, Some(held), dir.path(), "C written back");
    assert!(first_in_c > synced + 1, "B holds unsynced writes");
    assert_eq!(
        survived,
        synced + 1,
        "synced key {synced} kept, B's unsynced end and all of C dropped"
    );
    let db = Db::open(dir.path(), options()).unwrap();
    let r = db.recovery_report();
    // The first reopen made the drop; this one finds a clean history.
    assert_eq!(r.status().as_str(), "clean", "{r:#?}");
    db.close().unwrap();
    let lost: Vec<_> = std::fs::read_dir(dir.path().join("lost"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(lost.len(), 1, "WAL C (only) is copied to lost/: {lost:?}");
}

/// One round: keys written in order in small batches, some made durable
/// (`write_in_order`), across dozens of memtable switches; the flush
/// thread is held at random stretches so closed WALs stay unsynced, and
/// the power is cut at a random point. With `write_back`, the OS writes
/// the newest WAL back now and then (before the older WALs' fsyncs), and
/// last just before the power cut, right after a switch that left the
/// closed WAL's fsync owed.
fn round(seed: u64, write_back: bool) {
    let what = format!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let (fault, gate, db) = open(dir.path());
    let total = rng.random_range(200..3000u64);
    let mut held: Option<(Ticket, u64)> = None;
    let last_synced = write_in_order(&db, &mut rng, total, &what, |_, rng, i| {
        // Hold the next flush for up to ~20 memtables' worth of writes
        // (the limit is 64), then let it go.
        match held {
            None if rng.random_ratio(1, 200) => {
                held = Some((
                    gate.hold(GateOp::Create, ".sst"),
                    i + rng.random_range(1..1500),
                ));
            }
            Some((t, until)) if i >= until => {
                gate.release(t);
                held = None;
            }
            _ => {}
        }
        if write_back && rng.random_ratio(1, 40) {
            fault.write_back(&common::newest_wal(dir.path())).unwrap();
        }
    });
    let mut held = held.map(|h| h.0);
    if write_back {
        // End in the reordering itself: with the flush thread held (after
        // it paid what was owed when it started), a WAL is closed with its
        // fsync owed, a few writes go to the next WAL, and the OS writes
        // that one back before the power cut.
        let t = *held.get_or_insert_with(|| gate.hold(GateOp::Create, ".sst"));
        let mut i = total;
        // A switch wakes the flush thread if it is idle; it then stops at
        // the gate (at once, if it is there already).
        fill_until_switch(&db, dir.path(), &mut i);
        gate.wait_held(t);
        fill_until_switch(&db, dir.path(), &mut i);
        for _ in 0..rng.random_range(1..30) {
            put(&db, i, false);
            i += 1;
        }
        fault.write_back(&common::newest_wal(dir.path())).unwrap();
    }
    let survived = cut_power(db, &fault, &gate, held, dir.path(), &what);
    if let Some(s) = last_synced {
        assert!(
            survived > s,
            "{what}: synced key {s} lost ({survived} keys survived)"
        );
    }
}

#[test]
fn power_loss_across_many_switches_keeps_a_prefix_with_every_synced_write() {
    for seed in 0..40 {
        round(seed, false);
    }
}

#[test]
fn newer_wals_written_back_first_still_leave_a_prefix_with_every_synced_write() {
    for seed in 0..40 {
        round(seed, true);
    }
}

/// `create_cf` names the current WAL in the MANIFEST, so that WAL's
/// directory entry (owed since the switch that created it) must be durable
/// before the edit; otherwise a power loss leaves a MANIFEST naming a
/// missing WAL and the reopen refuses. The flush thread is held inside the
/// directory fsync it owes; `create_cf` is held when it writes the OPTIONS
/// file (after its edit is durable, before that file's own directory
/// fsync). If it gets there while the flush thread is still held, it did
/// not pay for the WAL's name, and the power is cut right then.
#[test]
fn create_cf_after_a_switch_makes_the_new_wal_name_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (fault, gate, db) = open(dir.path());
    let dir_name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let in_dir_sync = gate.hold(GateOp::SyncDir, &dir_name);
    let mut i = 0;
    fill_until_frozen(&db, &mut i, 1);
    gate.wait_held(in_dir_sync);
    let at_options = gate.hold(GateOp::Create, ".dbtmp");
    let creator = {
        let db = db.clone();
        std::thread::spawn(move || db.create_cf("other", &options()).map(|_| ()))
    };
    if !gate.reached_within(at_options, std::time::Duration::from_millis(300)) {
        gate.release(in_dir_sync);
        gate.wait_held(at_options);
    }
    fault.power_off();
    gate.release(at_options);
    // Writing the OPTIONS file fails once the power is off.
    let _ = creator.join().unwrap();
    drop(db);
    fault.lose_unsynced_data().unwrap();
    let db = Db::open(dir.path(), options())
        .unwrap_or_else(|e| panic!("reopen after create_cf and power loss failed: {e}"));
    assert!(
        db.cf_names().iter().any(|n| n == "other"),
        "the family's edit was durable before the power cut"
    );
    db.close().unwrap();
}
