//! Keyspace notifications (`notify-keyspace-events`) of the hash, set,
//! sorted-set, GEO, SORT and HyperLogLog commands: the exact sequence
//! redis-server 7.0.15 publishes for the same commands (success, no-op,
//! emptied and error cases), hard-coded from its output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, wait_blocked, Harness};

/// Runs `script` (each command's arguments separated by spaces; errors
/// ignored) with `notify-keyspace-events` set to `flags`, and returns the
/// keyspace events (`__keyspace@0__:<key> <event>`) published meanwhile,
/// as `<key> <event>` joined by ", ". `during`, if given, runs on another
/// connection after the script, before the events are collected.
fn events_with(h: &Harness, flags: &str, script: &[&str], during: impl FnOnce()) -> String {
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", flags]);
    let mut sub = h.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@*").unwrap();
    ps.subscribe("done").unwrap();
    for line in script {
        let args: Vec<&str> = line.split(' ').collect();
        let _ = redis::cmd(args[0])
            .arg(&args[1..])
            .query::<redis::Value>(&mut c);
    }
    during();
    let _: i64 = q(&mut c, &["PUBLISH", "done", "x"]);
    let out = common::keyspace_events_until_done(&mut ps);
    out.join(", ")
}

fn events(h: &Harness, flags: &str, script: &[&str]) -> String {
    events_with(h, flags, script, || {})
}

/// A blocked BZPOPMIN, BZPOPMAX or BZMPOP publishes its pop (and `del`)
/// when it is served, after the event of the write that served it; two
/// clients blocked on one key are served in the order they blocked.
#[test]
fn blocked_pops_publish_when_served() {
    for (blocked, write, want) in [
        (
            &["BZPOPMIN bk 0"][..],
            "ZADD bk 1 a 2 b",
            "bk zadd, bk zpopmin",
        ),
        (
            &["BZPOPMAX bk 0", "BZPOPMIN bk 0"][..],
            "ZADD bk 1 a 2 b",
            "bk zadd, bk zpopmax, bk zpopmin, bk del",
        ),
        (
            &["BZMPOP 0 2 bk bk2 MAX COUNT 5"][..],
            "ZADD bk2 1 a 2 b",
            "bk2 zadd, bk2 zpopmax, bk2 del",
        ),
        (
            &["BZPOPMIN bk 0"][..],
            "GEOADD bk 13.361389 38.115556 Palermo",
            "bk zadd, bk zpopmin, bk del",
        ),
    ] {
        let h = Harness::start();
        let mut watcher = h.conn();
        let threads: Vec<_> = blocked
            .iter()
            .enumerate()
            .map(|(i, cmd)| {
                let mut c = h.conn();
                let args: Vec<String> = cmd.split(' ').map(String::from).collect();
                let t = std::thread::spawn(move || {
                    let _: redis::Value =
                        redis::cmd(&args[0]).arg(&args[1..]).query(&mut c).unwrap();
                });
                wait_blocked(&mut watcher, i + 1);
                t
            })
            .collect();
        let got = events_with(&h, "KEA", &[write], || {
            for t in threads {
                t.join().unwrap();
            }
        });
        assert_eq!(got, want, "{blocked:?} then {write}");
    }
}

/// HSET, HMSET, HSETNX (only when it sets), HINCRBY, HINCRBYFLOAT, HDEL (then
/// `del` when emptied); no-ops and errors publish nothing.
#[test]
fn hashes() {
    let script = [
        "HSET h f1 v1 f2 v2",
        "HSET h f1 v1",
        "HMSET h f3 v3",
        "HSETNX h f1 x",
        "HSETNX h f9 x",
        "HINCRBY h n 5",
        "HINCRBY h f1 1",
        "HINCRBY h n 9223372036854775807",
        "HINCRBYFLOAT h fl 1.5",
        "HINCRBYFLOAT h f1 1",
        "HDEL h nosuch",
        "HDEL h f1 f2 nosuch",
        "HDEL nokey f",
        "SET str x",
        "HSET str f v",
        "HDEL str f",
        "HINCRBY str f 1",
        "HDEL h f3 f9 n fl",
        "HSETNX h2 a b",
        "HINCRBYFLOAT h3 x 2",
        "HINCRBY h4 x 2",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "h hset, h hset, h hset, h hset, h hincrby, h hincrbyfloat, h hdel, str set, h hdel, \
         h del, h2 hset, h3 hincrbyfloat, h4 hincrby"
    );
}

