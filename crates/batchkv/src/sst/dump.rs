//! [`SstFileReader`]: the public, read-only view of one SST file for
//! inspection tools (`batchkv dump sst`). It reads through the same
//! verified path as the engine (every block's checksum is checked) but
//! exposes only properties and entry metadata, not the internal types.

use std::path::Path;
use std::sync::Arc;

use super::table::{BlockReadOptions, Table, TableIterator};
use super::TableOptions;
use crate::error::Result;
use crate::fs::{FileSystem, PosixFs};
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, SequenceNumber};

/// One entry of an SST file, as [`SstFileReader::entries`] yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstEntry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The entry's sequence number.
    pub sequence: SequenceNumber,
    /// `"value"` or `"deletion"`.
    pub value_type: &'static str,
    /// Length of the value in bytes (0 for deletions).
    pub value_size: usize,
}

/// An SST file opened for inspection.
pub struct SstFileReader {
    table: Arc<Table>,
    path: String,
    file_size: u64,
}

impl SstFileReader {
    /// Opens and verifies (footer, index, filter, properties) the table at
    /// `path`; a damaged file is `Corruption` naming the file and offset.
    pub fn open(path: impl AsRef<Path>) -> Result<SstFileReader> {
        let path = path.as_ref();
        let file = PosixFs.open_random_access(path)?;
        let file_size = file.size();
        let name = path.display().to_string();
        let table = Table::open(file, name.clone(), TableOptions::default())?;
        Ok(SstFileReader {
            table,
            path: name,
            file_size,
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The table's properties as `(name, value)` pairs, in on-disk name order.
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        self.table.properties().to_pairs()
    }

    /// Every entry in internal-key order (all versions and tombstones). An
    /// error (a damaged block) is yielded once, and ends the iteration.
    pub fn entries(&self) -> SstEntries {
        SstEntries {
            it: Arc::clone(&self.table).iter_with(BlockReadOptions {
                fill_cache: false,
                verify_checksums: true,
            }),
            file: self.path.clone(),
            started: false,
            done: false,
        }
    }
}

/// Iterator over the entries of an [`SstFileReader`].
pub struct SstEntries {
    it: TableIterator,
    file: String,
    started: bool,
    done: bool,
}

impl Iterator for SstEntries {
    type Item = Result<SstEntry>;

    fn next(&mut self) -> Option<Result<SstEntry>> {
        if self.done {
            return None;
        }
        if self.started {
            self.it.next();
        } else {
            self.it.seek_to_first();
            self.started = true;
        }
        if !self.it.valid() {
            self.done = true;
            return self.it.status().err().map(Err);
        }
        // The block iterator only yields keys at least a trailer long; the
        // type byte is checked here.
        let Some(p) = parse_internal_key(self.it.key()) else {
            self.done = true;
            return Some(Err(crate::error::Error::corruption(
                self.file.as_str(),
                0,
                format!("entry with an unknown value type: key {:?}", self.it.key()),
            )));
        };
        Some(Ok(SstEntry {
            user_key: p.user_key.to_vec(),
            sequence: p.sequence,
            value_type: p.value_type.name(),
            value_size: self.it.value().len(),
        }))
    }
}
