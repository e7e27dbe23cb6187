//! Optimistic transactions: reads see the transaction's own writes over its
//! snapshot (get, multi_get, range both ways with bounds), commit fails
//! with `Error::Conflict` naming the key when a key written or read with
//! `get_for_update` was written by anyone after the snapshot — wherever the
//! newer write lives (memtable, SST after a flush or compaction, a range
//! tombstone) — and two conflicting commits never both succeed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use batchkv::merge_operators::StringAppendOperator;
use batchkv::{Db, Error, Options, TransactionOptions, WriteOptions};
use rand::{Rng, SeedableRng};

fn open(dir: &tempfile::TempDir) -> Db {
    Db::open(dir.path(), common::opts()).unwrap()
}

fn v(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

/// The key and family of a conflict, or a panic naming what came instead.
fn conflict(r: batchkv::Result<()>) -> (Vec<u8>, String) {
    match r {
        Err(Error::Conflict { key, cf }) => (key, cf),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn reads_see_own_writes_over_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"a", b"db-a").unwrap();
    db.put(b"b", b"db-b").unwrap();
    db.put(b"c", b"db-c").unwrap();
    let mut txn = db.transaction();
    // Written after the snapshot: invisible to the transaction.
    db.put(b"d", b"late").unwrap();
    txn.put(b"a", b"txn-a").unwrap();
    txn.delete(b"b").unwrap();
    txn.put(b"e", b"txn-e").unwrap();
    assert_eq!(txn.get(b"a").unwrap(), v("txn-a"));
    assert_eq!(txn.get(b"b").unwrap(), None);
    assert_eq!(txn.get(b"c").unwrap(), v("db-c"));
    assert_eq!(txn.get(b"d").unwrap(), None);
    assert_eq!(txn.get(b"e").unwrap(), v("txn-e"));
    let got: Vec<_> = txn
        .multi_get(&[&b"e"[..], b"a", b"b", b"c", b"d", b"zz", b"a"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        got,
        vec![
            v("txn-e"),
            v("txn-a"),
            None,
            v("db-c"),
            None,
            None,
            v("txn-a")
        ]
    );
    // Nothing is visible outside before commit.
    assert_eq!(db.get(b"a").unwrap(), v("db-a"));
    assert_eq!(db.get(b"e").unwrap(), None);
    assert_eq!(txn.pending_writes(), 3);
    txn.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), v("txn-a"));
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"e").unwrap(), v("txn-e"));
    assert_eq!(db.get(b"d").unwrap(), v("late"));
}

#[test]
fn range_merges_own_writes_both_ways_with_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for k in ["b", "d", "f", "h", "j"] {
        db.put(k, format!("db-{k}")).unwrap();
    }
    let mut txn = db.transaction();
    txn.put(b"a", b"t-a").unwrap(); // before every db key
    txn.put(b"d", b"t-d").unwrap(); // replaces
    txn.delete(b"f").unwrap(); // hides
    txn.put(b"g", b"t-g").unwrap(); // between
    txn.delete(b"x").unwrap(); // deletes nothing
    txn.put(b"z", b"t-z").unwrap(); // after every db key
    let all = |r: Vec<(Vec<u8>, Vec<u8>)>| -> Vec<String> {
        r.into_iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    String::from_utf8(k).unwrap(),
                    String::from_utf8(v).unwrap()
                )
            })
            .collect()
    };
    let fwd: Vec<_> = txn.range(..).unwrap().map(Result::unwrap).collect();
    assert_eq!(
        all(fwd),
        ["a=t-a", "b=db-b", "d=t-d", "g=t-g", "h=db-h", "j=db-j", "z=t-z"]
    );
    let back: Vec<_> = txn.range(..).unwrap().rev().map(Result::unwrap).collect();
    assert_eq!(
        all(back),
        ["z=t-z", "j=db-j", "h=db-h", "g=t-g", "d=t-d", "b=db-b", "a=t-a"]
    );
    let bounded: Vec<_> = txn
        .range(&b"c"[..]..&b"h"[..])
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(all(bounded), ["d=t-d", "g=t-g"]);
    let bounded_back: Vec<_> = txn
        .range(&b"b"[..]..=&b"g"[..])
        .unwrap()
        .rev()
        .map(Result::unwrap)
        .collect();
    assert_eq!(all(bounded_back), ["g=t-g", "d=t-d", "b=db-b"]);
    // Both ends mixed: every key exactly once.
    let mut it = txn.range(..).unwrap();
    let mut front = Vec::new();
    let mut back = Vec::new();
    while let Some(r) = it.next() {
        front.push(r.unwrap());
        match it.next_back() {
            Some(r) => back.push(r.unwrap()),
            None => break,
        }
    }
    back.reverse();
    front.extend(back);
    assert_eq!(
        all(front),
        ["a=t-a", "b=db-b", "d=t-d", "g=t-g", "h=db-h", "j=db-j", "z=t-z"]
    );
}

