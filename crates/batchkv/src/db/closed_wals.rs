//! The fsyncs a memtable switch owes: the WALs it closed and the directory
//! entry of the WAL it created. The switch only records them here, so no
//! writer waits for a disk flush at a switch; they are paid, oldest WAL
//! first, by whoever next needs them durable (RocksDB does the same):
//!
//! - a write with `sync`, and [`Db::sync_wal`](crate::Db::sync_wal),
//!   before fsyncing the current WAL: a durable record in the new WAL
//!   implies every older record is durable too (no hole after power loss);
//! - the flush job, when it starts (so the debt is short-lived) and before
//!   its MANIFEST edit names a newer WAL (the edit must not name a WAL whose
//!   directory entry could vanish, nor make obsolete a WAL another family
//!   still needs from before it was durable);
//! - creating a column family (its edit names the current WAL);
//! - `close`.
//!
//! Thread safety: `owed` is taken only briefly (by the switch, under the WAL
//! lock, and by a syncer taking the list); `syncing` is held for the whole
//! fsync sequence. Lock order: `log` → `syncing` → `owed`, and `state` is
//! never taken while `syncing` is held.
//!
//! Invariants:
//! 1. When [`ClosedWals::sync`] returns `Ok`, every WAL closed and every
//!    directory entry owed before the call began is durable: either this
//!    call fsynced it, or another call took it and finished its fsyncs
//!    before this one could take `syncing`.
//! 2. After a failed fsync every later `sync` returns that error: what
//!    reached the disk is unknown, and a failed fsync is never retried as if
//!    nothing happened (docs/design.md §8).

use std::path::Path;
use std::sync::Mutex;

use super::lock;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::wal;

#[derive(Default)]
pub(super) struct ClosedWals {
    owed: Mutex<Owed>,
    /// Held while fsyncing; the first failure, once one happened
    /// (invariant 2).
    syncing: Mutex<Option<Error>>,
}

#[derive(Default)]
struct Owed {
    /// Closed WALs not yet fsynced, oldest first, with their numbers.
    wals: Vec<(u64, wal::Writer)>,
    /// A WAL was created since the database directory was last fsynced.
    dir: bool,
}

impl ClosedWals {
    /// Records a switch: `old` (WAL `number`), whose records were all handed
    /// to the OS, is closed and a new WAL file was created. The caller holds
    /// the WAL lock, so nothing is written to the new WAL before this.
    pub(super) fn closed(&self, number: u64, old: wal::Writer) {
        let mut owed = lock(&self.owed);
        owed.wals.push((number, old));
        owed.dir = true;
    }

    /// Whether a switch left fsyncs owed (a cheap check for callers that
    /// only want to start paying early).
    pub(super) fn any_owed(&self) -> bool {
        let owed = lock(&self.owed);
        owed.dir || !owed.wals.is_empty()
    }

    /// Fsyncs every closed WAL owed, oldest first, then the directory `dir`
    /// (invariant 1). Returns the number of WAL fsyncs done.
    pub(super) fn sync(&self, fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
        let mut failed = lock(&self.syncing);
        if let Some(e) = &*failed {
            return Err(e.clone());
        }
        let (wals, dir_owed) = {
            let mut owed = lock(&self.owed);
            (
                std::mem::take(&mut owed.wals),
                std::mem::replace(&mut owed.dir, false),
            )
        };
        let mut synced = 0;
        let mut result = Ok(());
        for (number, mut w) in wals {
            result = w.sync();
            if result.is_err() {
                log::error!("fsync of closed WAL {number} failed");
                break;
            }
            synced += 1;
        }
        if result.is_ok() && dir_owed {
            result = fs.sync_dir(dir);
        }
        match result {
            Ok(()) => Ok(synced),
            Err(e) => {
                *failed = Some(e.clone());
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::mem::MemFile;

    fn writer(fail: bool) -> wal::Writer {
        let (mut file, _) = MemFile::new();
        if fail {
            file.fail_after = Some(0);
        }
        let mut w = wal::Writer::new(Box::new(file));
        let _ = w.add_record(b"r");
        w
    }

    #[test]
    fn sync_pays_everything_owed_once() {
        let fs = crate::fs::mem::MemFs::with_files(&[]);
        let c = ClosedWals::default();
        assert!(!c.any_owed());
        c.closed(4, writer(false));
        c.closed(5, writer(false));
        assert!(c.any_owed());
        assert_eq!(c.sync(&fs, Path::new("/db")).unwrap(), 2);
        assert!(!c.any_owed());
        assert_eq!(c.sync(&fs, Path::new("/db")).unwrap(), 0);
    }

    #[test]
    fn a_failed_fsync_fails_every_later_sync() {
        let fs = crate::fs::mem::MemFs::with_files(&[]);
        let c = ClosedWals::default();
        c.closed(4, writer(true));
        assert!(c.sync(&fs, Path::new("/db")).is_err());
        // Nothing is owed any more, yet the failure is not forgotten.
        assert!(!c.any_owed());
        assert!(c.sync(&fs, Path::new("/db")).is_err());
    }
}
