//! Generators for the sorted-set commands.

use super::compare::Cmp::{Exact, ScanAll, Unordered, UnorderedPairs};
use super::generate::{b, cmd, Args, CmdGen, Gen, Step, LEX_KEY};

/// Members of the bulk row: more than Redis's 128-entry listpack limit, so
/// that the sorted set is a skiplist in Redis.
const BULK: usize = 130;

/// ZADD's options (some conflicting, in random order), then 1-3
/// score/member pairs (sometimes a member missing).
fn zadd(g: &mut Gen) -> Args {
    let mut c = cmd("ZADD", [g.key()]);
    let mut incr = false;
    for _ in 0..[0, 0, 1, 1, 2, 3][g.below(6)] {
        let o = g.pick(&["NX", "XX", "GT", "LT", "CH", "INCR", "CH", "INCR"]);
        incr |= o == b"INCR";
        c.push(g.mixed_case(&o));
    }
    // INCR takes one pair (more is an error, sometimes made).
    let pairs = if incr && g.chance(0.8) {
        1
    } else {
        g.range(1, 3)
    };
    for _ in 0..pairs {
        c.push(g.score());
        c.push(g.member());
    }
    if g.chance(0.03) {
        c.pop();
    }
    c
}

/// ZADD of [`BULK`] members with distinct scores to the table's second
/// key (rare).
fn zadd_bulk(g: &mut Gen) -> Args {
    let mut c = cmd("ZADD", [g.second_key()]);
    for i in 0..BULK {
        c.push(b(&format!("{}", i as f64 * 0.75 - 20.0)));
        c.push(b(&format!("b{i}")));
    }
    c
}

/// A start/stop rank.
fn rank(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.03) {
        return g.pick(&["x", "1.5", "9223372036854775807", "-9223372036854775808"]);
    }
    b(&g.range(-6, 6).to_string())
}

/// `LIMIT offset count`, sometimes invalid.
fn limit(g: &mut Gen) -> Vec<Vec<u8>> {
    vec![
        b("LIMIT"),
        g.good_or_bad(&["0", "1", "2", "-1"], &["x"], 0.05),
        g.good_or_bad(&["0", "1", "2", "5", "-1", "-5"], &["x"], 0.05),
    ]
}

/// A lex-range command (`make`, on the key it is given) on a sorted set
/// whose scores are all 0: Redis defines lex ranges only for equal scores
/// (for others its two encodings answer differently). [`LEX_KEY`] is
/// first made a copy of a random key's set with every score 0 (or deleted,
/// when that key is not a set).
fn lex_steps(g: &mut Gen, name: &'static str, make: fn(&mut Gen, Vec<u8>) -> Args) -> Vec<Step> {
    let dest = b(LEX_KEY);
    let src = g.key();
    vec![
        Step::new("(lex setup)", Exact, cmd("DEL", [dest.clone()])),
        Step::new(
            "(lex setup)",
            Exact,
            cmd(
                "ZUNIONSTORE",
                [dest.clone(), b("1"), src, b("WEIGHTS"), b("0")],
            ),
        ),
        Step::new(name, Exact, make(g, dest)),
    ]
}

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT o c] [WITHSCORES],
/// the bounds matching the mode (sometimes not); BYLEX (`mode` 2) only on
/// `key` when it is set up by [`lex_steps`].
fn zrange_on(g: &mut Gen, key: Vec<u8>, mode: usize) -> Args {
    let (lo, hi) = match mode {
        0 => (rank(g), rank(g)),
        1 => (g.score_bound(), g.score_bound()),
        _ => (g.lex_bound(), g.lex_bound()),
    };
    let mut c = cmd("ZRANGE", [key, lo, hi]);
    let mut opts = Vec::new();
    match mode {
        0 if g.chance(0.05) => opts.push(vec![b("BYSCORE")]),
        1 => opts.push(vec![b("BYSCORE")]),
        2 => opts.push(vec![b("BYLEX")]),
        _ => {}
    }
    if g.chance(0.4) {
        opts.push(vec![b("REV")]);
    }
    if g.chance(if mode == 0 { 0.05 } else { 0.4 }) {
        opts.push(limit(g));
    }
    if g.chance(if mode == 2 { 0.05 } else { 0.5 }) {
        opts.push(vec![b("WITHSCORES")]);
    }
    // Options in any order.
    if g.chance(0.3) {
        opts.reverse();
    }
    c.extend(opts.into_iter().flatten());
    c
}

