//! Generators for the stream commands. IDs come from a small range (a few
//! milliseconds, a few sequences) so that explicit IDs collide with the
//! stream's top item; `*` (the clock's ID) is never sent, since the two
//! servers' clocks differ, and neither is approximate trimming (`~`):
//! batchkv removes whole nodes as Redis does only while no entry inside
//! the stream was deleted (and trims exactly after an XDEL), and Redis
//! also closes nodes at `stream-node-max-bytes`.
//!
//! Consumer groups: two groups, three consumers. What depends on time is
//! not sent: XPENDING's extended form and XINFO CONSUMERS/STREAM (idle
//! and delivery times; XINFO STREAM's radix-tree figures are batchkv's
//! estimate), XCLAIM's IDLE and TIME; min-idle is 0 or an hour.

use super::compare::Cmp::Exact;
use super::generate::Draw;
use super::generate::{b, cmd, Args, CmdGen, Gen, Step};

/// An entry ID: mostly `ms-seq` from a small range, sometimes `ms`
/// alone, rarely invalid.
fn id(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.05) {
        return g.pick(&[
            "x",
            "1-x",
            "-1",
            "1-2-3",
            "(1",
            "-",
            "+",
            "",
            "18446744073709551615-18446744073709551615",
        ]);
    }
    let ms = g.range(0, 8);
    if g.chance(0.2) {
        return b(&ms.to_string());
    }
    b(&format!("{ms}-{}", g.range(0, 3)))
}

/// XADD's ID: as [`id`], or `ms-*`, rarely `0-0`.
fn add_id(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.25) {
        return b(&format!("{}-*", g.range(0, 8)));
    }
    if g.chance(0.03) {
        return b("0-0");
    }
    id(g)
}

/// A range bound: `-`, `+`, an ID, an excluded ID.
fn bound(g: &mut Gen) -> Vec<u8> {
    match g.below(5) {
        0 => b("-"),
        1 => b("+"),
        2 => [&b"("[..], &id(g)].concat(),
        _ => id(g),
    }
}

/// A trimming strategy: MAXLEN or MINID, sometimes with `=`, sometimes a
/// LIMIT (an error without `~`), rarely invalid.
fn strategy(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if g.chance(0.5) {
        out.push(g.good_or_bad(&["MAXLEN", "maxlen"], &["MAXLEN"], 0.0));
        if g.chance(0.3) {
            out.push(b("="));
        }
        out.push(g.good_or_bad(&["0", "1", "2", "3", "5"], &["-1", "x"], 0.05));
    } else {
        out.push(g.good_or_bad(&["MINID", "minid"], &["MINID"], 0.0));
        if g.chance(0.3) {
            out.push(b("="));
        }
        out.push(id(g));
    }
    if g.chance(0.05) {
        out.push(b("LIMIT"));
        out.push(g.pick(&["0", "1", "10"]));
    }
    out
}

fn fields(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.range(1, 3) {
        out.push(g.field());
        out.push(g.value());
    }
    out
}

fn xadd(g: &mut Gen) -> Args {
    let mut c = cmd("XADD", [g.key()]);
    if g.chance(0.1) {
        c.push(b("NOMKSTREAM"));
    }
    if g.chance(0.3) {
        c.extend(strategy(g));
    }
    c.push(add_id(g));
    c.extend(fields(g));
    c
}

fn xtrim(g: &mut Gen) -> Args {
    let mut c = cmd("XTRIM", [g.key()]);
    c.extend(strategy(g));
    c
}

fn count(g: &mut Gen) -> Vec<Vec<u8>> {
    if g.chance(0.6) {
        return Vec::new();
    }
    vec![
        g.pick(&["COUNT", "count"]),
        g.good_or_bad(&["0", "1", "2", "10", "-1"], &["x"], 0.05),
    ]
}

fn xrange(g: &mut Gen, name: &str) -> Args {
    let mut c = cmd(name, [g.key(), bound(g), bound(g)]);
    c.extend(count(g));
    c
}

/// XREAD of 1-3 keys after IDs (`$` too); rarely BLOCK with a short
/// timeout (nothing else writes meanwhile, so a read that blocks times
/// out on both servers alike).
fn xread(g: &mut Gen) -> Args {
    let mut c = cmd("XREAD", []);
    c.extend(count(g));
    if g.chance(0.05) {
        c.push(b("BLOCK"));
        c.push(g.good_or_bad(&["1", "5"], &["-1", "x"], 0.2));
    }
    c.push(b("STREAMS"));
    let keys = g.keys(1, 3);
    let n = keys.len();
    c.extend(keys);
    for _ in 0..n {
        c.push(if g.chance(0.2) { b("$") } else { id(g) });
    }
    c
}

