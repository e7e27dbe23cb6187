//! The server's limits on what a client can make it hold or store
//! (issue 27 items 3, 4, 5 and the value and key limits of 9): output
//! buffer limits, pipelined replies written as they are produced, the
//! cap on unfinished requests of all clients, idle timeout, and value and
//! key sizes whose every derived record fits the engine.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{q, query_err, Harness, Raw};

/// The longest value the server stores: the engine's 64 MiB less the
/// 9-byte header of a string with an expiry.
const MAX_VALUE: usize = (64 << 20) - 9;
/// The longest key a command may create: the engine's 64 KiB less the 22
/// bytes a sorted set's score-index key adds.
const MAX_KEY: usize = 65536 - 22;

/// Whether the server closes `c` within `within` (reading and dropping
/// whatever arrives first); the bytes received.
fn closed_within(c: &mut Raw, within: Duration) -> (bool, Vec<u8>) {
    let end = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    c.sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while Instant::now() < end {
        match c.sock.read(&mut buf) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (true, got),
        }
    }
    (false, got)
}

/// A RESP request of `args`.
fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bulk(v: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", v.len()).into_bytes();
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
    out
}

/// `client-output-buffer-limit` has Redis's syntax and defaults, and its
/// `normal` class is enforced: over the hard limit the client is closed at
/// once, with nothing of the reply sent; over the soft limit for longer
/// than its seconds, too; a client reading its replies is not affected.
#[test]
fn output_buffer_limits_close_clients_that_go_over_them() {
    let h = Harness::start();
    let mut c = h.conn();
    let big = vec![b'v'; 16 << 20];
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut c)
        .unwrap();
    let name = "client-output-buffer-limit";
    let shown = |c: &mut redis::Connection| q::<Vec<String>>(c, &["CONFIG", "GET", name]);
    assert_eq!(
        shown(&mut c)[1],
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    let _: () = q(&mut c, &["CONFIG", "SET", name, "normal 1mb 0 0"]);
    assert_eq!(
        shown(&mut c)[1],
        "normal 1048576 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    assert_eq!(
        query_err(&mut c, &["CONFIG", "SET", name, "normal 1 2"]),
        "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - \
         Wrong number of arguments in buffer limit configuration."
    );
    // Hard limit, batched GET and a plain command (GETRANGE).
    for req in [
        &b"GET big\r\nPING\r\n"[..],
        b"GETRANGE big 0 -1\r\nPING\r\n",
    ] {
        let mut raw = h.raw();
        raw.send(req);
        let (closed, got) = closed_within(&mut raw, Duration::from_secs(30));
        assert!(closed && got.is_empty(), "{req:?}: {} bytes", got.len());
        // Other clients are not affected.
        assert_eq!(q::<i64>(&mut c, &["STRLEN", "big"]), big.len() as i64);
    }
    // Small replies are not affected.
    let mut raw = h.raw();
    raw.expect(b"GETRANGE big 0 9\r\n", b"$10\r\nvvvvvvvvvv\r\n");
    // Soft limit: 1 MiB for more than 1 s. A client that does not read
    // is closed; one that reads gets its reply.
    let _: () = q(&mut c, &["CONFIG", "SET", name, "normal 0 1mb 1"]);
    let mut stalled = h.raw();
    stalled.send(b"GET big\r\n");
    std::thread::sleep(Duration::from_secs(3));
    let (closed, _) = closed_within(&mut stalled, Duration::from_secs(30));
    assert!(closed);
    let mut reader = h.raw();
    reader.send(b"GET big\r\n");
    let want = bulk(&big);
    assert!(reader.read_n(want.len()) == want);
    let _: () = q(&mut c, &["CONFIG", "SET", name, "normal 0 0 0"]);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "big"]), big);
}

