//! RESP: parsing requests (multibulk and inline) and encoding replies in
//! RESP2 or RESP3.
//!
//! Requests are parsed from the connection's read buffer without copying
//! argument bytes: a complete request is split off the buffer as one
//! [`Bytes`] and every argument is a slice of it. The only copy of a value
//! is the one the engine makes when it is written.
//!
//! Limits (checked before the bytes they describe are read):
//! - a bulk length above `max_bulk_len` is "invalid bulk length";
//! - a multibulk count above [`MAX_MULTIBULK_LEN`] is "invalid multibulk
//!   length";
//! - a header or inline line longer than [`MAX_INLINE_LEN`] without a
//!   newline is "too big ..." as in Redis.
//!
//! Error texts are Redis's (`networking.c`), so clients and tests that
//! match them keep working.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Longest inline request or `*`/`$` header line (Redis's
/// `PROTO_INLINE_MAX_SIZE`).
pub const MAX_INLINE_LEN: usize = 64 * 1024;
/// Most arguments in one multibulk request.
pub const MAX_MULTIBULK_LEN: i64 = 1024 * 1024;

/// A malformed request: the connection gets `-ERR <text>` and is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(s: impl Into<String>) -> Self {
        ProtocolError(format!("Protocol error: {}", s.into()))
    }

    /// A connection's incomplete request has grown past `limit` bytes.
    pub fn query_buffer_limit(limit: usize) -> Self {
        ProtocolError::new(format!(
            "request exceeds client-query-buffer-limit ({limit} bytes)"
        ))
    }
}

/// Parses the requests of one connection. A multibulk request that is not
/// complete yet keeps its progress here (the arguments found so far and
/// where the next one starts, as offsets into the buffer, which only grows
/// at its end until the request is taken), so a request of n arguments
/// arriving over many reads is scanned once, not once per read (Redis
/// keeps the same state per client).
#[derive(Debug, Default)]
pub struct RequestParser {
    partial: Option<Partial>,
    /// Where each complete argument of the request being parsed lies in
    /// the buffer; kept between requests (up to [`SPANS_KEPT`] entries) so
    /// that a request does not allocate it.
    spans: Vec<(usize, usize)>,
}

/// Span entries a parser keeps allocated between requests.
const SPANS_KEPT: usize = 1024;

/// An incomplete multibulk request at the front of the buffer (its
/// complete arguments are the parser's `spans`).
#[derive(Debug)]
struct Partial {
    /// Arguments announced by the `*` header.
    count: usize,
    /// Where the next argument's `$` header starts.
    pos: usize,
}

impl RequestParser {
    /// Parses one request from the front of `buf`. Returns `Ok(None)` when
    /// the buffer does not yet hold a complete request (nothing is
    /// consumed; an incomplete multibulk request's progress is kept), and
    /// `Ok(Some(args))` with the request removed from `buf`. An empty
    /// inline line yields `Some(vec![])`, which callers skip. `buf` must be
    /// the buffer of the last call, with bytes only appended since.
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        max_bulk_len: usize,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let partial = match self.partial.take() {
            Some(p) => p,
            None if buf.is_empty() => return Ok(None),
            None if buf[0] == b'*' => match multibulk_header(buf)? {
                Header::Incomplete => return Ok(None),
                Header::Empty(len) => {
                    buf.advance(len);
                    return Ok(Some(Vec::new()));
                }
                Header::Args(p) => {
                    self.spans.clear();
                    self.spans.reserve(p.count.min(SPANS_KEPT));
                    p
                }
            },
            None => return parse_inline(buf),
        };
        self.resume(buf, max_bulk_len, partial)
    }

    fn resume(
        &mut self,
        buf: &mut BytesMut,
        max_bulk_len: usize,
        mut p: Partial,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        while self.spans.len() < p.count {
            match bulk_arg(buf, p.pos, max_bulk_len)? {
                Some((start, end)) => {
                    self.spans.push((start, end));
                    p.pos = end + 2;
                }
                None => {
                    self.partial = Some(p);
                    return Ok(None);
                }
            }
        }
        let frame = buf.split_to(p.pos).freeze();
        let args = self.spans.iter().map(|&(a, b)| frame.slice(a..b)).collect();
        self.spans.clear();
        if self.spans.capacity() > SPANS_KEPT {
            self.spans = Vec::new();
        }
        Ok(Some(args))
    }
}

