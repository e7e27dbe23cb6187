//! Secondary instances (RocksDB's): a read-only [`Db`] that follows a live
//! primary in another process (or this one) by reading the primary's
//! MANIFEST and WALs, opened with [`Db::open_as_secondary`] and brought up
//! to date with [`Db::try_catch_up_with_primary`].
//!
//! A secondary never writes to the primary's directory and takes no lock
//! there; its own directory holds only its `LOCK` file. Every table of the
//! versions it shows is kept open (as RocksDB requires `max_open_files =
//! -1` of a secondary), so a table the primary's compaction deletes stays
//! readable until a catch-up moves past it.
//!
//! # A catch-up
//! 1. Read CURRENT; if it names another MANIFEST (the primary reopened),
//!    start over from that MANIFEST with no WAL read.
//! 2. Apply the MANIFEST's new complete records: the live tables per
//!    family, and each family's log number (WALs below it hold none of
//!    its unflushed writes). Keep only the families this instance shows
//!    (`families.rs`); add those new to it, drop those gone.
//! 3. Open every table the new state names that is not open yet.
//! 4. Read each WAL at or above the smallest log number up to its last
//!    complete record, into one memtable per (WAL, family).
//! 5. If the MANIFEST gained a complete record meanwhile, the primary may
//!    have deleted a WAL or table the state of step 2 needs (it deletes
//!    files only after the edit that stops needing them is durable): go
//!    back to 1. Otherwise publish: per family, the tables of step 2 and
//!    the memtables of WALs at or above its log number; then the sequence
//!    number readers see.
//!
//! # Invariants
//! 1. A published state is a MANIFEST state S plus WAL records read while
//!    S was the newest state in the MANIFEST: every write acknowledged
//!    (in the WAL, handed to the OS) before the catch-up started is in a
//!    table of S or in a WAL record read — unless it was written with
//!    `disable_wal`, which only a flush makes visible here.
//! 2. A record is applied only once it is complete (`tail.rs`); each
//!    record is inserted once: tails resume where they stopped, and a
//!    family's records in a WAL below its log number are skipped.
//! 3. Lock order: `Follower::tail`, then the database's `state`.

mod families;
mod tail;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::memtable_factory::MemTableFactory;
use super::recovery::{self, OpenMode};
use super::{lock, Db, DbCore, DbHandle, ImmTable};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{FileLock, FileSystem, PosixFs};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::version::{read_current, VersionSet};
use families::Families;
use tail::{ManifestTail, WalTail};

/// How many times one catch-up re-reads the MANIFEST when it changed while
/// the WALs were read, before giving up (each attempt after the first reads
/// only what was appended since).
const MAX_ATTEMPTS: usize = 100;

/// What a secondary instance adds to its [`DbCore`].
pub(super) struct Follower {
    /// The secondary's own directory.
    dir: PathBuf,
    /// Held on `dir/LOCK`: one secondary per directory.
    _lock: Box<dyn FileLock>,
    /// The families it shows, and their options.
    families: Families,
    tail: Mutex<Tail>,
}

/// What the catch-ups have read of the primary's files.
#[derive(Default)]
struct Tail {
    /// `None` before the first read.
    manifest: Option<ManifestTail>,
    /// WALs at or above the smallest log number, by number.
    wals: BTreeMap<u64, WalTail>,
    /// Tables held open in the table cache for the published versions.
    opened: BTreeSet<u64>,
    /// Per family, the empty memtable it shows while no WAL holds
    /// unflushed writes of it.
    empty: BTreeMap<u32, Arc<dyn MemTable>>,
}

impl Tail {
    /// Forgets everything read (the primary reopened, or a catch-up
    /// failed half-way); tables stay open until the next publish.
    fn reset(&mut self) {
        self.manifest = None;
        self.wals.clear();
    }
}

impl Db {
    /// Opens a secondary instance of the database in `primary_path`
    /// (RocksDB's `OpenAsSecondary`): a read-only view that follows a
    /// primary which keeps writing, flushing and compacting — in another
    /// process or this one. It shows the primary's state as of this call
    /// (tables and complete WAL records); call
    /// [`Db::try_catch_up_with_primary`] to see later writes.
    ///
    /// Nothing is written to `primary_path` and no lock is taken there.
    /// `secondary_path` is the secondary's own directory (created if
    /// missing; it holds only a `LOCK` file, so one secondary uses it at a
    /// time). Writes, `flush`, `compact_range` and `checkpoint` return
    /// [`Error::ReadOnly`]. `opts` give the read options of the default
    /// family (its merge operator, block cache, memtable kind for the
    /// WAL's writes); `max_open_files` is ignored: a secondary keeps every
    /// live table open, so tables the primary deletes stay readable.
    /// Writes the primary made with `disable_wal` appear only once flushed.
    pub fn open_as_secondary(
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        opts: Options,
    ) -> Result<Db> {
        Db::open_secondary(
            primary_path.as_ref(),
            secondary_path.as_ref(),
            opts,
            Families::all(Vec::new()),
        )
    }

