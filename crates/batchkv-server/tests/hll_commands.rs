//! HyperLogLog commands through a real Redis client: values and counts
//! survive restarts, TTLs are kept, the cache write of PFCOUNT is a write
//! WATCH sees (as in Redis), `hll-sparse-max-bytes` takes effect, and
//! batching on or off gives the same answers. Byte-for-byte agreement
//! with redis-server is `redis_diff.rs`'s; the representation's own
//! tests are in `src/hll.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, query_err, Harness, WRONGTYPE};

fn add_range(c: &mut redis::Connection, key: &str, from: u32, to: u32) {
    let mut cmd = redis::cmd("PFADD");
    cmd.arg(key);
    for i in from..to {
        cmd.arg(format!("element:{i}"));
    }
    let _: i64 = cmd.query(c).unwrap();
}

#[test]
fn counts_and_values_survive_a_restart() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        add_range(&mut c, "small", 0, 50);
        add_range(&mut c, "big", 0, 20_000);
        add_range(&mut c, "other", 10_000, 30_000);
        assert_eq!(
            q::<String>(&mut c, &["PFDEBUG", "ENCODING", "small"]),
            "sparse"
        );
        assert_eq!(
            q::<String>(&mut c, &["PFDEBUG", "ENCODING", "big"]),
            "dense"
        );
        let small: i64 = q(&mut c, &["PFCOUNT", "small"]);
        let big: i64 = q(&mut c, &["PFCOUNT", "big"]);
        let union: i64 = q(&mut c, &["PFCOUNT", "big", "other", "missing"]);
        assert_eq!(small, 50, "small sets count exactly");
        assert!((19_500..=20_500).contains(&big), "{big}");
        assert!((29_000..=31_000).contains(&union), "{union}");
        let before: Vec<u8> = q(&mut c, &["GET", "big"]);
        assert_eq!(&before[..4], b"HYLL");
        assert_eq!(before.len(), 12_304);
        drop(c);
        let h = h.restart(|c| c.batch = batch);
        let mut c = h.conn();
        assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "big"]), before);
        assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "small"]), small);
        assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "big", "other"]), union);
        assert_eq!(q::<String>(&mut c, &["TYPE", "big"]), "string");
        // Adding what is there changes nothing.
        assert_eq!(q::<i64>(&mut c, &["PFADD", "small", "element:1"]), 0);
        let _: () = q(&mut c, &["PFMERGE", "u", "big", "other"]);
        assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "u"]), union);
    }
}

#[test]
fn ttls_are_kept_and_types_checked() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h", "a", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "h", "1000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h"]), 3);
    let _: () = q(&mut c, &["PFMERGE", "h", "h"]);
    assert!(q::<i64>(&mut c, &["TTL", "h"]) > 990);
    // A new destination has none.
    let _: () = q(&mut c, &["PFMERGE", "d", "h"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "d"]), -1);
    let _: () = q(&mut c, &["SET", "s", "not an hll"]);
    let _: i64 = q(&mut c, &["RPUSH", "l", "x"]);
    let not_hll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
    assert_eq!(query_err(&mut c, &["PFADD", "s", "a"]), not_hll);
    assert_eq!(query_err(&mut c, &["PFCOUNT", "h", "s"]), not_hll);
    assert_eq!(query_err(&mut c, &["PFMERGE", "h", "s"]), not_hll);
    assert_eq!(query_err(&mut c, &["PFADD", "l", "a"]), WRONGTYPE);
    assert_eq!(query_err(&mut c, &["PFCOUNT", "l"]), WRONGTYPE);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "missing"]), 0);
    // A value damaged in place (its first opcode cut) counts as corrupt.
    let _: i64 = q(&mut c, &["PFADD", "bad", "a"]);
    let _: i64 = q(&mut c, &["APPEND", "bad", "\u{1}"]);
    assert_eq!(
        query_err(&mut c, &["PFCOUNT", "bad"]),
        "INVALIDOBJ Corrupted HLL object detected"
    );
}

/// PFCOUNT with a stale cache stores the count (Redis signals the key as
/// modified): a WATCH of it aborts; a second PFCOUNT reads the cache and
/// changes nothing.
#[test]
fn pfcount_stores_its_cache_and_watch_sees_it() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut other = h.conn();
    let _: i64 = q(&mut c, &["PFADD", "h", "a", "b", "c"]);
    let stale: Vec<u8> = q(&mut c, &["GET", "h"]);
    assert_eq!(stale[15] & 0x80, 0x80, "PFADD marks the cache stale");
    let _: () = q(&mut c, &["WATCH", "h"]);
    assert_eq!(q::<i64>(&mut other, &["PFCOUNT", "h"]), 3);
    let _: () = q(&mut c, &["MULTI"]);
    let _: String = q(&mut c, &["SET", "x", "1"]);
    let r: Option<Vec<String>> = q(&mut c, &["EXEC"]);
    assert_eq!(r, None, "the cache write aborts the transaction");
    let cached: Vec<u8> = q(&mut c, &["GET", "h"]);
    assert_eq!(&cached[8..16], &[3, 0, 0, 0, 0, 0, 0, 0]);
    let _: () = q(&mut c, &["WATCH", "h"]);
    assert_eq!(q::<i64>(&mut other, &["PFCOUNT", "h"]), 3);
    let _: () = q(&mut c, &["MULTI"]);
    let _: String = q(&mut c, &["SET", "x", "1"]);
    let r: Option<Vec<String>> = q(&mut c, &["EXEC"]);
    assert_eq!(
        r,
        Some(vec!["OK".to_string()]),
        "a cached count writes nothing"
    );
    // Inside MULTI: queued, then run in order.
    let _: () = q(&mut c, &["MULTI"]);
    let _: String = q(&mut c, &["PFADD", "t", "x", "y"]);
    let _: String = q(&mut c, &["PFCOUNT", "t", "h"]);
    let _: String = q(&mut c, &["PFCOUNT", "t"]);
    let r: Vec<i64> = q(&mut c, &["EXEC"]);
    assert_eq!(r, vec![1, 5, 2]);
}

#[test]
fn the_sparse_limit_is_a_runtime_setting() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "40"]);
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "hll-sparse-max-bytes"]);
    assert_eq!(got, ["hll-sparse-max-bytes", "40"]);
    add_range(&mut c, "h", 0, 30);
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
    let _: () = q(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    add_range(&mut c, "g", 0, 30);
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "g"]), "sparse");
    assert_eq!(
        q::<i64>(&mut c, &["PFCOUNT", "h"]),
        q::<i64>(&mut c, &["PFCOUNT", "g"])
    );
    assert_eq!(q::<i64>(&mut c, &["PFDEBUG", "TODENSE", "g"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PFDEBUG", "TODENSE", "g"]), 0);
    assert_eq!(
        q::<Vec<u8>>(&mut c, &["GET", "g"])[16..],
        q::<Vec<u8>>(&mut c, &["GET", "h"])[16..]
    );
    let regs: Vec<i64> = q(&mut c, &["PFDEBUG", "GETREG", "h"]);
    assert_eq!(regs.len(), 16_384);
    assert!(regs.iter().filter(|&&r| r > 0).count() <= 30);
    assert_eq!(
        query_err(&mut c, &["PFDEBUG", "DECODE", "h"]),
        "ERR HLL encoding is not sparse"
    );
}
