//! Bit and sequence commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS,
//! BITOP, LCS (BITFIELD: `bitfield.rs`). Bits are numbered from the most
//! significant bit of the first byte, as in Redis.

use batchkv::WriteBatch;
use bytes::Bytes;

use super::strings::tri;
use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, R, RS, WM};
use crate::batcher::Shape;
use crate::keyspace::{db_key, put_value, MIN_PROTO_MAX_BULK_LEN};
use crate::notify::{GENERIC, STRING};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

/// The bit and LCS commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("setbit", 4, WM, KEY1, |s, c, a| setbit(s, c, a)),
    spec("getbit", 3, R, KEY1, |s, c, a| getbit(s, c, a)).batched(getbit_shape),
    spec("bitcount", -2, RS, KEY1, |s, c, a| bitcount(s, c, a)).batched(BitCount::parse),
    spec("bitpos", -3, RS, KEY1, |s, c, a| bitpos(s, c, a)),
    spec("bitop", -4, WM, (2, -1, 1), |s, c, a| bitop(s, c, a)),
    spec("lcs", -3, RS, (1, 2, 1), |s, c, a| lcs(s, c, a)),
];

/// A bit offset argument, as Redis 7 checks it for SETBIT and GETBIT: an
/// integer ≥ 0 whose byte lies within `proto-max-bulk-len` (so a string
/// grown to reach it is no longer than a value may be).
fn bit_offset(shared: &Shared, b: &[u8]) -> Result<u64, Reply> {
    offset_within(b, shared.settings.proto_max_bulk_len() as u64)
}

/// [`bit_offset`] with the limit given.
fn offset_within(b: &[u8], limit: u64) -> Result<u64, Reply> {
    match parse_int(b) {
        Some(n) if n >= 0 && (n as u64 >> 3) < limit => Ok(n as u64),
        _ => Err(Reply::err(
            "ERR bit offset is not an integer or out of range",
        )),
    }
}

/// GETBIT's batched shape, for an offset within the first
/// [`MIN_PROTO_MAX_BULK_LEN`] bytes (any other runs alone: the handler
/// checks it against the setting).
fn getbit_shape(a: &[Bytes]) -> Option<Shape> {
    let offset = offset_within(&a[1], MIN_PROTO_MAX_BULK_LEN as u64).ok()?;
    Some(Shape::GetBit(offset as u32)) // below 2^23
}

/// The bit at `bit` of `data`, most significant first (0 past the end).
pub(crate) fn bit_at(data: &[u8], bit: u64) -> u8 {
    data.get((bit / 8) as usize)
        .map_or(0, |byte| (byte >> (7 - bit % 8)) & 1)
}

pub fn setbit(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    // Checked before anything is allocated: the byte is within the limit.
    let offset = tri!(bit_offset(shared, &a[1]));
    let on = match &a[2][..] {
        b"0" => false,
        b"1" => true,
        _ => return Reply::err("ERR bit is not an integer or out of range"),
    };
    let byte = (offset / 8) as usize;
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let stored = tri!(shared.read(&key));
    let existed = stored.is_some();
    let (exp, mut data) = stored.unwrap_or((None, Vec::new()));
    let old = bit_at(&data, offset);
    // As Redis 7: an existing string whose bit already holds the value
    // is not written, so a WATCH on it is not broken.
    if existed && byte < data.len() && (old == 1) == on {
        return Reply::Int(i64::from(old));
    }
    if data.len() <= byte {
        data.resize(byte + 1, 0);
    }
    let mask = 1u8 << (7 - offset % 8);
    if on {
        data[byte] |= mask;
    } else {
        data[byte] &= !mask;
    }
    tri!(shared.put(&key, &data, exp));
    shared.notify(STRING, "setbit", &key);
    Reply::Int(i64::from(old))
}

pub fn getbit(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let offset = tri!(bit_offset(shared, &a[1]));
    let data = tri!(shared.read(&db_key(conn.db, &a[0]))).map_or(Vec::new(), |(_, d)| d);
    Reply::Int(i64::from(bit_at(&data, offset)))
}

