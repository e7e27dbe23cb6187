//! How Redis keys and values are stored in batchkv
//! (`docs/format/server-keyspace.md` gives the layout with examples).
//!
//! # Keys (on disk: never change)
//! `db ‖ user key`, where `db` is one byte, 0–15 (`SELECT`). A database is
//! the key range `[db, db+1)`, so KEYS/SCAN/FLUSHDB iterate one prefix.
//! Keys from byte 16 up lie outside every database:
//! - `10 ‖ t ‖ db ‖ user key` (t: 8 bytes big-endian, milliseconds since
//!   the Unix epoch), empty value: the *expiry index*, sorted by expiry
//!   time. Written in the same batch as every value with an expiry, so
//!   active expiry (`expiry.rs`) visits only the keys that are due. An
//!   entry may be stale (the key was since deleted, or rewritten with
//!   another expiry or none); the sweeper checks the value before it
//!   deletes anything, and removes stale entries when they come due.
//! - `11 "expiry_index_complete"`, empty value: every value with an
//!   expiry has its index entry. Databases written before the index lack
//!   it; the sweeper then walks them once, indexing what it finds, and
//!   writes it.
//! - `11 "batchkv_serve_keyspace"`, value `1`: the server marker
//!   (`marker.rs`), written at start.
//!
//! Servers before
//! `Db::sync_wal` made `--appendfsync everysec` durable by deleting the
//! key `ff "__batchkv_server_sync"` with `sync`; databases they wrote may
//! hold its tombstone, which no command reads.
//!
//! # Values (on disk: never change)
//! One tag byte, then:
//! - tag 0: the string's bytes (no expiry);
//! - tag 1: the absolute expiry time, 8 bytes little-endian milliseconds
//!   since the Unix epoch, then the string's bytes.
//!
//! Example: `SET k hello PXAT 1700000000000` stores key
//! `00 6b` and value `01 00 68 e5 cf 8b 01 00 00 68 65 6c 6c 6f`.
//! An entry whose expiry is ≤ now is treated as absent on every read
//! (lazy expiry) until the server's active expiry (`expiry.rs`) deletes
//! it. No compaction filter drops expired values: a key leaves the
//! keyspace only through a write the key counts see (`keycount.rs`).

use std::time::{SystemTime, UNIX_EPOCH};

use batchkv::WriteBatch;

use crate::meta::{Meta, TAG_COLLECTION};

/// Number of databases (`SELECT 0`..`SELECT 15`).
pub const NUM_DBS: usize = 16;

/// The longest header a stored string carries before its bytes: the tag
/// and an expiry (see the module docs).
pub const STRING_HEADER_MAX: usize = 9;

/// The longest string the server stores, in the user's bytes: the
/// engine's value limit minus [`STRING_HEADER_MAX`], so a value that can
/// be stored can also be given an expiry. The default and the largest
/// setting of `proto-max-bulk-len`, which bounds every argument, so also
/// every hash value and list element (stored without a header).
pub const MAX_VALUE_LEN: usize = batchkv::MAX_VALUE_SIZE - STRING_HEADER_MAX;

/// The least setting of `proto-max-bulk-len` (Redis's minimum, 1 MiB):
/// a bit offset or field within the first `MIN_PROTO_MAX_BULK_LEN` bytes
/// is within the limit whatever it is set to, so the batched GETBIT and
/// BITFIELD_RO check it without the settings.
pub const MIN_PROTO_MAX_BULK_LEN: usize = 1 << 20;

/// The most bytes any engine key derived from a user key adds to it
/// before a field or member: a sorted set's score-index key
/// `13 ‖ db ‖ len(4) ‖ key ‖ version(8) ‖ score(8) ‖ member` (`meta.rs`).
/// The others add less: the stored key 1, the expiry index 10, element
/// keys 14.
pub const KEY_OVERHEAD_MAX: usize = 22;

/// The longest key a command may create: every engine key derived from it
/// (stored key, expiry index, element keys with an empty field or member,
/// score index) then fits the engine's key limit, so a key that could be
/// written can always be given an expiry or hold a collection. A field or
/// member adds its own length: key and field (or member) together may be
/// at most this long.
pub const MAX_KEY_LEN: usize = batchkv::MAX_KEY_SIZE - KEY_OVERHEAD_MAX;

