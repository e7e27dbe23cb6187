//! ZUNION, ZINTER, ZDIFF, their *STORE forms, and ZINTERCARD: one
//! computation, three outputs (a reply, a destination, a count). Sources
//! may be sorted sets or sets (a set member scores 1). The sources'
//! metadata is one batched read; an intersection or difference reads the
//! remaining candidates in each further source with one batched read per
//! source (per [`CHUNK`] candidates for an intersection). A *STORE result
//! replaces the destination in one batch (an empty result deletes it),
//! under the locks of every key; ZUNION, ZINTER, ZDIFF and ZINTERCARD take
//! no lock and read every source at one engine snapshot.
//!
//! Aggregation follows Redis's `zunionInterDiffGenericCommand`: sources
//! are visited smallest first (a stable sort, as glibc's `qsort` is for
//! these sizes), so floating-point sums round as Redis's do; a NaN from a
//! weight times a score counts as 0, and a SUM of +inf and -inf is 0. A
//! replied result keeps a -0 score, as Redis's (skiplist) result does; a
//! stored one holds +0 (`stored`).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use batchkv::WriteBatch;
use bytes::Bytes;

use super::parse::parse_score;
use super::{decode_score, redis_order, scored_reply, stored, Scored};
use crate::blocking::WaitFor;
use crate::commands::coll;
use crate::commands::strings::tri;
use crate::commands::{not_integer, parse_int, syntax_error, ConnState};
use crate::errors::{cannot_be_negative, wrong_type};
use crate::keyspace::{db_key, put_meta};
use crate::meta::{self, Kind, Meta};
use crate::notify::{GENERIC, ZSET};
use crate::ranks;
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// Flags of the *STORE commands (Redis: `movablekeys`, the keys follow
/// `numkeys`).
pub const STORE_FLAGS: &[&str] = &["write", "denyoom", "movablekeys"];
/// Flags of ZUNION, ZINTER, ZDIFF and ZINTERCARD.
pub const READ_FLAGS: &[&str] = &["readonly", "movablekeys"];

/// Candidates an intersection checks per batched read of a source: the
/// granularity at which ZINTERCARD's LIMIT stops early.
const CHUNK: usize = 1024;

/// Which combination.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Union,
    Inter,
    Diff,
}

/// What the command does with the result: its options and its reply.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Z*STORE: replaces a destination, replies with its size.
    Store,
    /// ZUNION, ZINTER, ZDIFF: replies with the members (WITHSCORES).
    Reply,
    /// ZINTERCARD: replies with the size (LIMIT).
    Card,
}

/// The command's name, as Redis's errors print it.
fn name(op: Op, out: Output) -> &'static str {
    match (out, op) {
        (Output::Store, Op::Union) => "zunionstore",
        (Output::Store, Op::Inter) => "zinterstore",
        (Output::Store, Op::Diff) => "zdiffstore",
        (Output::Reply, Op::Union) => "zunion",
        (Output::Reply, Op::Inter) => "zinter",
        (Output::Reply, Op::Diff) => "zdiff",
        (Output::Card, _) => "zintercard",
    }
}

/// AGGREGATE's choice.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Folds `val` into `target` as Redis's `zunionInterAggregate`.
    fn apply(self, target: &mut f64, val: f64) {
        match self {
            Aggregate::Sum => {
                *target += val;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if val < *target {
                    *target = val;
                }
            }
            Aggregate::Max => {
                if val > *target {
                    *target = val;
                }
            }
        }
    }
}

/// One input key.
struct Source {
    key: Vec<u8>,
    /// `None`: absent (an empty input).
    meta: Option<Meta>,
    weight: f64,
}

impl Source {
    fn len(&self) -> u64 {
        self.meta.map_or(0, |m| m.size)
    }

    /// Every member with its score (a set's: 1), unweighted.
    fn all(&self, shared: &Shared) -> Result<Vec<Scored>, Reply> {
        let Some(m) = &self.meta else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(m.size.min(1 << 20) as usize);
        let mut bad = None;
        shared.scan_elements(&self.key, m, false, |mem, v| match score_of(m, v) {
            Ok(s) => {
                out.push((mem.to_vec(), s));
                true
            }
            Err(e) => {
                bad = Some(e);
                false
            }
        })?;
        bad.map_or(Ok(out), Err)
    }

