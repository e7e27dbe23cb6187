//! DUMP and RESTORE payloads in Redis 7.0's format.
//!
//! A payload is one RDB-encoded value and a footer:
//!
//! ```text
//! <type: 1 byte> <body> <RDB version: 2 bytes LE> <CRC-64: 8 bytes LE>
//! ```
//!
//! The CRC is Redis's CRC-64 (Jones polynomial, `CRC_64_REDIS`) of every
//! byte before it. [`dump`] writes RDB version 10 and the plain encodings
//! (a string, a list as quicklist-2 nodes holding listpacks, a set, hash or
//! sorted set as its elements); [`restore`] reads every encoding Redis 7.0
//! and 6.x put in a DUMP (raw, integer and LZF strings, ziplists, listpacks,
//! intsets, quicklists, zipmaps) and refuses malformed input with an error,
//! never a panic; it returns empty collections as they are (Redis refuses
//! them: the caller decides).
//!
//! RDB lengths: `00xxxxxx` (6 bits), `01xxxxxx xxxxxxxx` (14 bits, big
//! endian), `0x80` + 4 bytes BE, `0x81` + 8 bytes BE; `11xxxxxx` marks a
//! specially encoded string (`0..=2`: an 8/16/32-bit LE integer, `3`: LZF).

use std::borrow::Cow;
use std::collections::HashSet;

mod stream;
pub use stream::{Consumer as StreamConsumer, Group as StreamGroup, Pending, Stream};

/// The RDB version `dump` writes, and the newest `restore` accepts.
const RDB_VERSION: u16 = 10;

/// RDB object type bytes (Redis's `rdb.h`).
mod ty {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
}

/// Quicklist-2 node containers.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// A listpack node `dump` closes before it passes this many bytes (Redis's
/// default `list-max-listpack-size -2`); a longer element gets a node alone.
const NODE_MAX_BYTES: usize = 8 * 1024;
/// Elements from this size on go in a plain node (Redis's
/// `packed_threshold`), as a listpack could not hold them.
const PLAIN_THRESHOLD: usize = 1 << 30;

/// The most bytes LZF expands one input byte into: a 3-byte back
/// reference copies up to 264 bytes.
const LZF_MAX_RATIO: u64 = 88;
/// The shortest string `dump` compresses. Redis compresses from 21 bytes;
/// each compression here initialises a 64 KiB hash table, which made a
/// DUMP of a hash of 1,000 short fields 17x slower than Redis's: short
/// elements stay raw (a listpack node of them is compressed whole).
const LZF_MIN_LEN: usize = 1024;
/// The longest string LZF-compressed or decompressed (Redis's strings
/// stop at 512 MiB).
const LZF_MAX_LEN: usize = i32::MAX as usize;

static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// A value as DUMP/RESTORE carry it.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A string value.
    String(Vec<u8>),
    /// Head to tail.
    List(Vec<Vec<u8>>),
    /// The members, in payload order.
    Set(Vec<Vec<u8>>),
    /// (field, value) pairs.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// (member, score) pairs.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// A stream with its consumer groups.
    Stream(Box<Stream>),
}

/// Why [`restore`] refused a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// Footer version newer than 10, payload shorter than the footer, or
    /// CRC mismatch: Redis's "ERR DUMP payload version or checksum are wrong".
    VersionOrChecksum,
    /// Anything malformed in the body: Redis's "ERR Bad data format".
    BadFormat,
    /// A valid type batchkv cannot restore (streams, modules): name of the
    /// type for the error text.
    Unsupported(&'static str),
}

type Result<T> = std::result::Result<T, PayloadError>;

use PayloadError::BadFormat;

// ---------------------------------------------------------------- dump

