//! Merge operators (RocksDB semantics): `merge` operands are combined with
//! the key's older versions on every read path — get, multi_get under
//! every batch strategy and memtable, iterators both ways, bounds — whether
//! the operands and their base live in the memtable, immutable memtables,
//! L0 or deeper levels, after compaction and after reopen; snapshots see
//! the result as of the snapshot; a missing or failing operator is an
//! error, never a wrong value.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use batchkv::merge_operators::{StringAppendOperator, U64AddOperator};
use batchkv::{Db, Error, MergeOperator, Options, ReadOptions, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn k(i: u64) -> Vec<u8> {
    common::key(i)
}

fn append_opts() -> Options {
    Options {
        merge_operator: Some(Arc::new(StringAppendOperator::new(","))),
        disable_auto_compactions: true,
        ..common::opts()
    }
}

fn wo() -> WriteOptions {
    WriteOptions::default()
}

/// `merge(k, op)` on the db and the model (append with ",").
fn merge(db: &Db, m: &mut Model, i: u64, op: &str) {
    db.merge(&wo(), k(i), op).unwrap();
    model_append(m, &k(i), op.as_bytes());
}

fn model_append(m: &mut Model, key: &[u8], op: &[u8]) {
    match m.get_mut(key) {
        Some(v) => {
            v.push(b',');
            v.extend_from_slice(op);
        }
        None => {
            m.insert(key.to_vec(), op.to_vec());
        }
    }
}

fn put(db: &Db, m: &mut Model, i: u64, v: &str) {
    db.put(k(i), v).unwrap();
    m.insert(k(i), v.as_bytes().to_vec());
}

fn delete(db: &Db, m: &mut Model, i: u64) {
    db.delete(k(i)).unwrap();
    m.remove(&k(i));
}

fn delete_range(db: &Db, m: &mut Model, a: u64, b: u64) {
    db.delete_range(&wo(), k(a), k(b)).unwrap();
    let gone: Vec<Vec<u8>> = m.range(k(a)..k(b)).map(|(k, _)| k.clone()).collect();
    for key in gone {
        m.remove(&key);
    }
}

/// Every read path of `db` at `ro` against `m` over keys `0..n`.
fn check(db: &Db, ro: &ReadOptions, m: &Model, n: u64) {
    common::read_paths::check_every_read_path(db, ro, m, n);
}

fn latest() -> ReadOptions {
    ReadOptions::default()
}

/// Keys 0..40: put / delete / nothing under them, then merges; keys
/// 40..50 are range-deleted between merges.
fn write_mix(db: &Db, m: &mut Model, round: u32) {
    for i in 0..50 {
        match (i % 4, round) {
            (0, 0) => put(db, m, i, &format!("base{i}")),
            (1, 0) => {
                put(db, m, i, "gone");
                delete(db, m, i);
            }
            _ => {}
        }
        merge(db, m, i, &format!("r{round}"));
    }
    delete_range(db, m, 40 + u64::from(round), 45 + u64::from(round));
    for i in (0..50).step_by(3) {
        merge(db, m, i, &format!("s{round}"));
    }
}

#[test]
fn merges_in_the_memtable_on_put_delete_range_delete_and_nothing() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), append_opts()).unwrap();
        let mut m = Model::new();
        write_mix(&db, &mut m, 0);
        assert_eq!(db.get(k(0)).unwrap().unwrap(), b"base0,r0,s0");
        assert_eq!(db.get(k(1)).unwrap().unwrap(), b"r0", "merge on a deletion");
        assert_eq!(db.get(k(2)).unwrap().unwrap(), b"r0", "merge on nothing");
        assert_eq!(
            db.get(k(42)).unwrap().unwrap(),
            b"s0",
            "merge on a range delete"
        );
        check(&db, &latest(), &m, 55);
    });
}

#[test]
fn across_flushes_l0_and_deeper_levels() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), append_opts()).unwrap();
        let mut m = Model::new();
        write_mix(&db, &mut m, 0);
        db.flush().unwrap();
        check(&db, &latest(), &m, 55); // operands in L0, base in L0
        write_mix(&db, &mut m, 1);
        check(&db, &latest(), &m, 55); // operands in the memtable over L0
        db.flush().unwrap();
        check(&db, &latest(), &m, 55); // two L0 files
        db.compact_range(None, None).unwrap();
        assert_eq!(db.stats().files_per_level[0], 0, "compacted out of L0");
        check(&db, &latest(), &m, 55); // merged by compaction
        write_mix(&db, &mut m, 2);
        db.flush().unwrap();
        write_mix(&db, &mut m, 3);
        check(&db, &latest(), &m, 55); // memtable over L0 over L1+
    });
}

#[test]
fn reopen_replays_merges_from_the_wal_and_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::new();
    {
        let db = Db::open(dir.path(), append_opts()).unwrap();
        write_mix(&db, &mut m, 0);
        db.flush().unwrap();
        write_mix(&db, &mut m, 1);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), append_opts()).unwrap();
    check(&db, &latest(), &m, 55);
    let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        text.contains("# merge_operator: batchkv.StringAppendOperator"),
        "{text}"
    );
}

