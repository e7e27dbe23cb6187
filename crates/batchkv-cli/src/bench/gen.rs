//! Keys and values the way db_bench makes them.
//!
//! Keys are the key index as zero-padded decimal of `key_size` digits, so a
//! `scan` of a benchmark database is human-checkable and sorted like the
//! index. Values come from a pool of pseudo-random bytes in which each
//! value-sized chunk is compressible to about `compression_ratio`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Writes the key for `index` into `buf` (exactly `key_size` bytes).
/// Without allocating: the reads make one key per operation, and
/// `index.to_string()` cost ~300 instructions of each (callgrind).
pub fn make_key(buf: &mut Vec<u8>, index: u64, key_size: usize) {
    buf.clear();
    let mut text = [0u8; 20]; // u64::MAX has 20 digits
    let mut start = text.len();
    let mut v = index;
    loop {
        start -= 1;
        text[start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = &text[start..];
    if digits.len() >= key_size {
        // Keep the low-order digits: distinct indexes below 10^key_size stay distinct.
        buf.extend_from_slice(&digits[digits.len() - key_size..]);
    } else {
        buf.resize(key_size - digits.len(), b'0');
        buf.extend_from_slice(digits);
    }
}

/// A pool of value bytes; `next` hands out consecutive windows of it.
pub struct ValueGen {
    pool: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    pub fn new(seed: u64, value_size: usize, compression_ratio: f64) -> ValueGen {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_0f7a_1e00);
        let chunk = value_size.clamp(1, 1 << 20);
        let pool_len = (1 << 20).max(2 * value_size);
        let mut pool = Vec::with_capacity(pool_len + chunk);
        let ratio = compression_ratio.clamp(0.0, 1.0);
        while pool.len() < pool_len {
            // Like db_bench's CompressibleString: `ratio * len` random bytes,
            // repeated to fill the chunk.
            let raw = ((chunk as f64 * ratio) as usize).max(1);
            let random: Vec<u8> = (0..raw).map(|_| rng.random_range(b' '..=b'~')).collect();
            let start = pool.len();
            while pool.len() - start < chunk {
                let take = (chunk - (pool.len() - start)).min(raw);
                pool.extend_from_slice(&random[..take]);
            }
        }
        ValueGen { pool, pos: 0 }
    }

    /// The position of the next `len`-byte value in the pool.
    pub fn next_range(&mut self, len: usize) -> std::ops::Range<usize> {
        if self.pos + len > self.pool.len() {
            self.pos = 0;
        }
        let r = self.pos..self.pos + len;
        self.pos += len.max(1);
        r
    }

    /// The bytes of a range from [`ValueGen::next_range`].
    pub fn get(&self, r: std::ops::Range<usize>) -> &[u8] {
        &self.pool[r]
    }

    /// The next `len`-byte value.
    pub fn next(&mut self, len: usize) -> &[u8] {
        let r = self.next_range(len);
        self.get(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_and_sorted_like_indexes() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        make_key(&mut a, 42, 16);
        assert_eq!(a, b"0000000000000042");
        make_key(&mut b, 1000, 16);
        assert!(a < b);
    }

    #[test]
    fn keys_are_the_low_digits_of_the_decimal_index() {
        let mut k = Vec::new();
        for (index, size) in [
            (0, 1),
            (0, 16),
            (7, 3),
            (123_456, 4),
            (u64::MAX, 25),
            (u64::MAX, 5),
        ] {
            make_key(&mut k, index, size);
            let text = index.to_string();
            let want = if text.len() >= size {
                text[text.len() - size..].to_string()
            } else {
                format!("{}{text}", "0".repeat(size - text.len()))
            };
            assert_eq!(k, want.as_bytes(), "index {index}, size {size}");
        }
    }

    #[test]
    fn values_have_the_requested_size() {
        let mut g = ValueGen::new(1, 100, 0.5);
        for _ in 0..50_000 {
            assert_eq!(g.next(100).len(), 100);
        }
    }
}
