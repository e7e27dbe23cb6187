//! Set commands through a real Redis client: each command's replies and
//! errors (as redis-server 7.0 gives them), the multi-key commands'
//! atomic writes, persistence across a restart, and one sequence of
//! commands replayed against a real redis-server when one is installed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::reference::RedisServer;
use common::{err_text, q, query_err, Harness, WRONGTYPE};
use redis::Value;

/// The reply to `args`, which must be a set (or array) of strings, as a
/// sorted set of strings.
fn members(c: &mut redis::Connection, args: &[&str]) -> BTreeSet<String> {
    q::<Vec<String>>(c, args).into_iter().collect()
}

fn strs(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Adds members `m0..m{n-1}` to `key`.
fn sadd_many(c: &mut redis::Connection, key: &str, n: usize) {
    let mut args = vec!["SADD".to_string(), key.to_string()];
    args.extend((0..n).map(|i| format!("m{i}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(q::<usize>(c, &args), n);
}

#[test]
fn members_are_added_checked_counted_and_removed() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a", "b", "a", "c"]), 3);
    assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a", "d"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 4);
    assert_eq!(q::<String>(&mut c, &["TYPE", "s"]), "set");
    assert_eq!(
        members(&mut c, &["SMEMBERS", "s"]),
        strs(&["a", "b", "c", "d"])
    );
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "zz"]), 0);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["SMISMEMBER", "s", "a", "zz", "d", "a"]),
        [1, 0, 1, 1]
    );
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "a", "a", "zz"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 3);
    // Emptied: the key is gone.
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "b", "c", "d"]), 3);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0);
    // Absent keys: empty answers.
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "a"]), 0);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["SMISMEMBER", "s", "a", "b"]),
        [0, 0]
    );
    assert!(members(&mut c, &["SMEMBERS", "s"]).is_empty());
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "a"]), 0);
    // SADD keeps the key's expiry; binary members round-trip.
    assert_eq!(q::<i64>(&mut c, &["SADD", "e", "x"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "e", "100"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SADD", "e", "y"]), 1);
    assert!((99..=100).contains(&q::<i64>(&mut c, &["TTL", "e"])));
    let bin: &[u8] = b"\x00\xff\r\n";
    let n: i64 = redis::cmd("SADD").arg("b").arg(bin).query(&mut c).unwrap();
    assert_eq!(n, 1);
    let got: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg("b").query(&mut c).unwrap();
    assert_eq!(got, [bin.to_vec()]);
    for (args, name) in [
        (&["SADD", "s"][..], "sadd"),
        (&["SISMEMBER", "s", "a", "b"], "sismember"),
        (&["SMISMEMBER", "s"], "smismember"),
        (&["SCARD"], "scard"),
        (&["SMOVE", "a", "b"], "smove"),
        (&["SINTERCARD", "1"], "sintercard"),
        (&["SSCAN", "s"], "sscan"),
    ] {
        assert_eq!(
            query_err(&mut c, args),
            format!("ERR wrong number of arguments for '{name}' command")
        );
    }
}

#[test]
fn wrong_type_errors_match_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "str", "v"]);
    let _: i64 = q(&mut c, &["HSET", "hash", "f", "v"]);
    let _: i64 = q(&mut c, &["SADD", "s", "a", "b"]);
    for k in ["str", "hash"] {
        for args in [
            &["SADD", k, "a"][..],
            &["SREM", k, "a"],
            &["SISMEMBER", k, "a"],
            &["SMISMEMBER", k, "a"],
            &["SMEMBERS", k],
            &["SCARD", k],
            &["SPOP", k],
            &["SPOP", k, "2"],
            &["SPOP", k, "0"],
            &["SRANDMEMBER", k],
            &["SRANDMEMBER", k, "-2"],
            &["SMOVE", k, "s", "a"],
            &["SMOVE", "s", k, "a"],
            // Even when the member is absent.
            &["SMOVE", "s", k, "zz"],
            &["SINTER", "s", k],
            // Every key is checked, even after an absent one.
            &["SINTER", "nokey", k],
            &["SUNION", k, "s"],
            &["SDIFF", "s", k],
            &["SDIFF", "nokey", k],
            &["SINTERSTORE", "d", "s", k],
            &["SUNIONSTORE", "d", k],
            &["SDIFFSTORE", "d", "nokey", k],
            &["SINTERCARD", "2", "nokey", k],
            &["SSCAN", k, "0"],
        ] {
            assert_eq!(query_err(&mut c, args), WRONGTYPE, "{args:?}");
        }
        // An absent source makes SMOVE a no-op before any type check.
        assert_eq!(q::<i64>(&mut c, &["SMOVE", "nokey", k, "a"]), 0);
    }
    // Nothing was changed by the failed commands.
    assert_eq!(q::<String>(&mut c, &["GET", "str"]), "v");
    assert_eq!(q::<String>(&mut c, &["HGET", "hash", "f"]), "v");
    assert_eq!(members(&mut c, &["SMEMBERS", "s"]), strs(&["a", "b"]));
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0);
    // Commands of other types refuse a set.
    assert_eq!(query_err(&mut c, &["GET", "s"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["HGET", "s", "a"]), WRONGTYPE);
}

