//! Sorted-set commands. A sorted set is a collection (`meta.rs`) of kind
//! [`Kind::ZSet`]: per member, an element (sub = member, value = the score
//! as 8 bytes little-endian) and a score-index entry
//! ([`meta::score_index_key`]) that iterates in Redis's order (score, then
//! member bytewise). Every write changes both in one batch, with the
//! rank index's counts over the score index (`ranks.rs`), which the
//! writer settles at commit from the index changes `put_member` and
//! `del_member` note.
//!
//! Reads by member (ZSCORE, ZMSCORE, and the existence checks of ZADD and
//! ZREM) are one batched engine read; ranges by score or rank iterate the
//! score index, ranges by lex the elements (`range.rs`, ZRANGESTORE
//! too); ZUNION, ZINTER, ZDIFF, their *STORE forms and ZINTERCARD are in
//! `combine.rs`; ZMPOP and the blocking pops in `pop.rs`. ZRANK, and a
//! rank range's first member, come from the rank index (O(fanout ×
//! levels)); in sets from before it they cost O(rank) (a rank range is
//! read from the nearer end).
//!
//! Every write that can make a sorted set non-empty (ZADD, ZINCRBY, the
//! *STORE destinations) wakes a client blocked on its key in BZPOPMIN,
//! BZPOPMAX or BZMPOP (`blocking.rs`).
//!
//! Scores are stored with -0 as +0 (as Redis's compact encoding does for
//! sets up to 128 members), so ZSCORE never answers `-0`.

mod combine;
pub(crate) mod parse;
mod pop;
mod range;

use std::cmp::Ordering;
use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};

use super::coll::{self, Writer};
use super::sample::{self, Sample};
use super::strings::tri;
use super::{
    not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, NO_KEYS, R, RS, W, WM,
};
use crate::batcher::Shape;
use crate::blocking::WaitFor;
use crate::errors::{corrupt, out_of_range_between, NOT_FLOAT, NOT_POSITIVE, OUT_OF_RANGE};
use crate::keyspace::{db_key, glob_match};
use crate::meta::{self, Kind, Meta};
use crate::notify::ZSET;
use crate::ranks;
use crate::resp::{self, Reply};
use crate::shared::Shared;

use combine::Op;
use parse::parse_score;
pub(crate) use pop::block_request;

/// Flags of Redis's fast writes (ZREM, ZPOPMIN, ...).
const WF: &[&str] = &["write", "fast"];
/// Flags of ZADD and ZINCRBY.
const WMF: &[&str] = &["write", "denyoom", "fast"];

