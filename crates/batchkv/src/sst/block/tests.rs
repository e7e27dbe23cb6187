//! Block round trips (property-based) and rejection of malformed blocks.

use std::cmp::Ordering;
use std::sync::Arc;

use proptest::prelude::*;

use super::builder::BlockBuilder;
use super::fences::IndexFences;
use super::iter::{
    point_scan_agrees, search_restart, search_restarts, seek_entry, seek_entry_after,
    seek_entry_from_restart, BlockIter, ScanStop,
};
use super::{Block, KeyOrder, Layout};
use crate::coding::put_fixed32;
use crate::iter::{scan_backward, scan_forward, InternalIterator};
use crate::key::{append_internal_key, compare_internal_keys, ValueType};
use crate::sst::format::BlockHandle;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn build_bytes(entries: &Entries, interval: usize, layout: Layout) -> Vec<u8> {
    let mut b = BlockBuilder::with_layout(interval, layout);
    for (k, v) in entries {
        b.add(k, v);
    }
    let estimate = b.estimated_size();
    let bytes = b.finish();
    assert_eq!(estimate, bytes.len());
    bytes
}

fn build(entries: &Entries, interval: usize, layout: Layout) -> Arc<Block> {
    let bytes = build_bytes(entries, interval, layout);
    Arc::new(Block::new_data(bytes, interval, "test".into(), 0).unwrap())
}

fn layout_strategy() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::Interleaved), Just(Layout::Separated)]
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

/// Forward scan that also checks which entries are restart points.
fn check_restart_points(it: &mut BlockIter, interval: usize) {
    it.seek_to_first();
    let mut i = 0usize;
    while it.valid() {
        assert_eq!(it.at_restart(), i.is_multiple_of(interval), "entry {i}");
        i += 1;
        it.next();
    }
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
    fn block_round_trip(
        entries in entries_strategy(),
        interval in 1usize..=32,
        layout in layout_strategy(),
    ) {
        let block = build(&entries, interval, layout);
        let mut it = BlockIter::new(block);
        check_restart_points(&mut it, interval);
        prop_assert_eq!(&scan_forward(&mut it), &entries);
        prop_assert_eq!(&scan_backward(&mut it), &entries);
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

    /// The lockstep searches land where `seek` does, for every target of
    /// two blocks searched together (so searches of different depths and
    /// blocks share rounds).
    #[test]
    fn lockstep_restart_search_matches_seek(
        entries in entries_strategy(),
        other in entries_strategy(),
        interval in 1usize..=32,
        layout in layout_strategy(),
    ) {
        let blocks = [build(&entries, interval, layout), build(&other, interval.div_ceil(3), layout)];
        let ts = [targets(&entries), targets(&other)];
        let searches: Vec<(&Block, &[u8])> = (0..2)
            .flat_map(|b| ts[b].iter().map(move |t| (b, t.as_slice())))
            .map(|(b, t)| (&*blocks[b], t))
            .collect();
        let restarts = search_restarts(&searches);
        prop_assert_eq!(restarts.len(), searches.len());
        let mut n = 0;
        for (b, block) in blocks.iter().enumerate() {
            for t in &ts[b] {
                let mut want = BlockIter::new(block.clone());
                want.seek(t);
                let mut got = BlockIter::new(block.clone());
                got.seek_from_restart(*restarts[n].as_ref().unwrap(), t);
                prop_assert_eq!(got.valid(), want.valid());
                if want.valid() {
                    prop_assert_eq!(got.key(), want.key());
                    prop_assert_eq!(got.value(), want.value());
                }
                n += 1;
            }
        }
    }
}

fn small_block() -> Vec<u8> {
    small_block_in(Layout::Interleaved)
}

fn small_block_in(layout: Layout) -> Vec<u8> {
    let mut b = BlockBuilder::with_layout(2, layout);
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
        b.add(&ik, format!("v{i}").as_bytes());
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

    // Every truncation and every single-byte change of a real block, in
    // both layouts, either fails to parse, reports corruption, or decodes
    // without panicking (block checksums catch the rest).
    for layout in [Layout::Interleaved, Layout::Separated] {
        let good = small_block_in(layout);
        for cut in 0..good.len() {
            if let Ok(b) = open_data(good[..cut].to_vec(), 2) {
                let mut it = BlockIter::new(Arc::new(b));
                let _ = scan_forward(&mut it);
                let _ = scan_backward(&mut it);
            }
        }
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= x;
                if let Ok(b) = open_data(bad, 2) {
                    let mut it = BlockIter::new(Arc::new(b));
                    let _ = scan_forward(&mut it);
                    let _ = scan_backward(&mut it);
                    it.seek(b"banana\0\0\0\0\0\0\0\0");
                }
            }
        }
    }
}