fn xsetid(g: &mut Gen) -> Args {
    let mut c = cmd("XSETID", [g.key(), id(g)]);
    if g.chance(0.3) {
        c.push(b("ENTRIESADDED"));
        c.push(g.pick(&["0", "3", "100", "-1"]));
    }
    if g.chance(0.3) {
        c.push(b("MAXDELETEDID"));
        c.push(id(g));
    }
    c
}

/// A blocking XREAD after an XADD to its key: it finds the entry (or a
/// key of another type) and answers at once, or, where the XADD failed on
/// an empty stream, times out after 1 ms on both servers.
fn blocking_steps(g: &mut Gen, _: Draw) -> Vec<Step> {
    let key = g.key();
    let add = cmd(
        "XADD",
        [
            key.clone(),
            b(&format!("{}-*", g.range(0, 8))),
            g.field(),
            g.value(),
        ],
    );
    let read = cmd("XREAD", [b("BLOCK"), b("1"), b("STREAMS"), key, b("0-0")]);
    vec![
        Step::new("xadd", Exact, add),
        Step::new("xread", Exact, read),
    ]
}

fn group(g: &mut Gen) -> Vec<u8> {
    g.pick(&["g1", "g2"])
}

fn consumer(g: &mut Gen) -> Vec<u8> {
    g.pick(&["c1", "c2", "c3"])
}

/// ENTRIESREAD's value, rarely invalid.
fn entries_read(g: &mut Gen) -> Vec<Vec<u8>> {
    vec![
        b("ENTRIESREAD"),
        g.good_or_bad(&["0", "2", "5", "-1"], &["-2", "x"], 0.1),
    ]
}

fn xgroup(g: &mut Gen) -> Args {
    let key = g.key();
    match g.below(10) {
        0..=3 => {
            let start = if g.chance(0.3) { b("$") } else { id(g) };
            let mut c = cmd("XGROUP", [b("CREATE"), key, group(g), start]);
            if g.chance(0.4) {
                c.push(g.pick(&["MKSTREAM", "mkstream"]));
            }
            if g.chance(0.2) {
                c.extend(entries_read(g));
            }
            c
        }
        4 | 5 => {
            let start = if g.chance(0.3) { b("$") } else { id(g) };
            let mut c = cmd("XGROUP", [b("SETID"), key, group(g), start]);
            if g.chance(0.3) {
                c.extend(entries_read(g));
            }
            c
        }
        6 => cmd("XGROUP", [b("DESTROY"), key, group(g)]),
        7 | 8 => cmd("XGROUP", [b("CREATECONSUMER"), key, group(g), consumer(g)]),
        _ => cmd("XGROUP", [b("DELCONSUMER"), key, group(g), consumer(g)]),
    }
}

/// XREADGROUP of 1-2 keys, new entries (`>`) or the consumer's history;
/// rarely NOACK or a short BLOCK (which times out alike on both).
fn xreadgroup(g: &mut Gen) -> Args {
    let mut c = cmd("XREADGROUP", [b("GROUP"), group(g), consumer(g)]);
    c.extend(count(g));
    if g.chance(0.1) {
        c.push(b("NOACK"));
    }
    if g.chance(0.03) {
        c.push(b("BLOCK"));
        c.push(b("1"));
    }
    c.push(b("STREAMS"));
    let keys = g.keys(1, 2);
    let n = keys.len();
    c.extend(keys);
    for _ in 0..n {
        c.push(if g.chance(0.6) { b(">") } else { id(g) });
    }
    c
}

fn xack(g: &mut Gen) -> Args {
    let mut c = cmd("XACK", [g.key(), group(g)]);
    for _ in 0..g.range(1, 3) {
        c.push(id(g));
    }
    c
}

/// Min-idle: 0 (everything qualifies) or an hour (nothing does), rarely
/// invalid.
fn min_idle(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(&["0", "3600000", "-5"], &["x"], 0.05)
}

fn xclaim(g: &mut Gen) -> Args {
    let mut c = cmd("XCLAIM", [g.key(), group(g), consumer(g), min_idle(g)]);
    for _ in 0..g.range(1, 3) {
        c.push(id(g));
    }
    for opt in ["JUSTID", "FORCE"] {
        if g.chance(0.25) {
            c.push(b(opt));
        }
    }
    if g.chance(0.15) {
        c.push(b("RETRYCOUNT"));
        c.push(g.good_or_bad(&["0", "3"], &["x"], 0.1));
    }
    if g.chance(0.1) {
        c.push(b("LASTID"));
        c.push(id(g));
    }
    if g.chance(0.02) {
        c.push(b("BOGUS"));
    }
    c
}