/// The sorted-set commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("zadd", -4, WMF, KEY1, |s, c, a| zadd(s, c, a)).looks_up(Kind::ZSet, zadd_members),
    spec("zincrby", 4, WMF, KEY1, |s, c, a| zincrby(s, c, a)).looks_up(Kind::ZSet, zincrby_member),
    spec("zscore", 3, R, KEY1, |s, c, a| zscore(s, c, a)).batched(|_| Some(Shape::ZScore)),
    // The key, then n - 1 members.
    spec("zmscore", -3, R, KEY1, |s, c, a| zmscore(s, c, a))
        .batched(|a| Some(Shape::ZMScore(a.len() - 1))),
    spec("zcard", 2, R, KEY1, |s, c, a| zcard(s, c, a)).batched(|_| Some(Shape::Card(Kind::ZSet))),
    spec("zrem", -3, WF, KEY1, |s, c, a| zrem(s, c, a)).looks_up(Kind::ZSet, coll::all_after_key),
    spec("zrank", 3, R, KEY1, |s, c, a| zrank(s, c, a, false)),
    spec("zrevrank", 3, R, KEY1, |s, c, a| zrank(s, c, a, true)),
    spec("zpopmin", -2, WF, KEY1, |s, c, a| zpop(s, c, a, false)),
    spec("zpopmax", -2, WF, KEY1, |s, c, a| zpop(s, c, a, true)),
    spec("zrandmember", -2, RS, KEY1, |s, c, a| zrandmember(s, c, a)),
    spec("zscan", -3, RS, KEY1, |s, c, a| zscan(s, c, a)),
    spec("zcount", 4, R, KEY1, |s, c, a| range::zcount(s, c, a)),
    spec("zlexcount", 4, R, KEY1, |s, c, a| range::zlexcount(s, c, a)),
    spec("zrange", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::Range)
    }),
    spec("zrangebyscore", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::ByScore { rev: false })
    }),
    spec("zrevrangebyscore", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::ByScore { rev: true })
    }),
    spec("zrangebylex", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::ByLex { rev: false })
    }),
    spec("zrevrangebylex", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::ByLex { rev: true })
    }),
    spec("zrevrange", -4, RS, KEY1, |s, c, a| {
        range::zrange(s, c, a, range::Form::RevRank)
    }),
    spec("zremrangebyrank", 4, W, KEY1, |s, c, a| {
        range::zremrange(s, c, a, range::RemBy::Rank)
    }),
    spec("zremrangebyscore", 4, W, KEY1, |s, c, a| {
        range::zremrange(s, c, a, range::RemBy::Score)
    }),
    spec("zremrangebylex", 4, W, KEY1, |s, c, a| {
        range::zremrange(s, c, a, range::RemBy::Lex)
    }),
    spec("zrangestore", -5, WM, (1, 2, 1), |s, c, a| {
        range::zrangestore(s, c, a)
    }),
    spec("zunionstore", -4, combine::STORE_FLAGS, KEY1, |s, c, a| {
        combine::zstore(s, c, a, Op::Union)
    }),
    spec("zinterstore", -4, combine::STORE_FLAGS, KEY1, |s, c, a| {
        combine::zstore(s, c, a, Op::Inter)
    }),
    spec("zdiffstore", -4, combine::STORE_FLAGS, KEY1, |s, c, a| {
        combine::zstore(s, c, a, Op::Diff)
    }),
    spec("zunion", -3, combine::READ_FLAGS, NO_KEYS, |s, c, a| {
        combine::zcombine(s, c, a, Op::Union)
    }),
    spec("zinter", -3, combine::READ_FLAGS, NO_KEYS, |s, c, a| {
        combine::zcombine(s, c, a, Op::Inter)
    }),
    spec("zdiff", -3, combine::READ_FLAGS, NO_KEYS, |s, c, a| {
        combine::zcombine(s, c, a, Op::Diff)
    }),
    spec("zintercard", -3, combine::READ_FLAGS, NO_KEYS, |s, c, a| {
        combine::zintercard(s, c, a)
    }),
    spec("zmpop", -4, pop::MPOP, NO_KEYS, |s, c, a| {
        pop::zmpop(s, c, a)
    }),
    spec("bzpopmin", -3, pop::BPOP, (1, -2, 1), |s, c, a| {
        pop::bzpop(s, c, a, false)
    }),
    spec("bzpopmax", -3, pop::BPOP, (1, -2, 1), |s, c, a| {
        pop::bzpop(s, c, a, true)
    }),
    spec("bzmpop", -5, pop::BMPOP, NO_KEYS, |s, c, a| {
        pop::bzmpop(s, c, a)
    }),
];

fn not_a_float() -> Reply {
    Reply::err(NOT_FLOAT)
}

