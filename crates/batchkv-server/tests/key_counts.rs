//! DBSIZE and INFO keyspace come from counts every write keeps
//! (`keycount.rs`), not from a scan: after random writes of every type,
//! from several clients at once, across databases, in transactions, over
//! restarts and active expiry, they must equal what a walk of the keyspace
//! finds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::time::{Duration, Instant};

use common::{q, Harness};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DBS: usize = 3;

/// One random write command over a small key space (keys k0..k29 of every
/// type, with long expiries only: nothing expires during the test).
fn random_command(rng: &mut StdRng) -> Vec<String> {
    let k = |rng: &mut StdRng| format!("k{}", rng.random_range(0..30));
    let v = |rng: &mut StdRng| format!("v{}", rng.random_range(0..4));
    let words: Vec<String> = match rng.random_range(0..30) {
        0 => vec!["SET".into(), k(rng), v(rng)],
        1 => vec!["SET".into(), k(rng), v(rng), "EX".into(), "1000".into()],
        2 => vec!["SET".into(), k(rng), v(rng), "NX".into()],
        3 => vec!["DEL".into(), k(rng), k(rng), k(rng)],
        4 => vec!["MSET".into(), k(rng), v(rng), k(rng), v(rng)],
        5 => vec!["MSETNX".into(), k(rng), v(rng), k(rng), v(rng)],
        6 => vec!["GETDEL".into(), k(rng)],
        7 => vec!["HSET".into(), k(rng), v(rng), v(rng)],
        8 => vec!["HDEL".into(), k(rng), v(rng), v(rng)],
        9 => vec!["SADD".into(), k(rng), v(rng), v(rng)],
        10 => vec!["SREM".into(), k(rng), v(rng), v(rng)],
        11 => vec!["SPOP".into(), k(rng)],
        12 => vec!["ZADD".into(), k(rng), "1".into(), v(rng)],
        13 => vec!["ZREM".into(), k(rng), v(rng)],
        14 => vec!["ZPOPMIN".into(), k(rng), "2".into()],
        15 => vec!["LPUSH".into(), k(rng), v(rng)],
        16 => vec!["RPOP".into(), k(rng), "2".into()],
        17 => vec![
            "LMOVE".into(),
            k(rng),
            k(rng),
            "LEFT".into(),
            "RIGHT".into(),
        ],
        18 => vec!["RENAME".into(), k(rng), k(rng)],
        19 => vec!["COPY".into(), k(rng), k(rng), "REPLACE".into()],
        20 => vec!["MOVE".into(), k(rng), rng.random_range(0..DBS).to_string()],
        21 => vec!["EXPIRE".into(), k(rng), "1000".into()],
        22 => vec!["PERSIST".into(), k(rng)],
        23 => vec!["SINTERSTORE".into(), k(rng), k(rng), k(rng)],
        24 => vec!["ZUNIONSTORE".into(), k(rng), "2".into(), k(rng), k(rng)],
        25 => vec!["INCR".into(), format!("n{}", rng.random_range(0..5))],
        26 => vec!["APPEND".into(), k(rng), v(rng)],
        27 => vec!["SMOVE".into(), k(rng), k(rng), v(rng)],
        28 => vec!["LTRIM".into(), k(rng), "1".into(), "0".into()],
        _ => vec!["GETEX".into(), k(rng), "EX".into(), "500".into()],
    };
    words
}

/// Keys and keys with an expiry in the current database, by walking it.
fn walked(c: &mut redis::Connection) -> (i64, i64) {
    let keys: Vec<String> = q(c, &["KEYS", "*"]);
    let mut with_ttl = 0;
    for k in &keys {
        if q::<i64>(c, &["TTL", k]) >= 0 {
            with_ttl += 1;
        }
    }
    (keys.len() as i64, with_ttl)
}

