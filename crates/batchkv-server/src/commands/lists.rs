//! List commands. A list is a collection (`meta.rs`) whose elements sit at
//! the consecutive indexes `[head, tail)` of its metadata: the element at
//! position `p` (0 = the head) is the element key with sub `head + p` as 8
//! big-endian bytes, so elements sort in list order and any run of the
//! list is one range scan. A new list starts at `head = tail =
//! LIST_MIDDLE`; LPUSH writes at `head - 1`, RPUSH at `tail`.
//!
//! Invariant (with `meta.rs`'s): `size == tail - head`, and every index
//! in `[head, tail)` holds an element. Every command writes its elements
//! and the metadata in one batch.
//!
//! Costs: pushes and pops touch only the elements they add or remove;
//! LINDEX and LSET one element; LRANGE, LPOS one range scan; LTRIM deletes
//! what it trims (one range deletion when that is many elements). LINSERT
//! and LREM rewrite every element between the change and the nearer end of
//! the list: O(n), as in Kvrocks (which always moves the far side).
//!
//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) are
//! handled here as their non-blocking forms: when there is nothing to pop
//! they answer nil, which is their answer inside MULTI and tells the
//! connection to wait (`blocking.rs`); [`block_request`] gives the keys and
//! timeout it waits with, and the handler a woken client runs: it passes
//! over keys that are not lists (Redis keeps such a client blocked), where
//! the command's first run answers WRONGTYPE.

use std::time::Duration;

use batchkv::WriteBatch;
use bytes::{Bytes, BytesMut};

use super::coll::{self, Mpop, Others, Writer};
use super::strings::tri;
use super::{
    not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, Handler, KEY1, NO_KEYS, R,
    RS, W, WM,
};
use crate::batcher::Shape;
use crate::blocking::WaitFor;
use crate::errors::{cannot_be_negative, NOT_POSITIVE, NO_SUCH_KEY, TIMEOUT_NEGATIVE};
use crate::keyspace::{db_key, put_meta};
use crate::meta::{self, Kind, Meta};
use crate::notify::LIST;
use crate::resp::{self, Reply};
use crate::shared::Shared;

/// Flags of the pushes (Redis: write denyoom fast).
const PUSH: &[&str] = &["write", "denyoom", "fast"];
/// Flags of LPOP/RPOP.
const POP: &[&str] = &["write", "fast"];
const MPOP: &[&str] = &["write", "movablekeys"];
const BPOP: &[&str] = &["write", "noscript", "blocking"];
const BMOVE: &[&str] = &["write", "denyoom", "noscript", "blocking"];
const BMPOP: &[&str] = &["write", "blocking", "movablekeys"];

/// The list commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("lpush", -3, PUSH, KEY1, |s, c, a| {
        push(s, c, a, End::Left, false)
    }),
    spec("rpush", -3, PUSH, KEY1, |s, c, a| {
        push(s, c, a, End::Right, false)
    }),
    spec("lpushx", -3, PUSH, KEY1, |s, c, a| {
        push(s, c, a, End::Left, true)
    }),
    spec("rpushx", -3, PUSH, KEY1, |s, c, a| {
        push(s, c, a, End::Right, true)
    }),
    spec("lpop", -2, POP, KEY1, |s, c, a| pop(s, c, a, End::Left)),
    spec("rpop", -2, POP, KEY1, |s, c, a| pop(s, c, a, End::Right)),
    spec("llen", 2, R, KEY1, |s, c, a| llen(s, c, a)).batched(|_| Some(Shape::Card(Kind::List))),
    spec("lindex", 3, RS, KEY1, |s, c, a| lindex(s, c, a)).batched(|_| Some(Shape::LIndex)),
    spec("lrange", 4, RS, KEY1, |s, c, a| lrange(s, c, a)).batched(range_shape),
    spec("lset", 4, WM, KEY1, |s, c, a| lset(s, c, a)),
    spec("linsert", 5, WM, KEY1, |s, c, a| linsert(s, c, a)),
    spec("lrem", 4, W, KEY1, |s, c, a| lrem(s, c, a)),
    spec("ltrim", 4, W, KEY1, |s, c, a| ltrim(s, c, a)),
    spec("lpos", -3, RS, KEY1, |s, c, a| lpos(s, c, a)),
    spec("lmove", 5, WM, (1, 2, 1), |s, c, a| lmove(s, c, a)),
    spec("rpoplpush", 3, WM, (1, 2, 1), |s, c, a| {
        let ends = (End::Right, End::Left);
        move_one(s, c, &a[0], &a[1], ends, Others::Fail)
    }),
    spec("lmpop", -4, MPOP, NO_KEYS, |s, c, a| lmpop(s, c, a)),
    spec("blpop", -3, BPOP, (1, -2, 1), |s, c, a| {
        bpop(s, c, a, End::Left, Others::Fail)
    }),
    spec("brpop", -3, BPOP, (1, -2, 1), |s, c, a| {
        bpop(s, c, a, End::Right, Others::Fail)
    }),
    spec("blmove", 6, BMOVE, (1, 2, 1), |s, c, a| {
        blmove(s, c, a, Others::Fail)
    }),
    spec("brpoplpush", 4, BMOVE, (1, 2, 1), |s, c, a| {
        brpoplpush(s, c, a, Others::Fail)
    }),
    spec("blmpop", -5, BMPOP, NO_KEYS, |s, c, a| {
        blmpop(s, c, a, Others::Fail)
    }),
];

