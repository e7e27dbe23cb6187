//! `Db::checkpoint`: a consistent, openable copy of the database in another
//! directory, made while it keeps serving reads and writes.
//!
//! Steps: flush the memtables (so WAL-less writes are included); then,
//! under the WAL lock (no write group is between records) and the MANIFEST
//! lock (no version is installed meanwhile, so no live file is deleted),
//! note the live tables, the MANIFEST's length, and the live WALs and their
//! lengths; release the WAL lock, keep the MANIFEST lock; hard-link the tables (copy across filesystems),
//! copy the MANIFEST and WALs up to the noted lengths, write CURRENT; fsync
//! everything; rename the staging directory to `dir`. Opening the
//! checkpoint recovers every write acknowledged before the call, and the
//! logged writes acknowledged before the WAL lengths were noted (a write
//! group in flight then is not included); a WAL-less write made during the
//! call may be missing, as after a crash.

use std::path::Path;

use super::{lock, Db};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::version::set_current;

impl Db {
    /// Writes a consistent copy of the database into `dir`, which must not
    /// exist (its parent must). Tables are hard-linked where the filesystem
    /// allows, so a checkpoint costs little space until compaction rewrites
    /// them. The copy is a normal database: open it with [`Db::open`].
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let core = self.core();
        let fs = core.fs.as_ref();
        if fs.exists(dir) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                dir.display()
            )));
        }
        self.flush()?;
        let staging = dir.with_file_name(format!(
            "{}.checkpoint-tmp",
            dir.file_name()
                .map_or("checkpoint".into(), |n| n.to_string_lossy())
        ));
        if fs.exists(&staging) {
            return Err(Error::InvalidArgument(format!(
                "{} exists (left by an interrupted checkpoint?): remove it first",
                staging.display()
            )));
        }
        fs.create_dir_all(&staging)?;

        // Lock order: `log`, then `manifest`, then `state`. A writer holds
        // `log` while it waits for a flush to make room, and that flush
        // needs `manifest` to install its table: taking `manifest` first
        // and then waiting for `log` would deadlock with them.
        let mut log = lock(&core.log);
        let _no_installs = lock(&core.manifest);
        let (tables, manifest_number, manifest_len, log_number) = {
            let st = lock(&core.state);
            (
                st.versions.all_file_numbers(),
                st.versions.manifest_number(),
                st.versions.manifest_len(),
                // No sweep deletes a WAL at or above this (it only grows).
                st.versions.log_number().max(st.min_log_needed()),
            )
        };
        let wals: Vec<(u64, u64)> = {
            log.writer.flush()?;
            let active = (log.number, log.writer.file_len());
            // Older WALs still needed hold frozen memtables; they are
            // complete (every record was handed to the OS before the switch;
            // the copy reads them whether or not their fsync is still owed).
            let mut wals: Vec<(u64, u64)> = fs
                .list_dir(&core.dir)?
                .iter()
                .filter_map(|n| filename::parse(n))
                .filter(|&(k, n)| k == FileKind::Wal && n >= log_number && n != active.0)
                .map(|(_, n)| (n, u64::MAX))
                .collect();
            wals.push(active);
            wals
        };
        // Writes go on; only installs wait until the copy is done.
        drop(log);
        for n in tables {
            let name = filename::name(FileKind::Table, n);
            fs.link_or_copy(&core.dir.join(&name), &staging.join(&name), None)?;
        }
        for (n, len) in wals {
            let name = filename::name(FileKind::Wal, n);
            let len = (len != u64::MAX).then_some(len);
            crate::fs::copy_prefix(fs, &core.dir.join(&name), &staging.join(&name), len)?;
        }
        let manifest = filename::name(FileKind::Manifest, manifest_number);
        crate::fs::copy_prefix(
            fs,
            &core.dir.join(&manifest),
            &staging.join(&manifest),
            Some(manifest_len),
        )?;
        set_current(fs, &staging, manifest_number)?;
        // The merge operators in use, so opening the copy checks them too.
        let families: Vec<(String, std::sync::Arc<crate::Options>)> = lock(&core.state)
            .cfs
            .values()
            .map(|c| (c.shared.name.clone(), std::sync::Arc::clone(&c.shared.opts)))
            .collect();
        let operators = super::options_file::merge_operator_names(
            families.iter().map(|(n, o)| (n.as_str(), o.as_ref())),
        );
        super::options_file::write(fs, &staging, &core.opts, &operators, manifest_number)?;
        fs.sync_dir(&staging)?;
        fs.rename(&staging, dir)?;
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs.sync_dir(parent)?;
        log::info!("checkpoint written to {}", dir.display());
        Ok(())
    }
}
