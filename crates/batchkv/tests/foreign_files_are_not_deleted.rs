//! Opening a directory that holds no database (no CURRENT) but holds other
//! files must not create a database there: the files would be taken for
//! obsolete WALs/tables and deleted (issue 12: foreign `*.log`/`*.sst`
//! files were deleted at open).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, Error};

#[test]
fn a_non_empty_directory_without_current_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("000007.log", "someone's log"),
        ("000009.sst", "x"),
        ("notes.txt", "hi"),
    ];
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    match Db::open(dir.path(), common::opts()) {
        Err(Error::InvalidArgument(msg)) => {
            assert!(
                msg.contains("000007.log") && msg.contains("not empty"),
                "{msg}"
            )
        }
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("created a database over foreign files"),
    }
    for (name, body) in files {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(name)).unwrap(),
            body
        );
    }
    assert!(!dir.path().join("CURRENT").exists());
}

#[test]
fn an_empty_directory_becomes_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}