/// The DUMP payload of `obj`: RDB object type byte, the body, the RDB
/// version (10) as 2 bytes little-endian, and the CRC-64 of everything
/// before it, 8 bytes little-endian.
pub fn dump(obj: &Object) -> Vec<u8> {
    let mut w = Vec::new();
    match obj {
        Object::String(s) => {
            w.push(ty::STRING);
            put_string(&mut w, s);
        }
        Object::List(items) => {
            w.push(ty::LIST_QUICKLIST_2);
            put_quicklist(&mut w, items);
        }
        Object::Set(members) => {
            w.push(ty::SET);
            put_len(&mut w, members.len() as u64);
            for m in members {
                put_string(&mut w, m);
            }
        }
        Object::Hash(pairs) => {
            w.push(ty::HASH);
            put_len(&mut w, pairs.len() as u64);
            for (f, v) in pairs {
                put_string(&mut w, f);
                put_string(&mut w, v);
            }
        }
        Object::ZSet(pairs) => {
            w.push(ty::ZSET_2);
            put_len(&mut w, pairs.len() as u64);
            for (m, score) in pairs {
                put_string(&mut w, m);
                w.extend_from_slice(&score.to_le_bytes());
            }
        }
        Object::Stream(s) => {
            w.push(ty::STREAM_LISTPACKS_2);
            stream::put_stream(&mut w, s);
        }
    }
    w.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&w);
    w.extend_from_slice(&crc.to_le_bytes());
    w
}

/// An RDB length (Redis's `rdbSaveLen`).
fn put_len(w: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        w.push(n as u8);
    } else if n < 1 << 14 {
        w.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n32) = u32::try_from(n) {
        w.push(0x80);
        w.extend_from_slice(&n32.to_be_bytes());
    } else {
        w.push(0x81);
        w.extend_from_slice(&n.to_be_bytes());
    }
}

/// An RDB string as Redis's `rdbSaveRawString` writes it: a canonical
/// integer that fits 32 bits as an integer, longer than 20 bytes LZF
/// compressed when that saves 4 bytes or more, else length and bytes.
fn put_string(w: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = canonical_int(s) {
            if let Ok(v) = i8::try_from(v) {
                w.extend_from_slice(&[0xC0, v as u8]);
                return;
            } else if let Ok(v) = i16::try_from(v) {
                w.push(0xC1);
                w.extend_from_slice(&v.to_le_bytes());
                return;
            } else if let Ok(v) = i32::try_from(v) {
                w.push(0xC2);
                w.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if s.len() >= LZF_MIN_LEN && s.len() <= LZF_MAX_LEN {
        // Worth it only if it saves 4 bytes: no room for more output.
        let mut c = vec![0u8; s.len() - 4];
        if let Ok(n) = lzf_rust::compress(s, &mut c) {
            c.truncate(n);
            if n + 4 <= s.len() {
                w.push(0xC3);
                put_len(w, c.len() as u64);
                put_len(w, s.len() as u64);
                w.extend_from_slice(&c);
                return;
            }
        }
    }
    put_len(w, s.len() as u64);
    w.extend_from_slice(s);
}

/// `s` as an integer if it is one in canonical form (no sign but `-`, no
/// leading zeros, no `-0`): what Redis stores as an integer.
fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let v: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == s).then_some(v)
}

/// A list as quicklist-2 nodes: listpacks of up to `NODE_MAX_BYTES`, and a
/// plain node for each element too big for a listpack.
fn put_quicklist(w: &mut Vec<u8>, items: &[Vec<u8>]) {
    put_quicklist_with(w, items, PLAIN_THRESHOLD);
}

/// `put_quicklist` with a plain node for each element of `plain_from`
/// bytes or more.
fn put_quicklist_with(w: &mut Vec<u8>, items: &[Vec<u8>], plain_from: usize) {
    let mut nodes: Vec<(u64, Cow<[u8]>)> = Vec::new();
    let mut entries = Vec::new();
    let mut count = 0usize;
    let mut entry = Vec::new();
    for item in items {
        if item.len() >= plain_from {
            if count > 0 {
                nodes.push((CONTAINER_PACKED, listpack(&entries, count).into()));
                entries.clear();
                count = 0;
            }
            nodes.push((CONTAINER_PLAIN, item.as_slice().into()));
            continue;
        }
        entry.clear();
        lp_put_entry(&mut entry, item);
        if count > 0 && LP_HEADER + entries.len() + entry.len() + 1 > NODE_MAX_BYTES {
            nodes.push((CONTAINER_PACKED, listpack(&entries, count).into()));
            entries.clear();
            count = 0;
        }
        entries.extend_from_slice(&entry);
        count += 1;
    }
    if count > 0 {
        nodes.push((CONTAINER_PACKED, listpack(&entries, count).into()));
    }
    put_len(w, nodes.len() as u64);
    for (container, data) in &nodes {
        put_len(w, *container);
        put_string(w, data);
    }
}

