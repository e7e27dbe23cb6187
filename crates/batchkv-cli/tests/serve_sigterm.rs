//! `batchkv serve` stops on SIGTERM after making every acknowledged write
//! durable, and a restarted server sees them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `batchkv serve --port 0` on `dir`; returns the child and its port
/// (read from the "listening on" line).
fn serve(dir: &std::path::Path) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    (child, port)
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

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_stops_cleanly_and_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = serve(dir.path());
    talk(
        port,
        "SET a 1\r\nINCR n\r\nSELECT 3\r\nSET b 2\r\n",
        "+OK\r\n:1\r\n+OK\r\n+OK\r\n",
    );
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(wait(&mut child).success());
    let (mut child, port) = serve(dir.path());
    talk(
        port,
        "GET a\r\nGET n\r\nSELECT 3\r\nGET b\r\nSHUTDOWN\r\n",
        "$1\r\n1\r\n$1\r\n1\r\n+OK\r\n$1\r\n2\r\n",
    );
    assert!(wait(&mut child).success(), "SHUTDOWN exits with status 0");
}