/// Finds the line starting at `from`: returns the index of its `\r`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr::memchr(b'\r', &buf[at..]) {
        let r = at + i;
        if r + 1 >= buf.len() {
            return None;
        }
        if buf[r + 1] == b'\n' {
            return Some(r);
        }
        at = r + 1;
    }
    None
}

/// Parses a header number as Redis's `string2ll` does (no `+`, no spaces).
fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

/// What a multibulk request's `*<count>` header says.
enum Header {
    /// No complete line yet.
    Incomplete,
    /// A count ≤ 0: an empty request, `len` bytes long.
    Empty(usize),
    /// Arguments follow.
    Args(Partial),
}

fn multibulk_header(buf: &[u8]) -> Result<Header, ProtocolError> {
    let Some(eol) = find_crlf(buf, 0) else {
        if buf.len() > MAX_INLINE_LEN {
            return Err(ProtocolError::new("too big mbulk count string"));
        }
        return Ok(Header::Incomplete);
    };
    let count = match parse_i64(&buf[1..eol]) {
        Some(n) if n <= MAX_MULTIBULK_LEN => n,
        _ => return Err(ProtocolError::new("invalid multibulk length")),
    };
    if count <= 0 {
        return Ok(Header::Empty(eol + 2));
    }
    Ok(Header::Args(Partial {
        count: count as usize,
        pos: eol + 2,
    }))
}

/// The bulk-string argument whose `$<len>` header starts at `pos`: its
/// bytes' range, or `None` while it is incomplete. A length over
/// `max_bulk_len` is refused as soon as its header is complete.
fn bulk_arg(
    buf: &[u8],
    pos: usize,
    max_bulk_len: usize,
) -> Result<Option<(usize, usize)>, ProtocolError> {
    if let Some((len, start)) = short_bulk_header(buf, pos) {
        if len <= max_bulk_len as u64 {
            let end = start + len as usize;
            return Ok((buf.len() >= end + 2).then_some((start, end)));
        }
    }
    if pos >= buf.len() {
        return Ok(None);
    }
    if buf[pos] != b'$' {
        return Err(ProtocolError::new(format!(
            "expected '$', got '{}'",
            buf[pos] as char
        )));
    }
    let Some(eol) = find_crlf(buf, pos) else {
        if buf.len() - pos > MAX_INLINE_LEN {
            return Err(ProtocolError::new("too big bulk count string"));
        }
        return Ok(None);
    };
    let len = match parse_i64(&buf[pos + 1..eol]) {
        Some(n) if n >= 0 && n as u64 <= max_bulk_len as u64 => n as usize,
        _ => return Err(ProtocolError::new("invalid bulk length")),
    };
    let start = eol + 2;
    if buf.len() < start + len + 2 {
        return Ok(None);
    }
    Ok(Some((start, start + len)))
}

/// The common bulk header at `pos` in one pass: `$`, 1 to 18 digits
/// without a leading zero (or `0` alone), CRLF, all in `buf`. Returns the
/// length and where the argument's bytes start; `None` for anything else
/// (incomplete, malformed, longer), which [`bulk_arg`]'s general path
/// waits for or refuses exactly as before. Where this accepts a header,
/// that path finds the same line (its first CRLF) and the same number.
#[inline]
fn short_bulk_header(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let rest = buf.get(pos..)?;
    if rest.first() != Some(&b'$') {
        return None;
    }
    let mut len: u64 = 0;
    let mut i = 1;
    while i <= 18 {
        match rest.get(i) {
            Some(&c) if c.is_ascii_digit() => len = len * 10 + u64::from(c - b'0'),
            _ => break,
        }
        i += 1;
    }
    let digits = i - 1;
    let leading_zero = digits > 1 && rest[1] == b'0';
    if digits == 0 || leading_zero || rest.get(i..i + 2) != Some(b"\r\n") {
        return None;
    }
    Some((len, pos + i + 2))
}

