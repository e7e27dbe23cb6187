//! The workloads, with db_bench's meanings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::engine::{BenchDb, BenchResult, Entry};
use super::gen::{make_key, ValueGen};
use super::histogram::Probe;
use super::BenchArgs;

pub const KNOWN: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "deleterandom",
    "readrandom",
    "readmissing",
    "multireadrandom",
    "memceiling",
    "hiccup",
    "readseq",
    "readreverse",
    "seekrandom",
    "readwhilewriting",
    "multireadwhilewriting",
    "flush",
    "compact",
    "bulkpersist",
    "stats",
];

pub fn is_known(name: &str) -> bool {
    KNOWN.contains(&name)
}

/// What one benchmark did.
pub struct Stats {
    pub ops: u64,
    pub seconds: f64,
    /// CPU time of the whole process (every thread, user + system) during
    /// the benchmark: on a shared machine it does not count the time the
    /// benchmark waited for a core, which wall time does.
    pub cpu_seconds: f64,
    pub extra: String,
    /// Bytes of keys and values the benchmark wrote (write amplification's
    /// denominator).
    pub user_bytes: u64,
    /// Further figures for the JSON report (name, value).
    pub fields: Vec<(&'static str, f64)>,
}

/// CPU time the process has used so far (all threads, user + system).
pub(super) fn process_cpu_seconds() -> f64 {
    // SAFETY: `rusage` holds only integers (timevals and counters), for
    // which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct it is given, which is
    // valid and writable for the call.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// Stops a loop after `count` iterations, or after `--duration` seconds.
pub(super) struct Budget {
    count: u64,
    deadline: Option<Instant>,
}

impl Budget {
    pub(super) fn new(args: &BenchArgs, count: u64) -> Budget {
        Budget {
            count,
            deadline: (args.duration > 0)
                .then(|| Instant::now() + Duration::from_secs(args.duration)),
        }
    }

    /// Exactly `count` iterations, whatever `--duration` says.
    pub(super) fn count(count: u64) -> Budget {
        Budget {
            count,
            deadline: None,
        }
    }

    fn done(&self, done_ops: u64) -> bool {
        match self.deadline {
            Some(d) => done_ops.is_multiple_of(64) && Instant::now() >= d,
            None => done_ops >= self.count,
        }
    }
}

pub fn run(name: &str, db: &dyn BenchDb, args: &BenchArgs) -> BenchResult<Stats> {
    if name == "memceiling" {
        // No engine involved; it times its own reads (not its set-up).
        return super::ceiling::run(args);
    }
    if name == "hiccup" {
        // No engine involved: the machine's own stalls of an idle loop.
        return super::hiccup::run(args);
    }
    let start = Instant::now();
    let cpu_start = process_cpu_seconds();
    let entry_bytes = (args.key_size + args.value_size) as u64;
    let mut user_bytes = 0;
    let (ops, extra) = match name {
        "fillseq" | "fillrandom" | "overwrite" | "deleterandom" => {
            let (order, delete) = match name {
                "fillseq" => (KeyOrder::Sequential, false),
                "deleterandom" => (KeyOrder::Random, true),
                _ => (KeyOrder::Random, false),
            };
            let n = fill(db, args, order, delete)?;
            user_bytes = n * if delete {
                args.key_size as u64
            } else {
                entry_bytes
            };
            (n, String::new())
        }
        "readrandom" => found_line(read_threads(db, args, ReadKind::Random)?),
        "readmissing" => found_line(read_threads(db, args, ReadKind::Missing)?),
        "multireadrandom" => found_line(read_threads(db, args, ReadKind::Multi)?),
        "seekrandom" => found_line(read_threads(db, args, ReadKind::Seek)?),
        "readwhilewriting" | "multireadwhilewriting" => {
            let kind = if name == "readwhilewriting" {
                ReadKind::Random
            } else {
                ReadKind::Multi
            };
            let (reads, written) = while_writing(db, args, kind)?;
            user_bytes = written * entry_bytes;
            found_line(reads)
        }
        "bulkpersist" => {
            let (rounds, extra) = bulk_persist(db, args)?;
            user_bytes = rounds * args.num * entry_bytes;
            (rounds, extra)
        }
        "readseq" => (db.scan(false)?, String::new()),
        "readreverse" => (db.scan(true)?, String::new()),
        "flush" => {
            db.flush()?;
            (1, String::new())
        }
        "compact" => {
            let bytes = db.compact()?;
            (
                1,
                format!(
                    "(SST bytes after compaction: {bytes}, {:.1} MB)",
                    bytes as f64 / 1e6
                ),
            )
        }
        "stats" => {
            println!("{}", db.stats());
            (1, String::new())
        }
        other => return Err(format!("unknown benchmark {other:?}").into()),
    };
    Ok(Stats {
        ops,
        seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: process_cpu_seconds() - cpu_start,
        extra,
        user_bytes,
        fields: Vec::new(),
    })
}

fn found_line((ops, found): (u64, u64)) -> (u64, String) {
    (ops, format!("({found} of {ops} found)"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyOrder {
    Sequential,
    Random,
}

/// Writes `--num` keys in batches of `--batch_size`; returns entries written.
fn fill(db: &dyn BenchDb, args: &BenchArgs, order: KeyOrder, delete: bool) -> BenchResult<u64> {
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut values = ValueGen::new(args.seed, args.value_size, args.compression_ratio);
    let budget = Budget::new(args, args.num);
    let mut keys: Vec<Vec<u8>> = vec![Vec::new(); args.batch_size];
    let mut done = 0u64;
    let mut probe = Probe::new();
    while !budget.done(done) {
        let n = if budget.deadline.is_some() {
            args.batch_size as u64
        } else {
            (args.num - done).min(args.batch_size as u64)
        };
        for (j, key) in keys.iter_mut().take(n as usize).enumerate() {
            let index = match order {
                KeyOrder::Sequential => (done + j as u64) % args.num.max(1),
                KeyOrder::Random => rng.random_range(0..args.num.max(1)),
            };
            make_key(key, index, args.key_size);
        }
        let ranges: Vec<_> = (0..n).map(|_| values.next_range(args.value_size)).collect();
        let entries: Vec<Entry<'_>> = keys
            .iter()
            .take(n as usize)
            .zip(ranges)
            .map(|(k, r)| (k.as_slice(), (!delete).then(|| values.get(r))))
            .collect();
        probe.op(n, || db.write(&entries))?;
        done += n;
    }
    Ok(done)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadKind {
    Random,
    Missing,
    Multi,
    Seek,
}

/// Runs `--threads` readers of `--reads` operations each; returns
/// (operations, found). A multiread counts each key as one operation.
fn read_threads(db: &dyn BenchDb, args: &BenchArgs, kind: ReadKind) -> BenchResult<(u64, u64)> {
    let stop = AtomicBool::new(false);
    run_readers(db, args, kind, &stop)
}

fn run_readers(
    db: &dyn BenchDb,
    args: &BenchArgs,
    kind: ReadKind,
    stop: &AtomicBool,
) -> BenchResult<(u64, u64)> {
    let r = run_threads(args, |seed| read_loop(db, args, kind, seed));
    stop.store(true, Ordering::Release);
    r
}

/// The seed of reading thread `t`.
pub(super) fn reader_seed(args: &BenchArgs, t: usize) -> u64 {
    args.seed.wrapping_add(1000 + t as u64)
}

/// Runs `reader(seed)` on `--threads` threads, each with its
/// [`reader_seed`]; returns the summed (operations, found).
pub(super) fn run_threads(
    args: &BenchArgs,
    reader: impl Fn(u64) -> BenchResult<(u64, u64)> + Sync,
) -> BenchResult<(u64, u64)> {
    let reader = &reader;
    let results: Vec<BenchResult<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads)
            .map(|t| s.spawn(move || reader(reader_seed(args, t))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("reader thread panicked".into()))
            })
            .collect()
    });
    let mut total = (0, 0);
    for r in results {
        let (ops, found) = r?;
        total.0 += ops;
        total.1 += found;
    }
    Ok(total)
}

fn read_loop(
    db: &dyn BenchDb,
    args: &BenchArgs,
    kind: ReadKind,
    seed: u64,
) -> BenchResult<(u64, u64)> {
    let budget = Budget::new(args, args.reads());
    let mut probe = Probe::new();
    if kind == ReadKind::Multi {
        return multi_batches(args, seed, &budget, |keys| {
            probe.op(keys.len() as u64, || db.multi_get(keys))
        });
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let num = args.num.max(1);
    let (mut ops, mut found) = (0u64, 0u64);
    let mut key = Vec::new();
    let mut seeker = match kind {
        ReadKind::Seek => Some(db.seeker()?),
        _ => None,
    };
    while !budget.done(ops) {
        match kind {
            ReadKind::Random | ReadKind::Missing => {
                let mut index = rng.random_range(0..num);
                if kind == ReadKind::Missing {
                    index += num;
                }
                make_key(&mut key, index, args.key_size);
                found += u64::from(probe.op(1, || db.get(&key))?);
                ops += 1;
            }
            ReadKind::Seek => {
                make_key(&mut key, rng.random_range(0..num), args.key_size);
                let seeker = seeker.as_mut().ok_or("seekrandom without an iterator")?;
                found += u64::from(probe.op(1, || seeker.seek(&key, args.seek_nexts))?);
                ops += 1;
            }
            ReadKind::Multi => return Err("internal: multireads run in multi_batches".into()),
        }
    }
    Ok((ops, found))
}

/// multireadrandom's loop: batches of `--batch_size` random existing keys
/// drawn from `seed` until `budget` is spent, each handed to `multi_get`,
/// which says how many it found. Returns (keys, found).
pub(super) fn multi_batches(
    args: &BenchArgs,
    seed: u64,
    budget: &Budget,
    mut multi_get: impl FnMut(&[&[u8]]) -> BenchResult<usize>,
) -> BenchResult<(u64, u64)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let num = args.num.max(1);
    let (mut ops, mut found) = (0u64, 0u64);
    let mut batch: Vec<Vec<u8>> = vec![Vec::new(); args.batch_size];
    while !budget.done(ops) {
        let n = if budget.deadline.is_some() {
            args.batch_size as u64
        } else {
            (budget.count - ops).min(args.batch_size as u64)
        };
        for k in batch.iter_mut().take(n as usize) {
            make_key(k, rng.random_range(0..num), args.key_size);
        }
        let refs: Vec<&[u8]> = batch.iter().take(n as usize).map(Vec::as_slice).collect();
        found += multi_get(&refs)? as u64;
        ops += n;
    }
    Ok((ops, found))
}

/// Readers as in [`read_threads`] plus one writer overwriting random keys
/// until the readers finish; returns the readers' (operations, found) and
/// the keys the writer wrote.
fn while_writing(
    db: &dyn BenchDb,
    args: &BenchArgs,
    kind: ReadKind,
) -> BenchResult<((u64, u64), u64)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| -> BenchResult<u64> {
            let mut rng = SmallRng::seed_from_u64(args.seed ^ 0xfeed);
            let mut values =
                ValueGen::new(args.seed ^ 0xfeed, args.value_size, args.compression_ratio);
            let mut key = Vec::new();
            let mut written = 0;
            while !stop.load(Ordering::Acquire) {
                make_key(
                    &mut key,
                    rng.random_range(0..args.num.max(1)),
                    args.key_size,
                );
                let v = values.next(args.value_size).to_vec();
                db.write(&[(&key, Some(&v))])?;
                written += 1;
            }
            Ok(written)
        });
        let readers = run_readers(db, args, kind, &stop);
        stop.store(true, Ordering::Release);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err("writer thread panicked".into()))?;
        eprintln!("(writer wrote {written} keys while reading)");
        Ok((readers?, written))
    })
}

