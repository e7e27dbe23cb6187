//! The data commands (`put`, `get`, `delete`, `scan`) as a user meets
//! them: read-only commands never create a database, a path that is a file
//! is named as such, keys and values may be binary (hex, stdin, a file,
//! non-UTF-8 arguments), and output is escaped unless `--raw` is given.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use common::{batchkv, batchkv_stdin, ok, show};

/// `--db DIR` followed by `args`.
fn on(dir: &Path, args: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--db".into(), dir.into()];
    v.extend(args.iter().map(OsString::from));
    v
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn read_only_commands_never_create_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let typo = tmp.path().join("typo");
    let reads: [&[&str]; 4] = [
        &["get", "k"],
        &["scan"],
        &["scan", "--count"],
        &["get", "--hex", "6b"],
    ];
    for cmd in reads {
        let out = batchkv(&on(&typo, cmd));
        assert!(!out.status.success(), "{cmd:?} succeeded: {}", show(&out));
        assert!(
            stderr(&out).contains(&format!("no database at {}", typo.display())),
            "{cmd:?}: {}",
            show(&out)
        );
        assert!(!typo.exists(), "{cmd:?} created {}", typo.display());
    }
    // An existing empty directory is no database either, and stays empty.
    std::fs::create_dir(&typo).unwrap();
    let out = batchkv(&on(&typo, &["get", "k"]));
    assert!(!out.status.success(), "{}", show(&out));
    assert!(stderr(&out).contains("no database at"), "{}", show(&out));
    assert_eq!(
        std::fs::read_dir(&typo).unwrap().count(),
        0,
        "files created in an empty directory"
    );
    // A write command still creates the database, and reads then work.
    ok(batchkv(&on(&typo, &["put", "k", "v"])));
    assert_eq!(ok(batchkv(&on(&typo, &["get", "k"]))).stdout, b"v\n");
}

#[test]
fn a_db_path_that_is_a_file_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, b"not a database").unwrap();
    let cmds: [&[&str]; 4] = [
        &["put", "k", "v"],
        &["get", "k"],
        &["scan"],
        &["delete", "k"],
    ];
    for cmd in cmds {
        let out = batchkv(&on(&file, cmd));
        assert!(!out.status.success(), "{cmd:?}: {}", show(&out));
        assert!(
            stderr(&out).contains(&format!(
                "{} is a file, not a database directory",
                file.display()
            )),
            "{cmd:?}: {}",
            show(&out)
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a database");
}

#[test]
fn hex_keys_and_values_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(batchkv(&on(&db, &["put", "--hex", "00ff0a", "09000D"])));
    ok(batchkv(&on(&db, &["put", "--hex", "61", ""])));
    assert_eq!(
        ok(batchkv(&on(&db, &["get", "--hex", "00ff0a"]))).stdout,
        b"09000d\n"
    );
    assert_eq!(ok(batchkv(&on(&db, &["get", "--hex", "61"]))).stdout, b"\n");
    assert_eq!(
        ok(batchkv(&on(&db, &["scan", "--hex"]))).stdout,
        b"00ff0a\t09000d\n61\t\n"
    );
    assert_eq!(
        ok(batchkv(&on(&db, &["scan", "--hex", "--from", "01"]))).stdout,
        b"61\t\n"
    );
    ok(batchkv(&on(&db, &["delete", "--hex", "00ff0a"])));
    assert_eq!(ok(batchkv(&on(&db, &["scan", "--hex"]))).stdout, b"61\t\n");
    for bad in ["6", "zz", "0x61"] {
        let out = batchkv(&on(&db, &["get", "--hex", bad]));
        assert!(!out.status.success(), "{bad}: {}", show(&out));
        assert!(stderr(&out).contains("hex"), "{bad}: {}", show(&out));
    }
}

#[test]
fn values_from_stdin_and_files_and_a_literal_dash() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // 200 KB of every byte value: beyond what one argument may hold.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 256) as u8).collect();
    ok(batchkv_stdin(&on(&db, &["put", "big", "--stdin"]), &big));
    assert!(ok(batchkv(&on(&db, &["get", "--raw", "big"]))).stdout == big);

    let file = tmp.path().join("value.bin");
    let from_file: Vec<u8> = big.iter().rev().copied().collect();
    std::fs::write(&file, &from_file).unwrap();
    let mut args = on(&db, &["put", "f", "--value-file"]);
    args.push(file.clone().into());
    ok(batchkv(&args));
    assert!(ok(batchkv(&on(&db, &["get", "--raw", "f"]))).stdout == from_file);

    // "-" is an ordinary value: stdin is read only with --stdin.
    ok(batchkv_stdin(&on(&db, &["put", "dash", "-"]), b"ignored"));
    assert_eq!(ok(batchkv(&on(&db, &["get", "dash"]))).stdout, b"-\n");

    // Exactly one source of the value.
    let out = batchkv_stdin(&on(&db, &["put", "k", "v", "--stdin"]), b"x");
    assert!(!out.status.success(), "{}", show(&out));
    let out = batchkv(&on(&db, &["put", "k"]));
    assert!(!out.status.success(), "{}", show(&out));
}

#[test]
fn non_utf8_arguments_are_taken_as_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let key = OsString::from_vec(vec![b'k', 0x80, 0xff]);
    let value = OsString::from_vec(vec![0xfe, b'v']);
    let mut args = on(&db, &["put"]);
    args.extend([key.clone(), value]);
    ok(batchkv(&args));
    assert_eq!(
        ok(batchkv(&on(&db, &["get", "--hex", "6b80ff"]))).stdout,
        b"fe76\n"
    );
    let mut args = on(&db, &["get", "--raw"]);
    args.push(key);
    assert_eq!(ok(batchkv(&args)).stdout, [0xfe, b'v']);
    assert_eq!(
        ok(batchkv(&on(&db, &["scan"]))).stdout,
        b"k\\x80\\xff\t\\xfev\n"
    );
    // Bounds are bytes too: `k\x90` sorts after the key.
    let mut args = on(&db, &["scan", "--from"]);
    args.push(OsString::from_vec(vec![b'k', 0x90]));
    assert_eq!(ok(batchkv(&args)).stdout, b"");
    let mut args = on(&db, &["scan", "--to"]);
    args.push(OsString::from_vec(vec![b'k', 0x90]));
    assert_eq!(ok(batchkv(&args)).stdout, b"k\\x80\\xff\t\\xfev\n");
}

#[test]
fn scan_and_get_escape_by_default_and_raw_prints_the_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let key = "a\tb\nc";
    let value = "\x1b[31mred\\";
    ok(batchkv(&on(&db, &["put", key, value])));
    ok(batchkv(&on(&db, &["put", "plain", "hi"])));
    let out = ok(batchkv(&on(&db, &["scan"])));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a\\x09b\\x0ac\t\\x1b[31mred\\\\\nplain\thi\n"
    );
    assert!(
        !out.stdout.contains(&0x1b),
        "an escape code reached the terminal"
    );
    assert_eq!(
        ok(batchkv(&on(&db, &["get", key]))).stdout,
        b"\\x1b[31mred\\\\\n"
    );
    assert_eq!(
        ok(batchkv(&on(&db, &["scan", "--raw"]))).stdout,
        format!("{key}\t{value}\nplain\thi\n").as_bytes()
    );
    // --raw prints the value's bytes exactly, nothing added.
    assert_eq!(
        ok(batchkv(&on(&db, &["get", "--raw", key]))).stdout,
        value.as_bytes()
    );
    assert_eq!(ok(batchkv(&on(&db, &["scan", "--count"]))).stdout, b"2\n");
}
