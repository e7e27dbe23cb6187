//! Keyspace commands: DEL, EXISTS, TYPE, expiry, KEYS/SCAN, DBSIZE,
//! RANDOMKEY, RENAME, COPY, FLUSHDB/FLUSHALL.
//!
//! Commands that walk a database iterate its key prefix (`keyspace.rs`)
//! and skip expired entries. DBSIZE is therefore O(keys), unlike Redis.

use batchkv::WriteBatch;
use bytes::Bytes;

use super::strings::tri;
use super::{
    not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, ALL_KEYS, KEY1, NO_KEYS, R,
    RS, W,
};
use crate::batcher::Shape;
use crate::errors::{
    invalid_expire_time, DB_OUT_OF_RANGE, INVALID_CURSOR, NO_SUCH_KEY, SAME_OBJECT,
};
use crate::keyspace::{
    db_key, decode_expiry_index_key, glob_match, live_entry, now_ms, EXPIRY_INDEX, NUM_DBS,
};
use crate::meta::{prefix_end, VERSIONED};
use crate::notify::{GENERIC, NEW};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// The keyspace commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("del", -2, W, ALL_KEYS, |s, c, a| del(s, c, a)),
    spec("unlink", -2, W, ALL_KEYS, |s, c, a| del(s, c, a)),
    spec("exists", -2, R, ALL_KEYS, |s, c, a| exists(s, c, a))
        .batched(|a| Some(Shape::Exists(a.len()))),
    spec("type", 2, R, KEY1, |s, c, a| type_of(s, c, a)).batched(|_| Some(Shape::Type)),
    spec("expire", -3, W, KEY1, |s, c, a| {
        expire(s, c, a, 1000, false, "expire")
    }),
    spec("pexpire", -3, W, KEY1, |s, c, a| {
        expire(s, c, a, 1, false, "pexpire")
    }),
    spec("expireat", -3, W, KEY1, |s, c, a| {
        expire(s, c, a, 1000, true, "expireat")
    }),
    spec("pexpireat", -3, W, KEY1, |s, c, a| {
        expire(s, c, a, 1, true, "pexpireat")
    }),
    spec("ttl", 2, R, KEY1, |s, c, a| ttl(s, c, a, TtlQuery::TTL))
        .batched(|_| Some(Shape::Ttl(TtlQuery::TTL))),
    spec("pttl", 2, R, KEY1, |s, c, a| ttl(s, c, a, TtlQuery::PTTL))
        .batched(|_| Some(Shape::Ttl(TtlQuery::PTTL))),
    spec("expiretime", 2, R, KEY1, |s, c, a| {
        ttl(s, c, a, TtlQuery::EXPIRETIME)
    })
    .batched(|_| Some(Shape::Ttl(TtlQuery::EXPIRETIME))),
    spec("pexpiretime", 2, R, KEY1, |s, c, a| {
        ttl(s, c, a, TtlQuery::PEXPIRETIME)
    })
    .batched(|_| Some(Shape::Ttl(TtlQuery::PEXPIRETIME))),
    spec("persist", 2, W, KEY1, |s, c, a| persist(s, c, a)),
    spec("keys", 2, RS, NO_KEYS, |s, c, a| keys(s, c, a)),
    spec("scan", -2, RS, NO_KEYS, |s, c, a| scan(s, c, a)),
    spec("dbsize", 1, R, NO_KEYS, |s, c, _| dbsize(s, c)),
    spec("randomkey", 1, RS, NO_KEYS, |s, c, _| randomkey(s, c)),
    spec("rename", 3, W, (1, 2, 1), |s, c, a| rename(s, c, a, false)),
    spec("renamenx", 3, W, (1, 2, 1), |s, c, a| rename(s, c, a, true)),
    spec("copy", -3, W, (1, 2, 1), |s, c, a| copy(s, c, a)),
    spec("flushdb", -1, W, NO_KEYS, |s, c, a| flush(s, Some(c.db), a)),
    spec("flushall", -1, W, NO_KEYS, |s, _, a| flush(s, None, a)),
];

