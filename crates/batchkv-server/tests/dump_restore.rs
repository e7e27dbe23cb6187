//! DUMP and RESTORE: every type survives a round trip through batchkv's
//! own payloads, payloads cross between redis-server 7 and batchkv in both
//! directions (the value read back on the other server is the same), and
//! RESTORE's errors are Redis's. The cross-server test prints `SKIPPED`
//! without redis-server (`scripts/install-redis.sh`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;
#[path = "diff/redis_process.rs"]
#[allow(dead_code, reason = "shared with redis_diff, which uses all of it")]
mod redis_process;
#[path = "diff/resp.rs"]
#[allow(dead_code, reason = "shared with redis_diff, which uses all of it")]
mod resp;

use common::{query_err, Harness};
use redis::{Connection, Value};

/// Commands that make one key of each type, small (the compact encodings
/// in Redis) and large (Redis's hash tables, skip lists, several quicklist
/// nodes), with binary data, integers and special scores.
fn fill(c: &mut Connection) {
    let mut p = redis::pipe();
    p.cmd("SET").arg("s:int").arg("12345").ignore();
    p.cmd("SET").arg("s:neg").arg("-7").ignore();
    p.cmd("SET").arg("s:lead0").arg("007").ignore();
    p.cmd("SET")
        .arg("s:bin")
        .arg(b"a\x00b\xffc".as_slice())
        .ignore();
    p.cmd("SET").arg("s:long").arg("abc".repeat(500)).ignore();
    p.cmd("SET").arg("s:empty").arg("").ignore();
    p.cmd("RPUSH")
        .arg("l:small")
        .arg(&["a", "1", "", "-5", "x\ny"])
        .ignore();
    p.cmd("HSET")
        .arg("h:small")
        .arg(&["f", "v", "n", "12", "e", ""])
        .ignore();
    p.cmd("SADD")
        .arg("set:ints")
        .arg(&["1", "-2", "300000", "9000000000"])
        .ignore();
    p.cmd("SADD")
        .arg("set:mixed")
        .arg(&["a", "1", "b c"])
        .ignore();
    p.cmd("ZADD")
        .arg("z:small")
        .arg(&["1.5", "a", "-inf", "b", "+inf", "c", "0", "d", "-3", "e"])
        .ignore();
    for i in 0..1200 {
        let v = format!("value-{i}-{}", "x".repeat(i % 50));
        p.cmd("RPUSH").arg("l:big").arg(&v).ignore();
        p.cmd("HSET")
            .arg("h:big")
            .arg(format!("f{i}"))
            .arg(&v)
            .ignore();
        p.cmd("SADD").arg("set:big").arg(&v).ignore();
        p.cmd("ZADD")
            .arg("z:big")
            .arg(i as f64 / 7.0 - 50.0)
            .arg(&v)
            .ignore();
    }
    let () = p.query(c).unwrap();
    fill_streams(c);
}

/// Streams (explicit IDs, so that both servers hold the same ones): mixed
/// fields, many entries with the same fields (several listpack nodes in
/// Redis) with deletions and two consumer groups, an emptied stream that
/// keeps its last ID, and values too large to share a node.
fn fill_streams(c: &mut Connection) {
    let mut p = redis::pipe();
    p.cmd("XADD")
        .arg(&["x:small", "1-1", "a", "1", "b", "2"])
        .ignore();
    p.cmd("XADD")
        .arg(&["x:small", "1-2", "a", "-3", "b", ""])
        .ignore();
    p.cmd("XADD")
        .arg(&["x:small", "2-0", "c\x00", "5"])
        .ignore();
    for i in 1..=300 {
        p.cmd("XADD")
            .arg("x:big")
            .arg(format!("{i}-0"))
            .arg(&["f", &format!("v{i}"), "n", &i.to_string()])
            .ignore();
    }
    p.cmd("XDEL")
        .arg(&["x:big", "10-0", "20-0", "150-0"])
        .ignore();
    p.cmd("XGROUP")
        .arg(&["CREATE", "x:big", "g1", "0"])
        .ignore();
    p.cmd("XGROUP")
        .arg(&["CREATE", "x:big", "g2", "$"])
        .ignore();
    p.cmd("XREADGROUP")
        .arg(&[
            "GROUP", "g1", "alice", "COUNT", "50", "STREAMS", "x:big", ">",
        ])
        .ignore();
    p.cmd("XREADGROUP")
        .arg(&["GROUP", "g1", "bob", "COUNT", "30", "STREAMS", "x:big", ">"])
        .ignore();
    p.cmd("XACK")
        .arg(&["x:big", "g1", "5-0", "6-0", "60-0"])
        .ignore();
    p.cmd("XGROUP")
        .arg(&["CREATECONSUMER", "x:big", "g1", "carol"])
        .ignore();
    p.cmd("XCLAIM")
        .arg(&["x:big", "g1", "carol", "0", "40-0", "41-0"])
        .ignore();
    p.cmd("XADD").arg(&["x:empty", "5-5", "f", "v"]).ignore();
    p.cmd("XDEL").arg(&["x:empty", "5-5"]).ignore();
    for i in 1..=3 {
        p.cmd("XADD")
            .arg("x:bigval")
            .arg(format!("{i}-0"))
            .arg("f")
            .arg("y".repeat(5000))
            .ignore();
    }
    let () = p.query(c).unwrap();
}

