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
                        FileKind::Temp => true,
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
