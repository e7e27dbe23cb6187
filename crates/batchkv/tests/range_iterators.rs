//! `Db::range` and `Db::prefix` as Rust iterators (`Iterator` and
//! `DoubleEndedIterator`), checked against a `BTreeMap` over random data,
//! random bounds and random mixes of `next` and `next_back`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use batchkv::{Db, ReadOptions};
use proptest::prelude::*;

fn k(i: u8) -> Vec<u8> {
    format!("k{:02}", i % 60).into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn range_matches_a_btreemap(
        writes in proptest::collection::vec((any::<u8>(), proptest::option::of(any::<u8>())), 1..200),
        lo in proptest::option::of((any::<u8>(), any::<bool>())),
        hi in proptest::option::of((any::<u8>(), any::<bool>())),
        ends in proptest::collection::vec(any::<bool>(), 0..80),
        flush_at in 0usize..200,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        let mut model = BTreeMap::new();
        for (n, (key, value)) in writes.iter().enumerate() {
            match value {
                Some(v) => {
                    db.put(k(*key), [*v]).unwrap();
                    model.insert(k(*key), vec![*v]);
                }
                None => {
                    db.delete(k(*key)).unwrap();
                    model.remove(&k(*key));
                }
            }
            if n == flush_at {
                db.flush().unwrap();
            }
        }
        let bound = |b: Option<(u8, bool)>| match b {
            None => Bound::Unbounded,
            Some((i, true)) => Bound::Included(k(i)),
            Some((i, false)) => Bound::Excluded(k(i)),
        };
        let (lo, hi) = (bound(lo), bound(hi));
        // BTreeMap::range panics on an inverted range; the db yields nothing.
        let inverted = match (&lo, &hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b || (a == b && !matches!((&lo, &hi), (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        let mut expected: Vec<(Vec<u8>, Vec<u8>)> = if inverted {
            Vec::new()
        } else {
            model.range((lo.clone(), hi.clone())).map(|(a, b)| (a.clone(), b.clone())).collect()
        };
        let mut it = db.range(&ReadOptions::default(), (lo, hi)).unwrap();
        // Writes after creation are not visible.
        db.put(k(1), b"later").unwrap();
        let mut got_front = Vec::new();
        let mut got_back = Vec::new();
        for &front in &ends {
            let item = if front { it.next() } else { it.next_back() };
            match item {
                Some(kv) => {
                    let kv = kv.unwrap();
                    if front { got_front.push(kv) } else { got_back.push(kv) }
                }
                None => break,
            }
        }
        got_front.extend(it.by_ref().map(Result::unwrap));
        prop_assert!(it.next().is_none() && it.next_back().is_none(), "fused");
        got_back.reverse();
        got_front.extend(got_back);
        expected.sort();
        prop_assert_eq!(got_front, expected);
    }
}

#[test]
fn prefix_yields_exactly_the_keys_with_the_prefix_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    for key in [
        &b"a"[..],
        b"ab",
        b"ab\x00",
        b"ab\xff",
        b"abc",
        b"ac",
        b"b",
        b"\xff",
        b"\xff\xff",
    ] {
        db.put(key, key).unwrap();
    }
    let keys = |p: &[u8], back: bool| -> Vec<Vec<u8>> {
        let it = db.prefix(&ReadOptions::default(), p).unwrap();
        let kv: Vec<_> = if back {
            it.rev().collect()
        } else {
            it.collect()
        };
        kv.into_iter().map(|r| r.unwrap().0).collect()
    };
    let ab: Vec<Vec<u8>> = vec![
        b"ab".to_vec(),
        b"ab\x00".to_vec(),
        b"abc".to_vec(),
        b"ab\xff".to_vec(),
    ];
    assert_eq!(keys(b"ab", false), ab);
    assert_eq!(
        keys(b"ab", true),
        ab.iter().rev().cloned().collect::<Vec<_>>()
    );
    assert_eq!(
        keys(b"\xff", false),
        vec![b"\xff".to_vec(), b"\xff\xff".to_vec()]
    );
    assert_eq!(keys(b"", false).len(), 9);
    assert!(keys(b"zz", false).is_empty());
    // Ranges compose with the bounds in ReadOptions (intersection).
    let ro = ReadOptions {
        upper_bound: Some(b"abc".to_vec()),
        ..ReadOptions::default()
    };
    let n = db.prefix(&ro, b"ab").unwrap().count();
    assert_eq!(n, 2, "ab and ab\\0");
    // Std adapters work.
    let values: Vec<Vec<u8>> = db
        .range(&ReadOptions::default(), b"a".as_slice()..=b"ab".as_slice())
        .unwrap()
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(values, vec![b"a".to_vec(), b"ab".to_vec()]);
}
