//! Helpers shared by the integration tests.
#![allow(dead_code)]

use batchkv::{Db, Options, ReadOptions};

/// Options with tiny memtables so tests exercise flushes to SST files.
pub fn small_buffers() -> Options {
    Options {
        write_buffer_size: 64 * 1024,
        max_write_buffer_number: 3,
        ..Options::default()
    }
}

/// Every live key/value, via a forward scan.
pub fn scan_all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
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
