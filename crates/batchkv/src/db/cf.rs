//! Column families (RocksDB semantics): named key spaces in one database,
//! each with its own memtables, levels, flush and compaction, sharing one
//! WAL, one MANIFEST, one sequence counter (so snapshots and write batches
//! span families) and one table cache.
//!
//! The handle ([`ColumnFamily`]) is an id, a name and an `Arc` of the
//! family's read state ([`CfShared`]); using it after the family was
//! dropped is `InvalidArgument` naming the family. The default family (id
//! 0, "default") always exists and is what the single-family API uses.
//!
//! On disk: a family is created by a MANIFEST edit carrying its id, name
//! and option string (`docs/format/manifest.md` §4), and dropped by another;
//! its writes carry its id in the WAL (`docs/format/wal.md` §5). Reopening
//! restores every family with the options it was created with; operators
//! (merge operator, compaction filter) cannot be persisted and must be
//! supplied again with [`Db::open_with_cf_options`].
//!
//! # Thread safety
//! [`CfShared`] is shared by handles, readers and the engine: `sv` is
//! swapped under `state` (as the default family's always was); `dropped`
//! and `unpersisted` are flags.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::memtable_factory::MemTableFactory;
use super::{lock, CfState, Db, DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PosixFs};
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet, DEFAULT_CF_NAME, NUM_LEVELS};

/// A column family's state shared with its handles and readers.
pub(crate) struct CfShared {
    pub id: u32,
    pub name: String,
    /// Its options (the database's own for the default family).
    pub opts: Arc<Options>,
    /// What readers use; replaced whole (never mutated) under `state`.
    pub sv: ArcSwap<SuperVersion>,
    /// Set (under `log`, `manifest` and `state`) when the family is dropped.
    pub dropped: AtomicBool,
    /// The active memtable holds a write that skipped the WAL; close
    /// flushes then. Set by the write leader and moved to the frozen
    /// [`super::ImmTable`] at the memtable switch, both under the `log`
    /// lock, so no WAL-less write can fall between the two memtables' flags.
    pub unpersisted: AtomicBool,
}

/// A handle to a column family: cheap to clone (an `Arc`). Valid until the
/// family is dropped; afterwards every use is `InvalidArgument`.
#[derive(Clone)]
pub struct ColumnFamily {
    pub(crate) inner: Arc<CfShared>,
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamily")
            .field("id", &self.inner.id)
            .field("name", &self.inner.name)
            .finish()
    }
}

impl ColumnFamily {
    /// The family's id (0 for "default"; ids are never reused).
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The options the family was opened or created with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// The family's shared state, or `InvalidArgument` if it was dropped.
    pub(crate) fn live(&self) -> Result<&CfShared> {
        if self.inner.dropped.load(Ordering::Acquire) {
            return Err(Error::cf_dropped(&self.inner.name));
        }
        Ok(&self.inner)
    }
}

/// A family's options: `cf` with the database-wide options (scope `db` in
/// `options/list.rs`) taken from `db_opts`.
fn per_family(db_opts: &Options, cf: Options) -> Options {
    cf.with_database_wide_from(db_opts)
}

/// The options a family recovered from the MANIFEST opens with: `given`
/// (from [`Db::open_with_cf_options`]) if any, else the defaults with its
/// recorded option string applied.
pub(super) fn recovered_options(
    db_opts: &Options,
    name: &str,
    recorded: &str,
    given: &[(String, Options)],
) -> Result<Options> {
    if let Some((_, o)) = given.iter().find(|(n, _)| n == name) {
        o.validate()?;
        return Ok(per_family(db_opts, o.clone()));
    }
    let mut o = Options::default();
    o.apply_option_string(recorded).map_err(|e| {
        Error::InvalidArgument(format!(
            "column family {name:?}: its recorded options do not apply: {e}"
        ))
    })?;
    Ok(per_family(db_opts, o))
}

