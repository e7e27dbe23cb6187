//! Table-level tests: round trips through real and in-memory files, point
//! lookups at snapshots against a model, iteration both ways, and an
//! exhaustive single-byte corruption sweep.

use std::cmp::Ordering;
use std::sync::{Arc, Mutex};

use super::format::block_crc;
use super::{BlockReadOptions, CompressionType, Table, TableBuilder, TableOptions};
use crate::checksum::mask_crc;
use crate::error::Error;
use crate::fs::{FileSystem, PosixFs};
use crate::iter::{scan_backward, scan_forward, InternalIterator};
use crate::key::{append_internal_key, compare_internal_keys, parse_internal_key, ValueType};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

use super::tests_support::{build_in_memory, open_mem};
use crate::fs::mem::MemFile;

fn ik(user_key: &[u8], seq: u64, t: ValueType) -> Vec<u8> {
    let mut k = Vec::new();
    append_internal_key(&mut k, user_key, seq, t);
    k
}

/// A deterministic data set: `n_keys` user keys, key `i` with `1 + i % 4`
/// versions (some deletions), plus one "hot" key with many versions so they
/// span several blocks.
fn data_set(n_keys: usize) -> Entries {
    let mut v = Vec::new();
    let mut seq = 1u64;
    for i in 0..n_keys {
        let uk = format!("key{:06}", i * 3).into_bytes();
        for j in 0..(1 + i % 4) {
            let t = if (i + j) % 5 == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let val = if t == ValueType::Deletion {
                Vec::new()
            } else {
                format!("value-{i}-{j}-{}", "x".repeat(i % 13)).into_bytes()
            };
            v.push((ik(&uk, seq, t), val));
            seq += 1;
        }
    }
    for s in 0..150u64 {
        v.push((
            ik(b"key000300", 10_000 + s, ValueType::Value),
            format!("hot{s}").into_bytes(),
        ));
    }
    v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
    v.dedup_by(|a, b| compare_internal_keys(&a.0, &b.0) == Ordering::Equal);
    v
}

/// The model answer for `get(user_key, seq)`.
fn model_get(entries: &Entries, user_key: &[u8], seq: u64) -> Option<(ValueType, Vec<u8>)> {
    entries.iter().find_map(|(k, v)| {
        let p = parse_internal_key(k).unwrap();
        (p.user_key == user_key && p.sequence <= seq).then(|| (p.value_type, v.clone()))
    })
}

fn small_blocks() -> TableOptions {
    TableOptions {
        block_size: 200,
        restart_interval: 4,
        ..TableOptions::default()
    }
}