/// SADD (only when it adds), SREM and SPOP (then `del` when emptied).
#[test]
fn sets() {
    let script = [
        "SADD s a b c",
        "SADD s a",
        "SADD s a d",
        "SREM s zz",
        "SREM s a zz",
        "SREM nokey a",
        "SET str x",
        "SADD str a",
        "SREM s b c d",
        "SADD p a b c d e",
        "SPOP p 0",
        "SPOP nokey",
        "SPOP nokey 3",
        "SPOP p 2",
        "SPOP p 10",
        "SADD p a",
        "SPOP p",
        "SADD p a b",
        "SPOP p",
        "SPOP str",
        "SPOP p -1",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "s sadd, s sadd, s srem, str set, s srem, s del, p sadd, p spop, p spop, p del, p \
         sadd, p spop, p del, p sadd, p spop"
    );
}

/// SMOVE: `srem` on the source (then `del` if emptied), `sadd` on the
/// destination only if added; nothing when the source lacks the member, is the
/// destination, or on WRONGTYPE.
#[test]
fn smove() {
    let script = [
        "SADD s1 a b c",
        "SADD s2 c d",
        "SMOVE s1 s2 zz",
        "SMOVE s1 s2 c",
        "SMOVE s1 s3 a",
        "SMOVE s1 s1 b",
        "SMOVE s1 s2 b",
        "SMOVE nokey s2 c",
        "SET str x",
        "SMOVE s2 str c",
        "SMOVE str s2 c",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "s1 sadd, s2 sadd, s1 srem, s1 srem, s3 sadd, s1 srem, s1 del, s2 sadd, str set"
    );
}

/// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: their event, or `del` when an empty
/// result deletes a key that existed (of any type).
#[test]
fn set_stores() {
    let script = [
        "SADD x1 a b c",
        "SADD x2 b c d",
        "SINTERSTORE d1 x1 x2",
        "SINTERSTORE d1 x1 nokey",
        "SINTERSTORE d1 x1 nokey",
        "SUNIONSTORE d2 x1 x2",
        "SUNIONSTORE d2 nokey",
        "SDIFFSTORE d3 x1 x2",
        "SDIFFSTORE d3 x1 x1",
        "SDIFFSTORE d3 x1 x1",
        "SET str x",
        "SINTERSTORE d4 x1 str",
        "SUNIONSTORE str nokey",
        "SET str2 y",
        "SINTERSTORE str2 x1 x2",
        "SADD y1 a",
        "SADD y2 b",
        "SINTERSTORE d5 y1 y2",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "x1 sadd, x2 sadd, d1 sinterstore, d1 del, d2 sunionstore, d2 del, d3 sdiffstore, d3 \
         del, str set, str del, str2 set, str2 sinterstore, y1 sadd, y2 sadd"
    );
}

/// ZADD (`zadd`, `zincr` with INCR) and ZINCRBY only when a score changed;
/// GEOADD is ZADD.
#[test]
fn zadd() {
    let script = [
        "ZADD z 1 a 2 b",
        "ZADD z 1 a",
        "ZADD z 3 a",
        "ZADD z NX 5 a",
        "ZADD z XX 5 c",
        "ZADD nokey XX 1 a",
        "ZADD z GT 1 a",
        "ZADD z LT 1 a",
        "ZADD z CH 1 a",
        "ZADD z INCR 2 a",
        "ZADD z INCR NX 2 a",
        "ZINCRBY z 1 b",
        "ZINCRBY z 0 b",
        "ZADD z 0 zero",
        "ZADD z -0 zero",
        "ZADD z xx INCR 1 nope",
        "ZADD z 1 a 2",
        "ZADD z abc a",
        "SET str x",
        "ZADD str 1 a",
        "ZINCRBY str 1 a",
        "ZADD inf 1 +inf",
        "ZINCRBY inf -inf +inf",
        "GEOADD g 13.361389 38.115556 Palermo",
        "GEOADD g 13.361389 38.115556 Palermo",
        "GEOADD g XX 1 1 Nope",
        "GEOADD g 200 100 Bad",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "z zadd, z zadd, z zadd, z zincr, z zincr, z zadd, str set, inf zadd, inf zincr, g \
         zadd"
    );
}

/// ZREM and ZREMRANGEBY{SCORE,RANK,LEX}: their event when something was
/// removed, then `del` if emptied.
#[test]
fn zrem() {
    let script = [
        "ZADD z 1 a 2 b 3 c",
        "ZREM z zz",
        "ZREM nokey a",
        "ZREM z a zz",
        "ZREM z b c a",
        "ZADD r 1 a 2 b 3 c 4 d 5 e",
        "ZREMRANGEBYSCORE r 10 20",
        "ZREMRANGEBYSCORE r 1 1",
        "ZREMRANGEBYRANK r 5 9",
        "ZREMRANGEBYRANK r 0 0",
        "ZREMRANGEBYLEX r [a [b",
        "ZREMRANGEBYLEX r [c [c",
        "ZREMRANGEBYSCORE r x 1",
        "ZREMRANGEBYSCORE nokey 1 2",
        "ZREMRANGEBYRANK r 0 -1",
        "ZADD r 1 a",
        "ZREMRANGEBYLEX r - +",
        "ZADD r 1 a",
        "ZREMRANGEBYSCORE r -inf +inf",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "z zadd, z zrem, z zrem, z del, r zadd, r zremrangebyscore, r zremrangebyrank, r \
         zremrangebylex, r zremrangebyrank, r del, r zadd, r zremrangebylex, r del, r zadd, r \
         zremrangebyscore, r del"
    );
}

