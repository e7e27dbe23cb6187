//! Behaviours that once differed from redis-server 7.0 (issue 26), each
//! run on a real redis-server and on batchkv with every reply compared
//! byte for byte: WATCH and the keys a command really changed, blocked
//! clients and keys of another type, MOVE/SWAPDB waking blocked clients,
//! PUBLISH inside EXEC, subcommands checked while queuing, HELLO inside
//! EXEC. Without `redis-server` on PATH each test prints `SKIPPED: ...`
//! and returns.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::time::Duration;

use common::reference::{RedisServer, Resp};
use common::{wait_blocked, Harness};

/// A redis-server and a batchkv server, `None` (after printing why)
/// without redis-server.
fn servers() -> Option<(RedisServer, Harness)> {
    Some((RedisServer::start_or_skip()?, Harness::start()))
}

/// The arguments of a command line (split on spaces).
fn args(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// Runs each `;`-separated command of `lines` on `c`, returning the
/// transcript (`command -> reply` lines). `SLEEP ms` pauses.
fn run(c: &mut Resp, lines: &str) -> String {
    let mut out = String::new();
    for line in lines.split(';').map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(ms) = line.strip_prefix("SLEEP ") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
            continue;
        }
        out.push_str(&format!("{line} -> {:?}\n", c.call(&args(line))));
    }
    out
}

/// WATCH scenarios: `setup | watched key | what another client runs`.
/// The watching client then runs `MULTI; PING; EXEC`: EXEC must abort
/// exactly when Redis's does (Redis signals only the keys a command
/// changed, `signalModifiedKey`).
const WATCH_CASES: &str = "\
SET c 1 | l2 | DEL c l2
SET c 1 | l2 | UNLINK c l2
SET c 1 | c | DEL c l2
 | d | SINTERSTORE d s1 s2
SADD s1 a | d | SINTERSTORE d s1 s2
SADD s1 a; SET d x | d | SINTERSTORE d s1 s2
SADD s1 a | s1 | SINTERSTORE d s1 s2
SADD s1 a | d | SUNIONSTORE d s2 s3
SADD s1 a | s1 | SUNIONSTORE d s1 s2
SADD s1 a | d | SDIFFSTORE d s2 s1
ZADD z1 1 a | d | ZUNIONSTORE d 1 z2
ZADD z1 1 a | d | ZINTERSTORE d 2 z1 z2
ZADD z1 1 a | d | ZDIFFSTORE d 1 z2
ZADD z1 1 a | z1 | ZUNIONSTORE d 1 z1
ZADD z1 1 a | d | ZRANGESTORE d z1 5 6
ZADD z1 1 a | z1 | ZRANGESTORE d z1 0 -1
SET a x | d | BITOP AND d b c
SET a x | a | BITOP AND d a
SADD s1 a; SADD s2 a | s2 | SMOVE s1 s2 a
SADD s1 a | s2 | SMOVE s1 s2 a
SADD s1 a | s1 | SMOVE s1 s2 zz
RPUSH l1 a | l2 | LMPOP 2 l1 l2 LEFT
RPUSH l2 a | l1 | LMPOP 2 l1 l2 LEFT
RPUSH l2 a | l1 | BLPOP l1 l2 0
RPUSH l1 a | l2 | LMOVE l1 l2 LEFT LEFT
ZADD z2 1 a | z1 | ZMPOP 2 z1 z2 MIN
ZADD z2 1 a | z1 | BZPOPMIN z1 z2 0
SET a 1 | b | RENAME a b
SET a 1; SET b 2 | a | COPY a b
SET a 1 | b | MSET a 1 b 2
SET a 1; SELECT 1; SET a 2; SELECT 0 | a | SWAPDB 0 1
SELECT 1; SET a 2; SELECT 0 | a | SWAPDB 0 1
SET zz 1 | a | SWAPDB 0 1
SET a 1 | a | FLUSHDB
RPUSH l a | l | LTRIM l 0 -1
RPUSH l a | m | LTRIM l 0 -1
SET c 1 | l2 | MULTI; DEL c l2; EXEC
SET c 1 | c | MULTI; DEL c l2; EXEC
RPUSH l a | l | MULTI; LTRIM l 0 -1; EXEC
SADD s1 a | s1 | MULTI; SUNIONSTORE d s1; EXEC
SET o 1; SET k v PX 50; SLEEP 80 | k | DEL o k
SET k v PX 50; SLEEP 80 | k | SET k w
SET k v PX 50 | k | SLEEP 80
SET k v PX 50 | k | SLEEP 80; GET k";