    /// [`Db::open_as_secondary`], giving the options of some column
    /// families by name (as [`Db::open_with_cf_options`] does for a
    /// primary): a family of that name opens with them — also one the
    /// primary creates later — and the others with their recorded option
    /// strings. Needed for what an option string cannot hold: a family's
    /// merge operator. Every family is shown, as with `open_as_secondary`.
    pub fn open_as_secondary_with_cf_options(
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        opts: Options,
        cf_options: Vec<(String, Options)>,
    ) -> Result<Db> {
        Db::open_secondary(
            primary_path.as_ref(),
            secondary_path.as_ref(),
            opts,
            Families::all(cf_options),
        )
    }

    /// A secondary instance (see [`Db::open_as_secondary`]) showing only
    /// the column families named in `cfs` and "default" (rust-rocksdb's
    /// `DB::open_cf_as_secondary`; the families open with their recorded
    /// option strings, the default one with `opts`). Each named family
    /// must exist (`InvalidArgument` naming it otherwise). Catch-ups
    /// follow them: a family the primary drops is dropped here (its
    /// handles fail; iterators over it keep reading), one it creates again
    /// under a listed name appears again; families of other names — also
    /// those created later — are never shown, and their tables and WAL
    /// records are not read.
    pub fn open_cf_as_secondary<I, N>(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let names = cfs.into_iter().map(|n| n.as_ref().to_string()).collect();
        Db::open_secondary(
            primary_path.as_ref(),
            secondary_path.as_ref(),
            opts.clone(),
            Families::only(names, Vec::new()),
        )
    }

    /// [`Db::open_cf_as_secondary`] with each family's options (rust-rocksdb's
    /// `DB::open_cf_descriptors_as_secondary`; given as
    /// [`Db::open_with_cf_options`] takes them): the families shown are the
    /// ones named in `cfs`, and "default", which opens with `opts`.
    pub fn open_cf_descriptors_as_secondary(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        cfs: Vec<(String, Options)>,
    ) -> Result<Db> {
        let names = cfs.iter().map(|(n, _)| n.clone()).collect();
        Db::open_secondary(
            primary_path.as_ref(),
            secondary_path.as_ref(),
            opts.clone(),
            Families::only(names, cfs),
        )
    }

    fn open_secondary(
        primary: &Path,
        secondary: &Path,
        opts: Options,
        families: Families,
    ) -> Result<Db> {
        opts.validate()?;
        for (name, o) in &families.options {
            o.validate().map_err(|e| {
                Error::InvalidArgument(format!("options of column family {name:?}: {e}"))
            })?;
        }
        let opts = Options {
            max_open_files: usize::MAX,
            ..opts
        };
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        if !fs.exists(&primary.join(filename::CURRENT)) {
            return Err(Error::InvalidArgument(format!(
                "no database in {} (CURRENT is missing) to open as a secondary",
                primary.display()
            )));
        }
        fs.create_dir_all(secondary)?;
        let same = match (primary.canonicalize(), secondary.canonicalize()) {
            (Ok(p), Ok(s)) => p == s,
            _ => primary == secondary,
        };
        if same {
            return Err(Error::InvalidArgument(format!(
                "open_as_secondary: the secondary path {} is the primary's directory; a secondary \
                 needs a directory of its own and never writes to the primary's",
                secondary.display()
            )));
        }
        let lock = fs.lock(&secondary.join(filename::LOCK))?;
        let mut tail = Tail::default();
        let mut versions = first_state(&fs, primary, &mut tail)?;
        families.check_listed_exist(&versions, &primary.display().to_string())?;
        families.select(&mut versions);
        let mut core = recovery::open(
            primary,
            opts,
            fs,
            OpenMode::Secondary(versions),
            &families.options,
        )?;
        core.secondary = Some(Follower {
            dir: secondary.to_path_buf(),
            _lock: lock,
            families,
            tail: Mutex::new(tail),
        });
        let db = Db {
            handle: Arc::new(DbHandle {
                core: Arc::new(core),
                workers: Mutex::new(Vec::new()),
            }),
        };
        db.try_catch_up_with_primary()?;
        log::info!(
            "opened {} as a secondary instance (own directory {}; last sequence {})",
            primary.display(),
            secondary.display(),
            db.core().last_visible()
        );
        Ok(db)
    }

