//! Random operations (puts, deletes, batches, snapshots, flushes, manual and
//! background compactions) checked against a `BTreeMap` model at every
//! snapshot, through get, multi_get and iterators, for many seeds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::collections::BTreeMap;

use batchkv::{Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, u8),
    Delete(u16),
    Batch(Vec<(u16, Option<u8>)>),
    Snapshot,
    DropSnapshot,
    Flush,
    CompactAll,
    CompactRange(u16, u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0..400u16, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        6 => (0..400u16).prop_map(Op::Delete),
        3 => proptest::collection::vec((0..400u16, proptest::option::of(any::<u8>())), 1..20).prop_map(Op::Batch),
        1 => Just(Op::Snapshot),
        1 => Just(Op::DropSnapshot),
        1 => Just(Op::Flush),
        1 => Just(Op::CompactAll),
        1 => (0..400u16, 0..400u16).prop_map(|(a, b)| Op::CompactRange(a.min(b), a.max(b))),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn value(k: u16, v: u8) -> Vec<u8> {
    // Long enough that small write buffers flush often.
    format!("{k}-{v}-").repeat(8).into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn check(db: &Db, ro: &ReadOptions, model: &Model) {
    let mut it = db.iter(ro).unwrap();
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(
        got,
        model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    );
    let keys: Vec<Vec<u8>> = (0..400).step_by(3).map(key).collect();
    let batch = db.multi_get(ro, &keys);
    for (k, r) in keys.iter().zip(batch) {
        assert_eq!(r.unwrap().as_ref(), model.get(k), "multi_get {k:?}");
        assert_eq!(
            db.get_opt(ro, k).unwrap().as_ref(),
            model.get(k),
            "get {k:?}"
        );
    }
}

fn options() -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 8 * 1024,
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_match_the_model_at_every_snapshot(ops in proptest::collection::vec(op(), 1..400)) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let mut model = Model::new();
        let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
        for op in &ops {
            match op {
                Op::Put(k, v) => { db.put(key(*k), value(*k, *v)).unwrap(); model.insert(key(*k), value(*k, *v)); }
                Op::Delete(k) => { db.delete(key(*k)).unwrap(); model.remove(&key(*k)); }
                Op::Batch(entries) => {
                    let mut b = WriteBatch::new();
                    for (k, v) in entries {
                        match v {
                            Some(v) => { b.put(key(*k), value(*k, *v)); model.insert(key(*k), value(*k, *v)); }
                            None => { b.delete(key(*k)); model.remove(&key(*k)); }
                        }
                    }
                    db.write(&WriteOptions::default(), b).unwrap();
                }
                Op::Snapshot => snaps.push((db.snapshot(), model.clone())),
                Op::DropSnapshot => { if !snaps.is_empty() { snaps.remove(0); } }
                Op::Flush => db.flush().unwrap(),
                Op::CompactAll => db.compact_range(None, None).unwrap(),
                Op::CompactRange(a, b) => db.compact_range(Some(&key(*a)), Some(&key(*b))).unwrap(),
            }
        }
        check(&db, &ReadOptions::default(), &model);
        for (snap, m) in &snaps {
            check(&db, &ReadOptions { snapshot: Some(snap.clone()), ..ReadOptions::default() }, m);
        }
        drop(snaps);
        db.compact_range(None, None).unwrap();
        check(&db, &ReadOptions::default(), &model);
        db.close().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        check(&db, &ReadOptions::default(), &model);
    }
}

#[test]
fn data_moves_down_the_levels_and_tombstones_disappear() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..3000u16 {
        db.put(key(i % 400), value(i, 1)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    assert_eq!(stats.sst_bytes_per_level[0], 0, "{stats:?}");
    assert!(stats.compactions > 0);
    let before: u64 = stats.sst_bytes_per_level.iter().sum();
    for i in 0..400u16 {
        db.delete(key(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let after: u64 = db.stats().sst_bytes_per_level.iter().sum();
    assert_eq!(
        after, 0,
        "tombstones and shadowed values must be gone at the bottom (before: {before})"
    );
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
}

#[test]
fn background_compaction_keeps_l0_bounded_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("k{:06}", (i * 7919) % 20_000), vec![b'x'; 100])
            .unwrap();
    }
    db.flush().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0, "{stats:?}");
    assert!(
        stats.files_per_level[0] < 36,
        "L0 must not grow past the stop trigger: {stats:?}"
    );
    for i in (0..20_000u32).step_by(97) {
        assert_eq!(db.get(format!("k{i:06}")).unwrap(), Some(vec![b'x'; 100]));
    }
}
