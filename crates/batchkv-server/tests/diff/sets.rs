//! Generators for the set commands.

use super::compare::Cmp::{Exact, ScanAll, Unordered};
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// A count at least as large as any set here (the bulk row makes the
/// largest, [`BULK`] members), so SRANDMEMBER/SPOP answer the whole set.
const WHOLE: &str = "1000";

/// Members of the bulk row: integers, more than Redis's 512-entry intset
/// limit, so that the set is a hashtable in Redis.
const BULK: usize = 520;

/// `key member [member ...]`.
fn key_members(g: &mut Gen, lo: i64, hi: i64) -> Vec<Vec<u8>> {
    let mut out = vec![g.key()];
    out.extend(g.members(lo, hi));
    out
}

/// `lo..=hi` keys, then a set command over them (SINTER, SUNION, ...).
fn multi_key(g: &mut Gen, name: &str, store: bool) -> Args {
    let mut c = cmd(name, []);
    if store {
        c.push(g.key());
    }
    c.extend(g.keys(1, 3));
    c
}

/// SINTERCARD numkeys key... [LIMIT n]: sometimes a numkeys that does not
/// match, a bad LIMIT.
fn sintercard(g: &mut Gen) -> Args {
    let keys = g.keys(1, 3);
    let numkeys = if g.chance(0.1) {
        g.pick(&["0", "-1", "x", "5"])
    } else {
        b(&keys.len().to_string())
    };
    let mut c = cmd("SINTERCARD", [numkeys]);
    c.extend(keys);
    if g.chance(0.4) {
        c.extend([b("LIMIT"), g.pick(&["0", "1", "2", "100", "-1", "x"])]);
    }
    if g.chance(0.05) {
        c.push(b("bogus"));
    }
    c
}

/// SRANDMEMBER with a count whose reply is determined: 0, the whole set,
/// or an invalid count.
fn srandmember(g: &mut Gen) -> Args {
    let count = g.good_or_bad(
        &["0", WHOLE],
        &["x", "1.5", "-9223372036854775808", "9223372036854775807"],
        0.2,
    );
    cmd("SRANDMEMBER", [g.key(), count])
}

/// SPOP of the whole set (or none, or an invalid count).
fn spop(g: &mut Gen) -> Args {
    let count = g.good_or_bad(&["0", WHOLE], &["-1", "x", "9223372036854775807"], 0.2);
    cmd("SPOP", [g.key(), count])
}

/// SSCAN from cursor 0 (sometimes an invalid one), with MATCH and a small
/// COUNT sometimes: the test iterates to the end on each server.
fn sscan(g: &mut Gen) -> Args {
    let cursor = g.good_or_bad(&["0"], &["x", "1.5"], 0.05);
    let mut c = cmd("SSCAN", [g.key(), cursor]);
    if g.chance(0.4) {
        c.extend([b("MATCH"), g.pick(&["*", "m*", "?", "1*", "[a-m]*"])]);
    }
    if g.chance(0.5) {
        c.extend([b("COUNT"), g.pick(&["1", "3", "10", "0", "x"])]);
    }
    c
}

/// SADD of [`BULK`] integers to the table's second key (rare).
fn sadd_bulk(g: &mut Gen) -> Args {
    let mut c = cmd("SADD", [g.second_key()]);
    c.extend((0..BULK).map(|i| b(&i.to_string())));
    c
}

/// The set commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("sadd", 16, Exact, |g| cmd("SADD", key_members(g, 1, 4))),
    CmdGen::new("sadd (bulk)", 1, Exact, sadd_bulk),
    CmdGen::new("srem", 7, Exact, |g| cmd("SREM", key_members(g, 1, 3))),
    CmdGen::new("sismember", 5, Exact, |g| {
        cmd("SISMEMBER", [g.key(), g.member()])
    }),
    CmdGen::new("smismember", 4, Exact, |g| {
        cmd("SMISMEMBER", key_members(g, 1, 4))
    }),
    CmdGen::new("smembers", 6, Unordered, |g| cmd("SMEMBERS", [g.key()])),
    CmdGen::new("scard", 5, Exact, |g| cmd("SCARD", [g.key()])),
    CmdGen::new("smove", 5, Exact, |g| {
        cmd("SMOVE", [g.key(), g.key(), g.member()])
    }),
    CmdGen::new("sinter", 4, Unordered, |g| multi_key(g, "SINTER", false)),
    CmdGen::new("sunion", 4, Unordered, |g| multi_key(g, "SUNION", false)),
    CmdGen::new("sdiff", 4, Unordered, |g| multi_key(g, "SDIFF", false)),
    CmdGen::new("sinterstore", 3, Exact, |g| {
        multi_key(g, "SINTERSTORE", true)
    }),
    CmdGen::new("sunionstore", 3, Exact, |g| {
        multi_key(g, "SUNIONSTORE", true)
    }),
    CmdGen::new("sdiffstore", 3, Exact, |g| multi_key(g, "SDIFFSTORE", true)),
    CmdGen::new("sintercard", 4, Exact, sintercard),
    // Without a count the reply is one random member: never drop it.
    CmdGen::new("srandmember", 3, Unordered, srandmember).keep_arity(),
    CmdGen::new("spop", 3, Unordered, spop).keep_arity(),
    CmdGen::new("sscan", 4, ScanAll { pairs: false }, sscan),
];