/// An end of a list (Redis's LEFT/RIGHT, HEAD/TAIL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl End {
    /// The keyspace event of a pop from this end.
    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }

    /// The keyspace event of a push at this end.
    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }
}

/// Parses LEFT or RIGHT (any case); anything else is a syntax error.
fn parse_end(b: &[u8]) -> Result<End, Reply> {
    if b.eq_ignore_ascii_case(b"left") {
        Ok(End::Left)
    } else if b.eq_ignore_ascii_case(b"right") {
        Ok(End::Right)
    } else {
        Err(syntax_error())
    }
}

fn parse_index(b: &[u8]) -> Result<i64, Reply> {
    parse_int(b).ok_or_else(not_integer)
}

/// A client's index (negative counts from the tail) as a position in a
/// list of `len` elements; `None` if it is outside the list.
fn position(i: i64, len: u64) -> Option<u64> {
    let (i, len) = (i128::from(i), i128::from(len));
    let p = if i < 0 { i + len } else { i };
    (0..len).contains(&p).then_some(p as u64)
}

/// LRANGE's and LTRIM's range `start..=end` (negative from the tail) in a
/// list of `len`: the positions `[from, to)` it covers, clamped to the
/// list; empty (`from == to`) if it misses the list.
fn span(start: i64, end: i64, len: u64) -> (u64, u64) {
    let (mut s, mut e, n) = (i128::from(start), i128::from(end), i128::from(len));
    if s < 0 {
        s += n;
    }
    if e < 0 {
        e += n;
    }
    s = s.max(0);
    if s > e || s >= n {
        return (0, 0);
    }
    e = e.min(n - 1);
    (s as u64, e as u64 + 1)
}

/// The engine key of the element at absolute index `idx` of the list `m`
/// at stored key `key`.
fn ekey(key: &[u8], m: &Meta, idx: u64) -> Vec<u8> {
    meta::element_key(key, m.version, &idx.to_be_bytes())
}

fn overflow() -> Reply {
    Reply::err("ERR list index space exhausted")
}

/// The live list at user key `key`: its stored key and metadata.
fn read_list(
    shared: &Shared,
    conn: &ConnState,
    key: &[u8],
) -> Result<Option<(Vec<u8>, Meta)>, Reply> {
    let k = db_key(conn.db, key);
    Ok(shared.read_meta(&k, Kind::List)?.map(|m| (k, m)))
}

/// Visits the elements at positions `[from, to)` of the list `m` at `key`
/// (one range scan), ascending or, with `reverse`, descending:
/// `f(position, value)` until it returns false.
fn visit(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    from: u64,
    to: u64,
    reverse: bool,
    mut f: impl FnMut(u64, &[u8]) -> bool,
) -> Result<(), Reply> {
    if from >= to {
        return Ok(());
    }
    let lo = ekey(key, m, m.head.saturating_add(from));
    let hi = ekey(key, m, m.head.saturating_add(to));
    let at = lo.len() - 8;
    shared.scan(&lo, &hi, reverse, true, |k, v| {
        let idx = k
            .get(at..)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .map(u64::from_be_bytes);
        match idx {
            Some(i) => f(i.wrapping_sub(m.head), v),
            None => true,
        }
    })
}

/// The values at positions `[from, to)`, in order (reversed with
/// `reverse`).
fn read_span(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    from: u64,
    to: u64,
    reverse: bool,
) -> Result<Vec<Vec<u8>>, Reply> {
    let n = to.saturating_sub(from);
    if n <= POINT_READ_MAX {
        // Few elements at known indexes (the invariant): one batched point
        // read instead of an iterator.
        let mut idx: Vec<u64> = (from..to).map(|p| m.head + p).collect();
        if reverse {
            idx.reverse();
        }
        let keys: Vec<Vec<u8>> = idx.iter().map(|&i| ekey(key, m, i)).collect();
        let vals = shared.get_many(&batchkv::ReadOptions::default(), &keys)?;
        return vals
            .into_iter()
            .map(|v| v.ok_or_else(|| Reply::err(ELEMENT_MISSING)))
            .collect();
    }
    let mut out = Vec::with_capacity(n.min(1 << 16) as usize);
    visit(shared, key, m, from, to, reverse, |_, v| {
        out.push(v.to_vec());
        true
    })?;
    Ok(out)
}

/// The values at positions `[from, to)` of the list `m` at `key`, in
/// order (SORT).
pub(crate) fn read_values(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    from: u64,
    to: u64,
) -> Result<Vec<Vec<u8>>, Reply> {
    read_span(shared, key, m, from, to, false)
}

