//! How two replies are compared: byte for byte, except where Redis leaves
//! something unspecified (the order of a hash's fields, the seconds left of
//! a TTL). Each mode maps a reply to a canonical byte string; two replies
//! agree when their canonical forms are equal.

use super::resp::Frame;

/// A comparison mode, chosen per command in the command tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// Byte for byte.
    Exact,
    /// An aggregate whose elements may come in any order (HKEYS, HVALS,
    /// KEYS, SMEMBERS): the same type, count and multiset of elements.
    /// Any other reply (an error, nil) byte for byte.
    Unordered,
    /// Like `Unordered`, for pairs (HGETALL, HRANDFIELD WITHVALUES, ZRANGE
    /// WITHSCORES): a flat RESP2 array or RESP3 map is cut into
    /// consecutive pairs, an array of 2-element arrays (RESP3) taken as is;
    /// the multisets of pairs must agree.
    UnorderedPairs,
    /// An integer TTL (TTL, PTTL, EXPIRETIME): only -2, -1 or "positive"
    /// counts, as the two servers set their expiries some ms apart.
    Ttl,
    /// A SCAN-family page `[cursor, items]` asked with a COUNT larger than
    /// the collection, so both return everything at once: the cursor byte
    /// for byte, the items unordered (as pairs when `pairs`).
    ScanPage { pairs: bool },
    /// A SCAN-family command iterated to the end on each server on its
    /// own (the cursors differ): its row ends the pipeline, the test
    /// follows each server's cursor ([`merge_scan_pages`]) and compares
    /// the union of the pages as a `ScanPage`, repeats removed (an
    /// element may be returned more than once).
    ScanAll { pairs: bool },
    /// EXEC: an array whose elements are compared each by its queued
    /// command's mode (by the test); any other reply byte for byte.
    Exec,
}

fn is_aggregate(f: &Frame) -> bool {
    matches!(f.kind, b'*' | b'%' | b'~')
}

/// The frame's header line.
fn head(f: &Frame) -> Vec<u8> {
    let mut out = vec![f.kind];
    out.extend_from_slice(&f.header);
    out.extend_from_slice(b"\r\n");
    out
}

/// The header, then the units sorted (each unit is self-delimiting, so the
/// concatenation is unambiguous).
fn sorted(f: &Frame, mut units: Vec<Vec<u8>>) -> Vec<u8> {
    units.sort();
    let mut out = head(f);
    for u in units {
        out.extend(u);
    }
    out
}

/// The canonical form of `f` under `cmp`.
pub fn canonical(cmp: Cmp, f: &Frame) -> Vec<u8> {
    match cmp {
        Cmp::Exact => f.raw.clone(),
        Cmp::Ttl => {
            let positive = f.kind == b':'
                && std::str::from_utf8(&f.header)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .is_some_and(|n| n > 0);
            if positive {
                b":<positive>\r\n".to_vec()
            } else {
                f.raw.clone()
            }
        }
        Cmp::Unordered if is_aggregate(f) => {
            sorted(f, f.children.iter().map(|c| c.raw.clone()).collect())
        }
        Cmp::UnorderedPairs if is_aggregate(f) => {
            let nested = !f.children.is_empty()
                && f.children
                    .iter()
                    .all(|c| c.kind == b'*' && c.children.len() == 2);
            let units = if nested {
                f.children.iter().map(|c| c.raw.clone()).collect()
            } else {
                f.children
                    .chunks(2)
                    .map(|p| p.iter().flat_map(|c| c.raw.clone()).collect())
                    .collect()
            };
            sorted(f, units)
        }
        Cmp::ScanPage { pairs } | Cmp::ScanAll { pairs }
            if f.kind == b'*' && f.children.len() == 2 =>
        {
            let inner = if pairs {
                Cmp::UnorderedPairs
            } else {
                Cmp::Unordered
            };
            let mut out = head(f);
            out.extend_from_slice(&f.children[0].raw);
            out.extend(canonical(inner, &f.children[1]));
            out
        }
        Cmp::Unordered
        | Cmp::UnorderedPairs
        | Cmp::ScanPage { .. }
        | Cmp::ScanAll { .. }
        | Cmp::Exec => f.raw.clone(),
    }
}

/// The cursor of a SCAN-family page `[cursor, items]`, if `f` is one.
pub fn scan_cursor(f: &Frame) -> Option<&[u8]> {
    match f.children.as_slice() {
        [c, items] if f.kind == b'*' && c.kind == b'$' && items.kind == b'*' => {
            let raw = &c.raw;
            raw.iter()
                .position(|&x| x == b'\n')
                .and_then(|i| raw.get(i + 1..raw.len() - 2))
        }
        _ => None,
    }
}

