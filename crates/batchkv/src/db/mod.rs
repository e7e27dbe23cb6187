//! The database: open and recovery, the write path, the read paths, and the
//! background flush.
//!
//! # Thread safety
//! [`Db`] is `Clone + Send + Sync`; every clone shares one [`DbCore`].
//!
//! # Invariants
//! 1. Every entry with sequence ≤ `visible_seq` is in the memtable that was
//!    active when it was inserted; that memtable stays reachable from every
//!    later [`SuperVersion`] (as `mem`, in `imms`, or flushed into `version`).
//!    Entries ingested at a global sequence number are in the version of
//!    every super version published before `visible_seq` reached it
//!    (`db/ingest.rs`).
//! 2. Only the write leader (the front of the write queue) touches the WAL
//!    writer and inserts into memtables on behalf of its group.
//! 3. Lock order: `log` before `manifest` before `state` (a writer holds
//!    `log` while it waits for a flush, which needs `manifest`); ingestion
//!    takes `log` and then `manifest` (see `DbCore::lock_log_and_manifest`);
//!    `write_queue` is never held while waiting for either. The MANIFEST
//!    append and fsync run under `manifest` only, never under `state`, so
//!    writers do not wait for them (see [`DbCore::apply_edit`]).
//! 4. An immutable memtable leaves `imms` only after the MANIFEST edit that
//!    adds its SST is durable.
//! 5. Column families (`db/cf.rs`): each has its own memtables, version,
//!    flush and compaction state ([`CfState`], under `state`) and super
//!    version ([`CfShared::sv`]); the sequence counter, WAL, MANIFEST,
//!    snapshots and table cache are shared. A WAL is deleted only when no
//!    live family's unflushed writes can be in it
//!    ([`DbState::min_log_needed`]). Creating and dropping a family hold
//!    `log` (so no write group is in flight) and then `manifest`.

mod cf;
mod checkpoint;
mod closed_wals;
mod compaction;
mod flush;
mod ingest;
mod iterator;
mod key_range;
mod latency;
mod lookup;
mod memtable_factory;
mod merge_read;
#[cfg(feature = "metrics")]
mod metrics_export;
mod multi_get;
mod obsolete;
mod options_file;
mod predecessor_check;
mod properties;
mod range;
mod read;
mod read_view;
mod recovery;
mod secondary;
mod snapshot;
mod statistics;
mod table_cache;
mod transaction;
mod wal_replay;
mod write;

pub(crate) use cf::CfShared;
pub use cf::ColumnFamily;
pub use latency::LatencyStats;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem, PosixFs};
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::{Version, VersionSet};
use crate::wal;

pub use ingest::IngestOptions;
pub use iterator::DbIterator;
pub use key_range::KeyRange;
use memtable_factory::MemTableFactory;
pub use range::{KvResult, RangeIter};
pub use read_view::ReadView;
pub use snapshot::Snapshot;
use snapshot::SnapshotList;
pub use statistics::Statistics;
use table_cache::TableCache;
pub use transaction::{Transaction, TransactionIter, TransactionOptions};
pub use wal_replay::{RecoveryReport, RecoveryStatus, WalDamage};
use write::PendingWrite;

/// What a read needs, swapped as one immutable unit.
pub(crate) struct SuperVersion {
    pub mem: Arc<dyn MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<dyn MemTable>>,
    pub version: Arc<Version>,
    /// Every range tombstone of `version`'s tables, gathered by the first
    /// iterator that needs them (`db/iterator.rs`).
    pub table_range_dels: std::sync::OnceLock<Arc<Vec<crate::range_del::RangeTombstone>>>,
    /// The column family's options (its merge operator, for reads).
    pub opts: Arc<Options>,
}

/// A frozen memtable waiting for flush, with the WAL that holds its writes.
struct ImmTable {
    mem: Arc<dyn MemTable>,
    log_number: u64,
    /// It holds writes that skipped the WAL: close must flush it.
    unpersisted: bool,
}