/// Replaces whatever `dst` holds with a new list of `vals` (none: deletes
/// `dst`) in one batch, and wakes a client blocked on `dst` (SORT ...
/// STORE). The caller holds `dst`'s lock.
pub(crate) fn replace(shared: &Shared, dst: &[u8], vals: &[Vec<u8>]) -> Result<(), Reply> {
    let mut b = WriteBatch::new();
    shared.clear_old(&mut b, dst)?;
    if vals.is_empty() {
        b.delete(dst);
        return shared.write(b);
    }
    let mut m = shared.new_collection(Kind::List);
    push_values(&mut b, dst, &mut m, End::Right, vals)?;
    put_meta(&mut b, dst, &m);
    shared.write(b)?;
    shared.blocking.signal_kind(dst, WaitFor::List);
    Ok(())
}

/// Spans up to this many elements are read with point reads (pops, small
/// LRANGEs); longer ones with a range scan.
pub(crate) const POINT_READ_MAX: u64 = 16;

/// The error of a read that found the list's metadata but not one of the
/// elements it locates.
pub(crate) const ELEMENT_MISSING: &str = "ERR corrupt list: an element is missing";

/// Adds to `b` the deletion of the elements at absolute indexes
/// `[lo, hi)`: point deletes, or one range deletion for many.
fn delete_span(b: &mut WriteBatch, key: &[u8], m: &Meta, lo: u64, hi: u64) {
    if hi.saturating_sub(lo) > meta::POINT_DELETE_MAX {
        b.delete_range(ekey(key, m, lo), ekey(key, m, hi));
    } else {
        for i in lo..hi {
            b.delete(ekey(key, m, i));
        }
    }
}

/// Appends `vals` to `w`, a new list (RESTORE).
pub(crate) fn fill(w: &mut Writer, vals: &[Vec<u8>]) -> Result<(), Reply> {
    push_values(&mut w.batch, &w.key, &mut w.meta, End::Right, vals)
}

/// Adds `vals` at `end` of the list `m` at `key` one by one (so LPUSH a b
/// leaves b at the head), writing them to `b`.
fn push_values<V: AsRef<[u8]>>(
    b: &mut WriteBatch,
    key: &[u8],
    m: &mut Meta,
    end: End,
    vals: &[V],
) -> Result<(), Reply> {
    for v in vals {
        match end {
            End::Left => {
                m.head = m.head.checked_sub(1).ok_or_else(overflow)?;
                b.put(ekey(key, m, m.head), v);
            }
            End::Right => {
                let idx = m.tail;
                m.tail = m.tail.checked_add(1).ok_or_else(overflow)?;
                b.put(ekey(key, m, idx), v);
            }
        }
        m.size += 1;
    }
    Ok(())
}

/// Removes up to `n` elements from `end` of the list `m` at `key` (their
/// deletion added to `b`); returns them in the order they were popped.
fn pop_values(
    shared: &Shared,
    b: &mut WriteBatch,
    key: &[u8],
    m: &mut Meta,
    end: End,
    n: u64,
) -> Result<Vec<Vec<u8>>, Reply> {
    let n = n.min(m.size);
    let (from, to) = match end {
        End::Left => (0, n),
        End::Right => (m.size - n, m.size),
    };
    let vals = read_span(shared, key, m, from, to, end == End::Right)?;
    delete_span(b, key, m, m.head + from, m.head + to);
    match end {
        End::Left => m.head += n,
        End::Right => m.tail -= n,
    }
    m.size -= n;
    Ok(vals)
}

/// Adds the list `m` at `key` to `b` as [`Writer::commit`] would: its
/// metadata, or the key's deletion once it is empty (for commands that
/// write two lists in one batch).
fn stage(b: &mut WriteBatch, key: &[u8], m: &Meta) {
    if m.size == 0 {
        b.delete(key);
    } else {
        put_meta(b, key, m);
    }
}

fn list_reply(vals: Vec<Vec<u8>>) -> Reply {
    Reply::Array(vals.into_iter().map(Reply::bulk).collect())
}

/// LPUSH, RPUSH, and with `only_existing` LPUSHX, RPUSHX.
fn push(shared: &Shared, conn: &ConnState, a: &[Bytes], end: End, only_existing: bool) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = if only_existing {
        match tri!(coll::open_existing(shared, key.clone(), Kind::List)) {
            Some(w) => w,
            None => return Reply::Int(0),
        }
    } else {
        tri!(coll::open(shared, key.clone(), Kind::List))
    };
    tri!(push_values(&mut w.batch, &w.key, &mut w.meta, end, &a[1..]));
    let len = w.meta.size;
    tri!(w.commit(shared));
    shared.notify(LIST, end.push_event(), &key);
    shared.blocking.signal(&key);
    Reply::Int(len as i64)
}

/// Parses LPOP/RPOP's count (Redis: any failure is this one error).
fn parse_pop_count(b: &[u8]) -> Result<u64, Reply> {
    match parse_int(b) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Reply::err(NOT_POSITIVE)),
    }
}