/// Random databases and transactions: `range` from either end, with random
/// bounds and random interleavings of `next`/`next_back`, matches a model.
#[test]
fn range_matches_a_model_from_both_ends() {
    for seed in 0..30u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let key = |i: u32| format!("k{i:03}").into_bytes();
        for _ in 0..rng.random_range(0..40) {
            let k = key(rng.random_range(0..60));
            let val = format!("db{}", rng.random_range(0..1000)).into_bytes();
            db.put(&k, &val).unwrap();
            model.insert(k, val);
        }
        if rng.random_bool(0.5) {
            db.flush().unwrap();
        }
        let mut txn = db.transaction();
        for _ in 0..rng.random_range(0..40) {
            let k = key(rng.random_range(0..60));
            if rng.random_bool(0.3) {
                txn.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let val = format!("tx{}", rng.random_range(0..1000)).into_bytes();
                txn.put(&k, &val).unwrap();
                model.insert(k, val);
            }
        }
        let lo = key(rng.random_range(0..70));
        let hi = key(rng.random_range(0..70));
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(lo.clone()..)
            .filter(|(k, _)| **k < hi)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut it = txn.range(lo.as_slice()..hi.as_slice()).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let item = if rng.random_bool(0.5) {
                it.next().map(|r| front.push(r.unwrap()))
            } else {
                it.next_back().map(|r| back.push(r.unwrap()))
            };
            if item.is_none() {
                break;
            }
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front, expected, "seed {seed}, range {lo:?}..{hi:?}");
    }
}

#[test]
fn plain_write_after_begin_conflicts_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"x", b"1").unwrap();
    let mut txn = db.transaction();
    assert_eq!(txn.get_for_update(b"x").unwrap(), v("1"));
    txn.put(b"y", b"from-txn").unwrap();
    db.put(b"x", b"2").unwrap();
    let (key, cf) = conflict(txn.commit());
    assert_eq!((key.as_slice(), cf.as_str()), (&b"x"[..], "default"));
    assert_eq!(
        db.get(b"y").unwrap(),
        None,
        "a failed commit applied a write"
    );
    assert_eq!(db.get(b"x").unwrap(), v("2"));

    // A written key is checked too (blind write, no read).
    let mut txn = db.transaction();
    txn.put(b"w", b"txn").unwrap();
    db.delete(b"w").unwrap(); // a delete of an absent key is a write
    let (key, _) = conflict(txn.commit());
    assert_eq!(key, b"w");

    // The error names the key in its message.
    let mut txn = db.transaction();
    txn.put(b"k\x01", b"t").unwrap();
    db.put(b"k\x01", b"p").unwrap();
    let e = txn.commit().unwrap_err();
    assert!(e.is_conflict());
    assert!(e.to_string().contains("k\\x01"), "{e}");
}

#[test]
fn writes_before_begin_and_plain_reads_do_not_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"x", b"1").unwrap();
    let mut txn = db.transaction();
    assert_eq!(txn.get_for_update(b"x").unwrap(), v("1"));
    txn.put(b"x", b"2").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"x").unwrap(), v("2"));

    // A key read with plain `get` is not tracked (snapshot isolation).
    let mut txn = db.transaction();
    assert_eq!(txn.get(b"x").unwrap(), v("2"));
    db.put(b"x", b"3").unwrap();
    txn.put(b"other", b"o").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"other").unwrap(), v("o"));

    // Writes to keys the transaction never touched do not conflict.
    let mut txn = db.transaction();
    txn.get_for_update(b"x").unwrap();
    txn.put(b"y", b"t").unwrap();
    db.put(b"unrelated", b"u").unwrap();
    txn.commit().unwrap();

    // An empty transaction commits.
    db.transaction().commit().unwrap();
}

