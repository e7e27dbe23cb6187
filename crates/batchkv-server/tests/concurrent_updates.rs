//! Read-modify-write commands from many clients lose no update.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, Harness};

#[test]
fn concurrent_incr_append_setnx_lose_nothing() {
    const CLIENTS: usize = 16;
    const ROUNDS: usize = 200;
    let h = Harness::start();
    let won = h.on_clients(CLIENTS, |t, c| {
        let mut won = 0;
        for i in 0..ROUNDS {
            let _: i64 = q(c, &["INCR", "counter"]);
            let _: i64 = q(c, &["INCRBY", "by3", "3"]);
            let _: i64 = q(c, &["APPEND", "log", "x"]);
            won += q::<i64>(c, &["SETNX", &format!("lock{i}"), &t.to_string()]);
            // Plain writes to the counter's neighbours must not
            // interfere.
            let _: () = q(c, &["SET", &format!("other{t}"), "v"]);
        }
        won
    });
    let won: i64 = won.into_iter().sum();
    let mut c = h.conn();
    let total = (CLIENTS * ROUNDS) as i64;
    assert_eq!(q::<i64>(&mut c, &["GET", "counter"]), total);
    assert_eq!(q::<i64>(&mut c, &["GET", "by3"]), 3 * total);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "log"]), total);
    assert_eq!(won, ROUNDS as i64, "exactly one SETNX wins per key");
}

#[test]
fn concurrent_msetnx_and_rename_stay_consistent() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "token", "1"]);
    // Clients pass one token around by RENAME: it must exist exactly once.
    h.on_clients(8, |t, c| {
        for i in 0..100 {
            let from = if (i + t) % 2 == 0 { "token" } else { "token2" };
            let to = if from == "token" { "token2" } else { "token" };
            let _ = redis::cmd("RENAME").arg(from).arg(to).query::<()>(c);
        }
    });
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "token", "token2"]), 1);
}

