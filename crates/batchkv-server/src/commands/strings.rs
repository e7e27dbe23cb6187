//! String commands: GET/SET and their variants, MGET/MSET, APPEND,
//! ranges, counters. Writers hold the key's stripe lock from read to write
//! (see `server.rs`).

use batchkv::WriteBatch;
use bytes::Bytes;

use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, R, W, WM};
use crate::batcher::Shape;
use crate::errors::{invalid_expire_time, INCR_OVERFLOW, NAN_OR_INFINITY, NOT_FLOAT};
use crate::keyspace::{db_key, encode_value, now_ms};
use crate::ldouble::LDouble;
use crate::notify::{GENERIC, STRING};
use crate::resp::Reply;
use crate::shared::{Live, Shared, Value};

/// Redis's `checkStringLength`: whether a string of `len + added` bytes
/// fits `proto-max-bulk-len` (at most the longest value stored,
/// `keyspace::MAX_VALUE_LEN`). Called before anything of that size is
/// allocated.
pub(super) fn check_string_length(shared: &Shared, len: u64, added: u64) -> Result<(), Reply> {
    match len.checked_add(added) {
        Some(total) if total <= shared.settings.proto_max_bulk_len() as u64 => Ok(()),
        _ => Err(Reply::err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        )),
    }
}

/// The string commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("get", 2, R, KEY1, |s, c, a| get(s, c, a)).batched(|_| Some(Shape::Get)),
    spec("mget", -2, R, super::ALL_KEYS, |s, c, a| mget(s, c, a))
        .batched(|a| Some(Shape::Mget(a.len()))),
    spec("set", -3, WM, KEY1, |s, c, a| set(s, c, a)),
    spec("setnx", 3, WM, KEY1, |s, c, a| setnx(s, c, a)),
    spec("setex", 4, WM, KEY1, |s, c, a| {
        setex(s, c, a, 1000, "setex")
    }),
    spec("psetex", 4, WM, KEY1, |s, c, a| setex(s, c, a, 1, "psetex")),
    spec("getdel", 2, W, KEY1, |s, c, a| getdel(s, c, a)),
    spec("getset", 3, WM, KEY1, |s, c, a| getset(s, c, a)),
    spec("getex", -2, W, KEY1, |s, c, a| getex(s, c, a)),
    spec("mset", -3, WM, (1, -1, 2), |s, c, a| mset(s, c, a, false)),
    spec("msetnx", -3, WM, (1, -1, 2), |s, c, a| mset(s, c, a, true)),
    spec("append", 3, WM, KEY1, |s, c, a| append(s, c, a)),
    spec("strlen", 2, R, KEY1, |s, c, a| strlen(s, c, a)).batched(|_| Some(Shape::StrLen)),
    spec("getrange", 4, super::RS, KEY1, |s, c, a| getrange(s, c, a)).batched(getrange_shape),
    spec("substr", 4, super::RS, KEY1, |s, c, a| getrange(s, c, a)).batched(getrange_shape),
    spec("setrange", 4, WM, KEY1, |s, c, a| setrange(s, c, a)),
    spec("incr", 2, WM, KEY1, |s, c, a| incr_by(s, c, &a[0], Some(1))),
    spec("decr", 2, WM, KEY1, |s, c, a| {
        incr_by(s, c, &a[0], Some(-1))
    }),
    spec("incrby", 3, WM, KEY1, |s, c, a| {
        incr_by(s, c, &a[0], parse_int(&a[1]))
    }),
    spec("decrby", 3, WM, KEY1, |s, c, a| match parse_int(&a[1]) {
        Some(i64::MIN) => Reply::err("ERR decrement would overflow"),
        by => incr_by(s, c, &a[0], by.map(|b| -b)),
    }),
    spec("incrbyfloat", 3, WM, KEY1, |s, c, a| incr_by_float(s, c, a)),
];

fn bulk_or_nil(v: Live) -> Reply {
    match v {
        Some((_, data)) => Reply::Bulk(Bytes::from(data)),
        None => Reply::Nil,
    }
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(reply) => return reply,
        }
    };
}
pub(super) use tri;

