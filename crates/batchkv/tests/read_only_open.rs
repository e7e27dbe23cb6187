//! `Db::open_read_only`: no lock, no writes to the directory, WALs replayed
//! into memory; every write-side call is `Error::ReadOnly`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use batchkv::{Db, Error, Options, ReadOptions};

/// Every file's name and bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn read_only_open_reads_everything_and_writes_nothing() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        for i in 0..3000u64 {
            db.put(common::key(i), format!("v{i}")).unwrap();
        }
        db.flush().unwrap();
        // These live only in the WAL.
        for i in 0..100u64 {
            db.delete(common::key(i)).unwrap();
        }
        db.put(b"wal-only", b"1").unwrap();

        // Beside the live writer (same process: no lock is taken).
        let ro = Db::open_read_only(dir.path(), common::small_buffers()).unwrap();
        assert_eq!(ro.get(b"wal-only").unwrap(), Some(b"1".to_vec()));
        assert_eq!(ro.get(common::key(50)).unwrap(), None);
        assert_eq!(ro.get(common::key(2999)).unwrap(), Some(b"v2999".to_vec()));
        let keys = [common::key(99), common::key(100)];
        let got: Vec<_> = ro
            .multi_get(&ReadOptions::default(), &keys)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, vec![None, Some(b"v100".to_vec())]);
        assert_eq!(
            ro.prefix(&ReadOptions::default(), b"").unwrap().count(),
            2901
        );
        let read_only = |r: batchkv::Result<()>| matches!(r, Err(Error::ReadOnly(_)));
        assert!(read_only(ro.put(b"x", b"y")));
        assert!(read_only(ro.delete(b"x")));
        assert!(read_only(ro.flush()));
        assert!(read_only(ro.compact_range(None, None)));
        assert!(read_only(ro.checkpoint(dir.path().join("ckpt"))));
        ro.close().unwrap();
        // The writer was never disturbed.
        db.put(b"after", b"2").unwrap();
        db.close().unwrap();

        // With the writer gone, a read-only open leaves every byte as it was.
        let before = contents(dir.path());
        let ro = Db::open_read_only(dir.path(), common::small_buffers()).unwrap();
        assert_eq!(ro.get(b"after").unwrap(), Some(b"2".to_vec()));
        ro.close().unwrap();
        let after = contents(dir.path());
        assert!(
            after == before,
            "a read-only open changed files: {:?} -> {:?}",
            before.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>(),
            after.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>()
        );
    });
}

#[test]
fn missing_database_is_refused_read_only() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Db::open_read_only(dir.path(), Options::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing created"
    );
}