fn parse_inline(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let Some(nl) = memchr::memchr(b'\n', buf) else {
        if buf.len() > MAX_INLINE_LEN {
            return Err(ProtocolError::new("too big inline request"));
        }
        return Ok(None);
    };
    let line = buf.split_to(nl + 1);
    let mut body = &line[..nl];
    if body.last() == Some(&b'\r') {
        body = &body[..body.len() - 1];
    }
    split_args(body)
        .map(Some)
        .ok_or_else(|| ProtocolError::new("unbalanced quotes in request"))
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits an inline command line into arguments the way `redis-cli` and
/// Redis's `sdssplitargs` do: whitespace separates, `"..."` understands
/// `\n \r \t \b \a \\ \" \xHH`, `'...'` only `\'`. A closing quote must be
/// followed by whitespace or the end. `None` on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 3 < n && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[i + 2]), hex_val(line[i + 3])) {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < n {
                    cur.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                cur.push(c);
                i += 1;
            } else if in_sq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    cur.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                cur.push(c);
                i += 1;
            } else {
                if i >= n || line[i].is_ascii_whitespace() {
                    break;
                }
                match line[i] {
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => cur.push(c),
                }
                i += 1;
            }
        }
        out.push(Bytes::from(cur));
    }
}

/// A reply, rendered per protocol version by [`Reply::encode`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`
    Simple(&'static str),
    /// `+...` with an owned text (e.g. TYPE's answer).
    Status(String),
    /// `-...`: the full text, e.g. `ERR syntax error`.
    Error(String),
    Int(i64),
    Bulk(Bytes),
    /// RESP2 `$-1`, RESP3 `_`.
    Nil,
    /// RESP2 `*-1`, RESP3 `_`.
    NilArray,
    Array(Vec<Reply>),
    /// RESP3 `%`; RESP2 flattens it into an array of key, value, ...
    Map(Vec<(Reply, Reply)>),
    /// Pairs such as ZRANGE WITHSCORES's: RESP3 an array of 2-element
    /// arrays; RESP2 one flat array.
    Pairs(Vec<(Reply, Reply)>),
    /// RESP3 `~` (SMEMBERS, ...); RESP2 an array.
    Set(Vec<Reply>),
    /// A reply already encoded for the connection's protocol (hot
    /// multi-element replies such as HMGET's, written straight from the
    /// engine's values).
    Encoded(BytesMut),
    /// RESP3 `,` (ZSCORE, ...); RESP2 a bulk string. Both print the value
    /// as Redis 7.0 does ([`format_score`]).
    Double(f64),
    /// RESP3 `>` (Pub/Sub confirmations and messages); RESP2 an array.
    Push(Vec<Reply>),
    /// Several top-level replies written one after another, for commands
    /// that answer with one reply per argument (SUBSCRIBE a b: two
    /// confirmations).
    Frames(Vec<Reply>),
    /// Text for humans (INFO, CLIENT LIST, CLIENT INFO): RESP3 a verbatim
    /// string of format `txt`; RESP2 a bulk string.
    Verbatim(Bytes),
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::Simple("OK")
    }

    pub fn err(s: impl Into<String>) -> Reply {
        Reply::Error(s.into())
    }

    pub fn bulk(b: impl Into<Bytes>) -> Reply {
        Reply::Bulk(b.into())
    }

    pub fn bulk_str(s: &str) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// Appends the encoding for protocol version `proto` (2 or 3) to `out`.
    pub fn encode(&self, proto: u8, out: &mut BytesMut) {
        match self {
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => encode_error(out, s),
            Reply::Int(i) => encode_int(out, *i),
            Reply::Bulk(b) => encode_bulk(out, b),
            Reply::Nil => encode_nil(proto, out),
            Reply::NilArray => {
                if proto >= 3 {
                    out.put_slice(b"_\r\n");
                } else {
                    out.put_slice(b"*-1\r\n");
                }
            }
            Reply::Array(items) => {
                encode_header(out, b'*', items.len());
                for it in items {
                    it.encode(proto, out);
                }
            }
            Reply::Pairs(pairs) => {
                if proto >= 3 {
                    encode_header(out, b'*', pairs.len());
                } else {
                    encode_header(out, b'*', 2 * pairs.len());
                }
                for (a, b) in pairs {
                    if proto >= 3 {
                        out.put_slice(b"*2\r\n");
                    }
                    a.encode(proto, out);
                    b.encode(proto, out);
                }
            }
            Reply::Set(items) => {
                let tag = if proto >= 3 { b'~' } else { b'*' };
                encode_header(out, tag, items.len());
                for it in items {
                    it.encode(proto, out);
                }
            }
            Reply::Encoded(b) => out.put_slice(b),
            Reply::Push(items) => {
                let tag = if proto >= 3 { b'>' } else { b'*' };
                encode_header(out, tag, items.len());
                for it in items {
                    it.encode(proto, out);
                }
            }
            Reply::Verbatim(b) => {
                if proto >= 3 {
                    encode_header(out, b'=', b.len() + 4);
                    out.put_slice(b"txt:");
                    out.put_slice(b);
                    out.put_slice(b"\r\n");
                } else {
                    encode_bulk(out, b);
                }
            }
            Reply::Frames(replies) => {
                for r in replies {
                    r.encode(proto, out);
                }
            }
            Reply::Double(d) => encode_double(proto, out, *d),
            Reply::Map(pairs) => {
                if proto >= 3 {
                    encode_header(out, b'%', pairs.len());
                } else {
                    encode_header(out, b'*', 2 * pairs.len());
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
        }
    }
}

fn line(out: &mut BytesMut, tag: u8, body: &[u8]) {
    out.reserve(body.len() + 3);
    out.put_u8(tag);
    out.put_slice(body);
    out.put_slice(b"\r\n");
}

/// Appends an error reply `-text`. CR and LF become spaces: an error may
/// echo client bytes, and a line break in it would let them inject
/// replies (Redis does the same).
pub fn encode_error(out: &mut BytesMut, text: &str) {
    let start = out.len();
    line(out, b'-', text.as_bytes());
    let end = out.len() - 2;
    for b in &mut out[start + 1..end] {
        if *b == b'\r' || *b == b'\n' {
            *b = b' ';
        }
    }
}

/// Appends a simple string `+text` (text without CR or LF).
pub fn encode_simple(out: &mut BytesMut, text: &str) {
    debug_assert!(!text.contains(['\r', '\n']));
    line(out, b'+', text.as_bytes());
}

/// Appends an integer reply `:i`.
pub fn encode_int(out: &mut BytesMut, i: i64) {
    // One digit (SMISMEMBER's and SISMEMBER's 0 and 1, most counts): four
    // bytes, without the general digit loop.
    if (0..10).contains(&i) {
        out.put_slice(&[b':', b'0' + i as u8, b'\r', b'\n']);
        return;
    }
    let mut hdr = [0u8; 24];
    let n = if i < 0 {
        // `-` then the magnitude's digits: `write_len_header` writes the
        // tag, so the tag slot takes `:` and the sign is shifted in.
        let m = write_len_header(&mut hdr[1..], b'-', i.unsigned_abs());
        hdr[0] = b':';
        m + 1
    } else {
        write_len_header(&mut hdr, b':', i as u64)
    };
    out.put_slice(&hdr[..n]);
}

/// Appends a bulk string.
pub fn encode_bulk(out: &mut BytesMut, b: &[u8]) {
    let mut hdr = [0u8; 24];
    let n = write_len_header(&mut hdr, b'$', b.len() as u64);
    out.reserve(n + b.len() + 2);
    out.put_slice(&hdr[..n]);
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

/// Appends an array header `*n`.
pub fn encode_array_header(out: &mut BytesMut, n: usize) {
    encode_header(out, b'*', n);
}

/// Appends an aggregate's (or verbatim string's) header `tag n`.
fn encode_header(out: &mut BytesMut, tag: u8, n: usize) {
    let mut hdr = [0u8; 24];
    let len = write_len_header(&mut hdr, tag, n as u64);
    out.put_slice(&hdr[..len]);
}

/// Appends a null array for `proto` (RESP2 `*-1`, RESP3 `_`).
pub fn encode_nil_array(proto: u8, out: &mut BytesMut) {
    out.put_slice(if proto >= 3 { b"_\r\n" } else { b"*-1\r\n" });
}

/// Appends a null bulk string for `proto`.
pub fn encode_nil(proto: u8, out: &mut BytesMut) {
    if proto >= 3 {
        out.put_slice(b"_\r\n");
    } else {
        out.put_slice(b"$-1\r\n");
    }
}

/// Writes `tag len \r\n` into `hdr` without allocating; returns its length.
fn write_len_header(hdr: &mut [u8], tag: u8, mut len: u64) -> usize {
    // Up to three digits (most element counts and value lengths) without
    // the general loop.
    if len < 1000 {
        let n = 1 + usize::from(len >= 10) + usize::from(len >= 100);
        let hdr = &mut hdr[..n + 3];
        hdr[0] = tag;
        let mut v = len as u16;
        for h in hdr[1..=n].iter_mut().rev() {
            *h = b'0' + (v % 10) as u8;
            v /= 10;
        }
        hdr[n + 1] = b'\r';
        hdr[n + 2] = b'\n';
        return n + 3;
    }
    let mut digits = [0u8; 20];
    let mut d = 0;
    loop {
        digits[d] = b'0' + (len % 10) as u8;
        d += 1;
        len /= 10;
        if len == 0 {
            break;
        }
    }
    hdr[0] = tag;
    for i in 0..d {
        hdr[1 + i] = digits[d - 1 - i];
    }
    hdr[1 + d] = b'\r';
    hdr[2 + d] = b'\n';
    d + 3
}

/// Appends a double as [`Reply::Double`] does.
pub fn encode_double(proto: u8, out: &mut BytesMut, d: f64) {
    // Integers (the common score) are written from a stack buffer; other
    // values take `format_score`'s general path.
    let mut digits = [0u8; 24];
    let text: &[u8];
    let general;
    if let Some(n) = integer_score(d) {
        let m = write_len_header(&mut digits[1..], b'-', n.unsigned_abs());
        // `write_len_header` puts a tag first and CRLF last: the tag slot
        // takes the sign, and CRLF is cut off.
        let first = if n < 0 || (n == 0 && d.is_sign_negative()) {
            1
        } else {
            2
        };
        text = &digits[first..m - 1];
    } else {
        general = format_score(d);
        text = general.as_bytes();
    }
    if proto >= 3 {
        line(out, b',', text);
    } else {
        encode_bulk(out, text);
    }
}

/// `d` as an integer if `format_score` prints it as one (its digits, or
/// `0` / `-0`).
fn integer_score(d: f64) -> Option<i64> {
    (d.fract() == 0.0 && d.abs() < 1e17).then_some(d as i64)
}

/// Formats a score as Redis 7.0 replies with it (C's `%.17g`; `inf`,
/// `-inf`; zeros as `0` and `-0`): `0.1` prints as `0.10000000000000001`.
pub fn format_score(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // An integer below 1e17 prints as its digits under %.17g (the common
    // case, and far cheaper than the general path).
    if let Some(n) = integer_score(d) {
        return n.to_string();
    }
    // 17 significant digits in scientific form: d.dddddddddddddddde±x.
    let sci = format!("{d:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let mant = trim_fraction(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    let decimals = (16 - exp).max(0) as usize;
    trim_fraction(&format!("{d:.decimals$}")).to_string()
}

/// `1.2500` -> `1.25`, `3.000` -> `3`.
fn trim_fraction(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    #[test]
    fn error_replies_never_break_the_line() {
        let mut out = BytesMut::new();
        Reply::err("ERR Unsupported option NX\r\n:666").encode(2, &mut out);
        assert_eq!(&out[..], b"-ERR Unsupported option NX  :666\r\n");
    }

    #[test]
    fn scores_print_as_redis_7_0_does() {
        use super::format_score;
        for (d, text) in [
            (0.1, "0.10000000000000001"),
            (1e300, "1.0000000000000001e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-0.0, "-0"),
            (0.0, "0"),
            (1.5, "1.5"),
            (3.0, "3"),
            (-2.0, "-2"),
            (123456789.0, "123456789"),
            (-42.0, "-42"),
            (99999999999999984.0, "99999999999999984"),
            (1e17 - 16.0, "99999999999999984"),
            (1e17, "1e+17"),
            (1e16, "10000000000000000"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
        ] {
            assert_eq!(format_score(d), text, "{d:e}");
        }
    }

    /// Length headers print every length as its decimal digits (the
    /// three-digit fast path and the general loop alike).
    #[test]
    fn length_headers_print_decimal_digits() {
        let mut lens: Vec<u64> = (0..1100).collect();
        lens.extend([9_999, 10_000, 123_456_789, u64::MAX - 1, u64::MAX]);
        for len in lens {
            let mut hdr = [0u8; 24];
            let n = write_len_header(&mut hdr, b'$', len);
            assert_eq!(&hdr[..n], format!("${len}\r\n").as_bytes());
        }
    }

    /// `encode_double`'s integer fast path writes what `format_score`
    /// prints, in both protocols.
    #[test]
    fn doubles_encode_as_their_formatted_score() {
        let mut cases = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            7.0,
            10.0,
            -999.0,
            1e16,
            1e17 - 16.0,
            -(1e17 - 16.0),
            1e17,
            0.5,
            -2.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        cases.extend((0..64).map(|i| (1u64 << i) as f64));
        for d in cases {
            let text = super::format_score(d);
            let mut out = BytesMut::new();
            encode_double(2, &mut out, d);
            assert_eq!(
                out,
                format!("${}\r\n{text}\r\n", text.len()).as_bytes(),
                "{d:e}"
            );
            out.clear();
            encode_double(3, &mut out, d);
            assert_eq!(out, format!(",{text}\r\n").as_bytes(), "{d:e}");
        }
    }

    use super::*;

    /// One request parsed by a fresh parser (no progress kept).
    fn parse_request(
        buf: &mut BytesMut,
        max_bulk_len: usize,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        RequestParser::default().parse(buf, max_bulk_len)
    }

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(args) = parse_request(&mut buf, 1024)? {
            out.push(args.iter().map(|a| a.to_vec()).collect());
        }
        Ok(out)
    }

    fn strs(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_requests_parse_and_pipeline() {
        let got = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        assert_eq!(got, vec![strs(&["GET", "k"]), strs(&["PING"])]);
    }

    #[test]
    fn binary_values_with_crlf_inside_survive() {
        let got = parse_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n").unwrap();
        assert_eq!(got[0][2], b"a\r\nb".to_vec());
    }

    #[test]
    fn incomplete_requests_consume_nothing_at_every_split_point() {
        let full = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        for cut in 0..full.len() {
            let mut buf = BytesMut::from(&full[..cut]);
            assert_eq!(parse_request(&mut buf, 1024).unwrap(), None, "cut {cut}");
            assert_eq!(buf.len(), cut);
        }
        let mut buf = BytesMut::from(&full[..]);
        assert!(parse_request(&mut buf, 1024).unwrap().is_some());
        assert!(buf.is_empty());
    }

    #[test]
    fn inline_commands_split_with_quotes() {
        let got = parse_all(b"SET k \"a b\\x41\\n\"\r\nget 'it\\'s'\n\r\n").unwrap();
        assert_eq!(got[0], strs(&["SET", "k", "a bA\n"]));
        assert_eq!(got[1], strs(&["get", "it's"]));
        assert_eq!(got[2], Vec::<Vec<u8>>::new());
    }

    #[test]
    fn malformed_input_gets_redis_error_texts() {
        let cases: &[(&[u8], &str)] = &[
            (b"*x\r\n", "Protocol error: invalid multibulk length"),
            (
                b"*99999999999\r\n",
                "Protocol error: invalid multibulk length",
            ),
            (b"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"),
            (b"*1\r\n$abc\r\n", "Protocol error: invalid bulk length"),
            (b"*1\r\n+PING\r\n", "Protocol error: expected '$', got '+'"),
            (
                b"SET \"a\r\n",
                "Protocol error: unbalanced quotes in request",
            ),
            (
                b"SET \"a\"b\r\n",
                "Protocol error: unbalanced quotes in request",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_all(input).unwrap_err().0,
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn oversized_bulk_is_rejected_before_its_bytes_arrive() {
        // Limit 1024; only the header has arrived.
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nSET\r\n$1025\r\n"[..]);
        assert_eq!(
            parse_request(&mut buf, 1024).unwrap_err().0,
            "Protocol error: invalid bulk length"
        );
        let mut buf = BytesMut::from(&b"*1\r\n$1024\r\n"[..]);
        assert_eq!(parse_request(&mut buf, 1024).unwrap(), None);
    }

    #[test]
    fn overlong_lines_without_newline_are_rejected() {
        let mut big = vec![b'a'; MAX_INLINE_LEN + 1];
        let mut buf = BytesMut::from(&big[..]);
        assert_eq!(
            parse_request(&mut buf, 1024).unwrap_err().0,
            "Protocol error: too big inline request"
        );
        big[0] = b'*';
        let mut buf = BytesMut::from(&big[..]);
        assert_eq!(
            parse_request(&mut buf, 1024).unwrap_err().0,
            "Protocol error: too big mbulk count string"
        );
        let mut v = b"*1\r\n$".to_vec();
        v.extend(std::iter::repeat_n(b'1', MAX_INLINE_LEN + 1));
        let mut buf = BytesMut::from(&v[..]);
        assert_eq!(
            parse_request(&mut buf, usize::MAX).unwrap_err().0,
            "Protocol error: too big bulk count string"
        );
    }

    proptest! {
        /// Where the one-pass bulk header parse accepts a header, the
        /// general path (the first CRLF, then `parse_i64`) reads the same
        /// line and number; headers of 1 to 18 plain digits are accepted.
        #[test]
        fn short_bulk_headers_read_as_the_general_path_does(
            body in prop::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'-'), Just(b'0'), b'0'..=b'9', any::<u8>()],
                0..24,
            ),
            len in 0u64..1_000_000_000_000_000_000,
        ) {
            let mut buf = b"x$".to_vec();
            buf.extend_from_slice(&body);
            if let Some((n, start)) = short_bulk_header(&buf, 1) {
                let eol = find_crlf(&buf, 1);
                prop_assert_eq!(eol, Some(start - 2));
                prop_assert_eq!(parse_i64(&buf[2..start - 2]), Some(n as i64));
            }
            let header = format!("x${len}\r\n");
            prop_assert_eq!(
                short_bulk_header(header.as_bytes(), 1),
                Some((len, header.len()))
            );
        }
    }

    #[test]
    fn empty_multibulk_is_skipped() {
        let none: Vec<Vec<u8>> = Vec::new();
        assert_eq!(
            parse_all(b"*0\r\n*-1\r\n").unwrap(),
            vec![none.clone(), none]
        );
    }

    /// Feeds `input` in pieces cut at `cuts` (positions, any order) to
    /// one parser, taking every request complete after each piece;
    /// returns the requests and the error, if one came.
    fn parse_in_pieces(
        input: &[u8],
        cuts: &[usize],
        stateful: bool,
    ) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        cuts.push(input.len());
        cuts.sort_unstable();
        let mut parser = RequestParser::default();
        let mut buf = BytesMut::new();
        let (mut out, mut from) = (Vec::new(), 0);
        for cut in cuts {
            buf.extend_from_slice(&input[from..cut]);
            from = cut;
            loop {
                let r = if stateful {
                    parser.parse(&mut buf, 64)
                } else {
                    parse_request(&mut buf, 64)
                };
                match r {
                    Ok(Some(args)) => out.push(args.iter().map(|a| a.to_vec()).collect()),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    }

    /// A request as a client would send it: multibulk with any bytes, or
    /// inline words.
    fn request() -> impl Strategy<Value = (Vec<Vec<u8>>, bool)> {
        prop_oneof![
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6)
                .prop_map(|a| (a, false)),
            prop::collection::vec("[a-z0-9]{1,8}", 1..4)
                .prop_map(|w| (w.into_iter().map(String::into_bytes).collect(), true)),
        ]
    }

    fn encode_request(args: &[Vec<u8>], inline: bool, out: &mut Vec<u8>) {
        if inline {
            out.extend_from_slice(&args.join(&b' ')[..]);
            out.extend_from_slice(b"\r\n");
            return;
        }
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }

    proptest! {
        /// Requests arriving in any pieces parse as the whole stream does,
        /// with nothing left over.
        #[test]
        fn requests_in_any_pieces_parse_whole(
            reqs in prop::collection::vec(request(), 1..8),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut input = Vec::new();
            for (args, inline) in &reqs {
                encode_request(args, *inline, &mut input);
            }
            let want: Vec<Vec<Vec<u8>>> = reqs.into_iter().map(|(a, _)| a).collect();
            prop_assert_eq!(parse_in_pieces(&input, &cuts, true), (want, None));
        }

        /// On any bytes, in any pieces, the resuming parser gives what
        /// parsing each piece's buffer afresh gives, and what parsing the
        /// whole input at once gives (requests, then the same error or
        /// none), without panicking.
        #[test]
        fn resuming_matches_parsing_afresh_on_any_bytes(
            input in prop::collection::vec(
                prop_oneof![
                    Just(b'*'), Just(b'$'), Just(b'\r'), Just(b'\n'), Just(b'"'),
                    b'0'..=b'9', any::<u8>(),
                ],
                0..200,
            ),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let stateful = parse_in_pieces(&input, &cuts, true);
            prop_assert_eq!(&stateful, &parse_in_pieces(&input, &cuts, false));
            prop_assert_eq!(&stateful, &parse_in_pieces(&input, &[], false));
        }
    }

    #[test]
    fn replies_encode_per_protocol() {
        let r = Reply::Map(vec![(Reply::bulk_str("a"), Reply::Int(1))]);
        let mut o = BytesMut::new();
        r.encode(2, &mut o);
        assert_eq!(&o[..], b"*2\r\n$1\r\na\r\n:1\r\n");
        o.clear();
        r.encode(3, &mut o);
        assert_eq!(&o[..], b"%1\r\n$1\r\na\r\n:1\r\n");
        o.clear();
        Reply::Nil.encode(2, &mut o);
        Reply::Nil.encode(3, &mut o);
        Reply::NilArray.encode(2, &mut o);
        assert_eq!(&o[..], b"$-1\r\n_\r\n*-1\r\n");
    }

    #[test]
    fn integers_encode_as_decimal_text_at_the_limits() {
        // 0..=9 take the four-byte path, the rest the digit loop.
        let small = 0..=11;
        let limits = [-1, -7, -10, 99, 100, 1000, i64::MAX, i64::MIN, i64::MIN + 1];
        for i in small.chain(limits) {
            let mut o = BytesMut::new();
            encode_int(&mut o, i);
            assert_eq!(o, format!(":{i}\r\n").as_bytes(), "{i}");
        }
        for i in [0, 7, -7, 10, -10, i64::MAX, i64::MIN, i64::MIN + 1] {
            let mut o = BytesMut::new();
            Reply::Int(i).encode(2, &mut o);
            assert_eq!(o, format!(":{i}\r\n").as_bytes(), "{i}");
        }
    }
}
