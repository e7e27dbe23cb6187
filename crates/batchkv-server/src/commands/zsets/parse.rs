//! Scores and ranges parsed as Redis 7.0 parses them: C's `strtod`
//! (decimal, hexadecimal, `inf`/`infinity`, `nan`) under Redis's rules for
//! a score (`getDoubleFromObject`), a score bound (`zslParseRange`) and a
//! lex bound (`zslParseLexRangeItem`).

use crate::meta;

/// C's `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.get(..word.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(word))
}

/// What C's `strtod` reads at the start of `s`: `(value, bytes read,
/// range error)`. Bytes read is 0 if `s` does not start with a number
/// (the value is then 0). The range error is `ERANGE` with an overflow to
/// ±infinity or an underflow to zero, the cases Redis rejects.
pub fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut i = s.iter().take_while(|&&c| is_c_space(c)).count();
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if neg { -v } else { v };
    let rest = &s[i..];
    if starts_with_ci(rest, b"inf") {
        let n = if starts_with_ci(rest, b"infinity") {
            8
        } else {
            3
        };
        return (sign(f64::INFINITY), i + n, false);
    }
    if starts_with_ci(rest, b"nan") {
        return (f64::NAN, i + nan_len(rest), false);
    }
    if rest.len() > 1 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        return match hex_float(&rest[2..]) {
            Some((v, n, erange)) => (sign(v), i + 2 + n, erange),
            // "0x" without a hex digit: only the "0" is a number.
            None => (sign(0.0), i + 1, false),
        };
    }
    match decimal(rest) {
        Some((v, n, erange)) => (sign(v), i + n, erange),
        None => (0.0, 0, false),
    }
}

/// Length of `nan` or `nan(chars)` at the start of `s` (which starts with
/// "nan").
fn nan_len(s: &[u8]) -> usize {
    if s.get(3) != Some(&b'(') {
        return 3;
    }
    let inner = s[4..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    if s.get(4 + inner) == Some(&b')') {
        5 + inner
    } else {
        3
    }
}

/// Number of ASCII digits at the start of `s`.
fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// An unsigned decimal number `digits [. digits] [e [sign] digits]` at the
/// start of `s`: `(value, bytes read, range error)`; `None` without a
/// digit.
fn decimal(s: &[u8]) -> Option<(f64, usize, bool)> {
    let int = digits(s);
    let mut n = int;
    let mut frac = 0;
    if s.get(n) == Some(&b'.') {
        frac = digits(&s[n + 1..]);
        n += 1 + frac;
    }
    if int + frac == 0 {
        return None;
    }
    let mantissa_nonzero = s[..n].iter().any(|c| (b'1'..=b'9').contains(c));
    if matches!(s.get(n), Some(b'e' | b'E')) {
        let signed = usize::from(matches!(s.get(n + 1), Some(b'+' | b'-')));
        let e = digits(&s[n + 1 + signed..]);
        if e > 0 {
            n += 1 + signed + e;
        }
    }
    // ASCII by construction, and in the grammar Rust's parser accepts.
    let v: f64 = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
    let erange = v.is_infinite() || (v == 0.0 && mantissa_nonzero);
    Some((v, n, erange))
}

/// A hexadecimal float after its `0x`: `hexdigits [. hexdigits]
/// [p [sign] digits]`: `(value, bytes read, range error)`; `None` without
/// a hex digit.
fn hex_float(s: &[u8]) -> Option<(f64, usize, bool)> {
    let (mut mant, mut exp, mut sticky, mut any, mut dot) = (0u64, 0i64, false, false, false);
    let mut n = 0;
    while let Some(&c) = s.get(n) {
        if c == b'.' && !dot {
            dot = true;
        } else if let Some(d) = (c as char).to_digit(16) {
            any = true;
            if mant >> 56 == 0 {
                mant = mant << 4 | u64::from(d);
                exp -= if dot { 4 } else { 0 };
            } else {
                // Beyond 57 significant bits: only whether a digit is
                // nonzero matters for the rounding.
                sticky |= d != 0;
                exp += if dot { 0 } else { 4 };
            }
        } else {
            break;
        }
        n += 1;
    }
    if !any {
        return None;
    }
    if matches!(s.get(n), Some(b'p' | b'P')) {
        let neg = s.get(n + 1) == Some(&b'-');
        let signed = usize::from(matches!(s.get(n + 1), Some(b'+' | b'-')));
        let start = n + 1 + signed;
        let e = digits(&s[start..]);
        if e > 0 {
            let val = s[start..start + e]
                .iter()
                .fold(0i64, |acc, c| (acc * 10 + i64::from(c - b'0')).min(1 << 20));
            exp += if neg { -val } else { val };
            n = start + e;
        }
    }
    // The sticky bit lies below the rounding position (mant then has at
    // least 57 bits), so the conversion rounds as a correct strtod would.
    let mut v = (mant | u64::from(sticky)) as f64;
    // Scale in steps that cannot overflow or underflow on their own.
    while exp != 0 {
        let step = exp.clamp(-1000, 1000);
        v *= 2f64.powi(step as i32);
        exp -= step;
    }
    let erange = v.is_infinite() || (v == 0.0 && mant != 0);
    Some((v, n, erange))
}

/// A score argument (ZADD, ZINCRBY, WEIGHTS): the whole argument is a
/// number, no leading space, no overflow or underflow to zero, not NaN.
pub fn parse_score(b: &[u8]) -> Option<f64> {
    if b.first().is_none_or(|&c| is_c_space(c)) {
        return None;
    }
    let (v, n, erange) = strtod(b);
    (n == b.len() && !erange && !v.is_nan()).then_some(v)
}

/// A score bound: `[(]number`, read as C reads the string (a NUL byte ends
/// it; an empty number is 0).
fn parse_score_bound(b: &[u8]) -> Option<(f64, bool)> {
    let (exclusive, body) = match b.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, b),
    };
    let (v, n, _) = strtod(body);
    let ends = body.get(n).is_none_or(|&c| c == 0);
    (ends && !v.is_nan()).then_some((v, exclusive))
}

