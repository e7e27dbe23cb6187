//! Generators for SORT and SORT_RO. Their order is Redis's own where it is
//! defined: sorted by number (ties by element) or ALPHA, or a list's or
//! sorted set's order with `BY nosort`. A set's `BY nosort` order (its
//! hash table's) and ALPHA by BY values (ties left to qsort) are compared
//! as multisets, without LIMIT or STORE.

use super::compare::Cmp::{Exact, Unordered};
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// A BY pattern with a `*`: the element itself as a key, a hash field of
/// it, keys that mostly do not exist.
fn by_pattern(g: &mut Gen) -> Vec<u8> {
    g.pick(&["*", "*->f1", "w_*", "x:*", "*->ab"])
}

/// 0-2 GET patterns: the element (`#`), keys and hash fields it names, a
/// pattern without `*` (always nil).
fn gets(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.range(0, 2) {
        out.push(b("GET"));
        out.push(g.pick(&["#", "*", "*->f1", "*->f2", "w_*", "nostar"]));
    }
    out
}

fn limit(g: &mut Gen) -> Vec<Vec<u8>> {
    if g.chance(0.6) {
        return Vec::new();
    }
    let start = g.pick(&["0", "1", "2", "-1", "5", "x"]);
    let count = g.pick(&["1", "2", "-1", "0", "10"]);
    vec![b("LIMIT"), start, count]
}

/// SORT (or SORT_RO) in an order Redis defines: by number or ALPHA of the
/// elements, or by number of BY's values; options in random order, LIMIT,
/// GET, STORE (SORT only; SORT_RO refuses it), rarely a bad option.
fn sort(g: &mut Gen, ro: bool) -> Args {
    let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
    let by = g.chance(0.3);
    if by {
        opts.push(vec![b("BY"), by_pattern(g)]);
    } else if g.chance(0.5) {
        opts.push(vec![g.pick(&["ALPHA", "alpha"])]);
    }
    if g.chance(0.4) {
        opts.push(vec![g.pick(&["ASC", "DESC", "desc"])]);
    }
    opts.push(limit(g));
    opts.push(gets(g));
    if g.chance(if ro { 0.05 } else { 0.3 }) {
        opts.push(vec![b("STORE"), g.key()]);
    }
    if g.chance(0.03) {
        opts.push(vec![g.pick(&["BOGUS", "LIMIT"])]);
    }
    let mut c = cmd(if ro { "SORT_RO" } else { "SORT" }, [g.key()]);
    while !opts.is_empty() {
        let o = opts.swap_remove(g.below(opts.len()));
        c.extend(o);
    }
    c
}

/// `BY nosort` with STORE: a list's or sorted set's own order (DESC from
/// the end), a set's sorted as ALPHA (Redis's rule for STORE).
fn nosort_store(g: &mut Gen) -> Args {
    let mut c = cmd("SORT", [g.key(), b("BY"), b("nosort")]);
    if g.chance(0.5) {
        c.push(b("DESC"));
    }
    c.extend(limit(g));
    c.extend(gets(g));
    c.extend([b("STORE"), g.key()]);
    c
}

/// Orders Redis leaves to its hash table or to qsort's ties: compared as
/// multisets, so no LIMIT and no STORE.
fn unordered(g: &mut Gen) -> Args {
    let mut c = cmd("SORT", [g.key(), b("BY")]);
    if g.chance(0.5) {
        c.push(b("nosort"));
    } else {
        c.extend([by_pattern(g), b("ALPHA")]);
    }
    if g.chance(0.3) {
        c.push(b("DESC"));
    }
    c.extend(gets(g));
    c
}

/// The SORT commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("sort", 6, Exact, |g| sort(g, false)),
    CmdGen::new("sort_ro", 3, Exact, |g| sort(g, true)),
    CmdGen::new("sort nosort store", 2, Exact, nosort_store).keep_arity(),
    CmdGen::new("sort unordered", 2, Unordered, unordered).keep_arity(),
];
