//! Every range form `Db::range`, `Db::range_cf`, `Transaction::range` and
//! `Transaction::range_cf` accept compiles without a type annotation
//! (before `KeyRange`, `db.range(&ro, ..)` was E0283), and each yields the
//! keys it names. That this file compiles is half the test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::ops::Bound;

use batchkv::{Db, Options, RangeIter, ReadOptions, Result};

fn keys(it: Result<RangeIter>) -> Vec<String> {
    it.unwrap()
        .map(|kv| String::from_utf8(kv.unwrap().0).unwrap())
        .collect()
}

const ALL: [&str; 5] = ["a", "b", "c", "d", "e"];

#[test]
fn every_range_form_compiles_and_selects_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    for k in ALL {
        db.put(k, k.to_uppercase()).unwrap();
    }
    let ro = ReadOptions::default();
    assert_eq!(keys(db.range(&ro, ..)), ALL);
    // &str
    assert_eq!(keys(db.range(&ro, "b".."d")), ["b", "c"]);
    assert_eq!(keys(db.range(&ro, "b"..="d")), ["b", "c", "d"]);
    assert_eq!(keys(db.range(&ro, "d"..)), ["d", "e"]);
    assert_eq!(keys(db.range(&ro, .."b")), ["a"]);
    assert_eq!(keys(db.range(&ro, ..="b")), ["a", "b"]);
    // &[u8], Vec<u8>, String, arrays and references to arrays
    assert_eq!(
        keys(db.range(&ro, b"b".as_slice()..b"d".as_slice())),
        ["b", "c"]
    );
    assert_eq!(
        keys(db.range(&ro, b"b".to_vec()..=b"c".to_vec())),
        ["b", "c"]
    );
    assert_eq!(keys(db.range(&ro, String::from("e")..)), ["e"]);
    assert_eq!(keys(db.range(&ro, *b"b"..*b"c")), ["b"]);
    assert_eq!(keys(db.range(&ro, b"c"..)), ["c", "d", "e"]);
    assert_eq!(keys(db.range(&ro, ..=b"a")), ["a"]);
    // (Bound, Bound) pairs
    assert_eq!(
        keys(db.range(&ro, (Bound::Excluded("a"), Bound::Included("c")))),
        ["b", "c"]
    );
    assert_eq!(
        keys(db.range(&ro, (Bound::Unbounded, Bound::Excluded(b"b".as_slice())))),
        ["a"]
    );
    assert_eq!(
        keys(db.range(&ro, (Bound::Included(b"d".to_vec()), Bound::Unbounded))),
        ["d", "e"]
    );
    // Backwards too.
    let back: Vec<Vec<u8>> = db
        .range(&ro, "b"..="d")
        .unwrap()
        .rev()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(back, [b"d".to_vec(), b"c".to_vec(), b"b".to_vec()]);
    // The prefix forms take any byte string.
    assert_eq!(keys(db.prefix(&ro, "c")), ["c"]);
    assert_eq!(keys(db.prefix(&ro, b"d")), ["d"]);

    // Column families.
    let cf = db.create_cf("other", &Options::default()).unwrap();
    for k in ALL {
        db.put_cf(&cf, k, k).unwrap();
    }
    assert_eq!(keys(db.range_cf(&ro, &cf, ..)), ALL);
    assert_eq!(keys(db.range_cf(&ro, &cf, "c"..)), ["c", "d", "e"]);
    assert_eq!(
        keys(db.range_cf(&ro, &cf, (Bound::Excluded("d"), Bound::Unbounded))),
        ["e"]
    );
    assert_eq!(keys(db.prefix_cf(&ro, &cf, "a")), ["a"]);

    // Transactions.
    let mut txn = db.transaction();
    txn.put("bb", "x").unwrap();
    let tkeys = |it: Result<batchkv::TransactionIter>| -> Vec<String> {
        it.unwrap()
            .map(|kv| String::from_utf8(kv.unwrap().0).unwrap())
            .collect()
    };
    assert_eq!(tkeys(txn.range(..)).len(), 6);
    assert_eq!(tkeys(txn.range("b".."c")), ["b", "bb"]);
    assert_eq!(tkeys(txn.range(..=b"a")), ["a"]);
    assert_eq!(tkeys(txn.range_cf(&cf, ..)), ALL);
    assert_eq!(
        tkeys(txn.range_cf(&cf, (Bound::Included("e"), Bound::Unbounded))),
        ["e"]
    );
}
