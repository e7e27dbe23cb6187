//! The schedules of `--runtime` (`workers.rs`), with one and several
//! threads: connections on different threads wake each other (a blocked
//! pop, WATCH), their writes combine, and shutdown waits for all of them;
//! under the adaptive schedule also while connections move between
//! threads at every chance (`churn`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv_server::{Config, Schedule};
use common::{q, wait_blocked, Harness};

fn exercise(schedule: Schedule, threads: usize) -> Harness {
    exercise_with(move |c: &mut Config| {
        c.schedule = schedule;
        c.threads = threads;
    })
}

/// Runs the checks on a server configured by `configure`; returns it
/// restarted (with connections left open on every thread before the
/// restart).
fn exercise_with(configure: impl Fn(&mut Config) + Copy) -> Harness {
    let h = Harness::start_with(configure);
    // Connections are handed to the threads in turn: with several
    // threads, consecutive ones live on different threads.
    let mut a = h.conn();
    let mut b = h.conn();

    // A pop blocked on one thread wakes on a push from another.
    let client = h.client();
    let waiter = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        q::<Option<(String, String)>>(&mut c, &["BLPOP", "list", "0"])
    });
    wait_blocked(&mut a, 1);
    assert_eq!(q::<i64>(&mut b, &["RPUSH", "list", "x"]), 1);
    assert_eq!(
        waiter.join().unwrap(),
        Some(("list".to_string(), "x".to_string()))
    );

    // WATCH sees another thread's write.
    let _: () = q(&mut a, &["WATCH", "w"]);
    let _: () = q(&mut b, &["SET", "w", "1"]);
    let _: () = q(&mut a, &["MULTI"]);
    let _: () = q(&mut a, &["SET", "w", "2"]);
    let exec: Option<Vec<String>> = q(&mut a, &["EXEC"]);
    assert_eq!(exec, None, "EXEC after a watched key changed");
    assert_eq!(q::<String>(&mut a, &["GET", "w"]), "1");

    // Pipelined writes and reads of several connections at once.
    h.on_clients(4, |w, c| {
        for round in 0..50 {
            let mut p = redis::pipe();
            for i in 0..10 {
                p.cmd("SET")
                    .arg(format!("k{w}:{round}:{i}"))
                    .arg(i)
                    .ignore();
                p.cmd("INCR").arg(format!("n{w}")).ignore();
            }
            let _: () = p.query(c).unwrap();
        }
    });
    for w in 0..4 {
        assert_eq!(q::<i64>(&mut a, &["GET", &format!("n{w}")]), 500);
        let keys: Vec<String> = (0..10).map(|i| format!("k{w}:49:{i}")).collect();
        let mut args = vec!["MGET"];
        args.extend(keys.iter().map(String::as_str));
        let values: Vec<i64> = q(&mut b, &args);
        assert_eq!(values, (0..10).collect::<Vec<i64>>());
    }

    // Shutdown with connections still open on every thread.
    let h = h.restart(configure);
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["GET", "n3"]), 500);
    drop(a);
    drop(b);
    h
}

#[test]
fn pinned_one_thread() {
    exercise(Schedule::Pinned, 1).stop();
}

#[test]
fn pinned_three_threads() {
    exercise(Schedule::Pinned, 3).stop();
}

#[test]
fn stealing_two_threads() {
    exercise(Schedule::Stealing, 2).stop();
}

#[test]
fn adaptive_two_threads() {
    exercise(Schedule::Adaptive, 2).stop();
}

/// The moves themselves: every connection moves to the next thread every
/// few requests while blocked pops, WATCH, pipelines and a shutdown with
/// open connections run (the checks of `exercise`), and a long pipeline
/// of one client keeps its order across moves. Every batched read runs on
/// another thread than its connection's (a helper): each client gets its
/// own replies, whole, also when a pipeline's replies are split into
/// several jobs.
#[test]
fn adaptive_connections_moving_at_every_chance() {
    let h = exercise_with(|c: &mut Config| {
        c.schedule = Schedule::Adaptive;
        c.threads = 3;
        c.churn = true;
    });
    let mut c = h.conn();
    for round in 0..200 {
        let _: () = q(&mut c, &["RPUSH", "order", &round.to_string()]);
        let got: i64 = q(&mut c, &["INCR", "seen"]);
        assert_eq!(got, round + 1);
    }
    let order: Vec<i64> = q(&mut c, &["LRANGE", "order", "0", "-1"]);
    assert_eq!(order, (0..200).collect::<Vec<i64>>());
    let helped_before = info_field(&mut c, "helped_reads");

    // Batched reads of four clients at once, each through helpers: GETs
    // and HMGETs, and pipelines of 20 GETs of 16 KiB values (320 KiB of
    // replies, split into jobs of at most 64 KiB).
    let big = "v".repeat(16 * 1024);
    let _: () = q(&mut c, &["HSET", "h", "f1", "1", "f2", "2"]);
    for i in 0..20 {
        let _: () = q(&mut c, &["SET", &format!("big{i}"), &format!("{i}{big}")]);
    }
    h.on_clients(4, |w, conn| {
        for round in 0..20 {
            let key = format!("r{w}:{round}");
            let _: () = q(conn, &["SET", &key, &round.to_string()]);
            assert_eq!(q::<i64>(conn, &["GET", &key]), round);
            let fields: Vec<Option<i64>> = q(conn, &["HMGET", "h", "f2", "nope", "f1"]);
            assert_eq!(fields, [Some(2), None, Some(1)]);
        }
        let mut p = redis::pipe();
        for i in 0..20 {
            p.cmd("GET").arg(format!("big{i}"));
        }
        let values: Vec<String> = p.query(conn).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(v, &format!("{i}{big}"));
        }
    });
    let helped = info_field(&mut c, "helped_reads") - helped_before;
    // 4 clients × (40 reads + a pipeline of at least 5 jobs).
    assert!(helped >= 4 * 45, "{helped} reads helped");

    let info: String = q(&mut c, &["INFO", "batchkv"]);
    let moves = info_field(&mut c, "connection_moves");
    // 400 requests of this client alone, a move every 16.
    assert!(moves >= 20, "{moves} moves");
    assert!(info.contains("runtime:adaptive"), "{info}");
    h.stop();
}

/// A counter of INFO batchkv.
fn info_field(c: &mut redis::Connection, name: &str) -> u64 {
    let info: String = q(c, &["INFO", "batchkv"]);
    let prefix = format!("{name}:");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("INFO batchkv {name}"))
        .trim()
        .parse()
        .unwrap()
}
