//! `batchkv bench`: db_bench-compatible workloads.
//!
//! Flags follow db_bench's names and meanings (`--num`, `--reads`,
//! `--batch_size`, …) and accept both `--name=value` and `--name value`;
//! booleans may be bare (`--sync`) or valued (`--sync=0|1|true|false`).

mod ceiling;
mod cleanup;
mod compare;
mod db_dir;
mod engine;
mod gen;
mod hiccup;
mod histogram;
mod peers;
mod plot;
mod progress;
mod report;
mod slow_ops;
mod workloads;
mod write_amp;

use std::path::PathBuf;
use std::process::ExitCode;

use batchkv::{BatchLookup, MemTableKind};

use engine::EngineConfig;
use report::{BenchRecord, Report};

fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected a boolean (1/0/true/false), got {s:?}")),
    }
}

/// `--open_files`: -1 (no limit) or a positive count.
fn parse_open_files(s: &str) -> Result<i64, String> {
    match s.parse::<i64>() {
        Ok(n) if n == -1 || n >= 1 => Ok(n),
        _ => Err(format!(
            "expected -1 (no limit) or a count of at least 1, got {s:?}"
        )),
    }
}

/// The benchmark's flags (db_bench names).
#[derive(clap::Args, Debug, Clone)]
#[command(rename_all = "snake_case")]
pub struct BenchArgs {
    /// Comma-separated list of benchmarks to run in order. `memceiling`
    /// reads a plain skip list of fillrandom's keys as multireadrandom reads
    /// the engine, with the ideal interleaved prefetching descent: the
    /// memory system's ceiling (docs/benchmark.md). `hiccup` times the gaps
    /// of an idle clock-reading loop: the machine's own stalls, a floor
    /// under every benchmark's max latency.
    #[arg(long, default_value = "fillrandom,readrandom,multireadrandom")]
    pub benchmarks: String,
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Reads per reading thread (default: --num).
    #[arg(long)]
    pub reads: Option<u64>,
    /// Reading threads for read benchmarks.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Entries per write batch, and keys per multiread batch.
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,
    /// Key size in bytes (keys are zero-padded decimal indexes).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Fraction of each value that is random (the rest repeats it).
    #[arg(long, default_value_t = 0.5)]
    pub compression_ratio: f64,
    /// Seed for key choice and values.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Fsync the WAL on every write.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub sync: bool,
    /// Skip the WAL.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub disable_wal: bool,
    /// Memtable size in bytes before it is flushed.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Memtables in memory before writes stall.
    #[arg(long, default_value_t = 2)]
    pub max_write_buffer_number: usize,
    /// Memtable batch lookup strategy: per_key, finger, bfs or auto.
    #[arg(long, default_value = "auto")]
    pub batch_lookup: String,
    /// Verify memtable ordering and entry checksums during lookups.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub paranoid_memory_checks: bool,
    /// Bloom filter bits per key (0: none).
    #[arg(long, default_value_t = 10)]
    pub bloom_bits: usize,
    /// SST data block size.
    #[arg(long, default_value_t = 4096)]
    pub block_size: usize,
    /// Keys between restart points in SST data blocks.
    #[arg(long, default_value_t = 16)]
    pub block_restart_interval: usize,
    /// Background threads: one flush thread, the rest compact.
    #[arg(long, default_value_t = 2)]
    pub max_background_jobs: usize,
    /// Most SST files kept open (`max_open_files`); -1, db_bench's default
    /// (RocksDB's), keeps every table open and its reader pinned.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_parser = parse_open_files)]
    pub open_files: i64,
    /// L0 files that trigger compaction.
    #[arg(long, default_value_t = 4)]
    pub level0_file_num_compaction_trigger: usize,
    /// Target bytes of L1.
    #[arg(long, default_value_t = 256 << 20)]
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels.
    #[arg(long, default_value_t = 10.0)]
    pub max_bytes_for_level_multiplier: f64,
    /// Target size of compaction output files.
    #[arg(long, default_value_t = 64 << 20)]
    pub target_file_size_base: u64,
    /// No background compactions (the `compact` benchmark still compacts).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub disable_auto_compactions: bool,
    /// SST block compression: none, lz4 or zstd.
    #[arg(long, default_value = "lz4")]
    pub compression_type: String,
    /// ZSTD level.
    #[arg(long, default_value_t = 3)]
    pub compression_level: i32,
    /// Store keys and values of SST data blocks apart.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub separate_key_value_in_data_block: bool,
    /// batchkv's latency histograms (`Options::statistics`); `false`
    /// measures their cost.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "true")]
    pub statistics: bool,
    /// Block cache bytes.
    #[arg(long, default_value_t = 32 << 20)]
    pub cache_size: usize,
    /// Memtable: skiplist, vector or sorted_hash[:BUCKETS[:VECTOR_LIMIT]].
    #[arg(long, default_value = "skiplist")]
    pub memtablerep: String,
    /// batchkv's skip-list point index (`memtable_point_index`); the peers
    /// have no equivalent.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub memtable_point_index: bool,
    /// bulkpersist: rounds of (one batch of --num new keys, then flush).
    #[arg(long, default_value_t = 5)]
    pub persist_rounds: u64,
    /// Nexts after each seek in seekrandom.
    #[arg(long, default_value_t = 10)]
    pub seek_nexts: usize,
    /// Seconds per benchmark; overrides counts when > 0.
    #[arg(long, default_value_t = 0)]
    pub duration: u64,
    /// Database directory; kept afterwards. It must be missing, empty, or
    /// hold a database of --engine (see --use_existing_db, --destroy_db):
    /// bench deletes nothing it did not create. Without it a temporary
    /// directory is used and removed (also on Ctrl-C / SIGTERM).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Reuse the database in --db instead of starting empty.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub use_existing_db: bool,
    /// Delete the database in --db first: only its own files, after taking
    /// its lock (fails if another process has it open). Other files and
    /// directories in --db are kept.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub destroy_db: bool,
    /// Write results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    // Peers and reporting (issue 6).
    /// Engine to run: batchkv, rocksdb, speedb or fjall (peers need their
    /// cargo feature: peer-rocksdb, peer-speedb, peer-fjall).
    #[arg(long, default_value = "batchkv")]
    pub engine: String,
    /// Comma-separated engines to compare, run in alternation (A B A B …)
    /// --repeat times, each on a fresh directory; prints medians and
    /// batchkv/peer ratios.
    #[arg(long)]
    pub engines: Option<String>,
    /// Repetitions per engine with --engines.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// ENGINE=PATH: the binary that runs ENGINE when it is not linked into
    /// this one (default: `batchkv-ENGINE` next to this binary).
    #[arg(long, value_delimiter = ',')]
    pub engine_bin: Vec<String>,
    /// Draw the --engines comparison as an SVG bar chart.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print per-operation latency percentiles (p50/p95/p99/p99.9/max).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, default_value = "false")]
    pub histogram: bool,
    /// Explain the N slowest operations of each benchmark: time on CPU,
    /// blocking waits and preemptions of their thread (four system calls
    /// per operation: not for throughput runs).
    #[arg(long, default_value_t = 0)]
    pub slowest: usize,
}

