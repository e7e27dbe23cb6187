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

/// A bit offset: small (the strings here are short), sometimes invalid
/// (past the 512 MiB limit). Not the last valid offset: Redis would make a
/// 512 MiB string, batchkv's engine refuses values over 64 MiB.
fn bit_offset(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.04) {
        return g.pick(&["-1", "x", "4294967296"]);
    }
    b(&g.range(0, 40).to_string())
}

/// `[start end [BYTE|BIT]]` of BITCOUNT, or BITPOS's `[start [end
/// [BYTE|BIT]]]` when `bitpos`.
fn bit_range(g: &mut Gen, bitpos: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // BITCOUNT with a start and no end is a syntax error.
    let n = if bitpos {
        g.range(0, 3)
    } else {
        [0, 2, 3, 1][g.below(4)]
    };
    for i in 0..n {
        if i == 2 {
            out.push(g.good_or_bad(&["BYTE", "BIT", "bit"], &["WORD"], 0.05));
        } else {
            out.push(g.index());
        }
    }
    out
}

/// BITOP op dest key... (NOT takes one key; more is an error).
fn bitop(g: &mut Gen) -> Args {
    let op = g.good_or_bad(&["AND", "OR", "XOR", "NOT", "and"], &["NAND"], 0.05);
    let mut c = cmd("BITOP", [op.clone(), g.key()]);
    let n = if op == b"NOT" && g.chance(0.9) {
        1
    } else {
        g.range(1, 3)
    };
    for _ in 0..n {
        c.push(g.key());
    }
    c
}

/// LCS k1 k2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN].
fn lcs(g: &mut Gen) -> Args {
    let mut c = cmd("LCS", [g.key(), g.key()]);
    for _ in 0..g.range(0, 3) {
        match g.below(4) {
            0 => c.push(b("LEN")),
            1 => c.push(b("IDX")),
            2 => c.extend([
                b("MINMATCHLEN"),
                g.good_or_bad(&["0", "1", "2", "-1"], &["x"], 0.05),
            ]),
            _ => c.push(b("WITHMATCHLEN")),
        }
    }
    c
}

/// A BITFIELD field type: any width of either sign, sometimes a bad one.
fn field_type(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.05) {
        return g.pick(&["u64", "i65", "i0", "x8", "I8", "i08"]);
    }
    let signed = g.chance(0.5);
    let bits = g.range(1, if signed { 64 } else { 63 });
    b(&format!("{}{bits}", if signed { "i" } else { "u" }))
}

/// A BITFIELD offset: a small bit offset or `#N` (the N-th field), rarely
/// an invalid one (never between batchkv's 64 MiB limit and Redis's 512 MB).
fn field_offset(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.05) {
        return g.pick(&["-1", "x", "#-1", "#x", "4294967296000"]);
    }
    if g.chance(0.3) {
        return b(&format!("#{}", g.range(0, 4)));
    }
    b(&g.range(0, 40).to_string())
}

/// BITFIELD (or BITFIELD_RO, `ro`) with 0-3 operations: GET, SET, INCRBY
/// with extreme and invalid values, OVERFLOW rules; BITFIELD_RO mostly
/// GETs (a write is its error).
fn bitfield(g: &mut Gen, ro: bool) -> Args {
    let mut c = cmd(if ro { "BITFIELD_RO" } else { "BITFIELD" }, [g.key()]);
    for _ in 0..g.range(0, 3) {
        let op = if ro && g.chance(0.9) { 0 } else { g.below(4) };
        match op {
            0 => c.extend([g.pick(&["GET", "get"]), field_type(g), field_offset(g)]),
            1 => c.extend([b("SET"), field_type(g), field_offset(g), g.int_arg()]),
            2 => c.extend([b("INCRBY"), field_type(g), field_offset(g), g.int_arg()]),
            _ => c.extend([
                b("OVERFLOW"),
                g.good_or_bad(&["WRAP", "SAT", "FAIL", "fail"], &["BOGUS"], 0.05),
            ]),
        }
    }
    c
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
    CmdGen::new("setbit", 6, Exact, |g| {
        let bit = g.good_or_bad(&["0", "1"], &["2", "-1", "x"], 0.05);
        cmd("SETBIT", [g.key(), bit_offset(g), bit])
    }),
    CmdGen::new("getbit", 4, Exact, |g| {
        cmd("GETBIT", [g.key(), bit_offset(g)])
    }),
    CmdGen::new("bitcount", 4, Exact, |g| {
        let mut c = cmd("BITCOUNT", [g.key()]);
        c.extend(bit_range(g, false));
        c
    }),
    CmdGen::new("bitpos", 4, Exact, |g| {
        let bit = g.good_or_bad(&["0", "1"], &["2", "x"], 0.05);
        let mut c = cmd("BITPOS", [g.key(), bit]);
        c.extend(bit_range(g, true));
        c
    }),
    CmdGen::new("bitop", 3, Exact, bitop),
    CmdGen::new("lcs", 3, Exact, lcs),
    CmdGen::new("bitfield", 4, Exact, |g| bitfield(g, false)),
    CmdGen::new("bitfield_ro", 2, Exact, |g| bitfield(g, true)),
];