/// ZRANGEBYSCORE/ZREVRANGEBYSCORE key min max [WITHSCORES] [LIMIT o c].
fn by_score(g: &mut Gen, name: &str) -> Args {
    let mut c = cmd(name, [g.key(), g.score_bound(), g.score_bound()]);
    if g.chance(0.5) {
        c.push(b("WITHSCORES"));
    }
    if g.chance(0.3) {
        c.extend(limit(g));
    }
    c
}

/// ZRANGEBYLEX/ZREVRANGEBYLEX key min max [LIMIT o c].
fn by_lex(g: &mut Gen, name: &str, key: Vec<u8>) -> Args {
    let mut c = cmd(name, [key, g.lex_bound(), g.lex_bound()]);
    if g.chance(0.3) {
        c.extend(limit(g));
    }
    c
}

/// A ZPOPMIN/ZPOPMAX count.
fn pop_count(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(&["0", "1", "2", "10", "1000"], &["-1", "x"], 0.1)
}

/// ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE dest numkeys key... [WEIGHTS w...]
/// [AGGREGATE SUM|MIN|MAX] (no options for ZDIFFSTORE, except by mistake).
fn zstore(g: &mut Gen, name: &str, options: bool) -> Args {
    let keys = g.keys(1, 3);
    let numkeys = if g.chance(0.08) {
        g.pick(&["0", "-1", "x", "4"])
    } else {
        b(&keys.len().to_string())
    };
    let mut c = cmd(name, [g.key(), numkeys]);
    let n = keys.len();
    c.extend(keys);
    if options || g.chance(0.03) {
        if g.chance(0.4) {
            c.push(b("WEIGHTS"));
            let count = if g.chance(0.05) { n + 1 } else { n };
            for _ in 0..count {
                c.push(g.good_or_bad(&["1", "2", "-1", "0.5", "0", "inf", "-inf"], &["x"], 0.05));
            }
        }
        if g.chance(0.4) {
            c.push(b("AGGREGATE"));
            c.push(g.good_or_bad(&["SUM", "MIN", "MAX", "max"], &["avg"], 0.05));
        }
    }
    c
}

/// ZRANDMEMBER with a count 0 or past every set's size (determined
/// replies), or an invalid one.
fn zrandmember(g: &mut Gen, with_scores: bool) -> Args {
    let count = g.good_or_bad(
        &["0", "1000"],
        &["x", "-9223372036854775808", "9223372036854775807"],
        0.2,
    );
    let mut c = cmd("ZRANDMEMBER", [g.key(), count]);
    if with_scores {
        c.push(g.pick(&["WITHSCORES", "withscores", "bogus"]));
    }
    c
}

/// ZSCAN from cursor 0, with MATCH and a small COUNT sometimes: the test
/// iterates to the end on each server.
fn zscan(g: &mut Gen) -> Args {
    let cursor = g.good_or_bad(&["0"], &["x"], 0.05);
    let mut c = cmd("ZSCAN", [g.key(), cursor]);
    if g.chance(0.4) {
        c.extend([b("MATCH"), g.pick(&["*", "m*", "b1*", "?", "[a-m]*"])]);
    }
    if g.chance(0.5) {
        c.extend([b("COUNT"), g.pick(&["1", "5", "20", "x"])]);
    }
    c
}

