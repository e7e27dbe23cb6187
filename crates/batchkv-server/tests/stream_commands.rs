//! Stream commands through a real Redis client: clock IDs, trimming
//! (approximate trims exactly, within LIMIT), entries and counters
//! surviving restarts, RENAME/COPY keeping the IDs, DEL of a large stream
//! dropping every entry, blocking XREAD woken by another client's XADD
//! (`$` meaning the last ID when it blocked), and XADD inside MULTI.
//! Consumer groups: delivery, acknowledgement, claiming and the group
//! counters across a restart, COPY and DEL taking the groups along, and
//! blocked XREADGROUP clients served by XADD, answering NOGROUP after
//! XGROUP DESTROY and UNBLOCKED after DEL or an overwrite (inside EXEC
//! too).
//! Byte-for-byte agreement with redis-server on random sequences is
//! `redis_diff.rs`'s; ID parsing's own tests are in `src/streams.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::time::{Duration, Instant};

use common::{
    errs, q, qs, query_err, stored_elements, stored_keys_from, wait_blocked, Harness, WRONGTYPE,
};
use redis::Value;

/// XRANGE's reply as (ID, fields and values).
type Entries = Vec<(String, Vec<String>)>;

fn ids(entries: &Entries) -> Vec<&str> {
    entries.iter().map(|(id, _)| id.as_str()).collect()
}

fn parse_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap();
    (ms.parse().unwrap(), seq.parse().unwrap())
}

#[test]
fn clock_ids_increase_and_entries_survive_a_restart() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let mut added = Vec::new();
        for i in 0..200 {
            let id: String = q(&mut c, &["XADD", "s", "*", "n", &i.to_string(), "f", "v"]);
            added.push(id);
        }
        let parsed: Vec<(u64, u64)> = added.iter().map(|id| parse_id(id)).collect();
        assert!(parsed.windows(2).all(|w| w[0] < w[1]), "{added:?}");
        assert!(parsed[0].0 >= before, "{} < {before}", parsed[0].0);
        assert_eq!(q::<i64>(&mut c, &["XLEN", "s"]), 200);
        // `ms-*` within the last millisecond continues its sequence.
        let (ms, seq) = parsed[199];
        let next: String = q(&mut c, &["XADD", "s", &format!("{ms}-*"), "a", "b"]);
        assert_eq!(next, format!("{ms}-{}", seq + 1));
        let all: Entries = qs(&mut c, "XRANGE s - +");
        drop(c);
        let h = h.restart(|c| c.batch = batch);
        let mut c = h.conn();
        assert_eq!(qs::<Entries>(&mut c, "XRANGE s - +"), all);
        assert_eq!(all[7].1, ["n", "7", "f", "v"]);
        assert_eq!(q::<String>(&mut c, &["TYPE", "s"]), "stream");
        assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "s"]), "stream");
        // The last ID survived too: an explicit smaller one is refused.
        assert!(errs(&mut c, &format!("XADD s {ms}-{seq} a b")).contains("equal or smaller"));
        let rev: Entries = qs(&mut c, "XREVRANGE s + - COUNT 3");
        assert_eq!(
            ids(&rev),
            ids(&all).iter().rev().take(3).copied().collect::<Vec<_>>()
        );
        assert_eq!(errs(&mut c, "HSET s f v"), WRONGTYPE);
        assert_eq!(qs::<i64>(&mut c, "XLEN missing"), 0);
    }
}

