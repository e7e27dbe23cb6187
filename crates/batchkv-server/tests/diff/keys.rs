//! Generators for the keyspace commands.

use super::compare::Cmp::{Exact, ScanPage, Ttl, Unordered};
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// EXPIRE/PEXPIRE: a relative time (large, or immediate/invalid) and
/// NX/XX sometimes. GT/LT are left to the absolute forms: two relative
/// expiries with the same argument compare by the ms each server set them
/// at.
fn expire(g: &mut Gen, name: &str, time: fn(&mut Gen) -> Vec<u8>) -> Args {
    let t = if g.chance(0.1) { g.bad_ttl() } else { time(g) };
    let mut c = cmd(name, [g.key(), t]);
    if g.chance(0.3) {
        c.push(g.pick(&["NX", "XX", "nx", "xx", "bogus"]));
    }
    c
}

/// EXPIREAT/PEXPIREAT: an absolute time far ahead (or in the past: the key
/// is deleted), with 0-2 of NX/XX/GT/LT.
fn expire_at(g: &mut Gen, name: &str, time: fn(&mut Gen) -> Vec<u8>) -> Args {
    let t = if g.chance(0.1) {
        g.pick(&["1", "0", "-5", "abc"])
    } else {
        time(g)
    };
    let mut c = cmd(name, [g.key(), t]);
    for _ in 0..g.range(0, 2) {
        c.push(g.pick(&["NX", "XX", "GT", "LT"]));
    }
    c
}

fn copy(g: &mut Gen) -> Args {
    let mut c = cmd("COPY", [g.key(), g.key()]);
    if g.chance(0.5) {
        c.push(b("REPLACE"));
    }
    if g.chance(0.1) {
        c.extend([b("DB"), g.pick(&["0", "1", "x", "-1", "99"])]);
    }
    c
}

fn scan(g: &mut Gen) -> Args {
    let mut c = cmd("SCAN", [b("0"), b("COUNT"), b("1000")]);
    if g.chance(0.5) {
        c.extend([b("MATCH"), g.pick(&["*", "a*", "?", "x:*", "[ab]*"])]);
    }
    if g.chance(0.3) {
        c.extend([
            b("TYPE"),
            g.pick(&["string", "hash", "set", "zset", "list", "none"]),
        ]);
    }
    c
}

/// OBJECT ENCODING mostly; HELP, FREQ (an error without an LFU policy)
/// and bad subcommands. IDLETIME and REFCOUNT are left out: Redis's
/// answers depend on time and on its shared integer objects.
fn object(g: &mut Gen) -> Args {
    match g.below(10) {
        0 => cmd("OBJECT", [g.pick(&["HELP", "help"])]),
        1 => cmd("OBJECT", [b("FREQ"), g.key()]),
        2 => cmd("OBJECT", [g.pick(&["bogus", "ENCODING"])]),
        _ => cmd("OBJECT", [b("ENCODING"), g.key()]),
    }
}

/// The keyspace commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("del", 6, Exact, |g| cmd("DEL", g.keys(1, 3))),
    CmdGen::new("unlink", 2, Exact, |g| cmd("UNLINK", g.keys(1, 3))),
    CmdGen::new("exists", 6, Exact, |g| cmd("EXISTS", g.keys(1, 4))),
    CmdGen::new("type", 8, Exact, |g| cmd("TYPE", [g.key()])),
    CmdGen::new("expire", 6, Exact, |g| expire(g, "EXPIRE", Gen::ttl_s)),
    CmdGen::new("pexpire", 3, Exact, |g| expire(g, "PEXPIRE", Gen::ttl_ms)),
    CmdGen::new("expireat", 4, Exact, |g| {
        expire_at(g, "EXPIREAT", Gen::at_s)
    }),
    CmdGen::new("pexpireat", 3, Exact, |g| {
        expire_at(g, "PEXPIREAT", Gen::at_ms)
    }),
    CmdGen::new("ttl", 8, Ttl, |g| cmd("TTL", [g.key()])),
    CmdGen::new("pttl", 3, Ttl, |g| cmd("PTTL", [g.key()])),
    CmdGen::new("expiretime", 2, Ttl, |g| cmd("EXPIRETIME", [g.key()])),
    CmdGen::new("pexpiretime", 2, Ttl, |g| cmd("PEXPIRETIME", [g.key()])),
    CmdGen::new("persist", 5, Exact, |g| cmd("PERSIST", [g.key()])),
    CmdGen::new("rename", 4, Exact, |g| cmd("RENAME", [g.key(), g.key()])),
    CmdGen::new("renamenx", 3, Exact, |g| {
        cmd("RENAMENX", [g.key(), g.key()])
    }),
    CmdGen::new("copy", 4, Exact, copy),
    CmdGen::new("dbsize", 4, Exact, |_| cmd("DBSIZE", [])),
    CmdGen::new("keys", 3, Unordered, |g| {
        cmd(
            "KEYS",
            [g.pick(&["*", "a*", "?", "x:*", "[ab]*", "*b", "nomatch"])],
        )
    }),
    CmdGen::new("scan", 2, ScanPage { pairs: false }, scan),
    CmdGen::new("flushdb", 1, Exact, |g| {
        let mut c = cmd("FLUSHDB", []);
        if g.chance(0.5) {
            c.push(g.pick(&["ASYNC", "SYNC", "bogus"]));
        }
        c
    }),
    CmdGen::new("move", 3, Exact, |g| {
        let db = g.good_or_bad(&["1", "1", "0"], &["x", "16", "-1"], 0.1);
        cmd("MOVE", [g.key(), db])
    }),
    CmdGen::new("swapdb", 1, Exact, |g| {
        let (x, y) = if g.chance(0.8) {
            (b("0"), b("1"))
        } else {
            (g.pick(&["0", "1", "x"]), g.pick(&["0", "16", "-1"]))
        };
        cmd("SWAPDB", [x, y])
    }),
    CmdGen::new("object", 4, Exact, object),
    CmdGen::new("touch", 3, Exact, |g| cmd("TOUCH", g.keys(1, 3))),
    CmdGen::new("(unknown command)", 1, Exact, |g| {
        cmd("NOSUCHCOMMAND", g.keys(0, 2))
    }),
];