#[test]
fn round_trip_through_a_real_file() {
    let entries = data_set(300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let fs = PosixFs;
    let opts = small_blocks();
    let mut b = TableBuilder::new(
        fs.new_writable(&path).unwrap(),
        "000001.sst".into(),
        opts.clone(),
    )
    .unwrap();
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    assert!(b.estimated_file_size() > 0);
    let summary = b.finish().unwrap();
    assert_eq!(summary.num_entries, entries.len() as u64);
    assert_eq!(summary.smallest, entries[0].0);
    assert_eq!(summary.largest, entries.last().unwrap().0);
    let file = fs.open_random_access(&path).unwrap();
    assert_eq!(file.size(), summary.file_size);
    let table = Table::open(file, "000001.sst".into(), opts).unwrap();

    let p = table.properties();
    assert_eq!(p.num_entries, entries.len() as u64);
    let deletions = entries
        .iter()
        .filter(|(k, _)| parse_internal_key(k).unwrap().value_type == ValueType::Deletion)
        .count();
    assert_eq!(p.num_deletions, deletions as u64);
    assert_eq!(
        p.raw_key_bytes,
        entries.iter().map(|e| e.0.len() as u64).sum::<u64>()
    );
    assert_eq!(
        p.raw_value_bytes,
        entries.iter().map(|e| e.1.len() as u64).sum::<u64>()
    );
    assert!(p.num_data_blocks > 50, "{} blocks", p.num_data_blocks);
    assert_eq!(
        (
            p.data_block_restart_interval,
            p.index_block_restart_interval
        ),
        (4, 1)
    );
    assert_eq!(p.separate_key_value_in_data_block, 0);
    assert_eq!(p.compression_name, "none");
    assert!(p.creation_time > 1_600_000_000);
    assert_eq!(p.smallest_seqno, 1);
    assert_eq!(p.largest_seqno, 10_149);

    assert_eq!(scan_forward(&mut table.clone().iter()), entries);
    assert_eq!(scan_backward(&mut table.clone().iter()), entries);
    check_gets(&table, &entries);
    check_seeks(&table, &entries);
}

fn check_gets(table: &Table, entries: &Entries) {
    let mut user_keys: Vec<Vec<u8>> = entries
        .iter()
        .map(|(k, _)| parse_internal_key(k).unwrap().user_key.to_vec())
        .collect();
    user_keys.dedup();
    for uk in &user_keys {
        for seq in [
            0u64,
            1,
            2,
            50,
            333,
            700,
            10_000,
            10_075,
            10_148,
            10_149,
            u64::MAX >> 8,
        ] {
            assert_eq!(
                table.get(uk, seq).unwrap(),
                model_get(entries, uk, seq),
                "key {:?} at snapshot {seq}",
                String::from_utf8_lossy(uk)
            );
        }
        assert!(table.may_contain(uk));
    }
    // Absent keys between, before and after the present ones.
    let absent_keys = [&b""[..], b"a", b"key000001", b"key000300a", b"zzz"];
    for absent in absent_keys {
        assert_eq!(table.get(absent, u64::MAX >> 8).unwrap(), None);
    }
    // The batch path answers like the single-key one, for the whole key set
    // with the absent keys mixed in, and for every third key alone.
    let mut batch: Vec<&[u8]> = user_keys.iter().map(Vec::as_slice).collect();
    batch.extend(absent_keys);
    batch.sort();
    let thinned: Vec<&[u8]> = batch.iter().copied().step_by(3).collect();
    for seq in [0u64, 2, 333, 10_000, 10_075, 10_149, u64::MAX >> 8] {
        check_multi_get(table, &batch, seq);
        check_multi_get(table, &thinned, seq);
    }
}

/// `Table::multi_get_with` over ascending distinct `keys` equals a
/// `Table::get` of each key, and reports each key at most once.
fn check_multi_get(table: &Table, keys: &[&[u8]], seq: u64) {
    let mut got: Vec<Option<(ValueType, Vec<u8>)>> = vec![None; keys.len()];
    table.multi_get_with(keys, seq, BlockReadOptions::default(), &mut |j, r| {
        assert!(got[j].is_none(), "key {j} reported twice");
        got[j] = Some(r.map(|(t, v)| (t, v.to_vec())).unwrap());
    });
    for (j, k) in keys.iter().enumerate() {
        assert_eq!(
            got[j],
            table.get(k, seq).unwrap(),
            "multi_get of {:?} at snapshot {seq}",
            String::from_utf8_lossy(k)
        );
    }
}

fn check_seeks(table: &Arc<Table>, entries: &Entries) {
    let mut it = table.clone().iter();
    for (i, (k, v)) in entries.iter().enumerate() {
        it.seek(k);
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        it.seek_for_prev(k);
        assert_eq!(it.key(), &k[..]);
        // A target just after `k` (same user key, next-older trailer).
        let n = k.len();
        let tr = u64::from_le_bytes(k[n - 8..].try_into().unwrap()) - 1;
        let mut after = k[..n - 8].to_vec();
        after.extend_from_slice(&tr.to_le_bytes());
        it.seek(&after);
        match entries.get(i + 1) {
            Some((next, _)) => assert_eq!(it.key(), &next[..]),
            None => assert!(!it.valid()),
        }
        it.seek_for_prev(&after);
        assert_eq!(it.key(), &k[..]);
        if i > 0 {
            it.prev();
            assert_eq!(it.key(), &entries[i - 1].0[..]);
        }
    }
    it.seek(&ik(b"zzzz", 0, ValueType::Value));
    assert!(!it.valid());
    it.seek_for_prev(&ik(b"", u64::MAX >> 8, ValueType::Value));
    assert!(!it.valid());
    it.seek_for_prev(&ik(b"zzzz", 0, ValueType::Value));
    assert_eq!(it.key(), &entries.last().unwrap().0[..]);
    assert!(it.status().is_ok());
}

#[test]
fn versions_of_one_key_spanning_blocks_are_found_at_every_snapshot() {
    // One user key, 400 versions across many tiny blocks, between two others.
    let mut entries = vec![(ik(b"a", 1, ValueType::Value), b"a".to_vec())];
    for s in (2..402u64).rev() {
        let t = if s % 7 == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        entries.push((ik(b"hot", s, t), format!("v{s}").into_bytes()));
    }
    entries.push((ik(b"z", 1, ValueType::Value), b"z".to_vec()));
    let opts = TableOptions {
        block_size: 64,
        restart_interval: 3,
        ..TableOptions::default()
    };
    let (bytes, _) = build_in_memory(&entries, &opts);
    let table = open_mem(bytes, &opts).unwrap();
    assert!(table.properties().num_data_blocks > 20);
    for seq in 0..410u64 {
        assert_eq!(
            table.get(b"hot", seq).unwrap(),
            model_get(&entries, b"hot", seq),
            "seq {seq}"
        );
    }
    check_seeks(&table, &entries);
}

/// Every (layout, compression) pair.
fn formats() -> Vec<(bool, CompressionType)> {
    let mut v = Vec::new();
    for sep in [false, true] {
        for &c in super::compression::AVAILABLE {
            v.push((sep, c));
        }
    }
    v
}

#[test]
fn many_shapes_round_trip() {
    for ((n, block_size, ri, iri, bits), (sep, compression)) in [
        (0usize, 4096usize, 16usize, 1usize, 10usize),
        (1, 4096, 16, 1, 10),
        (50, 1, 1, 1, 0),
        (200, 100, 32, 2, 3),
        (1000, 4096, 16, 1, 10),
    ]
    .into_iter()
    .flat_map(|shape| formats().into_iter().map(move |f| (shape, f)))
    {
        let opts = TableOptions {
            block_size,
            restart_interval: ri,
            index_restart_interval: iri,
            bloom_bits_per_key: bits,
            separate_key_value: sep,
            compression,
            ..TableOptions::default()
        };
        let entries = if n == 0 { Vec::new() } else { data_set(n) };
        let (bytes, summary) = build_in_memory(&entries, &opts);
        assert_eq!(summary.num_entries, entries.len() as u64);
        let table = open_mem(bytes, &opts).unwrap();
        let p = table.properties();
        assert_eq!(p.separate_key_value_in_data_block, u64::from(sep));
        assert_eq!(p.compression_name, compression.name());
        assert_eq!(scan_forward(&mut table.clone().iter()), entries);
        assert_eq!(scan_backward(&mut table.clone().iter()), entries);
        check_gets(&table, &entries);
        if !entries.is_empty() {
            check_seeks(&table, &entries);
        }
    }
}

/// Compressible values shrink the file with LZ4 and ZSTD; the separated
/// layout round-trips the same data.
#[test]
fn compression_shrinks_compressible_tables() {
    let entries: Entries = (0..2000u32)
        .map(|i| {
            (
                ik(format!("user{i:08}").as_bytes(), 1, ValueType::Value),
                format!("{i:05}").repeat(20).into_bytes(),
            )
        })
        .collect();
    let size = |sep: bool, compression| {
        let opts = TableOptions {
            separate_key_value: sep,
            compression,
            ..TableOptions::default()
        };
        let (bytes, _) = build_in_memory(&entries, &opts);
        let n = bytes.len();
        let t = open_mem(bytes, &opts).unwrap();
        assert_eq!(scan_forward(&mut t.iter()), entries);
        n
    };
    for sep in [false, true] {
        let none = size(sep, CompressionType::None);
        let lz4 = size(sep, CompressionType::Lz4);
        assert!(lz4 < none / 2, "{sep}: lz4 {lz4} vs {none}");
        #[cfg(feature = "zstd")]
        {
            let zstd = size(sep, CompressionType::Zstd);
            assert!(zstd < lz4, "{sep}: zstd {zstd} vs lz4 {lz4}");
        }
    }
}

/// Finds the first block trailer of `bytes` (the first data block starts
/// at 0): the `n` whose 5 bytes at `n` are a valid trailer of `bytes[..n]`.
fn first_block_size(bytes: &[u8]) -> usize {
    (1..bytes.len() - 5)
        .find(|&n| {
            let stored = u32::from_le_bytes(bytes[n + 1..n + 5].try_into().unwrap());
            stored == mask_crc(block_crc(&bytes[..n], bytes[n]))
        })
        .unwrap()
}

#[test]
fn unknown_compression_type_is_corruption() {
    for compression in [CompressionType::None, CompressionType::Lz4] {
        let opts = TableOptions {
            compression,
            ..TableOptions::default()
        };
        let entries = data_set(200);
        let (mut bytes, _) = build_in_memory(&entries, &opts);
        let n = first_block_size(&bytes);
        // A new type byte with a matching checksum: only the type is wrong.
        bytes[n] = 9;
        let crc = mask_crc(block_crc(&bytes[..n], 9));
        bytes[n + 1..n + 5].copy_from_slice(&crc.to_le_bytes());
        let table = open_mem(bytes, &opts).unwrap();
        let uk = parse_internal_key(&entries[0].0).unwrap().user_key.to_vec();
        let err = table.get(&uk, u64::MAX >> 8).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(
            err.to_string().contains("unknown block compression type 9"),
            "{err}"
        );
    }
}

#[test]
fn verify_checksums_false_skips_the_data_block_check() {
    let opts = TableOptions::default();
    let entries = vec![(ik(b"k", 1, ValueType::Value), b"value".to_vec())];
    let (mut bytes, _) = build_in_memory(&entries, &opts);
    let at = bytes.windows(5).position(|w| w == b"value").unwrap();
    bytes[at] = b'V';
    let table = open_mem(bytes.clone(), &opts).unwrap();
    assert!(table.get(b"k", 5).unwrap_err().is_corruption());
    let no_verify = BlockReadOptions {
        verify_checksums: false,
        ..BlockReadOptions::default()
    };
    let got = table.get_with(b"k", 5, no_verify).unwrap().unwrap();
    assert_eq!(got.1, b"Value");
    // A table opened with verification off never verifies data blocks.
    let off = TableOptions {
        verify_checksums: false,
        ..TableOptions::default()
    };
    assert!(open_mem(bytes, &off).unwrap().get(b"k", 5).is_ok());
}

#[test]
fn filter_rejects_most_absent_keys_and_no_filter_accepts_all() {
    let entries = data_set(2000);
    let with = TableOptions::default();
    let without = TableOptions {
        bloom_bits_per_key: 0,
        ..TableOptions::default()
    };
    let t1 = open_mem(build_in_memory(&entries, &with).0, &with).unwrap();
    let t0 = open_mem(build_in_memory(&entries, &without).0, &without).unwrap();
    let absent: Vec<Vec<u8>> = (0..5000)
        .map(|i| format!("nokey{i}").into_bytes())
        .collect();
    let passed = absent.iter().filter(|k| t1.may_contain(k)).count();
    assert!(
        passed < 150,
        "{passed} of 5000 absent keys passed the filter"
    );
    assert!(absent.iter().all(|k| t0.may_contain(k)));
}

#[test]
fn builder_rejects_unordered_and_malformed_keys() {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut b = TableBuilder::new(
        Box::new(MemFile::sharing(buf)),
        "x.sst".into(),
        TableOptions::default(),
    )
    .unwrap();
    b.add(&ik(b"b", 5, ValueType::Value), b"").unwrap();
    for bad in [
        ik(b"a", 9, ValueType::Value),
        ik(b"b", 5, ValueType::Value),
        ik(b"b", 6, ValueType::Value),
    ] {
        assert!(matches!(b.add(&bad, b""), Err(Error::InvalidArgument(_))));
    }
    assert!(matches!(
        b.add(b"short", b""),
        Err(Error::InvalidArgument(_))
    ));
    b.add(&ik(b"b", 4, ValueType::Deletion), b"").unwrap();
    assert_eq!(b.num_entries(), 2);
    let bad_opts = TableOptions {
        restart_interval: 0,
        ..TableOptions::default()
    };
    let buf = Arc::new(Mutex::new(Vec::new()));
    assert!(matches!(
        TableBuilder::new(Box::new(MemFile::sharing(buf)), "y.sst".into(), bad_opts),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn truncated_or_foreign_files_are_corruption() {
    let opts = TableOptions::default();
    let (bytes, _) = build_in_memory(&data_set(20), &opts);
    for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
        let err = open_mem(bytes[..cut].to_vec(), &opts)
            .err()
            .expect("must fail");
        assert!(err.is_corruption(), "cut {cut}: {err}");
    }
    let err = open_mem(vec![0u8; 4096], &opts).err().expect("must fail");
    assert!(err.to_string().contains("magic"), "{err}");
}

#[test]
fn checksum_mismatch_names_file_offset_size_and_both_checksums() {
    let opts = TableOptions::default();
    let entries = data_set(20);
    let (mut bytes, _) = build_in_memory(&entries, &opts);
    bytes[3] ^= 0x10; // inside the first data block
    let table = open_mem(bytes, &opts).unwrap();
    let uk = parse_internal_key(&entries[0].0).unwrap().user_key.to_vec();
    let err = table.get(&uk, u64::MAX >> 8).unwrap_err();
    let msg = err.to_string();
    assert!(err.is_corruption());
    for part in [
        "block checksum mismatch: stored 0x",
        "computed 0x",
        "file mem.sst offset 0 size ",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
    let mut it = table.iter();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().unwrap_err().is_corruption());
}

/// Every byte of a small table, flipped: opening or reading must report
/// corruption, or return exactly the original data — never wrong data, never
/// a panic.
#[test]
fn every_flipped_byte_is_detected_or_harmless() {
    for (separate_key_value, compression) in [
        (false, CompressionType::None),
        (true, CompressionType::None),
        (true, CompressionType::Lz4),
        (false, CompressionType::Zstd),
    ]
    .into_iter()
    .filter(|(_, c)| super::compression::AVAILABLE.contains(c))
    {
        flip_every_byte(TableOptions {
            block_size: 128,
            restart_interval: 2,
            separate_key_value,
            compression,
            ..TableOptions::default()
        });
    }
}

fn flip_every_byte(opts: TableOptions) {
    let entries = data_set(12);
    let (good, _) = build_in_memory(&entries, &opts);
    let mut user_keys: Vec<Vec<u8>> = entries
        .iter()
        .map(|(k, _)| parse_internal_key(k).unwrap().user_key.to_vec())
        .collect();
    user_keys.dedup();
    let (mut detected, mut harmless) = (0, 0);
    for i in 0..good.len() {
        for x in [0x01u8, 0xff] {
            let mut bytes = good.clone();
            bytes[i] ^= x;
            let table = match open_mem(bytes, &opts) {
                Ok(t) => t,
                Err(e) => {
                    assert!(e.is_corruption(), "byte {i}: {e}");
                    detected += 1;
                    continue;
                }
            };
            let mut saw_error = false;
            let mut it = table.clone().iter();
            let fwd = scan_forward(&mut it);
            match it.status() {
                Ok(()) => assert_eq!(fwd, entries, "byte {i}: wrong data forward"),
                Err(e) => {
                    assert!(e.is_corruption(), "byte {i}: {e}");
                    saw_error = true;
                }
            }
            let mut it = table.clone().iter();
            let bwd = scan_backward(&mut it);
            match it.status() {
                Ok(()) => assert_eq!(bwd, entries, "byte {i}: wrong data backward"),
                Err(e) => {
                    assert!(e.is_corruption(), "byte {i}: {e}");
                    saw_error = true;
                }
            }
            for uk in &user_keys {
                match table.get(uk, u64::MAX >> 8) {
                    Ok(got) => assert_eq!(got, model_get(&entries, uk, u64::MAX >> 8), "byte {i}"),
                    Err(e) => {
                        assert!(e.is_corruption(), "byte {i}: {e}");
                        saw_error = true;
                    }
                }
            }
            if saw_error {
                detected += 1;
            } else {
                harmless += 1;
            }
        }
    }
    // Every byte of the file is covered by a block or footer checksum.
    assert_eq!(
        harmless, 0,
        "{harmless} flips went unnoticed ({detected} detected)"
    );
}

/// The worked example of `docs/format/sst.md`, pinned byte for byte (all
/// but the properties block, which holds the creation time).
#[test]
fn worked_example_bytes_match_the_format_doc() {
    let entries = vec![
        (ik(b"apple", 2, ValueType::Value), b"red".to_vec()),
        (ik(b"apricot", 1, ValueType::Deletion), Vec::new()),
    ];
    let (bytes, summary) = build_in_memory(&entries, &TableOptions::default());
    assert_eq!(summary.file_size, 685);
    let data_block: &[u8] = &[
        0x00, 0x0d, 0x03, b'a', b'p', b'p', b'l', b'e', 0x01, 0x02, 0, 0, 0, 0, 0, 0, b'r', b'e',
        b'd', 0x02, 0x0d, 0x00, b'r', b'i', b'c', b'o', b't', 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0x01, 0, 0, 0, 0x00, 0xad, 0x80, 0x31, 0x0b,
    ];
    assert_eq!(&bytes[..0x30], data_block);
    let index_block: &[u8] = &[
        0x00, 0x09, 0x02, b'b', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x2b, 0, 0,
        0, 0, 0x01, 0, 0, 0,
    ];
    assert_eq!(&bytes[0x25a..0x25a + 22], index_block);
    let footer = &bytes[0x275..];
    assert_eq!(&footer[..6], &[0x97, 0x04, 0x3e, 0xda, 0x04, 0x16]);
    assert!(footer[6..40].iter().all(|&b| b == 0));
    assert_eq!(&footer[40..44], &[1, 0, 0, 0]);
    assert_eq!(
        &footer[48..],
        &[0x31, 0x73, 0x73, 0x68, 0x74, 0x62, 0x76, 0x6b]
    );
    // The filter's trailer: 6 probes, 1 line.
    assert_eq!(&bytes[0x30 + 64..0x30 + 69], &[6, 1, 0, 0, 0]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Random tables against the model: full scans both ways and gets at
    /// every snapshot that matters.
    #[test]
    fn random_tables_match_the_model(
        raw in proptest::collection::vec(
            (proptest::collection::vec(0u8..3, 0..6), 0u64..20, proptest::bool::ANY,
             proptest::collection::vec(proptest::num::u8::ANY, 0..30)),
            0..200),
        block_size in 16usize..400,
        restart_interval in 1usize..8,
        // 1: the index fences serve gets and batches; 2: the index block
        // (unless it has a single entry).
        index_restart_interval in 1usize..3,
        separate_key_value in proptest::bool::ANY,
        compression in proptest::sample::select(super::compression::AVAILABLE.to_vec()),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..6), 0..40),
    ) {
        let mut entries: Entries = raw
            .into_iter()
            .map(|(uk, seq, del, v)| {
                let t = if del { ValueType::Deletion } else { ValueType::Value };
                (ik(&uk, seq, t), v)
            })
            .collect();
        entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        entries.dedup_by(|a, b| a.0 == b.0);
        let opts = TableOptions {
            block_size, restart_interval, index_restart_interval, separate_key_value, compression,
            ..TableOptions::default()
        };
        let (bytes, _) = build_in_memory(&entries, &opts);
        let table = open_mem(bytes, &opts).unwrap();
        proptest::prop_assert_eq!(&scan_forward(&mut table.clone().iter()), &entries);
        proptest::prop_assert_eq!(&scan_backward(&mut table.clone().iter()), &entries);
        for (k, _) in &entries {
            let uk = parse_internal_key(k).unwrap().user_key;
            for seq in 0..21 {
                proptest::prop_assert_eq!(table.get(uk, seq).unwrap(), model_get(&entries, uk, seq));
            }
        }
        // Batches: the probe keys (present and absent, from the same small
        // alphabet) sorted and deduplicated.
        let mut batch: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        batch.sort();
        batch.dedup();
        for seq in [0u64, 5, 10, 19, 20] {
            check_multi_get(&table, &batch, seq);
            for (j, k) in batch.iter().enumerate() {
                let mut got = None;
                table.multi_get_with(&batch[j..=j], seq, BlockReadOptions::default(), &mut |_, r| {
                    got = Some(r.map(|(t, v)| (t, v.to_vec())).unwrap());
                });
                proptest::prop_assert_eq!(got, model_get(&entries, k, seq));
            }
        }
    }
}

/// Counts the reads reaching a file.
struct CountingFile {
    inner: crate::fs::mem::SliceFile,
    reads: std::sync::atomic::AtomicUsize,
}

impl crate::fs::RandomAccessFile for CountingFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> crate::error::Result<()> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

fn readahead_table(bytes: Vec<u8>) -> (Arc<Table>, Arc<CountingFile>) {
    let file = Arc::new(CountingFile {
        inner: crate::fs::mem::SliceFile(bytes),
        reads: Default::default(),
    });
    let t = Table::open(
        Arc::clone(&file) as Arc<dyn crate::fs::RandomAccessFile>,
        "000077.sst".into(),
        TableOptions::default(),
    )
    .unwrap();
    (t, file)
}

fn readahead_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..40_000u32)
        .map(|i| {
            let k = ik(format!("key{i:08}").as_bytes(), 1, ValueType::Value);
            (
                k,
                format!("value-{i}-{}", i.wrapping_mul(2_654_435_761)).into_bytes(),
            )
        })
        .collect()
}