#[test]
fn inter_union_diff_and_their_empty_results() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "a", "1", "2", "3", "4", "x"]);
    let _: i64 = q(&mut c, &["SADD", "b", "2", "3", "y"]);
    let _: i64 = q(&mut c, &["SADD", "c", "3", "2", "9"]);
    sadd_many(&mut c, "big", 500);
    let _: i64 = q(&mut c, &["SADD", "big", "2", "3"]);
    assert_eq!(
        members(&mut c, &["SINTER", "big", "a", "b", "c"]),
        strs(&["2", "3"])
    );
    assert_eq!(
        members(&mut c, &["SINTER", "a"]),
        strs(&["1", "2", "3", "4", "x"])
    );
    assert_eq!(
        members(&mut c, &["SINTER", "a", "a"]),
        strs(&["1", "2", "3", "4", "x"])
    );
    assert!(members(&mut c, &["SINTER", "a", "nokey"]).is_empty());
    assert!(members(&mut c, &["SINTER", "b", "a", "big", "nokey"]).is_empty());
    assert!(members(&mut c, &["SINTER", "nokey"]).is_empty());
    assert_eq!(
        members(&mut c, &["SUNION", "a", "nokey", "b"]),
        strs(&["1", "2", "3", "4", "x", "y"])
    );
    assert!(members(&mut c, &["SUNION", "nokey", "nokey2"]).is_empty());
    assert_eq!(members(&mut c, &["SUNION", "big"]).len(), 502);
    assert_eq!(
        members(&mut c, &["SDIFF", "a", "b", "nokey", "c"]),
        strs(&["1", "4", "x"])
    );
    // The other set is larger, then smaller, than what is left.
    assert_eq!(members(&mut c, &["SDIFF", "b", "big"]), strs(&["y"]));
    assert_eq!(members(&mut c, &["SDIFF", "big", "a", "b"]).len(), 500);
    assert!(members(&mut c, &["SDIFF", "a", "a"]).is_empty());
    assert!(members(&mut c, &["SDIFF", "nokey", "a"]).is_empty());
    assert_eq!(members(&mut c, &["SDIFF", "a"]).len(), 5);
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "3", "a", "b", "c"]), 2);
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "a", "nokey"]), 0);
}

