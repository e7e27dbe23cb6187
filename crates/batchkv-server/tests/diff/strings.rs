//! Generators for the string commands.

use super::compare::Cmp::Exact;
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// SET's options, some conflicting, in random order: NX/XX, GET, and one
/// or more of EX/PX/EXAT/PXAT/KEEPTTL (large or invalid times).
fn set_options(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.range(0, 3) {
        match g.below(8) {
            0 => out.push(b("NX")),
            1 => out.push(b("XX")),
            2 => out.push(b("GET")),
            3 => out.push(b("KEEPTTL")),
            4 => out.extend([b("EX"), ttl_or_bad(g, Gen::ttl_s)]),
            5 => out.extend([b("PX"), ttl_or_bad(g, Gen::ttl_ms)]),
            6 => out.extend([b("EXAT"), ttl_or_bad(g, Gen::at_s)]),
            _ => out.extend([b("PXAT"), ttl_or_bad(g, Gen::at_ms)]),
        }
    }
    out.into_iter().map(|o| g.mixed_case(&o)).collect()
}

/// A valid time from `good`, sometimes an invalid one.
fn ttl_or_bad(g: &mut Gen, good: fn(&mut Gen) -> Vec<u8>) -> Vec<u8> {
    if g.chance(0.1) {
        g.bad_ttl()
    } else {
        good(g)
    }
}

/// GETEX's option: none, PERSIST, or one expiry (sometimes two: an error).
fn getex_options(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.range(0, 2) {
        match g.below(5) {
            0 => out.push(b("PERSIST")),
            1 => out.extend([b("EX"), ttl_or_bad(g, Gen::ttl_s)]),
            2 => out.extend([b("PX"), ttl_or_bad(g, Gen::ttl_ms)]),
            3 => out.extend([b("EXAT"), ttl_or_bad(g, Gen::at_s)]),
            _ => out.extend([b("PXAT"), ttl_or_bad(g, Gen::at_ms)]),
        }
    }
    out
}

/// `1..=3` key/value pairs, sometimes with a value missing.
fn pairs(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.range(1, 3) {
        out.push(g.key());
        out.push(g.value());
    }
    if g.chance(0.05) {
        out.pop();
    }
    out
}

fn setrange(g: &mut Gen) -> Args {
    let offset = if g.chance(0.05) {
        g.pick(&["-1", "x", "536870912"])
    } else {
        b(&g.range(0, 20).to_string())
    };
    let value = if g.chance(0.2) { b("") } else { g.value() };
    cmd("SETRANGE", [g.key(), offset, value])
}

/// The string commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("get", 10, Exact, |g| cmd("GET", [g.key()])),
    CmdGen::new("set", 20, Exact, |g| {
        let mut c = cmd("SET", [g.key(), g.value()]);
        c.extend(set_options(g));
        c
    }),
    CmdGen::new("setnx", 5, Exact, |g| cmd("SETNX", [g.key(), g.value()])),
    CmdGen::new("setex", 3, Exact, |g| {
        cmd("SETEX", [g.key(), ttl_or_bad(g, Gen::ttl_s), g.value()])
    }),
    CmdGen::new("psetex", 3, Exact, |g| {
        cmd("PSETEX", [g.key(), ttl_or_bad(g, Gen::ttl_ms), g.value()])
    }),
    CmdGen::new("getset", 5, Exact, |g| cmd("GETSET", [g.key(), g.value()])),
    CmdGen::new("getdel", 5, Exact, |g| cmd("GETDEL", [g.key()])),
    CmdGen::new("getex", 5, Exact, |g| {
        let mut c = cmd("GETEX", [g.key()]);
        c.extend(getex_options(g));
        c
    }),
    CmdGen::new("mget", 8, Exact, |g| cmd("MGET", g.keys(1, 4))),
    CmdGen::new("mset", 5, Exact, |g| cmd("MSET", pairs(g))),
    CmdGen::new("msetnx", 5, Exact, |g| cmd("MSETNX", pairs(g))),
    CmdGen::new("append", 8, Exact, |g| cmd("APPEND", [g.key(), g.value()])),
    CmdGen::new("strlen", 5, Exact, |g| cmd("STRLEN", [g.key()])),
    CmdGen::new("getrange", 6, Exact, |g| {
        cmd("GETRANGE", [g.key(), g.index(), g.index()])
    }),
    CmdGen::new("substr", 2, Exact, |g| {
        cmd("SUBSTR", [g.key(), g.index(), g.index()])
    }),
    CmdGen::new("setrange", 6, Exact, setrange),
    CmdGen::new("incr", 8, Exact, |g| cmd("INCR", [g.key()])),
    CmdGen::new("decr", 5, Exact, |g| cmd("DECR", [g.key()])),
    CmdGen::new("incrby", 6, Exact, |g| {
        cmd("INCRBY", [g.key(), g.int_arg()])
    }),
    CmdGen::new("decrby", 5, Exact, |g| {
        cmd("DECRBY", [g.key(), g.int_arg()])
    }),
    CmdGen::new("incrbyfloat", 6, Exact, |g| {
        cmd("INCRBYFLOAT", [g.key(), g.float_arg()])
    }),
];