/// The batched lookup's point scan agrees with the iterator's seek from
/// the same restart point, in both layouts, on a good block and on every
/// single-byte change of it that still parses: the same entry (key and
/// value) or nothing for both, or corruption for both.
#[test]
fn point_scan_agrees_with_the_iterator_on_damaged_blocks() {
    // Every key of the block, and keys just before and after each.
    let ts = targets(&scan_forward(&mut BlockIter::new(Arc::new(
        open_data(small_block(), 2).unwrap(),
    ))));
    let (mut found, mut failed) = (0, 0);
    for layout in [Layout::Interleaved, Layout::Separated] {
        let good = small_block_in(layout);
        let damaged = (0..good.len()).flat_map(|i| {
            let good = &good;
            [0x01u8, 0x04, 0x80, 0xff].map(move |x| {
                let mut bad = good.clone();
                bad[i] ^= x;
                bad
            })
        });
        for bytes in std::iter::once(good.clone()).chain(damaged) {
            let Ok(block) = open_data(bytes, 2) else {
                continue;
            };
            let block = Arc::new(block);
            let mut key = Vec::new();
            for t in &ts {
                for r in 0..block.restart_count {
                    let mut it = BlockIter::new(block.clone());
                    it.seek_from_restart(r, t);
                    let scanned = seek_entry_from_restart(&block, r, t, &mut key);
                    let what = format!("{layout:?}");
                    match point_scan_agrees(&block, &it, scanned, &key, &what) {
                        Ok(true) => found += 1,
                        Ok(false) => {}
                        Err(e) => {
                            assert!(e.is_corruption(), "{layout:?}: {e}");
                            failed += 1;
                        }
                    }
                }
            }
        }
    }
    // Both outcomes occur: the check is not vacuous.
    // (41,852 found and 3,460 failed when written.)
    assert!(
        found > 10_000 && failed > 1_000,
        "{found} found, {failed} failed"
    );
}

fn open_data(bytes: Vec<u8>, interval: usize) -> crate::Result<Block> {
    Block::new_data(bytes, interval, "f.sst".into(), 4096)
}

/// Flips in the keys section, the values offset, the restart array or the
/// footer word of a separated block: whatever still parses must either
/// report corruption or return entries whose keys are the original ones
/// (a flipped value byte cannot be seen without the block checksum).
#[test]
fn separated_block_flips_never_misplace_keys() {
    let good = small_block_in(Layout::Separated);
    let want = scan_forward(&mut BlockIter::new(Arc::new(
        open_data(good.clone(), 2).unwrap(),
    )));
    assert_eq!(want.len(), 5);
    let values_start = {
        let n = good.len();
        u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize
    };
    let values_end = good.len() - 8 - 4 * 3;
    let (mut detected, mut same) = (0, 0);
    for i in 0..good.len() {
        for x in [0x01u8, 0x02, 0x10, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= x;
            let Ok(b) = open_data(bad, 2) else {
                detected += 1;
                continue;
            };
            let mut it = BlockIter::new(Arc::new(b));
            let got = scan_forward(&mut it);
            if it.status().is_err() {
                detected += 1;
                continue;
            }
            if (values_start..values_end).contains(&i) {
                // Only a value changed.
                let keys: Vec<_> = got.iter().map(|e| &e.0).collect();
                assert_eq!(keys, want.iter().map(|e| &e.0).collect::<Vec<_>>());
            } else if got == want {
                same += 1;
            } else {
                // A key byte flip yields a different key; nothing else may
                // change silently (entry count, values).
                assert_eq!(got.len(), want.len(), "byte {i} ^ {x:#x}");
            }
        }
    }
    assert!(detected > 0 && same < good.len() * 5, "{detected} {same}");
}

