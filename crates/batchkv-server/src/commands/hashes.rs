//! Hash commands. A hash is a collection (`meta.rs`): one element per
//! field, the field's value stored as the element's value. Multi-field
//! reads (HMGET, HSET's existence checks, HDEL) are one batched engine
//! read.

use bytes::{Bytes, BytesMut};

use super::coll::{self, parse_rand_count, Writer};
use super::sample::Sample;
use super::strings::tri;
use super::{not_integer, parse_int, spec, CommandSpec, ConnState, KEY1, R, RS, W, WM};
use crate::batcher::Shape;
use crate::errors::{INCR_OVERFLOW, NAN_OR_INFINITY, NOT_FLOAT, OUT_OF_RANGE};
use crate::keyspace::{db_key, glob_match};
use crate::ldouble::LDouble;
use crate::meta::Kind;
use crate::notify::HASH;
use crate::resp::{self, Reply};
use crate::shared::Shared;

/// The hash commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("hset", -4, WM, KEY1, |s, c, a| hset(s, c, a, "hset"))
        .looks_up(Kind::Hash, coll::pairs_after_key),
    spec("hmset", -4, WM, KEY1, |s, c, a| hset(s, c, a, "hmset"))
        .looks_up(Kind::Hash, coll::pairs_after_key),
    spec("hsetnx", 4, WM, KEY1, |s, c, a| hsetnx(s, c, a))
        .looks_up(Kind::Hash, coll::first_after_key),
    spec("hget", 3, R, KEY1, |s, c, a| hget(s, c, a)).batched(|_| Some(Shape::HGet)),
    // The key, then n - 1 fields.
    spec("hmget", -3, R, KEY1, |s, c, a| hmget(s, c, a))
        .batched(|a| Some(Shape::HMget(a.len() - 1))),
    spec("hgetall", 2, RS, KEY1, |s, c, a| {
        hgetall(s, c, a, true, true)
    }),
    spec("hkeys", 2, RS, KEY1, |s, c, a| {
        hgetall(s, c, a, true, false)
    }),
    spec("hvals", 2, RS, KEY1, |s, c, a| {
        hgetall(s, c, a, false, true)
    }),
    spec("hlen", 2, R, KEY1, |s, c, a| hlen(s, c, a)).batched(|_| Some(Shape::Card(Kind::Hash))),
    spec("hexists", 3, R, KEY1, |s, c, a| hexists(s, c, a)).batched(|_| Some(Shape::HExists)),
    spec("hstrlen", 3, R, KEY1, |s, c, a| hstrlen(s, c, a)).batched(|_| Some(Shape::HStrLen)),
    spec("hdel", -3, W, KEY1, |s, c, a| hdel(s, c, a)).looks_up(Kind::Hash, coll::all_after_key),
    spec("hincrby", 4, WM, KEY1, |s, c, a| hincrby(s, c, a))
        .looks_up(Kind::Hash, coll::first_after_key),
    spec("hincrbyfloat", 4, WM, KEY1, |s, c, a| hincrbyfloat(s, c, a))
        .looks_up(Kind::Hash, coll::first_after_key),
    spec("hrandfield", -2, RS, KEY1, |s, c, a| hrandfield(s, c, a)),
    spec("hscan", -3, RS, KEY1, |s, c, a| hscan(s, c, a)),
];

/// The live hash at `key`'s metadata, `None` if absent.
fn read_hash(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
) -> Result<Option<(Vec<u8>, crate::meta::Meta)>, Reply> {
    let k = db_key(conn.db, key);
    Ok(shared.read_meta(&k, Kind::Hash)?.map(|m| (k, m)))
}

/// Adds `pairs` (distinct fields) to `w`, a new hash (RESTORE).
pub(crate) fn fill(w: &mut Writer, pairs: &[(Vec<u8>, Vec<u8>)]) {
    for (f, v) in pairs {
        let ek = w.element_key(f);
        w.batch.put(ek, v);
    }
    w.meta.size += pairs.len() as u64;
}