/// LPOP and RPOP, with an optional count.
fn pop(shared: &Shared, conn: &ConnState, a: &[Bytes], end: End) -> Reply {
    let count = match a {
        [_] => None,
        [_, c] => Some(tri!(parse_pop_count(c))),
        _ => {
            let name = if end == End::Left { "lpop" } else { "rpop" };
            return super::wrong_arity(name);
        }
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::List)) else {
        return if count.is_some() {
            Reply::NilArray
        } else {
            Reply::Nil
        };
    };
    if count == Some(0) {
        return Reply::Array(Vec::new());
    }
    let vals = tri!(pop_values(
        shared,
        &mut w.batch,
        &w.key,
        &mut w.meta,
        end,
        count.unwrap_or(1)
    ));
    let emptied = w.meta.size == 0;
    tri!(w.commit(shared));
    shared.notify_removal(LIST, end.pop_event(), &key, emptied);
    match count {
        Some(_) => list_reply(vals),
        None => vals.into_iter().next().map_or(Reply::Nil, Reply::bulk),
    }
}

fn llen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    Reply::Int(tri!(read_list(shared, conn, &a[0])).map_or(0, |(_, m)| m.size as i64))
}

/// The element LINDEX `index` reads in the list `m`: its absolute index
/// (its sub-key in big-endian), `None` if the index is outside the list,
/// `Err` if it is not an integer.
pub(crate) fn index_position(m: &Meta, index: &[u8]) -> Result<Option<u64>, Reply> {
    Ok(position(parse_index(index)?, m.size).map(|p| m.head + p))
}

/// The absolute indexes `[from, to)` of the elements LRANGE `start end`
/// reads in the list `m`.
pub(crate) fn range_positions(m: &Meta, start: i64, end: i64) -> (u64, u64) {
    let (from, to) = span(start, end, m.size);
    (m.head + from, m.head + to)
}

/// The batched shape of LRANGE `a` (key, start, end): the reads of a span
/// known to hold at most [`POINT_READ_MAX`] elements whatever the list's
/// length (both indexes integers of one sign, at most that far apart),
/// which are point reads of elements the metadata locates. Others run
/// alone (a long span is read with an iterator, and an index that is not
/// an integer answers the error).
pub(crate) fn range_shape(a: &[Bytes]) -> Option<Shape> {
    let (start, end) = (parse_int(&a[1])?, parse_int(&a[2])?);
    let short = (start < 0) == (end < 0) && end.saturating_sub(start) < POINT_READ_MAX as i64;
    short.then_some(Shape::LRange { start, end })
}

fn lindex(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((k, m)) = tri!(read_list(shared, conn, &a[0])) else {
        return Reply::Nil;
    };
    let Some(i) = tri!(index_position(&m, &a[1])) else {
        return Reply::Nil;
    };
    let sub = i.to_be_bytes();
    match tri!(coll::read_elements(shared, &k, &m, &[&sub]))
        .pop()
        .flatten()
    {
        Some(v) => Reply::bulk(v),
        None => Reply::Nil,
    }
}

fn lrange(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let start = tri!(parse_index(&a[1]));
    let end = tri!(parse_index(&a[2]));
    let Some((k, m)) = tri!(read_list(shared, conn, &a[0])) else {
        return Reply::Array(Vec::new());
    };
    let (from, to) = span(start, end, m.size);
    tri!(span_encoded(shared, &k, &m, from, to))
}

/// LRANGE's reply for the positions `[from, to)`, encoded as the elements
/// are read (a long span straight from the iterator's values, with no
/// copy or [`Reply`] per element). Every position in the span holds an
/// element (the invariant); one missing is [`ELEMENT_MISSING`].
fn span_encoded(shared: &Shared, key: &[u8], m: &Meta, from: u64, to: u64) -> Result<Reply, Reply> {
    let n = to.saturating_sub(from);
    let mut out = BytesMut::with_capacity(16 + 32 * n.min(1 << 15) as usize);
    resp::encode_array_header(&mut out, n as usize);
    if n <= POINT_READ_MAX {
        for v in read_span(shared, key, m, from, to, false)? {
            resp::encode_bulk(&mut out, &v);
        }
        return Ok(Reply::Encoded(out));
    }
    let mut seen = 0;
    visit(shared, key, m, from, to, false, |_, v| {
        resp::encode_bulk(&mut out, v);
        seen += 1;
        true
    })?;
    if seen != n {
        return Err(Reply::err(ELEMENT_MISSING));
    }
    Ok(Reply::Encoded(out))
}

fn lset(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::List)) else {
        return Reply::err(NO_SUCH_KEY);
    };
    let Some(p) = position(tri!(parse_index(&a[1])), w.meta.size) else {
        return Reply::err("ERR index out of range");
    };
    let ek = ekey(&w.key, &w.meta, w.meta.head + p);
    w.batch.put(ek, &a[2]);
    tri!(w.commit(shared));
    shared.notify(LIST, "lset", &key);
    Reply::ok()
}

