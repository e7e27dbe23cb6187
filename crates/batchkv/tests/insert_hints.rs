//! Read-modify-write with insert hints (`Db::multi_get_hinted`,
//! `WriteBatch::put_hinted`): the hinted read answers as `multi_get_with`
//! does, every key of a batched read gets a hint, and writes carrying hints
//! store exactly what plain writes store: across a memtable switch between
//! the read and the write, after a save point rolls hinted entries back,
//! and with other threads writing next to the hinted keys.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::sync::atomic::{AtomicBool, Ordering};

use batchkv::{Db, InsertHint, Options, ReadOptions, WriteBatch, WriteOptions};

fn k(i: u64) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

fn open(dir: &std::path::Path) -> Db {
    let opts: Options = "memtable=skiplist;write_buffer_size=64MB".parse().unwrap();
    Db::open(dir, opts).unwrap()
}

/// The values and hints of `keys` by a hinted read, in input order.
type Read = (Vec<Option<Vec<u8>>>, Vec<Option<InsertHint>>);

fn read_hinted(db: &Db, keys: &[Vec<u8>]) -> Read {
    let mut values = vec![None; keys.len()];
    let mut hints = vec![None; keys.len()];
    db.multi_get_hinted(
        &ReadOptions::default(),
        keys,
        |i, r| values[i] = r.unwrap().map(<[u8]>::to_vec),
        &mut |i, h| {
            assert!(hints[i].replace(h).is_none(), "key {i} hinted twice");
        },
    );
    (values, hints)
}

/// Adds 1 to the counters `keys` (absent: 0) with one hinted read and one
/// hinted write.
fn increment(db: &Db, keys: &[Vec<u8>]) {
    let (values, hints) = read_hinted(db, keys);
    let mut b = WriteBatch::new();
    for ((key, v), hint) in keys.iter().zip(values).zip(hints) {
        let n: u64 = v.map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
        b.put_hinted(key, (n + 1).to_string(), hint);
    }
    db.write(&WriteOptions::default(), b).unwrap();
}

#[test]
fn a_hinted_read_answers_as_a_plain_one_and_hints_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for i in (0..2000).step_by(2) {
        db.put(k(i), format!("v{i}")).unwrap();
    }
    // Present and absent keys, one duplicate, out of order.
    let keys: Vec<Vec<u8>> = [7, 4, 1999, 0, 4, 1000, 3].iter().map(|&i| k(i)).collect();
    let (values, hints) = read_hinted(&db, &keys);
    let plain: Vec<Option<Vec<u8>>> = db
        .multi_get(&ReadOptions::default(), &keys)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(values, plain);
    assert!(hints.iter().all(Option::is_some), "{hints:?}");
    assert_eq!(hints[1], hints[4], "a duplicate gets its key's hint");
}

#[test]
fn hinted_writes_store_what_plain_writes_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let keys: Vec<Vec<u8>> = (0..300).map(|i| k(i * 7 % 1000)).collect();
    let hinted = |db: &Db| db.statistics().hinted_inserts;
    for _ in 0..5 {
        increment(&db, &keys);
    }
    // About 3 in 4 new nodes are one level tall and start at their hint.
    let taken = hinted(&db);
    assert!(
        taken > 500 && taken <= 1500,
        "{taken} of 1500 hinted inserts"
    );
    // A memtable switch between the read and the write: the hints are of
    // the memtable now flushed, and must be ignored.
    let (values, hints) = read_hinted(&db, &keys);
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    for ((key, v), hint) in keys.iter().zip(values).zip(hints) {
        assert_eq!(v.as_deref(), Some(&b"5"[..]));
        b.put_hinted(key, "6", hint);
    }
    db.write(&WriteOptions::default(), b).unwrap();
    assert_eq!(
        hinted(&db),
        taken,
        "hints of a flushed memtable are not taken"
    );
    // Hinted entries after a save point are rolled back with it.
    let (_, hints) = read_hinted(&db, &keys[..2]);
    let mut b = WriteBatch::new();
    b.put_hinted(&keys[0], "7", hints[0]);
    b.set_save_point();
    b.put_hinted(&keys[1], "7", hints[1]);
    b.rollback_to_save_point().unwrap();
    b.put(&keys[1], "8");
    db.write(&WriteOptions::default(), b).unwrap();
    let got: Vec<Option<Vec<u8>>> = db
        .multi_get(&ReadOptions::default(), &keys)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got[0].as_deref(), Some(&b"7"[..]));
    assert_eq!(got[1].as_deref(), Some(&b"8"[..]));
    assert!(got[2..].iter().all(|v| v.as_deref() == Some(&b"6"[..])));
    // The iterator sees each key once, in order.
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        assert!(last.as_deref() < Some(it.key()));
        last = Some(it.key().to_vec());
        n += 1;
        it.next();
    }
    let mut distinct = keys.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(n, distinct.len());
}

/// Threads increment their own counters with hinted read-modify-writes
/// while another thread writes the keys between them: the hints go stale
/// between read and write, and no increment is lost.
#[test]
fn concurrent_hinted_increments_lose_nothing() {
    const THREADS: u64 = 3;
    const ROUNDS: u64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (db, stop) = (&db, &stop);
        s.spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Odd keys: between every two counters.
                db.put(k((i % 2000) * 2 + 1), "x").unwrap();
                i += 1;
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    // Thread t's counters: even keys ≡ 2t (mod 2 THREADS).
                    let keys: Vec<Vec<u8>> = (0..50).map(|j| k((j * THREADS + t) * 2)).collect();
                    for _ in 0..ROUNDS {
                        increment(db, &keys);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    for t in 0..THREADS {
        for j in 0..50 {
            let v = db.get(k((j * THREADS + t) * 2)).unwrap();
            assert_eq!(v.as_deref(), Some(ROUNDS.to_string().as_bytes()));
        }
    }
}
