//! The table's bloom filter over user keys, in a cache-local ("blocked")
//! layout: all probes of one key fall in one 64-byte line, so a negative
//! lookup costs one cache miss.
//!
//! # Format (never change; see `docs/format/sst.md`)
//! ```text
//! line[0..num_lines] (64 bytes each) ‖ u8 num_probes ‖ fixed32 num_lines
//! ```
//! # Hash and probes
//! `h = filter_hash(user_key)` (64 bits, defined below — part of the format).
//! The line is `((h >> 32) * num_lines) >> 32` (multiply-shift range
//! reduction of the high half). The probes use the low half `x = h as u32`:
//! for each of `num_probes` probes, the bit index inside the 512-bit line is
//! the top 9 bits of `x`, then `x = x * 0x9e37_79b9` (wrapping). Bit `i` of a
//! line is bit `i % 8` of byte `i / 8`.
//!
//! A filter with `num_lines == 0` is never written; a table without a
//! filter simply has no filter block.

use crate::coding::{decode_fixed32, put_fixed32};

/// Bytes per filter line (one cache line). Never change.
const LINE_BYTES: usize = 64;
const LINE_BITS: u32 = (LINE_BYTES * 8) as u32;
/// Trailer after the lines: u8 probes ‖ fixed32 lines.
const FILTER_TRAILER_LEN: usize = 5;
/// Most probes a filter may declare.
const MAX_PROBES: u8 = 30;
/// Golden-ratio multiplier that remixes the probe word. Never change.
const PROBE_MULT: u32 = 0x9e37_79b9;

