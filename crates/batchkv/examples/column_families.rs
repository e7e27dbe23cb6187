//! Column families: two key spaces in one database, each with its own
//! memtable kind and options, written atomically by one batch, read with
//! one snapshot, flushed independently, and restored with their options on
//! reopen. `cargo run -p batchkv --example column_families`

#![allow(
    clippy::expect_used,
    reason = "the families were created a few lines above"
)]
use std::sync::Arc;

use batchkv::merge_operators::U64AddOperator;
use batchkv::{
    CompressionType, Db, Error, MemTableKind, Options, ReadOptions, WriteBatch, WriteOptions,
};

fn main() -> batchkv::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let path = tmp.path().join("db");
    // Counters need a merge operator: it is code, so it cannot be stored
    // in the MANIFEST and is given again at every open.
    let counter_opts = Options {
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    };
    {
        let db = Db::open(&path, Options::default())?;
        // Documents: a vector memtable for bulk loads, no compression.
        let docs = db.create_cf(
            "docs",
            &Options {
                memtable: MemTableKind::Vector,
                compression: CompressionType::None,
                ..Options::default()
            },
        )?;
        let counters = db.create_cf("counters", &counter_opts)?;

        // One batch, three families, applied atomically.
        let mut batch = WriteBatch::new();
        batch.put(b"last-doc", b"doc:1");
        batch.put_cf(&docs, b"doc:1", b"hello column families");
        batch.merge_cf(&counters, b"docs", 1u64.to_le_bytes());
        db.write(&WriteOptions::default(), batch)?;

        let snapshot = db.snapshot();
        db.merge_cf(
            &WriteOptions::default(),
            &counters,
            b"docs",
            1u64.to_le_bytes(),
        )?;

        // A snapshot covers every family.
        let at_snapshot = ReadOptions {
            snapshot: Some(snapshot),
            ..ReadOptions::default()
        };
        let docs_then = db.get_cf_opt(&at_snapshot, &counters, b"docs")?;
        assert_eq!(docs_then, Some(1u64.to_le_bytes().to_vec()));

        // One multi_get across families.
        let got = db.multi_get_cf(
            &ReadOptions::default(),
            &[
                (&db.default_cf(), &b"last-doc"[..]),
                (&docs, b"doc:1"),
                (&counters, b"docs"),
            ],
        );
        assert_eq!(
            got[1].as_ref().map_err(Clone::clone)?.as_deref(),
            Some(&b"hello column families"[..])
        );
        assert_eq!(
            got[2].as_ref().map_err(Clone::clone)?.as_deref(),
            Some(&2u64.to_le_bytes()[..])
        );

        // Flush only the documents; the other families stay in memory
        // (and in the WAL, which is kept until they are flushed too).
        db.flush_cf(&docs)?;
        println!("docs: {:?}", db.stats_cf(&docs)?.files_per_level);
    }

    println!("families on disk: {:?}", Db::list_cf(&path)?);
    let db = Db::open_with_cf_options(
        &path,
        Options::default(),
        vec![("counters".into(), counter_opts)],
    )?;
    let docs = db.cf_handle("docs").expect("created above");
    let counters = db.cf_handle("counters").expect("created above");
    assert_eq!(db.stats_cf(&docs)?.memtable_kind, "vector");
    assert_eq!(
        db.get_cf(&counters, b"docs")?,
        Some(2u64.to_le_bytes().to_vec())
    );
    for kv in db.range_cf(&ReadOptions::default(), &docs, ..)? {
        let (k, v) = kv?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v)
        );
    }
    db.drop_cf(&docs)?;
    assert!(
        db.get_cf(&docs, b"doc:1").is_err(),
        "a dropped family's handle fails"
    );
    println!("after drop: {:?}", db.cf_names());
    Ok(())
}