/// The error for a key longer than [`MAX_KEY_LEN`].
pub fn key_too_long() -> crate::resp::Reply {
    crate::resp::Reply::Error(format!("ERR key is too long (max {MAX_KEY_LEN} bytes)"))
}

/// Checks the keys a command may create before it runs: every key of a
/// command that adds data (`denyoom`: SET, APPEND, the pushes, HSET,
/// SADD, ZADD, the *STORE commands, ...) and the destination of a write
/// with a source and a destination (RENAME, COPY, SMOVE, BLMOVE, ...).
/// Keys only read or deleted are not checked, so a longer key written by
/// an older server can still be read and deleted. `args` includes the
/// command's name; `None` if every such key fits.
pub fn check_new_keys(
    spec: &crate::commands::CommandSpec,
    args: &[bytes::Bytes],
) -> Option<crate::resp::Reply> {
    let created = if spec.flags.contains(&"denyoom") {
        (spec.first_key, spec.last_key, spec.step)
    } else if spec.flags.contains(&"write") && (spec.first_key, spec.last_key) == (1, 2) {
        (2, 2, 1)
    } else {
        return None;
    };
    crate::commands::key_positions(created, args.len())
        .any(|i| args[i].len() > MAX_KEY_LEN)
        .then(key_too_long)
}

const TAG_PLAIN: u8 = 0;
const TAG_EXPIRES: u8 = 1;

/// The stored key for `key` in database `db`.
pub fn db_key(db: u8, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(db);
    k.extend_from_slice(key);
    k
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Encodes a string value with an optional absolute expiry (ms).
pub fn encode_value(data: &[u8], expire_at: Option<u64>) -> Vec<u8> {
    let mut v = Vec::with_capacity(data.len() + 9);
    encode_value_into(&mut v, data, expire_at);
    v
}

/// [`encode_value`] into `out`, replacing what it held (no allocation
/// once `out` has room).
pub fn encode_value_into(out: &mut Vec<u8>, data: &[u8], expire_at: Option<u64>) {
    out.clear();
    match expire_at {
        None => out.push(TAG_PLAIN),
        Some(t) => {
            out.push(TAG_EXPIRES);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    out.extend_from_slice(data);
}

/// First byte of the expiry-index keys (see the module docs).
pub const EXPIRY_INDEX: u8 = 0x10;
/// The key saying every value with an expiry is indexed.
pub const EXPIRY_INDEX_COMPLETE: &[u8] = b"\x11expiry_index_complete";

/// The expiry-index key of stored key `key` expiring at `t` (ms).
pub fn expiry_index_key(t: u64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key.len());
    k.push(EXPIRY_INDEX);
    k.extend_from_slice(&t.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// The expiry time and stored key of an expiry-index key, if it is one.
pub fn decode_expiry_index_key(k: &[u8]) -> Option<(u64, &[u8])> {
    if k.len() < 9 || k[0] != EXPIRY_INDEX {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&k[1..9]);
    Some((u64::from_be_bytes(t), &k[9..]))
}

/// Adds to `b` a string value for stored key `key`, and its expiry-index
/// entry if it expires.
pub fn put_value(b: &mut WriteBatch, key: &[u8], data: &[u8], expire_at: Option<u64>) {
    b.put(key, encode_value(data, expire_at));
    if let Some(t) = expire_at {
        b.put(expiry_index_key(t, key), []);
    }
}

/// Adds to `b` a collection's metadata for stored key `key`, and its
/// expiry-index entry if it expires.
pub fn put_meta(b: &mut WriteBatch, key: &[u8], meta: &Meta) {
    b.put(key, meta.encode());
    if let Some(t) = meta.expire_at {
        b.put(expiry_index_key(t, key), []);
    }
}

/// A decoded value: its expiry (if any) and the string's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub expire_at: Option<u64>,
    pub data: &'a [u8],
}

/// Decodes a stored value. `None` if it is malformed (not written by this
/// server).
pub fn decode_value(v: &[u8]) -> Option<Decoded<'_>> {
    match *v.first()? {
        TAG_PLAIN => Some(Decoded {
            expire_at: None,
            data: &v[1..],
        }),
        TAG_EXPIRES if v.len() >= 9 => {
            let mut t = [0u8; 8];
            t.copy_from_slice(&v[1..9]);
            Some(Decoded {
                expire_at: Some(u64::from_le_bytes(t)),
                data: &v[9..],
            })
        }
        _ => None,
    }
}

/// What is stored at a key: a string, or a collection's metadata
/// (`meta.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    Str(Decoded<'a>),
    Coll(Meta),
}

impl Entry<'_> {
    pub fn expire_at(&self) -> Option<u64> {
        match self {
            Entry::Str(d) => d.expire_at,
            Entry::Coll(m) => m.expire_at,
        }
    }

    /// The name TYPE answers.
    pub fn type_name(&self) -> &'static str {
        match self {
            Entry::Str(_) => "string",
            Entry::Coll(m) => m.kind.type_name(),
        }
    }
}

