//! [`Db::ingest_external_file`]: adds tables written by
//! [`SstFileWriter`](crate::SstFileWriter) to the LSM tree with one MANIFEST
//! edit, without passing their entries through the WAL or the memtable.
//!
//! Steps (RocksDB's `IngestExternalFile`, our code):
//! 1. **Stage** each file without database locks: allocate a file number
//!    (protected in `pending_outputs`), hard-link (`move_files`) or copy it
//!    to `NNNNNN.sst` with its data fsynced, open the copy as a table and
//!    check it is external (property `batchkv.external.sst.file.version`,
//!    every sequence 0), read its first and last keys — or, with
//!    `verify_checksums_before_ingest`, every entry, checking checksums,
//!    order and count.
//! 2. Refuse files that overlap each other.
//! 3. If a memtable holds keys inside a file's range, flush
//!    (`allow_blocking_flush`) — the memtable is read first, so its older
//!    entries would hide the ingested ones.
//! 4. **Commit**, holding `log`, `manifest` and `state` (no version is
//!    installed, no write group runs, no compaction is picked meanwhile):
//!    re-check the memtables (a write may have come in since the flush:
//!    then release and go back to 3), pick each file's level, choose the
//!    global sequence number, fsync the directory, append and fsync one
//!    MANIFEST edit adding every file, install the version, then publish
//!    the sequence number.
//!
//! A failure before the MANIFEST write removes the staged files and leaves
//! the database as it was. A failed MANIFEST write is a background error
//! (as for a flush); the staged files then stay protected, since the edit
//! may have reached the disk.
//!
//! **Level**: each file goes to the deepest level L such that no file of
//! levels 0..=L overlaps its user-key range (so everything above it in
//! that range is absent and everything below is older) and no running
//! compaction may write an output overlapping it at L; failing that, L0.
//!
//! **Sequence number** (docs/format/sst.md §9): the files' entries are stored
//! with sequence 0. If a file overlaps any table, or a snapshot exists and
//! `snapshot_consistency` is set, all files of the call get one fresh
//! sequence number `g = last + 1` (recorded in the MANIFEST as the files'
//! global sequence number; readers see every entry at `g`). Otherwise the
//! keys are new to the database and sequence 0 serves (no sequence number
//! is consumed), as in RocksDB.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use super::statistics::Counters;
use super::{lock, Db, DbCore, DbState, LogState};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::iter::InternalIterator;
use crate::key::{
    append_internal_key, lookup_key, parse_internal_key, user_key, ValueType, MAX_SEQUENCE,
};
use crate::memtable::MemTable;
use crate::sst::{BlockReadOptions, Table};
use crate::version::{FileMetaData, Version, VersionEdit, NUM_LEVELS};

/// Flushes tried before giving up on writes that keep landing in the
/// ingested ranges (each attempt flushes, then re-checks under the locks).
const MAX_FLUSH_ATTEMPTS: usize = 16;

/// Bytes copied per read when a file is copied into the database.
const COPY_CHUNK: usize = 1 << 20;

/// How [`Db::ingest_external_file`] takes files in. Defaults are RocksDB's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOptions {
    /// Hard-link the files into the database instead of copying them, and
    /// unlink the originals once ingested (default false: copy, originals
    /// untouched).
    pub move_files: bool,
    /// With `move_files`, copy a file that cannot be linked (another
    /// filesystem) instead of failing (default true).
    pub failed_move_fall_back_to_copy: bool,
    /// Snapshots taken before the ingestion never see its keys (default
    /// true). When false, keys new to the database may be ingested at
    /// sequence 0 even while snapshots exist, and those snapshots then see
    /// them.
    pub snapshot_consistency: bool,
    /// Allow assigning the files a new sequence number (default true). When
    /// false, an ingestion that needs one (the files overlap existing data,
    /// or a snapshot exists with `snapshot_consistency`) fails with
    /// `InvalidArgument`.
    pub allow_global_seqno: bool,
    /// Flush the memtables, blocking, when they hold keys inside an ingested
    /// file's range (default true). When false, such an ingestion fails
    /// with `InvalidArgument`.
    pub allow_blocking_flush: bool,
    /// Read every block of every file and check its checksum, key order
    /// and entry count before ingesting (default false: only the footer,
    /// index, filter, properties and the first and last data blocks are
    /// read and verified).
    pub verify_checksums_before_ingest: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: false,
            failed_move_fall_back_to_copy: true,
            snapshot_consistency: true,
            allow_global_seqno: true,
            allow_blocking_flush: true,
            verify_checksums_before_ingest: false,
        }
    }
}

