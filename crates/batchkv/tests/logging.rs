//! The engine reports through the `log` crate: open, recovery (what was
//! replayed or dropped), flushes, compactions, stalls, background errors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::Mutex;

use batchkv::{Db, Options};

struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        self.0
            .lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));

fn logged(level: log::Level, part: &str) -> bool {
    LOGGER
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|(l, m)| *l == level && m.contains(part))
}

#[test]
fn open_flush_compaction_and_recovery_damage_are_logged() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    for i in 0..50u64 {
        db.put(common::key(i), vec![b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..500u64 {
        db.put(common::key(i), vec![b'w'; 100]).unwrap();
    }
    db.close().unwrap();
    assert!(logged(log::Level::Info, "opened"));
    assert!(logged(log::Level::Info, "flush: memtable -> L0 table"));
    assert!(logged(log::Level::Info, "compaction: L0"));

    // Damage the WAL in the middle: recovery warns with file and offset.
    let wal = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    let mut data = std::fs::read(&wal).unwrap();
    data[100] ^= 0x40;
    std::fs::write(&wal, &data).unwrap();
    // (Point-in-time recovery: the default refuses the open instead.)
    let opts = Options {
        wal_recovery_mode: batchkv::WalRecoveryMode::PointInTime,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    assert!(db.recovery_report().lost_writes());
    assert!(
        logged(log::Level::Warn, "recovery: corruption in"),
        "{:?}",
        LOGGER.0.lock().unwrap()
    );
    assert!(logged(log::Level::Warn, "damaged WAL copied to"));
}