const KEYS: &[&str] = &[
    "s:int",
    "s:neg",
    "s:lead0",
    "s:bin",
    "s:long",
    "s:empty",
    "l:small",
    "l:big",
    "h:small",
    "h:big",
    "set:ints",
    "set:mixed",
    "set:big",
    "z:small",
    "z:big",
    "x:small",
    "x:big",
    "x:empty",
    "x:bigval",
];

/// The whole value at `key`, in a form that compares across servers
/// (hash fields and set members sorted: their order is Redis's hash
/// order there).
fn value_of(c: &mut Connection, key: &str) -> String {
    value_shown(c, key, false)
}

/// [`value_of`], a stream's delivery and seen times zeroed if `no_times`.
fn value_shown(c: &mut Connection, key: &str, no_times: bool) -> String {
    let ty: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
    let show = |v: Vec<Vec<u8>>| -> String {
        v.iter()
            .map(|x| x.escape_ascii().to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match ty.as_str() {
        "string" => {
            let v: Vec<u8> = redis::cmd("GET").arg(key).query(c).unwrap();
            format!("string {}", show(vec![v]))
        }
        "list" => {
            let v: Vec<Vec<u8>> = redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query(c)
                .unwrap();
            format!("list {}", show(v))
        }
        "set" => {
            let mut v: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(key).query(c).unwrap();
            v.sort();
            format!("set {}", show(v))
        }
        "hash" => {
            let v: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL").arg(key).query(c).unwrap();
            let mut v: Vec<Vec<u8>> = v
                .into_iter()
                .map(|(f, x)| [f, b"=".to_vec(), x].concat())
                .collect();
            v.sort();
            format!("hash {}", show(v))
        }
        "zset" => {
            let v: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(c)
                .unwrap();
            format!("zset {}", show(v))
        }
        "stream" => {
            let v: Value = redis::cmd("XINFO")
                .arg(&["STREAM", key, "FULL", "COUNT", "0"])
                .query(c)
                .unwrap();
            let v = if no_times { without_times(&v) } else { v };
            format!("stream {}", show_value(&v))
        }
        other => other.to_string(),
    }
}

/// A reply as text, without XINFO STREAM's `radix-tree-*` fields (they
/// describe Redis's memory layout).
fn show_value(v: &Value) -> String {
    match v {
        Value::Array(items) => {
            let mut out = Vec::new();
            let mut i = 0;
            while i < items.len() {
                if let Value::BulkString(k) = &items[i] {
                    if k.starts_with(b"radix-tree-") {
                        i += 2;
                        continue;
                    }
                }
                out.push(show_value(&items[i]));
                i += 1;
            }
            format!("[{}]", out.join(" "))
        }
        Value::BulkString(b) => b.escape_ascii().to_string(),
        other => format!("{other:?}"),
    }
}

/// A stream's XINFO reply with its delivery and seen times zeroed: two
/// servers that ran the same commands differ only there.
fn without_times(v: &Value) -> Value {
    let Value::Array(items) = v else {
        return v.clone();
    };
    let is_id = |v: &Value| matches!(v, Value::BulkString(b) if b.contains(&b'-'));
    let mut out: Vec<Value> = items.iter().map(without_times).collect();
    match out.as_mut_slice() {
        // A group's PEL entry: ID, consumer, delivery time, count.
        [id, Value::BulkString(_), t @ Value::Int(_), Value::Int(_)] if is_id(id) => {
            *t = Value::Int(0)
        }
        // A consumer's PEL entry: ID, delivery time, count.
        [id, t @ Value::Int(_), Value::Int(_)] if is_id(id) => *t = Value::Int(0),
        _ => {}
    }
    for i in 0..out.len().saturating_sub(1) {
        if matches!(&out[i], Value::BulkString(k) if k == b"seen-time") {
            out[i + 1] = Value::Int(0);
        }
    }
    Value::Array(out)
}

fn dump(c: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(c).unwrap()
}

#[test]
fn every_type_survives_dump_and_restore() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    for key in KEYS {
        let payload = dump(&mut c, key);
        let copy = format!("copy:{key}");
        let () = redis::cmd("RESTORE")
            .arg(&copy)
            .arg(0)
            .arg(&payload)
            .query(&mut c)
            .unwrap();
        assert_eq!(value_of(&mut c, &copy), value_of(&mut c, key), "{key}");
        let ttl: i64 = redis::cmd("PTTL").arg(&copy).query(&mut c).unwrap();
        assert_eq!(ttl, -1, "{key}");
    }
    // DUMP of a missing key is nil; the TTL and REPLACE options.
    let v: Value = redis::cmd("DUMP").arg("missing").query(&mut c).unwrap();
    assert_eq!(v, Value::Nil);
    let payload = dump(&mut c, "h:small");
    assert_eq!(
        query_err(&mut c, &["RESTORE", "l:small", "0", "x"]),
        "BUSYKEY Target key name already exists."
    );
    let () = redis::cmd("RESTORE")
        .arg("l:small")
        .arg(5000)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut c)
        .unwrap();
    assert_eq!(value_of(&mut c, "l:small"), value_of(&mut c, "h:small"));
    let ttl: i64 = redis::cmd("PTTL").arg("l:small").query(&mut c).unwrap();
    assert!((1..=5000).contains(&ttl), "{ttl}");
    // An absolute TTL in the past restores nothing (and REPLACE deletes).
    let () = redis::cmd("RESTORE")
        .arg("l:small")
        .arg(1)
        .arg(&payload)
        .arg("REPLACE")
        .arg("ABSTTL")
        .query(&mut c)
        .unwrap();
    let n: i64 = redis::cmd("EXISTS").arg("l:small").query(&mut c).unwrap();
    assert_eq!(n, 0);
    // A restored list wakes a client blocked on its key.
    let list = dump(&mut c, "l:big");
    let mut blocked = h.conn();
    let waiter = std::thread::spawn(move || {
        let v: (String, String) = redis::cmd("BLPOP")
            .arg("wake")
            .arg(10)
            .query(&mut blocked)
            .unwrap();
        v
    });
    common::wait_blocked(&mut c, 1);
    let () = redis::cmd("RESTORE")
        .arg("wake")
        .arg(0)
        .arg(&list)
        .query(&mut c)
        .unwrap();
    assert_eq!(waiter.join().unwrap(), ("wake".into(), "value-0-".into()));
    // After a restart the restored values are still there.
    let before: Vec<String> = KEYS
        .iter()
        .map(|k| value_of(&mut c, &format!("copy:{k}")))
        .collect();
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    let after: Vec<String> = KEYS
        .iter()
        .map(|k| value_of(&mut c, &format!("copy:{k}")))
        .collect();
    assert_eq!(before, after);
}