#[test]
fn trimming_keeps_the_newest_and_approximate_trims_within_limit() {
    let h = Harness::start();
    let mut c = h.conn();
    // Nodes of 4 entries: `~` removes whole ones (the counts redis-server
    // 7.0.15 gives for these commands).
    let _: () = qs(&mut c, "CONFIG SET stream-node-max-entries 4");
    for i in 1..=20 {
        let _: String = q(
            &mut c,
            &["XADD", "t", &format!("{i}-0"), "i", &i.to_string()],
        );
    }
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN = 15"), 5);
    assert_eq!(ids(&qs(&mut c, "XRANGE t - + COUNT 1")), ["6-0"]);
    // The rest of the first node (3 entries), then one node (the next
    // would pass LIMIT), then none (it would leave fewer than 5).
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN ~ 5 LIMIT 4"), 3);
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN ~ 5 LIMIT 4"), 4);
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN ~ 5"), 0);
    assert_eq!(ids(&qs(&mut c, "XRANGE t - + COUNT 1")), ["13-0"]);
    // After an XDEL inside the stream the nodes are unknown: exact (Redis
    // would remove nothing: LIMIT is below the node's 3 live entries).
    assert_eq!(qs::<i64>(&mut c, "XDEL t 14-0"), 1);
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN ~ 5 LIMIT 1"), 1);
    // The deleted entry is now before the first: nodes again (15 and 16
    // end a node; removing them would leave 4).
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MAXLEN ~ 5"), 0);
    assert_eq!(
        ids(&qs(&mut c, "XRANGE t - +")),
        ["15-0", "16-0", "17-0", "18-0", "19-0", "20-0"]
    );
    assert_eq!(qs::<i64>(&mut c, "XTRIM t MINID 18"), 3);
    // XADD trims after adding: MAXLEN 0 leaves an empty stream that keeps
    // its last ID.
    assert_eq!(qs::<String>(&mut c, "XADD t MAXLEN 0 30-* a b"), "30-0");
    assert_eq!(qs::<i64>(&mut c, "XLEN t"), 0);
    assert_eq!(qs::<i64>(&mut c, "EXISTS t"), 1);
    assert!(errs(&mut c, "XADD t 29-0 a b").contains("equal or smaller"));
    assert_eq!(qs::<String>(&mut c, "XADD t 30-* a b"), "30-1");
    assert_eq!(qs::<i64>(&mut c, "XDEL t 30-1 30-1 1-0"), 1);
    assert_eq!(qs::<i64>(&mut c, "XLEN t"), 0);
    // XSETID moves the last ID (not below the top item).
    let _: () = qs(&mut c, "XSETID t 100-5 ENTRIESADDED 50");
    assert_eq!(qs::<String>(&mut c, "XADD t 100-* a b"), "100-6");
    assert!(errs(&mut c, "XSETID t 99-0").contains("smaller than the target stream top item"));
    assert_eq!(errs(&mut c, "XSETID nosuch 1-1"), "ERR no such key");
}

#[test]
fn copies_keep_ids_and_large_deletes_drop_every_entry() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut pipe = redis::pipe();
    for i in 1..=1000 {
        pipe.cmd("XADD")
            .arg("big")
            .arg(format!("{i}-1"))
            .arg("f")
            .arg(i);
    }
    let _: Vec<String> = pipe.query(&mut c).unwrap();
    let _: i64 = qs(&mut c, "XDEL big 1-1 500-1");
    let _: i64 = qs(&mut c, "COPY big copy");
    let _: () = qs(&mut c, "RENAME big moved");
    let a: Entries = qs(&mut c, "XRANGE moved - +");
    let b: Entries = qs(&mut c, "XRANGE copy - +");
    assert_eq!(a.len(), 998);
    assert_eq!(a, b);
    assert_eq!(a[0].0, "2-1");
    // The counters moved with the entries: the next ID follows 1000-1.
    assert_eq!(qs::<String>(&mut c, "XADD copy 1000-* x y"), "1000-2");
    assert_eq!(qs::<i64>(&mut c, "DEL moved copy"), 2);
    let dir = h.stop();
    assert_eq!(stored_elements(dir.path()), 0);
}

#[test]
fn blocked_readers_wake_on_another_clients_add() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: String = qs(&mut c, "XADD s 5-0 a b");
    let reader = |line: &'static str| {
        let mut r = h.conn();
        std::thread::spawn(move || {
            let start = Instant::now();
            let v: Value = qs(&mut r, line);
            (v, start.elapsed())
        })
    };
    // `$` is the last ID when the reader blocked: 5-0, not what a retry
    // sees; both readers get the new entry (reading takes nothing away).
    let one = reader("XREAD BLOCK 0 STREAMS s $");
    let two = reader("XREAD COUNT 5 BLOCK 10000 STREAMS other s 0 $");
    wait_blocked(&mut c, 2);
    let _: String = qs(&mut c, "XADD s 6-0 x y");
    for t in [one, two] {
        let (v, _) = t.join().unwrap();
        let want = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"s".to_vec()),
            Value::Array(vec![Value::Array(vec![
                Value::BulkString(b"6-0".to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"x".to_vec()),
                    Value::BulkString(b"y".to_vec()),
                ]),
            ])]),
        ])]);
        assert_eq!(v, want);
    }
    // A key of another type does not serve a blocked reader, and a
    // timeout answers nil.
    let three = reader("XREAD BLOCK 300 STREAMS l $");
    wait_blocked(&mut c, 1);
    let _: i64 = qs(&mut c, "RPUSH l x");
    let (v, took) = three.join().unwrap();
    assert_eq!(v, Value::Nil);
    assert!(took >= Duration::from_millis(290), "{took:?}");
    assert_eq!(errs(&mut c, "XREAD STREAMS l 0"), WRONGTYPE);
    // Inside MULTI a blocking read does not block.
    let mut p = redis::pipe();
    p.atomic().cmd("XADD").arg("s").arg("7-0").arg("k").arg("v");
    p.cmd("XREAD")
        .arg("BLOCK")
        .arg(0)
        .arg("STREAMS")
        .arg("s")
        .arg("$");
    let (id, read): (String, Value) = p.query(&mut c).unwrap();
    assert_eq!(id, "7-0");
    assert_eq!(read, Value::Nil);
}

