//! Expiring values with a compaction filter: values carry their expiry,
//! readers check it, compaction drops what has expired.
//! `cargo run -p batchkv --example ttl`
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use batchkv::{Db, Options, TtlFilter};

/// `expiry ms (8 bytes big endian, 0 = never) ‖ payload`.
fn encode(expiry_ms: u64, payload: &[u8]) -> Vec<u8> {
    [&expiry_ms.to_be_bytes()[..], payload].concat()
}

fn expiry_of(v: &[u8]) -> Option<u64> {
    let at = u64::from_be_bytes(v.get(..8)?.try_into().ok()?);
    (at != 0).then_some(at)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn main() -> batchkv::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| batchkv::Error::io("tempdir", e))?;
    let opts = Options {
        compaction_filter: Some(Arc::new(TtlFilter::new(expiry_of))),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts)?;
    db.put(b"session", encode(now_ms() - 1, b"expired a moment ago"))?;
    db.put(b"config", encode(0, b"kept forever"))?;
    // Readers check expiry themselves until compaction runs.
    let live = |v: Option<Vec<u8>>| v.filter(|v| expiry_of(v).is_none_or(|at| at > now_ms()));
    assert_eq!(live(db.get(b"session")?), None);
    db.compact_range(None, None)?;
    assert_eq!(db.get(b"session")?, None, "dropped by compaction");
    assert!(db.get(b"config")?.is_some());
    println!(
        "expired values dropped; {} keys left",
        db.prefix(&Default::default(), b"")?.count()
    );
    db.close()
}

#[test]
fn runs() {
    main().unwrap();
}