/// A `start end [BYTE|BIT]` range over `len_bytes` bytes as an inclusive
/// bit range, `None` if empty. `end` absent means the last unit.
fn bit_range(len_bytes: usize, start: i64, end: Option<i64>, bits: bool) -> Option<(u64, u64)> {
    let unit = if bits { 1 } else { 8 };
    let len = len_bytes as i64 * if bits { 8 } else { 1 };
    let (mut s, mut e) = (start, end.unwrap_or(len - 1));
    if s < 0 {
        s += len;
    }
    if e < 0 {
        e += len;
    }
    s = s.max(0);
    e = e.max(0).min(len - 1);
    if len == 0 || s > e {
        return None;
    }
    let first = s as u64 * unit;
    let last = e as u64 * unit + (unit - 1);
    Some((first, last))
}

/// Parses the optional `start end [BYTE|BIT]` of BITCOUNT (`a` after the
/// key); BITPOS allows `start` alone (`end_optional`).
fn parse_range(a: &[Bytes], end_optional: bool) -> Result<Option<(i64, Option<i64>, bool)>, Reply> {
    let Some(start) = a.first() else {
        return Ok(None);
    };
    if a.len() == 1 && !end_optional {
        return Err(syntax_error());
    }
    if a.len() > 3 {
        return Err(syntax_error());
    }
    let start = parse_int(start).ok_or_else(not_integer)?;
    let unit = || match a.get(2) {
        None => Ok(false),
        Some(u) if u.eq_ignore_ascii_case(b"bit") => Ok(true),
        Some(u) if u.eq_ignore_ascii_case(b"byte") => Ok(false),
        Some(_) => Err(syntax_error()),
    };
    // Redis 7.0's order of checks: BITPOS start, unit, end; BITCOUNT
    // start, end, unit.
    let early = if end_optional { Some(unit()?) } else { None };
    let end = match a.get(1) {
        Some(e) => Some(parse_int(e).ok_or_else(not_integer)?),
        None => None,
    };
    let bits = match early {
        Some(b) => b,
        None => unit()?,
    };
    Ok(Some((start, end, bits)))
}

/// BITCOUNT: as Redis 7.0, a missing key answers 0 and another type
/// WRONGTYPE before the range is parsed.
pub fn bitcount(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some((_, data)) = tri!(shared.read(&db_key(conn.db, &a[0]))) else {
        return Reply::Int(0);
    };
    // Redis answers 0 for two negative indexes in the wrong order before
    // it looks at the unit.
    if let [_, start, end, ..] = a {
        if let (Some(s), Some(e)) = (parse_int(start), parse_int(end)) {
            if s < 0 && e < 0 && s > e && a.len() <= 4 {
                return Reply::Int(0);
            }
        }
    }
    let range = tri!(parse_range(&a[1..], false));
    Reply::Int(bitcount_of(&data, range))
}

/// BITCOUNT's answer for a live string's bytes and its parsed range.
fn bitcount_of(data: &[u8], range: Option<(i64, Option<i64>, bool)>) -> i64 {
    // Two negative indexes in the wrong order: 0, as Redis.
    if let Some((s, Some(e), _)) = range {
        if s < 0 && e < 0 && s > e {
            return 0;
        }
    }
    let (start, end, bits) = range.unwrap_or((0, None, false));
    match bit_range(data.len(), start, end, bits) {
        Some((first, last)) => count_ones(data, first, last) as i64,
        None => 0,
    }
}

/// A batched BITCOUNT's range (the batcher's [`Shape::BitCount`]): the
/// whole string, or `start end` in bytes or bits. The indexes are kept in
/// 32 bits so the shape stays small; a BITCOUNT with others runs alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitCount {
    start: i32,
    end: i32,
    /// 0: no range; 1: bytes; 2: bits.
    unit: u8,
}