/// A reply as text: bulk strings and integers as themselves, nil as
/// "nil", arrays flattened with spaces (as `redis-cli` prints them).
fn flat(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Array(a) | Value::Set(a) => a.iter().map(flat).collect::<Vec<_>>().join(" "),
        Value::Map(m) => m
            .iter()
            .map(|(k, v)| format!("{} {}", flat(k), flat(v)))
            .collect::<Vec<_>>()
            .join(" "),
        other => format!("{other:?}"),
    }
}

fn fq(c: &mut redis::Connection, line: &str) -> String {
    flat(&qs::<Value>(c, line))
}

/// Stored records of consumer groups (first byte 0x15).
const GROUP_RECORDS: u8 = 0x15;

#[test]
fn consumer_groups_deliver_acknowledge_claim_and_survive_a_restart() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        for i in 1..=5 {
            let _: String = q(
                &mut c,
                &["XADD", "s", &format!("{i}-1"), "n", &i.to_string()],
            );
        }
        let _: () = qs(&mut c, "XGROUP CREATE s g 0");
        assert_eq!(
            fq(&mut c, "XREADGROUP GROUP g alice COUNT 2 STREAMS s >"),
            "s 1-1 n 1 2-1 n 2"
        );
        assert_eq!(
            fq(&mut c, "XREADGROUP GROUP g bob STREAMS s >"),
            "s 3-1 n 3 4-1 n 4 5-1 n 5"
        );
        // Nothing new: a null array, and no consumer is created.
        assert_eq!(fq(&mut c, "XREADGROUP GROUP g eve STREAMS s >"), "nil");
        assert_eq!(fq(&mut c, "XPENDING s g"), "5 1-1 5-1 alice 2 bob 3");
        assert_eq!(qs::<i64>(&mut c, "XACK s g 1-1 1-1 9-9"), 1);
        drop(c);
        let h = h.restart(|c| c.batch = batch);
        let mut c = h.conn();
        assert_eq!(fq(&mut c, "XPENDING s g"), "4 2-1 5-1 alice 1 bob 3");
        // History: alice's own pending entries, delivered once more.
        assert_eq!(
            fq(&mut c, "XREADGROUP GROUP g alice STREAMS s 0"),
            "s 2-1 n 2"
        );
        let p: Vec<Vec<Value>> = qs(&mut c, "XPENDING s g - + 10 alice");
        assert_eq!(
            (p.len(), flat(&p[0][0]), flat(&p[0][3])),
            (1, "2-1".into(), "2".into())
        );
        assert_eq!(fq(&mut c, "XCLAIM s g bob 0 2-1 JUSTID"), "2-1");
        // COUNT bounds the claims; the cursor is the next pending entry.
        assert_eq!(
            fq(&mut c, "XAUTOCLAIM s g carol 0 0 COUNT 2 JUSTID"),
            "4-1 2-1 3-1 "
        );
        // A deleted entry leaves the PEL and is reported.
        let _: i64 = qs(&mut c, "XDEL s 5-1");
        assert_eq!(
            fq(&mut c, "XAUTOCLAIM s g carol 0 0 JUSTID"),
            "0-0 2-1 3-1 4-1 5-1"
        );
        assert_eq!(
            fq(&mut c, "XINFO GROUPS s"),
            "name g consumers 3 pending 3 last-delivered-id 5-1 entries-read 5 lag 0"
        );
        // Owner and delivery count of each pending entry (JUSTID claims
        // keep the count; idle times are not compared).
        let p: Vec<Vec<Value>> = qs(&mut c, "XPENDING s g - + 10");
        let owners: Vec<String> = p
            .iter()
            .map(|e| format!("{} {} {}", flat(&e[0]), flat(&e[1]), flat(&e[3])))
            .collect();
        assert_eq!(owners, ["2-1 carol 2", "3-1 carol 1", "4-1 carol 1"]);
        assert_eq!(fq(&mut c, "XGROUP DELCONSUMER s g carol"), "3");
        assert_eq!(fq(&mut c, "XPENDING s g"), "0 nil nil nil");
        // MKSTREAM makes an empty stream that exists; errors as Redis's.
        let _: () = qs(&mut c, "XGROUP CREATE e g $ MKSTREAM");
        assert_eq!(fq(&mut c, "XLEN e"), "0");
        assert_eq!(fq(&mut c, "EXISTS e"), "1");
        assert_eq!(
            errs(&mut c, "XGROUP CREATE e g $"),
            "BUSYGROUP Consumer Group name already exists"
        );
        assert!(errs(&mut c, "XACK s g x").contains("Invalid stream ID"));
        assert!(errs(&mut c, "XREADGROUP GROUP nog c STREAMS s >").starts_with("NOGROUP"));
        let _: () = qs(&mut c, "SET str v");
        assert_eq!(errs(&mut c, "XPENDING str g"), WRONGTYPE);
        // COPY takes the groups along; DEL drops every group record.
        assert_eq!(fq(&mut c, "XREADGROUP GROUP g dave STREAMS s 0"), "s ");
        assert_eq!(
            fq(&mut c, "XINFO GROUPS s"),
            "name g consumers 3 pending 0 last-delivered-id 5-1 entries-read 5 lag 0"
        );
        assert_eq!(qs::<i64>(&mut c, "COPY s s2"), 1);
        assert_eq!(fq(&mut c, "XINFO GROUPS s2"), fq(&mut c, "XINFO GROUPS s"));
        assert_eq!(qs::<i64>(&mut c, "DEL s s2 e"), 3);
        drop(c);
        let dir = h.stop();
        assert_eq!(stored_keys_from(dir.path(), GROUP_RECORDS), 0);
    }
}

