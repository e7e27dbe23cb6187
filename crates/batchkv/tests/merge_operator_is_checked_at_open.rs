//! The OPTIONS file records each column family's merge operator, and an
//! open with another operator, or none, is refused with an error naming
//! both (RocksDB's behaviour). Databases whose OPTIONS file records none
//! (written before the record existed, or without operators) open with any.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::Arc;

use batchkv::merge_operators::{StringAppendOperator, U64AddOperator};
use batchkv::{Db, Error, Options, WriteOptions};

fn with_op(op: Option<Arc<dyn batchkv::MergeOperator>>) -> Options {
    Options {
        merge_operator: op,
        ..common::opts()
    }
}

fn add() -> Options {
    with_op(Some(Arc::new(U64AddOperator)))
}

fn append() -> Options {
    with_op(Some(Arc::new(StringAppendOperator::new(","))))
}

fn refused(r: Result<Db, Error>, needles: &[&str]) {
    match r {
        Err(Error::InvalidArgument(m)) => {
            for n in needles {
                assert!(m.contains(n), "{m:?} lacks {n:?}");
            }
        }
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("opened with the wrong merge operator"),
    }
}

#[test]
fn another_or_no_merge_operator_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), add()).unwrap();
    db.merge(&WriteOptions::default(), b"n", 2u64.to_le_bytes())
        .unwrap();
    db.close().unwrap();
    let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        options.contains("[merge_operators]\n")
            && options.contains("default=batchkv.U64AddOperator\n"),
        "{options}"
    );
    refused(
        Db::open(dir.path(), append()),
        &[
            "\"batchkv.U64AddOperator\"",
            "\"batchkv.StringAppendOperator\"",
            "OPTIONS",
        ],
    );
    refused(
        Db::open(dir.path(), with_op(None)),
        &["\"batchkv.U64AddOperator\"", "no merge operator"],
    );
    refused(
        Db::open_read_only(dir.path(), append()),
        &["\"batchkv.StringAppendOperator\""],
    );
    let sec_dir = tempfile::tempdir().unwrap();
    let sec = sec_dir.path().join("secondary");
    refused(
        Db::open_as_secondary(dir.path(), &sec, with_op(None)),
        &["no merge operator"],
    );
    // The refused opens changed nothing: the right operator still opens it.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap(),
        options
    );
    let db = Db::open(dir.path(), add()).unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(2u64.to_le_bytes().to_vec()));
    // A checkpoint carries the record.
    let cp = dir.path().join("cp");
    db.checkpoint(&cp).unwrap();
    db.close().unwrap();
    refused(Db::open(&cp, append()), &["\"batchkv.U64AddOperator\""]);
    Db::open(&cp, add()).unwrap().close().unwrap();
    Db::open_as_secondary(dir.path(), &sec, add()).unwrap();
}

#[test]
fn databases_without_a_recorded_operator_open_with_any() {
    let dir = tempfile::tempdir().unwrap();
    // Written without an operator: nothing is recorded...
    let db = Db::open(dir.path(), with_op(None)).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(!options.contains("[merge_operators]"), "{options}");
    // ...so an operator may be set later (as in RocksDB), and is recorded then.
    let db = Db::open(dir.path(), append()).unwrap();
    db.merge(&WriteOptions::default(), b"k", b"w").unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v,w".to_vec()));
    db.close().unwrap();
    refused(
        Db::open(dir.path(), add()),
        &["\"batchkv.StringAppendOperator\""],
    );
    // A database written before the record existed has an OPTIONS file
    // without the section (or none at all): it opens with any operator.
    let text = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    let before = &text[..text.find("\n[merge_operators]").unwrap() + 1];
    std::fs::write(dir.path().join("OPTIONS"), before).unwrap();
    Db::open(dir.path(), add()).unwrap().close().unwrap();
    std::fs::remove_file(dir.path().join("OPTIONS")).unwrap();
    let db = Db::open(dir.path(), append()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v,w".to_vec()));
}

#[test]
fn each_column_family_is_checked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let c = db.create_cf("counters", &add()).unwrap();
    db.merge_cf(&WriteOptions::default(), &c, b"n", 1u64.to_le_bytes())
        .unwrap();
    // Recorded as soon as the family exists, not only at the next open.
    let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        options.contains("counters=batchkv.U64AddOperator\n"),
        "{options}"
    );
    db.close().unwrap();
    refused(
        Db::open(dir.path(), common::opts()),
        &["column family \"counters\"", "open_with_cf_options"],
    );
    refused(
        Db::open_with_cf_options(
            dir.path(),
            common::opts(),
            vec![("counters".into(), append())],
        ),
        &[
            "\"batchkv.U64AddOperator\"",
            "\"batchkv.StringAppendOperator\"",
        ],
    );
    let db = Db::open_with_cf_options(dir.path(), common::opts(), vec![("counters".into(), add())])
        .unwrap();
    // Dropping the family forgets its operator; a new family of that name
    // may use another.
    db.drop_cf_by_name("counters").unwrap();
    let c = db.create_cf("counters", &append()).unwrap();
    db.merge_cf(&WriteOptions::default(), &c, b"s", b"x")
        .unwrap();
    db.close().unwrap();
    let db = Db::open_with_cf_options(
        dir.path(),
        common::opts(),
        vec![("counters".into(), append())],
    )
    .unwrap();
    let c = db.cf_handle("counters").unwrap();
    assert_eq!(db.get_cf(&c, b"s").unwrap(), Some(b"x".to_vec()));
}