/// RESTORE's errors, in Redis's order of checks; a damaged payload is
/// refused and changes nothing.
#[test]
fn restore_refuses_what_redis_refuses() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    let good = dump(&mut c, "h:small");
    let text = |c: &mut Connection, payload: &[u8], rest: &[&str]| -> String {
        let mut cmd = redis::cmd("RESTORE");
        cmd.arg("new")
            .arg(rest.first().copied().unwrap_or("0"))
            .arg(payload);
        for r in rest.iter().skip(1) {
            cmd.arg(*r);
        }
        match cmd.query::<Value>(c) {
            Ok(v) => format!("{v:?}"),
            Err(e) => common::err_text(e),
        }
    };
    let mut flipped = good.clone();
    flipped[2] ^= 0x40;
    let mut newer = good.clone();
    let n = newer.len();
    newer[n - 10] = 11;
    let cases: Vec<(Vec<u8>, Vec<&str>, &str)> = vec![
        (
            flipped,
            vec![],
            "ERR DUMP payload version or checksum are wrong",
        ),
        (
            newer,
            vec![],
            "ERR DUMP payload version or checksum are wrong",
        ),
        (
            good[..5].to_vec(),
            vec![],
            "ERR DUMP payload version or checksum are wrong",
        ),
        (
            good.clone(),
            vec!["-1"],
            "ERR Invalid TTL value, must be >= 0",
        ),
        (
            good.clone(),
            vec!["x"],
            "ERR value is not an integer or out of range",
        ),
        (good.clone(), vec!["0", "FOO"], "ERR syntax error"),
        (
            good.clone(),
            vec!["0", "IDLETIME", "-1"],
            "ERR Invalid IDLETIME value, must be >= 0",
        ),
        (
            good.clone(),
            vec!["0", "FREQ", "256"],
            "ERR Invalid FREQ value, must be >= 0 and <= 255",
        ),
        (
            good.clone(),
            vec!["0", "IDLETIME", "1", "FREQ", "1"],
            "ERR syntax error",
        ),
    ];
    for (payload, rest, want) in cases {
        assert_eq!(text(&mut c, &payload, &rest), want, "{rest:?}");
    }
    let n: i64 = redis::cmd("EXISTS").arg("new").query(&mut c).unwrap();
    assert_eq!(n, 0);
    assert_eq!(
        text(&mut c, &good, &["0", "IDLETIME", "5"]),
        format!("{:?}", Value::Okay)
    );
}

