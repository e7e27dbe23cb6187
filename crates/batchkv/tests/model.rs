//! Model-based test of the public API against a `BTreeMap`.
//!
//! Each seed generates a key universe, options and a list of random
//! operations (puts, deletes, range deletes, merges — the model's operator
//! is `StringAppendOperator(",")` —, write batches with and without the WAL, get,
//! multi_get with every `BatchLookup`, iterators with seeks and direction
//! changes, snapshots, flushes, `compact_range`, close + reopen with fresh
//! options; see `common/model_ops.rs`), runs them on a fresh database and
//! checks every read against the model (for snapshots and iterators, a copy
//! of the model frozen when they were created). A mismatch fails with the
//! seed, the step, the operation, the expected and actual values and the
//! options in force.
//!
//! ```sh
//! # the bounded run (a fixed list of seeds; part of `cargo test`)
//! cargo test --release -p batchkv --test model
//! # fresh seeds until the time is up, printing progress
//! BATCHKV_MODEL_SECONDS=3600 cargo test --release -p batchkv --test model -- --ignored model_long --nocapture
//! # replay one seed (BATCHKV_MODEL_STEPS overrides the number of operations,
//! # BATCHKV_MODEL_VERBOSE=1 prints each operation and the levels at the end)
//! BATCHKV_MODEL_SEED=42 cargo test --release -p batchkv --test model -- model_seeds
//! # shrink a failing seed to a short list of operations (at most
//! # BATCHKV_MODEL_SECONDS, default 300, of trials)
//! BATCHKV_MODEL_SEED=42 cargo test --release -p batchkv --test model -- --ignored model_minimize --nocapture
//! ```
//!
//! Operations run in one thread, but background flushes and compactions
//! run on their own schedule, so a replay repeats the operations exactly
//! and the engine's internal state usually, not always.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

#[path = "common/model_cf.rs"]
mod model_cf;
#[path = "common/model_ops.rs"]
mod model_ops;
#[path = "common/model_runner.rs"]
mod model_runner;

use std::time::{Duration, Instant};

use model_ops::Op;
use model_runner::{run, Case, Failure, CURRENT_STEP};

/// Operations per seed unless `BATCHKV_MODEL_STEPS` says otherwise.
const DEFAULT_STEPS: usize = 400;

/// The seeds `cargo test` runs (10–20 s in release here; a debug build
/// runs the first three). All pass on a correct engine. On the engine
/// before the fix of the compaction picker's bottommost decision (it looked
/// at the upper input's key range only, and dropped tombstones that still
/// hid values deeper down), seeds 2 and 1071 failed in every run here, 1072
/// in about one run of three, 5 and 12 now and then (it depends on
/// background-compaction timing), each with a deleted key coming back.
const SEEDS: [u64; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 1071, 1072];

/// How many of [`SEEDS`] a debug build runs (two to three times slower).
const DEBUG_SEEDS: usize = 3;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
    })
}

fn steps() -> usize {
    env_u64("BATCHKV_MODEL_STEPS").map_or(DEFAULT_STEPS, |n| n as usize)
}

fn report(seed: u64, case: &Case, f: &Failure) -> String {
    let recent = f.step.saturating_sub(15);
    let mut s = format!(
        "model mismatch: seed={seed} step={}/{}\n  op: {}\n  {}\n  options in force: {}\n  recent operations:\n",
        f.step,
        case.ops.len(),
        f.op,
        f.detail,
        f.options
    );
    for (i, op) in case.ops.iter().enumerate().take(f.step).skip(recent) {
        s += &format!("    {i}: {op:?}\n");
    }
    s += &format!(
        "  replay: BATCHKV_MODEL_SEED={seed} cargo test --release -p batchkv --test model -- model_seeds\n"
    );
    s
}

/// Names the seed and step when the engine panics (on this thread) mid-run.
struct PanicReport<'a> {
    seed: u64,
    case: &'a Case,
}

impl Drop for PanicReport<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let step = CURRENT_STEP.get();
            let op = self.case.ops.get(step);
            eprintln!(
                "model: panic at seed={} step={step}: {op:?}\n  replay: BATCHKV_MODEL_SEED={} \
                 cargo test --release -p batchkv --test model -- model_seeds",
                self.seed, self.seed
            );
        }
    }
}

fn run_seed(seed: u64, steps: usize) -> Result<(), String> {
    let case = Case::generate(seed, steps);
    let _report = PanicReport { seed, case: &case };
    run(&case).map_err(|f| report(seed, &case, &f))
}