/// Reply shapes: SMEMBERS, SINTER, SUNION, SDIFF and SPOP with a count
/// answer a RESP3 set (`~`), SRANDMEMBER with a count an array; RESP2 has
/// arrays for both.
#[test]
fn set_replies_are_resp3_sets() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "s", "a"]);
    let mut raw = h.raw();
    raw.expect(b"SMEMBERS s\r\n", b"*1\r\n$1\r\na\r\n");
    raw.send(b"HELLO 3\r\n");
    assert!(raw.read_until(b"modules\r\n*0\r\n").starts_with(b"%"));
    for (cmd, reply) in [
        (&b"SMEMBERS s\r\n"[..], &b"~1\r\n$1\r\na\r\n"[..]),
        (b"SINTER s s\r\n", b"~1\r\n$1\r\na\r\n"),
        (b"SUNION s nokey\r\n", b"~1\r\n$1\r\na\r\n"),
        (b"SDIFF s nokey\r\n", b"~1\r\n$1\r\na\r\n"),
        (b"SMEMBERS nokey\r\n", b"~0\r\n"),
        (b"SRANDMEMBER s 5\r\n", b"*1\r\n$1\r\na\r\n"),
        (b"SRANDMEMBER s -2\r\n", b"*2\r\n$1\r\na\r\n$1\r\na\r\n"),
        (b"SRANDMEMBER nokey 5\r\n", b"*0\r\n"),
        (b"SRANDMEMBER nokey\r\n", b"_\r\n"),
        (b"SPOP nokey\r\n", b"_\r\n"),
        (b"SPOP nokey 2\r\n", b"~0\r\n"),
        (b"SPOP s 0\r\n", b"~0\r\n"),
        (b"SPOP s 2\r\n", b"~1\r\n$1\r\na\r\n"),
        (b"EXISTS s\r\n", b":0\r\n"),
    ] {
        raw.expect(cmd, reply);
    }
}

#[test]
fn spop_and_srandmember_pick_random_members() {
    let h = Harness::start();
    let mut c = h.conn();
    sadd_many(&mut c, "s", 100);
    let all = members(&mut c, &["SMEMBERS", "s"]);
    let one: String = q(&mut c, &["SRANDMEMBER", "s"]);
    assert!(all.contains(&one));
    let ten: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "10"]);
    assert_eq!(ten.iter().collect::<BTreeSet<_>>().len(), 10);
    assert!(ten.iter().all(|m| all.contains(m)));
    assert_eq!(members(&mut c, &["SRANDMEMBER", "s", "1000"]), all);
    let rep: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "-300"]);
    assert_eq!(rep.len(), 300);
    assert!(rep.iter().all(|m| all.contains(m)));
    // Not always the same member (with 100 members, 300 picks repeat one
    // member with probability 100^-299).
    assert!(rep.iter().collect::<BTreeSet<_>>().len() > 1);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SRANDMEMBER", "s", "0"]).len(),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 100);
    assert_eq!(
        query_err(&mut c, &["SRANDMEMBER", "s", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SRANDMEMBER", "s", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    // Not Redis: repeated picks are bounded by the server's request
    // argument limit (a reply is built whole in memory).
    assert_eq!(
        query_err(&mut c, &["SRANDMEMBER", "s", "-1048577"]),
        "ERR value is out of range, value must between -1048576 and 9223372036854775807"
    );
    assert_eq!(
        query_err(&mut c, &["SRANDMEMBER", "s", "1", "2"]),
        "ERR syntax error"
    );
    // The largest count is clamped to the set's size.
    assert_eq!(
        members(&mut c, &["SRANDMEMBER", "s", "9223372036854775807"]),
        all
    );

    let popped: String = q(&mut c, &["SPOP", "s"]);
    assert!(all.contains(&popped));
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", &popped]), 0);
    let popped: Vec<String> = q(&mut c, &["SPOP", "s", "30"]);
    assert_eq!(popped.iter().collect::<BTreeSet<_>>().len(), 30);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 69);
    let gone: Vec<i64> = {
        let mut args = vec!["SMISMEMBER", "s"];
        args.extend(popped.iter().map(String::as_str));
        q(&mut c, &args)
    };
    assert!(gone.iter().all(|&g| g == 0));
    for bad in ["-1", "abc", "01", "-9223372036854775808"] {
        assert_eq!(
            query_err(&mut c, &["SPOP", "s", bad]),
            "ERR value is out of range, must be positive"
        );
        assert_eq!(
            query_err(&mut c, &["SPOP", "nokey", bad]),
            "ERR value is out of range, must be positive"
        );
    }
    assert_eq!(
        query_err(&mut c, &["SPOP", "s", "1", "2"]),
        "ERR syntax error"
    );
    // Popping more than there are returns them all and deletes the key.
    let rest = members(&mut c, &["SPOP", "s", "1000"]);
    assert_eq!(rest.len(), 69);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0);
    assert_eq!(q::<Option<String>>(&mut c, &["SPOP", "s"]), None);
    assert_eq!(q::<Option<String>>(&mut c, &["SRANDMEMBER", "s"]), None);
    assert!(q::<Vec<String>>(&mut c, &["SPOP", "s", "3"]).is_empty());
    assert!(q::<Vec<String>>(&mut c, &["SRANDMEMBER", "s", "-3"]).is_empty());
    // The last member popped alone deletes the key too.
    let _: i64 = q(&mut c, &["SADD", "one", "x"]);
    assert_eq!(q::<String>(&mut c, &["SPOP", "one"]), "x");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "one"]), 0);
}