/// One column family's mutable state, under `DbCore::state`.
struct CfState {
    shared: Arc<CfShared>,
    /// Builds memtables of this family's kind.
    memtables: MemTableFactory,
    mem: Arc<dyn MemTable>,
    /// The oldest WAL that can hold `mem`'s writes: the WAL current when
    /// it was started, moved up to each new WAL while it is empty (and no
    /// frozen memtable waits), so an idle family pins no WAL. Only grows.
    mem_log_number: u64,
    /// Oldest first.
    imms: VecDeque<ImmTable>,
    /// A flush of this family is running.
    flushing: bool,
    /// Completed flushes. Memtables are flushed oldest first, so the
    /// memtables frozen so far are all flushed once `flush_count` reaches
    /// `frozen_count` (invariant: `frozen_count - flush_count == imms.len()`).
    flush_count: u64,
    /// Memtables frozen since open.
    frozen_count: u64,
    /// Per level, the largest user key compacted last (round-robin).
    compact_cursor: Vec<Vec<u8>>,
}

/// Mutable database state, under `DbCore::state`.
struct DbState {
    versions: VersionSet,
    /// Live column families by id; 0 ("default") always exists.
    cfs: BTreeMap<u32, CfState>,
    /// Names of the families dropped since open (for error messages).
    dropped_names: HashMap<u32, String>,
    /// The WAL receiving writes now.
    current_wal: u64,
    /// Set by a failed background write; writes are refused from then on.
    bg_error: Option<Error>,
    /// Files being written that no version references yet.
    pending_outputs: Vec<u64>,
    /// Every version handed out; files of live ones are never deleted.
    live_versions: Vec<Weak<Version>>,
    /// Input files of running compactions (file numbers are unique across
    /// column families).
    compacting: HashSet<u64>,
    /// Completed compactions.
    compaction_count: u64,
}

impl DbState {
    /// The default column family (never dropped).
    fn default_cf(&self) -> &CfState {
        &self.cfs[&0]
    }

    /// WALs numbered below this hold no unflushed write of a live family:
    /// per family, its oldest frozen memtable's WAL, else its active
    /// memtable's. Never decreases (both only grow, a drop removes a
    /// family, a new family starts at the current WAL), so a file found
    /// below it stays obsolete.
    fn min_log_needed(&self) -> u64 {
        self.cfs
            .values()
            .map(|cf| cf.imms.front().map_or(cf.mem_log_number, |i| i.log_number))
            .min()
            .unwrap_or(self.current_wal)
    }
}

/// The leader-only WAL state (invariant 2).
struct LogState {
    writer: wal::Writer,
    number: u64,
    /// The largest sequence number in a record of this WAL (0 if none):
    /// what the next WAL's predecessor record says of it.
    last_sequence: u64,
}

pub(crate) struct DbCore {
    dir: PathBuf,
    opts: Options,
    fs: Arc<dyn FileSystem>,
    _lock: Box<dyn FileLock>,
    /// The default column family: what the single-family API reads and
    /// writes, reached without a lookup.
    default_cf: Arc<CfShared>,
    /// Highest sequence number readers may see. Stored with Release by the
    /// write leader after its memtable inserts; loaded with Acquire by readers
    /// so the inserted entries are visible to them.
    visible_seq: AtomicU64,
    state: Mutex<DbState>,
    /// Held by the one job preparing, writing and installing a version
    /// edit: between its prepare and install no other version is installed.
    manifest: Mutex<()>,
    /// Signalled when memtables are queued for flush, a flush ends, or shutdown starts.
    bg_cv: Condvar,
    log: Mutex<LogState>,
    /// The fsyncs memtable switches left owed (closed WALs, the new WAL's
    /// directory entry), paid before anything depends on them.
    closed_wals: closed_wals::ClosedWals,
    write_queue: Mutex<VecDeque<Arc<PendingWrite>>>,
    tables: Arc<TableCache>,
    snapshots: Arc<SnapshotList>,
    next_memtable_id: AtomicU64,
    shutting_down: AtomicBool,
    /// What opening replayed from the WALs and what it dropped.
    recovery: wal_replay::RecoveryReport,
    /// Opened with [`Db::open_read_only`] or [`Db::open_as_secondary`]: no
    /// writes, no background work.
    read_only: bool,
    /// What [`Db::statistics`] reports.
    counters: statistics::Counters,
    /// Set for a secondary instance ([`Db::open_as_secondary`]): what it
    /// has read of the primary's files.
    secondary: Option<secondary::Follower>,
}

