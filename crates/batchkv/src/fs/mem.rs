//! The in-memory filesystem of tests and fuzz targets: [`MemFs`] (a
//! [`FileSystem`] over a map of paths to bytes), its appendable
//! [`MemFile`] (which a test can make fail after a byte budget) and
//! [`SliceFile`] (read-only bytes). The real recovery, WAL and table code
//! run on them without touching the disk.
//!
//! Thread safety: the map is behind one mutex and each file's bytes behind
//! their own, so a file stays writable after it was renamed or removed
//! (like an open file descriptor) and a reader gets a copy of the bytes as
//! of its open.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// A file's bytes, shared by the map, its writers and the test that made it.
pub(crate) type SharedBytes = Arc<Mutex<Vec<u8>>>;

/// Locks a mutex of this module. A poisoned lock only means another test
/// or fuzz call panicked while holding it; the bytes are still whole
/// (every mutation is a single `Vec` operation).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_found(path: &Path) -> Error {
    Error::io(
        format!("opening {}", path.display()),
        std::io::Error::from(std::io::ErrorKind::NotFound),
    )
}

/// Files held in a map; directories are implicit, locks always granted.
pub(crate) struct MemFs {
    files: Mutex<BTreeMap<PathBuf, SharedBytes>>,
}

impl MemFs {
    /// A file system holding exactly `files`.
    pub(crate) fn with_files(files: &[(PathBuf, Vec<u8>)]) -> MemFs {
        MemFs {
            files: Mutex::new(
                files
                    .iter()
                    .map(|(p, b)| (p.clone(), Arc::new(Mutex::new(b.clone()))))
                    .collect(),
            ),
        }
    }
}

/// An appendable in-memory file; with `fail_after` set, the append that
/// would take it past that many bytes writes what fits and fails.
pub(crate) struct MemFile {
    bytes: SharedBytes,
    /// Byte budget after which appends fail (tests of write errors).
    pub(crate) fail_after: Option<usize>,
}

impl MemFile {
    /// A new empty file outside any [`MemFs`], and a handle to its bytes.
    #[cfg(test)]
    pub(crate) fn new() -> (MemFile, SharedBytes) {
        let bytes = SharedBytes::default();
        (MemFile::sharing(Arc::clone(&bytes)), bytes)
    }

    /// A file appending to existing `bytes` (a reopened file).
    pub(crate) fn sharing(bytes: SharedBytes) -> MemFile {
        MemFile {
            bytes,
            fail_after: None,
        }
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut b = lock(&self.bytes);
        if let Some(limit) = self.fail_after {
            if b.len() + data.len() > limit {
                let fits = limit.saturating_sub(b.len());
                b.extend_from_slice(&data[..fits]);
                return Err(Error::io(
                    "appending to an in-memory test file",
                    std::io::Error::other("injected failure"),
                ));
            }
        }
        b.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        lock(&self.bytes).len() as u64
    }
}

struct NoLock;
impl FileLock for NoLock {}

impl FileSystem for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let bytes = SharedBytes::default();
        lock(&self.files).insert(path.to_path_buf(), Arc::clone(&bytes));
        Ok(Box::new(MemFile::sharing(bytes)))
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(SliceFile(self.read_all(path)?)))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let files = lock(&self.files);
        let bytes = files.get(path).ok_or_else(|| not_found(path))?;
        let copy = lock(bytes).clone();
        Ok(copy)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut files = lock(&self.files);
        let data = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_path_buf(), data);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        lock(&self.files)
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(lock(&self.files)
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        lock(&self.files).contains_key(path)
    }
    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        Ok(Box::new(NoLock))
    }
}

/// A read-only file over bytes in memory.
pub(crate) struct SliceFile(pub(crate) Vec<u8>);

impl RandomAccessFile for SliceFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(buf.len())?));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::io(
                "reading past the end of an in-memory file",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_written_renamed_listed_and_removed() {
        let fs = MemFs::with_files(&[(PathBuf::from("/d/a"), b"x".to_vec())]);
        let mut f = fs.new_writable(Path::new("/d/b")).unwrap();
        f.append(b"hello").unwrap();
        assert_eq!(f.len(), 5);
        fs.rename(Path::new("/d/b"), Path::new("/d/c")).unwrap();
        // Still writable after the rename, like an open descriptor.
        f.append(b"!").unwrap();
        assert_eq!(fs.read_all(Path::new("/d/c")).unwrap(), b"hello!");
        let mut names = fs.list_dir(Path::new("/d")).unwrap();
        names.sort();
        assert_eq!(names, ["a", "c"]);
        let r = fs.open_random_access(Path::new("/d/c")).unwrap();
        let mut buf = [0u8; 3];
        r.read_exact_at(&mut buf, 2).unwrap();
        assert_eq!(&buf, b"llo");
        assert!(r.read_exact_at(&mut buf, 4).is_err());
        fs.remove_file(Path::new("/d/a")).unwrap();
        assert!(!fs.exists(Path::new("/d/a")));
        assert!(fs.read_all(Path::new("/d/a")).is_err());
        assert!(fs.remove_file(Path::new("/d/a")).is_err());
    }

    #[test]
    fn a_file_fails_past_its_budget_keeping_what_fits() {
        let (mut f, bytes) = MemFile::new();
        f.fail_after = Some(4);
        f.append(b"ab").unwrap();
        assert!(f.append(b"cdef").is_err());
        assert_eq!(*lock(&bytes), b"abcd");
    }
}
