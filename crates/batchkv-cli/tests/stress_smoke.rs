//! `batchkv stress` and `batchkv crashtest` run end to end, and a value the
//! oracle never saw written makes `stress` fail with exit status 1.

use std::process::Command;

fn batchkv() -> Command {
    Command::new(env!("CARGO_BIN_EXE_batchkv"))
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
            "--seed",
            "5",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("stress: ok seed=5"), "{stdout}");

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
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("crashtest: ok seed=11: 3 kill cycles"),
        "{stdout}"
    );
}
