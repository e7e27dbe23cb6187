//! List commands through a real Redis client: each command's behaviour,
//! WRONGTYPE, restarts, a model test of the commands that rewrite or trim
//! long lists, the blocking commands (wake-ups, order, timeouts,
//! disconnects), and the same command sequence against a real
//! redis-server, reply for reply.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::net::SocketAddr;

use common::reference::{RedisServer, Resp};
use common::{q, query_err, wait_blocked, Harness, WRONGTYPE};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn lrange(c: &mut redis::Connection, key: &str) -> Vec<String> {
    q(c, &["LRANGE", key, "0", "-1"])
}

#[test]
fn pushes_pops_and_reads() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["RPUSH", "l", "b", "c"]), 2);
    assert_eq!(q::<i64>(&mut c, &["LPUSH", "l", "a", "z"]), 4);
    assert_eq!(lrange(&mut c, "l"), ["z", "a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["LPUSHX", "none", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["RPUSHX", "l", "d"]), 5);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "none"]), 0);
    assert_eq!(q::<String>(&mut c, &["TYPE", "l"]), "list");
    assert_eq!(q::<i64>(&mut c, &["LLEN", "l"]), 5);
    assert_eq!(q::<String>(&mut c, &["LINDEX", "l", "-1"]), "d");
    assert_eq!(q::<Option<String>>(&mut c, &["LINDEX", "l", "5"]), None);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "l", "1", "-2"]),
        ["a", "b", "c"]
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "l", "-100", "1"]),
        ["z", "a"]
    );
    assert!(q::<Vec<String>>(&mut c, &["LRANGE", "l", "3", "1"]).is_empty());
    let _: () = q(&mut c, &["LSET", "l", "-5", "Z"]);
    assert_eq!(
        query_err(&mut c, &["LSET", "l", "5", "x"]),
        "ERR index out of range"
    );
    assert_eq!(
        query_err(&mut c, &["LSET", "none", "0", "x"]),
        "ERR no such key"
    );
    assert_eq!(q::<String>(&mut c, &["LPOP", "l"]), "Z");
    assert_eq!(q::<String>(&mut c, &["RPOP", "l"]), "d");
    assert_eq!(q::<Vec<String>>(&mut c, &["LPOP", "l", "2"]), ["a", "b"]);
    assert!(q::<Vec<String>>(&mut c, &["RPOP", "l", "0"]).is_empty());
    assert_eq!(
        query_err(&mut c, &["RPOP", "l", "-1"]),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(q::<Vec<String>>(&mut c, &["RPOP", "l", "10"]), ["c"]);
    // Emptied: the key is gone.
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);
    assert_eq!(q::<Option<String>>(&mut c, &["LPOP", "l"]), None);
    assert_eq!(q::<Option<Vec<String>>>(&mut c, &["LPOP", "l", "3"]), None);

    // LINSERT, LREM, LTRIM, LPOS.
    let _: i64 = q(&mut c, &["RPUSH", "l", "a", "b", "a", "c", "a"]);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "BEFORE", "c", "x"]), 6);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "after", "a", "y"]), 7);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "after", "q", "y"]), -1);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "none", "after", "q", "y"]), 0);
    assert_eq!(
        query_err(&mut c, &["LINSERT", "l", "middle", "a", "y"]),
        "ERR syntax error"
    );
    assert_eq!(lrange(&mut c, "l"), ["a", "y", "b", "a", "x", "c", "a"]);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a", "RANK", "-1"]), 6);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a", "RANK", "2"]), 3);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "0"]),
        [0, 3, 6]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "2", "RANK", "-1"]),
        [6, 3]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4"]),
        [0, 3]
    );
    assert_eq!(q::<Option<i64>>(&mut c, &["LPOS", "l", "zz"]), None);
    assert_eq!(
        query_err(&mut c, &["LPOS", "l", "a", "RANK", "0"]),
        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... \
         or use negative to start from the end of the list"
    );
    assert_eq!(
        query_err(&mut c, &["LPOS", "l", "a", "COUNT", "-1"]),
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        query_err(&mut c, &["LPOS", "l", "a", "MAXLEN", "-1"]),
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "-2", "a"]), 2);
    assert_eq!(lrange(&mut c, "l"), ["a", "y", "b", "x", "c"]);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "0", "y"]), 1);
    let _: () = q(&mut c, &["LTRIM", "l", "1", "-2"]);
    assert_eq!(lrange(&mut c, "l"), ["b", "x"]);
    let _: () = q(&mut c, &["LTRIM", "l", "5", "1"]);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);

    // LMOVE, RPOPLPUSH (rotation included), LMPOP.
    let _: i64 = q(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(
        q::<String>(&mut c, &["LMOVE", "l", "l", "LEFT", "RIGHT"]),
        "a"
    );
    assert_eq!(lrange(&mut c, "l"), ["b", "c", "a"]);
    assert_eq!(q::<String>(&mut c, &["RPOPLPUSH", "l", "l"]), "a");
    assert_eq!(lrange(&mut c, "l"), ["a", "b", "c"]);
    assert_eq!(
        q::<String>(&mut c, &["LMOVE", "l", "m", "right", "left"]),
        "c"
    );
    assert_eq!(q::<String>(&mut c, &["RPOPLPUSH", "l", "m"]), "b");
    assert_eq!(lrange(&mut c, "m"), ["b", "c"]);
    assert_eq!(
        q::<Option<String>>(&mut c, &["LMOVE", "none", "m", "LEFT", "LEFT"]),
        None
    );
    assert_eq!(
        query_err(&mut c, &["LMOVE", "l", "m", "UP", "LEFT"]),
        "ERR syntax error"
    );
    assert_eq!(
        q::<(String, Vec<String>)>(
            &mut c,
            &["LMPOP", "3", "none", "m", "l", "RIGHT", "COUNT", "5"]
        ),
        ("m".to_string(), strs(&["c", "b"]))
    );
    assert_eq!(
        q::<(String, Vec<String>)>(&mut c, &["LMPOP", "1", "l", "LEFT"]),
        ("l".to_string(), strs(&["a"]))
    );
    assert_eq!(
        q::<Option<Vec<String>>>(&mut c, &["LMPOP", "2", "l", "m", "LEFT"]),
        None
    );
    assert_eq!(
        query_err(&mut c, &["LMPOP", "0", "l", "LEFT"]),
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(
        query_err(&mut c, &["LMPOP", "2", "l", "LEFT"]),
        "ERR syntax error"
    );
    assert_eq!(
        query_err(&mut c, &["LMPOP", "1", "l", "LEFT", "COUNT", "0"]),
        "ERR count should be greater than 0"
    );
}

#[test]
fn wrong_type_errors_match_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "s", "v"]);
    let _: i64 = q(&mut c, &["RPUSH", "l", "a"]);
    for cmd in [
        &["LPUSH", "s", "a"][..],
        &["RPUSHX", "s", "a"],
        &["LPOP", "s"],
        &["RPOP", "s", "0"],
        &["LLEN", "s"],
        &["LINDEX", "s", "0"],
        &["LRANGE", "s", "0", "-1"],
        &["LSET", "s", "0", "x"],
        &["LINSERT", "s", "BEFORE", "a", "b"],
        &["LREM", "s", "0", "a"],
        &["LTRIM", "s", "0", "1"],
        &["LPOS", "s", "a"],
        &["LMOVE", "s", "l", "LEFT", "LEFT"],
        &["LMOVE", "l", "s", "LEFT", "LEFT"],
        &["RPOPLPUSH", "l", "s"],
        &["LMPOP", "2", "s", "l", "LEFT"],
        &["BLPOP", "s", "l", "0"],
        &["BLMOVE", "l", "s", "LEFT", "LEFT", "0"],
        &["GET", "l"],
    ] {
        assert_eq!(query_err(&mut c, cmd), WRONGTYPE, "{cmd:?}");
    }
    // The failed moves left the source alone.
    assert_eq!(lrange(&mut c, "l"), ["a"]);
    // LPOP's count is checked before the type, as in Redis.
    assert_eq!(
        query_err(&mut c, &["LPOP", "s", "-1"]),
        "ERR value is out of range, must be positive"
    );
    // A list is replaced by SET, and RENAME carries it.
    let _: () = q(&mut c, &["RENAME", "l", "l2"]);
    assert_eq!(lrange(&mut c, "l2"), ["a"]);
    let _: () = q(&mut c, &["SET", "l2", "x"]);
    assert_eq!(q::<String>(&mut c, &["GET", "l2"]), "x");
}