impl BenchArgs {
    fn reads(&self) -> u64 {
        self.reads.unwrap_or(self.num)
    }

    fn engine_config(&self) -> Result<EngineConfig, Box<dyn std::error::Error + Send + Sync>> {
        Ok(EngineConfig {
            sync: self.sync,
            disable_wal: self.disable_wal,
            write_buffer_size: self.write_buffer_size,
            max_write_buffer_number: self.max_write_buffer_number,
            batch_lookup: self.batch_lookup.parse::<BatchLookup>()?,
            paranoid_memory_checks: self.paranoid_memory_checks,
            bloom_bits: self.bloom_bits,
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            max_background_jobs: self.max_background_jobs,
            max_open_files: usize::try_from(self.open_files).unwrap_or(usize::MAX),
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            target_file_size_base: self.target_file_size_base,
            disable_auto_compactions: self.disable_auto_compactions,
            compression: self.compression_type.parse()?,
            compression_level: self.compression_level,
            separate_key_value_in_data_block: self.separate_key_value_in_data_block,
            statistics: self.statistics,
            cache_size: self.cache_size,
            memtable: self.memtablerep.parse::<MemTableKind>()?,
            memtable_point_index: self.memtable_point_index,
        })
    }
}

/// Operations the progress bar expects for `name` (0: unknown).
fn progress_total(name: &str, args: &BenchArgs) -> u64 {
    if args.duration > 0 {
        return 0;
    }
    match name {
        "fillseq" | "fillrandom" | "overwrite" | "deleterandom" => args.num,
        "readrandom"
        | "readmissing"
        | "multireadrandom"
        | "memceiling"
        | "seekrandom"
        | "readwhilewriting"
        | "multireadwhilewriting" => args.reads().saturating_mul(args.threads as u64),
        _ => 0,
    }
}

