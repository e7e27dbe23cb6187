//! Set commands. A set is a collection of [`Kind::Set`] (`meta.rs`): one
//! element per member, with an empty value.
//!
//! Reads of many members (SMISMEMBER, SADD's and SREM's existence checks,
//! SINTER's membership tests) are one batched engine read per set; the
//! metadata of all keys of a multi-key command is one batched read
//! ([`Shared::read_many`]). Commands that write more than one key
//! (SMOVE, the *STORE commands) lock every key they touch in one call and
//! write one batch; those that only read several (SINTER, SUNION, SDIFF,
//! SINTERCARD) read them all at one engine snapshot.
//!
//! Members come back in member order where Redis's order is its hash
//! table's; clients must not rely on either.

use std::collections::BTreeSet;

use batchkv::{ReadOptions, WriteBatch};
use bytes::Bytes;

use super::coll::{self, parse_rand_count, Writer};
use super::sample::Sample;
use super::strings::tri;
use super::{
    parse_int, spec, syntax_error, CommandSpec, ConnState, ALL_KEYS, KEY1, NO_KEYS, R, RS, WM,
};
use crate::batcher::Shape;
use crate::errors::{cannot_be_negative, wrong_type, NOT_POSITIVE, NUMKEYS_NOT_POSITIVE};
use crate::keyspace::{db_key, glob_match, put_meta};
use crate::meta::{self, Kind, Meta};
use crate::notify::{GENERIC, SET};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// Redis's flags for SADD (`write denyoom fast`).
const WMF: &[&str] = &["write", "denyoom", "fast"];
/// Redis's flags for SREM, SPOP, SMOVE (`write fast`).
const WF: &[&str] = &["write", "fast"];
/// Redis's flags for SINTERCARD, whose keys follow a count.
const RMK: &[&str] = &["readonly", "movablekeys"];

/// The set commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("sadd", -3, WMF, KEY1, |s, c, a| sadd(s, c, a)).looks_up(Kind::Set, coll::all_after_key),
    spec("srem", -3, WF, KEY1, |s, c, a| srem(s, c, a)).looks_up(Kind::Set, coll::all_after_key),
    spec("sismember", 3, R, KEY1, |s, c, a| sismember(s, c, a)).batched(|_| Some(Shape::SIsMember)),
    // The key, then n - 1 members.
    spec("smismember", -3, R, KEY1, |s, c, a| smismember(s, c, a))
        .batched(|a| Some(Shape::SMIsMember(a.len() - 1))),
    spec("smembers", 2, RS, KEY1, |s, c, a| smembers(s, c, a)),
    spec("scard", 2, R, KEY1, |s, c, a| scard(s, c, a)).batched(|_| Some(Shape::Card(Kind::Set))),
    spec("spop", -2, WF, KEY1, |s, c, a| spop(s, c, a)),
    spec("srandmember", -2, RS, KEY1, |s, c, a| srandmember(s, c, a)),
    spec("smove", 4, WF, (1, 2, 1), |s, c, a| smove(s, c, a)),
    spec("sinter", -2, RS, ALL_KEYS, |s, c, a| {
        combine_reply(s, c, a, Op::Inter)
    }),
    spec("sunion", -2, RS, ALL_KEYS, |s, c, a| {
        combine_reply(s, c, a, Op::Union)
    }),
    spec("sdiff", -2, RS, ALL_KEYS, |s, c, a| {
        combine_reply(s, c, a, Op::Diff)
    }),
    spec("sinterstore", -3, WM, ALL_KEYS, |s, c, a| {
        store(s, c, a, Op::Inter)
    }),
    spec("sunionstore", -3, WM, ALL_KEYS, |s, c, a| {
        store(s, c, a, Op::Union)
    }),
    spec("sdiffstore", -3, WM, ALL_KEYS, |s, c, a| {
        store(s, c, a, Op::Diff)
    }),
    spec("sintercard", -3, RMK, NO_KEYS, |s, c, a| {
        sintercard(s, c, a)
    }),
    spec("sscan", -3, RS, KEY1, |s, c, a| sscan(s, c, a)),
];

