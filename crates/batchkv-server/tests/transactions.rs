//! MULTI/EXEC/DISCARD/WATCH/UNWATCH: Redis 7's replies (byte for byte
//! where they matter), read-your-writes inside EXEC, isolation from other
//! clients, WATCH's aborts, and all-or-nothing after a power loss.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{q, query_err, Harness, Raw};
use redis::Value;

/// A command as RESP2 bytes.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Sends each command and checks the bytes of its reply.
fn expect_all(raw: &mut Raw, steps: &[(&[&str], &str)]) {
    for (args, reply) in steps {
        raw.expect(&resp(args), reply.as_bytes());
    }
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// Runs one EXEC and returns its reply.
fn exec(c: &mut redis::Connection) -> Value {
    q::<Value>(c, &["EXEC"])
}

#[test]
fn commands_are_queued_and_exec_answers_their_replies() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut other = h.conn();
    let mut raw = h.raw();
    expect_all(
        &mut raw,
        &[
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "a", "1"], "+QUEUED\r\n"),
            (&["INCR", "a"], "+QUEUED\r\n"),
            (&["GET", "a"], "+QUEUED\r\n"),
            (&["MGET", "a", "nope"], "+QUEUED\r\n"),
        ],
    );
    // Queued, not run: nobody sees it yet.
    assert_eq!(q::<Option<String>>(&mut other, &["GET", "a"]), None);
    expect_all(
        &mut raw,
        &[
            (
                &["EXEC"],
                "*4\r\n+OK\r\n:2\r\n$1\r\n2\r\n*2\r\n$1\r\n2\r\n$-1\r\n",
            ),
            // An empty transaction answers an empty array.
            (&["MULTI"], "+OK\r\n"),
            (&["EXEC"], "*0\r\n"),
        ],
    );
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "2");
    // A pipelined GET after EXEC sees the transaction's writes.
    let mut p = redis::pipe();
    p.cmd("MULTI").ignore();
    p.cmd("SET").arg("p").arg("x").ignore();
    p.cmd("EXEC").ignore();
    p.cmd("GET").arg("p");
    p.cmd("MGET").arg("p").arg("a");
    let got: (String, Vec<String>) = p.query(&mut c).unwrap();
    assert_eq!(got, ("x".into(), vec!["x".into(), "2".into()]));
}

#[test]
fn queuing_errors_make_exec_abort_and_misuse_answers_as_redis() {
    let h = Harness::start();
    let mut raw = h.raw();
    let execabort = "-EXECABORT Transaction discarded because of previous errors.\r\n";
    expect_all(
        &mut raw,
        &[
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["DISCARD"], "-ERR DISCARD without MULTI\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "k", "1"], "+QUEUED\r\n"),
            (
                &["FOO", "x"],
                "-ERR unknown command 'FOO', with args beginning with: 'x' \r\n",
            ),
            (&["EXEC"], execabort),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["GET", "k"], "$-1\r\n"),
            // Wrong arity aborts too.
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "k", "1"], "+QUEUED\r\n"),
            (
                &["GET"],
                "-ERR wrong number of arguments for 'get' command\r\n",
            ),
            (&["EXEC"], execabort),
            // Nested MULTI and WATCH inside MULTI are refused but do not
            // abort.
            (&["MULTI"], "+OK\r\n"),
            (&["MULTI"], "-ERR MULTI calls can not be nested\r\n"),
            (&["WATCH", "k"], "-ERR WATCH inside MULTI is not allowed\r\n"),
            (&["SET", "k", "2"], "+QUEUED\r\n"),
            (&["EXEC"], "*1\r\n+OK\r\n"),
            // Their own arity errors abort, EXEC's says why.
            (&["MULTI"], "+OK\r\n"),
            (
                &["MULTI", "x"],
                "-ERR wrong number of arguments for 'multi' command\r\n",
            ),
            (&["EXEC"], execabort),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "k", "3"], "+QUEUED\r\n"),
            (
                &["EXEC", "x"],
                "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n",
            ),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            // SHUTDOWN is not allowed in a transaction (and aborts it).
            (&["MULTI"], "+OK\r\n"),
            (
                &["SHUTDOWN"],
                "-ERR Command not allowed inside a transaction\r\n",
            ),
            (&["EXEC"], execabort),
            (&["GET", "k"], "$1\r\n2\r\n"),
            // DISCARD drops the queue.
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "k", "4"], "+QUEUED\r\n"),
            (&["DISCARD"], "+OK\r\n"),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["GET", "k"], "$1\r\n2\r\n"),
        ],
    );
}

