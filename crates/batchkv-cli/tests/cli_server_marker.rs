//! The CLI and `batchkv serve` do not read each other's databases as
//! empty: the data commands refuse a directory written by the server
//! (unless `--force`), and `serve` refuses plain CLI/library data, while a
//! server database from before the marker still opens.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{batchkv, ok, serve, show, wait};

fn on(dir: &Path, args: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--db".into(), dir.into()];
    v.extend(args.iter().map(OsString::from));
    v
}

/// Sends inline commands and reads until `expect` bytes arrived.
fn talk(port: u16, send: &str, expect: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(send.as_bytes()).unwrap();
    let mut got = vec![0u8; expect.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(String::from_utf8_lossy(&got), expect);
}

/// Runs `batchkv serve` on `dir` expecting it to refuse: returns its
/// stderr. A server that starts instead is killed, and the test fails.
fn serve_refused(dir: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("batchkv serve accepted {} and kept running", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success(), "serve exited 0 on refusal: {err}");
    err
}

#[test]
fn data_commands_refuse_a_server_directory_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("served");
    let mut s = serve(&dir, &[]);
    talk(s.port, "SET k v\r\nSHUTDOWN\r\n", "+OK\r\n");
    assert!(wait(&mut s.child).success());

    let cmds: [&[&str]; 4] = [
        &["get", "k"],
        &["scan"],
        &["put", "x", "y"],
        &["delete", "k"],
    ];
    for cmd in cmds {
        let out = batchkv(&on(&dir, cmd));
        assert!(!out.status.success(), "{cmd:?}: {}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("written by `batchkv serve`"),
            "{cmd:?}: {}",
            show(&out)
        );
        assert!(err.contains("--force"), "{cmd:?}: {}", show(&out));
    }
    // --force shows the raw engine keys: the database byte and the value tag.
    let out = ok(batchkv(&on(&dir, &["scan", "--force"])));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\x00k\t\\x00v\n"), "{text}");

    // The server still serves its directory.
    let mut s = serve(&dir, &[]);
    talk(s.port, "GET k\r\nSHUTDOWN\r\n", "$1\r\nv\r\n");
    assert!(wait(&mut s.child).success());
}

#[test]
fn serve_refuses_a_directory_of_plain_cli_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cli");
    ok(batchkv(&on(&dir, &["put", "hello", "world"])));
    let err = serve_refused(&dir);
    assert!(err.contains("not written by `batchkv serve`"), "{err}");
    assert!(
        err.contains("hello"),
        "the message names a foreign key: {err}"
    );
    // Nothing was written to it: the CLI still reads it as before.
    assert_eq!(ok(batchkv(&on(&dir, &["get", "hello"]))).stdout, b"world\n");
}

#[test]
fn serve_opens_a_server_database_from_before_the_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old-server");
    {
        // What a server before the marker left: a string in database 0
        // (key `00 k`, value tag 00) and a hash's metadata and element.
        let db = batchkv::Db::open(&dir, batchkv::Options::default()).unwrap();
        db.put(b"\x00k", b"\x00hello").unwrap();
        let mut meta = vec![2u8, 1];
        meta.extend_from_slice(&0u64.to_le_bytes());
        meta.extend_from_slice(&7u64.to_le_bytes());
        meta.extend_from_slice(&1u64.to_le_bytes());
        db.put(b"\x00h", &meta).unwrap();
        let mut elem = vec![0x12u8, 0, 0, 0, 0, 1, b'h'];
        elem.extend_from_slice(&7u64.to_be_bytes());
        elem.push(b'f');
        db.put(&elem, b"fv").unwrap();
        db.close().unwrap();
    }
    let mut s = serve(&dir, &[]);
    talk(
        s.port,
        "GET k\r\nHGET h f\r\nSHUTDOWN\r\n",
        "$5\r\nhello\r\n$2\r\nfv\r\n",
    );
    assert!(wait(&mut s.child).success());
    // The server marked it: the CLI now knows whose it is.
    let out = batchkv(&on(&dir, &["get", "k"]));
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("written by `batchkv serve`"),
        "{}",
        show(&out)
    );
}