#[test]
fn watch_sees_only_the_keys_a_command_changed() {
    let Some((redis, h)) = servers() else {
        return;
    };
    let mut differ = Vec::new();
    for case in WATCH_CASES.lines() {
        let [setup, watched, other] = case.split('|').map(str::trim).collect::<Vec<_>>()[..] else {
            panic!("bad case {case}");
        };
        let transcript = |addr| {
            let mut a = Resp::connect(addr, 2).unwrap();
            let mut b = Resp::connect(addr, 2).unwrap();
            a.call(&["FLUSHALL"]);
            let mut t = run(&mut b, setup);
            t += &run(&mut a, &format!("WATCH {watched}"));
            t += &run(&mut b, other);
            t + &run(&mut a, "MULTI; PING; EXEC")
        };
        let want = transcript(redis.addr);
        let got = transcript(h.server.addr());
        if got != want {
            differ.push(format!("{case}\nredis-server:\n{want}batchkv:\n{got}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Blocking scenarios: `database of the blocked client | setup | blocking
/// command | what another client (in database 0) then runs`, where `?`
/// checks that the blocked client has no reply yet. The blocked client's
/// reply is read last.
const BLOCK_CASES: &str = "\
0 |  | BLPOP k 0 | ZADD k 1 a; ?; DEL k; LPUSH k x
0 | ZADD z 1 a | BLPOP k 0 | RENAME z k; ?; DEL k; LPUSH k x
0 | SET s v | BLPOP k1 k2 0 | RENAME s k1; ?; RPUSH k2 x
0 |  | BLPOP k1 k2 0 | SET k1 v; ?; RPUSH k2 x
0 |  | BRPOP k1 k2 0 | SET k1 v; ?; RPUSH k2 x y
0 | SADD s a | BLMPOP 0 2 k1 k2 RIGHT COUNT 2 | COPY s k1; ?; RPUSH k2 x y z
0 | SADD s a | BLMOVE src dst LEFT RIGHT 0 | RENAME s src; ?; DEL src; RPUSH src x
0 | HSET h f v | BRPOPLPUSH src dst 0 | RENAME h src; ?; DEL src; RPUSH src x
0 | SET dst v | BLMOVE src dst LEFT RIGHT 0 | RPUSH src x
0 | RPUSH l a | BZPOPMIN z 0 | RENAME l z; ?; DEL z; ZADD z 1 m
1 |  | BLPOP k 0 | RPUSH k a; MOVE k 1
1 |  | BZPOPMIN k 0 | ZADD k 1 a; MOVE k 1
1 |  | BLPOP k 0 | SET k a; MOVE k 1; ?; SELECT 1; DEL k; RPUSH k b
1 |  | BLPOP k 0 | RPUSH k a; SWAPDB 0 1
1 |  | BZPOPMAX k 0 | ZADD k 1 a 2 b; SWAPDB 1 0
0 | SELECT 1; RPUSH k a; SELECT 0 | BLPOP k 0 | SWAPDB 0 1
1 | SELECT 2; RPUSH k a; SELECT 0 | BLMOVE k d LEFT LEFT 0 | SWAPDB 2 1
1 |  | BLPOP k 0 | RPUSH j a; SWAPDB 0 1; ?; SELECT 1; RPUSH k b";

#[test]
fn blocked_clients_wait_for_their_type_and_moved_keys() {
    let Some((redis, h)) = servers() else {
        return;
    };
    let mut differ = Vec::new();
    for case in BLOCK_CASES.lines() {
        let [db, setup, blocking, steps] = case.split('|').map(str::trim).collect::<Vec<_>>()[..]
        else {
            panic!("bad case {case}");
        };
        let transcript = |addr| {
            let mut a = Resp::connect(addr, 2).unwrap();
            let mut b = Resp::connect(addr, 2).unwrap();
            b.call(&["FLUSHALL"]);
            let mut t = run(&mut b, setup);
            a.call(&["SELECT", db]);
            a.send(&args(blocking));
            let url = format!("redis://{addr}/");
            wait_blocked(
                &mut redis::Client::open(url).unwrap().get_connection().unwrap(),
                1,
            );
            // The blocked client's reply, if one comes within `wait`.
            let mut reply = |wait| {
                if a.pending(wait) {
                    format!("{:?}", a.read())
                } else {
                    "no reply".to_string()
                }
            };
            let mut answered = false;
            for step in steps.split(';').map(str::trim) {
                if step == "?" {
                    let r = reply(Duration::from_millis(100));
                    answered |= r != "no reply";
                    t += &format!("? -> {r}\n");
                } else {
                    t += &run(&mut b, step);
                }
            }
            if !answered {
                t += &format!("{blocking} -> {}\n", reply(Duration::from_secs(5)));
            }
            t
        };
        let want = transcript(redis.addr);
        let got = transcript(h.server.addr());
        if got != want {
            differ.push(format!("{case}\nredis-server:\n{want}batchkv:\n{got}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The messages (and other replies) `c` receives within `wait` of each
/// other.
fn drain(c: &mut Resp, wait: Duration) -> String {
    let mut out = String::new();
    while c.pending(wait) {
        out += &format!("{:?}\n", c.read());
    }
    out
}

#[test]
fn a_message_published_inside_exec_is_delivered_once() {
    let Some((redis, h)) = servers() else {
        return;
    };
    let transcript = |addr| {
        let mut sub = Resp::connect(addr, 2).unwrap();
        let mut sub3 = Resp::connect(addr, 3).unwrap();
        let mut p = Resp::connect(addr, 2).unwrap();
        p.call(&["FLUSHALL"]);
        let mut t = run(&mut sub, "SUBSCRIBE ch");
        t += &run(&mut sub3, "PSUBSCRIBE c*");
        // The publisher subscribes inside its own transaction (RESP3, so
        // it may run other commands): its own message is in EXEC's reply.
        let mut own = Resp::connect(addr, 3).unwrap();
        // COPY ... DB locks a key its arguments do not name: batchkv runs
        // such a transaction a second time holding every lock.
        t += &run(
            &mut own,
            "SET a 1; MULTI; SUBSCRIBE ch; PUBLISH ch m1; COPY a b DB 1; PUBLISH ch m2; EXEC",
        );
        // The rest of EXEC's reply (its own messages are pushes that the
        // reader counts as elements).
        t += &drain(&mut own, Duration::from_millis(300));
        t += &run(&mut p, "MULTI; PUBLISH ch m3; COPY a c DB 1; EXEC");
        t += "subscriber:\n";
        t += &drain(&mut sub, Duration::from_millis(300));
        t += "pattern subscriber:\n";
        t + &drain(&mut sub3, Duration::from_millis(300))
    };
    assert_eq!(transcript(h.server.addr()), transcript(redis.addr));
}

/// Container commands with an unknown subcommand or a subcommand's wrong
/// argument count: refused while queuing (EXEC answers EXECABORT); a
/// subcommand's own argument errors come from EXEC.
const QUEUED_SUBCOMMANDS: &str = "\
PUBSUB BOGUS
PUBSUB NUMPAT x
PUBSUB HELP x
PUBSUB CHANNELS a b
PUBSUB NUMSUB
CONFIG BOGUS
CONFIG GET
CONFIG SET maxclients
CLIENT BOGUS
CLIENT SETNAME
CLIENT KILL
COMMAND BOGUS
COMMAND GETKEYS
COMMAND COUNT x
OBJECT BOGUS
OBJECT ENCODING
OBJECT HELP x
SLOWLOG BOGUS
SLOWLOG LEN x
SLOWLOG GET 1 2";

#[test]
fn subcommands_are_checked_while_queuing() {
    let Some((redis, h)) = servers() else {
        return;
    };
    let transcript = |addr| {
        let mut c = Resp::connect(addr, 2).unwrap();
        let mut t = String::new();
        for line in QUEUED_SUBCOMMANDS.lines() {
            t += &run(&mut c, &format!("MULTI; {line}; PING; EXEC"));
        }
        // A subscribed RESP2 connection: the table's errors come first.
        t += &run(
            &mut c,
            "SUBSCRIBE ch; PUBSUB BOGUS; PUBSUB NUMPAT x; PUBSUB NUMPAT",
        );
        t
    };
    assert_eq!(transcript(h.server.addr()), transcript(redis.addr));
}

/// A transcript (replies escaped, [`run`]) with HELLO's server-specific
/// values (version, client id) blanked.
fn blank_hello(transcript: &str) -> String {
    const CRLF: &str = "\\r\\n";
    let lines: Vec<&str> = transcript.split(CRLF).collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        out.push(lines[i]);
        match lines[i] {
            "version" if i + 2 < lines.len() => {
                out.extend(["$?", "?"]);
                i += 2;
            }
            "id" if i + 1 < lines.len() => {
                out.push(":?");
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.join(CRLF)
}

#[test]
fn hello_inside_exec_switches_the_protocol_of_the_replies_after_it() {
    let Some((redis, h)) = servers() else {
        return;
    };
    let transcript = |addr| {
        let mut out = String::new();
        for proto in [2, 3] {
            let mut c = Resp::connect(addr, proto).unwrap();
            c.call(&["FLUSHALL"]);
            c.call(&["ZADD", "z", "1.5", "a"]);
            c.call(&["HSET", "h", "f", "v"]);
            for switch in ["HELLO 3", "HELLO 2"] {
                let t = run(
                    &mut c,
                    &format!(
                        "MULTI; ZSCORE z a; GET nokey; HGETALL h; {switch}; GET nokey; \
                         ZSCORE z a; HGETALL h; SMEMBERS nokey; EXEC; GET nokey"
                    ),
                );
                out += &blank_hello(&t);
            }
        }
        out
    };
    assert_eq!(transcript(h.server.addr()), transcript(redis.addr));
}