#[test]
fn runtime_errors_are_elements_and_the_other_commands_apply() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut raw = h.raw();
    q::<()>(&mut c, &["SET", "s", "text"]);
    expect_all(
        &mut raw,
        &[
            (&["MULTI"], "+OK\r\n"),
            (&["INCR", "s"], "+QUEUED\r\n"),
            (&["SET", "b", "1"], "+QUEUED\r\n"),
            (&["HSET", "b", "f", "v"], "+QUEUED\r\n"),
            (&["INCR", "b"], "+QUEUED\r\n"),
            (
                &["EXEC"],
                "*4\r\n-ERR value is not an integer or out of range\r\n+OK\r\n\
                 -WRONGTYPE Operation against a key holding the wrong kind of value\r\n:2\r\n",
            ),
        ],
    );
    assert_eq!(q::<String>(&mut c, &["GET", "s"]), "text");
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "2");
}

#[test]
fn commands_inside_exec_read_the_writes_before_them() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["SET", "gone", "1"]);
    // A hash large enough that deleting it is a range deletion.
    let mut big = vec!["HSET", "big"];
    let fields: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    for f in &fields {
        big.push(f);
        big.push("v");
    }
    q::<i64>(&mut c, &big);
    q::<()>(&mut c, &["MULTI"]);
    for cmd in [
        &["SET", "n", "10"][..],
        &["INCR", "n"],
        &["INCRBY", "n", "5"],
        &["GET", "n"],
        &["HSET", "h", "a", "1", "b", "2"],
        &["HINCRBY", "h", "a", "10"],
        &["HGETALL", "h"],
        &["DEL", "gone"],
        &["EXISTS", "gone", "n", "h"],
        &["DEL", "big"],
        &["HLEN", "big"],
        &["HSET", "big", "new", "1"],
        &["HGETALL", "big"],
        &["RENAME", "h", "h2"],
        &["HGET", "h2", "b"],
        &["TYPE", "h"],
        &["KEYS", "*"],
        &["DBSIZE"],
    ] {
        assert_eq!(q::<String>(&mut c, cmd), "QUEUED", "{cmd:?}");
    }
    let Value::Array(r) = exec(&mut c) else {
        panic!("EXEC did not answer an array");
    };
    let expected = [
        Value::Okay,
        Value::Int(11),
        Value::Int(16),
        bulk("16"),
        Value::Int(2),
        Value::Int(11),
        Value::Array(vec![bulk("a"), bulk("11"), bulk("b"), bulk("2")]),
        Value::Int(1),
        Value::Int(2),
        Value::Int(1),
        Value::Int(0),
        Value::Int(1),
        Value::Array(vec![bulk("new"), bulk("1")]),
        Value::Okay,
        bulk("2"),
        Value::SimpleString("none".into()),
        Value::Array(vec![bulk("big"), bulk("h2"), bulk("n")]),
        Value::Int(3),
    ];
    assert_eq!(r.len(), expected.len());
    for (i, (got, want)) in r.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "reply {i}");
    }
    assert_eq!(q::<i64>(&mut c, &["HLEN", "big"]), 1);
    assert_eq!(
        q::<HashMap<String, String>>(&mut c, &["HGETALL", "h2"]),
        HashMap::from([("a".into(), "11".into()), ("b".into(), "2".into())])
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "gone", "h"]), 0);
}

