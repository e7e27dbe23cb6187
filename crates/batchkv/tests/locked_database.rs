//! A second open of a database that is already open fails with a clear error.
use batchkv::{Db, Error, Options};

#[test]
fn second_open_reports_locked_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Locked { path }) => assert!(path.starts_with(dir.path()), "{path:?}"),
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("second open succeeded"),
    }
    db.close().unwrap();
    // Released at close.
    Db::open(dir.path(), Options::default())
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn missing_database_without_create_if_missing_is_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let err = Db::open(dir.path().join("nope"), opts)
        .err()
        .expect("open must fail");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn error_if_exists_refuses_an_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), Options::default())
        .unwrap()
        .close()
        .unwrap();
    let opts = Options {
        error_if_exists: true,
        ..Options::default()
    };
    let err = Db::open(dir.path(), opts).err().expect("open must fail");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
