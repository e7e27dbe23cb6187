//! Counters with a merge operator: increments are blind writes (no read
//! before the write), combined on reads and ahead of time by compaction.
//! `cargo run -p batchkv --example counters`
use std::sync::Arc;

use batchkv::merge_operators::{StringAppendOperator, U64AddOperator};
use batchkv::{Db, Options, WriteBatch, WriteOptions};

fn main() -> batchkv::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let opts = Options {
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts)?;
    let wo = WriteOptions::default();
    // Operands and values are u64s, 8 bytes little-endian.
    for page in ["/home", "/about", "/home", "/home"] {
        db.merge(&wo, page, U64AddOperator::encode(1))?;
    }
    // A put sets a counter; merges after it add to it.
    let mut b = WriteBatch::new();
    b.put("/about", U64AddOperator::encode(100));
    b.merge("/about", U64AddOperator::encode(5));
    db.write(&wo, b)?;
    let count = |k: &str| -> batchkv::Result<u64> {
        Ok(db
            .get(k)?
            .and_then(|v| U64AddOperator::decode(&v))
            .unwrap_or(0))
    };
    assert_eq!(count("/home")?, 3);
    assert_eq!(count("/about")?, 105);
    db.compact_range(None, None)?; // operands become one value
    assert_eq!(count("/home")?, 3);
    println!("/home = {}, /about = {}", count("/home")?, count("/about")?);
    db.close()?;

    // Lists: StringAppendOperator joins operands with a delimiter.
    let dir = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let opts = Options {
        merge_operator: Some(Arc::new(StringAppendOperator::new(","))),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts)?;
    for tag in ["rust", "lsm", "kv"] {
        db.merge(&wo, "tags", tag)?;
    }
    assert_eq!(db.get("tags")?.as_deref(), Some(&b"rust,lsm,kv"[..]));
    db.close()
}