#[test]
fn separated_layout_rejects_bad_values_offset_and_interval() {
    let good = small_block_in(Layout::Separated);
    let n = good.len();
    // Values offset past the restart array.
    let mut bad = good.clone();
    bad[n - 8..n - 4].copy_from_slice(&(n as u32).to_le_bytes());
    let err = open_data(bad, 2).unwrap_err();
    assert!(err.to_string().contains("values section offset"), "{err}");
    // Values offset inside the keys: restart points lie past it, or a key
    // entry runs into it.
    for vo in [10u32, 40] {
        let mut bad = good.clone();
        bad[n - 8..n - 4].copy_from_slice(&vo.to_le_bytes());
        match open_data(bad, 2) {
            Err(e) => assert!(e.to_string().contains("restart point"), "{e}"),
            Ok(b) => {
                let mut it = BlockIter::new(Arc::new(b));
                scan_forward(&mut it);
                assert!(it.status().unwrap_err().is_corruption());
            }
        }
    }
    // Values offset one byte early: the last value overruns the section
    // or the restart entry's offset no longer follows.
    let mut bad = good.clone();
    let vo = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap());
    bad[n - 8..n - 4].copy_from_slice(&(vo + 1).to_le_bytes());
    if let Ok(b) = open_data(bad, 2) {
        let mut it = BlockIter::new(Arc::new(b));
        let got = scan_forward(&mut it);
        assert!(it.status().is_err() || got.len() < 5);
    }
    // No recorded restart interval.
    let err = open_data(good.clone(), 0).unwrap_err();
    assert!(err.to_string().contains("restart interval"), "{err}");
    // Wrong restart interval: restart entries do not line up.
    let b = open_data(good.clone(), 3).unwrap();
    let mut it = BlockIter::new(Arc::new(b));
    scan_forward(&mut it);
    assert!(it.status().unwrap_err().is_corruption());
    // The separated bit in an index/meta block.
    let err = open(good).unwrap_err();
    assert!(
        err.to_string().contains("unrecognized block feature"),
        "{err}"
    );
}

/// Seeks read only the keys section: with every value byte overwritten, a
/// seek still lands on the same key.
#[test]
fn separated_seek_does_not_depend_on_values() {
    let good = small_block_in(Layout::Separated);
    let n = good.len();
    let vo = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
    let mut scrubbed = good.clone();
    for b in &mut scrubbed[vo..n - 8 - 12] {
        *b = 0xee;
    }
    for bytes in [good, scrubbed] {
        let mut it = BlockIter::new(Arc::new(open_data(bytes, 2).unwrap()));
        let mut target = Vec::new();
        append_internal_key(&mut target, b"blueberry", 100, ValueType::Value);
        it.seek(&target);
        assert!(it.valid());
        assert_eq!(&it.key()[..9], b"blueberry");
        assert!(!it.at_restart());
        it.next();
        assert!(it.at_restart());
        assert_eq!(&it.key()[..6], b"cherry");
    }
}