/// A range of scores (`min`/`max` of ZCOUNT, ZRANGEBYSCORE, ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub min_ex: bool,
    pub max: f64,
    pub max_ex: bool,
}

impl ScoreRange {
    /// Parses `min` and `max`; `None` is Redis's "min or max is not a
    /// float".
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_ex) = parse_score_bound(min)?;
        let (max, max_ex) = parse_score_bound(max)?;
        Some(ScoreRange {
            min,
            min_ex,
            max,
            max_ex,
        })
    }

    /// The score-index keys `[lo, hi)` of this range in the index under
    /// `prefix` (`meta::score_prefix`); `None` if the range is empty.
    pub fn index_bounds(&self, prefix: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let key = |s: f64| u64::from_be_bytes(meta::score_key(s));
        let lo = key(self.min).checked_add(u64::from(self.min_ex))?;
        let hi = key(self.max).checked_add(u64::from(!self.max_ex));
        if hi.is_some_and(|hi| lo >= hi) {
            return None;
        }
        let with = |k: u64| [prefix, &k.to_be_bytes()].concat();
        let hi = hi.map_or_else(|| meta::prefix_end(prefix), with);
        Some((with(lo), hi))
    }
}

/// One end of a lex range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    /// `[m`
    Inclusive(Vec<u8>),
    /// `(m`
    Exclusive(Vec<u8>),
}

impl LexBound {
    fn parse(b: &[u8]) -> Option<LexBound> {
        let alone = b.get(1).is_none_or(|&c| c == 0);
        match b.split_first()? {
            (b'+', _) if alone => Some(LexBound::Max),
            (b'-', _) if alone => Some(LexBound::Min),
            (b'[', m) => Some(LexBound::Inclusive(m.to_vec())),
            (b'(', m) => Some(LexBound::Exclusive(m.to_vec())),
            _ => None,
        }
    }
}