/// The position of the first element equal to `value` (from the head).
fn find(shared: &Shared, key: &[u8], m: &Meta, value: &[u8]) -> Result<Option<u64>, Reply> {
    let mut found = None;
    visit(shared, key, m, 0, m.size, false, |p, v| {
        if v == value {
            found = Some(p);
        }
        found.is_none()
    })?;
    Ok(found)
}

fn linsert(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let after = if a[1].eq_ignore_ascii_case(b"after") {
        true
    } else if a[1].eq_ignore_ascii_case(b"before") {
        false
    } else {
        return syntax_error();
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::List)) else {
        return Reply::Int(0);
    };
    let Some(p) = tri!(find(shared, &w.key, &w.meta, &a[2])) else {
        return Reply::Int(-1);
    };
    tri!(insert_at(shared, &mut w, p + u64::from(after), &a[3]));
    let len = w.meta.size;
    tri!(w.commit(shared));
    shared.notify(LIST, "linsert", &key);
    Reply::Int(len as i64)
}

/// Inserts `value` at position `q` (`0 ..= size`) of the list in `w`: the
/// elements on the shorter side of `q` move one index outwards (rewritten:
/// O(that side)).
fn insert_at(shared: &Shared, w: &mut Writer, q: u64, value: &[u8]) -> Result<(), Reply> {
    let n = w.meta.size;
    let (key, m, b) = (&w.key, &w.meta, &mut w.batch);
    if q <= n - q {
        // Positions [0, q) move to index - 1; the new head is one lower.
        let head = m.head.checked_sub(1).ok_or_else(overflow)?;
        visit(shared, key, m, 0, q, false, |p, v| {
            b.put(ekey(key, m, head + p), v);
            true
        })?;
        b.put(ekey(key, m, head + q), value);
        w.meta.head = head;
    } else {
        // Positions [q, n) move to index + 1.
        let tail = m.tail.checked_add(1).ok_or_else(overflow)?;
        visit(shared, key, m, q, n, false, |p, v| {
            b.put(ekey(key, m, m.head + p + 1), v);
            true
        })?;
        b.put(ekey(key, m, m.head + q), value);
        w.meta.tail = tail;
    }
    w.meta.size += 1;
    Ok(())
}

fn lrem(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let count = tri!(parse_index(&a[1]));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::List)) else {
        return Reply::Int(0);
    };
    let limit = if count == 0 {
        u64::MAX
    } else {
        count.unsigned_abs()
    };
    let mut hits = Vec::new();
    tri!(visit(
        shared,
        &w.key,
        &w.meta,
        0,
        w.meta.size,
        count < 0,
        |p, v| {
            if v == &a[2][..] {
                hits.push(p);
            }
            (hits.len() as u64) < limit
        }
    ));
    if hits.is_empty() {
        return Reply::Int(0);
    }
    if count < 0 {
        hits.reverse();
    }
    tri!(remove_positions(shared, &mut w, &hits));
    let emptied = w.meta.size == 0;
    tri!(w.commit(shared));
    shared.notify_removal(LIST, "lrem", &key, emptied);
    Reply::Int(hits.len() as i64)
}

/// Removes the elements at `hits` (ascending, distinct positions) from the
/// list in `w`. The survivors between the first hit and the tail, or
/// between the head and the last hit, whichever are fewer, move to close
/// the gaps (rewritten: O(those elements)); the freed indexes at that end
/// are deleted.
fn remove_positions(shared: &Shared, w: &mut Writer, hits: &[u64]) -> Result<(), Reply> {
    let (Some(&first), Some(&last)) = (hits.first(), hits.last()) else {
        return Ok(());
    };
    let (n, k) = (w.meta.size, hits.len() as u64);
    let (key, m, b) = (&w.key, &w.meta, &mut w.batch);
    if n - first - k <= last + 1 - k {
        // Survivors after `first` move towards the head.
        let mut next = hits.iter().peekable();
        let mut dst = first;
        visit(shared, key, m, first, n, false, |p, v| {
            if next.peek() == Some(&&p) {
                next.next();
            } else {
                b.put(ekey(key, m, m.head + dst), v);
                dst += 1;
            }
            true
        })?;
        delete_span(b, key, m, m.tail - k, m.tail);
        w.meta.tail -= k;
    } else {
        // Survivors before `last` move towards the tail.
        let mut next = hits.iter().rev().peekable();
        let mut dst = last;
        visit(shared, key, m, 0, last + 1, true, |p, v| {
            if next.peek() == Some(&&p) {
                next.next();
            } else {
                b.put(ekey(key, m, m.head + dst), v);
                dst = dst.saturating_sub(1);
            }
            true
        })?;
        delete_span(b, key, m, m.head, m.head + k);
        w.meta.head += k;
    }
    w.meta.size -= k;
    Ok(())
}