#[test]
fn flushdb_inside_exec_hides_what_it_deleted_and_keeps_what_follows() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    q::<i64>(&mut c, &["HSET", "h", "f", "v"]);
    q::<()>(&mut c, &["SET", "t", "1", "EX", "100"]);
    q::<()>(&mut c, &["MULTI"]);
    for cmd in [
        &["FLUSHDB"][..],
        &["MGET", "a", "b"],
        &["HGETALL", "h"],
        &["SET", "c", "3"],
        &["KEYS", "*"],
        &["SELECT", "1"],
        &["SET", "other", "db1"],
        &["SELECT", "0"],
    ] {
        assert_eq!(q::<String>(&mut c, cmd), "QUEUED", "{cmd:?}");
    }
    let Value::Array(r) = exec(&mut c) else {
        panic!("EXEC did not answer an array");
    };
    assert_eq!(r[1], Value::Array(vec![Value::Nil, Value::Nil]));
    assert_eq!(r[2], Value::Array(vec![]));
    assert_eq!(r[4], Value::Array(vec![bulk("c")]));
    assert_eq!(q::<Vec<String>>(&mut c, &["KEYS", "*"]), ["c"]);
    q::<()>(&mut c, &["SELECT", "1"]);
    assert_eq!(q::<String>(&mut c, &["GET", "other"]), "db1");
}

#[test]
fn a_command_writing_a_key_it_does_not_name_runs_once_and_isolated() {
    // COPY ... DB writes a key of another database, which the command
    // table's key positions do not name: EXEC reruns the transaction with
    // every stripe held; what the first attempt did must not count.
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["SET", "a", "v"]);
    q::<()>(&mut c, &["MULTI"]);
    for cmd in [
        &["INCR", "n"][..],
        &["COPY", "a", "b", "DB", "3"],
        &["INCR", "n"],
        &["CLIENT", "SETNAME", "x"],
        &["COPY", "a", "c", "DB", "3"],
    ] {
        assert_eq!(q::<String>(&mut c, cmd), "QUEUED", "{cmd:?}");
    }
    assert_eq!(
        exec(&mut c),
        Value::Array(vec![
            Value::Int(1),
            Value::Int(1),
            Value::Int(2),
            Value::Okay,
            Value::Int(1)
        ])
    );
    assert_eq!(q::<i64>(&mut c, &["GET", "n"]), 2);
    assert_eq!(q::<String>(&mut c, &["CLIENT", "GETNAME"]), "x");
    q::<()>(&mut c, &["SELECT", "3"]);
    assert_eq!(q::<Vec<String>>(&mut c, &["MGET", "b", "c"]), ["v", "v"]);
}

#[test]
fn no_reader_ever_sees_half_a_transaction() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["MSET", "a", "0", "b", "0"]);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let client = h.client();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut r = client.get_connection().unwrap();
                let mut reads = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let (a, b): (i64, i64) =
                        redis::cmd("MGET").arg("a").arg("b").query(&mut r).unwrap();
                    assert_eq!(a, b, "a reader saw half a transaction");
                    // A transaction's reads are isolated too.
                    let v: Vec<i64> = redis::pipe()
                        .atomic()
                        .cmd("GET")
                        .arg("b")
                        .cmd("GET")
                        .arg("a")
                        .query(&mut r)
                        .unwrap();
                    assert_eq!(v[0], v[1], "a transaction read half of another");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    h.on_clients(2, |_, w| {
        for _ in 0..400 {
            // Other writes between the two widen the window a
            // non-atomic EXEC would expose.
            let mut p = redis::pipe();
            p.atomic().cmd("INCR").arg("a");
            for i in 0..20 {
                p.cmd("SET").arg(format!("pad{i}")).arg(i).ignore();
            }
            let (x, y): (i64, i64) = p.cmd("INCR").arg("b").query(w).unwrap();
            assert_eq!(x, y);
        }
    });
    done.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(q::<Vec<i64>>(&mut c, &["MGET", "a", "b"]), [800, 800]);
}

#[test]
fn watch_makes_concurrent_check_and_set_lose_no_update() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["SET", "counter", "0"]);
    let aborted = h.on_clients(4, |_, w| check_and_set_increments(w, 100));
    let aborted: i32 = aborted.into_iter().sum();
    assert_eq!(q::<i64>(&mut c, &["GET", "counter"]), 400);
    eprintln!("{aborted} aborted attempts");
}

