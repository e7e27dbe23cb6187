//! Streams: entry IDs as Redis parses, orders and prints them, and the
//! stored form of an entry's fields (`docs/format/server-keyspace.md` §5b).
//!
//! # An entry's value (on disk: never change)
//! `n ‖ (len ‖ bytes) × 2n`: `n`, the number of field-value pairs, then
//! each field and value in the order XADD gave them, each as its length
//! (4 bytes little-endian) and its bytes. `n` is 4 bytes little-endian.

use std::fmt;

/// A stream entry ID, `ms-seq`; IDs order by `ms`, then `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID as an element key's `sub`: ms then seq, big-endian, so that
    /// keys sort as IDs do.
    pub fn to_key(self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }

    /// The ID of an element key's `sub`; `None` if it is not 16 bytes.
    pub fn from_key(sub: &[u8]) -> Option<StreamId> {
        let sub: &[u8; 16] = sub.try_into().ok()?;
        let (ms, seq) = sub.split_at(8);
        Some(StreamId {
            ms: u64::from_be_bytes(ms.try_into().ok()?),
            seq: u64::from_be_bytes(seq.try_into().ok()?),
        })
    }

    /// The next ID (Redis's `streamIncrID`); `None` after [`StreamId::MAX`].
    pub fn incr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId { ms: ms + 1, seq: 0 }),
            (ms, seq) => Some(StreamId { ms, seq: seq + 1 }),
        }
    }

    /// The previous ID (`streamDecrID`); `None` before `0-0`.
    pub fn decr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId {
                ms: ms - 1,
                seq: u64::MAX,
            }),
            (ms, seq) => Some(StreamId { ms, seq: seq - 1 }),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's error for an ID it cannot parse.
pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// How an ID argument may be written (Redis's `streamGenericParseIDOrReply`
/// flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdSyntax {
    /// The sequence of `ms` alone.
    pub missing_seq: u64,
    /// `-` and `+` are refused (IDs of entries, not range bounds).
    pub strict: bool,
    /// `ms-*` is accepted (XADD): the sequence is then left to the stream.
    pub auto_seq: bool,
}

/// A parsed ID argument: the ID, and whether its sequence was given
/// (false only for `ms-*`, whose sequence is 0 here).
pub fn parse_id(arg: &[u8], syntax: IdSyntax) -> Option<(StreamId, bool)> {
    // Redis copies the argument into a 128-byte C string: longer ones are
    // invalid, and the text ends at the first NUL.
    if arg.len() > 127 {
        return None;
    }
    let text = arg.split(|&c| c == 0).next().unwrap_or_default();
    match text {
        b"-" | b"+" if syntax.strict => None,
        b"-" => Some((StreamId::ZERO, true)),
        b"+" => Some((StreamId::MAX, true)),
        _ => {
            let (ms, seq) = match text.iter().position(|&c| c == b'-') {
                Some(i) => (&text[..i], Some(&text[i + 1..])),
                None => (text, None),
            };
            let ms = string_to_u64(ms)?;
            match seq {
                Some(b"*") if syntax.auto_seq => Some((StreamId { ms, seq: 0 }, false)),
                Some(seq) => Some((
                    StreamId {
                        ms,
                        seq: string_to_u64(seq)?,
                    },
                    true,
                )),
                None => Some((
                    StreamId {
                        ms,
                        seq: syntax.missing_seq,
                    },
                    true,
                )),
            }
        }
    }
}

/// A range bound (XRANGE, XREVRANGE): `(ID` excludes the ID (then `-` and
/// `+` are refused), otherwise as [`parse_id`] without `ms-*`. Returns the
/// ID and whether it is excluded.
pub fn parse_bound(arg: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    let exclude = arg.len() > 1 && arg[0] == b'(';
    let body = if exclude { &arg[1..] } else { arg };
    let syntax = IdSyntax {
        missing_seq,
        strict: exclude,
        auto_seq: false,
    };
    parse_id(body, syntax).map(|(id, _)| (id, exclude))
}