/// Parses an expiry argument into an absolute time in ms. `unit_ms` is
/// 1000 for seconds, 1 for ms; `absolute` for EXAT/PXAT.
pub(super) fn expire_at(v: &[u8], unit_ms: i64, absolute: bool, cmd: &str) -> Result<u64, Reply> {
    let invalid = || invalid_expire_time(cmd);
    let n = parse_int(v).ok_or_else(not_integer)?;
    if n <= 0 {
        return Err(invalid());
    }
    let ms = n.checked_mul(unit_ms).ok_or_else(invalid)?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms() as i64).ok_or_else(invalid)?
    };
    Ok(at as u64)
}

pub fn get(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    bulk_or_nil(tri!(shared.read(&db_key(conn.db, &a[0]))))
}

pub fn mget(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    Reply::Array(
        shared
            .read_many(&keys)
            .into_iter()
            .map(|r| match r {
                Ok(Some(Value::Str(_, d))) => Reply::Bulk(Bytes::from(d)),
                // MGET answers nil for a key that is not a string.
                Ok(None | Some(Value::Coll(_))) => Reply::Nil,
                Err(e) => e,
            })
            .collect(),
    )
}

/// The expiry part of SET/GETEX.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// SET without expiry options: clear it.
    Clear,
    Keep,
    At(u64),
}

/// Which expiry option: EX, PX, EXAT or PXAT.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpiryOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// The options of SET or GETEX, before the expiry's value is checked.
#[derive(Default)]
struct StringOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    /// The last EX/PX/EXAT/PXAT and its unchecked value.
    expiry: Option<(ExpiryOpt, &'a [u8])>,
}

/// Parses SET's (`set`) or GETEX's options as Redis does: an option may
/// repeat (the last expiry value wins), NX with XX or two different expiry
/// options (or one with KEEPTTL/PERSIST) are a syntax error, and the
/// expiry's value is not looked at here ([`StringOpts::expire_at`]), so a
/// syntax error anywhere comes first.
fn parse_string_opts(opts: &[Bytes], set: bool) -> Result<StringOpts<'_>, Reply> {
    let mut o = StringOpts::default();
    let mut i = 0;
    while i < opts.len() {
        let opt = opts[i].to_ascii_uppercase();
        let kind = match opt.as_slice() {
            b"EX" => Some(ExpiryOpt::Ex),
            b"PX" => Some(ExpiryOpt::Px),
            b"EXAT" => Some(ExpiryOpt::ExAt),
            b"PXAT" => Some(ExpiryOpt::PxAt),
            _ => None,
        };
        let other_expiry = |k: ExpiryOpt| o.expiry.is_some_and(|(e, _)| e != k);
        match (opt.as_slice(), kind, opts.get(i + 1)) {
            (b"NX", ..) if set && !o.xx => o.nx = true,
            (b"XX", ..) if set && !o.nx => o.xx = true,
            (b"GET", ..) if set => o.get = true,
            (b"KEEPTTL", ..) if set && o.expiry.is_none() => o.keep_ttl = true,
            (b"PERSIST", ..) if !set && o.expiry.is_none() => o.persist = true,
            (_, Some(k), Some(v)) if !o.keep_ttl && !o.persist && !other_expiry(k) => {
                o.expiry = Some((k, v));
                i += 1;
            }
            _ => return Err(syntax_error()),
        }
        i += 1;
    }
    Ok(o)
}

impl StringOpts<'_> {
    /// The expiry option's absolute time in ms (`None` without one), or
    /// the error for an invalid value.
    fn expire_at(&self, cmd: &str) -> Result<Option<u64>, Reply> {
        let Some((kind, v)) = self.expiry else {
            return Ok(None);
        };
        let (unit, absolute) = match kind {
            ExpiryOpt::Ex => (1000, false),
            ExpiryOpt::Px => (1, false),
            ExpiryOpt::ExAt => (1000, true),
            ExpiryOpt::PxAt => (1, true),
        };
        expire_at(v, unit, absolute, cmd).map(Some)
    }
}