#[test]
fn snapshots_see_the_merge_result_as_of_the_snapshot() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), append_opts()).unwrap();
        let mut m = Model::new();
        write_mix(&db, &mut m, 0);
        let (s0, m0) = (db.snapshot(), m.clone());
        write_mix(&db, &mut m, 1);
        db.flush().unwrap();
        let (s1, m1) = (db.snapshot(), m.clone());
        write_mix(&db, &mut m, 2);
        // Compaction must not merge across the snapshots.
        db.compact_range(None, None).unwrap();
        write_mix(&db, &mut m, 3);
        for (s, sm) in [(&s0, &m0), (&s1, &m1)] {
            let ro = ReadOptions {
                snapshot: Some(s.clone()),
                ..ReadOptions::default()
            };
            check(&db, &ro, sm, 55);
        }
        check(&db, &latest(), &m, 55);
        drop((s0, s1));
        db.compact_range(None, None).unwrap();
        check(&db, &latest(), &m, 55);
    });
}

#[test]
fn counters_count_through_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            merge_operator: Some(Arc::new(U64AddOperator)),
            write_buffer_size: 64 * 1024,
            ..common::opts()
        },
    )
    .unwrap();
    let mut want = [0u64; 100];
    for n in 0..20_000u64 {
        let i = (n * 7919) % 100;
        let by = n % 5 + 1;
        db.merge(&wo(), k(i), U64AddOperator::encode(by)).unwrap();
        want[i as usize] += by;
    }
    db.compact_range(None, None).unwrap();
    for (i, w) in want.iter().enumerate() {
        let got = db.get(k(i as u64)).unwrap().unwrap();
        assert_eq!(U64AddOperator::decode(&got), Some(*w), "key {i}");
    }
    // A batch mixing puts and merges applies in order.
    let mut b = WriteBatch::new();
    b.put(k(0), U64AddOperator::encode(10));
    b.merge(k(0), U64AddOperator::encode(5));
    db.write(&wo(), b).unwrap();
    assert_eq!(
        U64AddOperator::decode(&db.get(k(0)).unwrap().unwrap()),
        Some(15)
    );
}

#[test]
fn without_an_operator_reads_of_merged_keys_fail_and_others_work() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), append_opts()).unwrap();
        db.put(k(1), "plain").unwrap();
        db.merge(&wo(), k(2), "x").unwrap();
        db.close().unwrap();
    }
    let no_operator = || Options {
        merge_operator: None,
        ..common::opts()
    };
    // The OPTIONS file records the operator: opening without it is refused
    // (tests/merge_operator_is_checked_at_open.rs)...
    assert!(Db::open(dir.path(), no_operator()).is_err());
    // ...unless nothing is recorded (a database from before the record):
    // then reads of merged keys fail, and the rest works.
    std::fs::remove_file(dir.path().join("OPTIONS")).unwrap();
    let db = Db::open(dir.path(), no_operator()).unwrap();
    let is_no_op =
        |e: &Error| matches!(e, Error::InvalidArgument(m) if m.contains("no merge operator"));
    assert_eq!(db.get(k(1)).unwrap().unwrap(), b"plain");
    assert!(is_no_op(&db.get(k(2)).unwrap_err()));
    let r = db.multi_get(&latest(), &[k(1), k(2), k(3)]);
    assert_eq!(r[0].as_ref().unwrap().as_deref(), Some(&b"plain"[..]));
    assert!(is_no_op(r[1].as_ref().unwrap_err()));
    assert_eq!(r[2].as_ref().unwrap(), &None);
    let mut it = db.iter(&latest()).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), k(1));
    it.next();
    assert!(!it.valid());
    assert!(is_no_op(&it.status().unwrap_err()));
    // Compaction without an operator keeps the operands.
    db.compact_range(None, None).unwrap();
    drop(it);
    db.close().unwrap();
    let db = Db::open(dir.path(), append_opts()).unwrap();
    assert_eq!(db.get(k(2)).unwrap().unwrap(), b"x");
}

/// Fails to merge any operand "bad".
struct Picky;
impl MergeOperator for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn full_merge(&self, _: &[u8], base: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
        if ops.contains(&&b"bad"[..]) {
            return None;
        }
        let mut v = base.unwrap_or_default().to_vec();
        ops.iter().for_each(|o| v.extend_from_slice(o));
        Some(v)
    }
}

#[test]
fn a_failing_operator_is_an_error_on_reads_and_fails_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            merge_operator: Some(Arc::new(Picky)),
            disable_auto_compactions: true,
            ..common::opts()
        },
    )
    .unwrap();
    db.put(k(1), "a").unwrap();
    db.merge(&wo(), k(1), "b").unwrap();
    db.merge(&wo(), k(2), "bad").unwrap();
    assert_eq!(db.get(k(1)).unwrap().unwrap(), b"ab");
    let failed = |e: &Error| matches!(e, Error::MergeFailed { key, .. } if key == "key00000002");
    assert!(failed(&db.get(k(2)).unwrap_err()));
    assert!(failed(
        db.multi_get(&latest(), &[k(1), k(2)])[1]
            .as_ref()
            .unwrap_err()
    ));
    let mut it = db.iter(&latest()).unwrap();
    it.seek_to_last();
    assert!(!it.valid());
    assert!(failed(&it.status().unwrap_err()));
    let err = db.compact_range(None, None).unwrap_err();
    assert!(err.to_string().contains("picky failed"), "{err}");
}
