//! Sorted-set commands: ZADD (NX/XX/GT/LT/CH/INCR), ZINCRBY, ZSCORE,
//! ZMSCORE, ZCARD, ZRANGE by rank, score and lex (REV, LIMIT,
//! WITHSCORES), ZRANGEBYSCORE/ZREVRANGEBYSCORE, ZRANK/ZREVRANK, ZREM,
//! ZREMRANGEBYSCORE/RANK, ZPOPMIN/ZPOPMAX, ZUNIONSTORE/ZINTERSTORE/
//! ZDIFFSTORE.
//!
//! Order: score, then member bytewise. Scores print as RESP2 bulk strings
//! in C's `%.17g` ([`g17`]); -0 is stored as 0, but a reply that computes
//! a new member's score (ZINCRBY) prints the -0 it computed.

use std::cmp::Ordering;

use rand::rngs::StdRng;
use rand::Rng;

use super::{b, cmd, cmd_with, err, int_arg, pick, rank_range, some_of, Model, Set, Step, ZSet, R};

const MEMBERS: [&str; 6] = ["a", "b", "c", "d", "m:long", ""];

/// Score arguments and their values.
const SCORES: [(&str, f64); 11] = [
    ("-inf", f64::NEG_INFINITY),
    ("inf", f64::INFINITY),
    ("+inf", f64::INFINITY),
    ("0", 0.0),
    ("-0", -0.0),
    ("1.5", 1.5),
    ("0.1", 0.1),
    ("-3", -3.0),
    ("2", 2.0),
    ("1e20", 1e20),
    ("0.1", 0.1),
];

/// Lex bounds: `-`, `+`, `[m`, `(m`.
const LEX: [&str; 8] = ["-", "+", "[a", "(a", "[c", "(m", "[", "(d"];

const RANKS: [i64; 9] = [0, 1, 2, 3, -1, -2, -3, 5, -10];

fn not_float() -> R {
    err("ERR value is not a valid float")
}

/// C's `printf("%.17g", d)`, as Redis prints a score.
pub(crate) fn g17(d: f64) -> Vec<u8> {
    if d.is_infinite() {
        return b(if d > 0.0 { "inf" } else { "-inf" });
    }
    if d == 0.0 {
        return b(if d.is_sign_negative() { "-0" } else { "0" });
    }
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    // 17 significant digits, exactly rounded: d.dddddddddddddddde<x>.
    let sci = format!("{d:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let text = if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{d:.*}", (16 - exp) as usize))
    };
    text.into_bytes()
}

/// A score as stored: -0 becomes 0.
fn stored(s: f64) -> f64 {
    if s == 0.0 {
        0.0
    } else {
        s
    }
}

fn score(rng: &mut StdRng) -> (Vec<u8>, f64) {
    let (t, v) = SCORES[rng.random_range(0..SCORES.len())];
    (b(t), v)
}

/// Redis's order of sorted-set members.
fn redis_order(a: &(Vec<u8>, f64), b: &(Vec<u8>, f64)) -> Ordering {
    a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0))
}

/// The members of `z` in Redis's order.
fn ordered(z: &ZSet) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<_> = z.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(redis_order);
    v
}

/// Members (with their scores, `with_scores`) as a flat RESP2 array.
fn scored(items: &[(Vec<u8>, f64)], with_scores: bool) -> R {
    R::Arr(
        items
            .iter()
            .flat_map(|(m, s)| {
                let mut v = vec![R::Bulk(m.clone())];
                if with_scores {
                    v.push(R::Bulk(g17(*s)));
                }
                v
            })
            .collect(),
    )
}

/// A score bound: `[(]number` from [`SCORES`].
#[derive(Clone, Copy)]
struct Bound {
    v: f64,
    ex: bool,
}

impl Bound {
    fn random(rng: &mut StdRng) -> (Vec<u8>, Bound) {
        let (t, v) = score(rng);
        let ex = rng.random_bool(0.3);
        let text = if ex { [b"(".to_vec(), t].concat() } else { t };
        (text, Bound { v, ex })
    }

