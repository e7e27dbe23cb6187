//! Generators for the list commands, blocking ones included: outside a
//! transaction a blocking command is sent right after an RPUSH to its
//! first key, so that it never waits (a WRONGTYPE key answers at once
//! too); inside MULTI (`tx.rs`) it never blocks.

use super::compare::Cmp::Exact;
use super::generate::{b, cmd, Args, CmdGen, Draw, Gen, Step};

/// `key value [value ...]`.
fn key_values(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = vec![g.key()];
    for _ in 0..g.range(1, 3) {
        out.push(g.list_value());
    }
    out
}

/// A list index (LINDEX, LSET, LRANGE, LTRIM).
fn index(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.03) {
        return g.pick(&["x", "1.5", "9223372036854775807", "-9223372036854775808"]);
    }
    b(&g.range(-6, 6).to_string())
}

/// LPOP/RPOP key [count].
fn pop(g: &mut Gen, name: &str) -> Args {
    let mut c = cmd(name, [g.key()]);
    if g.chance(0.5) {
        c.push(g.good_or_bad(&["0", "1", "2", "10"], &["-1", "x"], 0.1));
    }
    c
}

fn side(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(&["LEFT", "RIGHT", "left", "right"], &["UP"], 0.03)
}

/// LPOS key element [RANK r] [COUNT n] [MAXLEN m].
fn lpos(g: &mut Gen) -> Args {
    let mut c = cmd("LPOS", [g.key(), g.list_value()]);
    if g.chance(0.4) {
        c.extend([
            b("RANK"),
            g.good_or_bad(&["1", "2", "-1", "-2"], &["0", "x"], 0.1),
        ]);
    }
    if g.chance(0.4) {
        c.extend([
            b("COUNT"),
            g.good_or_bad(&["0", "1", "2"], &["-1", "x"], 0.1),
        ]);
    }
    if g.chance(0.3) {
        c.extend([
            b("MAXLEN"),
            g.good_or_bad(&["0", "1", "3"], &["-1", "x"], 0.1),
        ]);
    }
    c
}

/// LMPOP/BLMPOP's `numkeys key... LEFT|RIGHT [COUNT n]`, sometimes with
/// numkeys not matching.
fn mpop_args(g: &mut Gen, keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let numkeys = if g.chance(0.08) {
        g.pick(&["0", "-1", "x", "4"])
    } else {
        b(&keys.len().to_string())
    };
    let mut out = vec![numkeys];
    out.extend(keys);
    out.push(side(g));
    if g.chance(0.5) {
        out.extend([
            b("COUNT"),
            g.good_or_bad(&["1", "2", "10"], &["0", "-1", "x"], 0.1),
        ]);
    }
    out
}

/// A blocking timeout: short, sometimes invalid.
fn timeout(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(&["0.01", "0.05", "1"], &["-1", "x"], 0.05)
}

/// A blocking list command (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) and
/// its first key.
pub fn blocking(g: &mut Gen) -> (&'static str, Vec<u8>, Args) {
    let first = g.key();
    let (name, c) = match g.below(5) {
        0 | 1 => {
            let name = if g.chance(0.5) { "BLPOP" } else { "BRPOP" };
            let mut c = cmd(name, [first.clone()]);
            c.extend(g.keys(0, 2));
            c.push(timeout(g));
            (if name == "BLPOP" { "blpop" } else { "brpop" }, c)
        }
        2 => {
            let c = cmd(
                "BLMOVE",
                [first.clone(), g.key(), side(g), side(g), timeout(g)],
            );
            ("blmove", c)
        }
        3 => (
            "brpoplpush",
            cmd("BRPOPLPUSH", [first.clone(), g.key(), timeout(g)]),
        ),
        _ => {
            let mut keys = vec![first.clone()];
            keys.extend(g.keys(0, 2));
            let mut c = cmd("BLMPOP", [timeout(g)]);
            c.extend(mpop_args(g, keys));
            ("blmpop", c)
        }
    };
    (name, first, c)
}

/// A blocking command after an RPUSH to its first key: it finds an
/// element (or a key of another type) and answers at once.
fn blocking_steps(g: &mut Gen, _: Draw) -> Vec<Step> {
    let (name, first, c) = blocking(g);
    let value = g.list_value();
    vec![
        Step::new("rpush", Exact, cmd("RPUSH", [first, value])),
        Step::new(name, Exact, c),
    ]
}

/// The list commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("lpush", 10, Exact, |g| cmd("LPUSH", key_values(g))),
    CmdGen::new("rpush", 10, Exact, |g| cmd("RPUSH", key_values(g))),
    CmdGen::new("lpushx", 3, Exact, |g| cmd("LPUSHX", key_values(g))),
    CmdGen::new("rpushx", 3, Exact, |g| cmd("RPUSHX", key_values(g))),
    CmdGen::new("lpop", 5, Exact, |g| pop(g, "LPOP")),
    CmdGen::new("rpop", 5, Exact, |g| pop(g, "RPOP")),
    CmdGen::new("llen", 4, Exact, |g| cmd("LLEN", [g.key()])),
    CmdGen::new("lindex", 4, Exact, |g| cmd("LINDEX", [g.key(), index(g)])),
    CmdGen::new("lrange", 6, Exact, |g| {
        cmd("LRANGE", [g.key(), index(g), index(g)])
    }),
    CmdGen::new("lset", 3, Exact, |g| {
        cmd("LSET", [g.key(), index(g), g.list_value()])
    }),
    CmdGen::new("linsert", 3, Exact, |g| {
        let place = g.good_or_bad(&["BEFORE", "AFTER", "after"], &["MIDDLE"], 0.05);
        cmd("LINSERT", [g.key(), place, g.list_value(), g.list_value()])
    }),
    CmdGen::new("lrem", 3, Exact, |g| {
        let count = g.good_or_bad(&["0", "1", "2", "-1", "-2"], &["x"], 0.05);
        cmd("LREM", [g.key(), count, g.list_value()])
    }),
    CmdGen::new("ltrim", 3, Exact, |g| {
        cmd("LTRIM", [g.key(), index(g), index(g)])
    }),
    CmdGen::new("lpos", 3, Exact, lpos),
    CmdGen::new("lmove", 3, Exact, |g| {
        cmd("LMOVE", [g.key(), g.key(), side(g), side(g)])
    }),
    CmdGen::new("rpoplpush", 3, Exact, |g| {
        cmd("RPOPLPUSH", [g.key(), g.key()])
    }),
    CmdGen::new("lmpop", 3, Exact, |g| {
        let keys = g.keys(1, 3);
        cmd("LMPOP", mpop_args(g, keys))
    }),
    CmdGen::steps("(blocking lists)", 5, blocking_steps),
];
