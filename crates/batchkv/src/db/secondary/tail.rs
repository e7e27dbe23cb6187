//! Reading files the primary is still appending to: its MANIFEST
//! ([`ManifestTail`]) and its WALs ([`WalTail`]), each from where the last
//! read stopped, never past the last complete record.
//!
//! A record is complete when its whole framing and checksum are on disk
//! (`docs/format/wal.md`). The primary appends whole records to the end of
//! a file with `write(2)`, so what a reader sees is a prefix of what was
//! written: at most the last record is cut short, and the log reader
//! reports that as a torn tail. A tail is read again from the start of that
//! record next time, so a record being written is never applied in part,
//! and a torn record a crash left behind is never applied at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::version::{ManifestState, VersionSet};
use crate::wal;

/// Appends to `bytes` what the file at `path` holds beyond them. `false`
/// when the file does not exist (the primary deleted it).
fn read_more(fs: &dyn FileSystem, path: &Path, bytes: &mut Vec<u8>) -> Result<bool> {
    let file = match fs.open_random_access(path) {
        Ok(f) => f,
        Err(_) if !fs.exists(path) => return Ok(false),
        Err(e) => return Err(e),
    };
    let size = file.size() as usize;
    let old = bytes.len();
    if size < old {
        // Logs and MANIFESTs are only appended to, and names never reused.
        return Err(Error::corruption(
            path.display().to_string(),
            size as u64,
            format!(
                "the file shrank from {old} to {size} bytes while a secondary instance followed it"
            ),
        ));
    }
    if size > old {
        bytes.resize(size, 0);
        if let Err(e) = file.read_exact_at(&mut bytes[old..], old as u64) {
            bytes.truncate(old);
            return Err(e);
        }
    }
    Ok(true)
}

/// The complete records of `bytes` from `offset`: each with its offset and
/// the offset just past it. Stops before a record cut short; damage in
/// the middle of the file is `Corruption` naming it.
fn complete_records(
    bytes: &[u8],
    offset: usize,
    file: &str,
    wal: bool,
) -> Result<Vec<(Vec<u8>, u64, usize)>> {
    let mut reader = wal::Reader::resume(bytes, offset, file, wal);
    let mut out = Vec::new();
    loop {
        match reader.next() {
            wal::ReadOutcome::Record { data, offset } => {
                out.push((data.into_owned(), offset, reader.position()))
            }
            wal::ReadOutcome::Eof | wal::ReadOutcome::TornTail { .. } => return Ok(out),
            wal::ReadOutcome::Corrupt { offset, detail } => {
                return Err(reader.corruption(offset, detail))
            }
        }
    }
}

/// The primary's live MANIFEST, read up to its last complete record.
pub(super) struct ManifestTail {
    /// Its file name (`MANIFEST-NNNNNN`), as CURRENT named it.
    pub name: String,
    /// The file's bytes read so far.
    bytes: Vec<u8>,
    /// Just past the last record applied to `state`.
    offset: usize,
    /// What the records up to `offset` describe.
    state: ManifestState,
}

impl ManifestTail {
    pub fn new(name: String) -> ManifestTail {
        ManifestTail {
            name,
            bytes: Vec::new(),
            offset: 0,
            state: ManifestState::new(),
        }
    }

    /// Reads what the primary appended since the last call; `false` if the
    /// file is gone (the primary reopened and moved CURRENT on).
    pub fn refresh(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
        read_more(fs, &dir.join(&self.name), &mut self.bytes)
    }

    /// Complete records read but not applied yet.
    pub fn has_pending(&self, dir: &Path) -> Result<bool> {
        let file = dir.join(&self.name).display().to_string();
        Ok(!complete_records(&self.bytes, self.offset, &file, false)?.is_empty())
    }

    /// Applies every complete record read so far. On an error the state
    /// may be half-applied: the caller starts over with a new tail.
    pub fn apply_pending(&mut self, dir: &Path) -> Result<()> {
        let file = dir.join(&self.name).display().to_string();
        for (data, offset, end) in complete_records(&self.bytes, self.offset, &file, false)? {
            self.state.apply_record(&data, &file, offset)?;
            self.offset = end;
        }
        Ok(())
    }

