//! [`WalFileReader`]: the public, read-only view of one WAL file for
//! inspection tools (`batchkv dump wal`). It reads records through the
//! same checksummed reader as recovery, but reports damage as an item and
//! goes on after it (as recovery's `skip-corrupted` mode does) instead of
//! deciding what the damage means. Not used by the engine itself.

use std::borrow::Cow;
use std::path::Path;

use super::{ReadOutcome, Reader, WalPredecessor};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PosixFs};
use crate::key::{SequenceNumber, ValueType};

/// Damage found in a log file (a WAL or a MANIFEST), as the inspection
/// readers ([`WalFileReader`], [`ManifestFileReader`](crate::ManifestFileReader))
/// report it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogDamage {
    /// File offset of the first byte of the record that is lost.
    pub offset: u64,
    /// True for a torn tail: the file ends inside its last record (the
    /// normal trace of a crash during a write). False for corruption:
    /// bad data, possibly followed by intact records.
    pub torn_tail: bool,
    /// Which check failed.
    pub detail: String,
}

/// One operation of a WAL record, as [`WalFileReader::records`] yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalOp {
    /// The column family id (0 = default).
    pub column_family: u32,
    /// The operation: `value` (a put), `deletion`, `range_deletion` or
    /// `merge` (the names of [`SstEntry::value_type`](crate::SstEntry)).
    pub value_type: &'static str,
    /// The key; for a range deletion, the first key deleted.
    pub key: Vec<u8>,
    /// The value or merge operand; for a range deletion, the end of the
    /// range (not deleted); empty for a deletion.
    pub value: Vec<u8>,
}

/// One WAL record: a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalRecord {
    /// File offset of the record's first fragment.
    pub offset: u64,
    /// Sequence number of the first operation (operation `i` has
    /// `sequence + i`).
    pub sequence: SequenceNumber,
    /// The operations, in the order they are applied.
    pub ops: Vec<WalOp>,
}

/// A WAL file (`NNNNNN.log`) opened for inspection: read whole into
/// memory.
pub struct WalFileReader {
    data: Vec<u8>,
    file: String,
}

impl WalFileReader {
    /// Reads the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<WalFileReader> {
        let path = path.as_ref();
        Ok(WalFileReader {
            data: PosixFs.read_all(path)?,
            file: path.display().to_string(),
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.data.len() as u64
    }

    /// The predecessor record the WAL starts with, if it does (a WAL a
    /// memtable switch created: the WAL before it, its length and last
    /// sequence number then). Not one of [`WalFileReader::records`].
    pub fn predecessor(&self) -> Option<WalPredecessor> {
        super::predecessor_of(&self.data, &self.file)
    }

    /// Every record in file order, with damage in its place: after
    /// corruption the records that follow are still read (from the next
    /// fragment, or the next block when a length cannot be trusted); a
    /// torn tail ends the iteration. A checksummed record that does not
    /// decode as a write batch is damage at its offset.
    pub fn records(&self) -> impl Iterator<Item = std::result::Result<WalRecord, LogDamage>> + '_ {
        log_records(&self.data, &self.file, true).map(|item| {
            let (offset, data) = item?;
            let batch = WriteBatch::from_rep(data.into_owned(), &self.file, offset)
                .map_err(|e| damage_from(e, offset))?;
            let ops = batch
                .iter()
                .map(|e| WalOp {
                    column_family: e.cf,
                    value_type: e.value_type.name(),
                    key: e.key.to_vec(),
                    value: if e.value_type == ValueType::Deletion {
                        Vec::new()
                    } else {
                        e.value.to_vec()
                    },
                })
                .collect();
            Ok(WalRecord {
                offset,
                sequence: batch.sequence(),
                ops,
            })
        })
    }
}

/// The damage a decoding error at `offset` stands for (its detail only:
/// the caller knows the file).
pub(crate) fn damage_from(e: Error, offset: u64) -> LogDamage {
    match e {
        Error::Corruption { offset, detail, .. } => LogDamage {
            offset,
            torn_tail: false,
            detail,
        },
        other => LogDamage {
            offset,
            torn_tail: false,
            detail: other.to_string(),
        },
    }
}