#[test]
fn smove_moves_one_member_atomically() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "src", "a", "b", "c"]);
    let _: i64 = q(&mut c, &["SADD", "dst", "c", "d"]);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "a"]), 1);
    assert_eq!(members(&mut c, &["SMEMBERS", "src"]), strs(&["b", "c"]));
    assert_eq!(
        members(&mut c, &["SMEMBERS", "dst"]),
        strs(&["a", "c", "d"])
    );
    assert_eq!(q::<i64>(&mut c, &["SCARD", "dst"]), 3);
    // Already in the destination: removed from the source only.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "src"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "dst"]), 3);
    // Not a member, absent source.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "nokey", "dst", "a"]), 0);
    // Same key: only whether it is a member.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "dst", "dst", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "dst", "dst", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "dst"]), 3);
    // The last member moved to a new key: source deleted, new set made,
    // the destination's old expired set forgotten.
    let _: i64 = q(&mut c, &["SADD", "new", "old1", "old2"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "new", "1"]), 1);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "new", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "src"]), 0);
    assert_eq!(members(&mut c, &["SMEMBERS", "new"]), strs(&["b"]));
    assert_eq!(q::<i64>(&mut c, &["TTL", "new"]), -1);
}

#[test]
fn store_commands_replace_the_destination() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "a", "1", "2", "3"]);
    let _: i64 = q(&mut c, &["SADD", "b", "2", "3", "4"]);
    // Destinations of other types and an expiring set are replaced.
    let _: () = q(&mut c, &["SET", "str", "v", "EX", "100"]);
    let _: i64 = q(&mut c, &["HSET", "hash", "f", "v"]);
    let _: i64 = q(&mut c, &["SADD", "set", "old"]);
    let _: i64 = q(&mut c, &["EXPIRE", "set", "100"]);
    assert_eq!(q::<i64>(&mut c, &["SINTERSTORE", "str", "a", "b"]), 2);
    assert_eq!(q::<String>(&mut c, &["TYPE", "str"]), "set");
    assert_eq!(q::<i64>(&mut c, &["TTL", "str"]), -1);
    assert_eq!(members(&mut c, &["SMEMBERS", "str"]), strs(&["2", "3"]));
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "hash", "a", "b"]), 4);
    assert_eq!(q::<String>(&mut c, &["TYPE", "hash"]), "set");
    assert_eq!(
        members(&mut c, &["SMEMBERS", "hash"]),
        strs(&["1", "2", "3", "4"])
    );
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "set", "a", "b"]), 1);
    assert_eq!(members(&mut c, &["SMEMBERS", "set"]), strs(&["1"]));
    assert_eq!(q::<i64>(&mut c, &["TTL", "set"]), -1);
    // The destination among the sources.
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "a", "a", "b"]), 4);
    assert_eq!(
        members(&mut c, &["SMEMBERS", "a"]),
        strs(&["1", "2", "3", "4"])
    );
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "b", "a", "b"]), 1);
    assert_eq!(members(&mut c, &["SMEMBERS", "b"]), strs(&["1"]));
    // An empty result deletes the destination, whatever it held.
    let _: () = q(&mut c, &["SET", "str2", "v"]);
    assert_eq!(q::<i64>(&mut c, &["SINTERSTORE", "str2", "a", "nokey"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "str2"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "hash", "b", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "hash"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "nothing", "nokey"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nothing"]), 0);
    // A wrong-type source fails and leaves the destination as it was.
    let _: () = q(&mut c, &["SET", "str3", "v"]);
    assert_eq!(
        query_err(&mut c, &["SUNIONSTORE", "set", "a", "str3"]),
        WRONGTYPE
    );
    assert_eq!(members(&mut c, &["SMEMBERS", "set"]), strs(&["1"]));
}

#[test]
fn sintercard_counts_with_a_limit() {
    let h = Harness::start();
    let mut c = h.conn();
    sadd_many(&mut c, "a", 50);
    sadd_many(&mut c, "b", 20);
    let _: i64 = q(&mut c, &["HSET", "hash", "f", "v"]);
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b"]), 20);
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "1", "a"]), 50);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "5"]),
        5
    );
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b", "limit", "0"]),
        20
    );
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "100"]),
        20
    );
    // The last LIMIT counts.
    assert_eq!(
        q::<i64>(
            &mut c,
            &["SINTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "3"]
        ),
        3
    );
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "a", "nokey"]), 0);
    for (args, err) in [
        (
            &["SINTERCARD", "0", "a"][..],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "-1", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "abc", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "01", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "3", "a", "b"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (
            &["SINTERCARD", "9223372036854775807", "a"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (&["SINTERCARD", "2", "a", "b", "LIMIT"], "ERR syntax error"),
        (
            &["SINTERCARD", "2", "a", "b", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["SINTERCARD", "2", "a", "b", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["SINTERCARD", "2", "a", "b", "FOO", "1"],
            "ERR syntax error",
        ),
        (
            &["SINTERCARD", "1", "a", "LIMIT", "1", "x"],
            "ERR syntax error",
        ),
        // Options are checked before the keys' types.
        (&["SINTERCARD", "1", "hash", "x"], "ERR syntax error"),
        (&["SINTERCARD", "1", "hash"], WRONGTYPE),
    ] {
        assert_eq!(query_err(&mut c, args), err, "{args:?}");
    }
}

#[test]
fn sscan_pages_and_matches() {
    let h = Harness::start();
    let mut c = h.conn();
    sadd_many(&mut c, "s", 300);
    let mut seen = BTreeSet::new();
    let mut cursor = 0u64;
    let mut calls = 0;
    loop {
        let (next, items): (u64, Vec<String>) =
            q(&mut c, &["SSCAN", "s", &cursor.to_string(), "COUNT", "50"]);
        seen.extend(items);
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen, members(&mut c, &["SMEMBERS", "s"]));
    assert!(calls >= 6, "paged by COUNT: {calls} calls");
    let (_, items): (u64, Vec<String>) = q(
        &mut c,
        &["SSCAN", "s", "0", "MATCH", "m29*", "COUNT", "1000"],
    );
    assert_eq!(items.len(), 11);
    // A small set comes whole.
    let _: i64 = q(&mut c, &["SADD", "small", "x", "y", "z"]);
    let (next, items): (u64, Vec<String>) = q(&mut c, &["SSCAN", "small", "0", "COUNT", "1"]);
    assert_eq!((next, items.len()), (0, 3));
    // An absent key ignores the options, as in Redis.
    let (next, items): (u64, Vec<String>) = q(&mut c, &["SSCAN", "nokey", "0", "COUNT", "0"]);
    assert_eq!((next, items.len()), (0, 0));
    assert_eq!(
        query_err(&mut c, &["SSCAN", "s", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(
        query_err(&mut c, &["SSCAN", "s", "0", "COUNT", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SSCAN", "s", "0", "MATCH"]),
        "ERR syntax error"
    );
    assert_eq!(
        query_err(&mut c, &["SSCAN", "s", "x"]),
        "ERR invalid cursor"
    );
}

#[test]
fn sets_survive_restart_and_replacements_leave_no_elements() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "s", "a", "b", "c"]);
    sadd_many(&mut c, "big", 200);
    sadd_many(&mut c, "big2", 100);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERSTORE", "inter", "big", "big2"]),
        100
    );
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "s", "moved", "a"]), 1);
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    assert_eq!(members(&mut c, &["SMEMBERS", "s"]), strs(&["b", "c"]));
    assert_eq!(members(&mut c, &["SMEMBERS", "moved"]), strs(&["a"]));
    assert_eq!(q::<i64>(&mut c, &["SCARD", "big"]), 200);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "inter"]), 100);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "inter", "m99"]), 1);
    // Large sets replaced by a store (range deletion), popped empty, and
    // a small one replaced: only the survivors' elements remain.
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "big", "s", "nokey"]), 2);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SPOP", "big2", "1000"]).len(),
        100
    );
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "moved", "nokey"]), 0);
    let _: () = q(&mut c, &["SET", "inter", "now a string"]);
    drop(c);
    let dir = h.stop();
    // Left: s (b, c) and big (b, c).
    assert_eq!(common::stored_elements(dir.path()), 4);
}

