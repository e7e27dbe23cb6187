//! Expired keys are deleted in the background (not only hidden); a key
//! whose expiry was replaced by a later SET is kept.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::time::Duration;

use common::{q, Harness};

#[test]
fn expired_keys_are_deleted_from_the_engine() {
    let h = Harness::start();
    // The first sweep walks the new, empty database and marks it indexed;
    // from then on only the expiry index can find these keys.
    let mut c = h.conn();
    wait_for_info(&mut c, "expiry_index_complete:1\r\n");
    let mut p = redis::pipe();
    for i in 0..50 {
        p.cmd("SET")
            .arg(format!("t{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .ignore();
    }
    for i in 0..10 {
        p.cmd("SET").arg(format!("p{i}")).arg("v").ignore();
    }
    p.cmd("SELECT").arg(4).ignore();
    p.cmd("SET")
        .arg("t-in-4")
        .arg("v")
        .arg("PX")
        .arg(100)
        .ignore();
    // Written with an expiry, then again without: must survive.
    p.cmd("SET")
        .arg("revived")
        .arg("old")
        .arg("PX")
        .arg(100)
        .ignore();
    p.cmd("SET").arg("revived").arg("new").ignore();
    // Its expiry moved later before it came: stays, with the later entry.
    p.cmd("SET")
        .arg("extended")
        .arg("v")
        .arg("PX")
        .arg(100)
        .ignore();
    p.cmd("PEXPIRE").arg("extended").arg(50_000_000).ignore();
    // Expires much later: stays, with its expiry-index entry.
    p.cmd("SET")
        .arg("later")
        .arg("v")
        .arg("EX")
        .arg(100_000)
        .ignore();
    // Written last and sorting last among keys due in the same
    // millisecond: the index is swept in order, so once this one is gone
    // every entry above (the stale ones too) has been handled.
    p.cmd("SET")
        .arg("zz-last")
        .arg("v")
        .arg("PX")
        .arg(100)
        .ignore();
    let _: () = p.query(&mut c).unwrap();
    // The sweeper reads the index every 100 ms.
    wait_for_info(&mut c, "expired_keys:52\r\n");
    std::thread::sleep(Duration::from_millis(300));
    let info: String = q(&mut c, &["INFO", "stats"]);
    assert!(info.contains("expired_keys:52\r\n"), "{info}");
    drop(c);
    let dir = h.stop();
    let (keys, index) = stored_keys(dir.path());
    let mut keys: Vec<String> = keys
        .iter()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    keys.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("\0p{i}")).collect();
    want.push("\u{4}revived".into());
    want.push("\u{4}later".into());
    want.push("\u{4}extended".into());
    // The sweeper's marker: every value with an expiry is indexed; and
    // the server marker (`marker.rs`), written at start.
    want.push("\u{11}expiry_index_complete".into());
    want.push("\u{11}batchkv_serve_keyspace".into());
    want.sort();
    assert_eq!(keys, want);
    // Only the entries still to come are left in the index (in expiry
    // order); the deleted keys' entries and the stale ones of "revived"
    // and "extended" are gone.
    assert_eq!(index, [b"\x04extended".to_vec(), b"\x04later".to_vec()]);
}

/// The stored value format (`keyspace.rs`): tag 1, expiry (ms, LE), bytes.
fn expiring_value(at_ms: u64, data: &[u8]) -> Vec<u8> {
    let mut v = vec![1];
    v.extend_from_slice(&at_ms.to_le_bytes());
    v.extend_from_slice(data);
    v
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Keys of the engine at `dir`: database and marker keys, and the stored
/// keys the expiry index names.
fn stored_keys(dir: &std::path::Path) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let db = batchkv::Db::open(dir, batchkv::Options::default()).unwrap();
    let mut it = db.iter(&batchkv::ReadOptions::default()).unwrap();
    it.seek_to_first();
    let (mut keys, mut index) = (Vec::new(), Vec::new());
    while it.valid() {
        match it.key()[0] {
            0x10 => index.push(it.key()[9..].to_vec()),
            _ => keys.push(it.key().to_vec()),
        }
        it.next();
    }
    (keys, index)
}

#[test]
fn a_database_from_before_the_expiry_index_is_walked_once_and_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let now = now_ms();
    {
        // Written as a server without the index wrote: values only.
        let db = batchkv::Db::open(dir.path(), batchkv::Options::default()).unwrap();
        for i in 0..100 {
            db.put(format!("\0old{i}"), expiring_value(now - 1000, b"x"))
                .unwrap();
        }
        db.put(b"\0later", expiring_value(now + 100_000_000, b"v"))
            .unwrap();
        db.put(b"\0plain", [0, b'v']).unwrap();
        db.close().unwrap();
    }
    let server = common::start_in(dir.path(), |_| {});
    let mut c = redis::Client::open(format!("redis://{}/", server.addr()))
        .unwrap()
        .get_connection()
        .unwrap();
    wait_for_info(&mut c, "expired_keys:100\r\n");
    wait_for_info(&mut c, "expiry_index_complete:1\r\n");
    assert_eq!(q::<String>(&mut c, &["GET", "later"]), "v");
    drop(c);
    server.shutdown();
    server.join().unwrap();
    let (keys, index) = stored_keys(dir.path());
    assert_eq!(
        keys,
        [
            b"\0later".to_vec(),
            b"\0plain".to_vec(),
            b"\x11batchkv_serve_keyspace".to_vec(),
            b"\x11expiry_index_complete".to_vec()
        ]
    );
    assert_eq!(
        index,
        [b"\0later".to_vec()],
        "the walk indexed what expires later"
    );
}

/// Polls INFO stats (for at most 10 s) until it contains `line`.
fn wait_for_info(c: &mut redis::Connection, line: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = q(c, &["INFO", "stats"]);
        if info.contains(line) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {line:?} in {info}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn flushdb_and_flushall_remove_their_expiry_index_entries() {
    let h = Harness::start();
    let mut c = h.conn();
    // The marker is written by the first sweep; wait for it so that the
    // keys left at the end do not depend on when that sweep ran.
    wait_for_info(&mut c, "expiry_index_complete:1\r\n");
    let ex = |c: &mut redis::Connection, k: &str| {
        let _: () = q(c, &["SET", k, "v", "EX", "100000"]);
    };
    ex(&mut c, "a");
    let _: () = q(&mut c, &["SELECT", "1"]);
    ex(&mut c, "b");
    let _: () = q(&mut c, &["SELECT", "2"]);
    ex(&mut c, "c");
    let _: () = q(&mut c, &["SELECT", "1"]);
    let _: () = q(&mut c, &["FLUSHDB"]);
    drop(c);
    let dir = h.stop();
    let (_, index) = stored_keys(dir.path());
    assert_eq!(
        index,
        [b"\0a".to_vec(), b"\x02c".to_vec()],
        "db 1's entry went"
    );
    let h = Harness {
        server: common::start_in(dir.path(), |_| {}),
        dir,
    };
    let mut c = h.conn();
    let _: () = q(&mut c, &["FLUSHALL"]);
    drop(c);
    let dir = h.stop();
    let (keys, index) = stored_keys(dir.path());
    assert!(index.is_empty(), "{index:?}");
    // FLUSHALL leaves the range 11: the server and index markers.
    assert_eq!(
        keys,
        [
            b"\x11batchkv_serve_keyspace".to_vec(),
            b"\x11expiry_index_complete".to_vec()
        ]
    );
}