/// Sets `pairs` (field, value) in `w`; returns how many fields are new.
fn set_fields(shared: &Shared, w: &mut Writer, pairs: &[(&[u8], &[u8])]) -> Result<i64, Reply> {
    let fields: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
    let old = w.read(shared, &fields)?;
    let mut added = std::collections::HashSet::new();
    for ((f, v), o) in pairs.iter().zip(old) {
        if o.is_none() {
            added.insert(*f);
        }
        let ek = w.element_key(f);
        w.batch.put(ek, v);
    }
    w.meta.size += added.len() as u64;
    Ok(added.len() as i64)
}

pub fn hset(shared: &Shared, conn: &ConnState, a: &[Bytes], name: &str) -> Reply {
    if a.len().is_multiple_of(2) {
        return super::wrong_arity(name);
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::Hash));
    let pairs: Vec<(&[u8], &[u8])> = a[1..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    let added = tri!(set_fields(shared, &mut w, &pairs));
    tri!(w.commit_notify(shared, HASH, "hset"));
    if name == "hmset" {
        Reply::ok()
    } else {
        Reply::Int(added)
    }
}

pub fn hsetnx(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::Hash));
    if tri!(w.read(shared, &[&a[1]]))[0].is_some() {
        return Reply::Int(0);
    }
    tri!(set_fields(shared, &mut w, &[(&a[1], &a[2])]));
    tri!(w.commit_notify(shared, HASH, "hset"));
    Reply::Int(1)
}

pub fn hget(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return Reply::Nil;
    };
    match tri!(coll::read_elements(shared, &k, &m, &[&a[1]]))
        .pop()
        .flatten()
    {
        Some(v) => Reply::bulk(v),
        None => Reply::Nil,
    }
}

pub fn hmget(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return Reply::Array(vec![Reply::Nil; a.len() - 1]);
    };
    let fields: Vec<&[u8]> = a[1..].iter().map(|f| &f[..]).collect();
    // Encoded straight from the engine's values.
    let mut out = BytesMut::with_capacity(16 * fields.len());
    resp::encode_array_header(&mut out, fields.len());
    tri!(coll::visit_elements(
        shared,
        &k,
        &m,
        &fields,
        |_, v| match v {
            Some(v) => resp::encode_bulk(&mut out, v),
            None => resp::encode_nil(conn.proto, &mut out),
        }
    ));
    Reply::Encoded(out)
}

/// HGETALL (fields and values), HKEYS, HVALS.
pub fn hgetall(
    shared: &Shared,
    conn: &ConnState,
    a: &[Bytes],
    fields: bool,
    values: bool,
) -> Reply {
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return if fields && values {
            Reply::Map(Vec::new())
        } else {
            Reply::Array(Vec::new())
        };
    };
    let all = tri!(coll::all_elements(shared, &k, &m));
    if fields && values {
        return Reply::Map(
            all.into_iter()
                .map(|(f, v)| (Reply::bulk(f), Reply::bulk(v)))
                .collect(),
        );
    }
    Reply::Array(
        all.into_iter()
            .map(|(f, v)| Reply::bulk(if fields { f } else { v }))
            .collect(),
    )
}

pub fn hlen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    Reply::Int(tri!(read_hash(shared, conn, &a[0])).map_or(0, |(_, m)| m.size as i64))
}

pub fn hexists(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return Reply::Int(0);
    };
    let v = tri!(coll::read_elements(shared, &k, &m, &[&a[1]]));
    Reply::Int(i64::from(v[0].is_some()))
}

pub fn hstrlen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return Reply::Int(0);
    };
    let v = tri!(coll::read_elements(shared, &k, &m, &[&a[1]]));
    Reply::Int(v[0].as_ref().map_or(0, |v| v.len() as i64))
}

pub fn hdel(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key, Kind::Hash)) else {
        return Reply::Int(0);
    };
    let mut fields: Vec<&[u8]> = a[1..].iter().map(|f| &f[..]).collect();
    fields.sort_unstable();
    fields.dedup();
    let old = tri!(w.read(shared, &fields));
    let mut n = 0;
    for (f, o) in fields.iter().zip(old) {
        if o.is_some() {
            let ek = w.element_key(f);
            w.batch.delete(ek);
            n += 1;
        }
    }
    if n == 0 {
        return Reply::Int(0);
    }
    w.meta.size -= n as u64;
    tri!(w.commit_notify(shared, HASH, "hdel"));
    Reply::Int(n)
}