/// One external file linked or copied into the database directory and
/// checked (step 1).
#[derive(Debug)]
struct Staged {
    source: PathBuf,
    /// Its table number in the database directory; in `pending_outputs`.
    number: u64,
    /// Hard-linked (so `move_files` unlinks the source at the end).
    linked: bool,
    smallest: Vec<u8>,
    smallest_type: ValueType,
    largest: Vec<u8>,
    largest_type: ValueType,
    num_entries: u64,
    file_size: u64,
}

impl Db {
    /// Adds the tables at `paths`, written by
    /// [`SstFileWriter`](crate::SstFileWriter), to the database atomically:
    /// after it returns (and after any crash) either every key of every
    /// file is readable or none is. The files must not overlap each other.
    /// Ingested keys shadow older data and are shadowed by later writes;
    /// snapshots taken before the call do not see them (with
    /// `snapshot_consistency`). The database directory gets its own copies
    /// (hard links with `move_files`), fsynced before the MANIFEST names
    /// them; the call is durable when it returns.
    ///
    /// Errors: `InvalidArgument` for no files, a file not written by
    /// `SstFileWriter`, overlapping files, or an ingestion the options
    /// forbid; `Corruption` (naming the file and offset) for a damaged
    /// file; I/O errors. On any error the database is unchanged and the
    /// copies are removed.
    pub fn ingest_external_file<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &IngestOptions,
    ) -> Result<()> {
        self.ingest_into(0, paths, opts)
    }

    /// [`Db::ingest_external_file`] into column family `cf`: the files'
    /// keys become that family's, placed in its levels. A dropped family is
    /// `InvalidArgument` (naming it), and so is one dropped while the files
    /// are staged.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(
        &self,
        cf: &super::ColumnFamily,
        paths: &[P],
        opts: &IngestOptions,
    ) -> Result<()> {
        cf.live()?;
        self.ingest_into(cf.id(), paths, opts)
    }

    fn ingest_into<P: AsRef<Path>>(
        &self,
        cf: u32,
        paths: &[P],
        opts: &IngestOptions,
    ) -> Result<()> {
        let core = self.core();
        core.check_writable("ingest_external_file")?;
        if paths.is_empty() {
            return Err(Error::InvalidArgument(
                "ingest_external_file: no files given".into(),
            ));
        }
        let mut staged: Vec<Staged> = Vec::with_capacity(paths.len());
        let result = core.ingest(cf, paths, opts, &mut staged);
        match &result {
            Ok(()) => {
                for f in staged.iter().filter(|f| f.linked && opts.move_files) {
                    if let Err(e) = core.fs.remove_file(&f.source) {
                        log::warn!("ingest: could not unlink moved file: {e}");
                    }
                }
            }
            Err(_) => core.unstage(&staged),
        }
        result
    }
}

