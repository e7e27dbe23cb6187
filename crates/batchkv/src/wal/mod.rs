//! The log format (LevelDB's): the write-ahead log and the MANIFEST are both
//! sequences of checksummed records in 32 KiB blocks.
//!
//! - [`format`]: block size, header, record types, CRC masking (on disk).
//! - [`Writer`]: appends records, fragmenting them across blocks.
//! - [`Reader`]: reads them back from the whole file, reporting a torn tail
//!   ([`ReadOutcome::TornTail`]) apart from corruption
//!   ([`ReadOutcome::Corrupt`]); recovery decides what each means per mode.
//! - [`dump`]: the public inspection readers' WAL side
//!   ([`WalFileReader`](crate::WalFileReader), `batchkv dump wal`).
//!
//! Byte layout, worked example, fragment rules and recovery modes:
//! `docs/format/wal.md`. A WAL record's payload is a
//! [`WriteBatch`](crate::batch::WriteBatch) rep; a MANIFEST record's is a
//! [`VersionEdit`](crate::version::edit::VersionEdit) (`docs/format/manifest.md`).

pub(crate) mod dump;
pub(crate) mod format;
mod reader;
mod writer;

#[allow(unused_imports)] // used by recovery once `Db` is wired in
pub(crate) use reader::{intact_fragment_after, ReadOutcome, Reader};
#[allow(unused_imports)] // used by the write path once `Db` is wired in
pub(crate) use writer::Writer;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod test_util {
    //! An in-memory [`WritableFile`] for tests, with an optional failure point.

    use std::sync::{Arc, Mutex};

    use crate::error::{Error, Result};
    use crate::fs::WritableFile;

    /// The bytes of a log holding `records`, written by the real log writer.
    pub(crate) fn log_of<R: AsRef<[u8]>>(records: &[R]) -> Vec<u8> {
        let (file, bytes) = MemFile::new();
        let mut w = super::Writer::new(Box::new(file));
        for r in records {
            w.add_record(r.as_ref()).unwrap();
        }
        let out = bytes.lock().unwrap().clone();
        out
    }

    /// Appends to a shared `Vec<u8>`; fails once `fail_after` bytes are held.
    pub(crate) struct MemFile {
        bytes: Arc<Mutex<Vec<u8>>>,
        pub(crate) fail_after: Option<usize>,
    }

    impl MemFile {
        /// A new empty file and a handle to its bytes.
        pub(crate) fn new() -> (MemFile, Arc<Mutex<Vec<u8>>>) {
            let bytes = Arc::new(Mutex::new(Vec::new()));
            (MemFile::sharing(bytes.clone()), bytes)
        }

        /// A file appending to existing `bytes` (a reopened file).
        pub(crate) fn sharing(bytes: Arc<Mutex<Vec<u8>>>) -> MemFile {
            MemFile {
                bytes,
                fail_after: None,
            }
        }
    }

    impl WritableFile for MemFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            let mut b = self.bytes.lock().unwrap();
            if let Some(limit) = self.fail_after {
                if b.len() + data.len() > limit {
                    let fits = limit.saturating_sub(b.len());
                    b.extend_from_slice(&data[..fits]);
                    return Err(Error::io(
                        "appending to test file",
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
            self.bytes.lock().unwrap().len() as u64
        }
    }
}
