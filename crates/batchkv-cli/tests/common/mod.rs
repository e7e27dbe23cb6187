//! Starting and stopping `batchkv serve` processes for the CLI's server
//! tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
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
/// the "listening on" line on stderr.
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
    // Log lines (warnings at start) may come before "listening on".
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("serve exited before listening");
        }
    }
    // Keep draining stderr so that logging never blocks the server.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
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