/// The bounded run: a fixed list of seeds, or `BATCHKV_MODEL_SEED` alone.
#[test]
fn model_seeds() {
    let seeds: Vec<u64> = match env_u64("BATCHKV_MODEL_SEED") {
        Some(s) => vec![s],
        None if cfg!(debug_assertions) => SEEDS[..DEBUG_SEEDS].to_vec(),
        None => SEEDS.to_vec(),
    };
    let mut failures = Vec::new();
    for seed in seeds {
        let t = Instant::now();
        match run_seed(seed, steps()) {
            Ok(()) => eprintln!("seed {seed}: ok ({:.1?})", t.elapsed()),
            Err(e) => {
                eprintln!("{e}");
                failures.push(seed);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds: {failures:?} (reports above)"
    );
}

/// Column families: the default family and two more, random operations
/// that each pick a family, batches across families, per-family flushes and
/// compactions, reopens, drops and re-creations, against one `BTreeMap` per
/// family (`common/model_cf.rs`). `BATCHKV_MODEL_SEED` replays one seed.
#[test]
fn model_column_families() {
    let seeds: Vec<u64> = match env_u64("BATCHKV_MODEL_SEED") {
        Some(s) => vec![s],
        None if cfg!(debug_assertions) => vec![1, 2],
        None => (1..=8).collect(),
    };
    for seed in seeds {
        let t = Instant::now();
        model_cf::run_cf_seed(seed, steps());
        eprintln!("column families, seed {seed}: ok ({:.1?})", t.elapsed());
    }
}

/// Fresh seeds until `BATCHKV_MODEL_SECONDS` (default 60) are up, from
/// `BATCHKV_MODEL_FIRST_SEED` (default: from the clock). Stops at the first
/// failure, or with `BATCHKV_MODEL_KEEP_GOING=1` reports every failing seed
/// at the end.
#[test]
#[ignore = "long-running: BATCHKV_MODEL_SECONDS=3600 cargo test --release -p batchkv --test model -- --ignored model_long --nocapture"]
fn model_long() {
    let secs = env_u64("BATCHKV_MODEL_SECONDS").unwrap_or(60);
    let keep_going = std::env::var_os("BATCHKV_MODEL_KEEP_GOING").is_some();
    let first = env_u64("BATCHKV_MODEL_FIRST_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() * 1000)
    });
    let start = Instant::now();
    let mut seed = first;
    let mut failures: Vec<(u64, Duration)> = Vec::new();
    while start.elapsed() < Duration::from_secs(secs) {
        if let Err(e) = run_seed(seed, steps()) {
            let msg = format!(
                "{e}  found after {} seeds ({first}..={seed}) in {:.1?}",
                seed - first + 1,
                start.elapsed()
            );
            if !keep_going {
                panic!("{msg}");
            }
            eprintln!("{msg}");
            failures.push((seed, start.elapsed()));
        }
        if (seed - first + 1).is_multiple_of(10) {
            eprintln!(
                "model_long: {} seeds run ({first}..={seed}), {} failed, {:.0?} elapsed",
                seed - first + 1,
                failures.len(),
                start.elapsed()
            );
        }
        seed += 1;
    }
    eprintln!(
        "model_long: {} seeds run ({first}..{seed}) in {:.0?}",
        seed - first,
        start.elapsed()
    );
    assert!(
        failures.is_empty(),
        "failing seeds (seed, time found): {failures:?}"
    );
}

/// Shrinks the failing `BATCHKV_MODEL_SEED` to a short list of operations
/// that still fails (delta debugging: drop chunks while it keeps failing),
/// and prints it.
#[test]
#[ignore = "a tool: BATCHKV_MODEL_SEED=n cargo test --release -p batchkv --test model -- --ignored model_minimize --nocapture"]
fn model_minimize() {
    let seed = env_u64("BATCHKV_MODEL_SEED").expect("set BATCHKV_MODEL_SEED to a failing seed");
    let budget = Duration::from_secs(env_u64("BATCHKV_MODEL_SECONDS").unwrap_or(300));
    let start = Instant::now();
    let mut case = Case::generate(seed, steps());
    let mut last = match run(&case) {
        Ok(()) => panic!("seed {seed} passes: nothing to minimize"),
        Err(f) => f,
    };
    // A failure stops the run: later operations never matter.
    case.ops.truncate(last.step + 1);
    let mut chunk = case.ops.len().div_ceil(2);
    while chunk >= 1 && start.elapsed() < budget {
        let mut i = 0;
        let mut shrunk = false;
        while i < case.ops.len() && start.elapsed() < budget {
            let mut trial = case.clone();
            let end = (i + chunk).min(trial.ops.len());
            trial.ops.drain(i..end);
            match run(&trial) {
                Err(f) => {
                    trial.ops.truncate(f.step + 1);
                    eprintln!("minimize: {} operations still fail", trial.ops.len());
                    case = trial;
                    last = f;
                    shrunk = true;
                }
                Ok(()) => i += chunk,
            }
        }
        if !shrunk {
            chunk /= 2;
        }
    }
    // Then the entries of write batches, one at a time.
    let mut at = (0, 0);
    while at.0 < case.ops.len() && start.elapsed() < budget {
        let mut trial = case.clone();
        match &mut trial.ops[at.0] {
            Op::Write { entries, .. } if at.1 < entries.len() && entries.len() > 1 => {
                entries.remove(at.1);
            }
            _ => {
                at = (at.0 + 1, 0);
                continue;
            }
        }
        match run(&trial) {
            Err(f) => {
                trial.ops.truncate(f.step + 1);
                case = trial;
                last = f;
            }
            Ok(()) => at.1 += 1,
        }
    }
    eprintln!(
        "minimized seed {seed} to {} operations in {:.0?}:\n  initial options: {}",
        case.ops.len(),
        start.elapsed(),
        case.options
    );
    for (i, op) in case.ops.iter().enumerate() {
        eprintln!("  {i}: {op:?}");
    }
    eprintln!(
        "  fails at step {}: {}\n  {}",
        last.step, last.op, last.detail
    );
}