/// A forward scan reads many blocks per `pread` (the iterator's
/// readahead) and still yields every entry; a backward scan and point reads
/// read one block at a time.
#[test]
fn forward_scans_read_ahead_and_see_every_entry() {
    let entries = readahead_entries();
    let (bytes, _) = build_in_memory(&entries, &TableOptions::default());
    let (t, file) = readahead_table(bytes.clone());
    let blocks = t.properties().num_data_blocks as usize;
    assert!(blocks > 200, "{blocks} blocks");
    let opened = file.reads.load(std::sync::atomic::Ordering::Relaxed);
    let mut it = Arc::clone(&t).iter();
    let got = scan_forward(&mut it);
    it.status().unwrap();
    assert!(got == entries, "forward scan differs");
    let forward = file.reads.load(std::sync::atomic::Ordering::Relaxed) - opened;
    // 4 KiB blocks, reads growing to 256 KiB: a few dozen reads.
    assert!(forward * 10 < blocks, "{forward} reads for {blocks} blocks");

    let (t, file) = readahead_table(bytes);
    let opened = file.reads.load(std::sync::atomic::Ordering::Relaxed);
    let mut it = Arc::clone(&t).iter();
    let back = scan_backward(&mut it);
    it.status().unwrap();
    assert!(back == entries, "backward scan differs");
    let backward = file.reads.load(std::sync::atomic::Ordering::Relaxed) - opened;
    assert_eq!(backward, blocks, "backward scans read block by block");
}