#[test]
fn lists_survive_restart_and_leave_no_elements_behind() {
    let h = Harness::start();
    let mut c = h.conn();
    let big: Vec<String> = (0..300).map(|i| format!("e{i}")).collect();
    let mut args = vec!["RPUSH", "big"];
    args.extend(big.iter().map(String::as_str));
    let _: i64 = q(&mut c, &args);
    let _: i64 = q(&mut c, &["LPUSH", "small", "c", "b", "a"]);
    // Trimmed by range deletions (> 64 elements) at both ends.
    let _: () = q(&mut c, &["LTRIM", "big", "100", "199"]);
    let _: Vec<String> = q(&mut c, &["LPOP", "big", "70"]);
    let _: i64 = q(&mut c, &["RPUSH", "gone", "x", "y"]);
    let _: i64 = q(&mut c, &["DEL", "gone"]);
    let _: i64 = q(&mut c, &["RPUSH", "popped", "x"]);
    let _: String = q(&mut c, &["RPOP", "popped"]);
    drop(c);
    let dir = h.stop();
    // Only the 30 + 3 live elements are stored.
    assert_eq!(common::stored_elements(dir.path()), 33);
    let h = Harness {
        server: common::start_in(dir.path(), |_| {}),
        dir,
    };
    let mut c = h.conn();
    assert_eq!(lrange(&mut c, "big"), big[170..200].to_vec());
    assert_eq!(lrange(&mut c, "small"), ["a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["LPUSH", "big", "new"]), 31);
    assert_eq!(q::<String>(&mut c, &["LINDEX", "big", "0"]), "new");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "gone", "popped"]), 0);
}

