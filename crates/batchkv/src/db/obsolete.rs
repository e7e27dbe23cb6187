//! Deleting the files nothing needs any more: tables no live version
//! names, WALs below every family's log number, old MANIFESTs and temp
//! files.
//!
//! # When the sweep runs
//! After every flush and compaction install, after a column family is
//! dropped, at open — and when an iterator lets go of the last reference
//! to a version that is no longer current ([`PinnedSuperVersion`]), so the
//! tables only that iterator kept alive go at once, not at the next flush
//! or compaction (or, on an idle database, never before a reopen).
//! A point read (`get`, `multi_get`) that overlaps a compaction may also
//! keep that compaction's inputs past its sweep; they go at the next one.
//!
//! # Invariants
//! 1. A table is deleted only if no live [`Version`](crate::version::Version)
//!    names it (the current ones, and every one a reader or iterator
//!    still holds: `DbState::live_versions`) and it is not a pending
//!    output of a running flush or compaction.
//! 2. A WAL is deleted only below the log number that the MANIFEST and
//!    the memtables both allow (`DbState::min_log_needed`).
//! 3. A read-only or secondary instance never sweeps (the files are
//!    another process's).
//! 4. A temp file (`NNNNNN.dbtmp`) is deleted only if its number is not a
//!    pending output: `OPTIONS` is rewritten without the state lock, and
//!    deleting its temp file before the rename failed the rewrite. (A
//!    `CURRENT` is written under the lock: the sweep lists the directory
//!    before taking it and deletes after, so it can only find that temp
//!    file renamed already.)

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use super::{lock, DbCore, SuperVersion};
use crate::filename::{self, FileKind};

impl DbCore {
    /// Deletes WALs, tables and MANIFESTs that no live version, pending
    /// output or recovery needs. Takes `state` only to decide; the directory
    /// listing comes before (a file created after it is not considered) and
    /// the unlinks after, so writers never wait for them. Once obsolete, a
    /// file stays obsolete (file numbers are never reused while open), so
    /// deciding and deleting apart is safe. Failures are ignored: the file
    /// is retried at the next call. Must not be called with `state` held.
    pub(super) fn delete_obsolete_files(&self) {
        debug_assert!(
            !self.read_only,
            "invariant 3: a read-only instance sweeps nothing"
        );
        let Ok(names) = self.fs.list_dir(&self.dir) else {
            return;
        };
        let obsolete: Vec<(FileKind, u64, String)> = {
            let mut st = lock(&self.state);
            st.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: BTreeSet<u64> = st.pending_outputs.iter().copied().collect();
            live.extend(st.versions.all_file_numbers());
            for v in st.live_versions.iter().filter_map(|w| w.upgrade()) {
                live.extend(v.file_numbers());
            }
            // What the MANIFEST says no family needs, or what the memtables
            // show (an empty family needs no old WAL), whichever is later:
            // replay reads a family's records only from WALs at or above its
            // recorded log number, so either bound is safe.
            let log_number = st.versions.log_number().max(st.min_log_needed());
            let manifest = st.versions.manifest_number();
            names
                .into_iter()
                .filter_map(|name| {
                    let (kind, number) = filename::parse(&name)?;
                    let obsolete = match kind {
                        FileKind::Wal => number < log_number,
                        FileKind::Table => !live.contains(&number),
                        FileKind::Manifest => number < manifest,
                        // Not one still being written (`pending_outputs`).
                        FileKind::Temp => !live.contains(&number),
                    };
                    obsolete.then_some((kind, number, name))
                })
                .collect()
        };
        for (kind, number, name) in obsolete {
            if kind == FileKind::Table {
                self.tables.evict(number);
            }
            let _ = self.fs.remove_file(&self.dir.join(&name));
        }
    }
}

/// A super version held by a long-lived reader (an iterator). Dropping
/// the last reference to a version that is no longer current runs the
/// sweep in the dropping thread (RocksDB purges at iterator clean-up too),
/// so the tables only this reader kept alive are deleted at once.
pub(crate) struct PinnedSuperVersion {
    /// `None` only inside `drop`.
    sv: Option<Arc<SuperVersion>>,
    /// Empty for a read-only or secondary instance (invariant 3), and
    /// never keeps the database open.
    core: Weak<DbCore>,
}

