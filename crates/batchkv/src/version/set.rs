//! [`VersionSet`]: the current [`Version`] plus the counters that the
//! MANIFEST persists, and the MANIFEST/CURRENT files themselves.
//!
//! Format: see `docs/format/manifest.md`. Every new `VersionSet` (each open)
//! starts a fresh MANIFEST whose first record is a snapshot of the whole
//! state, then switches `CURRENT` to it atomically.
//!
//! Thread safety: not internally synchronized; the database keeps it under
//! its state mutex.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::edit::VersionEdit;
use super::version::Version;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::key::SequenceNumber;
use crate::wal;

/// Name of the comparator recorded in the MANIFEST; opening a database made
/// with another comparator fails.
pub(crate) const COMPARATOR_NAME: &str = "batchkv.BytewiseComparator";

pub(crate) struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    /// Every live column family, by id; 0 ("default") always exists.
    cfs: BTreeMap<u32, CfVersion>,
    /// The largest column family id ever handed out (never reused).
    max_column_family: u32,
    /// The next number handed out for a WAL, SST or MANIFEST file.
    next_file_number: u64,
    /// Highest sequence number known to be in SST files or recorded here.
    last_sequence: SequenceNumber,
    /// Open MANIFEST writer; `None` until the first `prepare`. Shared with
    /// the [`ManifestEdit`]s in flight, which append outside the database's
    /// state lock.
    manifest: Option<Arc<Mutex<wal::Writer>>>,
    manifest_number: u64,
}

/// What the MANIFEST records about one column family.
#[derive(Clone)]
pub(crate) struct CfVersion {
    pub name: String,
    /// The option string it was created with (`Options::to_option_string`).
    pub options: String,
    pub current: Arc<Version>,
    /// WALs with a number below this hold none of its unflushed writes.
    pub log_number: u64,
}

/// The name of column family 0.
pub(crate) const DEFAULT_CF_NAME: &str = "default";

/// An edit prepared by [`VersionSet::prepare`]: its encoded record and the
/// version it produces once written.
pub(crate) struct ManifestEdit {
    record: Vec<u8>,
    cf: u32,
    /// The family's next version; `None` when the edit drops it.
    next: Option<Arc<Version>>,
    log_number: Option<u64>,
    /// Set when the edit creates the family: (name, option string).
    added: Option<(String, String)>,
    max_column_family: Option<u32>,
    /// The version `next` was built on (checked at install).
    base: Option<Arc<Version>>,
    writer: Arc<Mutex<wal::Writer>>,
}

impl ManifestEdit {
    /// Appends the record to the MANIFEST and fsyncs it. Needs no database
    /// lock; on error the MANIFEST may end in a partial record and must not
    /// be appended to again.
    pub fn write(&self) -> Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        w.add_record(&self.record)?;
        w.sync()
    }
}

