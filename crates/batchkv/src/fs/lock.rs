//! The database directory's `LOCK`: an exclusive POSIX record lock
//! (`fcntl(F_SETLK)`) plus a registry of the lock files this process holds.
//!
//! Why not `flock` (std's `File::try_lock`): an `flock` lock belongs to the
//! open file description, which a forked child shares until it execs (or
//! forever, if it never does), so a database closed by its process could
//! stay "locked" by a child spawned at the wrong moment. Record locks
//! belong to the process and are not inherited by `fork`. They do not
//! exclude other opens by the same process, and closing *any* descriptor
//! of the file releases them — hence the registry, and one descriptor per
//! lock file per process.
//!
//! Invariant: a path is in `HELD` exactly while a [`PosixLock`] for it
//! exists; its file is closed before the path leaves `HELD`.
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::FileLock;
use crate::error::{Error, Result};

/// Lock files held by this process (canonical paths).
static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A held `LOCK`; dropping it releases the lock.
pub(super) struct PosixLock {
    file: Option<File>,
    path: PathBuf,
}

impl FileLock for PosixLock {}

impl Drop for PosixLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.file.take()); // releases the record lock
        if let Some(set) = held.as_mut() {
            set.remove(&self.path);
        }
    }
}

/// Takes the exclusive lock on `path` (created if missing), or fails with
/// [`Error::Locked`] if this or another process holds it.
pub(super) fn lock(path: &Path) -> Result<PosixLock> {
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", path.display()), e);
    // The registry is checked before the file is opened: opening and
    // closing a second descriptor would release this process's own lock.
    let dir = path.parent().unwrap_or(Path::new("."));
    let canonical = dir
        .canonicalize()
        .map_err(|e| io("resolving the directory of", e))?
        .join(path.file_name().unwrap_or_default());
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let set = held.get_or_insert_with(HashSet::new);
    let locked = || Error::Locked {
        path: path.to_path_buf(),
    };
    if set.contains(&canonical) {
        return Err(locked());
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io("opening lock file", e))?;
    set_write_lock(&file).map_err(|e| match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EAGAIN) => locked(),
        _ => io("locking", e),
    })?;
    set.insert(canonical.clone());
    Ok(PosixLock {
        file: Some(file),
        path: canonical,
    })
}

fn set_write_lock(file: &File) -> std::io::Result<()> {
    // SAFETY: an all-zero `flock` is a valid value of the plain C struct;
    // the fields that matter are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // Start 0, length 0: the whole file.
    fl.l_start = 0;
    fl.l_len = 0;
    // SAFETY: `file` owns a valid descriptor for the call's duration and
    // `fl` is a valid `flock` that outlives it.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
    if r == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}
