//! Generators for the stream commands. IDs come from a small range (a few
//! milliseconds, a few sequences) so that explicit IDs collide with the
//! stream's top item; `*` (the clock's ID) is never sent, since the two
//! servers' clocks differ, and neither is approximate trimming (`~`),
//! which batchkv does exactly and Redis by whole radix-tree nodes.

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
];