impl VersionSet {
    /// Writes the MANIFEST and CURRENT of a brand-new, empty database.
    pub fn create_new(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<()> {
        let edit = VersionEdit {
            comparator: Some(COMPARATOR_NAME.to_string()),
            log_number: Some(0),
            next_file_number: Some(2),
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        let manifest_path = filename::path(dir, FileKind::Manifest, 1);
        let mut writer = wal::Writer::new(fs.new_writable(&manifest_path)?);
        let mut rec = Vec::new();
        edit.encode(&mut rec);
        writer.add_record(&rec)?;
        writer.sync()?;
        set_current(fs.as_ref(), dir, 1)
    }

    /// Reads CURRENT and replays the MANIFEST it names.
    pub fn recover(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        let manifest_name = read_current(fs.as_ref(), dir)?;
        let manifest_path = dir.join(&manifest_name);
        let data = fs.read_all(&manifest_path)?;
        let file = manifest_path.display().to_string();

        let mut state = ManifestState::new();
        let mut reader = wal::Reader::new(&data, &file);
        let mut torn_tail = None;
        loop {
            match reader.next() {
                wal::ReadOutcome::Record { data, offset } => {
                    state.apply_record(&data, &file, offset)?;
                }
                wal::ReadOutcome::Eof => break,
                // A torn last record is an edit whose write never completed
                // (and so was never acknowledged): recovery ends before it —
                // unless the files checked below show it had been applied.
                wal::ReadOutcome::TornTail { offset, detail } => {
                    torn_tail = Some((offset, detail));
                    break;
                }
                wal::ReadOutcome::Corrupt { offset, detail } => {
                    return Err(reader.corruption(offset, detail))
                }
            }
        }
        let vs = state.version_set(fs, dir, &manifest_name, &file)?;
        if let Some((offset, detail)) = torn_tail {
            check_dropped_edit_was_unapplied(vs.fs.as_ref(), dir, &vs.cfs)
                .map_err(|why| Error::corruption(&file, offset, format!("{detail}; {why}")))?;
        }
        Ok(vs)
    }

    /// The default column family's current version.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.cfs[&0].current)
    }

    /// Column family `cf`'s current version (`None` once it is dropped).
    pub fn current_cf(&self, cf: u32) -> Option<Arc<Version>> {
        self.cfs.get(&cf).map(|c| Arc::clone(&c.current))
    }

    /// Every live column family, by id.
    pub fn column_families(&self) -> &BTreeMap<u32, CfVersion> {
        &self.cfs
    }

    /// The id for a new column family (ids are never reused).
    pub fn next_column_family_id(&self) -> u32 {
        self.max_column_family + 1
    }

    /// Forgets the column families `keep` rejects (for a secondary
    /// instance that follows only some of them); "default" always stays.
    pub fn retain_families(&mut self, mut keep: impl FnMut(&CfVersion) -> bool) {
        self.cfs.retain(|&id, cf| id == 0 || keep(cf));
    }

    /// Every table number of every live column family's current version.
    pub fn all_file_numbers(&self) -> Vec<u64> {
        self.cfs
            .values()
            .flat_map(|c| c.current.file_numbers().collect::<Vec<_>>())
            .collect()
    }

    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Makes sure later file numbers stay above `n` (a WAL found on disk).
    pub fn mark_file_number_used(&mut self, n: u64) {
        self.next_file_number = self.next_file_number.max(n + 1);
    }

    /// WALs numbered below this hold no unflushed write of any column
    /// family (the smallest per-family log number).
    pub fn log_number(&self) -> u64 {
        self.cfs.values().map(|c| c.log_number).min().unwrap_or(0)
    }

    pub fn last_sequence(&self) -> SequenceNumber {
        self.last_sequence
    }

    /// Bytes of the live MANIFEST written so far (0 before the first edit).
    /// Stable while the caller holds the database's MANIFEST lock.
    pub fn manifest_len(&self) -> u64 {
        self.manifest.as_ref().map_or(0, |w| {
            w.lock().unwrap_or_else(PoisonError::into_inner).file_len()
        })
    }

    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Persists `edit` (with the current counters filled in) to the MANIFEST,
    /// fsyncs it, and installs the resulting version. On error nothing is
    /// installed and the database must treat the MANIFEST as unusable.
    /// (The three steps apart: [`prepare`](Self::prepare),
    /// [`ManifestEdit::write`], [`install`](Self::install).)
    pub fn log_and_apply(&mut self, edit: VersionEdit) -> Result<()> {
        let prepared = self.prepare(edit)?;
        prepared.write()?;
        self.install(prepared);
        Ok(())
    }

    /// Fills in the counters, builds the next version and encodes the
    /// record, without writing it. The caller must not let another edit be
    /// prepared or installed until this one is installed or abandoned (the
    /// database serializes them with its MANIFEST lock), so the version it
    /// was built on is still current at [`install`](Self::install).
    pub fn prepare(&mut self, mut edit: VersionEdit) -> Result<ManifestEdit> {
        let cf = edit.column_family;
        let base = self.cfs.get(&cf).map(|c| Arc::clone(&c.current));
        match (&base, &edit.add_column_family) {
            (Some(_), Some((name, _))) => {
                return Err(Error::InvalidArgument(format!(
                    "column family id {cf} ({name:?}) already exists"
                )))
            }
            (None, None) => return Err(Error::cf_dropped(&format!("id {cf}"))),
            _ => {}
        }
        if let (Some(n), Some(c)) = (edit.log_number, self.cfs.get(&cf)) {
            debug_assert!(n >= c.log_number, "log number only grows");
        }
        let writer = match &self.manifest {
            Some(w) => Arc::clone(w),
            None => self.start_new_manifest()?,
        };
        if let Some(seq) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(seq);
        }
        edit.last_sequence = Some(self.last_sequence);
        edit.next_file_number = Some(self.next_file_number);
        let file = filename::path(&self.dir, FileKind::Manifest, self.manifest_number);
        let next = if edit.drop_column_family {
            None
        } else {
            let from = base.clone().unwrap_or_default();
            Some(Arc::new(from.apply(&edit, &file.display().to_string())?))
        };
        let mut record = Vec::new();
        edit.encode(&mut record);
        Ok(ManifestEdit {
            record,
            cf,
            next,
            log_number: edit.log_number,
            added: edit.add_column_family.clone(),
            max_column_family: edit.max_column_family,
            base,
            writer,
        })
    }

