//! Regression (found while adding WAL-less writes to the crash test): an
//! acknowledged write with `disable_wal` that lands while a `flush()` is
//! waiting for its memtable to be written is lost by a clean `close()`.
//! `flush_and_wait` clears the database's "unpersisted" flag once the
//! memtables frozen before the write are flushed, although the write sits in
//! the new active memtable; `close()` then skips its final flush.
//!
//! Ignored until the engine fix lands (the engine is outside this crate's
//! scope); run it with `cargo test --release -p batchkv-cli --test
//! wal_less_write_racing_flush_survives_close -- --ignored`.

use std::time::Duration;

use batchkv::{Db, Options, WriteBatch, WriteOptions};

#[test]
#[ignore = "engine bug: flush() clears the unpersisted flag too late; un-ignore with the fix"]
fn wal_less_write_racing_flush_survives_clean_close() {
    let mut lost = Vec::new();
    for trial in 0..5u64 {
        let dir = tempfile::tempdir().unwrap();
        let opts: Options = "write_buffer_size=64MB".parse().unwrap();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        // Enough data that the flush below takes a while to write.
        let value = vec![b'x'; 100];
        for i in 0..50_000u32 {
            db.put(format!("a{i:08}"), &value).unwrap();
        }
        let flusher = {
            let db = db.clone();
            std::thread::spawn(move || db.flush())
        };
        std::thread::sleep(Duration::from_millis(2 + trial));
        let mut b = WriteBatch::new();
        b.put(b"wal-less", b"acknowledged");
        let wal_less = WriteOptions {
            sync: false,
            disable_wal: true,
        };
        db.write(&wal_less, b).unwrap();
        flusher.join().unwrap().unwrap();
        db.close().unwrap();

        let db = Db::open(dir.path(), opts).unwrap();
        if db.get(b"wal-less").unwrap().is_none() {
            lost.push(trial);
        }
        db.close().unwrap();
    }
    assert!(
        lost.is_empty(),
        "acknowledged WAL-less write lost by a clean close in trials {lost:?}"
    );
}