/// While other clients move a member between two sets (and two sorted
/// sets) atomically, the multi-key reads must see a state some serial
/// order produces: the member in exactly one of them.
#[test]
fn multi_key_reads_see_one_state() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "a", "x", "a1", "a2"]);
    let _: i64 = q(&mut c, &["SADD", "b", "b1", "b2"]);
    let _: i64 = q(&mut c, &["ZADD", "za", "1", "x", "2", "a1"]);
    let _: i64 = q(&mut c, &["ZADD", "zb", "3", "b1"]);
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2)
        .map(|_| {
            let (client, stop) = (h.client(), stop.clone());
            std::thread::spawn(move || {
                let mut c = client.get_connection().unwrap();
                while !stop.load(Ordering::Relaxed) {
                    for (from, to) in [("a", "b"), ("b", "a")] {
                        let _: i64 = q(&mut c, &["SMOVE", from, to, "x"]);
                    }
                    for (from, to) in [("za", "zb"), ("zb", "za")] {
                        let _: redis::Value = redis::pipe()
                            .atomic()
                            .cmd("ZREM")
                            .arg(from)
                            .arg("x")
                            .cmd("ZADD")
                            .arg(to)
                            .arg(1)
                            .arg("x")
                            .query(&mut c)
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut bad = Vec::new();
    let mut rounds = 0;
    while Instant::now() < deadline && bad.len() < 5 {
        rounds += 1;
        let union: Vec<String> = q(&mut c, &["SUNION", "a", "b"]);
        if union.len() != 5 {
            bad.push(format!("SUNION a b = {union:?}"));
        }
        let inter: Vec<String> = q(&mut c, &["SINTER", "a", "b"]);
        if !inter.is_empty() {
            bad.push(format!("SINTER a b = {inter:?}"));
        }
        let card: i64 = q(&mut c, &["SINTERCARD", "2", "a", "b"]);
        if card != 0 {
            bad.push(format!("SINTERCARD 2 a b = {card}"));
        }
        let zunion: Vec<String> = q(&mut c, &["ZUNION", "2", "za", "zb"]);
        if zunion.len() != 3 {
            bad.push(format!("ZUNION 2 za zb = {zunion:?}"));
        }
        let zinter: i64 = q(&mut c, &["ZINTERCARD", "2", "za", "zb"]);
        if zinter != 0 {
            bad.push(format!("ZINTERCARD 2 za zb = {zinter}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for m in movers {
        m.join().unwrap();
    }
    assert!(bad.is_empty(), "after {rounds} rounds: {bad:?}");
}

/// A server of 4 threads (more than this machine's cores, so that several
/// write leaders, one per thread, run at once) under each runtime.
fn four_thread_servers() -> impl Iterator<Item = (batchkv_server::Schedule, Harness)> {
    let schedules = [
        batchkv_server::Schedule::Stealing,
        batchkv_server::Schedule::Pinned,
        batchkv_server::Schedule::Adaptive,
    ];
    schedules.into_iter().map(|schedule| {
        let h = Harness::start_with(|cfg| {
            cfg.threads = 4;
            cfg.schedule = schedule;
            // Adaptive: connections move between threads all along.
            cfg.churn = true;
        });
        (schedule, h)
    })
}

/// Pipelined runs of INCR/APPEND/SET from many clients, on a server with
/// more threads than this machine has cores, so that several write leaders
/// (one per thread, `write_group.rs`) combine and write at once: no update
/// is lost or applied twice, and each client sees its own increments of a
/// shared counter in order.
#[test]
fn pipelined_updates_under_concurrent_write_leaders_lose_nothing() {
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 300;
    const PIPE: usize = 10;
    for (schedule, h) in four_thread_servers() {
        h.on_clients(CLIENTS, |t, c| {
            let mut last = 0;
            let mut own_total = [0i64; 3];
            for r in 0..ROUNDS {
                let mut p = redis::pipe();
                for i in 0..PIPE {
                    p.cmd("INCR").arg("shared");
                    p.cmd("APPEND").arg("log").arg("ab");
                    // Keys of their own, spread over many stripes.
                    p.cmd("INCRBY").arg(format!("own:{t}:{}", i % 3)).arg(2);
                    p.cmd("SET").arg(format!("set:{t}:{r}:{i}")).arg(i);
                }
                let replies: Vec<redis::Value> = p.query(c).unwrap();
                for (i, step) in replies.chunks(4).enumerate() {
                    let n: i64 = redis::from_redis_value(&step[0]).unwrap();
                    assert!(n > last, "client {t}: INCR gave {n} after {last}");
                    last = n;
                    let own: i64 = redis::from_redis_value(&step[2]).unwrap();
                    own_total[i % 3] += 2;
                    assert_eq!(own, own_total[i % 3], "client {t} own:{}", i % 3);
                    assert_eq!(step[3], redis::Value::Okay);
                }
            }
        });
        let mut c = h.conn();
        let total = (CLIENTS * ROUNDS * PIPE) as i64;
        assert_eq!(q::<i64>(&mut c, &["GET", "shared"]), total, "{schedule:?}");
        assert_eq!(q::<i64>(&mut c, &["STRLEN", "log"]), 2 * total);
        assert_eq!(
            q::<i64>(&mut c, &["DBSIZE"]),
            2 + 3 * CLIENTS as i64 + total
        );
    }
}

/// Pipelined runs of collection writes from many clients, combined across
/// connections into shared engine writes (`write_group.rs`'s command
/// combiner) by several leaders at once: no update is lost or applied
/// twice, each client's pushes keep their order in a shared list, and a
/// client sees its own increments of a shared field in order.
#[test]
fn pipelined_collection_writes_of_many_clients_lose_nothing() {
    const CLIENTS: usize = 12;
    const ROUNDS: usize = 150;
    const PIPE: usize = 8;
    for (schedule, h) in four_thread_servers() {
        h.on_clients(CLIENTS, |t, c| {
            let mut last = 0;
            for r in 0..ROUNDS {
                let mut p = redis::pipe();
                for i in 0..PIPE {
                    let n = r * PIPE + i;
                    p.cmd("HINCRBY").arg("h").arg("shared").arg(1);
                    p.cmd("HSET").arg("h").arg(format!("f:{t}:{n}")).arg(n);
                    p.cmd("RPUSH").arg("l").arg(format!("{t}:{n}"));
                    p.cmd("SADD")
                        .arg(format!("s:{}", n % 5))
                        .arg(format!("{t}:{n}"));
                    p.cmd("ZINCRBY").arg("z").arg(1).arg(format!("m:{t}"));
                }
                let replies: Vec<redis::Value> = p.query(c).unwrap();
                for (i, step) in replies.chunks(5).enumerate() {
                    let n: i64 = redis::from_redis_value(&step[0]).unwrap();
                    assert!(n > last, "client {t}: HINCRBY gave {n} after {last}");
                    last = n;
                    assert_eq!(step[1], redis::Value::Int(1), "a new field");
                    assert_eq!(step[3], redis::Value::Int(1), "a new member");
                    let score: f64 = redis::from_redis_value(&step[4]).unwrap();
                    assert_eq!(score, (r * PIPE + i + 1) as f64, "client {t}'s own member");
                }
            }
        });
        let mut c = h.conn();
        let total = CLIENTS * ROUNDS * PIPE;
        let shared: i64 = q(&mut c, &["HGET", "h", "shared"]);
        assert_eq!(shared, total as i64, "{schedule:?}");
        assert_eq!(q::<usize>(&mut c, &["HLEN", "h"]), total + 1);
        let list: Vec<String> = q(&mut c, &["LRANGE", "l", "0", "-1"]);
        assert_eq!(list.len(), total);
        for t in 0..CLIENTS {
            let own: Vec<usize> = list
                .iter()
                .filter_map(|e| e.strip_prefix(&format!("{t}:")))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(
                own,
                (0..ROUNDS * PIPE).collect::<Vec<_>>(),
                "client {t}'s pushes in order"
            );
        }
        let members: usize = (0..5)
            .map(|k| q::<usize>(&mut c, &["SCARD", &format!("s:{k}")]))
            .sum();
        assert_eq!(members, total);
        assert_eq!(q::<usize>(&mut c, &["ZCARD", "z"]), CLIENTS);
    }
}
