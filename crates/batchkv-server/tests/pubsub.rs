//! Pub/Sub: SUBSCRIBE, PSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH and PUBSUB
//! in RESP2 and RESP3, byte for byte as Redis 7.0 (the last test sends
//! the same bytes to a real redis-server when one is installed).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::reference::RedisServer;
use common::{q, Harness, Raw};

/// A request as a RESP multibulk.
fn cmd(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Polls `f` until it returns true; fails the test after 20 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

const CONTEXT_ERR: &str =
    "only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";

#[test]
fn resp2_subscribe_publish_and_receive() {
    let h = Harness::start();
    let mut sub = h.raw();
    let mut publ = h.raw();
    sub.expect(
        &cmd(&["SUBSCRIBE", "news", "sport", "news"]),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n\
          *3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n\
          *3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:2\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "news", "hello"]), b":1\r\n");
    sub.expect(b"", b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
    publ.expect(&cmd(&["PUBLISH", "nobody", "x"]), b":0\r\n");
    // Binary-safe channel and payload; an empty payload.
    publ.expect(&cmd(&["PUBLISH", "sport", "a\r\nb"]), b":1\r\n");
    publ.expect(&cmd(&["PUBLISH", "sport", ""]), b":1\r\n");
    sub.expect(
        b"",
        b"*3\r\n$7\r\nmessage\r\n$5\r\nsport\r\n$4\r\na\r\nb\r\n\
          *3\r\n$7\r\nmessage\r\n$5\r\nsport\r\n$0\r\n\r\n",
    );
    sub.expect(
        &cmd(&["UNSUBSCRIBE", "news"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "news", "gone"]), b":0\r\n");
    publ.expect(&cmd(&["PUBLISH", "sport", "still"]), b":1\r\n");
    sub.expect(
        b"",
        b"*3\r\n$7\r\nmessage\r\n$5\r\nsport\r\n$5\r\nstill\r\n",
    );
}