    fn above_min(self, s: f64) -> bool {
        if self.ex {
            s > self.v
        } else {
            s >= self.v
        }
    }

    fn below_max(self, s: f64) -> bool {
        if self.ex {
            s < self.v
        } else {
            s <= self.v
        }
    }
}

/// Whether `m` lies above lex bound `min` ([`LEX`]).
fn lex_above_min(min: &[u8], m: &[u8]) -> bool {
    match min.split_first() {
        Some((b'-', _)) => true,
        Some((b'+', _)) => false,
        Some((b'[', x)) => m >= x,
        Some((_, x)) => m > x,
        None => unreachable!(),
    }
}

fn lex_below_max(max: &[u8], m: &[u8]) -> bool {
    match max.split_first() {
        Some((b'+', _)) => true,
        Some((b'-', _)) => false,
        Some((b'[', x)) => m <= x,
        Some((_, x)) => m < x,
        None => unreachable!(),
    }
}

/// What a ZRANGE selects by.
#[derive(Clone, Copy, PartialEq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// A ZRANGE-family query: the range arguments as given (max first for a
/// reversed score or lex range), REV, LIMIT, WITHSCORES.
struct Query {
    by: By,
    lo: Vec<u8>,
    hi: Vec<u8>,
    rev: bool,
    limit: Option<(i64, i64)>,
    with_scores: bool,
}

impl Query {
    /// The members of `z` it selects, in reply order.
    fn select(&self, z: &ZSet) -> Vec<(Vec<u8>, f64)> {
        let mut all = ordered(z);
        if self.rev {
            all.reverse();
        }
        let (min, max) = if self.rev && self.by != By::Rank {
            (&self.hi, &self.lo)
        } else {
            (&self.lo, &self.hi)
        };
        let picked: Vec<_> = match self.by {
            By::Rank => {
                let r = rank_range(parse_i64(min), parse_i64(max), all.len());
                all[r].to_vec()
            }
            By::Score => {
                let (min, max) = (parse_bound(min), parse_bound(max));
                all.into_iter()
                    .filter(|(_, s)| min.above_min(*s) && max.below_max(*s))
                    .collect()
            }
            By::Lex => all
                .into_iter()
                .filter(|(m, _)| lex_above_min(min, m) && lex_below_max(max, m))
                .collect(),
        };
        // Redis ignores LIMIT in a rank range (it accepts only `LIMIT
        // <offset> -1` there).
        match self.limit {
            _ if self.by == By::Rank => picked,
            None => picked,
            Some((off, _)) if off < 0 => Vec::new(),
            Some((off, count)) => {
                let rest = picked.into_iter().skip(off as usize);
                if count < 0 {
                    rest.collect()
                } else {
                    rest.take(count as usize).collect()
                }
            }
        }
    }
}

fn parse_i64(t: &[u8]) -> i64 {
    std::str::from_utf8(t).unwrap().parse().unwrap()
}

fn parse_bound(t: &[u8]) -> Bound {
    let (ex, t) = match t.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, t),
    };
    let v = SCORES
        .iter()
        .find(|(s, _)| s.as_bytes() == t)
        .map(|(_, v)| *v)
        .unwrap();
    Bound { v, ex }
}

/// ZADD's options.
#[derive(Default, Clone, Copy)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

