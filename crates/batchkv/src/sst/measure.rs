//! Micro-measure (ignored by default) of the SST layer: file size, point
//! lookups and scans for both data-block layouts × {none, lz4, zstd}, on
//! 100,000 entries of 16-byte user keys and 100-byte values that compress
//! to about half (db_bench's `compression_ratio = 0.5`: each value is 50
//! random bytes repeated). Run with
//! `cargo test -p batchkv --release measure_sst_layouts -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};

use super::tests_support::{build_in_memory, open_mem_cached};
use super::{BlockReadOptions, TableOptions};
use crate::cache::BlockCache;
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, ValueType};

const N: usize = 100_000;
const LOOKUPS: usize = 200_000;

fn data() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    (0..N)
        .map(|i| {
            let mut k = Vec::new();
            append_internal_key(
                &mut k,
                format!("{:016}", i * 7).as_bytes(),
                i as u64 + 1,
                ValueType::Value,
            );
            let half: Vec<u8> = (0..50).map(|_| rng.random()).collect();
            let mut v = half.clone();
            v.extend_from_slice(&half);
            (k, v)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[test]
#[ignore = "measurement; run with --ignored --nocapture in release"]
fn measure_sst_layouts() {
    let entries = data();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let probes: Vec<Vec<u8>> = (0..LOOKUPS)
        .map(|_| format!("{:016}", rng.random_range(0..N) * 7).into_bytes())
        .collect();
    println!(
        "layout       compression  sst_bytes  get_cached(Mops/s)  get_uncached(Mops/s)  scan(Mentries/s)"
    );
    for sep in [false, true] {
        for &compression in super::compression::AVAILABLE {
            let opts = TableOptions {
                separate_key_value: sep,
                compression,
                ..TableOptions::default()
            };
            let (bytes, _) = build_in_memory(&entries, &opts);
            let size = bytes.len();
            let ro = BlockReadOptions::default();
            let mut cached = Vec::new();
            let mut uncached = Vec::new();
            let mut scan = Vec::new();
            for _ in 0..5 {
                let cache = Arc::new(BlockCache::new(1 << 30));
                let t = open_mem_cached(bytes.clone(), &opts, Some((cache, 1)));
                for p in &probes[..N / 10] {
                    t.get_with(p, u64::MAX >> 8, ro).unwrap();
                }
                let start = Instant::now();
                for p in &probes {
                    assert!(t.get_with(p, u64::MAX >> 8, ro).unwrap().is_some());
                }
                cached.push(LOOKUPS as f64 / start.elapsed().as_secs_f64() / 1e6);
                let start = Instant::now();
                let mut it = Arc::clone(&t).iter_with(ro);
                it.seek_to_first();
                let mut n = 0usize;
                while it.valid() {
                    n += it.value().len();
                    it.next();
                }
                assert_eq!(n, N * 100);
                scan.push(N as f64 / start.elapsed().as_secs_f64() / 1e6);

                let t = open_mem_cached(bytes.clone(), &opts, None);
                let start = Instant::now();
                for p in &probes[..LOOKUPS / 4] {
                    assert!(t.get_with(p, u64::MAX >> 8, ro).unwrap().is_some());
                }
                uncached.push((LOOKUPS / 4) as f64 / start.elapsed().as_secs_f64() / 1e6);
            }
            println!(
                "{:<12} {:<12} {:>9}  {:>18.3}  {:>20.3}  {:>16.2}",
                if sep { "separated" } else { "interleaved" },
                compression.name(),
                size,
                median(cached),
                median(uncached),
                median(scan)
            );
        }
    }
}
