//! BITFIELD and BITFIELD_RO: signed and unsigned integers of 1–64 bits
//! (unsigned: 1–63) at any bit offset of a string, numbered from the most
//! significant bit of the first byte as SETBIT numbers them, with
//! Redis 7.0's overflow rules (WRAP, SAT, FAIL), argument checks and
//! error texts.

use bytes::{Bytes, BytesMut};

use super::strings::tri;
use super::{parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, R, WM};
use crate::keyspace::{db_key, MIN_PROTO_MAX_BULK_LEN};
use crate::resp::{self, Reply};
use crate::shared::Shared;

pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("bitfield", -2, WM, KEY1, |s, c, a| bitfield(s, c, a, false)),
    spec("bitfield_ro", -2, R, KEY1, |s, c, a| {
        bitfield(s, c, a, true)
    })
    .batched(FieldGets::parse),
];

const BAD_TYPE: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    Set,
    IncrBy,
}

/// One operation: its field (signedness, width, bit offset), the SET
/// value or INCRBY increment, and the overflow rule in force.
struct Op {
    kind: Kind,
    signed: bool,
    bits: u32,
    offset: u64,
    arg: i64,
    overflow: Overflow,
}

/// `i1`..`i64` or `u1`..`u63` (lowercase, as Redis).
fn field_type(b: &[u8]) -> Result<(bool, u32), Reply> {
    let signed = match b.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(Reply::err(BAD_TYPE)),
    };
    match parse_int(&b[1..]) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(Reply::err(BAD_TYPE)),
    }
}

/// A bit offset, or `#N` for the N-th field of `bits` bits; its byte
/// must lie within `proto-max-bulk-len`.
fn field_offset(shared: &Shared, b: &[u8], bits: u32) -> Result<u64, Reply> {
    offset_within(b, bits, shared.settings.proto_max_bulk_len() as u64)
}

/// [`field_offset`] with the limit given: the field's first byte must be
/// below `limit`.
fn offset_within(b: &[u8], bits: u32, limit: u64) -> Result<u64, Reply> {
    let (hash, digits) = match b.strip_prefix(b"#") {
        Some(rest) => (true, rest),
        None => (false, b),
    };
    let n = parse_int(digits).ok_or_else(|| Reply::err(BAD_OFFSET))?;
    // Redis multiplies in a long long: it wraps where it overflows.
    let n = if hash {
        n.wrapping_mul(i64::from(bits))
    } else {
        n
    };
    if n < 0 || (n as u64 >> 3) >= limit {
        return Err(Reply::err(BAD_OFFSET));
    }
    Ok(n as u64)
}