/// One random operation on lists "l" and "m", applied to the server and to
/// the model; asserts the reply matches the model's.
fn random_op(
    rng: &mut StdRng,
    c: &mut redis::Connection,
    l: &mut Vec<String>,
    m: &mut Vec<String>,
) {
    let val = |rng: &mut StdRng| format!("v{}", rng.random_range(0..12));
    let len = l.len() as i64;
    let idx = |rng: &mut StdRng| rng.random_range(-len - 3..len + 3);
    let pos = |i: i64| -> Option<usize> {
        let p = if i < 0 { i + len } else { i };
        (0..len).contains(&p).then_some(p as usize)
    };
    match rng.random_range(0..100) {
        0..=19 => {
            let (before, pivot, v) = (rng.random_bool(0.5), val(rng), val(rng));
            let where_ = if before { "BEFORE" } else { "AFTER" };
            let got: i64 = q(c, &["LINSERT", "l", where_, &pivot, &v]);
            match l.iter().position(|x| *x == pivot) {
                Some(p) => {
                    l.insert(p + usize::from(!before), v);
                    assert_eq!(got, l.len() as i64);
                }
                None => assert_eq!(got, -1),
            }
        }
        20..=39 => {
            let (count, v) = (rng.random_range(-4..=4i64), val(rng));
            let got: i64 = q(c, &["LREM", "l", &count.to_string(), &v]);
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs() as usize
            };
            let mut hits: Vec<usize> = (0..l.len()).filter(|&i| l[i] == v).collect();
            if count < 0 {
                hits.reverse();
            }
            hits.truncate(limit);
            hits.sort_unstable();
            for &i in hits.iter().rev() {
                l.remove(i);
            }
            assert_eq!(got, hits.len() as i64);
        }
        40..=54 => {
            // Mostly small trims at both ends, sometimes a large one.
            let (s, e) = if rng.random_bool(0.9) {
                (rng.random_range(-3..6), rng.random_range(-6..3) - 1)
            } else {
                (
                    rng.random_range(-len - 2..len + 2),
                    rng.random_range(-len - 2..len + 2),
                )
            };
            let _: () = q(c, &["LTRIM", "l", &s.to_string(), &e.to_string()]);
            let (mut s, mut e) = (
                if s < 0 { s + len } else { s },
                if e < 0 { e + len } else { e },
            );
            s = s.max(0);
            if s > e || s >= len {
                l.clear();
            } else {
                e = e.min(len - 1);
                *l = l[s as usize..=e as usize].to_vec();
            }
        }
        55..=64 => {
            let (i, v) = (idx(rng), val(rng));
            let r = redis::cmd("LSET").arg("l").arg(i).arg(&v).query::<()>(c);
            match pos(i) {
                Some(p) => {
                    r.unwrap();
                    l[p] = v;
                }
                None => assert!(r.is_err()),
            }
        }
        65..=72 => {
            let i = idx(rng);
            let got: Option<String> = q(c, &["LINDEX", "l", &i.to_string()]);
            assert_eq!(got, pos(i).map(|p| l[p].clone()));
        }
        73..=80 => {
            let v = val(rng);
            let rank = [1i64, 2, -1, -2][rng.random_range(0..4)];
            let maxlen = rng.random_range(0..len + 2);
            let got: Vec<i64> = q(
                c,
                &[
                    "LPOS",
                    "l",
                    &v,
                    "RANK",
                    &rank.to_string(),
                    "COUNT",
                    "0",
                    "MAXLEN",
                    &maxlen.to_string(),
                ],
            );
            let scan: Vec<usize> = if rank > 0 {
                (0..l.len()).collect()
            } else {
                (0..l.len()).rev().collect()
            };
            let limit = if maxlen == 0 {
                usize::MAX
            } else {
                maxlen as usize
            };
            let want: Vec<i64> = scan
                .into_iter()
                .take(limit)
                .filter(|&i| l[i] == v)
                .skip(rank.unsigned_abs() as usize - 1)
                .map(|i| i as i64)
                .collect();
            assert_eq!(got, want);
        }
        81..=88 => {
            // Between the two lists, or a rotation of one.
            let ends = ["LEFT", "RIGHT"];
            let (from, to) = (ends[rng.random_range(0..2)], ends[rng.random_range(0..2)]);
            let (src, dst) =
                [("l", "l"), ("l", "m"), ("m", "l"), ("m", "m")][rng.random_range(0..4)];
            let got: Option<String> = q(c, &["LMOVE", src, dst, from, to]);
            let take = |x: &mut Vec<String>| {
                if from == "LEFT" {
                    (!x.is_empty()).then(|| x.remove(0))
                } else {
                    x.pop()
                }
            };
            let popped = if src == "l" { take(l) } else { take(m) };
            if let Some(v) = &popped {
                let d = if dst == "l" { &mut *l } else { &mut *m };
                if to == "LEFT" {
                    d.insert(0, v.clone())
                } else {
                    d.push(v.clone())
                }
            }
            assert_eq!(got, popped);
        }
        _ => {
            let n = rng.random_range(0..80usize);
            let left = rng.random_bool(0.5);
            let got: Option<Vec<String>> = q(
                c,
                &[if left { "LPOP" } else { "RPOP" }, "l", &n.to_string()],
            );
            let n = n.min(l.len());
            let want: Vec<String> = if left {
                l.drain(..n).collect()
            } else {
                l.drain(l.len() - n..).rev().collect()
            };
            assert_eq!(got.unwrap_or_default(), want);
        }
    }
}

