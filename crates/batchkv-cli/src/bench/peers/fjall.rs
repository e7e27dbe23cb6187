//! fjall 3 (pure-Rust LSM) as a bench engine, mapped to its closest options.
//!
//! fjall has no batched point read (multiread is a loop of `get`), no
//! reusable seekable iterator (each seek opens a `range` iterator), a skip
//! list as its only memtable, and no way to skip its journal.

use std::path::Path;

use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    RestartIntervalPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::super::engine::{BenchDb, BenchResult, EngineConfig, Entry, Seeker};
use super::super::BenchArgs;
use super::Opened;

struct FjallBench {
    db: Database,
    ks: Keyspace,
    sync: bool,
}

pub fn open(dir: &Path, args: &BenchArgs, cfg: &EngineConfig, fresh: bool) -> BenchResult<Opened> {
    if fresh && dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        return Err(format!("{} exists and is not empty", dir.display()).into());
    }
    let mut mapping = Vec::new();
    let mut note = |flag: String, to: String| mapping.push(format!("{flag} -> {to}"));
    let workers = cfg.max_background_jobs.max(1);
    note(
        format!("--cache_size={}", args.cache_size),
        format!("Database cache_size={}", args.cache_size),
    );
    note(
        format!("--max_background_jobs={}", cfg.max_background_jobs),
        format!("worker_threads={workers}"),
    );
    let db = Database::builder(dir)
        .cache_size(args.cache_size as u64)
        .worker_threads(workers)
        .open()?;

    let restart = u8::try_from(cfg.block_restart_interval.clamp(1, 255)).unwrap_or(16);
    let block = u32::try_from(cfg.block_size).unwrap_or(u32::MAX);
    note(
        format!("--write_buffer_size={}", cfg.write_buffer_size),
        format!("max_memtable_size={}", cfg.write_buffer_size),
    );
    note(
        format!("--block_size={}", cfg.block_size),
        format!("data_block_size_policy=all({block})"),
    );
    note(
        format!("--block_restart_interval={}", cfg.block_restart_interval),
        format!("data_block_restart_interval_policy=all({restart})"),
    );
    let compression_flag = format!("--compression_type={}", cfg.compression.name());
    let data_compression = match cfg.compression {
        batchkv::CompressionType::None => {
            note(
                compression_flag,
                "data_block_compression_policy=none".into(),
            );
            CompressionType::None
        }
        batchkv::CompressionType::Lz4 => {
            note(compression_flag, "data_block_compression_policy=lz4".into());
            CompressionType::Lz4
        }
        batchkv::CompressionType::Zstd => {
            note(
                compression_flag,
                "NOT SET: fjall 3 has no zstd; data_block_compression_policy=lz4 instead".into(),
            );
            CompressionType::Lz4
        }
    };
    note(
        "(index blocks)".into(),
        "index_block_compression_policy=none, as batchkv".into(),
    );
    let filter = if cfg.bloom_bits > 0 {
        note(
            format!("--bloom_bits={}", cfg.bloom_bits),
            format!("filter_policy=bloom {} bits/key", cfg.bloom_bits),
        );
        FilterPolicy::all(FilterPolicyEntry::Bloom(
            BloomConstructionPolicy::BitsPerKey(cfg.bloom_bits as f32),
        ))
    } else {
        note("--bloom_bits=0".into(), "filter_policy=disabled".into());
        FilterPolicy::disabled()
    };
    let wbs = cfg.write_buffer_size as u64;
    let ks = db.keyspace("default", || {
        KeyspaceCreateOptions::default()
            .max_memtable_size(wbs)
            .data_block_size_policy(BlockSizePolicy::all(block))
            .data_block_restart_interval_policy(RestartIntervalPolicy::all(restart))
            .data_block_compression_policy(CompressionPolicy::all(data_compression))
            .index_block_compression_policy(CompressionPolicy::disabled())
            .filter_policy(filter)
    })?;
    note(
        format!("--sync={}", cfg.sync),
        if cfg.sync {
            "each batch committed with PersistMode::SyncAll"
        } else {
            "journal written, not fsynced"
        }
        .into(),
    );
    let mut cannot = |flag: String, why: &str| mapping.push(format!("{flag} -> NOT SET: {why}"));
    cannot(
        format!("--max_write_buffer_number={}", cfg.max_write_buffer_number),
        "fjall's cap on all memtables is hidden and deprecated; left off (fjall's default)",
    );
    if cfg.disable_wal {
        cannot(
            "--disable_wal=true".into(),
            "fjall always writes its journal",
        );
    }
    if args.memtablerep != "skiplist" {
        cannot(
            format!("--memtablerep={}", args.memtablerep),
            "fjall has only a skip-list memtable",
        );
    }
    cannot(
        format!("--batch_lookup={}", args.batch_lookup),
        "fjall has no batched read; multiread is a loop of Keyspace::get",
    );
    cannot(
        format!(
            "--level0_file_num_compaction_trigger={} and level sizes",
            cfg.level0_file_num_compaction_trigger
        ),
        "fjall's leveled compaction defaults kept",
    );
    if cfg.disable_auto_compactions {
        cannot(
            "--disable_auto_compactions=true".into(),
            "fjall always compacts in the background",
        );
    }
    if args.separate_key_value_in_data_block {
        cannot(
            "--separate_key_value_in_data_block=true".into(),
            "fjall has no separated data blocks",
        );
    }
    mapping.push(
        "seekrandom -> a new range iterator per seek (fjall iterators cannot re-seek)".into(),
    );
    Ok(Opened {
        db: Box::new(FjallBench {
            db,
            ks,
            sync: cfg.sync,
        }),
        version: "fjall 3".into(),
        mapping,
    })
}