impl BitCount {
    /// The shape of `BITCOUNT key [start end [BYTE|BIT]]` (`a` after the
    /// name) with valid arguments; `None` (run alone: the handler answers
    /// the error) otherwise.
    fn parse(a: &[Bytes]) -> Option<Shape> {
        let unit = match a.len() {
            1 => 0,
            3 => 1,
            4 if a[3].eq_ignore_ascii_case(b"byte") => 1,
            4 if a[3].eq_ignore_ascii_case(b"bit") => 2,
            _ => return None,
        };
        let index = |b: &[u8]| i32::try_from(parse_int(b)?).ok();
        let (start, end) = match unit {
            0 => (0, 0),
            _ => (index(&a[1])?, index(&a[2])?),
        };
        Some(Shape::BitCount(BitCount { start, end, unit }))
    }

    /// The count for a live string's bytes (an absent key's are empty).
    pub fn count(self, data: &[u8]) -> i64 {
        let range = (self.unit != 0).then_some((
            i64::from(self.start),
            Some(i64::from(self.end)),
            self.unit == 2,
        ));
        bitcount_of(data, range)
    }
}

pub fn bitpos(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let want = match &a[1][..] {
        b"0" => 0u8,
        b"1" => 1u8,
        _ if parse_int(&a[1]).is_none() => return not_integer(),
        _ => return Reply::err("ERR The bit argument must be 1 or 0."),
    };
    // As Redis 7.0: the bit, then the key, then the range.
    let Some((_, data)) = tri!(shared.read(&db_key(conn.db, &a[0]))) else {
        return Reply::Int(if want == 1 { -1 } else { 0 });
    };
    let range = tri!(parse_range(&a[2..], true));
    let (start, end, bits) = range.unwrap_or((0, None, false));
    let Some((first, last)) = bit_range(data.len(), start, end, bits) else {
        return Reply::Int(-1);
    };
    if let Some(p) = find_bit(&data, first, last, want) {
        return Reply::Int(p as i64);
    }
    // Looking for a clear bit with no explicit end: the string is taken
    // as padded with zeros on the right.
    if want == 0 && range.is_none_or(|(_, e, _)| e.is_none()) {
        return Reply::Int(last as i64 + 1);
    }
    Reply::Int(-1)
}

/// The mask of bits `from..=to` (0 = most significant) of a byte.
fn byte_mask(from: u64, to: u64) -> u8 {
    (0xffu8 >> from) & (0xffu8 << (7 - to))
}

/// The set bits among bits `first..=last` of `data` (both within it):
/// whole bytes by population count, the partial bytes at the ends masked.
fn count_ones(data: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first / 8) as usize, (last / 8) as usize);
    if fb == lb {
        return u64::from((data[fb] & byte_mask(first % 8, last % 8)).count_ones());
    }
    let head = u64::from((data[fb] & byte_mask(first % 8, 7)).count_ones());
    let tail = u64::from((data[lb] & byte_mask(0, last % 8)).count_ones());
    let whole = &data[fb + 1..lb];
    let (words, rest) = whole.split_at(whole.len() / 8 * 8);
    let mid: u64 = words
        .chunks_exact(8)
        .map(|w| u64::from(u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])).count_ones()))
        .sum::<u64>()
        + rest.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
    head + mid + tail
}

/// The first bit equal to `want` among bits `first..=last` of `data`
/// (both within it): runs of eight bytes of the other value between the
/// range's first and last byte are skipped a word at a time.
fn find_bit(data: &[u8], first: u64, last: u64, want: u8) -> Option<u64> {
    let (fb, lb) = ((first / 8) as usize, (last / 8) as usize);
    let other = [if want == 1 { 0u8 } else { 0xff }; 8];
    let mut i = fb;
    while i <= lb {
        if i > fb && i + 8 <= lb && data[i..i + 8] == other {
            i += 8;
            continue;
        }
        let from = if i == fb { first % 8 } else { 0 };
        let to = if i == lb { last % 8 } else { 7 };
        // The bits equal to `want`, within the range's part of the byte.
        let hits = if want == 1 { data[i] } else { !data[i] } & byte_mask(from, to);
        if hits != 0 {
            return Some(i as u64 * 8 + u64::from(hits.leading_zeros()));
        }
        i += 1;
    }
    None
}