/// A set operation over one or more sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// A key's read as a set: its metadata, `None` if the key is absent; a
/// key of another type is WRONGTYPE.
fn as_set(read: Result<Option<Value>, Reply>) -> Result<Option<Meta>, Reply> {
    match read? {
        None => Ok(None),
        Some(Value::Coll(m)) if m.kind == Kind::Set => Ok(Some(m)),
        Some(_) => Err(wrong_type()),
    }
}

/// The live set at user key `key`: its stored key and metadata.
fn read_set(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
) -> Result<Option<(Vec<u8>, Meta)>, Reply> {
    let k = db_key(conn.db, key);
    Ok(shared.read_meta(&k, Kind::Set)?.map(|m| (k, m)))
}

/// The metadata of the sets at stored keys `keys` (one batched read), in
/// the same order, `None` for an absent key. Every key is checked, so a
/// key of another type anywhere is WRONGTYPE, as in Redis.
fn read_sets(shared: &Shared, keys: &[Vec<u8>]) -> Result<Vec<Option<Meta>>, Reply> {
    shared.read_many(keys).into_iter().map(as_set).collect()
}

/// Every member of the set `m` at stored key `key`, in member order.
fn members(shared: &Shared, key: &[u8], m: &Meta) -> Result<Vec<Vec<u8>>, Reply> {
    let mut out = Vec::with_capacity(m.size.min(1 << 20) as usize);
    shared.scan_elements(key, m, false, |sub, _| {
        out.push(sub.to_vec());
        true
    })?;
    Ok(out)
}

/// The members a RAND pick of `count` takes from the set `m` at `key`
/// (`sample.rs`): `count` ≥ 0 distinct ones (all if fewer), else `|count|`
/// that may repeat, in random order.
fn sample_members(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    count: i64,
) -> Result<Vec<Vec<u8>>, Reply> {
    let mut s = Sample::new(m.size, count);
    let picked = coll::sample_elements(shared, key, m, &mut s)?;
    Ok(picked.into_iter().map(|(sub, _)| sub).collect())
}

/// Keeps the `candidates` that are members of the set `m` at `key` (with
/// `keep` true) or that are not (`keep` false), in their order: one
/// batched read of the candidates, or one scan of the set when it is the
/// smaller of the two.
fn filter_members(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    candidates: Vec<Vec<u8>>,
    keep: bool,
) -> Result<Vec<Vec<u8>>, Reply> {
    if m.size < candidates.len() as u64 {
        let set: BTreeSet<Vec<u8>> = members(shared, key, m)?.into_iter().collect();
        return Ok(candidates
            .into_iter()
            .filter(|c| set.contains(c) == keep)
            .collect());
    }
    let subs: Vec<&[u8]> = candidates.iter().map(Vec::as_slice).collect();
    let found = coll::read_elements(shared, key, m, &subs)?;
    Ok(candidates
        .into_iter()
        .zip(found)
        .filter(|(_, f)| f.is_some() == keep)
        .map(|(c, _)| c)
        .collect())
}

