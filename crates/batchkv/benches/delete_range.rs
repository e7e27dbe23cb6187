//! What a range delete costs: `delete_range` over N keys vs N point deletes
//! (in batches of 1,000), and the point-read throughput of `get` with no
//! range tombstone, with one in the memtable, and with one in an SST.
//!
//! `cargo bench -p batchkv --bench delete_range` (N = 1,000,000 by default;
//! `BATCHKV_DR_KEYS` sets it). Each figure is the median of 3 runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark's setup fails by panicking"
)]

use std::time::{Duration, Instant};

use batchkv::{Db, Options, WriteBatch, WriteOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:010}").into_bytes()
}

fn opts() -> Options {
    Options {
        write_buffer_size: 64 << 20,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Loads keys `0..n`, flushes, and returns the open database.
fn loaded(dir: &std::path::Path, n: u64) -> Db {
    let db = Db::open(dir, opts()).unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(i), b"v");
        }
        db.write(&WriteOptions::default(), b).unwrap();
    }
    db.flush().unwrap();
    db
}

/// Gets per second over `reads` pseudo-random keys of `0..n`.
fn gets_per_sec(db: &Db, n: u64, reads: u64) -> f64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut found = 0u64;
    let t = Instant::now();
    for _ in 0..reads {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if db.get(key(x % n)).unwrap().is_some() {
            found += 1;
        }
    }
    std::hint::black_box(found);
    reads as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let n: u64 = std::env::var("BATCHKV_DR_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);

    let mut range = Vec::new();
    let mut points = Vec::new();
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let db = loaded(dir.path(), n);
        let t = Instant::now();
        db.delete_range(&WriteOptions::default(), key(0), key(n))
            .unwrap();
        range.push(t.elapsed());
        assert_eq!(db.get(key(n / 2)).unwrap(), None);
        drop(db);

        let dir = tempfile::tempdir().unwrap();
        let db = loaded(dir.path(), n);
        let t = Instant::now();
        for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
            let mut b = WriteBatch::new();
            for &i in chunk {
                b.delete(key(i));
            }
            db.write(&WriteOptions::default(), b).unwrap();
        }
        points.push(t.elapsed());
        assert_eq!(db.get(key(n / 2)).unwrap(), None);
    }
    println!(
        "delete {n} keys: delete_range {:?}, point deletes (batches of 1000) {:?}",
        median(range),
        median(points)
    );

    // Reads: 1/10 of the key space under one tombstone, 200k random gets.
    let reads = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let db = loaded(dir.path(), n);
    let rate = |db: &Db| {
        let r: Vec<f64> = (0..3).map(|_| gets_per_sec(db, n, reads)).collect();
        let mut r = r;
        r.sort_by(f64::total_cmp);
        r[1]
    };
    let none = rate(&db);
    db.delete_range(&WriteOptions::default(), key(n / 2), key(n / 2 + n / 10))
        .unwrap();
    let in_mem = rate(&db);
    db.flush().unwrap();
    let in_sst = rate(&db);
    println!(
        "get over {n} keys ({reads} random reads, median of 3): \
         no tombstone {:.0}/s, one tombstone in the memtable {:.0}/s, one in an SST {:.0}/s",
        none, in_mem, in_sst
    );
}
