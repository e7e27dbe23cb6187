//! String commands through a real Redis client, with their error cases.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, query_err, Harness};
use redis::Value;

#[test]
fn get_set_and_set_options() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "k"]), None);
    assert_eq!(q::<String>(&mut c, &["SET", "k", "v1"]), "OK");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "v1");
    // NX / XX
    assert_eq!(q::<Option<String>>(&mut c, &["SET", "k", "v2", "NX"]), None);
    assert_eq!(
        q::<Option<String>>(&mut c, &["SET", "new", "x", "XX"]),
        None
    );
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "new"]), None);
    assert_eq!(q::<String>(&mut c, &["SET", "k", "v2", "XX"]), "OK");
    // GET returns the old value
    assert_eq!(q::<String>(&mut c, &["SET", "k", "v3", "GET"]), "v2");
    assert_eq!(
        q::<Option<String>>(&mut c, &["SET", "k2", "a", "GET"]),
        None
    );
    assert_eq!(q::<String>(&mut c, &["SET", "k2", "b", "NX", "GET"]), "a");
    assert_eq!(q::<String>(&mut c, &["GET", "k2"]), "a");
    // Expiry options
    assert_eq!(q::<String>(&mut c, &["SET", "e", "v", "EX", "100"]), "OK");
    assert!((99..=100).contains(&q::<i64>(&mut c, &["TTL", "e"])));
    assert_eq!(
        q::<String>(&mut c, &["SET", "e", "v", "PX", "100000"]),
        "OK"
    );
    assert!((99_000..=100_000).contains(&q::<i64>(&mut c, &["PTTL", "e"])));
    assert_eq!(q::<String>(&mut c, &["SET", "e", "w", "KEEPTTL"]), "OK");
    assert!(q::<i64>(&mut c, &["PTTL", "e"]) > 90_000);
    assert_eq!(q::<String>(&mut c, &["SET", "e", "w"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["TTL", "e"]), -1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = (now + 1000).to_string();
    assert_eq!(q::<String>(&mut c, &["SET", "e", "v", "EXAT", &at]), "OK");
    assert!((998..=1000).contains(&q::<i64>(&mut c, &["TTL", "e"])));
    let pat = ((now + 1000) * 1000).to_string();
    assert_eq!(q::<String>(&mut c, &["SET", "e", "v", "PXAT", &pat]), "OK");
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "e"]), (now + 1000) as i64);
    // Errors
    for bad in [
        &["SET", "k", "v", "NX", "XX"][..],
        &["SET", "k", "v", "EX", "1", "PX", "1"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "BOGUS"],
        &["SET", "k", "v", "KEEPTTL", "EX", "5"],
    ] {
        assert_eq!(query_err(&mut c, bad), "ERR syntax error", "{bad:?}");
    }
    assert_eq!(
        query_err(&mut c, &["SET", "k", "v", "EX", "0"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        query_err(&mut c, &["SET", "k", "v", "EX", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SET", "k"]),
        "ERR wrong number of arguments for 'set' command"
    );
    assert_eq!(
        query_err(&mut c, &["GET"]),
        "ERR wrong number of arguments for 'get' command"
    );
}

#[test]
fn setnx_setex_psetex_getdel_getset_getex() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["SETNX", "a", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SETNX", "a", "2"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1");
    assert_eq!(q::<String>(&mut c, &["SETEX", "b", "100", "x"]), "OK");
    assert!(q::<i64>(&mut c, &["TTL", "b"]) > 90);
    assert_eq!(q::<String>(&mut c, &["PSETEX", "b", "100000", "y"]), "OK");
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "y");
    assert_eq!(
        query_err(&mut c, &["SETEX", "b", "-1", "x"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        query_err(&mut c, &["PSETEX", "b", "0", "x"]),
        "ERR invalid expire time in 'psetex' command"
    );
    assert_eq!(q::<String>(&mut c, &["GETSET", "a", "3"]), "1");
    assert_eq!(q::<Option<String>>(&mut c, &["GETSET", "none", "z"]), None);
    assert_eq!(q::<String>(&mut c, &["GETDEL", "a"]), "3");
    assert_eq!(q::<Option<String>>(&mut c, &["GETDEL", "a"]), None);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
    // GETEX
    assert_eq!(q::<String>(&mut c, &["GETEX", "none"]), "z");
    assert_eq!(q::<String>(&mut c, &["GETEX", "none", "EX", "100"]), "z");
    assert!(q::<i64>(&mut c, &["TTL", "none"]) > 90);
    assert_eq!(q::<String>(&mut c, &["GETEX", "none", "PERSIST"]), "z");
    assert_eq!(q::<i64>(&mut c, &["TTL", "none"]), -1);
    assert_eq!(
        q::<Option<String>>(&mut c, &["GETEX", "missing", "EX", "5"]),
        None
    );
    assert_eq!(
        query_err(&mut c, &["GETEX", "none", "EX", "5", "PERSIST"]),
        "ERR syntax error"
    );
}

#[test]
fn mget_mset_msetnx() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(
        q::<String>(&mut c, &["MSET", "a", "1", "b", "2", "a", "3"]),
        "OK"
    );
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "a", "b", "c", "a"]),
        vec![Some("3".into()), Some("2".into()), None, Some("3".into())]
    );
    assert_eq!(
        query_err(&mut c, &["MSET", "a", "1", "b"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "c", "1", "a", "x"]), 0);
    assert_eq!(q::<Option<String>>(&mut c, &["GET", "c"]), None);
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "c", "1", "d", "2"]), 1);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["MGET", "c", "d"]),
        vec!["1".to_string(), "2".to_string()]
    );
}