/// Listpack header: total bytes (u32 LE), element count (u16 LE).
pub(super) const LP_HEADER: usize = 6;
/// Listpack terminator.
pub(super) const LP_EOF: u8 = 0xFF;

/// A listpack of `count` encoded `entries`.
fn listpack(entries: &[u8], count: usize) -> Vec<u8> {
    let total = LP_HEADER + entries.len() + 1;
    let mut lp = Vec::with_capacity(total);
    lp.extend_from_slice(&(total as u32).to_le_bytes());
    lp.extend_from_slice(&(count.min(0xFFFF) as u16).to_le_bytes());
    lp.extend_from_slice(entries);
    lp.push(LP_EOF);
    lp
}

/// One listpack entry (encoding, data, back length) for `s`: canonical
/// integers in the smallest integer encoding, as Redis stores them.
fn lp_put_entry(w: &mut Vec<u8>, s: &[u8]) {
    let start = w.len();
    match canonical_int(s) {
        Some(v @ 0..=127) => w.push(v as u8),
        Some(v @ -4096..=4095) => {
            let u = (v as u16) & 0x1FFF;
            w.extend_from_slice(&[0xC0 | (u >> 8) as u8, u as u8]);
        }
        Some(v) if i16::try_from(v).is_ok() => {
            w.push(0xF1);
            w.extend_from_slice(&(v as i16).to_le_bytes());
        }
        Some(v @ -0x80_0000..=0x7F_FFFF) => {
            w.push(0xF2);
            w.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        Some(v) if i32::try_from(v).is_ok() => {
            w.push(0xF3);
            w.extend_from_slice(&(v as i32).to_le_bytes());
        }
        Some(v) => {
            w.push(0xF4);
            w.extend_from_slice(&v.to_le_bytes());
        }
        None if s.len() < 64 => {
            w.push(0x80 | s.len() as u8);
            w.extend_from_slice(s);
        }
        None if s.len() < 4096 => {
            w.extend_from_slice(&[0xE0 | (s.len() >> 8) as u8, s.len() as u8]);
            w.extend_from_slice(s);
        }
        None => {
            w.push(0xF0);
            w.extend_from_slice(&(s.len() as u32).to_le_bytes());
            w.extend_from_slice(s);
        }
    }
    let len = w.len() - start;
    lp_backlen(w, len as u64);
}

/// A listpack entry's back length: the entry's size in 7-bit groups,
/// most significant first, every byte but the first with bit 7 set
/// (Redis's `lpEncodeBacklen`, with its thresholds).
pub(super) fn lp_backlen(w: &mut Vec<u8>, l: u64) {
    let groups = if l <= 127 {
        1
    } else if l < 16383 {
        2
    } else if l < 2097151 {
        3
    } else if l < 268435455 {
        4
    } else {
        5
    };
    for i in (0..groups).rev() {
        let b = ((l >> (7 * i)) & 0x7F) as u8;
        w.push(if i == groups - 1 { b } else { b | 0x80 });
    }
}

// ------------------------------------------------------------- restore

/// Decodes a DUMP payload made by Redis (any version up to 7.0's RDB
/// version 10) or by `dump`. The footer is checked first; then the body
/// must be exactly one value.
pub fn restore(payload: &[u8]) -> Result<Object> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(PayloadError::VersionOrChecksum);
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if CRC64.checksum(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(PayloadError::VersionOrChecksum);
    }

    let mut r = Reader::new(body);
    let obj = match r.u8()? {
        ty::STRING => Object::String(r.string()?),
        ty::LIST => list_plain(&mut r)?,
        ty::LIST_ZIPLIST => Object::List(ziplist_entries(&r.string()?)?),
        ty::LIST_QUICKLIST => list_quicklist(&mut r, false)?,
        ty::LIST_QUICKLIST_2 => list_quicklist(&mut r, true)?,
        ty::SET => set_plain(&mut r)?,
        ty::SET_INTSET => Object::Set(intset_members(&r.string()?)?),
        ty::SET_LISTPACK => {
            let members = listpack_entries(&r.string()?)?;
            unique(members.iter())?;
            Object::Set(members)
        }
        ty::HASH => hash_plain(&mut r)?,
        ty::HASH_ZIPMAP => Object::Hash(zipmap_pairs(&r.string()?)?),
        ty::HASH_ZIPLIST => hash_from_entries(ziplist_entries(&r.string()?)?)?,
        ty::HASH_LISTPACK => hash_from_entries(listpack_entries(&r.string()?)?)?,
        ty::ZSET => zset_plain(&mut r, false)?,
        ty::ZSET_2 => zset_plain(&mut r, true)?,
        ty::ZSET_ZIPLIST => zset_from_entries(ziplist_entries(&r.string()?)?)?,
        ty::ZSET_LISTPACK => zset_from_entries(listpack_entries(&r.string()?)?)?,
        ty::STREAM_LISTPACKS => Object::Stream(Box::new(stream::read_stream(&mut r, false)?)),
        ty::STREAM_LISTPACKS_2 => Object::Stream(Box::new(stream::read_stream(&mut r, true)?)),
        // Redis 7.2's (consumers' active time) comes with RDB version 11.
        ty::STREAM_LISTPACKS_3 => return Err(BadFormat),
        ty::MODULE | ty::MODULE_2 => return Err(PayloadError::Unsupported("module")),
        _ => return Err(BadFormat),
    };
    if r.remaining() != 0 {
        return Err(BadFormat);
    }
    Ok(obj)
}