/// The shared state of a new family `id` named `name`, showing only
/// `mem` (empty) until a super version is installed.
pub(super) fn new_cf_shared(
    id: u32,
    name: &str,
    opts: &Arc<Options>,
    mem: &Arc<dyn crate::memtable::MemTable>,
) -> Arc<CfShared> {
    Arc::new(CfShared {
        id,
        name: name.to_string(),
        opts: Arc::clone(opts),
        sv: ArcSwap::from_pointee(SuperVersion {
            mem: Arc::clone(mem),
            imms: Vec::new(),
            version: Default::default(),
            table_range_dels: Default::default(),
            opts: Arc::clone(opts),
        }),
        dropped: AtomicBool::new(false),
        unpersisted: AtomicBool::new(false),
    })
}

/// A family's state at open or creation.
pub(super) fn new_cf_state(
    shared: Arc<CfShared>,
    memtables: MemTableFactory,
    mem: Arc<dyn crate::memtable::MemTable>,
    mem_log_number: u64,
    imms: VecDeque<super::ImmTable>,
) -> CfState {
    CfState {
        shared,
        memtables,
        mem,
        mem_log_number,
        imms,
        flushing: false,
        flush_count: 0,
        frozen_count: 0,
        compact_cursor: vec![Vec::new(); NUM_LEVELS],
    }
}

impl Db {
    /// Opens the database like [`Db::open`], giving the options of some of
    /// its column families by name (the others open with their recorded
    /// option strings). Needed to re-supply what an option string cannot
    /// hold: a family's merge operator or compaction filter. Names that are
    /// not families of the database are ignored; the default family always
    /// opens with `opts`.
    pub fn open_with_cf_options(
        path: impl AsRef<Path>,
        opts: Options,
        cf_options: Vec<(String, Options)>,
    ) -> Result<Db> {
        Db::open_inner(path.as_ref(), opts, Arc::new(PosixFs), cf_options)
    }

    /// The names of the column families of the database in `path`, read
    /// from its MANIFEST ("default" first), without opening it.
    pub fn list_cf(path: impl AsRef<Path>) -> Result<Vec<String>> {
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        Db::list_cf_with_fs(path, fs)
    }

    /// [`Db::list_cf`] through a custom filesystem.
    pub fn list_cf_with_fs(path: impl AsRef<Path>, fs: Arc<dyn FileSystem>) -> Result<Vec<String>> {
        let vs = VersionSet::recover(fs, path.as_ref())?;
        Ok(vs
            .column_families()
            .values()
            .map(|c| c.name.clone())
            .collect())
    }

    /// The default column family.
    pub fn default_cf(&self) -> ColumnFamily {
        ColumnFamily {
            inner: Arc::clone(&self.core().default_cf),
        }
    }

    /// The live column family named `name`, if any.
    pub fn cf_handle(&self, name: &str) -> Option<ColumnFamily> {
        let st = lock(&self.core().state);
        st.cfs
            .values()
            .find(|c| c.shared.name == name)
            .map(|c| ColumnFamily {
                inner: Arc::clone(&c.shared),
            })
    }

    /// The names of the live column families, by id ("default" first).
    pub fn cf_names(&self) -> Vec<String> {
        let st = lock(&self.core().state);
        st.cfs.values().map(|c| c.shared.name.clone()).collect()
    }

