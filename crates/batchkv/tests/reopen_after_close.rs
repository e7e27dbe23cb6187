//! Data written before a clean close (and before a drop) is there after reopening.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, WriteBatch, WriteOptions};
use common::{key, scan_all, small_buffers};

#[test]
fn values_survive_close_and_reopen_from_wal_and_sst() {
    common::for_each_memtable(|_| values_survive_close_and_reopen_from_wal_and_sst_with());
}

fn values_survive_close_and_reopen_from_wal_and_sst_with() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), small_buffers()).unwrap();
        for i in 0..5000 {
            db.put(key(i), format!("v{i}")).unwrap();
        }
        for i in (0..5000).step_by(7) {
            db.delete(key(i)).unwrap();
        }
        assert!(
            db.stats().flushes > 0,
            "small buffers must have flushed: {:?}",
            db.stats()
        );
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small_buffers()).unwrap();
    for i in 0..5000 {
        let want = (i % 7 != 0).then(|| format!("v{i}").into_bytes());
        assert_eq!(db.get(key(i)).unwrap(), want, "key {i}");
    }
    assert_eq!(scan_all(&db).len(), 5000 - 5000usize.div_ceil(7));
}

#[test]
fn dropping_the_last_handle_shuts_down_cleanly() {
    common::for_each_memtable(|_| dropping_the_last_handle_shuts_down_cleanly_with());
}

fn dropping_the_last_handle_shuts_down_cleanly_with() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let clone = db.clone();
        let mut b = WriteBatch::new();
        b.put("a", "1");
        b.put("b", "2");
        clone.write(&WriteOptions::default(), b).unwrap();
        drop(db);
        assert_eq!(clone.get("a").unwrap(), Some(b"1".to_vec()));
    }
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.get("b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn writes_without_wal_are_flushed_at_close() {
    common::for_each_memtable(|_| writes_without_wal_are_flushed_at_close_with());
}

fn writes_without_wal_are_flushed_at_close_with() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let mut b = WriteBatch::new();
        b.put("nowal", "x");
        db.write(
            &WriteOptions {
                disable_wal: true,
                sync: false,
            },
            b,
        )
        .unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.get("nowal").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn closed_handles_return_shutdown() {
    common::for_each_memtable(|_| closed_handles_return_shutdown_with());
}

fn closed_handles_return_shutdown_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let other = db.clone();
    db.close().unwrap();
    assert!(matches!(other.put("a", "b"), Err(batchkv::Error::Shutdown)));
    assert!(matches!(other.get("a"), Err(batchkv::Error::Shutdown)));
}
