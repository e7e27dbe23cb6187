//! Range commands: ZRANGE and its older forms (ZRANGEBYSCORE,
//! ZREVRANGE, ...), ZRANGESTORE, ZCOUNT, ZLEXCOUNT and
//! ZREMRANGEBY{RANK,SCORE,LEX}.
//!
//! Ranges by score and by rank iterate the score index (Redis's order);
//! ranges by lex iterate the elements, whose keys sort by member. Redis
//! defines lex ranges only for sets whose scores are all equal, where the
//! two orders agree; for mixed scores (undefined in Redis, and different
//! between its two encodings) the members come in member order here.

use bytes::Bytes;

use super::combine::replace;
use super::parse::{LexRange, ScoreRange};
use super::{decode_score, del_member, read_zset, scan_all, scan_index, scored_encoded, Scored};
use crate::commands::coll;
use crate::commands::strings::tri;
use crate::commands::{not_integer, parse_int, syntax_error, ConnState};
use crate::keyspace::db_key;
use crate::meta::{self, Kind, Meta};
use crate::ranks;
use crate::resp::Reply;
use crate::shared::Shared;

/// Which command of the ZRANGE family: what its options may change.
#[derive(Clone, Copy)]
pub enum Form {
    /// ZRANGE: BYSCORE, BYLEX and REV allowed.
    Range,
    /// ZRANGESTORE: as ZRANGE, without WITHSCORES.
    Store,
    /// ZREVRANGE.
    RevRank,
    /// Z[REV]RANGEBYSCORE.
    ByScore { rev: bool },
    /// Z[REV]RANGEBYLEX.
    ByLex { rev: bool },
}