impl Model {
    pub(crate) fn zset_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let m = b(pick(rng, &MEMBERS));
        match rng.random_range(0..20) {
            0..=3 => self.zadd(rng, k),
            4 => {
                let (t, by) = score(rng);
                let flags = Flags {
                    incr: true,
                    ..Flags::default()
                };
                let want = self.zadd_apply(&k, flags, vec![(by, m.clone())]);
                (cmd(&[b"ZINCRBY", &k, &t, &m]), want)
            }
            5 => {
                let want = self.with::<ZSet>(&k, |_, z| {
                    z.and_then(|z| z.get(&m).copied())
                        .map_or(R::Nil, |s| R::Bulk(g17(s)))
                });
                (cmd(&[b"ZSCORE", &k, &m]), want)
            }
            6 => {
                let ms = some_of(rng, &MEMBERS, 4);
                let want = self.with::<ZSet>(&k, |_, z| {
                    let z = z.unwrap_or_default();
                    R::Arr(
                        ms.iter()
                            .map(|m| z.get(m).map_or(R::Nil, |s| R::Bulk(g17(*s))))
                            .collect(),
                    )
                });
                (cmd_with("ZMSCORE", &[&k], &ms), want)
            }
            7 => {
                let want = self.with::<ZSet>(&k, |_, z| R::Int(z.map_or(0, |z| z.len() as i64)));
                (cmd(&[b"ZCARD", &k]), want)
            }
            8..=10 => self.zrange(rng, k),
            11 => {
                let rev = rng.random_bool(0.5);
                let name = if rev { "ZREVRANK" } else { "ZRANK" };
                let want = self.with::<ZSet>(&k, |_, z| {
                    let mut all = ordered(&z.unwrap_or_default());
                    if rev {
                        all.reverse();
                    }
                    all.iter()
                        .position(|(x, _)| *x == m)
                        .map_or(R::Nil, |i| R::Int(i as i64))
                });
                (cmd_with(name, &[&k, &m], &[]), want)
            }
            12 => {
                let ms = some_of(rng, &MEMBERS, 3);
                let want = self.with::<ZSet>(&k, |model, z| {
                    let mut z = z.unwrap_or_default();
                    let n = ms.iter().filter(|m| z.remove(*m).is_some()).count();
                    model.put(&k, z);
                    R::Int(n as i64)
                });
                (cmd_with("ZREM", &[&k], &ms), want)
            }
            13 => self.zremrange(rng, k),
            14 | 15 => self.zpop(rng, k),
            _ => self.zstore(rng, k),
        }
    }

    /// ZADD with random options and 1 to 3 pairs (sometimes a bad score),
    /// checked in Redis's order: syntax, option conflicts, scores, type.
    fn zadd(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let mut f = Flags::default();
        let mut args = vec![b("ZADD"), k.clone()];
        for (name, flag) in [
            ("NX", &mut f.nx),
            ("XX", &mut f.xx),
            ("GT", &mut f.gt),
            ("LT", &mut f.lt),
            ("CH", &mut f.ch),
            ("INCR", &mut f.incr),
        ] {
            if rng.random_range(0..7) == 0 {
                *flag = true;
                args.push(b(name));
            }
        }
        let n = if f.incr && rng.random_bool(0.8) {
            1
        } else {
            rng.random_range(1..=3)
        };
        let mut pairs = Vec::new();
        let mut bad_score = false;
        for _ in 0..n {
            let (mut t, v) = score(rng);
            if rng.random_range(0..30) == 0 {
                t = b("nan");
                bad_score = true;
            }
            let m = b(pick(rng, &MEMBERS));
            args.extend([t, m.clone()]);
            pairs.push((v, m));
        }
        let want = if f.nx && f.xx {
            err("ERR XX and NX options at the same time are not compatible")
        } else if (f.gt || f.lt) && f.nx || f.gt && f.lt {
            err("ERR GT, LT, and/or NX options at the same time are not compatible")
        } else if f.incr && n > 1 {
            err("ERR INCR option supports a single increment-element pair")
        } else if bad_score {
            not_float()
        } else {
            self.zadd_apply(&k, f, pairs)
        };
        (args, want)
    }

    /// Applies ZADD's pairs one after the other as Redis's `zsetAdd`;
    /// the reply: with INCR the last score (nil if nothing was done),
    /// else the number added (CH: added or changed).
    fn zadd_apply(&mut self, k: &[u8], f: Flags, pairs: Vec<(f64, Vec<u8>)>) -> R {
        self.with::<ZSet>(k, |model, z| {
            if z.is_none() && f.xx {
                return if f.incr { R::Nil } else { R::Int(0) };
            }
            let mut z = z.unwrap_or_default();
            let (mut added, mut updated, mut last) = (0, 0, None);
            for (score, m) in pairs {
                last = None;
                match z.get(&m).copied() {
                    Some(_) if f.nx => {}
                    Some(cur) => {
                        let new = if f.incr { cur + score } else { score };
                        if new.is_nan() {
                            return err("ERR resulting score is not a number (NaN)");
                        }
                        if f.lt && new >= cur || f.gt && new <= cur {
                            continue;
                        }
                        if new != cur {
                            z.insert(m, stored(new));
                            updated += 1;
                        }
                        last = Some(new);
                    }
                    None if f.xx => {}
                    None => {
                        z.insert(m, stored(score));
                        added += 1;
                        last = Some(score);
                    }
                }
            }
            model.put(k, z);
            match (f.incr, last) {
                (true, Some(s)) => R::Bulk(g17(s)),
                (true, None) => R::Nil,
                (false, _) if f.ch => R::Int(added + updated),
                (false, _) => R::Int(added),
            }
        })
    }

    /// ZRANGE (by rank, score or lex; REV, LIMIT, WITHSCORES) or its
    /// older forms ZRANGEBYSCORE and ZREVRANGEBYSCORE.
    fn zrange(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        // Redis defines lex ranges only over equal scores.
        let lex_ok = self.get::<ZSet>(&k).map_or(true, |z| {
            z.is_none_or(|z| ordered(&z).windows(2).all(|w| w[0].1 == w[1].1))
        });
        let by = match rng.random_range(0..5) {
            0 | 1 => By::Rank,
            2 if lex_ok => By::Lex,
            _ => By::Score,
        };
        let (lo, hi) = match by {
            By::Rank => {
                let r = |rng: &mut StdRng| int_arg(RANKS[rng.random_range(0..RANKS.len())]);
                (r(rng), r(rng))
            }
            By::Score => (Bound::random(rng).0, Bound::random(rng).0),
            By::Lex => (b(pick(rng, &LEX)), b(pick(rng, &LEX))),
        };
        // A rank range takes only `LIMIT <offset> -1` (and ignores it).
        let limit = rng
            .random_bool(if by == By::Rank { 0.1 } else { 0.4 })
            .then(|| {
                let off = [0, 1, 2, -1][rng.random_range(0..4)];
                let count = match by {
                    By::Rank if rng.random_bool(0.7) => -1,
                    _ => [-1, 0, 1, 2, 5][rng.random_range(0..5)],
                };
                (off, count)
            });
        let q = Query {
            by,
            lo,
            hi,
            rev: rng.random_bool(0.3),
            limit,
            with_scores: rng.random_bool(if by == By::Lex { 0.05 } else { 0.4 }),
        };
        let legacy = by == By::Score && rng.random_bool(0.3);
        let mut args = if legacy {
            let name = if q.rev {
                "ZREVRANGEBYSCORE"
            } else {
                "ZRANGEBYSCORE"
            };
            cmd_with(name, &[&k, &q.lo, &q.hi], &[])
        } else {
            let mut args = cmd(&[b"ZRANGE", &k, &q.lo, &q.hi]);
            match by {
                By::Rank => {}
                By::Score => args.push(b("BYSCORE")),
                By::Lex => args.push(b("BYLEX")),
            }
            if q.rev {
                args.push(b("REV"));
            }
            args
        };
        if let Some((off, count)) = q.limit {
            args.extend([b("LIMIT"), int_arg(off), int_arg(count)]);
        }
        if q.with_scores {
            args.push(b("WITHSCORES"));
        }
        let want = if q.limit.is_some_and(|(_, c)| c != -1) && by == By::Rank {
            err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
        } else if q.with_scores && by == By::Lex {
            err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
        } else {
            self.with::<ZSet>(&k, |_, z| {
                scored(&q.select(&z.unwrap_or_default()), q.with_scores)
            })
        };
        (args, want)
    }

    /// ZREMRANGEBYRANK or ZREMRANGEBYSCORE: the number removed.
    fn zremrange(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let by_rank = rng.random_bool(0.5);
        let q = if by_rank {
            let r = |rng: &mut StdRng| int_arg(RANKS[rng.random_range(0..RANKS.len())]);
            Query {
                by: By::Rank,
                lo: r(rng),
                hi: r(rng),
                rev: false,
                limit: None,
                with_scores: false,
            }
        } else {
            Query {
                by: By::Score,
                lo: Bound::random(rng).0,
                hi: Bound::random(rng).0,
                rev: false,
                limit: None,
                with_scores: false,
            }
        };
        let name = if by_rank {
            "ZREMRANGEBYRANK"
        } else {
            "ZREMRANGEBYSCORE"
        };
        let want = self.with::<ZSet>(&k, |model, z| {
            let mut z = z.unwrap_or_default();
            let gone = q.select(&z);
            for (m, _) in &gone {
                z.remove(m);
            }
            model.put(&k, z);
            R::Int(gone.len() as i64)
        });
        (cmd_with(name, &[&k, &q.lo, &q.hi], &[]), want)
    }

    /// ZPOPMIN or ZPOPMAX, with or without a count (checked before the
    /// key; a count of 0 pops nothing but still meets WRONGTYPE).
    fn zpop(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let max = rng.random_bool(0.5);
        let name = if max { "ZPOPMAX" } else { "ZPOPMIN" };
        let count: Option<i64> =
            [None, Some(0), Some(1), Some(2), Some(5), Some(-1)][rng.random_range(0..6)];
        let mut args = cmd_with(name, &[&k], &[]);
        if let Some(c) = count {
            args.push(int_arg(c));
        }
        let want = match count {
            Some(c) if c < 0 => err("ERR value is out of range, must be positive"),
            _ => self.with::<ZSet>(&k, |model, z| {
                let mut z = z.unwrap_or_default();
                let mut all = ordered(&z);
                if max {
                    all.reverse();
                }
                all.truncate(count.unwrap_or(1) as usize);
                for (m, _) in &all {
                    z.remove(m);
                }
                model.put(&k, z);
                scored(&all, true)
            }),
        };
        (args, want)
    }

    /// ZUNIONSTORE, ZINTERSTORE (WEIGHTS, AGGREGATE) or ZDIFFSTORE over 1
    /// to 3 sources (sorted sets, or sets: a member scores 1).
    fn zstore(&mut self, rng: &mut StdRng, dst: Vec<u8>) -> Step {
        let op = rng.random_range(0..3);
        let name = ["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"][op];
        let keys = some_of(rng, &super::KEYS, 3);
        let mut args = cmd_with(name, &[&dst, &int_arg(keys.len() as i64)], &keys);
        let mut weights = vec![1.0; keys.len()];
        let mut agg = "SUM";
        if op < 2 && rng.random_bool(0.4) {
            args.push(b("WEIGHTS"));
            for w in &mut weights {
                let (t, v) = [
                    ("1", 1.0),
                    ("2", 2.0),
                    ("-1", -1.0),
                    ("0", 0.0),
                    ("0.5", 0.5),
                ][rng.random_range(0..5)];
                *w = v;
                args.push(b(t));
            }
        }
        if op < 2 && rng.random_bool(0.4) {
            agg = ["SUM", "MIN", "MAX"][rng.random_range(0..3)];
            args.extend([b("AGGREGATE"), b(agg)]);
        }
        let sources = match self.zstore_sources(&keys) {
            Ok(s) => s,
            Err(e) => return (args, e),
        };
        let result = match op {
            0 => zunion(sources, &weights, agg),
            1 => zinter(sources, &weights, agg),
            _ => zdiff(sources),
        };
        let n = result.len() as i64;
        self.replace(&dst, result);
        (args, R::Int(n))
    }

    /// The sources of a *STORE: sorted sets, or sets (members score 1);
    /// absent keys are empty; any other type is WRONGTYPE.
    fn zstore_sources(&self, keys: &[Vec<u8>]) -> Result<Vec<ZSet>, R> {
        keys.iter()
            .map(|k| match self.get::<ZSet>(k) {
                Ok(z) => Ok(z.unwrap_or_default()),
                Err(e) => match self.get::<Set>(k) {
                    Ok(s) => Ok(s
                        .unwrap_or_default()
                        .into_iter()
                        .map(|m| (m, 1.0))
                        .collect()),
                    Err(_) => Err(e),
                },
            })
            .collect()
    }
}