/// A score as stored: -0 becomes +0.
fn stored(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// The score in an element's value (8 bytes little-endian).
fn decode_score(v: &[u8]) -> Result<f64, Reply> {
    let b: [u8; 8] = v.try_into().map_err(|_| corrupt())?;
    Ok(f64::from_le_bytes(b))
}

/// The live sorted set at `key` (a user key): its stored key and
/// metadata; `None` if absent; WRONGTYPE for another type.
pub(crate) fn read_zset(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
) -> Result<Option<(Vec<u8>, Meta)>, Reply> {
    let k = db_key(conn.db, key);
    Ok(shared.read_meta(&k, Kind::ZSet)?.map(|m| (k, m)))
}

/// Visits the score-index entries with keys in `[lo, hi)` of the sorted
/// set `m` at stored key `key`, ascending (descending with `reverse`):
/// `f(member, score)` until it returns false.
fn scan_index(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    lo: &[u8],
    hi: &[u8],
    reverse: bool,
    mut f: impl FnMut(&[u8], f64) -> bool,
) -> Result<(), Reply> {
    let p = meta::score_prefix(key, m.version).len();
    shared.scan(lo, hi, reverse, true, |k, _| {
        match k.get(p..p + 8).and_then(|s| <[u8; 8]>::try_from(s).ok()) {
            Some(s) => f(&k[p + 8..], meta::score_from_key(s)),
            // Not an index key of ours: skip it.
            None => true,
        }
    })
}

/// Visits the members of the sorted set `m` at `key` with scores in
/// `[min, max)`, ascending: `f(member, score)` until it returns false
/// (GEO searches' cell ranges).
pub(crate) fn visit_scores(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    min: f64,
    max: f64,
    f: impl FnMut(&[u8], f64) -> bool,
) -> Result<(), Reply> {
    let p = meta::score_prefix(key, m.version);
    let lo = [&p[..], &meta::score_key(min)].concat();
    let hi = [&p[..], &meta::score_key(max)].concat();
    scan_index(shared, key, m, &lo, &hi, false, f)
}

/// Replaces whatever `dst` holds with a sorted set of `items` (none:
/// deletes it), waking clients blocked on it, and publishes `event` (or
/// `del`, as [`combine::replace`]); the caller holds `dst`'s lock
/// (GEOSEARCHSTORE, GEORADIUS ... STORE).
pub(crate) fn store_scored(
    shared: &Shared,
    dst: &[u8],
    items: Vec<(Vec<u8>, f64)>,
    event: &str,
) -> Result<(), Reply> {
    combine::replace(shared, dst, items, event)
}

/// The members of the sorted set `m` at `key` by score (descending with
/// `reverse`), as ZRANGE 0 -1 lists them (SORT ... BY nosort).
pub(crate) fn members_by_score(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    reverse: bool,
) -> Result<Vec<Vec<u8>>, Reply> {
    let mut out = Vec::with_capacity(m.size.min(1 << 16) as usize);
    scan_all(shared, key, m, reverse, |mem, _| {
        out.push(mem.to_vec());
        true
    })?;
    Ok(out)
}

/// Visits the whole score index of `m` at `key` (see [`scan_index`]).
fn scan_all(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    reverse: bool,
    f: impl FnMut(&[u8], f64) -> bool,
) -> Result<(), Reply> {
    let p = meta::score_prefix(key, m.version);
    scan_index(shared, key, m, &p, &meta::prefix_end(&p), reverse, f)
}

/// Adds `pairs` (distinct members, scores not NaN) to `w`, a new sorted
/// set (RESTORE).
pub(crate) fn fill(w: &mut Writer, pairs: &[(Vec<u8>, f64)]) {
    for (m, score) in pairs {
        put_member(w, m, None, *score);
    }
    w.meta.size += pairs.len() as u64;
}

/// Every member of the sorted set `m` at `key` with its score, by score
/// (DUMP).
pub(crate) fn members_with_scores(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
) -> Result<Vec<(Vec<u8>, f64)>, Reply> {
    let mut out = Vec::with_capacity(m.size.min(1 << 16) as usize);
    scan_all(shared, key, m, false, |mem, score| {
        out.push((mem.to_vec(), score));
        true
    })?;
    Ok(out)
}

/// Adds to `w` `member` with score `new` (stored as [`stored`]), replacing
/// its index entry for score `old` if it had one. The caller updates
/// `w.meta.size`.
fn put_member(w: &mut Writer, member: &[u8], old: Option<f64>, new: f64) {
    let new = stored(new);
    // A set from before the rank index keeps none (`ranks::settle`).
    let ranked = ranks::indexed(w.meta.version);
    if let Some(old) = old {
        w.batch
            .delete(meta::score_index_key(&w.key, w.meta.version, old, member));
        if ranked {
            w.ranks.note(old, member, -1);
        }
    }
    if ranked {
        w.ranks.note(new, member, 1);
    }
    let ek = w.element_key(member);
    w.batch.put(ek, new.to_le_bytes());
    w.batch.put(
        meta::score_index_key(&w.key, w.meta.version, new, member),
        [],
    );
}

/// Adds to `w` the removal of `member` (with `score`): element and index
/// entry. The caller updates `w.meta.size`.
fn del_member(w: &mut Writer, member: &[u8], score: f64) {
    let ek = w.element_key(member);
    w.batch.delete(ek);
    w.batch
        .delete(meta::score_index_key(&w.key, w.meta.version, score, member));
    if ranks::indexed(w.meta.version) {
        w.ranks.note(score, member, -1);
    }
}

/// The pop event of a side (`max`): `zpopmax` or `zpopmin`.
fn pop_event(max: bool) -> &'static str {
    if max {
        "zpopmax"
    } else {
        "zpopmin"
    }
}