/// A description of the database's shape, from [`Db::stats`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DbStats {
    /// Highest sequence number visible to reads.
    pub last_sequence: SequenceNumber,
    /// Entries in the active memtable.
    pub memtable_entries: u64,
    /// Bytes held by the active and immutable memtables.
    pub memtable_bytes: usize,
    /// Memtables frozen and waiting for flush.
    pub immutable_memtables: usize,
    /// SST files per level, L0 first.
    pub files_per_level: Vec<usize>,
    /// Flushes completed since open.
    pub flushes: u64,
    /// Compactions completed since open.
    pub compactions: u64,
    /// Bytes of SST files per level, L0 first.
    pub sst_bytes_per_level: Vec<u64>,
    /// The memtable implementation in use ("skiplist").
    pub memtable_kind: &'static str,
}

/// An open database. Cheap to clone; all clones share one database, which
/// shuts down when the last clone is dropped (or at [`Db::close`]).
#[derive(Clone)]
pub struct Db {
    handle: Arc<DbHandle>,
}

/// Owns the background threads; dropping it shuts the database down.
struct DbHandle {
    core: Arc<DbCore>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking thread cannot leave these structures half-updated in a
    // way later code relies on, so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Db::open_with_fs(path, opts, Arc::new(PosixFs))
    }

    /// Opens (creating it if missing) the database in `path` with default
    /// options (rust-rocksdb's `DB::open_default`).
    pub fn open_default(path: impl AsRef<Path>) -> Result<Db> {
        let opts = Options {
            create_if_missing: true,
            ..Options::default()
        };
        Db::open(path, opts)
    }

    /// Opens the database through a custom filesystem (tests use a
    /// fault-injecting one, [`crate::FaultInjectionFs`]).
    pub fn open_with_fs(
        path: impl AsRef<Path>,
        opts: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<Db> {
        Db::open_inner(path.as_ref(), opts, fs, Vec::new())
    }

    fn open_inner(
        path: &Path,
        opts: Options,
        fs: Arc<dyn FileSystem>,
        cf_options: Vec<(String, Options)>,
    ) -> Result<Db> {
        opts.validate()?;
        let core = recovery::open(path, opts, fs, recovery::OpenMode::ReadWrite, &cf_options)?;
        log::info!(
            "opened {} (last sequence {}, {} SST files)",
            path.display(),
            core.last_visible(),
            lock(&core.state).versions.all_file_numbers().len()
        );
        let core = Arc::new(core);
        let handle = Arc::new(DbHandle {
            core: Arc::clone(&core),
            workers: Mutex::new(Vec::new()),
        });
        // From here on, dropping `handle` on an error stops what started.
        let spawn = |name: String, body: fn(&DbCore)| {
            let worker = Arc::clone(&core);
            std::thread::Builder::new()
                .name(name)
                .spawn(move || body(&worker))
                .map_err(|e| Error::io("starting a background thread", e))
        };
        lock(&handle.workers).push(spawn("batchkv-flush".into(), flush::run)?);
        for i in 1..core.opts.max_background_jobs {
            lock(&handle.workers).push(spawn(format!("batchkv-compact-{i}"), compaction::run)?);
        }
        Ok(Db { handle })
    }

    /// Opens an existing database for reading only, without taking its
    /// lock and without writing anything: usable on a checkpoint, a backup
    /// on read-only media, or beside a process that has the database open
    /// (it then sees the state at this open; tables that writer deletes
    /// later make reads of them fail with an I/O error — open a checkpoint
    /// for a stable view, or [`Db::open_as_secondary`] to follow the
    /// writer). WALs are replayed into memory. Writes, `flush`,
    /// `compact_range` and `checkpoint` return [`Error::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let core = recovery::open(
            path.as_ref(),
            opts,
            Arc::new(PosixFs),
            recovery::OpenMode::ReadOnly,
            &[],
        )?;
        Ok(Db {
            handle: Arc::new(DbHandle {
                core: Arc::new(core),
                workers: Mutex::new(Vec::new()),
            }),
        })
    }

    pub(crate) fn core(&self) -> &DbCore {
        &self.handle.core
    }

    /// The directory holding the database.
    pub fn path(&self) -> &Path {
        &self.core().dir
    }

    /// What opening this database replayed from its WALs, and any damage
    /// found there: what was dropped (file, offset, records, bytes) and
    /// where damaged WALs were copied. Also logged (the `log` crate) at open.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.core().recovery
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let core = self.core();
        Snapshot::new(&core.snapshots, || core.visible_seq.load(Ordering::Acquire))
    }

    /// Freezes the active memtable (if it holds anything) and waits until
    /// every memtable frozen so far is in an SST file.
    pub fn flush(&self) -> Result<()> {
        flush::flush_and_wait(self.core(), 0)
    }

    /// Counters describing the database's current shape.
    pub fn stats(&self) -> DbStats {
        let core = self.core();
        let st = lock(&core.state);
        Self::stats_of(&st, st.default_cf(), core.last_visible())
    }

    fn stats_of(st: &DbState, cf: &CfState, last_sequence: SequenceNumber) -> DbStats {
        let version = st.versions.current_cf(cf.shared.id).unwrap_or_default();
        DbStats {
            last_sequence,
            memtable_entries: cf.mem.num_entries(),
            memtable_bytes: cf.mem.approximate_memory_usage()
                + cf.imms
                    .iter()
                    .map(|i| i.mem.approximate_memory_usage())
                    .sum::<usize>(),
            immutable_memtables: cf.imms.len(),
            files_per_level: version.levels.iter().map(Vec::len).collect(),
            flushes: cf.flush_count,
            compactions: st.compaction_count,
            sst_bytes_per_level: version
                .levels
                .iter()
                .map(|files| files.iter().map(|f| f.file_size).sum())
                .collect(),
            memtable_kind: cf.mem.kind(),
        }
    }

    /// Shuts the database down, waiting for the background flush to stop,
    /// and reports any background error. Other clones of this `Db` get
    /// [`Error::Shutdown`] afterwards.
    pub fn close(self) -> Result<()> {
        self.handle.shutdown()
    }
}

