//! Bulk loading: build a table with `SstFileWriter`, ingest it, read it
//! back — and see that the ingested values shadow older ones, while a
//! snapshot taken before the ingest keeps seeing the old state.
//! `cargo run -p batchkv --example ingest`
use batchkv::{Db, IngestOptions, Options, ReadOptions, SstFileWriter};

fn main() -> batchkv::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let opts = Options::default();
    let db = Db::open(tmp.path().join("db"), opts.clone())?;
    db.put(b"user:0042", b"old name")?;
    let before = db.snapshot();

    // Keys must be added in strictly ascending order.
    let sst = tmp.path().join("users.sst");
    let mut writer = SstFileWriter::create(&sst, &opts)?;
    for i in 0..1000u32 {
        writer.put(format!("user:{i:04}"), format!("name {i}"))?;
    }
    let info = writer.finish()?;
    println!(
        "wrote {} entries ({} bytes), keys {:?}..{:?}",
        info.num_entries,
        info.file_size,
        String::from_utf8_lossy(&info.smallest_key),
        String::from_utf8_lossy(&info.largest_key)
    );

    db.ingest_external_file(&[&info.path], &IngestOptions::default())?;

    assert_eq!(db.get(b"user:0042")?, Some(b"name 42".to_vec()));
    assert_eq!(db.get(b"user:0999")?, Some(b"name 999".to_vec()));
    let old = ReadOptions {
        snapshot: Some(before),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(&old, b"user:0042")?, Some(b"old name".to_vec()));
    assert_eq!(db.get_opt(&old, b"user:0999")?, None);
    let n = db.prefix(&ReadOptions::default(), b"user:")?.count();
    assert_eq!(n, 1000);
    println!("ingested; {n} users readable, the snapshot still sees the old state");
    assert!(
        info.path.exists(),
        "the source is copied, not moved, by default"
    );
    db.close()
}

#[test]
fn runs() {
    main().unwrap();
}
