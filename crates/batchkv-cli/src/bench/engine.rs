//! The engine seam of the benchmark: each engine under test implements
//! [`BenchDb`], so every workload runs the same code against every engine.

use std::path::Path;

use batchkv::{BatchLookup, Db, MemTableKind, Options, ReadOptions, WriteBatch, WriteOptions};

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One write of a benchmark batch: a value, or `None` for a deletion.
pub type Entry<'a> = (&'a [u8], Option<&'a [u8]>);

/// A reusable iterator.
pub trait Seeker {
    /// Seek then `nexts` steps; true if the seek found a key.
    fn seek(&mut self, key: &[u8], nexts: usize) -> BenchResult<bool>;
}

pub trait BenchDb: Send + Sync {
    /// Applies `entries` as one atomic batch.
    fn write(&self, entries: &[Entry<'_>]) -> BenchResult<()>;
    /// Point read; true if found.
    fn get(&self, key: &[u8]) -> BenchResult<bool>;
    /// Batched point read; returns how many keys were found.
    fn multi_get(&self, keys: &[&[u8]]) -> BenchResult<usize>;
    /// Full scan (forward or reverse); returns the number of entries seen.
    fn scan(&self, reverse: bool) -> BenchResult<u64>;
    /// An iterator for repeated seeks (db_bench's seekrandom reuses one per
    /// thread; it reads the state as of its creation).
    fn seeker(&self) -> BenchResult<Box<dyn Seeker + '_>>;
    /// Flushes memtables to disk.
    fn flush(&self) -> BenchResult<()>;
    /// Compacts the whole key space; returns the total SST bytes after.
    fn compact(&self) -> BenchResult<u64>;
    /// Engine-specific statistics for the `stats` benchmark.
    fn stats(&self) -> String;
    /// (memtable kind, bytes held by memtables, entries in the active
    /// memtable), if the engine can tell.
    fn memtable_usage(&self) -> Option<(String, usize, u64)> {
        None
    }
    /// Why this engine cannot run `benchmark`, if it cannot.
    fn skip_reason(&self, _benchmark: &str) -> Option<String> {
        None
    }
    /// Closes the engine, reporting errors that dropping would hide.
    fn close_box(self: Box<Self>) -> BenchResult<()> {
        Ok(())
    }
}

/// Engine settings shared by every engine (mapped to each one's options).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub sync: bool,
    pub disable_wal: bool,
    pub write_buffer_size: usize,
    pub max_write_buffer_number: usize,
    pub batch_lookup: BatchLookup,
    pub paranoid_memory_checks: bool,
    pub bloom_bits: usize,
    pub block_size: usize,
    pub block_restart_interval: usize,
    pub max_background_jobs: usize,
    /// `usize::MAX`: no limit (`--open_files=-1`).
    pub max_open_files: usize,
    pub level0_file_num_compaction_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub target_file_size_base: u64,
    pub disable_auto_compactions: bool,
    pub compression: batchkv::CompressionType,
    pub compression_level: i32,
    pub separate_key_value_in_data_block: bool,
    pub statistics: bool,
    pub cache_size: usize,
    pub memtable: MemTableKind,
    pub memtable_point_index: bool,
}

pub struct BatchKv {
    db: Db,
    wopts: WriteOptions,
    ropts: ReadOptions,
}

impl BatchKv {
    pub fn open(dir: &Path, cfg: &EngineConfig, fresh: bool) -> BenchResult<BatchKv> {
        let opts = Options {
            create_if_missing: true,
            error_if_exists: fresh,
            write_buffer_size: cfg.write_buffer_size,
            max_write_buffer_number: cfg.max_write_buffer_number,
            batch_lookup: cfg.batch_lookup,
            paranoid_memory_checks: cfg.paranoid_memory_checks,
            bloom_bits_per_key: cfg.bloom_bits,
            block_size: cfg.block_size,
            block_restart_interval: cfg.block_restart_interval,
            max_background_jobs: cfg.max_background_jobs,
            max_open_files: cfg.max_open_files,
            level0_file_num_compaction_trigger: cfg.level0_file_num_compaction_trigger,
            max_bytes_for_level_base: cfg.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: cfg.max_bytes_for_level_multiplier,
            target_file_size_base: cfg.target_file_size_base,
            disable_auto_compactions: cfg.disable_auto_compactions,
            compression: cfg.compression,
            compression_level: cfg.compression_level,
            separate_key_value_in_data_block: cfg.separate_key_value_in_data_block,
            statistics: cfg.statistics,
            block_cache_size: cfg.cache_size,
            memtable: cfg.memtable,
            memtable_point_index: cfg.memtable_point_index,
            ..Options::default()
        };
        Ok(BatchKv {
            db: Db::open(dir, opts)?,
            wopts: WriteOptions {
                sync: cfg.sync,
                disable_wal: cfg.disable_wal,
            },
            ropts: ReadOptions::default(),
        })
    }