/// Reads the scores of `members` in `w` (one batched read).
fn read_scores(shared: &Shared, w: &Writer, members: &[&[u8]]) -> Result<Vec<Option<f64>>, Reply> {
    w.read(shared, members)?
        .into_iter()
        .map(|v| v.as_deref().map(decode_score).transpose())
        .collect()
}

/// ZADD's options.
#[derive(Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// Parses ZADD's options; returns them and the index of the first score.
/// [`super::Lookups`] of ZADD: the members of its score-member pairs.
fn zadd_members(a: &[Bytes]) -> Vec<&[u8]> {
    let (_, first) = parse_add_flags(a);
    a.get(first..)
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|p| &p[1][..])
        .collect()
}

/// [`super::Lookups`] of ZINCRBY: its member.
fn zincrby_member(a: &[Bytes]) -> Vec<&[u8]> {
    a.iter().skip(2).take(1).map(|b| &b[..]).collect()
}

fn parse_add_flags(a: &[Bytes]) -> (AddFlags, usize) {
    let mut f = AddFlags::default();
    let mut i = 1;
    while let Some(arg) = a.get(i) {
        let flag = match arg.to_ascii_lowercase().as_slice() {
            b"nx" => &mut f.nx,
            b"xx" => &mut f.xx,
            b"gt" => &mut f.gt,
            b"lt" => &mut f.lt,
            b"ch" => &mut f.ch,
            b"incr" => &mut f.incr,
            _ => break,
        };
        *flag = true;
        i += 1;
    }
    (f, i)
}

