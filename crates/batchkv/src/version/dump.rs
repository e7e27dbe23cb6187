//! [`ManifestFileReader`]: the public, read-only view of one MANIFEST file
//! for inspection tools (`batchkv dump manifest`): every version edit
//! decoded, damage reported in place (the log reader goes on after it).
//! Recovery refuses any damage instead; this reader only shows it. Not
//! used by the engine itself.

use std::path::Path;

use super::edit::{FileMetaData, VersionEdit};
use crate::error::Result;
use crate::fs::{FileSystem, PosixFs};
use crate::key::{parse_internal_key, SequenceNumber};
use crate::wal::dump::{damage_from, log_records, LogDamage};

/// An internal key, decoded: a file's smallest or largest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpKey {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The entry's sequence number.
    pub sequence: SequenceNumber,
    /// `value`, `deletion`, `range_deletion` or `merge`.
    pub value_type: &'static str,
}

/// A file a version edit adds to a level.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestFile {
    /// The level (0 = newest).
    pub level: u32,
    /// File number: the file is `NNNNNN.sst`.
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Number of entries (values and tombstones).
    pub num_entries: u64,
    /// 0, or for an ingested external file the sequence number all its
    /// entries are read at.
    pub global_seqno: u64,
    /// The smallest entry.
    pub smallest: DumpKey,
    /// The largest entry.
    pub largest: DumpKey,
}

/// One MANIFEST record: a version edit. Fields that are `None`, `false`
/// or empty were not in the edit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestEdit {
    /// File offset of the record's first fragment.
    pub offset: u64,
    /// Comparator name (the first edit of a MANIFEST has it).
    pub comparator: Option<String>,
    /// The column family the log number, files, creation and drop apply
    /// to (0 = default).
    pub column_family: u32,
    /// WALs numbered below this hold nothing the family still needs.
    pub log_number: Option<u64>,
    /// The next file number to hand out.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<u64>,
    /// Creates the column family: `(name, option string)`.
    pub add_column_family: Option<(String, String)>,
    /// Drops the column family.
    pub drop_column_family: bool,
    /// The largest column family id handed out so far.
    pub max_column_family: Option<u32>,
    /// Files removed: `(level, file number)`.
    pub deleted_files: Vec<(u32, u64)>,
    /// Files added.
    pub new_files: Vec<ManifestFile>,
}

/// A MANIFEST file opened for inspection: read whole into memory.
pub struct ManifestFileReader {
    data: Vec<u8>,
    file: String,
}

impl ManifestFileReader {
    /// Reads the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<ManifestFileReader> {
        let path = path.as_ref();
        Ok(ManifestFileReader {
            data: PosixFs.read_all(path)?,
            file: path.display().to_string(),
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.data.len() as u64
    }

    /// Every edit in file order, with damage in its place (as
    /// [`WalFileReader::records`](crate::WalFileReader::records) does); a
    /// checksummed record that does not decode as an edit is damage at
    /// its offset.
    pub fn edits(&self) -> impl Iterator<Item = std::result::Result<ManifestEdit, LogDamage>> + '_ {
        log_records(&self.data, &self.file, false).map(|item| {
            let (offset, data) = item?;
            let edit = VersionEdit::decode(&data, &self.file, offset)
                .map_err(|e| damage_from(e, offset))?;
            Ok(public_edit(edit, offset))
        })
    }
}

fn public_edit(e: VersionEdit, offset: u64) -> ManifestEdit {
    ManifestEdit {
        offset,
        comparator: e.comparator,
        column_family: e.column_family,
        log_number: e.log_number,
        next_file_number: e.next_file_number,
        last_sequence: e.last_sequence,
        add_column_family: e.add_column_family,
        drop_column_family: e.drop_column_family,
        max_column_family: e.max_column_family,
        deleted_files: e.deleted_files,
        new_files: e
            .new_files
            .into_iter()
            .map(|(level, f)| public_file(level, f))
            .collect(),
    }
}

fn public_file(level: u32, f: FileMetaData) -> ManifestFile {
    ManifestFile {
        level,
        number: f.number,
        file_size: f.file_size,
        num_entries: f.num_entries,
        global_seqno: f.global_seqno,
        smallest: dump_key(&f.smallest),
        largest: dump_key(&f.largest),
    }
}

/// `VersionEdit::decode` accepts only keys that parse; anything else would
/// show as type `invalid` with the whole key as its user key.
fn dump_key(internal: &[u8]) -> DumpKey {
    match parse_internal_key(internal) {
        Some(p) => DumpKey {
            user_key: p.user_key.to_vec(),
            sequence: p.sequence,
            value_type: p.value_type.name(),
        },
        None => DumpKey {
            user_key: internal.to_vec(),
            sequence: 0,
            value_type: "invalid",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{append_internal_key, ValueType};
    use crate::wal::test_util::log_of;

    fn ikey(k: &[u8], seq: u64) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, ValueType::Value);
        v
    }

    #[test]
    fn decodes_edits_and_reports_a_bad_one_at_its_offset() {
        let edit = VersionEdit {
            comparator: Some("c".into()),
            log_number: Some(3),
            next_file_number: Some(9),
            last_sequence: Some(40),
            column_family: 2,
            deleted_files: vec![(1, 4)],
            new_files: vec![(
                1,
                FileMetaData {
                    number: 8,
                    file_size: 1000,
                    smallest: ikey(b"a", 5),
                    largest: ikey(b"z", 7),
                    num_entries: 12,
                    global_seqno: 0,
                    pinned: Default::default(),
                },
            )],
            ..VersionEdit::default()
        };
        let mut rec = Vec::new();
        edit.encode(&mut rec);
        let data = log_of(&[rec, vec![0x7f]]);
        let reader = ManifestFileReader {
            data,
            file: "MANIFEST-000001".into(),
        };
        let out: Vec<_> = reader.edits().collect();
        assert_eq!(out.len(), 2);
        let e = out[0].as_ref().unwrap();
        assert_eq!(
            (e.offset, e.column_family, e.log_number, e.last_sequence),
            (0, 2, Some(3), Some(40))
        );
        assert_eq!(e.deleted_files, [(1, 4)]);
        let f = &e.new_files[0];
        assert_eq!(
            (f.level, f.number, f.file_size, f.num_entries),
            (1, 8, 1000, 12)
        );
        assert_eq!(
            (
                &f.smallest.user_key[..],
                f.smallest.sequence,
                f.smallest.value_type
            ),
            (&b"a"[..], 5, "value")
        );
        assert_eq!(
            (&f.largest.user_key[..], f.largest.sequence),
            (&b"z"[..], 7)
        );
        let bad = out[1].as_ref().unwrap_err();
        assert!(bad.offset > 0 && !bad.torn_tail, "{bad:?}");
        assert!(bad.detail.contains("unknown tag 127"), "{}", bad.detail);
    }
}