/// The sorted-set commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("zadd", 18, Exact, zadd),
    CmdGen::new("zadd (bulk)", 1, Exact, zadd_bulk),
    CmdGen::new("zincrby", 5, Exact, |g| {
        cmd("ZINCRBY", [g.key(), g.score(), g.member()])
    }),
    CmdGen::new("zscore", 6, Exact, |g| cmd("ZSCORE", [g.key(), g.member()])),
    CmdGen::new("zmscore", 4, Exact, |g| {
        let mut c = cmd("ZMSCORE", [g.key()]);
        c.extend(g.members(1, 4));
        c
    }),
    CmdGen::new("zcard", 4, Exact, |g| cmd("ZCARD", [g.key()])),
    CmdGen::new("zcount", 4, Exact, |g| {
        cmd("ZCOUNT", [g.key(), g.score_bound(), g.score_bound()])
    }),
    CmdGen::steps("zlexcount", 3, |g, _| {
        lex_steps(g, "zlexcount", |g, k| {
            cmd("ZLEXCOUNT", [k, g.lex_bound(), g.lex_bound()])
        })
    }),
    CmdGen::new("zrange", 10, Exact, |g| {
        let (key, mode) = (g.key(), g.below(2));
        zrange_on(g, key, mode)
    }),
    CmdGen::steps("zrange bylex", 3, |g, _| {
        lex_steps(g, "zrange bylex", |g, k| zrange_on(g, k, 2))
    }),
    CmdGen::new("zrangebyscore", 4, Exact, |g| by_score(g, "ZRANGEBYSCORE")),
    CmdGen::new("zrevrangebyscore", 3, Exact, |g| {
        by_score(g, "ZREVRANGEBYSCORE")
    }),
    CmdGen::new("zrevrange", 3, Exact, |g| {
        let mut c = cmd("ZREVRANGE", [g.key(), rank(g), rank(g)]);
        if g.chance(0.5) {
            c.push(b("WITHSCORES"));
        }
        c
    }),
    CmdGen::steps("zrangebylex", 3, |g, _| {
        lex_steps(g, "zrangebylex", |g, k| by_lex(g, "ZRANGEBYLEX", k))
    }),
    CmdGen::steps("zrevrangebylex", 2, |g, _| {
        lex_steps(g, "zrevrangebylex", |g, k| by_lex(g, "ZREVRANGEBYLEX", k))
    }),
    CmdGen::new("zrank", 4, Exact, |g| cmd("ZRANK", [g.key(), g.member()])),
    CmdGen::new("zrevrank", 3, Exact, |g| {
        cmd("ZREVRANK", [g.key(), g.member()])
    }),
    CmdGen::new("zrem", 7, Exact, |g| {
        let mut c = cmd("ZREM", [g.key()]);
        c.extend(g.members(1, 3));
        c
    }),
    CmdGen::new("zremrangebyrank", 2, Exact, |g| {
        cmd("ZREMRANGEBYRANK", [g.key(), rank(g), rank(g)])
    }),
    CmdGen::new("zremrangebyscore", 2, Exact, |g| {
        cmd(
            "ZREMRANGEBYSCORE",
            [g.key(), g.score_bound(), g.score_bound()],
        )
    }),
    CmdGen::steps("zremrangebylex", 2, |g, _| {
        lex_steps(g, "zremrangebylex", |g, k| {
            cmd("ZREMRANGEBYLEX", [k, g.lex_bound(), g.lex_bound()])
        })
    }),
    CmdGen::new("zpopmin", 3, Exact, |g| {
        cmd("ZPOPMIN", [g.key(), pop_count(g)])
    }),
    CmdGen::new("zpopmax", 3, Exact, |g| {
        cmd("ZPOPMAX", [g.key(), pop_count(g)])
    }),
    CmdGen::new("zunionstore", 3, Exact, |g| zstore(g, "ZUNIONSTORE", true)),
    CmdGen::new("zinterstore", 3, Exact, |g| zstore(g, "ZINTERSTORE", true)),
    CmdGen::new("zdiffstore", 2, Exact, |g| zstore(g, "ZDIFFSTORE", false)),
    // Without a count the reply is one random member: never drop it.
    CmdGen::new("zrandmember", 2, Unordered, |g| zrandmember(g, false)).keep_arity(),
    CmdGen::new("zrandmember withscores", 2, UnorderedPairs, |g| {
        zrandmember(g, true)
    })
    .keep_arity(),
    CmdGen::new("zscan", 4, ScanAll { pairs: true }, zscan),
];
