//! `Db::multi_get` gives the same answers as one `get` per key for every
//! batch strategy: duplicate keys in a batch, many versions of a key with
//! snapshots between them, tombstones, keys outside the stored range, empty
//! batches, and keys spread over the memtable, immutable memtables and SSTs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use batchkv::{BatchLookup, Db, Options, ReadOptions, WriteBatch, WriteOptions};
use proptest::prelude::*;

const STRATEGIES: [BatchLookup; 4] = [
    BatchLookup::PerKey,
    BatchLookup::Finger,
    BatchLookup::Bfs,
    BatchLookup::Auto,
];

/// A xorshift64 generator from `seed` (non-zero): reproducible batches.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

fn key(k: u16) -> Vec<u8> {
    format!("k{k:04}").into_bytes()
}

#[test]
fn duplicates_versions_tombstones_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut snaps = Vec::new();
    for v in 0..5u8 {
        db.put("a", [v]).unwrap();
        db.put("c", [v]).unwrap();
        if v == 3 {
            db.delete("c").unwrap();
        }
        snaps.push(db.snapshot());
    }
    let batch: Vec<&[u8]> = vec![b"c", b"a", b"a", b"0", b"b", b"zz", b"c", b"a"];
    for s in STRATEGIES {
        for (v, snap) in snaps.iter().enumerate() {
            let ro = ReadOptions {
                snapshot: Some(snap.clone()),
                batch_lookup: Some(s),
                ..ReadOptions::default()
            };
            let got: Vec<Option<Vec<u8>>> = db
                .multi_get(&ro, &batch)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            let a = Some(vec![v as u8]);
            let c = if v >= 3 {
                (v == 4).then(|| vec![4u8])
            } else {
                Some(vec![v as u8])
            };
            assert_eq!(
                got,
                vec![c.clone(), a.clone(), a.clone(), None, None, None, c, a],
                "{s:?} at snapshot {v}"
            );
        }
        let ro = ReadOptions {
            batch_lookup: Some(s),
            ..ReadOptions::default()
        };
        assert!(db.multi_get(&ro, &[] as &[&[u8]]).is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_strategy_matches_get_across_memtables_and_ssts(
        writes in proptest::collection::vec((0..300u16, proptest::option::of(any::<u8>())), 1..1500),
        flush_every in 50..600usize,
        batches in proptest::collection::vec(proptest::collection::vec(0..320u16, 0..80), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { write_buffer_size: 16 * 1024, max_write_buffer_number: 4, ..Options::default() };
        let db = Db::open(dir.path(), opts).unwrap();
        let mut snaps = Vec::new();
        for (i, (k, v)) in writes.iter().enumerate() {
            let mut b = WriteBatch::new();
            match v {
                Some(v) => b.put(key(*k), vec![*v; 20]),
                None => b.delete(key(*k)),
            }
            db.write(&WriteOptions::default(), b).unwrap();
            if i % flush_every == flush_every - 1 {
                db.flush().unwrap();
            }
            if i % 200 == 0 {
                snaps.push(Some(db.snapshot()));
            }
        }
        snaps.push(None);
        for snap in &snaps {
            for batch in &batches {
                let keys: Vec<Vec<u8>> = batch.iter().map(|&k| key(k)).collect();
                let base = ReadOptions { snapshot: snap.clone(), ..ReadOptions::default() };
                let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get_opt(&base, k).unwrap()).collect();
                for s in STRATEGIES {
                    let ro = ReadOptions { batch_lookup: Some(s), ..base.clone() };
                    let got: Vec<Option<Vec<u8>>> = db.multi_get(&ro, &keys).into_iter().map(|r| r.unwrap()).collect();
                    prop_assert_eq!(&got, &want, "strategy {:?}", s);
                }
            }
        }
    }
}

/// The SST stage of `multi_get` asks each table once for all the keys in its
/// range: keys spread over several non-overlapping files per level, under
/// overlapping L0 files (some spanning every key, some a narrow range)
/// holding newer versions and tombstones, read at snapshots taken between
/// the rounds, give the same answers as `get`.
#[test]
fn sst_stage_matches_get_across_files_levels_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 * 1024,
        block_size: 512,
        target_file_size_base: 16 * 1024,
        compression: batchkv::CompressionType::None,
        max_bytes_for_level_base: 128 * 1024,
        disable_auto_compactions: true,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let value = |k: u16, round: u16| {
        format!("v{k}-{round}-{}", "x".repeat(usize::from(k % 50))).into_bytes()
    };
    // Round 0: every even key, compacted to the bottom in many files.
    for k in (0..4000u16).step_by(2) {
        db.put(key(k), value(k, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let mut snaps = vec![Some(db.snapshot())];
    // Rounds 1-3: overwrites and deletes, each flushed to its own L0 file.
    for round in 1..4u16 {
        for k in (round..4000).step_by(7) {
            if k % 3 == 0 {
                db.delete(key(k)).unwrap();
            } else {
                db.put(key(k), value(k, round)).unwrap();
            }
        }
        db.flush().unwrap();
        snaps.push(Some(db.snapshot()));
    }
    // Rounds 4-5: narrow L0 files (newest, a sub-range each), so that one
    // batch has keys below, inside and above a table's range.
    for (round, range) in [(4u16, 1000..1400u16), (5, 2500..2600)] {
        for k in range {
            if k % 5 == 0 {
                db.delete(key(k)).unwrap();
            } else {
                db.put(key(k), value(k, round)).unwrap();
            }
        }
        db.flush().unwrap();
        snaps.push(Some(db.snapshot()));
    }
    snaps.push(None);
    let files = db.stats().files_per_level;
    assert!(files[0] >= 5, "L0 files: {files:?}");
    assert!(
        files[1..].iter().sum::<usize>() >= 4,
        "deeper files: {files:?}"
    );

    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for snap in &snaps {
        let ro = ReadOptions {
            snapshot: snap.clone(),
            ..ReadOptions::default()
        };
        for size in [1usize, 2, 8, 64, 500] {
            let keys: Vec<Vec<u8>> = (0..size).map(|_| key((next() % 4100) as u16)).collect();
            let want: Vec<Option<Vec<u8>>> =
                keys.iter().map(|k| db.get_opt(&ro, k).unwrap()).collect();
            let got: Vec<Option<Vec<u8>>> = db
                .multi_get(&ro, &keys)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(got, want, "batch of {size}");
            assert!(
                want.iter().any(Option::is_some) || size < 8,
                "batch of {size} found nothing"
            );
        }
    }
}

/// Keys that differ in two places, as a server's collection elements
/// (`collection ‖ version ‖ element`): each table's index holds dozens of
/// blocks of one collection, which the index's first-level fences cannot
/// tell apart (its second level can). Batches of one collection's
/// elements, present and absent, and of elements spread over many
/// collections, read from L0 and from compacted files, give the answers of
/// `get`.
#[test]
fn sst_stage_matches_get_for_collection_element_keys() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 256 * 1024,
        block_size: 1024,
        target_file_size_base: 128 * 1024,
        disable_auto_compactions: true,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let element = |c: u32, e: u32| {
        let mut k = vec![0x12, 0];
        k.extend_from_slice(&14u32.to_be_bytes());
        k.extend_from_slice(format!("h:{c:012}").as_bytes());
        k.extend_from_slice(&(1_764_000_000_000_000u64 + 131 * u64::from(c)).to_be_bytes());
        k.extend_from_slice(format!("f:{e:012}").as_bytes());
        k
    };
    // 60 collections of 300 elements (even numbers only), 40-byte values.
    for c in 0..60u32 {
        let mut b = WriteBatch::new();
        for e in (0..600u32).step_by(2) {
            b.put(element(c, e), format!("{c}-{e}-{}", "v".repeat(30)));
        }
        db.write(&WriteOptions::default(), b).unwrap();
    }
    db.flush().unwrap();
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    // Collections 60 and 61 and odd or large element numbers are absent.
    let mut check = |db: &Db, what: &str| {
        let (mut found, mut absent) = (0, 0);
        for round in 0..20 {
            let keys: Vec<Vec<u8>> = if round % 2 == 0 {
                // 100 elements of one collection (two thirds absent).
                let c = (next() % 62) as u32;
                (0..100)
                    .map(|_| element(c, (next() % 900) as u32))
                    .collect()
            } else {
                (0..200)
                    .map(|_| element((next() % 62) as u32, (next() % 900) as u32))
                    .collect()
            };
            let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
            let got: Vec<Option<Vec<u8>>> = db
                .multi_get(&ReadOptions::default(), &keys)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(got, want, "{what}, round {round}");
            found += want.iter().filter(|v| v.is_some()).count();
            absent += want.iter().filter(|v| v.is_none()).count();
        }
        assert!(
            found > 500 && absent > 500,
            "{what}: {found} found, {absent} absent"
        );
    };
    assert!(
        db.stats().files_per_level[0] >= 2,
        "{:?}",
        db.stats().files_per_level
    );
    check(&db, "L0");
    db.compact_range(None, None).unwrap();
    check(&db, "compacted");
}
