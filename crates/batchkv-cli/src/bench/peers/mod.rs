//! The engines `bench --engine=` can run, and how the bench's flags map onto
//! each peer's options.
//!
//! batchkv is always linked. Each peer sits behind its own cargo feature
//! (`peer-rocksdb`, `peer-speedb`, `peer-fjall`): RocksDB and Speedb export
//! the same C symbols and cannot be linked into one executable, so an engine
//! that is not linked in is run by `--engines` through a separately built
//! binary (see `compare.rs`).
//!
//! RocksDB and Speedb share one option model ([`RocksFamily`]): DB, column
//! family and block-based-table settings as `key=value` pairs, rendered as an
//! options string for RocksDB (`Options::get_options_from_string`) and as an
//! OPTIONS file for Speedb, whose Rust wrapper has no options-string entry
//! point but can load an OPTIONS file (`Options::load_latest`). After opening,
//! the DB's own OPTIONS file is read back ([`options_file_report`]) to show
//! which settings took: RocksDB silently ignores some spellings (Speedb's
//! documented `speedb.HashSpdRepFactory`, for one).

#[cfg(feature = "peer-fjall")]
mod fjall;
#[cfg(any(test, feature = "peer-rocksdb", feature = "peer-speedb"))]
mod options;
#[cfg(any(feature = "peer-rocksdb", feature = "peer-speedb"))]
mod rocks_family;
#[cfg(feature = "peer-rocksdb")]
mod rocksdb;
#[cfg(feature = "peer-speedb")]
mod speedb;

use std::path::Path;

use super::engine::{BatchKv, BenchDb, BenchResult, EngineConfig};
use super::BenchArgs;

/// Every engine name `--engine` accepts.
pub const ENGINES: &[&str] = &["batchkv", "rocksdb", "speedb", "fjall"];

/// True if `engine` is linked into this binary.
pub fn linked(engine: &str) -> bool {
    match engine {
        "batchkv" => true,
        "rocksdb" => cfg!(feature = "peer-rocksdb"),
        "speedb" => cfg!(feature = "peer-speedb"),
        "fjall" => cfg!(feature = "peer-fjall"),
        _ => false,
    }
}

/// The cargo feature that links `engine`.
pub fn feature_of(engine: &str) -> String {
    format!("peer-{engine}")
}

/// An opened engine and what it was told.
pub struct Opened {
    pub db: Box<dyn BenchDb>,
    /// Engine name and version, e.g. `rocksdb 11.8.1 (rust-rocksdb 0.25)`.
    pub version: String,
    /// Printed lines: `--flag=value -> peer setting`, settings a peer cannot
    /// take, and what the DB's OPTIONS file says.
    pub mapping: Vec<String>,
}

/// Opens `engine` on `dir` with the bench's settings.
pub fn open(engine: &str, dir: &Path, args: &BenchArgs, cfg: &EngineConfig) -> BenchResult<Opened> {
    let fresh = !args.use_existing_db;
    match engine {
        "batchkv" => Ok(Opened {
            db: Box::new(BatchKv::open(dir, cfg, fresh)?),
            version: format!("batchkv {}", super::report::batchkv_version()),
            mapping: Vec::new(),
        }),
        #[cfg(feature = "peer-rocksdb")]
        "rocksdb" => rocksdb::open(dir, args, cfg, fresh),
        #[cfg(feature = "peer-speedb")]
        "speedb" => speedb::open(dir, args, cfg, fresh),
        #[cfg(feature = "peer-fjall")]
        "fjall" => fjall::open(dir, args, cfg, fresh),
        other => Err(check_linked(other)
            .err()
            .unwrap_or_else(|| format!("internal: engine {other:?} has no open").into())),
    }
}

/// Ok if `engine` is known and linked into this binary; else why not.
pub fn check_linked(engine: &str) -> BenchResult<()> {
    if linked(engine) {
        Ok(())
    } else if ENGINES.contains(&engine) {
        Err(format!(
            "engine {engine:?} is not linked into this binary: build it with \
             `cargo build --release -p batchkv-cli --features {}`{}",
            feature_of(engine),
            if engine == "speedb" {
                " into its own CARGO_TARGET_DIR (it cannot link with RocksDB)"
            } else {
                ""
            }
        )
        .into())
    } else {
        Err(format!("unknown engine {engine:?} (known: {})", ENGINES.join(", ")).into())
    }
}

/// `--destroy_db` for a RocksDB-family `engine`: the engine's own
/// `DestroyDB`, which takes the database's LOCK first (failing if another
/// process has it open) and deletes only the files the engine names.
#[cfg_attr(
    not(any(feature = "peer-rocksdb", feature = "peer-speedb")),
    allow(unused_variables, reason = "dir is used by the linked peers only")
)]
pub fn destroy(engine: &str, dir: &Path) -> BenchResult<()> {
    match engine {
        #[cfg(feature = "peer-rocksdb")]
        "rocksdb" => rocksdb::destroy(dir),
        #[cfg(feature = "peer-speedb")]
        "speedb" => speedb::destroy(dir),
        other => check_linked(other).and_then(|()| {
            Err(format!("--destroy_db: bench cannot destroy a {other} database").into())
        }),
    }
}

