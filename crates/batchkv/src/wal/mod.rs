//! The log format (LevelDB's): the write-ahead log and the MANIFEST are both
//! sequences of checksummed records in 32 KiB blocks.
//!
//! - [`format`]: block size, header, record types, CRC masking (on disk).
//! - [`Writer`]: appends records, fragmenting them across blocks.
//! - [`WalPredecessor`]: the record a WAL created by a memtable switch
//!   starts with, naming the WAL before it (recovery checks it).
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
mod predecessor;
mod reader;
mod writer;

pub use predecessor::WalPredecessor;
pub(crate) use predecessor::RECORD_LEN as PREDECESSOR_RECORD_LEN;
pub(crate) use reader::{intact_fragment_after, predecessor_of, ReadOutcome, Reader};
pub(crate) use writer::Writer;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod test_util {
    //! Logs built in memory for tests.

    use crate::fs::mem::MemFile;

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
}
