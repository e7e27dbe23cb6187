//! Batched point reads: one `multi_get` resolves a whole batch, walking
//! each memtable and table once for all keys and overlapping their cache
//! misses; `multi_get_with` does it without allocating per key.
//! `cargo run --release -p batchkv --example batched_reads`
use batchkv::{Db, Options, ReadOptions};

fn main() -> batchkv::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let db = Db::open(dir.path(), Options::default())?;
    for i in 0..10_000u32 {
        db.put(format!("key{i:05}"), i.to_le_bytes())?;
    }
    let keys: Vec<String> = (0..64u32).map(|i| format!("key{:05}", i * 157)).collect();
    let values = db.multi_get(&ReadOptions::default(), &keys);
    assert!(values.iter().all(|v| matches!(v, Ok(Some(_)))));

    // A snapshot keeps a batch consistent while writers go on.
    let ro = ReadOptions {
        snapshot: Some(db.snapshot()),
        ..Default::default()
    };
    db.delete(&keys[0])?;
    let mut found = 0;
    db.multi_get_with(&ro, &keys, |_, r| {
        found += usize::from(matches!(r, Ok(Some(_))))
    });
    assert_eq!(found, keys.len(), "the snapshot still sees the deleted key");
    println!(
        "{} of {} keys found through the snapshot",
        found,
        keys.len()
    );
    db.close()
}

#[test]
fn runs() {
    main().unwrap();
}