#[test]
fn read_only_transaction_checks_its_get_for_update_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let mut txn = db.transaction();
    assert_eq!(txn.get_for_update(b"r").unwrap(), None);
    db.put(b"r", b"new").unwrap();
    assert_eq!(conflict(txn.commit()).0, b"r");
    let mut txn = db.transaction();
    txn.get_for_update(b"r").unwrap();
    txn.commit().unwrap();
}

#[test]
fn write_skew_is_prevented_for_get_for_update_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    // Invariant the application keeps: at least one of x, y is "on".
    db.put(b"x", b"on").unwrap();
    db.put(b"y", b"on").unwrap();
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    for t in [&mut t1, &mut t2] {
        assert_eq!(t.get_for_update(b"x").unwrap(), v("on"));
        assert_eq!(t.get_for_update(b"y").unwrap(), v("on"));
    }
    t1.put(b"x", b"off").unwrap();
    t2.put(b"y", b"off").unwrap();
    t1.commit().unwrap();
    assert_eq!(conflict(t2.commit()).0, b"x");
    assert_eq!(db.get(b"y").unwrap(), v("on"));

    // The same race from two threads, many times: exactly one commits.
    for round in 0..50 {
        db.put(b"x", b"on").unwrap();
        db.put(b"y", b"on").unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<_> = [(b"x", b"y"), (b"y", b"x")]
            .into_iter()
            .map(|(mine, _other)| {
                let db = db.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let mut t = db.transaction();
                    t.get_for_update(b"x").unwrap();
                    t.get_for_update(b"y").unwrap();
                    t.put(mine, b"off").unwrap();
                    // Both have read before either commits.
                    barrier.wait();
                    t.commit()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "round {round}: {results:?}");
        assert!(results
            .iter()
            .all(|r| r.as_ref().map_or_else(Error::is_conflict, |()| true)));
        let off = [b"x", b"y"]
            .iter()
            .filter(|k| db.get(k).unwrap() == v("off"))
            .count();
        assert_eq!(off, 1, "round {round}");
    }
}

/// Read-modify-write of one counter by several threads, retried on
/// conflict: no increment is lost.
#[test]
fn concurrent_increments_with_retry_give_the_exact_total() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 100;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut conflicts = 0u64;
                for i in 0..PER_THREAD {
                    loop {
                        let mut txn = db.transaction();
                        let n: u64 = txn
                            .get_for_update(b"counter")
                            .unwrap()
                            .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                        txn.put(b"counter", (n + 1).to_string()).unwrap();
                        // Filler so memtables fill and flush mid-run.
                        txn.put(common::key(t * PER_THREAD + i), [b'v'; 200])
                            .unwrap();
                        match txn.commit() {
                            Ok(()) => break,
                            Err(e) if e.is_conflict() => conflicts += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(
        db.get(b"counter").unwrap(),
        Some((THREADS * PER_THREAD).to_string().into_bytes()),
        "{conflicts} conflicts"
    );
}

#[test]
fn rollback_and_savepoints() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put(b"a", b"db").unwrap();
    let mut txn = db.transaction();
    assert!(matches!(
        txn.rollback_to_savepoint(),
        Err(Error::InvalidArgument(_))
    ));
    txn.put(b"a", b"1").unwrap();
    txn.set_savepoint();
    txn.put(b"a", b"2").unwrap();
    txn.delete(b"b").unwrap();
    txn.set_savepoint();
    txn.put(b"c", b"3").unwrap();
    assert_eq!(txn.get(b"c").unwrap(), v("3"));
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get(b"c").unwrap(), None);
    assert_eq!(txn.get(b"a").unwrap(), v("2"));
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.get(b"a").unwrap(), v("1"));
    assert!(txn.rollback_to_savepoint().is_err(), "both savepoints used");
    txn.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), v("1"));
    assert_eq!(db.get(b"c").unwrap(), None);

    // A key first read for update after a savepoint is untracked by
    // rolling back to it; one tracked before stays tracked.
    let mut txn = db.transaction();
    txn.get_for_update(b"kept").unwrap();
    txn.set_savepoint();
    txn.get_for_update(b"kept").unwrap();
    txn.get_for_update(b"dropped").unwrap();
    txn.rollback_to_savepoint().unwrap();
    db.put(b"dropped", b"p").unwrap();
    txn.put(b"t", b"1").unwrap();
    txn.commit().unwrap();
    let mut txn = db.transaction();
    txn.get_for_update(b"kept").unwrap();
    txn.set_savepoint();
    txn.get_for_update(b"kept").unwrap();
    txn.rollback_to_savepoint().unwrap();
    db.put(b"kept", b"p").unwrap();
    assert_eq!(conflict(txn.commit()).0, b"kept");

    // rollback() discards writes and tracked keys; the transaction goes on.
    let mut txn = db.transaction();
    txn.get_for_update(b"a").unwrap();
    txn.put(b"a", b"gone").unwrap();
    txn.rollback();
    assert_eq!(txn.get(b"a").unwrap(), v("1"));
    db.put(b"a", b"plain").unwrap();
    txn.put(b"after", b"x").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), v("plain"));
    assert_eq!(db.get(b"after").unwrap(), v("x"));
}