/// The separated worked example of `docs/format/sst.md` §2.1, byte for byte.
#[test]
fn separated_worked_example_bytes() {
    let mut entries = Entries::new();
    for (k, seq, v) in [
        (&b"apple"[..], 2u64, &b"red"[..]),
        (b"apricot", 1, b""),
        (b"banana", 3, b"yellow"),
    ] {
        let mut ik = Vec::new();
        let t = if v.is_empty() {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        append_internal_key(&mut ik, k, seq, t);
        entries.push((ik, v.to_vec()));
    }
    let bytes = build_bytes(&entries, 2, Layout::Separated);
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex.join(" "), SEPARATED_EXAMPLE_HEX,);
    let mut it = BlockIter::new(Arc::new(open_data(bytes, 2).unwrap()));
    assert_eq!(scan_forward(&mut it), entries);
}

const SEPARATED_EXAMPLE_HEX: &str = "00 0d 03 00 61 70 70 6c 65 01 02 00 00 00 00 00 00 \
02 0d 00 72 69 63 6f 74 00 01 00 00 00 00 00 00 \
00 0e 06 03 62 61 6e 61 6e 61 01 03 00 00 00 00 00 00 \
72 65 64 79 65 6c 6c 6f 77 \
00 00 00 00 21 00 00 00 \
33 00 00 00 \
02 00 00 10";

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

/// An index-like block of `entries`' keys (restart interval 1), each value
/// the handle of a made-up block numbered by position.
fn index_block(entries: &Entries) -> Block {
    let mut b = BlockBuilder::new(1);
    for (i, (k, _)) in entries.iter().enumerate() {
        let mut v = Vec::new();
        BlockHandle {
            offset: i as u64 * 100,
            size: i as u64,
        }
        .encode_to(&mut v);
        b.add(k, &v);
    }
    Block::new(b.finish(), KeyOrder::Internal, "test".into(), 0).unwrap()
}

/// Sorted distinct internal keys sharing a long prefix (as the keys of most
/// tables do), with an outlier below and above it sometimes (as the short
/// successor an index ends with).
fn prefixed_entries_strategy() -> impl Strategy<Value = Entries> {
    (
        proptest::collection::vec(any::<u8>(), 0..20),
        proptest::collection::vec((proptest::collection::vec(0u8..3, 0..14), 0u64..3), 0..80),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(prefix, suffixes, low, high)| {
            let mut v: Entries = Vec::new();
            let mut push = |uk: &[u8], seq: u64| {
                let mut k = Vec::new();
                append_internal_key(&mut k, uk, seq, ValueType::Value);
                v.push((k, Vec::new()));
            };
            for (s, seq) in suffixes {
                let mut uk = prefix.clone();
                uk.extend_from_slice(&s);
                push(&uk, seq);
            }
            if low && !prefix.is_empty() {
                push(&prefix[..prefix.len() - 1], 0);
            }
            if high {
                push(&[0xff; 3], 0);
                push(&[0xfe], 0);
            }
            v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            v.dedup_by(|a, b| a.0 == b.0);
            v
        })
}

/// Sorted distinct internal keys that differ in two places, as a server's
/// collection element keys (`collection ‖ version ‖ element`): a shared
/// prefix, a group byte, a long middle each group shares (sometimes
/// shorter, so one group's keys are prefixes of another's), then an
/// element suffix.
fn grouped_entries_strategy() -> impl Strategy<Value = Entries> {
    (
        proptest::collection::vec(any::<u8>(), 0..6),
        proptest::collection::vec(any::<u8>(), 0..14),
        proptest::collection::vec(
            (
                0u8..4,
                any::<bool>(),
                proptest::collection::vec(0u8..3, 0..4),
                0u64..3,
            ),
            0..80,
        ),
    )
        .prop_map(|(prefix, middle, picks)| {
            let mut v: Entries = picks
                .into_iter()
                .map(|(group, short, suffix, seq)| {
                    let mut uk = prefix.clone();
                    uk.push(group);
                    let cut = if short {
                        middle.len() / 2
                    } else {
                        middle.len()
                    };
                    uk.extend_from_slice(&middle[..cut]);
                    uk.extend_from_slice(&suffix);
                    let mut k = Vec::new();
                    append_internal_key(&mut k, &uk, seq, ValueType::Value);
                    (k, Vec::new())
                })
                .collect();
            v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            v.dedup_by(|a, b| a.0 == b.0);
            v
        })
}

