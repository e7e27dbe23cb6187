//! Small API guarantees RocksDB and fjall users expect: a batch can be
//! read back, and a snapshot of one database is refused by another.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{BatchOp, Db, Error, ReadOptions, WriteBatch};

#[test]
fn write_batch_yields_its_operations_in_order() {
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.delete(b"b");
    b.put(b"a", b"2");
    let ops: Vec<BatchOp> = b.ops().collect();
    assert_eq!(
        ops,
        vec![
            BatchOp::Put {
                key: b"a",
                value: b"1"
            },
            BatchOp::Delete { key: b"b" },
            BatchOp::Put {
                key: b"a",
                value: b"2"
            },
        ]
    );
    assert_eq!(WriteBatch::new().ops().count(), 0);
}

#[test]
fn a_snapshot_from_another_database_is_an_error() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db1 = Db::open(d1.path(), common::opts()).unwrap();
    let db2 = Db::open(d2.path(), common::opts()).unwrap();
    db1.put(b"k", b"1").unwrap();
    db2.put(b"k", b"2").unwrap();
    let foreign = ReadOptions {
        snapshot: Some(db1.snapshot()),
        ..ReadOptions::default()
    };
    fn invalid<T>(r: Result<T, Error>) -> bool {
        matches!(r, Err(Error::InvalidArgument(m)) if m.contains("another database"))
    }
    assert!(invalid(db2.get_opt(&foreign, b"k")));
    assert!(invalid(db2.iter(&foreign)));
    assert!(db2.multi_get(&foreign, &[b"k"]).into_iter().all(invalid));
    // Its own database reads through it.
    assert_eq!(db1.get_opt(&foreign, b"k").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn options_round_trip_through_their_string_and_the_options_file() {
    use batchkv::Options;
    let samples = [
        Options::default(),
        // zstd needs the (default) zstd feature; lz4 without it.
        format!(
            "memtable=sorted_hash:4096:64;compression={};compression_level=7;\
             wal_recovery_mode=skip_any_corrupted_records;batch_lookup=finger;\
             max_open_files=-1;max_bytes_for_level_multiplier=12.5;write_buffer_size=1MB",
            if cfg!(feature = "zstd") {
                "zstd"
            } else {
                "lz4"
            }
        )
        .parse()
        .unwrap(),
        "memtable=vector;separate_key_value_in_data_block=true;compression=none;\
         verify_checksums=false;paranoid_memory_checks=true"
            .parse()
            .unwrap(),
    ];
    for opts in samples {
        let s = opts.to_option_string();
        let back: Options = s.parse().unwrap();
        assert_eq!(back.to_option_string(), s);
        // The database writes its OPTIONS file at open.
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        db.close().unwrap();
        let read = Options::from_options_file(dir.path().join("OPTIONS")).unwrap();
        assert_eq!(read.to_option_string(), s);
    }
}

/// `get_with` hands the same value `get` returns to its closure (in place
/// for memtable hits): from the memtable, from a table after a flush,
/// through a snapshot, for a deletion and an absent key, and for a merge.
#[test]
fn get_with_sees_what_get_returns_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let opts = batchkv::Options {
        merge_operator: Some(std::sync::Arc::new(
            batchkv::merge_operators::StringAppendOperator::new(","),
        )),
        ..batchkv::Options::default()
    };
    let db = batchkv::Db::open(dir.path(), opts).unwrap();
    let ro = batchkv::ReadOptions::default();
    let both = |db: &batchkv::Db, ro: &batchkv::ReadOptions, k: &str| {
        let with = db.get_with(ro, k, |v| v.map(<[u8]>::to_vec)).unwrap();
        assert_eq!(with, db.get_opt(ro, k).unwrap(), "key {k}");
        with
    };
    db.put("a", "1").unwrap();
    db.put("gone", "x").unwrap();
    db.delete("gone").unwrap();
    db.merge(&batchkv::WriteOptions::default(), "m", "p")
        .unwrap();
    db.merge(&batchkv::WriteOptions::default(), "m", "q")
        .unwrap();
    assert_eq!(both(&db, &ro, "a"), Some(b"1".to_vec()));
    assert_eq!(both(&db, &ro, "gone"), None);
    assert_eq!(both(&db, &ro, "absent"), None);
    assert_eq!(both(&db, &ro, "m"), Some(b"p,q".to_vec()));
    let snap = db.snapshot();
    db.flush().unwrap();
    db.put("a", "2").unwrap();
    assert_eq!(both(&db, &ro, "a"), Some(b"2".to_vec()));
    let at = batchkv::ReadOptions {
        snapshot: Some(snap),
        ..batchkv::ReadOptions::default()
    };
    assert_eq!(both(&db, &at, "a"), Some(b"1".to_vec()), "from the table");
    assert_eq!(
        both(&db, &ro, "m"),
        Some(b"p,q".to_vec()),
        "merge from the table"
    );
    // The closure's result comes back as is.
    assert_eq!(
        db.get_with(&ro, "a", |v| v.map_or(0, <[u8]>::len)).unwrap(),
        1
    );
}

/// rust-rocksdb's `put_opt`/`delete_opt`/`put_cf_opt`/`delete_cf_opt`
/// write with the given options (a synced write needs no `WriteBatch`),
/// and `Db::open_default` creates the database.
#[test]
fn opt_writes_and_open_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new");
    let db = Db::open_default(&path).unwrap();
    let synced = batchkv::WriteOptions {
        sync: true,
        ..Default::default()
    };
    let no_wal = batchkv::WriteOptions {
        disable_wal: true,
        ..Default::default()
    };
    db.put_opt(&synced, b"a", b"1").unwrap();
    db.put_opt(&no_wal, b"b", b"2").unwrap();
    db.put_opt(&synced, b"c", b"3").unwrap();
    db.delete_opt(&synced, b"c").unwrap();
    let cf = db.create_cf("cf", &batchkv::Options::default()).unwrap();
    db.put_cf_opt(&synced, &cf, b"x", b"9").unwrap();
    db.put_cf_opt(&synced, &cf, b"y", b"8").unwrap();
    db.delete_cf_opt(&synced, &cf, b"y").unwrap();
    let check = |db: &Db, cf: &batchkv::ColumnFamily| {
        assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(db.get(b"c").unwrap(), None);
        assert_eq!(db.get_cf(cf, b"x").unwrap(), Some(b"9".to_vec()));
        assert_eq!(db.get_cf(cf, b"y").unwrap(), None);
    };
    check(&db, &cf);
    // The WAL-less put was flushed at close; the others came back from the WAL.
    db.close().unwrap();
    let db = Db::open_default(&path).unwrap();
    check(&db, &db.cf_handle("cf").unwrap());
    // Options are still checked: a read-only database refuses them.
    db.close().unwrap();
    let ro = Db::open_read_only(&path, batchkv::Options::default()).unwrap();
    assert!(matches!(
        ro.put_opt(&synced, b"a", b"2"),
        Err(Error::ReadOnly(_))
    ));
    assert!(matches!(
        ro.delete_opt(&synced, b"a"),
        Err(Error::ReadOnly(_))
    ));
}