#[test]
fn blocked_group_readers_are_served_or_told_the_group_or_key_went_away() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = qs(&mut c, "XGROUP CREATE s g $ MKSTREAM");
    let reader = |line: &'static str| {
        let mut r = h.conn();
        std::thread::spawn(move || {
            let args: Vec<&str> = line.split(' ').collect();
            let mut cmd = redis::cmd(args[0]);
            for a in &args[1..] {
                cmd.arg(*a);
            }
            cmd.query::<Value>(&mut r)
                .map(|v| flat(&v))
                .map_err(common::err_text)
        })
    };
    let one = reader("XREADGROUP GROUP g c1 BLOCK 0 STREAMS s >");
    wait_blocked(&mut c, 1);
    let _: String = qs(&mut c, "XADD s 1-1 a b");
    assert_eq!(one.join().unwrap().unwrap(), "s 1-1 a b");
    assert_eq!(fq(&mut c, "XPENDING s g"), "1 1-1 1-1 c1 1");
    // The group is destroyed under a blocked reader.
    let _: () = qs(&mut c, "XGROUP CREATE s g2 $");
    let two = reader("XREADGROUP GROUP g2 c1 BLOCK 0 STREAMS s >");
    wait_blocked(&mut c, 1);
    assert_eq!(qs::<i64>(&mut c, "XGROUP DESTROY s g2"), 1);
    assert_eq!(
        two.join().unwrap().unwrap_err(),
        "NOGROUP the consumer group this client was blocked on no longer exists"
    );
    // The key is deleted, or overwritten (inside EXEC: woken by EXEC's
    // write).
    let _: i64 = qs(&mut c, "DEL s");
    for how in ["DEL", "SET", "MULTI", "FLUSHDB", "FLUSHALL", "SWAPDB"] {
        let _: () = qs(&mut c, "XGROUP CREATE s g $ MKSTREAM");
        let three = reader("XREADGROUP GROUP g c2 BLOCK 0 STREAMS s >");
        wait_blocked(&mut c, 1);
        match how {
            "DEL" => assert_eq!(qs::<i64>(&mut c, "DEL s"), 1),
            "SET" => qs::<()>(&mut c, "SET s v"),
            "FLUSHDB" | "FLUSHALL" => qs::<()>(&mut c, how),
            // Database 1 is empty: the stream moves there.
            "SWAPDB" => qs::<()>(&mut c, "SWAPDB 0 1"),
            _ => {
                let mut p = redis::pipe();
                p.atomic().cmd("DEL").arg("s").cmd("PING");
                let _: Value = p.query(&mut c).unwrap();
            }
        }
        assert_eq!(
            three.join().unwrap().unwrap_err(),
            "UNBLOCKED the stream key no longer exists",
            "{how}"
        );
        let _: i64 = qs(&mut c, "DEL s");
    }
    assert_eq!(
        query_err(&mut c, &["XINFO", "GROUPS", "s"]),
        "ERR no such key"
    );
}
