//! The SST range-deletion block (`docs/format/sst.md` §8): an interleaved
//! block, restart interval 1, of entries
//! `begin ‖ fixed64(seq << 8 | 2) → end`, in internal-key order
//! (begin ascending, then sequence descending), each with `begin < end`.

use std::sync::Arc;

use super::RangeTombstone;
use crate::error::{Error, Result};
use crate::key::{append_internal_key, compare_internal_keys, parse_internal_key, ValueType};
use crate::sst::block::builder::BlockBuilder;
use crate::sst::block::iter::collect_entries;
use crate::sst::block::{Block, KeyOrder};

/// Metaindex name of the range-deletion block. On disk — never change.
pub(crate) const RANGE_DEL_BLOCK_NAME: &str = "batchkv.range_del";

/// Sorts `ts` into the block's order: begin ascending, then newest first.
pub(crate) fn sort_for_block(ts: &mut [RangeTombstone]) {
    ts.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.seq.cmp(&a.seq)));
}

/// Encodes `ts` (sorted by [`sort_for_block`], each non-empty) as block
/// contents (no trailer).
pub(crate) fn encode(ts: &[RangeTombstone]) -> Vec<u8> {
    let mut b = BlockBuilder::new(1);
    let mut key = Vec::new();
    for t in ts {
        debug_assert!(t.begin < t.end, "empty tombstones are never stored");
        key.clear();
        append_internal_key(&mut key, &t.begin, t.seq, ValueType::RangeDeletion);
        b.add(&key, &t.end);
    }
    b.finish()
}

/// Decodes the block read from `file` at `offset`. Anything malformed — a
/// bad block, a key that is not a range-deletion internal key, `begin ≥
/// end`, entries out of order — is `Corruption` naming the file and offset.
pub(crate) fn decode(
    contents: Vec<u8>,
    file: Arc<str>,
    offset: u64,
) -> Result<Vec<RangeTombstone>> {
    let block = Block::new(contents, KeyOrder::Internal, file.clone(), offset)?;
    let entries = collect_entries(Arc::new(block))?;
    let mut out = Vec::with_capacity(entries.len());
    for (i, (key, end)) in entries.iter().enumerate() {
        let bad = |what: String| {
            Error::corruption(
                &*file,
                offset,
                format!("range-deletion block entry {i}: {what}"),
            )
        };
        let p = parse_internal_key(key).ok_or_else(|| bad("unparsable internal key".into()))?;
        if p.value_type != ValueType::RangeDeletion {
            return Err(bad(format!(
                "type {:?}, not a range deletion",
                p.value_type
            )));
        }
        if p.user_key >= end.as_slice() {
            return Err(bad(format!(
                "begin \"{}\" is not before end \"{}\"",
                p.user_key.escape_ascii(),
                end.escape_ascii()
            )));
        }
        if i > 0 && compare_internal_keys(&entries[i - 1].0, key).is_ge() {
            return Err(bad("entries out of order".into()));
        }
        out.push(RangeTombstone {
            begin: p.user_key.to_vec(),
            end: end.clone(),
            seq: p.sequence,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(b: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            begin: b.into(),
            end: e.into(),
            seq,
        }
    }

    #[test]
    fn round_trip_in_block_order() {
        let mut ts = vec![t("m", "p", 3), t("a", "c", 9), t("a", "z", 12)];
        sort_for_block(&mut ts);
        assert_eq!(ts, vec![t("a", "z", 12), t("a", "c", 9), t("m", "p", 3)]);
        let enc = encode(&ts);
        assert_eq!(decode(enc, "t.sst".into(), 0).unwrap(), ts);
        assert_eq!(decode(encode(&[]), "t.sst".into(), 0).unwrap(), vec![]);
    }

    /// `docs/format/sst.md` §8.
    #[test]
    fn worked_example_bytes() {
        #[rustfmt::skip]
        let want: &[u8] = &[
            0x00, 0x09, 0x01,
            b'a',
            0x02, 0x05, 0, 0, 0, 0, 0, 0,
            b'c',
            0, 0, 0, 0, 0x01, 0, 0, 0,
        ];
        assert_eq!(encode(&[t("a", "c", 5)]), want);
    }

    #[test]
    fn malformed_entries_are_corruption_naming_file_and_offset() {
        let check = |contents: Vec<u8>, want: &str| {
            let e = decode(contents, "000042.sst".into(), 1234).unwrap_err();
            assert!(
                matches!(&e, Error::Corruption { file, offset: 1234, .. } if file == "000042.sst"),
                "{e}"
            );
            assert!(e.to_string().contains(want), "{e} lacks {want:?}");
        };
        // begin ≥ end.
        check(encode(&[t("m", "m", 3)]), "not before end");
        let mut b = BlockBuilder::new(1);
        let mut k = Vec::new();
        append_internal_key(&mut k, b"z", 3, ValueType::RangeDeletion);
        b.add(&k, b"a");
        check(b.finish(), "not before end");
        // A point type.
        let mut b = BlockBuilder::new(1);
        let mut k = Vec::new();
        append_internal_key(&mut k, b"a", 3, ValueType::Value);
        b.add(&k, b"b");
        check(b.finish(), "not a range deletion");
        // Out of order.
        let mut b = BlockBuilder::new(1);
        for begin in [b"b", b"a"] {
            let mut k = Vec::new();
            append_internal_key(&mut k, begin, 3, ValueType::RangeDeletion);
            b.add(&k, b"c");
        }
        check(b.finish(), "out of order");
        // Garbage.
        let e = decode(vec![1, 2, 3], "000042.sst".into(), 1234).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
}