pub fn bitop(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let op = a[0].to_ascii_uppercase();
    if !matches!(op.as_slice(), b"AND" | b"OR" | b"XOR" | b"NOT") {
        return syntax_error();
    }
    let srcs = &a[2..];
    if op == b"NOT" && srcs.len() != 1 {
        return Reply::err("ERR BITOP NOT must be called with a single source key.");
    }
    let dst = db_key(conn.db, &a[1]);
    let keys: Vec<Vec<u8>> = srcs.iter().map(|k| db_key(conn.db, k)).collect();
    let mut locked = keys.clone();
    locked.push(dst.clone());
    let _g = shared.lock_keys(&locked);
    let mut values = Vec::with_capacity(keys.len());
    for k in &keys {
        values.push(tri!(shared.read(k)).map_or(Vec::new(), |(_, d)| d));
    }
    let len = values.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    for (i, byte) in out.iter_mut().enumerate() {
        let mut it = values.iter().map(|v| v.get(i).copied().unwrap_or(0));
        let first = it.next().unwrap_or(0);
        *byte = match op.as_slice() {
            b"AND" => it.fold(first, |x, y| x & y),
            b"OR" => it.fold(first, |x, y| x | y),
            b"XOR" => it.fold(first, |x, y| x ^ y),
            _ => !first,
        };
    }
    let mut b = WriteBatch::new();
    // An empty result deletes the destination: `del` if it existed.
    let deletes = out.is_empty() && tri!(shared.read_value(&dst)).is_some();
    tri!(shared.clear_old(&mut b, &dst));
    if out.is_empty() {
        b.delete(&dst);
    } else {
        put_value(&mut b, &dst, &out, None);
    }
    tri!(shared.write(b));
    if !out.is_empty() {
        shared.notify(STRING, "set", &dst);
    } else if deletes {
        shared.notify(GENERIC, "del", &dst);
    }
    Reply::Int(len as i64)
}

