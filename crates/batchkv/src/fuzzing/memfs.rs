//! A minimal in-memory [`FileSystem`] and [`RandomAccessFile`] for the fuzz
//! targets: the real recovery and table code read the fuzz input through
//! them, without touching the disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem, RandomAccessFile, WritableFile};

type Files = Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>;

/// Files held in a map; directories are implicit.
pub(crate) struct MemFs {
    files: Files,
}

fn not_found(path: &Path) -> Error {
    Error::io(
        format!("opening {}", path.display()),
        std::io::Error::from(std::io::ErrorKind::NotFound),
    )
}

fn lock(files: &Files) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Vec<u8>>> {
    // A poisoned lock only means another fuzz call panicked; the map is fine.
    files.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemFs {
    /// A file system holding exactly `files`.
    pub(crate) fn with_files(files: &[(PathBuf, Vec<u8>)]) -> MemFs {
        MemFs {
            files: Arc::new(Mutex::new(files.iter().cloned().collect())),
        }
    }
}

struct MemWritable {
    files: Files,
    path: PathBuf,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        lock(&self.files)
            .entry(self.path.clone())
            .or_default()
            .extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        lock(&self.files)
            .get(&self.path)
            .map_or(0, |f| f.len() as u64)
    }
}

struct NoLock;
impl FileLock for NoLock {}

impl FileSystem for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        lock(&self.files).insert(path.to_path_buf(), Vec::new());
        Ok(Box::new(MemWritable {
            files: Arc::clone(&self.files),
            path: path.to_path_buf(),
        }))
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(SliceFile(self.read_all(path)?)))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        lock(&self.files)
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
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
