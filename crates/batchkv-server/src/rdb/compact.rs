//! The compact encodings inside RDB strings: listpacks, ziplists,
//! intsets and zipmaps, read into their entries (refusing any whose
//! header disagrees with its content).

use super::{lp_backlen, unique, PayloadError::BadFormat, Result, LP_EOF, LP_HEADER};

/// `n` bytes of `b` from `at`, or BadFormat if they run past its end.
fn slice(b: &[u8], at: usize, n: usize) -> Result<&[u8]> {
    at.checked_add(n)
        .and_then(|end| b.get(at..end))
        .ok_or(BadFormat)
}

fn u16_le(b: &[u8], at: usize) -> Result<u16> {
    let s = slice(b, at, 2)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_le(b: &[u8], at: usize) -> Result<u32> {
    let s = slice(b, at, 4)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn int_bytes(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The entries of a listpack, integers as decimal text. The header's
/// total bytes must be the blob's length, its count (unless 65535,
/// "unknown") the number of entries; every entry's back length must be
/// the one Redis writes.
///
/// Layout: `<total: u32 LE> <count: u16 LE> <entry>* 0xFF`, an entry being
/// `<encoding and data> <back length>`.
pub(super) fn listpack_entries(lp: &[u8]) -> Result<Vec<Vec<u8>>> {
    if lp.len() < LP_HEADER + 1 || u32_le(lp, 0)? as usize != lp.len() || lp[lp.len() - 1] != LP_EOF
    {
        return Err(BadFormat);
    }
    let count = u16_le(lp, 4)?;
    let end = lp.len() - 1;
    let body = &lp[..end];
    let mut out = Vec::with_capacity(usize::from(count).min((end - LP_HEADER) / 2));
    let mut p = LP_HEADER;
    let mut backlen = Vec::with_capacity(5);
    while p < end {
        let (value, size) = lp_entry(body, p)?;
        backlen.clear();
        lp_backlen(&mut backlen, size as u64);
        if slice(body, p + size, backlen.len())? != backlen.as_slice() {
            return Err(BadFormat);
        }
        p += size + backlen.len();
        out.push(value);
    }
    if count != 0xFFFF && usize::from(count) != out.len() {
        return Err(BadFormat);
    }
    Ok(out)
}

/// The listpack entry at `p` of `b` (which ends before the terminator):
/// its value and the size of its encoding and data.
fn lp_entry(b: &[u8], p: usize) -> Result<(Vec<u8>, usize)> {
    let e = b[p];
    let int = |n: usize| -> Result<i64> {
        let s = slice(b, p + 1, n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(s);
        // Sign-extend from n bytes.
        let shift = 64 - 8 * n as u32;
        Ok((i64::from_le_bytes(le) << shift) >> shift)
    };
    let string = |hdr: usize, len: usize| -> Result<(Vec<u8>, usize)> {
        Ok((slice(b, p + hdr, len)?.to_vec(), hdr + len))
    };
    match e {
        0x00..=0x7F => Ok((int_bytes(i64::from(e)), 1)),
        0x80..=0xBF => string(1, usize::from(e & 0x3F)),
        0xC0..=0xDF => {
            let lo = slice(b, p + 1, 1)?[0];
            let u = u16::from(e & 0x1F) << 8 | u16::from(lo);
            // Sign-extend from 13 bits.
            Ok((int_bytes(i64::from(((u << 3) as i16) >> 3)), 2))
        }
        0xE0..=0xEF => {
            let lo = slice(b, p + 1, 1)?[0];
            string(2, usize::from(e & 0x0F) << 8 | usize::from(lo))
        }
        0xF0 => string(5, u32_le(b, p + 1)? as usize),
        0xF1 => Ok((int_bytes(int(2)?), 3)),
        0xF2 => Ok((int_bytes(int(3)?), 4)),
        0xF3 => Ok((int_bytes(int(4)?), 5)),
        0xF4 => Ok((int_bytes(int(8)?), 9)),
        _ => Err(BadFormat),
    }
}

/// The entries of a ziplist, integers as decimal text. The header's
/// total bytes must be the blob's length, its tail offset the last
/// entry's, its count (unless 65535) the number of entries; each entry's
/// previous-length field must be the previous entry's size.
///
/// Layout: `<total: u32 LE> <tail: u32 LE> <count: u16 LE> <entry>* 0xFF`,
/// an entry being `<prevlen: 1 byte, or 0xFE + u32 LE> <encoding> <data>`.
pub(super) fn ziplist_entries(zl: &[u8]) -> Result<Vec<Vec<u8>>> {
    const HEADER: usize = 10;
    if zl.len() < HEADER + 1 || u32_le(zl, 0)? as usize != zl.len() || zl[zl.len() - 1] != 0xFF {
        return Err(BadFormat);
    }
    let tail = u32_le(zl, 4)? as usize;
    let count = u16_le(zl, 8)?;
    let end = zl.len() - 1;
    if tail > end {
        return Err(BadFormat);
    }
    let body = &zl[..end];
    let mut out = Vec::with_capacity(usize::from(count).min((end - HEADER) / 2));
    let mut p = HEADER;
    let mut prev_size = 0usize;
    let mut last = None;
    while p < end {
        let (prevlen, pl_size) = match body[p] {
            0xFF => return Err(BadFormat),
            0xFE => (u32_le(body, p + 1)? as usize, 5),
            n => (usize::from(n), 1),
        };
        if prevlen != prev_size {
            return Err(BadFormat);
        }
        let (value, size) = zl_entry(body, p + pl_size)?;
        last = Some(p);
        prev_size = pl_size + size;
        p += prev_size;
        out.push(value);
    }
    if last.is_some_and(|l| l != tail) || (count != 0xFFFF && usize::from(count) != out.len()) {
        return Err(BadFormat);
    }
    Ok(out)
}

/// The ziplist entry whose encoding is at `p` of `b` (which ends before
/// the terminator): its value and the size of its encoding and data.
fn zl_entry(b: &[u8], p: usize) -> Result<(Vec<u8>, usize)> {
    let e = slice(b, p, 1)?[0];
    let int = |n: usize| -> Result<(Vec<u8>, usize)> {
        let s = slice(b, p + 1, n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(s);
        let shift = 64 - 8 * n as u32;
        Ok((int_bytes((i64::from_le_bytes(le) << shift) >> shift), 1 + n))
    };
    let string = |hdr: usize, len: usize| -> Result<(Vec<u8>, usize)> {
        Ok((slice(b, p + hdr, len)?.to_vec(), hdr + len))
    };
    match e {
        0x00..=0x3F => string(1, usize::from(e)),
        0x40..=0x7F => {
            let lo = slice(b, p + 1, 1)?[0];
            string(2, usize::from(e & 0x3F) << 8 | usize::from(lo))
        }
        // 32-bit length, big endian; the low 6 bits of the byte are unused.
        0x80..=0xBF => {
            let s = slice(b, p + 1, 4)?;
            string(5, u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
        }
        0xC0 => int(2),
        0xD0 => int(4),
        0xE0 => int(8),
        0xF0 => int(3),
        0xFE => int(1),
        0xF1..=0xFD => Ok((int_bytes(i64::from(e & 0x0F) - 1), 1)),
        _ => Err(BadFormat),
    }
}

/// The members of an intset, as decimal text: `<width: u32 LE (2, 4 or 8)>
/// <count: u32 LE> <integers: count × width, LE>`, strictly increasing.
pub(super) fn intset_members(is: &[u8]) -> Result<Vec<Vec<u8>>> {
    let width = u32_le(is, 0)? as usize;
    let count = u32_le(is, 4)? as usize;
    if !matches!(width, 2 | 4 | 8) || Some(is.len() - 8) != count.checked_mul(width) {
        return Err(BadFormat);
    }
    let mut out = Vec::with_capacity(count);
    let mut prev = None;
    for chunk in is[8..].chunks_exact(width) {
        let mut le = [0u8; 8];
        le[..width].copy_from_slice(chunk);
        let shift = 64 - 8 * width as u32;
        let v = (i64::from_le_bytes(le) << shift) >> shift;
        if prev.is_some_and(|p| v <= p) {
            return Err(BadFormat);
        }
        prev = Some(v);
        out.push(int_bytes(v));
    }
    Ok(out)
}

/// The pairs of a zipmap (Redis 2.x hashes): `<count: 1 byte, 254 =
/// unknown> (<len> field <len> <free: 1 byte> value <free bytes>)* 0xFF`,
/// a length being one byte below 254, or 254 and a u32 LE.
pub(super) fn zipmap_pairs(zm: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if zm.len() < 2 || zm[zm.len() - 1] != 0xFF {
        return Err(BadFormat);
    }
    let end = zm.len() - 1;
    let body = &zm[..end];
    let len_at = |p: usize| -> Result<(usize, usize)> {
        match slice(body, p, 1)?[0] {
            254 => Ok((u32_le(body, p + 1)? as usize, 5)),
            255 => Err(BadFormat),
            n => Ok((usize::from(n), 1)),
        }
    };
    let mut out = Vec::new();
    let mut p = 1;
    while p < end {
        let (flen, n) = len_at(p)?;
        let field = slice(body, p + n, flen)?.to_vec();
        p += n + flen;
        let (vlen, n) = len_at(p)?;
        let free = usize::from(slice(body, p + n, 1)?[0]);
        p += n + 1;
        let value = slice(body, p, vlen)?.to_vec();
        slice(body, p + vlen, free)?;
        p += vlen + free;
        out.push((field, value));
    }
    if zm[0] != 254 && usize::from(zm[0]) != out.len() {
        return Err(BadFormat);
    }
    unique(out.iter().map(|(f, _)| f))?;
    Ok(out)
}
