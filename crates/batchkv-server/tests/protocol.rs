//! Protocol behaviour: pipelines, RESP3, inline commands, malformed input,
//! request limits, AUTH, QUIT, SHUTDOWN and max clients.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, query_err, Harness};
use redis::Value;

#[test]
fn pipelines_mixing_batched_reads_and_writes_reply_in_order() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        let mut p = redis::pipe();
        p.cmd("SET").arg("a").arg("1");
        p.cmd("GET").arg("a");
        p.cmd("GET").arg("b");
        p.cmd("MGET").arg("a").arg("b").arg("a");
        p.cmd("SET").arg("b").arg("2");
        p.cmd("GET").arg("b");
        p.cmd("MGET").arg("b");
        p.cmd("SELECT").arg("1");
        p.cmd("GET").arg("a");
        p.cmd("GET").arg("nope");
        p.cmd("INCR").arg("a");
        let got: Vec<Value> = p.query(&mut c).unwrap_or_else(|e| panic!("{e}"));
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(got.len(), 11, "batch={batch}");
        assert_eq!(got[0], Value::Okay);
        assert_eq!(got[1], bulk("1"));
        assert_eq!(got[2], Value::Nil);
        assert_eq!(got[3], Value::Array(vec![bulk("1"), Value::Nil, bulk("1")]));
        assert_eq!(got[5], bulk("2"));
        assert_eq!(got[6], Value::Array(vec![bulk("2")]));
        assert_eq!(
            got[8],
            Value::Nil,
            "SELECT applies to the rest of the pipeline"
        );
        assert_eq!(got[9], Value::Nil);
        assert_eq!(got[10], Value::Int(1));
    }
}

#[test]
fn long_pipelines_of_gets_from_many_connections_all_answer_correctly() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut p = redis::pipe();
    for i in 0..1000 {
        p.cmd("SET")
            .arg(format!("k{i}"))
            .arg(format!("v{i}"))
            .ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    h.on_clients(8, |t, c| {
        for round in 0..5 {
            let mut p = redis::pipe();
            for i in 0..300 {
                let k = (i * 7 + t * 13 + round) % 1100;
                if i % 3 == 0 {
                    p.cmd("MGET")
                        .arg(format!("k{k}"))
                        .arg(format!("k{}", k + 1));
                } else {
                    p.cmd("GET").arg(format!("k{k}"));
                }
            }
            let got: Vec<Value> = p.query(c).unwrap();
            for (i, v) in got.iter().enumerate() {
                let k = (i * 7 + t * 13 + round) % 1100;
                let want = |k: usize| {
                    if k < 1000 {
                        Value::BulkString(format!("v{k}").into_bytes())
                    } else {
                        Value::Nil
                    }
                };
                if i % 3 == 0 {
                    assert_eq!(*v, Value::Array(vec![want(k), want(k + 1)]));
                } else {
                    assert_eq!(*v, want(k));
                }
            }
        }
    });
    let info: String = q(&mut c, &["INFO", "batchkv"]);
    assert!(info.contains("batching:on"), "{info}");
}