/// Commands whose replies are sets (compared sorted); SSCAN's page is
/// its reply's second element.
const UNORDERED: &[&str] = &[
    "SMEMBERS",
    "SINTER",
    "SUNION",
    "SDIFF",
    "SPOP",
    "SRANDMEMBER",
];

/// `v` with the items of a set or array reply sorted (the reply's kind
/// kept: a RESP3 set stays a set).
fn sorted(v: Value) -> Value {
    let by_text = |items: &mut Vec<Value>| items.sort_by_key(|i| format!("{i:?}"));
    match v {
        Value::Array(mut items) => {
            by_text(&mut items);
            Value::Array(items)
        }
        Value::Set(mut items) => {
            by_text(&mut items);
            Value::Set(items)
        }
        other => other,
    }
}

/// The reply to `args` as comparable text: sets sorted, errors as their
/// text.
fn reply_text(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Err(e) => format!("error: {}", err_text(e)),
        Ok(v) => {
            let name = args[0].to_ascii_uppercase();
            let v = match v {
                Value::Array(mut page) if name == "SSCAN" && page.len() == 2 => {
                    let items = sorted(page.pop().unwrap_or(Value::Nil));
                    page.push(items);
                    Value::Array(page)
                }
                v if UNORDERED.contains(&name.as_str()) => sorted(v),
                v => v,
            };
            format!("{v:?}")
        }
    }
}