/// The options' conflicts, in Redis's order of checks.
fn check_add_flags(f: &AddFlags, pairs: usize) -> Result<(), Reply> {
    if f.nx && f.xx {
        return Err(Reply::err(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.gt || f.lt) && f.nx || f.gt && f.lt {
        return Err(Reply::err(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs > 1 {
        return Err(Reply::err(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    Ok(())
}

pub fn zadd(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (flags, first) = parse_add_flags(a);
    let rest = &a[first..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return syntax_error();
    }
    tri!(check_add_flags(&flags, rest.len() / 2));
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        let Some(score) = parse_score(&p[0]) else {
            return not_a_float();
        };
        pairs.push((score, &p[1][..]));
    }
    add(shared, conn, &a[0], flags, &pairs)
}

pub fn zincrby(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(by) = parse_score(&a[1]) else {
        return not_a_float();
    };
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    add(shared, conn, &a[0], flags, &[(by, &a[2])])
}

/// What ZADD's pairs did, applied one after the other as Redis does.
struct Applied<'a> {
    /// Each distinct member's score before and after.
    scores: HashMap<&'a [u8], (Option<f64>, Option<f64>)>,
    added: i64,
    updated: i64,
    /// INCR: the last pair's resulting score, `None` if it did nothing.
    last: Option<f64>,
}

/// Applies ZADD's `pairs` to the members' current scores `before`.
fn apply_pairs<'a>(
    f: AddFlags,
    pairs: &[(f64, &'a [u8])],
    before: HashMap<&'a [u8], Option<f64>>,
) -> Result<Applied<'a>, Reply> {
    let mut out = Applied {
        scores: before.into_iter().map(|(m, s)| (m, (s, s))).collect(),
        added: 0,
        updated: 0,
        last: None,
    };
    for &(score, member) in pairs {
        out.last = None;
        let Some(entry) = out.scores.get_mut(member) else {
            continue;
        };
        match entry.1 {
            Some(cur) => {
                if f.nx {
                    continue;
                }
                let new = if f.incr { score + cur } else { score };
                if new.is_nan() {
                    return Err(Reply::err("ERR resulting score is not a number (NaN)"));
                }
                if f.lt && new >= cur || f.gt && new <= cur {
                    continue;
                }
                if new != cur {
                    entry.1 = Some(new);
                    out.updated += 1;
                }
                out.last = Some(new);
            }
            None if f.xx => {}
            None => {
                entry.1 = Some(score);
                out.added += 1;
                out.last = Some(score);
            }
        }
    }
    Ok(out)
}

/// ZADD and ZINCRBY once the arguments are parsed.
fn add(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
    f: AddFlags,
    pairs: &[(f64, &[u8])],
) -> Reply {
    let key = db_key(conn.db, key);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::ZSet));
    let none = if f.incr { Reply::Nil } else { Reply::Int(0) };
    if f.xx && !w.existed {
        return none;
    }
    let mut members: Vec<&[u8]> = pairs.iter().map(|p| p.1).collect();
    members.sort_unstable();
    members.dedup();
    let before = tri!(read_scores(shared, &w, &members));
    let applied = tri!(apply_pairs(
        f,
        pairs,
        members.into_iter().zip(before).collect()
    ));
    let mut changed = false;
    for (member, (old, new)) in &applied.scores {
        match new {
            Some(new) if old.map(|o| stored(o).to_bits()) != Some(stored(*new).to_bits()) => {
                put_member(&mut w, member, *old, *new);
                changed = true;
            }
            _ => {}
        }
    }
    w.meta.size += applied.added as u64;
    let key = w.key.clone();
    if changed {
        tri!(w.commit(shared));
    }
    // As Redis: published when a pair added or changed a score, even if a
    // later pair of the same member set it back.
    if applied.added + applied.updated > 0 {
        shared.notify(ZSET, if f.incr { "zincr" } else { "zadd" }, &key);
    }
    if changed {
        shared.blocking.signal_kind(&key, WaitFor::ZSet);
    }
    match (f.incr, applied.last) {
        (true, Some(s)) => Reply::Double(s),
        (true, None) => none,
        (false, _) if f.ch => Reply::Int(applied.added + applied.updated),
        (false, _) => Reply::Int(applied.added),
    }
}

pub fn zscore(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    match tri!(scores_of(shared, conn, &a[0], &a[1..2]))
        .pop()
        .flatten()
    {
        Some(s) => Reply::Double(s),
        None => Reply::Nil,
    }
}

pub fn zmscore(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return Reply::Array(vec![Reply::Nil; a.len() - 1]);
    };
    let subs: Vec<&[u8]> = a[1..].iter().map(|m| &m[..]).collect();
    // Encoded straight from the batched read.
    let mut out = bytes::BytesMut::with_capacity(24 * subs.len() + 8);
    crate::resp::encode_array_header(&mut out, subs.len());
    let mut bad = None;
    tri!(coll::visit_elements(
        shared,
        &k,
        &m,
        &subs,
        |_, v| match v {
            None => crate::resp::encode_nil(conn.proto, &mut out),
            Some(v) => match decode_score(v) {
                Ok(d) => crate::resp::encode_double(conn.proto, &mut out, d),
                Err(e) => bad = Some(e),
            },
        }
    ));
    match bad {
        Some(e) => e,
        None => Reply::Encoded(out),
    }
}

/// The scores of `members` in the sorted set at `key` (one batched read;
/// all `None` if the key is absent).
fn scores_of(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
    members: &[Bytes],
) -> Result<Vec<Option<f64>>, Reply> {
    let Some((k, m)) = read_zset(shared, conn, key)? else {
        return Ok(vec![None; members.len()]);
    };
    let subs: Vec<&[u8]> = members.iter().map(|m| &m[..]).collect();
    coll::read_elements(shared, &k, &m, &subs)?
        .into_iter()
        .map(|v| v.as_deref().map(decode_score).transpose())
        .collect()
}

pub fn zcard(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    Reply::Int(tri!(read_zset(shared, conn, &a[0])).map_or(0, |(_, m)| m.size as i64))
}

pub fn zrem(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::ZSet)) else {
        return Reply::Int(0);
    };
    let mut members: Vec<&[u8]> = a[1..].iter().map(|m| &m[..]).collect();
    members.sort_unstable();
    members.dedup();
    let scores = tri!(read_scores(shared, &w, &members));
    let mut n = 0;
    for (member, score) in members.iter().zip(scores) {
        if let Some(s) = score {
            del_member(&mut w, member, s);
            n += 1;
        }
    }
    if n > 0 {
        w.meta.size = w.meta.size.saturating_sub(n);
        tri!(w.commit_notify(shared, ZSET, "zrem"));
    }
    Reply::Int(n as i64)
}

/// ZRANK and ZREVRANK: the number of index entries before (after, `rev`)
/// the member's, from the rank index (`ranks::rank`), or, for a
/// set from before it, by walking from the nearer end: O(rank).
pub fn zrank(shared: &Shared, conn: &ConnState, a: &[Bytes], rev: bool) -> Reply {
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return Reply::Nil;
    };
    let Some(v) = tri!(coll::read_elements(shared, &k, &m, &[&a[1]]))
        .pop()
        .flatten()
    else {
        return Reply::Nil;
    };
    let score = tri!(decode_score(&v));
    let last = m.size.saturating_sub(1);
    if ranks::indexed(m.version) {
        let own = meta::score_entry(score, &a[1]);
        let rank = tri!(ranks::rank(shared, &k, m.version, &own));
        if rank > last {
            return Reply::err(ranks::CORRUPT);
        }
        return Reply::Int(if rev { last - rank } else { rank } as i64);
    }
    // A set from before the rank index: count by walking.
    let own = meta::score_index_key(&k, m.version, score, &a[1]);
    let p = meta::score_prefix(&k, m.version);
    // The rank counts the index entries on one side of the member's own:
    // the side its score puts nearer (see `nearer_top`).
    let above = m.size >= NEARER_END_FROM && tri!(nearer_top(shared, &k, &m, score));
    let (lo, hi) = if above {
        // The smallest key above the member's own.
        ([&own[..], &[0]].concat(), meta::prefix_end(&p))
    } else {
        (p, own)
    };
    let mut n = 0u64;
    tri!(shared.scan(&lo, &hi, false, true, |_, _| {
        n += 1;
        true
    }));
    // A count past the size is corrupt metadata: the rank saturates at 0.
    let rank = if above { last.saturating_sub(n) } else { n };
    Reply::Int(if rev { last.saturating_sub(rank) } else { rank } as i64)
}

