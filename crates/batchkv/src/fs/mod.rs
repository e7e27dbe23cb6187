//! The filesystem seam: every file the engine touches goes through
//! [`FileSystem`], so tests can substitute a fault-injecting implementation
//! ([`FaultInjectionFs`]) or, in unit tests and fuzz targets, the in-memory
//! one (`mem`).

mod fault;
mod lock;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod mem;
mod posix;

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

pub use fault::{Fault, FaultInjectionFs, FaultOp};
pub use posix::PosixFs;

/// A file opened for appending (WAL, MANIFEST, SST being built).
#[allow(
    clippy::len_without_is_empty,
    reason = "a file's length is a position, not a size"
)]
pub trait WritableFile: Send {
    /// Appends `data` (may be buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered data to the operating system (survives a process crash).
    fn flush(&mut self) -> Result<()>;
    /// Flushes and fsyncs the file's data (survives power loss).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
}

/// A file read at arbitrary offsets by many threads (SST files).
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; a short file is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// The file's size in bytes.
    fn size(&self) -> u64;
}

/// A held lock file; the lock is released when this is dropped.
pub trait FileLock: Send + Sync {}

/// The operations the engine needs from a filesystem.
pub trait FileSystem: Send + Sync {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Creates (or truncates) `path` for appending.
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens `path` for positional reads.
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Reads the whole file (WAL, MANIFEST, CURRENT are read sequentially once).
    fn read_all(&self, path: &Path) -> Result<Vec<u8>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Deletes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of `dir`.
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>>;
    /// Fsyncs the directory so creations, renames and deletions in it are durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Takes an exclusive, non-blocking lock on `path` (creating it);
    /// fails with [`crate::Error::Locked`] if another holder has it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Makes `to` hold the first `len` bytes of `from` (all of it if `len`
    /// is `None`), durably: a hard link where possible (same filesystem,
    /// whole file), a copy otherwise. `to` must not exist.
    fn link_or_copy(&self, from: &Path, to: &Path, len: Option<u64>) -> Result<()> {
        copy_prefix(self, from, to, len)
    }

    /// Makes `to` (which must not exist) a hard link to `from` and fsyncs
    /// the file's data, so the link is as durable as a synced copy once the
    /// directory is synced. Fails, changing nothing, where a link is not
    /// possible (`from` on another filesystem); this default always fails,
    /// so callers fall back to copying.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        Err(crate::error::Error::io(
            format!("linking {} to {}", from.display(), to.display()),
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this filesystem does not make hard links",
            ),
        ))
    }
}

/// Writes the first `len` bytes of `from` (all if `None`) to a new file
/// `to` and fsyncs it: [`FileSystem::link_or_copy`] without the link.
pub(crate) fn copy_prefix<F: FileSystem + ?Sized>(
    fs: &F,
    from: &Path,
    to: &Path,
    len: Option<u64>,
) -> Result<()> {
    let data = fs.read_all(from)?;
    let n = len.map_or(data.len(), |l| {
        usize::try_from(l).unwrap_or(usize::MAX).min(data.len())
    });
    let mut f = fs.new_writable(to)?;
    f.append(&data[..n])?;
    f.sync()
}
