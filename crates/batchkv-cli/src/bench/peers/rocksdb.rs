//! RocksDB (rust-rocksdb 0.25, RocksDB 11.8) as a bench engine.
//!
//! Every setting goes through one options string
//! (`Options::get_options_from_string`), which reaches options the Rust
//! wrapper has no setter for (`memtable_batch_lookup_optimization`,
//! `separate_key_value_in_data_block`). The DB is opened with
//! `open_cf_descriptors` and an explicit `default` descriptor carrying these
//! options: that gives `MultiGet` a column family handle (`DB::open` leaves
//! none), and rust-rocksdb's `open_cf` would silently give the default
//! column family default options instead.

use std::path::Path;

use rocksdb::{ColumnFamilyDescriptor, Options, ReadOptions, WriteOptions, DB};

use super::super::engine::{BenchResult, EngineConfig};
use super::super::BenchArgs;
use super::options::{map, Flavor};
use super::rocks_family::rocks_family_engine;
use super::{options_file_report, Opened};

struct RocksBench {
    db: DB,
    wopts: WriteOptions,
    ropts: ReadOptions,
    total_order_seek: bool,
}

pub fn open(dir: &Path, args: &BenchArgs, cfg: &EngineConfig, fresh: bool) -> BenchResult<Opened> {
    let family = map(args, cfg, Flavor::RocksDb);
    let options_string = family.options_string();
    let mut base = Options::default();
    let mut opts = base.get_options_from_string(&options_string)?;
    opts.set_error_if_exists(fresh);
    let default_cf = ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, opts.clone());
    let db = DB::open_cf_descriptors(&opts, dir, [default_cf])?;
    let mut wopts = WriteOptions::default();
    wopts.set_sync(cfg.sync);
    wopts.disable_wal(cfg.disable_wal);
    let mut mapping = family.mapping.clone();
    mapping.push(format!(
        "--sync={} --disable_wal={} -> WriteOptions sync / disableWAL",
        cfg.sync, cfg.disable_wal
    ));
    if family.total_order_seek {
        mapping.push("(hash memtable) -> ReadOptions total_order_seek=true for iterators".into());
    }
    mapping.push(format!("options string: {options_string}"));
    let (checked, version) = options_file_report(dir, &family.checks)?;
    mapping.extend(checked);
    let rocks_version = version
        .iter()
        .find(|(k, _)| k == "rocksdb_version")
        .map_or("?", |(_, v)| v.as_str());
    Ok(Opened {
        db: Box::new(RocksBench {
            db,
            wopts,
            ropts: ReadOptions::default(),
            total_order_seek: family.total_order_seek,
        }),
        version: format!("rocksdb {rocks_version} (rust-rocksdb 0.25)"),
        mapping,
    })
}

impl RocksBench {
    fn iter_opts(&self) -> ReadOptions {
        let mut r = ReadOptions::default();
        r.set_total_order_seek(self.total_order_seek);
        r
    }
}

rocks_family_engine!(rocksdb, RocksBench);

/// `--destroy_db`: RocksDB's own `DestroyDB`, which takes the database's
/// LOCK first (failing if another process has it open) and deletes only the
/// files RocksDB names, then the directory if nothing else is in it.
pub fn destroy(dir: &Path) -> BenchResult<()> {
    DB::destroy(&Options::default(), dir).map_err(|e| {
        format!(
            "--destroy_db: RocksDB could not destroy the database in {} (is another \
             process using it?): {e}",
            dir.display()
        )
        .into()
    })
}
