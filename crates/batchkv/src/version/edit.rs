//! [`VersionEdit`]: one MANIFEST record — the change a flush or compaction
//! makes to the set of live files, plus the counters recovery needs.
//!
//! # Encoding (on disk — see `docs/format/manifest.md`)
//! A sequence of tagged fields, each a varint32 tag followed by the field.
//! Tags follow LevelDB's numbering and are **never renumbered**; an unknown
//! tag is corruption (a newer format must not be half-understood).
//!
//! | tag | field | layout after the tag |
//! |-----|-------|----------------------|
//! | 1 | comparator | varint32 len ‖ UTF-8 name |
//! | 2 | log_number | varint64 |
//! | 3 | next_file_number | varint64 |
//! | 4 | last_sequence | varint64 |
//! | 6 | deleted file | varint32 level ‖ varint64 number |
//! | 7 | new file | varint32 level ‖ varint64 number ‖ varint64 file_size ‖ varint32 len ‖ smallest ‖ varint32 len ‖ largest ‖ varint64 num_entries |
//! | 10 | new ingested file | the tag-7 fields ‖ varint64 global_seqno (1 ≤ it ≤ 2^56 − 1) |
//! | 11 | column family | varint32 id (the edit's files and log number are that family's; absent = 0, "default") |
//! | 12 | add column family | varint32 len ‖ UTF-8 name ‖ varint32 len ‖ UTF-8 option string (the family is tag 11's) |
//! | 13 | drop column family | nothing (the family is tag 11's) |
//! | 14 | max column family id | varint32 |
//!
//! Tags 11–14 are written only by databases that created a column family,
//! so a MANIFEST of a default-only database is unchanged (and still
//! readable by versions before column families).
//!
//! Tags 5 (LevelDB's compaction pointer), 8 and 9 (LevelDB's large-value
//! reference and previous log number) are reserved: never reuse them.
//! A scalar field that appears twice takes its last value (as in LevelDB).

use std::sync::{Arc, OnceLock};

use crate::coding::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64,
};
use crate::error::{Error, Result};
use crate::key::{parse_internal_key, MAX_SEQUENCE};
use crate::sst::Table;

/// Field tags. On disk — never renumber.
mod tag {
    pub(super) const COMPARATOR: u32 = 1;
    pub(super) const LOG_NUMBER: u32 = 2;
    pub(super) const NEXT_FILE_NUMBER: u32 = 3;
    pub(super) const LAST_SEQUENCE: u32 = 4;
    // 5: reserved (LevelDB compaction pointer).
    pub(super) const DELETED_FILE: u32 = 6;
    pub(super) const NEW_FILE: u32 = 7;
    // 8, 9: reserved (LevelDB large-value ref, previous log number).
    /// A new file whose entries all carry sequence 0 on disk and are read
    /// at the global sequence number that follows (an ingested external
    /// file, `docs/format/manifest.md` §4). Only written for files with a
    /// non-zero global sequence number, so older MANIFESTs never hold it.
    pub(super) const NEW_INGESTED_FILE: u32 = 10;
    /// The column family the edit's other fields apply to (absent = 0).
    pub(super) const COLUMN_FAMILY: u32 = 11;
    /// Creates the edit's column family: name and option string.
    pub(super) const ADD_COLUMN_FAMILY: u32 = 12;
    /// Drops the edit's column family.
    pub(super) const DROP_COLUMN_FAMILY: u32 = 13;
    /// The largest column family id ever handed out.
    pub(super) const MAX_COLUMN_FAMILY: u32 = 14;
}

/// What the MANIFEST records about one SST file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileMetaData {
    /// File number (the file is `NNNNNN.sst`).
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Number of entries (values and tombstones).
    pub num_entries: u64,
    /// 0 for tables whose entries carry their own sequence numbers (every
    /// table the engine writes). Otherwise the file is an ingested external
    /// file: every entry is stored with sequence 0 and is read as if it had
    /// this sequence number (`docs/format/sst.md` §9); `smallest` and
    /// `largest` already carry it.
    pub global_seqno: u64,
    /// The file's open reader, once a read has pinned it here (never
    /// encoded; see [`PinnedTable`]).
    pub pinned: PinnedTable,
}