/// After multireadrandom or memceiling, once both ran: the engine's keys/s
/// over the ceiling's.
fn ceiling_ratio_line(report: &Report, just_ran: &str, batch: usize) -> Option<String> {
    if just_ran != "multireadrandom" && just_ran != "memceiling" {
        return None;
    }
    let engine = report.ops_per_sec("multireadrandom")?;
    let ceiling = report.ops_per_sec("memceiling")?;
    (ceiling > 0.0).then(|| {
        format!(
            "engine/ceiling : {:.3} (multireadrandom {engine:.0} / memceiling {ceiling:.0} keys/s, batch {batch})",
            engine / ceiling
        )
    })
}

pub fn run(args: BenchArgs) -> Result<ExitCode, Box<dyn std::error::Error + Send + Sync>> {
    if args.batch_size == 0 || args.key_size == 0 || args.threads == 0 {
        return Err("--batch_size, --key_size and --threads must be at least 1".into());
    }
    let names: Vec<&str> = args
        .benchmarks
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    for n in &names {
        if !workloads::is_known(n) {
            return Err(format!(
                "unknown benchmark {n:?} (known: {})",
                workloads::KNOWN.join(", ")
            )
            .into());
        }
    }
    cleanup::install()?;
    if args.engines.is_some() || args.repeat > 1 {
        // `--repeat` alone repeats `--engine` (one child run each).
        return compare::run(&args, &names);
    }
    let cfg = args.engine_config()?;
    peers::check_linked(&args.engine)?;
    let tmp;
    let dir = match &args.db {
        Some(d) => {
            db_dir::prepare(&args.engine, d, args.use_existing_db, args.destroy_db)?;
            d.clone()
        }
        None => {
            if args.use_existing_db || args.destroy_db {
                return Err("--use_existing_db and --destroy_db need --db".into());
            }
            tmp = cleanup::TempDir::new("batchkv-bench-", None)?;
            tmp.path().to_path_buf()
        }
    };
    let opened = peers::open(&args.engine, &dir, &args, &cfg)?;
    let mapping = opened.mapping;
    report::print_header(&args, &opened.version, &mapping, &dir);
    let db = opened.db;
    histogram::enable(args.histogram, args.slowest);
    let mut report = Report::new(&args.engine, &opened.version);
    let mut write_amp = write_amp::WriteAmp::start();
    for name in names {
        if let Some(why) = db.skip_reason(name) {
            println!("{name:<12} : skipped ({why})");
            report.push(BenchRecord::skipped(name, &why));
            continue;
        }
        progress::begin(name, progress_total(name, &args));
        let stats = workloads::run(name, db.as_ref(), &args);
        progress::finish();
        let stats = stats?;
        let mut rec = BenchRecord::new(name, &stats, &args);
        println!("{}", rec.db_bench_line());
        rec.write_amp = write_amp.after(stats.user_bytes);
        let wrote = stats.user_bytes > 0 || matches!(name, "flush" | "compact");
        if let Some(line) = rec.write_amp.filter(|_| wrote).and_then(|w| w.line()) {
            println!("{line}");
        }
        rec.latency = histogram::take();
        if let Some(l) = &rec.latency {
            println!("{}", l.lines());
        }
        rec.slowest = histogram::take_slowest();
        for op in &rec.slowest {
            println!("{}", op.line());
        }
        report.push(rec);
        if let Some(line) = ceiling_ratio_line(&report, name, args.batch_size) {
            println!("{line}");
        }
        if name.starts_with("fill") || name == "overwrite" {
            if let Some((kind, bytes, entries)) = db.memtable_usage() {
                println!(
                    "memtable {kind}: {bytes} bytes, {entries} entries in the active memtable, {:.1} bytes/entry",
                    bytes as f64 / entries.max(1) as f64
                );
            }
        }
    }
    db.close_box()?;
    if let Some(path) = &args.json {
        report.write_json(path, &args)?;
    }
    Ok(ExitCode::SUCCESS)
}