/// Redis's `zunionInterAggregate`.
fn aggregate(agg: &str, target: &mut f64, val: f64) {
    match agg {
        "SUM" => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        "MIN" => {
            if val < *target {
                *target = val;
            }
        }
        _ => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// The sources with their weights, smallest first (a stable sort: Redis
/// sorts them so, and the order of a sum can change its rounding).
fn by_size(sources: Vec<ZSet>, weights: &[f64]) -> Vec<(ZSet, f64)> {
    let mut v: Vec<_> = sources.into_iter().zip(weights.iter().copied()).collect();
    v.sort_by_key(|(z, _)| z.len());
    v
}

/// A weighted score; NaN (0 × inf) counts as 0.
fn weighted(s: f64, w: f64) -> f64 {
    let x = s * w;
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

fn zunion(sources: Vec<ZSet>, weights: &[f64], agg: &str) -> ZSet {
    let mut out = ZSet::new();
    for (z, w) in by_size(sources, weights) {
        for (m, s) in z {
            let s = weighted(s, w);
            match out.get_mut(&m) {
                Some(t) => aggregate(agg, t, s),
                None => {
                    out.insert(m, s);
                }
            }
        }
    }
    out.into_iter().map(|(m, s)| (m, stored(s))).collect()
}

/// Each member of the smallest source also in every other: its weighted
/// score there folded in, source by source (a NaN product is not zeroed
/// here, as in Redis).
fn zinter(sources: Vec<ZSet>, weights: &[f64], agg: &str) -> ZSet {
    let sources = by_size(sources, weights);
    let Some(((first, w0), rest)) = sources.split_first() else {
        return ZSet::new();
    };
    let mut out = ZSet::new();
    'members: for (m, s) in first {
        let mut t = weighted(*s, *w0);
        for (z, w) in rest {
            match z.get(m) {
                Some(s) => aggregate(agg, &mut t, s * w),
                None => continue 'members,
            }
        }
        out.insert(m.clone(), stored(t));
    }
    out
}

fn zdiff(sources: Vec<ZSet>) -> ZSet {
    let mut it = sources.into_iter();
    let first = it.next().unwrap_or_default();
    it.fold(first, |mut acc, z| {
        acc.retain(|m, _| !z.contains_key(m));
        acc
    })
}

#[test]
fn g17_prints_as_c_does() {
    for (d, want) in [
        (0.1, "0.10000000000000001"),
        (1.5, "1.5"),
        (-3.0, "-3"),
        (1e20, "1e+20"),
        (1e16, "10000000000000000"),
        (1e17, "1e+17"),
        (0.0001, "0.0001"),
        (0.00001, "1.0000000000000001e-05"),
        (1.6, "1.6000000000000001"),
        (-0.0, "-0"),
        (f64::NEG_INFINITY, "-inf"),
        (123456789012345680.0, "1.2345678901234568e+17"),
    ] {
        assert_eq!(String::from_utf8(g17(d)).unwrap(), want, "{d}");
    }
}
