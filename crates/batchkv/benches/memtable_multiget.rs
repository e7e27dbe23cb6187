//! Skip-list memtable batch-lookup benchmark: keys/s of `multi_get` per
//! strategy and batch size, and of `get` one key at a time.
//!
//! Run: `cargo bench -p batchkv --features bench-internals --bench memtable_multiget`.
//! Environment: `BATCHKV_BENCH_KEYS` (entries, default 2,000,000),
//! `BATCHKV_BENCH_LOOKUPS` (lookups per timed round, default 200,000),
//! `BATCHKV_BENCH_ROUNDS` (rounds per row, default 7),
//! `BATCHKV_BENCH_PARANOID` (0 to skip the paranoid rows),
//! `BATCHKV_BENCH_ROWS` (comma-separated row labels to run, default all),
//! `BATCHKV_BENCH_BATCHES` (comma-separated batch sizes, default
//! 1,2,8,32,64,256) — the last two let callgrind count one row at a time.
//!
//! Fill: 16-byte zero-padded decimal keys, 100-byte values, random insertion
//! order. Batches: random existing keys, sorted and deduplicated (as the Db
//! passes them). Rounds of all rows are interleaved (A B C D A B C D …) so
//! machine noise spreads evenly; the median round is reported.

use std::hint::black_box;
use std::time::Instant;

use batchkv::{BatchLookup, EntryRef, MemTable, SkipListMemTable, SkipListOptions, ValueType};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn key(i: usize) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn fill(n: usize, paranoid: bool) -> SkipListMemTable {
    let mt = SkipListMemTable::new(SkipListOptions {
        paranoid_checks: paranoid,
        ..SkipListOptions::default()
    });
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(42));
    let value = [b'v'; 100];
    for (s, &i) in order.iter().enumerate() {
        mt.insert(s as u64 + 1, ValueType::Value, &key(i), &value)
            .expect("insert");
    }
    mt
}

/// Sorted, distinct random batches covering `lookups` keys in total.
fn batches(n: usize, batch: usize, lookups: usize, rng: &mut StdRng) -> Vec<Vec<Vec<u8>>> {
    (0..lookups.div_ceil(batch))
        .map(|_| {
            let mut idx: Vec<usize> = (0..batch).map(|_| rng.random_range(0..n)).collect();
            idx.sort_unstable();
            idx.dedup();
            idx.into_iter().map(key).collect()
        })
        .collect()
}

/// One timed round: keys/s.
fn run(mt: &SkipListMemTable, bs: &[Vec<&[u8]>], strategy: Option<BatchLookup>) -> f64 {
    let mut hits = 0usize;
    let mut keys = 0usize;
    let t = Instant::now();
    for b in bs {
        keys += b.len();
        match strategy {
            Some(s) => mt
                .multi_get(b, u64::MAX >> 8, s, &mut |_, e| {
                    if let EntryRef::Value(v) = e {
                        hits += v.len();
                    }
                })
                .expect("multi_get"),
            None => {
                for k in b {
                    if let Some(EntryRef::Value(v)) = mt.get(k, u64::MAX >> 8).expect("get") {
                        hits += v.len();
                    }
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(hits, keys * 100, "every key must be found");
    black_box(hits);
    keys as f64 / secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let n = env("BATCHKV_BENCH_KEYS", 2_000_000);
    let lookups = env("BATCHKV_BENCH_LOOKUPS", 200_000);
    let rounds = env("BATCHKV_BENCH_ROUNDS", 7);
    let with_paranoid = env("BATCHKV_BENCH_PARANOID", 1) != 0;

    let t = Instant::now();
    let mt = fill(n, false);
    println!(
        "filled {n} entries in {:.2} s ({:.0} MB arena)",
        t.elapsed().as_secs_f64(),
        mt.approximate_memory_usage() as f64 / 1e6
    );
    let paranoid = with_paranoid.then(|| fill(n, true));

    // (label, memtable, strategy); `None` = `get` one key at a time.
    let mut rows: Vec<(&str, &SkipListMemTable, Option<BatchLookup>)> = vec![
        ("per_key", &mt, Some(BatchLookup::PerKey)),
        ("finger", &mt, Some(BatchLookup::Finger)),
        ("bfs", &mt, Some(BatchLookup::Bfs)),
        ("auto", &mt, Some(BatchLookup::Auto)),
        ("get", &mt, None),
    ];
    if let Some(p) = &paranoid {
        rows.push(("per_key+paranoid", p, Some(BatchLookup::PerKey)));
        rows.push(("bfs+paranoid", p, Some(BatchLookup::Bfs)));
    }

    if let Ok(only) = std::env::var("BATCHKV_BENCH_ROWS") {
        let only: Vec<&str> = only.split(',').collect();
        rows.retain(|(label, _, _)| only.contains(label));
        if rows.is_empty() {
            return;
        }
    }
    let batch_sizes: Vec<usize> = std::env::var("BATCHKV_BENCH_BATCHES")
        .ok()
        .map(|v| v.split(',').filter_map(|b| b.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 8, 32, 64, 256]);

    let mut rng = StdRng::seed_from_u64(7);
    println!(
        "{:>5} {:>18} {:>12} {:>9}   (median of {rounds} rounds of ~{lookups} lookups)",
        "batch", "strategy", "Mkeys/s", "vs per_key"
    );
    for &batch in &batch_sizes {
        let owned = batches(n, batch, lookups, &mut rng);
        let bs: Vec<Vec<&[u8]>> = owned
            .iter()
            .map(|b| b.iter().map(|k| k.as_slice()).collect())
            .collect();
        let mut results = vec![Vec::new(); rows.len()];
        for _ in 0..rounds {
            for (r, (_, m, s)) in rows.iter().enumerate() {
                results[r].push(run(m, &bs, *s));
            }
        }
        let medians: Vec<f64> = results.into_iter().map(median).collect();
        for (r, (label, _, _)) in rows.iter().enumerate() {
            println!(
                "{batch:>5} {label:>18} {:>12.3} {:>9.2}",
                medians[r] / 1e6,
                medians[r] / medians[0] // row 0 is per_key unless filtered
            );
        }
    }
}