/// Pipelines whose replies pass the 64 KiB write threshold, with GET and
/// MGET runs cut into several batcher jobs, get every reply in order,
/// from several clients at once.
#[test]
fn large_pipelined_replies_arrive_whole_and_in_order() {
    let h = Harness::start();
    let mut c = h.conn();
    let big = |i: usize| vec![b'a' + i as u8; 200_000 + i];
    for i in 0..3 {
        let _: () = redis::cmd("SET")
            .arg(format!("big{i}"))
            .arg(big(i))
            .query(&mut c)
            .unwrap();
    }
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let mut raw = h.raw();
            std::thread::spawn(move || {
                let (mut req, mut want) = (Vec::new(), Vec::new());
                let small = format!("s{t}");
                for round in 0..20 {
                    let i = (t + round) % 3;
                    let k = format!("big{i}");
                    let v = round.to_string();
                    req.extend(request(&[b"GET", k.as_bytes()]));
                    want.extend(bulk(&big(i)));
                    req.extend(request(&[b"SET", small.as_bytes(), v.as_bytes()]));
                    want.extend_from_slice(b"+OK\r\n");
                    req.extend(request(&[b"GET", small.as_bytes()]));
                    want.extend(bulk(v.as_bytes()));
                    req.extend(request(&[
                        b"MGET",
                        k.as_bytes(),
                        b"nosuch",
                        small.as_bytes(),
                    ]));
                    want.extend_from_slice(b"*3\r\n");
                    want.extend(bulk(&big(i)));
                    want.extend_from_slice(b"$-1\r\n");
                    want.extend(bulk(v.as_bytes()));
                    for _ in 0..3 {
                        req.extend(request(&[b"GET", k.as_bytes()]));
                        want.extend(bulk(&big(i)));
                    }
                }
                raw.sock.write_all(&req).unwrap();
                let got = raw.read_n(want.len());
                assert!(got == want, "client {t}: replies differ");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Issue 27 item 5: the unfinished requests of all clients together are
/// capped (`--max-pending-query-bytes`): of three clients each holding 4 MB
/// of an unfinished SET under an 8 MiB cap, the one whose data would take
/// the total past it is closed; the others finish their requests.
#[test]
fn unfinished_requests_of_all_clients_are_capped() {
    let h = Harness::start_with(|c| c.max_pending_query_bytes = 8 << 20);
    const LEN: usize = 4_000_100;
    const SENT: usize = 4_000_000;
    let mut clients: Vec<Raw> = (0..3).map(|_| h.raw()).collect();
    for (i, raw) in clients.iter_mut().enumerate() {
        let mut head = format!("*3\r\n$3\r\nSET\r\n$2\r\nk{i}\r\n${LEN}\r\n").into_bytes();
        head.extend(std::iter::repeat_n(b'0' + i as u8, SENT));
        // The server may close the connection while this is sent.
        let _ = raw.sock.write_all(&head);
    }
    // Time for the server to read what was sent.
    std::thread::sleep(Duration::from_secs(1));
    let mut closed = Vec::new();
    for (i, raw) in clients.iter_mut().enumerate() {
        let (gone, got) = closed_within(raw, Duration::from_millis(300));
        if gone {
            // The error, unless the close reset the connection first.
            let want = b"-ERR Protocol error: unfinished requests of all clients exceed \
                max-pending-query-bytes (8388608 bytes)\r\n";
            assert!(
                got.is_empty() || got == want,
                "{}",
                String::from_utf8_lossy(&got)
            );
            closed.push(i);
        }
    }
    // One, unless two grew past the cap at the same moment.
    assert!((1..=2).contains(&closed.len()), "closed: {closed:?}");
    let mut c = h.conn();
    for (i, raw) in clients.iter_mut().enumerate() {
        if closed.contains(&i) {
            continue;
        }
        raw.sock.write_all(&[b'0' + i as u8; LEN - SENT]).unwrap();
        raw.sock.write_all(b"\r\n").unwrap();
        raw.sock
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        assert_eq!(raw.read_n(5), b"+OK\r\n");
        assert_eq!(q::<i64>(&mut c, &["STRLEN", &format!("k{i}")]), LEN as i64);
    }
}

/// `--timeout` (Redis's `timeout`, also a CONFIG setting) closes a client
/// idle that long, here one that left a request unfinished.
#[test]
fn idle_clients_are_closed_after_the_timeout() {
    let h = Harness::start_with(|c| c.timeout = 1);
    let mut c = h.conn();
    assert_eq!(
        q::<Vec<String>>(&mut c, &["CONFIG", "GET", "timeout"]),
        ["timeout", "1"]
    );
    let mut idle = h.raw();
    idle.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\nunfinished");
    let (closed, got) = closed_within(&mut idle, Duration::from_secs(30));
    assert!(closed && got.is_empty());
    // The idle redis connection went too; a new one works.
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "timeout", "0"]);
}

/// Issue 27 items 4 and 9: the longest value stores with and without an
/// expiry, and strings grown by APPEND, SETRANGE and SETBIT stop at the
/// same limit (`proto-max-bulk-len`, which defaults to it), with Redis's
/// errors; a lower `proto-max-bulk-len` lowers them all, as in Redis.
#[test]
fn the_value_limit_is_the_users_bytes_whatever_the_expiry() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(
        q::<Vec<String>>(&mut c, &["CONFIG", "GET", "proto-max-bulk-len"]),
        ["proto-max-bulk-len", &MAX_VALUE.to_string()]
    );
    let max = vec![b'm'; MAX_VALUE];
    let set = |c: &mut redis::Connection, k: &str, ex: bool| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(k).arg(&max);
        if ex {
            cmd.arg("EX").arg(100);
        }
        cmd.query::<()>(c)
    };
    set(&mut c, "plain", false).unwrap();
    set(&mut c, "ex", true).unwrap();
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "plain", "100"]), 1);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "ex"]), MAX_VALUE as i64);
    let too_long = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    assert_eq!(query_err(&mut c, &["APPEND", "plain", "x"]), too_long);
    let last = (MAX_VALUE - 1).to_string();
    assert_eq!(
        q::<i64>(&mut c, &["SETRANGE", "r", &last, "x"]),
        MAX_VALUE as i64
    );
    assert_eq!(
        query_err(&mut c, &["SETRANGE", "r", &MAX_VALUE.to_string(), "x"]),
        too_long
    );
    let last_bit = (MAX_VALUE * 8 - 1).to_string();
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", &last_bit, "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", &last_bit]), 1);
    let bad_bit = "ERR bit offset is not an integer or out of range";
    let past = (MAX_VALUE * 8).to_string();
    assert_eq!(query_err(&mut c, &["SETBIT", "b", &past, "1"]), bad_bit);
    assert_eq!(query_err(&mut c, &["GETBIT", "b", &past]), bad_bit);
    // A longer bulk string is a protocol error, before its bytes are read.
    let mut raw = h.raw();
    raw.expect(
        format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", MAX_VALUE + 1).as_bytes(),
        b"-ERR Protocol error: invalid bulk length\r\n",
    );
    // With proto-max-bulk-len 1mb, as Redis: the limits follow.
    let _: () = q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    assert_eq!(
        q::<i64>(&mut c, &["SETRANGE", "s", "1048575", "x"]),
        1 << 20
    );
    assert_eq!(
        query_err(&mut c, &["SETRANGE", "s", "1048576", "x"]),
        too_long
    );
    assert_eq!(query_err(&mut c, &["SETBIT", "s", "8388608", "1"]), bad_bit);
    // LCS refuses a table (4 bytes a cell) past proto-max-bulk-len.
    let _: () = q(&mut c, &["SET", "x", &"a".repeat(600)]);
    let _: () = q(&mut c, &["SET", "y", &"b".repeat(600)]);
    assert_eq!(
        query_err(&mut c, &["LCS", "x", "y"]),
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
    );
    let _: () = q(&mut c, &["SET", "y", &"b".repeat(400)]);
    assert_eq!(q::<i64>(&mut c, &["LCS", "x", "y", "LEN"]), 0);
    assert!(
        query_err(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "64mb"]).ends_with(&format!(
            "argument must be between 1048576 and {MAX_VALUE} inclusive"
        ))
    );
}