pub fn set(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let opts = tri!(parse_string_opts(&a[2..], true));
    let ttl = match tri!(opts.expire_at("set")) {
        Some(at) => Ttl::At(at),
        None if opts.keep_ttl => Ttl::Keep,
        None => Ttl::Clear,
    };
    let (nx, xx, get) = (opts.nx, opts.xx, opts.get);
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    // Any type counts for NX/XX and KEEPTTL; GET needs a string.
    let old = if nx || xx || get || ttl == Ttl::Keep {
        tri!(shared.read_value(&key))
    } else {
        None
    };
    if get && matches!(old, Some(Value::Coll(_))) {
        return crate::errors::wrong_type();
    }
    let old_reply = |old: Option<Value>| match old {
        Some(Value::Str(_, d)) if get => Reply::Bulk(Bytes::from(d)),
        _ => Reply::Nil,
    };
    if (nx && old.is_some()) || (xx && old.is_none()) {
        return old_reply(old);
    }
    let exp = match ttl {
        Ttl::Clear => None,
        Ttl::Keep => old.as_ref().and_then(Value::expire_at),
        Ttl::At(t) => Some(t),
    };
    tri!(shared.put(&key, &a[1], exp));
    notify_set(shared, &key, matches!(ttl, Ttl::At(_)));
    if get {
        old_reply(old)
    } else {
        Reply::ok()
    }
}

/// The keyspace notifications of a SET (and SETNX, SETEX, ...): `set`,
/// then `expire` if it gave an expiry.
fn notify_set(shared: &Shared, key: &[u8], expiry: bool) {
    shared.notify(STRING, "set", key);
    if expiry {
        shared.notify(GENERIC, "expire", key);
    }
}

pub fn setnx(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    if tri!(shared.read_value(&key)).is_some() {
        return Reply::Int(0);
    }
    tri!(shared.put(&key, &a[1], None));
    notify_set(shared, &key, false);
    Reply::Int(1)
}

pub fn setex(shared: &Shared, conn: &ConnState, a: &[Bytes], unit: i64, cmd: &str) -> Reply {
    let at = tri!(expire_at(&a[1], unit, false, cmd));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    tri!(shared.put(&key, &a[2], Some(at)));
    notify_set(shared, &key, true);
    Reply::ok()
}

pub fn getdel(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    if old.is_some() {
        tri!(shared.delete(&key));
        shared.notify(GENERIC, "del", &key);
    }
    bulk_or_nil(old)
}

pub fn getset(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    tri!(shared.put(&key, &a[1], None));
    shared.notify(STRING, "set", &key);
    bulk_or_nil(old)
}

/// GETEX. As in Redis, the expiry's value is checked only when the key
/// holds a string: a missing key answers nil, another type WRONGTYPE.
pub fn getex(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let opts = tri!(parse_string_opts(&a[1..], false));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    let Some((exp, data)) = &old else {
        return Reply::Nil;
    };
    let new_exp = match tri!(opts.expire_at("getex")) {
        Some(at) => Some(Some(at)),
        None if opts.persist => Some(None),
        None => None,
    };
    if let Some(new_exp) = new_exp {
        if *exp != new_exp {
            tri!(shared.put(&key, data, new_exp));
        }
        // As Redis: EX/PX `expire` even if unchanged, PERSIST only if it
        // removed an expiry, an EXAT/PXAT already past `del`.
        match new_exp {
            Some(at) if at <= now_ms() => shared.notify(GENERIC, "del", &key),
            Some(_) => shared.notify(GENERIC, "expire", &key),
            None if exp.is_some() => shared.notify(GENERIC, "persist", &key),
            None => {}
        }
    }
    bulk_or_nil(old)
}

pub fn mset(shared: &Shared, conn: &ConnState, a: &[Bytes], nx: bool) -> Reply {
    if !a.len().is_multiple_of(2) {
        return super::wrong_arity(if nx { "msetnx" } else { "mset" });
    }
    let keys: Vec<Vec<u8>> = a.chunks(2).map(|p| db_key(conn.db, &p[0])).collect();
    let _g = shared.lock_keys(&keys);
    if nx {
        for r in shared.read_many(&keys) {
            if tri!(r).is_some() {
                return Reply::Int(0);
            }
        }
    }
    let mut b = WriteBatch::new();
    tri!(shared.clear_old_many(&mut b, &keys));
    for (k, p) in keys.iter().zip(a.chunks(2)) {
        b.put(k, encode_value(&p[1], None));
    }
    tri!(shared.write(b));
    for k in &keys {
        shared.notify(STRING, "set", k);
    }
    if nx {
        Reply::Int(1)
    } else {
        Reply::ok()
    }
}

