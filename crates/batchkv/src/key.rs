//! Internal keys: a user key followed by an 8-byte trailer.
//!
//! Format (on disk in WAL batches, SST files and memtables — never change):
//! `user_key ‖ fixed64_le(sequence << 8 | value_type)`.
//!
//! Order: user key ascending (bytewise), then trailer **descending**, so the
//! newest version of a user key comes first. A lookup for `(key, snapshot)`
//! searches for `key ‖ (snapshot << 8 | 0xff)` ([`lookup_key`]): the first
//! entry at or after it with the same user key is the visible version.

use std::cmp::Ordering;

use crate::coding::{decode_fixed64, put_fixed64};

/// A write's position in the global write order. Only the low 56 bits are
/// usable (the trailer keeps 8 bits for the value type).
pub type SequenceNumber = u64;

/// The largest sequence number that fits in a trailer.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// Type byte for lookup keys: sorts before (is "newer" than) every real type
/// of the same sequence number.
const LOOKUP_TYPE: u8 = 0xff;

/// What an entry records about its user key. On disk — never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueType {
    /// A tombstone: the key is deleted as of this sequence number.
    Deletion = 0,
    /// A value.
    Value = 1,
    /// A range tombstone: deletes every user key in `[user_key, value)` as
    /// of this sequence number. Lives in WAL batches, memtables' range
    /// tombstone lists and SST range-deletion blocks, never among point
    /// entries (a data block or memtable entry of this type is corruption).
    RangeDeletion = 2,
    /// A merge operand: combined with the key's older versions by the
    /// database's [`MergeOperator`](crate::MergeOperator) on reads and in
    /// compaction (`docs/design.md` §11).
    Merge = 3,
}

impl ValueType {
    /// Decodes a type byte; `None` for bytes this version does not know.
    #[inline]
    pub fn from_u8(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            2 => Some(ValueType::RangeDeletion),
            3 => Some(ValueType::Merge),
            _ => None,
        }
    }

    /// The name inspection tools print: `value`, `deletion`,
    /// `range_deletion` or `merge`.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Deletion => "deletion",
            ValueType::Value => "value",
            ValueType::RangeDeletion => "range_deletion",
            ValueType::Merge => "merge",
        }
    }
}

/// Packs a sequence number and type into a trailer word.
#[inline]
pub fn pack_trailer(seq: SequenceNumber, t: ValueType) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | t as u64
}

/// Appends the internal key `user_key ‖ trailer(seq, t)` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SequenceNumber, t: ValueType) {
    dst.extend_from_slice(user_key);
    put_fixed64(dst, pack_trailer(seq, t));
}

/// Builds the search key that finds the newest version of `user_key` visible
/// at snapshot `seq`.
#[inline]
pub fn lookup_key(user_key: &[u8], seq: SequenceNumber) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    k.extend_from_slice(user_key);
    put_fixed64(&mut k, (seq << 8) | u64::from(LOOKUP_TYPE));
    k
}

/// The user-key part of an internal key. Panics on keys shorter than the
/// trailer: callers validate decoded keys with [`parse_internal_key`] first.
#[inline]
pub fn user_key(internal_key: &[u8]) -> &[u8] {
    &internal_key[..internal_key.len() - TRAILER_LEN]
}

/// The trailer word of an internal key (see [`user_key`] for the length rule).
#[inline]
pub fn trailer(internal_key: &[u8]) -> u64 {
    decode_fixed64(&internal_key[internal_key.len() - TRAILER_LEN..])
}

/// A decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub sequence: SequenceNumber,
    /// Value or deletion.
    pub value_type: ValueType,
}

/// Decodes an internal key; `None` if it is too short or has an unknown type.
#[inline]
pub fn parse_internal_key(internal_key: &[u8]) -> Option<ParsedInternalKey<'_>> {
    if internal_key.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(internal_key);
    Some(ParsedInternalKey {
        user_key: user_key(internal_key),
        sequence: t >> 8,
        value_type: ValueType::from_u8(t as u8)?,
    })
}

