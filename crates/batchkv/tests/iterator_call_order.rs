//! No sequence of `DbIterator` calls panics (issue 12: `key()` before any
//! seek panicked). Unpositioned, `key()`/`value()` are empty and
//! `next()`/`prev()` do nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, ReadOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn any_call_order_is_safe() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::small_buffers()).unwrap();
        for i in 0..300u64 {
            db.put(common::key(i), format!("v{i}")).unwrap();
            if i == 150 {
                db.flush().unwrap();
            }
        }
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..50 {
            let mut it = db.iter(&ReadOptions::default()).unwrap();
            // Before any positioning call.
            assert!(!it.valid());
            assert!(it.key().is_empty() && it.value().is_empty());
            it.next();
            it.prev();
            for _ in 0..200 {
                match rng.random_range(0..8) {
                    0 => it.seek_to_first(),
                    1 => it.seek_to_last(),
                    2 => it.seek(common::key(rng.random_range(0..400))),
                    3 => it.seek_for_prev(common::key(rng.random_range(0..400))),
                    4 | 5 => it.next(),
                    _ => it.prev(),
                }
                if it.valid() {
                    let k = it.key().to_vec();
                    let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                    assert_eq!(it.value(), format!("v{i}").as_bytes());
                } else {
                    assert!(it.key().is_empty() && it.value().is_empty());
                }
                it.status().unwrap();
            }
        }
    });
}
