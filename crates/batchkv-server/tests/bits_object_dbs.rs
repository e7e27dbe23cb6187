//! Bit commands, LCS, OBJECT/TOUCH, MOVE/SWAPDB and Redis 7.0's option
//! rules for SET/GETEX/EXPIRE, through a real Redis client. Replies were
//! taken from redis-server 7.0.15.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, query_err, Harness};

#[test]
fn bits_are_set_counted_and_found() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "7", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "7", "0"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "100", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "b"]), 13);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", "100"]), 1);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", "1000000"]), 0);
    assert_eq!(
        query_err(&mut c, &["SETBIT", "b", "4294967296", "1"]),
        "ERR bit offset is not an integer or out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SETBIT", "b", "1", "2"]),
        "ERR bit is not an integer or out of range"
    );
    let _: () = q(&mut c, &["SET", "s", "foobar"]);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "1", "1"]), 6);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "5", "30", "BIT"]), 17);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "-2", "-1"]), 7);
    assert_eq!(
        query_err(&mut c, &["BITCOUNT", "s", "0"]),
        "ERR syntax error"
    );
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "s", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "s", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "s", "1", "7", "15", "BIT"]), 9);
    assert_eq!(
        query_err(&mut c, &["BITPOS", "s", "2"]),
        "ERR The bit argument must be 1 or 0."
    );
    let _: () = q(&mut c, &["SET", "ff", "\u{7f}\u{7f}"]);
    let _: i64 = q(&mut c, &["SETBIT", "ff", "0", "1"]);
    let _: i64 = q(&mut c, &["SETBIT", "ff", "8", "1"]);
    // All ones: with no end the string counts as padded with zeros.
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "ff", "0"]), 16);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "ff", "0", "0", "-1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "nokey", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "nokey", "1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "s", "ff"]), 6);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), b"fo\0\0\0\0");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "NOT", "d", "ff"]), 2);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), [0, 0]);
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "nokey"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0);
    assert_eq!(
        query_err(&mut c, &["BITOP", "NOT", "d", "s", "ff"]),
        "ERR BITOP NOT must be called with a single source key."
    );
}

#[test]
fn lcs_matches_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["MSET", "a", "ohmytext", "b", "mynewtext"]);
    assert_eq!(q::<String>(&mut c, &["LCS", "a", "b"]), "mytext");
    assert_eq!(q::<i64>(&mut c, &["LCS", "a", "b", "LEN"]), 6);
    // Exact bytes of redis-server 7.0.15's replies.
    let mut raw = h.raw();
    raw.expect(
        b"LCS a b IDX WITHMATCHLEN\r\n",
        b"*4\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n\
          *3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n",
    );
    raw.expect(
        b"LCS a b IDX MINMATCHLEN 4\r\n",
        b"*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n\
          $3\r\nlen\r\n:6\r\n",
    );
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(
        query_err(&mut c, &["LCS", "a", "h"]),
        "ERR The specified keys must contain string values"
    );
}