/// The newest `OPTIONS-NNNNNN` file RocksDB or Speedb wrote in `dir`.
#[cfg(any(test, feature = "peer-rocksdb", feature = "peer-speedb"))]
fn latest_options_file(dir: &Path) -> std::io::Result<Option<std::path::PathBuf>> {
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(num) = name
            .to_str()
            .and_then(|n| n.strip_prefix("OPTIONS-"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| num > *b) {
            best = Some((num, entry.path()));
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// `key=value` pairs, e.g. an OPTIONS file's `[Version]` section.
#[cfg(any(feature = "peer-rocksdb", feature = "peer-speedb"))]
type Pairs = Vec<(String, String)>;

/// Reads back the DB's OPTIONS file and reports, for each `(key, expect)`,
/// the value it recorded and whether it contains `expect`. Returns the
/// printed lines and the `[Version]` section (`key=value` pairs).
#[cfg(any(feature = "peer-rocksdb", feature = "peer-speedb"))]
fn options_file_report(
    dir: &Path,
    checks: &[(String, String)],
) -> BenchResult<(Vec<String>, Pairs)> {
    let path = latest_options_file(dir)?.ok_or("the DB wrote no OPTIONS file")?;
    let text = std::fs::read_to_string(&path)?;
    let parsed = options::parse_options_file(&text);
    let mut lines = Vec::new();
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let file = file.unwrap_or_default();
    for (key, expect) in checks {
        match parsed.get(key) {
            Some(v) if v.contains(expect.as_str()) => {
                lines.push(format!("{file}: {key}={v} (took)"))
            }
            Some(v) => lines.push(format!(
                "{file}: {key}={v} -- WARNING: expected {expect:?}, the setting did not take"
            )),
            None => lines.push(format!(
                "{file}: no {key} -- WARNING: the setting is unknown to this build"
            )),
        }
    }
    Ok((lines, parsed.version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batchkv_is_always_linked_and_unknown_engines_are_not() {
        assert!(linked("batchkv"));
        assert!(!linked("leveldb"));
        assert_eq!(
            linked("rocksdb"),
            cfg!(feature = "peer-rocksdb"),
            "linked() must follow the feature"
        );
    }

    /// Every engine linked into this build answers the BenchDb calls the
    /// same way on the same data (batchkv always; peers with their feature).
    #[test]
    fn every_linked_engine_round_trips_the_same_data() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: BenchArgs,
        }
        let args = Cli::parse_from(["bench", "--write_buffer_size=1048576"]).args;
        let cfg = args.engine_config().unwrap();
        for engine in ENGINES.iter().copied().filter(|e| linked(e)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            let opened = open(engine, &path, &args, &cfg).unwrap();
            let db = opened.db;
            let keys: Vec<Vec<u8>> = (0..2000u32)
                .map(|i| format!("k{i:06}").into_bytes())
                .collect();
            for chunk in keys.chunks(100) {
                let entries: Vec<_> = chunk
                    .iter()
                    .map(|k| (k.as_slice(), Some(&b"value"[..])))
                    .collect();
                db.write(&entries).unwrap();
            }
            db.write(&[(b"k000007".as_slice(), None)]).unwrap();
            assert!(db.get(b"k000001").unwrap(), "{engine}");
            assert!(!db.get(b"k000007").unwrap(), "{engine}: deleted");
            assert!(!db.get(b"zz").unwrap(), "{engine}");
            let batch: Vec<&[u8]> = vec![b"k000003", b"k000007", b"nope", b"k001999"];
            assert_eq!(db.multi_get(&batch).unwrap(), 2, "{engine}");
            db.flush().unwrap();
            assert_eq!(db.scan(false).unwrap(), 1999, "{engine}");
            assert_eq!(db.scan(true).unwrap(), 1999, "{engine}");
            db.compact().unwrap();
            let mut seeker = db.seeker().unwrap();
            assert!(seeker.seek(b"k000500", 3).unwrap(), "{engine}");
            assert!(!seeker.seek(b"zz", 3).unwrap(), "{engine}: past the end");
            drop(seeker);
            assert!(db.get(b"k001999").unwrap(), "{engine}: after compaction");
            db.close_box().unwrap();
        }
    }

    #[test]
    fn latest_options_file_picks_the_highest_number() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "OPTIONS-000005",
            "OPTIONS-000012",
            "OPTIONS-000009.dbtmp",
            "LOG",
        ] {
            std::fs::write(dir.path().join(n), "x").unwrap();
        }
        let p = latest_options_file(dir.path()).unwrap().unwrap();
        assert_eq!(p.file_name().unwrap(), "OPTIONS-000012");
    }
}
