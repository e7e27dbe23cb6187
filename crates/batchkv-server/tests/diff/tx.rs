//! Generators for transactions: MULTI, a few random commands of any table
//! (sometimes a blocking one, which does not block inside MULTI), then
//! EXEC or DISCARD; sometimes after WATCH, with or without a write to a
//! watched key in between (on this connection or the other one).
//!
//! Between WATCH and EXEC only writes that change the watched key run:
//! batchkv aborts falsely after a multi-key write that changed other keys
//! of the same command (DEL k1 k2 with k2 missing, SUNIONSTORE dst src
//! for a watched src) or a *STORE/BITOP of an empty result to a missing
//! key, where Redis does not (`tx.rs`'s modification table bumps every key
//! a write command locks). No WATCH is left open outside this row.

use super::compare::Cmp::{Exact, Exec};
use super::generate::{cmd, CmdGen, Draw, Gen, Step};
use super::lists;

/// A write that changes `key` whatever it holds (Redis signals it to
/// WATCH): SET, or DEL of a key that was just set.
fn definite_write(g: &mut Gen, key: Vec<u8>) -> Vec<Step> {
    let set = Step::new("set", Exact, cmd("SET", [key.clone(), g.value()]));
    if g.chance(0.7) {
        vec![set]
    } else {
        vec![set, Step::new("del", Exact, cmd("DEL", [key]))]
    }
}

/// WATCH of 1-2 keys, maybe a write to the first (maybe from the other
/// connection), maybe UNWATCH; then MULTI, 0-5 commands, EXEC or DISCARD.
fn transaction(g: &mut Gen, draw: Draw) -> Vec<Step> {
    let mut steps = Vec::new();
    if g.chance(0.5) {
        let watched = g.keys(1, 2);
        let first = watched[0].clone();
        steps.push(Step::new("watch", Exact, cmd("WATCH", watched)));
        if g.chance(0.2) {
            steps.push(Step::new("unwatch", Exact, cmd("UNWATCH", [])));
        }
        if g.chance(0.6) {
            let other = g.chance(0.5);
            for mut s in definite_write(g, first) {
                s.other = other;
                steps.push(s);
            }
        }
    }
    steps.push(Step::new("multi", Exact, cmd("MULTI", [])));
    let mut queued = Vec::new();
    for _ in 0..g.range(0, 5) {
        let s = if g.chance(0.1) {
            let (name, _, c) = lists::blocking(g);
            Step::new(name, Exact, c)
        } else {
            draw(g)
        };
        // Queuing answers +QUEUED (or an error); EXEC answers the result.
        steps.push(Step::new(s.name, Exact, s.args.clone()));
        queued.push(s);
    }
    if g.chance(0.1) {
        steps.push(Step::new("discard", Exact, cmd("DISCARD", [])));
    } else {
        let mut exec = Step::new("exec", Exec, cmd("EXEC", []));
        exec.queued = queued;
        steps.push(exec);
    }
    steps
}

/// The transaction commands, and their errors outside a transaction.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::steps("(transaction)", 12, transaction),
    CmdGen::new("exec (no multi)", 1, Exact, |_| cmd("EXEC", [])).not_in_multi(),
    CmdGen::new("discard (no multi)", 1, Exact, |_| cmd("DISCARD", [])).not_in_multi(),
    CmdGen::new("unwatch", 1, Exact, |_| cmd("UNWATCH", [])),
];