/// A range of members (ZRANGEBYLEX, ZLEXCOUNT, ...), compared bytewise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    /// Parses `min` and `max`; `None` is Redis's "min or max not valid
    /// string range item".
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    /// The element keys `[lo, hi)` of this range among the elements under
    /// `prefix` (`meta::element_prefix`); `None` if the range is empty.
    pub fn element_bounds(&self, prefix: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        // `m ‖ 00` is the smallest member above `m`.
        let with = |m: &[u8], above: bool| {
            let mut k = [prefix, m].concat();
            if above {
                k.push(0);
            }
            k
        };
        let lo = match &self.min {
            LexBound::Min => prefix.to_vec(),
            LexBound::Max => return None,
            LexBound::Inclusive(m) => with(m, false),
            LexBound::Exclusive(m) => with(m, true),
        };
        let hi = match &self.max {
            LexBound::Max => meta::prefix_end(prefix),
            LexBound::Min => return None,
            LexBound::Inclusive(m) => with(m, true),
            LexBound::Exclusive(m) => with(m, false),
        };
        (lo < hi).then_some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_redis_does() {
        for (text, want) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("+5", 5.0),
            ("1.", 1.0),
            (".5", 0.5),
            ("1e5", 1e5),
            ("1E-2", 0.01),
            ("inf", f64::INFINITY),
            ("-INF", f64::NEG_INFINITY),
            ("+Infinity", f64::INFINITY),
            ("0x10", 16.0),
            ("0x1p3", 8.0),
            ("0x.8", 0.5),
            ("-0x1.8p-1", -0.75),
            ("1e-310", 1e-310),
            ("0e500", 0.0),
        ] {
            assert_eq!(parse_score(text.as_bytes()), Some(want), "{text}");
        }
        for bad in [
            "", " 1", "1 ", "1x", "nan", "NaN", "1e400", "-1e400", "1e-400", "0x", "infinit", "e5",
            ".", "--1", "1\0",
        ] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn strtod_reads_the_longest_number() {
        assert_eq!(strtod(b"1e5x"), (1e5, 3, false));
        assert_eq!(strtod(b"1ex"), (1.0, 1, false));
        assert_eq!(strtod(b"  -3"), (-3.0, 4, false));
        assert_eq!(strtod(b"0xg"), (0.0, 1, false));
        assert_eq!(strtod(b"infinityx").1, 8);
        assert_eq!(strtod(b"nan(12)").1, 7);
        assert_eq!(strtod(b"x"), (0.0, 0, false));
        assert_eq!(strtod(b"1e999"), (f64::INFINITY, 5, true));
        // 2^53 + 1 in hex rounds to even, as a decimal parse does.
        assert_eq!(strtod(b"0x20000000000001").0, 9007199254740992.0);
        assert_eq!(strtod(b"0x20000000000003").0, 9007199254740996.0);
    }

    #[test]
    fn score_bounds_follow_zsl_parse_range() {
        let r = ScoreRange::parse(b"(1.5", b"+inf").unwrap();
        assert_eq!(
            (r.min, r.min_ex, r.max, r.max_ex),
            (1.5, true, f64::INFINITY, false)
        );
        // C reads "" and "(" as 0, and leading spaces are skipped.
        assert!(ScoreRange::parse(b"", b"(").is_some());
        assert!(ScoreRange::parse(b" 1", b"( 2").is_some());
        assert!(ScoreRange::parse(b"1e400", b"2").is_some());
        for bad in [&b"1 "[..], b"x", b"nan", b"((1", b"[1"] {
            assert!(ScoreRange::parse(bad, b"1").is_none(), "{bad:?}");
        }
    }

    #[test]
    fn index_bounds_honour_exclusivity() {
        let p = b"P".to_vec();
        let k = |s: f64| [&p[..], &meta::score_key(s)].concat();
        let (lo, hi) = ScoreRange::parse(b"1", b"2")
            .unwrap()
            .index_bounds(&p)
            .unwrap();
        assert!(lo <= [k(1.0), b"a".to_vec()].concat() && k(1.0) >= lo);
        assert!([k(2.0), b"zz".to_vec()].concat() < hi);
        let (lo, hi) = ScoreRange::parse(b"(1", b"(2")
            .unwrap()
            .index_bounds(&p)
            .unwrap();
        assert!(k(1.0) < lo && [k(1.0), b"\xff".to_vec()].concat() < lo);
        assert!(k(2.0) >= hi);
        assert!(ScoreRange::parse(b"(1", b"1")
            .unwrap()
            .index_bounds(&p)
            .is_none());
        assert!(ScoreRange::parse(b"2", b"1")
            .unwrap()
            .index_bounds(&p)
            .is_none());
        assert!(ScoreRange::parse(b"-0", b"(0")
            .unwrap()
            .index_bounds(&p)
            .is_none());
        let (_, hi) = ScoreRange::parse(b"-inf", b"+inf")
            .unwrap()
            .index_bounds(&p)
            .unwrap();
        assert!([k(f64::INFINITY), b"\xff\xff".to_vec()].concat() < hi);
    }

    #[test]
    fn lex_bounds_follow_redis() {
        let p = b"P".to_vec();
        let r = LexRange::parse(b"[a", b"(c").unwrap();
        let (lo, hi) = r.element_bounds(&p).unwrap();
        assert_eq!((lo, hi), (b"Pa".to_vec(), b"Pc".to_vec()));
        let (lo, hi) = LexRange::parse(b"(a", b"[c")
            .unwrap()
            .element_bounds(&p)
            .unwrap();
        assert_eq!((lo, hi), (b"Pa\0".to_vec(), b"Pc\0".to_vec()));
        assert!(LexRange::parse(b"+", b"+")
            .unwrap()
            .element_bounds(&p)
            .is_none());
        assert!(LexRange::parse(b"-", b"-")
            .unwrap()
            .element_bounds(&p)
            .is_none());
        assert!(LexRange::parse(b"[a", b"(a")
            .unwrap()
            .element_bounds(&p)
            .is_none());
        assert!(LexRange::parse(b"[b", b"[a")
            .unwrap()
            .element_bounds(&p)
            .is_none());
        assert!(LexRange::parse(b"[a", b"[a")
            .unwrap()
            .element_bounds(&p)
            .is_some());
        for bad in [&b""[..], b"a", b"++", b"-a"] {
            assert!(LexRange::parse(bad, b"+").is_none(), "{bad:?}");
        }
        assert!(LexRange::parse(b"[", b"(").is_some());
    }
}