    /// The scores of `members` here, unweighted (one batched read).
    fn scores_of(&self, shared: &Shared, members: &[&[u8]]) -> Result<Vec<Option<f64>>, Reply> {
        let Some(m) = &self.meta else {
            return Ok(vec![None; members.len()]);
        };
        coll::read_elements(shared, &self.key, m, members)?
            .into_iter()
            .map(|v| v.map(|v| score_of(m, &v)).transpose())
            .collect()
    }
}

/// An element's score: a sorted set's stored score, 1 for a set member.
fn score_of(m: &Meta, v: &[u8]) -> Result<f64, Reply> {
    if m.kind == Kind::Set {
        Ok(1.0)
    } else {
        decode_score(v)
    }
}

/// A weighted score, NaN (0 × ±inf) counted as 0.
fn weighted(score: f64, weight: f64) -> f64 {
    let s = score * weight;
    if s.is_nan() {
        0.0
    } else {
        s
    }
}

/// A parsed command: its sources (smallest first, except for a
/// difference, whose first source is the minuend) and options.
struct Plan {
    sources: Vec<Source>,
    agg: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT; 0: none.
    limit: u64,
}

/// Parses `numkeys key...` with Redis's checks: the stored keys, and the
/// arguments after them.
fn parse_keys<'a>(
    conn: &ConnState,
    a: &'a [Bytes],
    op: Op,
    out: Output,
) -> Result<(Vec<Vec<u8>>, &'a [Bytes]), Reply> {
    let Some((numkeys, rest)) = a.split_first() else {
        return Err(syntax_error());
    };
    let n = parse_int(numkeys).ok_or_else(not_integer)?;
    if n < 1 {
        return Err(Reply::Error(format!(
            "ERR at least 1 input key is needed for '{}' command",
            name(op, out)
        )));
    }
    if n > rest.len() as i64 {
        return Err(syntax_error());
    }
    let (keys, opts) = rest.split_at(n as usize);
    Ok((keys.iter().map(|k| db_key(conn.db, k)).collect(), opts))
}

