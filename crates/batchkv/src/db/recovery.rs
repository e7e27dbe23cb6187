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
use super::wal_replay::{replay_logs, RecoveryReport, ReplayPolicy};
use super::{DbCore, DbState, ImmTable, LogState, SuperVersion};
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};
use crate::wal;

/// A read-only open takes no lock and writes nothing: WALs are replayed
/// into memtables kept in memory, no MANIFEST, WAL or OPTIONS file is
/// written and no file is deleted.
pub(super) fn open(
    dir: &Path,
    opts: Options,
    fs: Arc<dyn FileSystem>,
    read_only: bool,
) -> Result<DbCore> {
    if read_only {
        if !fs.exists(&dir.join(filename::CURRENT)) {
            return Err(Error::InvalidArgument(format!(
                "no database in {} (CURRENT is missing) to open read-only",
                dir.display()
            )));
        }
    } else if opts.create_if_missing {
        fs.create_dir_all(dir)?;
    } else if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "database directory {} does not exist (create_if_missing is false)",
            dir.display()
        )));
    }
    let lock: Box<dyn crate::fs::FileLock> = if read_only {
        Box::new(NoLock)
    } else {
        fs.lock(&dir.join(filename::LOCK))?
    };

    let current = dir.join(filename::CURRENT);
    if fs.exists(&current) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} already exists (error_if_exists is true)",
                dir.display()
            )));
        }
    } else if opts.create_if_missing {
        refuse_foreign_files(fs.as_ref(), dir)?;
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
    for &number in &logs {
        versions.mark_file_number_used(number);
    }
    let mut edit = VersionEdit::default();
    // Read-only: the replayed memtables stay in memory (oldest first).
    let mut replayed: Vec<Arc<dyn MemTable>> = Vec::new();
    let report = {
        let mut new_mem = || {
            next_memtable_id += 1;
            memtables.create(next_memtable_id - 1)
        };
        let mut sink = |mem: Arc<dyn MemTable>| -> Result<()> {
            if read_only {
                replayed.push(mem);
                return Ok(());
            }
            let file_number = versions.new_file_number();
            if let Some(meta) =
                write_level0_table(fs.as_ref(), dir, &tables, mem, file_number, &opts, &[])?
            {
                edit.new_files.push((0, meta));
            }
            Ok(())
        };
        replay_logs(
            &fs,
            dir,
            &logs,
            ReplayPolicy {
                mode: opts.wal_recovery_mode,
                keep_damaged: !read_only,
            },
            &mut new_mem,
            &mut sink,
            &mut max_sequence,
        )?
    };
    log_report(&report);

    // A fresh WAL for new writes; everything replayed is now in L0 files.
    let (writer, log_number) = if read_only {
        (wal::Writer::new(Box::new(NoWrites)), 0)
    } else {
        let log_number = versions.new_file_number();
        let log_path = filename::path(dir, FileKind::Wal, log_number);
        let writer = wal::Writer::new(fs.new_writable(&log_path)?);
        fs.sync_dir(dir)?;
        edit.log_number = Some(log_number);
        edit.last_sequence = Some(max_sequence);
        versions.log_and_apply(edit)?;
        write_options_file(fs.as_ref(), dir, &opts, versions.new_file_number())?;
        (writer, log_number)
    };

    let mem = memtables.create(next_memtable_id);
    next_memtable_id += 1;
    let version = versions.current();
    let sv = SuperVersion {
        mem: Arc::clone(&mem),
        imms: replayed.iter().rev().cloned().collect(),
        version: Arc::clone(&version),
        table_range_dels: Default::default(),
    };
    let state = DbState {
        versions,
        mem,
        mem_log_number: log_number,
        imms: replayed
            .into_iter()
            .map(|mem| ImmTable {
                mem,
                log_number: 0,
                unpersisted: false,
            })
            .collect(),
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
        manifest: Mutex::new(()),
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
        recovery: report,
        read_only,
        counters: Default::default(),
    };
    core.counters.latency.set_enabled(core.opts.statistics);
    if !read_only {
        core.delete_obsolete_files();
    }
    Ok(core)
}

/// Replaces `OPTIONS` atomically (temp file, fsync, rename, directory
/// fsync) with the options this open uses; a crash leaves the old file or
/// the new one, and at worst a temp file the next sweep deletes.
fn write_options_file(fs: &dyn FileSystem, dir: &Path, opts: &Options, temp: u64) -> Result<()> {
    let tmp = filename::path(dir, FileKind::Temp, temp);
    let mut f = fs.new_writable(&tmp)?;
    f.append(opts.options_file_text().as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(filename::OPTIONS))?;
    fs.sync_dir(dir)
}

/// A directory without CURRENT may be used for a new database only if it
/// holds nothing but what an interrupted creation leaves (the lock file, the
/// first MANIFEST, a CURRENT being written) and the salvage directory
/// `lost/`: anything else would be taken for database files and deleted as
/// obsolete.
fn refuse_foreign_files(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let ours = |name: &str| {
        name == filename::LOCK
            || name == super::wal_replay::LOST_DIR
            || matches!(
                filename::parse(name),
                Some((FileKind::Manifest, 1)) | Some((FileKind::Temp, _))
            )
    };
    let mut foreign: Vec<String> = fs.list_dir(dir)?.into_iter().filter(|n| !ours(n)).collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    let shown = foreign
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    Err(Error::InvalidArgument(format!(
        "{} holds no database (CURRENT is missing) and is not empty ({} entries: {shown}{}); \
         refusing to create a database over files it did not write",
        dir.display(),
        foreign.len(),
        if foreign.len() > 5 { ", ..." } else { "" }
    )))
}

/// Tells the log what recovery replayed and, loudly, what it dropped.
fn log_report(report: &RecoveryReport) {
    if !report.wals_replayed.is_empty() {
        log::info!(
            "recovery: replayed {} write batches from {} WAL(s)",
            report.records_replayed,
            report.wals_replayed.len()
        );
    }
    for d in &report.damage {
        if d.torn_tail {
            log::info!(
                "recovery: torn tail in {} at offset {} ({} bytes not applied): {}",
                d.file.display(),
                d.offset,
                d.bytes_dropped,
                d.detail
            );
        } else {
            log::warn!(
                "recovery: corruption in {} at offset {}: {}; {} intact write batches and {} bytes after it were not applied",
                d.file.display(),
                d.offset,
                d.detail,
                d.records_dropped,
                d.bytes_dropped
            );
        }
    }
    for (path, n) in &report.wals_dropped {
        log::warn!(
            "recovery: {} not applied ({n} intact write batches) because an earlier WAL is damaged",
            path.display()
        );
    }
    for path in &report.kept_aside {
        log::warn!("recovery: damaged WAL copied to {}", path.display());
    }
}

/// The lock of a read-only open: none (a writer may hold the real one).
struct NoLock;
impl crate::fs::FileLock for NoLock {}

/// The WAL of a read-only open: nothing may be appended.
struct NoWrites;
impl crate::fs::WritableFile for NoWrites {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::ReadOnly("appending to the WAL"))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}