pub fn lcs(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    // As Redis 7.0: the keys' types before the options.
    let read = |k: &Bytes| match shared.read_value(&db_key(conn.db, k)) {
        Ok(None) => Ok(Vec::new()),
        Ok(Some(Value::Str(_, d))) => Ok(d),
        Ok(Some(Value::Coll(_))) => Err(Reply::err(
            "ERR The specified keys must contain string values",
        )),
        Err(e) => Err(e),
    };
    let x = tri!(read(&a[0]));
    let y = tri!(read(&a[1]));
    let (mut len_only, mut idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    let mut i = 2;
    while i < a.len() {
        match a[i].to_ascii_uppercase().as_slice() {
            b"LEN" => len_only = true,
            b"IDX" => idx = true,
            b"WITHMATCHLEN" => with_len = true,
            b"MINMATCHLEN" if i + 1 < a.len() => {
                min_len = match parse_int(&a[i + 1]) {
                    Some(n) => n.max(0),
                    None => return not_integer(),
                };
                i += 1;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    if len_only && idx {
        return Reply::err("ERR If you want both the length and indexes, please just use IDX.");
    }
    // Redis's rule: the table (4 bytes a cell) within proto-max-bulk-len.
    let cells = (x.len() as u64 + 1) * (y.len() as u64 + 1);
    if cells.saturating_mul(4) > shared.settings.proto_max_bulk_len() as u64 {
        return Reply::err(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        );
    }
    let table = LcsTable::new(&x, &y);
    if len_only {
        return Reply::Int(i64::from(table.at(x.len(), y.len())));
    }
    let (text, matches) = table.walk(&x, &y, min_len as u64, with_len);
    if !idx {
        return Reply::bulk(text);
    }
    Reply::Map(vec![
        (Reply::bulk_str("matches"), Reply::Array(matches)),
        (
            Reply::bulk_str("len"),
            Reply::Int(i64::from(table.at(x.len(), y.len()))),
        ),
    ])
}

/// The dynamic-programming table of LCS: `at(i, j)` is the length of the
/// longest common subsequence of `x[..i]` and `y[..j]`.
struct LcsTable {
    width: usize,
    cells: Vec<u32>,
}

impl LcsTable {
    fn new(x: &[u8], y: &[u8]) -> LcsTable {
        let width = y.len() + 1;
        let mut cells = vec![0u32; (x.len() + 1) * width];
        for i in 1..=x.len() {
            for j in 1..=y.len() {
                cells[i * width + j] = if x[i - 1] == y[j - 1] {
                    cells[(i - 1) * width + j - 1] + 1
                } else {
                    cells[(i - 1) * width + j].max(cells[i * width + j - 1])
                };
            }
        }
        LcsTable { width, cells }
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// Walks back from the end as Redis does: the common subsequence, and
    /// the matched ranges (last first) of at least `min_len` bytes, each
    /// `[[x start, x end], [y start, y end]]` (plus the length with
    /// `with_len`).
    fn walk(&self, x: &[u8], y: &[u8], min_len: u64, with_len: bool) -> (Vec<u8>, Vec<Reply>) {
        let mut text = Vec::with_capacity(self.at(x.len(), y.len()) as usize);
        let mut matches = Vec::new();
        let (mut i, mut j) = (x.len(), y.len());
        // The current range: x[xs..=xe], y[ys..=ye]; None between ranges.
        let mut cur: Option<(usize, usize, usize, usize)> = None;
        while i > 0 && j > 0 {
            let emit;
            if x[i - 1] == y[j - 1] {
                text.push(x[i - 1]);
                cur = Some(match cur {
                    None => (i - 1, i - 1, j - 1, j - 1),
                    Some((_, xe, _, ye)) => (i - 1, xe, j - 1, ye),
                });
                emit = i == 1 || j == 1;
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                emit = cur.is_some();
            }
            if let (true, Some((xs, xe, ys, ye))) = (emit, cur) {
                let n = (xe - xs + 1) as u64;
                if n >= min_len {
                    let range = |s: usize, e: usize| {
                        Reply::Array(vec![Reply::Int(s as i64), Reply::Int(e as i64)])
                    };
                    let mut m = vec![range(xs, xe), range(ys, ye)];
                    if with_len {
                        m.push(Reply::Int(n as i64));
                    }
                    matches.push(Reply::Array(m));
                }
                cur = None;
            }
        }
        text.reverse();
        (text, matches)
    }
}

#[cfg(test)]
mod tests {
    use super::{bit_at, count_ones, find_bit};
    use proptest::prelude::*;

    proptest! {
        /// The byte-wise count and search answer what reading the range
        /// bit by bit does.
        #[test]
        fn counts_and_searches_match_bit_by_bit(
            data in proptest::collection::vec(any::<u8>(), 1..80),
            a in 0u64..640,
            b in 0u64..640,
            fill in 0u8..4,
            k in 0usize..80,
        ) {
            // Mostly-zero and mostly-one strings, and runs of 0x00 or 0xff
            // with one other byte, make whole bytes and words to skip.
            let k = k % data.len();
            let data: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, &x)| match fill {
                    0 => x & (x >> 3) & (x >> 5),
                    1 => x | (x << 2) | (x >> 4),
                    2 => if i == k { x } else { 0 },
                    _ => if i == k { x } else { 0xff },
                })
                .collect();
            let max = data.len() as u64 * 8 - 1;
            let (first, last) = (a.min(b).min(max), a.max(b).min(max));
            let bits = || first..=last;
            let want_count: u64 = bits().map(|i| u64::from(bit_at(&data, i))).sum();
            prop_assert_eq!(count_ones(&data, first, last), want_count);
            for want in [0u8, 1] {
                let naive = bits().find(|&i| bit_at(&data, i) == want);
                prop_assert_eq!(find_bit(&data, first, last, want), naive);
            }
        }
    }
}
