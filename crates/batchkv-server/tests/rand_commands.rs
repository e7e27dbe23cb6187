//! The RAND commands (SRANDMEMBER, SPOP, HRANDFIELD, ZRANDMEMBER) pick by
//! position (`commands/sample.rs`): drawn positions, one walk from the
//! nearer end, or for an indexed sorted set `ranks::select`. Checked here:
//! every element is picked about equally often, whichever end a walk
//! starts from and whether a pick is walked to or selected; counted picks
//! are distinct (or repeat, for a negative count) and carry the right
//! values and scores; SPOP takes each member exactly once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{BTreeSet, HashMap};

use common::{q, Harness};

/// Elements per collection: single picks far from both ends of the
/// sorted set (more than 64 members away) are selected by rank, near ones
/// walked.
const N: usize = 2_000;
/// Buckets of N / BUCKETS consecutive elements the picks are counted in.
const BUCKETS: usize = 20;
/// Single picks per collection: 500 expected per bucket.
const PICKS: usize = 10_000;

/// Runs `cmd` `PICKS` times (pipelined) and returns the picked names.
fn single_picks(c: &mut redis::Connection, cmd: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(PICKS);
    for _ in 0..PICKS / 1_000 {
        let mut p = redis::pipe();
        for _ in 0..1_000 {
            p.cmd(cmd[0]).arg(&cmd[1..]);
        }
        let got: Vec<String> = p.query(c).unwrap();
        out.extend(got);
    }
    out
}

/// Pearson's chi-square of the picks' bucket counts against a uniform
/// spread; `index` maps a pick to its element's index. Fails on a pick
/// that is no element.
fn chi_square(picks: &[String], index: impl Fn(&str) -> Option<usize>) -> f64 {
    let mut hits = [0u64; BUCKETS];
    for p in picks {
        let i = index(p).unwrap_or_else(|| panic!("not an element: {p}"));
        hits[i * BUCKETS / N] += 1;
    }
    let want = picks.len() as f64 / BUCKETS as f64;
    hits.iter().map(|&h| (h as f64 - want).powi(2) / want).sum()
}

/// Chi-square above this (19 degrees of freedom) fails: p ≈ 1e-7 for a
/// uniform pick; a pick biased towards either end or towards the walked
/// or the selected positions lands far above it.
const CHI_MAX: f64 = 70.0;

/// Member i: zero-padded, so that member order is index order.
fn name(prefix: &str, i: usize) -> String {
    format!("{prefix}{i:05}")
}

fn index_of(prefix: &str) -> impl Fn(&str) -> Option<usize> + '_ {
    move |s| {
        s.strip_prefix(prefix)?
            .parse()
            .ok()
            .filter(|&i: &usize| i < N)
    }
}

fn fill(c: &mut redis::Connection) {
    let mut p = redis::pipe();
    for i in 0..N {
        let m = name("m", i);
        p.cmd("SADD").arg("s").arg(&m).ignore();
        p.cmd("HSET").arg("h").arg(&m).arg(format!("v{i}")).ignore();
        // Scores descending while members ascend: score order is the
        // reverse of member order.
        p.cmd("ZADD")
            .arg("z")
            .arg(-(i as f64) / 4.0)
            .arg(&m)
            .ignore();
    }
    let () = p.query(c).unwrap();
}

#[test]
fn every_element_is_picked_about_equally_often() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    for (cmd, key) in [
        ("SRANDMEMBER", "s"),
        ("HRANDFIELD", "h"),
        ("ZRANDMEMBER", "z"),
    ] {
        let picks = single_picks(&mut c, &[cmd, key]);
        let chi = chi_square(&picks, index_of("m"));
        assert!(chi < CHI_MAX, "{cmd}: chi-square {chi:.1}");
    }
    // Counted picks: each reply's members spread the same way.
    for (cmd, key) in [
        ("SRANDMEMBER", "s"),
        ("HRANDFIELD", "h"),
        ("ZRANDMEMBER", "z"),
    ] {
        let mut picks = Vec::new();
        for _ in 0..PICKS / 5 / 500 {
            let mut p = redis::pipe();
            for _ in 0..500 {
                p.cmd(cmd).arg(key).arg(5);
            }
            let replies: Vec<Vec<String>> = p.query(&mut c).unwrap();
            for got in replies {
                assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), 5, "{cmd}");
                picks.extend(got);
            }
        }
        let chi = chi_square(&picks, index_of("m"));
        assert!(chi < CHI_MAX, "{cmd} 5: chi-square {chi:.1}");
    }
}

