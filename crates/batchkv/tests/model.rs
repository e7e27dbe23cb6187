//! Model-based test of the public API against a `BTreeMap`.
//!
//! Each seed generates a key universe, options and a list of random
//! operations (puts, deletes, write batches with and without the WAL, get,
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

#[path = "common/model_ops.rs"]
mod model_ops;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use batchkv::{Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};
use model_ops::{describe, Bytes, Generator, Move, Op, View};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Operations per seed unless `BATCHKV_MODEL_STEPS` says otherwise.
const DEFAULT_STEPS: usize = 400;

/// The seeds `cargo test` runs (10–20 s in release here; a debug build
/// runs the first three). All pass on a correct engine. On the engine
/// before the fix of the compaction picker's bottommost decision (it looked
/// at the upper input's key range only, and dropped tombstones that still
/// hid values deeper down), seeds 2 and 1071 failed in every run here, 1072
/// in about one run of three and 5 in about one of ten (it depends on
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

fn verbose() -> bool {
    std::env::var_os("BATCHKV_MODEL_VERBOSE").is_some()
}

/// A case: the options of the first open and the operations.
#[derive(Clone)]
struct Case {
    options: String,
    ops: Vec<Op>,
}

impl Case {
    fn generate(seed: u64, steps: usize) -> Case {
        let mut g = Generator::new(seed);
        let options = g.initial_options();
        Case {
            options,
            ops: g.ops(steps),
        }
    }
}

/// Why a run failed.
struct Failure {
    step: usize,
    op: String,
    detail: String,
    /// Options in force at the failing step.
    options: String,
}

type Check = Result<(), String>;

fn engine<T>(what: &str, r: batchkv::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what} returned an error: {e}"))
}

/// An iterator kept alive across operations, with the keys it must see.
struct LiveIter {
    it: DbIterator,
    /// The visible entries (model at creation, within the bounds), in order.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Index into `entries`, `None` when not valid.
    pos: Option<usize>,
}

impl LiveIter {
    fn new(
        it: DbIterator,
        model: &Model,
        lower: &Option<Vec<u8>>,
        upper: &Option<Vec<u8>>,
    ) -> Self {
        let entries = model
            .iter()
            .filter(|(k, _)| lower.as_ref().is_none_or(|l| *k >= l))
            .filter(|(k, _)| upper.as_ref().is_none_or(|u| *k < u))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        LiveIter {
            it,
            entries,
            pos: None,
        }
    }

    /// Applies `moves` to the iterator and the model, comparing after each.
    fn run(&mut self, moves: &[Move]) -> Check {
        for (i, m) in moves.iter().enumerate() {
            let first_ge = |k: &[u8]| self.entries.partition_point(|(e, _)| e.as_slice() < k);
            let first_gt = |k: &[u8]| self.entries.partition_point(|(e, _)| e.as_slice() <= k);
            let n = self.entries.len();
            let at = |p: usize| (p < n).then_some(p);
            match m {
                Move::First => {
                    self.it.seek_to_first();
                    self.pos = at(0);
                }
                Move::Last => {
                    self.it.seek_to_last();
                    self.pos = n.checked_sub(1);
                }
                Move::Seek(k) => {
                    self.it.seek(k);
                    self.pos = at(first_ge(k));
                }
                Move::SeekForPrev(k) => {
                    self.it.seek_for_prev(k);
                    self.pos = first_gt(k).checked_sub(1);
                }
                Move::Next | Move::Prev if self.pos.is_none() => continue,
                Move::Next => {
                    self.it.next();
                    self.pos = at(self.pos.unwrap_or(0) + 1);
                }
                Move::Prev => {
                    self.it.prev();
                    self.pos = self.pos.and_then(|p| p.checked_sub(1));
                }
            }
            let want = self.pos.map(|p| &self.entries[p]);
            let got = self
                .it
                .valid()
                .then(|| (self.it.key().to_vec(), self.it.value().to_vec()));
            let same = match (want, &got) {
                (Some((wk, wv)), Some((gk, gv))) => wk == gk && wv == gv,
                (None, None) => true,
                _ => false,
            };
            if !same {
                let show = |e: Option<(&Vec<u8>, &Vec<u8>)>| match e {
                    None => "invalid".to_string(),
                    Some((k, v)) => format!("{:?} = {}", Bytes(k), describe(Some(v))),
                };
                return Err(format!(
                    "iterator move {i} ({m:?}) of {moves:?}\n  expected: {}\n  actual:   {}",
                    show(want.map(|(k, v)| (k, v))),
                    show(got.as_ref().map(|(k, v)| (k, v)))
                ));
            }
            if got.is_none() {
                engine("iterator status", self.it.status())?;
            }
        }
        Ok(())
    }
}