fn xautoclaim(g: &mut Gen) -> Args {
    let start = if g.chance(0.7) { b("0") } else { bound(g) };
    let mut c = cmd(
        "XAUTOCLAIM",
        [g.key(), group(g), consumer(g), min_idle(g), start],
    );
    if g.chance(0.5) {
        c.push(b("COUNT"));
        c.push(g.good_or_bad(&["1", "2", "3"], &["0", "-1", "x"], 0.1));
    }
    if g.chance(0.4) {
        c.push(b("JUSTID"));
    }
    c
}

/// A consumer-group session on one key, so that the group commands meet
/// a stream with groups, pending entries and consumers (on the shared
/// keys most of them find another type, or no group): the key is made a
/// stream of a few entries with a group, then group commands follow.
fn group_steps(g: &mut Gen, _: Draw) -> Vec<Step> {
    let key = g.key();
    let mut steps = vec![Step::new("(groups) del", Exact, cmd("DEL", [key.clone()]))];
    for i in 1..=g.range(1, 4) {
        let add = cmd(
            "XADD",
            [key.clone(), b(&format!("{i}-1")), g.field(), g.value()],
        );
        steps.push(Step::new("(groups) xadd", Exact, add));
    }
    let create = cmd("XGROUP", [b("CREATE"), key.clone(), group(g), b("0")]);
    steps.push(Step::new("(groups) xgroup", Exact, create));
    for _ in 0..g.range(3, 8) {
        let (name, mut c, at) = match g.below(8) {
            0 | 1 => ("(groups) xreadgroup", xreadgroup(g), usize::MAX),
            2 => ("(groups) xack", xack(g), 1),
            3 => ("(groups) xclaim", xclaim(g), 1),
            4 => ("(groups) xautoclaim", xautoclaim(g), 1),
            5 => ("(groups) xpending", cmd("XPENDING", [b(""), group(g)]), 1),
            6 => ("(groups) xinfo", cmd("XINFO", [b("GROUPS"), b("")]), 2),
            _ => ("(groups) xgroup", xgroup(g), 2),
        };
        if at == usize::MAX {
            // XREADGROUP: its one or two keys, whatever was drawn.
            let streams = c.iter().position(|a| a == b"STREAMS").unwrap_or(0);
            let n = (c.len() - streams - 1) / 2;
            for k in &mut c[streams + 1..streams + 1 + n] {
                *k = key.clone();
            }
        } else if at < c.len() {
            c[at] = key.clone();
        }
        if g.chance(0.15) {
            let add = cmd("XADD", [key.clone(), b("9-*"), g.field(), g.value()]);
            steps.push(Step::new("(groups) xadd", Exact, add));
        }
        steps.push(Step::new(name, Exact, c));
    }
    steps
}

/// The stream commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("xadd", 12, Exact, xadd),
    CmdGen::new("xlen", 4, Exact, |g| cmd("XLEN", [g.key()])),
    CmdGen::new("xrange", 6, Exact, |g| xrange(g, "XRANGE")),
    CmdGen::new("xrevrange", 4, Exact, |g| xrange(g, "XREVRANGE")),
    CmdGen::new("xdel", 4, Exact, |g| {
        let mut c = cmd("XDEL", [g.key()]);
        for _ in 0..g.range(1, 3) {
            c.push(id(g));
        }
        c
    }),
    CmdGen::new("xtrim", 3, Exact, xtrim),
    CmdGen::new("xread", 5, Exact, xread),
    CmdGen::new("xsetid", 2, Exact, xsetid),
    CmdGen::steps("(blocking streams)", 2, blocking_steps),
    CmdGen::steps("(groups)", 4, group_steps),
    CmdGen::new("xgroup", 6, Exact, xgroup),
    CmdGen::new("xreadgroup", 6, Exact, xreadgroup),
    CmdGen::new("xack", 3, Exact, xack),
    CmdGen::new("xpending", 3, Exact, |g| {
        cmd("XPENDING", [g.key(), group(g)])
    }),
    CmdGen::new("xclaim", 3, Exact, xclaim),
    CmdGen::new("xautoclaim", 3, Exact, xautoclaim),
    CmdGen::new("xinfo", 2, Exact, |g| cmd("XINFO", [b("GROUPS"), g.key()])),
];