#[test]
fn counted_picks_carry_their_values_and_scores() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    let score = |m: &str| -(index_of("m")(m).unwrap() as f64) / 4.0;
    for count in ["7", "-7", "-3000", "1999", "2000", "5000"] {
        let got: Vec<(String, f64)> = q(&mut c, &["ZRANDMEMBER", "z", count, "WITHSCORES"]);
        let want_len = match count.parse::<i64>().unwrap() {
            n if n < 0 => n.unsigned_abs() as usize,
            n => (n as usize).min(N),
        };
        assert_eq!(got.len(), want_len, "ZRANDMEMBER {count}");
        for (m, s) in &got {
            assert_eq!(*s, score(m), "ZRANDMEMBER {count}: {m}");
        }
        if !count.starts_with('-') {
            let distinct: BTreeSet<_> = got.iter().map(|(m, _)| m).collect();
            assert_eq!(distinct.len(), want_len, "ZRANDMEMBER {count}");
        }
        let got: Vec<(String, String)> = q(&mut c, &["HRANDFIELD", "h", count, "WITHVALUES"]);
        assert_eq!(got.len(), want_len, "HRANDFIELD {count}");
        for (f, v) in &got {
            assert_eq!(*v, format!("v{}", index_of("m")(f).unwrap()));
        }
    }
    // A negative count repeats picks: 3,000 from 2,000 must repeat.
    let rep: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "-3000"]);
    let mut seen = HashMap::new();
    for m in &rep {
        *seen.entry(m.clone()).or_insert(0) += 1;
    }
    assert!(seen.len() < 3_000 && seen.keys().all(|m| index_of("m")(m).is_some()));
    // Inside a transaction the picks see its own writes: the odd members
    // removed, every pick is an even one (most single picks of the 1,000
    // left are selected by rank, through the transaction's own records).
    redis::cmd("MULTI").exec(&mut c).unwrap();
    let mut zrem = redis::cmd("ZREM");
    zrem.arg("z");
    for i in (1..N).step_by(2) {
        zrem.arg(name("m", i));
    }
    zrem.exec(&mut c).unwrap();
    for _ in 0..50 {
        redis::cmd("ZRANDMEMBER").arg("z").exec(&mut c).unwrap();
    }
    let mut exec: Vec<redis::Value> = redis::cmd("EXEC").query(&mut c).unwrap();
    let picks: Vec<String> = exec
        .split_off(1)
        .into_iter()
        .map(|v| redis::from_redis_value(&v).unwrap())
        .collect();
    let removed: i64 = redis::from_redis_value(&exec[0]).unwrap();
    assert_eq!(removed, (N / 2) as i64);
    assert_eq!(picks.len(), 50);
    for p in &picks {
        assert_eq!(index_of("m")(p).unwrap() % 2, 0, "{p} was removed");
    }
}

#[test]
fn spop_takes_every_member_exactly_once() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    let mut popped = BTreeSet::new();
    let mut left = N as i64;
    while left > 0 {
        if left % 3 == 0 {
            let got: Vec<String> = q(&mut c, &["SPOP", "s", "7"]);
            assert_eq!(got.len() as i64, left.min(7));
            for m in got {
                assert!(popped.insert(m));
            }
        } else {
            let m: String = q(&mut c, &["SPOP", "s"]);
            assert!(popped.insert(m));
        }
        left = N as i64 - popped.len() as i64;
        assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), left);
    }
    assert_eq!(popped.len(), N);
    assert!(popped.iter().all(|m| index_of("m")(m).is_some()));
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0);
}

/// Inside MULTI the picks see the transaction's own writes: a set and a
/// hash rewritten in the transaction are picked from as rewritten.
#[test]
fn picks_inside_a_transaction_see_its_writes() {
    let h = Harness::start();
    let mut c = h.conn();
    fill(&mut c);
    let mut p = redis::pipe();
    p.atomic();
    p.cmd("DEL").arg("s").arg("h").ignore();
    p.cmd("SADD").arg("s").arg("x").arg("y").ignore();
    p.cmd("HSET").arg("h").arg("f").arg("v").ignore();
    p.cmd("SRANDMEMBER").arg("s").arg(-20);
    p.cmd("HRANDFIELD").arg("h").arg(-5).arg("WITHVALUES");
    p.cmd("SPOP").arg("s").arg(5);
    p.cmd("SCARD").arg("s");
    let (rand, fields, popped, left): (Vec<String>, Vec<String>, BTreeSet<String>, i64) =
        p.query(&mut c).unwrap();
    assert_eq!(rand.len(), 20);
    assert!(rand.iter().all(|m| m == "x" || m == "y"), "{rand:?}");
    assert_eq!(fields, ["f", "v"].repeat(5));
    assert_eq!(popped, BTreeSet::from(["x".to_string(), "y".to_string()]));
    assert_eq!(left, 0);
}