impl DbCore {
    fn ingest<P: AsRef<Path>>(
        &self,
        cf: u32,
        paths: &[P],
        opts: &IngestOptions,
        staged: &mut Vec<Staged>,
    ) -> Result<()> {
        for p in paths {
            staged.push(self.stage(p.as_ref(), opts)?);
        }
        check_disjoint(staged)?;
        for attempt in 0..MAX_FLUSH_ATTEMPTS {
            let sv = {
                let st = lock(&self.state);
                let family = st.cfs.get(&cf).ok_or_else(|| dropped_during_ingest(cf))?;
                family.shared.sv.load_full()
            };
            if memtables_overlap(std::iter::once(&sv.mem).chain(&sv.imms), staged)? {
                if !opts.allow_blocking_flush {
                    return Err(memtable_overlap_error());
                }
                drop(sv);
                super::flush::flush_and_wait(self, cf)?;
            }
            // Step 4.
            let (_no_writes, _one_writer) = self.lock_log_and_manifest();
            let st = lock(&self.state);
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Box::new(e.clone())));
            }
            self.check_open()?;
            let d = st.cfs.get(&cf).ok_or_else(|| dropped_during_ingest(cf))?;
            let mems = std::iter::once(&d.mem).chain(d.imms.iter().map(|i| &i.mem));
            if memtables_overlap(mems, staged)? {
                // A write came in after the flush: flush again.
                if !opts.allow_blocking_flush {
                    return Err(memtable_overlap_error());
                }
                log::info!(
                    "ingest: new writes in the ingested range, flushing again (attempt {attempt})"
                );
                continue;
            }
            return self.commit(st, cf, staged, opts);
        }
        Err(Error::InvalidArgument(format!(
            "ingest_external_file: writes into the ingested key ranges kept arriving during {MAX_FLUSH_ATTEMPTS} flushes; retry when they pause"
        )))
    }

    /// Takes `log`, then `manifest` (then the caller takes `state`): the
    /// database's lock order (db/mod.rs invariant 3). The reverse order
    /// deadlocks with a write leader that holds `log` while it waits for a
    /// flush, which needs `manifest` (found by
    /// `ingest_while_writers_run_keeps_every_write`).
    fn lock_log_and_manifest(&self) -> (MutexGuard<'_, LogState>, MutexGuard<'_, ()>) {
        let log = lock(&self.log);
        (log, lock(&self.manifest))
    }

    /// Step 1 for one file; on error nothing of it is left behind.
    fn stage(&self, source: &Path, opts: &IngestOptions) -> Result<Staged> {
        let number = {
            let mut st = lock(&self.state);
            let n = st.versions.new_file_number();
            st.pending_outputs.push(n);
            n
        };
        let dst = filename::path(&self.dir, FileKind::Table, number);
        let staged = self
            .place(source, &dst, opts)
            .and_then(|linked| self.check_external(source, &dst, number, linked, opts));
        if staged.is_err() {
            if self.fs.exists(&dst) {
                let _ = self.fs.remove_file(&dst);
            }
            lock(&self.state).pending_outputs.retain(|&n| n != number);
        }
        staged
    }

    /// Links or copies `source` to `dst` with its data durable; true if linked.
    fn place(&self, source: &Path, dst: &Path, opts: &IngestOptions) -> Result<bool> {
        if opts.move_files {
            match self.fs.hard_link(source, dst) {
                Ok(()) => return Ok(true),
                Err(e) if !opts.failed_move_fall_back_to_copy => return Err(e),
                Err(e) => log::info!("ingest: {e}; copying instead"),
            }
        }
        copy_file(self.fs.as_ref(), source, dst)?;
        Ok(false)
    }

    /// Opens the staged copy `dst` of `source` and checks it is an external
    /// table; errors name `source`.
    fn check_external(
        &self,
        source: &Path,
        dst: &Path,
        number: u64,
        linked: bool,
        opts: &IngestOptions,
    ) -> Result<Staged> {
        let name = source.display().to_string();
        let file = self.fs.open_random_access(dst)?;
        let file_size = file.size();
        // Checked with verification on, whatever the database's
        // `verify_checksums` says for its own reads.
        let mut table_opts = self.opts.table_options();
        table_opts.verify_checksums = true;
        let table = Table::open(file, name.clone(), table_opts)?;
        let props = table.properties().clone();
        match props.external_sst_file_version {
            1 => {}
            0 => {
                return Err(Error::InvalidArgument(format!(
                    "{name}: not an external SST file (no batchkv.external.sst.file.version property; write it with SstFileWriter)"
                )))
            }
            v => {
                return Err(Error::InvalidArgument(format!(
                    "{name}: external SST file version {v} is not supported (this build reads version 1)"
                )))
            }
        }
        if props.num_entries == 0 {
            return Err(Error::InvalidArgument(format!(
                "{name}: external SST file holds no entries"
            )));
        }
        if table.range_dels().is_some() {
            // SstFileWriter writes none, and their sequence numbers would
            // not be replaced by the global one.
            return Err(Error::InvalidArgument(format!(
                "{name}: external SST file holds range tombstones, which ingestion does not support"
            )));
        }
        if props.smallest_seqno != 0 || props.largest_seqno != 0 {
            return Err(Error::corruption(
                &name,
                0,
                format!(
                    "external SST file records sequence numbers {}..={}; its entries must all have sequence 0",
                    props.smallest_seqno, props.largest_seqno
                ),
            ));
        }
        let ro = BlockReadOptions {
            fill_cache: false,
            verify_checksums: true,
        };
        let mut it = table.iter_with(ro);
        let entry = |it: &dyn InternalIterator, n: u64| -> Result<(Vec<u8>, ValueType)> {
            match parse_internal_key(it.key()) {
                Some(p)
                    if p.sequence == 0
                        && matches!(p.value_type, ValueType::Value | ValueType::Deletion) =>
                {
                    Ok((p.user_key.to_vec(), p.value_type))
                }
                _ => Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "entry {n}: key \"{}\" is not a put or delete with sequence 0",
                        it.key().escape_ascii()
                    ),
                )),
            }
        };
        let missing = || Error::corruption(&name, 0, "table has no entries to read");
        it.seek_to_first();
        it.status()?;
        if !it.valid() {
            return Err(missing());
        }
        let (smallest, smallest_type) = entry(&it, 0)?;
        let (largest, largest_type) = if opts.verify_checksums_before_ingest {
            // Every block is read (and its checksum verified); user keys
            // must strictly ascend (global_seqno.rs invariant 1).
            let (mut last, mut last_type) = (smallest.clone(), smallest_type);
            let mut n = 1;
            it.next();
            while it.valid() {
                let (k, t) = entry(&it, n)?;
                if k <= last {
                    return Err(Error::corruption(
                        &name,
                        0,
                        format!(
                            "entry {n}: key \"{}\" does not follow \"{}\" in strictly ascending order",
                            k.escape_ascii(),
                            last.escape_ascii()
                        ),
                    ));
                }
                (last, last_type) = (k, t);
                n += 1;
                it.next();
            }
            it.status()?;
            if n != props.num_entries {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "holds {n} entries, its properties record {}",
                        props.num_entries
                    ),
                ));
            }
            (last, last_type)
        } else {
            it.seek_to_last();
            it.status()?;
            if !it.valid() {
                return Err(missing());
            }
            entry(&it, props.num_entries - 1)?
        };
        if smallest > largest {
            return Err(Error::corruption(
                &name,
                0,
                "first key sorts after the last key",
            ));
        }
        Ok(Staged {
            source: source.to_path_buf(),
            number,
            linked,
            smallest,
            smallest_type,
            largest,
            largest_type,
            num_entries: props.num_entries,
            file_size,
        })
    }

    /// Step 4 under `manifest`, `log` and `state` (held by the caller).
    fn commit(
        &self,
        mut st: MutexGuard<'_, DbState>,
        cf: u32,
        staged: &mut Vec<Staged>,
        opts: &IngestOptions,
    ) -> Result<()> {
        let v = st
            .versions
            .current_cf(cf)
            .ok_or_else(|| dropped_during_ingest(cf))?;
        let hulls = compacting_hulls(&v, &st.compacting);
        let placements: Vec<(usize, bool)> = staged
            .iter()
            .map(|f| pick_level(&v, &hulls, &f.smallest, &f.largest))
            .collect();
        let overlaps_data = placements.iter().any(|&(_, o)| o);
        // Held through the install when sequence 0 is used, so no snapshot
        // is taken in between that would see the keys appear.
        let snapshots = self.snapshots.hold();
        let need_seqno = overlaps_data || (opts.snapshot_consistency && !snapshots.is_empty());
        let _snapshots = if need_seqno {
            drop(snapshots);
            None
        } else {
            Some(snapshots)
        };
        if need_seqno && !opts.allow_global_seqno {
            return Err(Error::InvalidArgument(format!(
                "ingest_external_file: the files need a global sequence number ({}) but allow_global_seqno is false",
                if overlaps_data {
                    "they overlap existing data"
                } else {
                    "a snapshot exists"
                }
            )));
        }
        let seqno = if need_seqno {
            self.last_visible() + 1
        } else {
            0
        };
        if seqno > MAX_SEQUENCE {
            return Err(Error::InvalidArgument(
                "ingest_external_file: sequence numbers exhausted".into(),
            ));
        }
        // L0 is read newest file number first: a file placed there must
        // have a larger number than every L0 file it may shadow.
        let max_l0 = v.levels[0].iter().map(|f| f.number).max().unwrap_or(0);
        for (f, &(level, _)) in staged.iter_mut().zip(&placements) {
            if level == 0 && f.number < max_l0 {
                let n = st.versions.new_file_number();
                st.pending_outputs.push(n);
                let from = filename::path(&self.dir, FileKind::Table, f.number);
                let to = filename::path(&self.dir, FileKind::Table, n);
                if let Err(e) = self.fs.rename(&from, &to) {
                    st.pending_outputs.retain(|&x| x != n);
                    return Err(e);
                }
                st.pending_outputs.retain(|&x| x != f.number);
                f.number = n;
            }
        }
        // The new names must be durable before the MANIFEST refers to them.
        self.fs.sync_dir(&self.dir)?;

        let mut edit = VersionEdit {
            column_family: cf,
            ..VersionEdit::default()
        };
        for (f, &(level, _)) in staged.iter().zip(&placements) {
            let (mut smallest, mut largest) = (Vec::new(), Vec::new());
            append_internal_key(&mut smallest, &f.smallest, seqno, f.smallest_type);
            append_internal_key(&mut largest, &f.largest, seqno, f.largest_type);
            edit.new_files.push((
                level as u32,
                FileMetaData {
                    number: f.number,
                    file_size: f.file_size,
                    smallest,
                    largest,
                    num_entries: f.num_entries,
                    global_seqno: seqno,
                    pinned: Default::default(),
                },
            ));
        }
        if seqno > 0 {
            edit.last_sequence = Some(seqno);
        }
        let prepared = match st.versions.prepare(edit) {
            Ok(p) => p,
            Err(e) => {
                st.bg_error.get_or_insert(e.clone());
                return Err(e);
            }
        };
        if let Err(e) = prepared.write() {
            // The edit may be on disk: keep the files (and their protection).
            st.bg_error.get_or_insert(e.clone());
            staged.clear();
            return Err(e);
        }
        st.versions.install(prepared);
        // Readers load the sequence before the super version, so the new
        // super version is published first (db/mod.rs invariant 1).
        self.install_super_version(&mut st, cf);
        if seqno > 0 {
            self.visible_seq.store(seqno, Ordering::Release);
        }
        #[cfg(feature = "invariants")]
        self.check_invariants(&st);
        for f in staged.iter() {
            st.pending_outputs.retain(|&n| n != f.number);
        }
        Counters::add(&self.counters.ingested_files, staged.len() as u64);
        Counters::add(
            &self.counters.ingested_bytes,
            staged.iter().map(|f| f.file_size).sum(),
        );
        log::info!(
            "ingest: {} files at sequence {seqno}: {:?}",
            staged.len(),
            staged
                .iter()
                .zip(&placements)
                .map(|(f, (l, _))| format!("{} -> L{l}", f.number))
                .collect::<Vec<_>>()
        );
        // Compaction may have work now.
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Removes what staging left for a failed ingestion.
    fn unstage(&self, staged: &[Staged]) {
        for f in staged {
            let path = filename::path(&self.dir, FileKind::Table, f.number);
            let _ = self.fs.remove_file(&path);
        }
        let mut st = lock(&self.state);
        st.pending_outputs
            .retain(|n| !staged.iter().any(|f| f.number == *n));
    }
}

