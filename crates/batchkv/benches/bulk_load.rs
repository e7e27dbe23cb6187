//! Bulk loading N sorted keys (16-byte keys, 100-byte values) three ways,
//! each into a fresh database, rounds alternating, median of 3:
//! - `writer+ingest(copy)`: `SstFileWriter` builds one table, then
//!   `ingest_external_file` copies it in;
//! - `writer+ingest(move)`: the same, with `move_files` (a hard link);
//! - `write_batch+flush`: `WriteBatch`es of 1,000 puts (WAL on, no sync),
//!   then `flush` (background compaction may continue afterwards and is
//!   not timed).
//!
//! Each figure is wall time and the process's CPU time (user + system,
//! every thread: the puts' flushes run on a second core meanwhile), the
//! latter steadier on a shared machine. The table layout each load leaves
//! is printed too: the ingested table sits in the last level, with no
//! compaction debt.
//!
//! `cargo bench -p batchkv --bench bulk_load` (N = 1,000,000;
//! `BATCHKV_BULK_N` overrides it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark's setup fails by panicking"
)]

use std::path::Path;
use std::time::Instant;

use batchkv::{Db, IngestOptions, Options, SstFileWriter, WriteBatch, WriteOptions};

/// CPU seconds (user + system) this process has used so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// Wall and CPU seconds since `(start, cpu0)`.
fn elapsed(start: Instant, cpu0: f64) -> (f64, f64) {
    (start.elapsed().as_secs_f64(), cpu_seconds() - cpu0)
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(format!("{i:016}").as_bytes());
    k
}

/// 100 bytes: the key's number, then filler that compresses about 2:1.
fn value(i: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(format!("{i:020}").as_bytes());
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while buf.len() < 100 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.push(b'a' + (x % 4) as u8);
    }
}

/// Spot-checks the data and prints where it ended up.
fn check(db: &Db, n: u64) {
    let s = db.stats();
    println!(
        "    files per level {:?}, {} bytes in tables",
        s.files_per_level,
        s.sst_bytes_per_level.iter().sum::<u64>()
    );
    let mut v = Vec::new();
    for i in [0, n / 2, n - 1] {
        value(i, &mut v);
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&v[..]), "key {i}");
    }
}

fn via_ingest(dir: &Path, n: u64, move_files: bool) -> (f64, f64) {
    let opts = Options::default();
    let db = Db::open(dir.join("db"), opts.clone()).unwrap();
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    let sst = dir.join("bulk.sst");
    let mut w = SstFileWriter::create(&sst, &opts).unwrap();
    let mut v = Vec::new();
    for i in 0..n {
        value(i, &mut v);
        w.put(key(i), &v).unwrap();
    }
    w.finish().unwrap();
    let ingest = IngestOptions {
        move_files,
        ..IngestOptions::default()
    };
    db.ingest_external_file(&[&sst], &ingest).unwrap();
    let secs = elapsed(start, cpu0);
    check(&db, n);
    db.close().unwrap();
    secs
}

fn via_write_batch(dir: &Path, n: u64) -> (f64, f64) {
    let db = Db::open(dir.join("db"), Options::default()).unwrap();
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    let mut v = Vec::new();
    let mut b = WriteBatch::new();
    for i in 0..n {
        value(i, &mut v);
        b.put(key(i), &v);
        if b.len() == 1000 || i == n - 1 {
            db.write(&WriteOptions::default(), std::mem::take(&mut b))
                .unwrap();
        }
    }
    db.flush().unwrap();
    let secs = elapsed(start, cpu0);
    check(&db, n);
    db.close().unwrap();
    secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: u64 = std::env::var("BATCHKV_BULK_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let names = [
        "writer+ingest(copy)",
        "writer+ingest(move)",
        "write_batch+flush",
    ];
    let mut times: Vec<Vec<(f64, f64)>> = vec![Vec::new(); names.len()];
    for round in 0..3 {
        for (m, name) in names.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let secs = match m {
                0 => via_ingest(dir.path(), n, false),
                1 => via_ingest(dir.path(), n, true),
                _ => via_write_batch(dir.path(), n),
            };
            println!(
                "round {round} {name}: {:.3} s wall, {:.3} s CPU",
                secs.0, secs.1
            );
            times[m].push(secs);
        }
    }
    for (name, t) in names.iter().zip(times) {
        let wall = median(t.iter().map(|x| x.0).collect());
        let cpu = median(t.iter().map(|x| x.1).collect());
        println!(
            "{name:22} median {wall:.3} s wall ({:.2} M keys/s), {cpu:.3} s CPU",
            n as f64 / wall / 1e6
        );
    }
}
