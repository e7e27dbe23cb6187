//! The memory system's limit for independent random cache-line fetches on
//! this machine: how many lines per second one core can pull from DRAM
//! when 1, 2, 4, … 32 independent pointer chases run interleaved (each
//! chase is a dependent chain: a load's address comes from the previous
//! load, so only the *interleaving* can overlap misses). The plateau is
//! the ceiling a batched lookup (skip-list BFS, hash pipeline) can reach;
//! a lookup touching L lines cannot exceed plateau / L lookups per second.
//!
//! `cargo bench -p batchkv --bench memory_parallelism` (1 GiB buffer,
//! ~1 minute per page size). `BATCHKV_MLP_MB` sets the buffer size,
//! `BATCHKV_MLP_PAGES` the pages: `4k`, `huge` (2 MiB transparent huge
//! pages through `madvise`, as the memtable arena asks for them) or `both`
//! (default).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark's setup fails by panicking"
)]

use std::hint::black_box;
use std::time::Instant;

const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / 8;

/// An anonymous private mapping of zeroed `u64`s, optionally advised to
/// use transparent huge pages before any page is touched.
struct Mapping {
    ptr: *mut u64,
    words: usize,
}

impl Mapping {
    fn new(words: usize, huge: bool) -> Mapping {
        let len = words * 8;
        // SAFETY: a fresh anonymous mapping; checked for MAP_FAILED below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(ptr != libc::MAP_FAILED, "mmap of {len} bytes failed");
        if huge {
            // SAFETY: advice on the mapping just created; failure only
            // means 4 KiB pages (reported by the caller's label).
            unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
        }
        Mapping {
            ptr: ptr.cast(),
            words,
        }
    }

    fn words(&mut self) -> &mut [u64] {
        // SAFETY: `ptr` maps `words` zero-initialised, writable u64s owned
        // by `self` until drop; the &mut borrow of self makes it unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.words) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.words * 8) };
    }
}

/// A random single cycle over all lines: `next[line] = successor line`
/// (Sattolo's algorithm with a xorshift generator), and the lines in cycle
/// order.
fn build_cycle(lines: usize, huge: bool) -> (Mapping, Vec<u32>) {
    let mut map = Mapping::new(lines * WORDS_PER_LINE, huge);
    let buf = map.words();
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
    (map, perm)
}

/// Lines fetched per second with `chains` interleaved pointer chases.
/// The chases start evenly spaced *along the cycle*, more than `steps`
/// apart, so no chase walks lines another one just brought into cache.
fn measure(buf: &[u64], cycle: &[u32], chains: usize, steps: usize) -> f64 {
    let lines = cycle.len();
    assert!(steps < lines / chains, "chases would overlap");
    let mut pos: Vec<u64> = (0..chains)
        .map(|c| cycle[c * lines / chains] as u64)
        .collect();
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
    let pages = std::env::var("BATCHKV_MLP_PAGES").unwrap_or_else(|_| "both".into());
    let kinds: &[(&str, bool)] = match pages.as_str() {
        "4k" => &[("4 KiB pages", false)],
        "huge" => &[("huge pages (madvise)", true)],
        _ => &[("4 KiB pages", false), ("huge pages (madvise)", true)],
    };
    for &(label, huge) in kinds {
        eprintln!("building a random cycle over {lines} lines ({mb} MiB, {label})...");
        let (mut map, cycle) = build_cycle(lines, huge);
        let buf = map.words();
        println!("{label}\nchains  M lines/s (median of 3)");
        for chains in [1usize, 2, 4, 8, 12, 16, 24, 32, 48] {
            let steps = (4_000_000 / chains).min(lines / chains - 1);
            let mut runs: Vec<f64> = (0..3)
                .map(|_| measure(buf, &cycle, chains, steps))
                .collect();
            runs.sort_by(f64::total_cmp);
            println!("{chains:>6}  {:.1}", runs[1] / 1e6);
        }
    }
}
