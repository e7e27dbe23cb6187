//! Opening a database: lock, create or read the MANIFEST, replay the WALs
//! that hold unflushed writes, start a fresh WAL, delete obsolete files.
//!
//! WAL damage is handled per [`WalRecoveryMode`](crate::WalRecoveryMode);
//! in every mode a half-written batch is never applied (a batch is one WAL record, and a
//! record is applied only if its checksum and framing are intact).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};

use arc_swap::ArcSwap;

use super::flush::write_level0_table;
use super::memtable_factory::MemTableFactory;
use super::snapshot::SnapshotList;
use super::table_cache::TableCache;
use super::wal_replay::{replay_logs, RecoveryReport, ReplayPolicy};
use super::{DbCore, DbState, ImmTable, LogState, SuperVersion};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};
use crate::wal;

/// How a database is opened.
pub(super) enum OpenMode {
    /// Locked, writable: WALs are replayed into L0 tables, a new WAL,
    /// MANIFEST and OPTIONS file are written, obsolete files deleted.
    ReadWrite,
    /// [`Db::open_read_only`](super::Db::open_read_only).
    ReadOnly,
    /// A secondary instance (`db/secondary/`): the state its MANIFEST tail
    /// read so far; no WAL is replayed here (the first catch-up reads them).
    Secondary(VersionSet),
}

/// A read-only or secondary open takes no lock and writes nothing: WALs
/// are replayed into memtables kept in memory (by the catch-up, for a
/// secondary), no MANIFEST, WAL or OPTIONS file is written and no file is
/// deleted.
pub(super) fn open(
    dir: &Path,
    opts: Options,
    fs: Arc<dyn FileSystem>,
    mode: OpenMode,
    cf_options: &[(String, Options)],
) -> Result<DbCore> {
    let read_only = !matches!(mode, OpenMode::ReadWrite);
    let secondary = match mode {
        OpenMode::Secondary(vs) => Some(vs),
        _ => None,
    };
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

    let is_secondary = secondary.is_some();
    let mut versions = match secondary {
        Some(vs) => vs,
        None => VersionSet::recover(Arc::clone(&fs), dir)?,
    };
    let tables = Arc::new(TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&fs),
        opts.table_options(),
        opts.block_cache.as_ref(),
    ));
    // Every live column family, with the options it opens with.
    let opts = Arc::new(opts);
    let mut families: Vec<(u32, String, Arc<Options>, MemTableFactory, u64)> = Vec::new();
    for (&id, cf) in versions.column_families() {
        let cf_opts = if id == 0 {
            Arc::clone(&opts)
        } else {
            Arc::new(super::cf::recovered_options(
                &opts,
                &cf.name,
                &cf.options,
                cf_options,
            )?)
        };
        let factory = MemTableFactory::new(&cf_opts);
        families.push((id, cf.name.clone(), cf_opts, factory, cf.log_number));
    }
    // Refused before anything is replayed or written: a family opened with
    // another merge operator than the OPTIONS file records.
    if let Some(recorded) = super::options_file::recorded_merge_operators(fs.as_ref(), dir)? {
        super::options_file::check_merge_operators(
            &dir.join(filename::OPTIONS),
            &recorded,
            families.iter().map(|f| {
                let op = f.2.merge_operator.as_ref().map(|m| m.name());
                (f.1.as_str(), op)
            }),
        )?;
    }
    let mut next_memtable_id = 0u64;
    let mut max_sequence = versions.last_sequence();

    // Replay the WALs still needed, oldest first.
    let mut logs: Vec<u64> = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|name| filename::parse(name))
        .filter(|&(kind, n)| kind == FileKind::Wal && n >= versions.log_number())
        .map(|(_, n)| n)
        .filter(|_| !is_secondary)
        .collect();
    logs.sort_unstable();
    for &number in &logs {
        versions.mark_file_number_used(number);
    }
    // The WAL the last flush switched to is deleted only after a later
    // edit names a newer one, so it exists unless something else removed it.
    let newest_recorded = versions
        .column_families()
        .values()
        .map(|c| c.log_number)
        .max()
        .unwrap_or(0);
    let missing = (!is_secondary && newest_recorded > 0 && !logs.contains(&newest_recorded))
        .then_some(newest_recorded);
    // One edit per family (each edit names one family).
    let mut edits: Vec<VersionEdit> = families
        .iter()
        .map(|f| VersionEdit {
            column_family: f.0,
            ..VersionEdit::default()
        })
        .collect();
    // Read-only: the replayed memtables stay in memory (oldest first).
    let mut replayed: Vec<(u32, Arc<dyn MemTable>)> = Vec::new();
    let report = {
        let families = &families;
        let mut new_mems = |log: u64| {
            families
                .iter()
                // A family's records in WALs below its log number are in
                // its tables already.
                .filter(|f| log >= f.4)
                .map(|f| {
                    next_memtable_id += 1;
                    (f.0, f.3.create(next_memtable_id - 1))
                })
                .collect::<Vec<_>>()
        };
        let mut sink = |cf: u32, mem: Arc<dyn MemTable>| -> Result<()> {
            if read_only {
                replayed.push((cf, mem));
                return Ok(());
            }
            #[allow(
                clippy::expect_used,
                reason = "replay fills only the memtables `new_mems` made, one per family in `families`"
            )]
            let i = families
                .iter()
                .position(|f| f.0 == cf)
                .expect("replay only fills families it was given");
            let file_number = versions.new_file_number();
            if let Some(meta) = write_level0_table(
                fs.as_ref(),
                dir,
                &tables,
                mem,
                file_number,
                &families[i].2,
                &[],
            )? {
                edits[i].new_files.push((0, meta));
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
                missing,
                newest_recorded,
            },
            &mut new_mems,
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
        // Each family's edit is independent: a crash between two leaves
        // the later families' WAL records to be replayed again, and their
        // new tables unreferenced (deleted as obsolete).
        for mut edit in edits {
            edit.log_number = Some(log_number);
            edit.last_sequence = Some(max_sequence);
            versions.log_and_apply(edit)?;
        }
        let operators = super::options_file::merge_operator_names(
            families.iter().map(|f| (f.1.as_str(), f.2.as_ref())),
        );
        super::options_file::write(
            fs.as_ref(),
            dir,
            &opts,
            &operators,
            versions.new_file_number(),
        )?;
        (writer, log_number)
    };

    let mut cfs = BTreeMap::new();
    let mut live_versions = Vec::new();
    let mut default_cf = None;
    for (id, name, cf_opts, factory, _) in families {
        let mem = factory.create(next_memtable_id);
        next_memtable_id += 1;
        #[allow(
            clippy::expect_used,
            reason = "`families` was read from this version set, and nothing dropped a family since"
        )]
        let version = versions
            .current_cf(id)
            .expect("families come from the version set");
        live_versions.push(Arc::downgrade(&version));
        let mine: Vec<Arc<dyn MemTable>> = replayed
            .iter()
            .filter(|(cf, _)| *cf == id)
            .map(|(_, m)| Arc::clone(m))
            .collect();
        let shared = Arc::new(super::CfShared {
            id,
            name,
            opts: Arc::clone(&cf_opts),
            sv: ArcSwap::from_pointee(SuperVersion {
                mem: Arc::clone(&mem),
                imms: mine.iter().rev().cloned().collect(),
                version: Arc::clone(&version),
                table_range_dels: Default::default(),
                opts: cf_opts,
            }),
            dropped: AtomicBool::new(false),
            unpersisted: AtomicBool::new(false),
        });
        if id == 0 {
            default_cf = Some(Arc::clone(&shared));
        }
        let imms = mine
            .into_iter()
            .map(|mem| ImmTable {
                mem,
                log_number: 0,
                unpersisted: false,
            })
            .collect();
        cfs.insert(
            id,
            super::cf::new_cf_state(shared, factory, mem, log_number, imms),
        );
    }
    #[allow(
        clippy::expect_used,
        reason = "the version set always holds family 0: it starts with it and an edit dropping it is corruption"
    )]
    let default_cf = default_cf.expect("the default column family always exists");
    let state = DbState {
        versions,
        cfs,
        dropped_names: Default::default(),
        current_wal: log_number,
        bg_error: None,
        pending_outputs: Vec::new(),
        live_versions,
        compacting: Default::default(),
        compaction_count: 0,
    };
    let core = DbCore {
        dir: dir.to_path_buf(),
        opts: Arc::unwrap_or_clone(opts),
        fs,
        _lock: lock,
        default_cf,
        visible_seq: AtomicU64::new(max_sequence),
        state: Mutex::new(state),
        manifest: Mutex::new(()),
        bg_cv: Condvar::new(),
        log: Mutex::new(LogState {
            writer,
            number: log_number,
            last_sequence: 0,
        }),
        closed_wals: Default::default(),
        write_queue: Mutex::new(VecDeque::new()),
        tables,
        snapshots: Arc::new(SnapshotList::default()),
        next_memtable_id: AtomicU64::new(next_memtable_id),
        shutting_down: AtomicBool::new(false),
        recovery: report,
        read_only,
        counters: Default::default(),
        secondary: None,
    };
    core.counters.latency.set_enabled(core.opts.statistics);
    if !read_only {
        core.delete_obsolete_files();
    }
    Ok(core)
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

