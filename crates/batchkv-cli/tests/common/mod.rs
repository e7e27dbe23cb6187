//! Starting and stopping `batchkv serve` processes for the CLI's server
//! tests.

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
/// the "listening on" line on stderr (lines logged before it, such as a
/// recovery report, are skipped).
pub fn serve(dir: &std::path::Path, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