/// Redis's `string2ull`: an integer as `string2ll` reads it (negative ones
/// refused), else what C's `strtoull(s, 10)` accepts whole (leading
/// white space, a sign — a `-` negates modulo 2^64 — and digits, no
/// overflow).
fn string_to_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::commands::parse_int(s) {
        return u64::try_from(v).ok();
    }
    let mut rest = s;
    while let [c, tail @ ..] = rest {
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
            break;
        }
        rest = tail;
    }
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in rest {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// An entry's stored value (module docs) from its field-value arguments.
pub fn encode_fields<B: AsRef<[u8]>>(pairs: &[B]) -> Vec<u8> {
    let len: usize = pairs.iter().map(|p| 4 + p.as_ref().len()).sum();
    let mut v = Vec::with_capacity(4 + len);
    v.extend_from_slice(&((pairs.len() / 2) as u32).to_le_bytes());
    for p in pairs {
        let p = p.as_ref();
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(p);
    }
    v
}

/// The fields and values of a stored entry, alternating; `None` if `v` is
/// not an entry's value.
pub fn decode_fields(v: &[u8]) -> Option<Vec<&[u8]>> {
    let (n, mut rest) = v.split_first_chunk::<4>()?;
    let n = u32::from_le_bytes(*n) as usize;
    let mut out = Vec::with_capacity(n.checked_mul(2)?.min(rest.len() / 4));
    for _ in 0..n * 2 {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return None;
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: IdSyntax = IdSyntax {
        missing_seq: 0,
        strict: true,
        auto_seq: false,
    };
    const XADD: IdSyntax = IdSyntax {
        missing_seq: 0,
        strict: true,
        auto_seq: true,
    };
    const RANGE: IdSyntax = IdSyntax {
        missing_seq: 7,
        strict: false,
        auto_seq: false,
    };

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn ids_parse_as_redis_parses_them() {
        assert_eq!(parse_id(b"5-3", STRICT), Some((id(5, 3), true)));
        assert_eq!(parse_id(b"5", STRICT), Some((id(5, 0), true)));
        assert_eq!(parse_id(b"5", RANGE), Some((id(5, 7), true)));
        assert_eq!(parse_id(b"-", RANGE), Some((StreamId::ZERO, true)));
        assert_eq!(parse_id(b"+", RANGE), Some((StreamId::MAX, true)));
        assert_eq!(parse_id(b"-", STRICT), None);
        assert_eq!(parse_id(b"5-*", XADD), Some((id(5, 0), false)));
        assert_eq!(parse_id(b"5-*", STRICT), None);
        assert_eq!(parse_id(b"-5", STRICT), None);
        assert_eq!(parse_id(b"5-", STRICT), None);
        assert_eq!(parse_id(b"a-1", STRICT), None);
        assert_eq!(parse_id(b"1-2-3", STRICT), None);
        // strtoull's leniency beyond string2ll.
        assert_eq!(parse_id(b" 5-+3", STRICT), Some((id(5, 3), true)));
        assert_eq!(parse_id(b"-0", RANGE), None, "'-' splits first: empty ms");
        assert_eq!(
            parse_id(b"18446744073709551615-18446744073709551615", STRICT),
            Some((StreamId::MAX, true))
        );
        assert_eq!(parse_id(b"18446744073709551616", STRICT), None);
        assert_eq!(parse_id(&[b'1'; 128], STRICT), None);
        assert_eq!(parse_id(b"7\x00junk", STRICT), Some((id(7, 0), true)));
    }

    #[test]
    fn bounds_exclude_with_a_parenthesis() {
        assert_eq!(parse_bound(b"(5-1", 0), Some((id(5, 1), true)));
        assert_eq!(parse_bound(b"(-", 0), None);
        assert_eq!(parse_bound(b"(", 0), None);
        assert_eq!(parse_bound(b"+", u64::MAX), Some((StreamId::MAX, false)));
        assert_eq!(parse_bound(b"3", u64::MAX), Some((id(3, u64::MAX), false)));
    }

    #[test]
    fn ids_step_and_sort_as_their_keys() {
        assert_eq!(id(1, u64::MAX).incr(), Some(id(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(id(2, 0).decr(), Some(id(1, u64::MAX)));
        assert_eq!(StreamId::ZERO.decr(), None);
        let ids = [id(0, 1), id(0, u64::MAX), id(1, 0), id(u64::MAX, 0)];
        for w in ids.windows(2) {
            assert!(w[0] < w[1] && w[0].to_key() < w[1].to_key());
        }
        assert_eq!(StreamId::from_key(&id(3, 9).to_key()), Some(id(3, 9)));
        assert_eq!(id(3, 9).to_string(), "3-9");
    }

    #[test]
    fn fields_round_trip_and_damage_is_refused() {
        let v = encode_fields(&[&b"f"[..], b"", b"g", b"value"]);
        assert_eq!(v[..4], 2u32.to_le_bytes());
        assert_eq!(
            decode_fields(&v),
            Some(vec![&b"f"[..], b"", b"g", b"value"])
        );
        assert_eq!(decode_fields(&v[..v.len() - 1]), None);
        assert_eq!(decode_fields(&[v.as_slice(), b"x"].concat()), None);
        assert_eq!(decode_fields(b"\xff\xff\xff\xff"), None);
    }
}