/// `db<n>:keys=…,expires=…` of INFO keyspace, (0, 0) if absent.
fn info_counts(c: &mut redis::Connection, db: usize) -> (i64, i64) {
    let info: String = q(c, &["INFO", "keyspace"]);
    let prefix = format!("db{db}:");
    let Some(line) = info.lines().find(|l| l.starts_with(&prefix)) else {
        return (0, 0);
    };
    let field = |name: &str| -> i64 {
        line[prefix.len()..]
            .split(',')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    (field("keys"), field("expires"))
}

/// Checks every database's DBSIZE and INFO keyspace against a walk.
fn check_counts(c: &mut redis::Connection, when: &str) {
    for db in 0..DBS {
        let _: () = q(c, &["SELECT", &db.to_string()]);
        let (keys, expires) = walked(c);
        assert_eq!(q::<i64>(c, &["DBSIZE"]), keys, "db {db} {when}");
        assert_eq!(info_counts(c, db), (keys, expires), "db {db} {when}");
    }
    let _: () = q(c, &["SELECT", "0"]);
}

/// Runs `n` random writes on a fresh connection, each in a random database,
/// some of them grouped in MULTI/EXEC; errors (WRONGTYPE, no such key) are
/// expected and ignored.
fn random_writes(h: &Harness, seed: u64, n: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut c = h.conn();
    for _ in 0..n {
        let _: () = q(&mut c, &["SELECT", &rng.random_range(0..DBS).to_string()]);
        let in_tx = rng.random_range(0..8) == 0;
        if in_tx {
            let _: () = q(&mut c, &["MULTI"]);
        }
        for _ in 0..if in_tx { 3 } else { 1 } {
            let words = random_command(&mut rng);
            let _: redis::RedisResult<redis::Value> =
                redis::cmd(&words[0]).arg(&words[1..]).query(&mut c);
        }
        if in_tx {
            let _: redis::RedisResult<redis::Value> = redis::cmd("EXEC").query(&mut c);
        }
    }
}

#[test]
fn counts_follow_random_writes_of_every_type_from_concurrent_clients() {
    let h = Harness::start();
    for round in 0..4u64 {
        std::thread::scope(|s| {
            for t in 0..3 {
                let h = &h;
                s.spawn(move || random_writes(h, round * 10 + t, 400));
            }
        });
        check_counts(&mut h.conn(), &format!("after round {round}"));
    }
    let mut c = h.conn();
    // Whole-database changes.
    let _: () = q(&mut c, &["SWAPDB", "0", "1"]);
    check_counts(&mut c, "after SWAPDB");
    let _: () = q(&mut c, &["SELECT", "2"]);
    let _: () = q(&mut c, &["FLUSHDB"]);
    check_counts(&mut c, "after FLUSHDB");
    let h = h.restart(|_| {});
    check_counts(&mut h.conn(), "after restart");
    random_writes(&h, 99, 300);
    check_counts(&mut h.conn(), "after writes since restart");
    let _: () = q(&mut h.conn(), &["FLUSHALL"]);
    check_counts(&mut h.conn(), "after FLUSHALL");
    assert_eq!(q::<i64>(&mut h.conn(), &["DBSIZE"]), 0);
}

#[test]
fn dbsize_inside_exec_sees_the_transactions_own_writes() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["MSET", "a", "1", "b", "2"]);
    let _: () = q(&mut c, &["MULTI"]);
    for cmd in [
        &["SET", "c", "3"][..],
        &["DEL", "a"],
        &["HSET", "h", "f", "v"],
        &["DBSIZE"],
    ] {
        let _: () = q(&mut c, cmd);
    }
    let (_, _, _, n): (String, i64, i64, i64) = q(&mut c, &["EXEC"]);
    assert_eq!(n, 3, "b, c, h");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 3);
}

#[test]
fn active_expiry_takes_keys_out_of_the_counts() {
    let h = Harness::start();
    let mut c = h.conn();
    for i in 0..50 {
        let _: () = q(&mut c, &["SET", &format!("s{i}"), "v", "EX", "1000"]);
        let _: () = q(&mut c, &["SADD", &format!("t{i}"), "m"]);
        let _: () = q(&mut c, &["EXPIRE", &format!("t{i}"), "1000"]);
    }
    let _: () = q(&mut c, &["SET", "stays", "v"]);
    assert_eq!(info_counts(&mut c, 0), (101, 100));
    for i in 0..50 {
        let _: () = q(&mut c, &["PEXPIRE", &format!("s{i}"), "1"]);
        let _: () = q(&mut c, &["PEXPIRE", &format!("t{i}"), "1"]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while q::<i64>(&mut c, &["DBSIZE"]) != 1 {
        assert!(Instant::now() < deadline, "expired keys never left DBSIZE");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(info_counts(&mut c, 0), (1, 0));
}