/// The sequence replayed against both servers: only commands whose
/// replies do not depend on chance (random picks from one-member sets,
/// counts covering the whole set).
const SEQUENCE: &[&[&str]] = &[
    &["SET", "str", "v"],
    &["HSET", "hash", "f", "v"],
    &["SADD", "s", "a", "b", "c", "a"],
    &["SADD", "s", "c", "d"],
    &["SADD", "t", "c", "d", "e"],
    &["SADD", "n", "1", "2", "3", "10"],
    &["SADD", "str", "x"],
    &["SREM", "s", "d", "zz", "d"],
    &["SREM", "nokey", "a"],
    &["SREM", "hash", "a"],
    &["SISMEMBER", "s", "a"],
    &["SISMEMBER", "s", "d"],
    &["SMISMEMBER", "s", "a", "d", "zz", "c"],
    &["SMISMEMBER", "nokey", "a"],
    &["SMEMBERS", "s"],
    &["SMEMBERS", "nokey"],
    &["SMEMBERS", "str"],
    &["SCARD", "s"],
    &["SCARD", "nokey"],
    &["SINTER", "s", "t"],
    &["SINTER", "s", "nokey"],
    &["SINTER", "nokey", "hash"],
    &["SUNION", "s", "t", "n", "nokey"],
    &["SDIFF", "s", "t"],
    &["SDIFF", "t", "s", "n"],
    &["SDIFF", "s", "str"],
    &["SINTERSTORE", "str", "s", "t"],
    &["TYPE", "str"],
    &["SMEMBERS", "str"],
    &["SUNIONSTORE", "hash", "s", "t"],
    &["SCARD", "hash"],
    &["SDIFFSTORE", "u", "t", "s"],
    &["SDIFFSTORE", "u", "s", "s"],
    &["EXISTS", "u"],
    &["SINTERCARD", "2", "s", "t"],
    &["SINTERCARD", "2", "s", "t", "LIMIT", "1"],
    &["SINTERCARD", "0", "s"],
    &["SINTERCARD", "3", "s", "t"],
    &["SINTERCARD", "1", "s", "LIMIT", "-1"],
    &["SINTERCARD", "1", "s", "LIMIT"],
    &["SMOVE", "s", "t", "a"],
    &["SMOVE", "s", "t", "c"],
    &["SMOVE", "s", "s", "b"],
    &["SMOVE", "s", "str", "b"],
    &["SMOVE", "nokey", "str", "b"],
    &["SMEMBERS", "t"],
    &["SMOVE", "s", "fresh", "b"],
    &["EXISTS", "s"],
    &["SPOP", "fresh"],
    &["SPOP", "fresh"],
    &["SPOP", "t", "0"],
    &["SPOP", "t", "-1"],
    &["SPOP", "t", "100"],
    &["EXISTS", "t"],
    &["SPOP", "nokey", "2"],
    &["SADD", "one", "x"],
    &["SRANDMEMBER", "one"],
    &["SRANDMEMBER", "one", "-3"],
    &["SRANDMEMBER", "n", "10"],
    &["SRANDMEMBER", "n", "0"],
    &["SRANDMEMBER", "nokey", "-2"],
    &["SRANDMEMBER", "n", "x"],
    &["SRANDMEMBER", "n", "1", "2"],
    &["SSCAN", "n", "0"],
    &["SSCAN", "n", "0", "MATCH", "1*"],
    &["SSCAN", "nokey", "0", "COUNT", "0"],
    &["SSCAN", "n", "0", "COUNT", "0"],
    &["SSCAN", "n", "x"],
    &["SSCAN", "str", "0"],
    &["SADD", "s"],
];

/// The sequence against redis-server and against batchkv serve, in RESP2
/// and RESP3, with batched reads on and off (`--batch off` reads key by
/// key).
#[test]
fn replies_match_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        for proto in ["", "?protocol=resp3"] {
            let url = format!("redis://{}/{proto}", redis.addr);
            let mut theirs = redis::Client::open(url).unwrap().get_connection().unwrap();
            let url = format!("{}{proto}", h.url());
            let mut ours = redis::Client::open(url).unwrap().get_connection().unwrap();
            for c in [&mut theirs, &mut ours] {
                let _: () = q(c, &["FLUSHALL"]);
            }
            for args in SEQUENCE {
                let want = reply_text(&mut theirs, args);
                let got = reply_text(&mut ours, args);
                assert_eq!(got, want, "{args:?} (protocol {proto:?}, batch {batch})");
            }
        }
    }
}