#[test]
fn long_lists_match_a_model_under_insert_remove_and_trim() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let (mut l, mut m) = (Vec::new(), Vec::new());
    for step in 0..400 {
        // Refill "l" to about 1,000 elements, alternating sides.
        if l.len() < 900 {
            let vals: Vec<String> = (l.len()..1000)
                .map(|_| format!("v{}", rng.random_range(0..12)))
                .collect();
            let left = step % 2 == 0;
            let mut args = vec![if left { "LPUSH" } else { "RPUSH" }, "l"];
            args.extend(vals.iter().map(String::as_str));
            let got: i64 = q(&mut c, &args);
            for v in vals {
                if left {
                    l.insert(0, v)
                } else {
                    l.push(v)
                }
            }
            assert_eq!(got, l.len() as i64);
        }
        random_op(&mut rng, &mut c, &mut l, &mut m);
        assert_eq!(lrange(&mut c, "l"), l, "step {step}");
        assert_eq!(lrange(&mut c, "m"), m, "step {step}");
        assert_eq!(q::<usize>(&mut c, &["LLEN", "l"]), l.len());
    }
    drop(c);
    let dir = h.stop();
    // Every stored element is live: trims and removals left no garbage.
    assert_eq!(common::stored_elements(dir.path()), l.len() + m.len());
    let h = Harness {
        server: common::start_in(dir.path(), |_| {}),
        dir,
    };
    let mut c = h.conn();
    assert_eq!(lrange(&mut c, "l"), l);
    assert_eq!(lrange(&mut c, "m"), m);
}

