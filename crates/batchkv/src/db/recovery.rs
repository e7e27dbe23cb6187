//! Opening a database: lock, create or read the MANIFEST, replay the WALs
//! that hold unflushed writes, start a fresh WAL, delete obsolete files.
//!
//! WAL damage is handled per [`WalRecoveryMode`]; in every mode a
//! half-written batch is never applied (a batch is one WAL record, and a
//! record is applied only if its checksum and framing are intact).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};

use arc_swap::ArcSwap;

use super::filename::{self, FileKind};
use super::flush::write_level0_table;
use super::memtable_factory::MemTableFactory;
use super::snapshot::SnapshotList;
use super::table_cache::TableCache;
use super::{DbCore, DbState, LogState, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::options::{Options, WalRecoveryMode};
use crate::version::{VersionEdit, VersionSet};
use crate::wal;

pub(super) fn open(dir: &Path, opts: Options, fs: Arc<dyn FileSystem>) -> Result<DbCore> {
    if opts.create_if_missing {
        fs.create_dir_all(dir)?;
    } else if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "database directory {} does not exist (create_if_missing is false)",
            dir.display()
        )));
    }
    let lock = fs.lock(&dir.join(filename::LOCK))?;

    let current = dir.join(filename::CURRENT);
    if fs.exists(&current) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} already exists (error_if_exists is true)",
                dir.display()
            )));
        }
    } else if opts.create_if_missing {
        VersionSet::create_new(&fs, dir)?;
    } else {
        return Err(Error::InvalidArgument(format!(
            "no database in {} (CURRENT is missing) and create_if_missing is false",
            dir.display()
        )));
    }

    let mut versions = VersionSet::recover(Arc::clone(&fs), dir)?;
    let tables = Arc::new(TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&fs),
        DbCore::table_options(&opts),
    ));
    let memtables = MemTableFactory::new(&opts);
    let mut next_memtable_id = 0u64;
    let mut max_sequence = versions.last_sequence();

    // Replay the WALs still needed, oldest first.
    let mut logs: Vec<u64> = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|name| filename::parse(name))
        .filter(|&(kind, n)| kind == FileKind::Wal && n >= versions.log_number())
        .map(|(_, n)| n)
        .collect();
    logs.sort_unstable();
    let mut edit = VersionEdit::default();
    let mut stopped = false;
    for (i, &number) in logs.iter().enumerate() {
        versions.mark_file_number_used(number);
        if stopped {
            // Point-in-time recovery stopped in an earlier log: later logs
            // would leave a hole in the write order, so they are dropped.
            continue;
        }
        let is_last = i + 1 == logs.len();
        let mem = memtables.create(next_memtable_id);
        next_memtable_id += 1;
        let path = filename::path(dir, FileKind::Wal, number);
        let outcome = replay_log(&fs, &path, &opts, mem.as_ref(), is_last, &mut max_sequence)?;
        stopped = outcome == ReplayEnd::Stopped;
        if mem.num_entries() > 0 {
            let file_number = versions.new_file_number();
            if let Some(meta) =
                write_level0_table(fs.as_ref(), dir, &tables, mem, file_number, &opts)?
            {
                edit.new_files.push((0, meta));
            }
        }
    }

    // A fresh WAL for new writes; everything replayed is now in L0 files.
    let log_number = versions.new_file_number();
    let log_path = filename::path(dir, FileKind::Wal, log_number);
    let writer = wal::Writer::new(fs.new_writable(&log_path)?);
    fs.sync_dir(dir)?;
    edit.log_number = Some(log_number);
    edit.last_sequence = Some(max_sequence);
    versions.log_and_apply(edit)?;

    let mem = memtables.create(next_memtable_id);
    next_memtable_id += 1;
    let version = versions.current();
    let sv = SuperVersion {
        mem: Arc::clone(&mem),
        imms: Vec::new(),
        version: Arc::clone(&version),
    };
    let state = DbState {
        versions,
        mem,
        mem_log_number: log_number,
        imms: VecDeque::new(),
        bg_error: None,
        pending_outputs: Vec::new(),
        live_versions: vec![Arc::downgrade(&version)],
        flushing: false,
        flush_count: 0,
        frozen_count: 0,
        compacting: Default::default(),
        compact_cursor: vec![Vec::new(); crate::version::NUM_LEVELS],
        compaction_count: 0,
    };
    let core = DbCore {
        dir: dir.to_path_buf(),
        opts,
        fs,
        _lock: lock,
        sv: ArcSwap::from_pointee(sv),
        visible_seq: AtomicU64::new(max_sequence),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        log: Mutex::new(LogState {
            writer,
            number: log_number,
        }),
        write_queue: Mutex::new(VecDeque::new()),
        tables,
        snapshots: Arc::new(SnapshotList::default()),
        next_memtable_id: AtomicU64::new(next_memtable_id),
        memtables,
        shutting_down: AtomicBool::new(false),
        unpersisted: AtomicBool::new(false),
    };
    {
        let mut st = super::lock(&core.state);
        core.delete_obsolete_files(&mut st);
    }
    Ok(core)
}

#[derive(Debug, PartialEq, Eq)]
enum ReplayEnd {
    /// The whole log was applied.
    Complete,
    /// Point-in-time recovery stopped at damage; nothing after it applies.
    Stopped,
}

/// Applies the batches of one WAL to `mem`, honouring the recovery mode.
fn replay_log(
    fs: &Arc<dyn FileSystem>,
    path: &Path,
    opts: &Options,
    mem: &dyn MemTable,
    is_last: bool,
    max_sequence: &mut u64,
) -> Result<ReplayEnd> {
    let data = fs.read_all(path)?;
    let file = path.display().to_string();
    let mut reader = wal::Reader::new(&data, &file);
    loop {
        let (offset, detail, torn) = match reader.next() {
            wal::ReadOutcome::Record { data, offset } => {
                let batch = WriteBatch::from_rep(data.to_vec(), &file, offset)?;
                let mut seq = batch.sequence();
                for entry in batch.iter() {
                    mem.insert(seq, entry.value_type, entry.key, entry.value)?;
                    seq += 1;
                }
                if !batch.is_empty() {
                    *max_sequence = (*max_sequence).max(seq - 1);
                }
                continue;
            }
            wal::ReadOutcome::Eof => return Ok(ReplayEnd::Complete),
            wal::ReadOutcome::TornTail { offset, detail } => (offset, detail, true),
            wal::ReadOutcome::Corrupt { offset, detail } => (offset, detail, false),
        };
        let fail = || Err(reader.corruption(offset, detail.clone()));
        return match opts.wal_recovery_mode {
            WalRecoveryMode::PointInTime => Ok(ReplayEnd::Stopped),
            WalRecoveryMode::TolerateCorruptedTailRecords if torn && is_last => {
                Ok(ReplayEnd::Complete)
            }
            WalRecoveryMode::TolerateCorruptedTailRecords
            | WalRecoveryMode::AbsoluteConsistency => fail(),
        };
    }
}
