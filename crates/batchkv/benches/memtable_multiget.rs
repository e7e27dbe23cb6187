//! Skip-list memtable batch-lookup benchmark: keys/s of `multi_get` per
//! strategy and batch size, and of `get` one key at a time.
//!
//! Run: `cargo bench -p batchkv --features bench-internals --bench memtable_multiget`.
//! Environment: `BATCHKV_BENCH_KEYS` (entries, default 2,000,000),
//! `BATCHKV_BENCH_LOOKUPS` (lookups per timed round, default 200,000),
//! `BATCHKV_BENCH_ROUNDS` (rounds per row, default 7),
//! `BATCHKV_BENCH_PARANOID` (0 to skip the `+paranoid` rows and the
//! second fill they need; `bfs+checks` runs the checked search on the
//! first memtable and needs none),
//! `BATCHKV_BENCH_ROWS` (comma-separated row labels to run, default all),
//! `BATCHKV_BENCH_BATCHES` (comma-separated batch sizes, default
//! 1,2,8,32,64,256) — the last two let callgrind count one row at a time.
//!
//! Fill: 16-byte zero-padded decimal keys, 100-byte values, random insertion
//! order; every key of `0..KEYS` once, or with `BATCHKV_BENCH_FILL=random`
//! `KEYS` random draws (duplicates and misses, as db_bench's fillrandom).
//! Batches: random keys of `0..KEYS`, sorted and deduplicated (as the Db
//! passes them). Rounds of all rows are interleaved (A B C D A B C D …) so
//! machine noise spreads evenly; the median round is reported.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark's setup fails by panicking"
)]

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

/// The key indexes to insert, in insertion order: `0..n` shuffled, or with
/// `with_replacement` `n` draws from `0..n` (db_bench's fillrandom: ~63 %
/// of the keys present, ~1.6 versions each, and lookups that miss).
fn fill_order(n: usize, with_replacement: bool) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(42);
    if with_replacement {
        return (0..n).map(|_| rng.random_range(0..n)).collect();
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    order
}

fn fill(order: &[usize], paranoid: bool) -> SkipListMemTable {
    let mt = SkipListMemTable::new(SkipListOptions {
        paranoid_checks: paranoid,
        ..SkipListOptions::default()
    });
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

/// How a row looks keys up.
#[derive(Clone, Copy)]
enum Lookup {
    /// `multi_get` with the memtable's own option.
    Batch(BatchLookup),
    /// `multi_get` with the paranoid checks forced on or off.
    Checked(BatchLookup, bool),
    /// `get`, one key at a time.
    Get,
}

/// One timed round: keys/s.
/// `expected`: the value bytes the lookups of `bs` must find.
fn run(mt: &SkipListMemTable, bs: &[Vec<&[u8]>], lookup: Lookup, expected: usize) -> f64 {
    let mut hits = 0usize;
    let mut keys = 0usize;
    let t = Instant::now();
    for b in bs {
        keys += b.len();
        let mut found = |_, e| {
            if let EntryRef::Value(v) = e {
                hits += v.len();
            }
        };
        match lookup {
            Lookup::Batch(s) => mt
                .multi_get(b, u64::MAX >> 8, s, &mut found)
                .expect("multi_get"),
            Lookup::Checked(s, checks) => mt
                .multi_get_checked(checks, b, u64::MAX >> 8, s, &mut found)
                .expect("multi_get"),
            Lookup::Get => {
                for (i, k) in b.iter().enumerate() {
                    if let Some(e) = mt.get(k, u64::MAX >> 8).expect("get") {
                        found(i, e);
                    }
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(hits, expected, "every present key must be found");
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

    let with_replacement = std::env::var("BATCHKV_BENCH_FILL").is_ok_and(|v| v == "random");

    let t = Instant::now();
    let order = fill_order(n, with_replacement);
    let mut present = vec![false; n];
    for &i in &order {
        present[i] = true;
    }
    let mt = fill(&order, false);
    println!(
        "filled {n} entries ({} distinct keys) in {:.2} s ({:.0} MB arena)",
        present.iter().filter(|&&p| p).count(),
        t.elapsed().as_secs_f64(),
        mt.approximate_memory_usage() as f64 / 1e6
    );
    let paranoid = with_paranoid.then(|| fill(&order, true));

    // (label, memtable, lookup). `+paranoid` rows run on a second memtable
    // filled alike with the option on; `+checks` rows force the checks on
    // the first one, so that they differ from their plain row only in the
    // checks (the fair measure of what the checks cost).
    let mut rows: Vec<(&str, &SkipListMemTable, Lookup)> = vec![
        ("per_key", &mt, Lookup::Batch(BatchLookup::PerKey)),
        ("finger", &mt, Lookup::Batch(BatchLookup::Finger)),
        ("bfs", &mt, Lookup::Batch(BatchLookup::Bfs)),
        ("auto", &mt, Lookup::Batch(BatchLookup::Auto)),
        ("get", &mt, Lookup::Get),
        ("bfs+checks", &mt, Lookup::Checked(BatchLookup::Bfs, true)),
    ];
    if let Some(p) = &paranoid {
        rows.push(("per_key+paranoid", p, Lookup::Batch(BatchLookup::PerKey)));
        rows.push(("bfs+paranoid", p, Lookup::Batch(BatchLookup::Bfs)));
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
        let expected: usize = owned
            .iter()
            .flatten()
            .filter(|k| present[std::str::from_utf8(k).unwrap().parse::<usize>().unwrap()])
            .count()
            * 100;
        let bs: Vec<Vec<&[u8]>> = owned
            .iter()
            .map(|b| b.iter().map(|k| k.as_slice()).collect())
            .collect();
        let mut results = vec![Vec::new(); rows.len()];
        for _ in 0..rounds {
            for (r, (_, m, s)) in rows.iter().enumerate() {
                results[r].push(run(m, &bs, *s, expected));
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