/// A cursor over a payload's body.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// What an RDB length field holds.
enum Len {
    /// A length.
    Plain(u64),
    /// `11xxxxxx`: a special string encoding (`xxxxxx`).
    Encoded(u8),
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// A capacity for `n` items of at least one byte each: never more
    /// than the bytes left.
    fn cap(&self, n: u64) -> usize {
        n.min(self.remaining() as u64) as usize
    }

    fn bytes(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(BadFormat);
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N as u64)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// A length field or a string encoding marker (Redis's `rdbLoadLen`).
    fn len_or_encoding(&mut self) -> Result<Len> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3F)),
            1 => Len::Plain(u64::from(b & 0x3F) << 8 | u64::from(self.u8()?)),
            3 => Len::Encoded(b & 0x3F),
            _ if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
            _ if b == 0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
            _ => return Err(BadFormat),
        })
    }

    /// A length (a count of elements, nodes or bytes).
    fn len(&mut self) -> Result<u64> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(BadFormat),
        }
    }

    /// A string: raw, an 8/16/32-bit integer (as its decimal text), or LZF.
    fn string(&mut self) -> Result<Vec<u8>> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(self.bytes(n)?.to_vec()),
            Len::Encoded(0) => Ok((self.u8()? as i8).to_string().into_bytes()),
            Len::Encoded(1) => Ok(i16::from_le_bytes(self.array()?).to_string().into_bytes()),
            Len::Encoded(2) => Ok(i32::from_le_bytes(self.array()?).to_string().into_bytes()),
            Len::Encoded(3) => self.lzf_string(),
            Len::Encoded(_) => Err(BadFormat),
        }
    }

    /// An LZF string: compressed length, original length, compressed bytes.
    fn lzf_string(&mut self) -> Result<Vec<u8>> {
        let clen = self.len()?;
        let ulen = self.len()?;
        let data = self.bytes(clen)?;
        if ulen == 0 {
            return if data.is_empty() {
                Ok(Vec::new())
            } else {
                Err(BadFormat)
            };
        }
        // Bounds the allocation by what `clen` bytes can expand to.
        if ulen > clen.saturating_mul(LZF_MAX_RATIO) || ulen > LZF_MAX_LEN as u64 {
            return Err(BadFormat);
        }
        let mut out = vec![0u8; ulen as usize];
        match lzf_rust::decompress(data, &mut out) {
            Ok(n) if n as u64 == ulen => Ok(out),
            _ => Err(BadFormat),
        }
    }

    /// A score as text behind a length byte (253 NaN, 254 +inf, 255 -inf).
    fn double(&mut self) -> Result<f64> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => parse_score(self.bytes(u64::from(n))?),
        }
    }

    /// A score as an IEEE 754 binary64, little endian.
    fn binary_double(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}

/// A score written as text; NaN is refused by the callers.
fn parse_score(s: &[u8]) -> Result<f64> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(BadFormat)
}

