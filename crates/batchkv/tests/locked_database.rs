//! A second open of a database that is already open fails with a clear error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

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

/// A child process forked while the database is open (and that never
/// execs) does not keep it locked after the parent closes it: the lock is
/// a per-process record lock, not an `flock` shared with the child (issue
/// 12: tests that spawned processes saw a just-closed database "locked").
#[test]
fn a_forked_child_does_not_inherit_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    // SAFETY: the child calls only async-signal-safe functions (sleep,
    // _exit) before exiting; it never returns into Rust code.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: in the forked child only async-signal-safe calls run
        // (sleep, _exit), and `_exit` never returns into Rust code.
        unsafe {
            libc::sleep(3);
            libc::_exit(0);
        }
    }
    db.close().unwrap();
    let reopened = Db::open(dir.path(), Options::default());
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(reopened.unwrap().get(b"k").unwrap(), Some(b"v".to_vec()));
}
