//! The stable driver of the server fuzz target: seeded random inputs (and
//! a few hand-written ones) through [`super::server_dispatch`] for a
//! bounded time. Fixed seed and 3 s by default; `BATCHKV_FUZZ_SECONDS`
//! sets the budget and `BATCHKV_FUZZ_SEED` the seed for longer runs on
//! fresh inputs:
//! `BATCHKV_FUZZ_SECONDS=600 BATCHKV_FUZZ_SEED=$RANDOM cargo test -p
//! batchkv-server --release fuzz_server_dispatch`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::server_dispatch;

/// SplitMix64 (as the engine's driver): seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Raw protocol inputs a parser must survive (each behind a choice byte
/// under 40, which makes the target append raw bytes: a length byte pair
/// then the bytes).
const RAW: &[&[u8]] = &[
    b"*-1\r\n",
    b"*0\r\n",
    b"*1\r\n$-1\r\n",
    b"*2\r\n$3\r\nGET\r\n$99999999999\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nvv\r\n",
    b"*9223372036854775807\r\n",
    b"*1\r\n$0\r\n\r\n",
    b"SET \"a\\x4\" 'b\r\n",
    b"\"unterminated\r\n",
    b"*1\r\n*1\r\n",
    b"\r\n\r\n\n",
    b"*1\r\n$4\r\nPING",
];

/// The time budget, input count and seed (module docs).
fn settings() -> (Duration, usize, u64) {
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|e| panic!("{name}={v:?}: {e}"))
        })
    };
    let seed = var("BATCHKV_FUZZ_SEED").unwrap_or(0);
    match var("BATCHKV_FUZZ_SECONDS") {
        Some(secs) => (Duration::from_secs(secs), usize::MAX, seed),
        None => (Duration::from_secs(3), 20_000, seed),
    }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn check(input: &[u8]) {
    if let Err(e) = catch_unwind(AssertUnwindSafe(|| server_dispatch(input))) {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!("server fuzz target failed on input {}: {msg}", hex(input));
    }
}

/// A raw piece as the target reads it: a choice byte under 40, two
/// length bytes (read big-endian, modulo 65), the bytes (fed to the
/// parser in one piece: the input ends there).
fn raw_step(bytes: &[u8]) -> Vec<u8> {
    let n = bytes.len().min(64);
    let mut v = vec![0u8, 0, n as u8];
    v.extend_from_slice(&bytes[..n]);
    v
}

#[test]
fn fuzz_server_dispatch() {
    let (budget, iterations, seed) = settings();
    let mut rng = Rng(0x7365_7276_6572_2d66 ^ seed);
    for raw in RAW {
        check(&raw_step(raw));
    }
    let start = Instant::now();
    let mut ran = RAW.len();
    for _ in 0..iterations {
        if start.elapsed() > budget {
            break;
        }
        let n = rng.below(400);
        let input = rng.bytes(n);
        check(&input);
        ran += 1;
    }
    eprintln!(
        "fuzz target server_dispatch: {ran} inputs in {:.2} s (seed {seed:#x})",
        start.elapsed().as_secs_f64()
    );
}

/// The target does fail when a command panics (DEBUG PANIC, enabled here
/// on purpose: the fuzzer's server refuses DEBUG).
#[test]
fn the_target_fails_on_a_panicking_command() {
    let mut f = super::Fuzzer::new();
    f.cfg.enable_debug_command = crate::security::DebugCommand::Yes;
    let r = catch_unwind(AssertUnwindSafe(|| f.run(&raw_step(b"DEBUG PANIC\r\n"))));
    let e = r.expect_err("a panicking command fails the target");
    let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("DEBUG PANIC"), "{msg}");
    // Without it, the same input passes (DEBUG is refused).
    server_dispatch(&raw_step(b"DEBUG PANIC\r\n"));
}