/// The database under test and everything the model knows.
struct Runner<'a> {
    dir: &'a Path,
    db: Option<Db>,
    options: String,
    model: Model,
    /// Live snapshots with the model as it was when each was taken.
    snapshots: Vec<(Snapshot, Model)>,
    iters: Vec<LiveIter>,
    /// Every key ever written, for full checks.
    universe: Vec<Vec<u8>>,
}

fn open(dir: &Path, options: &str) -> Result<Db, String> {
    let opts: Options = options
        .parse()
        .map_err(|e| format!("bad generated options {options:?}: {e}"))?;
    engine("open", Db::open(dir, opts))
}

impl<'a> Runner<'a> {
    fn db(&self) -> &Db {
        self.db
            .as_ref()
            .expect("the database is open between operations")
    }

    /// The read options and model of a view.
    fn view(&self, view: View) -> (ReadOptions, &Model, String) {
        match view {
            View::Snapshot(i) if !self.snapshots.is_empty() => {
                let i = i % self.snapshots.len();
                let (snap, model) = &self.snapshots[i];
                let ro = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..ReadOptions::default()
                };
                (
                    ro,
                    model,
                    format!("snapshot #{i} (seq {})", snap.sequence()),
                )
            }
            _ => (ReadOptions::default(), &self.model, "latest".into()),
        }
    }

    fn step(&mut self, op: &Op) -> Check {
        match op {
            Op::Put { key, val } => {
                let v = val.bytes();
                engine("put", self.db().put(key, &v))?;
                self.model.insert(key.clone(), v);
            }
            Op::Delete { key } => {
                engine("delete", self.db().delete(key))?;
                self.model.remove(key);
            }
            Op::Write {
                entries,
                sync,
                disable_wal,
            } => {
                let mut b = WriteBatch::new();
                for (k, v) in entries {
                    match v {
                        Some(v) => b.put(k, v.bytes()),
                        None => b.delete(k),
                    }
                }
                let wo = WriteOptions {
                    sync: *sync,
                    disable_wal: *disable_wal,
                };
                engine("write", self.db().write(&wo, b))?;
                for (k, v) in entries {
                    match v {
                        Some(v) => self.model.insert(k.clone(), v.bytes()),
                        None => self.model.remove(k),
                    };
                }
            }
            Op::Get { view, key } => {
                let (ro, model, name) = self.view(*view);
                let got = engine("get", self.db().get_opt(&ro, key))?;
                let want = model.get(key);
                if got.as_ref() != want {
                    return Err(format!(
                        "get {:?} at {name}\n  expected: {}\n  actual:   {}",
                        Bytes(key),
                        describe(want.map(Vec::as_slice)),
                        describe(got.as_deref())
                    ));
                }
            }
            Op::MultiGet {
                view,
                keys,
                lookup,
                callback,
                cold,
            } => {
                let (mut ro, model, name) = self.view(*view);
                ro.batch_lookup = *lookup;
                ro.fill_cache = !cold;
                ro.verify_checksums = !cold;
                self.check_multi_get(&ro, model, keys, &name, *callback)?;
            }
            Op::Scan {
                view,
                lower,
                upper,
                moves,
                keep,
                cold,
            } => {
                let (mut ro, model, _) = self.view(*view);
                ro.fill_cache = !cold;
                ro.verify_checksums = !cold;
                ro.lower_bound = lower.clone();
                ro.upper_bound = upper.clone();
                let it = engine("iter", self.db().iter(&ro))?;
                let mut live = LiveIter::new(it, model, lower, upper);
                live.run(moves)?;
                if *keep {
                    if self.iters.len() >= 3 {
                        self.iters.remove(0);
                    }
                    self.iters.push(live);
                }
            }
            Op::IterMoves { which, moves } => {
                if !self.iters.is_empty() {
                    let n = self.iters.len();
                    self.iters[which % n]
                        .run(moves)
                        .map_err(|e| format!("kept iterator #{}: {e}", which % n))?;
                }
            }
            Op::TakeSnapshot => {
                if self.snapshots.len() >= 4 {
                    self.snapshots.remove(0);
                }
                let s = self.db().snapshot();
                self.snapshots.push((s, self.model.clone()));
            }
            Op::ReleaseSnapshot(i) => {
                if !self.snapshots.is_empty() {
                    let n = self.snapshots.len();
                    self.snapshots.remove(i % n);
                }
            }
            Op::Flush => engine("flush", self.db().flush())?,
            Op::CompactRange(a, b) => engine(
                "compact_range",
                self.db().compact_range(a.as_deref(), b.as_deref()),
            )?,
            Op::Pause { millis } => std::thread::sleep(Duration::from_millis(*millis)),
            Op::CheckAll { view } => self.check_all(*view)?,
            Op::Reopen { options } => self.reopen(options)?,
        }
        Ok(())
    }

    /// `multi_get` (or `multi_get_with`, whose callback must come in
    /// ascending input order) of `keys`, compared with `model`.
    fn check_multi_get(
        &self,
        ro: &ReadOptions,
        model: &Model,
        keys: &[Vec<u8>],
        name: &str,
        callback: bool,
    ) -> Check {
        let got: Vec<batchkv::Result<Option<Vec<u8>>>> = if callback {
            let mut got = Vec::with_capacity(keys.len());
            let mut order_ok = true;
            self.db().multi_get_with(ro, keys, |i, r| {
                order_ok &= i == got.len();
                got.push(r.map(|v| v.map(<[u8]>::to_vec)));
            });
            if !order_ok {
                return Err("multi_get_with called back out of input order".into());
            }
            got
        } else {
            self.db().multi_get(ro, keys)
        };
        let call = if callback {
            "multi_get_with"
        } else {
            "multi_get"
        };
        if got.len() != keys.len() {
            return Err(format!(
                "{call} of {} keys returned {} results",
                keys.len(),
                got.len()
            ));
        }
        for (i, (k, r)) in keys.iter().zip(got).enumerate() {
            let r = engine(call, r)?;
            let want = model.get(k);
            if r.as_ref() != want {
                return Err(format!(
                    "{call} at {name} (lookup {:?}), key #{i} {:?}\n  expected: {}\n  actual:   {}",
                    ro.batch_lookup,
                    Bytes(k),
                    describe(want.map(Vec::as_slice)),
                    describe(r.as_deref())
                ));
            }
        }
        Ok(())
    }

    /// Forward and backward scans and a `multi_get` of every key ever written.
    fn check_all(&self, view: View) -> Check {
        let (ro, model, name) = self.view(view);
        let it = engine("iter", self.db().iter(&ro))?;
        let mut live = LiveIter::new(it, model, &None, &None);
        let n = model.len();
        let mut moves = vec![Move::First];
        moves.extend(std::iter::repeat_n(Move::Next, n));
        moves.push(Move::Last);
        moves.extend(std::iter::repeat_n(Move::Prev, n));
        live.run(&moves)
            .map_err(|e| format!("full scan at {name}: {e}"))?;
        self.check_multi_get(&ro, model, &self.universe, &name, false)
    }

    fn reopen(&mut self, options: &str) -> Check {
        // Iterators and snapshots belong to the old instance.
        self.iters.clear();
        self.snapshots.clear();
        let db = self.db.take().expect("open");
        engine("close", db.close())?;
        self.db = Some(open(self.dir, options)?);
        self.options = options.to_string();
        // A clean close keeps every write, WAL or not.
        self.check_all(View::Latest)
            .map_err(|e| format!("after reopen: {e}"))
    }

    /// The checks after the last operation: every snapshot, then a full
    /// compaction, then a reopen with the same options.
    fn finish(&mut self) -> Check {
        for i in 0..self.snapshots.len() {
            self.check_all(View::Snapshot(i))?;
        }
        self.check_all(View::Latest)?;
        engine("compact_range", self.db().compact_range(None, None))?;
        self.check_all(View::Latest)
            .map_err(|e| format!("after compact_range(None, None): {e}"))?;
        let options = self.options.clone();
        self.reopen(&options)
    }
}