    pub fn close(self) -> BenchResult<()> {
        Ok(self.db.close()?)
    }
}

/// The iterator operations a full scan and a seek-and-step need: every
/// engine with a RocksDB-style cursor (batchkv, RocksDB, Speedb) runs the
/// same loops ([`scan_cursor`], [`CursorSeeker`]) over it.
pub trait Cursor {
    fn to_first(&mut self);
    fn to_last(&mut self);
    fn seek_to(&mut self, key: &[u8]);
    fn is_valid(&self) -> bool;
    fn current_value(&self) -> &[u8];
    fn step(&mut self, reverse: bool);
    fn check(&self) -> BenchResult<()>;
}

/// Reads every entry, forward or backward; returns how many.
pub fn scan_cursor(it: &mut impl Cursor, reverse: bool) -> BenchResult<u64> {
    if reverse {
        it.to_last();
    } else {
        it.to_first();
    }
    let mut n = 0;
    while it.is_valid() {
        std::hint::black_box(it.current_value());
        n += 1;
        it.step(reverse);
    }
    it.check()?;
    Ok(n)
}

/// A [`Seeker`] over a [`Cursor`]: seek, then step forward `nexts` times
/// reading each value (db_bench's seekrandom).
pub struct CursorSeeker<C>(pub C);

impl<C: Cursor> Seeker for CursorSeeker<C> {
    fn seek(&mut self, key: &[u8], nexts: usize) -> BenchResult<bool> {
        let it = &mut self.0;
        it.seek_to(key);
        let found = it.is_valid();
        for _ in 0..nexts {
            if !it.is_valid() {
                break;
            }
            std::hint::black_box(it.current_value());
            it.step(false);
        }
        it.check()?;
        Ok(found)
    }
}

impl Cursor for batchkv::DbIterator {
    fn to_first(&mut self) {
        self.seek_to_first();
    }
    fn to_last(&mut self) {
        self.seek_to_last();
    }
    fn seek_to(&mut self, key: &[u8]) {
        self.seek(key);
    }
    fn is_valid(&self) -> bool {
        self.valid()
    }
    fn current_value(&self) -> &[u8] {
        self.value()
    }
    fn step(&mut self, reverse: bool) {
        if reverse {
            self.prev();
        } else {
            self.next();
        }
    }
    fn check(&self) -> BenchResult<()> {
        Ok(self.status()?)
    }
}

impl BenchDb for BatchKv {
    fn write(&self, entries: &[Entry<'_>]) -> BenchResult<()> {
        let mut b = WriteBatch::new();
        for (k, v) in entries {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        Ok(self.db.write(&self.wopts, b)?)
    }

    fn get(&self, key: &[u8]) -> BenchResult<bool> {
        // The value is read in place, as the peers' pinned gets do.
        Ok(self
            .db
            .get_with(&self.ropts, key, |v| std::hint::black_box(v).is_some())?)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> BenchResult<usize> {
        let mut found = 0;
        let mut err = None;
        self.db.multi_get_with(&self.ropts, keys, |_, r| match r {
            Ok(Some(v)) => {
                std::hint::black_box(v);
                found += 1;
            }
            Ok(None) => {}
            Err(e) => err = Some(e),
        });
        match err {
            Some(e) => Err(e.into()),
            None => Ok(found),
        }
    }

    fn scan(&self, reverse: bool) -> BenchResult<u64> {
        scan_cursor(&mut self.db.iter(&self.ropts)?, reverse)
    }

    fn seeker(&self) -> BenchResult<Box<dyn Seeker + '_>> {
        Ok(Box::new(CursorSeeker(self.db.iter(&self.ropts)?)))
    }

    fn flush(&self) -> BenchResult<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> BenchResult<u64> {
        self.db.compact_range(None, None)?;
        Ok(self.db.stats().sst_bytes_per_level.iter().sum())
    }

    fn stats(&self) -> String {
        format!("{:?}", self.db.stats())
    }

    fn memtable_usage(&self) -> Option<(String, usize, u64)> {
        let s = self.db.stats();
        Some((
            s.memtable_kind.to_string(),
            s.memtable_bytes,
            s.memtable_entries,
        ))
    }

    fn close_box(self: Box<Self>) -> BenchResult<()> {
        self.close()
    }
}