/// A block damaged inside the readahead buffer is still caught by its
/// checksum, naming the file and the block's offset.
#[test]
fn readahead_blocks_are_checksummed() {
    let entries = readahead_entries();
    let (mut bytes, _) = build_in_memory(&entries, &TableOptions::default());
    // Damage a byte well inside the data blocks (past the first blocks,
    // which are read before readahead starts).
    let at = bytes.len() / 3;
    bytes[at] ^= 0x40;
    let (t, _) = readahead_table(bytes);
    let mut it = Arc::clone(&t).iter();
    let got = scan_forward(&mut it);
    let e = it.status().unwrap_err();
    assert!(
        matches!(&e, Error::Corruption { file, .. } if file == "000077.sst"),
        "{e}"
    );
    assert!(e.to_string().contains("checksum"), "{e}");
    assert!(got.len() < entries.len());
}

/// A damaged data block fails the batch lookups of exactly the keys whose
/// block it is, each with its own error, as `get` fails them; the other
/// keys of the same batch are answered (with and without a block cache).
#[test]
fn a_damaged_block_fails_its_keys_of_a_batch_one_by_one() {
    let entries: Entries = (0..400u32)
        .map(|i| {
            (
                ik(format!("key{i:05}").as_bytes(), 1, ValueType::Value),
                vec![b'v'; 40],
            )
        })
        .collect();
    let opts = TableOptions {
        block_size: 512,
        ..TableOptions::default()
    };
    let (mut bytes, _) = build_in_memory(&entries, &opts);
    // A byte in the first data block and one in a later one.
    bytes[100] ^= 0x55;
    bytes[3000] ^= 0x55;
    let cache = Arc::new(crate::cache::BlockCache::new(1 << 20));
    let tables = [
        open_mem(bytes.clone(), &opts).unwrap(),
        super::tests_support::open_mem_cached(bytes, &opts, Some((cache, 7))),
    ];
    let user_keys: Vec<Vec<u8>> = (0..400u32)
        .map(|i| format!("key{i:05}").into_bytes())
        .chain(std::iter::once(b"zzz".to_vec()))
        .collect();
    let batch: Vec<&[u8]> = user_keys.iter().map(Vec::as_slice).collect();
    for table in &tables {
        type Got = Option<Result<(ValueType, Vec<u8>), Error>>;
        let mut got: Vec<Got> = vec![None; batch.len()];
        table.multi_get_with(&batch, 2, BlockReadOptions::default(), &mut |j, r| {
            assert!(got[j].is_none(), "key {j} reported twice");
            got[j] = Some(r.map(|(t, v)| (t, v.to_vec())));
        });
        let (mut failed, mut found) = (0, 0);
        for (j, k) in batch.iter().enumerate() {
            match (table.get(k, 2), &got[j]) {
                (Err(_), Some(Err(Error::Corruption { .. }))) => failed += 1,
                (Ok(want), got) => {
                    let got = got.as_ref().map(|r| r.as_ref().unwrap().clone());
                    assert_eq!(got, want, "key {}", String::from_utf8_lossy(k));
                    found += usize::from(want.is_some());
                }
                (want, got) => panic!("key {j}: get {want:?}, multi_get {got:?}"),
            }
        }
        assert!((2..100).contains(&failed), "{failed} keys failed");
        assert_eq!(found + failed, 400);
    }
}