    /// Creates column family `name` with `opts` (its memtable kind, write
    /// buffer size, compression, table format, compaction settings, merge
    /// operator and compaction filter; database-wide options such as the
    /// block cache are the database's). Durable when this returns. An
    /// existing name (or an empty one) is `InvalidArgument`.
    pub fn create_cf(&self, name: &str, opts: &Options) -> Result<ColumnFamily> {
        let core = self.core();
        core.check_writable("create_cf")?;
        if name.is_empty() {
            return Err(Error::InvalidArgument(
                "column family name must not be empty".into(),
            ));
        }
        opts.validate()?;
        let opts = Arc::new(per_family(&core.opts, opts.clone()));
        // Lock order: log, manifest (in apply_edit), state. Holding `log`
        // keeps write groups out while the family appears.
        let log = lock(&core.log);
        // The edit names the current WAL: its directory entry (owed since
        // the last memtable switch) must be durable first.
        core.sync_closed_wals()?;
        let st = lock(&core.state);
        if st.cfs.values().any(|c| c.shared.name == name) {
            return Err(Error::InvalidArgument(format!(
                "column family {name:?} already exists"
            )));
        }
        let id = st.versions.next_column_family_id();
        let memtables = MemTableFactory::new(&opts);
        let mem = core.new_memtable(&memtables);
        let shared = new_cf_shared(id, name, &opts, &mem);
        let edit = VersionEdit {
            column_family: id,
            add_column_family: Some((name.to_string(), opts.to_option_string())),
            max_column_family: Some(id),
            log_number: Some(log.number),
            ..VersionEdit::default()
        };
        let state = new_cf_state(
            Arc::clone(&shared),
            memtables,
            mem,
            log.number,
            VecDeque::new(),
        );
        let (st, result) = core.apply_edit(st, edit, move |st| {
            st.cfs.insert(id, state);
            core.install_super_version(st, id);
        });
        if result.is_ok() {
            core.rewrite_options_file(st);
        } else {
            drop(st);
        }
        drop(log);
        result?;
        log::info!("created column family {name:?} (id {id})");
        Ok(ColumnFamily { inner: shared })
    }

    /// Drops column family `cf`: its data is gone once this returns (a
    /// reopen does not see it); its files are deleted once no iterator or
    /// read still uses them. Handles to it fail afterwards with
    /// `InvalidArgument`. Dropping "default" is `InvalidArgument`.
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        let core = self.core();
        core.check_writable("drop_cf")?;
        if cf.id() == 0 {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".into(),
            ));
        }
        cf.live()?;
        let log = lock(&core.log);
        let st = lock(&core.state);
        if !st.cfs.contains_key(&cf.id()) {
            return Err(Error::cf_dropped(cf.name()));
        }
        let edit = VersionEdit {
            column_family: cf.id(),
            drop_column_family: true,
            ..VersionEdit::default()
        };
        let id = cf.id();
        let (st, result) = core.apply_edit(st, edit, |st| {
            core.retire_family(st, id);
            core.bg_cv.notify_all();
        });
        if result.is_ok() {
            core.rewrite_options_file(st);
        } else {
            drop(st);
        }
        drop(log);
        result?;
        log::info!("dropped column family {:?} (id {id})", cf.name());
        core.delete_obsolete_files();
        Ok(())
    }

    /// Drops the column family named `name` (see [`Db::drop_cf`]); an
    /// unknown name is `InvalidArgument`.
    pub fn drop_cf_by_name(&self, name: &str) -> Result<()> {
        if name == DEFAULT_CF_NAME {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".into(),
            ));
        }
        let cf = self
            .cf_handle(name)
            .ok_or_else(|| Error::InvalidArgument(format!("no column family named {name:?}")))?;
        self.drop_cf(&cf)
    }

    /// Freezes `cf`'s active memtable (if it holds anything) and waits
    /// until every memtable of `cf` frozen so far is in an SST file. Other
    /// families' memtables are left alone.
    pub fn flush_cf(&self, cf: &ColumnFamily) -> Result<()> {
        cf.live()?;
        super::flush::flush_and_wait(self.core(), cf.id())
    }

    /// Inserts or replaces `key` in column family `cf`.
    pub fn put_cf(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.put_cf_opt(&crate::WriteOptions::default(), cf, key, value)
    }

    /// Deletes `key` in column family `cf`.
    pub fn delete_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf_opt(&crate::WriteOptions::default(), cf, key)
    }

    /// [`Db::put_cf`] with write options (rust-rocksdb's `put_cf_opt`).
    pub fn put_cf_opt(
        &self,
        opts: &crate::WriteOptions,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live()?;
        let mut b = crate::WriteBatch::new();
        b.put_cf(cf, key, value);
        self.write(opts, b)
    }

    /// [`Db::delete_cf`] with write options (rust-rocksdb's `delete_cf_opt`).
    pub fn delete_cf_opt(
        &self,
        opts: &crate::WriteOptions,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live()?;
        let mut b = crate::WriteBatch::new();
        b.delete_cf(cf, key);
        self.write(opts, b)
    }

    /// Adds a merge operand for `key` in column family `cf` (see
    /// [`Db::merge`]; reads use that family's merge operator).
    pub fn merge_cf(
        &self,
        opts: &crate::WriteOptions,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live()?;
        let mut b = crate::WriteBatch::new();
        b.merge_cf(cf, key, operand);
        self.write(opts, b)
    }

    /// Deletes every key in `[begin, end)` of column family `cf` (see
    /// [`Db::delete_range`]).
    pub fn delete_range_cf(
        &self,
        opts: &crate::WriteOptions,
        cf: &ColumnFamily,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live()?;
        let (begin, end) = (begin.as_ref(), end.as_ref());
        if begin == end && begin <= end {
            return self.core().check_writable("delete_range");
        }
        let mut b = crate::WriteBatch::new();
        b.delete_range_cf(cf, begin, end);
        self.write(opts, b)
    }

    /// [`Db::stats`] for column family `cf`.
    pub fn stats_cf(&self, cf: &ColumnFamily) -> Result<super::DbStats> {
        cf.live()?;
        let core = self.core();
        let st = lock(&core.state);
        let c = st
            .cfs
            .get(&cf.id())
            .ok_or_else(|| Error::cf_dropped(cf.name()))?;
        Ok(Db::stats_of(&st, c, core.last_visible()))
    }
}

