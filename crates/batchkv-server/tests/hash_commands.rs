//! Hash commands through a real Redis client, and the collection layout's
//! promises: a deleted, overwritten or expired hash leaves no element keys
//! behind, whatever its size.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{q, query_err, Harness, WRONGTYPE};

#[test]
fn fields_are_set_read_counted_and_deleted() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(
        q::<i64>(&mut c, &["HSET", "h", "a", "1", "b", "2", "a", "3"]),
        2
    );
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]), 2);
    assert_eq!(
        q::<Option<String>>(&mut c, &["HGET", "h", "a"]),
        Some("3".into())
    );
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["HMGET", "h", "b", "x", "a"]),
        vec![Some("2".into()), None, Some("3".into())]
    );
    assert_eq!(
        q::<HashMap<String, String>>(&mut c, &["HGETALL", "h"]),
        HashMap::from([("a".into(), "3".into()), ("b".into(), "2".into())])
    );
    assert_eq!(q::<Vec<String>>(&mut c, &["HKEYS", "h"]), ["a", "b"]);
    assert_eq!(q::<Vec<String>>(&mut c, &["HVALS", "h"]), ["3", "2"]);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "a", "9"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "c", "9"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "h", "a", "-5"]), -2);
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "a", "0.5"]),
        "-1.5"
    );
    assert_eq!(
        query_err(&mut c, &["HINCRBY", "h", "a", "1"]),
        "ERR hash value is not an integer"
    );
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "a", "a", "zz"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "b", "c"]), 2);
    // Emptied: the key is gone.
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "h"]), 0);
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]), "none");
    assert_eq!(
        query_err(&mut c, &["HSET", "h", "a"]),
        "ERR wrong number of arguments for 'hset' command"
    );
}

#[test]
fn wrong_type_errors_match_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "s", "v"]);
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(query_err(&mut c, &["HGET", "s", "f"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["HSET", "s", "f", "v"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["GET", "h"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["APPEND", "h", "x"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["SET", "h", "x", "GET"]), WRONGTYPE);
    // MGET answers nil for a key of another type, SETNX sees it exists.
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "h", "s"]),
        vec![None, Some("v".into())]
    );
    assert_eq!(q::<i64>(&mut c, &["SETNX", "h", "x"]), 0);
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]), "hash");
    // SET replaces a hash.
    let _: () = q(&mut c, &["SET", "h", "x"]);
    assert_eq!(q::<String>(&mut c, &["GET", "h"]), "x");
}

#[test]
fn keyspace_commands_work_on_hashes() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v", "g", "w"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "h", "100"]), 1);
    assert!((99..=100).contains(&q::<i64>(&mut c, &["TTL", "h"])));
    let _: () = q(&mut c, &["RENAME", "h", "h2"]);
    assert!((99..=100).contains(&q::<i64>(&mut c, &["TTL", "h2"])));
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "h2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["COPY", "h2", "h3"]), 1);
    let _: i64 = q(&mut c, &["HSET", "h2", "f", "changed"]);
    assert_eq!(q::<String>(&mut c, &["HGET", "h3", "f"]), "v");
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h3"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "h", "h2", "h3"]), 2);
    let (_, keys): (u64, Vec<String>) = q(&mut c, &["SCAN", "0", "TYPE", "hash", "COUNT", "100"]);
    assert_eq!(keys.len(), 2);
    let (_, keys): (u64, Vec<String>) = q(&mut c, &["SCAN", "0", "TYPE", "string"]);
    assert!(keys.is_empty());
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 2);
    // An expired hash is absent, and a new one at its key starts empty.
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "h3", "1"]), 1);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h3"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HSET", "h3", "new", "1"]), 1);
    assert_eq!(q::<Vec<String>>(&mut c, &["HKEYS", "h3"]), ["new"]);
}

#[test]
fn replaced_hashes_leave_no_elements_small_or_large() {
    let h = Harness::start();
    let mut c = h.conn();
    // Large (range deletion) and small (point deletions), by DEL, SET,
    // RENAME onto, FLUSHDB, and expiry.
    for (key, n) in [("big", 1000), ("small", 10), ("big2", 500), ("t", 3)] {
        let mut args = vec!["HSET".to_string(), key.to_string()];
        for i in 0..n {
            args.push(format!("f{i}"));
            args.push(format!("v{i}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(q::<i64>(&mut c, &args), n);
    }
    assert_eq!(q::<i64>(&mut c, &["DEL", "big"]), 1);
    let _: () = q(&mut c, &["SET", "small", "x"]);
    let _: () = q(&mut c, &["RENAME", "t", "big2"]);
    assert_eq!(q::<i64>(&mut c, &["HLEN", "big2"]), 3);
    let _: i64 = q(&mut c, &["HSET", "gone", "a", "1"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "gone", "1"]), 1);
    let _: i64 = q(&mut c, &["HSET", "other", "a", "1"]);
    let _: () = q(&mut c, &["SELECT", "1"]);
    let _: i64 = q(&mut c, &["HSET", "in1", "a", "1"]);
    let _: () = q(&mut c, &["FLUSHDB"]);
    let _: () = q(&mut c, &["SELECT", "0"]);
    // Wait for active expiry to delete "gone" with its element.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = q(&mut c, &["INFO", "stats"]);
        if info.contains("expired_keys:1") || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(c);
    let dir = h.stop();
    // Left: big2 (3 fields under its new version) and other (1).
    assert_eq!(common::stored_elements(dir.path()), 4);
}

#[test]
fn hashes_survive_restart() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["HSET", "h", "a", "1", "b", "2"]);
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]), 2);
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "b"]), "2");
    // A new key after the restart never reuses the old version.
    let _: i64 = q(&mut c, &["DEL", "h"]);
    let _: i64 = q(&mut c, &["HSET", "h", "z", "1"]);
    assert_eq!(q::<Vec<String>>(&mut c, &["HKEYS", "h"]), ["z"]);
}

#[test]
fn hscan_and_hrandfield() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut args = vec!["HSET".to_string(), "h".to_string()];
    for i in 0..300 {
        args.push(format!("f{i:03}"));
        args.push(i.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let _: i64 = q(&mut c, &args);
    let mut seen = HashMap::new();
    let mut cursor = 0u64;
    let mut calls = 0;
    loop {
        let (next, items): (u64, Vec<String>) =
            q(&mut c, &["HSCAN", "h", &cursor.to_string(), "COUNT", "50"]);
        for p in items.chunks(2) {
            seen.insert(p[0].clone(), p[1].clone());
        }
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 300);
    assert!(calls >= 6, "paged by COUNT: {calls} calls");
    let (_, items): (u64, Vec<String>) = q(
        &mut c,
        &["HSCAN", "h", "0", "MATCH", "f29*", "COUNT", "1000"],
    );
    assert_eq!(items.len(), 2 * 10);
    let one: String = q(&mut c, &["HRANDFIELD", "h"]);
    assert!(seen.contains_key(&one));
    let five: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "5"]);
    assert_eq!(
        five.iter().collect::<std::collections::HashSet<_>>().len(),
        5
    );
    let rep: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "-400"]);
    assert_eq!(rep.len(), 400);
    let wv: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "3", "WITHVALUES"]);
    assert_eq!(wv.len(), 6);
    assert_eq!(seen[&wv[0]], wv[1]);
}
