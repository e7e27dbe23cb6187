//! [`WriteBatch`]: a group of puts, deletes and range deletes applied
//! atomically, and its encoding, which is also the payload of one WAL record.
//!
//! # Rep (on disk in the WAL — never change; see `docs/format/wal.md`)
//! ```text
//! fixed64 sequence ‖ fixed32 count ‖ entry*count
//! entry = type byte (0 deletion, 1 value, 2 range deletion)
//!         ‖ varint32 key_len ‖ key
//!         ‖ [varint32 value_len ‖ value]   (types 1 and 2; for 2, key is
//!                                           the range's begin, value its end)
//! ```
//! Entry `i` gets sequence number `sequence + i`. A range deletion has
//! `begin ≤ end` (`begin = end` deletes nothing).
//!
//! An entry for a column family other than the default (id 0) sets bit 7
//! of its type byte (`0x80 | type`) and puts `varint32 column_family_id`
//! right after it; the rest of the entry is unchanged. Batches that touch
//! only the default column family are encoded exactly as before.

use std::fmt;

use crate::coding::{decode_fixed32, decode_fixed64, get_length_prefixed, put_length_prefixed};
use crate::error::{Error, Result};
use crate::key::{SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::memtable::InsertHint;

/// Bytes of the rep header: fixed64 sequence ‖ fixed32 count.
const HEADER_LEN: usize = 12;

/// Bit of an entry's type byte meaning "a varint32 column family id
/// follows". On disk — never change.
const CF_FLAG: u8 = 0x80;

/// A set of updates applied atomically, in order: later entries for the same
/// key win.
///
/// Keys and values longer than `u32::MAX` bytes cannot be encoded; the
/// database rejects batches whose largest key or value exceeds its limits
/// before writing them.
///
/// Invariants:
/// 1. `rep` is always a valid rep: at least `HEADER_LEN` (12) bytes, and exactly
///    `count` well-formed entries follow the header (built by `put`/`delete`,
///    or checked by `from_rep`).
/// 2. `max_key_len` / `max_value_len` are the largest key / value lengths
///    among the entries (0 when there are none); a range deletion's begin
///    and end both count as keys.
/// 3. `inverted_range` is true iff some range deletion has `begin > end`
///    (only `delete_range` can add one; `Db::write` refuses such a batch).
/// 4. `has_cf` is true iff some entry names a column family other than 0.
/// 5. Each of `save_points` describes a prefix of `rep` (its length and
///    count, and invariants 2–4 over it), innermost last, in increasing
///    length.
/// 6. `hints` holds `(entry index, hint)` in increasing index order, every
///    index below `count`. Hints are not part of the encoded batch.
///
/// Column families: the `*_cf` methods add entries for a column family
/// ([`ColumnFamily`](crate::ColumnFamily)); the whole batch is still
/// applied atomically, across families.
#[derive(Clone)]
pub struct WriteBatch {
    rep: Vec<u8>,
    max_key_len: usize,
    max_value_len: usize,
    inverted_range: bool,
    has_cf: bool,
    /// Open save points (`set_save_point`), innermost last.
    save_points: Vec<SavePoint>,
    /// Insert hints of entries added with [`WriteBatch::put_hinted`].
    hints: Vec<(u32, InsertHint)>,
}

/// The state of a batch at [`WriteBatch::set_save_point`]: what
/// [`WriteBatch::rollback_to_save_point`] restores.
#[derive(Debug, Clone, Copy)]
struct SavePoint {
    rep_len: usize,
    count: u32,
    max_key_len: usize,
    max_value_len: usize,
    inverted_range: bool,
    has_cf: bool,
}

/// One decoded entry of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchEntry<'a> {
    /// The column family (0 = default).
    pub cf: u32,
    /// Value or deletion.
    pub value_type: ValueType,
    /// The user key.
    pub key: &'a [u8],
    /// The value; empty for deletions.
    pub value: &'a [u8],
}

