//! Issue 12, bug 1: a deleted key came back after compaction. The picker
//! judged "bottommost" (tombstones may be dropped) from the upper-level
//! inputs' key range only; the next-level inputs reached past it, so the
//! tombstone of `k5` was dropped while its old value still lived deeper.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::time::{Duration, Instant};

use batchkv::{Db, Options};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

fn wait_for(db: &Db, what: &str, done: impl Fn(&batchkv::DbStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = db.stats();
        if done(&s) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn tombstone_is_kept_while_an_older_value_lives_deeper() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_bytes_for_level_base: 4096,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    // 8 KiB that does not compress: L1 overflows its 4 KiB target and
    // background compaction pushes the file on to L2.
    let mut old = vec![0u8; 8192];
    StdRng::seed_from_u64(5).fill_bytes(&mut old);
    db.put(b"k5", &old).unwrap();
    db.compact_range(None, None).unwrap();
    wait_for(&db, "k5's file to reach L2 alone", |s| {
        s.files_per_level.iter().sum::<usize>() == 1 && s.files_per_level[2] == 1
    });
    db.put(b"a", b"1").unwrap();
    db.put(b"z", b"1").unwrap();
    db.delete(b"k5").unwrap();
    // [a..z] with the tombstone goes to L1 (and on to L2 above k5's file
    // at L3 once the automatic compaction has moved things).
    db.compact_range(Some(b"a"), Some(b"a")).unwrap();
    db.put(b"m", b"1").unwrap();
    db.compact_range(Some(b"m"), Some(b"m")).unwrap();
    assert_eq!(
        db.get(b"k5").unwrap(),
        None,
        "deleted key resurrected: {:?}",
        db.stats()
    );
    db.close().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.get(b"k5").unwrap(), None, "after reopen");
}
