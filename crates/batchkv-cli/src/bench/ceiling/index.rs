//! The ceiling's index: a plain skip list of the fill's keys, no engine code.
//!
//! A skip list rather than a sorted-array tree, because it is the structure
//! the memtable searches: the same node count, the same height
//! distribution (p = 1/4, at most [`MAX_HEIGHT`] levels, docs/design.md
//! §4.1) and so the same number of dependent node reads per lookup. A
//! cache-friendly tree (B-tree or Eytzinger array) would need fewer lines
//! per lookup and measure a different structure's ceiling.
//!
//! # Layout
//! One `Vec<u64>` (backed by transparent huge pages, as the memtable's
//! arena is) holds every node, in insertion order — the order fillrandom
//! wrote the keys — each node as
//! ```text
//!  next[h-1] ‖ … ‖ next[0] ‖ key words ‖ ordinal ‖ padding
//!                  ▲ the node's index
//! ```
//! `next[l]` is the index of the node's successor at level `l` ([`NIL`]:
//! none). The key is `key_size` bytes as ⌈key_size/8⌉ big-endian words,
//! the last one zero-padded: all keys have the same length, so comparing
//! words compares bytes. `ordinal` is the key's position in insertion
//! order. The padding makes every node as big as the memtable's node of
//! the same height for the same key and value sizes, so the index spreads
//! over as many lines and pages as the memtable, and neighbours in key
//! order are as far apart in memory (nodes are placed in insertion order
//! and linked in key order).
//!
//! # Versions
//! A key written twice is two nodes, the later one first, as the memtable
//! keeps every version newest first: a lookup finds the first node whose
//! key is ≥ the target, which is the key's newest version.

