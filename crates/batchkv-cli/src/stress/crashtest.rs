//! `batchkv crashtest`: start `batchkv stress` as a child process, SIGKILL
//! it at a random moment (or, in `--clean-percent` of the cycles, let it
//! run out its duration and close the database cleanly), reopen the database, verify
//! every key against the oracle, repeat.
//!
//! After every kill: the database opens; every acknowledged write through
//! the WAL is present (a SIGKILL kills the process, not the machine, so even
//! writes without `sync` are in the OS page cache); an acknowledged write
//! that skipped the WAL is present unless no `flush()` since has persisted
//! it (then the key may hold any state from the last durable one on); a key
//! with a write in flight holds its old or its new state; no key holds a
//! value never written; batches in flight are all-or-nothing.
//!
//! After a clean close: every acknowledged write, WAL-less ones included,
//! is present, exactly.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{open_db, oracle, report_failure, verify, CliResult, RunArgs};

/// Arguments of `crashtest`.
#[derive(clap::Args, Debug, Clone)]
pub struct CrashtestArgs {
    /// Kill cycles to run (with `--duration`: whichever ends first;
    /// 10 when neither is given).
    #[arg(long)]
    pub cycles: Option<u64>,
    /// Seconds to run.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Threads, seed (children's seeds and kill times derive from it),
    /// key space, database and oracle paths.
    #[command(flatten)]
    pub run: RunArgs,
    /// Earliest kill, in milliseconds after the child's workers start.
    #[arg(long, default_value_t = 300)]
    pub min_kill_ms: u64,
    /// Latest kill, in milliseconds after the child's workers start.
    #[arg(long, default_value_t = 3000)]
    pub max_kill_ms: u64,
    /// Percentage of cycles that let the child run out its duration and
    /// close cleanly (then every acknowledged write must be present).
    #[arg(long, default_value_t = 25)]
    pub clean_percent: u32,
    /// Start over with an empty database once level 0 holds this many files
    /// (there is no compaction yet, so reads slow down as files pile up).
    #[arg(long, default_value_t = 60)]
    pub max_l0_files: usize,
}

/// A child that has not started its workers by then is hung in recovery.
const STARTUP_LIMIT: Duration = Duration::from_secs(120);
/// A clean-cycle child that has not verified, closed and exited by this
/// long after its duration is hung.
const CLOSE_LIMIT: Duration = Duration::from_secs(120);

/// What the child has reported: (started its workers, operations, reads
/// verified).
type Progress = Arc<Mutex<(bool, u64, u64)>>;

fn parse_progress(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("progress ops=")?;
    let (ops, verified) = rest.split_once(" verified=")?;
    Some((ops.parse().ok()?, verified.trim().parse().ok()?))
}

