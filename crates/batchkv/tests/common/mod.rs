//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod gate_fs;
pub mod power_loss;
pub mod read_paths;

use batchkv::{Db, DbIterator, Options, ReadOptions};

/// Options with tiny memtables so tests exercise flushes to SST files.
pub fn small_buffers() -> Options {
    Options {
        write_buffer_size: 64 * 1024,
        max_write_buffer_number: 3,
        ..opts()
    }
}

/// The WAL with the largest number in `dir`.
pub fn newest_wal(dir: &std::path::Path) -> std::path::PathBuf {
    let mut wals: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    wals.sort();
    wals.pop().expect("a WAL")
}

/// Every live key/value, via a forward scan.
pub fn scan_all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    drain(&mut db.iter(&ReadOptions::default()).unwrap())
}

/// Every key/value `it` shows, from its first key on (checking its status).
pub fn drain(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// The memtables every Db test runs against (`memtable` option specs; the
/// sorted-hash bucket array is kept small enough for tiny write buffers).
pub const MEMTABLES: [&str; 3] = ["skiplist", "vector", "sorted_hash:2048:64"];

/// Names the memtable for a child process (kill9 tests).
pub const MEMTABLE_ENV: &str = "BATCHKV_TEST_MEMTABLE";

thread_local! {
    static MEMTABLE: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// The memtable spec of the running test body: set by
/// [`for_each_memtable`], else from [`MEMTABLE_ENV`], else `skiplist`.
pub fn memtable() -> String {
    MEMTABLE
        .get()
        .map(String::from)
        .or_else(|| std::env::var(MEMTABLE_ENV).ok())
        .unwrap_or_else(|| "skiplist".into())
}

/// Default options with the running test body's memtable.
pub fn opts() -> Options {
    Options {
        memtable: memtable().parse().unwrap(),
        ..Options::default()
    }
}

/// Runs `body` once per memtable in [`MEMTABLES`], with [`opts`] and
/// [`small_buffers`] returning options for that memtable.
pub fn for_each_memtable(body: impl Fn(&str)) {
    for m in MEMTABLES {
        eprintln!("--- memtable={m}");
        MEMTABLE.set(Some(m));
        body(m);
    }
    MEMTABLE.set(None);
}
