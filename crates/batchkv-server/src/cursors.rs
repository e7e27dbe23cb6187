//! SCAN-family cursors that never expire.
//!
//! A scan resumes at a *position*: the first key (SCAN) or element
//! (HSCAN, SSCAN, ZSCAN) at or after some byte string, within a *scope*
//! (the database, or the collection's element prefix). A position can be
//! longer than the 64 bits of a cursor, so a cursor carries part of it
//! and a bounded table remembers the rest:
//!
//! ```text
//! cursor = prefix (24 bits) ‖ tag (40 bits)
//! ```
//! - `prefix`: the position's first 3 bytes, zero-padded, big-endian;
//! - `tag`: a per-process counter (from a random start, never 0), so no
//!   two cursors handed out by one server run are equal.
//!
//! Resuming: if the table holds the cursor for the same scope, the scan
//! resumes exactly where the previous page stopped. Otherwise — the entry
//! was evicted (the table keeps the newest [`MAX_ENTRIES`] cursors and
//! [`MAX_BYTES`] of positions), the server restarted, or the client made
//! the number up — it resumes at the cursor's prefix with its trailing zero
//! bytes removed, which is a prefix of the true position and so sorts at
//! or before it. Either way every key present for the whole scan is still
//! returned (a fallback may return some keys again, which Redis allows);
//! no numeric cursor is ever refused (`ERR invalid cursor` is only for
//! text that is not a number, as in Redis).
//!
//! Termination: a page started at a fallback returns a fresh cursor that
//! the table holds, so the scan moves forward unless that entry is
//! evicted before the client's next call (more than [`MAX_ENTRIES`] other
//! pages in between, every time).
//!
//! After a restart, a cursor of the previous run finds an entry of this
//! run only if the same 24-bit prefix and 40-bit tag were handed out again
//! (tags start at a random point): then it resumes at another position
//! with the same first 3 bytes, which could be later (keys skipped, about
//! one chance in 2^40 / `MAX_ENTRIES` ≈ 10^-8 per stale cursor).
//! Nothing is persisted.

use std::collections::{HashMap, VecDeque};

/// Bits of the tag (the low bits of a cursor).
const TAG_BITS: u32 = 40;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// Bytes of the position in a cursor (the high bits).
const PREFIX_BYTES: usize = 3;
/// Cursors remembered at most (oldest forgotten first).
pub const MAX_ENTRIES: usize = 64 * 1024;
/// Bytes of scopes and positions remembered at most.
pub const MAX_BYTES: usize = 32 << 20;

struct Entry {
    scope: Vec<u8>,
    position: Vec<u8>,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.scope.len() + self.position.len()
    }
}

/// The table of recent cursors (module docs).
pub struct Cursors {
    next_tag: u64,
    map: HashMap<u64, Entry>,
    order: VecDeque<u64>,
    bytes: usize,
}

impl Default for Cursors {
    fn default() -> Cursors {
        Cursors::starting_at(rand::random::<u64>())
    }
}

/// The cursor's prefix bits of `position`.
fn prefix_bits(position: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = position.len().min(PREFIX_BYTES);
    b[8 - PREFIX_BYTES..8 - PREFIX_BYTES + n].copy_from_slice(&position[..n]);
    u64::from_be_bytes(b) << TAG_BITS
}

/// Where a scan resumes for `cursor` without the table: the cursor's
/// prefix without its trailing zero bytes (≤ the position it was made
/// from).
pub fn fallback_position(cursor: u64) -> Vec<u8> {
    let b = (cursor >> TAG_BITS).to_be_bytes();
    let mut p = b[8 - PREFIX_BYTES..].to_vec();
    while p.last() == Some(&0) {
        p.pop();
    }
    p
}

impl Cursors {
    /// A table whose first tag is derived from `start`.
    pub fn starting_at(start: u64) -> Cursors {
        Cursors {
            next_tag: start & TAG_MASK,
            map: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Remembers that a scan of `scope` stopped before `position`; returns
    /// the cursor to hand out (never 0).
    pub fn save(&mut self, scope: &[u8], position: Vec<u8>) -> u64 {
        self.next_tag = (self.next_tag + 1) & TAG_MASK;
        if self.next_tag == 0 {
            self.next_tag = 1;
        }
        let cursor = prefix_bits(&position) | self.next_tag;
        let entry = Entry {
            scope: scope.to_vec(),
            position,
        };
        self.bytes += entry.bytes();
        if let Some(old) = self.map.insert(cursor, entry) {
            // The tag wrapped around 2^40 cursors later.
            self.bytes -= old.bytes();
        }
        self.order.push_back(cursor);
        while self.order.len() > MAX_ENTRIES || (self.bytes > MAX_BYTES && self.order.len() > 1) {
            if let Some(old) = self.order.pop_front() {
                if let Some(e) = self.map.remove(&old) {
                    self.bytes -= e.bytes();
                }
            }
        }
        cursor
    }

    /// Where a scan of `scope` given `cursor` (not 0) resumes: exactly
    /// where it stopped if the table remembers the cursor for that scope,
    /// otherwise at [`fallback_position`].
    pub fn resume(&self, scope: &[u8], cursor: u64) -> Vec<u8> {
        match self.map.get(&cursor) {
            Some(e) if e.scope == scope => e.position.clone(),
            _ => fallback_position(cursor),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_cursor_resumes_exactly_in_its_scope_only() {
        let mut c = Cursors::starting_at(0);
        let x = c.save(b"\x00", b"user:12345".to_vec());
        let y = c.save(b"\x00", b"user:12345".to_vec());
        assert_ne!(x, y, "every cursor handed out is new");
        assert_eq!(x >> TAG_BITS, u64::from_be_bytes(*b"\0\0\0\0\0use"));
        assert_eq!(c.resume(b"\x00", x), b"user:12345");
        // Another database or collection: the prefix only.
        assert_eq!(c.resume(b"\x01", x), b"use");
    }

    #[test]
    fn evicted_and_unknown_cursors_fall_back_to_a_prefix_at_or_before() {
        let mut c = Cursors::starting_at(0);
        let first = c.save(b"s", b"zebra".to_vec());
        for i in 0..MAX_ENTRIES {
            c.save(b"s", format!("k{i}").into_bytes());
        }
        assert_eq!(c.len(), MAX_ENTRIES);
        assert_eq!(c.resume(b"s", first), b"zeb");
        // Trailing zero bytes are padding: removed, so the prefix is a
        // prefix of the position.
        let mut d = Cursors::starting_at(0);
        let z = d.save(b"s", b"a\0".to_vec());
        assert_eq!(fallback_position(z), b"a");
        assert!(fallback_position(z).as_slice() <= &b"a\0"[..]);
        // Made-up numbers resume somewhere, never an error.
        assert_eq!(d.resume(b"s", 5), b"");
        assert_eq!(d.resume(b"s", u64::MAX), b"\xff\xff\xff");
    }

    #[test]
    fn tags_skip_zero_when_they_wrap() {
        let mut c = Cursors::starting_at(TAG_MASK - 1);
        let a = c.save(b"", Vec::new());
        let b = c.save(b"", Vec::new());
        assert_eq!((a, b), (TAG_MASK, 1));
    }

    #[test]
    fn the_table_is_bounded_in_bytes() {
        let mut c = Cursors::starting_at(0);
        let big = vec![b'k'; 1 << 20];
        let mut last = 0;
        for _ in 0..100 {
            last = c.save(b"s", big.clone());
        }
        assert!(c.bytes <= MAX_BYTES);
        assert!(c.len() < 100);
        // The newest is always kept.
        assert_eq!(c.resume(b"s", last), big);
    }
}