struct FjallSeeker<'a> {
    ks: &'a Keyspace,
}

impl Seeker for FjallSeeker<'_> {
    fn seek(&mut self, key: &[u8], nexts: usize) -> BenchResult<bool> {
        let mut it = self.ks.range(key..);
        let mut found = false;
        // The seek itself yields the first entry; db_bench then steps `nexts` times.
        for (i, guard) in (&mut it).take(nexts + 1).enumerate() {
            let v = guard.value()?;
            std::hint::black_box(&v);
            if i == 0 {
                found = true;
            }
        }
        Ok(found)
    }
}

impl BenchDb for FjallBench {
    fn write(&self, entries: &[Entry<'_>]) -> BenchResult<()> {
        let mut b = self.db.batch();
        if self.sync {
            b = b.durability(Some(PersistMode::SyncAll));
        }
        for (k, v) in entries {
            match v {
                Some(v) => b.insert(&self.ks, *k, *v),
                None => b.remove(&self.ks, *k),
            }
        }
        Ok(b.commit()?)
    }

    fn get(&self, key: &[u8]) -> BenchResult<bool> {
        let v = self.ks.get(key)?;
        Ok(std::hint::black_box(v).is_some())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> BenchResult<usize> {
        let mut found = 0;
        for k in keys {
            found += usize::from(self.get(k)?);
        }
        Ok(found)
    }

    fn scan(&self, reverse: bool) -> BenchResult<u64> {
        let mut n = 0;
        let mut count = |g: fjall::Guard| -> BenchResult<()> {
            std::hint::black_box(g.value()?);
            n += 1;
            Ok(())
        };
        if reverse {
            for g in self.ks.iter().rev() {
                count(g)?;
            }
        } else {
            for g in self.ks.iter() {
                count(g)?;
            }
        }
        Ok(n)
    }

    fn seeker(&self) -> BenchResult<Box<dyn Seeker + '_>> {
        Ok(Box::new(FjallSeeker { ks: &self.ks }))
    }

    fn flush(&self) -> BenchResult<()> {
        Ok(self.ks.rotate_memtable_and_wait()?)
    }

    fn compact(&self) -> BenchResult<u64> {
        self.ks.major_compact()?;
        Ok(self.ks.disk_space())
    }

    fn stats(&self) -> String {
        format!(
            "fjall: tables={} l0_tables={} disk_space={} journal_count={} write_buffer_size={}",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.ks.disk_space(),
            self.db.journal_count(),
            self.db.write_buffer_size()
        )
    }
}