#[test]
fn blpop_wakes_when_another_client_pushes() {
    let h = Harness::start();
    let mut c = h.conn();
    let client = h.client();
    let waiter = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        q::<Option<(String, String)>>(&mut c, &["BLPOP", "none", "k", "0"])
    });
    wait_blocked(&mut c, 1);
    assert_eq!(q::<i64>(&mut c, &["RPUSH", "k", "a", "b"]), 2);
    assert_eq!(
        waiter.join().unwrap(),
        Some(("k".to_string(), "a".to_string()))
    );
    assert_eq!(lrange(&mut c, "k"), ["b"]);
    wait_blocked(&mut c, 0);

    // BLMOVE wakes, and its push wakes a BLMPOP on its destination.
    let client = h.client();
    let mover = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        q::<Option<String>>(&mut c, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"])
    });
    wait_blocked(&mut c, 1);
    let client = h.client();
    let popper = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        q::<Option<(String, Vec<String>)>>(
            &mut c,
            &["BLMPOP", "0", "1", "dst", "LEFT", "COUNT", "5"],
        )
    });
    wait_blocked(&mut c, 2);
    let _: i64 = q(&mut c, &["LPUSH", "src", "x"]);
    assert_eq!(mover.join().unwrap(), Some("x".to_string()));
    assert_eq!(
        popper.join().unwrap(),
        Some(("dst".to_string(), strs(&["x"])))
    );

    // RENAME onto a key that a client waits on wakes it (BRPOP).
    let client = h.client();
    let waiter = std::thread::spawn(move || {
        let mut c = client.get_connection().unwrap();
        q::<Option<(String, String)>>(&mut c, &["BRPOP", "target", "0"])
    });
    wait_blocked(&mut c, 1);
    let _: i64 = q(&mut c, &["RPUSH", "tmp", "p", "q"]);
    let _: () = q(&mut c, &["RENAME", "tmp", "target"]);
    assert_eq!(
        waiter.join().unwrap(),
        Some(("target".to_string(), "q".to_string()))
    );
}

