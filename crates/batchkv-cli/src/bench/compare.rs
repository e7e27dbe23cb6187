//! `--engines=a,b --repeat N`: the same benchmark list on several engines,
//! in alternation (A B A B …), and a table of medians with batchkv/peer
//! ratios.
//!
//! Every run is a child process (`batchkv bench --engine=E --db=FRESH
//! --json=FILE` plus the caller's other flags, forwarded verbatim), so each
//! run starts with a fresh process and directory, and an engine that cannot
//! be linked into this binary (Speedb next to RocksDB) runs from its own
//! build: `--engine_bin=speedb=PATH`, by default `batchkv-speedb` next to
//! this binary (`scripts/build-peers.sh` puts it there, in target/peers/release).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::{json, Value};

use super::engine::BenchResult;
use super::{cleanup, peers, plot, BenchArgs};

/// Flags this module consumes instead of forwarding to the runs.
const CONSUMED: &[&str] = &[
    "engines",
    "engine",
    "repeat",
    "engine_bin",
    "plot",
    "json",
    "db",
];

/// One child run's results.
struct RunResult {
    engine: String,
    repetition: usize,
    doc: Value,
}

pub fn run(args: &BenchArgs, names: &[&str]) -> BenchResult<ExitCode> {
    let engines = parse_engines(args.engines.as_deref().unwrap_or(&args.engine))?;
    if args.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    if args.use_existing_db || args.destroy_db {
        return Err(
            "--use_existing_db and --destroy_db cannot be combined with --engines (each run \
             starts fresh in a directory of its own)"
                .into(),
        );
    }
    let bins = engines
        .iter()
        .map(|e| Ok((e.clone(), binary_for(e, &args.engine_bin)?)))
        .collect::<BenchResult<HashMap<String, PathBuf>>>()?;
    let forwarded = forwarded_args(std::env::args_os().collect());
    // The runs' directories live in a directory of bench's own (inside
    // --db if given), removed at the end and on a signal.
    let root = match &args.db {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            cleanup::TempDir::new("compare-", Some(d))?
        }
        None => cleanup::TempDir::new("batchkv-compare-", None)?,
    };

    let total = engines.len() * args.repeat;
    let mut runs = Vec::new();
    for rep in 1..=args.repeat {
        for engine in &engines {
            let n = runs.len() + 1;
            println!(
                "=== run {n}/{total}: engine {engine}, repetition {rep}/{} ===",
                args.repeat
            );
            let dir = root.path().join(format!("{engine}-{rep}"));
            let json_path = root.path().join(format!("{engine}-{rep}.json"));
            let status = cleanup::run_child(
                Command::new(&bins[engine])
                    .arg("bench")
                    .args(&forwarded)
                    .arg(format!("--engine={engine}"))
                    .arg(format!("--db={}", dir.display()))
                    .arg(format!("--json={}", json_path.display())),
            )?;
            if let Some(code @ (129 | 130 | 143)) = status.code() {
                // The run was interrupted (Ctrl-C reaches the whole process
                // group): stop as interrupted too, removing `root`.
                eprintln!("bench: the {engine} run was interrupted");
                return Ok(ExitCode::from(code as u8));
            }
            if !status.success() {
                return Err(format!("the {engine} run (repetition {rep}) failed: {status}").into());
            }
            let doc: Value = serde_json::from_slice(&std::fs::read(&json_path)?)?;
            // Free the disk before the next run (the directory is inside
            // `root`, bench's own).
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            runs.push(RunResult {
                engine: engine.clone(),
                repetition: rep,
                doc,
            });
        }
    }

    let table = medians(names, &engines, &runs);
    println!();
    print!("{}", render_table(&table, args.repeat));
    print!("{}", render_ceiling_ratios(&engines, &runs));
    if let Some(path) = &args.json {
        write_json(path, args, &engines, &bins, &runs, &table)?;
    }
    if let Some(path) = &args.plot {
        plot::bar_chart(path, &table, args.repeat)?;
        println!("chart written to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_engines(s: &str) -> BenchResult<Vec<String>> {
    let engines: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(String::from)
        .collect();
    if engines.is_empty() {
        return Err("--engines needs at least one engine".into());
    }
    for (i, e) in engines.iter().enumerate() {
        if engines[..i].contains(e) {
            return Err(format!("--engines lists {e:?} twice").into());
        }
        if !peers::ENGINES.contains(&e.as_str()) {
            return Err(format!(
                "unknown engine {e:?} (known: {})",
                peers::ENGINES.join(", ")
            )
            .into());
        }
    }
    Ok(engines)
}

/// The binary that runs `engine`: this one if it is linked in, else
/// `--engine_bin=ENGINE=PATH`, else `batchkv-ENGINE` next to this binary.
fn binary_for(engine: &str, engine_bin: &[String]) -> BenchResult<PathBuf> {
    for spec in engine_bin {
        match spec.split_once('=') {
            Some((e, p)) if e == engine => return Ok(PathBuf::from(p)),
            Some(_) => {}
            None => return Err(format!("--engine_bin: expected ENGINE=PATH, got {spec:?}").into()),
        }
    }
    let me = std::env::current_exe()?;
    if peers::linked(engine) {
        return Ok(me);
    }
    let sibling = me.with_file_name(format!("batchkv-{engine}"));
    if sibling.exists() {
        return Ok(sibling);
    }
    Err(format!(
        "engine {engine:?} is not linked into this binary and {} does not exist: \
         build it with `cargo build --release -p batchkv-cli --features {}` (Speedb into its own \
         CARGO_TARGET_DIR) and pass --engine_bin={engine}=PATH, or run scripts/build-peers.sh",
        sibling.display(),
        peers::feature_of(engine)
    )
    .into())
}

/// The arguments after `bench`, without the flags this module consumes
/// (in both `--flag=value` and `--flag value` forms).
fn forwarded_args(argv: Vec<OsString>) -> Vec<OsString> {
    let mut it = argv.into_iter().skip_while(|a| a != "bench");
    it.next(); // "bench" itself
    let mut out = Vec::new();
    while let Some(arg) = it.next() {
        let s = arg.to_string_lossy();
        let flag = s
            .strip_prefix("--")
            .map(|f| f.split_once('=').map_or(f, |(n, _)| n));
        match flag {
            Some(name) if CONSUMED.contains(&name) => {
                if !s.contains('=') {
                    it.next(); // its value
                }
            }
            _ => out.push(arg),
        }
    }
    out
}

/// Medians per benchmark (in list order) and engine.
pub struct Table {
    pub benchmarks: Vec<String>,
    pub engines: Vec<String>,
    /// `ops_per_sec[b][e]`: the median, or None if skipped / absent.
    pub ops_per_sec: Vec<Vec<Option<f64>>>,
    /// `ops_per_cpu_sec[b][e]`: the median of operations per second of
    /// process CPU time — what a benchmark costs, without the time it
    /// waited for a core on a shared machine.
    pub ops_per_cpu_sec: Vec<Vec<Option<f64>>>,
    /// `write_amp[b][e]`: the median of the cumulative write amplification
    /// after benchmark `b` (file bytes / user bytes, `write_amp.rs`).
    pub write_amp: Vec<Vec<Option<f64>>>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn medians(names: &[&str], engines: &[String], runs: &[RunResult]) -> Table {
    let per_engine = |value: &dyn Fn(&Value) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
        (0..names.len())
            .map(|b| {
                engines
                    .iter()
                    .map(|e| {
                        let samples = runs
                            .iter()
                            .filter(|r| &r.engine == e)
                            .filter_map(|r| r.doc["benchmarks"].get(b))
                            .filter(|entry| entry.get("skipped").is_none())
                            .filter_map(value)
                            .collect();
                        median(samples)
                    })
                    .collect()
            })
            .collect()
    };
    Table {
        benchmarks: names.iter().map(|s| s.to_string()).collect(),
        engines: engines.to_vec(),
        ops_per_sec: per_engine(&|entry| entry["ops_per_sec"].as_f64()),
        ops_per_cpu_sec: per_engine(&|entry| {
            let cpu = entry["cpu_seconds"].as_f64().filter(|&c| c > 0.0)?;
            Some(entry["ops"].as_f64()? / cpu)
        }),
        write_amp: per_engine(&|entry| entry["write_amplification"].as_f64()),
    }
}

/// The engine the ratios are relative to: batchkv if compared, else the first.
pub fn base_engine(engines: &[String]) -> usize {
    engines.iter().position(|e| e == "batchkv").unwrap_or(0)
}

fn render_table(t: &Table, repeat: usize) -> String {
    let base = base_engine(&t.engines);
    let mut out = format!(
        "Medians of {repeat} run(s) per engine, alternating engines; ratio > 1: {} faster\n",
        t.engines[base],
    );
    out.push_str(&render_rows(t, "benchmark (ops/sec)", &t.ops_per_sec));
    out.push_str("\nThe same per second of process CPU time (ignores waiting for a core):\n");
    out.push_str(&render_rows(t, "benchmark (ops/cpu-s)", &t.ops_per_cpu_sec));
    if t.write_amp.iter().flatten().any(Option::is_some) {
        out.push_str(
            "\nWrite amplification so far (bytes written to files / bytes of keys and values; \
             WAL included); ratio < 1: the base engine writes less\n",
        );
        out.push_str(&render_rows(t, "after benchmark", &t.write_amp));
    }
    out
}

/// Per engine, multireadrandom's keys/s over memceiling's within each run
/// (same process, same flags), and their median; empty unless both ran.
fn render_ceiling_ratios(engines: &[String], runs: &[RunResult]) -> String {
    let ops = |doc: &Value, name: &str| {
        doc["benchmarks"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == name && e.get("skipped").is_none())?["ops_per_sec"]
            .as_f64()
    };
    let mut out = String::new();
    for e in engines {
        let ratios: Vec<f64> = runs
            .iter()
            .filter(|r| &r.engine == e)
            .filter_map(|r| Some(ops(&r.doc, "multireadrandom")? / ops(&r.doc, "memceiling")?))
            .filter(|r| r.is_finite())
            .collect();
        let Some(m) = median(ratios.clone()) else {
            continue;
        };
        if out.is_empty() {
            out.push_str("\nengine/ceiling (multireadrandom / memceiling keys/s, per run):\n");
        }
        let each: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
        out.push_str(&format!(
            "{e:<22} median {m:.3} (runs: {})\n",
            each.join(" ")
        ));
    }
    out
}

fn render_rows(t: &Table, title: &str, values: &[Vec<Option<f64>>]) -> String {
    let base = base_engine(&t.engines);
    let mut header = vec![format!("{title:<22}")];
    header.extend(t.engines.iter().map(|e| format!("{e:>12}")));
    for (i, e) in t.engines.iter().enumerate() {
        if i != base {
            header.push(format!("{:>16}", format!("{}/{e}", t.engines[base])));
        }
    }
    let mut out = header.join(" ");
    out.push('\n');
    for (b, name) in t.benchmarks.iter().enumerate() {
        let row = &values[b];
        let mut cols = vec![format!("{name:<22}")];
        cols.extend(row.iter().map(|v| match v {
            Some(v) if *v < 100.0 => format!("{v:>12.2}"),
            Some(v) => format!("{v:>12.0}"),
            None => format!("{:>12}", "skipped"),
        }));
        for (i, v) in row.iter().enumerate() {
            if i != base {
                cols.push(match (row[base], v) {
                    (Some(a), Some(p)) if *p > 0.0 => format!("{:>15.2}x", a / p),
                    _ => format!("{:>16}", "-"),
                });
            }
        }
        out.push_str(&cols.join(" "));
        out.push('\n');
    }
    out
}

fn write_json(
    path: &Path,
    args: &BenchArgs,
    engines: &[String],
    bins: &HashMap<String, PathBuf>,
    runs: &[RunResult],
    t: &Table,
) -> BenchResult<()> {
    let mut benchmarks = Vec::new();
    let mut versions = HashMap::new();
    for r in runs {
        if let Some(v) = r.doc.get("engine_version") {
            versions.insert(r.engine.clone(), v.clone());
        }
        for (pos, entry) in r.doc["benchmarks"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut e = entry.clone();
            e["engine"] = json!(r.engine);
            e["repetition"] = json!(r.repetition);
            e["position"] = json!(pos);
            benchmarks.push(e);
        }
    }
    let base = base_engine(engines);
    let medians: Vec<Value> = t
        .benchmarks
        .iter()
        .enumerate()
        .flat_map(|(b, name)| {
            t.engines.iter().enumerate().map(move |(i, e)| {
                let ratio = |m: &[Vec<Option<f64>>]| match (m[b][base], m[b][i]) {
                    (Some(a), Some(p)) if p > 0.0 => json!(a / p),
                    _ => Value::Null,
                };
                json!({ "name": name, "position": b, "engine": e,
                        "median_ops_per_sec": t.ops_per_sec[b][i],
                        "base_over_engine": ratio(&t.ops_per_sec),
                        "median_ops_per_cpu_sec": t.ops_per_cpu_sec[b][i],
                        "cpu_base_over_engine": ratio(&t.ops_per_cpu_sec),
                        "median_write_amplification": t.write_amp[b][i] })
            })
        })
        .collect();
    let doc = json!({
        "engines": engines.iter().map(|e| json!({
            "engine": e, "engine_version": versions.get(e),
            "binary": bins.get(e).map(|p| p.display().to_string()),
        })).collect::<Vec<_>>(),
        "repeat": args.repeat,
        "base_engine": engines[base],
        "version": super::report::batchkv_version(),
        "benchmarks": benchmarks,
        "medians": medians,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&doc)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn forwarding_drops_consumed_flags_in_both_forms() {
        let got = forwarded_args(os(&[
            "batchkv",
            "bench",
            "--num",
            "10",
            "--engines=batchkv,rocksdb",
            "--repeat",
            "3",
            "--sync",
            "--json",
            "out.json",
            "--plot=x.svg",
            "--db",
            "/tmp/d",
            "--batch_size=8",
        ]));
        assert_eq!(got, os(&["--num", "10", "--sync", "--batch_size=8"]));
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn table_takes_medians_per_position_and_skips_skipped() {
        let run = |engine: &str, rep, ops: &[f64]| RunResult {
            engine: engine.into(),
            repetition: rep,
            doc: json!({ "benchmarks": ops.iter().map(|o| if *o < 0.0 {
                json!({ "ops_per_sec": 0.0, "skipped": "no" })
            } else {
                json!({ "ops_per_sec": o })
            }).collect::<Vec<_>>() }),
        };
        let runs = vec![
            run("batchkv", 1, &[100.0, 10.0]),
            run("rocksdb", 1, &[50.0, -1.0]),
            run("batchkv", 2, &[300.0, 30.0]),
            run("rocksdb", 2, &[50.0, -1.0]),
        ];
        let engines = vec!["batchkv".to_string(), "rocksdb".to_string()];
        let t = medians(&["fillrandom", "readrandom"], &engines, &runs);
        assert_eq!(t.ops_per_sec[0], vec![Some(200.0), Some(50.0)]);
        assert_eq!(t.ops_per_sec[1], vec![Some(20.0), None]);
        let text = render_table(&t, 2);
        assert!(text.contains("batchkv/rocksdb"), "{text}");
        assert!(text.contains("4.00x"), "{text}");
        assert!(text.contains("skipped"), "{text}");
    }

    #[test]
    fn ceiling_ratios_are_taken_within_each_run() {
        let run = |engine: &str, rep, mrr: f64, ceiling: f64| RunResult {
            engine: engine.into(),
            repetition: rep,
            doc: json!({ "benchmarks": [
                { "name": "fillrandom", "ops_per_sec": 9.0 },
                { "name": "multireadrandom", "ops_per_sec": mrr },
                { "name": "memceiling", "ops_per_sec": ceiling },
            ] }),
        };
        let runs = vec![
            run("batchkv", 1, 1.0, 4.0),
            run("batchkv", 2, 3.0, 6.0),
            run("batchkv", 3, 1.0, 5.0),
        ];
        let text = render_ceiling_ratios(&["batchkv".to_string()], &runs);
        assert!(
            text.contains("median 0.250 (runs: 0.250 0.500 0.200)"),
            "{text}"
        );
        let none = vec![RunResult {
            engine: "batchkv".into(),
            repetition: 1,
            doc: json!({ "benchmarks": [{ "name": "multireadrandom", "ops_per_sec": 1.0 }] }),
        }];
        assert_eq!(render_ceiling_ratios(&["batchkv".to_string()], &none), "");
    }

    #[test]
    fn unknown_engines_and_bad_engine_bin_are_errors() {
        assert!(parse_engines("batchkv,leveldb").is_err());
        assert!(parse_engines("").is_err());
        assert!(parse_engines("batchkv,batchkv").is_err());
        assert!(binary_for("speedb", &["speedb".to_string()]).is_err());
        assert_eq!(
            binary_for("speedb", &["speedb=/x/y".to_string()]).unwrap(),
            PathBuf::from("/x/y")
        );
    }
}