#[test]
fn resp3_via_hello() {
    let h = Harness::start();
    let mut c = h.conn();
    let hello: Value = q(&mut c, &["HELLO", "3"]);
    let Value::Map(pairs) = hello else {
        panic!("HELLO 3 must answer a map: {hello:?}")
    };
    assert!(pairs.contains(&(Value::BulkString(b"proto".to_vec()), Value::Int(3))));
    assert_eq!(q::<Value>(&mut c, &["GET", "missing"]), Value::Nil);
    let cfg: Value = q(&mut c, &["CONFIG", "GET", "appendonly"]);
    assert!(matches!(cfg, Value::Map(_)), "{cfg:?}");
    assert_eq!(
        query_err(&mut c, &["HELLO", "4"]),
        "NOPROTO unsupported protocol version"
    );
    // A RESP3 client from the crate's own handshake.
    let client = redis::Client::open(format!("{}?protocol=resp3", h.url())).unwrap();
    let mut c3 = client.get_connection().unwrap();
    let _: () = q(&mut c3, &["SET", "x", "1"]);
    assert_eq!(
        q::<Value>(&mut c3, &["MGET", "x", "y"]),
        Value::Array(vec![Value::BulkString(b"1".to_vec()), Value::Nil])
    );
    assert!(matches!(
        q::<Value>(&mut c3, &["CONFIG", "GET", "save"]),
        Value::Map(_)
    ));
    // Raw bytes: RESP3 null is "_".
    let mut raw = h.raw();
    raw.send(b"HELLO 3\r\nGET nothing\r\nECHO end\r\n");
    let got = raw.read_until(b"$3\r\nend\r\n");
    assert!(
        got.ends_with(b"_\r\n$3\r\nend\r\n"),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn errors_inside_a_pipeline_do_not_disturb_the_batched_replies_around_them() {
    let h = Harness::start();
    let mut raw = h.raw();
    raw.expect(
        b"SET a 1\r\nGET a\r\nGET a b\r\nMGET a x\r\nGET\r\nGET a\r\n",
        b"+OK\r\n$1\r\n1\r\n-ERR wrong number of arguments for 'get' command\r\n\
          *2\r\n$1\r\n1\r\n$-1\r\n-ERR wrong number of arguments for 'get' command\r\n$1\r\n1\r\n",
    );
}

#[test]
fn inline_commands_work() {
    let h = Harness::start();
    let mut raw = h.raw();
    raw.expect(b"PING\r\n", b"+PONG\r\n");
    raw.expect(
        b"SET \"a key\" 'it''s'\r\n",
        b"-ERR Protocol error: unbalanced quotes in request\r\n",
    );
    assert!(raw.closed());
    let mut raw = h.raw();
    raw.expect(b"SET \"a key\" \"x\\ty\"\n", b"+OK\r\n");
    raw.expect(b"GET \"a key\"\r\n", b"$3\r\nx\ty\r\n");
    raw.expect(b"\r\nEXISTS \"a key\"\r\n", b":1\r\n");
    raw.expect(
        b"FOO bar\r\n",
        b"-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n",
    );
}

#[test]
fn malformed_protocol_closes_only_that_connection() {
    let h = Harness::start();
    let mut good = h.conn();
    let _: () = q(&mut good, &["SET", "k", "v"]);
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*2\r\n$3\r\nGET\r\n:1\r\n",
            b"-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"*1\r\n$-7\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*abc\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*2\r\n$3\r\nGET\r\n$1x\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
    ];
    for (input, reply) in cases {
        let mut raw = h.raw();
        // Complete requests before the bad one are still answered.
        raw.expect(b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n");
        raw.expect(input, reply);
        assert!(raw.closed(), "{:?}", String::from_utf8_lossy(input));
        assert_eq!(q::<String>(&mut good, &["GET", "k"]), "v");
    }
}

#[test]
fn oversized_bulk_is_rejected_from_its_header() {
    let h = Harness::start_with(|c| c.proto_max_bulk_len = 1000);
    let mut raw = h.raw();
    // Only the header is sent: the server must answer without waiting for
    // the 1 GB it announces.
    raw.expect(
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000000\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    );
    assert!(raw.closed());
    let mut c = h.conn();
    let ok: String = q(&mut c, &["SET", "k", &"x".repeat(1000)]);
    assert_eq!(ok, "OK");
    let mut raw = h.raw();
    let mut big = b"*1\r\n$".to_vec();
    big.extend(std::iter::repeat_n(b'1', 70 * 1024));
    raw.send(&big);
    assert_eq!(
        raw.read_n(52),
        b"-ERR Protocol error: too big bulk count string\r\n".to_vec()
    );
}

#[test]
fn a_request_growing_past_the_query_buffer_limit_closes_its_connection() {
    let h = Harness::start_with(|c| c.client_query_buffer_limit = 4096);
    // Under the limit: a complete request of ~3 KB works.
    let mut c = h.conn();
    let keys: Vec<String> = (0..300).map(|i| format!("key{i:05}")).collect();
    let got: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(&mut c).unwrap();
    assert_eq!(got.len(), 300);
    // Every argument is small, but the request (never finished) grows past
    // 4 KiB: the server answers and closes without waiting for the rest.
    let mut raw = h.raw();
    let mut req = b"*100000\r\n$4\r\nMGET\r\n".to_vec();
    for i in 0..1000 {
        req.extend_from_slice(format!("$8\r\nkey{i:05}\r\n").as_bytes());
    }
    raw.send(&req);
    let want = b"-ERR Protocol error: request exceeds client-query-buffer-limit (4096 bytes)\r\n";
    assert_eq!(
        String::from_utf8_lossy(&raw.read_n(want.len())),
        String::from_utf8_lossy(want)
    );
    assert!(raw.closed());
    // Other connections keep working, and the limit is visible.
    let limit: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("client-query-buffer-limit")
        .query(&mut c)
        .unwrap();
    assert_eq!(limit, ["client-query-buffer-limit", "4096"]);
}

#[test]
fn auth_is_required_with_requirepass() {
    let h = Harness::start_with(|c| c.requirepass = Some("sekret".into()));
    let mut raw = h.raw();
    raw.expect(b"GET k\r\n", b"-NOAUTH Authentication required.\r\n");
    raw.expect(b"MGET k\r\n", b"-NOAUTH Authentication required.\r\n");
    raw.expect(
        b"AUTH wrong\r\n",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    raw.expect(b"AUTH sekret\r\n", b"+OK\r\n");
    raw.expect(b"GET k\r\n", b"$-1\r\n");
    let client = redis::Client::open(format!("redis://:sekret@{}/", h.server.addr())).unwrap();
    let mut c = client.get_connection().unwrap();
    let _: () = q(&mut c, &["SET", "k", "v"]);
    let mut raw = h.raw();
    raw.send(b"HELLO 2 AUTH default sekret\r\n");
    assert!(raw
        .read_until(b"*0\r\n")
        .starts_with(b"*14\r\n$6\r\nserver\r\n"));
    let h2 = Harness::start();
    let mut c2 = h2.conn();
    assert!(query_err(&mut c2, &["AUTH", "x"]).starts_with("ERR AUTH <password> called without"));
}

#[test]
fn quit_closes_and_shutdown_stops_the_server() {
    let h = Harness::start();
    let mut raw = h.raw();
    raw.expect(b"QUIT\r\n", b"+OK\r\n");
    assert!(raw.closed());
    let mut raw = h.raw();
    raw.send(b"SET k v\r\nSHUTDOWN\r\n");
    assert_eq!(
        raw.read_n(100),
        b"+OK\r\n".to_vec(),
        "SHUTDOWN closes without a reply"
    );
    let Harness { server, dir } = h;
    server.join().unwrap();
    let db = batchkv::Db::open(dir.path(), batchkv::Options::default()).unwrap();
    assert!(db.get(b"\0k").unwrap().is_some());
}

#[test]
fn max_clients_rejects_the_extra_connection() {
    let h = Harness::start_with(|c| c.maxclients = 2);
    let mut a = h.raw();
    let mut b = h.raw();
    a.expect(b"PING\r\n", b"+PONG\r\n");
    b.expect(b"PING\r\n", b"+PONG\r\n");
    let mut c = h.raw();
    assert_eq!(
        c.read_n(100),
        b"-ERR max number of clients reached\r\n".to_vec()
    );
    drop(a);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut d = h.raw();
    d.expect(b"PING\r\n", b"+PONG\r\n");
}

/// An error that echoes client bytes can no longer inject a reply: the
/// CR/LF inside becomes spaces, so GET and PING get their own replies
/// (before, the client read `:666` as GET's reply).
#[test]
fn echoed_line_breaks_cannot_inject_replies() {
    let h = Harness::start();
    let mut raw = h.raw();
    raw.expect(
        b"*4\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n$2\r\n10\r\n$8\r\nNX\r\n:666\r\n\
          *2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n",
        b"-ERR Unsupported option NX  :666\r\n$-1\r\n+PONG\r\n",
    );
}
