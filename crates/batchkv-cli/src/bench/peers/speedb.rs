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

use speedb::{Cache, DBRawIterator, Env, Options, ReadOptions, WriteBatch, WriteOptions, DB};

use super::super::engine::{BenchDb, BenchResult, EngineConfig, Entry, Seeker};
use super::super::BenchArgs;
use super::options::{map, Flavor};
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

struct SpeedbSeeker<'a>(DBRawIterator<'a>);

impl Seeker for SpeedbSeeker<'_> {
    fn seek(&mut self, key: &[u8], nexts: usize) -> BenchResult<bool> {
        self.0.seek(key);
        let found = self.0.valid();
        for _ in 0..nexts {
            if !self.0.valid() {
                break;
            }
            std::hint::black_box(self.0.value());
            self.0.next();
        }
        self.0.status()?;
        Ok(found)
    }
}

impl BenchDb for SpeedbBench {
    fn write(&self, entries: &[Entry<'_>]) -> BenchResult<()> {
        let mut b = WriteBatch::default();
        for (k, v) in entries {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        Ok(self.db.write_opt(b, &self.wopts)?)
    }

    fn get(&self, key: &[u8]) -> BenchResult<bool> {
        let v = self.db.get_pinned_opt(key, &self.ropts)?;
        Ok(std::hint::black_box(v).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> BenchResult<usize> {
        let cf = self
            .db
            .cf_handle("default")
            .ok_or("no default column family")?;
        let mut found = 0;
        for r in self
            .db
            .batched_multi_get_cf_opt(cf, keys.iter().copied(), false, &self.ropts)
        {
            if let Some(v) = r? {
                std::hint::black_box(&*v);
                found += 1;
            }
        }
        Ok(found)
    }

    fn scan(&self, reverse: bool) -> BenchResult<u64> {
        let mut it = self.db.raw_iterator();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let mut n = 0;
        while it.valid() {
            std::hint::black_box(it.value());
            n += 1;
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        Ok(n)
    }

    fn seeker(&self) -> BenchResult<Box<dyn Seeker + '_>> {
        Ok(Box::new(SpeedbSeeker(self.db.raw_iterator())))
    }

    fn flush(&self) -> BenchResult<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> BenchResult<u64> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(self
            .db
            .property_int_value("rocksdb.live-sst-files-size")?
            .unwrap_or(0))
    }

    fn stats(&self) -> String {
        match self.db.property_value("rocksdb.stats") {
            Ok(Some(s)) => s,
            Ok(None) => "(no rocksdb.stats)".into(),
            Err(e) => format!("(rocksdb.stats failed: {e})"),
        }
    }
}