/// ZPOPMIN, ZPOPMAX, ZMPOP, and BZPOPMIN/BZPOPMAX/BZMPOP served at once:
/// `zpopmin`/`zpopmax` (once per pop), then `del` if emptied.
#[test]
fn zpop() {
    let script = [
        "ZADD p 1 a 2 b 3 c 4 d",
        "ZPOPMIN p",
        "ZPOPMAX p",
        "ZPOPMIN p 0",
        "ZPOPMIN nokey",
        "ZPOPMAX p 5",
        "ZADD p 1 a",
        "ZPOPMAX p",
        "SET str x",
        "ZPOPMIN str",
        "ZADD m1 1 a 2 b",
        "ZADD m2 3 c",
        "ZMPOP 2 nokey m1 MIN",
        "ZMPOP 2 m1 m2 MAX COUNT 5",
        "ZMPOP 1 nokey MIN",
        "ZMPOP 1 m2 MIN COUNT 1",
        "ZADD b1 1 a 2 b",
        "BZPOPMIN nokey b1 0",
        "BZPOPMAX b1 0",
        "ZADD b1 1 a 2 b",
        "BZMPOP 0 1 b1 MAX COUNT 1",
        "BZMPOP 0 1 b1 MAX COUNT 1",
        "ZMPOP 1 str MIN",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "p zadd, p zpopmin, p zpopmax, p zpopmax, p del, p zadd, p zpopmax, p del, str set, \
         m1 zadd, m2 zadd, m1 zpopmin, m1 zpopmax, m1 del, m2 zpopmin, m2 del, b1 zadd, b1 \
         zpopmin, b1 zpopmax, b1 del, b1 zadd, b1 zpopmax, b1 zpopmax, b1 del"
    );
}

/// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZRANGESTORE: their event, or `del`
/// when an empty result deletes a key that existed.
#[test]
fn zstores() {
    let script = [
        "ZADD u1 1 a 2 b",
        "ZADD u2 2 b 3 c",
        "ZUNIONSTORE d1 2 u1 u2",
        "ZINTERSTORE d2 2 u1 u2",
        "ZDIFFSTORE d3 2 u1 u2",
        "ZINTERSTORE d2 2 u1 nokey",
        "ZINTERSTORE d2 2 u1 nokey",
        "ZDIFFSTORE d3 2 u1 u1",
        "ZUNIONSTORE d9 1 nokey",
        "SET s9 x",
        "ZUNIONSTORE s9 1 nokey",
        "SET str x",
        "ZUNIONSTORE d1 2 u1 str",
        "ZINTERSTORE d1 1 u1 WEIGHTS x",
        "ZRANGESTORE d5 u1 0 -1",
        "ZRANGESTORE d5 u1 5 9",
        "ZRANGESTORE d5 u1 5 9",
        "ZRANGESTORE d6 nokey 0 -1",
        "ZRANGESTORE d7 str 0 1",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "u1 zadd, u2 zadd, d1 zunionstore, d2 zinterstore, d3 zdiffstore, d2 del, d3 del, s9 \
         set, s9 del, str set, d5 zrangestore, d5 del"
    );
}

/// GEORADIUS[BYMEMBER] ... STORE: `georadiusstore`; GEOSEARCHSTORE:
/// `geosearchstore`; or `del` when an empty result deletes a key.
#[test]
fn geo_stores() {
    let script = [
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEORADIUS g 15 37 200 km STORE gd",
        "GEORADIUS g 15 37 1 km STORE gd",
        "GEORADIUS g 15 37 1 km STORE gd",
        "GEORADIUS g 15 37 200 km STOREDIST gd2",
        "GEORADIUSBYMEMBER g Palermo 300 km STORE gd3",
        "GEORADIUS nokey 15 37 200 km STORE gd3",
        "GEORADIUS nokey 15 37 200 km STORE gd3",
        "GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 200 km",
        "GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 1 km",
        "GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 1 km",
        "GEOSEARCHSTORE gs nokey FROMLONLAT 15 37 BYRADIUS 200 km",
        "GEOSEARCHSTORE gs2 g FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST",
        "GEORADIUS g 15 37 200 km STORE gd WITHDIST",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "g zadd, gd georadiusstore, gd del, gd2 georadiusstore, gd3 georadiusstore, gd3 del, \
         gs geosearchstore, gs del, gs2 geosearchstore"
    );
}