    /// Makes a written edit's version current.
    pub fn install(&mut self, edit: ManifestEdit) {
        debug_assert!(
            match (&edit.base, self.cfs.get(&edit.cf)) {
                (Some(b), Some(c)) => Arc::ptr_eq(b, &c.current),
                (None, None) => true,
                _ => false,
            },
            "another version was installed between prepare and install"
        );
        if let Some(m) = edit.max_column_family {
            self.max_column_family = self.max_column_family.max(m);
        }
        let Some(next) = edit.next else {
            self.cfs.remove(&edit.cf);
            return;
        };
        let (name, options) = edit.added.unwrap_or_default();
        let entry = self.cfs.entry(edit.cf).or_insert_with(|| CfVersion {
            name,
            options,
            current: Arc::clone(&next),
            log_number: 0,
        });
        entry.current = next;
        if let Some(n) = edit.log_number {
            entry.log_number = n;
        }
    }

    /// Opens a new MANIFEST holding a snapshot of the current state, points
    /// CURRENT at it and returns its writer (also kept in `self.manifest`).
    fn start_new_manifest(&mut self) -> Result<Arc<Mutex<wal::Writer>>> {
        let number = self.new_file_number();
        let path = filename::path(&self.dir, FileKind::Manifest, number);
        let mut writer = wal::Writer::new(self.fs.new_writable(&path)?);
        for (&id, cf) in &self.cfs {
            let mut snapshot = VersionEdit {
                column_family: id,
                log_number: Some(cf.log_number),
                ..VersionEdit::default()
            };
            if id == 0 {
                snapshot.comparator = Some(COMPARATOR_NAME.to_string());
                snapshot.next_file_number = Some(self.next_file_number);
                snapshot.last_sequence = Some(self.last_sequence);
                if self.max_column_family > 0 {
                    snapshot.max_column_family = Some(self.max_column_family);
                }
            } else {
                snapshot.add_column_family = Some((cf.name.clone(), cf.options.clone()));
            }
            for (level, files) in cf.current.levels.iter().enumerate() {
                for f in files {
                    snapshot.new_files.push((level as u32, (**f).clone()));
                }
            }
            let mut rec = Vec::new();
            snapshot.encode(&mut rec);
            writer.add_record(&rec)?;
        }
        writer.sync()?;
        set_current(self.fs.as_ref(), &self.dir, number)?;
        let writer = Arc::new(Mutex::new(writer));
        self.manifest = Some(Arc::clone(&writer));
        self.manifest_number = number;
        Ok(writer)
    }
}

/// The name of the MANIFEST that `CURRENT` in `dir` names.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<String> {
    let current_path = dir.join(filename::CURRENT);
    let current = fs.read_all(&current_path)?;
    parse_current(&current, &current_path)
}

/// The state a MANIFEST describes, built one record at a time: by
/// [`VersionSet::recover`] over a whole file, and by a secondary instance
/// (`db/secondary/`) as the primary appends to its MANIFEST.
#[derive(Clone)]
pub(crate) struct ManifestState {
    /// Per column family id: (name, option string, version, log number).
    cfs: BTreeMap<u32, (String, String, Version, Option<u64>)>,
    max_column_family: u32,
    next_file: Option<u64>,
    last_seq: Option<SequenceNumber>,
}

impl ManifestState {
    /// The state before the first record: only the default family, empty.
    pub fn new() -> ManifestState {
        let mut cfs = BTreeMap::new();
        cfs.insert(
            0,
            (
                DEFAULT_CF_NAME.to_string(),
                String::new(),
                Version::default(),
                None,
            ),
        );
        ManifestState {
            cfs,
            max_column_family: 0,
            next_file: None,
            last_seq: None,
        }
    }