/// The open reader of a live table, kept in the table's metadata when
/// `max_open_files` is unlimited (as RocksDB keeps table readers in the
/// file metadata at `max_open_files=-1`): reads of the versions that share
/// the metadata's `Arc` find the reader without the table cache's lock, its
/// LRU update or a reference count. `TableCache::reader` fills it; it is
/// the same `Arc<Table>` the table cache holds (one reader per file).
///
/// Not part of what the MANIFEST records: every `PinnedTable` equals every
/// other, so metadata compare as their recorded fields do.
#[derive(Clone, Default)]
pub(crate) struct PinnedTable(OnceLock<Arc<Table>>);

impl PinnedTable {
    /// The pinned reader, if a read has pinned one.
    #[inline]
    pub fn get(&self) -> Option<&Arc<Table>> {
        self.0.get()
    }

    /// Pins `table` unless a reader is pinned already; the pinned one.
    pub fn pin(&self, table: Arc<Table>) -> &Arc<Table> {
        self.0.get_or_init(|| table)
    }
}

impl PartialEq for PinnedTable {
    fn eq(&self, _: &PinnedTable) -> bool {
        true
    }
}

impl Eq for PinnedTable {}

impl std::fmt::Debug for PinnedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "pinned"
        } else {
            "not pinned"
        })
    }
}

impl FileMetaData {
    /// False if no entry of this file is visible at sequence `seq` (an
    /// ingested file whose global sequence number is later).
    #[inline]
    pub fn visible_at(&self, seq: u64) -> bool {
        self.global_seqno <= seq
    }
}

/// A change to the version state; the fields that are `None`/empty are
/// unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    /// Name of the comparator the database was created with.
    pub comparator: Option<String>,
    /// WALs numbered below this are no longer needed (their data is in SSTs).
    pub log_number: Option<u64>,
    /// The next file number to hand out.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<u64>,
    /// Files removed: `(level, file number)`.
    pub deleted_files: Vec<(u32, u64)>,
    /// Files added: `(level, metadata)`.
    pub new_files: Vec<(u32, FileMetaData)>,
    /// The column family `log_number`, `deleted_files`, `new_files`,
    /// `add_column_family` and `drop_column_family` apply to (0 = default).
    pub column_family: u32,
    /// Creates `column_family` with this name and option string.
    pub add_column_family: Option<(String, String)>,
    /// Drops `column_family`.
    pub drop_column_family: bool,
    /// The largest column family id ever handed out (ids are never reused).
    pub max_column_family: Option<u32>,
}