/// Writers that never WATCH note nothing while no client watches
/// (`tx.rs`): a check-and-set client that WATCHes between their writes
/// must still see every write made after its WATCH, or its SET would undo
/// an INCR. Single and pipelined INCRs (the latter in combined runs). The
/// narrow race of a WATCH between a write's note and its engine write is
/// forced in `shared.rs`'s unit test.
#[test]
fn watch_sees_writes_of_clients_that_never_watch() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["SET", "counter", "0"]);
    let (cas, incrs): (i64, i64) = (150, 300);
    let aborted = h.on_clients(3, |i, w| {
        if i > 0 {
            for n in 0..incrs / 10 {
                if (n as usize + i).is_multiple_of(2) {
                    let mut p = redis::pipe();
                    for _ in 0..10 {
                        p.cmd("INCR").arg("counter").ignore();
                    }
                    p.query::<()>(w).unwrap();
                } else {
                    for _ in 0..10 {
                        q::<i64>(w, &["INCR", "counter"]);
                    }
                }
            }
            return 0;
        }
        check_and_set_increments(w, cas)
    });
    assert_eq!(
        q::<i64>(&mut c, &["GET", "counter"]),
        cas + 2 * incrs,
        "an update was lost"
    );
    eprintln!("{} aborted attempts", aborted[0]);
}

/// Increments `counter` `times` times on `w` by check-and-set (WATCH,
/// GET, MULTI, SET, EXEC, again while EXEC aborts); the aborted attempts.
fn check_and_set_increments(w: &mut redis::Connection, times: i64) -> i32 {
    let mut aborted = 0;
    for _ in 0..times {
        loop {
            q::<()>(w, &["WATCH", "counter"]);
            let v: i64 = q(w, &["GET", "counter"]);
            q::<()>(w, &["MULTI"]);
            q::<String>(w, &["SET", "counter", &(v + 1).to_string()]);
            match exec(w) {
                Value::Nil => aborted += 1,
                Value::Array(r) => {
                    assert_eq!(r, [Value::Okay]);
                    break;
                }
                other => panic!("EXEC answered {other:?}"),
            }
        }
    }
    aborted
}

/// WATCHes `key` on `c`, lets `change` run, then runs a transaction that
/// sets `key` to "tx". Returns whether EXEC ran it.
fn watched_exec_runs(
    c: &mut redis::Connection,
    key: &str,
    change: impl FnOnce(&mut redis::Connection),
) -> bool {
    q::<()>(c, &["WATCH", key]);
    change(c);
    q::<()>(c, &["MULTI"]);
    q::<String>(c, &["SET", key, "tx"]);
    match exec(c) {
        Value::Nil => false,
        Value::Array(r) => {
            assert_eq!(r, [Value::Okay]);
            true
        }
        other => panic!("EXEC answered {other:?}"),
    }
}

#[test]
fn watch_aborts_when_the_key_changes_and_only_then() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut o = h.conn();
    let set = |o: &mut redis::Connection, k: &str| q::<()>(o, &["SET", k, "1"]);
    set(&mut o, "k");
    // Aborts: another client writes, the same client writes, DEL, RENAME
    // onto it, EXPIRE, HSET after DEL.
    assert!(!watched_exec_runs(&mut c, "k", |_| set(&mut o, "k")));
    assert_eq!(q::<String>(&mut o, &["GET", "k"]), "1", "not applied");
    assert!(!watched_exec_runs(&mut c, "k", |c| set(c, "k")));
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        q::<i64>(&mut o, &["DEL", "k"]);
    }));
    set(&mut o, "j");
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        q::<()>(&mut o, &["RENAME", "j", "k"]);
    }));
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        q::<i64>(&mut o, &["EXPIRE", "k", "100"]);
    }));
    assert!(!watched_exec_runs(&mut c, "h", |_| {
        q::<i64>(&mut o, &["HSET", "h", "f", "v"]);
    }));
    // A transaction of another client that writes it.
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        let _: Vec<Value> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("k")
            .arg("2")
            .query(&mut o)
            .unwrap();
    }));
    // Runs: reads, writes of other keys, of the same name in another
    // database, writes that change nothing (DEL of a missing key, SETNX
    // of an existing one).
    assert!(watched_exec_runs(&mut c, "k", |_| {
        q::<String>(&mut o, &["GET", "k"]);
        set(&mut o, "other");
        q::<()>(&mut o, &["SELECT", "1"]);
        set(&mut o, "k");
        q::<()>(&mut o, &["SELECT", "0"]);
        q::<i64>(&mut o, &["SETNX", "k", "x"]);
        q::<i64>(&mut o, &["DEL", "missing"]);
    }));
    assert_eq!(q::<String>(&mut o, &["GET", "k"]), "tx");
    assert!(watched_exec_runs(&mut c, "missing", |_| {
        q::<i64>(&mut o, &["DEL", "missing"]);
    }));
    // EXEC, DISCARD and UNWATCH forget the watched keys.
    assert!(watched_exec_runs(&mut c, "k", |_| {}));
    set(&mut o, "k");
    assert!(watched_exec_runs(&mut c, "other", |c| {
        q::<()>(c, &["UNWATCH"]);
        set(c, "other");
    }));
    q::<()>(&mut c, &["WATCH", "k"]);
    q::<()>(&mut c, &["MULTI"]);
    q::<()>(&mut c, &["DISCARD"]);
    set(&mut o, "k");
    q::<()>(&mut c, &["MULTI"]);
    assert_eq!(exec(&mut c), Value::Array(vec![]));
}