#[test]
fn blocked_clients_are_served_in_the_order_they_blocked() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut waiters = Vec::new();
    for i in 0..3 {
        let client = h.client();
        waiters.push(std::thread::spawn(move || {
            let mut c = client.get_connection().unwrap();
            q::<Option<(String, String)>>(&mut c, &["BLPOP", "k", "0"])
        }));
        wait_blocked(&mut c, i + 1);
    }
    // One push of three elements serves all three, first blocked first.
    let _: i64 = q(&mut c, &["RPUSH", "k", "a", "b", "c"]);
    let got: Vec<String> = waiters
        .into_iter()
        .map(|w| w.join().unwrap().unwrap().1)
        .collect();
    assert_eq!(got, ["a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn blocking_commands_time_out_with_a_null_array() {
    let h = Harness::start();
    let mut r = h.raw();
    r.expect(b"BLPOP none 0.05\r\n", b"*-1\r\n");
    r.expect(b"BRPOP none 0.01\r\n", b"*-1\r\n");
    // Redis answers BLMOVE's timeout with a null array too.
    r.expect(b"BLMOVE none d LEFT LEFT 0.01\r\n", b"*-1\r\n");
    r.expect(b"BRPOPLPUSH none d 0.01\r\n", b"*-1\r\n");
    r.expect(b"BLMPOP 0.01 2 none other LEFT\r\n", b"*-1\r\n");
    r.send(b"HELLO 3\r\n");
    r.read_until(b"modules\r\n*0\r\n");
    r.expect(b"BLPOP none 0.01\r\n", b"_\r\n");
    let mut c = h.conn();
    for (t, e) in [
        ("x", "ERR timeout is not a float or out of range"),
        ("nan", "ERR timeout is not a float or out of range"),
        ("-1", "ERR timeout is negative"),
        ("1e20", "ERR timeout is negative"),
    ] {
        assert_eq!(query_err(&mut c, &["BLPOP", "k", t]), e);
    }
    assert_eq!(
        query_err(&mut c, &["BLMPOP", "x", "0", "k", "LEFT"]),
        "ERR numkeys should be greater than 0"
    );
    // A list that has elements is served at once, whatever the timeout.
    let _: i64 = q(&mut c, &["RPUSH", "k", "a"]);
    assert_eq!(
        q::<(String, String)>(&mut c, &["BLPOP", "none", "k", "0"]),
        ("k".to_string(), "a".to_string())
    );
    wait_blocked(&mut c, 0);
}

#[test]
fn a_blocked_pipeline_answers_in_order_and_disconnects_unblock() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut r = h.raw();
    // The reply before the blocked command goes out while it waits; the
    // command after it runs once it is served.
    r.send(b"PING\r\nBLPOP pk 0\r\nECHO after\r\n");
    assert_eq!(r.read_n(7), b"+PONG\r\n");
    wait_blocked(&mut c, 1);
    r.send(b"ECHO later\r\n");
    let _: i64 = q(&mut c, &["RPUSH", "pk", "v"]);
    let want = b"*2\r\n$2\r\npk\r\n$1\r\nv\r\n$5\r\nafter\r\n$5\r\nlater\r\n";
    assert_eq!(
        String::from_utf8_lossy(&r.read_n(want.len())),
        String::from_utf8_lossy(want)
    );

    // A client that disconnects while blocked takes nothing.
    let mut gone = h.raw();
    gone.send(b"BLPOP dk 0\r\n");
    wait_blocked(&mut c, 1);
    drop(gone);
    wait_blocked(&mut c, 0);
    let _: i64 = q(&mut c, &["RPUSH", "dk", "v"]);
    assert_eq!(lrange(&mut c, "dk"), ["v"]);

    // Shutdown ends a blocked connection.
    let mut stuck = h.raw();
    stuck.send(b"BRPOP sk 0\r\n");
    wait_blocked(&mut c, 1);
    drop(c);
    h.stop();
    assert!(stuck.closed());
}