/// Sorted sets this large take [`nearer_top`]'s two reads to choose the
/// side ZRANK counts; smaller ones count from the bottom.
const NEARER_END_FROM: u64 = 64;

/// Whether `score` lies nearer the top of the sorted set `m` (at stored
/// key `key`) than its bottom, by linear interpolation between its lowest
/// and highest scores (two reads): ZRANK and ZREVRANK are O(distance to
/// the end counted from), so counting from the nearer end halves a
/// uniform set's average and makes both ends cheap for both commands. A
/// wrong guess (skewed scores) costs at most the set's size, which
/// counting from a fixed end costs too. Infinite ends guess the bottom.
fn nearer_top(shared: &Shared, key: &[u8], m: &Meta, score: f64) -> Result<bool, Reply> {
    let end_score = |reverse: bool| -> Result<Option<f64>, Reply> {
        let mut s = None;
        scan_all(shared, key, m, reverse, |_, score| {
            s = Some(score);
            false
        })?;
        Ok(s)
    };
    let (Some(lo), Some(hi)) = (end_score(false)?, end_score(true)?) else {
        return Ok(false);
    };
    let span = hi - lo;
    Ok(span.is_finite() && span > 0.0 && (score - lo) / span > 0.5)
}

/// A member and its score, as replied by ZRANGE WITHSCORES and others.
type Scored = (Vec<u8>, f64);

/// Redis's order of a sorted set's members: by score (-0 equal to +0),
/// then bytewise by member. Scores are never NaN.
fn redis_order(a: &Scored, b: &Scored) -> Ordering {
    a.1.partial_cmp(&b.1)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.0.cmp(&b.0))
}