/// The family `cf` was dropped after its handle was checked.
fn dropped_during_ingest(cf: u32) -> Error {
    Error::InvalidArgument(format!(
        "ingest_external_file: column family {cf} was dropped"
    ))
}

fn memtable_overlap_error() -> Error {
    Error::InvalidArgument(
        "ingest_external_file: unflushed writes overlap an ingested file's key range and allow_blocking_flush is false".into(),
    )
}

/// True if a memtable holds a key, or a range tombstone reaching a key,
/// inside some file's user-key range.
fn memtables_overlap<'a>(
    mems: impl Iterator<Item = &'a Arc<dyn MemTable>>,
    staged: &[Staged],
) -> Result<bool> {
    for m in mems {
        if m.num_entries() == 0 {
            continue;
        }
        if let Some(dels) = m.range_dels().filter(|d| d.len() > 0) {
            // `[begin, end)` meets `[smallest, largest]`.
            let hit = dels.tombstones().iter().any(|t| {
                staged.iter().any(|f| {
                    t.begin.as_slice() <= f.largest.as_slice()
                        && f.smallest.as_slice() < t.end.as_slice()
                })
            });
            if hit {
                return Ok(true);
            }
        }
        let mut it = Arc::clone(m).iter();
        for f in staged {
            // The largest trailer sorts before every version of the key.
            it.seek(&lookup_key(&f.smallest, MAX_SEQUENCE));
            if it.valid() {
                if user_key(it.key()) <= f.largest.as_slice() {
                    return Ok(true);
                }
            } else {
                it.status()?;
            }
        }
    }
    Ok(false)
}