impl DbCore {
    /// Removes family `id` from `st` (it was dropped): its handles fail
    /// from now on, and its name stays known for their errors.
    pub(super) fn retire_family(&self, st: &mut super::DbState, id: u32) {
        if let Some(c) = st.cfs.remove(&id) {
            c.shared.dropped.store(true, Ordering::Release);
            // Handles outlive the family: they must not keep its
            // memtables and tables alive. Readers that loaded the old
            // super version keep what they use until they end.
            c.shared.sv.store(Arc::new(SuperVersion {
                mem: self.new_memtable(&c.memtables),
                imms: Vec::new(),
                version: Default::default(),
                table_range_dels: Default::default(),
                opts: Arc::clone(&c.shared.opts),
            }));
            st.dropped_names.insert(id, c.shared.name.clone());
        }
    }

    /// Rewrites `OPTIONS` with the merge operators of the live families
    /// (after a family was created or dropped). Called holding `log`, which
    /// keeps two rewrites apart; `st` is released before the file is
    /// written, so the temp file's number stays in `pending_outputs` until
    /// it is renamed: a sweep meanwhile must not delete it.
    fn rewrite_options_file(&self, mut st: std::sync::MutexGuard<'_, super::DbState>) {
        let temp = st.versions.new_file_number();
        st.pending_outputs.push(temp);
        let families: Vec<(String, Arc<Options>)> = st
            .cfs
            .values()
            .map(|c| (c.shared.name.clone(), Arc::clone(&c.shared.opts)))
            .collect();
        drop(st);
        super::options_file::rewrite(
            self.fs.as_ref(),
            &self.dir,
            &self.opts,
            families.iter().map(|(n, o)| (n.as_str(), o.as_ref())),
            temp,
        );
        lock(&self.state).pending_outputs.retain(|&n| n != temp);
    }

    /// `InvalidArgument` naming the first of `ids` that is not a live
    /// family (dropped, or never created).
    pub(super) fn check_cf_ids(&self, ids: &[u32]) -> Result<()> {
        let st = lock(&self.state);
        for id in ids {
            if !st.cfs.contains_key(id) {
                let name = st
                    .dropped_names
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| format!("id {id}"));
                return Err(Error::cf_dropped(&name));
            }
        }
        Ok(())
    }
}