    /// Brings a secondary instance up to date with its primary (RocksDB's
    /// `TryCatchUpWithPrimary`): afterwards it shows every write the
    /// primary acknowledged before this call (except writes made with
    /// `disable_wal` and not flushed yet); reads and iterators begun before
    /// it go on seeing what they saw. (A snapshot taken on a secondary does
    /// not hold back the primary's compaction: after a catch-up, a read at
    /// an older snapshot may miss versions the primary dropped.) A WAL record
    /// the primary is still writing (or one a crash cut short) is never
    /// shown in part. Tables and WALs the primary deletes during the call
    /// make it read the primary's MANIFEST again. `InvalidArgument` on a
    /// database not opened with [`Db::open_as_secondary`].
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        let core = self.core();
        core.check_open()?;
        let Some(follower) = &core.secondary else {
            return Err(Error::InvalidArgument(
                "try_catch_up_with_primary: this database is not a secondary instance \
                 (open one with Db::open_as_secondary)"
                    .into(),
            ));
        };
        let mut tail = lock(&follower.tail);
        let r = catch_up(core, follower, &mut tail);
        if r.is_err() {
            tail.reset();
        }
        r
    }

    /// The secondary's own directory, for a database opened with
    /// [`Db::open_as_secondary`]; `None` otherwise.
    pub fn secondary_path(&self) -> Option<&Path> {
        self.core().secondary.as_ref().map(|f| f.dir.as_path())
    }
}

/// Reads the primary's MANIFEST for the first time (retrying while the
/// primary replaces it), leaving `tail` positioned after it.
fn first_state(fs: &Arc<dyn FileSystem>, dir: &Path, tail: &mut Tail) -> Result<VersionSet> {
    for _ in 0..MAX_ATTEMPTS {
        let name = read_current(fs.as_ref(), dir)?;
        let mut m = ManifestTail::new(name);
        if !m.refresh(fs.as_ref(), dir)? {
            continue; // replaced between reading CURRENT and opening it
        }
        m.apply_pending(dir)?;
        let vs = m.version_set(fs, dir)?;
        tail.manifest = Some(m);
        return Ok(vs);
    }
    Err(kept_changing())
}

fn kept_changing() -> Error {
    Error::io(
        "catching up with the primary",
        std::io::Error::other(format!(
            "the primary's MANIFEST changed during each of {MAX_ATTEMPTS} attempts; try again"
        )),
    )
}

/// One catch-up (the steps in the module documentation).
fn catch_up(core: &DbCore, follower: &Follower, tail: &mut Tail) -> Result<()> {
    let (fs, dir) = (&core.fs, core.dir.as_path());
    for _ in 0..MAX_ATTEMPTS {
        let name = read_current(fs.as_ref(), dir)?;
        if tail.manifest.as_ref().map(|m| &m.name) != Some(&name) {
            tail.reset();
        }
        let manifest = tail
            .manifest
            .get_or_insert_with(|| ManifestTail::new(name.clone()));
        if !manifest.refresh(fs.as_ref(), dir)? {
            continue;
        }
        manifest.apply_pending(dir)?;
        let mut vs = manifest.version_set(fs, dir)?;
        follower.families.select(&mut vs);
        sync_families(core, &follower.families, &vs)?;
        if !open_tables(core, tail, &vs, &name)? {
            continue;
        }
        read_wals(core, tail, &vs)?;
        if moved_on(core, tail, &name)? {
            continue;
        }
        publish(core, tail, vs);
        return Ok(());
    }
    Err(kept_changing())
}

/// The primary's MANIFEST has a complete record the tail has not applied,
/// or CURRENT names another one.
fn moved_on(core: &DbCore, tail: &mut Tail, name: &str) -> Result<bool> {
    let (fs, dir) = (core.fs.as_ref(), core.dir.as_path());
    if read_current(fs, dir)? != name {
        return Ok(true);
    }
    let Some(m) = tail.manifest.as_mut() else {
        return Ok(true);
    };
    Ok(!m.refresh(fs, dir)? || m.has_pending(dir)?)
}

/// Opens the tables of `vs` not open yet. `false` when one is missing
/// and the primary has moved on (it deleted the table after a newer edit):
/// the caller reads the MANIFEST again. A missing table the MANIFEST
/// still names is the error it is.
fn open_tables(core: &DbCore, tail: &mut Tail, vs: &VersionSet, name: &str) -> Result<bool> {
    for number in vs.all_file_numbers() {
        if tail.opened.contains(&number) {
            continue;
        }
        match core.tables.get(number) {
            Ok(_) => {
                tail.opened.insert(number);
            }
            Err(e) => {
                let path = filename::path(&core.dir, FileKind::Table, number);
                if !core.fs.exists(&path) && moved_on(core, tail, name)? {
                    return Ok(false);
                }
                return Err(e);
            }
        }
    }
    Ok(true)
}

