//! Running the `batchkv` binary in tests: data commands ([`batchkv`],
//! [`batchkv_stdin`]) and `batchkv serve` processes ([`serve`], [`wait`]).
#![allow(dead_code, reason = "each test file uses part of these helpers")]

use std::ffi::OsStr;
use std::io::Write;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// A `batchkv serve` process, killed when dropped (so that a failing test
/// leaves no server behind).
pub struct Served {
    pub child: Child,
    pub port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `batchkv serve --port 0 --dir DIR ARGS...`; its port is read from
/// the "listening on" line on stderr (lines logged before it, such as a
/// recovery report, are skipped).
pub fn serve(dir: &std::path::Path, args: &[&str]) -> Served {
    serve_with(dir, args, |_| {})
}

/// [`serve`], with the command changed by `f` before it is spawned.
pub fn serve_with(dir: &std::path::Path, args: &[&str], f: impl FnOnce(&mut Command)) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_batchkv"));
    cmd.args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    f(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut seen = String::new();
    while !line.contains("listening on") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            panic!("serve exited before listening; stderr:\n{seen}");
        }
        seen.push_str(&line);
    }
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    // Keep the pipe drained so later log lines never block the server.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Served { child, port }
}

/// Waits (at most 20 s) for `child` to exit.
pub fn wait(child: &mut Child) -> ExitStatus {
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

/// Runs `batchkv ARGS...` to completion (stdin empty).
pub fn batchkv<A: AsRef<OsStr>>(args: &[A]) -> Output {
    batchkv_stdin(args, b"")
}

/// Runs `batchkv ARGS...` with `input` on its stdin.
pub fn batchkv_stdin<A: AsRef<OsStr>>(args: &[A], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A writer thread: a command that does not read stdin must not block
    // the test on a full pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The text of `out`'s stdout and stderr, for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Panics (showing the output) unless the command succeeded.
pub fn ok(out: Output) -> Output {
    assert!(out.status.success(), "command failed: {}", show(&out));
    out
}
