//! String commands: GET/SET and their variants, MGET/MSET, APPEND,
//! ranges, counters. Writers hold the key's stripe lock from read to write
//! (see `server.rs`).

use batchkv::WriteBatch;
use bytes::Bytes;

use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, R, W, WM};
use crate::keyspace::{db_key, encode_value, now_ms};
use crate::ldouble::LDouble;
use crate::resp::Reply;
use crate::shared::{Live, Shared, Value};

/// Largest string SETRANGE/APPEND may build (Redis's default
/// proto-max-bulk-len).
pub(super) const MAX_STRING: i64 = 512 << 20;

/// The string commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("get", 2, R, KEY1, |s, c, a| get(s, c, a)),
    spec("mget", -2, R, super::ALL_KEYS, |s, c, a| mget(s, c, a)),
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
    spec("strlen", 2, R, KEY1, |s, c, a| strlen(s, c, a)),
    spec("getrange", 4, super::RS, KEY1, |s, c, a| getrange(s, c, a)),
    spec("substr", 4, super::RS, KEY1, |s, c, a| getrange(s, c, a)),
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
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{cmd}' command"));
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

/// The expiry option of SET (`KEEPTTL`) or GETEX (`PERSIST`) as parsed:
/// one kind at most, a repeated kind's last value winning (Redis 7.0).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpiryArg<'a> {
    None,
    /// KEEPTTL (SET) or PERSIST (GETEX).
    Keep,
    /// EX, PX, EXAT or PXAT (`kind`) with its unparsed value.
    At {
        kind: u8,
        value: &'a [u8],
    },
}

impl<'a> ExpiryArg<'a> {
    /// Takes option `opt` (upper case) with the argument after it, if any;
    /// `keep` names the valueless option (KEEPTTL or PERSIST). Returns how
    /// many extra arguments it used.
    fn parse(&mut self, opt: &[u8], next: Option<&'a Bytes>, keep: &[u8]) -> Result<usize, Reply> {
        let kind = match opt {
            b"EX" => 1,
            b"PX" => 2,
            b"EXAT" => 3,
            b"PXAT" => 4,
            _ if opt == keep && matches!(self, ExpiryArg::None | ExpiryArg::Keep) => {
                *self = ExpiryArg::Keep;
                return Ok(0);
            }
            _ => return Err(syntax_error()),
        };
        match (*self, next) {
            (ExpiryArg::None, Some(_)) => {}
            (ExpiryArg::At { kind: k, .. }, Some(_)) if k == kind => {}
            _ => return Err(syntax_error()),
        }
        *self = ExpiryArg::At {
            kind,
            value: next.map_or(&[][..], |v| &v[..]),
        };
        Ok(1)
    }

    /// The new expiry: `None` for no change, `Some(None)` to remove it
    /// (GETEX PERSIST), `Some(Some(t))` for time `t` (ms).
    fn resolve(self, cmd: &str) -> Result<Option<Option<u64>>, Reply> {
        match self {
            ExpiryArg::None => Ok(None),
            ExpiryArg::Keep => Ok(Some(None)),
            ExpiryArg::At { kind, value } => {
                let unit = if kind % 2 == 1 { 1000 } else { 1 };
                Ok(Some(Some(expire_at(value, unit, kind >= 3, cmd)?)))
            }
        }
    }
}

/// The expiry part of SET/GETEX.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// SET without expiry options: clear it.
    Clear,
    Keep,
    At(u64),
}

pub fn set(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut arg = ExpiryArg::None;
    let mut i = 2;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        match opt.as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            _ => i += tri!(arg.parse(&opt, a.get(i + 1), b"KEEPTTL")),
        }
        i += 1;
    }
    let ttl = match arg {
        ExpiryArg::None => Ttl::Clear,
        ExpiryArg::Keep => Ttl::Keep,
        at => Ttl::At(tri!(at.resolve("set")).flatten().unwrap_or(0)),
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    // Any type counts for NX/XX and KEEPTTL; GET needs a string.
    let old = if nx || xx || get || ttl == Ttl::Keep {
        tri!(shared.read_value(&key))
    } else {
        None
    };
    if get && matches!(old, Some(Value::Coll(_))) {
        return crate::shared::wrong_type();
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
    if get {
        old_reply(old)
    } else {
        Reply::ok()
    }
}

pub fn setnx(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    if tri!(shared.read_value(&key)).is_some() {
        return Reply::Int(0);
    }
    tri!(shared.put(&key, &a[1], None));
    Reply::Int(1)
}

pub fn setex(shared: &Shared, conn: &ConnState, a: &[Bytes], unit: i64, cmd: &str) -> Reply {
    let at = tri!(expire_at(&a[1], unit, false, cmd));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    tri!(shared.put(&key, &a[2], Some(at)));
    Reply::ok()
}

pub fn getdel(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    if old.is_some() {
        tri!(shared.delete(&key));
    }
    bulk_or_nil(old)
}

pub fn getset(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    tri!(shared.put(&key, &a[1], None));
    bulk_or_nil(old)
}

pub fn getex(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let mut arg = ExpiryArg::None;
    let mut i = 1;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        i += tri!(arg.parse(&opt, a.get(i + 1), b"PERSIST")) + 1;
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let old = tri!(shared.read(&key));
    // Like Redis, the time is checked only once the key is found.
    if old.is_none() {
        return Reply::Nil;
    }
    let change = tri!(arg.resolve("getex"));
    if let (Some((exp, data)), Some(new_exp)) = (&old, change) {
        if *exp != new_exp {
            tri!(shared.put(&key, data, new_exp));
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
    for (k, p) in keys.iter().zip(a.chunks(2)) {
        tri!(shared.clear_old(&mut b, k));
        b.put(k, encode_value(&p[1], None));
    }
    tri!(shared.write(b));
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
    if data.len() as i64 + a[1].len() as i64 > MAX_STRING {
        return Reply::err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    data.extend_from_slice(&a[1]);
    tri!(shared.put(&key, &data, exp));
    Reply::Int(data.len() as i64)
}

pub fn strlen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let v = tri!(shared.read(&db_key(conn.db, &a[0])));
    Reply::Int(v.map_or(0, |(_, d)| d.len() as i64))
}

pub fn getrange(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let (Some(mut start), Some(mut end)) = (parse_int(&a[1]), parse_int(&a[2])) else {
        return not_integer();
    };
    let data = tri!(shared.read(&db_key(conn.db, &a[0]))).map_or(Vec::new(), |(_, d)| d);
    let len = data.len() as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return Reply::bulk(Bytes::new());
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
        return Reply::bulk(Bytes::new());
    }
    Reply::bulk(Bytes::copy_from_slice(&data[start as usize..=end as usize]))
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
    if offset + piece.len() as i64 > MAX_STRING {
        return Reply::err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    let (exp, mut data) = old.unwrap_or((None, Vec::new()));
    let end = offset as usize + piece.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(piece);
    tri!(shared.put(&key, &data, exp));
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
        return Reply::err("ERR increment or decrement would overflow");
    };
    tri!(shared.put(&key, n.to_string().as_bytes(), exp));
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
            None => return Reply::err("ERR value is not a valid float"),
        },
    };
    let Some(by) = LDouble::parse(&a[1]) else {
        return Reply::err("ERR value is not a valid float");
    };
    let Some(n) = cur.checked_add(by) else {
        return Reply::err("ERR increment would produce NaN or Infinity");
    };
    let text = n.to_human();
    tri!(shared.put(&key, text.as_bytes(), exp));
    Reply::bulk(Bytes::from(text))
}
