//! `batchkv stress` and `batchkv crashtest` run end to end, and a value the
//! oracle never saw written makes `stress` fail with exit status 1.
//!
//! Clean closes after WAL-less writes once lost writes that raced a
//! `flush()` (issue 12, bug 3; the engine's deterministic regression test is
//! `wal_less_writes_survive_close.rs`); `clean_closes_keep_every_wal_less_write`
//! meets that race from the stress side.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

fn batchkv() -> Command {
    Command::new(env!("CARGO_BIN_EXE_batchkv"))
}

/// The stdout of a run that must have succeeded (else its output is shown).
fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn stress_passes_then_detects_a_value_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = batchkv()
        .args([
            "stress",
            "--duration",
            "1",
            "--keys",
            "500",
            // Seed 11: WAL-less writes, manual flushes and compact_range
            // calls racing the background work.
            "--seed",
            "11",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("stress: ok seed=11"), "{stdout}");
    // Transactions are part of the mix (their reads checked, their commits
    // recorded like batches).
    assert!(
        stdout.contains(" transactions,") && !stdout.contains(" 0 transactions,"),
        "{stdout}"
    );
    assert!(
        stdout.contains("workload: wal_less=500/1000 flush=5/1000 compact_range=3/1000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stress: closed cleanly; reopened: every acknowledged write present"),
        "{stdout}"
    );

    // Plant a value no stress write produced; the next run must catch it.
    let put = batchkv()
        .arg("--db")
        .arg(&db)
        .args(["put", "k00000007", "bogus"])
        .status()
        .unwrap();
    assert!(put.success());
    let out = batchkv()
        .args([
            "stress",
            "--duration",
            "1",
            "--keys",
            "500",
            "--seed",
            "6",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("MISMATCH key k00000007"), "{stderr}");
    assert!(stderr.contains("seed=6"), "{stderr}");
}

#[test]
fn crashtest_survives_kill_cycles() {
    let out = batchkv()
        .args([
            "crashtest",
            "--cycles",
            "3",
            "--keys",
            "2000",
            "--threads",
            "2",
        ])
        .args([
            "--min-kill-ms",
            "200",
            "--max-kill-ms",
            "700",
            "--seed",
            "11",
            // Kills only (see the module doc).
            "--clean-percent",
            "0",
        ])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("crashtest: ok seed=11: 3 kill cycles"),
        "{stdout}"
    );
}

/// Kill cycles with WAL-less writes: after a kill, keys whose WAL-less writes
/// no flush persisted may hold any state from their last durable one on,
/// and that is all they may hold.
#[test]
fn crashtest_kills_children_writing_without_the_wal() {
    let out = batchkv()
        .args([
            "crashtest",
            "--cycles",
            "4",
            "--keys",
            "1000",
            "--threads",
            "3",
        ])
        .args(["--min-kill-ms", "300", "--max-kill-ms", "800"])
        .args(["--seed", "3", "--clean-percent", "0"])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("crashtest: ok seed=3: 4 kill cycles"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("killed") && !l.contains(" 0 with unpersisted")),
        "no cycle was killed with WAL-less writes unpersisted: {stdout}"
    );
}

/// A clean close persists every acknowledged write, WAL-less ones too: the
/// stress run reopens and checks exactly, and crashtest checks again.
#[test]
fn clean_closes_keep_every_wal_less_write() {
    for seed in ["28", "30"] {
        let dir = tempfile::tempdir().unwrap();
        let out = batchkv()
            .args([
                "stress",
                "--duration",
                "2",
                "--keys",
                "2000",
                "--seed",
                seed,
            ])
            .arg("--db")
            .arg(dir.path().join("db"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("stress: closed cleanly"), "{stdout}");
    }
    let out = batchkv()
        .args([
            "crashtest",
            "--cycles",
            "6",
            "--keys",
            "2000",
            "--threads",
            "4",
        ])
        .args(["--seed", "12", "--clean-percent", "100"])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("closed cleanly"), "{stdout}");
}

/// `--column_families 3`: keys spread over three families (batches and
/// range deletes spanning them), checked by a stress run with WAL-less
/// writes, flushes and compactions, and by kill cycles (batches across
/// families all-or-nothing after each kill).
#[test]
fn column_families_stress_and_kill_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let out = batchkv()
        .args(["stress", "--duration", "2", "--keys", "1500"])
        .args(["--column_families", "3", "--seed", "11", "--db"])
        .arg(dir.path().join("db"))
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("column_families=3"), "{stdout}");
    assert!(stdout.contains("stress: ok seed=11"), "{stdout}");
    assert!(stdout.contains("stress: closed cleanly"), "{stdout}");
    let out = batchkv()
        .args(["crashtest", "--cycles", "3", "--keys", "2000"])
        .args(["--threads", "3", "--column_families", "3"])
        .args(["--min-kill-ms", "300", "--max-kill-ms", "800"])
        .args(["--seed", "3", "--clean-percent", "0"])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("crashtest: ok seed=3: 3 kill cycles"),
        "{stdout}"
    );
}
