//! Property test: the DB iterator (forward, backward, seeks, `seek_near`, bounds, at the
//! latest state and at snapshots) equals a `BTreeMap` model under random
//! operations, across memtables, flushes and reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::collections::BTreeMap;
use std::ops::Bound;

use batchkv::{Db, DbIterator, Options, ReadOptions, WriteBatch, WriteOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    Batch(Vec<(u8, Option<u16>)>),
    Snapshot,
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), any::<u16>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => any::<u8>().prop_map(Op::Delete),
        1 => proptest::collection::vec((any::<u8>(), proptest::option::of(any::<u16>())), 1..8).prop_map(Op::Batch),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Flush),
    ]
}

fn key(k: u8) -> Vec<u8> {
    // Variable-length keys, some sharing prefixes.
    format!("k{}", k % 97)
        .repeat(1 + (k as usize % 3))
        .into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn expected(model: &Model, lo: &Option<Vec<u8>>, hi: &Option<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    if let (Some(l), Some(h)) = (lo, hi) {
        if l >= h {
            return Vec::new(); // an empty (or inverted) range
        }
    }
    let lo = lo
        .as_ref()
        .map_or(Bound::Unbounded, |l| Bound::Included(l.clone()));
    let hi = hi
        .as_ref()
        .map_or(Bound::Unbounded, |h| Bound::Excluded(h.clone()));
    model
        .range((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn forward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn backward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

fn check(db: &Db, ropts: &ReadOptions, model: &Model, probes: &[u8]) {
    let want = expected(model, &ropts.lower_bound, &ropts.upper_bound);
    let mut it = db.iter(ropts).unwrap();
    let mut near = db.iter(ropts).unwrap();
    assert_eq!(forward(&mut it), want, "forward");
    assert_eq!(backward(&mut it), want, "backward");
    for &p in probes {
        let target = key(p);
        it.seek(&target);
        let first_ge = want.iter().find(|(k, _)| *k >= target);
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            first_ge.map(|(k, _)| k.clone()),
            "seek"
        );
        if it.valid() {
            // One step back then forward again must return here.
            it.prev();
            let before = want.iter().rev().find(|(k, _)| *k < target);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                before.map(|(k, _)| k.clone()),
                "prev after seek"
            );
        }
        // seek_near lands where seek does, from wherever the last one went
        // (the probes come in any order) and after any moves since.
        near.seek_near(&target);
        assert_eq!(
            near.valid().then(|| near.key().to_vec()),
            first_ge.map(|(k, _)| k.clone()),
            "seek_near"
        );
        if near.valid() {
            near.next();
            let after = want
                .iter()
                .find(|(k, _)| first_ge.is_some_and(|(f, _)| k > f));
            assert_eq!(
                near.valid().then(|| near.key().to_vec()),
                after.map(|(k, _)| k.clone()),
                "next after seek_near"
            );
        }
        it.seek_for_prev(&target);
        let last_le = want.iter().rev().find(|(k, _)| *k <= target);
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            last_le.map(|(k, _)| k.clone()),
            "seek_for_prev"
        );
        if it.valid() {
            it.next();
            let after = want.iter().find(|(k, _)| *k > target);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                after.map(|(k, _)| k.clone()),
                "next after seek_for_prev"
            );
        }
    }
}

proptest! {
    // Each case picks one memtable (shrinking keeps the failing one), so the
    // three memtables share the cases and the test time stays as it was.
    #![proptest_config(ProptestConfig { cases: 30, ..ProptestConfig::default() })]

    #[test]
    fn iterator_matches_model(ops in proptest::collection::vec(op(), 1..300),
                              lo in proptest::option::of(any::<u8>()),
                              hi in proptest::option::of(any::<u8>()),
                              probes in proptest::collection::vec(any::<u8>(), 1..10),
                              memtable in 0usize..MEMTABLES.len()) {
        run_case(MEMTABLES[memtable], &ops, lo, hi, &probes);
    }
}

/// The memtables the model runs against (sorted_hash with a bucket array
/// small enough for the 8 KiB write buffer).
const MEMTABLES: [&str; 3] = ["skiplist", "vector", "sorted_hash:256:16"];

fn run_case(memtable: &str, ops: &[Op], lo: Option<u8>, hi: Option<u8>, probes: &[u8]) {
    {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            write_buffer_size: 8 * 1024,
            memtable: memtable.parse().unwrap(),
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let mut model = Model::new();
        let mut snaps = Vec::new();
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    db.put(key(*k), v.to_le_bytes()).unwrap();
                    model.insert(key(*k), v.to_le_bytes().to_vec());
                }
                Op::Delete(k) => {
                    db.delete(key(*k)).unwrap();
                    model.remove(&key(*k));
                }
                Op::Batch(entries) => {
                    let mut b = WriteBatch::new();
                    for (k, v) in entries {
                        match v {
                            Some(v) => {
                                b.put(key(*k), v.to_le_bytes());
                                model.insert(key(*k), v.to_le_bytes().to_vec());
                            }
                            None => {
                                b.delete(key(*k));
                                model.remove(&key(*k));
                            }
                        }
                    }
                    db.write(&WriteOptions::default(), b).unwrap();
                }
                Op::Snapshot => snaps.push((db.snapshot(), model.clone())),
                Op::Flush => db.flush().unwrap(),
            }
        }
        let bounds = ReadOptions {
            lower_bound: lo.map(key),
            upper_bound: hi.map(key),
            ..ReadOptions::default()
        };
        check(&db, &ReadOptions::default(), &model, probes);
        check(&db, &bounds, &model, probes);
        for (snap, snap_model) in &snaps {
            let ro = ReadOptions {
                snapshot: Some(snap.clone()),
                ..bounds.clone()
            };
            check(&db, &ro, snap_model, probes);
        }
        drop(snaps);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        check(&db, &ReadOptions::default(), &model, probes);
    }
}
