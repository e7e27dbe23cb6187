//! Open a database, write atomically and durably, read, scan, close.
//! `cargo run -p batchkv --example basic`
use batchkv::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn main() -> batchkv::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let db = Db::open(dir.path(), Options::default())?;
    db.put(b"greeting", b"hello")?;
    let mut batch = WriteBatch::new();
    batch.put(b"user:1", b"ada");
    batch.put(b"user:2", b"grace");
    batch.delete(b"greeting");
    // Atomic, and durable once it returns (fsync of the WAL).
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        batch,
    )?;
    assert_eq!(db.get(b"greeting")?, None);
    for kv in db.prefix(&ReadOptions::default(), b"user:")? {
        let (k, v) = kv?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v)
        );
    }
    println!("{}", db.property("batchkv.stats").unwrap_or_default());
    db.close()
}

#[test]
fn runs() {
    main().unwrap();
}
