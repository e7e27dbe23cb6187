//! A child process writing synced batches is killed with SIGKILL; after
//! reopening, every acknowledged write is present, no batch is partial, and a
//! sequential writer leaves exactly a contiguous prefix of its keys.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use batchkv::{Db, Options, WriteBatch, WriteOptions};
use rand::Rng;

const CHILD_DIR: &str = "BATCHKV_KILL9_DIR";
const CHILD_MODE: &str = "BATCHKV_KILL9_MODE";
const KEYS_PER_BATCH: u64 = 10;

fn batch_key(batch: u64, j: u64) -> Vec<u8> {
    format!("b{batch:08}-{j}").into_bytes()
}

/// The child: writes until killed, printing `ACK n` after each synced write
/// returns. Run only by the parent test below.
#[test]
#[ignore = "child process of kill9 tests"]
fn kill9_child_writer() {
    let dir = std::env::var(CHILD_DIR).expect("run by the kill9 parent test");
    let mode = std::env::var(CHILD_MODE).expect("run by the kill9 parent test");
    let opts = Options {
        write_buffer_size: 256 * 1024,
        ..common::opts()
    };
    let db = Db::open(&dir, opts).unwrap();
    let start = db.stats().last_sequence; // resume numbering after earlier cycles
    let sync = WriteOptions {
        sync: true,
        disable_wal: false,
    };
    let mut out = std::io::stdout().lock();
    let first = if mode == "batches" {
        start / KEYS_PER_BATCH
    } else {
        start
    };
    for n in first.. {
        if mode == "batches" {
            let mut b = WriteBatch::new();
            for j in 0..KEYS_PER_BATCH {
                b.put(batch_key(n, j), vec![b'x'; 200 + (n % 7) as usize * 100]);
            }
            db.write(&sync, b).unwrap();
        } else {
            let mut b = WriteBatch::new();
            b.put(common::key(n), n.to_string());
            db.write(&sync, b).unwrap();
        }
        writeln!(out, "ACK {n}").unwrap();
        out.flush().unwrap();
    }
}

/// Starts the child, lets it acknowledge `acks` writes, kills it; returns
/// the last acknowledged number.
fn run_and_kill(dir: &std::path::Path, mode: &str, acks: u64) -> Option<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill9_child_writer",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_MODE, mode)
        .env(common::MEMTABLE_ENV, common::memtable())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut last = None;
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("ACK ") {
            last = Some(n.parse::<u64>().unwrap());
            seen += 1;
            if seen >= acks {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    last
}

#[test]
fn acknowledged_synced_batches_survive_kill9_and_batches_are_atomic() {
    common::for_each_memtable(|_| {
        acknowledged_synced_batches_survive_kill9_and_batches_are_atomic_with()
    });
}

fn acknowledged_synced_batches_survive_kill9_and_batches_are_atomic_with() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut last_acked = None;
    for _cycle in 0..3 {
        if let Some(n) = run_and_kill(dir.path(), "batches", rng.random_range(20..200)) {
            last_acked = Some(n);
        }
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let last = last_acked.expect("the child acknowledged writes");
        let mut n = 0;
        loop {
            let present: Vec<bool> = (0..KEYS_PER_BATCH)
                .map(|j| db.get(batch_key(n, j)).unwrap().is_some())
                .collect();
            if present.iter().all(|p| !p) {
                break;
            }
            assert!(
                present.iter().all(|p| *p),
                "batch {n} is partially present: {present:?}"
            );
            n += 1;
        }
        assert!(
            n > last,
            "acknowledged batch {last} lost; only 0..{n} present"
        );
        // Nothing beyond the contiguous prefix either.
        for later in n..n + 50 {
            assert_eq!(
                db.get(batch_key(later, 0)).unwrap(),
                None,
                "hole before batch {later}"
            );
        }
        db.close().unwrap();
    }
}

#[test]
fn sequential_synced_writer_leaves_a_contiguous_prefix() {
    common::for_each_memtable(|_| sequential_synced_writer_leaves_a_contiguous_prefix_with());
}

fn sequential_synced_writer_leaves_a_contiguous_prefix_with() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let last = run_and_kill(dir.path(), "sequential", rng.random_range(100..600)).unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let keys = common::scan_all(&db);
    assert!(
        keys.len() as u64 > last,
        "acknowledged key {last} lost: {} keys",
        keys.len()
    );
    for (i, (k, v)) in keys.iter().enumerate() {
        assert_eq!(k, &common::key(i as u64), "not a contiguous prefix at {i}");
        assert_eq!(v, i.to_string().as_bytes());
    }
}