/// Bytewise comparison (the order of `<[u8] as Ord>`), eight bytes at a
/// time as big-endian words: inlined, it beats a call to libc `memcmp` on
/// the short keys of the read paths (16-byte keys: two word compares).
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (a8, b8) = (&a[..n], &b[..n]);
    let mut i = 0;
    while i + 8 <= n {
        // `i + 8 <= n`: both conversions are of exactly 8 bytes and cannot
        // fail (the default is never taken; the optimiser drops it).
        let x = u64::from_be_bytes(a8[i..i + 8].try_into().unwrap_or_default());
        let y = u64::from_be_bytes(b8[i..i + 8].try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a8[i] != b8[i] {
            return a8[i].cmp(&b8[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// Length of the common prefix of `a` and `b`, eight bytes at a time, the
/// tail (under 8 bytes) as the last 8 bytes, overlapping ones already found
/// equal (the block builder's shared-prefix count for every key it adds,
/// the block reader's point scan, and `multi_get`'s sort of a batch).
/// Always inlined: the scan's inner loop.
#[inline(always)]
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (a8, _) = a.as_chunks::<8>();
    let (b8, _) = b.as_chunks::<8>();
    let mut i = 0;
    for (x, y) in a8.iter().zip(b8) {
        let diff = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if diff != 0 {
            // Little-endian: the lowest set bit is in the first differing byte.
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    if i == n {
        return n;
    }
    if let (Some(x), Some(y)) = (a.last_chunk::<8>(), b.last_chunk::<8>()) {
        // Bytes `n - 8 .. i` are equal: the first difference in this word
        // is at or after `i`.
        return match u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y) {
            0 => n,
            d => n - 8 + (d.trailing_zeros() / 8) as usize,
        };
    }
    i + a[i..]
        .iter()
        .zip(&b[i..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Compares two internal keys: user key ascending, then trailer descending.
#[inline]
pub fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// Compares an internal key against a `(user_key, trailer)` pair without
/// building the second key. Always inlined: it is the skip-list search's
/// inner loop, and left to the optimiser it became a call (41
/// instructions per step, +375 per memtable `get`; callgrind,
/// docs/perf/history/2026-11-28-lookup-core.md).
#[inline(always)]
pub fn compare_internal_key_parts(a: &[u8], b_user: &[u8], b_trailer: u64) -> Ordering {
    match compare_bytes(user_key(a), b_user) {
        Ordering::Equal => b_trailer.cmp(&trailer(a)),
        o => o,
    }
}

/// The trailer a lookup at snapshot `seq` searches for (see module docs).
#[inline]
pub fn lookup_trailer(seq: SequenceNumber) -> u64 {
    (seq << 8) | u64::from(LOOKUP_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_len_counts_equal_leading_bytes() {
        let samples: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgi",
            b"abcdefghijklmnop",
            b"abcdefghijklmnoq",
            b"abcdefghijklmnopqrs",
            b"abcdefghXjklmnop",
            b"b",
        ];
        for a in &samples {
            for b in &samples {
                let want = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
                assert_eq!(common_prefix_len(a, b), want, "{a:?} vs {b:?}");
            }
        }
        // The tail compared as the last 8 (overlapping) bytes.
        assert_eq!(common_prefix_len(b"abcdefghijk", b"abcdefghijX"), 10);
        assert_eq!(common_prefix_len(b"abcdefghiJk", b"abcdefghijk"), 9);
        assert_eq!(common_prefix_len(b"abcdefghi", b"abcdefghiXYZ"), 9);
        assert_eq!(common_prefix_len(b"abcdefg", b"abcdXfg"), 4);
    }

    proptest::proptest! {
        /// On keys over a two-letter alphabet (long equal prefixes), the
        /// word-at-a-time count is the byte-by-byte one.
        #[test]
        fn common_prefix_len_is_the_bytewise_count(
            a in proptest::collection::vec(0u8..2, 0..40),
            b in proptest::collection::vec(0u8..2, 0..40),
            shared in proptest::collection::vec(0u8..2, 0..40),
        ) {
            let a: Vec<u8> = shared.iter().chain(&a).copied().collect();
            let b: Vec<u8> = shared.iter().chain(&b).copied().collect();
            let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            proptest::prop_assert_eq!(common_prefix_len(&a, &b), want);
        }
    }

    #[test]
    fn compare_bytes_is_slice_order() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0xff],
            b"abcdefgh".to_vec(),
            b"abcdefgh\x00".to_vec(),
            b"abcdefgi".to_vec(),
            b"abcdefghijklmnop".to_vec(),
            b"abcdefghijklmnoq".to_vec(),
            b"abcdefghijklmno".to_vec(),
            b"abcdefghijklmnop\x80".to_vec(),
            vec![0x80; 17],
            vec![0x7f; 17],
            vec![0x80; 9],
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    fn ik(k: &[u8], seq: u64, t: ValueType) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, t);
        v
    }

    #[test]
    fn newer_versions_sort_first() {
        let a5 = ik(b"a", 5, ValueType::Value);
        let a3 = ik(b"a", 3, ValueType::Deletion);
        let b9 = ik(b"b", 9, ValueType::Value);
        assert_eq!(compare_internal_keys(&a5, &a3), Ordering::Less);
        assert_eq!(compare_internal_keys(&a3, &b9), Ordering::Less);
        assert_eq!(compare_internal_keys(&a5, &a5), Ordering::Equal);
    }

    #[test]
    fn lookup_key_sorts_before_versions_it_can_see() {
        let look = lookup_key(b"a", 5);
        assert_eq!(
            compare_internal_keys(&look, &ik(b"a", 5, ValueType::Value)),
            Ordering::Less
        );
        assert_eq!(
            compare_internal_keys(&look, &ik(b"a", 6, ValueType::Value)),
            Ordering::Greater
        );
        assert_eq!(
            compare_internal_key_parts(&ik(b"a", 5, ValueType::Deletion), b"a", lookup_trailer(5)),
            Ordering::Greater
        );
    }

    #[test]
    fn parse_round_trip_and_rejects_unknown_types() {
        let k = ik(b"key", 42, ValueType::Deletion);
        let p = parse_internal_key(&k).unwrap();
        assert_eq!(
            (p.user_key, p.sequence, p.value_type),
            (&b"key"[..], 42, ValueType::Deletion)
        );
        let mut bad = k.clone();
        let n = bad.len();
        bad[n - 8] = 7;
        assert_eq!(parse_internal_key(&bad), None);
        bad[n - 8] = 4;
        assert_eq!(parse_internal_key(&bad), None);
        assert_eq!(parse_internal_key(b"short"), None);
    }
}