/// Runs `case` on a fresh database.
fn run(case: &Case) -> Result<(), Failure> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut universe: Vec<Vec<u8>> = case
        .ops
        .iter()
        .flat_map(|op| match op {
            Op::Put { key, .. } | Op::Delete { key } => vec![key.clone()],
            Op::Write { entries, .. } => entries.iter().map(|(k, _)| k.clone()).collect(),
            _ => vec![],
        })
        .collect();
    universe.sort();
    universe.dedup();
    let fail = |step: usize, op: String, detail: String, options: &str| Failure {
        step,
        op,
        detail,
        options: options.to_string(),
    };
    let db =
        open(dir.path(), &case.options).map_err(|e| fail(0, "open".into(), e, &case.options))?;
    let mut r = Runner {
        dir: dir.path(),
        db: Some(db),
        options: case.options.clone(),
        model: Model::new(),
        snapshots: Vec::new(),
        iters: Vec::new(),
        universe,
    };
    for (step, op) in case.ops.iter().enumerate() {
        if verbose() {
            eprintln!("step {step}: {op:?}");
        }
        CURRENT_STEP.set(step);
        r.step(op)
            .map_err(|e| fail(step, format!("{op:?}"), e, &r.options))?;
    }
    if verbose() {
        eprintln!("levels before the final checks: {:?}", r.db().stats());
    }
    let n = case.ops.len();
    CURRENT_STEP.set(n);
    r.finish()
        .map_err(|e| fail(n, "final checks".into(), e, &r.options))?;
    let db = r.db.take().expect("open");
    db.close()
        .map_err(|e| fail(n, "final close".into(), e.to_string(), &r.options))
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

thread_local! {
    /// The step running, for [`PanicReport`].
    static CURRENT_STEP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