/// SETBIT writes (and signals) only when it changes something, as Redis
/// 7.0.15 answers: setting a bit to the value it holds leaves a WATCH
/// intact; changing it, or creating the key with a 0 bit, breaks it.
#[test]
fn setbit_breaks_watch_only_when_it_changes_the_string() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut o = h.conn();
    let setbit = |o: &mut redis::Connection, k: &str, bit: &str, v: &str| {
        q::<i64>(o, &["SETBIT", k, bit, v])
    };
    // "tx" is 0x74 0x78: bit 1 is 1, bit 0 is 0.
    q::<()>(&mut o, &["SET", "k", "tx"]);
    assert!(watched_exec_runs(&mut c, "k", |_| {
        assert_eq!(setbit(&mut o, "k", "1", "1"), 1);
        assert_eq!(setbit(&mut o, "k", "0", "0"), 0);
    }));
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        assert_eq!(setbit(&mut o, "k", "0", "1"), 0);
    }));
    // Past the end: the string grows, even with a 0 bit.
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        assert_eq!(setbit(&mut o, "k", "100", "0"), 0);
        assert_eq!(q::<i64>(&mut o, &["STRLEN", "k"]), 13);
    }));
    assert!(!watched_exec_runs(&mut c, "new", |_| {
        assert_eq!(setbit(&mut o, "new", "3", "0"), 0);
    }));
    assert_eq!(
        q::<i64>(&mut o, &["STRLEN", "new"]),
        1,
        "created, not set by the aborted EXEC"
    );
}

#[test]
fn watch_aborts_when_a_live_key_expires() {
    let h = Harness::start();
    let mut c = h.conn();
    q::<()>(&mut c, &["SET", "k", "v"]);
    q::<i64>(&mut c, &["PEXPIRE", "k", "150"]);
    // Live at WATCH, expired at EXEC.
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        std::thread::sleep(Duration::from_millis(300))
    }));
    // Already expired at WATCH: its expiry is no change.
    q::<()>(&mut c, &["SET", "e", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(watched_exec_runs(&mut c, "e", |_| {
        std::thread::sleep(Duration::from_millis(250))
    }));
    // Expiry set to the past by another client right after WATCH.
    q::<()>(&mut c, &["SET", "p", "v"]);
    let mut o = h.conn();
    assert!(!watched_exec_runs(&mut c, "p", |_| {
        q::<i64>(&mut o, &["PEXPIRE", "p", "1"]);
        std::thread::sleep(Duration::from_millis(5));
    }));
}

#[test]
fn watch_aborts_on_flush_of_its_database_when_the_key_existed() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut o = h.conn();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        q::<()>(&mut o, &["FLUSHDB"]);
    }));
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert!(!watched_exec_runs(&mut c, "k", |_| {
        q::<()>(&mut o, &["FLUSHALL"]);
    }));
    // As in Redis 7: a missing key is not changed by a flush, nor is a key
    // of another database.
    assert!(watched_exec_runs(&mut c, "missing", |_| {
        q::<()>(&mut o, &["FLUSHDB"]);
    }));
    q::<()>(&mut o, &["SELECT", "4"]);
    assert!(watched_exec_runs(&mut c, "k", |_| {
        q::<()>(&mut o, &["FLUSHDB"]);
    }));
}

