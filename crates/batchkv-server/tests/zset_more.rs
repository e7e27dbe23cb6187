//! The rest of the sorted-set family: ZUNION, ZINTER, ZDIFF, ZINTERCARD,
//! ZRANGESTORE, ZMPOP and the blocking BZPOPMIN, BZPOPMAX, BZMPOP (woken
//! by sorted-set writes from other connections), and a differential test
//! against a real redis-server when one is on PATH.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::reference::{RedisServer, Resp};
use common::{errs, q, qs, query_err, wait_blocked, Harness, WRONGTYPE};

/// `ZRANGE key 0 -1 WITHSCORES`, flat.
fn all(c: &mut redis::Connection, key: &str) -> Vec<String> {
    qs(c, &format!("ZRANGE {key} 0 -1 WITHSCORES"))
}

/// Runs `line` on a new connection in a thread (for blocking commands).
fn spawn<T: redis::FromRedisValue + Send + 'static>(
    h: &Harness,
    line: &'static str,
) -> std::thread::JoinHandle<T> {
    let client = h.client();
    std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        qs(&mut c, line)
    })
}

#[test]
fn union_inter_and_diff_reply_in_order_and_match_their_store_forms() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD A 1 a 2 b 3 c");
    let _: i64 = qs(&mut c, "ZADD B 2 b 3 c 4 d");
    let _: i64 = qs(&mut c, "SADD S a d e");
    // Score, then member order; a set member scores 1.
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZUNION 2 A B WITHSCORES"),
        ["a", "1", "b", "4", "d", "4", "c", "6"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZUNION 2 A B"),
        ["a", "b", "d", "c"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZUNION 2 A B WEIGHTS 2 3 AGGREGATE MAX WITHSCORES"),
        ["a", "2", "b", "6", "c", "9", "d", "12"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZINTER 2 A B AGGREGATE MIN WITHSCORES"),
        ["b", "2", "c", "3"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZDIFF 2 A B WITHSCORES"),
        ["a", "1"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZDIFF 3 S A B WITHSCORES"),
        ["e", "1"]
    );
    assert_eq!(
        qs::<Vec<String>>(&mut c, "ZINTER 2 A S WITHSCORES"),
        ["a", "2"]
    );
    assert!(qs::<Vec<String>>(&mut c, "ZINTER 2 A nokey").is_empty());
    assert!(qs::<Vec<String>>(&mut c, "ZUNION 1 nokey").is_empty());
    // Each reply form answers what its *STORE form stores.
    for (reply, store) in [
        ("ZUNION 3 A B S", "ZUNIONSTORE d 3 A B S"),
        (
            "ZUNION 2 A B WEIGHTS 0.5 -2",
            "ZUNIONSTORE d 2 A B WEIGHTS 0.5 -2",
        ),
        (
            "ZINTER 2 B A AGGREGATE MAX",
            "ZINTERSTORE d 2 B A AGGREGATE MAX",
        ),
        ("ZINTER 3 A B S", "ZINTERSTORE d 3 A B S"),
        ("ZDIFF 2 B A", "ZDIFFSTORE d 2 B A"),
        ("ZDIFF 2 S B", "ZDIFFSTORE d 2 S B"),
    ] {
        let got: Vec<String> = qs(&mut c, &format!("{reply} WITHSCORES"));
        let n: usize = qs(&mut c, store);
        assert_eq!(n * 2, got.len(), "{reply}");
        assert_eq!(got, all(&mut c, "d"), "{reply}");
    }
    // A replied result keeps -0 (as Redis's does); a stored one holds 0.
    let _: i64 = qs(&mut c, "ZADD Z 0 a 1 b");
    let mut r = h.raw();
    r.expect(
        b"ZUNION 1 Z WEIGHTS -1 WITHSCORES\r\n",
        b"*4\r\n$1\r\nb\r\n$2\r\n-1\r\n$1\r\na\r\n$2\r\n-0\r\n",
    );
    let _: i64 = qs(&mut c, "ZUNIONSTORE d 1 Z WEIGHTS -1");
    assert_eq!(all(&mut c, "d"), ["b", "-1", "a", "0"]);
}

#[test]
fn zintercard_counts_large_intersections_and_stops_at_its_limit() {
    let h = Harness::start();
    let mut c = h.conn();
    // More members than one batched read checks (3000 > CHUNK).
    let mut a = vec!["ZADD".to_string(), "big".to_string()];
    let mut b = vec!["SADD".to_string(), "even".to_string()];
    for i in 0..3000 {
        a.extend([i.to_string(), format!("m{i}")]);
        if i % 2 == 0 {
            b.push(format!("m{i}"));
        }
    }
    let _: i64 = q(&mut c, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let _: i64 = q(&mut c, &b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(qs::<i64>(&mut c, "ZINTERCARD 2 big even"), 1500);
    assert_eq!(qs::<i64>(&mut c, "ZINTERCARD 2 even big LIMIT 0"), 1500);
    for (limit, want) in [(1, 1), (10, 10), (1499, 1499), (1500, 1500), (5000, 1500)] {
        let line = format!("ZINTERCARD 2 big even LIMIT {limit}");
        assert_eq!(qs::<i64>(&mut c, &line), want, "{line}");
    }
    assert_eq!(qs::<i64>(&mut c, "ZINTERCARD 1 big"), 3000);
    assert_eq!(qs::<i64>(&mut c, "ZINTERCARD 2 big nokey"), 0);
    // ZINTER over the same sources: every even member, score i + 1.
    let inter: Vec<String> = qs(&mut c, "ZINTER 2 big even WITHSCORES");
    assert_eq!(inter.len(), 3000);
    assert_eq!(inter[..4], ["m0", "1", "m2", "3"]);
    assert_eq!(inter[2998..], ["m2998", "2999"]);
    assert_eq!(qs::<i64>(&mut c, "ZINTERSTORE d 2 big even"), 1500);
    assert_eq!(all(&mut c, "d"), inter);
    assert_eq!(
        errs(&mut c, "ZINTERCARD 2 big even LIMIT -1"),
        "ERR LIMIT can't be negative"
    );
    assert_eq!(
        errs(&mut c, "ZINTERCARD 0 big"),
        "ERR at least 1 input key is needed for 'zintercard' command"
    );
    assert_eq!(
        errs(&mut c, "ZINTERCARD 1 big WITHSCORES"),
        "ERR syntax error"
    );
}

#[test]
fn zrangestore_stores_every_form_of_range() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD A 1 a 2 b 3 c 4 d");
    let _: i64 = qs(&mut c, "ZADD L 0 a 0 b 0 c 0 d");
    for (line, want) in [
        (
            "ZRANGESTORE d A 0 -1",
            &["a", "1", "b", "2", "c", "3", "d", "4"][..],
        ),
        ("ZRANGESTORE d A 1 2 REV", &["b", "2", "c", "3"]),
        (
            "ZRANGESTORE d A (1 +inf BYSCORE LIMIT 1 2",
            &["c", "3", "d", "4"],
        ),
        (
            "ZRANGESTORE d A +inf -inf BYSCORE REV LIMIT 0 1",
            &["d", "4"],
        ),
        (
            "ZRANGESTORE d L [b + BYLEX",
            &["b", "0", "c", "0", "d", "0"],
        ),
        (
            "ZRANGESTORE d L + [b BYLEX REV LIMIT 1 5",
            &["b", "0", "c", "0"],
        ),
    ] {
        assert_eq!(qs::<usize>(&mut c, line) * 2, want.len(), "{line}");
        assert_eq!(all(&mut c, "d"), want, "{line}");
    }
    // An empty range or source deletes the destination, whatever it held.
    assert_eq!(qs::<i64>(&mut c, "ZRANGESTORE d A 5 10"), 0);
    assert_eq!(qs::<i64>(&mut c, "EXISTS d"), 0);
    let _: () = qs(&mut c, "SET d x");
    assert_eq!(qs::<i64>(&mut c, "ZRANGESTORE d nokey 0 -1"), 0);
    assert_eq!(qs::<i64>(&mut c, "EXISTS d"), 0);
    let _: () = qs(&mut c, "SET str x");
    assert_eq!(qs::<i64>(&mut c, "ZRANGESTORE str A 0 0"), 1);
    assert_eq!(qs::<String>(&mut c, "TYPE str"), "zset");
    // The source may be the destination.
    assert_eq!(qs::<i64>(&mut c, "ZRANGESTORE A A 0 1"), 2);
    assert_eq!(all(&mut c, "A"), ["a", "1", "b", "2"]);
    let _: () = qs(&mut c, "SET str x");
    for (line, err) in [
        ("ZRANGESTORE d A 0 -1 WITHSCORES", "ERR syntax error"),
        (
            "ZRANGESTORE d A 0 -1 LIMIT 0 1",
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        ("ZRANGESTORE d A 0 1 BYSCORE BYLEX", "ERR syntax error"),
        (
            "ZRANGESTORE d A a b BYSCORE",
            "ERR min or max is not a float",
        ),
        (
            "ZRANGESTORE d A a b BYLEX",
            "ERR min or max not valid string range item",
        ),
        ("ZRANGESTORE d str 0 -1", WRONGTYPE),
        (
            "ZRANGESTORE d str x 1",
            "ERR value is not an integer or out of range",
        ),
        (
            "ZRANGESTORE d A 0",
            "ERR wrong number of arguments for 'zrangestore' command",
        ),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
}

#[test]
fn zmpop_pops_from_the_first_non_empty_sorted_set() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: i64 = qs(&mut c, "ZADD A 1 a 2 b 3 c");
    type Mpop = Option<(String, Vec<(String, f64)>)>;
    assert_eq!(
        qs::<Mpop>(&mut c, "ZMPOP 2 nokey A MIN"),
        Some(("A".into(), vec![("a".into(), 1.0)]))
    );
    assert_eq!(
        qs::<Mpop>(&mut c, "ZMPOP 1 A max COUNT 5"),
        Some(("A".into(), vec![("c".into(), 3.0), ("b".into(), 2.0)]))
    );
    assert_eq!(qs::<i64>(&mut c, "EXISTS A"), 0);
    assert_eq!(qs::<Mpop>(&mut c, "ZMPOP 1 A MIN"), None);
    // A key of another type is WRONGTYPE when reached, not before.
    let _: () = qs(&mut c, "SET str x");
    let _: i64 = qs(&mut c, "ZADD B 5 e");
    assert_eq!(
        qs::<Mpop>(&mut c, "ZMPOP 2 B str MIN"),
        Some(("B".into(), vec![("e".into(), 5.0)]))
    );
    assert_eq!(errs(&mut c, "ZMPOP 2 nokey str MIN"), WRONGTYPE);
    let _: i64 = qs(&mut c, "SADD S a");
    assert_eq!(errs(&mut c, "ZMPOP 1 S MIN"), WRONGTYPE);
    for (line, err) in [
        ("ZMPOP 0 A MIN", "ERR numkeys should be greater than 0"),
        ("ZMPOP x A MIN", "ERR numkeys should be greater than 0"),
        ("ZMPOP 2 A MIN", "ERR syntax error"),
        ("ZMPOP 1 A foo", "ERR syntax error"),
        (
            "ZMPOP 1 A MIN COUNT 0",
            "ERR count should be greater than 0",
        ),
        ("ZMPOP 1 A MIN COUNT 1 COUNT 2", "ERR syntax error"),
        ("ZMPOP 9223372036854775807 A MIN", "ERR syntax error"),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
}

/// Blocking waits that a write must end use a 10 s timeout: a missed
/// wake-up then fails the test (a null reply) instead of hanging it.
#[test]
fn bzpopmin_is_woken_by_a_zadd_from_another_client() {
    let h = Harness::start();
    let mut c = h.conn();
    let waiter = spawn::<Option<(String, String, f64)>>(&h, "BZPOPMIN none k 10");
    wait_blocked(&mut c, 1);
    assert_eq!(qs::<i64>(&mut c, "ZADD k 5 m 6 n"), 2);
    assert_eq!(waiter.join().unwrap(), Some(("k".into(), "m".into(), 5.0)));
    assert_eq!(all(&mut c, "k"), ["n", "6"]);
    wait_blocked(&mut c, 0);

    // ZINCRBY, a *STORE destination, ZRANGESTORE and RENAME wake too.
    for (wait, write, want) in [
        ("BZPOPMAX w1 10", "ZINCRBY w1 2 x", ("w1", "x", 2.0)),
        ("BZPOPMIN w2 10", "ZUNIONSTORE w2 1 k", ("w2", "n", 6.0)),
        ("BZPOPMIN w3 10", "ZRANGESTORE w3 k 0 0", ("w3", "n", 6.0)),
        ("BZPOPMAX w4 10", "RENAME k w4", ("w4", "n", 6.0)),
    ] {
        let waiter = spawn::<Option<(String, String, f64)>>(&h, wait);
        wait_blocked(&mut c, 1);
        let _: redis::Value = qs(&mut c, write);
        let got = waiter.join().unwrap().unwrap();
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2), want, "{write}");
        wait_blocked(&mut c, 0);
    }

    // BZMPOP takes up to COUNT from the first non-empty set.
    let popper = spawn::<Option<(String, Vec<(String, f64)>)>>(&h, "BZMPOP 10 2 p1 p2 MAX COUNT 2");
    wait_blocked(&mut c, 1);
    let _: i64 = qs(&mut c, "ZADD p2 1 a 2 b 3 c");
    assert_eq!(
        popper.join().unwrap(),
        Some(("p2".into(), vec![("c".into(), 3.0), ("b".into(), 2.0)]))
    );

    // A ZADD inside EXEC wakes a client once the transaction is written.
    let waiter = spawn::<Option<(String, String, f64)>>(&h, "BZPOPMIN tx 10");
    wait_blocked(&mut c, 1);
    let (n,): (i64,) = redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg("tx")
        .arg(7)
        .arg("t")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(waiter.join().unwrap(), Some(("tx".into(), "t".into(), 7.0)));
}

#[test]
fn blocked_zset_clients_are_served_in_order_and_only_by_sorted_sets() {
    let h = Harness::start();
    let mut c = h.conn();
    // A list client first in the queue is not woken by a ZADD (it times
    // out); the sorted-set clients behind it are served in order.
    let list = spawn::<Option<(String, String)>>(&h, "BLPOP k 3");
    wait_blocked(&mut c, 1);
    let mut zs = Vec::new();
    for i in 0..3 {
        zs.push(spawn::<Option<(String, String, f64)>>(&h, "BZPOPMIN k 10"));
        wait_blocked(&mut c, i + 2);
    }
    let _: i64 = qs(&mut c, "ZADD k 1 a 2 b 3 c");
    let got: Vec<String> = zs
        .into_iter()
        .map(|w| w.join().unwrap().unwrap().1)
        .collect();
    assert_eq!(got, ["a", "b", "c"]);
    let _: i64 = qs(&mut c, "ZADD k 4 d");
    assert_eq!(list.join().unwrap(), None);
    assert_eq!(all(&mut c, "k"), ["d", "4"]);

    // A key that becomes a list is passed over: the client is served by
    // its other key, or stays blocked until its timeout.
    let both = spawn::<Option<(String, String, f64)>>(&h, "BZPOPMIN a b 10");
    let only = spawn::<Option<(String, String, f64)>>(&h, "BZPOPMIN a 2");
    wait_blocked(&mut c, 2);
    let _: i64 = qs(&mut c, "RPUSH a x");
    let _: i64 = qs(&mut c, "ZADD b 1 q");
    assert_eq!(both.join().unwrap(), Some(("b".into(), "q".into(), 1.0)));
    assert_eq!(only.join().unwrap(), None);
    assert_eq!(qs::<Vec<String>>(&mut c, "LRANGE a 0 -1"), ["x"]);
    // Its first run still answers WRONGTYPE.
    assert_eq!(errs(&mut c, "BZPOPMIN a 0"), WRONGTYPE);
    assert_eq!(errs(&mut c, "BZMPOP 0 1 a MIN"), WRONGTYPE);
}

#[test]
fn blocking_pops_time_out_and_do_not_block_inside_multi() {
    let h = Harness::start();
    let mut r = h.raw();
    r.expect(b"BZPOPMIN none 0.05\r\n", b"*-1\r\n");
    r.expect(b"BZPOPMAX none other 0.01\r\n", b"*-1\r\n");
    r.expect(b"BZMPOP 0.01 2 none other MIN COUNT 3\r\n", b"*-1\r\n");
    r.expect(b"MULTI\r\n", b"+OK\r\n");
    r.expect(b"BZPOPMIN none 0\r\n", b"+QUEUED\r\n");
    r.expect(b"BZMPOP 0 1 none MAX\r\n", b"+QUEUED\r\n");
    r.expect(b"EXEC\r\n", b"*2\r\n*-1\r\n*-1\r\n");
    r.send(b"HELLO 3\r\n");
    r.read_until(b"modules\r\n*0\r\n");
    r.expect(b"BZPOPMIN none 0.01\r\n", b"_\r\n");
    r.expect(b"ZADD k 1 a\r\n", b":1\r\n");
    r.expect(
        b"BZPOPMIN none k 0\r\n",
        b"*3\r\n$1\r\nk\r\n$1\r\na\r\n,1\r\n",
    );
    let mut c = h.conn();
    for (line, err) in [
        ("BZPOPMIN k x", "ERR timeout is not a float or out of range"),
        ("BZPOPMIN k -1", "ERR timeout is negative"),
        ("BZMPOP x 0 k MIN", "ERR numkeys should be greater than 0"),
        ("BZMPOP x 1 k foo", "ERR syntax error"),
        (
            "BZMPOP x 1 k MIN",
            "ERR timeout is not a float or out of range",
        ),
    ] {
        assert_eq!(errs(&mut c, line), err, "{line}");
    }
    wait_blocked(&mut c, 0);
}

/// The differential program: every reply must be byte-identical to
/// redis-server's, in RESP2 and RESP3.
const PROGRAM: &[&str] = &[
    "ZADD A 1 a 2 b 3 c",
    "ZADD B 2 b 3 c 4 d",
    "SADD S a d e",
    "SET str x",
    "ZADD Z 0 a 1 b",
    "ZUNION 2 A B",
    "ZUNION 2 A B WITHSCORES",
    "ZUNION 2 A B WEIGHTS 2 3 AGGREGATE MAX WITHSCORES",
    "ZUNION 2 A B WEIGHTS 2 x",
    "ZUNION 2 A B WEIGHTS 2",
    "ZUNION 2 A B AGGREGATE foo",
    "ZUNION 3 A B S WEIGHTS 1 inf -inf WITHSCORES",
    "ZUNION 1 Z WEIGHTS -1 WITHSCORES",
    "ZUNION 1 A WITHSCORES WITHSCORES",
    "ZUNION 2 A S WITHSCORES",
    "ZUNION 0 A",
    "ZUNION 3 A B",
    "ZUNION x A",
    "ZUNION 2 A str",
    "ZUNION 2 str A WEIGHTS x",
    "ZUNION 1 A LIMIT 1",
    "ZINTER 2 A B WITHSCORES",
    "ZINTER 2 A B AGGREGATE MIN WITHSCORES",
    "ZINTER 2 A B WEIGHTS inf -inf WITHSCORES",
    "ZINTER 2 A B WEIGHTS inf -inf AGGREGATE MAX WITHSCORES",
    "ZINTER 2 A S WITHSCORES",
    "ZINTER 2 A nokey",
    "ZINTER 0 A",
    "ZDIFF 2 A B WITHSCORES",
    "ZDIFF 3 S A B WITHSCORES",
    "ZDIFF 2 nokey A",
    "ZDIFF 2 A B WEIGHTS 1 2",
    "ZDIFF 2 A B AGGREGATE SUM",
    "ZDIFF -1 A",
    "ZUNIONSTORE dst 2 A B WITHSCORES",
    "ZINTERCARD 2 A B",
    "ZINTERCARD 2 A B LIMIT 1",
    "ZINTERCARD 2 A B LIMIT 0",
    "ZINTERCARD 2 A B LIMIT -1",
    "ZINTERCARD 2 A B LIMIT x",
    "ZINTERCARD 2 A B LIMIT 1 LIMIT 2",
    "ZINTERCARD 2 A B LIMIT",
    "ZINTERCARD 2 A B WITHSCORES",
    "ZINTERCARD 2 A S",
    "ZINTERCARD 2 A str",
    "ZINTERCARD 2 str nokey LIMIT x",
    "ZINTERCARD 0 A",
    "ZINTERCARD 3 A B",
    "ZRANGESTORE d A 0 -1",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZRANGESTORE d A (1 +inf BYSCORE REV LIMIT 1 2",
    "ZRANGESTORE d A +inf (1 BYSCORE REV LIMIT 1 2",
    "ZRANGE d 0 -1 WITHSCORES",
    "ZRANGESTORE d Z [a + BYLEX",
    "ZRANGESTORE d A 0 -1 WITHSCORES",
    "ZRANGESTORE d A 0 -1 LIMIT 0 1",
    "ZRANGESTORE d A 5 10",
    "EXISTS d",
    "ZRANGESTORE d str 0 -1",
    "ZRANGESTORE d str x 1",
    "ZRANGESTORE d A 0 1 BYLEX",
    "ZMPOP 1 A MIN",
    "ZMPOP 2 nokey A MAX COUNT 5",
    "ZMPOP 1 A MIN",
    "ZMPOP 0 A MIN",
    "ZMPOP 1 A foo",
    "ZMPOP 1 A MIN COUNT 0",
    "ZMPOP 1 A MIN COUNT 1 COUNT 2",
    "ZMPOP 2 A MIN",
    "ZMPOP 1 str MIN",
    "ZMPOP 2 B str MIN COUNT 100",
    "ZMPOP 1 S MIN",
    "ZADD A 1 a 2 b 3 c",
    "BZPOPMIN A str 0",
    "BZPOPMAX nokey A 0",
    "BZPOPMIN str A 0",
    "BZPOPMIN S 0",
    "BZPOPMIN nokey 0.01",
    "BZPOPMIN nokey x",
    "BZPOPMIN str x",
    "BZPOPMIN nokey -1",
    "BZMPOP 0 2 nokey A MIN COUNT 5",
    "BZMPOP 0.01 1 nokey MIN",
    "BZMPOP x 1 str MIN",
    "BZMPOP 0.01 0 nokey MIN",
    "BZMPOP x 1 nokey foo",
    "BZMPOP -1 1 nokey MIN",
    "ZADD A 1 a 2 b",
    "MULTI",
    "BZPOPMIN nokey 0",
    "BZPOPMAX A 0",
    "BZMPOP 0 1 nokey MIN",
    "BZMPOP 0 1 A MAX COUNT 3",
    "ZMPOP 1 nokey MIN",
    "ZUNION 1 str",
    "EXEC",
    "DEL A B S str Z dst d",
];

/// A small deterministic generator (64-bit LCG) for the random program.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Random sources and random combinations of them (sorted sets of up to
/// 12 members, so Redis keeps them in its compact encoding).
fn random_program(seed: u64) -> Vec<String> {
    const SCORES: &[&str] = &[
        "0", "1", "-1", "0.1", "0.2", "2.5", "-3", "1e10", "inf", "-inf",
    ];
    const WEIGHTS: &[&str] = &["1", "0", "-1", "2", "0.5", "inf", "-inf", "1e-3"];
    const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "s0", "nokey"];
    let mut g = Lcg(seed);
    let zadd = |g: &mut Lcg, k: &str| {
        let mut line = format!("ZADD {k}");
        for _ in 0..1 + g.below(12) {
            line += &format!(" {} m{}", g.pick(SCORES), g.below(16));
        }
        line
    };
    let mut out = vec!["FLUSHALL".to_string()];
    for k in &KEYS[..4] {
        out.push(zadd(&mut g, k));
    }
    out.push("SADD s0 m1 m2 m3 m5 m8 m13".into());
    for i in 0..200 {
        // Pops and stores empty the sources: refill one now and then.
        if i % 5 == 0 {
            let k = g.pick(&KEYS[..4]);
            out.push(zadd(&mut g, k));
        }
        let n = 1 + g.below(4);
        let keys: Vec<&str> = (0..n).map(|_| g.pick(KEYS)).collect();
        let keys = format!("{n} {}", keys.join(" "));
        let weights: Vec<&str> = (0..n).map(|_| g.pick(WEIGHTS)).collect();
        let agg = g.pick(&["", " AGGREGATE SUM", " AGGREGATE MIN", " AGGREGATE MAX"]);
        let line = match g.below(8) {
            0 => format!(
                "ZUNION {keys} WEIGHTS {}{agg} WITHSCORES",
                weights.join(" ")
            ),
            1 => format!(
                "ZINTER {keys} WEIGHTS {}{agg} WITHSCORES",
                weights.join(" ")
            ),
            2 => format!("ZUNION {keys}{agg} WITHSCORES"),
            3 => format!("ZDIFF {keys} WITHSCORES"),
            4 => format!("ZINTERCARD {keys} LIMIT {}", g.below(4)),
            5 => format!("ZUNIONSTORE {} {keys}{agg}", g.pick(&["d", "k3"])),
            6 => format!(
                "ZRANGESTORE d {} {} {}",
                g.pick(KEYS),
                g.pick(&["0", "1", "-2"]),
                g.pick(&["-1", "3", "1"])
            ),
            _ => format!(
                "ZMPOP {keys} {} COUNT {}",
                g.pick(&["MIN", "MAX"]),
                1 + g.below(3)
            ),
        };
        out.push(line);
        if g.below(4) == 0 {
            out.push("ZRANGE d 0 -1 WITHSCORES".into());
        }
    }
    out
}

#[test]
fn same_replies_as_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    let h = Harness::start();
    for proto in [2, 3] {
        let mut theirs = Resp::connect(redis.addr, proto).unwrap();
        let mut ours = Resp::connect(h.server.addr(), proto).unwrap();
        assert_eq!(theirs.call(&["FLUSHALL"]), ours.call(&["FLUSHALL"]));
        let random = random_program(proto as u64);
        let lines = PROGRAM
            .iter()
            .copied()
            .chain(random.iter().map(String::as_str));
        for line in lines {
            let args: Vec<&str> = line.split(' ').collect();
            let want = theirs.call(&args);
            assert_eq!(ours.call(&args), want, "RESP{proto}: {line}");
        }
    }
}

/// The geo commands on Redis's documentation example (replies from
/// redis-server 7.0.15), batching on and off, across a restart.
#[test]
fn geo_commands_answer_as_redis_does() {
    for batch in [true, false] {
        let h = Harness::start_with(|c| c.batch = batch);
        let mut c = h.conn();
        let added: i64 = q(
            &mut c,
            &[
                "GEOADD",
                "Sicily",
                "13.361389",
                "38.115556",
                "Palermo",
                "15.087269",
                "37.502669",
                "Catania",
            ],
        );
        assert_eq!(added, 2);
        assert_eq!(
            q::<String>(&mut c, &["ZSCORE", "Sicily", "Palermo"]),
            "3479099956230698"
        );
        let h = h.restart(|c| c.batch = batch);
        let mut c = h.conn();
        assert_eq!(
            q::<String>(&mut c, &["GEODIST", "Sicily", "Palermo", "Catania"]),
            "166274.1516"
        );
        assert_eq!(
            q::<String>(&mut c, &["GEODIST", "Sicily", "Palermo", "Catania", "km"]),
            "166.2742"
        );
        let pos: Vec<Option<Vec<String>>> =
            q(&mut c, &["GEOPOS", "Sicily", "Palermo", "NonExisting"]);
        assert_eq!(
            pos,
            [
                Some(vec![
                    "13.36138933897018433".to_string(),
                    "38.11555639549629859".to_string()
                ]),
                None
            ]
        );
        let hashes: Vec<String> = q(&mut c, &["GEOHASH", "Sicily", "Palermo", "Catania"]);
        assert_eq!(hashes, ["sqc8b49rny0", "sqdtr74hyu0"]);
        let near: Vec<(String, String)> = q(
            &mut c,
            &[
                "GEOSEARCH",
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "km",
                "ASC",
                "WITHDIST",
            ],
        );
        assert_eq!(
            near,
            [
                ("Catania".to_string(), "56.4413".to_string()),
                ("Palermo".to_string(), "190.4424".to_string())
            ]
        );
        let stored: i64 = q(
            &mut c,
            &[
                "GEOSEARCHSTORE",
                "dst",
                "Sicily",
                "FROMMEMBER",
                "Palermo",
                "BYBOX",
                "400",
                "400",
                "km",
                "STOREDIST",
            ],
        );
        assert_eq!(stored, 2);
        assert_eq!(q::<String>(&mut c, &["ZSCORE", "dst", "Palermo"]), "0");
        assert_eq!(
            query_err(
                &mut c,
                &[
                    "GeoSearch",
                    "Sicily",
                    "BYRADIUS",
                    "1",
                    "km",
                    "ASC",
                    "WITHDIST"
                ]
            ),
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GeoSearch"
        );
        assert_eq!(
            query_err(&mut c, &["GEOADD", "Sicily", "200", "10", "x"]),
            "ERR invalid longitude,latitude pair 200.000000,10.000000"
        );
    }
}