fn bulk(s: &[u8]) -> Frame {
    let mut raw = format!("${}\r\n", s.len()).into_bytes();
    raw.extend_from_slice(s);
    raw.extend_from_slice(b"\r\n");
    Frame {
        raw,
        kind: b'$',
        header: s.len().to_string().into_bytes(),
        children: Vec::new(),
    }
}

fn array(children: Vec<Frame>) -> Frame {
    let mut raw = format!("*{}\r\n", children.len()).into_bytes();
    for c in &children {
        raw.extend_from_slice(&c.raw);
    }
    Frame {
        raw,
        kind: b'*',
        header: children.len().to_string().into_bytes(),
        children,
    }
}

/// One page `["0", items]` holding the items of all `pages` (each a
/// SCAN-family page), every item (or member/value pair, when `pairs`)
/// once, in their first order.
pub fn merge_scan_pages(pages: &[Frame], pairs: bool) -> Frame {
    let step = if pairs { 2 } else { 1 };
    let mut seen = std::collections::HashSet::new();
    let mut items = Vec::new();
    for p in pages {
        let Some(list) = p.children.get(1) else {
            continue;
        };
        for unit in list.children.chunks(step) {
            let key: Vec<u8> = unit.iter().flat_map(|c| c.raw.clone()).collect();
            if seen.insert(key) {
                items.extend(unit.iter().cloned());
            }
        }
    }
    array(vec![bulk(b"0"), array(items)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::resp::read_frame;

    fn canon(cmp: Cmp, wire: &[u8]) -> Vec<u8> {
        canonical(cmp, &read_frame(&mut &wire[..]).unwrap())
    }

    #[test]
    fn unordered_modes_ignore_order_only() {
        let u = Cmp::Unordered;
        assert_eq!(
            canon(u, b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
            canon(u, b"*2\r\n$1\r\nb\r\n$1\r\na\r\n")
        );
        assert_ne!(
            canon(u, b"*2\r\n$1\r\na\r\n$1\r\na\r\n"),
            canon(u, b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
        );
        // A set and an array with the same elements differ.
        assert_ne!(canon(u, b"~1\r\n:1\r\n"), canon(u, b"*1\r\n:1\r\n"));
        let p = Cmp::UnorderedPairs;
        let ab = b"%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n";
        let ba = b"%2\r\n$1\r\nb\r\n:2\r\n$1\r\na\r\n:1\r\n";
        assert_eq!(canon(p, ab), canon(p, ba));
        // Pairs stay pairs: swapping values between fields is a difference.
        let swapped = b"%2\r\n$1\r\na\r\n:2\r\n$1\r\nb\r\n:1\r\n";
        assert_ne!(canon(p, ab), canon(p, swapped));
        let nested = b"*2\r\n*2\r\n$1\r\na\r\n:1\r\n*2\r\n$1\r\nb\r\n:2\r\n";
        let nested_ba = b"*2\r\n*2\r\n$1\r\nb\r\n:2\r\n*2\r\n$1\r\na\r\n:1\r\n";
        assert_eq!(canon(p, nested), canon(p, nested_ba));
        assert_eq!(canon(p, b"-ERR x\r\n"), b"-ERR x\r\n");
    }

    #[test]
    fn ttl_keeps_only_presence() {
        assert_eq!(
            canon(Cmp::Ttl, b":99999\r\n"),
            canon(Cmp::Ttl, b":100000\r\n")
        );
        assert_ne!(canon(Cmp::Ttl, b":-1\r\n"), canon(Cmp::Ttl, b":-2\r\n"));
        assert_ne!(canon(Cmp::Ttl, b":0\r\n"), canon(Cmp::Ttl, b":1\r\n"));
    }

    #[test]
    fn scan_pages_compare_cursor_exactly() {
        let s = Cmp::ScanPage { pairs: false };
        let a = b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n";
        let b_ = b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n";
        let other_cursor = b"*2\r\n$1\r\n5\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n";
        assert_eq!(canon(s, a), canon(s, b_));
        assert_ne!(canon(s, a), canon(s, other_cursor));
    }

    #[test]
    fn merged_scan_pages_keep_each_item_once() {
        let p1 = read_frame(&mut &b"*2\r\n$2\r\n12\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"[..]).unwrap();
        let p2 = read_frame(&mut &b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n"[..]).unwrap();
        assert_eq!(scan_cursor(&p1), Some(&b"12"[..]));
        assert_eq!(scan_cursor(&p2), Some(&b"0"[..]));
        let m = merge_scan_pages(&[p1.clone(), p2.clone()], false);
        assert_eq!(
            m.raw,
            b"*2\r\n$1\r\n0\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n".to_vec()
        );
        // As pairs, (a, b) and (b, c) are different.
        let m = merge_scan_pages(&[p1, p2], true);
        assert_eq!(m.children[1].children.len(), 4);
    }
}
