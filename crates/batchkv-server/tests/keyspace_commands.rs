//! Keyspace commands, databases and expiry through a real Redis client.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{q, query_err, Harness};
use redis::Commands;

#[test]
fn del_exists_type_unlink() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["MSET", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a", "b", "x", "a"]), 3);
    assert_eq!(q::<String>(&mut c, &["TYPE", "a"]), "string");
    assert_eq!(q::<String>(&mut c, &["TYPE", "x"]), "none");
    assert_eq!(q::<i64>(&mut c, &["DEL", "a", "x", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["UNLINK", "b", "c"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a", "b", "c"]), 0);
    assert_eq!(
        query_err(&mut c, &["DEL"]),
        "ERR wrong number of arguments for 'del' command"
    );
}

#[test]
fn expiry_is_applied_lazily_and_by_every_command() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q::<i64>(&mut c, &["TTL", "missing"]), -2);
    assert_eq!(q::<i64>(&mut c, &["PTTL", "missing"]), -2);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "missing", "10"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100"]), 1);
    assert!((99..=100).contains(&q::<i64>(&mut c, &["TTL", "k"])));
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    // NX/XX/GT/LT
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "50", "GT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "200", "GT"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "300", "LT"]), 0);
    assert_eq!(
        query_err(&mut c, &["EXPIRE", "k", "1", "NX", "XX"]),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        query_err(&mut c, &["EXPIRE", "k", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        query_err(&mut c, &["EXPIRE", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'expire' command"
    );
    // Absolute forms and a past time deletes.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let at = (now_ms + 500_000).to_string();
    assert_eq!(q::<i64>(&mut c, &["PEXPIREAT", "k", &at]), 1);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "k"]), now_ms + 500_000);
    let at_s = (now_ms / 1000 + 100).to_string();
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "k", &at_s]), 1);
    assert!(q::<i64>(&mut c, &["TTL", "k"]) <= 100);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "-1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    // Lazy expiry: the key vanishes from every read once its time passes.
    let _: () = q(&mut c, &["SET", "t", "v", "PX", "150"]);
    let _: () = q(&mut c, &["SET", "u", "w"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "u", "150"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "t"]), "v");
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "t"]), None);
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "t", "u"]),
        vec![None, None]
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "t", "u"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TTL", "t"]), -2);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["KEYS", "*"]),
        Vec::<String>::new()
    );
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(
        q::<i64>(&mut c, &["INCR", "t"]),
        1,
        "expired counts as absent"
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "t"]), -1);
}