/// The members of `op` over the sets at stored keys `keys`, sorted and
/// distinct. Absent keys are empty sets; a key of another type is
/// WRONGTYPE.
fn combine(shared: &Shared, op: Op, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, Reply> {
    let metas = read_sets(shared, keys)?;
    let sets: Vec<(&[u8], Meta)> = keys
        .iter()
        .zip(&metas)
        .filter_map(|(k, m)| m.map(|m| (k.as_slice(), m)))
        .collect();
    match op {
        Op::Inter => {
            if sets.len() < keys.len() {
                return Ok(Vec::new());
            }
            intersect(shared, sets)
        }
        Op::Union => {
            let mut all = BTreeSet::new();
            for (k, m) in &sets {
                all.extend(members(shared, k, m)?);
            }
            Ok(all.into_iter().collect())
        }
        Op::Diff => {
            let Some((k, m)) = metas[0].map(|m| (&keys[0], m)) else {
                return Ok(Vec::new());
            };
            let mut left = members(shared, k, &m)?;
            for (k, m) in &sets[1..] {
                if left.is_empty() {
                    break;
                }
                left = filter_members(shared, k, m, left, false)?;
            }
            Ok(left)
        }
    }
}

/// The intersection of the (all present, at least one) `sets`: the
/// smallest set's members, kept if a batched read finds them in each
/// other set (smallest first, stopping once nothing is left).
fn intersect(shared: &Shared, mut sets: Vec<(&[u8], Meta)>) -> Result<Vec<Vec<u8>>, Reply> {
    sets.sort_by_key(|(_, m)| m.size);
    let Some(((k, m), others)) = sets.split_first() else {
        return Ok(Vec::new());
    };
    let mut left = members(shared, k, m)?;
    for (k2, m2) in others {
        if left.is_empty() {
            break;
        }
        if *k2 == *k && m2.version == m.version {
            continue;
        }
        left = filter_members(shared, k2, m2, left, true)?;
    }
    Ok(left)
}

/// `members` as a set reply (RESP3 `~`).
fn set_reply(members: Vec<Vec<u8>>) -> Reply {
    Reply::Set(members.into_iter().map(Reply::bulk).collect())
}

fn stored_keys(conn: &ConnState, keys: &[Bytes]) -> Vec<Vec<u8>> {
    keys.iter().map(|k| db_key(conn.db, k)).collect()
}

/// SINTER, SUNION, SDIFF: every key read at one snapshot (they take no
/// lock).
fn combine_reply(shared: &Shared, conn: &ConnState, a: &[Bytes], op: Op) -> Reply {
    let keys = stored_keys(conn, a);
    set_reply(tri!(shared.at_snapshot(|| combine(shared, op, &keys))))
}

/// Adds `members` (distinct) to `w`, a new set (RESTORE).
pub(crate) fn fill(w: &mut Writer, members: &[Vec<u8>]) {
    for m in members {
        let ek = w.element_key(m);
        w.batch.put(ek, []);
    }
    w.meta.size += members.len() as u64;
}

/// Adds to `b` a new set at stored key `key` holding `members` (sorted,
/// distinct, not empty), replacing whatever `key` held: its old elements
/// are deleted and its expiry dropped.
fn put_new_set(
    shared: &Shared,
    b: &mut WriteBatch,
    key: &[u8],
    members: &[Vec<u8>],
) -> Result<(), Reply> {
    shared.clear_old(b, key)?;
    let mut m = shared.new_collection(Kind::Set);
    for member in members {
        b.put(meta::element_key(key, m.version, member), []);
    }
    m.size = members.len() as u64;
    put_meta(b, key, &m);
    Ok(())
}

/// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the destination is replaced
/// (whatever its type) in one batch, or deleted if the result is empty.
/// Replies with the result's size.
fn store(shared: &Shared, conn: &ConnState, a: &[Bytes], op: Op) -> Reply {
    let keys = stored_keys(conn, a);
    let _g = shared.lock_keys(&keys);
    let (dst, srcs) = (&keys[0], &keys[1..]);
    let result = tri!(combine(shared, op, srcs));
    let mut b = WriteBatch::new();
    // Redis's `del` of an emptied destination needs it to have existed.
    let mut deleted = false;
    if result.is_empty() {
        deleted = shared.notifies(GENERIC) && tri!(shared.read_value(dst)).is_some();
        tri!(shared.clear_old(&mut b, dst));
        b.delete(dst);
    } else {
        tri!(put_new_set(shared, &mut b, dst, &result));
    }
    tri!(shared.write(b));
    if !result.is_empty() {
        let event = match op {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        };
        shared.notify(SET, event, dst);
    } else if deleted {
        shared.notify(GENERIC, "del", dst);
    }
    Reply::Int(result.len() as i64)
}

/// The distinct arguments, sorted.
fn distinct(args: &[Bytes]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = args.iter().map(|m| &m[..]).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn sadd(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::Set));
    let subs = distinct(&a[1..]);
    let old = tri!(w.read(shared, &subs));
    let mut added = 0;
    for (s, o) in subs.iter().zip(old) {
        if o.is_none() {
            let ek = w.element_key(s);
            w.batch.put(ek, []);
            added += 1;
        }
    }
    if added > 0 {
        w.meta.size += added;
        tri!(w.commit_notify(shared, SET, "sadd"));
    }
    Reply::Int(added as i64)
}