#[test]
fn resp3_pushes_and_any_command_while_subscribed() {
    let h = Harness::start();
    let mut sub = h.raw();
    let mut publ = h.raw();
    sub.send(&cmd(&["HELLO", "3"]));
    sub.read_until(b"modules\r\n*0\r\n");
    sub.expect(
        &cmd(&["SUBSCRIBE", "c"]),
        b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "c", "m1"]), b":1\r\n");
    sub.expect(b"", b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nm1\r\n");
    // RESP3: no restricted context.
    sub.expect(&cmd(&["SET", "k", "v"]), b"+OK\r\n");
    sub.expect(&cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    sub.expect(&cmd(&["GET", "nokey"]), b"_\r\n");
    sub.expect(&cmd(&["PING"]), b"+PONG\r\n");
    // Publishing to itself: the push comes before PUBLISH's reply.
    sub.expect(
        &cmd(&["PUBLISH", "c", "self"]),
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nself\r\n:1\r\n",
    );
    sub.expect(
        &cmd(&["PSUBSCRIBE", "c*"]),
        b">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "c", "m2"]), b":2\r\n");
    sub.expect(
        b"",
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nm2\r\n\
          >4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$1\r\nc\r\n$2\r\nm2\r\n",
    );
    sub.expect(
        &cmd(&["UNSUBSCRIBE"]),
        b">3\r\n$11\r\nunsubscribe\r\n$1\r\nc\r\n:1\r\n",
    );
    sub.expect(
        &cmd(&["PUNSUBSCRIBE"]),
        b">3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n",
    );
    sub.expect(
        &cmd(&["UNSUBSCRIBE"]),
        b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n",
    );
}

#[test]
fn overlapping_pattern_and_channel_both_deliver() {
    let h = Harness::start();
    let mut both = h.raw();
    let mut pat = h.raw();
    let mut publ = h.raw();
    both.expect(
        &cmd(&["SUBSCRIBE", "news.1"]),
        b"*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.1\r\n:1\r\n",
    );
    both.expect(
        &cmd(&["PSUBSCRIBE", "news.*"]),
        b"*3\r\n$10\r\npsubscribe\r\n$6\r\nnews.*\r\n:2\r\n",
    );
    pat.expect(
        &cmd(&["PSUBSCRIBE", "n[aeiou]ws.?", "x*"]),
        b"*3\r\n$10\r\npsubscribe\r\n$12\r\nn[aeiou]ws.?\r\n:1\r\n\
          *3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:2\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "news.1", "a"]), b":3\r\n");
    both.expect(
        b"",
        b"*3\r\n$7\r\nmessage\r\n$6\r\nnews.1\r\n$1\r\na\r\n\
          *4\r\n$8\r\npmessage\r\n$6\r\nnews.*\r\n$6\r\nnews.1\r\n$1\r\na\r\n",
    );
    pat.expect(
        b"",
        b"*4\r\n$8\r\npmessage\r\n$12\r\nn[aeiou]ws.?\r\n$6\r\nnews.1\r\n$1\r\na\r\n",
    );
    // Only the pattern of `both` matches a channel it did not subscribe to.
    publ.expect(&cmd(&["PUBLISH", "news.22", "b"]), b":1\r\n");
    both.expect(
        b"",
        b"*4\r\n$8\r\npmessage\r\n$6\r\nnews.*\r\n$7\r\nnews.22\r\n$1\r\nb\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "sport", "c"]), b":0\r\n");
    // PUNSUBSCRIBE one pattern: the channel subscription stays.
    both.expect(
        &cmd(&["PUNSUBSCRIBE", "news.*"]),
        b"*3\r\n$12\r\npunsubscribe\r\n$6\r\nnews.*\r\n:1\r\n",
    );
    publ.expect(&cmd(&["PUBLISH", "news.1", "d"]), b":2\r\n");
    both.expect(b"", b"*3\r\n$7\r\nmessage\r\n$6\r\nnews.1\r\n$1\r\nd\r\n");
}

#[test]
fn unsubscribe_replies() {
    let h = Harness::start();
    let mut c = h.raw();
    // Nothing subscribed: one reply with a nil name.
    c.expect(
        &cmd(&["UNSUBSCRIBE"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n",
    );
    c.expect(
        &cmd(&["PUNSUBSCRIBE"]),
        b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n",
    );
    // Names not subscribed: a reply each.
    c.expect(
        &cmd(&["UNSUBSCRIBE", "x", "y"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:0\r\n\
          *3\r\n$11\r\nunsubscribe\r\n$1\r\ny\r\n:0\r\n",
    );
    c.send(&cmd(&["SUBSCRIBE", "c3", "c1", "c2"]));
    c.read_until(b"$2\r\nc2\r\n:3\r\n");
    c.expect(
        &cmd(&["PSUBSCRIBE", "p*"]),
        b"*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:4\r\n",
    );
    // The count in a confirmation is of channels and patterns.
    c.expect(
        &cmd(&["PUNSUBSCRIBE", "q*"]),
        b"*3\r\n$12\r\npunsubscribe\r\n$2\r\nq*\r\n:4\r\n",
    );
    // All channels, one reply each (in subscription order here; Redis's
    // order is its hash table's).
    c.expect(
        &cmd(&["UNSUBSCRIBE"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nc3\r\n:3\r\n\
          *3\r\n$11\r\nunsubscribe\r\n$2\r\nc1\r\n:2\r\n\
          *3\r\n$11\r\nunsubscribe\r\n$2\r\nc2\r\n:1\r\n",
    );
    // No channel left, a pattern still: nil name, count 1.
    c.expect(
        &cmd(&["UNSUBSCRIBE"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n",
    );
    c.expect(
        &cmd(&["PUNSUBSCRIBE"]),
        b"*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n",
    );
    // Out of the subscribed context again.
    c.expect(&cmd(&["GET", "k"]), b"$-1\r\n");
}

#[test]
fn resp2_subscribed_context_allows_only_pubsub_ping_quit() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.raw();
        c.expect(
            &cmd(&["SUBSCRIBE", "a"]),
            b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n",
        );
        for (req, name) in [
            (cmd(&["GET", "k"]), "get"),
            (cmd(&["MGET", "k", "j"]), "mget"),
            (cmd(&["set", "k", "v"]), "set"),
            (cmd(&["PUBLISH", "a", "x"]), "publish"),
            (cmd(&["PUBSUB", "NUMSUB", "a"]), "pubsub|numsub"),
            (cmd(&["CLIENT", "ID"]), "client|id"),
            (cmd(&["HELLO", "3"]), "hello"),
            (b"SELECT 1\r\n".to_vec(), "select"),
        ] {
            let want = format!("-ERR Can't execute '{name}': {CONTEXT_ERR}\r\n");
            c.expect(&req, want.as_bytes());
        }
        // Errors Redis finds before the context check.
        c.expect(
            &cmd(&["GET"]),
            b"-ERR wrong number of arguments for 'get' command\r\n",
        );
        c.expect(
            &cmd(&["NOSUCH", "x"]),
            b"-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n",
        );
        c.expect(
            &cmd(&["PUBSUB", "FOO"]),
            b"-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n",
        );
        c.expect(&cmd(&["PING"]), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
        c.expect(&cmd(&["PING", "hi"]), b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
        c.expect(
            &cmd(&["PING", "a", "b"]),
            b"-ERR wrong number of arguments for 'ping' command\r\n",
        );
        // A pipeline: the context starts with the SUBSCRIBE inside it.
        let mut p = h.raw();
        let mut reqs = cmd(&["GET", "k"]);
        reqs.extend(cmd(&["SUBSCRIBE", "b"]));
        reqs.extend(cmd(&["GET", "k"]));
        reqs.extend(cmd(&["PING"]));
        let want = format!(
            "$-1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:1\r\n\
             -ERR Can't execute 'get': {CONTEXT_ERR}\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        );
        p.expect(&reqs, want.as_bytes());
        c.expect(&cmd(&["QUIT"]), b"+OK\r\n");
        assert!(c.closed(), "QUIT closes a subscribed connection");
    }
}

#[test]
fn pubsub_channels_numsub_numpat() {
    let h = Harness::start();
    let mut s1 = h.raw();
    let mut s2 = h.raw();
    let mut c = h.raw();
    c.expect(&cmd(&["PUBSUB", "CHANNELS"]), b"*0\r\n");
    c.expect(&cmd(&["PUBSUB", "NUMPAT"]), b":0\r\n");
    c.expect(&cmd(&["PUBSUB", "NUMSUB"]), b"*0\r\n");
    s1.send(&cmd(&["SUBSCRIBE", "news.a", "news.b", "sport"]));
    s1.read_until(b"$5\r\nsport\r\n:3\r\n");
    s2.send(&cmd(&["SUBSCRIBE", "news.a"]));
    s2.read_until(b":1\r\n");
    s2.send(&cmd(&["PSUBSCRIBE", "n*", "s*"]));
    s2.read_until(b"$2\r\ns*\r\n:3\r\n");
    s1.send(&cmd(&["PSUBSCRIBE", "n*"]));
    s1.read_until(b"$2\r\nn*\r\n:4\r\n");
    c.expect(
        &cmd(&[
            "PUBSUB", "NUMSUB", "news.a", "sport", "none", "n*", "news.a",
        ]),
        b"*10\r\n$6\r\nnews.a\r\n:2\r\n$5\r\nsport\r\n:1\r\n$4\r\nnone\r\n:0\r\n\
          $2\r\nn*\r\n:0\r\n$6\r\nnews.a\r\n:2\r\n",
    );
    // Distinct patterns (Redis 7), not pattern subscriptions.
    c.expect(&cmd(&["pubsub", "numpat"]), b":2\r\n");
    c.expect(
        &cmd(&["PUBSUB", "CHANNELS"]),
        b"*3\r\n$6\r\nnews.a\r\n$6\r\nnews.b\r\n$5\r\nsport\r\n",
    );
    c.expect(
        &cmd(&["PUBSUB", "CHANNELS", "news.*"]),
        b"*2\r\n$6\r\nnews.a\r\n$6\r\nnews.b\r\n",
    );
    c.expect(&cmd(&["PUBSUB", "CHANNELS", "x*"]), b"*0\r\n");
    // RESP3: the same flat arrays.
    c.send(&cmd(&["HELLO", "3"]));
    c.read_until(b"modules\r\n*0\r\n");
    c.expect(
        &cmd(&["PUBSUB", "NUMSUB", "sport"]),
        b"*2\r\n$5\r\nsport\r\n:1\r\n",
    );
    c.expect(
        &cmd(&["PUBSUB", "CHANNELS", "s*"]),
        b"*1\r\n$5\r\nsport\r\n",
    );
    // Errors.
    c.expect(
        &cmd(&["PUBSUB"]),
        b"-ERR wrong number of arguments for 'pubsub' command\r\n",
    );
    c.expect(
        &cmd(&["PUBSUB", "nope"]),
        b"-ERR unknown subcommand 'nope'. Try PUBSUB HELP.\r\n",
    );
    c.expect(
        &cmd(&["PUBSUB", "NUMPAT", "x"]),
        b"-ERR wrong number of arguments for 'pubsub|numpat' command\r\n",
    );
    c.expect(
        &cmd(&["PUBSUB", "Channels", "a", "b"]),
        b"-ERR unknown subcommand or wrong number of arguments for 'Channels'. Try PUBSUB HELP.\r\n",
    );
    c.expect(
        &cmd(&["SUBSCRIBE"]),
        b"-ERR wrong number of arguments for 'subscribe' command\r\n",
    );
    c.expect(
        &cmd(&["PUBLISH", "a"]),
        b"-ERR wrong number of arguments for 'publish' command\r\n",
    );
}

#[test]
fn subscriptions_are_removed_when_the_connection_closes() {
    let h = Harness::start();
    let mut con = h.conn();
    let mut stays = h.raw();
    stays.send(&cmd(&["SUBSCRIBE", "ch"]));
    stays.read_until(b":1\r\n");
    {
        let mut gone = h.raw();
        gone.send(&cmd(&["SUBSCRIBE", "ch", "other"]));
        gone.read_until(b"$5\r\nother\r\n:2\r\n");
        gone.send(&cmd(&["PSUBSCRIBE", "o*"]));
        gone.read_until(b":3\r\n");
        let n: Vec<redis::Value> = q(&mut con, &["PUBSUB", "NUMSUB", "ch", "other"]);
        assert_eq!(n[1], redis::Value::Int(2));
        assert_eq!(q::<i64>(&mut con, &["PUBSUB", "NUMPAT"]), 1);
    }
    eventually("the closed subscriber's subscriptions to go", || {
        let n: Vec<redis::Value> = q(&mut con, &["PUBSUB", "NUMSUB", "ch", "other"]);
        n[1] == redis::Value::Int(1) && n[3] == redis::Value::Int(0)
    });
    assert_eq!(q::<i64>(&mut con, &["PUBSUB", "NUMPAT"]), 0);
    assert_eq!(
        q::<Vec<String>>(&mut con, &["PUBSUB", "CHANNELS"]),
        vec!["ch".to_string()]
    );
    assert_eq!(q::<i64>(&mut con, &["PUBLISH", "ch", "x"]), 1);
    assert_eq!(q::<i64>(&mut con, &["PUBLISH", "other", "x"]), 0);
    stays.expect(b"", b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n");
}

#[test]
fn transactions_and_reset_with_subscriptions() {
    let h = Harness::start();
    let mut c = h.raw();
    let mut other = h.conn();
    // SUBSCRIBE queued in MULTI: EXEC's array holds its two confirmations
    // (Redis writes them so), and the PING after it answers as subscribed.
    let mut reqs = cmd(&["MULTI"]);
    reqs.extend(cmd(&["SUBSCRIBE", "x", "y"]));
    reqs.extend(cmd(&["PING"]));
    reqs.extend(cmd(&["EXEC"]));
    c.expect(
        &reqs,
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n\
          *3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n\
          *3\r\n$9\r\nsubscribe\r\n$1\r\ny\r\n:2\r\n\
          *2\r\n$4\r\npong\r\n$0\r\n\r\n",
    );
    let want = format!("-ERR Can't execute 'multi': {CONTEXT_ERR}\r\n");
    c.expect(&cmd(&["MULTI"]), want.as_bytes());
    // RESET: no subscriptions, no context.
    c.expect(&cmd(&["RESET"]), b"+RESET\r\n");
    let n: Vec<redis::Value> = q(&mut other, &["PUBSUB", "NUMSUB", "x", "y"]);
    assert_eq!(n[1], redis::Value::Int(0));
    assert_eq!(n[3], redis::Value::Int(0));
    assert_eq!(q::<i64>(&mut other, &["PUBLISH", "x", "m"]), 0);
    c.expect(&cmd(&["GET", "k"]), b"$-1\r\n");
    // RESP3: a message to itself from inside EXEC comes inside its array.
    c.send(&cmd(&["HELLO", "3"]));
    c.read_until(b"modules\r\n*0\r\n");
    c.expect(
        &cmd(&["SUBSCRIBE", "s"]),
        b">3\r\n$9\r\nsubscribe\r\n$1\r\ns\r\n:1\r\n",
    );
    let mut reqs = cmd(&["MULTI"]);
    reqs.extend(cmd(&["PUBLISH", "s", "1"]));
    reqs.extend(cmd(&["EXEC"]));
    c.expect(
        &reqs,
        b"+OK\r\n+QUEUED\r\n*1\r\n>3\r\n$7\r\nmessage\r\n$1\r\ns\r\n$1\r\n1\r\n:1\r\n",
    );
}

#[test]
fn a_resp3_subscriber_blocked_in_blpop_still_gets_its_messages() {
    let h = Harness::start();
    let mut sub = h.raw();
    let mut other = h.raw();
    sub.send(&cmd(&["HELLO", "3"]));
    sub.read_until(b"modules\r\n*0\r\n");
    sub.expect(
        &cmd(&["SUBSCRIBE", "bc"]),
        b">3\r\n$9\r\nsubscribe\r\n$2\r\nbc\r\n:1\r\n",
    );
    sub.send(&cmd(&["BLPOP", "blist", "0"]));
    eventually("BLPOP to block", || {
        let mut c = h.conn();
        let info: String = q(&mut c, &["INFO", "clients"]);
        info.contains("blocked_clients:1")
    });
    other.expect(&cmd(&["PUBLISH", "bc", "while-blocked"]), b":1\r\n");
    sub.expect(
        b"",
        b">3\r\n$7\r\nmessage\r\n$2\r\nbc\r\n$13\r\nwhile-blocked\r\n",
    );
    other.expect(&cmd(&["LPUSH", "blist", "v"]), b":1\r\n");
    sub.expect(b"", b"*2\r\n$5\r\nblist\r\n$1\r\nv\r\n");
}

/// One RESP frame, as the tests read them.
#[derive(Debug, PartialEq)]
enum Frame {
    Int(i64),
    Bulk(Vec<u8>),
    Array(Vec<Frame>),
}

/// Reads one frame of integers, bulk strings and arrays (`*` or `>`).
fn read_frame(r: &mut impl BufRead) -> Frame {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    assert!(line.ends_with(b"\r\n"), "truncated frame {line:?}");
    let text = std::str::from_utf8(&line[1..line.len() - 2]).unwrap();
    match line[0] {
        b':' => Frame::Int(text.parse().unwrap()),
        b'$' => {
            let mut data = vec![0; text.parse::<usize>().unwrap() + 2];
            r.read_exact(&mut data).unwrap();
            data.truncate(data.len() - 2);
            Frame::Bulk(data)
        }
        b'*' | b'>' => Frame::Array((0..text.parse().unwrap()).map(|_| read_frame(r)).collect()),
        _ => panic!("unexpected frame {:?}", String::from_utf8_lossy(&line)),
    }
}

#[test]
fn many_publishers_and_subscribers_get_every_message_in_order() {
    const PUBLISHERS: usize = 4;
    const PER_PUBLISHER: usize = 500;
    let h = Harness::start();
    // Subscriber i: 0 and 1 on the channel, 2 on a pattern, 3 on both
    // (every message twice: `message` and `pmessage`).
    let setups: [&[&[&str]]; 4] = [
        &[&["SUBSCRIBE", "bus"]],
        &[&["SUBSCRIBE", "bus"]],
        &[&["PSUBSCRIBE", "b?s"]],
        &[&["SUBSCRIBE", "bus"], &["PSUBSCRIBE", "b*"]],
    ];
    let receivers = 5;
    let mut subs = Vec::new();
    for setup in setups {
        let mut r = BufReader::new(h.raw().sock);
        for c in setup {
            r.get_mut().write_all(&cmd(c)).unwrap();
            let Frame::Array(confirm) = read_frame(&mut r) else {
                panic!("no confirmation")
            };
            assert_eq!(confirm.len(), 3);
        }
        subs.push((r, setup.len() * PUBLISHERS * PER_PUBLISHER));
    }
    let readers: Vec<_> = subs
        .into_iter()
        .map(|(mut r, want)| {
            std::thread::spawn(move || {
                // Next expected sequence number per (kind, publisher).
                let mut next = std::collections::HashMap::new();
                for _ in 0..want {
                    let Frame::Array(f) = read_frame(&mut r) else {
                        panic!("not a message")
                    };
                    let (kind, payload) = match &f[..] {
                        [Frame::Bulk(k), Frame::Bulk(_), Frame::Bulk(p)] => (k.clone(), p),
                        [Frame::Bulk(k), _, Frame::Bulk(_), Frame::Bulk(p)] => (k.clone(), p),
                        _ => panic!("bad message {f:?}"),
                    };
                    let text = String::from_utf8(payload.clone()).unwrap();
                    let (p, seq) = text.split_once(':').unwrap();
                    let seq: usize = seq.parse().unwrap();
                    let n = next.entry((kind, p.to_string())).or_insert(0);
                    assert_eq!(seq, *n, "publisher {p}'s messages out of order");
                    *n += 1;
                }
                next
            })
        })
        .collect();
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            let mut con = h.conn();
            std::thread::spawn(move || {
                for i in 0..PER_PUBLISHER {
                    let n: i64 = q(&mut con, &["PUBLISH", "bus", &format!("p{p}:{i}")]);
                    assert_eq!(n, receivers, "PUBLISH's receiver count");
                }
            })
        })
        .collect();
    for t in publishers {
        t.join().unwrap();
    }
    for t in readers {
        let next = t.join().unwrap();
        assert!(next.values().all(|&n| n == PER_PUBLISHER), "{next:?}");
    }
}

#[test]
fn a_subscriber_that_does_not_read_is_disconnected_not_buffered() {
    let h = Harness::start();
    let mut slow = h.raw();
    slow.expect(
        &cmd(&["SUBSCRIBE", "firehose"]),
        b"*3\r\n$9\r\nsubscribe\r\n$8\r\nfirehose\r\n:1\r\n",
    );
    let mut publ = h.conn();
    let payload = "x".repeat(1 << 20);
    // 96 MiB: more than the 32 MiB queue limit plus the socket buffers.
    // The publisher is never blocked by the subscriber that does not read.
    let mut published = 0;
    for _ in 0..96 {
        let n: i64 = q(&mut publ, &["PUBLISH", "firehose", &payload]);
        assert!(n <= 1);
        published += payload.len();
    }
    eventually("the slow subscriber to be dropped", || {
        let n: Vec<redis::Value> = q(&mut publ, &["PUBSUB", "NUMSUB", "firehose"]);
        n[1] == redis::Value::Int(0)
    });
    assert_eq!(q::<i64>(&mut publ, &["PUBLISH", "firehose", "late"]), 0);
    // What reaches the subscriber before the close is a prefix of the
    // messages, then the connection ends.
    let mut got = Vec::new();
    let end = slow.sock.read_to_end(&mut got);
    assert!(end.is_ok(), "the subscriber is disconnected: {end:?}");
    assert!(got.len() < published, "the connection was closed early");
    let msg = format!(
        "*3\r\n$7\r\nmessage\r\n$8\r\nfirehose\r\n${}\r\n{payload}\r\n",
        payload.len()
    );
    for chunk in got.chunks(msg.len()) {
        assert_eq!(chunk, &msg.as_bytes()[..chunk.len()]);
    }
}

/// Sends `req` (if any) then `PING <marker>` on `sock`, and returns
/// everything received up to PING's reply, whose last line is the marker
/// in every context (`$n marker`, or `*2 pong marker` when subscribed in
/// RESP2): so all replies and messages sent before it are included. A
/// QUIT request is not followed by PING: everything until the close.
fn exchange(sock: &mut TcpStream, req: &[u8], marker: &str) -> Vec<u8> {
    let quit = req == cmd(&["QUIT"]);
    let mut out = req.to_vec();
    if !quit {
        out.extend(cmd(&["PING", marker]));
    }
    sock.write_all(&out).unwrap();
    let mut raw = Raw {
        sock: sock.try_clone().unwrap(),
    };
    if quit {
        let mut got = Vec::new();
        raw.sock.read_to_end(&mut got).unwrap();
        return got;
    }
    raw.read_until(format!("{marker}\r\n").as_bytes())
}

#[test]
fn same_bytes_as_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    let h = Harness::start();
    const CONNS: usize = 6;
    // (connection, request, compare the replies)
    let steps: Vec<(usize, Vec<u8>, bool)> = vec![
        (0, cmd(&["UNSUBSCRIBE"]), true),
        (0, cmd(&["PUNSUBSCRIBE", "p"]), true),
        (0, cmd(&["SUBSCRIBE", "a", "b", "a"]), true),
        (1, cmd(&["PUBLISH", "a", "hello"]), true),
        // Two patterns, one matching (Redis sends the pmessages of several
        // matching patterns in its hash table's order).
        (0, cmd(&["PSUBSCRIBE", "a*", "[xz]*"]), true),
        (1, cmd(&["PUBLISH", "a", "x\r\ny"]), true),
        (1, cmd(&["PUBLISH", "abc", ""]), true),
        (0, cmd(&["PING"]), true),
        (0, cmd(&["PING", "m"]), true),
        (0, cmd(&["PING", "m", "n"]), true),
        (0, cmd(&["GET", "k"]), true),
        (0, cmd(&["SET", "k", "v"]), true),
        (0, cmd(&["PUBLISH", "a", "y"]), true),
        (0, cmd(&["PUBSUB", "NUMSUB", "a"]), true),
        (0, cmd(&["PUBSUB", "NOPE"]), true),
        (0, cmd(&["PUBSUB", "NUMPAT", "x"]), true),
        (0, b"ECHO hi\r\n".to_vec(), true),
        (1, cmd(&["PUBSUB", "NUMSUB", "a", "b", "c"]), true),
        (1, cmd(&["PUBSUB", "NUMSUB"]), true),
        (1, cmd(&["PUBSUB", "NUMPAT"]), true),
        (1, cmd(&["PUBSUB", "CHANNELS", "a"]), true),
        (1, cmd(&["PUBSUB", "CHANNELS", "z*"]), true),
        (1, cmd(&["PUBSUB", "CHANNELS", "a", "b"]), true),
        (1, cmd(&["PUBSUB", "HELP"]), true),
        (1, cmd(&["PUBSUB"]), true),
        (1, cmd(&["SUBSCRIBE"]), true),
        (1, cmd(&["PUBLISH", "a"]), true),
        (0, cmd(&["UNSUBSCRIBE", "b", "zz"]), true),
        (0, cmd(&["UNSUBSCRIBE"]), true),
        (0, cmd(&["PUNSUBSCRIBE", "[xz]*"]), true),
        (0, cmd(&["UNSUBSCRIBE"]), true),
        (0, cmd(&["PUNSUBSCRIBE"]), true),
        (0, cmd(&["GET", "k"]), true),
        // RESP3 (HELLO's reply names the server version: not compared).
        (2, cmd(&["HELLO", "3"]), false),
        (2, cmd(&["UNSUBSCRIBE"]), true),
        (2, cmd(&["SUBSCRIBE", "c"]), true),
        (1, cmd(&["PUBLISH", "c", "z"]), true),
        (2, cmd(&["PUBLISH", "c", "self"]), true),
        (2, cmd(&["GET", "k"]), true),
        (2, cmd(&["PING"]), true),
        (2, cmd(&["PSUBSCRIBE", "c*"]), true),
        (1, cmd(&["PUBLISH", "c", "q"]), true),
        (2, cmd(&["PUBSUB", "NUMSUB", "c"]), true),
        (2, cmd(&["PUNSUBSCRIBE"]), true),
        (2, cmd(&["UNSUBSCRIBE"]), true),
        (2, cmd(&["UNSUBSCRIBE"]), true),
        // Back to RESP2 while subscribed: the context applies again.
        (2, cmd(&["SUBSCRIBE", "d"]), true),
        (2, cmd(&["HELLO", "2"]), false),
        (2, cmd(&["GET", "k"]), true),
        (2, cmd(&["PING"]), true),
        // A pipeline in one write.
        (
            3,
            [cmd(&["SUBSCRIBE", "p"]), cmd(&["PING"]), cmd(&["GET", "k"])].concat(),
            true,
        ),
        (3, cmd(&["QUIT"]), true),
        // SUBSCRIBE inside MULTI: its confirmations inside EXEC's array
        // (more replies than the array announces, as Redis writes them);
        // PING after it in the transaction already answers as subscribed.
        (
            4,
            [
                cmd(&["MULTI"]),
                cmd(&["SUBSCRIBE", "x", "y"]),
                cmd(&["PING"]),
                cmd(&["EXEC"]),
            ]
            .concat(),
            true,
        ),
        (4, cmd(&["MULTI"]), true),
        (1, cmd(&["PUBLISH", "y", "to-4"]), true),
        // RESET leaves the subscribed context and drops the subscriptions.
        (4, cmd(&["RESET"]), true),
        (1, cmd(&["PUBSUB", "NUMSUB", "x", "y"]), true),
        (4, cmd(&["GET", "k"]), true),
        // RESP3, publishing to itself inside a transaction: the message
        // inside EXEC's array, before PUBLISH's count.
        (5, cmd(&["HELLO", "3"]), false),
        (5, cmd(&["SUBSCRIBE", "s"]), true),
        (
            5,
            [
                cmd(&["MULTI"]),
                cmd(&["PUBLISH", "s", "1"]),
                cmd(&["PING"]),
                cmd(&["EXEC"]),
            ]
            .concat(),
            true,
        ),
        (5, cmd(&["RESET"]), true),
        (1, cmd(&["PUBLISH", "s", "gone"]), true),
        (5, cmd(&["PING"]), true),
    ];
    let connect = |addr: std::net::SocketAddr| -> Vec<Option<TcpStream>> {
        (0..CONNS)
            .map(|_| Some(TcpStream::connect(addr).unwrap()))
            .collect()
    };
    let mut theirs = connect(redis.addr);
    let mut ours = connect(h.server.addr());
    for (i, (conn, req, compare)) in steps.iter().enumerate() {
        for c in 0..CONNS {
            let marker = format!("end-{i}-{c}");
            let req: &[u8] = if c == *conn { req } else { b"" };
            let (Some(t), Some(o)) = (&mut theirs[c], &mut ours[c]) else {
                continue;
            };
            let want = exchange(t, req, &marker);
            let got = exchange(o, req, &marker);
            if *compare || c != *conn {
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "step {i} {:?}, connection {c}",
                    String::from_utf8_lossy(req)
                );
            }
            if req == cmd(&["QUIT"]) {
                theirs[c] = None;
                ours[c] = None;
            }
        }
    }
}
