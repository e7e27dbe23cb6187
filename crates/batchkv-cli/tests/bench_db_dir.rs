//! `batchkv bench --db DIR` never deletes what bench did not create: a
//! directory holding other files is refused, an existing database is refused
//! unless `--destroy_db` is given, `--destroy_db` fails on a database another
//! process holds open, and it deletes only the database's own files.
//!
//! Regression: bench used to `remove_dir_all(--db)` whenever
//! `--use_existing_db` was absent, deleting whatever the directory held.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use batchkv::{Db, Options};

/// A short bench run on `db` with `extra` flags.
fn bench(db: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args(["bench", "--benchmarks=fillseq", "--num=1000"])
        .arg(format!("--db={}", db.display()))
        .args(extra)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Opens the database in `dir`. (Processes the other tests spawn meanwhile
/// do not inherit its lock: batchkv's LOCK is a per-process record lock.)
fn open(dir: &Path) -> Db {
    Db::open(dir, Options::default()).unwrap()
}

fn make_db(dir: &Path) {
    let db = open(dir);
    db.put(b"user-key", b"precious").unwrap();
    db.flush().unwrap();
    db.put(b"wal-key", b"also precious").unwrap();
    db.close().unwrap();
}

fn read_user_key(dir: &Path) -> Option<Vec<u8>> {
    let db = open(dir);
    let v = db.get(b"user-key").unwrap();
    db.close().unwrap();
    v
}

#[test]
fn a_directory_with_user_files_is_refused_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("thesis.tex"), "years of work").unwrap();
    std::fs::create_dir(dir.join("figures")).unwrap();

    let out = bench(&dir, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("thesis.tex"),
        "names the files: {}",
        text(&out)
    );
    assert!(
        stderr.contains(&dir.display().to_string()),
        "names the dir: {}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("thesis.tex")).unwrap(),
        "years of work"
    );
    assert!(dir.join("figures").is_dir());

    // Not even --destroy_db deletes a directory that is not a database.
    let out = bench(&dir, &["--destroy_db"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        names(&dir),
        BTreeSet::from(["thesis.tex".into(), "figures".into()])
    );
}

#[test]
fn missing_and_empty_directories_are_used() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("a").join("new");
    let out = bench(&missing, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(missing.join("CURRENT").exists());

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = bench(&empty, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(empty.join("CURRENT").exists());
}

#[test]
fn an_existing_database_is_refused_without_destroy_db() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let before = names(&dir);

    let out = bench(&dir, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--destroy_db") && stderr.contains("--use_existing_db"),
        "says how to proceed: {}",
        text(&out)
    );
    assert_eq!(names(&dir), before);
    assert_eq!(read_user_key(&dir).as_deref(), Some(&b"precious"[..]));

    // --use_existing_db opens it and keeps the data.
    let out = bench(&dir, &["--use_existing_db"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(read_user_key(&dir).as_deref(), Some(&b"precious"[..]));
}

#[test]
fn destroy_db_fails_on_a_database_another_process_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let held = open(&dir);
    // After the open's recovery (which writes a table and a new MANIFEST).
    let before = names(&dir);
    let sizes: Vec<u64> = before
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .collect();

    let out = bench(&dir, &["--destroy_db"]);
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in use") && stderr.contains("LOCK"),
        "says the database is locked: {}",
        text(&out)
    );
    assert_eq!(names(&dir), before, "nothing deleted");
    let after: Vec<u64> = before
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .collect();
    assert_eq!(after, sizes, "nothing truncated");
    assert_eq!(
        held.get(b"user-key").unwrap().as_deref(),
        Some(&b"precious"[..])
    );
    held.close().unwrap();
    assert_eq!(read_user_key(&dir).as_deref(), Some(&b"precious"[..]));
}

#[test]
fn destroy_db_deletes_database_files_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    // batchkv's salvage directory is its own: kept, and no obstacle.
    std::fs::create_dir(dir.join("lost")).unwrap();
    std::fs::write(dir.join("lost").join("000003.log"), "salvage").unwrap();

    let out = bench(&dir, &["--destroy_db"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("lost").join("000003.log")).unwrap(),
        "salvage"
    );
    // The old database is gone: bench started a fresh one in its place.
    assert_eq!(read_user_key(&dir), None);
}

/// batchkv creates a database only in an empty directory, so with foreign
/// files beside the database `--destroy_db` refuses before deleting.
#[test]
fn destroy_db_refuses_a_database_with_foreign_files_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    std::fs::write(dir.join("README.txt"), "keep me").unwrap();
    std::fs::write(dir.join("notes.log"), "not a WAL").unwrap();
    std::fs::create_dir(dir.join("backup")).unwrap();
    std::fs::write(dir.join("backup").join("000001.sst"), "mine").unwrap();
    let before = names(&dir);

    let out = bench(&dir, &["--destroy_db"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("README.txt"),
        "{}",
        text(&out)
    );
    assert_eq!(names(&dir), before, "nothing deleted");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.log")).unwrap(),
        "not a WAL"
    );
    assert_eq!(read_user_key(&dir).as_deref(), Some(&b"precious"[..]));
}