#[test]
fn committed_transaction_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(&dir);
        let mut txn = db.transaction_opt(&TransactionOptions {
            write_options: WriteOptions {
                sync: true,
                ..WriteOptions::default()
            },
        });
        for i in 0..100 {
            txn.put(common::key(i), format!("v{i}")).unwrap();
        }
        txn.delete(common::key(7)).unwrap();
        txn.commit().unwrap();
        let mut dropped = db.transaction();
        dropped.put(b"never", b"x").unwrap();
        drop(dropped);
        db.close().unwrap();
    }
    let db = open(&dir);
    for i in 0..100 {
        let want = (i != 7).then(|| format!("v{i}").into_bytes());
        assert_eq!(db.get(common::key(i)).unwrap(), want, "key {i}");
    }
    assert_eq!(db.get(b"never").unwrap(), None);
}

#[test]
fn column_families() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let users = db.create_cf("users", &Options::default()).unwrap();
    let idx = db.create_cf("index", &Options::default()).unwrap();
    db.put_cf(&users, b"u1", b"alice").unwrap();
    let mut txn = db.transaction();
    assert_eq!(txn.get_for_update_cf(&users, b"u1").unwrap(), v("alice"));
    assert_eq!(txn.get(b"u1").unwrap(), None, "default family is separate");
    txn.put_cf(&users, b"u2", b"bob").unwrap();
    txn.put_cf(&idx, b"bob", b"u2").unwrap();
    txn.put(b"u2", b"default").unwrap();
    assert_eq!(txn.get_cf(&users, b"u2").unwrap(), v("bob"));
    let got: Vec<_> = txn
        .multi_get_cf(&[(&users, &b"u1"[..]), (&idx, b"bob"), (&users, b"bob")])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, vec![v("alice"), v("u2"), None]);
    let keys: Vec<_> = txn
        .range_cf(&users, ..)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(keys, vec![b"u1".to_vec(), b"u2".to_vec()]);
    txn.commit().unwrap();
    assert_eq!(db.get_cf(&idx, b"bob").unwrap(), v("u2"));
    assert_eq!(db.get(b"u2").unwrap(), v("default"));

    // A conflict names the family; a same-named key elsewhere is no conflict.
    let mut txn = db.transaction();
    txn.get_for_update_cf(&idx, b"bob").unwrap();
    txn.put_cf(&users, b"u3", b"carol").unwrap();
    db.put(b"bob", b"in default").unwrap();
    db.put_cf(&users, b"bob", b"in users").unwrap();
    db.put_cf(&idx, b"bob", b"u9").unwrap();
    let (key, cf) = conflict(txn.commit());
    assert_eq!((key.as_slice(), cf.as_str()), (&b"bob"[..], "index"));
    assert_eq!(db.get_cf(&users, b"u3").unwrap(), None);

    // A dropped family: using it is InvalidArgument.
    let mut txn = db.transaction();
    db.drop_cf(&idx).unwrap();
    assert!(matches!(
        txn.put_cf(&idx, b"k", b"v"),
        Err(Error::InvalidArgument(_))
    ));
}