#[test]
fn append_strlen_getrange_setrange() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["APPEND", "s", "Hello"]), 5);
    assert_eq!(q::<i64>(&mut c, &["APPEND", "s", " World"]), 11);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "s"]), 11);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "nope"]), 0);
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "s", "0", "4"]), "Hello");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "s", "-5", "-1"]), "World");
    assert_eq!(
        q::<String>(&mut c, &["GETRANGE", "s", "0", "-1"]),
        "Hello World"
    );
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "s", "5", "3"]), "");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "s", "-1", "-5"]), "");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "s", "6", "100"]), "World");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "nope", "0", "1"]), "");
    assert_eq!(
        query_err(&mut c, &["GETRANGE", "s", "a", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "s", "6", "Redis"]), 11);
    assert_eq!(q::<String>(&mut c, &["GET", "s"]), "Hello Redis");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "pad", "3", "x"]), 4);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "pad"]), b"\0\0\0x".to_vec());
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "empty", "3", ""]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "empty"]), 0);
    assert_eq!(
        query_err(&mut c, &["SETRANGE", "s", "-1", "x"]),
        "ERR offset is out of range"
    );
    assert_eq!(
        query_err(&mut c, &["SETRANGE", "s", "536870911", "xx"]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
}

#[test]
fn counters() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["INCR", "n"]), 1);
    assert_eq!(q::<i64>(&mut c, &["INCRBY", "n", "10"]), 11);
    assert_eq!(q::<i64>(&mut c, &["DECR", "n"]), 10);
    assert_eq!(q::<i64>(&mut c, &["DECRBY", "n", "-5"]), 15);
    assert_eq!(q::<String>(&mut c, &["GET", "n"]), "15");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "10.5"]), "10.5");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "0.1"]), "10.6");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "-5.6"]), "5");
    assert_eq!(q::<String>(&mut c, &["SET", "s", "abc"]), "OK");
    let not_int = "ERR value is not an integer or out of range";
    assert_eq!(query_err(&mut c, &["INCR", "s"]), not_int);
    assert_eq!(query_err(&mut c, &["INCRBY", "n", "x"]), not_int);
    assert_eq!(
        query_err(&mut c, &["DECRBY", "n", "-9223372036854775808"]),
        "ERR decrement would overflow"
    );
    assert_eq!(
        query_err(&mut c, &["INCRBYFLOAT", "s", "1"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        query_err(&mut c, &["INCRBYFLOAT", "n", "x"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        query_err(&mut c, &["INCRBYFLOAT", "f", "inf"]),
        "ERR increment would produce NaN or Infinity"
    );
    assert_eq!(
        q::<String>(&mut c, &["SET", "big", "9223372036854775807"]),
        "OK"
    );
    assert_eq!(
        query_err(&mut c, &["INCR", "big"]),
        "ERR increment or decrement would overflow"
    );
    // INCR keeps a TTL.
    assert_eq!(q::<String>(&mut c, &["SET", "t", "1", "EX", "100"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["INCR", "t"]), 2);
    assert!(q::<i64>(&mut c, &["TTL", "t"]) > 90);
}

#[test]
fn binary_keys_and_values_round_trip() {
    let h = Harness::start();
    let mut c = h.conn();
    let key = b"k\0\r\n\xff".to_vec();
    let val: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let _: () = redis::cmd("SET").arg(&key).arg(&val).query(&mut c).unwrap();
    let got: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
    assert_eq!(got, val);
    let v: Value = redis::cmd("MGET").arg(&key).arg("x").query(&mut c).unwrap();
    assert_eq!(v, Value::Array(vec![Value::BulkString(val), Value::Nil]));
}