/// The operations of `a` (after the key), all checked before any runs.
fn parse(shared: &Shared, a: &[Bytes]) -> Result<Vec<Op>, Reply> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 0;
    while j < a.len() {
        let rest = a.len() - j - 1;
        let name = a[j].to_ascii_lowercase();
        let kind = match name.as_slice() {
            b"get" if rest >= 2 => Kind::Get,
            b"set" if rest >= 3 => Kind::Set,
            b"incrby" if rest >= 3 => Kind::IncrBy,
            b"overflow" if rest >= 1 => {
                overflow = match a[j + 1].to_ascii_lowercase().as_slice() {
                    b"wrap" => Overflow::Wrap,
                    b"sat" => Overflow::Sat,
                    b"fail" => Overflow::Fail,
                    _ => return Err(Reply::err("ERR Invalid OVERFLOW type specified")),
                };
                j += 2;
                continue;
            }
            _ => return Err(syntax_error()),
        };
        let (signed, bits) = field_type(&a[j + 1])?;
        let offset = field_offset(shared, &a[j + 2], bits)?;
        let arg = if kind == Kind::Get {
            0
        } else {
            parse_int(&a[j + 3]).ok_or_else(super::not_integer)?
        };
        ops.push(Op {
            kind,
            signed,
            bits,
            offset,
            arg,
            overflow,
        });
        j += if kind == Kind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// The `GET type offset` operations of a batched BITFIELD_RO (the
/// batcher's [`Shape::FieldGets`]), packed so that the shape stays as
/// small as the others: at most [`FieldGets::MAX`] fields, each within the
/// first [`MIN_PROTO_MAX_BULK_LEN`] bytes (so below 2^23 bits and valid at
/// any `proto-max-bulk-len`).
///
/// [`Shape::FieldGets`]: crate::batcher::Shape::FieldGets
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldGets {
    /// Each field as `type << 24 | bit offset`: the type is the width in
    /// bits (1–64), `SIGNED` set for a signed field.
    fields: [u32; FieldGets::MAX],
    len: u8,
}

impl FieldGets {
    /// Fields a batched BITFIELD_RO reads at most; one with more runs
    /// alone.
    pub const MAX: usize = 4;
    const SIGNED: u32 = 0x80;

    /// The shape of `BITFIELD_RO key (GET type offset)+` (`a` after the
    /// name) with valid types and offsets; `None` (run alone, where the
    /// handler answers any error) for anything else: no GET, more than
    /// [`MAX`](Self::MAX), OVERFLOW, a bad type or an offset past
    /// [`MIN_PROTO_MAX_BULK_LEN`].
    pub fn parse(a: &[Bytes]) -> Option<crate::batcher::Shape> {
        let ops = &a[1..];
        if ops.is_empty() || !ops.len().is_multiple_of(3) || ops.len() / 3 > Self::MAX {
            return None;
        }
        let mut gets = FieldGets::default();
        for op in ops.chunks_exact(3) {
            if !op[0].eq_ignore_ascii_case(b"get") {
                return None;
            }
            let (signed, bits) = field_type(&op[1]).ok()?;
            // Below 2^23 bits: it fits under the type.
            let offset = offset_within(&op[2], bits, MIN_PROTO_MAX_BULK_LEN as u64).ok()?;
            let t = bits | if signed { Self::SIGNED } else { 0 };
            gets.fields[usize::from(gets.len)] = t << 24 | offset as u32;
            gets.len += 1;
        }
        Some(crate::batcher::Shape::FieldGets(gets))
    }

    /// Encodes the reply, the fields' values in `data` (a missing key's
    /// is empty: every field reads 0), as the handler's.
    pub fn encode(self, out: &mut BytesMut, data: &[u8]) {
        resp::encode_array_header(out, usize::from(self.len));
        for &f in &self.fields[..usize::from(self.len)] {
            let (t, offset) = (f >> 24, u64::from(f & 0xff_ffff));
            let bits = t & !Self::SIGNED;
            resp::encode_int(
                out,
                match t & Self::SIGNED != 0 {
                    true => get_signed(data, offset, bits),
                    false => get_unsigned(data, offset, bits) as i64,
                },
            );
        }
    }
}

/// `bits` bits from bit `offset` of `p`, most significant first; bits
/// past the end read 0.
fn get_unsigned(p: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for o in offset..offset + u64::from(bits) {
        let byte = p.get((o >> 3) as usize).copied().unwrap_or(0);
        v = (v << 1) | u64::from((byte >> (7 - (o & 7))) & 1);
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(p, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Stores the low `bits` bits of `v` at bit `offset` of `p` (long enough).
fn set_bits(p: &mut [u8], offset: u64, bits: u32, v: u64) {
    for j in 0..u64::from(bits) {
        let bit = (v >> (u64::from(bits) - 1 - j)) & 1;
        let o = offset + j;
        let mask = 1u8 << (7 - (o & 7));
        let byte = &mut p[(o >> 3) as usize];
        if bit == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr`
/// leaves `0..2^bits`, and what WRAP or SAT makes of it.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, rule: Overflow) -> Option<u64> {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        Some(if rule == Overflow::Sat { max } else { wrap() })
    } else if incr < 0 && incr < min_incr {
        Some(if rule == Overflow::Sat { 0 } else { wrap() })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow` for a `bits`-bit signed field.
fn signed_overflow(value: i64, incr: i64, bits: u32, rule: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits == 64 {
            return c as i64;
        }
        let mask = u64::MAX << bits;
        (if c & (1 << (bits - 1)) != 0 {
            c | mask
        } else {
            c & !mask
        }) as i64
    };
    let narrow = bits != 64;
    if value > max || (narrow && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        Some(if rule == Overflow::Sat { max } else { wrap() })
    } else if value < min
        || (narrow && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        Some(if rule == Overflow::Sat { min } else { wrap() })
    } else {
        None
    }
}

/// Runs a SET or INCRBY on `data`: the reply (the old value for SET, the
/// new one for INCRBY; nil when FAIL refuses an overflow).
fn write_field(data: &mut [u8], op: &Op) -> Reply {
    let (reply, new) = if op.signed {
        let old = get_signed(data, op.offset, op.bits);
        let (new, over) = match op.kind {
            Kind::IncrBy => match signed_overflow(old, op.arg, op.bits, op.overflow) {
                Some(w) => (w, true),
                None => (old.wrapping_add(op.arg), false),
            },
            _ => match signed_overflow(op.arg, 0, op.bits, op.overflow) {
                Some(w) => (w, true),
                None => (op.arg, false),
            },
        };
        if over && op.overflow == Overflow::Fail {
            return Reply::Nil;
        }
        let reply = if op.kind == Kind::IncrBy { new } else { old };
        (reply, new as u64)
    } else {
        let old = get_unsigned(data, op.offset, op.bits);
        let (new, over) = match op.kind {
            Kind::IncrBy => match unsigned_overflow(old, op.arg, op.bits, op.overflow) {
                Some(w) => (w, true),
                None => (old.wrapping_add(op.arg as u64), false),
            },
            _ => match unsigned_overflow(op.arg as u64, 0, op.bits, op.overflow) {
                Some(w) => (w, true),
                None => (op.arg as u64, false),
            },
        };
        if over && op.overflow == Overflow::Fail {
            return Reply::Nil;
        }
        let reply = if op.kind == Kind::IncrBy { new } else { old };
        (reply as i64, new)
    };
    set_bits(data, op.offset, op.bits, new);
    Reply::Int(reply)
}

/// BITFIELD (and BITFIELD_RO, `read_only`): every operation is checked
/// first; then, with a SET or INCRBY, the string is created or grown to
/// hold the furthest field written and stored once (TTL kept), even when
/// FAIL refused every write, as in Redis.
fn bitfield(shared: &Shared, conn: &mut ConnState, a: &[Bytes], read_only: bool) -> Reply {
    let ops = tri!(parse(shared, &a[1..]));
    let key = db_key(conn.db, &a[0]);
    let last_bit = ops
        .iter()
        .filter(|o| o.kind != Kind::Get)
        .map(|o| o.offset + u64::from(o.bits) - 1)
        .max();
    let Some(last_bit) = last_bit else {
        let data = tri!(shared.read(&key)).map_or(Vec::new(), |(_, d)| d);
        let replies = ops
            .iter()
            .map(|o| match o.signed {
                true => Reply::Int(get_signed(&data, o.offset, o.bits)),
                false => Reply::Int(get_unsigned(&data, o.offset, o.bits) as i64),
            })
            .collect();
        return Reply::Array(replies);
    };
    if read_only {
        return Reply::err("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let _g = shared.lock_keys(&[&key]);
    let stored = tri!(shared.read(&key));
    let existed = stored.is_some();
    let (exp, mut data) = stored.unwrap_or((None, Vec::new()));
    let len = (last_bit >> 3) as usize + 1;
    // As Redis's `dirty`: the string is created or grows.
    let dirty = !existed || data.len() < len;
    if data.len() < len {
        tri!(super::strings::check_string_length(shared, len as u64, 0));
        data.resize(len, 0);
    }
    // As Redis: `setbit` if a SET or INCRBY that did not fail on overflow
    // changed its field or the string was created or grew.
    let mut changed = false;
    let replies = ops
        .iter()
        .map(|o| match o.kind {
            Kind::Get if o.signed => Reply::Int(get_signed(&data, o.offset, o.bits)),
            Kind::Get => Reply::Int(get_unsigned(&data, o.offset, o.bits) as i64),
            _ => {
                let bytes =
                    (o.offset / 8) as usize..=((o.offset + u64::from(o.bits) - 1) / 8) as usize;
                let old = data[bytes.clone()].to_vec();
                let reply = write_field(&mut data, o);
                changed |= !matches!(reply, Reply::Nil) && (dirty || data[bytes] != old[..]);
                reply
            }
        })
        .collect();
    tri!(shared.put(&key, &data, exp));
    if changed {
        shared.notify(crate::notify::STRING, "setbit", &key);
    }
    Reply::Array(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_and_write_msb_first_across_bytes() {
        let mut p = vec![0u8; 3];
        set_bits(&mut p, 4, 12, 0xabc);
        assert_eq!(p, [0x0a, 0xbc, 0x00]);
        assert_eq!(get_unsigned(&p, 4, 12), 0xabc);
        assert_eq!(get_signed(&p, 4, 4), -6); // 0b1010
        assert_eq!(get_unsigned(&p, 20, 8), 0, "past the end reads 0");
        assert_eq!(get_signed(&[0xff; 8], 0, 64), -1);
    }

    #[test]
    fn overflow_rules_match_redis() {
        // u8: 250 + 10 wraps to 4, saturates at 255.
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), Some(4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), Some(255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), Some(0));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Wrap), Some(251));
        assert_eq!(unsigned_overflow(5, 10, 8, Overflow::Wrap), None);
        // A negative SET value of an unsigned field is a huge one.
        assert_eq!(
            unsigned_overflow(-1i64 as u64, 0, 8, Overflow::Sat),
            Some(255)
        );
        // i8: 120 + 10 wraps to -126, saturates at 127 / -128.
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), Some(-126));
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Sat), Some(127));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), Some(-128));
        assert_eq!(signed_overflow(300, 0, 8, Overflow::Wrap), Some(44));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            Some(i64::MIN)
        );
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Sat),
            Some(i64::MAX)
        );
        assert_eq!(
            signed_overflow(i64::MIN, -1, 64, Overflow::Sat),
            Some(i64::MIN)
        );
        assert_eq!(signed_overflow(-5, 3, 64, Overflow::Fail), None);
    }

    #[test]
    fn batched_gets_read_the_fields_they_were_given() {
        let args = |line: &str| -> Vec<Bytes> {
            line.split(' ').map(|w| Bytes::from(w.to_owned())).collect()
        };
        let Some(crate::batcher::Shape::FieldGets(f)) =
            FieldGets::parse(&args("b GET i64 #1 get u63 8388544 GET u8 3 GET i4 0"))
        else {
            panic!("not batched");
        };
        let mut data = vec![0u8; 1 << 20];
        for (i, b) in data.iter_mut().enumerate().take(64) {
            *b = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
        data[(8388544 / 8)..(8388544 / 8) + 8].copy_from_slice(&[0x81; 8]);
        let mut out = BytesMut::new();
        f.encode(&mut out, &data);
        let want = format!(
            "*4\r\n:{}\r\n:{}\r\n:{}\r\n:{}\r\n",
            get_signed(&data, 64, 64),
            get_unsigned(&data, 8388544, 63),
            get_unsigned(&data, 3, 8),
            get_signed(&data, 0, 4),
        );
        assert_eq!(std::str::from_utf8(&out).unwrap(), want);
        // An absent key's fields are all 0.
        out.clear();
        f.encode(&mut out, &[]);
        assert_eq!(&out[..], b"*4\r\n:0\r\n:0\r\n:0\r\n:0\r\n");
    }

    #[test]
    fn types_are_checked_as_redis_does() {
        assert_eq!(field_type(b"i64").ok(), Some((true, 64)));
        assert_eq!(field_type(b"u63").ok(), Some((false, 63)));
        for bad in [&b"u64"[..], b"i65", b"i0", b"I8", b"x8", b"u", b"", b"u+8"] {
            assert!(field_type(bad).is_err(), "{bad:?}");
        }
    }
}