/// Sorts `staged` by smallest key and refuses overlapping neighbours.
fn check_disjoint(staged: &mut [Staged]) -> Result<()> {
    staged.sort_by(|a, b| a.smallest.cmp(&b.smallest));
    for w in staged.windows(2) {
        if w[0].largest >= w[1].smallest {
            return Err(Error::InvalidArgument(format!(
                "ingest_external_file: {} [\"{}\", \"{}\"] and {} [\"{}\", \"{}\"] overlap",
                w[0].source.display(),
                w[0].smallest.escape_ascii(),
                w[0].largest.escape_ascii(),
                w[1].source.display(),
                w[1].smallest.escape_ascii(),
                w[1].largest.escape_ascii()
            )));
        }
    }
    Ok(())
}

/// Copies `from` to the new file `to` in chunks and fsyncs it.
fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<()> {
    let src = fs.open_random_access(from)?;
    let size = src.size();
    let mut dst = fs.new_writable(to)?;
    let mut buf = vec![0u8; COPY_CHUNK.min(usize::try_from(size).unwrap_or(COPY_CHUNK))];
    let mut offset = 0u64;
    while offset < size {
        let n = buf
            .len()
            .min(usize::try_from(size - offset).unwrap_or(usize::MAX));
        src.read_exact_at(&mut buf[..n], offset)?;
        dst.append(&buf[..n])?;
        offset += n as u64;
    }
    dst.sync()
}