/// BadFormat if two of `items` are equal.
fn unique<'a>(items: impl ExactSizeIterator<Item = &'a Vec<u8>>) -> Result<()> {
    let mut seen = HashSet::with_capacity(items.len());
    for item in items {
        if !seen.insert(item.as_slice()) {
            return Err(BadFormat);
        }
    }
    Ok(())
}

/// LIST (1): a count, then each element.
fn list_plain(r: &mut Reader) -> Result<Object> {
    let n = r.len()?;
    let mut items = Vec::with_capacity(r.cap(n));
    for _ in 0..n {
        items.push(r.string()?);
    }
    Ok(Object::List(items))
}

/// LIST_QUICKLIST (14, ziplist nodes) and LIST_QUICKLIST_2 (18, a
/// container before each node: plain for one element, packed for a
/// listpack). Empty packed nodes are skipped, as Redis does.
fn list_quicklist(r: &mut Reader, v2: bool) -> Result<Object> {
    let nodes = r.len()?;
    let mut items = Vec::new();
    for _ in 0..nodes {
        let container = if v2 { r.len()? } else { CONTAINER_PACKED };
        let data = r.string()?;
        if data.is_empty() {
            return Err(BadFormat);
        }
        match container {
            CONTAINER_PLAIN => items.push(data),
            CONTAINER_PACKED if v2 => items.extend(listpack_entries(&data)?),
            CONTAINER_PACKED => items.extend(ziplist_entries(&data)?),
            _ => return Err(BadFormat),
        }
    }
    Ok(Object::List(items))
}

/// SET (2): a count, then each member.
fn set_plain(r: &mut Reader) -> Result<Object> {
    let n = r.len()?;
    let mut members = Vec::with_capacity(r.cap(n));
    for _ in 0..n {
        members.push(r.string()?);
    }
    unique(members.iter())?;
    Ok(Object::Set(members))
}

/// HASH (4): a count, then each field and value.
fn hash_plain(r: &mut Reader) -> Result<Object> {
    let n = r.len()?;
    let mut pairs = Vec::with_capacity(r.cap(n));
    for _ in 0..n {
        let field = r.string()?;
        pairs.push((field, r.string()?));
    }
    unique(pairs.iter().map(|(f, _)| f))?;
    Ok(Object::Hash(pairs))
}

/// ZSET (3, text scores) and ZSET_2 (5, binary scores): a count, then each
/// member and score.
fn zset_plain(r: &mut Reader, binary: bool) -> Result<Object> {
    let n = r.len()?;
    let mut pairs = Vec::with_capacity(r.cap(n));
    for _ in 0..n {
        let member = r.string()?;
        let score = if binary {
            r.binary_double()?
        } else {
            r.double()?
        };
        if score.is_nan() {
            return Err(BadFormat);
        }
        pairs.push((member, score));
    }
    unique(pairs.iter().map(|(m, _)| m))?;
    Ok(Object::ZSet(pairs))
}

/// Alternating entries as pairs; BadFormat for an odd count.
fn pairs(entries: Vec<Vec<u8>>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if !entries.len().is_multiple_of(2) {
        return Err(BadFormat);
    }
    let mut out = Vec::with_capacity(entries.len() / 2);
    let mut it = entries.into_iter();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

/// A hash from a ziplist's or listpack's field, value, ... entries.
fn hash_from_entries(entries: Vec<Vec<u8>>) -> Result<Object> {
    let pairs = pairs(entries)?;
    unique(pairs.iter().map(|(f, _)| f))?;
    Ok(Object::Hash(pairs))
}

/// A sorted set from a ziplist's or listpack's member, score, ... entries.
fn zset_from_entries(entries: Vec<Vec<u8>>) -> Result<Object> {
    let mut out = Vec::with_capacity(entries.len() / 2);
    for (member, score) in pairs(entries)? {
        let score = parse_score(&score)?;
        if score.is_nan() {
            return Err(BadFormat);
        }
        out.push((member, score));
    }
    unique(out.iter().map(|(m, _)| m))?;
    Ok(Object::ZSet(out))
}

mod compact;
use compact::{intset_members, listpack_entries, ziplist_entries, zipmap_pairs};
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
