//! Block round trips (property-based) and rejection of malformed blocks.

use std::cmp::Ordering;
use std::sync::Arc;

use proptest::prelude::*;

use super::builder::BlockBuilder;
use super::iter::BlockIter;
use super::{Block, KeyOrder};
use crate::coding::put_fixed32;
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, compare_internal_keys, ValueType};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn build(entries: &Entries, interval: usize) -> Arc<Block> {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    Arc::new(Block::new(b.finish(), KeyOrder::Internal, "test".into(), 0).unwrap())
}

/// Sorted, distinct internal keys: few distinct user keys (some empty, some
/// long) with several versions each, values possibly empty.
fn entries_strategy() -> impl Strategy<Value = Entries> {
    let user_key = prop_oneof![
        Just(Vec::new()),
        proptest::collection::vec(0u8..4, 0..4),
        proptest::collection::vec(any::<u8>(), 0..300),
    ];
    let entry = (
        user_key,
        0u64..6,
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..40),
    );
    proptest::collection::vec(entry, 0..120).prop_map(|raw| {
        let mut v: Entries = raw
            .into_iter()
            .map(|(uk, seq, del, val)| {
                let mut k = Vec::new();
                let t = if del {
                    ValueType::Deletion
                } else {
                    ValueType::Value
                };
                append_internal_key(&mut k, &uk, seq, t);
                (k, val)
            })
            .collect();
        v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        // Same user key and sequence with different types are distinct keys; keep them.
        v.dedup_by(|a, b| a.0 == b.0);
        v
    })
}

fn collect_forward(it: &mut BlockIter) -> Entries {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

fn collect_backward(it: &mut BlockIter) -> Entries {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}

/// Targets: every key, and keys just before/after every key.
fn targets(entries: &Entries) -> Vec<Vec<u8>> {
    let mut t = Vec::new();
    for (k, _) in entries {
        t.push(k.clone());
        let n = k.len();
        let trailer = u64::from_le_bytes(k[n - 8..].try_into().unwrap());
        for tr in [trailer.wrapping_add(1), trailer.wrapping_sub(1)] {
            let mut x = k[..n - 8].to_vec();
            x.extend_from_slice(&tr.to_le_bytes());
            t.push(x);
        }
        let mut longer = k[..n - 8].to_vec();
        longer.push(0);
        longer.extend_from_slice(&k[n - 8..]);
        t.push(longer);
    }
    let mut empty = Vec::new();
    append_internal_key(&mut empty, b"", 1000, ValueType::Value);
    t.push(empty);
    let mut big = Vec::new();
    append_internal_key(&mut big, &[0xff; 400], 0, ValueType::Deletion);
    t.push(big);
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn block_round_trip(entries in entries_strategy(), interval in 1usize..=32) {
        let block = build(&entries, interval);
        let mut it = BlockIter::new(block);
        prop_assert_eq!(&collect_forward(&mut it), &entries);
        prop_assert_eq!(&collect_backward(&mut it), &entries);
        for t in targets(&entries) {
            // seek: first entry >= t
            let want = entries.iter().position(|(k, _)| compare_internal_keys(k, &t) != Ordering::Less);
            it.seek(&t);
            match want {
                Some(i) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), &entries[i].0[..]);
                    prop_assert_eq!(it.value(), &entries[i].1[..]);
                    // Step back and forth from here.
                    it.prev();
                    if i == 0 {
                        prop_assert!(!it.valid());
                    } else {
                        prop_assert_eq!(it.key(), &entries[i - 1].0[..]);
                        it.next();
                        prop_assert_eq!(it.key(), &entries[i].0[..]);
                    }
                }
                None => prop_assert!(!it.valid()),
            }
            // seek_for_prev: last entry <= t
            let want = entries.iter().rposition(|(k, _)| compare_internal_keys(k, &t) != Ordering::Greater);
            it.seek_for_prev(&t);
            match want {
                Some(i) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), &entries[i].0[..]);
                    prop_assert_eq!(it.value(), &entries[i].1[..]);
                }
                None => prop_assert!(!it.valid()),
            }
        }
        prop_assert!(it.status().is_ok());
    }
}

