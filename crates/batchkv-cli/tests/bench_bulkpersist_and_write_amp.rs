//! `bench`'s bulkpersist workload and its write-amplification report: the
//! persists really reach SST files (the database reopens with every key),
//! and the JSON reports file bytes ≥ user bytes (the WAL alone writes every
//! key and value once).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

use batchkv::{Db, Options};

#[test]
fn bulkpersist_writes_flushes_and_reports_write_amplification() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let json = dir.path().join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_batchkv"))
        .args([
            "bench",
            "--num=2000",
            "--persist_rounds=3",
            "--memtablerep=vector",
        ])
        .args([
            "--benchmarks=bulkpersist",
            "--key_size=16",
            "--value_size=100",
        ])
        .arg(format!("--db={}", db_dir.display()))
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("3 operations; (2000 entries per persist"),
        "{stdout}"
    );
    assert!(stdout.contains("write-amp"), "{stdout}");

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let b = &doc["benchmarks"][0];
    assert_eq!(b["ops"], 3);
    let user = b["cumulative_user_bytes"].as_u64().unwrap();
    assert_eq!(user, 3 * 2000 * (16 + 100));
    let files = b["cumulative_file_bytes"].as_u64().unwrap();
    assert!(files >= user, "files {files} < user {user}");

    // Each persist flushed: the data is in SSTs, and reopening finds the
    // keys of every round (round r writes keys in [r*2000, (r+1)*2000)).
    let ssts = std::fs::read_dir(&db_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert!(ssts >= 1, "no SST after bulkpersist");
    let db = Db::open(&db_dir, Options::default()).unwrap();
    let mut found_per_round = [0; 3];
    for (round, found) in found_per_round.iter_mut().enumerate() {
        for i in 0..2000u64 {
            let key = format!("{:016}", round as u64 * 2000 + i);
            if db.get(key.as_bytes()).unwrap().is_some() {
                *found += 1;
            }
        }
    }
    // 2000 random draws from 2000 keys hit ~63% of them.
    assert!(
        found_per_round.iter().all(|&f| f > 1000),
        "{found_per_round:?}"
    );
}