/// LCS reads both keys at one snapshot (as every keyed read does,
/// `commands::call_slot`): with a writer flipping both
/// between two strings that share nothing, in one MSET each time, LCS
/// always sees a pair written together (a full-length match).
#[test]
fn lcs_reads_both_keys_at_one_moment() {
    let h = Harness::start();
    let mut c = h.conn();
    let (x, y) = ("a".repeat(64), "b".repeat(64));
    let _: () = q(&mut c, &["MSET", "a", &x, "b", &x]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (mut w, stop, x, y) = (h.conn(), stop.clone(), x.clone(), y.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let v = if n.is_multiple_of(2) { &y } else { &x };
                    let _: () = q(&mut w, &["MSET", "a", v, "b", v]);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let (mut torn, mut reads) = (0, 0);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while std::time::Instant::now() < until {
        reads += 1;
        if q::<i64>(&mut c, &["LCS", "a", "b", "LEN"]) != 64 {
            torn += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(writes > 0 && reads > 0, "both sides ran");
    assert_eq!(
        torn, 0,
        "LCS saw a pair never written together ({torn} of {reads} reads, {writes} writes)"
    );
}

#[test]
fn object_touch_move_swapdb() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(
        &mut c,
        &["MSET", "i", "123", "e", "abc", "r", &"x".repeat(45)],
    );
    for (k, enc) in [("i", "int"), ("e", "embstr"), ("r", "raw")] {
        assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", k]), enc);
    }
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "h"]),
        "listpack"
    );
    // The encoding follows the thresholds CONFIG SET gives.
    let _: i64 = q(&mut c, &["ZADD", "z", "1", "abcdef", "2", "b"]);
    let _: i64 = q(&mut c, &["SADD", "s", "1", "2", "3"]);
    let enc = |c: &mut redis::Connection| -> Vec<String> {
        ["h", "z", "s"]
            .iter()
            .map(|k| q::<String>(c, &["OBJECT", "ENCODING", k]))
            .collect()
    };
    assert_eq!(enc(&mut c), ["listpack", "listpack", "intset"]);
    for (param, v) in [
        ("hash-max-ziplist-value", "0"),
        ("zset-max-listpack-value", "5"),
        ("set-max-intset-entries", "2"),
    ] {
        let _: () = q(&mut c, &["CONFIG", "SET", param, v]);
    }
    assert_eq!(enc(&mut c), ["hashtable", "skiplist", "hashtable"]);
    let _: () = q(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-value",
            "64",
            "hash-max-listpack-entries",
            "0",
            "zset-max-listpack-value",
            "64",
            "zset-max-listpack-entries",
            "1",
            "set-max-intset-entries",
            "512",
        ],
    );
    assert_eq!(enc(&mut c), ["hashtable", "skiplist", "intset"]);
    assert_eq!(q::<i64>(&mut c, &["DEL", "z", "s"]), 2);
    assert_eq!(
        q::<Option<String>>(&mut c, &["OBJECT", "ENCODING", "none"]),
        None
    );
    assert_eq!(
        query_err(&mut c, &["OBJECT", "FOO", "a"]),
        "ERR unknown subcommand 'FOO'. Try OBJECT HELP."
    );
    assert_eq!(q::<i64>(&mut c, &["TOUCH", "i", "h", "none"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "h", "1000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "h", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "h", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "i", "1"]), 1);
    assert_eq!(
        query_err(&mut c, &["MOVE", "e", "0"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        query_err(&mut c, &["MOVE", "e", "99"]),
        "ERR DB index is out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 2);
    // Swap: db 0 now holds h (with its TTL and field) and i.
    let _: () = q(&mut c, &["SWAPDB", "0", "1"]);
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "f"]), "v");
    assert!(q::<i64>(&mut c, &["TTL", "h"]) > 990);
    assert_eq!(q::<String>(&mut c, &["GET", "i"]), "123");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "e"]), 0);
    let _: () = q(&mut c, &["SELECT", "1"]);
    assert_eq!(q::<String>(&mut c, &["GET", "e"]), "abc");
    assert_eq!(
        query_err(&mut c, &["SWAPDB", "a", "1"]),
        "ERR invalid first DB index"
    );
    assert_eq!(
        query_err(&mut c, &["SWAPDB", "0", "20"]),
        "ERR DB index is out of range"
    );
    // Survives a restart (the swap rewrote the stored keys).
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "f"]), "v");
}