fn small_block() -> Vec<u8> {
    let mut b = BlockBuilder::new(2);
    for (i, k) in [
        &b"apple"[..],
        b"apricot",
        b"banana",
        b"blueberry",
        b"cherry",
    ]
    .iter()
    .enumerate()
    {
        let mut ik = Vec::new();
        append_internal_key(&mut ik, k, 10 - i as u64, ValueType::Value);
        b.add(&ik, b"v");
    }
    b.finish()
}

fn open(bytes: Vec<u8>) -> crate::Result<Block> {
    Block::new(bytes, KeyOrder::Internal, "f.sst".into(), 4096)
}

#[test]
fn rejects_reserved_and_separated_footer_bits() {
    for bit in [28u32, 29, 30, 31] {
        let mut bytes = small_block();
        let n = bytes.len();
        bytes[n - 1] |= (1u32 << bit >> 24) as u8;
        let err = open(bytes).unwrap_err();
        assert!(err.is_corruption());
        assert!(
            err.to_string().contains("unrecognized block feature"),
            "{err}"
        );
        assert!(err.to_string().contains("f.sst"), "{err}");
    }
}

#[test]
fn rejects_bad_restart_arrays() {
    // Restart count larger than the block.
    let mut bytes = small_block();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&1000u32.to_le_bytes());
    assert!(open(bytes).unwrap_err().is_corruption());
    // Zero restarts.
    let mut bytes = small_block();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&0u32.to_le_bytes());
    assert!(open(bytes).unwrap_err().is_corruption());
    // A restart offset past the entries.
    let mut bytes = small_block();
    let n = bytes.len();
    bytes[n - 8..n - 4].copy_from_slice(&5000u32.to_le_bytes());
    assert!(open(bytes).unwrap_err().is_corruption());
    // Too short for any footer.
    assert!(open(vec![1, 0, 0]).unwrap_err().is_corruption());
}

#[test]
fn malformed_entries_surface_as_corruption_not_panics() {
    // An entry whose value length runs past the entries.
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&[0, 9, 200]); // shared 0, non_shared 9, value_len 200
    bytes.extend_from_slice(b"k\x01\0\0\0\0\0\0\0");
    put_fixed32(&mut bytes, 0);
    put_fixed32(&mut bytes, 1);
    let mut it = BlockIter::new(Arc::new(open(bytes).unwrap()));
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().unwrap_err().is_corruption());
    // Sticky: later calls keep the error and stay invalid.
    it.seek_to_last();
    assert!(!it.valid() && it.status().is_err());

    // A key shorter than an internal-key trailer.
    let mut bytes = vec![0, 3, 0];
    bytes.extend_from_slice(b"abc");
    put_fixed32(&mut bytes, 0);
    put_fixed32(&mut bytes, 1);
    let mut it = BlockIter::new(Arc::new(open(bytes).unwrap()));
    it.seek(b"anything-at-all");
    assert!(it.status().unwrap_err().is_corruption());

    // Every truncation and every single-byte change of a real block either
    // fails to parse, reports corruption, or decodes without panicking.
    let good = small_block();
    for cut in 0..good.len() {
        if let Ok(b) = open(good[..cut].to_vec()) {
            let mut it = BlockIter::new(Arc::new(b));
            let _ = collect_forward(&mut it);
            let _ = collect_backward(&mut it);
        }
    }
    for i in 0..good.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= x;
            if let Ok(b) = open(bad) {
                let mut it = BlockIter::new(Arc::new(b));
                let _ = collect_forward(&mut it);
                let _ = collect_backward(&mut it);
                it.seek(b"banana\0\0\0\0\0\0\0\0");
            }
        }
    }
}

#[test]
fn empty_block_is_valid_and_empty() {
    let mut b = BlockBuilder::new(16);
    let bytes = b.finish();
    assert_eq!(bytes.len(), 8);
    let mut it = BlockIter::new(Arc::new(open(bytes).unwrap()));
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek_for_prev(b"zzzzzzzzzzzz");
    assert!(!it.valid());
    assert!(it.status().is_ok());
}