fn srem(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::Set)) else {
        return Reply::Int(0);
    };
    let subs = distinct(&a[1..]);
    let old = tri!(w.read(shared, &subs));
    let mut removed = 0;
    for (s, o) in subs.iter().zip(old) {
        if o.is_some() {
            let ek = w.element_key(s);
            w.batch.delete(ek);
            removed += 1;
        }
    }
    if removed > 0 {
        w.meta.size = w.meta.size.saturating_sub(removed);
        tri!(w.commit_notify(shared, SET, "srem"));
    }
    Reply::Int(removed as i64)
}

fn sismember(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_set(shared, conn, &a[0])) else {
        return Reply::Int(0);
    };
    let found = tri!(coll::read_elements(shared, &k, &m, &[&a[1]]));
    Reply::Int(i64::from(found[0].is_some()))
}

fn smismember(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_set(shared, conn, &a[0])) else {
        return Reply::Array(vec![Reply::Int(0); a.len() - 1]);
    };
    let subs: Vec<&[u8]> = a[1..].iter().map(|m| &m[..]).collect();
    // Encoded straight from the batched read.
    let mut out = bytes::BytesMut::with_capacity(4 * subs.len() + 8);
    crate::resp::encode_array_header(&mut out, subs.len());
    tri!(coll::visit_elements(shared, &k, &m, &subs, |_, v| {
        crate::resp::encode_int(&mut out, i64::from(v.is_some()))
    }));
    Reply::Encoded(out)
}

fn smembers(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_set(shared, conn, &a[0])) else {
        return Reply::Set(Vec::new());
    };
    set_reply(tri!(members(shared, &k, &m)))
}

fn scard(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    Reply::Int(tri!(read_set(shared, conn, &a[0])).map_or(0, |(_, m)| m.size as i64))
}

/// SPOP key [count]: removes and returns random members (one batch).
/// Without a count, one member or nil; with one, a set of up to `count`
/// members (the whole set, deleting the key, if it has no more).
fn spop(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let count = match a.len() {
        1 => None,
        2 => match parse_int(&a[1]) {
            Some(n) if n >= 0 => Some(n),
            _ => return Reply::err(NOT_POSITIVE),
        },
        _ => return syntax_error(),
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::Set)) else {
        return count.map_or(Reply::Nil, |_| Reply::Set(Vec::new()));
    };
    if count == Some(0) {
        return Reply::Set(Vec::new());
    }
    let picked = tri!(sample_members(shared, &w.key, &w.meta, count.unwrap_or(1)));
    if picked.len() as u64 >= w.meta.size {
        tri!(shared.drop_elements(&mut w.batch, &w.key, &w.meta));
        w.meta.size = 0;
    } else {
        for p in &picked {
            let ek = w.element_key(p);
            w.batch.delete(ek);
        }
        w.meta.size -= picked.len() as u64;
    }
    tri!(w.commit_notify(shared, SET, "spop"));
    match count {
        None => picked.into_iter().next().map_or(Reply::Nil, Reply::bulk),
        Some(_) => set_reply(picked),
    }
}

/// SRANDMEMBER key [count]: one random member (or nil); with a count `n`,
/// up to `n` distinct members, or `-n` members that may repeat.
fn srandmember(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let count = match a.len() {
        1 => None,
        2 => Some(tri!(parse_rand_count(&a[1]))),
        _ => return syntax_error(),
    };
    let Some((k, m)) = tri!(read_set(shared, conn, &a[0])) else {
        return count.map_or(Reply::Nil, |_| Reply::Array(Vec::new()));
    };
    if count == Some(0) {
        return Reply::Array(Vec::new());
    }
    let picked = tri!(sample_members(shared, &k, &m, count.unwrap_or(1)));
    match count {
        None => picked.into_iter().next().map_or(Reply::Nil, Reply::bulk),
        Some(_) => Reply::Array(picked.into_iter().map(Reply::bulk).collect()),
    }
}