/// Decodes what is stored at a key; `None` if it is malformed (not
/// written by this server).
pub fn decode_entry(v: &[u8]) -> Option<Entry<'_>> {
    if v.first() == Some(&TAG_COLLECTION) {
        Meta::decode(v).map(Entry::Coll)
    } else {
        decode_value(v).map(Entry::Str)
    }
}

/// Decodes what is stored at a key and applies lazy expiry at time `now`:
/// `Ok(None)` if expired, `Err(())` if malformed.
pub fn live_entry(v: &[u8], now: u64) -> Result<Option<Entry<'_>>, ()> {
    let e = decode_entry(v).ok_or(())?;
    match e.expire_at() {
        Some(t) if t <= now => Ok(None),
        _ => Ok(Some(e)),
    }
}

/// Why a stored value is not a live string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotString {
    /// Not written by this server.
    Corrupt,
    /// A live collection.
    WrongType,
}

/// Decodes a stored string and applies lazy expiry at time `now`:
/// `Ok(None)` if expired (of any type).
pub fn live_value(v: &[u8], now: u64) -> Result<Option<Decoded<'_>>, NotString> {
    match live_entry(v, now) {
        Ok(Some(Entry::Str(d))) => Ok(Some(d)),
        Ok(Some(Entry::Coll(_))) => Err(NotString::WrongType),
        Ok(None) => Ok(None),
        Err(()) => Err(NotString::Corrupt),
    }
}

