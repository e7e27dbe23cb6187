//! OBJECT (ENCODING, FREQ, IDLETIME, REFCOUNT, HELP) and TOUCH.
//!
//! batchkv stores every type in the engine (`meta.rs`), not in Redis's
//! in-memory encodings, so OBJECT ENCODING reports the encoding Redis 7.0
//! would use for the same value with the thresholds CONFIG SET gave
//! (Redis's defaults until set): `int`,
//! `embstr` (≤ 44 bytes) or `raw` for strings (a short string built by
//! APPEND, SETRANGE or PFADD is `raw` in Redis and `embstr` here); `listpack` or
//! `hashtable` for hashes (`hash-max-listpack-entries`, 512, and
//! `-value`, 64 bytes for fields and values); `intset` or `hashtable` for
//! sets (`set-max-intset-entries`, 512 integers); `listpack` or `skiplist`
//! for sorted sets (`zset-max-listpack-entries`, 128, and `-value`, 64-byte
//! members); `quicklist` for lists. The encoding is computed from the value
//! each time, so unlike Redis's it also returns to the compact one when
//! the value shrinks or the thresholds grow. Access times and frequencies
//! are not tracked.

use bytes::Bytes;

use super::coll;
use super::strings::tri;
use super::{parse_int, spec, CommandSpec, ConnState, ALL_KEYS, NO_KEYS, R};
use crate::errors::unknown_subcommand;
use crate::keyspace::db_key;
use crate::meta::{Kind, Meta};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// OBJECT and TOUCH.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("object", -2, &["readonly"], NO_KEYS, |s, c, a| {
        object(s, c, a)
    }),
    spec("touch", -2, R, ALL_KEYS, |s, c, a| touch(s, c, a)),
];

const HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// OBJECT's subcommands and their argument counts (after OBJECT).
const SUBCOMMANDS: &[(&str, usize)] = &[
    ("help", 1),
    ("encoding", 2),
    ("freq", 2),
    ("idletime", 2),
    ("refcount", 2),
];

/// The error Redis answers before running (or queuing, inside MULTI)
/// OBJECT with an unknown subcommand or the wrong number of arguments for
/// it; `a` is the arguments after OBJECT.
pub fn check_subcommand(a: &[Bytes]) -> Option<Reply> {
    let sub = a.first()?;
    match SUBCOMMANDS
        .iter()
        .find(|(name, _)| sub.eq_ignore_ascii_case(name.as_bytes()))
    {
        Some((_, n)) if *n == a.len() => None,
        Some((name, _)) => Some(super::wrong_arity(&format!("object|{name}"))),
        None => Some(unknown_subcommand(sub, b"object")),
    }
}

pub fn object(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    if let Some(e) = check_subcommand(a) {
        return e;
    }
    let sub = a[0].to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"help", 1) => Reply::Array(HELP.iter().map(|l| Reply::Status((*l).into())).collect()),
        (b"encoding" | b"freq" | b"idletime" | b"refcount", 2) => {
            let key = db_key(conn.db, &a[1]);
            let Some(v) = tri!(shared.read_value(&key)) else {
                return Reply::Nil;
            };
            match sub.as_slice() {
                b"encoding" => match encoding(shared, &key, &v) {
                    Ok(e) => Reply::bulk(Bytes::from_static(e.as_bytes())),
                    Err(r) => r,
                },
                b"freq" => Reply::err(
                    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                     Please note that when switching between policies at runtime LRU and LFU \
                     data will take some time to adjust.",
                ),
                // Not tracked: never idle, one reference.
                b"idletime" => Reply::Int(0),
                _ => Reply::Int(1),
            }
        }
        // Checked above.
        _ => super::syntax_error(),
    }
}

/// The Redis 7.0 encoding name for `v` stored at `key` (module docs).
fn encoding(shared: &Shared, key: &[u8], v: &Value) -> Result<&'static str, Reply> {
    let m = match v {
        Value::Str(_, d) => {
            return Ok(
                if d.len() <= 20 && parse_int(d).is_some() && d.as_slice() != b"-0" {
                    "int"
                } else if d.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                },
            )
        }
        Value::Coll(m) => m,
    };
    Ok(match m.kind {
        Kind::List => "quicklist",
        Kind::Stream => "stream",
        Kind::Hash => {
            let len = threshold(shared, "hash-max-listpack-value");
            let max = threshold(shared, "hash-max-listpack-entries");
            compact_or(shared, key, m, max, "listpack", "hashtable", |f, v| {
                f.len() as u64 <= len && v.len() as u64 <= len
            })?
        }
        Kind::ZSet => {
            let len = threshold(shared, "zset-max-listpack-value");
            let max = threshold(shared, "zset-max-listpack-entries");
            compact_or(shared, key, m, max, "listpack", "skiplist", |f, _| {
                f.len() as u64 <= len
            })?
        }
        Kind::Set => {
            let max = threshold(shared, "set-max-intset-entries");
            compact_or(shared, key, m, max, "intset", "hashtable", |f, _| {
                parse_int(f).is_some()
            })?
        }
    })
}

/// Redis's encoding threshold `name` as CONFIG SET left it (the settings
/// hold every such parameter, with Redis's default until set).
fn threshold(shared: &Shared, name: &str) -> u64 {
    let set = shared.settings.get(&[name.as_bytes()]);
    set.first().and_then(|(_, v)| v.parse().ok()).unwrap_or(0)
}

/// `small` if `m` has at most `max` elements and every one passes `fits`,
/// else `large`. Reads the elements only when the count allows `small`.
fn compact_or(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    max: u64,
    small: &'static str,
    large: &'static str,
    fits: impl Fn(&[u8], &[u8]) -> bool,
) -> Result<&'static str, Reply> {
    if m.size > max {
        return Ok(large);
    }
    let all = coll::all_elements(shared, key, m)?;
    Ok(if all.iter().all(|(f, v)| fits(f, v)) {
        small
    } else {
        large
    })
}

/// TOUCH: how many of the keys exist (access times are not tracked).
pub fn touch(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    let mut n = 0;
    for r in shared.read_many(&keys) {
        n += i64::from(tri!(r).is_some());
    }
    Reply::Int(n)
}