/// SMOVE src dst member: moves `member` in one batch. 0 if `src` is
/// absent (whatever `dst` holds) or lacks the member; WRONGTYPE if either
/// key holds another type; with `src` = `dst`, whether it is a member.
fn smove(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (src, dst) = (db_key(conn.db, &a[0]), db_key(conn.db, &a[1]));
    let member = &a[2][..];
    let _g = shared.lock_keys(&[&src, &dst]);
    let mut reads = shared.read_many(&[src.clone(), dst.clone()]).into_iter();
    let (Some(src_read), Some(dst_read)) = (reads.next(), reads.next()) else {
        // `read_many` answers once per key.
        return Reply::err("ERR internal error: a key was not read");
    };
    let Some(mut sm) = tri!(as_set(src_read)) else {
        return Reply::Int(0);
    };
    let dm = tri!(as_set(dst_read));
    let src_ek = meta::element_key(&src, sm.version, member);
    let dst_ek = dm.map(|m| meta::element_key(&dst, m.version, member));
    let mut lookups = vec![src_ek.clone()];
    lookups.extend(dst_ek.iter().cloned());
    let found = tri!(shared.get_many(&ReadOptions::default(), &lookups));
    if found[0].is_none() {
        return Reply::Int(0);
    }
    if src == dst {
        return Reply::Int(1);
    }
    let mut b = WriteBatch::new();
    b.delete(&src_ek);
    sm.size -= 1;
    if sm.size == 0 {
        b.delete(&src);
    } else {
        put_meta(&mut b, &src, &sm);
    }
    let added = match dm {
        None => {
            tri!(put_new_set(shared, &mut b, &dst, &[member.to_vec()]));
            true
        }
        Some(mut dm) if found.get(1).is_some_and(Option::is_none) => {
            b.put(meta::element_key(&dst, dm.version, member), []);
            dm.size += 1;
            put_meta(&mut b, &dst, &dm);
            true
        }
        Some(_) => false,
    };
    tri!(shared.write(b));
    shared.notify_removal(SET, "srem", &src, sm.size == 0);
    if added {
        shared.notify(SET, "sadd", &dst);
    }
    Reply::Int(1)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]: the intersection's
/// size, at most `limit` (0: no limit).
fn sintercard(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let numkeys = match parse_int(&a[0]) {
        Some(n) if n > 0 => n as u64,
        _ => return Reply::err(NUMKEYS_NOT_POSITIVE),
    };
    if numkeys > (a.len() - 1) as u64 {
        return Reply::err("ERR Number of keys can't be greater than number of args");
    }
    let (keys, opts) = a[1..].split_at(numkeys as usize);
    let mut limit = 0u64;
    let mut i = 0;
    while i < opts.len() {
        match opts.get(i + 1) {
            Some(v) if opts[i].eq_ignore_ascii_case(b"limit") => match parse_int(v) {
                Some(n) if n >= 0 => limit = n as u64,
                _ => return cannot_be_negative("LIMIT"),
            },
            _ => return syntax_error(),
        }
        i += 2;
    }
    let keys = stored_keys(conn, keys);
    let n = tri!(shared.at_snapshot(|| combine(shared, Op::Inter, &keys))).len() as u64;
    Reply::Int((if limit == 0 { n } else { n.min(limit) }) as i64)
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]. As in Redis, the key is
/// looked up before the options are parsed (an absent key ignores them).
fn sscan(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let cursor = tri!(coll::parse_cursor(&a[1]));
    let Some((k, m)) = tri!(read_set(shared, conn, &a[0])) else {
        return super::scan_reply(0, Vec::new());
    };
    let args = tri!(coll::parse_scan_args(&a[2..]));
    let (next, items) = tri!(coll::scan_page(shared, &k, &m, cursor, args.count));
    let out = items
        .into_iter()
        .filter(|(s, _)| args.pattern.is_none_or(|p| glob_match(p, s)))
        .map(|(s, _)| Reply::bulk(s))
        .collect();
    super::scan_reply(next, out)
}