impl VersionEdit {
    /// Appends the encoding of this edit to `dst`.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        if let Some(name) = &self.comparator {
            put_varint32(dst, tag::COMPARATOR);
            put_length_prefixed(dst, name.as_bytes());
        }
        if self.column_family != 0 {
            put_varint32(dst, tag::COLUMN_FAMILY);
            put_varint32(dst, self.column_family);
        }
        if let Some((name, options)) = &self.add_column_family {
            put_varint32(dst, tag::ADD_COLUMN_FAMILY);
            put_length_prefixed(dst, name.as_bytes());
            put_length_prefixed(dst, options.as_bytes());
        }
        if self.drop_column_family {
            put_varint32(dst, tag::DROP_COLUMN_FAMILY);
        }
        if let Some(max) = self.max_column_family {
            put_varint32(dst, tag::MAX_COLUMN_FAMILY);
            put_varint32(dst, max);
        }
        for (t, v) in [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(v) = v {
                put_varint32(dst, t);
                put_varint64(dst, v);
            }
        }
        for &(level, number) in &self.deleted_files {
            put_varint32(dst, tag::DELETED_FILE);
            put_varint32(dst, level);
            put_varint64(dst, number);
        }
        for (level, f) in &self.new_files {
            debug_assert!(
                parse_internal_key(&f.smallest).is_some()
                    && parse_internal_key(&f.largest).is_some()
            );
            let ingested = f.global_seqno != 0;
            put_varint32(
                dst,
                if ingested {
                    tag::NEW_INGESTED_FILE
                } else {
                    tag::NEW_FILE
                },
            );
            put_varint32(dst, *level);
            put_varint64(dst, f.number);
            put_varint64(dst, f.file_size);
            put_length_prefixed(dst, &f.smallest);
            put_length_prefixed(dst, &f.largest);
            put_varint64(dst, f.num_entries);
            if ingested {
                put_varint64(dst, f.global_seqno);
            }
        }
    }

    /// Decodes one edit (a whole MANIFEST record). `file` and `offset` (the
    /// record's) name the place in an [`Error::Corruption`]. Levels are not
    /// range-checked here: the version set checks them against its level count.
    pub fn decode(src: &[u8], file: &str, offset: u64) -> Result<VersionEdit> {
        let mut d = Decoder {
            src,
            pos: 0,
            file,
            offset,
        };
        let mut edit = VersionEdit::default();
        while d.pos < src.len() {
            let tag_at = d.pos;
            let t = d.varint32("tag")?;
            match t {
                tag::COMPARATOR => {
                    let name = d.bytes("comparator name")?;
                    let name = std::str::from_utf8(name).map_err(|_| {
                        d.error(format!("comparator name at byte {tag_at} is not UTF-8"))
                    })?;
                    edit.comparator = Some(name.to_string());
                }
                tag::COLUMN_FAMILY => edit.column_family = d.varint32("column family id")?,
                tag::ADD_COLUMN_FAMILY => {
                    let name = d.string("column family name", tag_at)?;
                    let options = d.string("column family options", tag_at)?;
                    edit.add_column_family = Some((name, options));
                }
                tag::DROP_COLUMN_FAMILY => edit.drop_column_family = true,
                tag::MAX_COLUMN_FAMILY => {
                    edit.max_column_family = Some(d.varint32("max column family id")?)
                }
                tag::LOG_NUMBER => edit.log_number = Some(d.varint64("log number")?),
                tag::NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(d.varint64("next file number")?)
                }
                tag::LAST_SEQUENCE => {
                    let seq = d.varint64("last sequence")?;
                    if seq > MAX_SEQUENCE {
                        return Err(d.error(format!(
                            "last sequence {seq} at byte {tag_at} exceeds the largest sequence number {MAX_SEQUENCE}"
                        )));
                    }
                    edit.last_sequence = Some(seq);
                }
                tag::DELETED_FILE => {
                    let level = d.varint32("deleted file level")?;
                    let number = d.varint64("deleted file number")?;
                    edit.deleted_files.push((level, number));
                }
                tag::NEW_FILE | tag::NEW_INGESTED_FILE => {
                    let level = d.varint32("new file level")?;
                    let number = d.varint64("new file number")?;
                    let file_size = d.varint64("new file size")?;
                    let smallest = d.internal_key("new file smallest key")?;
                    let largest = d.internal_key("new file largest key")?;
                    let num_entries = d.varint64("new file entry count")?;
                    let mut global_seqno = 0;
                    if t == tag::NEW_INGESTED_FILE {
                        let at = d.pos;
                        global_seqno = d.varint64("new file global sequence number")?;
                        if global_seqno == 0 || global_seqno > MAX_SEQUENCE {
                            return Err(d.error(format!(
                                "global sequence number {global_seqno} at byte {at} is outside 1..={MAX_SEQUENCE}"
                            )));
                        }
                    }
                    edit.new_files.push((
                        level,
                        FileMetaData {
                            number,
                            file_size,
                            smallest,
                            largest,
                            num_entries,
                            global_seqno,
                            pinned: PinnedTable::default(),
                        },
                    ));
                }
                other => return Err(d.error(format!("unknown tag {other} at byte {tag_at}"))),
            }
        }
        Ok(edit)
    }
}

/// A cursor over an encoded edit that turns every failure into a
/// [`Error::Corruption`] naming the field.
struct Decoder<'a> {
    src: &'a [u8],
    pos: usize,
    file: &'a str,
    offset: u64,
}

impl<'a> Decoder<'a> {
    fn error(&self, detail: String) -> Error {
        Error::corruption(self.file, self.offset, format!("version edit: {detail}"))
    }

    fn truncated(&self, what: &str) -> Error {
        self.error(format!("bad or truncated {what} at byte {}", self.pos))
    }

    fn varint32(&mut self, what: &str) -> Result<u32> {
        let (v, n) = get_varint32(&self.src[self.pos..]).ok_or_else(|| self.truncated(what))?;
        self.pos += n;
        Ok(v)
    }

    fn varint64(&mut self, what: &str) -> Result<u64> {
        let (v, n) = get_varint64(&self.src[self.pos..]).ok_or_else(|| self.truncated(what))?;
        self.pos += n;
        Ok(v)
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let src: &'a [u8] = self.src;
        let (v, n) = get_length_prefixed(&src[self.pos..]).ok_or_else(|| self.truncated(what))?;
        self.pos += n;
        Ok(v)
    }