use std::cmp::Ordering;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Tallest tower (the memtable's, docs/design.md §4.1).
pub const MAX_HEIGHT: usize = 12;
/// An extra level is taken with probability 1/BRANCHING (the memtable's).
const BRANCHING: u32 = 4;
/// "No node": index 0 is inside the head's tower, never a node's index.
pub const NIL: usize = 0;

/// Bytes of the memtable's skip-list node besides its tower, for keys of
/// `key_size` and values of `value_size` bytes (crates/batchkv
/// memtable/skiplist/node.rs: varint key length, internal key = key + 8
/// trailer bytes, 4 key-protection bytes, varint value length, value, 4
/// protection bytes).
pub fn memtable_entry_bytes(key_size: usize, value_size: usize) -> usize {
    let varint = |v: usize| (usize::BITS - (v | 1).leading_zeros()).div_ceil(7) as usize;
    varint(key_size + 8) + key_size + 8 + 4 + varint(value_size) + value_size + 4
}

/// The skip list (see the module docs). Immutable once built, so any number
/// of threads may search it.
pub struct Index {
    words: Vec<u64>,
    head: usize,
    /// Levels in use (the tallest node's height; ≥ 1).
    top: usize,
    key_size: usize,
    key_words: usize,
    nodes: usize,
}

impl Index {
    /// Builds the list of `keys` (each `key_size` bytes), taken in
    /// insertion order; each node occupies its tower plus `entry_bytes`
    /// (at least its key and ordinal). Heights are drawn from `seed`.
    pub fn build<K: AsRef<[u8]>>(
        key_size: usize,
        entry_bytes: usize,
        seed: u64,
        keys: impl ExactSizeIterator<Item = K>,
    ) -> Result<Index, String> {
        if key_size == 0 {
            return Err("memceiling: --key_size must be at least 1".into());
        }
        let key_words = key_size.div_ceil(8);
        let body = entry_bytes.div_ceil(8).max(key_words + 1);
        let n = keys.len();
        if n >= u32::MAX as usize {
            return Err(format!(
                "memceiling: {n} keys is too many (at most 2^32 - 2)"
            ));
        }
        let mut rng = SmallRng::seed_from_u64(seed);
        let heights: Vec<u8> = (0..n).map(|_| random_height(&mut rng)).collect();
        let total = MAX_HEIGHT
            + body
            + heights
                .iter()
                .map(|&h| usize::from(h) + body)
                .sum::<usize>();
        let mut words = zeroed_words(total);
        let head = MAX_HEIGHT - 1;
        // Node index per ordinal, and the keys packed for sorting.
        let mut node_of: Vec<usize> = Vec::with_capacity(n);
        let mut packed: Vec<u64> = Vec::with_capacity(n * key_words);
        let mut at = MAX_HEIGHT + body;
        for (ordinal, (key, &h)) in keys.zip(&heights).enumerate() {
            let key = key.as_ref();
            if key.len() != key_size {
                return Err(format!(
                    "memceiling: key {ordinal} is {} bytes, expected {key_size}",
                    key.len()
                ));
            }
            let node = at + usize::from(h) - 1;
            let start = packed.len();
            pack_key(key, &mut packed);
            words[node + 1..node + 1 + key_words].copy_from_slice(&packed[start..]);
            words[node + 1 + key_words] = ordinal as u64;
            node_of.push(node);
            at += usize::from(h) + body;
        }
        // Link in key order, a key's later writes first.
        let mut order: Vec<u32> = (0..n as u32).collect();
        let key_of = |o: u32| &packed[o as usize * key_words..][..key_words];
        order.sort_unstable_by(|&a, &b| key_of(a).cmp(key_of(b)).then(b.cmp(&a)));
        let mut last = [head; MAX_HEIGHT];
        for &o in &order {
            let node = node_of[o as usize];
            for (l, prev) in last.iter_mut().enumerate().take(heights[o as usize].into()) {
                words[*prev - l] = node as u64;
                *prev = node;
            }
        }
        let top = heights.iter().copied().max().map_or(1, usize::from);
        Ok(Index {
            words,
            head,
            top,
            key_size,
            key_words,
            nodes: n,
        })
    }

    /// Nodes in the list (the head aside).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Bytes the list occupies.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    pub fn key_size(&self) -> usize {
        self.key_size
    }

    pub fn key_words(&self) -> usize {
        self.key_words
    }

    pub(super) fn head(&self) -> usize {
        self.head
    }

    pub(super) fn top(&self) -> usize {
        self.top
    }

    /// The successor of `node` at `level` (the node's height is > level).
    #[inline(always)]
    pub(super) fn next(&self, node: usize, level: usize) -> usize {
        self.words[node - level] as usize
    }

    /// The key words of a non-head `node`.
    #[inline(always)]
    pub(super) fn key(&self, node: usize) -> &[u64] {
        &self.words[node + 1..node + 1 + self.key_words]
    }

    /// The key words of a non-head `node`, whose key has `KW` words.
    #[inline(always)]
    pub(super) fn key_array<const KW: usize>(&self, node: usize) -> &[u64; KW] {
        debug_assert_eq!(KW, self.key_words);
        match self.words[node + 1..].first_chunk::<KW>() {
            Some(k) => k,
            // A node's key words are followed by its ordinal.
            None => unreachable!("node {node} has no {KW} key words"),
        }
    }

    /// The insertion ordinal of a non-head `node`.
    pub(super) fn ordinal(&self, node: usize) -> u64 {
        self.words[node + 1 + self.key_words]
    }

    /// The address of word `i` (for prefetching and counting lines; never
    /// dereferenced through this pointer).
    #[inline(always)]
    pub(super) fn addr(&self, i: usize) -> *const u64 {
        self.words.as_ptr().wrapping_add(i)
    }
}

/// Appends `key` as big-endian words, the last zero-padded.
pub fn pack_key(key: &[u8], out: &mut Vec<u64>) {
    for chunk in key.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        out.push(u64::from_be_bytes(w));
    }
}

/// Compares two packed keys of the same length (word order is byte order).
#[inline(always)]
pub fn compare_words(a: &[u64], b: &[u64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    Ordering::Equal
}

fn random_height(rng: &mut SmallRng) -> u8 {
    let mut h = 1;
    while h < MAX_HEIGHT && rng.random_range(0..BRANCHING) == 0 {
        h += 1;
    }
    h as u8
}

/// `len` zero words, advised to be backed by transparent huge pages before
/// they are first touched (the memtable's arena does the same; huge pages
/// make random node reads 1.3–1.6× faster, docs/design.md §4.3).
fn zeroed_words(len: usize) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(len);
    advise_huge_pages(v.as_ptr().cast(), len * 8);
    v.resize(len, 0);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(p: *const u8, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    let start = (p as usize).next_multiple_of(HUGE_PAGE);
    let end = (p as usize + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: `start..end` lies inside the allocation just made, which
        // nothing references yet; MADV_HUGEPAGE only changes how the kernel
        // backs those pages (it reads and writes no memory), and its failure
        // (THP off) leaves ordinary pages, so the result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_p: *const u8, _bytes: usize) {}
