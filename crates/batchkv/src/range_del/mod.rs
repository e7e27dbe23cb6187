//! Range tombstones (`delete_range`): the tombstone itself, the fragmented
//! form reads search, and the SST range-deletion block codec ([`block`]).
//!
//! # Semantics (RocksDB's)
//! A tombstone `[begin, end) @ T` deletes every point entry `(k, s)` with
//! `begin ≤ k < end` and `s < T`, for reads at a sequence ≥ `T`. Entries
//! written later (`s > T`) are visible again; reads at a snapshot `< T` do
//! not see the tombstone. Sequence numbers are unique, so `s = T` never
//! happens between a point entry and a tombstone.
//!
//! # Where tombstones live
//! - WAL: a batch entry of type [`ValueType::RangeDeletion`] (`docs/format/wal.md`).
//! - Memtables: beside the point entries, in
//!   [`crate::memtable::with_range_dels`] (not in the skip list / vectors).
//! - SSTs: the `batchkv.range_del` meta block (`docs/format/sst.md` §8);
//!   a table's smallest/largest keys cover its tombstones' extents.
//!
//! # Fragments
//! Overlapping tombstones are cut at every begin and end into disjoint
//! fragments, each with the descending list of sequence numbers of the
//! tombstones covering it, so "the newest tombstone covering `k` visible at
//! `seq`" is one binary search plus a short scan.
//!
//! [`ValueType::RangeDeletion`]: crate::key::ValueType::RangeDeletion

pub(crate) mod block;

use crate::coding::put_fixed64;
use crate::key::{append_internal_key, pack_trailer, SequenceNumber, ValueType, MAX_SEQUENCE};

/// One range tombstone: deletes user keys in `[begin, end)` written before
/// `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    /// First deleted user key (inclusive).
    pub begin: Vec<u8>,
    /// End of the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number of the `delete_range`.
    pub seq: SequenceNumber,
}

impl RangeTombstone {
    /// Bytes held, for memtable accounting.
    pub(crate) fn bytes(&self) -> usize {
        self.begin.len() + self.end.len() + 8
    }

    /// The part of this tombstone inside `[lo, hi)` (`None` = unbounded),
    /// if any.
    pub(crate) fn clip(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Option<RangeTombstone> {
        let begin = match lo {
            Some(lo) if lo > self.begin.as_slice() => lo,
            _ => &self.begin,
        };
        let end = match hi {
            Some(hi) if hi < self.end.as_slice() => hi,
            _ => &self.end,
        };
        (begin < end).then(|| RangeTombstone {
            begin: begin.to_vec(),
            end: end.to_vec(),
            seq: self.seq,
        })
    }
}

/// The smallest internal key a table holding `t` must claim: `begin`
/// with `t`'s trailer (a range-deletion internal key, as stored).
pub(crate) fn tombstone_start_key(t: &RangeTombstone) -> Vec<u8> {
    let mut k = Vec::with_capacity(t.begin.len() + 8);
    append_internal_key(&mut k, &t.begin, t.seq, ValueType::RangeDeletion);
    k
}

/// The largest internal key a table holding a tombstone that ends at `end`
/// (exclusive, non-empty) must claim.
///
/// - `end = x ‖ 0x00`: the tombstone covers exactly the user keys up to
///   `x`, so the bound is `x ‖ fixed64(0)` — the last internal key of `x`.
///   Compaction cuts output files at such ends, so adjacent files of a
///   level never claim the same user key.
/// - Otherwise there is no largest covered user key, so the bound is `end`
///   with the sentinel trailer `(MAX_SEQUENCE, RangeDeletion)` (RocksDB's
///   choice): it sorts before every real version of `end`, and the user-key
///   range `[.., end]` the table then claims is one key wider than needed —
///   harmless, since ranges are only compared for overlap.
pub(crate) fn tombstone_end_key(end: &[u8]) -> Vec<u8> {
    debug_assert!(!end.is_empty(), "an end is > its begin, so non-empty");
    let mut k = Vec::with_capacity(end.len() + 8);
    match end.split_last() {
        Some((0, x)) => {
            k.extend_from_slice(x);
            put_fixed64(&mut k, 0);
        }
        _ => {
            k.extend_from_slice(end);
            put_fixed64(&mut k, pack_trailer(MAX_SEQUENCE, ValueType::RangeDeletion));
        }
    }
    k
}

/// A disjoint piece `[begin, end)` of the key space and the sequence numbers
/// of every tombstone covering all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub begin: Vec<u8>,
    pub end: Vec<u8>,
    /// Descending, distinct, non-empty.
    pub seqs: Vec<SequenceNumber>,
}

