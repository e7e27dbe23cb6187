//! The memory system's limit for independent random cache-line fetches on
//! this machine: how many lines per second one core can pull from DRAM
//! when 1, 2, 4, … 32 independent pointer chases run interleaved (each
//! chase is a dependent chain: a load's address comes from the previous
//! load, so only the *interleaving* can overlap misses). The plateau is
//! the ceiling a batched lookup (skip-list BFS, hash pipeline) can reach;
//! a lookup touching L lines cannot exceed plateau / L lookups per second.
//!
//! `cargo bench -p batchkv --bench memory_parallelism` (1 GiB buffer,
//! ~1 minute). `BATCHKV_MLP_MB` sets the buffer size.

use std::hint::black_box;
use std::time::Instant;

const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / 8;

/// A random single cycle over all lines: `next[line] = successor line`
/// (Sattolo's algorithm with a xorshift generator).
fn build_cycle(lines: usize) -> Vec<u64> {
    let mut buf = vec![0u64; lines * WORDS_PER_LINE];
    let mut perm: Vec<u32> = (0..lines as u32).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        perm.swap(i, j);
    }
    for w in perm.windows(2) {
        buf[w[0] as usize * WORDS_PER_LINE] = w[1] as u64;
    }
    buf[perm[lines - 1] as usize * WORDS_PER_LINE] = perm[0] as u64;
    buf
}

/// Lines fetched per second with `chains` interleaved pointer chases.
fn measure(buf: &[u64], lines: usize, chains: usize, steps: usize) -> f64 {
    let mut pos: Vec<u64> = (0..chains).map(|c| (c * lines / chains) as u64).collect();
    let start = Instant::now();
    for _ in 0..steps {
        for p in pos.iter_mut() {
            *p = buf[*p as usize * WORDS_PER_LINE];
        }
    }
    black_box(&pos);
    (steps * chains) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let mb: usize = std::env::var("BATCHKV_MLP_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let lines = mb * (1 << 20) / LINE;
    eprintln!("building a random cycle over {lines} lines ({mb} MiB)...");
    let buf = build_cycle(lines);
    println!("chains  M lines/s (median of 3)");
    for chains in [1usize, 2, 4, 8, 12, 16, 24, 32, 48] {
        let steps = 4_000_000 / chains;
        let mut runs: Vec<f64> = (0..3)
            .map(|_| measure(&buf, lines, chains, steps))
            .collect();
        runs.sort_by(f64::total_cmp);
        println!("{chains:>6}  {:.1}", runs[1] / 1e6);
    }
}