/// The bulk-persist pattern of a node that keeps its state in memory and
/// persists it in bursts (Nimbus with RocksDB's vector memtable): each of
/// `--persist_rounds` rounds writes `--num` new keys, in random order, as
/// ONE write batch, then flushes at once. Operations are persists, so
/// micros/op is the time of one persist; the extra text splits it.
fn bulk_persist(db: &dyn BenchDb, args: &BenchArgs) -> BenchResult<(u64, String)> {
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut values = ValueGen::new(args.seed, args.value_size, args.compression_ratio);
    let num = args.num.max(1);
    let mut keys: Vec<Vec<u8>> = vec![Vec::new(); num as usize];
    let (mut write_s, mut flush_s) = (Vec::new(), Vec::new());
    for round in 0..args.persist_rounds {
        for key in keys.iter_mut() {
            make_key(key, round * num + rng.random_range(0..num), args.key_size);
        }
        let ranges: Vec<_> = (0..num)
            .map(|_| values.next_range(args.value_size))
            .collect();
        let entries: Vec<Entry<'_>> = keys
            .iter()
            .zip(ranges)
            .map(|(k, r)| (k.as_slice(), Some(values.get(r))))
            .collect();
        let t = Instant::now();
        db.write(&entries)?;
        write_s.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        db.flush()?;
        flush_s.push(t.elapsed().as_secs_f64());
    }
    let median_ms = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).map_or(0.0, |s| s * 1e3)
    };
    Ok((
        args.persist_rounds,
        format!(
            "({num} entries per persist; median write {:.1} ms + flush {:.1} ms)",
            median_ms(&mut write_s),
            median_ms(&mut flush_s)
        ),
    ))
}