pub fn del(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    let _g = shared.lock_keys(&keys);
    let mut b = WriteBatch::new();
    let mut deleted = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (k, r) in keys.iter().zip(shared.read_many(&keys)) {
        if let Some(v) = tri!(r) {
            if seen.insert(k) {
                deleted.push(k);
                if let Value::Coll(m) = v {
                    tri!(shared.drop_elements(&mut b, k, &m));
                }
                b.delete(k);
            }
        }
    }
    tri!(shared.write(b));
    for k in &deleted {
        shared.notify(GENERIC, "del", k);
    }
    Reply::Int(deleted.len() as i64)
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
    match tri!(shared.read_value(&db_key(conn.db, &a[0]))) {
        Some(v) => Reply::Simple(v.type_name()),
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
    let invalid = || invalid_expire_time(cmd);
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
    let Some(value) = tri!(shared.read_value(&key)) else {
        return Reply::Int(0);
    };
    let cur = value.expire_at();
    // No expiry counts as an infinite TTL for GT/LT (GT never applies to
    // it, LT always does).
    if (nx && cur.is_some())
        || (xx && cur.is_none())
        || (gt && cur.is_none_or(|c| at <= c as i64))
        || (lt && cur.is_some_and(|c| at >= c as i64))
    {
        return Reply::Int(0);
    }
    if at <= now {
        tri!(shared.delete(&key));
        shared.notify(GENERIC, "del", &key);
    } else {
        let mut b = WriteBatch::new();
        Shared::set_expiry(&mut b, &key, &value, Some(at as u64));
        tri!(shared.write(b));
        shared.notify(GENERIC, "expire", &key);
    }
    Reply::Int(1)
}

/// TTL/PTTL (`absolute` false) and EXPIRETIME/PEXPIRETIME (true).
/// What TTL, PTTL, EXPIRETIME and PEXPIRETIME answer of a key: its time
/// to live or its expiry time, in seconds or milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlQuery {
    millis: bool,
    absolute: bool,
}

impl TtlQuery {
    pub const TTL: TtlQuery = TtlQuery {
        millis: false,
        absolute: false,
    };
    pub const PTTL: TtlQuery = TtlQuery {
        millis: true,
        absolute: false,
    };
    pub const EXPIRETIME: TtlQuery = TtlQuery {
        millis: false,
        absolute: true,
    };
    pub const PEXPIRETIME: TtlQuery = TtlQuery {
        millis: true,
        absolute: true,
    };

    /// The reply for a key that is absent (`None`), has no expiry
    /// (`Some(None)`) or expires at `at` ms (`Some(Some(at))`), at `now`
    /// ms: -2, -1, or the time, seconds rounded to the nearest as Redis.
    pub fn answer(self, key: Option<Option<u64>>, now: u64) -> i64 {
        match key {
            None => -2,
            Some(None) => -1,
            Some(Some(at)) => {
                let ms = if self.absolute {
                    at as i64
                } else {
                    (at as i64 - now as i64).max(0)
                };
                // i128: rounding a time near i64::MAX must not wrap.
                if self.millis {
                    ms
                } else {
                    ((i128::from(ms) + 500) / 1000) as i64
                }
            }
        }
    }
}

pub fn ttl(shared: &Shared, conn: &ConnState, a: &[Bytes], q: TtlQuery) -> Reply {
    let key = tri!(shared.read_value(&db_key(conn.db, &a[0]))).map(|v| v.expire_at());
    Reply::Int(q.answer(key, now_ms()))
}