/// Replies with members (and their scores, `with_scores`): RESP3 pairs.
fn scored_reply(items: Vec<Scored>, with_scores: bool) -> Reply {
    if with_scores {
        Reply::Pairs(
            items
                .into_iter()
                .map(|(m, s)| (Reply::bulk(m), Reply::Double(s)))
                .collect(),
        )
    } else {
        Reply::Array(items.into_iter().map(|(m, _)| Reply::bulk(m)).collect())
    }
}

/// [`scored_reply`] encoded for protocol `proto` as it is built, without
/// a [`Reply`] per member (ZRANGE and its forms, the hot range reads).
fn scored_encoded(proto: u8, items: &[Scored], with_scores: bool) -> Reply {
    let bytes: usize = items.iter().map(|(m, _)| m.len() + 32).sum();
    let mut out = BytesMut::with_capacity(bytes + 16);
    let pairs_flat = with_scores && proto < 3;
    resp::encode_array_header(&mut out, items.len() * if pairs_flat { 2 } else { 1 });
    for (m, s) in items {
        if with_scores && proto >= 3 {
            out.put_slice(b"*2\r\n");
        }
        resp::encode_bulk(&mut out, m);
        if with_scores {
            resp::encode_double(proto, &mut out, *s);
        }
    }
    Reply::Encoded(out)
}

/// ZPOPMIN and ZPOPMAX (`max`).
pub fn zpop(shared: &Shared, conn: &ConnState, a: &[Bytes], max: bool) -> Reply {
    if a.len() > 2 {
        return syntax_error();
    }
    let count = match a.get(1).map(|c| parse_int(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n),
        Some(_) => return Reply::err(NOT_POSITIVE),
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    // The key's type is checked before a count of 0 answers empty.
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::ZSet)) else {
        return Reply::Array(Vec::new());
    };
    // After the type check: a count of 0 on another type is WRONGTYPE, as
    // in Redis 7.0.
    if count == Some(0) {
        return Reply::Array(Vec::new());
    }
    let popped = tri!(pop_from(shared, &mut w, max, count.unwrap_or(1) as u64));
    tri!(w.commit_notify(shared, ZSET, pop_event(max)));
    match count {
        Some(_) => scored_reply(popped, true),
        // Without a count: one flat [member, score] in RESP3 too.
        None => Reply::Array(
            popped
                .into_iter()
                .flat_map(|(m, s)| [Reply::bulk(m), Reply::Double(s)])
                .collect(),
        ),
    }
}

/// Removes up to `n` members from the low end (the high end, `max`) of
/// the sorted set in `w`: their deletion is added to its batch and
/// `w.meta.size` updated. Returns them in the order popped.
fn pop_from(shared: &Shared, w: &mut Writer, max: bool, n: u64) -> Result<Vec<Scored>, Reply> {
    let want = n.min(w.meta.size) as usize;
    let mut popped: Vec<Scored> = Vec::with_capacity(want.min(1 << 16));
    if want > 0 {
        scan_all(shared, &w.key, &w.meta, max, |m, s| {
            popped.push((m.to_vec(), s));
            popped.len() < want
        })?;
    }
    for (m, s) in &popped {
        del_member(w, m, *s);
    }
    w.meta.size = w.meta.size.saturating_sub(popped.len() as u64);
    Ok(popped)
}

/// The most members ZRANDMEMBER returns for a negative count (repeats
/// allowed): the reply is built in memory, so a count of 2^62 would abort
/// the server. Redis has no such limit (it streams the reply).
const RAND_REPEAT_MAX: i64 = 1 << 24;

/// ZRANDMEMBER's count: Redis's range checks (`-LONG_MAX..=LONG_MAX`, and
/// half of that with WITHSCORES), and [`RAND_REPEAT_MAX`].
fn parse_zrand_count(b: &[u8], with_scores: bool) -> Result<i64, Reply> {
    let n = parse_int(b).ok_or_else(not_integer)?;
    if n < -RAND_REPEAT_MAX && n != i64::MIN {
        return Err(Reply::err(OUT_OF_RANGE));
    }
    if n == i64::MIN {
        return Err(out_of_range_between(-i64::MAX, i64::MAX));
    }
    if with_scores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
        return Err(Reply::err(OUT_OF_RANGE));
    }
    Ok(n)
}

