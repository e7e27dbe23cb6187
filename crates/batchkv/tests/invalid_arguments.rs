//! Oversized keys and values and bad options are rejected with InvalidArgument, losing nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;
use batchkv::{Db, Error, Options, WriteBatch, WriteOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE};

#[test]
fn oversized_key_or_value_is_rejected_and_the_batch_is_not_applied() {
    common::for_each_memtable(|_| {
        oversized_key_or_value_is_rejected_and_the_batch_is_not_applied_with()
    });
}

fn oversized_key_or_value_is_rejected_and_the_batch_is_not_applied_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let err = db.put(vec![b'k'; MAX_KEY_SIZE + 1], "v").unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("key")),
        "{err}"
    );
    let mut b = WriteBatch::new();
    b.put("ok", "1");
    b.put("big", vec![0u8; MAX_VALUE_SIZE + 1]);
    let err = db.write(&WriteOptions::default(), b).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("value")),
        "{err}"
    );
    assert_eq!(
        db.get("ok").unwrap(),
        None,
        "a rejected batch must not be partly applied"
    );
    // The limits themselves are accepted.
    db.put(vec![b'k'; MAX_KEY_SIZE], "max-key").unwrap();
    assert_eq!(
        db.get(vec![b'k'; MAX_KEY_SIZE]).unwrap(),
        Some(b"max-key".to_vec())
    );
}

#[test]
fn invalid_options_name_the_option() {
    common::for_each_memtable(|_| invalid_options_name_the_option_with());
}

fn invalid_options_name_the_option_with() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_write_buffer_number: 1,
        ..common::opts()
    };
    let err = Db::open(dir.path(), opts).err().expect("open must fail");
    assert!(err.to_string().contains("max_write_buffer_number"), "{err}");
}