/// Adds the families `vs` (the followed ones of the primary's state) has
/// that the database does not (created by the primary since; they show
/// nothing until the catch-up publishes) and drops those it no longer has.
fn sync_families(core: &DbCore, families: &Families, vs: &VersionSet) -> Result<()> {
    let mut st = lock(&core.state);
    for (&id, cf) in vs.column_families() {
        if st.cfs.contains_key(&id) {
            continue;
        }
        let opts = Arc::new(super::cf::recovered_options(
            &core.opts,
            &cf.name,
            &cf.options,
            &families.options,
        )?);
        let memtables = MemTableFactory::new(&opts);
        let mem = core.new_memtable(&memtables);
        let shared = super::cf::new_cf_shared(id, &cf.name, &opts, &mem);
        let state = super::cf::new_cf_state(shared, memtables, mem, cf.log_number, VecDeque::new());
        st.cfs.insert(id, state);
    }
    let gone: Vec<u32> = st
        .cfs
        .keys()
        .copied()
        .filter(|id| !vs.column_families().contains_key(id))
        .collect();
    for id in gone {
        core.retire_family(&mut st, id);
    }
    Ok(())
}

/// Reads every WAL at or above the smallest log number of `vs` up to its
/// last complete record; forgets the WALs below it.
fn read_wals(core: &DbCore, tail: &mut Tail, vs: &VersionSet) -> Result<()> {
    let (fs, dir) = (core.fs.as_ref(), core.dir.as_path());
    let min_log = vs.log_number();
    tail.wals.retain(|&n, _| n >= min_log);
    let log_numbers: BTreeMap<u32, u64> = vs
        .column_families()
        .iter()
        .map(|(&id, c)| (id, c.log_number))
        .collect();
    let mut numbers: Vec<u64> = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|name| filename::parse(name))
        .filter(|&(kind, n)| kind == FileKind::Wal && n >= min_log)
        .map(|(_, n)| n)
        .collect();
    numbers.sort_unstable();
    for number in numbers {
        let path = filename::path(dir, FileKind::Wal, number);
        let wal = tail.wals.entry(number).or_default();
        let new_mem = |cf: u32| {
            let st = lock(&core.state);
            st.cfs.get(&cf).map(|c| core.new_memtable(&c.memtables))
        };
        // A WAL deleted since the listing held no unflushed write of any
        // family in the MANIFEST state the primary had then; if that
        // state is newer than `vs`, `moved_on` sends the catch-up round.
        wal.read(fs, &path, number, &log_numbers, new_mem)?;
    }
    Ok(())
}

/// Shows `vs` and the WAL memtables to readers: per family its tables and
/// the memtables of WALs at or above its log number (the newest as `mem`),
/// then the sequence number, and closes the tables no version uses.
fn publish(core: &DbCore, tail: &mut Tail, vs: VersionSet) {
    let mut st = lock(&core.state);
    let ids: Vec<u32> = st.cfs.keys().copied().collect();
    for &id in &ids {
        let log_number = vs
            .column_families()
            .get(&id)
            .map_or(u64::MAX, |c| c.log_number);
        let Some(c) = st.cfs.get_mut(&id) else {
            continue;
        };
        let mut mems: Vec<(u64, Arc<dyn MemTable>)> = tail
            .wals
            .range(log_number..)
            .filter_map(|(&n, w)| w.mems.get(&id).map(|m| (n, Arc::clone(m))))
            .collect();
        c.mem = match mems.pop() {
            Some((n, m)) => {
                c.mem_log_number = n;
                m
            }
            None => Arc::clone(
                tail.empty
                    .entry(id)
                    .or_insert_with(|| core.new_memtable(&c.memtables)),
            ),
        };
        c.imms = mems
            .into_iter()
            .map(|(log_number, mem)| ImmTable {
                mem,
                log_number,
                unpersisted: false,
            })
            .collect();
    }
    tail.empty.retain(|id, _| st.cfs.contains_key(id));
    let seq = tail
        .wals
        .values()
        .map(|w| w.max_seq)
        .chain([vs.last_sequence()])
        .max()
        .unwrap_or(0);
    st.versions = vs;
    for &id in &ids {
        core.install_super_version(&mut st, id);
    }
    // Release, after the super versions: a reader that loads this sequence
    // (Acquire) and then a super version finds the entries it covers.
    // Never lowered, so snapshots and reads keep their order.
    core.visible_seq.fetch_max(seq, Ordering::Release);
    // Tables no version a reader may hold uses any more.
    let mut live: BTreeSet<u64> = st.versions.all_file_numbers().into_iter().collect();
    for v in st.live_versions.iter().filter_map(|w| w.upgrade()) {
        live.extend(v.file_numbers());
    }
    drop(st);
    tail.opened.retain(|n| {
        let keep = live.contains(n);
        if !keep {
            core.tables.evict(*n);
        }
        keep
    });
}