#[test]
fn expiry_options_follow_redis_7_0() {
    let h = Harness::start();
    let mut c = h.conn();
    // A repeated option: the last one wins; two kinds: syntax error.
    let _: () = q(&mut c, &["SET", "k", "v", "EX", "200", "EX", "100"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), 100);
    for bad in [
        &["SET", "k", "v", "EX", "100", "PX", "100"][..],
        &["SET", "k", "v", "KEEPTTL", "EX", "100"],
        &["GETEX", "k", "PERSIST", "EX", "10"],
    ] {
        assert_eq!(query_err(&mut c, bad), "ERR syntax error", "{bad:?}");
    }
    // GETEX checks the time only for a key that exists.
    assert_eq!(
        q::<Option<String>>(&mut c, &["GETEX", "missing", "PXAT", "-1"]),
        None
    );
    assert_eq!(
        query_err(&mut c, &["GETEX", "k", "PXAT", "-1"]),
        "ERR invalid expire time in 'getex' command"
    );
    // No TTL is infinite: LT applies, GT does not; EXPIRETIME rounds
    // without wrapping.
    let _: () = q(&mut c, &["SET", "n", "v"]);
    assert_eq!(
        q::<i64>(&mut c, &["PEXPIREAT", "n", "9223372036854775807", "GT"]),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, &["PEXPIREAT", "n", "9223372036854775807", "LT"]),
        1
    );
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "n"]), 9223372036854776);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "n"]), i64::MAX);
}

/// BITFIELD and BITFIELD_RO, with redis-server 7.0.15's replies.
#[test]
fn bitfield_reads_and_writes_integers_with_overflow_rules() {
    let h = Harness::start();
    let mut c = h.conn();
    let r: Vec<Option<i64>> = q(
        &mut c,
        &[
            "BITFIELD", "bf", "SET", "u8", "0", "255", "GET", "u8", "0", "INCRBY", "u8", "0", "10",
            "OVERFLOW", "SAT", "INCRBY", "u8", "0", "300", "OVERFLOW", "FAIL", "INCRBY", "u8", "0",
            "1", "GET", "i4", "#1",
        ],
    );
    assert_eq!(r, [Some(0), Some(255), Some(9), Some(255), None, Some(-1)]);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "bf"]), [0xff]);
    // A write FAIL refuses still grows the string, as in Redis.
    let r: Vec<Option<i64>> = q(
        &mut c,
        &[
            "BITFIELD", "bf", "OVERFLOW", "FAIL", "SET", "i8", "100", "1000",
        ],
    );
    assert_eq!(r, [None]);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "bf"]), 14);
    let r: Vec<i64> = q(
        &mut c,
        &["BITFIELD_RO", "bf", "GET", "u4", "0", "GET", "i64", "0"],
    );
    assert_eq!(r, [15, -72_057_594_037_927_936]);
    for (args, err) in [
        (
            &["BITFIELD_RO", "bf", "SET", "u8", "0", "1"][..],
            "ERR BITFIELD_RO only supports the GET subcommand",
        ),
        (
            &["BITFIELD", "bf", "GET", "u64", "0"],
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        ),
        (
            &["BITFIELD", "bf", "GET", "i8", "-1"],
            "ERR bit offset is not an integer or out of range",
        ),
        (&["BITFIELD", "bf", "OVERFLOW", "bogus"], "ERR Invalid OVERFLOW type specified"),
        (&["BITFIELD", "bf", "INCRBY", "i8", "0"], "ERR syntax error"),
        (
            &["BITFIELD", "bf", "SET", "i8", "0", "x"],
            "ERR value is not an integer or out of range",
        ),
    ] {
        assert_eq!(query_err(&mut c, args), err, "{args:?}");
    }
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["BITFIELD", "bf"]),
        Vec::<i64>::new()
    );
    // The TTL is kept; another type is WRONGTYPE.
    let _: i64 = q(&mut c, &["EXPIRE", "bf", "100"]);
    let _: Vec<i64> = q(&mut c, &["BITFIELD", "bf", "INCRBY", "i5", "#3", "7"]);
    assert!(q::<i64>(&mut c, &["TTL", "bf"]) > 90);
    let _: i64 = q(&mut c, &["RPUSH", "l", "x"]);
    assert_eq!(
        query_err(&mut c, &["BITFIELD_RO", "l", "GET", "u8", "0"]),
        common::WRONGTYPE
    );
}
