//! Speedb (speedb crate 0.0.5, Speedb 2.7 on RocksDB 8.1) as a bench engine.
//!
//! The speedb wrapper has neither an options-string entry point nor a setter
//! for Speedb's sorted-hash memtable, but it can load an OPTIONS file
//! (`Options::load_latest`), which RocksDB parses with the same option parser
//! as an options string. So the settings are written as an OPTIONS file into
//! a scratch directory, loaded, and the DB is opened with the loaded column
//! family descriptor through `open_cf_descriptors` (the loaded DB options
//! carry default column-family options; only the descriptor has ours).
//! `memtable_factory=hash_spdb` selects the sorted-hash memtable; the DB's own
//! OPTIONS file is read back to show it took.

use std::path::Path;

use speedb::{Cache, Env, Options, ReadOptions, WriteOptions, DB};

use super::super::engine::{BenchResult, EngineConfig};
use super::super::BenchArgs;
use super::options::{map, Flavor};
use super::rocks_family::rocks_family_engine;
use super::{options_file_report, Opened};

/// The RocksDB version Speedb 2.7 is built on (for the OPTIONS file header).
const BASE_ROCKSDB_VERSION: &str = "8.1.1";

struct SpeedbBench {
    db: DB,
    wopts: WriteOptions,
    ropts: ReadOptions,
}

pub fn open(dir: &Path, args: &BenchArgs, cfg: &EngineConfig, fresh: bool) -> BenchResult<Opened> {
    let family = map(args, cfg, Flavor::Speedb);
    let scratch = tempfile::Builder::new()
        .prefix("batchkv-speedb-options-")
        .tempdir()?;
    let ini = family.options_file(BASE_ROCKSDB_VERSION);
    std::fs::write(scratch.path().join("OPTIONS-000001"), &ini)?;
    let cache = Cache::new_lru_cache(args.cache_size);
    let (mut opts, cfs) = Options::load_latest(scratch.path(), Env::new()?, false, cache)?;
    opts.create_if_missing(true);
    opts.set_error_if_exists(fresh);
    let db = DB::open_cf_descriptors(&opts, dir, cfs)?;
    let mut wopts = WriteOptions::default();
    wopts.set_sync(cfg.sync);
    wopts.disable_wal(cfg.disable_wal);
    let mut mapping = family.mapping.clone();
    mapping.push(format!(
        "--sync={} --disable_wal={} -> WriteOptions sync / disableWAL",
        cfg.sync, cfg.disable_wal
    ));
    mapping.push(format!(
        "options (loaded as an OPTIONS file): {}",
        ini.lines()
            .filter(|l| l.starts_with("  ") && !l.contains("version="))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(";")
    ));
    let (checked, version) = options_file_report(dir, &family.checks)?;
    mapping.extend(checked);
    let v: Vec<String> = version
        .iter()
        .filter(|(k, _)| k.contains("version") && k != "options_file_version")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Ok(Opened {
        db: Box::new(SpeedbBench {
            db,
            wopts,
            ropts: ReadOptions::default(),
        }),
        version: format!("speedb ({}; speedb crate 0.0.5)", v.join(", ")),
        mapping,
    })
}

impl SpeedbBench {
    fn iter_opts(&self) -> ReadOptions {
        ReadOptions::default()
    }
}

rocks_family_engine!(speedb, SpeedbBench);

/// `--destroy_db`: Speedb's own `DestroyDB` (RocksDB's), which takes the
/// database's LOCK first (failing if another process has it open) and
/// deletes only the files it names, then the directory if nothing else is
/// in it.
pub fn destroy(dir: &Path) -> BenchResult<()> {
    DB::destroy(&Options::default(), dir).map_err(|e| {
        format!(
            "--destroy_db: Speedb could not destroy the database in {} (is another \
             process using it?): {e}",
            dir.display()
        )
        .into()
    })
}