pub fn run_crashtest(args: CrashtestArgs) -> CliResult<ExitCode> {
    let seed = args.run.seed.unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let paths = args.run.paths()?;
    let (db_dir, expected) = (paths.db.clone(), paths.expected.clone());
    let cycles = match (args.cycles, args.duration) {
        (None, None) => Some(10),
        (c, _) => c,
    };
    let duration = args.duration.map(Duration::from_secs_f64);
    if args.min_kill_ms > args.max_kill_ms {
        return Err("--min-kill-ms must not exceed --max-kill-ms".into());
    }
    if args.clean_percent > 100 {
        return Err("--clean-percent must be at most 100".into());
    }
    let exe = std::env::current_exe()?;
    println!(
        "crashtest: seed={seed} db={} keys={} threads={}",
        db_dir.display(),
        args.run.keys,
        args.run.threads
    );

    let began = Instant::now();
    let (mut total_ops, mut total_reads, mut total_keys, mut resets) = (0u64, 0u64, 0u64, 0u64);
    let mut cycle = 0u64;
    loop {
        if cycles.is_some_and(|c| cycle >= c) || duration.is_some_and(|d| began.elapsed() >= d) {
            break;
        }
        cycle += 1;
        let child_seed: u64 = rng.random();
        let kill_after =
            Duration::from_millis(rng.random_range(args.min_kill_ms..=args.max_kill_ms));
        // A clean cycle: the child runs for `kill_after` and closes.
        let clean = rng.random_ratio(args.clean_percent, 100);
        let child_duration = if clean {
            format!("{:.3}", kill_after.as_secs_f64())
        } else {
            "1000000".to_string()
        };
        let mut child = Command::new(&exe)
            .arg("stress")
            .arg("--db")
            .arg(&db_dir)
            .arg("--expected-state")
            .arg(&expected)
            .args(["--keys", &args.run.keys.to_string()])
            .args(["--threads", &args.run.threads.to_string()])
            .args(["--column_families", &args.run.column_families.to_string()])
            .args(["--seed", &child_seed.to_string()])
            .args(["--duration", &child_duration])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let progress: Progress = Arc::new(Mutex::new((false, 0, 0)));
        let reader = {
            let progress = Arc::clone(&progress);
            let stdout = child.stdout.take().ok_or("child has no stdout")?;
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                    if line.starts_with("stress: start verified") {
                        p.0 = true;
                    } else if let Some((ops, reads)) = parse_progress(&line) {
                        (p.1, p.2) = (ops, reads);
                    }
                }
            })
        };
        // Mostly, the kill delay counts from when the child's workers start
        // (opening and verifying a big database takes a while); sometimes
        // from the spawn, to crash it during recovery too.
        let during_recovery = !clean && rng.random_ratio(1, 8);
        let mut started = Instant::now();
        let mut counting = during_recovery;
        while !counting || started.elapsed() < kill_after || clean {
            if !counting && progress.lock().unwrap_or_else(|e| e.into_inner()).0 {
                counting = true;
                started = Instant::now();
            }
            if !counting && started.elapsed() > STARTUP_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(report_failure(
                    &format!("crashtest cycle {cycle}: the stress child did not start within {STARTUP_LIMIT:?}"),
                    child_seed,
                    &super::options::for_seed(child_seed),
                ));
            }
            if let Some(status) = child.try_wait()? {
                if clean && status.success() {
                    break;
                }
                let _ = reader.join();
                let opts = super::options::for_seed(child_seed);
                let when = if clean {
                    "in a clean cycle"
                } else {
                    "before the kill"
                };
                return Ok(report_failure(
                    &format!(
                        "crashtest cycle {cycle}: the stress child exited with {status} {when}"
                    ),
                    child_seed,
                    &opts,
                ));
            }
            if clean && counting && started.elapsed() > kill_after + CLOSE_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(report_failure(
                    &format!("crashtest cycle {cycle}: the stress child did not finish and close within {CLOSE_LIMIT:?} of its duration"),
                    child_seed,
                    &super::options::for_seed(child_seed),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !clean {
            child.kill()?; // SIGKILL
            child.wait()?;
        }
        let _ = reader.join();
        let (_, ops, reads) = *progress.lock().unwrap_or_else(|e| e.into_inner());
        total_ops += ops;
        total_reads += reads;

        // Reopen the way the child opened it, and check every key.
        let (db, fams, opts) =
            match open_db(&db_dir, child_seed, args.run.column_families, args.run.keys) {
                Ok(x) => x,
                Err(e) => {
                    let opts = super::options::for_seed(child_seed);
                    return Ok(report_failure(
                        &format!("crashtest cycle {cycle}: reopen after kill failed: {e}"),
                        child_seed,
                        &opts,
                    ));
                }
            };
        let oracle = oracle::Oracle::open(&expected, args.run.keys)?;
        let how = if clean {
            format!("after a clean close at {kill_after:?}")
        } else {
            format!("after kill at {kill_after:?}")
        };
        let report = match verify::verify_all(&db, &fams, &oracle, verify::Mode::AfterCrash) {
            Ok(r) => r,
            Err(msg) => {
                return Ok(report_failure(
                    &format!("crashtest cycle {cycle} ({how}): {msg}"),
                    child_seed,
                    &opts,
                ))
            }
        };
        if clean && (report.pending != 0 || report.unpersisted != 0) {
            // The check above was exact only if the child's clean close
            // marked everything durable.
            return Ok(report_failure(
                &format!(
                    "crashtest cycle {cycle} ({how}): the oracle still has {} keys pending and {} unpersisted",
                    report.pending, report.unpersisted
                ),
                child_seed,
                &opts,
            ));
        }
        total_keys += report.keys;
        let l0 = db.stats().files_per_level[0];
        drop(fams);
        db.close()?;
        println!(
            "cycle {cycle}: child seed {child_seed} {} {} ms after {}; child ops ~{ops}, reads verified ~{reads}; \
             reopened: {} keys verified, {} pending, {} batches in flight, {} with unpersisted WAL-less writes ({} lost); L0 files {l0}",
            if clean { "closed cleanly" } else { "killed" },
            kill_after.as_millis(),
            if during_recovery { "spawn" } else { "its workers started" },
            report.keys,
            report.pending,
            report.batches,
            report.unpersisted,
            report.lost
        );
        if l0 > args.max_l0_files {
            std::fs::remove_dir_all(&db_dir)?;
            std::fs::remove_file(&expected)?;
            resets += 1;
            println!("crashtest: {l0} L0 files; starting over with an empty database");
        }
    }
    println!(
        "crashtest: ok seed={seed}: {cycle} kill cycles in {:.0} s; ~{total_ops} child operations, ~{total_reads} reads verified by children, {total_keys} keys verified after kills; {resets} resets",
        began.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::parse_progress;

    #[test]
    fn progress_lines_parse() {
        assert_eq!(
            parse_progress("progress ops=12 verified=34"),
            Some((12, 34))
        );
        assert_eq!(parse_progress("stress: seed=1"), None);
    }
}