/// The sequence compared against redis-server: every list command, its
/// errors and edge cases (one command per line, split on spaces).
const SEQUENCE: &str = "\
rpush l b x b c b
lpop nokey 0
lpop nokey 2
lpop nokey
lpop l 0
lpos l b
lpos l b rank -1
lpos l b rank 2 count 0
lpos l b rank 2 count 0 maxlen 3
lpos l b rank -1 maxlen 2
lpos l b count 9223372036854775807
lpos l b rank 9223372036854775807
lpos l b rank -9223372036854775808 count 1
lpos l b rank 0
lpos l b count -1
lpos l b maxlen x
lpos l b foo
lpos nokey b count 0
lpos nokey b
set s v
lpos s b
lpush s a
lpop s -1
lrange s 0 1
blpop s 0
blpop s x
blpop nokey -1
blpop nokey inf
blpop nokey 0.01
brpop l 0
blmove l l2 left right 0
blmove nokey l2 left right 0.01
brpoplpush nokey l2 0.01
blmpop 0.01 1 nokey left
blmpop 0.01 1 l left count 10
blmpop x 0 l left
blmove l l2 up left x
del l l2
rpush l a b c
lmove l s left right
lmove nokey s left right
lmove s l left right
rpoplpush l s
rpoplpush nokey s
lmove l l left right
lmove l l right left
lmove l l left left
lrange l 0 -1
lmove l new right left
lrange new 0 -1
lmpop 2 nokey l right count 5
exists l
rpush l a b c d e f
lrange l -100 100
lrange l 3 1
lrange l 5 100
lrange l -9223372036854775808 9223372036854775807
lindex l -1
lindex l -7
lindex l x
lset l -1 Z
lset l -7 Z
lset nokey 0 Z
lrem l 0 a
rpush l a b a b a b
lrem l -2 a
lrem l 2 b
lrange l 0 -1
ltrim l 1 -2
lrange l 0 -1
ltrim l x 1
ltrim l 5 1
exists l
rpush l a b c
linsert l AFTER a x
linsert l before a y
linsert l before zz y
linsert l middle a y
linsert nokey before a y
lrange l 0 -1
llen l
llen nokey
llen s
lpushx nokey a
rpushx l z
lpushx l q r
lrange l 0 -1
lmpop 2 s l left
lmpop 2 l s left
lmpop 0 l left
lmpop 3 l left
lmpop 1 l up
lmpop 1 l left count 0
lmpop 1 l left count 1 count 2
lmpop 1 l left count
rpop l 0
rpop l -5
rpop nokey 0
rpop l 1 2
lpop l 100
blpop
type l";

/// Runs [`SEQUENCE`] on a fresh connection to `addr` (in RESP3 after
/// `HELLO 3` if `resp3`), returning each command with its raw reply.
fn run_sequence(addr: SocketAddr, resp3: bool) -> Vec<(String, String)> {
    let mut c = Resp::connect(addr, 2).expect("connect");
    c.call(&["FLUSHALL"]);
    if resp3 {
        c.call(&["HELLO", "3"]);
    }
    SEQUENCE
        .lines()
        .map(|line| {
            let args: Vec<&str> = line.split(' ').collect();
            (line.to_string(), c.call(&args))
        })
        .collect()
}

#[test]
fn same_replies_as_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    let h = Harness::start();
    assert!(SEQUENCE.lines().count() >= 50);
    for resp3 in [false, true] {
        let want = run_sequence(redis.addr, resp3);
        let got = run_sequence(h.server.addr(), resp3);
        for ((cmd, w), (_, g)) in want.iter().zip(&got) {
            assert_eq!(g, w, "RESP{}: {cmd}", if resp3 { 3 } else { 2 });
        }
    }
}
