//! ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE. Sources may be sorted sets or
//! sets (a set member scores 1). The sources' metadata is one batched
//! read; an intersection or difference reads the remaining candidates in
//! each further source with one batched read per source. The result
//! replaces the destination in one batch (an empty result deletes it).
//!
//! Aggregation follows Redis's `zunionInterDiffGenericCommand`: sources
//! are visited smallest first (a stable sort, as glibc's `qsort` is for
//! these sizes), so floating-point sums round as Redis's do; a NaN from a
//! weight times a score counts as 0, and a SUM of +inf and -inf is 0.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use batchkv::WriteBatch;
use bytes::Bytes;

use super::parse::parse_score;
use super::{decode_score, stored, Scored};
use crate::commands::coll;
use crate::commands::strings::tri;
use crate::commands::{not_integer, parse_int, syntax_error, ConnState};
use crate::keyspace::{db_key, put_meta};
use crate::meta::{self, Kind, Meta};
use crate::resp::Reply;
use crate::shared::{wrong_type, Shared, Value};

/// Flags of the *STORE commands (Redis: `movablekeys`, the keys follow
/// `numkeys`).
pub const FLAGS: &[&str] = &["write", "denyoom", "movablekeys"];

/// Which *STORE command.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Union,
    Inter,
    Diff,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Union => "zunionstore",
            Op::Inter => "zinterstore",
            Op::Diff => "zdiffstore",
        }
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

/// Parses WEIGHTS and AGGREGATE (not allowed for ZDIFFSTORE) into
/// `sources` and the returned aggregate.
fn parse_options(a: &[Bytes], op: Op, sources: &mut [Source]) -> Result<Aggregate, Reply> {
    let mut agg = Aggregate::Sum;
    let mut j = 0;
    while let Some(arg) = a.get(j) {
        let left = a.len() - j;
        if op != Op::Diff && left > sources.len() && arg.eq_ignore_ascii_case(b"weights") {
            for (s, w) in sources.iter_mut().zip(&a[j + 1..]) {
                s.weight =
                    parse_score(w).ok_or_else(|| Reply::err("ERR weight value is not a float"))?;
            }
            j += 1 + sources.len();
        } else if op != Op::Diff && left >= 2 && arg.eq_ignore_ascii_case(b"aggregate") {
            agg = match a[j + 1].to_ascii_lowercase().as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(syntax_error()),
            };
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok(agg)
}

/// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: `dst numkeys key... [options]`.
pub fn zstore(shared: &Shared, conn: &ConnState, a: &[Bytes], op: Op) -> Reply {
    let Some(n) = parse_int(&a[1]) else {
        return not_integer();
    };
    if n < 1 {
        return Reply::Error(format!(
            "ERR at least 1 input key is needed for '{}' command",
            op.name()
        ));
    }
    if n > (a.len() - 2) as i64 {
        return syntax_error();
    }
    let n = n as usize;
    let dst = db_key(conn.db, &a[0]);
    let keys: Vec<Vec<u8>> = a[2..2 + n].iter().map(|k| db_key(conn.db, k)).collect();
    let mut locked = keys.clone();
    locked.push(dst.clone());
    let _g = shared.lock_keys(&locked);
    let mut sources = Vec::with_capacity(n);
    for (key, r) in keys.into_iter().zip(shared.read_many(&locked[..n])) {
        let meta = match tri!(r) {
            None => None,
            Some(Value::Coll(m)) if matches!(m.kind, Kind::ZSet | Kind::Set) => Some(m),
            Some(_) => return wrong_type(),
        };
        sources.push(Source {
            key,
            meta,
            weight: 1.0,
        });
    }
    let agg = tri!(parse_options(&a[2 + n..], op, &mut sources));
    if op != Op::Diff {
        sources.sort_by_key(Source::len);
    }
    let result = tri!(match op {
        Op::Union => union(shared, &sources, agg),
        Op::Inter => inter(shared, &sources, agg),
        Op::Diff => diff(shared, &sources),
    });
    let len = result.len() as i64;
    tri!(replace(shared, &dst, result));
    Reply::Int(len)
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

/// The intersection of `sources` (sorted smallest first).
fn inter(shared: &Shared, sources: &[Source], agg: Aggregate) -> Result<Vec<Scored>, Reply> {
    let Some((first, rest)) = sources.split_first() else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Scored> = first
        .all(shared)?
        .into_iter()
        .map(|(m, s)| (m, weighted(s, first.weight)))
        .collect();
    for src in rest {
        if out.is_empty() {
            break;
        }
        out = filter_in(shared, src, out, |c, s| match s {
            // Redis does not zero a NaN here: SUM then makes it 0, MIN
            // and MAX ignore it.
            Some(s) => {
                agg.apply(&mut c.1, s * src.weight);
                true
            }
            None => false,
        })?;
    }
    Ok(out)
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
/// deletes `dst`), in one batch. The caller holds `dst`'s lock.
fn replace(shared: &Shared, dst: &[u8], items: Vec<Scored>) -> Result<(), Reply> {
    let mut b = WriteBatch::new();
    shared.clear_old(&mut b, dst)?;
    if items.is_empty() {
        b.delete(dst);
        return shared.write(b);
    }
    let mut m = shared.new_collection(Kind::ZSet);
    m.size = items.len() as u64;
    for (mem, s) in items {
        // Never NaN by the rules above; stored as 0 if it were.
        let s = if s.is_nan() { 0.0 } else { stored(s) };
        b.put(meta::element_key(dst, m.version, &mem), s.to_le_bytes());
        b.put(meta::score_index_key(dst, m.version, s, &mem), []);
    }
    put_meta(&mut b, dst, &m);
    shared.write(b)
}
