//! `batchkv stress` and `batchkv crashtest`: randomized operations checked
//! against an expected-state oracle, and kill -9 cycles around them.
//!
//! - [`oracle`]: the file-backed expected state and the value encoding.
//! - [`options`]: the database options randomized per run from the seed.
//! - [`worker`]: one thread's random operations and their checks.
//! - [`verify`]: whole-database verification (start, end, after a kill).
//! - [`crashtest`]: the parent loop that kills and verifies.
//! - [`families`]: `--column_families N`, the key space over N families.
//!
//! A stress run: open the oracle and the database, verify every key (a
//! previous run may have been killed: pending writes are resolved), run the
//! threads for `--duration`, verify every key again. On a mismatch it prints
//! the key, the expected and actual states and the seed, and exits with 1.

mod crashtest;
mod families;
mod options;
mod oracle;
mod verify;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use batchkv::{Db, Options};

pub use crashtest::{run_crashtest, CrashtestArgs};

pub type CliResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Arguments `stress` and `crashtest` share.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Worker threads (of each child, for crashtest).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Seed of the run (random if absent; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Size of the key space.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u64,
    /// Database directory (a temporary one if absent).
    #[arg(long = "db")]
    pub db: Option<PathBuf>,
    /// Expected-state file (default: `<db>.expected`).
    #[arg(long)]
    pub expected_state: Option<PathBuf>,
    /// Spread the keys over this many column families (contiguous chunks
    /// of the key space; batches and range deletes span them).
    #[arg(long = "column_families", default_value_t = 1)]
    pub column_families: usize,
}

/// Where a run keeps its database and oracle; holds the temporary
/// directory (if any) alive.
struct RunPaths {
    _tmp: Option<tempfile::TempDir>,
    db: PathBuf,
    expected: PathBuf,
}

impl RunArgs {
    fn paths(&self) -> CliResult<RunPaths> {
        let (tmp, db, default_expected) = match &self.db {
            Some(d) => (None, d.clone(), expected_path(d)),
            None => {
                let t = tempfile::tempdir()?;
                let (db, expected) = (t.path().join("db"), t.path().join("expected"));
                (Some(t), db, expected)
            }
        };
        Ok(RunPaths {
            _tmp: tmp,
            db,
            expected: self.expected_state.clone().unwrap_or(default_expected),
        })
    }
}

/// Arguments of `stress`.
#[derive(clap::Args, Debug, Clone)]
pub struct StressArgs {
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Default expected-state path for a database directory.
fn expected_path(db: &std::path::Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".expected");
    db.with_file_name(name)
}

/// Opens the database with the options of `seed`, and its `families`
/// column families over `keys` keys (created with the same options).
fn open_db(
    dir: &std::path::Path,
    seed: u64,
    families: usize,
    keys: u64,
) -> CliResult<(Db, families::Families, String)> {
    let opts_string = options::for_seed(seed);
    let opts: Options = opts_string.parse()?;
    let db = Db::open(dir, opts.clone()).map_err(|e| format!("opening {}: {e}", dir.display()))?;
    let fams = families::Families::open(&db, families, &opts, keys)?;
    Ok((db, fams, opts_string))
}

/// Prints a failure with the seed and returns exit status 1.
fn report_failure(msg: &str, seed: u64, opts: &str) -> ExitCode {
    eprintln!("{msg}");
    eprintln!("seed={seed} options={opts}");
    ExitCode::from(1)
}

