//! SIGINT or SIGTERM to a running `batchkv bench` removes the temporary
//! directories it created (its own database, the per-run directories of
//! `--engines`), stops the `--engines` child processes, and exits with
//! 128 + the signal number.
//!
//! Regression: a bench interrupted with Ctrl-C left its temporary database
//! behind (the default signal action skips destructors).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Starts a long bench whose temporary directories go under `tmpdir`.
fn start(tmpdir: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args([
            "bench",
            "--benchmarks=fillrandom,readrandom",
            "--num=500000000",
            "--write_buffer_size=1048576",
        ])
        .args(extra)
        .env("TMPDIR", tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until some directory under `tmpdir` (searched `depth` levels deep)
/// holds a database with an SST file, so the bench is mid-run.
fn wait_for_database(tmpdir: &Path, depth: usize, child: &mut Child) {
    fn has_sst(dir: &Path, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            let p = e.path();
            if p.is_dir() {
                depth > 0 && has_sst(&p, depth - 1)
            } else {
                p.extension().is_some_and(|x| x == "sst")
            }
        })
    }
    let began = Instant::now();
    while !has_sst(tmpdir, depth) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("bench exited early with {status}");
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no database appeared under {}",
            tmpdir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

fn wait_with_timeout(child: &mut Child, limit: Duration) -> ExitStatus {
    let began = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if began.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bench did not exit within {limit:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

#[test]
fn sigint_removes_the_temporary_database() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start(tmp.path(), &[]);
    wait_for_database(tmp.path(), 1, &mut child);
    signal(&child, "INT");
    let status = wait_with_timeout(&mut child, Duration::from_secs(30));
    assert!(
        leftovers(tmp.path()).is_empty(),
        "left behind: {:?} (bench exited with {status})",
        leftovers(tmp.path())
    );
    assert_eq!(status.code(), Some(130), "{status}");
}

#[test]
fn sigterm_to_engines_stops_the_runs_and_removes_their_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start(tmp.path(), &["--engines=batchkv", "--repeat=2"]);
    // The run's database sits in <tmp>/batchkv-compare-*/batchkv-1/.
    wait_for_database(tmp.path(), 2, &mut child);
    let needle = tmp.path().display().to_string();
    assert!(!processes_mentioning(&needle).is_empty());
    signal(&child, "TERM");
    let status = wait_with_timeout(&mut child, Duration::from_secs(30));
    // The run's own process is gone too (give the kernel a moment to reap).
    let began = Instant::now();
    while !processes_mentioning(&needle).is_empty() && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive = processes_mentioning(&needle);
    for p in &alive {
        // Do not leave a runaway benchmark behind when the test fails.
        let pid = p.split(':').next().unwrap_or_default();
        let _ = Command::new("kill").args(["-KILL", pid]).status();
    }
    assert!(
        alive.is_empty(),
        "runs still alive: {alive:?} (bench exited with {status})"
    );
    assert!(
        leftovers(tmp.path()).is_empty(),
        "left behind: {:?} (bench exited with {status})",
        leftovers(tmp.path())
    );
    assert_eq!(status.code(), Some(143), "{status}");
}