    /// Applies one MANIFEST record (a [`VersionEdit`]) read from `file` at
    /// `offset`. On error the state is unchanged only up to the failing
    /// family's edit: callers stop using it.
    pub fn apply_record(&mut self, data: &[u8], file: &str, offset: u64) -> Result<()> {
        let edit = VersionEdit::decode(data, file, offset)?;
        if let Some(name) = &edit.comparator {
            if name != COMPARATOR_NAME {
                return Err(Error::InvalidArgument(format!(
                    "database uses comparator {name:?}, batchkv provides {COMPARATOR_NAME:?}"
                )));
            }
        }
        apply_cf_edit(&mut self.cfs, &edit, file, offset)?;
        if let Some(m) = edit.max_column_family {
            self.max_column_family = self.max_column_family.max(m);
        }
        self.next_file = edit.next_file_number.or(self.next_file);
        self.last_seq = edit.last_sequence.or(self.last_seq);
        Ok(())
    }

    /// The [`VersionSet`] of this state, read from `manifest_name` in `dir`
    /// (`file` is its path, for errors). Refuses a state that is not a
    /// whole database: misordered levels, or no file number, log number or
    /// last sequence recorded.
    pub fn version_set(
        &self,
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        manifest_name: &str,
        file: &str,
    ) -> Result<VersionSet> {
        // A MANIFEST describing overlapping or misordered levels would make
        // reads return wrong data: refuse it.
        for (name, _, version, _) in self.cfs.values() {
            version.check_invariants().map_err(|e| {
                Error::corruption(
                    file,
                    0,
                    format!("MANIFEST describes a bad version of column family {name:?}: {e}"),
                )
            })?;
        }
        let missing =
            |what: &str| Error::corruption(file, 0, format!("MANIFEST records no {what}"));
        let next_file_number = self.next_file.ok_or_else(|| missing("next file number"))?;
        let manifest_number = filename::parse(manifest_name).map(|(_, n)| n).unwrap_or(0);
        // File numbers count files created: far below this in any real
        // database, and room for `+ 1` without overflow (found by fuzzing).
        const MAX_FILE_NUMBER: u64 = 1 << 62;
        if next_file_number > MAX_FILE_NUMBER || manifest_number > MAX_FILE_NUMBER {
            return Err(Error::corruption(
                file,
                0,
                format!(
                    "file number out of range: next {next_file_number}, MANIFEST {manifest_number} (limit {MAX_FILE_NUMBER})"
                ),
            ));
        }
        if self.cfs.get(&0).and_then(|c| c.3).is_none() {
            return Err(missing("log number"));
        }
        let cfs: BTreeMap<u32, CfVersion> = self
            .cfs
            .iter()
            .map(|(&id, (name, options, version, log))| {
                (
                    id,
                    CfVersion {
                        name: name.clone(),
                        options: options.clone(),
                        current: Arc::new(version.clone()),
                        log_number: log.unwrap_or(0),
                    },
                )
            })
            .collect();
        let max_column_family = self
            .max_column_family
            .max(cfs.keys().copied().max().unwrap_or(0));
        Ok(VersionSet {
            dir: dir.to_path_buf(),
            fs,
            cfs,
            max_column_family,
            next_file_number: next_file_number.max(manifest_number + 1),
            last_sequence: self.last_seq.ok_or_else(|| missing("last sequence"))?,
            manifest: None,
            manifest_number,
        })
    }
}

/// Points CURRENT at `MANIFEST-<number>`: write a temp file, fsync it,
/// rename it over CURRENT, fsync the directory.
pub(crate) fn set_current(fs: &dyn FileSystem, dir: &Path, manifest_number: u64) -> Result<()> {
    let tmp = filename::path(dir, FileKind::Temp, manifest_number);
    let mut f = fs.new_writable(&tmp)?;
    let name = filename::name(FileKind::Manifest, manifest_number);
    f.append(format!("{name}\n").as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(filename::CURRENT))?;
    fs.sync_dir(dir)
}