pub fn run_stress(args: StressArgs) -> CliResult<ExitCode> {
    let seed = args.run.seed.unwrap_or_else(rand::random);
    let paths = args.run.paths()?;
    let (db_dir, expected) = (paths.db.clone(), paths.expected.clone());
    if args.run.keys == 0 || args.run.threads == 0 {
        return Err("--keys and --threads must be at least 1".into());
    }
    // Range deletes cover key indexes lo..hi only while key bytes (`k` and
    // 8 zero-padded digits) sort like their indexes.
    if args.run.keys > 100_000_000 {
        return Err("--keys must be at most 100000000".into());
    }
    let (db, fams, opts) = open_db(&db_dir, seed, args.run.column_families, args.run.keys)?;
    let workload = options::workload_for_seed(seed);
    println!(
        "stress: seed={seed} keys={} threads={} column_families={} workload: {workload} options={opts}",
        args.run.keys, args.run.threads, args.run.column_families
    );
    let oracle = oracle::Oracle::open(&expected, args.run.keys)?;

    let start = match verify::verify_all(&db, &fams, &oracle, verify::Mode::AfterCrash) {
        Ok(r) => r,
        Err(msg) => return Ok(report_failure(&format!("at start: {msg}"), seed, &opts)),
    };
    println!(
        "stress: start verified {} keys ({} pending, {} batches in flight, {} with unpersisted WAL-less writes)",
        start.keys, start.pending, start.batches, start.unpersisted
    );

    let shared = worker::Shared::new(db, fams, oracle, workload);
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(args.duration.max(0.0));
    std::thread::scope(|s| {
        for t in 0..args.run.threads {
            let shared = &shared;
            let thread_seed = seed.wrapping_add((t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            s.spawn(move || worker::run(shared, thread_seed));
        }
        let mut last_print = Instant::now();
        while Instant::now() < deadline && !shared.stop.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(50));
            if last_print.elapsed() >= Duration::from_millis(500) {
                last_print = Instant::now();
                println!(
                    "progress ops={} verified={}",
                    shared.ops.load(Ordering::Relaxed),
                    shared.verified.load(Ordering::Relaxed)
                );
            }
        }
        shared.stop.store(true, Ordering::Release);
    });
    let ops = shared.ops.load(Ordering::Relaxed);
    let verified = shared.verified.load(Ordering::Relaxed);
    let failure = shared
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(msg) = failure {
        return Ok(report_failure(&msg, seed, &opts));
    }
    let end = match verify::verify_all(&shared.db, &shared.fams, &shared.oracle, verify::Mode::Live)
    {
        Ok(r) => r,
        Err(msg) => return Ok(report_failure(&format!("at end: {msg}"), seed, &opts)),
    };
    let stats = shared.db.stats();
    let secs = began.elapsed().as_secs_f64();
    println!(
        "stress: ok seed={seed}: {ops} operations ({:.0}/s), {verified} reads verified, {} keys verified at the end; \
         {} WAL-less writes, {} range deletes, {} transactions, {} flush() calls, {} compact_range calls; {} flushes, L0 files {}",
        ops as f64 / secs,
        end.keys,
        shared.wal_less_writes.load(Ordering::Relaxed),
        shared.range_deletes.load(Ordering::Relaxed),
        shared.transactions.load(Ordering::Relaxed),
        shared.flushes.load(Ordering::Relaxed),
        shared.compact_ranges.load(Ordering::Relaxed),
        stats.flushes,
        stats.files_per_level[0]
    );
    let worker::Shared {
        db, fams, oracle, ..
    } = shared;
    drop(fams);
    if let Err(e) = db.close() {
        return Ok(report_failure(&format!("close failed: {e}"), seed, &opts));
    }
    // A clean close persists every acknowledged write, WAL-less ones too:
    // reopened, the database must hold exactly the acknowledged state. (The
    // oracle still knows which keys' latest writes skipped the WAL, so a
    // mismatch says so.)
    let (db, fams, _) = open_db(&db_dir, seed, args.run.column_families, args.run.keys)?;
    if let Err(msg) = verify::verify_all(&db, &fams, &oracle, verify::Mode::Live) {
        return Ok(report_failure(
            &format!("after a clean close and reopen: {msg}"),
            seed,
            &opts,
        ));
    }
    oracle.persist_all()?;
    drop(fams);
    db.close()?;
    println!(
        "stress: closed cleanly; reopened: every acknowledged write present ({} keys had unpersisted WAL-less writes at the close)",
        end.unpersisted
    );
    Ok(ExitCode::SUCCESS)
}
