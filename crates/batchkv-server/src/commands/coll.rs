//! What every collection command (hashes, sets, sorted sets, lists)
//! shares: opening a collection for a write, committing it, and reading
//! elements in one batched engine read. The layout is in `meta.rs`.
//!
//! A writer holds the key's stripe lock (`shared.rs`, invariant 1) from
//! [`open`] to [`Writer::commit`]: metadata, elements and `size` are read
//! and written as one unit.

use batchkv::{ReadOptions, WriteBatch};
use bytes::Bytes;

use super::sample::Sample;
use super::{parse_int, syntax_error};
use crate::errors::{out_of_range_between, wrong_type, INVALID_CURSOR, NUMKEYS_NOT_POSITIVE};
use crate::keyspace::{db_key, put_meta};
use crate::meta::{self, Kind, Meta};
use crate::ranks;
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// Bytes a writer's batch holds before it grows: one element (key of a
/// few dozen bytes, a value of ~100) and the metadata record, so that a
/// single-element write (HSET f v, SADD m, LPUSH v) allocates its batch
/// once instead of growing it from empty (two or three reallocations).
const WRITER_BATCH_BYTES: usize = 256;

/// An empty batch for a [`Writer`].
fn writer_batch() -> WriteBatch {
    WriteBatch::with_capacity(WRITER_BATCH_BYTES)
}

/// Elements as `(sub, value)` pairs, in `sub` order.
pub type Elements = Vec<(Vec<u8>, Vec<u8>)>;

/// A collection being changed: its metadata and the batch of element
/// writes, committed together.
pub struct Writer {
    /// The stored key (`db ‖ user key`).
    pub key: Vec<u8>,
    pub meta: Meta,
    pub batch: WriteBatch,
    /// The key held a live collection when opened.
    pub existed: bool,
    /// Sorted sets: the changes to the score index, for its rank index
    /// (`ranks.rs`), settled at commit.
    pub ranks: ranks::Changes,
}

/// Opens the collection of `kind` at stored key `key` for writing, or a new
/// empty one (with a fresh version) if the key is absent or expired. A key
/// of another type is a WRONGTYPE error. The caller holds the key's lock.
pub fn open(shared: &Shared, key: Vec<u8>, kind: Kind) -> Result<Writer, Reply> {
    if let Some(w) = open_existing(shared, key.clone(), kind)? {
        return Ok(w);
    }
    create(shared, key, kind)
}

/// A new empty collection of `kind` (a fresh version) at stored key `key`,
/// replacing whatever the key holds: the old value's elements are deleted
/// in the same write. The caller holds the key's lock.
pub fn create(shared: &Shared, key: Vec<u8>, kind: Kind) -> Result<Writer, Reply> {
    let mut batch = writer_batch();
    shared.clear_old(&mut batch, &key)?;
    Ok(Writer {
        key,
        meta: shared.new_collection(kind),
        batch,
        existed: false,
        ranks: ranks::Changes::default(),
    })
}

/// Opens the live collection of `kind` at `key` for writing; `None` if the
/// key is absent or expired (commands such as HDEL then do nothing).
pub fn open_existing(shared: &Shared, key: Vec<u8>, kind: Kind) -> Result<Option<Writer>, Reply> {
    Ok(shared.read_meta(&key, kind)?.map(|meta| Writer {
        key,
        meta,
        batch: writer_batch(),
        existed: true,
        ranks: ranks::Changes::default(),
    }))
}

/// What a pop (LMPOP, BLPOP, ZMPOP, BZPOPMIN, ...) does with a key that
/// holds another type than the one it pops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Others {
    /// Answers WRONGTYPE when it reaches the key (a command's own run).
    Fail,
    /// Passes over it, as over an empty key (a blocked client's retry:
    /// Redis serves a blocked client only from a value of the type it
    /// waits for, and keeps it blocked meanwhile).
    Skip,
}