/// `multi_get_for_update_cf`: one batched engine read for the keys the
/// transaction's own writes do not answer, and every pair tracked in its
/// family — a later write to any of them, in any family, is a conflict
/// naming that family; the same key in another family is not.
#[test]
fn multi_get_for_update_cf_is_one_read_and_tracks_each_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let users = db.create_cf("users", &Options::default()).unwrap();
    let idx = db.create_cf("index", &Options::default()).unwrap();
    db.put_cf(&users, b"u1", b"alice").unwrap();
    db.put_cf(&idx, b"alice", b"u1").unwrap();
    db.put(b"u1", b"in default").unwrap();

    let mut txn = db.transaction();
    txn.put_cf(&users, b"u2", b"own").unwrap();
    let before = db.statistics();
    let got: Vec<_> = txn
        .multi_get_for_update_cf(&[
            (&users, &b"u1"[..]),
            (&idx, b"alice"),
            (&users, b"u2"),
            (&idx, b"nobody"),
        ])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let after = db.statistics();
    assert_eq!(got, vec![v("alice"), v("u1"), v("own"), None]);
    assert_eq!(after.multi_gets - before.multi_gets, 1, "one batched read");
    assert_eq!(
        after.multi_get_keys - before.multi_get_keys,
        3,
        "own write answered"
    );
    assert_eq!(after.gets, before.gets, "no single reads");
    // Writes to the same keys in the default family are no conflict.
    db.put(b"alice", b"x").unwrap();
    db.put(b"nobody", b"x").unwrap();
    // A write to a key tracked while absent is, named with its family.
    db.put_cf(&idx, b"nobody", b"u7").unwrap();
    let (key, cf) = conflict(txn.commit());
    assert_eq!((key.as_slice(), cf.as_str()), (&b"nobody"[..], "index"));
    assert_eq!(db.get_cf(&users, b"u2").unwrap(), None, "nothing applied");

    // Unwritten tracked keys commit; a write to one in the other family
    // conflicts there too.
    let mut txn = db.transaction();
    txn.multi_get_for_update_cf(&[(&users, &b"u1"[..]), (&idx, b"alice")]);
    txn.put_cf(&users, b"u1", b"alice2").unwrap();
    txn.commit().unwrap();
    let mut txn = db.transaction();
    txn.multi_get_for_update_cf(&[(&idx, &b"alice"[..]), (&users, b"u1")]);
    db.put_cf(&users, b"u1", b"changed").unwrap();
    let (key, cf) = conflict(txn.commit());
    assert_eq!((key.as_slice(), cf.as_str()), (&b"u1"[..], "users"));

    // A dropped family's key fails alone; the others are read and tracked.
    let mut txn = db.transaction();
    db.drop_cf(&idx).unwrap();
    let got = txn.multi_get_for_update_cf(&[(&idx, &b"alice"[..]), (&users, b"u1")]);
    assert!(matches!(got[0], Err(Error::InvalidArgument(_))), "{got:?}");
    assert_eq!(got[1].as_ref().unwrap(), &v("changed"));
    db.put_cf(&users, b"u1", b"again").unwrap();
    assert_eq!(conflict(txn.commit()).0, b"u1");
}

#[test]
fn conflict_is_found_after_flush_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for i in 0..50 {
        db.put(common::key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    // Older versions in SSTs only: no false conflict.
    let mut txn = db.transaction();
    txn.get_for_update(common::key(3)).unwrap();
    txn.put(common::key(4), b"t").unwrap();
    db.put(b"elsewhere", b"x").unwrap();
    db.flush().unwrap();
    txn.commit().unwrap();

    // The newer write flushed between begin and commit.
    let mut txn = db.transaction();
    txn.get_for_update(common::key(5)).unwrap();
    txn.put(common::key(6), b"t").unwrap();
    db.put(common::key(5), b"new").unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().memtable_entries, 0);
    assert_eq!(conflict(txn.commit()).0, common::key(5));

    // ... and compacted to the bottom level: still found.
    let mut txn = db.transaction();
    txn.get_for_update(common::key(8)).unwrap();
    db.put(common::key(8), b"newer").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().files_per_level[0], 0);
    assert_eq!(conflict(txn.commit()).0, common::key(8));
    // A delete flushed and compacted.
    let mut txn = db.transaction();
    txn.put(common::key(9), b"t").unwrap();
    db.delete(common::key(9)).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(conflict(txn.commit()).0, common::key(9));
}