/// Payloads DUMPed by redis-server RESTORE on batchkv, and the reverse,
/// giving the same values; RESTORE's errors are the same on both.
#[test]
fn payloads_cross_between_redis_server_and_batchkv() {
    if !redis_process::available() {
        eprintln!("SKIPPED: redis-server not found (run scripts/install-redis.sh)");
        return;
    }
    let redis = redis_process::RedisProcess::start().unwrap();
    let mut r = redis::Client::open(format!("redis://{}/", redis.addr))
        .unwrap()
        .get_connection()
        .unwrap();
    let h = Harness::start();
    let mut o = h.conn();
    fill(&mut r);
    fill(&mut o);
    for key in KEYS {
        // A stream's delivery and seen times differ between the servers;
        // each payload must restore them as its server had them.
        let want = value_of(&mut r, key);
        let ours = value_of(&mut o, key);
        assert_eq!(
            value_shown(&mut o, key, true),
            value_shown(&mut r, key, true),
            "{key} differs before the test"
        );
        let from_redis = dump(&mut r, key);
        let () = redis::cmd("RESTORE")
            .arg("x")
            .arg(0)
            .arg(&from_redis)
            .arg("REPLACE")
            .query(&mut o)
            .unwrap();
        assert_eq!(
            value_of(&mut o, "x"),
            want,
            "redis-server's DUMP of {key} restored on batchkv"
        );
        let from_ours = dump(&mut o, key);
        let () = redis::cmd("RESTORE")
            .arg("x")
            .arg(0)
            .arg(&from_ours)
            .arg("REPLACE")
            .query(&mut r)
            .unwrap();
        assert_eq!(
            value_of(&mut r, "x"),
            ours,
            "batchkv's DUMP of {key} restored on redis-server"
        );
    }
    let good = dump(&mut r, "z:small");
    for args in [
        vec!["RESTORE", "z:small", "0", "p"],
        vec!["RESTORE", "n", "-5", "p"],
        vec!["RESTORE", "n", "0", "p"],
        vec!["RESTORE", "n", "0", "p", "REPLACE", "IDLETIME"],
        vec!["RESTORE", "n", "0", "p", "FREQ", "-1"],
        vec!["DUMP"],
    ] {
        let send = |c: &mut Connection| {
            let mut cmd = redis::cmd(args[0]);
            for a in &args[1..] {
                if *a == "p" && args[0] == "RESTORE" && args.get(1) != Some(&"n") {
                    cmd.arg(&good);
                } else {
                    cmd.arg(*a);
                }
            }
            match cmd.query::<Value>(c) {
                Ok(v) => format!("{v:?}"),
                Err(e) => common::err_text(e),
            }
        };
        assert_eq!(send(&mut o), send(&mut r), "{args:?}");
    }
}
