//! Little-endian fixed-width and LEB128 varint encodings used by every on-disk
//! format (see `docs/format/`).

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes. Panics if `src` is shorter: callers check lengths first.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> u32 {
    u32::from_le_bytes([src[0], src[1], src[2], src[3]])
}

/// Reads 8 little-endian bytes. Panics if `src` is shorter: callers check lengths first.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&src[..8]);
    u64::from_le_bytes(b)
}

/// Appends `v` as a LEB128 varint (1–5 bytes).
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a LEB128 varint (1–10 bytes).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes `put_varint64(v)` writes.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint32 from the front of `src`: `(value, bytes consumed)`, or
/// `None` if `src` ends early or the value does not fit in 32 bits.
#[inline]
pub fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte.
    if let Some(&b) = src.first() {
        if b < 0x80 {
            return Some((u32::from(b), 1));
        }
    }
    let (v, n) = get_varint64(src)?;
    if n > 5 || v > u64::from(u32::MAX) {
        return None;
    }
    Some((v as u32, n))
}

/// Decodes a varint64 from the front of `src`: `(value, bytes consumed)`, or
/// `None` if `src` ends early or the encoding is longer than 10 bytes.
#[inline]
pub fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &byte) in src.iter().enumerate().take(10) {
        result |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Appends a varint32 length prefix followed by `data`.
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    put_varint32(dst, data.len() as u32);
    dst.extend_from_slice(data);
}

/// Splits a varint32-length-prefixed slice off the front of `src`:
/// `(slice, bytes consumed)`.
#[inline]
pub fn get_length_prefixed(src: &[u8]) -> Option<(&[u8], usize)> {
    let (len, n) = get_varint32(src)?;
    let end = n.checked_add(len as usize)?;
    if end > src.len() {
        return None;
    }
    Some((&src[n..end], end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_at_every_width() {
        let mut values = vec![0u64, 1, 127, 128, 255, 300, 16383, 16384, u64::MAX];
        for shift in 0..64 {
            values.push(1u64 << shift);
            values.push((1u64 << shift) - 1);
        }
        for v in values {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            assert_eq!(get_varint64(&buf), Some((v, buf.len())));
            // Truncated encodings must be rejected, not misread.
            assert_eq!(get_varint64(&buf[..buf.len() - 1]), None);
        }
    }

    #[test]
    fn varint32_rejects_values_over_32_bits() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&buf), None);
        buf.clear();
        put_varint32(&mut buf, u32::MAX);
        assert_eq!(get_varint32(&buf), Some((u32::MAX, 5)));
    }

    #[test]
    fn length_prefixed_checks_bounds() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"hello");
        assert_eq!(get_length_prefixed(&buf), Some((&b"hello"[..], 6)));
        assert_eq!(get_length_prefixed(&buf[..4]), None);
    }

    #[test]
    fn fixed_round_trip() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 0xdead_beef);
        put_fixed64(&mut buf, 0x0123_4567_89ab_cdef);
        assert_eq!(decode_fixed32(&buf), 0xdead_beef);
        assert_eq!(decode_fixed64(&buf[4..]), 0x0123_4567_89ab_cdef);
    }
}
