//! Keyspace commands: DEL, EXISTS, TYPE, expiry, KEYS/SCAN, DBSIZE,
//! RANDOMKEY, RENAME, COPY, FLUSHDB/FLUSHALL.
//!
//! Commands that walk a database iterate its key prefix (`keyspace.rs`)
//! and skip expired entries. DBSIZE is therefore O(keys), unlike Redis.

use batchkv::{ReadOptions, WriteBatch};
use bytes::Bytes;

use super::strings::tri;
use super::{not_integer, parse_int, syntax_error, ConnState};
use crate::keyspace::{
    db_key, decode_expiry_index_key, glob_match, live_value, now_ms, put_value, EXPIRY_INDEX,
    NUM_DBS,
};
use crate::resp::Reply;
use crate::server::Shared;

/// Keys deleted per write batch by FLUSHDB.
const FLUSH_CHUNK: usize = 10_000;

pub fn del(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    let _g = shared.lock_keys(&keys);
    let mut b = WriteBatch::new();
    let mut n = 0;
    let mut seen = std::collections::HashSet::new();
    for (k, r) in keys.iter().zip(shared.read_many(&keys)) {
        if tri!(r).is_some() && seen.insert(k) {
            n += 1;
            b.delete(k);
        }
    }
    tri!(shared.write(b));
    Reply::Int(n)
}

pub fn exists(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    let mut n = 0;
    for r in shared.read_many(&keys) {
        if tri!(r).is_some() {
            n += 1;
        }
    }
    Reply::Int(n)
}

pub fn type_of(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    match tri!(shared.read(&db_key(conn.db, &a[0]))) {
        Some(_) => Reply::Simple("string"),
        None => Reply::Simple("none"),
    }
}

