//! RocksDB (rust-rocksdb 0.25, RocksDB 11.8) as a bench engine.
//!
//! Every setting goes through one options string
//! (`Options::get_options_from_string`), which reaches options the Rust
//! wrapper has no setter for (`memtable_batch_lookup_optimization`,
//! `separate_key_value_in_data_block`). The DB is opened with `DB::open`,
//! which gives the default column family these options (rust-rocksdb's
//! `open_cf` would silently give it default options instead).

use std::path::Path;

use rocksdb::{DBRawIterator, Options, ReadOptions, WriteBatch, WriteOptions, DB};

use super::super::engine::{BenchDb, BenchResult, EngineConfig, Entry, Seeker};
use super::super::BenchArgs;
use super::options::{map, Flavor};
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
    let db = DB::open(&opts, dir)?;
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

struct RocksSeeker<'a>(DBRawIterator<'a>);

impl Seeker for RocksSeeker<'_> {
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

impl BenchDb for RocksBench {
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
        let mut it = self.db.raw_iterator_opt(self.iter_opts());
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
        Ok(Box::new(RocksSeeker(
            self.db.raw_iterator_opt(self.iter_opts()),
        )))
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
