//! Collection point reads (HGET, HMGET, HEXISTS, HSTRLEN, SISMEMBER,
//! SMISMEMBER, ZSCORE, ZMSCORE, GEOPOS, GEOHASH, GEODIST), size reads
//! (HLEN, SCARD, ZCARD, LLEN), string reads (BITFIELD_RO, STRLEN,
//! GETRANGE, SUBSTR, GETBIT, BITCOUNT) and key reads (EXISTS, TYPE, TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME) joining the batcher's jobs with GET and MGET
//! (`batcher.rs`):
//! the replies of a server with batching on must be the bytes of one with
//! `--batch off` (and of redis-server, when installed), in RESP2 and
//! RESP3, over random pipelines that mix them with writes to the same
//! keys, on keys of every type, absent and expired ones included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::reference::{RedisServer, Resp};
use common::{Harness, Rng};
use std::net::SocketAddr;

/// Key names (under a prefix): k0-k5 start as hash, set, zset, string,
/// list and absent; e* expire before the reads begin; kl is a list of 20
/// that no write changes.
const KEYS: &[&str] = &[
    "k0", "k1", "k2", "k3", "k4", "k5", "eh", "es", "ez", "estr", "kl",
];
const SUBS: &[&str] = &["a", "b", "c", "d", ""];
const SCORES: &[&str] = &["1.5", "0.1", "-0", "3", "inf", "-2.25", "1e300"];