pub fn expire(
    shared: &Shared,
    conn: &ConnState,
    a: &[Bytes],
    unit: i64,
    absolute: bool,
    cmd: &str,
) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for o in &a[2..] {
        match o.to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return Reply::Error(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(o)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_int(&a[1]) else {
        return not_integer();
    };
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{cmd}' command"));
    let Some(ms) = n.checked_mul(unit) else {
        return invalid();
    };
    let now = now_ms() as i64;
    let at = if absolute {
        ms
    } else {
        match ms.checked_add(now) {
            Some(t) => t,
            None => return invalid(),
        }
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some((cur, data)) = tri!(shared.read(&key)) else {
        return Reply::Int(0);
    };
    // No expiry counts as an infinite TTL for GT/LT.
    let cur_ttl = cur.map_or(i64::MAX, |c| c as i64);
    if (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && at <= cur_ttl)
        || (lt && at >= cur_ttl)
    {
        return Reply::Int(0);
    }
    if at <= now {
        tri!(shared.delete(&key));
    } else {
        tri!(shared.put(&key, &data, Some(at as u64)));
    }
    Reply::Int(1)
}

/// TTL/PTTL (`absolute` false) and EXPIRETIME/PEXPIRETIME (true).
pub fn ttl(shared: &Shared, conn: &ConnState, a: &[Bytes], unit: i64, absolute: bool) -> Reply {
    match tri!(shared.read(&db_key(conn.db, &a[0]))) {
        None => Reply::Int(-2),
        Some((None, _)) => Reply::Int(-1),
        Some((Some(at), _)) => {
            let ms = if absolute {
                at as i64
            } else {
                (at as i64 - now_ms() as i64).max(0)
            };
            Reply::Int(if unit == 1 { ms } else { (ms + 500) / 1000 })
        }
    }
}

pub fn persist(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    match tri!(shared.read(&key)) {
        Some((Some(_), data)) => {
            tri!(shared.put(&key, &data, None));
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}

/// Walks the live keys of `db` from user key `from`, calling `f(key)`
/// until it returns false. Returns the user key it stopped before (the
/// next one not visited), if any.
fn walk(
    shared: &Shared,
    db: u8,
    from: &[u8],
    mut f: impl FnMut(&[u8]) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    let opts = scan_options(db);
    let mut it = shared.db.iter(&opts).map_err(super::engine_error)?;
    it.seek(db_key(db, from));
    let now = now_ms();
    while it.valid() {
        let live = matches!(live_value(it.value(), now), Ok(Some(_)));
        if live && !f(&it.key()[1..]) {
            it.next();
            return Ok(it.valid().then(|| it.key()[1..].to_vec()));
        }
        it.next();
    }
    it.status().map_err(super::engine_error)?;
    Ok(None)
}

/// The literal bytes a glob pattern must start with.
fn literal_prefix(pat: &[u8]) -> &[u8] {
    let end = pat
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pat.len());
    &pat[..end]
}

pub fn keys(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let pat = &a[0];
    let prefix = literal_prefix(pat);
    let mut out = Vec::new();
    tri!(walk(shared, conn.db, prefix, |k| {
        if !k.starts_with(prefix) {
            return false;
        }
        if glob_match(pat, k) {
            out.push(Reply::bulk(Bytes::copy_from_slice(k)));
        }
        true
    }));
    Reply::Array(out)
}

pub fn scan(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(cursor) = std::str::from_utf8(&a[0])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return Reply::err("ERR invalid cursor");
    };
    let mut pattern: Option<&Bytes> = None;
    let mut count: i64 = 10;
    let mut type_filter: Option<Vec<u8>> = None;
    let mut i = 1;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return syntax_error();
        };
        match a[i].to_ascii_uppercase().as_slice() {
            b"MATCH" => pattern = Some(v),
            b"COUNT" => match parse_int(v) {
                Some(n) if n >= 1 => count = n,
                Some(_) => return syntax_error(),
                None => return not_integer(),
            },
            b"TYPE" => type_filter = Some(v.to_ascii_lowercase()),
            _ => return syntax_error(),
        }
        i += 2;
    }
    let from = if cursor == 0 {
        Vec::new()
    } else {
        match shared.load_cursor(conn.db, cursor) {
            Some(k) => k,
            None => return Reply::err("ERR invalid cursor"),
        }
    };
    let want_strings = type_filter.as_deref().is_none_or(|t| t == b"string");
    let mut seen = 0i64;
    let mut out = Vec::new();
    let next = tri!(walk(shared, conn.db, &from, |k| {
        seen += 1;
        if want_strings && pattern.is_none_or(|p| glob_match(p, k)) {
            out.push(Reply::bulk(Bytes::copy_from_slice(k)));
        }
        seen < count
    }));
    let next_cursor = match next {
        Some(k) => shared.save_cursor(conn.db, k),
        None => 0,
    };
    Reply::Array(vec![
        Reply::bulk(Bytes::from(next_cursor.to_string())),
        Reply::Array(out),
    ])
}

pub fn dbsize(shared: &Shared, conn: &ConnState) -> Reply {
    let mut n = 0;
    tri!(walk(shared, conn.db, b"", |_| {
        n += 1;
        true
    }));
    Reply::Int(n)
}

/// Reads every key of database `db` (its one-byte prefix) without filling
/// the block cache.
/// Iterates the keys whose first byte is `db` (a database, or the expiry
/// index).
fn scan_options(db: u8) -> ReadOptions {
    ReadOptions {
        lower_bound: Some(vec![db]),
        upper_bound: Some(vec![db + 1]),
        fill_cache: false,
        ..Default::default()
    }
}

/// Number of live keys in `db` (INFO keyspace).
pub fn count_keys(shared: &Shared, db: u8) -> Result<(u64, u64), Reply> {
    let (mut n, mut with_ttl) = (0u64, 0u64);
    let opts = scan_options(db);
    let mut it = shared.db.iter(&opts).map_err(super::engine_error)?;
    it.seek(vec![db]);
    let now = now_ms();
    while it.valid() {
        if let Ok(Some(d)) = live_value(it.value(), now) {
            n += 1;
            with_ttl += u64::from(d.expire_at.is_some());
        }
        it.next();
    }
    Ok((n, with_ttl))
}