/// Tombstones cut into fragments.
///
/// Invariants:
/// 1. Fragments are sorted by `begin`, each `begin < end`, and
///    `frags[i].end ≤ frags[i + 1].begin` (disjoint).
/// 2. Each fragment's `seqs` is non-empty, strictly descending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FragmentedTombstones {
    frags: Vec<Fragment>,
}

impl FragmentedTombstones {
    /// Fragments `tombstones` (empty ranges are ignored).
    pub(crate) fn new<'a>(
        tombstones: impl IntoIterator<Item = &'a RangeTombstone>,
    ) -> FragmentedTombstones {
        let mut ts: Vec<&RangeTombstone> =
            tombstones.into_iter().filter(|t| t.begin < t.end).collect();
        if ts.is_empty() {
            return FragmentedTombstones::default();
        }
        ts.sort_by(|a, b| a.begin.cmp(&b.begin));
        let mut points: Vec<&[u8]> = ts
            .iter()
            .flat_map(|t| [t.begin.as_slice(), t.end.as_slice()])
            .collect();
        points.sort_unstable();
        points.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        // Tombstones begun at or before the current point: (end, seq).
        let mut active: Vec<(&[u8], SequenceNumber)> = Vec::new();
        let mut next = 0;
        for w in points.windows(2) {
            let (p, q) = (w[0], w[1]);
            active.retain(|&(end, _)| end > p);
            while next < ts.len() && ts[next].begin.as_slice() <= p {
                active.push((&ts[next].end, ts[next].seq));
                next += 1;
            }
            if active.is_empty() {
                continue;
            }
            // Every active tombstone begins ≤ p and ends > p, so at or
            // after q (the next boundary): it covers all of [p, q).
            let mut seqs: Vec<SequenceNumber> = active.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            match frags.last_mut() {
                Some(last) if last.end.as_slice() == p && last.seqs == seqs => {
                    last.end = q.to_vec();
                }
                _ => frags.push(Fragment {
                    begin: p.to_vec(),
                    end: q.to_vec(),
                    seqs,
                }),
            }
        }
        let f = FragmentedTombstones { frags };
        debug_assert!(f.check().is_ok(), "{:?}", f.check());
        f
    }

    /// True if there are no fragments.
    pub(crate) fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragments, in key order.
    #[cfg(test)]
    pub(crate) fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// The fragment containing `key`, if any.
    fn fragment_at(&self, key: &[u8]) -> Option<&Fragment> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.begin.as_slice() <= key)
    }

    /// The largest sequence `≤ read_seq` of a tombstone covering `key`, or 0
    /// if none does (real sequence numbers start at 1). A point entry of
    /// `key` with a smaller sequence is deleted for a read at `read_seq`.
    #[inline]
    pub(crate) fn max_covering(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        match self.fragment_at(key) {
            Some(f) => f.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0),
            None => 0,
        }
    }

    /// The smallest sequence `> seq` of a tombstone covering `key` (what
    /// compaction compares with the snapshots between the two).
    pub(crate) fn smallest_covering_above(
        &self,
        key: &[u8],
        seq: SequenceNumber,
    ) -> Option<SequenceNumber> {
        self.fragment_at(key)?
            .seqs
            .iter()
            .rev()
            .copied()
            .find(|&s| s > seq)
    }

    /// Checks invariants 1 and 2.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        for f in &self.frags {
            if f.begin >= f.end {
                return Err(format!("empty fragment {:?}", f.begin));
            }
            if f.seqs.is_empty() || !f.seqs.windows(2).all(|w| w[0] > w[1]) {
                return Err(format!("bad sequence list {:?}", f.seqs));
            }
        }
        if let Some(w) = self.frags.windows(2).find(|w| w[0].end > w[1].begin) {
            return Err(format!("fragments overlap at {:?}", w[1].begin));
        }
        Ok(())
    }
}

/// The range tombstones of one table: as stored, and fragmented for reads.
#[derive(Debug, Default)]
pub(crate) struct TableRangeDels {
    /// As written (what compaction re-writes), sorted by (begin, seq desc).
    pub tombstones: Vec<RangeTombstone>,
    pub fragmented: FragmentedTombstones,
}