/// The commands creating `prefix`'s keys of every type; the e* keys
/// expire after 30 ms.
fn setup(prefix: &str) -> Vec<Vec<String>> {
    let k = |n: &str| format!("{prefix}{n}");
    let mut cmds: Vec<Vec<&str>> = Vec::new();
    let (k0, k1, k2, k3, k4) = (k("k0"), k("k1"), k("k2"), k("k3"), k("k4"));
    let kl = k("kl");
    let (eh, es, ez, estr) = (k("eh"), k("es"), k("ez"), k("estr"));
    cmds.push(vec!["HSET", &k0, "a", "1", "b", "two", "", "empty"]);
    cmds.push(vec!["SADD", &k1, "a", "c", ""]);
    cmds.push(vec!["ZADD", &k2, "1.5", "a", "0.1", "b", "-0", "c"]);
    cmds.push(vec!["SET", &k3, "string"]);
    cmds.push(vec!["RPUSH", &k4, "a", "b", "c", "d", "e"]);
    // Longer than the 16 elements a short LRANGE reads: longer spans are
    // read with an iterator.
    let mut list = vec!["RPUSH", kl.as_str()];
    list.extend(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
    list.extend(["k", "l", "m", "n", "o", "p", "q", "r", "s", "t"]);
    cmds.push(list);
    cmds.push(vec!["HSET", &eh, "a", "1"]);
    cmds.push(vec!["SADD", &es, "a"]);
    cmds.push(vec!["ZADD", &ez, "1", "a"]);
    cmds.push(vec!["SET", &estr, "x"]);
    for e in [&eh, &es, &ez, &estr] {
        cmds.push(vec!["PEXPIRE", e, "30"]);
    }
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// A random read of one of the batchable kinds, sometimes with the name
/// in mixed case or a wrong number of arguments (then not batchable).
fn read(rng: &mut Rng, prefix: &str) -> Vec<String> {
    let key = format!("{prefix}{}", rng.pick(KEYS));
    let n = 1 + rng.below(4);
    let (name, subs) = match rng.below(31) {
        0 => ("GET", 0),
        1 => ("MGET", n),
        2 => ("HGET", 1),
        3 => ("HMGET", n),
        4 => ("SISMEMBER", 1),
        5 => ("SMISMEMBER", n),
        6 => ("ZSCORE", 1),
        7 => ("ZMSCORE", n),
        8 => ("HEXISTS", 1),
        9 => ("HSTRLEN", 1),
        10 => ("HLEN", 0),
        11 => ("SCARD", 0),
        12 => ("ZCARD", 0),
        13 => ("LINDEX", 1),
        14 => ("LRANGE", 2),
        15 => ("GEODIST", 2),
        16 => ("GEOPOS", n),
        17 => ("GEOHASH", n),
        18 => ("BITFIELD_RO", 0),
        19 => ("STRLEN", 0),
        20 => ("GETRANGE", 2),
        21 => ("SUBSTR", 2),
        22 => ("GETBIT", 1),
        23 => ("EXISTS", n - 1),
        24 => ("TYPE", 0),
        25 => ("EXPIRETIME", 0),
        26 => ("PEXPIRETIME", 0),
        27 => ("TTL", 0),
        28 => ("PTTL", 0),
        29 => ("BITCOUNT", 0),
        _ => ("LLEN", 0),
    };
    let name = match rng.below(10) {
        0 => name.to_lowercase(),
        1 => name[..1].to_lowercase() + &name[1..],
        _ => name.to_string(),
    };
    let mut c = vec![name.clone(), key];
    for _ in 0..subs {
        c.push(
            if name.eq_ignore_ascii_case("mget") || name.eq_ignore_ascii_case("exists") {
                format!("{prefix}{}", rng.pick(KEYS))
            } else {
                rng.pick(SUBS).to_string()
            },
        );
        if name.eq_ignore_ascii_case("lindex") {
            // An index inside, outside or not one.
            c[2] = rng.pick(&["0", "1", "-1", "-3", "2", "x"]).to_string();
        }
    }
    if name.eq_ignore_ascii_case("geodist") && rng.below(2) == 0 {
        // A unit, in any case, or not one (then not batchable).
        c.push(rng.pick(&["km", "MI", "ft", "m", "parsec"]).to_string());
    }
    if ["getrange", "substr"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
    {
        if rng.below(2) == 0 {
            c[1] = format!("{prefix}{}", rng.pick(&["k3", "estr"]));
        }
        let index = ["0", "1", "-1", "-3", "5", "100", "-100", "x"];
        c[2] = rng.pick(&index).into();
        c[3] = rng.pick(&index).into();
    }
    if name.eq_ignore_ascii_case("bitcount") {
        // The whole string, a range in bytes or bits (negative, reversed,
        // past the end), or bad arguments (then alone).
        if rng.below(2) == 0 {
            c[1] = format!("{prefix}{}", rng.pick(&["k3", "estr"]));
        }
        if rng.below(4) > 0 {
            let index = ["0", "1", "-1", "-3", "-5", "4", "100", "x", "-4294967296"];
            c.push(rng.pick(&index).into());
            c.push(rng.pick(&index).into());
            if rng.below(2) == 0 {
                c.push(rng.pick(&["BIT", "byte", "bits"]).into());
            }
        }
    }
    if name.eq_ignore_ascii_case("getbit") {
        // Within the first MiB (batched), past it (alone) or not valid.
        let offsets = ["0", "1", "7", "9", "41", "8388607", "8388608", "-1", "x"];
        c[2] = rng.pick(&offsets).into();
    }
    if ["ttl", "pttl"].iter().any(|n| name.eq_ignore_ascii_case(n)) {
        // Keys no write gives a TTL (a relative TTL would differ between
        // the servers by the time between their reads).
        c[1] = format!("{prefix}{}", rng.pick(&["kl", "eh", "estr", "nokey"]));
    }
    if name.eq_ignore_ascii_case("bitfield_ro") {
        // Mostly the strings; 1-6 GETs (batched up to 4 of valid types
        // and offsets within the first MiB), sometimes an OVERFLOW.
        if rng.below(2) == 0 {
            c[1] = format!("{prefix}{}", rng.pick(&["k3", "estr"]));
        }
        for _ in 0..1 + rng.below(6) {
            c.push(rng.pick(&["GET", "get", "GET", "GET", "OVERFLOW"]).into());
            c.push(
                rng.pick(&["u8", "i5", "i64", "u63", "u1", "u64", "I8"])
                    .into(),
            );
            let offsets = ["0", "3", "#1", "100", "-1", "8388607", "8388608", "#2"];
            c.push(rng.pick(&offsets).into());
        }
    }
    if name.eq_ignore_ascii_case("lrange") {
        // Mostly a list; spans short (batched) or not (of mixed signs,
        // or over 16 apart), inside the list, past it or empty.
        match rng.below(3) {
            0 => c[1] = format!("{prefix}k4"),
            1 => c[1] = format!("{prefix}kl"),
            _ => {}
        }
        c[2] = rng
            .pick(&["0", "1", "2", "-1", "-3", "-16", "9", "x"])
            .into();
        c[3] = rng
            .pick(&["0", "1", "3", "15", "16", "-1", "-2", "x"])
            .into();
    }
    match rng.below(20) {
        // Too few arguments (HGET key), or one too many (HGET k f f).
        0 => c.truncate(2),
        1 => c.push("extra".into()),
        _ => {}
    }
    c
}

/// A random write to one of the keys: it changes what later reads of the
/// same pipeline see (and a key's type).
fn write(rng: &mut Rng, prefix: &str) -> Vec<String> {
    let key = format!("{prefix}{}", rng.pick(&KEYS[..6]));
    let sub = rng.pick(SUBS).to_string();
    let c: Vec<String> = match rng.below(16) {
        0 => vec!["HSET".into(), key, sub, format!("v{}", rng.below(100))],
        1 => vec!["HDEL".into(), key, sub],
        2 => vec!["SADD".into(), key, sub],
        3 => vec!["SREM".into(), key, sub],
        4 => vec!["ZADD".into(), key, rng.pick(SCORES).into(), sub],
        5 => vec!["ZREM".into(), key, sub],
        6 => vec!["SET".into(), key, format!("s{}", rng.below(100))],
        7 => vec!["DEL".into(), key],
        8 => vec!["RPUSH".into(), key, sub],
        9 => vec!["LPOP".into(), key],
        10 => vec!["LPUSH".into(), key, sub],
        11 => {
            let long = rng.pick(&["13.361389", "-0.1275", "151.2"]).to_string();
            let lat = rng.pick(&["38.115556", "51.507", "-33.86"]).to_string();
            vec!["GEOADD".into(), key, long, lat, sub]
        }
        13 => vec!["PEXPIREAT".into(), key, "4000000000123".into()],
        14 => vec!["PERSIST".into(), key],
        12 => {
            let bit = rng.pick(&["1", "7", "40", "100"]).to_string();
            vec!["SETBIT".into(), key, bit, rng.pick(&["0", "1"]).into()]
        }
        _ => {
            let src = format!("{prefix}{}", rng.pick(&KEYS[..3]));
            vec!["COPY".into(), src, key, "REPLACE".into()]
        }
    };
    c
}

/// A pipeline of 1-24 commands, about three reads to a write.
fn pipeline(rng: &mut Rng, prefix: &str) -> Vec<Vec<String>> {
    let n = 1 + rng.below(24);
    (0..n)
        .map(|_| {
            if rng.below(4) == 0 {
                write(rng, prefix)
            } else {
                read(rng, prefix)
            }
        })
        .collect()
}

fn seed() -> u64 {
    let s = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
        | 1;
    println!("BATCHKV_SEED={s}");
    s
}

/// Runs `pipelines` random pipelines over `prefix`'s keys on every server
/// in `addrs` (the first is the one under test) with `proto`, asserting
/// that every reply is the first server's bytes.
fn compare(addrs: &[(&str, SocketAddr)], proto: u8, prefix: &str, seed: u64, pipelines: usize) {
    let mut conns: Vec<Resp> = addrs
        .iter()
        .map(|(_, a)| Resp::connect(*a, proto).unwrap())
        .collect();
    for c in &mut conns {
        c.pipeline(&setup(prefix));
    }
    std::thread::sleep(std::time::Duration::from_millis(80));
    let mut rng = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    for p in 0..pipelines {
        let cmds = pipeline(&mut rng, prefix);
        let replies: Vec<Vec<String>> = conns.iter_mut().map(|c| c.pipeline(&cmds)).collect();
        for (i, cmd) in cmds.iter().enumerate() {
            history.push(cmd.join(" "));
            for (s, (name, _)) in addrs.iter().enumerate().skip(1) {
                assert_eq!(
                    replies[0][i].escape_debug().to_string(),
                    replies[s][i].escape_debug().to_string(),
                    "seed {seed}, RESP{proto}, pipeline {p}, command {i} `{}`: batched \
                     server vs {name}; last commands:\n{}",
                    cmd.join(" "),
                    history[history.len().saturating_sub(30)..].join("\n")
                );
            }
        }
    }
}

/// One connection per server: every reply of the batching server is the
/// unbatched server's and redis-server's.
#[test]
fn pipelined_collection_reads_reply_as_unbatched_and_redis() {
    let on = Harness::start();
    let off = Harness::start_with(|c| c.batch = false);
    let redis = match RedisServer::start() {
        Ok(r) => Some(r),
        Err(e) => {
            println!("SKIPPED the comparison with redis-server: {e}");
            None
        }
    };
    let mut addrs = vec![
        ("batch on", on.server.addr()),
        ("batch off", off.server.addr()),
    ];
    if let Some(r) = &redis {
        addrs.push(("redis-server", r.addr));
    }
    let seed = seed();
    for proto in [2, 3] {
        compare(
            &addrs,
            proto,
            &format!("p{proto}:"),
            seed ^ u64::from(proto),
            300,
        );
    }
    // The reads went through the batcher: more keys than pipelines.
    let mut c = Resp::connect(on.server.addr(), 2).unwrap();
    let info = c.call(&["INFO", "batchkv"]);
    let keys: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("read_batched_keys:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(keys > 600, "{info}");
}

/// Several connections at once, on disjoint keys: their jobs combine in
/// the batcher, and each still gets exactly the unbatched replies.
#[test]
fn concurrent_connections_reply_as_unbatched() {
    let on = Harness::start();
    let off = Harness::start_with(|c| c.batch = false);
    let addrs = [
        ("batch on", on.server.addr()),
        ("batch off", off.server.addr()),
    ];
    let seed = seed();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let addrs = &addrs;
            s.spawn(move || {
                let proto = 2 + (t % 2) as u8;
                compare(addrs, proto, &format!("t{t}:"), seed ^ (t << 32), 150)
            });
        }
    });
}

/// A collection replaced as a whole (COPY ... REPLACE, SUNIONSTORE,
/// ZUNIONSTORE: a new version of its elements, the old ones deleted in the
/// same write) while batched reads run: a read sees the old or the new
/// collection — both hold the members read — never a mix of the old
/// metadata with the elements after the write (which would be nil or 0).
/// Unbatched reads (`--batch off`) read at one snapshot too.
#[test]
fn reads_of_a_collection_being_replaced_see_a_whole_version() {
    replaced_collections_are_read_whole(true);
}

#[test]
fn unbatched_reads_of_a_collection_being_replaced_see_a_whole_version() {
    replaced_collections_are_read_whole(false);
}

fn replaced_collections_are_read_whole(batch: bool) {
    let h = Harness::start_with(|c| c.batch = batch);
    let addr = h.server.addr();
    let mut c = Resp::connect(addr, 2).unwrap();
    c.pipeline(&[
        vec!["HSET", "hsrc", "f", "v", "g", "w"],
        vec!["SADD", "ssrc", "x", "y"],
        vec!["ZADD", "zsrc", "2.5", "x", "1", "y"],
        vec!["COPY", "hsrc", "h"],
        vec!["SUNIONSTORE", "s", "ssrc"],
        vec!["ZUNIONSTORE", "z", "1", "zsrc"],
    ]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = Resp::connect(addr, 2).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                w.pipeline(&[
                    vec!["COPY", "hsrc", "h", "REPLACE"],
                    vec!["SUNIONSTORE", "s", "ssrc"],
                    vec!["ZUNIONSTORE", "z", "1", "zsrc"],
                ]);
            }
        });
        let readers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut r = Resp::connect(addr, 2).unwrap();
                    for _ in 0..1500 {
                        let got = r.pipeline(&[
                            vec!["HGET", "h", "f"],
                            vec!["HMGET", "h", "f", "g"],
                            vec!["SISMEMBER", "s", "x"],
                            vec!["SMISMEMBER", "s", "x", "y"],
                            vec!["ZSCORE", "z", "x"],
                            vec!["ZMSCORE", "z", "x", "y"],
                        ]);
                        assert_eq!(
                            got,
                            [
                                "$1\r\nv\r\n",
                                "*2\r\n$1\r\nv\r\n$1\r\nw\r\n",
                                ":1\r\n",
                                "*2\r\n:1\r\n:1\r\n",
                                "$3\r\n2.5\r\n",
                                "*2\r\n$3\r\n2.5\r\n$1\r\n1\r\n",
                            ]
                        );
                    }
                })
            })
            .collect();
        for r in readers {
            let res = r.join();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Err(e) = res {
                std::panic::resume_unwind(e);
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

/// A pipeline of collection and string reads whose replies are several
/// times the 64 KiB a batcher job is cut at (`conn.rs`): each job stops
/// between two commands and the connection submits the rest of the run
/// again, counting a collection read's key and fields as its entries. The
/// replies, in RESP2 and RESP3, are the unbatched server's, in order.
#[test]
fn large_batched_replies_are_cut_between_commands_and_resubmitted() {
    let on = Harness::start();
    let off = Harness::start_with(|c| c.batch = false);
    let big = "x".repeat(20_000);
    let setup: Vec<Vec<&str>> = vec![
        vec!["HSET", "h", "big", &big, "small", "s"],
        vec!["SADD", "s", "m"],
        vec!["ZADD", "z", "1.5", "m"],
        vec!["SET", "str", &big],
    ];
    let reads: [&[&str]; 9] = [
        &["HGET", "h", "big"],
        &["HMGET", "h", "small", "big", "nope"],
        &["SISMEMBER", "s", "m"],
        &["SMISMEMBER", "s", "m", "x"],
        &["ZSCORE", "z", "m"],
        &["ZMSCORE", "z", "m", "x"],
        &["GET", "str"],
        &["MGET", "str", "nope"],
        &["HMGET", "missing", "a", "b"],
    ];
    let cmds: Vec<&[&str]> = (0..60).map(|i| reads[(i * 7) % reads.len()]).collect();
    for proto in [2, 3] {
        let mut replies = Vec::new();
        for h in [&on, &off] {
            let mut c = Resp::connect(h.server.addr(), proto).unwrap();
            c.pipeline(&setup);
            replies.push(c.pipeline(&cmds));
        }
        let total: usize = replies[0].iter().map(String::len).sum();
        assert!(total > 5 * 64 * 1024, "{total} bytes of replies");
        for (i, cmd) in cmds.iter().enumerate() {
            assert!(
                replies[0][i] == replies[1][i],
                "RESP{proto}, command {i} `{}`: batched {:.80} vs unbatched {:.80}",
                cmd.join(" "),
                replies[0][i],
                replies[1][i]
            );
        }
    }
    let mut c = Resp::connect(on.server.addr(), 2).unwrap();
    let info = c.call(&["INFO", "batchkv"]);
    let batches: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("read_batches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    // Cut into several jobs (each of two multi_gets) per pipeline.
    assert!(batches > 2 * 2 * 4, "{info}");
}
