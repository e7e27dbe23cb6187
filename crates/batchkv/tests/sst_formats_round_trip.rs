//! Every SST format (both data-block layouts × none/lz4/zstd) through the
//! whole engine: many flushed files read back through a table cache of
//! two open files and a small block cache, across a reopen, with
//! `fill_cache` off and on; and the files are readable by `SstFileReader`
//! (what `batchkv dump sst` prints).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;

use batchkv::{CompressionType, Db, Options, ReadOptions, SstFileReader};
use common::{key, scan_all, small_buffers};

fn value(i: u64, round: u64) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "abcdefgh".repeat((i % 20) as usize)).into_bytes()
}

#[test]
fn every_format_round_trips_through_the_engine() {
    for sep in [false, true] {
        for compression in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ]
        .into_iter()
        // Without the zstd feature (`--no-default-features`), none and lz4.
        .filter(|c| cfg!(feature = "zstd") || *c != CompressionType::Zstd)
        {
            let dir = tempfile::tempdir().unwrap();
            let opts = Options {
                separate_key_value_in_data_block: sep,
                compression,
                max_open_files: 2,
                block_cache_size: 64 * 1024,
                ..small_buffers()
            };
            let mut model = BTreeMap::new();
            {
                let db = Db::open(dir.path(), opts.clone()).unwrap();
                for round in 0..4u64 {
                    for i in (round..3000).step_by(3) {
                        db.put(key(i), value(i, round)).unwrap();
                        model.insert(key(i), value(i, round));
                    }
                    for i in (0..3000).step_by(17 + round as usize) {
                        db.delete(key(i)).unwrap();
                        model.remove(&key(i));
                    }
                    db.flush().unwrap();
                }
                let files: usize = db.stats().files_per_level.iter().sum();
                assert!(files >= 2, "{:?}", db.stats());
                db.close().unwrap();
            }
            let db = Db::open(dir.path(), opts).unwrap();
            let want: Vec<_> = model.clone().into_iter().collect();
            assert_eq!(scan_all(&db), want, "sep {sep} {compression}");
            let no_fill = ReadOptions {
                fill_cache: false,
                ..ReadOptions::default()
            };
            for i in (0..3000).step_by(7) {
                let expected = model.get(&key(i)).cloned();
                assert_eq!(db.get(key(i)).unwrap(), expected, "key {i}");
                assert_eq!(db.get_opt(&no_fill, key(i)).unwrap(), expected, "key {i}");
            }
            db.close().unwrap();

            // The files carry their format in their properties.
            let mut entries = 0;
            for f in std::fs::read_dir(dir.path()).unwrap() {
                let path = f.unwrap().path();
                if path.extension().is_none_or(|e| e != "sst") {
                    continue;
                }
                let r = SstFileReader::open(&path).unwrap();
                let props: BTreeMap<_, _> = r.properties().into_iter().collect();
                assert_eq!(props["batchkv.compression"], compression.name());
                assert_eq!(
                    props["batchkv.separate.key.value.in.data.block"],
                    if sep { "1" } else { "0" }
                );
                let n: usize = props["batchkv.num.entries"].parse().unwrap();
                let listed: Vec<_> = r.entries().map(|e| e.unwrap()).collect();
                assert_eq!(listed.len(), n);
                assert!(listed.windows(2).all(|w| w[0].user_key <= w[1].user_key));
                entries += n;
            }
            // Compaction may drop shadowed versions, never live keys.
            assert!(entries >= model.len(), "{entries} < {}", model.len());
        }
    }
}