pub fn persist(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    match tri!(shared.read_value(&key)) {
        Some(v) if v.expire_at().is_some() => {
            let mut b = WriteBatch::new();
            Shared::set_expiry(&mut b, &key, &v, None);
            tri!(shared.write(b));
            shared.notify(GENERIC, "persist", &key);
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}

/// Walks the live keys of `db` from user key `from`, calling
/// `f(key, type name)` until it returns false. Returns the user key it stopped before (the
/// next one not visited), if any.
fn walk(
    shared: &Shared,
    db: u8,
    from: &[u8],
    mut f: impl FnMut(&[u8], &str) -> bool,
) -> Result<Option<Vec<u8>>, Reply> {
    let now = now_ms();
    let (mut stopped, mut next) = (false, None);
    shared.scan(&db_key(db, from), &[db + 1], false, false, |k, v| {
        if stopped {
            next = Some(k[1..].to_vec());
            return false;
        }
        if let Ok(Some(e)) = live_entry(v, now) {
            stopped = !f(&k[1..], e.type_name());
        }
        true
    })?;
    Ok(next)
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
    tri!(walk(shared, conn.db, prefix, |k, _| {
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
        return Reply::err(INVALID_CURSOR);
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
    // Any number resumes somewhere (`cursors.rs`), as in Redis.
    let from = if cursor == 0 {
        Vec::new()
    } else {
        shared.resume_cursor(&[conn.db], cursor)
    };
    let mut seen = 0i64;
    let mut out = Vec::new();
    let next = tri!(walk(shared, conn.db, &from, |k, ty| {
        seen += 1;
        if type_filter.as_deref().is_none_or(|t| t == ty.as_bytes())
            && pattern.is_none_or(|p| glob_match(p, k))
        {
            out.push(Reply::bulk(Bytes::copy_from_slice(k)));
        }
        seen < count
    }));
    let next_cursor = match next {
        Some(k) => shared.save_cursor(&[conn.db], k),
        None => 0,
    };
    Reply::Array(vec![
        Reply::bulk(Bytes::from(next_cursor.to_string())),
        Reply::Array(out),
    ])
}

pub fn dbsize(shared: &Shared, conn: &ConnState) -> Reply {
    Reply::Int(tri!(shared.key_count(conn.db)).keys as i64)
}

/// RANDOMKEY: one of the keys near a random point of the database's key
/// range.
///
/// The engine cannot pick the n-th key, so RANDOMKEY draws a point
/// uniformly between the first and last key (as numbers: the 8 bytes
/// after their common prefix), reads the [`RANDOMKEY_WINDOW`] live keys
/// from it on (wrapping to the first key), and picks one of them
/// uniformly. A database of at most that many keys gets a uniform pick; in
/// a larger one a key's chance follows the key space in front of the keys
/// before it, averaged over the window, so keys numbered in decimal (whose
/// byte gaps jump at every carry) still come out evenly. Redis's pick is
/// not exactly uniform either (a random bucket, then a random key of it).
pub fn randomkey(shared: &Shared, conn: &ConnState) -> Reply {
    let db = conn.db;
    let (lo, hi) = (db_key(db, b""), [db + 1]);
    let Some(first) = tri!(live_keys(shared, &lo, &hi, false, 1)).pop() else {
        return Reply::Nil;
    };
    let last = tri!(live_keys(shared, &lo, &hi, true, 1))
        .pop()
        .unwrap_or_else(|| first.clone());
    let point = random_between(&first, &last);
    let mut window = tri!(live_keys(shared, &point, &hi, false, RANDOMKEY_WINDOW));
    if window.len() < RANDOMKEY_WINDOW {
        let more = RANDOMKEY_WINDOW - window.len();
        window.extend(tri!(live_keys(shared, &lo, &point, false, more)));
    }
    if window.is_empty() {
        // Every key expired between the reads.
        return Reply::Nil;
    }
    let k = &window[rand::random::<u64>() as usize % window.len()];
    Reply::bulk(Bytes::from(k[1..].to_vec()))
}

/// How many keys RANDOMKEY picks among.
const RANDOMKEY_WINDOW: usize = 64;

/// A stored key drawn uniformly between stored keys `a <= b`: their
/// common prefix, then the next 8 bytes as a number between theirs.
fn random_between(a: &[u8], b: &[u8]) -> Vec<u8> {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let word = |k: &[u8]| {
        let mut w = [0u8; 8];
        let tail = &k[common..];
        let n = tail.len().min(8);
        w[..n].copy_from_slice(&tail[..n]);
        u64::from_be_bytes(w)
    };
    let (x, y) = (word(a), word(b));
    let r = match (y.saturating_sub(x)).checked_add(1) {
        Some(span) => x + rand::random::<u64>() % span,
        // The whole u64 range.
        None => rand::random::<u64>(),
    };
    let mut out = a[..common].to_vec();
    out.extend_from_slice(&r.to_be_bytes());
    out
}

/// The first (or, `reverse`, last) `max` live stored keys in `[lo, hi)`.
fn live_keys(
    shared: &Shared,
    lo: &[u8],
    hi: &[u8],
    reverse: bool,
    max: usize,
) -> Result<Vec<Vec<u8>>, Reply> {
    let now = now_ms();
    let mut found = Vec::new();
    shared.scan(lo, hi, reverse, false, |k, v| {
        if let Ok(Some(_)) = live_entry(v, now) {
            found.push(k.to_vec());
        }
        found.len() < max
    })?;
    Ok(found)
}

pub fn rename(shared: &Shared, conn: &ConnState, a: &[Bytes], nx: bool) -> Reply {
    let src = db_key(conn.db, &a[0]);
    let dst = db_key(conn.db, &a[1]);
    let _g = shared.lock_keys(&[&src, &dst]);
    let Some(value) = tri!(shared.read_value(&src)) else {
        return Reply::err(NO_SUCH_KEY);
    };
    if src == dst {
        return if nx { Reply::Int(0) } else { Reply::ok() };
    }
    if nx && tri!(shared.read_value(&dst)).is_some() {
        return Reply::Int(0);
    }
    let replaces = !nx && shared.notifies(NEW) && tri!(shared.read_value(&dst)).is_some();
    tri!(shared.move_value(&src, &value, &dst));
    // Redis adds the destination (deleting an old one first: `new`
    // either way) before it publishes on the source.
    shared.publish_held_of(&dst);
    if replaces {
        shared.notify(NEW, "new", &dst);
    }
    shared.notify(GENERIC, "rename_from", &src);
    shared.notify(GENERIC, "rename_to", &dst);
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
                    Some(_) => return Reply::err(DB_OUT_OF_RANGE),
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
        return Reply::err(SAME_OBJECT);
    }
    let _g = shared.lock_keys(&[&src, &dst]);
    let Some(value) = tri!(shared.read_value(&src)) else {
        return Reply::Int(0);
    };
    let replaces = tri!(shared.read_value(&dst)).is_some();
    if !replace && replaces {
        return Reply::Int(0);
    }
    let mut b = WriteBatch::new();
    tri!(shared.clear_old(&mut b, &dst));
    tri!(shared.copy_value(&mut b, &src, &value, &dst, value.expire_at()));
    tri!(shared.write(b));
    shared.blocking.signal(&dst);
    if replaces {
        // Redis deletes the old destination and adds it anew.
        shared.notify(NEW, "new", &dst);
    }
    shared.notify(GENERIC, "copy_to", &dst);
    Reply::Int(1)
}

/// FLUSHDB (`db` Some) or FLUSHALL (None): one write of range deletions
/// (the database's keys, its collections' elements) and the deletion of
/// its expiry-index entries. ASYNC/SYNC are accepted; the deletion is
/// always synchronous. Holds every key stripe, so no write or EXEC
/// interleaves with it.
pub fn flush(shared: &Shared, db: Option<u8>, a: &[Bytes]) -> Reply {
    match a {
        [] => {}
        [m] if m.eq_ignore_ascii_case(b"async") || m.eq_ignore_ascii_case(b"sync") => {}
        _ => return syntax_error(),
    }
    let _g = shared.lock_all();
    let mut b = WriteBatch::new();
    for first in VERSIONED {
        let (lo, hi) = match db {
            Some(d) => (vec![first, d], prefix_end(&[first, d])),
            None => (vec![first], vec![first + 1]),
        };
        b.delete_range(lo, hi);
    }
    match db {
        Some(d) => {
            b.delete_range([d], [d + 1]);
            // The index is sorted by time, not database, so FLUSHDB reads
            // all of it: O(entries).
            tri!(shared.scan(
                &[EXPIRY_INDEX],
                &[EXPIRY_INDEX + 1],
                false,
                false,
                |k, _| {
                    if decode_expiry_index_key(k).is_some_and(|(_, key)| key.first() == Some(&d)) {
                        b.delete(k);
                    }
                    true
                }
            ));
        }
        None => {
            b.delete_range([0u8], [NUM_DBS as u8]);
            b.delete_range([EXPIRY_INDEX], [EXPIRY_INDEX + 1]);
        }
    }
    // Blocked XREADGROUP clients of the flushed streams answer UNBLOCKED.
    match db {
        Some(d) => shared.signal_dbs_after_write(&[d]),
        None => shared.signal_dbs_after_write(&(0..NUM_DBS as u8).collect::<Vec<_>>()),
    }
    tri!(shared.write(b));
    Reply::ok()
}

#[cfg(test)]
mod tests {
    use super::TtlQuery;

    #[test]
    fn ttl_answers_round_seconds_to_the_nearest_as_redis() {
        let now = 1_000_000;
        for (q, want) in [
            (TtlQuery::TTL, [-2, -1, 2, 1, 0]),
            (TtlQuery::PTTL, [-2, -1, 1_500, 1_499, 0]),
            (TtlQuery::EXPIRETIME, [-2, -1, 1_002, 1_001, 999]),
            (
                TtlQuery::PEXPIRETIME,
                [-2, -1, 1_001_500, 1_001_499, 999_000],
            ),
        ] {
            let got = [
                None,
                Some(None),
                Some(Some(now + 1_500)),
                Some(Some(now + 1_499)),
                Some(Some(now - 1_000)), // already past: 0 left
            ]
            .map(|k| q.answer(k, now));
            assert_eq!(got, want, "{q:?}");
        }
        // Near i64::MAX the rounding does not wrap.
        let far = Some(Some(i64::MAX as u64));
        assert_eq!(TtlQuery::EXPIRETIME.answer(far, 0), i64::MAX / 1000 + 1);
    }
}