#[test]
fn keys_scan_dbsize_randomkey() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut all = BTreeSet::new();
    for i in 0..100 {
        let k = format!("user:{i}");
        let _: () = q(&mut c, &["SET", &k, "v"]);
        all.insert(k);
    }
    let _: () = q(&mut c, &["SET", "other", "v"]);
    all.insert("other".into());
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 101);
    let keys: BTreeSet<String> = q(&mut c, &["KEYS", "user:*"]);
    assert_eq!(keys.len(), 100);
    let keys: BTreeSet<String> = q(&mut c, &["KEYS", "user:1?"]);
    assert_eq!(keys.len(), 10);
    let keys: Vec<String> = q(&mut c, &["KEYS", "[ot]ther"]);
    assert_eq!(keys, vec!["other".to_string()]);
    // SCAN with the client's iterator and by hand.
    let scanned: BTreeSet<String> = c.scan::<String>().unwrap().collect();
    assert_eq!(scanned, all);
    let mut cursor = "0".to_string();
    let mut got = BTreeSet::new();
    let mut rounds = 0;
    loop {
        let (next, keys): (String, Vec<String>) =
            q(&mut c, &["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"]);
        got.extend(keys);
        rounds += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(got.len(), 100);
    assert!(rounds >= 14, "COUNT bounds each round: {rounds}");
    let (_, keys): (String, Vec<String>) = q(&mut c, &["SCAN", "0", "TYPE", "hash"]);
    assert!(keys.is_empty());
    assert_eq!(query_err(&mut c, &["SCAN", "abc"]), "ERR invalid cursor");
    assert_eq!(
        query_err(&mut c, &["SCAN", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    let r: String = q(&mut c, &["RANDOMKEY"]);
    assert!(all.contains(&r));
    let _: () = q(&mut c, &["SELECT", "5"]);
    assert_eq!(q::<Option<String>>(&mut c, &["RANDOMKEY"]), None);
}

/// RANDOMKEY picks uniformly in a database of at most 64 keys (it picks
/// among the 64 keys after a random point, wrapping): two keys far apart
/// in byte order, and 50 keys numbered in decimal (whose byte gaps jump at
/// each carry).
#[test]
fn randomkey_picks_small_databases_uniformly() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["MSET", "foo", "x", "bar", "y"]);
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for _ in 0..200 {
        *seen.entry(q(&mut c, &["RANDOMKEY"])).or_default() += 1;
    }
    assert!(seen["foo"] > 50 && seen["bar"] > 50, "{seen:?}");
    let _: () = q(&mut c, &["FLUSHDB"]);
    let mut args = vec!["MSET".to_string()];
    for i in 0..50 {
        args.extend([format!("key:{i}"), "v".to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let _: () = q(&mut c, &args);
    let mut counts = std::collections::HashMap::<String, usize>::new();
    for _ in 0..5000 {
        *counts.entry(q(&mut c, &["RANDOMKEY"])).or_default() += 1;
    }
    // 100 expected per key, standard deviation ~10: 5 of them either way.
    assert_eq!(counts.len(), 50);
    for (k, n) in &counts {
        assert!((50..150).contains(n), "{k} picked {n} times of 5000");
    }
}

#[test]
fn databases_are_separate_and_flushable() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "k", "db0"]);
    let _: () = q(&mut c, &["SELECT", "15"]);
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "k"]), None);
    let _: () = q(&mut c, &["SET", "k", "db15"]);
    let _: () = q(&mut c, &["SET", "k2", "x"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 2);
    assert_eq!(
        query_err(&mut c, &["SELECT", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SELECT", "x"]),
        "ERR value is not an integer or out of range"
    );
    let _: () = q(&mut c, &["FLUSHDB"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    let _: () = q(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "db0");
    let _: () = q(&mut c, &["SELECT", "3"]);
    let _: () = q(&mut c, &["SET", "z", "1"]);
    let _: () = q(&mut c, &["FLUSHALL", "ASYNC"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    let _: () = q(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(query_err(&mut c, &["FLUSHDB", "NOW"]), "ERR syntax error");
}

#[test]
fn rename_renamenx_copy() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "a", "1", "EX", "100"]);
    assert_eq!(q::<String>(&mut c, &["RENAME", "a", "b"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "1");
    assert!(q::<i64>(&mut c, &["TTL", "b"]) > 90, "RENAME keeps the TTL");
    assert_eq!(
        query_err(&mut c, &["RENAME", "nope", "x"]),
        "ERR no such key"
    );
    assert_eq!(q::<String>(&mut c, &["RENAME", "b", "b"]), "OK");
    let _: () = q(&mut c, &["SET", "c", "2"]);
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "b", "c"]), 0);
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "b", "d"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "d"]), "1");
    // COPY
    assert_eq!(q::<i64>(&mut c, &["COPY", "d", "c"]), 0);
    assert_eq!(q::<i64>(&mut c, &["COPY", "d", "c", "REPLACE"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "c"]), "1");
    assert_eq!(q::<i64>(&mut c, &["COPY", "d", "e", "DB", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["COPY", "nope", "e"]), 0);
    assert_eq!(
        query_err(&mut c, &["COPY", "d", "d"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        query_err(&mut c, &["COPY", "d", "e", "DB", "99"]),
        "ERR DB index is out of range"
    );
    let _: () = q(&mut c, &["SELECT", "2"]);
    assert_eq!(q::<String>(&mut c, &["GET", "e"]), "1");
    assert!(q::<i64>(&mut c, &["TTL", "e"]) > 90, "COPY keeps the TTL");
}

#[test]
fn admin_commands_answer_like_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<String>(&mut c, &["PING"]), "PONG");
    assert_eq!(q::<String>(&mut c, &["PING", "hi"]), "hi");
    assert_eq!(q::<String>(&mut c, &["ECHO", "x y"]), "x y");
    let _: () = q(&mut c, &["SET", "k", "v"]);
    let info: String = q(&mut c, &["INFO"]);
    for want in [
        "# Server",
        "redis_version:",
        "# Stats",
        "total_commands_processed:",
        "# Keyspace",
        "db0:keys=1,expires=0",
        "# batchkv",
        "memtable:skiplist",
        "read_batches:",
        // No SST file yet: the readers hold nothing.
        "table_readers_mem:0\r\n",
    ] {
        assert!(info.contains(want), "INFO lacks {want}: {info}");
    }
    let ks: String = q(&mut c, &["INFO", "keyspace"]);
    assert!(!ks.contains("# Server"));
    let cfg: Vec<String> = q(&mut c, &["CONFIG", "GET", "save"]);
    assert_eq!(cfg, vec!["save".to_string(), String::new()]);
    let cfg: Vec<String> = q(&mut c, &["CONFIG", "GET", "append*"]);
    assert_eq!(cfg, ["appendonly", "yes", "appendfsync", "everysec"]);
    let n: i64 = q(&mut c, &["COMMAND", "COUNT"]);
    assert!(n > 50);
    let info: redis::Value = q(&mut c, &["COMMAND", "INFO", "get", "nosuch"]);
    let redis::Value::Array(items) = info else {
        panic!("{info:?}")
    };
    assert_eq!(items.len(), 2);
    assert_eq!(items[1], redis::Value::Nil);
    let all: Vec<redis::Value> = q(&mut c, &["COMMAND"]);
    assert_eq!(all.len() as i64, n);
    let _: redis::Value = q(&mut c, &["COMMAND", "DOCS"]);
    assert_eq!(q::<Option<String>>(&mut c, &["CLIENT", "GETNAME"]), None);
    let _: () = q(&mut c, &["CLIENT", "SETNAME", "me"]);
    assert_eq!(q::<String>(&mut c, &["CLIENT", "GETNAME"]), "me");
    assert!(q::<i64>(&mut c, &["CLIENT", "ID"]) > 0);
    assert_eq!(
        query_err(&mut c, &["CLIENT", "SETNAME", "a b"]),
        "ERR Client names cannot contain spaces, newlines or special characters."
    );
    assert_eq!(
        query_err(&mut c, &["NOSUCH", "a", "b"]),
        "ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "
    );
    let t: Vec<String> = q(&mut c, &["TIME"]);
    assert_eq!(t.len(), 2);
}