/// Checks [`IndexFences::seek`] against a linear scan for every target,
/// from 0 and from the previous target's answer in ascending order.
fn check_fences(entries: &Entries) -> Result<(), TestCaseError> {
    let block = index_block(entries);
    let fences = IndexFences::new(&block).expect("an index-like block has fences");
    prop_assert_eq!(fences.len(), entries.len());
    for i in 0..entries.len() {
        prop_assert_eq!(fences.handle(i).offset, i as u64 * 100);
    }
    let mut ts = targets(entries);
    // Between neighbours, too: a key one byte past each.
    for (k, _) in entries {
        let mut x = k[..k.len() - 8].to_vec();
        x.push(0xff);
        let mut t = Vec::new();
        append_internal_key(&mut t, &x, 0, ValueType::Value);
        ts.push(t);
    }
    ts.sort_by(|a, b| compare_internal_keys(a, b));
    let refs: Vec<&[u8]> = ts.iter().map(Vec::as_slice).collect();
    let mut batch = Vec::new();
    fences.seek_batch(
        &block,
        &refs,
        (&mut Vec::new(), &mut Vec::new()),
        &mut batch,
    );
    prop_assert_eq!(batch.len(), ts.len());
    let mut from = 0;
    for (t, in_batch) in ts.iter().zip(batch) {
        let want = entries
            .iter()
            .position(|(k, _)| compare_internal_keys(k, t) != Ordering::Less)
            .unwrap_or(entries.len());
        prop_assert_eq!(in_batch.unwrap(), want);
        prop_assert_eq!(fences.seek(&block, t, 0).unwrap(), want);
        let got = fences.seek(&block, t, from).unwrap();
        prop_assert_eq!(got, want);
        from = got;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn index_fences_seek_matches_a_scan(entries in entries_strategy()) {
        check_fences(&entries)?;
    }

    #[test]
    fn index_fences_seek_matches_a_scan_under_a_shared_prefix(
        entries in prefixed_entries_strategy(),
    ) {
        check_fences(&entries)?;
    }

    #[test]
    fn index_fences_seek_matches_a_scan_for_keys_differing_in_two_places(
        entries in grouped_entries_strategy(),
    ) {
        check_fences(&entries)?;
    }
}

/// A server's table of collection elements: 40 hashes, each of 30 blocks
/// whose separators share the hash's name and version and differ in the
/// field. The table-wide fences tell the hashes apart only (each hash's
/// blocks share one fence); the second level tells its blocks apart.
#[test]
fn index_fences_tell_apart_the_blocks_of_one_collection() {
    let mut entries: Entries = Vec::new();
    for h in 0..40u32 {
        let version = 1_764_000_000_000_000u64 + 977 * u64::from(h);
        for b in 0..30u32 {
            let mut uk = vec![0x12, 0];
            uk.extend_from_slice(&14u32.to_be_bytes());
            uk.extend_from_slice(format!("h:{h:012}").as_bytes());
            uk.extend_from_slice(&version.to_be_bytes());
            uk.extend_from_slice(format!("f:{:012}", 33 * b + 7).as_bytes());
            let mut k = Vec::new();
            append_internal_key(&mut k, &uk, 9, ValueType::Value);
            entries.push((k, Vec::new()));
        }
    }
    let fences = IndexFences::new(&index_block(&entries)).unwrap();
    assert_eq!(fences.duplicates(), 40 * 29);
    assert_eq!(fences.full_duplicates(), 0);
    check_fences(&entries).unwrap();
}

#[test]
fn index_fences_only_for_index_like_blocks() {
    let entries: Entries = (0..40u32)
        .map(|i| {
            let mut k = Vec::new();
            append_internal_key(&mut k, format!("key{i:04}").as_bytes(), 1, ValueType::Value);
            (k, Vec::new())
        })
        .collect();
    assert!(IndexFences::new(&index_block(&entries)).is_some());
    // Not every entry a restart point.
    let mut b = BlockBuilder::new(4);
    for (k, _) in &entries {
        let mut v = Vec::new();
        BlockHandle { offset: 0, size: 1 }.encode_to(&mut v);
        b.add(k, &v);
    }
    let block = Block::new(b.finish(), KeyOrder::Internal, "t".into(), 0).unwrap();
    assert!(IndexFences::new(&block).is_none());
    // A value that is not a block handle.
    let mut b = BlockBuilder::new(1);
    for (k, _) in &entries {
        b.add(k, b"not a handle, too long");
    }
    let block = Block::new(b.finish(), KeyOrder::Internal, "t".into(), 0).unwrap();
    assert!(IndexFences::new(&block).is_none());
    // Bytewise blocks (meta blocks) get none; an empty index gets empty fences.
    let block = Block::new(small_block(), KeyOrder::Bytewise, "t".into(), 0).unwrap();
    assert!(IndexFences::new(&block).is_none());
    let empty = Block::new(
        BlockBuilder::new(1).finish(),
        KeyOrder::Internal,
        "t".into(),
        0,
    )
    .unwrap();
    let fences = IndexFences::new(&empty).unwrap();
    assert_eq!(fences.len(), 0);
    let mut t = Vec::new();
    append_internal_key(&mut t, b"x", 1, ValueType::Value);
    assert_eq!(fences.seek(&empty, &t, 0).unwrap(), 0);
    let mut out = Vec::new();
    fences.seek_batch(
        &empty,
        &[&t[..]],
        (&mut Vec::new(), &mut Vec::new()),
        &mut out,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(*out[0].as_ref().unwrap(), 0);
}

#[test]
fn index_fences_skip_the_outliers_at_the_ends() {
    // As a server's table: its keys under one prefix, then the short
    // successor of the last one ("\x01") and a reserved key ("\xff…").
    let mut entries: Entries = (0..1000u32)
        .map(|i| {
            let mut k = Vec::new();
            let uk = format!("\0key:{:012}", 457_578 + 36 * i);
            append_internal_key(&mut k, uk.as_bytes(), 1, ValueType::Value);
            (k, Vec::new())
        })
        .collect();
    for uk in [&b"\x01"[..], b"\xff__sync"] {
        let mut k = Vec::new();
        append_internal_key(&mut k, uk, 1, ValueType::Value);
        entries.push((k, Vec::new()));
    }
    let fences = IndexFences::new(&index_block(&entries)).unwrap();
    assert!(fences.duplicates() <= 1, "{}", fences.duplicates());
    check_fences(&entries).unwrap();
}

/// [`seek_entry_from_restart`] from every restart point `r` against a
/// model: the first entry at or after restart `r` whose key is at or above
/// the target (in `order`), its key left in the buffer and its value.
fn check_point_scan(
    block: &Block,
    entries: &Entries,
    interval: usize,
    order: KeyOrder,
    ts: &[Vec<u8>],
) -> Result<(), TestCaseError> {
    let mut key = Vec::new();
    for t in ts {
        for r in 0..block.restart_count {
            let want = entries[r * interval..]
                .iter()
                .find(|(k, _)| order.compare(k, t) != Ordering::Less);
            let got = seek_entry_from_restart(block, r, t, &mut key).unwrap();
            match (want, got) {
                (Some((k, v)), Some((_, value))) => {
                    prop_assert_eq!(&key, k, "target {:?} from restart {}", t, r);
                    prop_assert_eq!(block.bytes(value), &v[..]);
                }
                (None, None) => {}
                (want, got) => prop_assert!(false, "target {t:?} from {r}: {want:?} vs {got:?}"),
            }
        }
    }
    Ok(())
}

/// A batch's point scans in one block, as the batched lookup runs them:
/// `ts` in ascending order (every third one twice: equal targets), each
/// found by [`seek_entry_after`] from the previous target's stop (by
/// [`seek_entry`] when there is none), from the restart point a binary
/// search for it finds. Each must find what a fresh [`seek_entry`] from
/// that restart point finds: the same entry, key and value, or none.
/// Returns how many went on from the previous stop rather than starting
/// afresh.
fn check_resumed_scans(block: &Block, ts: &[Vec<u8>]) -> Result<usize, TestCaseError> {
    let mut ts: Vec<&Vec<u8>> = ts.iter().chain(ts.iter().step_by(3)).collect();
    ts.sort_by(|a, b| block.order.compare(a, b));
    let (mut key, mut fresh_key) = (Vec::new(), Vec::new());
    let mut prev: Option<ScanStop> = None;
    let mut resumed = 0;
    for t in ts {
        let r = search_restart(block, t).unwrap();
        let want = seek_entry(block, r, t, &mut fresh_key).unwrap();
        let got = match &prev {
            Some(p) => {
                if r <= p.restart {
                    resumed += 1;
                }
                seek_entry_after(block, r, p, t, &mut key).unwrap()
            }
            None => seek_entry(block, r, t, &mut key).unwrap(),
        };
        prop_assert_eq!(&got, &want, "target {:?} after {:?}", t, prev);
        if want.is_some() {
            prop_assert_eq!(&key, &fresh_key, "target {:?}", t);
        }
        prev = got;
    }
    Ok(resumed)
}

/// Targets near the keys of `entries` in the prefix-sharing ways the point
/// scan orders by: `targets`, plus user keys cut short, extended, and with
/// one byte changed up or down, at the extreme sequence numbers, as
/// stored keys and as lookup keys.
fn prefix_targets(entries: &Entries) -> Vec<Vec<u8>> {
    let mut ts = targets(entries);
    for (k, _) in entries {
        let uk = &k[..k.len() - 8];
        let mut variants = vec![uk[..uk.len() / 2].to_vec(), [uk, &[0, 2]].concat()];
        for i in 0..uk.len() {
            for d in [1u8, 0xff] {
                let mut x = uk.to_vec();
                x[i] = x[i].wrapping_add(d);
                variants.push(x);
            }
        }
        for x in variants {
            for seq in [0, 5, crate::key::MAX_SEQUENCE] {
                let mut t = Vec::new();
                append_internal_key(&mut t, &x, seq, ValueType::Value);
                ts.push(t);
                // What a lookup searches for (its trailer's first byte is 0xff).
                ts.push(crate::key::lookup_key(&x, seq));
            }
        }
    }
    ts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The point scan (which passes most entries by their shared-prefix
    /// length alone) finds what a scan comparing every key finds, on keys
    /// sharing long prefixes with several versions each, in both layouts.
    #[test]
    fn point_scan_finds_the_first_entry_at_or_above_the_target(
        entries in prefixed_entries_strategy(),
        interval in 1usize..=20,
        layout in layout_strategy(),
    ) {
        let entries: Entries = entries
            .into_iter()
            .enumerate()
            .map(|(i, (k, _))| (k, format!("v{i}").into_bytes()))
            .collect();
        let block = build(&entries, interval, layout);
        let ts = prefix_targets(&entries);
        check_point_scan(&block, &entries, interval, KeyOrder::Internal, &ts)?;
        check_resumed_scans(&block, &ts)?;
    }

    /// The same on the general entries (empty and long user keys, values
    /// of every length).
    #[test]
    fn point_scan_finds_the_first_entry_on_any_keys(
        entries in entries_strategy(),
        interval in 1usize..=20,
        layout in layout_strategy(),
    ) {
        let block = build(&entries, interval, layout);
        let ts = prefix_targets(&entries);
        check_point_scan(&block, &entries, interval, KeyOrder::Internal, &ts)?;
        check_resumed_scans(&block, &ts)?;
    }

    /// And in a bytewise block (no trailer: keys may be prefixes of one
    /// another, or of the target).
    #[test]
    fn point_scan_finds_the_first_entry_in_bytewise_order(
        keys in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..8), 0..80),
        ts in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..9), 0..40),
        interval in 1usize..=20,
    ) {
        let entries: Entries = keys.into_iter().map(|k| (k.clone(), k)).collect();
        let mut b = BlockBuilder::new(interval);
        for (k, v) in &entries {
            b.add(k, v);
        }
        let block = Block::new(b.finish(), KeyOrder::Bytewise, "t".into(), 0).unwrap();
        check_point_scan(&block, &entries, interval, KeyOrder::Bytewise, &ts)?;
        check_resumed_scans(&block, &ts)?;
    }
}