/// The collection of `kind` a pop takes from, given what `key` holds
/// (`value`, read under the key's lock): `None` if there is none to pop
/// from (absent, expired, or of another type with [`Others::Skip`]).
pub fn pop_source(
    key: Vec<u8>,
    value: Option<Value>,
    kind: Kind,
    others: Others,
) -> Result<Option<Writer>, Reply> {
    match value {
        Some(Value::Coll(meta)) if meta.kind == kind => Ok(Some(Writer {
            key,
            meta,
            batch: writer_batch(),
            existed: true,
            ranks: ranks::Changes::default(),
        })),
        Some(_) if others == Others::Fail => Err(wrong_type()),
        _ => Ok(None),
    }
}

/// Pops from the first non-empty collection of `kind` among `keys` (user
/// keys of database `db`, in order; all locked together, their metadata
/// one batched read): `pop` takes what it pops out of the writer, which is
/// then committed, and `published` runs with the stored key and that
/// result (the pop's keyspace events) before the keys' locks go, so no
/// other write to the key publishes in between. Returns that key and
/// `pop`'s result, `None` if every key is empty.
pub fn pop_first<T>(
    shared: &Shared,
    db: u8,
    keys: &[Bytes],
    kind: Kind,
    others: Others,
    pop: impl FnOnce(&Shared, &mut Writer) -> Result<T, Reply>,
    published: impl FnOnce(&[u8], &T),
) -> Result<Option<(Bytes, T)>, Reply> {
    let stored: Vec<Vec<u8>> = keys.iter().map(|k| db_key(db, k)).collect();
    let _g = shared.lock_keys(&stored);
    let values = shared.read_many(&stored);
    for ((user, key), value) in keys.iter().zip(stored).zip(values) {
        let Some(mut w) = pop_source(key.clone(), value?, kind, others)? else {
            continue;
        };
        let popped = pop(shared, &mut w)?;
        w.commit(shared)?;
        published(&key, &popped);
        return Ok(Some((user.clone(), popped)));
    }
    Ok(None)
}

/// The arguments of LMPOP, ZMPOP and their blocking forms from `numkeys`
/// on: `numkeys key... SIDE [COUNT n]`.
pub struct Mpop<'a, S> {
    pub keys: &'a [Bytes],
    /// LEFT|RIGHT or MIN|MAX, parsed.
    pub side: S,
    /// 1 without COUNT.
    pub count: u64,
}

/// Parses `numkeys key... SIDE [COUNT n]` with Redis's checks, in its
/// order; `side` parses SIDE (`None`: a syntax error).
pub fn parse_mpop<S>(a: &[Bytes], side: impl Fn(&[u8]) -> Option<S>) -> Result<Mpop<'_, S>, Reply> {
    let numkeys = match a.first().and_then(|n| parse_int(n)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Reply::err(NUMKEYS_NOT_POSITIVE)),
    };
    // The keys, then SIDE.
    if numkeys >= (a.len() as u64).saturating_sub(1) {
        return Err(syntax_error());
    }
    let n = numkeys as usize;
    let side = side(&a[n + 1]).ok_or_else(syntax_error)?;
    let mut count = None;
    let mut rest = &a[n + 2..];
    while let Some(opt) = rest.first() {
        match rest.get(1) {
            Some(v) if count.is_none() && opt.eq_ignore_ascii_case(b"count") => {
                count = match parse_int(v) {
                    Some(c) if c >= 1 => Some(c as u64),
                    _ => return Err(Reply::err("ERR count should be greater than 0")),
                };
                rest = &rest[2..];
            }
            _ => return Err(syntax_error()),
        }
    }
    Ok(Mpop {
        keys: &a[1..=n],
        side,
        count: count.unwrap_or(1),
    })
}

impl Writer {
    /// The engine key of element `sub`.
    pub fn element_key(&self, sub: &[u8]) -> Vec<u8> {
        meta::element_key(&self.key, self.meta.version, sub)
    }