pub fn hincrby(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(by) = parse_int(&a[2]) else {
        return not_integer();
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::Hash));
    let cur = match tri!(w.read(shared, &[&a[1]])).pop().flatten() {
        None => 0,
        Some(v) => match parse_int(&v) {
            Some(n) => n,
            None => return Reply::err("ERR hash value is not an integer"),
        },
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err(INCR_OVERFLOW);
    };
    tri!(set_fields(
        shared,
        &mut w,
        &[(&a[1], n.to_string().as_bytes())]
    ));
    tri!(w.commit_notify(shared, HASH, "hincrby"));
    Reply::Int(n)
}

/// HINCRBYFLOAT as Redis 7.0: the increment is checked first (not a
/// float, then NaN or infinite), then the key's type and the field's
/// value; the sum is kept in Redis's `%.17Lf`-based form.
pub fn hincrbyfloat(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(by) = LDouble::parse(&a[2]) else {
        return Reply::err(NOT_FLOAT);
    };
    if matches!(by, LDouble::Infinite { .. }) {
        return Reply::err("ERR value is NaN or Infinity");
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = tri!(coll::open(shared, key, Kind::Hash));
    let cur = match tri!(w.read(shared, &[&a[1]])).pop().flatten() {
        None => LDouble::zero(false),
        Some(v) => match LDouble::parse(&v) {
            Some(n) => n,
            None => return Reply::err("ERR hash value is not a float"),
        },
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err(NAN_OR_INFINITY);
    };
    let text = n.to_human();
    tri!(set_fields(shared, &mut w, &[(&a[1], text.as_bytes())]));
    tri!(w.commit_notify(shared, HASH, "hincrbyfloat"));
    Reply::bulk(Bytes::from(text))
}

/// HRANDFIELD's count (`None` without one) and WITHVALUES, checked in
/// Redis's order: the count as a number in ±`i64::MAX`, then the syntax,
/// then (with WITHVALUES only) the count's range of
/// [`parse_rand_count`].
fn hrandfield_args(a: &[Bytes]) -> Result<(Option<i64>, bool), Reply> {
    let Some(c) = a.get(1) else {
        return Ok((None, false));
    };
    // In Redis's order: the count is an integer, the syntax, WITHVALUES's
    // halved range; then our bound on repeated picks (`parse_rand_count`).
    let n = parse_int(c).ok_or_else(not_integer)?;
    if n == i64::MIN {
        return Err(parse_rand_count(c).err().unwrap_or_else(not_integer));
    }
    let with_values = match a.get(2) {
        None => false,
        Some(w) if a.len() == 3 && w.eq_ignore_ascii_case(b"withvalues") => true,
        _ => return Err(super::syntax_error()),
    };
    if with_values && n.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(Reply::err(OUT_OF_RANGE));
    }
    Ok((Some(parse_rand_count(c)?), with_values))
}

pub fn hrandfield(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (count, with_values) = tri!(hrandfield_args(a));
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return match count {
            None => Reply::Nil,
            Some(_) => Reply::Array(Vec::new()),
        };
    };
    let mut s = Sample::new(m.size, count.unwrap_or(1));
    let mut picked = tri!(coll::sample_elements(shared, &k, &m, &mut s));
    if count.is_none() {
        return picked.pop().map_or(Reply::Nil, |(f, _)| Reply::bulk(f));
    }
    if with_values {
        return Reply::Pairs(
            picked
                .into_iter()
                .map(|(f, v)| (Reply::bulk(f), Reply::bulk(v)))
                .collect(),
        );
    }
    Reply::Array(picked.into_iter().map(|(f, _)| Reply::bulk(f)).collect())
}

pub fn hscan(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let cursor = tri!(coll::parse_cursor(&a[1]));
    // As in Redis, a missing key is an empty page and another type
    // WRONGTYPE whatever the options.
    let Some((k, m)) = tri!(read_hash(shared, conn, &a[0])) else {
        return super::scan_reply(0, Vec::new());
    };
    let args = tri!(coll::parse_scan_args(&a[2..]));
    let (next, items) = tri!(coll::scan_page(shared, &k, &m, cursor, args.count));
    let mut out = Vec::new();
    for (f, v) in items {
        if args.pattern.is_none_or(|p| glob_match(p, &f)) {
            out.push(Reply::bulk(f));
            out.push(Reply::bulk(v));
        }
    }
    super::scan_reply(next, out)
}