/// The resumed scans are not vacuous: on a block of keys sharing long
/// prefixes (a collection's elements), with targets present, absent,
/// between entries, before the first and after the last, most targets of
/// a sorted batch go on from the previous stop, in both layouts and at
/// restart intervals from 1 to 16 — and find what fresh scans find.
#[test]
fn resumed_scans_go_on_from_the_previous_stop() {
    let entries: Entries = (0..300u32)
        .map(|i| {
            let mut k = Vec::new();
            let uk = format!("\x0c\0\x04h:17\0\0\0\0\0\0\0\x01f:{:09}", 3 * i);
            append_internal_key(&mut k, uk.as_bytes(), 9, ValueType::Value);
            (k, format!("value {i}").into_bytes())
        })
        .collect();
    let mut ts = prefix_targets(&entries);
    for uk in [&b""[..], b"\x0c", b"\xff\xff"] {
        ts.push(crate::key::lookup_key(uk, 100));
    }
    for layout in [Layout::Interleaved, Layout::Separated] {
        for interval in [1, 2, 5, 16] {
            let block = build(&entries, interval, layout);
            let resumed = check_resumed_scans(&block, &ts).unwrap();
            assert!(
                resumed > ts.len() / 2,
                "{layout:?} interval {interval}: {resumed} of {} resumed",
                ts.len()
            );
        }
    }
}

