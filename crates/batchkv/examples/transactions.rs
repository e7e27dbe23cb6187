//! Optimistic transactions: a counter incremented from several threads and
//! a transfer between two accounts, each retried when `commit` reports a
//! conflict. `cargo run -p batchkv --example transactions`

#![allow(clippy::expect_used, reason = "a panicked worker thread is re-raised")]
use batchkv::{Db, Error, Options, Transaction};

/// Runs `body` in a new transaction and commits it, starting over on
/// `Error::Conflict` (another writer touched a key it read for update or
/// wrote since it began).
fn with_retry(
    db: &Db,
    mut body: impl FnMut(&mut Transaction) -> batchkv::Result<()>,
) -> batchkv::Result<u32> {
    let mut retries = 0;
    loop {
        let mut txn = db.transaction();
        body(&mut txn)?;
        match txn.commit() {
            Ok(()) => return Ok(retries),
            Err(e) if e.is_conflict() => retries += 1,
            Err(e) => return Err(e),
        }
    }
}

fn number(v: Option<Vec<u8>>) -> i64 {
    v.and_then(|v| String::from_utf8(v).ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn main() -> batchkv::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let db = Db::open(dir.path(), Options::default())?;

    // A counter: 4 threads × 250 read-modify-write increments.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || -> batchkv::Result<u32> {
                let mut retries = 0;
                for _ in 0..250 {
                    retries += with_retry(&db, |txn| {
                        let n = number(txn.get_for_update(b"counter")?);
                        txn.put(b"counter", (n + 1).to_string())
                    })?;
                }
                Ok(retries)
            })
        })
        .collect();
    let mut retries = 0;
    for t in threads {
        retries += t.join().expect("counter thread panicked")?;
    }
    let counter = number(db.get(b"counter")?);
    println!("counter = {counter} ({retries} retries after conflicts)");
    assert_eq!(counter, 1000);

    // A transfer: both balances change together, or neither does.
    db.put(b"acct:alice", b"100")?;
    db.put(b"acct:bob", b"20")?;
    with_retry(&db, |txn| {
        let alice = number(txn.get_for_update(b"acct:alice")?);
        let bob = number(txn.get_for_update(b"acct:bob")?);
        if alice < 30 {
            return Err(Error::InvalidArgument("insufficient funds".into()));
        }
        txn.put(b"acct:alice", (alice - 30).to_string())?;
        txn.put(b"acct:bob", (bob + 30).to_string())
    })?;
    let (alice, bob) = (number(db.get(b"acct:alice")?), number(db.get(b"acct:bob")?));
    println!("alice = {alice}, bob = {bob}");
    assert_eq!((alice, bob), (70, 50));

    // A conflict: a plain write to a key read for update after the
    // transaction began makes its commit fail, and nothing is applied.
    let mut txn = db.transaction();
    let alice = number(txn.get_for_update(b"acct:alice")?);
    txn.put(b"acct:alice", (alice - 10).to_string())?;
    db.put(b"acct:alice", b"0")?;
    match txn.commit() {
        Err(Error::Conflict { key, cf }) => {
            println!("conflict on {:?} in {cf}", String::from_utf8_lossy(&key));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(db.get(b"acct:alice")?, Some(b"0".to_vec()));
    Ok(())
}
