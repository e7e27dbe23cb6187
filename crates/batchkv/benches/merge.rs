//! What merge operands cost and save:
//! 1. counter increments: `merge` (U64AddOperator) vs read-modify-write
//!    (`get` + `put`), `BATCHKV_MERGE_OPS` increments (default 1,000,000)
//!    spread over 10,000 keys, background flushes and compactions on;
//! 2. `get` of a key whose value is N operands deep (N = 0, 1, 10, 100;
//!    0 = a plain value, the fast path) in the memtable and in one SST.
//!
//! `cargo bench -p batchkv --bench merge`. Each figure is the median of 3
//! runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark's setup fails by panicking"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::merge_operators::U64AddOperator;
use batchkv::{Db, Options, WriteOptions};

const KEYS: u64 = 10_000;

fn key(i: u64) -> Vec<u8> {
    format!("counter{i:08}").into_bytes()
}

fn opts() -> Options {
    Options {
        merge_operator: Some(Arc::new(U64AddOperator)),
        write_buffer_size: 4 << 20,
        ..Options::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The key of increment `n` (a fixed pseudo-random spread).
fn target(n: u64) -> u64 {
    n.wrapping_mul(0x9e37_79b9_7f4a_7c15) % KEYS
}

fn increments(ops: u64, merge: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    let wo = WriteOptions::default();
    let t = Instant::now();
    for n in 0..ops {
        let k = key(target(n));
        if merge {
            db.merge(&wo, &k, U64AddOperator::encode(1)).unwrap();
        } else {
            let cur = db
                .get(&k)
                .unwrap()
                .and_then(|v| U64AddOperator::decode(&v))
                .unwrap_or(0);
            db.put(&k, U64AddOperator::encode(cur + 1)).unwrap();
        }
    }
    let took = t.elapsed();
    // Both ways count the same.
    let total: u64 = (0..KEYS)
        .map(|i| U64AddOperator::decode(&db.get(key(i)).unwrap().unwrap_or_default()).unwrap_or(0))
        .sum();
    assert_eq!(total, ops);
    took
}

/// Gets per second of keys with `depth` operands (0: a plain value).
fn deep_gets(depth: u64, flushed: bool) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 256 << 20,
            disable_auto_compactions: true,
            ..opts()
        },
    )
    .unwrap();
    let wo = WriteOptions::default();
    let n_keys = 1000u64;
    for i in 0..n_keys {
        db.put(key(i), U64AddOperator::encode(1)).unwrap();
    }
    for _ in 0..depth {
        for i in 0..n_keys {
            db.merge(&wo, key(i), U64AddOperator::encode(1)).unwrap();
        }
    }
    if flushed {
        db.flush().unwrap();
    }
    let reads = (200_000 / (depth + 1)).max(20_000);
    let t = Instant::now();
    for r in 0..reads {
        black_box(db.get(key(target(r) % n_keys)).unwrap());
    }
    reads as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let ops: u64 = std::env::var("BATCHKV_MERGE_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    for (name, merge) in [("merge", true), ("get+put", false)] {
        let d = median((0..3).map(|_| increments(ops, merge)).collect());
        println!(
            "{name:>8}: {ops} increments over {KEYS} keys in {d:.2?} = {:.0} k ops/s",
            ops as f64 / d.as_secs_f64() / 1e3
        );
    }
    for flushed in [false, true] {
        for depth in [0, 1, 10, 100] {
            let mut runs: Vec<f64> = (0..3).map(|_| deep_gets(depth, flushed)).collect();
            runs.sort_by(f64::total_cmp);
            let place = if flushed { "sst" } else { "memtable" };
            println!(
                "get, {depth:>3} operands in the {place:<8}: {:.0} k gets/s",
                runs[1] / 1e3
            );
        }
    }
}