/// Reads the sources' metadata (one batched read; a key of another type
/// is WRONGTYPE, before any option is parsed, as in Redis), then parses
/// the options `opts`.
fn plan(
    shared: &Shared,
    keys: Vec<Vec<u8>>,
    opts: &[Bytes],
    op: Op,
    out: Output,
) -> Result<Plan, Reply> {
    let metas = shared.read_many(&keys);
    let mut sources = Vec::with_capacity(keys.len());
    for (key, r) in keys.into_iter().zip(metas) {
        let meta = match r? {
            None => None,
            Some(Value::Coll(m)) if matches!(m.kind, Kind::ZSet | Kind::Set) => Some(m),
            Some(_) => return Err(wrong_type()),
        };
        sources.push(Source {
            key,
            meta,
            weight: 1.0,
        });
    }
    let mut plan = Plan {
        sources,
        agg: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    parse_options(opts, op, out, &mut plan)?;
    if op != Op::Diff {
        plan.sources.sort_by_key(Source::len);
    }
    Ok(plan)
}

/// Parses the options into `plan` as Redis does: WEIGHTS and AGGREGATE
/// (not for a difference or ZINTERCARD), WITHSCORES (only when the result
/// is replied), LIMIT (only ZINTERCARD).
fn parse_options(a: &[Bytes], op: Op, out: Output, plan: &mut Plan) -> Result<(), Reply> {
    let aggregates = op != Op::Diff && out != Output::Card;
    let n = plan.sources.len();
    let mut j = 0;
    while let Some(arg) = a.get(j) {
        let left = a.len() - j;
        let is = |w: &[u8]| arg.eq_ignore_ascii_case(w);
        if aggregates && left > n && is(b"weights") {
            for (s, w) in plan.sources.iter_mut().zip(&a[j + 1..]) {
                s.weight =
                    parse_score(w).ok_or_else(|| Reply::err("ERR weight value is not a float"))?;
            }
            j += 1 + n;
        } else if aggregates && left >= 2 && is(b"aggregate") {
            plan.agg = match a[j + 1].to_ascii_lowercase().as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(syntax_error()),
            };
            j += 2;
        } else if out == Output::Reply && is(b"withscores") {
            plan.with_scores = true;
            j += 1;
        } else if out == Output::Card && left >= 2 && is(b"limit") {
            plan.limit = match parse_int(&a[j + 1]) {
                Some(l) if l >= 0 => l as u64,
                _ => return Err(cannot_be_negative("LIMIT")),
            };
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok(())
}

/// The result of `op` over the plan's sources, in no particular order.
fn compute(shared: &Shared, plan: &Plan, op: Op) -> Result<Vec<Scored>, Reply> {
    match op {
        Op::Union => union(shared, &plan.sources, plan.agg),
        Op::Inter => inter(shared, &plan.sources, plan.agg, None),
        Op::Diff => diff(shared, &plan.sources),
    }
}

/// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: `dst numkeys key... [options]`,
/// under the locks of the sources and the destination.
pub fn zstore(shared: &Shared, conn: &ConnState, a: &[Bytes], op: Op) -> Reply {
    let (keys, opts) = tri!(parse_keys(conn, &a[1..], op, Output::Store));
    let dst = db_key(conn.db, &a[0]);
    let mut locked = keys.clone();
    locked.push(dst.clone());
    let _g = shared.lock_keys(&locked);
    let plan = tri!(plan(shared, keys, opts, op, Output::Store));
    let result = tri!(compute(shared, &plan, op));
    let len = result.len() as i64;
    let event = match op {
        Op::Union => "zunionstore",
        Op::Inter => "zinterstore",
        Op::Diff => "zdiffstore",
    };
    tri!(replace(shared, &dst, result, event));
    Reply::Int(len)
}

/// ZUNION, ZINTER, ZDIFF: `numkeys key... [options] [WITHSCORES]`; the
/// members in Redis's order (score, then member).
pub fn zcombine(shared: &Shared, conn: &ConnState, a: &[Bytes], op: Op) -> Reply {
    let (keys, opts) = tri!(parse_keys(conn, a, op, Output::Reply));
    // No lock: every source is read at one snapshot.
    let (plan, mut result) = tri!(shared.at_snapshot(|| {
        let plan = plan(shared, keys, opts, op, Output::Reply)?;
        let result = compute(shared, &plan, op)?;
        Ok::<_, Reply>((plan, result))
    }));
    result.sort_unstable_by(redis_order);
    scored_reply(result, plan.with_scores)
}

/// ZINTERCARD: `numkeys key... [LIMIT n]`; the walk stops once `n`
/// members are found.
pub fn zintercard(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (keys, opts) = tri!(parse_keys(conn, a, Op::Inter, Output::Card));
    // No lock: every source is read at one snapshot.
    let (found, stop) = tri!(shared.at_snapshot(|| {
        let plan = plan(shared, keys, opts, Op::Inter, Output::Card)?;
        let limit = usize::try_from(plan.limit).unwrap_or(usize::MAX);
        let stop = (limit > 0).then_some(limit);
        Ok::<_, Reply>((inter(shared, &plan.sources, plan.agg, stop)?.len(), stop))
    }));
    Reply::Int(found.min(stop.unwrap_or(usize::MAX)) as i64)
}

/// The union of `sources` (sorted smallest first).
fn union(shared: &Shared, sources: &[Source], agg: Aggregate) -> Result<Vec<Scored>, Reply> {
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    for src in sources {
        for (mem, s) in src.all(shared)? {
            let s = weighted(s, src.weight);
            match acc.entry(mem) {
                Entry::Vacant(e) => {
                    e.insert(s);
                }
                Entry::Occupied(mut e) => agg.apply(e.get_mut(), s),
            }
        }
    }
    Ok(acc.into_iter().collect())
}

/// Keeps the `candidates` present in `src` (one batched read), passing
/// each with its score there to `f`.
fn filter_in(
    shared: &Shared,
    src: &Source,
    candidates: Vec<Scored>,
    mut f: impl FnMut(&mut Scored, Option<f64>) -> bool,
) -> Result<Vec<Scored>, Reply> {
    let members: Vec<&[u8]> = candidates.iter().map(|c| &c.0[..]).collect();
    let found = src.scores_of(shared, &members)?;
    Ok(candidates
        .into_iter()
        .zip(found)
        .filter_map(|(mut c, s)| f(&mut c, s).then_some(c))
        .collect())
}

/// The intersection of `sources` (sorted smallest first): the first
/// source's members, [`CHUNK`] at a time, checked against each further
/// source in turn. With `stop_at`, no further chunk is checked once that
/// many members are found (the result may hold more).
fn inter(
    shared: &Shared,
    sources: &[Source],
    agg: Aggregate,
    stop_at: Option<usize>,
) -> Result<Vec<Scored>, Reply> {
    let Some((first, rest)) = sources.split_first() else {
        return Ok(Vec::new());
    };
    let mut candidates = first
        .all(shared)?
        .into_iter()
        .map(|(m, s)| (m, weighted(s, first.weight)));
    let mut out = Vec::new();
    loop {
        let mut chunk: Vec<Scored> = candidates.by_ref().take(CHUNK).collect();
        if chunk.is_empty() || stop_at.is_some_and(|n| out.len() >= n) {
            return Ok(out);
        }
        for src in rest {
            if chunk.is_empty() {
                break;
            }
            chunk = filter_in(shared, src, chunk, |c, s| match s {
                // Redis does not zero a NaN here: SUM then makes it 0,
                // MIN and MAX ignore it.
                Some(s) => {
                    agg.apply(&mut c.1, s * src.weight);
                    true
                }
                None => false,
            })?;
        }
        out.append(&mut chunk);
    }
}

/// The members of the first source in none of the others, with their
/// scores there.
fn diff(shared: &Shared, sources: &[Source]) -> Result<Vec<Scored>, Reply> {
    let Some((first, rest)) = sources.split_first() else {
        return Ok(Vec::new());
    };
    let mut out = first.all(shared)?;
    for src in rest {
        if out.is_empty() {
            break;
        }
        if src.meta.is_some() {
            out = filter_in(shared, src, out, |_, s| s.is_none())?;
        }
    }
    Ok(out)
}

/// Replaces whatever `dst` holds with a new sorted set of `items` (none:
/// deletes `dst`), in one batch, and wakes a client blocked on `dst`
/// (BZPOPMIN, ...). Publishes `event` on `dst`, or, with no items, a
/// generic `del` if `dst` held something. The caller holds `dst`'s lock.
pub(super) fn replace(
    shared: &Shared,
    dst: &[u8],
    items: Vec<Scored>,
    event: &str,
) -> Result<(), Reply> {
    let mut b = WriteBatch::new();
    shared.clear_old(&mut b, dst)?;
    if items.is_empty() {
        let existed = shared.notifies(GENERIC) && shared.read_value(dst)?.is_some();
        b.delete(dst);
        shared.write(b)?;
        if existed {
            shared.notify(GENERIC, "del", dst);
        }
        return Ok(());
    }
    let mut m = shared.new_collection(Kind::ZSet);
    m.size = items.len() as u64;
    let mut entries = Vec::with_capacity(items.len());
    for (mem, s) in items {
        // Never NaN by the rules above; stored as 0 if it were.
        let s = if s.is_nan() { 0.0 } else { stored(s) };
        b.put(meta::element_key(dst, m.version, &mem), s.to_le_bytes());
        b.put(meta::score_index_key(dst, m.version, s, &mem), []);
        entries.push(meta::score_entry(s, &mem));
    }
    entries.sort_unstable();
    ranks::build(&mut b, dst, m.version, entries.iter().map(Vec::as_slice));
    put_meta(&mut b, dst, &m);
    shared.write(b)?;
    shared.notify(ZSET, event, dst);
    shared.blocking.signal_kind(dst, WaitFor::ZSet);
    Ok(())
}