fn ltrim(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let start = tri!(parse_index(&a[1]));
    let end = tri!(parse_index(&a[2]));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::List)) else {
        return Reply::ok();
    };
    let (from, to) = span(start, end, w.meta.size);
    if (from, to) == (0, w.meta.size) {
        // Redis signals the key for WATCH, and publishes the event, even
        // when nothing is trimmed.
        crate::tx::note_modified(&w.key);
        shared.notify(LIST, "ltrim", &key);
        return Reply::ok();
    }
    let (head, tail) = (w.meta.head, w.meta.tail);
    if from == to {
        delete_span(&mut w.batch, &w.key, &w.meta, head, tail);
        w.meta.size = 0;
    } else {
        delete_span(&mut w.batch, &w.key, &w.meta, head, head + from);
        delete_span(&mut w.batch, &w.key, &w.meta, head + to, tail);
        w.meta.head = head + from;
        w.meta.tail = head + to;
        w.meta.size = to - from;
    }
    let emptied = w.meta.size == 0;
    tri!(w.commit(shared));
    shared.notify_removal(LIST, "ltrim", &key, emptied);
    Reply::ok()
}

/// LPOS's options.
struct LposArgs {
    /// As given, 1 by default; never 0.
    rank: i64,
    /// `None`: no COUNT (answer one position, not an array).
    count: Option<i64>,
    /// 0: no limit.
    maxlen: i64,
}

fn parse_lpos(a: &[Bytes]) -> Result<LposArgs, Reply> {
    let mut out = LposArgs {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let non_negative = |b: &[u8], what: &str| match parse_int(b) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(cannot_be_negative(what)),
    };
    let mut i = 0;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(syntax_error());
        };
        match a[i].to_ascii_uppercase().as_slice() {
            b"RANK" => {
                out.rank = parse_index(v)?;
                if out.rank == 0 {
                    return Err(Reply::err(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list",
                    ));
                }
            }
            b"COUNT" => out.count = Some(non_negative(v, "COUNT")?),
            b"MAXLEN" => out.maxlen = non_negative(v, "MAXLEN")?,
            _ => return Err(syntax_error()),
        }
        i += 2;
    }
    Ok(out)
}

fn lpos(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let opts = tri!(parse_lpos(&a[2..]));
    let Some((k, m)) = tri!(read_list(shared, conn, &a[0])) else {
        return match opts.count {
            Some(_) => Reply::Array(Vec::new()),
            None => Reply::Nil,
        };
    };
    // Redis's arithmetic, wrapping included: RANK i64::MIN negates to
    // itself, so it matches from the first hit (from the tail) and COUNT
    // never stops it.
    let from_tail = opts.rank < 0;
    let rank = if from_tail {
        opts.rank.wrapping_neg()
    } else {
        opts.rank
    };
    let (mut scanned, mut matches) = (0i64, 0i64);
    let mut found = Vec::new();
    tri!(visit(shared, &k, &m, 0, m.size, from_tail, |p, v| {
        if opts.maxlen != 0 && scanned >= opts.maxlen {
            return false;
        }
        scanned += 1;
        if v != &a[1][..] {
            return true;
        }
        matches += 1;
        if matches < rank {
            return true;
        }
        found.push(p as i64);
        match opts.count {
            None => false,
            Some(0) => true,
            Some(c) => matches.wrapping_sub(rank).wrapping_add(1) < c,
        }
    }));
    match opts.count {
        Some(_) => Reply::Array(found.into_iter().map(Reply::Int).collect()),
        None => found.first().map_or(Reply::Nil, |&p| Reply::Int(p)),
    }
}

fn lmove(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let from = tri!(parse_end(&a[2]));
    let to = tri!(parse_end(&a[3]));
    move_one(shared, conn, &a[0], &a[1], (from, to), Others::Fail)
}

/// LMOVE (and RPOPLPUSH, BLMOVE, BRPOPLPUSH): pops an element from end
/// `ends.0` of list `src` and pushes it at end `ends.1` of list `dst`, in
/// one batch under both keys' locks; `src == dst` rotates. Nil if `src` is
/// empty (or, with [`Others::Skip`], not a list); a `dst` that is not a
/// list is WRONGTYPE before anything is popped.
fn move_one(
    shared: &Shared,
    conn: &ConnState,
    src: &[u8],
    dst: &[u8],
    (from, to): (End, End),
    others: Others,
) -> Reply {
    let sk = db_key(conn.db, src);
    let dk = db_key(conn.db, dst);
    let _g = shared.lock_keys(&[&sk, &dk]);
    let value = tri!(shared.read_value(&sk));
    let Some(mut s) = tri!(coll::pop_source(sk.clone(), value, Kind::List, others)) else {
        return Reply::Nil;
    };
    if sk == dk {
        let vals = tri!(pop_values(
            shared,
            &mut s.batch,
            &s.key,
            &mut s.meta,
            from,
            1
        ));
        let Some(v) = vals.into_iter().next() else {
            return Reply::Nil;
        };
        tri!(push_values(&mut s.batch, &s.key, &mut s.meta, to, &[&v]));
        tri!(s.commit(shared));
        shared.notify(LIST, to.push_event(), &sk);
        shared.notify(LIST, from.pop_event(), &sk);
        return Reply::bulk(v);
    }
    let mut d = tri!(coll::open(shared, dk.clone(), Kind::List));
    // One batch: the destination's (which may hold the deletion of an
    // expired collection's elements) takes the source's changes too.
    let vals = tri!(pop_values(
        shared,
        &mut d.batch,
        &s.key,
        &mut s.meta,
        from,
        1
    ));
    let Some(v) = vals.into_iter().next() else {
        return Reply::Nil;
    };
    tri!(push_values(&mut d.batch, &d.key, &mut d.meta, to, &[&v]));
    stage(&mut d.batch, &s.key, &s.meta);
    tri!(d.commit(shared));
    // Redis's order: the push, then the pop (and the source's deletion).
    shared.notify(LIST, to.push_event(), &dk);
    shared.notify_removal(LIST, from.pop_event(), &sk, s.meta.size == 0);
    shared.blocking.signal(&dk);
    Reply::bulk(v)
}

