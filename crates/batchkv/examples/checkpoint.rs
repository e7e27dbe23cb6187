//! Take a checkpoint (a consistent, openable copy) of a live database
//! while a writer keeps writing, then open the copy read-only and writable.
//! `cargo run -p batchkv --example checkpoint`

#![allow(clippy::expect_used, reason = "a panicked writer thread is re-raised")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use batchkv::{Db, Error, Options, ReadOptions};

fn key(i: u64) -> String {
    format!("event:{i:08}")
}

fn main() -> batchkv::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let db = Db::open(tmp.path().join("live"), Options::default())?;

    // A writer appends events 0, 1, 2, … and publishes how many it has
    // written (each put is acknowledged before the count moves past it).
    let written = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, written, stop) = (db.clone(), Arc::clone(&written), Arc::clone(&stop));
        std::thread::spawn(move || -> batchkv::Result<()> {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) || i < 1000 {
                db.put(key(i), i.to_string())?;
                i += 1;
                // Release: a reader of the count sees this put acknowledged.
                written.store(i, Ordering::Release);
            }
            Ok(())
        })
    };
    while written.load(Ordering::Acquire) < 500 {
        std::thread::yield_now();
    }

    // Everything acknowledged before the call is in the checkpoint.
    let before = written.load(Ordering::Acquire);
    let copy = tmp.path().join("checkpoint");
    db.checkpoint(&copy)?;
    stop.store(true, Ordering::Release);
    writer.join().expect("writer thread panicked")?;
    let total = written.load(Ordering::Acquire);

    // Read-only: no lock, nothing written; writes are refused.
    let ro = Db::open_read_only(&copy, Options::default())?;
    let in_copy = ro.iter(&ReadOptions::default())?.count_keys()?;
    assert!(in_copy >= before && in_copy <= total);
    for i in [0, before / 2, before - 1] {
        assert_eq!(ro.get(key(i))?, Some(i.to_string().into_bytes()));
    }
    assert!(matches!(ro.put("x", "y"), Err(Error::ReadOnly(_))));
    drop(ro);
    println!("checkpoint holds {in_copy} events ({before} acknowledged before it, {total} written in all)");

    // Writable: the copy is a database of its own from here on.
    let forked = Db::open(&copy, Options::default())?;
    forked.put("note", "forked")?;
    assert_eq!(db.get("note")?, None);
    forked.close()?;
    db.close()
}

/// Counting keys with the iterator API (an iterator that stops early
/// reports why in `status()`).
trait CountKeys {
    fn count_keys(self) -> batchkv::Result<u64>;
}

impl CountKeys for batchkv::DbIterator {
    fn count_keys(mut self) -> batchkv::Result<u64> {
        let mut n = 0;
        self.seek_to_first();
        while self.valid() {
            n += 1;
            self.next();
        }
        self.status().map(|()| n)
    }
}

#[test]
fn runs() {
    main().unwrap();
}