impl DbHandle {
    fn shutdown(&self) -> Result<()> {
        let core = &self.core;
        let mut result = Ok(());
        let unpersisted: Vec<u32> = lock(&core.state)
            .cfs
            .values()
            .filter(|cf| {
                cf.shared.unpersisted.load(Ordering::Acquire)
                    || cf.imms.iter().any(|i| i.unpersisted)
            })
            .map(|cf| cf.shared.id)
            .collect();
        if !core.shutting_down.load(Ordering::Acquire) {
            // Writes that skipped the WAL exist only in memory: persist them.
            for id in unpersisted {
                let r = flush::flush_and_wait(core, id);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        core.shutting_down.store(true, Ordering::Release);
        {
            let _st = lock(&core.state);
            core.bg_cv.notify_all();
        }
        let workers: Vec<JoinHandle<()>> = lock(&self.workers).drain(..).collect();
        for t in workers {
            let _ = t.join();
        }
        // Hand any final buffered WAL bytes to the OS, and pay the fsyncs
        // of WALs closed since the flush thread last did (not of the
        // current one: closing makes no write durable that was not).
        let log_result = lock(&core.log).writer.flush();
        let closed_result = if core.closed_wals.any_owed() {
            core.sync_closed_wals()
        } else {
            Ok(())
        };
        result?;
        log_result?;
        closed_result?;
        match &lock(&core.state).bg_error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

impl Drop for DbHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl DbCore {
    fn new_memtable(&self, factory: &MemTableFactory) -> Arc<dyn MemTable> {
        factory.create(self.next_memtable_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes `edit` to the MANIFEST and installs its version, with the
    /// fsync outside `state`: the guard is released during the write and
    /// re-taken (callers must not rely on state read before the call). On
    /// success `on_installed` runs under `state` right after the install,
    /// before any other job can see the new version without it; on failure
    /// the error becomes the background error (the MANIFEST may end in a
    /// partial record).
    fn apply_edit<'a>(
        &'a self,
        st: MutexGuard<'a, DbState>,
        edit: crate::version::VersionEdit,
        on_installed: impl FnOnce(&mut DbState),
    ) -> (MutexGuard<'a, DbState>, Result<()>) {
        drop(st);
        let _one_writer = lock(&self.manifest);
        let mut st = lock(&self.state);
        if edit.add_column_family.is_none()
            && !st
                .versions
                .column_families()
                .contains_key(&edit.column_family)
        {
            // The family was dropped while this job ran: its result is
            // garbage, not a background error.
            let name = st
                .dropped_names
                .get(&edit.column_family)
                .cloned()
                .unwrap_or_else(|| format!("id {}", edit.column_family));
            return (st, Err(Error::cf_dropped(&name)));
        }
        if let Some(e) = &st.bg_error {
            // A failed MANIFEST write leaves a partial record: append no more.
            let e = Error::Background(Box::new(e.clone()));
            return (st, Err(e));
        }
        let prepared = match st.versions.prepare(edit) {
            Ok(p) => p,
            Err(e) => {
                st.bg_error.get_or_insert(e.clone());
                return (st, Err(e));
            }
        };
        drop(st);
        let written = prepared.write();
        let mut st = lock(&self.state);
        match written {
            Ok(()) => {
                st.versions.install(prepared);
                #[cfg(feature = "invariants")]
                self.check_invariants(&st);
                on_installed(&mut st);
                (st, Ok(()))
            }
            Err(e) => {
                st.bg_error.get_or_insert(e.clone());
                (st, Err(e))
            }
        }
    }

    /// Whole-database checks after a version install (the `invariants`
    /// feature): level order and non-overlap, every live table on disk,
    /// and no sequence number recorded in the MANIFEST beyond what readers
    /// may see (new writes would otherwise be shadowed by older data).
    /// Violations are bugs: they panic with what was found.
    #[cfg(feature = "invariants")]
    fn check_invariants(&self, st: &DbState) {
        for cf in st.versions.column_families().values() {
            if let Err(e) = cf.current.check_invariants() {
                panic!(
                    "invariant violated after a version install (column family {:?}): {e}",
                    cf.name
                );
            }
        }
        for n in st.versions.all_file_numbers() {
            let path = crate::filename::path(&self.dir, crate::filename::FileKind::Table, n);
            assert!(
                self.fs.exists(&path),
                "invariant violated: live table {} is missing on disk",
                path.display()
            );
        }
        assert!(
            st.versions.last_sequence() <= self.last_visible(),
            "invariant violated: MANIFEST last sequence {} > visible sequence {}",
            st.versions.last_sequence(),
            self.last_visible()
        );
    }

    /// Publishes a new [`SuperVersion`] of column family `cf` from `st`
    /// (nothing if it was dropped). Called with `state` held.
    fn install_super_version(&self, st: &mut DbState, cf: u32) {
        let Some(version) = st.versions.current_cf(cf) else {
            return;
        };
        st.live_versions.retain(|w| w.strong_count() > 0);
        st.live_versions.push(Arc::downgrade(&version));
        let Some(c) = st.cfs.get(&cf) else {
            return;
        };
        c.shared.sv.store(Arc::new(SuperVersion {
            mem: Arc::clone(&c.mem),
            imms: c.imms.iter().rev().map(|i| Arc::clone(&i.mem)).collect(),
            version,
            table_range_dels: Default::default(),
            opts: Arc::clone(&c.shared.opts),
        }));
    }

    /// Refuses `what` on a read-only database.
    fn check_writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly(what));
        }
        self.check_open()
    }

    fn check_open(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    fn last_visible(&self) -> SequenceNumber {
        self.visible_seq.load(Ordering::Acquire)
    }
}