pub fn randomkey(shared: &Shared, conn: &ConnState) -> Reply {
    let start: [u8; 8] = rand::random();
    let mut found = None;
    for from in [&start[..], b""] {
        tri!(walk(shared, conn.db, from, |k| {
            found = Some(k.to_vec());
            false
        }));
        if found.is_some() {
            break;
        }
    }
    match found {
        Some(k) => Reply::bulk(Bytes::from(k)),
        None => Reply::Nil,
    }
}

pub fn rename(shared: &Shared, conn: &ConnState, a: &[Bytes], nx: bool) -> Reply {
    let src = db_key(conn.db, &a[0]);
    let dst = db_key(conn.db, &a[1]);
    let _g = shared.lock_keys(&[&src, &dst]);
    let Some((exp, data)) = tri!(shared.read(&src)) else {
        return Reply::err("ERR no such key");
    };
    if src == dst {
        return if nx { Reply::Int(0) } else { Reply::ok() };
    }
    if nx && tri!(shared.read(&dst)).is_some() {
        return Reply::Int(0);
    }
    let mut b = WriteBatch::new();
    b.delete(&src);
    put_value(&mut b, &dst, &data, exp);
    tri!(shared.write(b));
    if nx {
        Reply::Int(1)
    } else {
        Reply::ok()
    }
}

pub fn copy(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let mut dst_db = conn.db;
    let mut replace = false;
    let mut i = 2;
    while i < a.len() {
        match a[i].to_ascii_uppercase().as_slice() {
            b"REPLACE" => replace = true,
            b"DB" if i + 1 < a.len() => {
                match parse_int(&a[i + 1]) {
                    Some(n) if (0..NUM_DBS as i64).contains(&n) => dst_db = n as u8,
                    Some(_) => return Reply::err("ERR DB index is out of range"),
                    None => return not_integer(),
                }
                i += 1;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    let src = db_key(conn.db, &a[0]);
    let dst = db_key(dst_db, &a[1]);
    if src == dst {
        return Reply::err("ERR source and destination objects are the same");
    }
    let _g = shared.lock_keys(&[&src, &dst]);
    let Some((exp, data)) = tri!(shared.read(&src)) else {
        return Reply::Int(0);
    };
    if !replace && tri!(shared.read(&dst)).is_some() {
        return Reply::Int(0);
    }
    tri!(shared.put(&dst, &data, exp));
    Reply::Int(1)
}

/// FLUSHDB (`db` Some) or FLUSHALL (None). ASYNC/SYNC are accepted; the
/// deletion is always synchronous.
pub fn flush(shared: &Shared, db: Option<u8>, a: &[Bytes]) -> Reply {
    match a {
        [] => {}
        [m] if m.eq_ignore_ascii_case(b"async") || m.eq_ignore_ascii_case(b"sync") => {}
        _ => return syntax_error(),
    }
    // Ranges to empty, by first byte, and for the expiry index the
    // database whose entries go (None: all). The index is sorted by time,
    // not database, so FLUSHDB reads all of it: O(entries), like the flush
    // of the database itself.
    let ranges: Vec<(u8, Option<u8>)> = match db {
        Some(d) => vec![(d, None), (EXPIRY_INDEX, Some(d))],
        None => (0..NUM_DBS as u8)
            .map(|d| (d, None))
            .chain([(EXPIRY_INDEX, None)])
            .collect(),
    };
    for (first, only_db) in ranges {
        let mut it = tri!(shared
            .db
            .iter(&scan_options(first))
            .map_err(super::engine_error));
        it.seek(vec![first]);
        let mut b = WriteBatch::new();
        let mut n = 0;
        while it.valid() {
            let doomed = only_db.is_none_or(|d| {
                decode_expiry_index_key(it.key()).is_some_and(|(_, k)| k.first() == Some(&d))
            });
            if doomed {
                b.delete(it.key());
                n += 1;
                if n == FLUSH_CHUNK {
                    tri!(shared.write(std::mem::take(&mut b)));
                    n = 0;
                }
            }
            it.next();
        }
        tri!(it.status().map_err(super::engine_error));
        tri!(shared.write(b));
    }
    Reply::ok()
}
