//! Sorted-set commands through a real Redis client and raw RESP2/RESP3,
//! the layout's promises (one element and one score-index entry per
//! member, nothing left behind), persistence, and a differential test
//! against a real redis-server when one is on PATH.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::reference::{RedisServer, Resp};
use common::{errs, q, qs, Harness, WRONGTYPE};

/// `ZADD key` with members `m0..m{n-1}` scored by `score(i)`.
fn zadd_many(c: &mut redis::Connection, key: &str, n: usize, score: impl Fn(usize) -> String) {
    let mut args = vec!["ZADD".to_string(), key.to_string()];
    for i in 0..n {
        args.push(score(i));
        args.push(format!("m{i}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(q::<usize>(c, &args), n);
}

#[test]
fn members_are_added_scored_counted_and_removed() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(qs::<i64>(&mut c, "ZADD z 1 a 2 b 3 c 1 a"), 3);
    assert_eq!(qs::<i64>(&mut c, "ZCARD z"), 3);
    assert_eq!(qs::<String>(&mut c, "ZSCORE z b"), "2");
    assert_eq!(qs::<Option<String>>(&mut c, "ZSCORE z x"), None);
    assert_eq!(
        qs::<Vec<Option<String>>>(&mut c, "ZMSCORE z c x a"),
        vec![Some("3".into()), None, Some("1".into())]
    );
    assert_eq!(
        qs::<Vec<Option<String>>>(&mut c, "ZMSCORE nokey a b"),
        vec![None, None]
    );
    assert_eq!(qs::<String>(&mut c, "ZINCRBY z 2.5 a"), "3.5");
    assert_eq!(qs::<String>(&mut c, "ZINCRBY z 1 new"), "1");
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE z 0 -1"),
        ["new", "b", "c", "a"]
    );
    assert_eq!(qs::<i64>(&mut c, "ZREM z a a nope"), 1);
    assert_eq!(qs::<i64>(&mut c, "ZREM nokey a"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZCARD z"), 3);
    assert_eq!(qs::<i64>(&mut c, "ZREM z b c new"), 3);
    // Emptied: the key is gone.
    assert_eq!(qs::<i64>(&mut c, "EXISTS z"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZCARD z"), 0);
    assert_eq!(
        errs(&mut c, "ZADD z 1"),
        "ERR wrong number of arguments for 'zadd' command"
    );
    assert_eq!(qs::<i64>(&mut c, "EXISTS z"), 0);
}

#[test]
fn zadd_options_follow_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    // Pairs apply in order: "a" is added then updated.
    assert_eq!(qs::<i64>(&mut c, "ZADD z 1 a 2 a"), 1);
    assert_eq!(qs::<i64>(&mut c, "ZADD z CH 3 a 4 a 5 b"), 3);
    assert_eq!(qs::<i64>(&mut c, "ZADD z NX 9 a 6 c"), 1);
    assert_eq!(qs::<String>(&mut c, "ZSCORE z a"), "4");
    assert_eq!(qs::<i64>(&mut c, "ZADD z XX CH 7 a 7 d"), 1);
    assert_eq!(qs::<Option<String>>(&mut c, "ZSCORE z d"), None);
    assert_eq!(qs::<i64>(&mut c, "ZADD z GT CH 1 a 8 b 1 e"), 2);
    assert_eq!(qs::<i64>(&mut c, "ZADD z LT CH 9 a 1 b"), 1);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE z 0 -1 WITHSCORES"),
        ["b", "1", "e", "1", "c", "6", "a", "7"]
    );
    assert_eq!(qs::<String>(&mut c, "ZADD z INCR 2 a"), "9");
    assert_eq!(qs::<Option<String>>(&mut c, "ZADD z NX INCR 2 a"), None);
    assert_eq!(qs::<Option<String>>(&mut c, "ZADD z XX INCR 2 nope"), None);
    assert_eq!(qs::<Option<String>>(&mut c, "ZADD z GT INCR -1 a"), None);
    assert_eq!(qs::<String>(&mut c, "ZADD z LT INCR -1 a"), "8");
    // XX never creates the key.
    assert_eq!(qs::<i64>(&mut c, "ZADD nokey XX 1 a"), 0);
    assert_eq!(qs::<i64>(&mut c, "EXISTS nokey"), 0);
    for (line, err) in [
        (
            "ZADD z XX NX 1 a",
            "ERR XX and NX options at the same time are not compatible",
        ),
        (
            "ZADD z GT LT 1 a",
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            "ZADD z GT NX 1 a",
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            "ZADD z INCR 1 a 2 b",
            "ERR INCR option supports a single increment-element pair",
        ),
        ("ZADD z 1 a 2", "ERR syntax error"),
        ("ZADD z x a", "ERR value is not a valid float"),
        ("ZADD z nan a", "ERR value is not a valid float"),
        ("ZADD z 1e400 a", "ERR value is not a valid float"),
        ("ZINCRBY z x a", "ERR value is not a valid float"),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
    let _: i64 = qs(&mut c, "ZADD z +inf inf");
    assert_eq!(
        errs(&mut c, "ZINCRBY z -inf inf"),
        "ERR resulting score is not a number (NaN)"
    );
    assert_eq!(qs::<String>(&mut c, "ZSCORE z inf"), "inf");
}

#[test]
fn scores_parse_order_and_print_as_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(
        &mut c,
        "ZADD z 0.1 a +inf b -inf c -0 d 0 e -1e300 f 0x10 g 1e-310 h -INFINITY i",
    );
    assert_eq!(qs::<String>(&mut c, "ZSCORE z a"), "0.10000000000000001");
    assert_eq!(qs::<String>(&mut c, "ZSCORE z g"), "16");
    assert_eq!(
        qs::<String>(&mut c, "ZSCORE z h"),
        "9.9999999999999694e-311"
    );
    // -0 is stored as 0 (as Redis's small sets do) and sorts with 0.
    assert_eq!(qs::<String>(&mut c, "ZSCORE z d"), "0");
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE z 0 -1 WITHSCORES"),
        [
            "c",
            "-inf",
            "i",
            "-inf",
            "f",
            "-1.0000000000000001e+300",
            "d",
            "0",
            "e",
            "0",
            "h",
            "9.9999999999999694e-311",
            "a",
            "0.10000000000000001",
            "g",
            "16",
            "b",
            "inf"
        ]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z -0 (0.1"),
        ["d", "e", "h"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z (-inf (+inf"),
        ["f", "d", "e", "h", "a", "g"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z +inf +inf"),
        ["b"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z -inf -inf"),
        ["c", "i"]
    );
    assert_eq!(qs::<i64>(&mut c, "ZCOUNT z -inf +inf"), 9);
    // The reply of an increment is the computed score, -0 included.
    assert_eq!(qs::<String>(&mut c, "ZINCRBY n -0 x"), "-0");
    assert_eq!(qs::<String>(&mut c, "ZSCORE n x"), "0");
    for line in [
        "ZCOUNT z 1x 2",
        "ZCOUNT z nan 1",
        "ZCOUNT z [1 2",
        "ZCOUNT z 1 ((2",
    ] {
        assert_eq!(
            errs(&mut c, line),
            "ERR min or max is not a float",
            "{line}"
        );
    }
    for line in ["ZLEXCOUNT z a +", "ZLEXCOUNT z - ++", "ZRANGEBYLEX z -a +"] {
        assert_eq!(
            errs(&mut c, line),
            "ERR min or max not valid string range item",
            "{line}"
        );
    }
}

#[test]
fn ranges_by_rank_score_and_lex() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e");
    let s = |c: &mut redis::Connection, l: &str| qs::<Vec<String>>(c, l);
    assert_eq!(s(&mut c, "ZRANGE z 1 2"), ["b", "c"]);
    assert_eq!(s(&mut c, "ZRANGE z -2 100"), ["d", "e"]);
    assert_eq!(s(&mut c, "ZRANGE z 3 1"), Vec::<String>::new());
    assert_eq!(
        s(&mut c, "ZRANGE z 1 2 REV WITHSCORES"),
        ["d", "4", "c", "3"]
    );
    assert_eq!(s(&mut c, "ZREVRANGE z 0 1"), ["e", "d"]);
    assert_eq!(s(&mut c, "ZREVRANGE z -1 -1 WITHSCORES"), ["a", "1"]);
    assert_eq!(s(&mut c, "ZRANGE z (1 3 BYSCORE"), ["b", "c"]);
    assert_eq!(s(&mut c, "ZRANGE z 4 (1 BYSCORE REV LIMIT 1 2"), ["c", "b"]);
    assert_eq!(
        s(&mut c, "ZRANGEBYSCORE z -inf +inf LIMIT 1 -1"),
        ["b", "c", "d", "e"]
    );
    assert_eq!(
        s(&mut c, "ZRANGEBYSCORE z -inf +inf LIMIT -1 2"),
        Vec::<String>::new()
    );
    assert_eq!(
        s(&mut c, "ZRANGEBYSCORE z -inf +inf LIMIT 0 0"),
        Vec::<String>::new()
    );
    assert_eq!(
        s(&mut c, "ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 1 1"),
        ["c", "3"]
    );
    assert_eq!(s(&mut c, "ZREVRANGEBYSCORE z (5 2"), ["d", "c", "b"]);
    assert_eq!(s(&mut c, "ZRANGE nokey 0 -1"), Vec::<String>::new());
    let _: i64 = qs(&mut c, "ZADD l 0 a 0 b 0 c 0 d 0 e");
    assert_eq!(s(&mut c, "ZRANGEBYLEX l [b (d"), ["b", "c"]);
    assert_eq!(s(&mut c, "ZRANGEBYLEX l - + LIMIT 1 2"), ["b", "c"]);
    assert_eq!(s(&mut c, "ZREVRANGEBYLEX l (d -"), ["c", "b", "a"]);
    assert_eq!(s(&mut c, "ZRANGE l [e (c BYLEX REV"), ["e", "d"]);
    assert_eq!(s(&mut c, "ZRANGEBYLEX l + -"), Vec::<String>::new());
    assert_eq!(qs::<i64>(&mut c, "ZLEXCOUNT l (a [c"), 2);
    for (line, err) in [
        (
            "ZRANGE z 0 1 LIMIT 0 1",
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        (
            "ZRANGE z - + BYLEX WITHSCORES",
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        ("ZRANGE z 0 1 REV REV", "ERR syntax error"),
        ("ZRANGEBYSCORE z 0 1 REV", "ERR syntax error"),
        ("ZRANGEBYSCORE z 0 1 LIMIT 0", "ERR syntax error"),
        (
            "ZRANGE z x 1",
            "ERR value is not an integer or out of range",
        ),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
}

#[test]
fn ranks_counts_and_removals_by_range() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f");
    assert_eq!(qs::<i64>(&mut c, "ZRANK z a"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZRANK z d"), 3);
    assert_eq!(qs::<i64>(&mut c, "ZREVRANK z d"), 2);
    assert_eq!(qs::<i64>(&mut c, "ZREVRANK z f"), 0);
    assert_eq!(qs::<Option<i64>>(&mut c, "ZRANK z x"), None);
    assert_eq!(qs::<Option<i64>>(&mut c, "ZRANK nokey x"), None);
    assert_eq!(qs::<i64>(&mut c, "ZCOUNT z (1 3"), 2);
    assert_eq!(qs::<i64>(&mut c, "ZCOUNT z 3 (1"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYRANK z 0 0"), 1);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYRANK z 10 20"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYSCORE z (2 4"), 2);
    assert_eq!(qs::<Vec<String>>(&mut c, "ZRANGE z 0 -1"), ["b", "e", "f"]);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYRANK z -2 -1"), 2);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYSCORE z -inf +inf"), 1);
    assert_eq!(qs::<i64>(&mut c, "EXISTS z"), 0);
    let _: i64 = qs(&mut c, "ZADD l 0 a 0 b 0 c");
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYLEX l (a +"), 2);
    assert_eq!(qs::<Vec<String>>(&mut c, "ZRANGE l 0 -1"), ["a"]);
    assert_eq!(
        errs(&mut c, "ZREMRANGEBYLEX l a b"),
        "ERR min or max not valid string range item"
    );
    assert_eq!(
        errs(&mut c, "ZREMRANGEBYRANK l x 1"),
        "ERR value is not an integer or out of range"
    );
    // Ranks in a large set, read from both ends of the index.
    zadd_many(&mut c, "big", 1000, |i| ((i * 7919) % 1000).to_string());
    let all: Vec<String> = qs(&mut c, "ZRANGE big 0 -1");
    assert_eq!(all.len(), 1000);
    for r in [0usize, 1, 499, 500, 998, 999] {
        assert_eq!(q::<i64>(&mut c, &["ZRANK", "big", &all[r]]), r as i64);
        assert_eq!(
            q::<i64>(&mut c, &["ZREVRANK", "big", &all[r]]),
            999 - r as i64
        );
    }
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE big 990 995"),
        all[990..=995]
    );
    assert_eq!(qs::<Vec<String>>(&mut c, "ZRANGE big 3 5"), all[3..=5]);
    let mut rev: Vec<String> = all[4..=9].to_vec();
    rev.reverse();
    assert_eq!(qs::<Vec<String>>(&mut c, "ZREVRANGE big 990 995"), rev);
}

/// ZRANK and ZREVRANK of every member of sets large enough that the side
/// counted from is chosen by interpolating the score between the set's
/// ends: uniform, skewed (the guess wrong for most members), tied and
/// infinite scores, also inside MULTI after changes the transaction made.
#[test]
fn ranks_are_exact_whichever_end_they_are_counted_from() {
    let h = Harness::start();
    let mut c = h.conn();
    let n = 150;
    type Scores = fn(usize) -> String;
    let shapes: [(&str, Scores); 5] = [
        ("uniform", |i| i.to_string()),
        // Most members bunched at the bottom, a few far above: a guess by
        // interpolation picks the bottom for nearly all of them.
        ("skewed", |i| (1u64 << (i / 10)).to_string()),
        // Most members near the top: guessed wrong the other way.
        ("skewed-top", |i| {
            (-((1i64 << ((149 - i) / 10)) as f64)).to_string()
        }),
        ("ties", |i| (i % 3).to_string()),
        ("infinite", |i| match i {
            0 => "-inf".into(),
            149 => "+inf".into(),
            75 => "-0".into(),
            _ => (i as f64 - 75.0).to_string(),
        }),
    ];
    for (name, score) in shapes {
        let key = format!("r:{name}");
        zadd_many(&mut c, &key, n, score);
        // The expected order, by (score, member) as Redis orders them.
        let mut order: Vec<(f64, String)> = (0..n)
            .map(|i| {
                (
                    score(i).replace("inf", "Infinity").parse().unwrap(),
                    format!("m{i}"),
                )
            })
            .collect();
        order.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then_with(|| a.1.cmp(&b.1)));
        let ranked: Vec<String> = q(&mut c, &["ZRANGE", &key, "0", "-1"]);
        let expected: Vec<String> = order.iter().map(|(_, m)| m.clone()).collect();
        assert_eq!(ranked, expected, "{name}");
        for (r, m) in expected.iter().enumerate() {
            assert_eq!(
                q::<i64>(&mut c, &["ZRANK", &key, m]),
                r as i64,
                "{name} {m}"
            );
            let rev = (n - 1 - r) as i64;
            assert_eq!(q::<i64>(&mut c, &["ZREVRANK", &key, m]), rev, "{name} {m}");
        }
    }
    // Inside a transaction, after changes it made: the lowest member
    // moves to the top, one is removed, one added.
    let mut conn = h.conn();
    let (rank, revrank, card): (i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg("r:uniform")
        .arg(1000)
        .arg("m0")
        .ignore()
        .cmd("ZREM")
        .arg("r:uniform")
        .arg("m140")
        .ignore()
        .cmd("ZADD")
        .arg("r:uniform")
        .arg(-1)
        .arg("new")
        .ignore()
        .cmd("ZRANK")
        .arg("r:uniform")
        .arg("m0")
        .cmd("ZREVRANK")
        .arg("r:uniform")
        .arg("new")
        .cmd("ZCARD")
        .arg("r:uniform")
        .query(&mut conn)
        .unwrap();
    assert_eq!((rank, revrank, card), (149, 149, 150));
    assert_eq!(qs::<i64>(&mut c, "ZRANK r:uniform m141"), 140);
    assert_eq!(qs::<i64>(&mut c, "ZREVRANK r:uniform m1"), 148);
}

#[test]
fn pops_and_random_members() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD z 1 a 2 b 3 c 4 d");
    assert_eq!(qs::<Vec<String>>(&mut c, "ZPOPMIN z"), ["a", "1"]);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZPOPMAX z 2"),
        ["d", "4", "c", "3"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZPOPMIN z 0"),
        Vec::<String>::new()
    );
    assert_eq!(qs::<Vec<String>>(&mut c, "ZPOPMIN z 10"), ["b", "2"]);
    assert_eq!(qs::<i64>(&mut c, "EXISTS z"), 0);
    assert_eq!(qs::<Vec<String>>(&mut c, "ZPOPMIN z"), Vec::<String>::new());
    assert_eq!(
        errs(&mut c, "ZPOPMIN z -1"),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(errs(&mut c, "ZPOPMIN z 1 2"), "ERR syntax error");
    let _: i64 = qs(&mut c, "ZADD r 1 a 2 b 3 c");
    let scores = HashMap::from([("a", "1"), ("b", "2"), ("c", "3")]);
    let one: String = qs(&mut c, "ZRANDMEMBER r");
    assert!(scores.contains_key(one.as_str()));
    let two: Vec<String> = qs(&mut c, "ZRANDMEMBER r 2");
    assert_eq!(two.iter().collect::<HashSet<_>>().len(), 2);
    let all: Vec<String> = qs(&mut c, "ZRANDMEMBER r 10");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 3);
    let rep: Vec<String> = qs(&mut c, "ZRANDMEMBER r -7 WITHSCORES");
    assert_eq!(rep.len(), 14);
    for p in rep.chunks(2) {
        assert_eq!(scores[p[0].as_str()], p[1]);
    }
    assert_eq!(qs::<Option<String>>(&mut c, "ZRANDMEMBER nokey"), None);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANDMEMBER nokey 3"),
        Vec::<String>::new()
    );
    assert_eq!(errs(&mut c, "ZRANDMEMBER r 1 x"), "ERR syntax error");
    assert_eq!(
        errs(&mut c, "ZRANDMEMBER r 9223372036854775807 WITHSCORES"),
        "ERR value is out of range"
    );
    // Repeats are capped (the reply is built in memory; Redis would try).
    assert_eq!(
        errs(&mut c, "ZRANDMEMBER r -9223372036854775807"),
        "ERR value is out of range"
    );
}

/// Writes a set (the layout of `docs/format/server-keyspace.md` §4–5) into
/// the stopped server's database at `dir`: the set commands are not part
/// of this server yet, and *STORE must accept sets as sources.
fn write_set(dir: &std::path::Path, key: &[u8], members: &[&str]) {
    let db = batchkv::Db::open(dir, batchkv::Options::default()).unwrap();
    let version: u64 = 7;
    let mut meta = vec![2u8, 2];
    meta.extend_from_slice(&0u64.to_le_bytes());
    meta.extend_from_slice(&version.to_le_bytes());
    meta.extend_from_slice(&(members.len() as u64).to_le_bytes());
    let mut b = batchkv::WriteBatch::new();
    b.put([&[0u8][..], key].concat(), meta);
    for m in members {
        let mut k = vec![0x12, 0];
        k.extend_from_slice(&(key.len() as u32).to_be_bytes());
        k.extend_from_slice(key);
        k.extend_from_slice(&version.to_be_bytes());
        k.extend_from_slice(m.as_bytes());
        b.put(k, []);
    }
    db.write(&batchkv::WriteOptions::default(), b).unwrap();
}

#[test]
fn store_commands_aggregate_weight_and_replace_the_destination() {
    let h = Harness::start();
    let dir = h.stop();
    write_set(dir.path(), b"s", &["a", "x"]);
    let h = Harness {
        server: common::start_in(dir.path(), |_| {}),
        dir,
    };
    let mut c = h.conn();
    assert_eq!(qs::<String>(&mut c, "TYPE s"), "set");
    let _: i64 = qs(&mut c, "ZADD z 1 a 5 b 6 c");
    let _: () = qs(&mut c, "SET str v");
    let ws = |c: &mut redis::Connection, k: &str| {
        qs::<Vec<String>>(c, &format!("ZRANGE {k} 0 -1 WITHSCORES"))
    };
    assert_eq!(qs::<i64>(&mut c, "ZUNIONSTORE d 2 z s WEIGHTS 2 3"), 4);
    assert_eq!(ws(&mut c, "d"), ["x", "3", "a", "5", "b", "10", "c", "12"]);
    assert_eq!(qs::<i64>(&mut c, "ZINTERSTORE d 2 z s AGGREGATE MIN"), 1);
    assert_eq!(ws(&mut c, "d"), ["a", "1"]);
    assert_eq!(
        qs::<i64>(&mut c, "ZINTERSTORE d 2 z s AGGREGATE MAX WEIGHTS 1 10"),
        1
    );
    assert_eq!(ws(&mut c, "d"), ["a", "10"]);
    assert_eq!(qs::<i64>(&mut c, "ZDIFFSTORE d 2 z s"), 2);
    assert_eq!(ws(&mut c, "d"), ["b", "5", "c", "6"]);
    assert_eq!(qs::<i64>(&mut c, "ZINTERSTORE d 1 s"), 2);
    assert_eq!(ws(&mut c, "d"), ["a", "1", "x", "1"]);
    // +inf + -inf sums to 0; 0 × inf (a weight of 0) counts as 0.
    let _: i64 = qs(&mut c, "ZADD i1 inf a -inf b");
    let _: i64 = qs(&mut c, "ZADD i2 -inf a inf b");
    assert_eq!(qs::<i64>(&mut c, "ZUNIONSTORE d 2 i1 i2"), 2);
    assert_eq!(ws(&mut c, "d"), ["a", "0", "b", "0"]);
    assert_eq!(
        qs::<i64>(&mut c, "ZINTERSTORE d 2 i1 i2 WEIGHTS 0 1 AGGREGATE MIN"),
        2
    );
    assert_eq!(ws(&mut c, "d"), ["a", "-inf", "b", "0"]);
    // Sources smallest first: sums round as Redis's do.
    let _: i64 = qs(&mut c, "ZADD A 0.1 m");
    let _: i64 = qs(&mut c, "ZADD B 0.2 m");
    let _: i64 = qs(&mut c, "ZADD C 0.3 m 5 x");
    let _: i64 = qs(&mut c, "ZUNIONSTORE d 3 C B A");
    assert_eq!(qs::<String>(&mut c, "ZSCORE d m"), "0.60000000000000009");
    let _: i64 = qs(&mut c, "ZUNIONSTORE d 2 B A");
    let _: i64 = qs(&mut c, "ZUNIONSTORE d 3 B A A");
    assert_eq!(qs::<String>(&mut c, "ZSCORE d m"), "0.40000000000000002");
    // A destination of another type is replaced; an empty result deletes it.
    assert_eq!(qs::<i64>(&mut c, "ZUNIONSTORE str 1 z"), 3);
    assert_eq!(qs::<String>(&mut c, "TYPE str"), "zset");
    assert_eq!(qs::<i64>(&mut c, "ZINTERSTORE str 2 z nokey"), 0);
    assert_eq!(qs::<i64>(&mut c, "EXISTS str"), 0);
    // The destination may be a source.
    assert_eq!(qs::<i64>(&mut c, "ZUNIONSTORE z 2 z z"), 3);
    assert_eq!(ws(&mut c, "z"), ["a", "2", "b", "10", "c", "12"]);
    let _: () = qs(&mut c, "SET str v");
    for (line, err) in [
        (
            "ZUNIONSTORE d 0 z",
            "ERR at least 1 input key is needed for 'zunionstore' command",
        ),
        (
            "ZINTERSTORE d -1 z",
            "ERR at least 1 input key is needed for 'zinterstore' command",
        ),
        ("ZUNIONSTORE d 3 z", "ERR syntax error"),
        (
            "ZUNIONSTORE d x z",
            "ERR value is not an integer or out of range",
        ),
        (
            "ZUNIONSTORE d 1 z WEIGHTS x",
            "ERR weight value is not a float",
        ),
        ("ZUNIONSTORE d 1 z WEIGHTS 1 2", "ERR syntax error"),
        ("ZUNIONSTORE d 1 z AGGREGATE avg", "ERR syntax error"),
        ("ZDIFFSTORE d 1 z WEIGHTS 1", "ERR syntax error"),
        ("ZUNIONSTORE d 2 z str WEIGHTS x", WRONGTYPE),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
}

#[test]
fn wrong_type_errors_match_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = qs(&mut c, "SET s v");
    let _: i64 = qs(&mut c, "ZADD z 1 a");
    for line in [
        "ZADD s 1 a",
        "ZINCRBY s 1 a",
        "ZSCORE s a",
        "ZMSCORE s a",
        "ZCARD s",
        "ZREM s a",
        "ZRANK s a",
        "ZREVRANK s a",
        "ZPOPMIN s",
        "ZPOPMAX s 2",
        "ZRANDMEMBER s",
        "ZSCAN s 0",
        "ZCOUNT s 0 1",
        "ZLEXCOUNT s - +",
        "ZRANGE s 0 1",
        "ZRANGEBYSCORE s 0 1",
        "ZREVRANGEBYSCORE s 1 0",
        "ZRANGEBYLEX s - +",
        "ZREVRANGEBYLEX s + -",
        "ZREVRANGE s 0 1",
        "ZREMRANGEBYRANK s 0 1",
        "ZREMRANGEBYSCORE s 0 1",
        "ZREMRANGEBYLEX s - +",
        "ZUNIONSTORE d 1 s",
        "ZINTERSTORE d 2 z s",
        "ZDIFFSTORE d 2 z s",
        "GET z",
        "HSET z f v",
    ] {
        assert_eq!(errs(&mut c, line), WRONGTYPE, "{line}");
    }
    // Argument errors come before the type check, as in Redis.
    assert_eq!(errs(&mut c, "ZADD s x a"), "ERR value is not a valid float");
    assert_eq!(
        errs(&mut c, "ZCOUNT s x 1"),
        "ERR min or max is not a float"
    );
    assert_eq!(qs::<String>(&mut c, "TYPE z"), "zset");
    // SET replaces a sorted set.
    let _: () = qs(&mut c, "SET z x");
    assert_eq!(qs::<String>(&mut c, "GET z"), "x");
}

#[test]
fn resp3_reply_shapes() {
    let h = Harness::start();
    let mut c = Resp::connect(h.server.addr(), 3).unwrap();
    assert_eq!(c.call(&["ZADD", "z", "0.1", "a", "2", "b"]), ":2\r\n");
    assert_eq!(c.call(&["ZSCORE", "z", "a"]), ",0.10000000000000001\r\n");
    assert_eq!(c.call(&["ZSCORE", "z", "x"]), "_\r\n");
    assert_eq!(c.call(&["ZMSCORE", "z", "b", "x"]), "*2\r\n,2\r\n_\r\n");
    assert_eq!(c.call(&["ZINCRBY", "z", "1", "b"]), ",3\r\n");
    assert_eq!(c.call(&["ZADD", "z", "NX", "INCR", "1", "b"]), "_\r\n");
    assert_eq!(
        c.call(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        "*2\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n*2\r\n$1\r\nb\r\n,3\r\n"
    );
    assert_eq!(
        c.call(&["ZRANGEBYSCORE", "z", "-inf", "+inf"]),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        c.call(&["ZSCAN", "z", "0"]),
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$19\r\n0.10000000000000001\r\n$1\r\nb\r\n$1\r\n3\r\n"
    );
    assert_eq!(
        c.call(&["ZRANDMEMBER", "z", "-1", "WITHSCORES"])
            .matches("*2\r\n")
            .count(),
        1
    );
    assert_eq!(
        c.call(&["ZPOPMIN", "z"]),
        "*2\r\n$1\r\na\r\n,0.10000000000000001\r\n"
    );
    assert_eq!(
        c.call(&["ZPOPMAX", "z", "1"]),
        "*1\r\n*2\r\n$1\r\nb\r\n,3\r\n"
    );
    assert_eq!(c.call(&["ZPOPMAX", "z", "1"]), "*0\r\n");
    let mut c2 = Resp::connect(h.server.addr(), 2).unwrap();
    assert_eq!(c2.call(&["ZADD", "z", "1.5", "a"]), ":1\r\n");
    assert_eq!(
        c2.call(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        "*2\r\n$1\r\na\r\n$3\r\n1.5\r\n"
    );
    assert_eq!(c2.call(&["ZSCORE", "z", "x"]), "$-1\r\n");
}

#[test]
fn sorted_sets_survive_restart_and_keyspace_commands() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD z 3 c 1 a 2 b");
    let _: String = qs(&mut c, "ZINCRBY z 10 a");
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    assert_eq!(qs::<i64>(&mut c, "ZCARD z"), 3);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z 2 +inf WITHSCORES"),
        ["b", "2", "c", "3", "a", "11"]
    );
    // RENAME and COPY carry the score index with the elements.
    let _: () = qs(&mut c, "RENAME z z2");
    assert_eq!(qs::<i64>(&mut c, "COPY z2 z3"), 1);
    let _: i64 = qs(&mut c, "ZREM z2 a");
    assert_eq!(qs::<Vec<String>>(&mut c, "ZREVRANGE z3 0 0"), ["a"]);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE z2 (2 +inf BYSCORE"),
        ["c"]
    );
    // An expired sorted set is absent; a new one at its key starts empty.
    assert_eq!(qs::<i64>(&mut c, "PEXPIRE z3 1"), 1);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(qs::<i64>(&mut c, "ZCARD z3"), 0);
    assert_eq!(qs::<i64>(&mut c, "ZADD z3 1 new"), 1);
    assert_eq!(qs::<Vec<String>>(&mut c, "ZRANGE z3 0 -1"), ["new"]);
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGEBYSCORE z3 -inf +inf"),
        ["new"]
    );
}

#[test]
fn zscan_pages_large_sets_and_matches() {
    let h = Harness::start();
    let mut c = h.conn();
    zadd_many(&mut c, "z", 300, |i| format!("{i}.5"));
    let mut seen = HashMap::new();
    let (mut cursor, mut calls) = (0u64, 0);
    loop {
        let (next, items): (u64, Vec<String>) =
            q(&mut c, &["ZSCAN", "z", &cursor.to_string(), "COUNT", "50"]);
        for p in items.chunks(2) {
            assert!(seen.insert(p[0].clone(), p[1].clone()).is_none());
        }
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 300);
    assert_eq!(seen["m17"], "17.5");
    assert!(calls >= 6, "paged by COUNT: {calls} calls");
    let (_, items): (u64, Vec<String>) = qs(&mut c, "ZSCAN z 0 MATCH m29* COUNT 1000");
    assert_eq!(items.len(), 2 * 11);
    assert_eq!(errs(&mut c, "ZSCAN z x"), "ERR invalid cursor");
    assert_eq!(errs(&mut c, "ZSCAN z 0 COUNT 0"), "ERR syntax error");
}

#[test]
fn every_member_has_one_element_and_one_index_entry_and_nothing_is_left() {
    let h = Harness::start();
    let mut c = h.conn();
    zadd_many(&mut c, "big", 1000, |i| i.to_string());
    zadd_many(&mut c, "small", 10, |i| i.to_string());
    zadd_many(&mut c, "keep", 20, |i| i.to_string());
    // Score changes replace the index entry.
    zadd_many(&mut c, "move", 5, |i| i.to_string());
    let _: i64 = qs(&mut c, "ZADD move 9 m0 8 m1 -1 m2");
    let _: String = qs(&mut c, "ZINCRBY move 0.5 m3");
    let _: i64 = qs(&mut c, "ZADD move GT 100 m4");
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE move 0 -1"),
        ["m2", "m3", "m1", "m0", "m4"]
    );
    // Removed by DEL, SET, ZREM, pops, range removals, *STORE onto it.
    assert_eq!(qs::<i64>(&mut c, "DEL big"), 1);
    let _: () = qs(&mut c, "SET small x");
    zadd_many(&mut c, "r", 30, |i| i.to_string());
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYRANK r 0 9"), 10);
    assert_eq!(qs::<i64>(&mut c, "ZREMRANGEBYSCORE r 10 19"), 10);
    let _: Vec<String> = qs(&mut c, "ZPOPMIN r 5");
    assert_eq!(qs::<i64>(&mut c, "ZREM r m25 m26 m27 m28 m29"), 5);
    assert_eq!(qs::<i64>(&mut c, "EXISTS r"), 0);
    zadd_many(&mut c, "dst", 100, |i| i.to_string());
    assert_eq!(qs::<i64>(&mut c, "ZINTERSTORE dst 2 keep move"), 5);
    drop(c);
    let dir = h.stop();
    // keep (20) and move (5) and dst (5).
    assert_eq!(common::stored_element_keys(dir.path()), (30, 30));
}

#[test]
fn concurrent_increments_keep_one_index_entry_per_member() {
    let h = Harness::start();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let mut c = h.conn();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let _: String = qs(&mut c, "ZINCRBY z 1 shared");
                    let _: i64 = q(&mut c, &["ZADD", "z", &i.to_string(), &format!("t{t}")]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = h.conn();
    assert_eq!(qs::<String>(&mut c, "ZSCORE z shared"), "800");
    assert_eq!(qs::<i64>(&mut c, "ZCARD z"), 5);
    // Every score change replaced the member's index entry.
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZRANGE z -inf +inf BYSCORE WITHSCORES"),
        ["t0", "199", "t1", "199", "t2", "199", "t3", "199", "shared", "800"]
    );
}

/// The differential program: every reply must be byte-identical.
const PROGRAM: &[&str] = &[
    "ZADD z 1 a 2 b 3 c 1 a",
    "ZADD z CH 3 a 4 a 5 b",
    "ZADD z NX 9 a 6 c 7 d",
    "ZADD z XX CH 7 a 7 e",
    "ZADD z GT CH 1 a 8 b 2 f",
    "ZADD z LT CH 9 a 1 b",
    "ZADD z INCR 0.1 a",
    "ZADD z GT INCR -1 a",
    "ZADD z LT INCR 0 a",
    "ZADD z XX NX 1 a",
    "ZADD z GT LT 1 a",
    "ZADD z LT NX 1 a",
    "ZADD z NX XX INCR 1 a 2 b",
    "ZADD z INCR 1 a 2 b",
    "ZADD z 1 a 2",
    "ZADD z nan a",
    "ZADD z 1e400 a",
    "ZADD z 0x10 hex 1e-310 tiny -inf ninf +inf pinf -0 negzero",
    "ZINCRBY z 0.2 a",
    "ZINCRBY z -inf pinf",
    "ZINCRBY n -0 x",
    "ZSCORE z a",
    "ZSCORE z tiny",
    "ZSCORE z negzero",
    "ZMSCORE z a nope hex",
    "ZMSCORE nokey a",
    "ZCARD z",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGE z -3 -1",
    "ZRANGE z 2 1",
    "ZRANGE z 1 3 REV WITHSCORES",
    "ZRANGE z (1 +inf BYSCORE LIMIT 1 3 WITHSCORES",
    "ZRANGE z +inf -inf BYSCORE REV LIMIT 0 2",
    "ZRANGE z 0 -1 LIMIT 0 1",
    "ZRANGE z - + BYLEX WITHSCORES",
    "ZRANGE z 0 1 REV REV",
    "ZRANGEBYSCORE z -inf +inf LIMIT -1 2",
    "ZRANGEBYSCORE z ( (",
    "ZRANGEBYSCORE z (0 (7",
    "ZRANGEBYSCORE z 1x 2",
    "ZREVRANGEBYSCORE z 7 (0 WITHSCORES",
    "ZREVRANGE z 0 2 WITHSCORES",
    "ZREVRANGE z -100 100",
    "ZRANK z a",
    "ZREVRANK z a",
    "ZRANK z nope",
    "ZCOUNT z -inf +inf",
    "ZCOUNT z (1 (7",
    "ZCOUNT z x 1",
    "ZADD l 0 alpha 0 beta 0 gamma 0 delta 0 epsilon",
    "ZRANGEBYLEX l [beta (gamma",
    "ZRANGEBYLEX l - + LIMIT 1 2",
    "ZREVRANGEBYLEX l + [beta",
    "ZRANGE l (delta + BYLEX REV",
    "ZRANGEBYLEX l beta +",
    "ZLEXCOUNT l (alpha [delta",
    "ZREMRANGEBYLEX l [alpha (beta",
    "ZREMRANGEBYRANK z 0 0",
    "ZREMRANGEBYSCORE z (6 8",
    "ZREMRANGEBYRANK z x 1",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZREM z a nope hex",
    "ZPOPMIN z",
    "ZPOPMAX z 2",
    "ZPOPMIN z 0",
    "ZPOPMIN z -1",
    "ZPOPMIN nokey",
    "ZADD A 0.1 m 1 only",
    "ZADD B 0.2 m",
    "ZADD C 0.3 m 5 x",
    "ZUNIONSTORE d 3 C B A",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZUNIONSTORE d 3 A B C WEIGHTS 1 2 -1 AGGREGATE MAX",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZINTERSTORE d 3 C B A",
    "ZSCORE d m",
    "ZINTERSTORE d 2 A C AGGREGATE MIN WEIGHTS 0 -2",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZDIFFSTORE d 2 C B",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZDIFFSTORE d 2 nokey A",
    "EXISTS d",
    "ZUNIONSTORE d 0 A",
    "ZUNIONSTORE d 1 A WEIGHTS x",
    "ZDIFFSTORE d 1 A AGGREGATE SUM",
    "SET str v",
    "ZUNIONSTORE d 2 A str",
    "ZUNIONSTORE str 1 A",
    "TYPE str",
    "ZADD str 1 a",
    "ZSCAN A 0",
    "ZSCAN A 0 MATCH o*",
    "ZSCAN A x",
    "ZSCAN A 5 COUNT 1",
    "ZRANDMEMBER nokey",
    "ZRANDMEMBER A 0",
    "ZRANDMEMBER A 1 WITH",
    "ZRANDMEMBER A x",
    "GET z",
    "DEL z l A B C d n str",
];

#[test]
fn same_replies_as_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    let h = Harness::start();
    for proto in [2, 3] {
        let mut theirs = Resp::connect(redis.addr, proto).unwrap();
        let mut ours = Resp::connect(h.server.addr(), proto).unwrap();
        assert_eq!(theirs.call(&["FLUSHALL"]), ours.call(&["FLUSHALL"]));
        for line in PROGRAM {
            let args: Vec<&str> = line.split(' ').collect();
            let want = theirs.call(&args);
            assert_eq!(ours.call(&args), want, "RESP{proto}: {line}");
        }
        // Random picks: compared by size and membership.
        let _ = (
            theirs.call(&["ZADD", "r", "1", "a", "2", "b"]),
            ours.call(&["ZADD", "r", "1", "a", "2", "b"]),
        );
        for args in [
            &["ZRANDMEMBER", "r", "5"][..],
            &["ZRANDMEMBER", "r", "-5", "WITHSCORES"],
        ] {
            let (t, o) = (theirs.call(args), ours.call(args));
            // Same shape and size; every line of ours (headers, members,
            // scores) appears in Redis's reply or in the set itself.
            assert_eq!(t.len(), o.len(), "{args:?}: {t:?} vs {o:?}");
            let lines = |s: &str| s.split("\r\n").map(str::to_owned).collect::<HashSet<_>>();
            let mut allowed = lines(&t);
            allowed.extend(lines(&theirs.call(&[
                "ZRANGE",
                "r",
                "0",
                "-1",
                "WITHSCORES",
            ])));
            assert!(lines(&o).is_subset(&allowed), "{args:?}: {t:?} vs {o:?}");
        }
        let _ = (theirs.call(&["DEL", "r"]), ours.call(&["DEL", "r"]));
    }
}