#[test]
fn aborted_exec_is_a_null_array_in_resp2_and_resp3() {
    let h = Harness::start();
    let mut o = h.conn();
    for (hello, null) in [("2", "*-1\r\n"), ("3", "_\r\n")] {
        let mut raw = h.raw();
        raw.send(&resp(&["HELLO", hello]));
        raw.read_until(b"modules\r\n*0\r\n");
        expect_all(&mut raw, &[(&["WATCH", "w"], "+OK\r\n")]);
        q::<()>(&mut o, &["SET", "w", hello]);
        expect_all(
            &mut raw,
            &[
                (&["MULTI"], "+OK\r\n"),
                (&["SET", "w", "mine"], "+QUEUED\r\n"),
                (&["EXEC"], null),
                (&["GET", "w"], &format!("$1\r\n{hello}\r\n")),
            ],
        );
    }
}

#[test]
fn quit_and_reset_end_the_transaction() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut raw = h.raw();
    expect_all(
        &mut raw,
        &[
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "q", "1"], "+QUEUED\r\n"),
            (&["QUIT"], "+OK\r\n"),
        ],
    );
    assert!(raw.closed());
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "q"]), None);
    let mut raw = h.raw();
    q::<()>(&mut c, &["SET", "w", "1"]);
    expect_all(
        &mut raw,
        &[
            (&["CLIENT", "SETNAME", "me"], "+OK\r\n"),
            (&["SELECT", "2"], "+OK\r\n"),
            (&["WATCH", "w"], "+OK\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "q", "1"], "+QUEUED\r\n"),
            (&["RESET"], "+RESET\r\n"),
            (&["EXEC"], "-ERR EXEC without MULTI\r\n"),
            (&["CLIENT", "GETNAME"], "$-1\r\n"),
            (&["GET", "w"], "$1\r\n1\r\n"),
        ],
    );
    assert_eq!(
        query_err(&mut c, &["RESET", "x"]),
        "ERR wrong number of arguments for 'reset' command"
    );
}

#[test]
fn exec_needs_authentication_and_says_so() {
    let h = Harness::start_with(|c| c.requirepass = Some("pw".into()));
    let mut raw = h.raw();
    expect_all(
        &mut raw,
        &[
            (
                &["EXEC"],
                "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n",
            ),
            (&["MULTI"], "-NOAUTH Authentication required.\r\n"),
            (&["RESET"], "+RESET\r\n"),
            (&["AUTH", "pw"], "+OK\r\n"),
            (&["MULTI"], "+OK\r\n"),
            (&["SET", "a", "1"], "+QUEUED\r\n"),
            (&["RESET"], "+RESET\r\n"),
            (&["GET", "a"], "-NOAUTH Authentication required.\r\n"),
        ],
    );
}

mod crash {
    //! After a power loss every transaction is all or nothing, and with
    //! `--appendfsync always` every acknowledged one is there whole.

    use super::*;
    use batchkv::{FaultInjectionFs, PosixFs};
    use batchkv_server::{AppendFsync, Config, Server};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const SMALL_BUFFERS: &str =
        "write_buffer_size=65536;max_bytes_for_level_base=262144;target_file_size_base=65536";

    /// One transaction a client sent: its id, how many writes, whether
    /// EXEC was acknowledged.
    struct Sent {
        id: String,
        strings: usize,
        fields: usize,
        acked: bool,
    }

    /// Runs transactions of 2–20 writes (strings `s:{id}:{j}` and fields
    /// of hash `h:{id}`) until an error (the power was cut) or `stop`.
    fn client(port: u16, client: usize, cycle: usize, seed: u64, stop: &AtomicBool) -> Vec<Sent> {
        let mut rng = StdRng::seed_from_u64(seed ^ (client as u64) << 32 ^ cycle as u64);
        let url = format!("redis://127.0.0.1:{port}/");
        let mut c = redis::Client::open(url)
            .unwrap()
            .get_connection_with_timeout(Duration::from_secs(5))
            .unwrap();
        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
        let mut sent = Vec::new();
        for n in 0.. {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let id = format!("{cycle}.{client}.{n}");
            let writes = rng.random_range(2..=20);
            let fields = rng.random_range(0..=writes);
            let strings = writes - fields;
            let mut p = redis::pipe();
            p.atomic();
            for j in 0..strings {
                p.cmd("SET").arg(format!("s:{id}:{j}")).arg(&id).ignore();
            }
            for j in 0..fields {
                p.cmd("HSET")
                    .arg(format!("h:{id}"))
                    .arg(format!("f{j}"))
                    .arg(&id)
                    .ignore();
            }
            sent.push(Sent {
                id,
                strings,
                fields,
                acked: false,
            });
            match p.query::<()>(&mut c) {
                Ok(()) => sent.last_mut().unwrap().acked = true,
                Err(_) => break,
            }
        }
        sent
    }

