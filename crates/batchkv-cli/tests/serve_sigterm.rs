//! `batchkv serve` stops on SIGTERM after making every acknowledged write
//! durable, and a restarted server sees them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::{serve, wait};

/// Sends inline commands and reads until `expect` bytes arrived.
fn talk(port: u16, send: &str, expect: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(send.as_bytes()).unwrap();
    let mut got = vec![0u8; expect.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(String::from_utf8_lossy(&got), expect);
}

#[test]
fn sigterm_stops_cleanly_and_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(dir.path(), &[]);
    talk(
        s.port,
        "SET a 1\r\nINCR n\r\nSELECT 3\r\nSET b 2\r\n",
        "+OK\r\n:1\r\n+OK\r\n+OK\r\n",
    );
    let ok = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(wait(&mut s.child).success());
    let mut s = serve(dir.path(), &[]);
    talk(
        s.port,
        "GET a\r\nGET n\r\nSELECT 3\r\nGET b\r\nSHUTDOWN\r\n",
        "$1\r\n1\r\n$1\r\n1\r\n+OK\r\n$1\r\n2\r\n",
    );
    assert!(wait(&mut s.child).success(), "SHUTDOWN exits with status 0");
}
