//! Generators for the hash commands.

use super::compare::Cmp::{Exact, ScanPage, Unordered, UnorderedPairs};
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// `key field value [field value ...]`, sometimes with a value missing.
fn field_values(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = vec![g.key()];
    for _ in 0..g.range(1, 3) {
        out.push(g.field());
        out.push(g.value());
    }
    if g.chance(0.05) {
        out.pop();
    }
    out
}

/// HRANDFIELD with a count of 0 or at least the largest hash (so the reply
/// is the whole hash, in an unspecified order), or an invalid count (not a
/// number, out of range; with WITHVALUES, beyond ±`i64::MAX / 2`). Other
/// negative counts are random.
fn hrandfield(g: &mut Gen, with_values: bool) -> Args {
    let mut counts = vec![
        "0",
        "10",
        "100",
        "x",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    if with_values {
        counts.extend([
            "4611686018427387903",
            "4611686018427387904",
            "-4611686018427387904",
        ]);
    }
    let mut c = cmd("HRANDFIELD", [g.key(), g.pick(&counts)]);
    if with_values {
        c.push(g.pick(&["WITHVALUES", "withvalues", "bogus"]));
    }
    c
}

/// HSCAN from cursor 0 with a COUNT of at least the largest hash: one page
/// with everything.
fn hscan(g: &mut Gen) -> Args {
    let mut c = cmd("HSCAN", [g.key(), b("0")]);
    if g.chance(0.5) {
        c.extend([b("MATCH"), g.pick(&["*", "f*", "?b", "[a-f]1"])]);
    }
    if g.chance(0.5) {
        c.extend([b("COUNT"), g.pick(&["10", "100"])]);
    }
    c
}

/// The hash commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("hset", 20, Exact, |g| cmd("HSET", field_values(g))),
    CmdGen::new("hmset", 4, Exact, |g| cmd("HMSET", field_values(g))),
    CmdGen::new("hsetnx", 5, Exact, |g| {
        cmd("HSETNX", [g.key(), g.field(), g.value()])
    }),
    CmdGen::new("hget", 10, Exact, |g| cmd("HGET", [g.key(), g.field()])),
    CmdGen::new("hmget", 6, Exact, |g| {
        let mut c = cmd("HMGET", [g.key()]);
        c.extend(g.fields(1, 4));
        c
    }),
    CmdGen::new("hgetall", 8, UnorderedPairs, |g| cmd("HGETALL", [g.key()])),
    CmdGen::new("hkeys", 4, Unordered, |g| cmd("HKEYS", [g.key()])),
    CmdGen::new("hvals", 4, Unordered, |g| cmd("HVALS", [g.key()])),
    CmdGen::new("hlen", 5, Exact, |g| cmd("HLEN", [g.key()])),
    CmdGen::new("hexists", 5, Exact, |g| {
        cmd("HEXISTS", [g.key(), g.field()])
    }),
    CmdGen::new("hstrlen", 4, Exact, |g| {
        cmd("HSTRLEN", [g.key(), g.field()])
    }),
    CmdGen::new("hdel", 8, Exact, |g| {
        let mut c = cmd("HDEL", [g.key()]);
        c.extend(g.fields(1, 3));
        c
    }),
    CmdGen::new("hincrby", 6, Exact, |g| {
        cmd("HINCRBY", [g.key(), g.field(), g.int_arg()])
    }),
    CmdGen::new("hincrbyfloat", 5, Exact, |g| {
        cmd("HINCRBYFLOAT", [g.key(), g.field(), g.float_arg()])
    }),
    // Without a count the reply is one random field: never drop the count.
    CmdGen::new("hrandfield", 2, Unordered, |g| hrandfield(g, false)).keep_arity(),
    CmdGen::new("hrandfield withvalues", 2, UnorderedPairs, |g| {
        hrandfield(g, true)
    })
    .keep_arity(),
    CmdGen::new("hscan", 3, ScanPage { pairs: true }, hscan),
];