    /// Reads the current values of elements `subs` (one batched read).
    pub fn read(&self, shared: &Shared, subs: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, Reply> {
        if !self.existed {
            return Ok(vec![None; subs.len()]);
        }
        read_elements(shared, &self.key, &self.meta, subs)
    }

    /// [`Writer::commit`], then publishes the keyspace notification
    /// `event` of `class` on the key and, if the write emptied the
    /// collection, a generic `del` (`notify.rs`).
    pub fn commit_notify(self, shared: &Shared, class: u32, event: &str) -> Result<(), Reply> {
        let key = shared
            .notifies(class | crate::notify::GENERIC)
            .then(|| self.key.clone());
        let emptied = self.meta.size == 0;
        self.commit(shared)?;
        if let Some(key) = key {
            shared.notify_removal(class, event, &key, emptied);
        }
        Ok(())
    }

    /// Writes the metadata with the element changes in one batch; a
    /// collection left empty is deleted (its elements were removed one by
    /// one), except a stream (which stays, empty, as in Redis). Writes
    /// nothing if nothing changed.
    pub fn commit(mut self, shared: &Shared) -> Result<(), Reply> {
        if self.meta.kind == Kind::ZSet {
            ranks::settle(
                shared,
                &mut self.batch,
                &self.key,
                &self.meta,
                self.existed,
                &self.ranks,
            )?;
        }
        if self.meta.size == 0 && self.meta.kind != Kind::Stream {
            if !self.existed && self.batch.is_empty() {
                return Ok(());
            }
            self.batch.delete(&self.key);
        } else {
            put_meta(&mut self.batch, &self.key, &self.meta);
        }
        shared.write(self.batch)
    }
}

/// [`super::Lookups`] of the commands whose every argument after the key
/// is an element (HDEL, SADD, SREM, ZREM).
pub fn all_after_key(a: &[Bytes]) -> Vec<&[u8]> {
    a.iter().skip(1).map(|b| &b[..]).collect()
}

/// [`super::Lookups`] of the commands of field-value pairs (HSET, HMSET).
pub fn pairs_after_key(a: &[Bytes]) -> Vec<&[u8]> {
    a.iter().skip(1).step_by(2).map(|b| &b[..]).collect()
}

/// [`super::Lookups`] of the commands of one field first (HSETNX,
/// HINCRBY, HINCRBYFLOAT).
pub fn first_after_key(a: &[Bytes]) -> Vec<&[u8]> {
    a.iter().skip(1).take(1).map(|b| &b[..]).collect()
}

/// The engine keys of many elements of one collection, built in one
/// buffer (no allocation per key).
pub struct ElementKeys {
    buf: Vec<u8>,
    /// End of each key in `buf`.
    ends: Vec<usize>,
}

impl ElementKeys {
    pub fn new(key: &[u8], m: &Meta, subs: &[&[u8]]) -> ElementKeys {
        let prefix = meta::element_prefix(key, m.version);
        let total: usize = subs.iter().map(|s| prefix.len() + s.len()).sum();
        let mut buf = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(subs.len());
        for s in subs {
            buf.extend_from_slice(&prefix);
            buf.extend_from_slice(s);
            ends.push(buf.len());
        }
        ElementKeys { buf, ends }
    }

    /// The keys, in the order of the `subs` they were built from.
    pub fn slices(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let k = &self.buf[start..end];
                start = end;
                k
            })
            .collect()
    }
}

/// Reads the values of elements `subs` of the collection `m` at stored key
/// `key` with one batched engine read (a loop of gets with `--batch off`).
pub fn read_elements(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    subs: &[&[u8]],
) -> Result<Vec<Option<Vec<u8>>>, Reply> {
    let mut out = Vec::with_capacity(subs.len());
    visit_elements(shared, key, m, subs, |_, v| out.push(v.map(<[u8]>::to_vec)))?;
    Ok(out)
}

/// Like [`read_elements`], calling `f(i, value)` for each of `subs` in
/// order with the value borrowed from the engine (no copy).
pub fn visit_elements(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    subs: &[&[u8]],
    f: impl FnMut(usize, Option<&[u8]>),
) -> Result<(), Reply> {
    let keys = ElementKeys::new(key, m, subs);
    shared.get_many_with(&ReadOptions::default(), &keys.slices(), f)
}

/// Every element of the collection `m` at `key` as `(sub, value)`, in
/// `sub` order.
pub fn all_elements(shared: &Shared, key: &[u8], m: &Meta) -> Result<Elements, Reply> {
    let mut out = Vec::with_capacity(m.size.min(1 << 20) as usize);
    shared.scan_elements(key, m, false, |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        true
    })?;
    Ok(out)
}