/// Bug found by `tests/corruption_sweep.rs`: damage to the last MANIFEST
/// record (a flipped checksum or length byte) looks exactly like a torn
/// write, and recovery silently dropped that edit — losing the tables it
/// added, whose WALs had already been deleted. A genuinely torn edit was
/// never applied, so nothing was deleted after it: every table of the
/// recovered version and the oldest WAL it needs still exist. If one is
/// missing, the dropped edit had been applied, and this is corruption.
fn check_dropped_edit_was_unapplied(
    fs: &dyn FileSystem,
    dir: &Path,
    cfs: &BTreeMap<u32, CfVersion>,
) -> std::result::Result<(), String> {
    for cf in cfs.values() {
        for number in cf.current.file_numbers() {
            if !fs.exists(&filename::path(dir, FileKind::Table, number)) {
                return Err(format!(
                    "table {number} of the recovered version is missing"
                ));
            }
        }
    }
    // The newest per-family log number is the WAL the last applied flush
    // switched to: it is deleted only after a later edit.
    let log_number = cfs.values().map(|c| c.log_number).max().unwrap_or(0);
    if log_number > 0 && !fs.exists(&filename::path(dir, FileKind::Wal, log_number)) {
        return Err(format!("WAL {log_number} that recovery needs is missing"));
    }
    // Log number 0 means no open ever completed: then no flush ran either.
    if log_number == 0 {
        let names = fs.list_dir(dir).map_err(|e| e.to_string())?;
        if let Some(t) = names
            .iter()
            .find(|n| matches!(filename::parse(n), Some((FileKind::Table, _))))
        {
            return Err(format!(
                "table {t} exists but the recovered state has never been opened"
            ));
        }
    }
    Ok(())
}

/// Applies one MANIFEST edit to the column families being recovered:
/// `(name, option string, version, log number)` by id.
fn apply_cf_edit(
    cfs: &mut BTreeMap<u32, (String, String, Version, Option<u64>)>,
    edit: &VersionEdit,
    file: &str,
    offset: u64,
) -> Result<()> {
    let id = edit.column_family;
    if let Some((name, options)) = &edit.add_column_family {
        if cfs.contains_key(&id) || cfs.values().any(|c| &c.0 == name) {
            return Err(Error::corruption(
                file,
                offset,
                format!("version edit adds column family {id} ({name:?}), which exists"),
            ));
        }
        cfs.insert(
            id,
            (name.clone(), options.clone(), Version::default(), None),
        );
    }
    if edit.drop_column_family {
        if id == 0 || cfs.remove(&id).is_none() {
            return Err(Error::corruption(
                file,
                offset,
                format!("version edit drops column family {id}, which is not live"),
            ));
        }
        return Ok(());
    }
    let Some(cf) = cfs.get_mut(&id) else {
        return Err(Error::corruption(
            file,
            offset,
            format!("version edit names column family {id}, which is not live"),
        ));
    };
    cf.2 = cf.2.apply(edit, file)?;
    if let Some(n) = edit.log_number {
        cf.3 = Some(n);
    }
    Ok(())
}

/// CURRENT must hold one MANIFEST file name followed by a newline.
fn parse_current(data: &[u8], path: &Path) -> Result<String> {
    let bad = |why: &str| Error::corruption(path.display().to_string(), 0, why.to_string());
    let text = std::str::from_utf8(data).map_err(|_| bad("CURRENT is not UTF-8"))?;
    let name = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("CURRENT does not end with a newline"))?;
    match filename::parse(name) {
        Some((FileKind::Manifest, _)) => Ok(name.to_string()),
        _ => Err(bad(&format!("CURRENT names {name:?}, not a MANIFEST file"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::PosixFs;

    /// Found by fuzzing: a MANIFEST recording a `next_file_number` near `u64::MAX`
    /// made `new_file_number` overflow (a panic in debug builds, repeated
    /// file numbers in release). It is `Corruption` now.
    #[test]
    fn fuzz_regression_next_file_number_out_of_range_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        VersionSet::create_new(&fs, dir.path()).unwrap();
        let mut vs = VersionSet::recover(Arc::clone(&fs), dir.path()).unwrap();
        vs.mark_file_number_used(1 << 63);
        vs.log_and_apply(VersionEdit::default()).unwrap();
        drop(vs);
        match VersionSet::recover(fs, dir.path()) {
            Err(Error::Corruption { detail, .. }) => {
                assert!(detail.contains("out of range"), "{detail}")
            }
            Err(e) => panic!("expected Corruption, got {e}"),
            Ok(_) => panic!("recovered a MANIFEST whose next file number overflows"),
        }
    }
}