    fn string(&mut self, what: &str, tag_at: usize) -> Result<String> {
        let b = self.bytes(what)?;
        let s = std::str::from_utf8(b)
            .map_err(|_| self.error(format!("{what} at byte {tag_at} is not UTF-8")))?;
        Ok(s.to_string())
    }

    fn internal_key(&mut self, what: &str) -> Result<Vec<u8>> {
        let at = self.pos;
        let k = self.bytes(what)?;
        if parse_internal_key(k).is_none() {
            return Err(self.error(format!("{what} at byte {at} is not a valid internal key")));
        }
        Ok(k.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::key::{append_internal_key, ValueType};

    fn ik(user: &[u8], seq: u64) -> Vec<u8> {
        let mut k = Vec::new();
        append_internal_key(&mut k, user, seq, ValueType::Value);
        k
    }

    fn sample() -> VersionEdit {
        VersionEdit {
            comparator: Some("batchkv.BytewiseComparator".into()),
            log_number: Some(12),
            next_file_number: Some(300),
            last_sequence: Some(1 << 40),
            deleted_files: vec![(0, 5), (3, 1 << 33)],
            new_files: vec![(
                1,
                FileMetaData {
                    number: 301,
                    file_size: 4 << 20,
                    smallest: ik(b"apple", 9),
                    largest: ik(b"zebra", 2),
                    num_entries: 12345,
                    global_seqno: 0,
                    pinned: PinnedTable::default(),
                },
            )],
            ..VersionEdit::default()
        }
    }

    fn cf_sample() -> VersionEdit {
        VersionEdit {
            column_family: 3,
            add_column_family: Some(("users".into(), "write_buffer_size=1024".into())),
            max_column_family: Some(3),
            log_number: Some(9),
            ..sample()
        }
    }

    fn encoded(e: &VersionEdit) -> Vec<u8> {
        let mut v = Vec::new();
        e.encode(&mut v);
        v
    }

    #[test]
    fn round_trip_sample_and_empty() {
        let drop = VersionEdit {
            column_family: 7,
            drop_column_family: true,
            ..VersionEdit::default()
        };
        for e in [sample(), VersionEdit::default(), cf_sample(), drop] {
            assert_eq!(
                VersionEdit::decode(&encoded(&e), "MANIFEST-000001", 0).unwrap(),
                e
            );
        }
        assert!(encoded(&VersionEdit::default()).is_empty());
    }

    #[test]
    fn tag_layout() {
        let e = VersionEdit {
            log_number: Some(5),
            deleted_files: vec![(2, 300)],
            ..VersionEdit::default()
        };
        // tag 2, 5; tag 6, level 2, number 300 = 0xac 0x02.
        assert_eq!(encoded(&e), vec![2, 5, 6, 2, 0xac, 0x02]);
    }

    #[test]
    fn every_truncation_is_corruption_or_a_shorter_edit() {
        let full = encoded(&sample());
        for n in 0..full.len() {
            // A cut at a field boundary is a valid (smaller) edit; anywhere
            // else it must be reported as corruption naming the record.
            match VersionEdit::decode(&full[..n], "MANIFEST-000007", 99) {
                Ok(e) => assert_ne!(e, sample(), "prefix {n} decoded as the whole edit"),
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!((file.as_str(), offset), ("MANIFEST-000007", 99));
                }
                Err(other) => panic!("unexpected error {other}"),
            }
        }
        // Cuts inside the new-file field (the last one) are never valid.
        let start_of_new_file = encoded(&VersionEdit {
            new_files: vec![],
            ..sample()
        })
        .len();
        assert_eq!(full[start_of_new_file], 7);
        for n in start_of_new_file + 1..full.len() {
            assert!(
                VersionEdit::decode(&full[..n], "m", 0).is_err(),
                "prefix {n}"
            );
        }
    }

    #[test]
    fn unknown_and_reserved_tags_are_corruption() {
        for t in [0u8, 5, 8, 9, 15, 100] {
            let e = VersionEdit::decode(&[2, 1, t, 0], "m", 3).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("unknown tag {t} at byte 2")),
                "{e}"
            );
        }
    }

    #[test]
    fn ingested_file_round_trips_with_tag_10_and_rejects_seqno_0() {
        let mut e = sample();
        e.new_files[0].1.global_seqno = 77;
        let bytes = encoded(&e);
        let at = encoded(&VersionEdit {
            new_files: vec![],
            ..sample()
        })
        .len();
        assert_eq!(bytes[at], 10, "an ingested file uses tag 10");
        assert_eq!(*bytes.last().unwrap(), 77, "global seqno is the last field");
        assert_eq!(VersionEdit::decode(&bytes, "m", 0).unwrap(), e);
        // Tag 10 with global seqno 0 (that is tag 7's meaning) is corruption.
        let mut zero = bytes.clone();
        *zero.last_mut().unwrap() = 0;
        let err = VersionEdit::decode(&zero, "m", 0).unwrap_err();
        assert!(
            err.to_string().contains("global sequence number 0"),
            "{err}"
        );
    }

    /// Found by the `version_edit` fuzz target: a last sequence beyond the
    /// 56 bits an internal key's trailer holds was accepted, and the
    /// database would have numbered new writes past it (wrapping the
    /// sequence into the type byte of every key written).
    #[test]
    fn fuzz_regression_last_sequence_past_56_bits_is_corruption() {
        let mut v = vec![4];
        put_varint64(&mut v, MAX_SEQUENCE);
        assert_eq!(
            VersionEdit::decode(&v, "m", 0).unwrap().last_sequence,
            Some(MAX_SEQUENCE)
        );
        for bad in [MAX_SEQUENCE + 1, u64::MAX] {
            let mut v = vec![2, 1, 4];
            put_varint64(&mut v, bad);
            let e = VersionEdit::decode(&v, "MANIFEST-000003", 17).unwrap_err();
            assert!(
                matches!(&e, Error::Corruption { file, offset: 17, .. } if file == "MANIFEST-000003"),
                "{e}"
            );
            assert!(e.to_string().contains("at byte 2 exceeds"), "{e}");
        }
    }

    #[test]
    fn bad_keys_and_names_are_corruption() {
        // smallest key shorter than the 8-byte trailer.
        let mut v = vec![7, 0, 1, 10, 3, b'a', b'b', b'c'];
        v.push(8);
        v.extend_from_slice(&ik(b"", 1));
        v.push(1);
        let e = VersionEdit::decode(&v, "m", 0).unwrap_err();
        assert!(e.to_string().contains("not a valid internal key"), "{e}");
        // Comparator name that is not UTF-8.
        assert!(VersionEdit::decode(&[1, 2, 0xff, 0xfe], "m", 0)
            .unwrap_err()
            .is_corruption());
    }

    fn file_strategy() -> impl Strategy<Value = (u32, FileMetaData)> {
        (
            0u32..10,
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..20),
            proptest::collection::vec(any::<u8>(), 0..20),
            0u64..(1 << 56),
            any::<u64>(),
            prop_oneof![Just(0u64), 1..=MAX_SEQUENCE],
        )
            .prop_map(
                |(level, number, file_size, a, b, seq, num_entries, global_seqno)| {
                    (
                        level,
                        FileMetaData {
                            number,
                            file_size,
                            smallest: ik(&a, seq),
                            largest: ik(&b, seq),
                            num_entries,
                            global_seqno,
                            pinned: PinnedTable::default(),
                        },
                    )
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn round_trip(
            comparator in proptest::option::of(".{0,20}"),
            log_number in proptest::option::of(any::<u64>()),
            next_file_number in proptest::option::of(any::<u64>()),
            last_sequence in proptest::option::of(0..=MAX_SEQUENCE),
            deleted_files in proptest::collection::vec((any::<u32>(), any::<u64>()), 0..5),
            new_files in proptest::collection::vec(file_strategy(), 0..5),
        ) {
            let e = VersionEdit { comparator, log_number, next_file_number, last_sequence, deleted_files, new_files, ..VersionEdit::default() };
            prop_assert_eq!(VersionEdit::decode(&encoded(&e), "m", 0).unwrap(), e);
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(e) = VersionEdit::decode(&data, "m", 0) {
                // Whatever decodes re-encodes and decodes to the same edit.
                prop_assert_eq!(VersionEdit::decode(&encoded(&e), "m", 0).unwrap(), e);
            }
        }
    }
}