/// What ZREMRANGEBY* removes by.
#[derive(Clone, Copy)]
pub enum RemBy {
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// A parsed range.
enum Spec {
    /// Start and stop ranks as given (negative: from the end).
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// A range query: the range, its direction, and LIMIT's offset and count
/// (a negative count: no limit).
struct Query {
    spec: Spec,
    rev: bool,
    offset: i64,
    limit: i64,
}

fn score_error() -> Reply {
    Reply::err("ERR min or max is not a float")
}

fn lex_error() -> Reply {
    Reply::err("ERR min or max not valid string range item")
}

fn parse_spec(by: By, min: &[u8], max: &[u8]) -> Result<Spec, Reply> {
    Ok(match by {
        By::Rank => Spec::Rank(
            parse_int(min).ok_or_else(not_integer)?,
            parse_int(max).ok_or_else(not_integer)?,
        ),
        By::Score => Spec::Score(ScoreRange::parse(min, max).ok_or_else(score_error)?),
        By::Lex => Spec::Lex(LexRange::parse(min, max).ok_or_else(lex_error)?),
    })
}

/// Parses the arguments of a ZRANGE-family command (after the name) as
/// Redis's `zrangeGenericCommand`: options, their conflicts, then the
/// range. Returns the query and whether WITHSCORES was given.
fn parse_query(a: &[Bytes], form: Form) -> Result<(Query, bool), Reply> {
    let (mut by, mut rev) = match form {
        Form::Range | Form::Store => (None, None),
        Form::RevRank => (Some(By::Rank), Some(true)),
        Form::ByScore { rev } => (Some(By::Score), Some(rev)),
        Form::ByLex { rev } => (Some(By::Lex), Some(rev)),
    };
    let (mut with_scores, mut offset, mut limit) = (false, 0, -1);
    let mut j = 3;
    while let Some(arg) = a.get(j) {
        let is = |w: &str| arg.eq_ignore_ascii_case(w.as_bytes());
        if is("withscores") && !matches!(form, Form::Store) {
            with_scores = true;
        } else if is("limit") && a.len() - j > 2 {
            offset = parse_int(&a[j + 1]).ok_or_else(not_integer)?;
            limit = parse_int(&a[j + 2]).ok_or_else(not_integer)?;
            j += 2;
        } else if rev.is_none() && is("rev") {
            rev = Some(true);
        } else if by.is_none() && is("bylex") {
            by = Some(By::Lex);
        } else if by.is_none() && is("byscore") {
            by = Some(By::Score);
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    let (by, rev) = (by.unwrap_or(By::Rank), rev.unwrap_or(false));
    if limit != -1 && by == By::Rank {
        return Err(Reply::err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && by == By::Lex {
        return Err(Reply::err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Reversed score and lex ranges are given as max, min.
    let (min, max) = if rev && by != By::Rank {
        (&a[2], &a[1])
    } else {
        (&a[1], &a[2])
    };
    let spec = parse_spec(by, min, max)?;
    Ok((
        Query {
            spec,
            rev,
            offset,
            limit,
        },
        with_scores,
    ))
}

/// ZRANGE, ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX.
pub fn zrange(shared: &Shared, conn: &ConnState, a: &[Bytes], form: Form) -> Reply {
    let (q, with_scores) = tri!(parse_query(a, form));
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return Reply::Array(Vec::new());
    };
    scored_encoded(conn.proto, &tri!(collect(shared, &k, &m, &q)), with_scores)
}

/// ZRANGESTORE: `dst src min max [options]` stores what ZRANGE would
/// reply with (an empty range deletes `dst`), whatever `dst` held, under
/// both keys' locks; replies with the number stored.
pub fn zrangestore(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (q, _) = tri!(parse_query(&a[1..], Form::Store));
    let dst = db_key(conn.db, &a[0]);
    let src = db_key(conn.db, &a[1]);
    let _g = shared.lock_keys(&[&dst, &src]);
    let items = match tri!(shared.read_meta(&src, Kind::ZSet)) {
        Some(m) => tri!(collect(shared, &src, &m, &q)),
        None => Vec::new(),
    };
    let n = items.len() as i64;
    tri!(replace(shared, &dst, items, "zrangestore"));
    Reply::Int(n)
}

/// Ranks `start..=stop` as Redis sanitizes them for a set of `n`
/// members; `None` if empty.
fn rank_bounds(start: i64, stop: i64, n: u64) -> Option<(u64, u64)> {
    let n = n as i64;
    let start = if start < 0 { n + start } else { start }.max(0);
    let stop = if stop < 0 { n + stop } else { stop };
    if start > stop || start >= n {
        return None;
    }
    Some((start as u64, stop.min(n - 1) as u64))
}

/// Ranks this far from both ends of an indexed set start their walk at
/// the entry `ranks::select` finds; nearer ones walk from the end.
pub(super) const SELECT_FROM: u64 = 64;

/// The members at ascending ranks `first..=last` of the sorted set `m`
/// at `key`: from the entry at rank `first` (a set with a rank index,
/// ranks far from both ends), else read from the nearer end of the
/// index.
fn rank_slice(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    first: u64,
    last: u64,
) -> Result<Vec<Scored>, Reply> {
    let from_end = m.size.saturating_sub(1).saturating_sub(last);
    let len = (last - first + 1) as usize;
    if ranks::indexed(m.version) && first.min(from_end) >= SELECT_FROM {
        let start = ranks::select(shared, key, m.version, first)?;
        let p = meta::score_prefix(key, m.version);
        let mut out = Vec::with_capacity(len.min(1 << 16));
        let lo = [&p[..], &start].concat();
        scan_index(
            shared,
            key,
            m,
            &lo,
            &meta::prefix_end(&p),
            false,
            |mem, s| {
                out.push((mem.to_vec(), s));
                out.len() < len
            },
        )?;
        return Ok(out);
    }
    let reverse = from_end < first;
    let skip = if reverse { from_end } else { first };
    let mut out = Vec::with_capacity(len.min(1 << 16));
    let mut seen = 0u64;
    scan_all(shared, key, m, reverse, |mem, s| {
        if seen >= skip {
            out.push((mem.to_vec(), s));
        }
        seen += 1;
        out.len() < len
    })?;
    if reverse {
        out.reverse();
    }
    Ok(out)
}

/// A sorted set's score index as rank arithmetic sees it: the set (stored
/// key and metadata), the index prefix `p`, and where its entries (less
/// `p`) lie: at or above `floor`, below `ceiling`. A bound outside that
/// span has a rank known without a read.
struct Ranked<'a> {
    key: &'a [u8],
    m: &'a Meta,
    p: &'a [u8],
    floor: Vec<u8>,
    ceiling: Vec<u8>,
}

impl<'a> Ranked<'a> {
    /// Any score: from -inf's score key up to past +inf's.
    fn scores(key: &'a [u8], m: &'a Meta, p: &'a [u8]) -> Ranked<'a> {
        Ranked {
            key,
            m,
            p,
            floor: meta::score_key(f64::NEG_INFINITY).to_vec(),
            ceiling: meta::prefix_end(&meta::score_key(f64::INFINITY)),
        }
    }

    /// Every entry under the one score key `score`.
    fn one_score(key: &'a [u8], m: &'a Meta, p: &'a [u8], score: &[u8]) -> Ranked<'a> {
        Ranked {
            key,
            m,
            p,
            floor: score.to_vec(),
            ceiling: meta::prefix_end(score),
        }
    }

    /// The entries below the index key `bound` when no read is needed:
    /// none at or below the floor, all at or above the ceiling or past
    /// the index (`hi` of +inf).
    fn known_before(&self, bound: &[u8]) -> Option<u64> {
        match bound.strip_prefix(self.p) {
            Some(own) if own <= self.floor.as_slice() => Some(0),
            Some(own) if own >= self.ceiling.as_slice() => Some(self.m.size),
            Some(_) => None,
            None if bound < self.p => Some(0),
            None => Some(self.m.size),
        }
    }

    /// The number of entries below the index key `bound` (the rank an
    /// entry there would have): known, or by the rank index.
    fn before(&self, shared: &Shared, bound: &[u8]) -> Result<u64, Reply> {
        if let Some(n) = self.known_before(bound) {
            return Ok(n);
        }
        let own = &bound[self.p.len()..];
        ranks::rank(shared, self.key, self.m.version, own)
    }

    /// The number of entries in `[lo, hi)`, if both ends' ranks are known
    /// without a read (a range from -inf to +inf: the set's size).
    fn known_count(&self, lo: &[u8], hi: &[u8]) -> Option<u64> {
        Some(
            self.known_before(hi)?
                .saturating_sub(self.known_before(lo)?),
        )
    }

    /// The number of entries in `[lo, hi)`: the difference of the ranks of
    /// its ends.
    fn count(&self, shared: &Shared, lo: &[u8], hi: &[u8]) -> Result<u64, Reply> {
        let below_hi = self.before(shared, hi)?;
        let below_lo = self.before(shared, lo)?;
        below_hi
            .checked_sub(below_lo)
            .ok_or_else(|| Reply::err(ranks::CORRUPT))
    }

    /// The entry (less `p`) `offset` entries into `[lo, hi)` in reply
    /// order (descending with `rev`), if the range holds that many: by the
    /// ranks of the range's ends and [`ranks::select`].
    fn offset_entry(
        &self,
        shared: &Shared,
        (lo, hi): (&[u8], &[u8]),
        rev: bool,
        offset: u64,
    ) -> Result<Option<Vec<u8>>, Reply> {
        let target = if rev {
            match self.before(shared, hi)?.checked_sub(offset + 1) {
                Some(t) => t,
                None => return Ok(None),
            }
        } else {
            self.before(shared, lo)? + offset
        };
        if target >= self.m.size {
            return Ok(None);
        }
        let e = ranks::select(shared, self.key, self.m.version, target)?;
        let k = [self.p, &e].concat();
        Ok((lo <= k.as_slice() && k.as_slice() < hi).then_some(e))
    }
}

/// LIMIT applied to a walk: skips `skip` entries, then keeps up to `left`
/// (`None`: all).
struct Window {
    skip: i64,
    left: Option<u64>,
}

impl Window {
    /// Whether to keep the next entry, and whether to walk on after it.
    fn take(&mut self) -> (bool, bool) {
        if self.skip > 0 {
            self.skip -= 1;
            return (false, true);
        }
        match &mut self.left {
            None => (true, true),
            Some(0) => (false, false),
            Some(n) => {
                *n -= 1;
                (true, *n != 0)
            }
        }
    }
}

/// The members (with scores) the query selects, in reply order.
fn collect(shared: &Shared, key: &[u8], m: &Meta, q: &Query) -> Result<Vec<Scored>, Reply> {
    let mut out = Vec::new();
    // Redis: a negative offset selects nothing from a score or lex range;
    // a rank range ignores LIMIT (it accepts only `LIMIT <offset> -1`).
    if q.offset < 0 && !matches!(q.spec, Spec::Rank(..)) {
        return Ok(out);
    }
    let mut w = Window {
        skip: q.offset,
        left: u64::try_from(q.limit).ok(),
    };
    match &q.spec {
        Spec::Rank(start, stop) => {
            let Some((s, e)) = rank_bounds(*start, *stop, m.size) else {
                return Ok(out);
            };
            if q.rev {
                let last = m.size - 1;
                out = rank_slice(shared, key, m, last - e, last - s)?;
                out.reverse();
            } else {
                out = rank_slice(shared, key, m, s, e)?;
            }
        }
        Spec::Score(r) => {
            let p = meta::score_prefix(key, m.version);
            let Some(bounds) = r.index_bounds(&p) else {
                return Ok(out);
            };
            let deep = ranks::indexed(m.version) && q.offset as u64 >= SELECT_FROM;
            let ranked = deep.then(|| Ranked::scores(key, m, &p));
            walk_index(shared, key, m, ranked, bounds, q, &mut w, &mut out)?;
        }
        // A deep LIMIT offset in a set of one score (Redis's defined case
        // for lex ranges): its score index is in member order, so the range
        // maps onto it and the entry at the offset is selected by rank.
        Spec::Lex(r) if ranks::indexed(m.version) && q.offset as u64 >= SELECT_FROM => {
            let p = meta::score_prefix(key, m.version);
            if let Some(score) = single_score(shared, &p)? {
                let Some(bounds) = r.element_bounds(&[&p[..], &score].concat()) else {
                    return Ok(out);
                };
                let ranked = Ranked::one_score(key, m, &p, &score);
                walk_index(shared, key, m, Some(ranked), bounds, q, &mut w, &mut out)?;
            } else {
                walk_members(shared, key, m, r, q.rev, &mut w, &mut out)?;
            }
        }
        Spec::Lex(r) => walk_members(shared, key, m, r, q.rev, &mut w, &mut out)?,
    }
    Ok(out)
}

/// Appends to `out` the score-index entries in `[lo, hi)` (descending with
/// `q.rev`) that `w` keeps. With `ranked` (an indexed set and a deep
/// offset), the walk starts at the entry the offset names, selected by
/// rank, not walked to.
#[allow(clippy::too_many_arguments)]
fn walk_index(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    ranked: Option<Ranked>,
    (mut lo, mut hi): (Vec<u8>, Vec<u8>),
    q: &Query,
    w: &mut Window,
    out: &mut Vec<Scored>,
) -> Result<(), Reply> {
    if let Some(ranked) = ranked {
        let p = ranked.p;
        match ranked.offset_entry(shared, (&lo, &hi), q.rev, q.offset as u64)? {
            Some(e) if q.rev => hi = [p, &e, &[0]].concat(),
            Some(e) => lo = [p, &e].concat(),
            None => return Ok(()),
        }
        w.skip = 0;
    }
    scan_index(shared, key, m, &lo, &hi, q.rev, |mem, s| {
        let (keep, more) = w.take();
        if keep {
            out.push((mem.to_vec(), s));
        }
        more
    })
}

/// Appends to `out` the members in the lex range `r` (descending with
/// `rev`) that `w` keeps: a walk of the member keys.
fn walk_members(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    r: &LexRange,
    rev: bool,
    w: &mut Window,
    out: &mut Vec<Scored>,
) -> Result<(), Reply> {
    let p = meta::element_prefix(key, m.version);
    let Some((lo, hi)) = r.element_bounds(&p) else {
        return Ok(());
    };
    let mut bad = None;
    shared.scan(&lo, &hi, rev, true, |k, v| {
        let (keep, more) = w.take();
        if keep {
            match decode_score(v) {
                Ok(s) => out.push((k[p.len()..].to_vec(), s)),
                Err(e) => {
                    bad = Some(e);
                    return false;
                }
            }
        }
        more
    })?;
    bad.map_or(Ok(()), Err)
}

/// Counts the engine keys in `[lo, hi)`.
fn count(shared: &Shared, lo: &[u8], hi: &[u8]) -> Result<i64, Reply> {
    let mut n = 0;
    shared.scan(lo, hi, false, true, |_, _| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// ZCOUNT: O(log n) with the rank index (a range of fewer than
/// [`SELECT_FROM`] members is walked), else O(members in range).
pub fn zcount(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(r) = ScoreRange::parse(&a[1], &a[2]) else {
        return score_error();
    };
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return Reply::Int(0);
    };
    let p = meta::score_prefix(&k, m.version);
    let Some((lo, hi)) = r.index_bounds(&p) else {
        return Reply::Int(0);
    };
    let ranked = Ranked::scores(&k, &m, &p);
    // -inf to +inf: the set's size, indexed or not.
    if let Some(n) = ranked.known_count(&lo, &hi) {
        return Reply::Int(n as i64);
    }
    if !ranks::indexed(m.version) {
        return Reply::Int(tri!(count(shared, &lo, &hi)));
    }
    // A short range is walked; a longer one (as Redis, O(log n)) is the
    // difference of its ends' ranks.
    if let Some(n) = tri!(count_short(shared, &lo, &hi)) {
        return Reply::Int(n as i64);
    }
    Reply::Int(tri!(ranked.count(shared, &lo, &hi)) as i64)
}

/// The number of engine keys in `[lo, hi)` if fewer than [`SELECT_FROM`]
/// (walked); `None` if there are more.
fn count_short(shared: &Shared, lo: &[u8], hi: &[u8]) -> Result<Option<u64>, Reply> {
    let mut n = 0u64;
    shared.scan(lo, hi, false, true, |_, _| {
        n += 1;
        n < SELECT_FROM
    })?;
    Ok((n < SELECT_FROM).then_some(n))
}

/// ZLEXCOUNT: O(log n) for an indexed set whose members all have one
/// score (the case Redis defines; the score index is then in member order)
/// and a range of at least [`SELECT_FROM`] members, by the ranks of its
/// ends; else O(members in range).
pub fn zlexcount(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(r) = LexRange::parse(&a[1], &a[2]) else {
        return lex_error();
    };
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return Reply::Int(0);
    };
    let ep = meta::element_prefix(&k, m.version);
    let Some((lo, hi)) = r.element_bounds(&ep) else {
        return Reply::Int(0);
    };
    // From the first member to past the last (- +): the set's size.
    if lo == ep && hi == meta::prefix_end(&ep) {
        return Reply::Int(m.size as i64);
    }
    if !ranks::indexed(m.version) {
        return Reply::Int(tri!(count(shared, &lo, &hi)));
    }
    if let Some(n) = tri!(count_short(shared, &lo, &hi)) {
        return Reply::Int(n as i64);
    }
    let p = meta::score_prefix(&k, m.version);
    let Some(score) = tri!(single_score(shared, &p)) else {
        return Reply::Int(tri!(count(shared, &lo, &hi)));
    };
    // The same range over the score index: members under their one score.
    let Some((lo, hi)) = r.element_bounds(&[&p[..], &score].concat()) else {
        return Reply::Int(0);
    };
    // (The whole member range, the one both ends of a one-score set's
    // `Ranked` know, returned above.)
    let ranked = Ranked::one_score(&k, &m, &p, &score);
    Reply::Int(tri!(ranked.count(shared, &lo, &hi)) as i64)
}

/// The score key every entry of the score index under `p` has, if they
/// all have one (its first and last entries agree).
fn single_score(shared: &Shared, p: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    let end = meta::prefix_end(p);
    let mut ends = [None, None];
    for (reverse, slot) in [false, true].into_iter().zip(ends.iter_mut()) {
        shared.scan(p, &end, reverse, true, |k, _| {
            *slot = k.get(p.len()..p.len() + 8).map(<[u8]>::to_vec);
            false
        })?;
    }
    let [first, last] = ends;
    Ok(first.filter(|f| Some(f) == last.as_ref()))
}

/// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX: removes the range
/// in one batch; replies with the number removed.
pub fn zremrange(shared: &Shared, conn: &ConnState, a: &[Bytes], by: RemBy) -> Reply {
    let by = match by {
        RemBy::Rank => By::Rank,
        RemBy::Score => By::Score,
        RemBy::Lex => By::Lex,
    };
    let spec = tri!(parse_spec(by, &a[1], &a[2]));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::ZSet)) else {
        return Reply::Int(0);
    };
    let q = Query {
        spec,
        rev: false,
        offset: 0,
        limit: -1,
    };
    let gone = tri!(collect(shared, &w.key, &w.meta, &q));
    if gone.is_empty() {
        return Reply::Int(0);
    }
    for (mem, s) in &gone {
        del_member(&mut w, mem, *s);
    }
    w.meta.size = w.meta.size.saturating_sub(gone.len() as u64);
    let event = match by {
        By::Rank => "zremrangebyrank",
        By::Score => "zremrangebyscore",
        By::Lex => "zremrangebylex",
    };
    tri!(w.commit_notify(shared, crate::notify::ZSET, event));
    Reply::Int(gone.len() as i64)
}
