//! SORT and SORT_RO through a real Redis client (replies from
//! redis-server 7.0.15): numeric and ALPHA order, BY and GET patterns,
//! LIMIT, STORE replacing any type and waking a blocked client, batching
//! on and off. Random sequences against redis-server: `redis_diff.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, query_err, wait_blocked, Harness, WRONGTYPE};

#[test]
fn sorts_by_number_alpha_and_patterns() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        let _: i64 = q(&mut c, &["RPUSH", "l", "3", "10", "-1.5", "2", "0x10"]);
        let got: Vec<String> = q(&mut c, &["SORT", "l"]);
        assert_eq!(got, ["-1.5", "2", "3", "10", "0x10"]);
        let got: Vec<String> = q(&mut c, &["SORT", "l", "ALPHA", "DESC", "LIMIT", "1", "2"]);
        assert_eq!(got, ["2", "10"]);
        let got: Vec<String> = q(
            &mut c,
            &["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "0", "2"],
        );
        assert_eq!(got, ["0x10", "2"]);
        // Weights and hash fields named by the elements.
        for (e, w) in [("3", "1"), ("10", "0"), ("2", "5")] {
            let _: () = q(&mut c, &["SET", &format!("w_{e}"), w]);
            let _: i64 = q(
                &mut c,
                &["HSET", &format!("h_{e}"), "name", &format!("n{e}")],
            );
        }
        // Missing weights sort as 0, ties by the elements' bytes.
        let got: Vec<Option<String>> = q(
            &mut c,
            &["SORT", "l", "BY", "w_*", "GET", "#", "GET", "h_*->name"],
        );
        let want = ["-1.5", "", "0x10", "", "10", "n10", "3", "n3", "2", "n2"];
        let want: Vec<Option<String>> = want
            .iter()
            .map(|s| (!s.is_empty()).then(|| s.to_string()))
            .collect();
        assert_eq!(got, want);
        let _: i64 = q(&mut c, &["SADD", "s", "b", "a", "c"]);
        assert_eq!(
            query_err(&mut c, &["SORT", "s"]),
            "ERR One or more scores can't be converted into double"
        );
        let got: Vec<String> = q(&mut c, &["SORT_RO", "s", "ALPHA"]);
        assert_eq!(got, ["a", "b", "c"]);
        let _: i64 = q(&mut c, &["ZADD", "z", "3", "x", "1", "y", "2", "z"]);
        let got: Vec<String> = q(&mut c, &["SORT", "z", "BY", "nosort"]);
        assert_eq!(got, ["y", "z", "x"]);
        assert_eq!(
            q::<Vec<String>>(&mut c, &["SORT", "missing"]),
            Vec::<String>::new()
        );
        let _: () = q(&mut c, &["SET", "str", "x"]);
        assert_eq!(query_err(&mut c, &["SORT", "str"]), WRONGTYPE);
        assert_eq!(
            query_err(&mut c, &["SORT_RO", "l", "STORE", "d"]),
            "ERR syntax error"
        );
        assert_eq!(
            query_err(&mut c, &["SORT", "l", "LIMIT", "x", "1"]),
            "ERR value is not an integer or out of range"
        );
    }
}

#[test]
fn store_replaces_any_type_and_wakes_a_blocked_client() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = q(&mut c, &["SADD", "s", "b", "a", "c"]);
    let _: i64 = q(&mut c, &["HSET", "dst", "f", "v"]);
    let _: i64 = q(&mut c, &["EXPIRE", "dst", "100"]);
    // A set BY nosort with STORE is sorted ALPHA, as Redis does.
    assert_eq!(
        q::<i64>(&mut c, &["SORT", "s", "BY", "nosort", "STORE", "dst"]),
        3
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "dst", "0", "-1"]),
        ["a", "b", "c"]
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "dst"]), -1);
    // Missing GET values are stored as empty strings; an empty result
    // deletes the destination.
    assert_eq!(
        q::<i64>(
            &mut c,
            &["SORT", "s", "ALPHA", "GET", "nostar", "STORE", "dst"]
        ),
        3
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "dst", "0", "-1"]),
        ["", "", ""]
    );
    assert_eq!(q::<i64>(&mut c, &["SORT", "missing", "STORE", "dst"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "dst"]), 0);
    let waiter = std::thread::spawn({
        let client = h.client();
        move || {
            let mut b = client.get_connection().unwrap();
            q::<Option<(String, String)>>(&mut b, &["BLPOP", "out", "5"])
        }
    });
    wait_blocked(&mut c, 1);
    assert_eq!(
        q::<i64>(&mut c, &["SORT", "s", "ALPHA", "DESC", "STORE", "out"]),
        3
    );
    assert_eq!(waiter.join().unwrap(), Some(("out".into(), "c".into())));
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "out", "0", "-1"]),
        ["b", "a"]
    );
    // Inside MULTI, after a write to the source in the same transaction.
    let _: () = q(&mut c, &["MULTI"]);
    let _: String = q(&mut c, &["SADD", "s", "0"]);
    let _: String = q(&mut c, &["SORT", "s", "ALPHA", "LIMIT", "0", "2"]);
    let r: (i64, Vec<String>) = q(&mut c, &["EXEC"]);
    assert_eq!(r, (1, vec!["0".to_string(), "a".to_string()]));
}
