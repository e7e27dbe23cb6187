//! One block [`Cache`] shared by several databases and their column
//! families: each database reads its own data — the two databases here
//! write the same keys into tables with the same file numbers and block
//! offsets, so cache keys made of (file number, offset) would collide —
//! and every block is charged once against the one capacity.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Cache, CompressionType, Db, Options, ReadOptions};

const N: u64 = 20_000;

/// Values of equal length in both databases (so their tables have the same
/// block offsets), different content.
fn value(db: &str, i: u64) -> Vec<u8> {
    format!("{db}-value-{i:08}-{}", "x".repeat(40)).into_bytes()
}

fn opts(cache: Option<&Cache>) -> Options {
    Options {
        block_cache: cache.cloned(),
        compression: CompressionType::None,
        ..common::opts()
    }
}

/// A database `name` in `dir` holding keys `0..N` in one SST file.
fn fill(dir: &std::path::Path, name: &str) {
    let db = Db::open(dir.join(name), opts(None)).unwrap();
    for i in 0..N {
        db.put(common::key(i), value(name, i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
}

/// Reads every key of database `name` (half with `get`, half with
/// `multi_get`) and checks each value.
fn read_all(db: &Db, name: &str) {
    for i in 0..N / 2 {
        assert_eq!(
            db.get(common::key(i)).unwrap(),
            Some(value(name, i)),
            "{name}: key {i}"
        );
    }
    let keys: Vec<Vec<u8>> = (N / 2..N).map(common::key).collect();
    for (chunk_start, chunk) in keys.chunks(64).enumerate() {
        let got = db.multi_get(&ReadOptions::default(), chunk);
        for (j, r) in got.into_iter().enumerate() {
            let i = N / 2 + (chunk_start * 64 + j) as u64;
            assert_eq!(r.unwrap(), Some(value(name, i)), "{name}: key {i}");
        }
    }
}

/// Bytes of blocks reading all of `name` puts in a cache of its own.
fn usage_alone(dir: &std::path::Path, name: &str) -> usize {
    let cache = Cache::new(64 << 20);
    let db = Db::open(dir.join(name), opts(Some(&cache))).unwrap();
    read_all(&db, name);
    db.close().unwrap();
    cache.usage()
}

#[test]
fn two_databases_sharing_a_cache_read_their_own_data_charged_once() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), "a");
    fill(dir.path(), "b");
    let (alone_a, alone_b) = (usage_alone(dir.path(), "a"), usage_alone(dir.path(), "b"));
    assert!(alone_a > 0 && alone_b > 0, "{alone_a} {alone_b}");

    let shared = Cache::new(64 << 20);
    let a = Db::open(dir.path().join("a"), opts(Some(&shared))).unwrap();
    let b = Db::open(dir.path().join("b"), opts(Some(&shared))).unwrap();
    read_all(&a, "a");
    assert_eq!(shared.usage(), alone_a);
    // b's blocks sit under the same file numbers and offsets as a's: had
    // they shared keys, b would read a's values here.
    read_all(&b, "b");
    assert_eq!(shared.usage(), alone_a + alone_b, "each block charged once");
    // Everything is cached now: a second pass hits and adds nothing.
    let misses = a.statistics().block_cache_misses;
    read_all(&a, "a");
    read_all(&b, "b");
    assert_eq!(shared.usage(), alone_a + alone_b);
    assert_eq!(a.statistics().block_cache_misses, misses);
    assert!(a.statistics().block_cache_hits > 0);
    a.close().unwrap();
    b.close().unwrap();

    // A cache smaller than both databases' blocks: reads stay correct and
    // the two together stay within the one capacity.
    let small = Cache::new((alone_a + alone_b) / 4);
    let a = Db::open(dir.path().join("a"), opts(Some(&small))).unwrap();
    let b = Db::open(dir.path().join("b"), opts(Some(&small))).unwrap();
    for _ in 0..2 {
        read_all(&a, "a");
        assert!(small.usage() <= small.capacity());
        read_all(&b, "b");
        assert!(small.usage() <= small.capacity());
    }
    assert!(small.usage() > 0);
}

#[test]
fn column_families_use_their_databases_shared_cache() {
    let dir = tempfile::tempdir().unwrap();
    let shared = Cache::new(64 << 20);
    let db = Db::open(dir.path().join("db"), opts(Some(&shared))).unwrap();
    // The family's own options name no cache: the block cache is
    // database-wide, so the family gets the database's.
    let cf = db.create_cf("other", &opts(None)).unwrap();
    assert!(cf.options().block_cache.is_some());
    for i in 0..N {
        db.put_cf(&cf, common::key(i), value("cf", i)).unwrap();
    }
    db.flush_cf(&cf).unwrap();
    let before = shared.usage();
    for i in (0..N).step_by(97) {
        assert_eq!(
            db.get_cf(&cf, common::key(i)).unwrap(),
            Some(value("cf", i))
        );
    }
    assert!(
        shared.usage() > before,
        "the family's blocks went to the shared cache"
    );
}

#[test]
fn without_a_shared_cache_each_database_has_its_own() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), "a");
    let db = Db::open(
        dir.path().join("a"),
        Options {
            block_cache_size: 1 << 20,
            ..opts(None)
        },
    )
    .unwrap();
    read_all(&db, "a");
    let s = db.statistics();
    assert!(s.block_cache_misses > 0);
    // The OPTIONS file records the size and no shared cache.
    let text = std::fs::read_to_string(dir.path().join("a/OPTIONS")).unwrap();
    assert!(text.contains("block_cache_size=1048576"), "{text}");
    assert!(!text.contains("block_cache:"), "{text}");
}