pub fn append(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let (exp, mut data) = tri!(shared.read(&key)).unwrap_or((None, Vec::new()));
    tri!(check_string_length(
        shared,
        data.len() as u64,
        a[1].len() as u64
    ));
    data.extend_from_slice(&a[1]);
    tri!(shared.put(&key, &data, exp));
    shared.notify(STRING, "append", &key);
    Reply::Int(data.len() as i64)
}

pub fn strlen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let v = tri!(shared.read(&db_key(conn.db, &a[0])));
    Reply::Int(v.map_or(0, |(_, d)| d.len() as i64))
}

pub fn getrange(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (Some(start), Some(end)) = (parse_int(&a[1]), parse_int(&a[2])) else {
        return not_integer();
    };
    let data = tri!(shared.read(&db_key(conn.db, &a[0]))).map_or(Vec::new(), |(_, d)| d);
    Reply::bulk(Bytes::copy_from_slice(substring(&data, start, end)))
}

/// GETRANGE's batched shape: both indexes integers (otherwise it runs
/// alone and answers the error).
fn getrange_shape(a: &[Bytes]) -> Option<Shape> {
    let (start, end) = (parse_int(&a[1])?, parse_int(&a[2])?);
    Some(Shape::GetRange { start, end })
}

/// The bytes of `data` GETRANGE answers for `start` and `end`
/// (inclusive; negative from the end, clamped to the string, as Redis).
pub(crate) fn substring(data: &[u8], mut start: i64, mut end: i64) -> &[u8] {
    let len = data.len() as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return &[];
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0).min(len - 1);
    if start > end {
        return &[];
    }
    &data[start as usize..=end as usize]
}

pub fn setrange(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(offset) = parse_int(&a[1]) else {
        return not_integer();
    };
    if offset < 0 {
        return Reply::err("ERR offset is out of range");
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    let piece = &a[2];
    if piece.is_empty() {
        return Reply::Int(old.map_or(0, |(_, d)| d.len() as i64));
    }
    // `offset` is at most 2^63-1: the sum cannot overflow a u64, and once
    // checked the end fits the value limit (and a usize).
    tri!(check_string_length(
        shared,
        offset as u64,
        piece.len() as u64
    ));
    let (exp, mut data) = old.unwrap_or((None, Vec::new()));
    let end = offset as usize + piece.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(piece);
    tri!(shared.put(&key, &data, exp));
    shared.notify(STRING, "setrange", &key);
    Reply::Int(data.len() as i64)
}

pub fn incr_by(shared: &Shared, conn: &ConnState, key: &[u8], by: Option<i64>) -> Reply {
    let Some(by) = by else {
        return not_integer();
    };
    let key = db_key(conn.db, key);
    let _g = shared.lock_keys(&[&key]);
    let (exp, cur) = match tri!(shared.read(&key)) {
        None => (None, 0),
        Some((exp, d)) => match parse_int(&d) {
            Some(n) => (exp, n),
            None => return not_integer(),
        },
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err(INCR_OVERFLOW);
    };
    tri!(shared.put(&key, n.to_string().as_bytes(), exp));
    shared.notify(STRING, "incrby", &key);
    Reply::Int(n)
}

/// INCRBYFLOAT as Redis 7.0: WRONGTYPE first, then the stored value and
/// then the increment must be `long double` text, and the sum is stored
/// and replied in Redis's `%.17Lf`-based form; the TTL is kept.
pub fn incr_by_float(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let (exp, cur) = match tri!(shared.read(&key)) {
        None => (None, LDouble::zero(false)),
        Some((exp, d)) => match LDouble::parse(&d) {
            Some(n) => (exp, n),
            None => return Reply::err(NOT_FLOAT),
        },
    };
    let Some(by) = LDouble::parse(&a[1]) else {
        return Reply::err(NOT_FLOAT);
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err(NAN_OR_INFINITY);
    };
    let text = n.to_human();
    tri!(shared.put(&key, text.as_bytes(), exp));
    shared.notify(STRING, "incrbyfloat", &key);
    Reply::bulk(Bytes::from(text))
}
