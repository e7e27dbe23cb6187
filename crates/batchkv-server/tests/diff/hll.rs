//! Generators for the HyperLogLog commands (values are strings in Redis's
//! representation: GET compares their bytes too).

use super::compare::Cmp::Exact;
use super::generate::{b, cmd, Args, CmdGen, Gen};

/// Elements to add: mostly a few from the members' pool (so that adds
/// repeat and change nothing), sometimes hundreds of distinct ones (so
/// that sparse values grow past 3000 bytes and turn dense).
fn elements(g: &mut Gen) -> Vec<Vec<u8>> {
    if g.chance(0.03) {
        let base = g.range(0, 1_000_000);
        let n = g.range(100, 1500);
        return (0..n).map(|i| b(&format!("e{}", base + i))).collect();
    }
    if g.chance(0.3) {
        return (0..g.range(0, 4))
            .map(|_| b(&format!("e{}", g.range(0, 5000))))
            .collect();
    }
    g.members(0, 4)
}

fn pfadd(g: &mut Gen) -> Args {
    let mut c = cmd("PFADD", [g.key()]);
    c.extend(elements(g));
    c
}

/// PFDEBUG with a known subcommand mostly (GETREG answers 16,384 registers:
/// rare), sometimes an unknown one.
fn pfdebug(g: &mut Gen) -> Args {
    let sub = if g.chance(0.1) {
        b("GETREG")
    } else {
        g.good_or_bad(
            &["ENCODING", "DECODE", "todense", "decode"],
            &["BOGUS"],
            0.1,
        )
    };
    cmd("PFDEBUG", [sub, g.key()])
}

/// The HyperLogLog commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("pfadd", 10, Exact, pfadd),
    CmdGen::new("pfcount", 6, Exact, |g| cmd("PFCOUNT", g.keys(1, 3))),
    CmdGen::new("pfmerge", 4, Exact, |g| cmd("PFMERGE", g.keys(1, 4))),
    CmdGen::new("pfdebug", 2, Exact, pfdebug),
];