/// SORT ... STORE: `sortstore` (a list event), or `del` when an empty result
/// deletes a key.
#[test]
fn sort_store() {
    let script = [
        "RPUSH l 3 1 2",
        "SORT l STORE d",
        "SORT l STORE d",
        "SORT nokey STORE d",
        "SORT nokey STORE d",
        "SET d3 x",
        "SORT l LIMIT 5 5 STORE d3",
        "SADD s b a",
        "SORT s ALPHA STORE d4",
        "SORT l STORE l",
        "SET str x",
        "SORT str STORE d6",
        "SORT_RO l",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "l rpush, d sortstore, d sortstore, d del, d3 set, d3 del, s sadd, d4 sortstore, l \
         sortstore, str set"
    );
}

/// PFADD when it changed something (or created the key), PFMERGE always
/// `pfadd`; PFCOUNT's cache write publishes nothing.
#[test]
fn hll() {
    let script = [
        "PFADD h a b c",
        "PFADD h a",
        "PFADD h",
        "PFADD h2",
        "PFADD h2",
        "PFCOUNT h",
        "PFCOUNT h h2",
        "PFMERGE h3 h h2",
        "PFMERGE h3",
        "SET str x",
        "PFADD str a",
        "PFMERGE h5 str",
        "PFADD h d e f",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "h pfadd, h2 pfadd, h3 pfadd, h3 pfadd, str set, h pfadd"
    );
}

/// Inside EXEC the events come in the commands' order.
#[test]
fn exec() {
    let script = [
        "MULTI",
        "HSET h a 1",
        "HDEL h a",
        "SADD s a",
        "SPOP s",
        "ZADD z 1 a",
        "ZPOPMIN z",
        "PFADD p x",
        "EXEC",
    ];
    assert_eq!(
        events(&Harness::start(), "KEA", &script),
        "h hset, h hdel, h del, s sadd, s spop, s del, z zadd, z zpopmin, z del, p pfadd"
    );
}

/// Only the configured classes are published (`g` and `h` here: no set, zset,
/// string or list events).
#[test]
fn classes() {
    let script = [
        "HSET h a 1",
        "SADD s a",
        "ZADD z 1 a",
        "PFADD p a",
        "RPUSH l a",
        "SORT l STORE d",
        "HDEL h a",
        "SREM s a",
        "ZREM z a",
    ];
    assert_eq!(
        events(&Harness::start(), "Kgh", &script),
        "h hset, h hdel, h del, s del, z del"
    );
}

/// Pipelines of SET, INCR and HSET from several connections at once (run
/// as engine write groups, combined across connections) publish one event
/// per command, each naming its own key.
#[test]
fn grouped_writes_of_many_connections_publish_every_event() {
    const CONNS: usize = 6;
    const PER_CONN: usize = 300;
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "E$h"]);
    let mut sub = h.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyevent@0__:*").unwrap();
    ps.subscribe("done").unwrap();
    std::thread::scope(|s| {
        for t in 0..CONNS {
            let h = &h;
            s.spawn(move || {
                let mut c = h.conn();
                for chunk in (0..PER_CONN).collect::<Vec<_>>().chunks(10) {
                    let mut p = redis::pipe();
                    for &j in chunk {
                        p.cmd("SET").arg(format!("s{t}:{j}")).arg(j).ignore();
                        p.cmd("INCR").arg(format!("n{t}")).ignore();
                        p.cmd("HSET").arg(format!("h{t}")).arg(j).arg(1).ignore();
                    }
                    let () = p.query(&mut c).unwrap();
                }
            });
        }
    });
    let _: i64 = q(&mut c, &["PUBLISH", "done", "x"]);
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    loop {
        let m = ps.get_message().unwrap();
        if m.get_channel_name() == "done" {
            break;
        }
        let event = m.get_channel_name().rsplit(':').next().unwrap().to_string();
        let key: String = m.get_payload().unwrap();
        *seen.entry(format!("{event} {key}")).or_default() += 1;
    }
    for t in 0..CONNS {
        for j in 0..PER_CONN {
            assert_eq!(
                seen.remove(&format!("set s{t}:{j}")),
                Some(1),
                "set s{t}:{j}"
            );
        }
        assert_eq!(seen.remove(&format!("incrby n{t}")), Some(PER_CONN));
        assert_eq!(seen.remove(&format!("hset h{t}")), Some(PER_CONN));
    }
    assert!(seen.is_empty(), "unexpected events: {seen:?}");
    let n: i64 = q(&mut c, &["GET", "n0"]);
    assert_eq!(n, PER_CONN as i64);
}