/// The records of the log file `data` (`(offset, payload)`; a WAL's
/// predecessor record is not one, if `wal`) and its damage, in file order;
/// ends at the end of the file or after a torn tail. The reader makes
/// progress on every call, so this ends.
pub(crate) fn log_records<'a>(
    data: &'a [u8],
    file: &str,
    wal: bool,
) -> impl Iterator<Item = std::result::Result<(u64, Cow<'a, [u8]>), LogDamage>> + 'a {
    let mut reader = if wal {
        Reader::wal(data, file)
    } else {
        Reader::new(data, file)
    };
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match reader.next() {
            ReadOutcome::Record { data, offset } => Some(Ok((offset, data))),
            ReadOutcome::Eof => {
                done = true;
                None
            }
            ReadOutcome::TornTail { offset, detail } => {
                done = true;
                Some(Err(LogDamage {
                    offset,
                    torn_tail: true,
                    detail,
                }))
            }
            ReadOutcome::Corrupt { offset, detail } => Some(Err(LogDamage {
                offset,
                torn_tail: false,
                detail,
            })),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::test_util::log_of;

    fn batch_rep(seq: u64, f: impl FnOnce(&mut WriteBatch)) -> Vec<u8> {
        let mut b = WriteBatch::new();
        f(&mut b);
        b.set_sequence(seq);
        b.rep().to_vec()
    }

    fn reader_of(data: Vec<u8>) -> WalFileReader {
        WalFileReader {
            data,
            file: "000003.log".into(),
        }
    }

    #[test]
    fn decodes_every_operation_with_its_family() {
        let r1 = batch_rep(5, |b| {
            b.put(b"k", b"v");
            b.delete(b"d");
            b.delete_range_in(2, b"a", b"c");
            b.merge_in(1, b"m", b"op");
        });
        let r = reader_of(log_of(&[r1]));
        let recs: Vec<_> = r.records().collect();
        assert_eq!(recs.len(), 1);
        let rec = recs[0].as_ref().unwrap();
        assert_eq!((rec.offset, rec.sequence), (0, 5));
        let ops: Vec<_> = rec
            .ops
            .iter()
            .map(|o| (o.column_family, o.value_type, &o.key[..], &o.value[..]))
            .collect();
        assert_eq!(
            ops,
            [
                (0, "value", &b"k"[..], &b"v"[..]),
                (0, "deletion", b"d", b""),
                (2, "range_deletion", b"a", b"c"),
                (1, "merge", b"m", b"op"),
            ]
        );
    }

    #[test]
    fn goes_on_after_corruption_and_stops_at_a_torn_tail() {
        // 20 KB records: the first fills most of block 0, the later ones
        // span block boundaries.
        let recs: Vec<Vec<u8>> = (0..5)
            .map(|i| batch_rep(i + 1, |b| b.put(vec![b'k'; 20_000], b"v")))
            .collect();
        let mut data = log_of(&recs);
        // Damage the first record's payload (checksum mismatch: the reader
        // skips the rest of block 0, and so loses record 2 too), cut the
        // last one short.
        data[100] ^= 1;
        data.truncate(data.len() - 5);
        let out: Vec<_> = reader_of(data).records().collect();
        assert!(
            matches!(&out[0], Err(d) if d.offset == 0 && !d.torn_tail),
            "{out:?}"
        );
        assert!(
            out.iter()
                .any(|r| matches!(r, Ok(rec) if rec.sequence == 3)),
            "{out:?}"
        );
        assert!(matches!(out.last(), Some(Err(d)) if d.torn_tail), "{out:?}");
    }

    #[test]
    fn the_predecessor_record_is_shown_apart_from_the_records() {
        let (file, bytes) = crate::fs::mem::MemFile::new();
        let mut w = crate::wal::Writer::new(Box::new(file));
        w.add_predecessor(&WalPredecessor::new(9, 4242, 77))
            .unwrap();
        w.add_record(&batch_rep(78, |b| b.put(b"k", b"v"))).unwrap();
        let data = bytes.lock().unwrap().clone();
        let r = reader_of(data);
        assert_eq!(r.predecessor(), Some(WalPredecessor::new(9, 4242, 77)));
        let recs: Vec<_> = r.records().collect();
        assert_eq!(recs.len(), 1, "{recs:?}");
        let rec = recs[0].as_ref().unwrap();
        // The batch follows the 7 + 24 bytes of the predecessor record.
        assert_eq!((rec.offset, rec.sequence), (31, 78));
        // A WAL created at open has none.
        let plain = reader_of(log_of(&[batch_rep(1, |b| b.put(b"k", b"v"))]));
        assert_eq!(plain.predecessor(), None);
    }

    #[test]
    fn a_record_that_is_not_a_batch_is_damage_at_its_offset() {
        let r = reader_of(log_of(&[b"short".to_vec()]));
        let out: Vec<_> = r.records().collect();
        assert_eq!(out.len(), 1);
        let d = out[0].as_ref().unwrap_err();
        assert_eq!((d.offset, d.torn_tail), (0, false));
        assert!(d.detail.contains("write batch"), "{}", d.detail);
    }
}