/// One operation of a batch, as [`WriteBatch::ops`] yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// `put(key, value)`.
    Put {
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// `delete(key)`.
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// `delete_range(begin, end)`: every key in `[begin, end)`.
    DeleteRange {
        /// First key deleted.
        begin: &'a [u8],
        /// End of the range (not deleted).
        end: &'a [u8],
    },
    /// `merge(key, operand)`.
    Merge {
        /// The key.
        key: &'a [u8],
        /// The merge operand.
        operand: &'a [u8],
    },
}

impl Default for WriteBatch {
    fn default() -> WriteBatch {
        WriteBatch::new()
    }
}

impl fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("entries", &self.len())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::with_capacity(0)
    }

    /// An empty batch with room for `bytes` bytes of entries before it
    /// grows (RocksDB's `WriteBatch(reserved_bytes)`): an entry takes its
    /// key and value and a few bytes of header.
    pub fn with_capacity(bytes: usize) -> WriteBatch {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            max_key_len: 0,
            max_value_len: 0,
            inverted_range: false,
            has_cf: false,
            save_points: Vec::new(),
            hints: Vec::new(),
        }
    }

    /// Marks the batch's current state as a save point to return to with
    /// [`rollback_to_save_point`](Self::rollback_to_save_point) (RocksDB's
    /// `SetSavePoint`). Save points nest; they are not part of the
    /// encoded batch.
    pub fn set_save_point(&mut self) {
        self.save_points.push(SavePoint {
            rep_len: self.rep.len(),
            count: self.count(),
            max_key_len: self.max_key_len,
            max_value_len: self.max_value_len,
            inverted_range: self.inverted_range,
            has_cf: self.has_cf,
        });
    }

    /// Removes every entry added since the most recent save point, and
    /// that save point. [`Error::InvalidArgument`] if there is none.
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        let sp = self.pop_save_point_state()?;
        self.rep.truncate(sp.rep_len);
        self.set_count(sp.count);
        let kept = self.hints.partition_point(|&(i, _)| i < sp.count);
        self.hints.truncate(kept);
        self.max_key_len = sp.max_key_len;
        self.max_value_len = sp.max_value_len;
        self.inverted_range = sp.inverted_range;
        self.has_cf = sp.has_cf;
        Ok(())
    }

    /// Forgets the most recent save point, keeping the entries.
    /// [`Error::InvalidArgument`] if there is none.
    pub fn pop_save_point(&mut self) -> Result<()> {
        self.pop_save_point_state().map(drop)
    }

    fn pop_save_point_state(&mut self) -> Result<SavePoint> {
        self.save_points
            .pop()
            .ok_or_else(|| Error::InvalidArgument("the write batch has no save point".into()))
    }

    /// Starts an entry of `value_type` for column family `cf`.
    fn push_type(&mut self, cf: u32, value_type: ValueType) {
        if cf == 0 {
            self.rep.push(value_type as u8);
        } else {
            self.rep.push(CF_FLAG | value_type as u8);
            crate::coding::put_varint32(&mut self.rep, cf);
            self.has_cf = true;
        }
    }

    /// Adds `key → value` in column family `cf`.
    pub fn put_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) {
        self.put_in(cf.id(), key.as_ref(), value.as_ref());
    }

    /// Adds a deletion of `key` in column family `cf`.
    pub fn delete_cf(&mut self, cf: &crate::ColumnFamily, key: impl AsRef<[u8]>) {
        self.delete_in(cf.id(), key.as_ref());
    }

    /// Adds a merge operand for `key` in column family `cf` (read with that
    /// family's merge operator).
    pub fn merge_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) {
        self.merge_in(cf.id(), key.as_ref(), operand.as_ref());
    }

    /// Adds a range deletion of `[begin, end)` in column family `cf`
    /// (see [`delete_range`](Self::delete_range)).
    pub fn delete_range_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) {
        self.delete_range_in(cf.id(), begin.as_ref(), end.as_ref());
    }

    /// True if some entry is for a column family other than the default.
    pub(crate) fn has_column_families(&self) -> bool {
        self.has_cf
    }

    pub(crate) fn put_in(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.push_type(cf, ValueType::Value);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.max_key_len = self.max_key_len.max(key.len());
        self.max_value_len = self.max_value_len.max(value.len());
        self.set_count(self.count().wrapping_add(1));
    }

    pub(crate) fn delete_in(&mut self, cf: u32, key: &[u8]) {
        self.push_type(cf, ValueType::Deletion);
        put_length_prefixed(&mut self.rep, key);
        self.max_key_len = self.max_key_len.max(key.len());
        self.set_count(self.count().wrapping_add(1));
    }

    pub(crate) fn delete_range_in(&mut self, cf: u32, begin: &[u8], end: &[u8]) {
        self.push_type(cf, ValueType::RangeDeletion);
        put_length_prefixed(&mut self.rep, begin);
        put_length_prefixed(&mut self.rep, end);
        self.max_key_len = self.max_key_len.max(begin.len()).max(end.len());
        self.inverted_range |= begin > end;
        self.set_count(self.count().wrapping_add(1));
    }

    pub(crate) fn merge_in(&mut self, cf: u32, key: &[u8], operand: &[u8]) {
        self.push_type(cf, ValueType::Merge);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, operand);
        self.max_key_len = self.max_key_len.max(key.len());
        self.max_value_len = self.max_value_len.max(operand.len());
        self.set_count(self.count().wrapping_add(1));
    }

    /// Adds `key → value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_in(0, key.as_ref(), value.as_ref());
    }

    /// Adds `key → value` with where a read of `key` just found its place
    /// in the memtable ([`Db::multi_get_hinted`](crate::Db::multi_get_hinted)):
    /// the memtable links the entry from there instead of searching for it.
    /// The stored result is that of [`WriteBatch::put`]; a hint that no
    /// longer fits (another memtable, a newer version of `key` written
    /// since) is ignored.
    pub fn put_hinted(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        hint: Option<InsertHint>,
    ) {
        if let Some(h) = hint {
            self.hints.push((self.count(), h));
        }
        self.put_in(0, key.as_ref(), value.as_ref());
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.delete_in(0, key.as_ref());
    }

    /// Adds a deletion of every key in `[begin, end)` that exists when the
    /// batch is applied (keys the same batch writes later survive). One
    /// entry whatever the range covers. `begin = end` deletes nothing;
    /// `begin > end` makes [`Db::write`](crate::Db::write) refuse the batch
    /// with `InvalidArgument`.
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.delete_range_in(0, begin.as_ref(), end.as_ref());
    }

    /// Adds a merge operand for `key`: on reads it is combined with the
    /// key's older versions by the database's
    /// [`MergeOperator`](crate::MergeOperator) (`Options::merge_operator`).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.merge_in(0, key.as_ref(), operand.as_ref());
    }

    /// Removes every entry (keeps the allocation).
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
        self.max_key_len = 0;
        self.max_value_len = 0;
        self.inverted_range = false;
        self.has_cf = false;
        self.save_points.clear();
        self.hints.clear();
    }

    /// Number of entries (puts and deletes).
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// True if the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Size of the encoded batch in bytes (what the WAL record will carry).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// The encoded batch (the WAL record payload).
    /// The batch's operations in the order they were added (and are
    /// applied: a later operation on a key wins).
    pub fn ops(&self) -> impl Iterator<Item = BatchOp<'_>> + '_ {
        self.iter().map(|e| match e.value_type {
            ValueType::Deletion => BatchOp::Delete { key: e.key },
            ValueType::Value => BatchOp::Put {
                key: e.key,
                value: e.value,
            },
            ValueType::RangeDeletion => BatchOp::DeleteRange {
                begin: e.key,
                end: e.value,
            },
            ValueType::Merge => BatchOp::Merge {
                key: e.key,
                operand: e.value,
            },
        })
    }

    pub(crate) fn rep(&self) -> &[u8] {
        &self.rep
    }

    /// Sequence number of the first entry.
    pub(crate) fn sequence(&self) -> SequenceNumber {
        decode_fixed64(&self.rep[..8])
    }

    /// Sets the sequence number of the first entry (assigned by the writer).
    pub(crate) fn set_sequence(&mut self, seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Length of the longest key in the batch.
    pub(crate) fn max_key_len(&self) -> usize {
        self.max_key_len
    }

    /// Length of the longest value in the batch.
    pub(crate) fn max_value_len(&self) -> usize {
        self.max_value_len
    }

    /// True if a range deletion has `begin > end` (invariant 3).
    pub(crate) fn has_inverted_range(&self) -> bool {
        self.inverted_range
    }

    /// Decodes a rep read from a WAL record, validating all of it: the
    /// header, every entry, and that the count matches. `file` and `offset`
    /// (the record's) name the place in a [`Error::Corruption`].
    pub(crate) fn from_rep(data: Vec<u8>, file: &str, offset: u64) -> Result<WriteBatch> {
        let bad =
            |detail: String| Error::corruption(file, offset, format!("write batch: {detail}"));
        if data.len() < HEADER_LEN {
            return Err(bad(format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                data.len()
            )));
        }
        let count = decode_fixed32(&data[8..12]);
        // Entry i gets sequence + i, and every one must fit in the 56 bits
        // of an internal key's trailer.
        let sequence = decode_fixed64(&data[..8]);
        if count > 0 && sequence > MAX_SEQUENCE - (u64::from(count) - 1) {
            return Err(bad(format!(
                "sequence {sequence} with {count} entries runs past the largest sequence number {MAX_SEQUENCE}"
            )));
        }
        let (mut max_key_len, mut max_value_len) = (0, 0);
        let mut has_cf = false;
        let mut pos = HEADER_LEN;
        let mut found: u64 = 0;
        while pos < data.len() {
            let (entry, used) = decode_entry(&data[pos..])
                .map_err(|what| bad(format!("entry {found} at byte {pos}: {what}")))?;
            max_key_len = max_key_len.max(entry.key.len());
            has_cf |= entry.cf != 0;
            if entry.value_type == ValueType::RangeDeletion {
                // The writer never logs begin > end (Db::write refuses it).
                if entry.key > entry.value {
                    return Err(bad(format!(
                        "entry {found} at byte {pos}: range deletion begin \"{}\" after end \"{}\"",
                        entry.key.escape_ascii(),
                        entry.value.escape_ascii()
                    )));
                }
                max_key_len = max_key_len.max(entry.value.len());
            } else {
                max_value_len = max_value_len.max(entry.value.len());
            }
            pos += used;
            found += 1;
        }
        if found != u64::from(count) {
            return Err(bad(format!("header count {count} but {found} entries")));
        }
        Ok(WriteBatch {
            rep: data,
            max_key_len,
            max_value_len,
            inverted_range: false,
            has_cf,
            save_points: Vec::new(),
            hints: Vec::new(),
        })
    }

    /// The entries in order. The rep is valid (invariant 1), so decoding
    /// cannot fail.
    pub(crate) fn iter(&self) -> impl Iterator<Item = BatchEntry<'_>> + '_ {
        let mut rest = &self.rep[HEADER_LEN..];
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            match decode_entry(rest) {
                Ok((entry, used)) => {
                    rest = &rest[used..];
                    Some(entry)
                }
                Err(what) => {
                    debug_assert!(false, "invariant 1 broken: {what}");
                    None
                }
            }
        })
    }

    /// The entries' insert hints, `None` for those without one (in entry
    /// order; invariant 6).
    pub(crate) fn hints(&self) -> impl Iterator<Item = Option<InsertHint>> + '_ {
        let mut next = self.hints.iter().peekable();
        (0..self.count()).map(move |i| next.next_if(|&&(at, _)| at == i).map(|&(_, h)| h))
    }

    /// Appends `other`'s entries after this batch's (group commit builds one
    /// WAL record from several batches this way). The sequence is kept.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        let base = self.count();
        (self.hints).extend(other.hints.iter().map(|&(i, h)| (base.wrapping_add(i), h)));
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.set_count(self.count().wrapping_add(other.count()));
        self.max_key_len = self.max_key_len.max(other.max_key_len);
        self.max_value_len = self.max_value_len.max(other.max_value_len);
        self.inverted_range |= other.inverted_range;
        self.has_cf |= other.has_cf;
    }

    fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..12])
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }
}