/// On every single-byte change of a block that still parses, resumed
/// scans never panic and fail only with `Corruption` (what they read gets
/// the same checks as a fresh scan; they may read less of a damaged block
/// than a fresh scan, so their answers are not compared there).
#[test]
fn resumed_scans_on_damaged_blocks_fail_only_as_corruption() {
    let mut ts = targets(&scan_forward(&mut BlockIter::new(Arc::new(
        open_data(small_block(), 2).unwrap(),
    ))));
    ts.sort_by(|a, b| compare_internal_keys(a, b));
    let (mut resumed, mut failed) = (0, 0);
    for layout in [Layout::Interleaved, Layout::Separated] {
        let good = small_block_in(layout);
        for i in 0..good.len() {
            for x in [0x01u8, 0x04, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= x;
                let Ok(block) = open_data(bad, 2) else {
                    continue;
                };
                let mut key = Vec::new();
                let mut prev: Option<ScanStop> = None;
                for t in &ts {
                    let r = match search_restart(&block, t) {
                        Ok(r) => r,
                        Err(_) => continue,
                    };
                    let got = match &prev {
                        Some(p) => {
                            resumed += 1;
                            seek_entry_after(&block, r, p, t, &mut key)
                        }
                        None => seek_entry(&block, r, t, &mut key),
                    };
                    prev = match got {
                        Ok(stop) => stop,
                        Err(e) => {
                            assert!(e.is_corruption(), "{layout:?}: {e}");
                            failed += 1;
                            None
                        }
                    };
                }
            }
        }
    }
    assert!(
        resumed > 1_000 && failed > 100,
        "{resumed} resumed, {failed} failed"
    );
}