/// Redis's glob matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`,
/// `[a-z]`, and `\` escaping the next character.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    // Where to resume after the last `*`: (pattern index after it, string index).
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    while p < pat.len() && pat[p] == b'*' {
                        p += 1;
                    }
                    if p == pat.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = match_class(pat, p, s[i]) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    } else if s[i] == b'[' {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pat.len() => {
                    if pat[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: backtrack to the last star, which eats one more byte.
        match star {
            Some((sp, si)) => {
                star = Some((sp, si + 1));
                p = sp;
                i = si + 1;
            }
            None => return false,
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

/// Matches `c` against the class starting at `pat[p] == '['`. Returns
/// whether it matched and the index after `]`, or `None` if the class is
/// not closed (then `[` is literal).
fn match_class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = j < pat.len() && pat[j] == b'^';
    if negate {
        j += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        if j >= pat.len() {
            return None;
        }
        if pat[j] == b']' && !first {
            break;
        }
        first = false;
        if pat[j] == b'\\' && j + 1 < pat.len() {
            if pat[j + 1] == c {
                matched = true;
            }
            j += 2;
        } else if j + 2 < pat.len() && pat[j + 1] == b'-' && pat[j + 2] != b']' {
            let (mut lo, mut hi) = (pat[j], pat[j + 2]);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            if (lo..=hi).contains(&c) {
                matched = true;
            }
            j += 3;
        } else {
            if pat[j] == c {
                matched = true;
            }
            j += 1;
        }
    }
    Some((matched != negate, j + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_index_keys_round_trip_and_sort_by_time() {
        let a = expiry_index_key(1_700_000_000_000, b"\x03zz");
        let b = expiry_index_key(1_700_000_000_001, b"\x00aa");
        assert_eq!(
            decode_expiry_index_key(&a),
            Some((1_700_000_000_000, &b"\x03zz"[..]))
        );
        assert!(a < b, "earlier expiry sorts first, whatever the key");
        assert!(
            a.as_slice() > [NUM_DBS as u8].as_slice(),
            "outside the databases"
        );
        assert!(a.as_slice() < EXPIRY_INDEX_COMPLETE);
        // The example in docs/format/server-keyspace.md.
        assert_eq!(
            expiry_index_key(1_700_000_000_000, b"\x00k"),
            [0x10, 0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0, b'k']
        );
        assert_eq!(decode_expiry_index_key(b"\x00key"), None);
        assert_eq!(decode_expiry_index_key(&a[..8]), None);
    }

    /// Every engine key derived from a key of [`MAX_KEY_LEN`] bytes fits
    /// the engine's limit (the score-index key exactly), and so does a
    /// value of [`MAX_VALUE_LEN`] bytes with an expiry.
    #[test]
    fn the_key_and_value_limits_leave_room_for_every_derived_record() {
        use crate::meta::{element_key, score_index_key};
        let key = db_key(3, &vec![b'k'; MAX_KEY_LEN]);
        let derived = [
            key.clone(),
            expiry_index_key(u64::MAX, &key),
            element_key(&key, u64::MAX, b""),
            score_index_key(&key, u64::MAX, 1.5, b""),
        ];
        for k in &derived {
            assert!(k.len() <= batchkv::MAX_KEY_SIZE, "{}", k.len());
        }
        assert_eq!(derived[3].len(), batchkv::MAX_KEY_SIZE);
        let v = encode_value(&vec![0; MAX_VALUE_LEN], Some(u64::MAX));
        assert_eq!(v.len(), batchkv::MAX_VALUE_SIZE);
    }

    #[test]
    fn values_round_trip_with_and_without_expiry() {
        let v = encode_value(b"hello", None);
        assert_eq!(v, b"\x00hello");
        let d = decode_value(&v).unwrap();
        assert_eq!((d.expire_at, d.data), (None, &b"hello"[..]));
        let v = encode_value(b"hello", Some(1_700_000_000_000));
        assert_eq!(
            v,
            b"\x01\x00\x68\xe5\xcf\x8b\x01\x00\x00hello".to_vec(),
            "layout documented in the module doc"
        );
        assert_eq!(decode_value(&v).unwrap().expire_at, Some(1_700_000_000_000));
        assert_eq!(live_value(&v, 1_700_000_000_000), Ok(None));
        let m = Meta::new(crate::meta::Kind::Set, 1).encode();
        assert_eq!(live_value(&m, 0), Err(NotString::WrongType));
        assert_eq!(decode_value(&m), None, "metadata never decodes as a string");
        assert!(live_value(&v, 1_699_999_999_999).unwrap().is_some());
        assert_eq!(decode_value(b""), None);
        assert_eq!(decode_value(b"\x01abc"), None);
        assert_eq!(decode_value(b"\x07"), None);
    }

    #[test]
    fn globs_match_like_redis() {
        let yes: &[(&str, &str)] = &[
            ("*", "anything"),
            ("*", ""),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h\\*llo", "h*llo"),
            ("*a*b*c", "xxaxxbxxc"),
            ("user:*", "user:1"),
            ("[", "["),
        ];
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[ae]llo", "hillo"),
            ("h[^e]llo", "hello"),
            ("h\\*llo", "hello"),
            ("user:*", "use"),
            ("*a*b*c", "xxaxxbxx"),
        ];
        for (p, s) in yes {
            assert!(glob_match(p.as_bytes(), s.as_bytes()), "{p} ~ {s}");
        }
        for (p, s) in no {
            assert!(!glob_match(p.as_bytes(), s.as_bytes()), "{p} !~ {s}");
        }
    }
}