#[test]
fn delete_range_covering_a_tracked_key_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for k in ["a", "m", "z"] {
        db.put(k, b"v").unwrap();
    }
    let wo = WriteOptions::default();
    let mut txn = db.transaction();
    txn.get_for_update(b"m").unwrap();
    txn.put(b"out", b"t").unwrap();
    db.delete_range(&wo, b"l", b"n").unwrap();
    assert_eq!(conflict(txn.commit()).0, b"m");
    assert_eq!(db.get(b"out").unwrap(), None);

    // A range not covering the key: no conflict.
    let mut txn = db.transaction();
    txn.get_for_update(b"a").unwrap();
    db.delete_range(&wo, b"b", b"y").unwrap();
    txn.put(b"a", b"t").unwrap();
    txn.commit().unwrap();

    // A range tombstone that reached an SST: still a conflict, even for a
    // key that never existed.
    let mut txn = db.transaction();
    txn.get_for_update(b"never").unwrap();
    txn.put(b"out", b"t").unwrap();
    db.delete_range(&wo, b"n", b"o").unwrap();
    db.flush().unwrap();
    assert_eq!(conflict(txn.commit()).0, b"never");
}

#[test]
fn merges_read_through_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        merge_operator: Some(Arc::new(StringAppendOperator::new(","))),
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put(b"list", b"a").unwrap();
    let mut txn = db.transaction();
    txn.merge(b"list", b"b").unwrap();
    txn.merge(b"list", b"c").unwrap();
    txn.merge(b"new", b"x").unwrap();
    txn.put(b"base", b"p").unwrap();
    txn.merge(b"base", b"q").unwrap();
    txn.delete(b"gone").unwrap();
    txn.merge(b"gone", b"g").unwrap();
    assert_eq!(txn.get(b"list").unwrap(), v("a,b,c"));
    assert_eq!(txn.get(b"new").unwrap(), v("x"));
    assert_eq!(txn.get(b"base").unwrap(), v("p,q"));
    assert_eq!(txn.get(b"gone").unwrap(), v("g"));
    let got: Vec<_> = txn
        .multi_get(&[&b"new"[..], b"list"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, vec![v("x"), v("a,b,c")]);
    let items: Vec<_> = txn.range(..).unwrap().rev().map(Result::unwrap).collect();
    assert_eq!(
        items,
        vec![
            (b"new".to_vec(), b"x".to_vec()),
            (b"list".to_vec(), b"a,b,c".to_vec()),
            (b"gone".to_vec(), b"g".to_vec()),
            (b"base".to_vec(), b"p,q".to_vec()),
        ]
    );
    txn.commit().unwrap();
    assert_eq!(db.get(b"list").unwrap(), v("a,b,c"));
    assert_eq!(db.get(b"base").unwrap(), v("p,q"));

    // Without an operator, reading a key with pending merges is an error.
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = open(&dir2);
    let mut txn = db2.transaction();
    txn.merge(b"k", b"x").unwrap();
    assert!(matches!(txn.get(b"k"), Err(Error::InvalidArgument(_))));
    assert!(txn.multi_get(&[b"k"])[0].is_err());
}

/// Transfers between accounts from several threads: the total never
/// changes, whatever the interleaving, and every reader inside a
/// transaction sees a consistent total.
#[test]
fn concurrent_transfers_keep_the_total() {
    const ACCOUNTS: u64 = 8;
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for a in 0..ACCOUNTS {
        db.put(common::key(a), b"100").unwrap();
    }
    let num =
        |v: Option<Vec<u8>>| -> i64 { String::from_utf8(v.unwrap()).unwrap().parse().unwrap() };
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                for _ in 0..100 {
                    let (from, to) = (rng.random_range(0..ACCOUNTS), rng.random_range(0..ACCOUNTS));
                    if from == to {
                        continue;
                    }
                    loop {
                        let mut txn = db.transaction();
                        let a = num(txn.get_for_update(common::key(from)).unwrap());
                        let b = num(txn.get_for_update(common::key(to)).unwrap());
                        txn.put(common::key(from), (a - 7).to_string()).unwrap();
                        txn.put(common::key(to), (b + 7).to_string()).unwrap();
                        // A snapshot read of all accounts is consistent.
                        let keys: Vec<_> = (0..ACCOUNTS).map(common::key).collect();
                        let total: i64 = txn
                            .multi_get(&keys)
                            .into_iter()
                            .map(|r| num(r.unwrap()))
                            .sum();
                        assert_eq!(total, (100 * ACCOUNTS) as i64);
                        match txn.commit() {
                            Ok(()) => break,
                            Err(e) if e.is_conflict() => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total: i64 = (0..ACCOUNTS)
        .map(|a| num(db.get(common::key(a)).unwrap()))
        .sum();
    assert_eq!(total, (100 * ACCOUNTS) as i64);
}