impl TableRangeDels {
    pub(crate) fn new(tombstones: Vec<RangeTombstone>) -> TableRangeDels {
        let fragmented = FragmentedTombstones::new(&tombstones);
        TableRangeDels {
            tombstones,
            fragmented,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn t(b: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            begin: b.into(),
            end: e.into(),
            seq,
        }
    }

    #[test]
    fn overlapping_tombstones_become_disjoint_fragments() {
        let f = FragmentedTombstones::new(&[t("a", "e", 5), t("c", "g", 9), t("x", "x", 3)]);
        let got: Vec<(String, String, Vec<u64>)> = f
            .fragments()
            .iter()
            .map(|f| {
                (
                    String::from_utf8(f.begin.clone()).unwrap(),
                    String::from_utf8(f.end.clone()).unwrap(),
                    f.seqs.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a".into(), "c".into(), vec![5]),
                ("c".into(), "e".into(), vec![9, 5]),
                ("e".into(), "g".into(), vec![9]),
            ]
        );
        assert_eq!(f.max_covering(b"b", 100), 5);
        assert_eq!(f.max_covering(b"d", 100), 9);
        assert_eq!(f.max_covering(b"d", 8), 5, "a read at 8 does not see @9");
        assert_eq!(f.max_covering(b"d", 4), 0);
        assert_eq!(f.max_covering(b"g", 100), 0, "end is exclusive");
        assert_eq!(f.max_covering(b"", 100), 0);
        assert_eq!(f.smallest_covering_above(b"d", 2), Some(5));
        assert_eq!(f.smallest_covering_above(b"d", 6), Some(9));
        assert_eq!(f.smallest_covering_above(b"d", 9), None);
    }

    #[test]
    fn adjacent_fragments_with_equal_seqs_merge() {
        let f = FragmentedTombstones::new(&[t("a", "c", 4), t("c", "e", 4), t("a", "e", 4)]);
        assert_eq!(f.fragments().len(), 1);
        assert_eq!(
            (&f.fragments()[0].begin[..], &f.fragments()[0].end[..]),
            (&b"a"[..], &b"e"[..])
        );
    }

    #[test]
    fn table_bounds_cover_the_tombstone_and_no_more_than_one_key_beyond() {
        use crate::key::{compare_internal_keys, user_key};
        let x = t("b", "k\0", 7);
        assert_eq!(user_key(&tombstone_start_key(&x)), b"b");
        let end = tombstone_end_key(&x.end);
        assert_eq!(user_key(&end), b"k", "exact: k is the last key covered");
        // Every version of k sorts at or before the bound.
        let mut k0 = Vec::new();
        append_internal_key(&mut k0, b"k", 0, ValueType::Deletion);
        assert!(compare_internal_keys(&k0, &end).is_le());
        let end = tombstone_end_key(b"m");
        assert_eq!(user_key(&end), b"m");
        let mut m_newest = Vec::new();
        append_internal_key(&mut m_newest, b"m", MAX_SEQUENCE, ValueType::Value);
        assert!(
            compare_internal_keys(&end, &m_newest).is_lt(),
            "before any real m"
        );
    }

    #[test]
    fn clip_keeps_the_intersection() {
        let x = t("b", "m", 7);
        assert_eq!(x.clip(Some(b"c"), Some(b"d")), Some(t("c", "d", 7)));
        assert_eq!(x.clip(None, Some(b"b")), None);
        assert_eq!(x.clip(Some(b"m"), None), None);
        assert_eq!(x.clip(Some(b"a"), Some(b"z")), Some(x.clone()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// `max_covering` agrees with a scan of the unfragmented tombstones.
        #[test]
        fn fragments_answer_like_the_raw_tombstones(
            raw in proptest::collection::vec((0u8..12, 0u8..12, 1u64..20), 0..12),
            probes in proptest::collection::vec((0u8..13, 0u64..22), 1..30),
        ) {
            let ts: Vec<RangeTombstone> = raw
                .iter()
                .map(|&(b, e, s)| RangeTombstone { begin: vec![b], end: vec![e], seq: s })
                .collect();
            let f = FragmentedTombstones::new(&ts);
            prop_assert_eq!(f.check(), Ok(()));
            for (k, read) in probes {
                let k = [k];
                let want = ts
                    .iter()
                    .filter(|t| t.begin.as_slice() <= &k[..] && &k[..] < t.end.as_slice() && t.seq <= read)
                    .map(|t| t.seq)
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(f.max_covering(&k, read), want);
                let above = ts
                    .iter()
                    .filter(|t| t.begin.as_slice() <= &k[..] && &k[..] < t.end.as_slice() && t.seq > read)
                    .map(|t| t.seq)
                    .min();
                prop_assert_eq!(f.smallest_covering_above(&k, read), above);
            }
        }
    }
}
