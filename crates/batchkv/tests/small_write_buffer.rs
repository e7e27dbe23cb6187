//! A tiny write buffer still holds many writes (issue 12: with
//! `write_buffer_size=4096` the memtable's first 4 KiB arena block made it
//! "full", so every write froze a memtable and flushed a one-entry table).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, Options};

#[test]
fn a_4k_write_buffer_holds_dozens_of_small_writes() {
    for memtable in ["skiplist", "vector"] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            write_buffer_size: 4096,
            disable_auto_compactions: true,
            memtable: memtable.parse().unwrap(),
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..400u64 {
            db.put(common::key(i), b"0123456789").unwrap();
        }
        db.flush().unwrap();
        let flushes = db.stats().flushes;
        // ~60 bytes per entry: ~60 per 4 KiB memtable, so ~7 flushes.
        assert!(
            (2..=20).contains(&flushes),
            "{memtable}: 400 writes made {flushes} flushes"
        );
        for i in 0..400u64 {
            assert_eq!(
                db.get(common::key(i)).unwrap(),
                Some(b"0123456789".to_vec())
            );
        }
    }
}