pub fn zrandmember(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let with_scores = a.len() == 3 && a[2].eq_ignore_ascii_case(b"withscores");
    let count = match a.get(1) {
        None => None,
        Some(c) => Some(tri!(parse_zrand_count(c, false))),
    };
    if a.len() > 3 || a.len() == 3 && !with_scores {
        return syntax_error();
    }
    if let (Some(c), true) = (a.get(1), with_scores) {
        tri!(parse_zrand_count(c, true));
    }
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return match count {
            None => Reply::Nil,
            Some(_) => Reply::Array(Vec::new()),
        };
    };
    let mut s = Sample::new(m.size, count.unwrap_or(1));
    let picked = tri!(sample_scored(shared, &k, &m, &mut s));
    match count {
        None => picked
            .into_iter()
            .next()
            .map_or(Reply::Nil, |(mem, _)| Reply::bulk(mem)),
        Some(_) => scored_reply(picked, with_scores),
    }
}

/// The members (with scores) that `s` picks from the sorted set `m` at
/// `key`, in random order. A set with a rank index whose picks are few
/// against the walk they need (a select costs about as much as walking
/// [`range::SELECT_FROM`] entries) finds each pick by
/// [`ranks::select`], O(log n); else one walk of the score index from its
/// end nearer to the picks (`sample.rs`).
fn sample_scored(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    s: &mut Sample,
) -> Result<Vec<Scored>, Reply> {
    let mut out: Vec<Scored> = Vec::with_capacity(s.presize());
    let selects = s.len().saturating_mul(range::SELECT_FROM);
    let select = ranks::indexed(m.version) && selects < s.walk_len();
    if let Some(positions) = select.then(|| s.positions()).flatten() {
        // Ascending ranks, a rank picked twice adjacent: selected once.
        let mut last = None;
        for r in positions {
            if last != Some(r) {
                let e = ranks::select(shared, key, m.version, r)?;
                let Some((sk, mem)) = e.split_first_chunk::<8>() else {
                    return Err(ranks::corrupt());
                };
                out.push((mem.to_vec(), meta::score_from_key(*sk)));
            } else if let Some(prev) = out.last().cloned() {
                out.push(prev);
            }
            last = Some(r);
        }
        sample::shuffle(&mut out);
        return Ok(out);
    }
    if !s.done() {
        scan_all(shared, key, m, s.reverse(), |mem, score| {
            for _ in 0..s.take() {
                out.push((mem.to_vec(), score));
            }
            !s.done()
        })?;
    }
    s.finish(out)
}

pub fn zscan(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let cursor = tri!(coll::parse_cursor(&a[1]));
    // As in Redis, a missing key is an empty page and another type
    // WRONGTYPE whatever the options.
    let Some((k, m)) = tri!(read_zset(shared, conn, &a[0])) else {
        return super::scan_reply(0, Vec::new());
    };
    let args = tri!(coll::parse_scan_args(&a[2..]));
    let (next, items) = if m.size <= coll::SCAN_ALL_BELOW {
        // Small sets come whole in score order, whatever the cursor, as
        // Redis's listpacks do.
        let mut items = Vec::new();
        tri!(scan_all(shared, &k, &m, false, |mem, s| {
            items.push((mem.to_vec(), s));
            true
        }));
        (0, items)
    } else {
        let (next, page) = tri!(coll::scan_page(shared, &k, &m, cursor, args.count));
        let mut items = Vec::with_capacity(page.len());
        for (mem, v) in page {
            items.push((mem, tri!(decode_score(&v))));
        }
        (next, items)
    };
    let mut out = Vec::new();
    for (mem, s) in items {
        if args.pattern.is_none_or(|p| glob_match(p, &mem)) {
            out.push(Reply::bulk(mem));
            // A bulk string in RESP3 too, as Redis replies.
            out.push(Reply::bulk(crate::resp::format_score(s)));
        }
    }
    super::scan_reply(next, out)
}