/// The filter's 64-bit key hash. Part of the on-disk format: never change.
///
/// 8-byte little-endian words (the tail zero-padded) are folded in with a
/// multiply–rotate step, then the length, then the murmur3 `fmix64`
/// finalizer spreads every input bit over the whole word.
pub(crate) fn filter_hash(key: &[u8]) -> u64 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h: u64 = 0x2545_f491_4f6c_dd1d;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(M).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(M).rotate_left(29);
    }
    h ^= key.len() as u64;
    // fmix64
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Number of probes for `bits_per_key` (≈ ln 2 · bits per key, capped; a
/// blocked filter gains little from more).
fn probes_for(bits_per_key: usize) -> u8 {
    ((bits_per_key * 69 / 100).clamp(1, 12)) as u8
}

#[inline]
fn line_of(h: u64, num_lines: u32) -> usize {
    (((h >> 32) * u64::from(num_lines)) >> 32) as usize
}

/// Builds a filter from key hashes collected while the table was written.
pub(crate) fn build_filter(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let total_bits = (hashes.len() * bits_per_key).max(1);
    let num_lines = total_bits
        .div_ceil(LINE_BITS as usize)
        .min(u32::MAX as usize) as u32;
    let probes = probes_for(bits_per_key);
    let mut out = vec![0u8; num_lines as usize * LINE_BYTES];
    for &h in hashes {
        let line = &mut out[line_of(h, num_lines) * LINE_BYTES..][..LINE_BYTES];
        let mut x = h as u32;
        for _ in 0..probes {
            let bit = (x >> (32 - 9)) as usize;
            line[bit / 8] |= 1 << (bit % 8);
            x = x.wrapping_mul(PROBE_MULT);
        }
    }
    out.push(probes);
    put_fixed32(&mut out, num_lines);
    out
}

/// A filter read from a table: answers "may this user key be present?".
#[derive(Debug)]
pub(crate) struct BloomFilter {
    lines: Vec<u8>,
    num_lines: u32,
    probes: u8,
}

impl BloomFilter {
    /// Parses a filter block; `None` if its trailer is inconsistent with its
    /// length (the caller reports corruption).
    pub(crate) fn parse(mut contents: Vec<u8>) -> Option<BloomFilter> {
        let n = contents.len().checked_sub(FILTER_TRAILER_LEN)?;
        let probes = contents[n];
        let num_lines = decode_fixed32(&contents[n + 1..]);
        if num_lines == 0
            || probes == 0
            || probes > MAX_PROBES
            || (num_lines as usize).checked_mul(LINE_BYTES) != Some(n)
        {
            return None;
        }
        contents.truncate(n);
        Some(BloomFilter {
            lines: contents,
            num_lines,
            probes,
        })
    }

    /// False only if `user_key` was certainly not added.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// Starts loading the line [`Self::may_contain_hash`] will probe for
    /// `h`, so a batch can put all its filter misses in flight at once.
    pub(crate) fn prefetch_hash(&self, h: u64) {
        let line = line_of(h, self.num_lines) * LINE_BYTES;
        crate::prefetch::prefetch_read(self.lines.as_ptr().wrapping_add(line));
    }

    /// [`Self::may_contain`] for a precomputed [`filter_hash`].
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        let line = &self.lines[line_of(h, self.num_lines) * LINE_BYTES..][..LINE_BYTES];
        let mut x = h as u32;
        for _ in 0..self.probes {
            let bit = (x >> (32 - 9)) as usize;
            if line[bit / 8] & (1 << (bit % 8)) == 0 {
                return false;
            }
            x = x.wrapping_mul(PROBE_MULT);
        }
        true
    }

    /// Bytes held.
    pub(crate) fn size(&self) -> usize {
        self.lines.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        format!("user-key-{i:010}").into_bytes()
    }

    fn filter_of(n: u64, bits_per_key: usize) -> BloomFilter {
        let hashes: Vec<u64> = (0..n).map(|i| filter_hash(&key(i))).collect();
        BloomFilter::parse(build_filter(&hashes, bits_per_key)).unwrap()
    }

    #[test]
    fn no_false_negatives() {
        for n in [0u64, 1, 7, 100, 10_000] {
            for bpk in [1usize, 5, 10, 20] {
                let f = filter_of(n, bpk);
                for i in 0..n {
                    assert!(f.may_contain(&key(i)), "n={n} bpk={bpk} key {i} missing");
                }
            }
        }
    }

    #[test]
    fn false_positive_rate_at_10_bits_per_key_is_below_2_percent() {
        let n = 100_000u64;
        let f = filter_of(n, 10);
        assert_eq!(f.size(), (n as usize * 10).div_ceil(512) * 64);
        let probes = 200_000u64;
        let fp = (n..n + probes).filter(|&i| f.may_contain(&key(i))).count();
        let rate = fp as f64 / probes as f64;
        eprintln!(
            "bloom 10 bits/key, {n} keys: false-positive rate {:.3}%",
            rate * 100.0
        );
        assert!(rate < 0.02, "false-positive rate {rate}");
        // And the filter is not trivially "yes": it rejects most absent keys.
        assert!(rate > 0.0001, "suspiciously low rate {rate}");
    }

    #[test]
    fn hash_is_stable() {
        // The hash is part of the on-disk format: these values must never change.
        assert_ne!(filter_hash(b"a"), filter_hash(b"a\0"));
        assert_ne!(filter_hash(b"abcdefgh"), filter_hash(b"abcdefgi"));
        let pinned = [
            filter_hash(b""),
            filter_hash(b"hello"),
            filter_hash(b"0123456789abcdef!"),
        ];
        assert_eq!(pinned, PINNED);
    }

    const PINNED: [u64; 3] = [
        13258805574571075079,
        7821115495022307383,
        5448106578062807452,
    ];

    #[test]
    fn parse_rejects_inconsistent_trailers() {
        let good = build_filter(&[1, 2, 3], 10);
        assert!(BloomFilter::parse(good.clone()).is_some());
        let mut short = good.clone();
        short.remove(0);
        assert!(BloomFilter::parse(short).is_none());
        let mut zero_probes = good.clone();
        let n = zero_probes.len();
        zero_probes[n - 5] = 0;
        assert!(BloomFilter::parse(zero_probes).is_none());
        assert!(BloomFilter::parse(vec![1, 2]).is_none());
    }
}