/// A user-key range `[lo, hi]`.
type Hull = Option<(Vec<u8>, Vec<u8>)>;

/// Per level, the user-key hull of the files being compacted there.
fn compacting_hulls(v: &Version, compacting: &HashSet<u64>) -> Vec<Hull> {
    v.levels
        .iter()
        .map(|files| {
            let mut hull: Hull = None;
            for f in files.iter().filter(|f| compacting.contains(&f.number)) {
                let (lo, hi) = (user_key(&f.smallest), user_key(&f.largest));
                hull = Some(match hull {
                    None => (lo.to_vec(), hi.to_vec()),
                    Some((a, b)) => (a.min(lo.to_vec()), b.max(hi.to_vec())),
                });
            }
            hull
        })
        .collect()
}

/// The level for a file of user keys `[lo, hi]`, and whether any table of
/// `v` overlaps it. Pure, for tests.
///
/// The file descends from L0 while no file of the level overlaps it; it
/// may stop at a level ≥ 1 unless a running compaction can write an output
/// there that overlaps it. A compaction from level `l` writes to `l + 1`
/// keys from inputs of `l` and `l + 1` only, and one output file may span
/// the whole hull of its inputs (L0 → L1 takes every L0 file), so level
/// `t` is blocked when `[lo, hi]` meets the hull of the compacting files
/// of levels `t - 1` and `t` (over-approximated by merging the hulls of
/// all compactions). Such outputs hold no key in `[lo, hi]` (no input
/// overlaps it), so they never hide the file's keys at a deeper level.
fn pick_level(v: &Version, hulls: &[Hull], lo: &[u8], hi: &[u8]) -> (usize, bool) {
    let meets = |h: &Hull| {
        h.as_ref()
            .is_some_and(|(a, b)| a.as_slice() <= hi && lo <= b.as_slice())
    };
    let mut target = 0;
    for level in 0..NUM_LEVELS {
        let overlaps = v.levels[level]
            .iter()
            .any(|f| user_key(&f.smallest) <= hi && lo <= user_key(&f.largest));
        if overlaps {
            return (target, true);
        }
        if level > 0 {
            let merged = match (&hulls[level - 1], &hulls[level]) {
                (Some((a, b)), Some((c, d))) => Some((a.min(c).clone(), b.max(d).clone())),
                (h, None) | (None, h) => h.clone(),
            };
            if !meets(&merged) {
                target = level;
            }
        }
    }
    (target, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMetaData> {
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        append_internal_key(&mut smallest, lo.as_bytes(), 5, ValueType::Value);
        append_internal_key(&mut largest, hi.as_bytes(), 5, ValueType::Value);
        Arc::new(FileMetaData {
            number,
            file_size: 1,
            smallest,
            largest,
            num_entries: 1,
            global_seqno: 0,
            pinned: Default::default(),
        })
    }

    fn pick(v: &Version, compacting: &[u64], lo: &str, hi: &str) -> (usize, bool) {
        let c: HashSet<u64> = compacting.iter().copied().collect();
        pick_level(v, &compacting_hulls(v, &c), lo.as_bytes(), hi.as_bytes())
    }

    #[test]
    fn empty_version_places_at_the_bottom() {
        assert_eq!(
            pick(&Version::default(), &[], "a", "z"),
            (NUM_LEVELS - 1, false)
        );
    }

    #[test]
    fn stops_above_the_first_overlapping_level() {
        let mut v = Version::default();
        v.levels[3] = vec![file(1, "m", "p")];
        v.levels[5] = vec![file(2, "a", "z")];
        assert_eq!(pick(&v, &[], "n", "o"), (2, true));
        assert_eq!(pick(&v, &[], "q", "r"), (4, true), "L3 misses, L5 overlaps");
        // Touching an endpoint is overlap (inclusive ranges).
        assert_eq!(pick(&v, &[], "p", "q"), (2, true));
        v.levels[0] = vec![file(3, "x", "y")];
        assert_eq!(pick(&v, &[], "a", "x"), (0, true));
        assert_eq!(pick(&v, &[], "zz", "zzz"), (NUM_LEVELS - 1, false));
    }

    #[test]
    fn running_compactions_block_the_levels_their_outputs_may_overlap() {
        // L0 → L1 compaction of two disjoint L0 files: one L1 output may
        // span "a".."z", so L1 is blocked for "m"; L2 holds "m".
        let mut v = Version::default();
        v.levels[0] = vec![file(5, "x", "z"), file(4, "a", "c")];
        v.levels[2] = vec![file(6, "m", "m")];
        assert_eq!(pick(&v, &[4, 5], "m", "n"), (0, true));
        assert_eq!(pick(&v, &[], "m", "n"), (1, true));
        // A blocked level does not stop the descent: with nothing below,
        // the file goes past it.
        v.levels[2].clear();
        assert_eq!(pick(&v, &[4, 5], "m", "n"), (NUM_LEVELS - 1, false));

        // L1 → L2 compaction: its inputs' hull blocks L1 and L2.
        let mut v = Version::default();
        v.levels[1] = vec![file(4, "a", "c"), file(5, "x", "z")];
        v.levels[3] = vec![file(7, "m", "m")];
        assert_eq!(pick(&v, &[4, 5], "m", "n"), (0, true));
        assert_eq!(pick(&v, &[], "m", "n"), (2, true));
        // Outside the hull nothing is blocked.
        assert_eq!(pick(&v, &[4, 5], "zz", "zzz"), (NUM_LEVELS - 1, false));
    }
}