/// The most elements a RAND command with a negative count returns (they may
/// repeat, so the set's size does not bound them): the server's limit on a
/// request's arguments. Redis has no such limit.
const MAX_RAND_REPEATS: i64 = crate::resp::MAX_MULTIBULK_LEN;

/// Parses the count of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER as Redis 7.0 does (any integer but
/// `i64::MIN`), and bounds a negative one by [`MAX_RAND_REPEATS`].
pub fn parse_rand_count(b: &[u8]) -> Result<i64, Reply> {
    match super::parse_int(b) {
        None => Err(super::not_integer()),
        Some(n) if n == i64::MIN || n < -MAX_RAND_REPEATS => Err(out_of_range_between(
            if n == i64::MIN {
                -i64::MAX
            } else {
                -MAX_RAND_REPEATS
            },
            i64::MAX,
        )),
        Some(n) => Ok(n),
    }
}

/// The elements (`(sub, value)`, see [`Elements`]) that `s` picks from
/// the collection `m` at `key`: one walk from the end nearer to the picks,
/// stopping at the last (`sample.rs`).
pub fn sample_elements(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    s: &mut Sample,
) -> Result<Elements, Reply> {
    let mut out = Vec::with_capacity(s.presize());
    if !s.done() {
        shared.scan_elements(key, m, s.reverse(), |k, v| {
            for _ in 0..s.take() {
                out.push((k.to_vec(), v.to_vec()));
            }
            !s.done()
        })?;
    }
    s.finish(out)
}

/// SCAN-family options after the cursor: `MATCH pattern` and `COUNT n`
/// (HSCAN, SSCAN, ZSCAN).
pub struct ScanArgs<'a> {
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
}

pub fn parse_scan_args(a: &[bytes::Bytes]) -> Result<ScanArgs<'_>, Reply> {
    let mut out = ScanArgs {
        pattern: None,
        count: 10,
    };
    let mut i = 0;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(super::syntax_error());
        };
        match a[i].to_ascii_uppercase().as_slice() {
            b"MATCH" => out.pattern = Some(v),
            b"COUNT" => match super::parse_int(v) {
                Some(n) if n >= 1 => out.count = n as usize,
                Some(_) => return Err(super::syntax_error()),
                None => return Err(super::not_integer()),
            },
            _ => return Err(super::syntax_error()),
        }
        i += 2;
    }
    Ok(out)
}

/// Parses a SCAN-family cursor (any unsigned 64-bit number).
pub fn parse_cursor(b: &[u8]) -> Result<u64, Reply> {
    std::str::from_utf8(b)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Reply::err(INVALID_CURSOR))
}

/// Collections up to this many elements answer a SCAN-family command in
/// one reply with cursor 0, as Redis does for its compact encodings
/// (listpack/intset, 128 entries by default), whatever COUNT says.
pub const SCAN_ALL_BELOW: u64 = 128;

/// One page of a SCAN-family command over the collection `m` at `key`:
/// `(next cursor, (sub, value) pairs)`. A small collection comes whole
/// with cursor 0; a larger one in pages of `count` elements, the cursor
/// naming where the next page starts (`Shared::save_cursor`; any cursor
/// resumes at or before where its page stopped, `cursors.rs`).
pub fn scan_page(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    cursor: u64,
    count: usize,
) -> Result<(u64, Elements), Reply> {
    if cursor == 0 && m.size <= SCAN_ALL_BELOW {
        return Ok((0, all_elements(shared, key, m)?));
    }
    // The scope of the cursor: this collection (its key and version).
    let p = meta::element_prefix(key, m.version);
    let from = if cursor == 0 {
        Vec::new()
    } else {
        shared.resume_cursor(&p, cursor)
    };
    let mut start = p.clone();
    start.extend_from_slice(&from);
    let mut items = Vec::new();
    let mut next = None;
    shared.scan(&start, &meta::prefix_end(&p), false, true, |k, v| {
        if items.len() == count {
            next = Some(k[p.len()..].to_vec());
            return false;
        }
        items.push((k[p.len()..].to_vec(), v.to_vec()));
        true
    })?;
    let next = next.map_or(0, |sub| shared.save_cursor(&p, sub));
    Ok((next, items))
}
