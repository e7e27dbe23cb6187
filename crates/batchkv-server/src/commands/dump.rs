//! DUMP and RESTORE: a key's value as Redis 7.0's serialized payload
//! (`rdb.rs`), and a key made from one.
//!
//! DUMP writes the plain RDB encodings (a list as quicklist nodes, a set,
//! hash or sorted set as its elements), which redis-server RESTOREs; RESTORE
//! reads every encoding Redis 7.0 and 6.x DUMP (listpacks, ziplists,
//! intsets, compressed strings); a stream goes with its consumer groups
//! (`dump_stream.rs`).
//! RESTORE builds the value in one write, replacing the old value's
//! elements in the same batch.

use bytes::Bytes;

use super::coll;
use super::strings::tri;
use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, RS, WM};
use crate::keyspace::{db_key, now_ms, put_value};
use crate::meta::Kind;
use crate::notify::{GENERIC, NEW};
use crate::rdb::{self, Object, PayloadError};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// DUMP and RESTORE.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("dump", 2, RS, KEY1, |s, c, a| dump(s, c, a)),
    spec("restore", -4, WM, KEY1, |s, c, a| restore(s, c, a)),
];

pub(super) const BAD_FORMAT: &str = "ERR Bad data format";

/// DUMP: the payload of the key's value, nil if there is none.
fn dump(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let Some(value) = tri!(shared.read_value(&key)) else {
        return Reply::Nil;
    };
    let obj = match value {
        Value::Str(_, data) => Object::String(data),
        Value::Coll(m) => match m.kind {
            Kind::Hash => Object::Hash(tri!(coll::all_elements(shared, &key, &m))),
            Kind::Set => Object::Set(
                tri!(coll::all_elements(shared, &key, &m))
                    .into_iter()
                    .map(|(member, _)| member)
                    .collect(),
            ),
            Kind::ZSet => Object::ZSet(tri!(super::zsets::members_with_scores(shared, &key, &m))),
            Kind::List => {
                Object::List(tri!(super::lists::read_values(shared, &key, &m, 0, m.size)))
            }
            Kind::Stream => {
                Object::Stream(Box::new(tri!(super::dump_stream::read(shared, &key, &m))))
            }
        },
    };
    Reply::bulk(Bytes::from(rdb::dump(&obj)))
}

/// RESTORE's options after the payload, checked as Redis checks them.
struct Options {
    replace: bool,
    absttl: bool,
}

/// Parses REPLACE, ABSTTL, IDLETIME seconds and FREQ frequency (the last
/// two checked, then ignored: no LRU or LFU is kept).
fn parse_options(opts: &[Bytes]) -> Result<Options, Reply> {
    let mut o = Options {
        replace: false,
        absttl: false,
    };
    let (mut idle, mut freq) = (false, false);
    let mut i = 0;
    while i < opts.len() {
        let more = i + 1 < opts.len();
        match opts[i].to_ascii_lowercase().as_slice() {
            b"replace" => o.replace = true,
            b"absttl" => o.absttl = true,
            b"idletime" if more && !freq => {
                let n = parse_int(&opts[i + 1]).ok_or_else(not_integer)?;
                if n < 0 {
                    return Err(Reply::err("ERR Invalid IDLETIME value, must be >= 0"));
                }
                idle = true;
                i += 1;
            }
            b"freq" if more && !idle => {
                let n = parse_int(&opts[i + 1]).ok_or_else(not_integer)?;
                if !(0..=255).contains(&n) {
                    return Err(Reply::err(
                        "ERR Invalid FREQ value, must be >= 0 and <= 255",
                    ));
                }
                freq = true;
                i += 1;
            }
            _ => return Err(syntax_error()),
        }
        i += 1;
    }
    Ok(o)
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], with
/// Redis 7.0's checks in its order: options, an existing key (without
/// REPLACE), the TTL, the payload's footer, its body. A TTL already past
/// restores nothing (deleting the old value with REPLACE).
fn restore(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let opts = tri!(parse_options(&a[3..]));
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let existed = tri!(shared.read_value(&key)).is_some();
    if existed && !opts.replace {
        return Reply::err("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = parse_int(&a[1]) else {
        return not_integer();
    };
    if ttl < 0 {
        return Reply::err("ERR Invalid TTL value, must be >= 0");
    }
    let obj = match rdb::restore(&a[2]) {
        Ok(obj) if !is_empty_collection(&obj) => obj,
        Ok(_) | Err(PayloadError::BadFormat) => return Reply::err(BAD_FORMAT),
        Err(PayloadError::VersionOrChecksum) => {
            return Reply::err("ERR DUMP payload version or checksum are wrong")
        }
        Err(PayloadError::Unsupported(what)) => {
            return Reply::err(format!("ERR RESTORE of a {what} is not supported"))
        }
    };
    let now = now_ms() as i64;
    let expire_at = match ttl {
        0 => None,
        t if opts.absttl => Some(t),
        t => Some(t.saturating_add(now)),
    };
    if expire_at.is_some_and(|t| t <= now) {
        if existed {
            tri!(shared.delete(&key));
            shared.notify(GENERIC, "del", &key);
        }
        return Reply::ok();
    }
    let expire_at = expire_at.map(|t| t as u64);
    tri!(write_object(shared, &key, obj, expire_at));
    if existed {
        // Redis deletes the old value and adds the key anew.
        shared.notify(NEW, "new", &key);
    }
    shared.notify(GENERIC, "restore", &key);
    shared.blocking.signal(&key);
    Reply::ok()
}

/// Whether `obj` is a collection without elements (Redis refuses to load
/// one: "Bad data format").
fn is_empty_collection(obj: &Object) -> bool {
    match obj {
        Object::String(_) => false,
        Object::List(v) | Object::Set(v) => v.is_empty(),
        Object::Hash(v) => v.is_empty(),
        Object::ZSet(v) => v.is_empty(),
        Object::Stream(_) => false,
    }
}

/// Replaces whatever stored key `key` holds with `obj` (not an empty
/// collection) expiring at `expire_at`, in one write.
fn write_object(
    shared: &Shared,
    key: &[u8],
    obj: Object,
    expire_at: Option<u64>,
) -> Result<(), Reply> {
    let kind = match &obj {
        Object::String(data) => {
            let mut b = batchkv::WriteBatch::new();
            shared.clear_old(&mut b, key)?;
            put_value(&mut b, key, data, expire_at);
            return shared.write(b);
        }
        Object::List(_) => Kind::List,
        Object::Set(_) => Kind::Set,
        Object::Hash(_) => Kind::Hash,
        Object::ZSet(_) => Kind::ZSet,
        Object::Stream(_) => Kind::Stream,
    };
    let mut w = coll::create(shared, key.to_vec(), kind)?;
    match &obj {
        Object::List(vals) => super::lists::fill(&mut w, vals)?,
        Object::Set(members) => super::sets::fill(&mut w, members),
        Object::Hash(pairs) => super::hashes::fill(&mut w, pairs),
        Object::ZSet(pairs) => super::zsets::fill(&mut w, pairs),
        Object::Stream(s) => super::dump_stream::fill(&mut w, s)?,
        Object::String(_) => {}
    }
    w.meta.expire_at = expire_at;
    w.commit(shared)
}
