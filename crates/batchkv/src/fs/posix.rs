//! The real filesystem, on `std::fs`.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The operating system's filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs;

fn io_err(action: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{action} {}", path.display()), e)
}

struct PosixWritable {
    path: std::path::PathBuf,
    out: BufWriter<File>,
    len: u64,
}

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.out
            .write_all(data)
            .map_err(|e| io_err("appending to", &self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| io_err("flushing", &self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|e| io_err("syncing", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct PosixRandomAccess {
    path: std::path::PathBuf,
    file: File,
    size: u64,
}

impl RandomAccessFile for PosixRandomAccess {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            io_err(
                &format!("reading {} bytes at offset {offset} of", buf.len()),
                &self.path,
                e,
            )
        })
    }

    fn size(&self) -> u64 {
        self.size
    }
}

impl FileSystem for PosixFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| io_err("creating directory", dir, e))
    }

    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = File::create(path).map_err(|e| io_err("creating", path, e))?;
        Ok(Box::new(PosixWritable {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(64 * 1024, file),
            len: 0,
        }))
    }

    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| io_err("opening", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| io_err("reading metadata of", path, e))?
            .len();
        Ok(Arc::new(PosixRandomAccess {
            path: path.to_path_buf(),
            file,
            size,
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        fs::read(path).map_err(|e| io_err("reading", path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| io_err("renaming", from, e))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| io_err("removing", path, e))
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_err("listing", dir, e))? {
            let entry = entry.map_err(|e| io_err("listing", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err("syncing directory", dir, e))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn link_or_copy(&self, from: &Path, to: &Path, len: Option<u64>) -> Result<()> {
        if len.is_none() && fs::hard_link(from, to).is_ok() {
            return Ok(());
        }
        super::copy_prefix(self, from, to, len)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| io_err("hard-linking", to, e))?;
        let synced = File::open(to).and_then(|f| f.sync_all());
        if let Err(e) = synced {
            let _ = fs::remove_file(to);
            return Err(io_err("syncing", to, e));
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        Ok(Box::new(super::lock::lock(path)?))
    }
}