    /// The database state the records applied so far describe.
    pub fn version_set(&self, fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<VersionSet> {
        let file = dir.join(&self.name).display().to_string();
        self.state
            .version_set(Arc::clone(fs), dir, &self.name, &file)
    }
}

/// One of the primary's WALs, read up to its last complete record into one
/// memtable per column family.
#[derive(Default)]
pub(super) struct WalTail {
    /// The file's bytes read so far.
    bytes: Vec<u8>,
    /// Just past the last record applied.
    offset: usize,
    /// Per family id, the memtable holding this WAL's records of it
    /// (created at the family's first record).
    pub mems: BTreeMap<u32, Arc<dyn MemTable>>,
    /// The largest sequence number applied (0: none).
    pub max_seq: SequenceNumber,
}

impl WalTail {
    /// Reads what the primary appended to WAL `path` and inserts its
    /// complete records into the memtables of the families that may hold
    /// unflushed writes in it (`log_numbers`: family id → the oldest WAL
    /// with its unflushed writes); `new_mem` makes a family's memtable.
    /// Returns `false` if the file is gone (deleted by the primary once
    /// every family had flushed what it held).
    pub fn read(
        &mut self,
        fs: &dyn FileSystem,
        path: &Path,
        number: u64,
        log_numbers: &BTreeMap<u32, u64>,
        mut new_mem: impl FnMut(u32) -> Option<Arc<dyn MemTable>>,
    ) -> Result<bool> {
        if !read_more(fs, path, &mut self.bytes)? {
            return Ok(false);
        }
        let file = path.display().to_string();
        for (data, offset, end) in complete_records(&self.bytes, self.offset, &file, true)? {
            let batch = WriteBatch::from_rep(data, &file, offset)?;
            let mut seq = batch.sequence();
            for entry in batch.iter() {
                // Families dropped, or flushed past this WAL, are skipped
                // (as WAL replay at open skips them).
                let wanted = log_numbers.get(&entry.cf).is_some_and(|&l| number >= l);
                if wanted {
                    let mem = match self.mems.get(&entry.cf) {
                        Some(m) => Some(Arc::clone(m)),
                        None => new_mem(entry.cf).inspect(|m| {
                            self.mems.insert(entry.cf, Arc::clone(m));
                        }),
                    };
                    if let Some(mem) = mem {
                        mem.insert(seq, entry.value_type, entry.key, entry.value)?;
                    }
                }
                seq += 1;
            }
            if !batch.is_empty() {
                self.max_seq = self.max_seq.max(seq - 1);
            }
            self.offset = end;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Following a log as it grows byte by byte: each record comes out
    /// exactly once, whole, and only when its last byte is there — also a
    /// record fragmented across blocks, and across the trailer padding.
    #[test]
    fn a_growing_log_yields_each_record_once_and_only_when_complete() {
        let records: Vec<Vec<u8>> = vec![
            b"first".to_vec(),
            // 12 + 7 + 32748 bytes: ends 1 byte before the block's end (padding follows)
            vec![7u8; wal::format::BLOCK_SIZE - 20],
            vec![9u8; 2 * wal::format::BLOCK_SIZE + 100], // FIRST, MIDDLE, LAST
            Vec::new(),
            b"last".to_vec(),
        ];
        let log = wal::test_util::log_of(&records);
        // The end offset of each record in the log.
        let mut ends = Vec::new();
        let mut reader = wal::Reader::new(&log, "log");
        while let wal::ReadOutcome::Record { .. } = reader.next() {
            ends.push(reader.position());
        }
        assert_eq!(ends.len(), records.len());
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut offset = 0;
        let step = 97; // bytes appended per read; coprime with the block size
        let mut len = 0;
        while len < log.len() {
            len = (len + step).min(log.len());
            let seen = &log[..len];
            for (data, _, end) in complete_records(seen, offset, "log", true).unwrap() {
                got.push(data);
                offset = end;
            }
            // Exactly the records whose last byte is within the prefix.
            let complete = ends.iter().filter(|&&e| e <= len).count();
            assert_eq!(got.len(), complete, "prefix of {len} bytes");
        }
        assert_eq!(got, records);
    }
}
