//! 4 writer threads and 2 reader threads run random operations; every read
//! is checked against what the writers can have written, and the final state
//! equals the writers' models.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use batchkv::{Db, ReadOptions, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const WRITERS: u64 = 4;
const KEYS_PER_WRITER: u64 = 200;
const OPS_PER_WRITER: u64 = 4000;

/// Writer `w` owns keys `w{w}-k{i}`; values are `w{w}-k{i}-v{version}`.
fn k(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-k{i:04}").into_bytes()
}

#[test]
fn four_writers_two_readers_match_the_model() {
    common::for_each_memtable(|_| four_writers_two_readers_match_the_model_with());
}

fn four_writers_two_readers_match_the_model_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let db = db.clone();
        writers.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(w);
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for op in 0..OPS_PER_WRITER {
                let i = rng.random_range(0..KEYS_PER_WRITER);
                match rng.random_range(0..10) {
                    0..=5 => {
                        let v = format!("w{w}-k{i:04}-v{op}").into_bytes();
                        db.put(k(w, i), &v).unwrap();
                        model.insert(k(w, i), v);
                    }
                    6 => {
                        db.delete(k(w, i)).unwrap();
                        model.remove(&k(w, i));
                    }
                    7 => {
                        let mut b = WriteBatch::new();
                        for j in 0..5 {
                            let key = k(w, (i + j) % KEYS_PER_WRITER);
                            let v = format!("w{w}-k{:04}-v{op}", (i + j) % KEYS_PER_WRITER)
                                .into_bytes();
                            b.put(&key, &v);
                            model.insert(key, v);
                        }
                        db.write(&WriteOptions::default(), b).unwrap();
                    }
                    _ => {
                        // Read-your-writes, single and batched.
                        assert_eq!(db.get(k(w, i)).unwrap(), model.get(&k(w, i)).cloned());
                        let keys: Vec<Vec<u8>> = (0..8)
                            .map(|j| k(w, (i * 7 + j * 13) % KEYS_PER_WRITER))
                            .collect();
                        let got = db.multi_get(&ReadOptions::default(), &keys);
                        for (key, r) in keys.iter().zip(got) {
                            assert_eq!(r.unwrap(), model.get(key).cloned());
                        }
                    }
                }
            }
            model
        }));
    }
    let mut readers = Vec::new();
    for r in 0..2u64 {
        let db = db.clone();
        let done = Arc::clone(&done);
        readers.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(100 + r);
            let mut checked = 0u64;
            while !done.load(Ordering::Acquire) {
                let w = rng.random_range(0..WRITERS);
                let i = rng.random_range(0..KEYS_PER_WRITER);
                let prefix = format!("w{w}-k{i:04}-v");
                if let Some(v) = db.get(k(w, i)).unwrap() {
                    assert!(
                        v.starts_with(prefix.as_bytes()),
                        "value {v:?} under key {i} of writer {w}"
                    );
                }
                let keys: Vec<Vec<u8>> = (0..16).map(|j| k(w, (i + j) % KEYS_PER_WRITER)).collect();
                for (j, res) in db
                    .multi_get(&ReadOptions::default(), &keys)
                    .into_iter()
                    .enumerate()
                {
                    if let Some(v) = res.unwrap() {
                        let want = format!("w{w}-k{:04}-v", (i + j as u64) % KEYS_PER_WRITER);
                        assert!(v.starts_with(want.as_bytes()), "{v:?} vs {want}");
                    }
                }
                checked += 1;
            }
            checked
        }));
    }
    let mut model = BTreeMap::new();
    for h in writers {
        model.extend(h.join().unwrap());
    }
    done.store(true, Ordering::Release);
    for h in readers {
        assert!(h.join().unwrap() > 0);
    }
    let all = common::scan_all(&db);
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    assert!(
        db.stats().flushes > 0,
        "the test must cross flushes: {:?}",
        db.stats()
    );
}