/// The key popped from and the elements popped, in order.
type Popped = (Bytes, Vec<Vec<u8>>);

/// Pops up to `count` elements from `end` of the first non-empty list
/// among `keys` (`coll::pop_first`), then publishes the pop's events.
fn pop_first(
    shared: &Shared,
    conn: &ConnState,
    keys: &[Bytes],
    end: End,
    count: u64,
    others: Others,
) -> Result<Option<Popped>, Reply> {
    let popped = coll::pop_first(
        shared,
        conn.db,
        keys,
        Kind::List,
        others,
        |s, w| {
            let vals = pop_values(s, &mut w.batch, &w.key, &mut w.meta, end, count)?;
            Ok((vals, w.meta.size == 0))
        },
        |key, (_, emptied)| shared.notify_removal(LIST, end.pop_event(), key, *emptied),
    )?;
    Ok(popped.map(|(key, (vals, _))| (key, vals)))
}

/// LMPOP's and BLMPOP's arguments from `numkeys` on: `numkeys key...
/// LEFT|RIGHT [COUNT n]`.
fn parse_mpop(a: &[Bytes]) -> Result<Mpop<'_, End>, Reply> {
    coll::parse_mpop(a, |b| parse_end(b).ok())
}

/// LMPOP and BLMPOP's reply: `[key, [elements]]`, a null array if every
/// list is empty.
fn mpop(shared: &Shared, conn: &ConnState, m: &Mpop<'_, End>, others: Others) -> Reply {
    match tri!(pop_first(shared, conn, m.keys, m.side, m.count, others)) {
        Some((key, vals)) => Reply::Array(vec![Reply::bulk(key), list_reply(vals)]),
        None => Reply::NilArray,
    }
}

fn lmpop(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let m = tri!(parse_mpop(a));
    mpop(shared, conn, &m, Others::Fail)
}