/// Decodes the entry at the front of `src`: `(entry, bytes used)`.
fn decode_entry(src: &[u8]) -> std::result::Result<(BatchEntry<'_>, usize), String> {
    let (&tag, mut rest) = src.split_first().ok_or("empty entry")?;
    let mut used = 1;
    let mut cf = 0;
    if tag & CF_FLAG != 0 {
        let (id, n) =
            crate::coding::get_varint32(rest).ok_or("bad or truncated column family id")?;
        if id == 0 {
            // The writer encodes family 0 without the flag: one encoding per batch.
            return Err("column family id 0 with the column family flag".to_string());
        }
        cf = id;
        rest = &rest[n..];
        used += n;
    }
    let base = tag & !CF_FLAG;
    let value_type = ValueType::from_u8(base).ok_or_else(|| format!("unknown type {tag}"))?;
    let (key, key_used) = get_length_prefixed(rest).ok_or("bad or truncated key")?;
    used += key_used;
    let value = match value_type {
        ValueType::Value | ValueType::RangeDeletion | ValueType::Merge => {
            let (value, value_used) =
                get_length_prefixed(&rest[key_used..]).ok_or("bad or truncated value")?;
            used += value_used;
            value
        }
        ValueType::Deletion => &[][..],
    };
    Ok((
        BatchEntry {
            cf,
            value_type,
            key,
            value,
        },
        used,
    ))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Hints stay with their entries: through `append` (offset by the
    /// entries before) and a rollback (dropped with theirs).
    #[test]
    fn hints_follow_their_entries() {
        let h = |n| InsertHint {
            table: n,
            path: [0; crate::memtable::HINT_LEVELS],
        };
        let mut a = WriteBatch::new();
        a.put("a0", "v");
        a.put_hinted("a1", "v", Some(h(1)));
        a.set_save_point();
        a.put_hinted("a2", "v", Some(h(2)));
        a.rollback_to_save_point().unwrap();
        a.put_hinted("a2", "v", None);
        let mut b = WriteBatch::new();
        b.put_hinted("b0", "v", Some(h(3)));
        b.put("b1", "v");
        a.append(&b);
        let hints: Vec<Option<InsertHint>> = a.hints().collect();
        assert_eq!(hints, [None, Some(h(1)), None, Some(h(3)), None]);
        a.clear();
        a.put("c", "v");
        assert_eq!(a.hints().collect::<Vec<_>>(), [None]);
    }

    /// A rollback restores the entries, count and limits of the save
    /// point, innermost first; without one it is an error.
    #[test]
    fn save_points_roll_back_innermost_first() {
        let mut b = WriteBatch::new();
        assert!(matches!(
            b.rollback_to_save_point(),
            Err(Error::InvalidArgument(_))
        ));
        b.put(b"a", b"1");
        b.set_save_point();
        let outer = b.rep.clone();
        b.put(b"long key", b"a longer value");
        b.set_save_point();
        let inner = b.rep.clone();
        b.delete_range(b"z", b"a");
        b.delete(b"c");
        assert!(b.inverted_range);
        b.rollback_to_save_point().unwrap();
        assert_eq!(b.rep, inner);
        assert_eq!(b.len(), 2);
        assert!(!b.inverted_range);
        b.rollback_to_save_point().unwrap();
        assert_eq!(b.rep, outer);
        assert_eq!((b.len(), b.max_key_len, b.max_value_len), (1, 1, 1));
        assert!(b.rollback_to_save_point().is_err());
        // Popping keeps the entries.
        b.set_save_point();
        b.put(b"b", b"2");
        b.pop_save_point().unwrap();
        assert!(b.pop_save_point().is_err());
        assert_eq!(b.len(), 2);
        let keys: Vec<_> = b.iter().map(|e| e.key.to_vec()).collect();
        assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    }

    type Op = (bool, Vec<u8>, Vec<u8>);

    fn build(ops: &[Op]) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (is_put, k, v) in ops {
            if *is_put {
                b.put(k, v);
            } else {
                b.delete(k);
            }
        }
        b
    }

    fn entries(b: &WriteBatch) -> Vec<Op> {
        b.iter()
            .map(|e| {
                (
                    e.value_type == ValueType::Value,
                    e.key.to_vec(),
                    e.value.to_vec(),
                )
            })
            .collect()
    }

    fn normalize(ops: &[Op]) -> Vec<Op> {
        ops.iter()
            .map(|(p, k, v)| (*p, k.clone(), if *p { v.clone() } else { Vec::new() }))
            .collect()
    }

    fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            (
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..40),
                proptest::collection::vec(any::<u8>(), 0..300),
            ),
            0..30,
        )
    }

    /// `docs/format/wal.md` §5: an entry of column family 3 is
    /// `0x80 | type`, varint32 3, then the usual fields; family 0 is unflagged.
    #[test]
    fn column_family_entry_layout() {
        let mut b = WriteBatch::new();
        b.put_in(3, b"k", b"v");
        b.put_in(0, b"k", b"v");
        b.delete_in(300, b"d");
        assert!(b.has_column_families());
        assert_eq!(
            &b.rep()[HEADER_LEN..],
            &[0x81, 3, 1, b'k', 1, b'v', 1, 1, b'k', 1, b'v', 0x80, 0xac, 0x02, 1, b'd']
        );
        let again = WriteBatch::from_rep(b.rep().to_vec(), "wal", 0).unwrap();
        assert!(again.has_column_families());
        let cfs: Vec<u32> = again.iter().map(|e| e.cf).collect();
        assert_eq!(cfs, [3, 0, 300]);
        // The flag with family 0 is not a valid encoding.
        let mut bad = WriteBatch::new().rep().to_vec();
        bad[8] = 1;
        bad.extend_from_slice(&[0x81, 0, 1, b'k', 1, b'v']);
        assert!(WriteBatch::from_rep(bad, "wal", 0).is_err());
    }

    #[test]
    fn rep_layout() {
        let mut b = WriteBatch::new();
        b.put("k", "vv");
        b.delete("d");
        b.set_sequence(0x0102);
        assert_eq!(
            b.rep(),
            &[
                0x02, 0x01, 0, 0, 0, 0, 0, 0, // sequence
                2, 0, 0, 0, // count
                1, 1, b'k', 2, b'v', b'v', // put
                0, 1, b'd', // delete
            ][..]
        );
        assert_eq!(b.sequence(), 0x0102);
        assert_eq!((b.len(), b.approximate_size()), (2, 21));
        assert_eq!(
            format!("{b:?}"),
            "WriteBatch { sequence: 258, entries: 2, bytes: 21 }"
        );
    }

    #[test]
    fn clear_and_limits() {
        let mut b = WriteBatch::default();
        assert!(b.is_empty());
        b.put(vec![1u8; 10], vec![2u8; 500]);
        b.delete(vec![3u8; 20]);
        assert_eq!((b.max_key_len(), b.max_value_len()), (20, 500));
        assert!(!b.is_empty());
        b.clear();
        assert!(b.is_empty());
        assert_eq!(
            (b.max_key_len(), b.max_value_len(), b.approximate_size()),
            (0, 0, 12)
        );
        assert_eq!(b.iter().count(), 0);
    }

    #[test]
    fn append_concatenates_entries_and_keeps_the_sequence() {
        let mut a = build(&[(true, b"a".to_vec(), b"1".to_vec())]);
        a.set_sequence(7);
        let mut b = build(&[
            (false, b"b".to_vec(), vec![]),
            (true, b"c".to_vec(), vec![9; 64]),
        ]);
        b.set_sequence(100);
        a.append(&b);
        assert_eq!(a.sequence(), 7);
        assert_eq!(a.len(), 3);
        assert_eq!(a.max_value_len(), 64);
        assert_eq!(
            entries(&a),
            vec![
                (true, b"a".to_vec(), b"1".to_vec()),
                (false, b"b".to_vec(), vec![]),
                (true, b"c".to_vec(), vec![9; 64]),
            ]
        );
        let again = WriteBatch::from_rep(a.rep().to_vec(), "x.log", 0).unwrap();
        assert_eq!(again.rep(), a.rep());
    }

    #[test]
    fn merge_entries_round_trip_like_values() {
        let mut b = WriteBatch::new();
        b.merge("n", 1u64.to_le_bytes());
        b.put("a", "1");
        // Type 3, then key and operand laid out like a put's (wal.md §5).
        assert_eq!(&b.rep()[12..24], b"\x03\x01n\x08\x01\0\0\0\0\0\0\0");
        let again = WriteBatch::from_rep(b.rep().to_vec(), "x.log", 0).unwrap();
        let ops: Vec<BatchOp<'_>> = again.ops().collect();
        assert!(matches!(
            ops[0],
            BatchOp::Merge { key: b"n", operand } if operand == 1u64.to_le_bytes()
        ));
        assert!(matches!(ops[1], BatchOp::Put { key: b"a", .. }));
        assert_eq!(again.max_value_len(), 8);
    }

    #[test]
    fn rejects_bad_reps() {
        let mut b = WriteBatch::new();
        b.put("key", "value");
        b.delete("gone");
        let good = b.rep().to_vec();
        let err = |data: Vec<u8>| WriteBatch::from_rep(data, "000003.log", 77).unwrap_err();
        // Short header.
        let e = err(good[..11].to_vec());
        assert!(matches!(&e, Error::Corruption { file, offset: 77, .. } if file == "000003.log"));
        // Count too high / too low.
        let mut c = good.clone();
        c[8] = 3;
        assert!(err(c).to_string().contains("count 3 but 2 entries"));
        let mut c = good.clone();
        c[8] = 1;
        assert!(err(c).is_corruption());
        // Unknown entry type.
        let mut c = good.clone();
        c[12] = 4;
        assert!(err(c).to_string().contains("unknown type 4"));
        // Trailing garbage byte (an entry cut short).
        let mut c = good.clone();
        c.push(1);
        assert!(err(c).is_corruption());
        // Key length running past the end.
        let mut c = good.clone();
        c[13] = 100;
        assert!(err(c).is_corruption());
    }

    /// Found by the `write_batch` fuzz target: `from_rep` accepted a
    /// checksum-valid rep whose sequence number (or sequence + count - 1)
    /// exceeds the 56 bits a trailer holds, so recovery would have packed
    /// wrapped sequence numbers into internal keys (or overflowed `seq + 1`).
    #[test]
    fn fuzz_regression_sequence_past_56_bits_is_corruption() {
        let mut b = WriteBatch::new();
        b.put("key", "value");
        b.delete("gone");
        b.set_sequence(MAX_SEQUENCE - 1);
        assert!(WriteBatch::from_rep(b.rep().to_vec(), "f", 0).is_ok());
        b.set_sequence(MAX_SEQUENCE);
        let e = WriteBatch::from_rep(b.rep().to_vec(), "000005.log", 40).unwrap_err();
        assert!(matches!(&e, Error::Corruption { file, offset: 40, .. } if file == "000005.log"));
        assert!(e.to_string().contains("largest sequence number"), "{e}");
        b.set_sequence(u64::MAX);
        assert!(WriteBatch::from_rep(b.rep().to_vec(), "f", 0).is_err());
        // An empty batch uses no sequence number.
        let mut empty = WriteBatch::new();
        empty.set_sequence(u64::MAX);
        assert!(WriteBatch::from_rep(empty.rep().to_vec(), "f", 0).is_ok());
    }

    #[test]
    fn range_deletion_entries_encode_begin_and_end() {
        let mut b = WriteBatch::new();
        b.delete_range("a", "cc");
        b.put("k", "v");
        assert_eq!(
            &b.rep()[HEADER_LEN..],
            &[2, 1, b'a', 2, b'c', b'c', 1, 1, b'k', 1, b'v'][..]
        );
        assert_eq!((b.len(), b.max_key_len(), b.max_value_len()), (2, 2, 1));
        assert!(!b.has_inverted_range());
        assert_eq!(
            b.ops().collect::<Vec<_>>(),
            vec![
                BatchOp::DeleteRange {
                    begin: b"a",
                    end: b"cc"
                },
                BatchOp::Put {
                    key: b"k",
                    value: b"v"
                },
            ]
        );
        let d = WriteBatch::from_rep(b.rep().to_vec(), "f", 0).unwrap();
        assert_eq!((d.max_key_len(), d.max_value_len()), (2, 1));
        assert_eq!(d.ops().collect::<Vec<_>>(), b.ops().collect::<Vec<_>>());
        // Equal ends are a valid (empty) range; an inverted one is flagged.
        b.delete_range("m", "m");
        assert!(!b.has_inverted_range());
        let mut c = WriteBatch::new();
        c.delete_range("z", "a");
        assert!(c.has_inverted_range());
        b.append(&c);
        assert!(b.has_inverted_range());
        b.clear();
        assert!(!b.has_inverted_range());
    }

    #[test]
    fn logged_inverted_range_is_corruption() {
        let mut b = WriteBatch::new();
        b.put("x", "1");
        b.delete_range("z", "a");
        let e = WriteBatch::from_rep(b.rep().to_vec(), "000009.log", 64).unwrap_err();
        assert!(matches!(&e, Error::Corruption { file, offset: 64, .. } if file == "000009.log"));
        assert!(e.to_string().contains("entry 1"), "{e}");
        assert!(e.to_string().contains("after end"), "{e}");
    }

    #[test]
    fn every_truncation_is_rejected() {
        let b = build(&[
            (true, b"alpha".to_vec(), b"one".to_vec()),
            (false, b"beta".to_vec(), vec![]),
            (true, vec![], vec![]),
        ]);
        for n in 0..b.rep().len() {
            assert!(
                WriteBatch::from_rep(b.rep()[..n].to_vec(), "f", 0).is_err(),
                "prefix {n} accepted"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn round_trip(ops in ops_strategy(), seq in 0u64..(1 << 56) - 64) {
            let mut b = build(&ops);
            b.set_sequence(seq);
            prop_assert_eq!(b.len(), ops.len());
            prop_assert_eq!(entries(&b), normalize(&ops));
            let max_key = ops.iter().map(|o| o.1.len()).max().unwrap_or(0);
            let max_val = ops.iter().filter(|o| o.0).map(|o| o.2.len()).max().unwrap_or(0);
            prop_assert_eq!((b.max_key_len(), b.max_value_len()), (max_key, max_val));
            let d = WriteBatch::from_rep(b.rep().to_vec(), "f", 0).unwrap();
            prop_assert_eq!(d.sequence(), seq);
            prop_assert_eq!(d.rep(), b.rep());
            prop_assert_eq!((d.max_key_len(), d.max_value_len()), (max_key, max_val));
            prop_assert_eq!(entries(&d), normalize(&ops));
        }

        #[test]
        fn garbled_reps_are_rejected_or_decode_consistently(
            ops in ops_strategy(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        ) {
            let mut data = build(&ops).rep().to_vec();
            for (at, x) in flips {
                let p = at.index(data.len());
                data[p] ^= x;
            }
            // Garbage is either rejected or is itself a valid rep (a flip
            // can turn one key byte into another); never a panic. An
            // accepted rep iterates exactly its count of entries.
            if let Ok(d) = WriteBatch::from_rep(data.clone(), "f", 0) {
                prop_assert_eq!(d.iter().count(), d.len());
                prop_assert_eq!(d.rep(), &data[..]);
                let max_key = d
                    .iter()
                    .map(|e| match e.value_type {
                        ValueType::RangeDeletion => e.key.len().max(e.value.len()),
                        _ => e.key.len(),
                    })
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(d.max_key_len(), max_key);
                prop_assert!(d.iter().all(|e| e.value_type != ValueType::RangeDeletion || e.key <= e.value));
            }
        }
    }
}