    /// Checks every transaction sent; returns how many survived.
    fn verify(port: u16, sent: &[Sent], must_have_acked: bool, ctx: &str) -> usize {
        let url = format!("redis://127.0.0.1:{port}/");
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let mut whole = 0;
        for s in sent {
            let mut present = 0;
            if s.strings > 0 {
                let keys: Vec<String> = (0..s.strings).map(|j| format!("s:{}:{j}", s.id)).collect();
                let vals: Vec<Option<String>> =
                    redis::cmd("MGET").arg(&keys).query(&mut c).unwrap();
                for v in vals.into_iter().flatten() {
                    assert_eq!(v, s.id, "{ctx}");
                    present += 1;
                }
            }
            let hlen: usize = q(&mut c, &["HLEN", &format!("h:{}", s.id)]);
            present += hlen;
            let n = s.strings + s.fields;
            assert!(
                present == 0 || present == n,
                "{ctx}: transaction {} has {present} of its {n} writes",
                s.id
            );
            if must_have_acked && s.acked {
                assert_eq!(present, n, "{ctx}: acknowledged transaction {} lost", s.id);
            }
            whole += usize::from(present == n);
        }
        whole
    }

    #[test]
    fn every_transaction_is_all_or_nothing_after_power_loss() {
        let seed: u64 = std::env::var("BATCHKV_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(rand::random);
        eprintln!("seed {seed} (BATCHKV_SEED)");
        let mut rng = StdRng::seed_from_u64(seed);
        for policy in [AppendFsync::EverySec, AppendFsync::Always] {
            let dir = tempfile::tempdir().unwrap();
            let fs = FaultInjectionFs::new(Arc::new(PosixFs));
            let mut cfg = Config::new(dir.path());
            cfg.appendfsync = policy;
            cfg.threads = 2;
            cfg.options.apply_option_string(SMALL_BUFFERS).unwrap();
            let mut sent_all: Vec<Sent> = Vec::new();
            for cycle in 0..3 {
                let ctx = format!("seed {seed}, {policy:?}, cycle {cycle}");
                let server = Server::start_with_fs(cfg.clone(), Arc::new(fs.clone())).unwrap();
                let port = server.addr().port();
                // Everything from earlier cycles is still all or nothing.
                verify(port, &sent_all, false, &ctx);
                let stop = Arc::new(AtomicBool::new(false));
                let clients: Vec<_> = (0..2)
                    .map(|i| {
                        let stop = stop.clone();
                        std::thread::spawn(move || client(port, i, cycle, seed, &stop))
                    })
                    .collect();
                // Long enough for the `everysec` sync to run mid-stream.
                let run = Duration::from_millis(rng.random_range(1100..1700));
                let start = Instant::now();
                while start.elapsed() < run {
                    std::thread::sleep(Duration::from_millis(20));
                }
                fs.power_off();
                stop.store(true, Ordering::Relaxed);
                server.shutdown();
                let _ = server.join();
                fs.lose_unsynced_data().unwrap();
                let mut sent: Vec<Sent> = Vec::new();
                for c in clients {
                    sent.extend(c.join().unwrap());
                }
                let server = Server::start_with_fs(cfg.clone(), Arc::new(fs.clone())).unwrap();
                let whole = verify(
                    server.addr().port(),
                    &sent,
                    policy == AppendFsync::Always,
                    &ctx,
                );
                eprintln!("{ctx}: {} transactions sent, {whole} survived", sent.len());
                assert!(whole > 0, "{ctx}: nothing survived; the test tests nothing");
                server.shutdown();
                server.join().unwrap();
                sent_all.extend(sent);
            }
        }
    }
}
