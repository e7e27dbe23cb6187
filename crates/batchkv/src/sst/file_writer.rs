//! [`SstFileWriter`]: builds a table outside any database, for bulk loading
//! with [`Db::ingest_external_file`](crate::Db::ingest_external_file).
//!
//! The file is an ordinary table (`docs/format/sst.md`) written with the
//! engine's table options, with two differences that make it *external*
//! (§9 there): every entry is stored with sequence number 0, and the
//! properties block carries `batchkv.external.sst.file.version = 1`. The
//! database assigns the sequence number when it ingests the file, without
//! rewriting it.
//!
//! # Invariants
//! 1. User keys are added in strictly ascending bytewise order, so the file
//!    holds at most one entry per user key (ingestion and the global-seqno
//!    view rely on it, `sst/global_seqno.rs`).
//! 2. A rejected `put`/`delete` adds nothing: the writer stays usable.
//! 3. A writer dropped before `finish` succeeds removes its partial file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::TableBuilder;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PosixFs};
use crate::key::{append_internal_key, ValueType};
use crate::options::{Options, MAX_KEY_SIZE, MAX_VALUE_SIZE};

/// What [`SstFileWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExternalSstInfo {
    /// The file written.
    pub path: PathBuf,
    /// Its smallest user key.
    pub smallest_key: Vec<u8>,
    /// Its largest user key.
    pub largest_key: Vec<u8>,
    /// Entries written (puts and deletes).
    pub num_entries: u64,
    /// Size of the file in bytes.
    pub file_size: u64,
}

/// Writes an external SST file for [`Db::ingest_external_file`](crate::Db::ingest_external_file).
///
/// Keys must be added in strictly ascending bytewise order; a key equal to
/// or below the previous one is refused with [`Error::InvalidArgument`]
/// (the writer stays usable). `finish` writes the index, filter and footer
/// and fsyncs the file.
///
/// ```no_run
/// use batchkv::{Db, IngestOptions, Options, SstFileWriter};
/// let opts = Options::default();
/// let mut w = SstFileWriter::create("/tmp/bulk.sst", &opts)?;
/// w.put(b"a", b"1")?;
/// w.put(b"b", b"2")?;
/// let info = w.finish()?;
/// let db = Db::open("/tmp/bulk-db", opts)?;
/// db.ingest_external_file(&[&info.path], &IngestOptions::default())?;
/// assert_eq!(db.get(b"b")?, Some(b"2".to_vec()));
/// # Ok::<(), batchkv::Error>(())
/// ```
pub struct SstFileWriter {
    /// `None` once finished (or after a failed finish).
    builder: Option<TableBuilder>,
    path: PathBuf,
    fs: Arc<dyn FileSystem>,
    /// The last user key added (invariant 1); empty before the first.
    last_key: Vec<u8>,
    smallest_key: Vec<u8>,
    num_entries: u64,
    /// Reused buffer for the internal key being added.
    ikey: Vec<u8>,
}

impl SstFileWriter {
    /// Creates (or truncates) `path` for writing with `opts`' table options
    /// (block size, restart interval, compression, bloom filter, data block
    /// layout).
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<SstFileWriter> {
        SstFileWriter::create_with_fs(path, opts, Arc::new(PosixFs))
    }

    /// [`SstFileWriter::create`] through a custom filesystem.
    pub fn create_with_fs(
        path: impl AsRef<Path>,
        opts: &Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<SstFileWriter> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let file = fs.new_writable(&path)?;
        let mut builder =
            TableBuilder::new(file, path.display().to_string(), opts.table_options())?;
        builder.mark_external();
        Ok(SstFileWriter {
            builder: Some(builder),
            path,
            fs,
            last_key: Vec::new(),
            smallest_key: Vec::new(),
            num_entries: 0,
            ikey: Vec::new(),
        })
    }

    /// Adds `key → value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueType::Value, value.as_ref())
    }

    /// Adds a tombstone for `key`: once ingested, it hides older values of
    /// `key` in the database.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueType::Deletion, &[])
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.num_entries
    }

    fn add(&mut self, key: &[u8], t: ValueType, value: &[u8]) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidArgument(why));
        if key.len() > MAX_KEY_SIZE {
            return bad(format!(
                "{}: key of {} bytes exceeds the limit of {MAX_KEY_SIZE} bytes",
                self.path.display(),
                key.len()
            ));
        }
        if value.len() > MAX_VALUE_SIZE {
            return bad(format!(
                "{}: value of {} bytes exceeds the limit of {MAX_VALUE_SIZE} bytes",
                self.path.display(),
                value.len()
            ));
        }
        if self.num_entries > 0 && key <= self.last_key.as_slice() {
            let how = if key == self.last_key.as_slice() {
                "added twice"
            } else {
                "out of order: keys must be added in strictly ascending order"
            };
            return bad(format!(
                "{}: key \"{}\" {how} (previous key \"{}\")",
                self.path.display(),
                key.escape_ascii(),
                self.last_key.escape_ascii()
            ));
        }
        let Some(builder) = self.builder.as_mut() else {
            return bad(format!("{}: writer already finished", self.path.display()));
        };
        self.ikey.clear();
        append_internal_key(&mut self.ikey, key, 0, t);
        builder.add(&self.ikey, value)?;
        if self.num_entries == 0 {
            self.smallest_key = key.to_vec();
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.num_entries += 1;
        Ok(())
    }

    /// Writes the rest of the table and fsyncs it. A file with no entries
    /// is refused (`InvalidArgument`) and removed, as is the file after any
    /// error.
    pub fn finish(mut self) -> Result<ExternalSstInfo> {
        let Some(builder) = self.builder.take() else {
            return Err(Error::InvalidArgument(format!(
                "{}: writer already finished",
                self.path.display()
            )));
        };
        if self.num_entries == 0 {
            drop(builder);
            let _ = self.fs.remove_file(&self.path);
            return Err(Error::InvalidArgument(format!(
                "{}: an external SST file needs at least one entry",
                self.path.display()
            )));
        }
        match builder.finish() {
            Ok(summary) => Ok(ExternalSstInfo {
                path: self.path.clone(),
                smallest_key: std::mem::take(&mut self.smallest_key),
                largest_key: std::mem::take(&mut self.last_key),
                num_entries: summary.num_entries,
                file_size: summary.file_size,
            }),
            Err(e) => {
                let _ = self.fs.remove_file(&self.path);
                Err(e)
            }
        }
    }
}

impl Drop for SstFileWriter {
    fn drop(&mut self) {
        // Invariant 3: an unfinished file is not a table; do not leave it.
        if let Some(b) = self.builder.take() {
            drop(b);
            let _ = self.fs.remove_file(&self.path);
        }
    }
}