/// Issue 27 item 9: a key that can be written can be given an expiry and
/// can hold any type; a longer one is refused by every command that would
/// create it (not by commands that only read or delete), inside MULTI too.
#[test]
fn keys_longer_than_the_limit_are_refused_where_they_would_be_created() {
    let h = Harness::start();
    let mut c = h.conn();
    let key = "k".repeat(MAX_KEY);
    let _: () = q(&mut c, &["SET", &key, "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", &key, "100"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PERSIST", &key]), 1);
    let z = "z".repeat(MAX_KEY);
    assert_eq!(q::<i64>(&mut c, &["ZADD", &z, "1", ""]), 1);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", &z, "100000"]), 1);
    let hk = "h".repeat(MAX_KEY);
    assert_eq!(q::<i64>(&mut c, &["HSET", &hk, "", "v"]), 1);
    let l = "l".repeat(MAX_KEY);
    assert_eq!(q::<i64>(&mut c, &["RPUSH", &l, "a", "b"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", &l, "100"]), 1);
    let long = "K".repeat(MAX_KEY + 1);
    let refused = format!("ERR key is too long (max {MAX_KEY} bytes)");
    for args in [
        vec!["SET", &long, "v"],
        vec!["APPEND", &long, "v"],
        vec!["MSET", "a", "1", &long, "2"],
        vec!["RPUSH", &long, "x"],
        vec!["SADD", &long, "x"],
        vec!["HSET", &long, "f", "v"],
        vec!["ZADD", &long, "1", "m"],
        vec!["RENAME", &key, &long],
        vec!["COPY", &key, &long],
        vec!["LMOVE", &l, &long, "LEFT", "LEFT"],
        vec!["SINTERSTORE", &long, "a"],
    ] {
        assert_eq!(query_err(&mut c, &args), refused, "{}", args[0]);
    }
    // Nothing was written; the source keys are intact.
    assert_eq!(q::<i64>(&mut c, &["EXISTS", &long, "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["LLEN", &l]), 2);
    // Reads and deletes of a long key are not refused.
    assert_eq!(q::<Option<String>>(&mut c, &["GET", &long]), None);
    assert_eq!(q::<i64>(&mut c, &["DEL", &long, &key]), 1);
    // Inside MULTI the command is refused when queued: EXEC aborts.
    let _: () = q(&mut c, &["MULTI"]);
    assert_eq!(query_err(&mut c, &["SET", &long, "v"]), refused);
    assert_eq!(
        query_err(&mut c, &["EXEC"]),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", &long]), 0);
}
