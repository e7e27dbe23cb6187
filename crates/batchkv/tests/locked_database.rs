//! A second open of a database that is already open fails with a clear error.
mod common;
use batchkv::{Db, Error, Options};

#[test]
fn second_open_reports_locked_with_the_path() {
    common::for_each_memtable(|_| second_open_reports_locked_with_the_path_with());
}

fn second_open_reports_locked_with_the_path_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    match Db::open(dir.path(), common::opts()) {
        Err(Error::Locked { path }) => assert!(path.starts_with(dir.path()), "{path:?}"),
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("second open succeeded"),
    }
    db.close().unwrap();
    // Released at close.
    Db::open(dir.path(), common::opts())
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn missing_database_without_create_if_missing_is_invalid_argument() {
    common::for_each_memtable(|_| {
        missing_database_without_create_if_missing_is_invalid_argument_with()
    });
}

fn missing_database_without_create_if_missing_is_invalid_argument_with() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: false,
        ..common::opts()
    };
    let err = Db::open(dir.path().join("nope"), opts)
        .err()
        .expect("open must fail");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn error_if_exists_refuses_an_existing_database() {
    common::for_each_memtable(|_| error_if_exists_refuses_an_existing_database_with());
}

fn error_if_exists_refuses_an_existing_database_with() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), common::opts())
        .unwrap()
        .close()
        .unwrap();
    let opts = Options {
        error_if_exists: true,
        ..common::opts()
    };
    let err = Db::open(dir.path(), opts).err().expect("open must fail");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
