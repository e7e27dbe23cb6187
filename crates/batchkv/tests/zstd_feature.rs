//! The `zstd` cargo feature (on by default). `tests/data/zstd_db` is a
//! small database whose one table has ZSTD-compressed data blocks (40 keys
//! `key0000`.. with values `value-NNNN-` × 20), written by a build with the
//! feature.
//!
//! With the feature (what CI runs) the fixture reads back. Without it
//! (`cargo test -p batchkv --no-default-features --test zstd_feature`):
//! choosing zstd is `InvalidArgument`, and reading the fixture's blocks is
//! `Error::Unsupported` naming the table file and the block offset — no
//! panic, no `Corruption` (the data is fine).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::{Path, PathBuf};

use batchkv::{Db, Options, SstFileReader};

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zstd_db");
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("db");
    std::fs::create_dir(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    (tmp, dst)
}

#[cfg(feature = "zstd")]
fn value(i: u32) -> Vec<u8> {
    format!("value-{i:04}-").repeat(20).into_bytes()
}

#[cfg(feature = "zstd")]
#[test]
fn the_zstd_fixture_reads_back_with_the_feature() {
    let (_tmp, dir) = fixture();
    let sst = dir.join("000006.sst");
    let props = SstFileReader::open(&sst).unwrap().properties();
    assert!(
        props.iter().any(|(_, v)| v == "zstd"),
        "the fixture's table is not zstd-compressed: {props:?}"
    );
    let db = Db::open(&dir, Options::default()).unwrap();
    for i in [0u32, 17, 39] {
        assert_eq!(db.get(format!("key{i:04}")).unwrap(), Some(value(i)));
    }
    db.close().unwrap();
}

#[cfg(not(feature = "zstd"))]
#[test]
fn without_the_feature_zstd_is_refused_and_zstd_blocks_are_unsupported() {
    use batchkv::Error;
    // Choosing it: by field, by option string (which validates), by builder.
    let by_field = Options {
        compression: batchkv::CompressionType::Zstd,
        ..Options::default()
    };
    for r in [
        by_field.validate().map(|()| by_field.clone()),
        "compression=zstd".parse::<Options>(),
        Options::builder().option("compression", "zstd").build(),
    ] {
        match r {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("zstd"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Db::open(dir.path(), by_field),
        Err(Error::InvalidArgument(_))
    ));

    // Reading it, through the database and through the SST reader.
    let (_tmp, dir) = fixture();
    let check = |e: Error| match e {
        Error::Unsupported {
            file,
            offset,
            detail,
        } => {
            assert!(file.ends_with("000006.sst"), "{file}");
            assert!(offset < 1235, "{offset}");
            assert!(detail.contains("zstd"), "{detail}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    };
    let db = Db::open(&dir, Options::default()).unwrap();
    check(db.get("key0017").unwrap_err());
    let mut it = db.iter(&batchkv::ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    check(it.status().unwrap_err());
    db.close().unwrap();
    let first = SstFileReader::open(dir.join("000006.sst"))
        .unwrap()
        .entries()
        .next()
        .unwrap();
    check(first.unwrap_err());
}