/// Tells the log what recovery replayed (`info`) and, at `warn`, every
/// damage found — also a tail, so a crash's lost last write is not silent
/// — with what was not applied and where the damaged WAL was copied.
fn log_report(report: &RecoveryReport) {
    if !report.wals_replayed.is_empty() {
        log::info!(
            "recovery: replayed {} write batches from {} WAL(s)",
            report.records_replayed,
            report.wals_replayed.len()
        );
    }
    for d in &report.damage {
        if d.detail == super::wal_replay::MISSING {
            log::warn!(
                "recovery: {} is missing ({} recovery): {}; the writes it held are lost",
                d.file.display(),
                report.mode,
                d.detail
            );
        } else if d.predecessor_hole {
            log::warn!(
                "recovery: the end of {} was lost ({} recovery): {}",
                d.file.display(),
                report.mode,
                d.detail
            );
        } else if d.torn_tail {
            log::warn!(
                "recovery: torn tail in {} at offset {}: {}; {} bytes not applied \
                 (nothing intact follows: the end of a write cut short by a crash)",
                d.file.display(),
                d.offset,
                d.detail,
                d.bytes_dropped
            );
        } else if report.mode != crate::options::WalRecoveryMode::SkipAnyCorruptedRecords {
            log::warn!(
                "recovery: corruption in {} at offset {} ({} recovery): {}; {} intact write batches and {} bytes after it were not applied",
                d.file.display(),
                d.offset,
                report.mode,
                d.detail,
                d.records_dropped,
                d.bytes_dropped
            );
        } else {
            log::warn!(
                "recovery: corruption in {} at offset {} ({} recovery): {}; {} bytes skipped, the intact write batches after them applied",
                d.file.display(),
                d.offset,
                report.mode,
                d.detail,
                d.bytes_dropped
            );
        }
    }
    for (path, n) in &report.wals_dropped {
        log::warn!(
            "recovery: {} not applied ({n} intact write batches) because an earlier WAL is damaged ({} recovery)",
            path.display(),
            report.mode
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