/// A blocking command's timeout as Redis 7.0 reads it: float seconds,
/// rounded up to whole milliseconds; `None` (0) waits forever. Values whose
/// milliseconds do not fit an i64 are "negative", as in Redis (its
/// conversion yields i64::MIN).
pub(crate) fn parse_timeout(b: &[u8]) -> Result<Option<Duration>, Reply> {
    let Some(secs) = parse_float(b) else {
        return Err(Reply::err("ERR timeout is not a float or out of range"));
    };
    let ms = (secs * 1000.0).ceil();
    // 2^63: the first value that does not fit an i64.
    let limit = -(i64::MIN as f64);
    if !(0.0..limit).contains(&ms) {
        return Err(Reply::err(TIMEOUT_NEGATIVE));
    }
    let mut ms = ms as u64;
    if ms == 0 && secs == 0.0 && underflows_positive(b) {
        // Redis parses a long double: 1e-400 is a tiny positive number
        // there (1 ms after rounding up), 0 in an f64.
        ms = 1;
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

/// Whether the float text `b` is positive with a non-zero mantissa.
fn underflows_positive(b: &[u8]) -> bool {
    !b.starts_with(b"-")
        && b.iter()
            .take_while(|c| !matches!(c, b'e' | b'E'))
            .any(|c| (b'1'..=b'9').contains(c))
}

/// BLPOP and BRPOP: `key... timeout`.
fn bpop(shared: &Shared, conn: &ConnState, a: &[Bytes], end: End, others: Others) -> Reply {
    let Some((timeout, keys)) = a.split_last() else {
        return syntax_error();
    };
    tri!(parse_timeout(timeout));
    match tri!(pop_first(shared, conn, keys, end, 1, others)) {
        Some((key, vals)) => match vals.into_iter().next() {
            Some(v) => Reply::Array(vec![Reply::bulk(key), Reply::bulk(v)]),
            None => Reply::NilArray,
        },
        None => Reply::NilArray,
    }
}

fn blmove(shared: &Shared, conn: &ConnState, a: &[Bytes], others: Others) -> Reply {
    let from = tri!(parse_end(&a[2]));
    let to = tri!(parse_end(&a[3]));
    tri!(parse_timeout(&a[4]));
    move_one(shared, conn, &a[0], &a[1], (from, to), others)
}

fn brpoplpush(shared: &Shared, conn: &ConnState, a: &[Bytes], others: Others) -> Reply {
    tri!(parse_timeout(&a[2]));
    let ends = (End::Right, End::Left);
    move_one(shared, conn, &a[0], &a[1], ends, others)
}

/// BLMPOP: `timeout numkeys key... LEFT|RIGHT [COUNT n]`.
fn blmpop(shared: &Shared, conn: &ConnState, a: &[Bytes], others: Others) -> Reply {
    let m = tri!(parse_mpop(&a[1..]));
    tri!(parse_timeout(&a[0]));
    mpop(shared, conn, &m, others)
}

/// For a blocking command `args` (name included) that answered nil: the
/// stored keys it waits on, its timeout (`None`: forever) and the handler
/// a woken client runs (it passes over keys that are not lists, where the
/// first run answers WRONGTYPE). `None` if `args` is not a valid
/// blocking command.
pub(crate) fn block_request(
    db: u8,
    args: &[Bytes],
) -> Option<(Vec<Vec<u8>>, Option<Duration>, Handler)> {
    let (name, a) = args.split_first()?;
    let name = name.to_ascii_lowercase();
    let (keys, timeout, retry): (&[Bytes], &Bytes, Handler) = match name.as_slice() {
        b"blpop" => {
            let (t, keys) = a.split_last()?;
            (keys, t, |s, c, a| bpop(s, c, a, End::Left, Others::Skip))
        }
        b"brpop" => {
            let (t, keys) = a.split_last()?;
            (keys, t, |s, c, a| bpop(s, c, a, End::Right, Others::Skip))
        }
        b"blmove" => (a.get(..1)?, a.get(4)?, |s, c, a| {
            blmove(s, c, a, Others::Skip)
        }),
        b"brpoplpush" => (a.get(..1)?, a.get(2)?, |s, c, a| {
            brpoplpush(s, c, a, Others::Skip)
        }),
        b"blmpop" => (parse_mpop(a.get(1..)?).ok()?.keys, a.first()?, |s, c, a| {
            blmpop(s, c, a, Others::Skip)
        }),
        _ => return None,
    };
    let timeout = parse_timeout(timeout).ok()?;
    Some((keys.iter().map(|k| db_key(db, k)).collect(), timeout, retry))
}

/// A float argument (the timeout of the blocking commands): decimal text
/// with no surrounding spaces, not NaN.
fn parse_float(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_spans_clamp_like_redis() {
        assert_eq!(position(-1, 3), Some(2));
        assert_eq!(position(-4, 3), None);
        assert_eq!(position(3, 3), None);
        assert_eq!(position(i64::MIN, 3), None);
        assert_eq!(span(0, -1, 5), (0, 5));
        assert_eq!(span(-100, 100, 5), (0, 5));
        assert_eq!(span(3, 1, 5), (0, 0));
        assert_eq!(span(5, 100, 5), (0, 0));
        assert_eq!(span(i64::MIN, i64::MAX, 5), (0, 5));
        assert_eq!(span(-1, -2, 5), (0, 0));
    }

    #[test]
    fn timeouts_parse_like_redis() {
        let ms = |s: &str| parse_timeout(s.as_bytes()).map(|d| d.map(|d| d.as_millis()));
        assert_eq!(ms("0"), Ok(None));
        assert_eq!(ms("1.5"), Ok(Some(1500)));
        assert_eq!(ms("0.0001"), Ok(Some(1)));
        assert_eq!(ms("1e-400"), Ok(Some(1)));
        assert_eq!(ms("-0.0001"), Ok(None));
        assert_eq!(ms("-0"), Ok(None));
        let neg = Err(Reply::err("ERR timeout is negative"));
        assert_eq!(ms("-1"), neg);
        assert_eq!(ms("inf"), neg);
        assert_eq!(ms("9223372036854776"), neg);
        let bad = Err(Reply::err("ERR timeout is not a float or out of range"));
        assert_eq!(ms("nan"), bad);
        assert_eq!(ms(" 1"), bad);
        assert_eq!(ms("1x"), bad);
    }

    #[test]
    fn block_requests_name_the_keys_waited_on() {
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect()
        };
        let (keys, t, _) = block_request(0, &args("BLPOP a b 0")).unwrap();
        assert_eq!(keys, [b"\x00a".to_vec(), b"\x00b".to_vec()]);
        assert_eq!(t, None);
        let (keys, t, _) = block_request(1, &args("blmove s d LEFT RIGHT 2")).unwrap();
        assert_eq!(keys, [b"\x01s".to_vec()]);
        assert_eq!(t, Some(Duration::from_secs(2)));
        let (keys, _, _) = block_request(0, &args("blmpop 1 2 x y left count 3")).unwrap();
        assert_eq!(keys, [b"\x00x".to_vec(), b"\x00y".to_vec()]);
        assert!(block_request(0, &args("lpop a")).is_none());
        assert!(block_request(0, &args("blmpop 1 5 x left")).is_none());
    }
}