impl PinnedSuperVersion {
    pub(super) fn new(sv: Arc<SuperVersion>, core: &Arc<DbCore>) -> PinnedSuperVersion {
        let core = if core.read_only {
            Weak::new()
        } else {
            Arc::downgrade(core)
        };
        PinnedSuperVersion { sv: Some(sv), core }
    }
}

impl Drop for PinnedSuperVersion {
    fn drop(&mut self) {
        let Some(sv) = self.sv.take() else {
            return;
        };
        let version = Arc::downgrade(&sv.version);
        drop(sv);
        // Still held: by the version set (it is current, nothing of it is
        // obsolete) or by another reader (an iterator sweeps when it lets
        // go; after a point read the next flush or compaction does).
        if version.strong_count() > 0 {
            return;
        }
        if let Some(core) = self.core.upgrade() {
            if core.check_open().is_ok() {
                core.delete_obsolete_files();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

    use std::path::Path;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Mutex};

    use crate::error::Result;
    use crate::fs::{FileLock, FileSystem, PosixFs, RandomAccessFile, WritableFile};
    use crate::merge_operators::U64AddOperator;
    use crate::{Db, Options};

    /// A filesystem that, once armed, stops the next rename of a `.dbtmp`
    /// file before it happens: it reports the pause on `paused` and waits
    /// on `resume`, so a test can run a sweep while the temp file is
    /// written but not yet renamed.
    struct PauseBeforeTempRename {
        inner: PosixFs,
        armed: Mutex<Option<(Sender<()>, Receiver<()>)>>,
    }

    impl FileSystem for PauseBeforeTempRename {
        fn create_dir_all(&self, dir: &Path) -> Result<()> {
            self.inner.create_dir_all(dir)
        }
        fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
            self.inner.new_writable(path)
        }
        fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
            self.inner.open_random_access(path)
        }
        fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
            self.inner.read_all(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> Result<()> {
            if from.extension().is_some_and(|e| e == "dbtmp") {
                if let Some((paused, resume)) = self.armed.lock().unwrap().take() {
                    paused.send(()).unwrap();
                    resume.recv().unwrap();
                }
            }
            self.inner.rename(from, to)
        }
        fn remove_file(&self, path: &Path) -> Result<()> {
            self.inner.remove_file(path)
        }
        fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
            self.inner.list_dir(dir)
        }
        fn sync_dir(&self, dir: &Path) -> Result<()> {
            self.inner.sync_dir(dir)
        }
        fn exists(&self, path: &Path) -> bool {
            self.inner.exists(path)
        }
        fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
            self.inner.lock(path)
        }
    }

    /// A sweep that runs while `OPTIONS` is being rewritten (after a
    /// family was created; the rewrite runs without the state lock) must
    /// leave the rewrite's temp file alone: deleting it failed the rename
    /// and left `OPTIONS` without the new family's merge operator.
    #[test]
    fn a_sweep_leaves_a_temp_file_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(PauseBeforeTempRename {
            inner: PosixFs,
            armed: Mutex::new(None),
        });
        let opts = Options {
            create_if_missing: true,
            ..Options::default()
        };
        let db = Db::open_with_fs(dir.path(), opts, fs.clone()).unwrap();
        let (paused_tx, paused) = channel();
        let (resume, resume_rx) = channel();
        *fs.armed.lock().unwrap() = Some((paused_tx, resume_rx));
        let with_operator = Options {
            merge_operator: Some(Arc::new(U64AddOperator)),
            ..Options::default()
        };
        let temps = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    name.to_string_lossy().ends_with(".dbtmp")
                })
                .count()
        };
        // (before, after) the sweep; asserted once the writer has gone on,
        // so a failure cannot leave it waiting.
        let (before, after, created) = std::thread::scope(|s| {
            let create = s.spawn(|| db.create_cf("counters", &with_operator));
            paused.recv().unwrap();
            let before = temps();
            db.core().delete_obsolete_files();
            let after = temps();
            resume.send(()).unwrap();
            (before, after, create.join().unwrap())
        });
        assert_eq!(before, 1, "the rewrite's temp file exists");
        assert_eq!(after, 1, "the sweep deleted the temp file being written");
        created.unwrap();
        let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
        assert!(
            options.contains("counters=batchkv.U64AddOperator\n"),
            "{options}"
        );
    }
}
