//! A `WriteBatch` can be written by reference, cleared and refilled; and
//! `multi_get` / `multi_get_with` accept every usual key list, the empty
//! array literal `&[]` included (it did not compile with `keys: &[K]`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv::{Db, ReadOptions, WriteBatch, WriteOptions};

#[test]
fn a_batch_written_by_reference_can_be_cleared_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let wo = WriteOptions::default();
    let mut b = WriteBatch::new();
    let empty_size = b.approximate_size();
    b.put(b"a", b"1");
    b.put(b"b", b"1");
    db.write_ref(&wo, &b).unwrap();
    // Still the caller's, unchanged: written twice, same result.
    assert_eq!(b.len(), 2);
    db.write_ref(&wo, &b).unwrap();
    b.clear();
    assert!(b.is_empty());
    assert_eq!(b.approximate_size(), empty_size);
    b.put(b"c", b"2");
    b.delete(b"a");
    db.write_ref(&wo, &b).unwrap();
    let ro = ReadOptions::default();
    let got: Vec<Option<Vec<u8>>> = db
        .multi_get(&ro, &[b"a", b"b", b"c"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, vec![None, Some(b"1".to_vec()), Some(b"2".to_vec())]);
    // 2 + 2 + 2 entries written: the cleared batch did not resend a or b.
    assert_eq!(db.statistics().keys_written, 6);
    db.close().unwrap();
}

#[test]
fn multi_get_accepts_every_key_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    db.put(b"a", b"1").unwrap();
    let ro = ReadOptions::default();
    let one = |r: Vec<batchkv::Result<Option<Vec<u8>>>>| -> Vec<Option<Vec<u8>>> {
        r.into_iter().map(Result::unwrap).collect()
    };
    let want = vec![Some(b"1".to_vec()), None];
    // The empty array literal.
    assert!(db.multi_get(&ro, &[]).is_empty());
    let mut calls = 0;
    db.multi_get_with(&ro, &[], |_, _| calls += 1);
    assert_eq!(calls, 0);
    // Arrays of byte-string literals, of &str, of Vec<u8>.
    assert_eq!(one(db.multi_get(&ro, &[b"a", b"b"])), want);
    assert_eq!(one(db.multi_get(&ro, &["a", "b"])), want);
    assert_eq!(
        one(db.multi_get(&ro, &[b"a".to_vec(), b"b".to_vec()])),
        want
    );
    // Vec, slices, a reference to a slice, an empty Vec.
    let owned: Vec<Vec<u8>> = vec![b"a".to_vec(), b"b".to_vec()];
    assert_eq!(one(db.multi_get(&ro, &owned)), want);
    assert_eq!(one(db.multi_get(&ro, &owned[..])), want);
    let borrowed: &[&[u8]] = &[b"a", b"b"];
    assert_eq!(one(db.multi_get(&ro, borrowed)), want);
    assert_eq!(one(db.multi_get(&ro, &borrowed)), want);
    assert!(db.multi_get(&ro, &Vec::<Vec<u8>>::new()).is_empty());
    // Longer than the array impls (64): as a slice.
    let many = [b"a"; 100];
    assert_eq!(db.multi_get(&ro, &many[..]).len(), 100);
    db.close().unwrap();
}
