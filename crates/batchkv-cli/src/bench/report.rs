//! Output: db_bench-style lines and the JSON report.

use std::path::Path;

use serde_json::json;

use super::histogram::Summary;
use super::slow_ops::SlowOp;
use super::workloads::Stats;
use super::write_amp::Cumulative;
use super::BenchArgs;

pub fn print_header(args: &BenchArgs, engine_version: &str, mapping: &[String], dir: &Path) {
    println!("Engine:     {engine_version}");
    println!("Keys:       {} bytes each", args.key_size);
    println!(
        "Values:     {} bytes each ({} bytes after compression)",
        args.value_size,
        (args.value_size as f64 * args.compression_ratio) as u64
    );
    println!("Entries:    {}", args.num);
    println!("Batch size: {}", args.batch_size);
    println!("Lookup:     {}", args.batch_lookup);
    println!(
        "SST:        {} compression, separated key/value blocks: {}",
        args.compression_type, args.separate_key_value_in_data_block
    );
    println!("DB path:    {}", dir.display());
    for (i, line) in mapping.iter().enumerate() {
        println!(
            "{}{line}",
            if i == 0 {
                "Mapping:    "
            } else {
                "            "
            }
        );
    }
    println!("------------------------------------------------");
}

pub fn batchkv_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

pub struct BenchRecord {
    pub name: String,
    pub ops: u64,
    pub seconds: f64,
    /// Process CPU time during the benchmark (see `workloads::Stats`).
    pub cpu_seconds: f64,
    pub extra: String,
    /// Per-operation latencies, with `--histogram`.
    pub latency: Option<Summary>,
    /// The slowest operations explained, with `--slowest`.
    pub slowest: Vec<SlowOp>,
    /// Why the engine did not run this benchmark.
    pub skipped: Option<String>,
    /// File bytes and user bytes from the start of the run to the end of
    /// this benchmark.
    pub write_amp: Option<Cumulative>,
    /// Further figures for the JSON report (see `workloads::Stats`).
    pub fields: Vec<(&'static str, f64)>,
}

impl BenchRecord {
    pub fn new(name: &str, stats: &Stats, _args: &BenchArgs) -> BenchRecord {
        BenchRecord {
            name: name.to_string(),
            ops: stats.ops,
            seconds: stats.seconds,
            cpu_seconds: stats.cpu_seconds,
            extra: stats.extra.clone(),
            latency: None,
            slowest: Vec::new(),
            skipped: None,
            write_amp: None,
            fields: stats.fields.clone(),
        }
    }

    pub fn skipped(name: &str, why: &str) -> BenchRecord {
        BenchRecord {
            name: name.to_string(),
            ops: 0,
            seconds: 0.0,
            cpu_seconds: 0.0,
            extra: String::new(),
            latency: None,
            slowest: Vec::new(),
            skipped: Some(why.to_string()),
            write_amp: None,
            fields: Vec::new(),
        }
    }

    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn micros_per_op(&self) -> f64 {
        if self.ops > 0 {
            self.seconds * 1e6 / self.ops as f64
        } else {
            0.0
        }
    }

    /// `name : X micros/op Y ops/sec Z seconds N operations; extra [cpu C micros/op]`
    /// (db_bench's line, plus the process CPU time per operation).
    pub fn db_bench_line(&self) -> String {
        format!(
            "{:<12} : {:>10.3} micros/op {:.0} ops/sec {:.3} seconds {} operations;{}{} [cpu {:.3} micros/op]",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec(),
            self.seconds,
            self.ops,
            if self.extra.is_empty() { "" } else { " " },
            self.extra,
            if self.ops > 0 { self.cpu_seconds * 1e6 / self.ops as f64 } else { 0.0 },
        )
    }
}

pub struct Report {
    engine: String,
    version: String,
    records: Vec<BenchRecord>,
}

impl Report {
    pub fn new(engine: &str, version: &str) -> Report {
        Report {
            engine: engine.to_string(),
            version: version.to_string(),
            records: Vec::new(),
        }
    }

    pub fn push(&mut self, r: BenchRecord) {
        self.records.push(r);
    }

    /// Operations per second of the last run (not skipped) of `name`.
    pub fn ops_per_sec(&self, name: &str) -> Option<f64> {
        self.records
            .iter()
            .rev()
            .find(|r| r.name == name && r.skipped.is_none())
            .map(BenchRecord::ops_per_sec)
    }

    pub fn write_json(&self, path: &Path, args: &BenchArgs) -> std::io::Result<()> {
        let options = json!({
            "num": args.num, "reads": args.reads(), "threads": args.threads,
            "batch_size": args.batch_size, "key_size": args.key_size,
            "value_size": args.value_size, "compression_ratio": args.compression_ratio,
            "sync": args.sync, "disable_wal": args.disable_wal,
            "write_buffer_size": args.write_buffer_size,
            "max_write_buffer_number": args.max_write_buffer_number,
            "batch_lookup": args.batch_lookup, "paranoid_memory_checks": args.paranoid_memory_checks,
            "bloom_bits": args.bloom_bits, "block_size": args.block_size,
            "block_restart_interval": args.block_restart_interval, "seek_nexts": args.seek_nexts,
            "seed": args.seed, "duration": args.duration,
            "compression_type": args.compression_type, "compression_level": args.compression_level,
            "separate_key_value_in_data_block": args.separate_key_value_in_data_block,
            "cache_size": args.cache_size, "max_background_jobs": args.max_background_jobs,
            "open_files": args.open_files,
            "level0_file_num_compaction_trigger": args.level0_file_num_compaction_trigger,
            "max_bytes_for_level_base": args.max_bytes_for_level_base,
            "max_bytes_for_level_multiplier": args.max_bytes_for_level_multiplier,
            "target_file_size_base": args.target_file_size_base,
            "disable_auto_compactions": args.disable_auto_compactions,
            "memtablerep": args.memtablerep, "histogram": args.histogram,
            "memtable_point_index": args.memtable_point_index,
            "persist_rounds": args.persist_rounds,
        });
        let benchmarks: Vec<_> = self
            .records
            .iter()
            .map(|r| {
                let mut e = json!({
                    "name": r.name, "ops": r.ops, "seconds": r.seconds, "cpu_seconds": r.cpu_seconds,
                    "ops_per_sec": r.ops_per_sec(), "micros_per_op": r.micros_per_op(),
                    "options": options, "engine": self.engine, "engine_version": self.version,
                });
                if !r.slowest.is_empty() {
                    e["slowest"] = r.slowest.iter().map(|o| o.to_json()).collect();
                }
                if let Some(l) = &r.latency {
                    e["latency"] = l.to_json();
                }
                if let Some(w) = &r.write_amp {
                    e["cumulative_file_bytes"] = json!(w.file_bytes);
                    e["cumulative_user_bytes"] = json!(w.user_bytes);
                    e["write_amplification"] = json!(w.ratio());
                }
                for (k, v) in &r.fields {
                    e[*k] = json!(v);
                }
                if let Some(why) = &r.skipped {
                    e["skipped"] = json!(why);
                }
                e
            })
            .collect();
        let doc = json!({
            "engine": self.engine, "engine_version": self.version,
            "version": batchkv_version(), "benchmarks": benchmarks,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
    }
}
