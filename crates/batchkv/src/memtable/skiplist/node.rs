//! Node layout: one arena allocation holds a node's forward pointers and its
//! entry bytes, so the level-0 pointer and the key share a cache line.
//!
//! ```text
//!  allocation start                        node pointer (`*mut Node`)
//!  │                                        │
//!  ▼                                        ▼
//!  next[h-1] ‖ … ‖ next[1] ‖ next[0] ‖ varint32 klen ‖ internal key (klen bytes)
//!                                    ‖ fixed32_le key protection
//!                                    ‖ varint32 vlen ‖ value (vlen bytes)
//!                                    ‖ fixed32_le protection
//! ```
//! `next[i]` lives at `node - 8·i`; the entry starts at `node + 8`. The
//! height is not stored: a node is only ever reached at levels below it.
//! `protection` is the CRC32C of `internal key ‖ value` (the internal key
//! holds the user key, sequence number and type); `key protection` is the
//! CRC32C of the internal key alone. Paranoid lookups check the key
//! protection of every node they walk — it sits in the line the comparison
//! already fetched — and the full protection of every entry they return;
//! checking the full word on walked nodes would fetch each passed node's
//! value lines (measured: per-key lookups at 0.44–0.64× of unchecked ones,
//! 2M entries, loaded machine), for no gain in what a search reads (it only
//! reads the keys of passed nodes).
#![allow(unsafe_code)]

use std::cell::Cell;

use crate::key::TRAILER_LEN;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Maximum tower height. 4^12 ≈ 16.7 M, so searches stay O(log n) up to
/// ~16 M entries (a 64 MiB memtable of small entries holds far fewer).
pub(super) const MAX_HEIGHT: usize = 12;
/// Each extra level is taken with probability 1/BRANCHING (p = 1/4, as in
/// LevelDB and RocksDB: ~1.33 pointers per node, ~ (4/3)·log4(n) compares).
pub(super) const BRANCHING: u32 = 4;
/// Bytes of protection stored after the value.
pub(super) const PROTECTION_LEN: usize = 4;
/// Bytes of key protection stored after the key.
pub(super) const KEY_PROTECTION_LEN: usize = 4;

/// Opaque node: the address of its level-0 forward pointer.
#[repr(C)]
pub(super) struct Node {
    next0: AtomicPtr<Node>,
}

/// A node's decoded entry.
pub(super) struct Entry<'a> {
    /// The internal key (`user key ‖ trailer`).
    pub key: &'a [u8],
    /// The value bytes.
    pub value: &'a [u8],
    /// The stored key protection word.
    pub key_protection: u32,
    /// The stored protection word.
    pub protection: u32,
}

/// Bytes a varint32 of `v` takes.
fn varint_len(v: usize) -> usize {
    crate::coding::varint_len(v as u64)
}

/// Total allocation size of a node of `height` holding the given entry.
pub(super) fn node_size(height: usize, ikey_len: usize, value_len: usize) -> usize {
    8 * height
        + varint_len(ikey_len)
        + ikey_len
        + KEY_PROTECTION_LEN
        + varint_len(value_len)
        + value_len
        + PROTECTION_LEN
}

/// The protection word of an entry (tests recompute it to check and to
/// forge entries; the hot paths inline the same computation).
#[cfg(test)]
pub(super) fn protection(ikey: &[u8], value: &[u8]) -> u32 {
    crc32c::crc32c_append(key_protection(ikey), value)
}

/// The key protection word of an entry: CRC32C of the internal key.
/// Paranoid searches compute it for every level-0 node they compare, so
/// short keys take an inlined SSE4.2 loop: the `crc32c` crate's general path
/// made paranoid per-key lookups cost +7.7k instructions per lookup, this
/// loop +3.6k (callgrind, 100k entries, batch 64); same value either way.
/// The loop is inlined only into callers compiled with SSE4.2 (the paranoid
/// breadth-first descent, `bfs.rs`); elsewhere it is one call.
#[inline(always)]
pub(super) fn key_protection(ikey: &[u8]) -> u32 {
    crc32c_append(0, ikey)
}

/// `crc32c::crc32c_append(crc, data)` (CRC32C continued over `data`), with
/// the SSE4.2 loop when the CPU has it. Paranoid lookups continue the
/// verified key protection over a returned entry's value with it.
#[inline(always)]
pub(super) fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU supports SSE4.2 (checked just above).
        return unsafe { crc32c_sse42(crc, data) };
    }
    crc32c::crc32c_append(crc, data)
}

/// CRC32C (Castagnoli, reflected, init and final xor !0) of `data`
/// continued from `crc`, with the SSE4.2 `crc32` instruction, 8 bytes at a
/// time (a 24-byte internal key is three instructions). `#[inline]`: LLVM
/// inlines it into callers that enable SSE4.2 themselves; the per-call
/// overhead (call, slice iterator, `copy_from_slice` length checks) was
/// about as large as the CRC itself on keys.
///
/// # Safety
/// The CPU must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
pub(super) unsafe fn crc32c_sse42(crc: u32, data: &[u8]) -> u32 {
    use core::arch::x86_64::{_mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut c = u64::from(!crc);
    let mut p = data.as_ptr();
    let mut n = data.len();
    // Up to 4 words without a loop: internal keys are mostly 16–32 bytes,
    // and the unrolled loop LLVM makes of a plain one costs ~20 extra
    // instructions per key on its set-up and tail tests.
    if n >= 8 {
        // SAFETY: `p..p + n` stays inside `data` throughout; each read is
        // of 8 (then 4, then 1) of those `n` bytes.
        c = _mm_crc32_u64(c, u64::from_le(p.cast::<u64>().read_unaligned()));
        p = p.add(8);
        n -= 8;
        if n >= 8 {
            c = _mm_crc32_u64(c, u64::from_le(p.cast::<u64>().read_unaligned()));
            p = p.add(8);
            n -= 8;
            if n >= 8 {
                c = _mm_crc32_u64(c, u64::from_le(p.cast::<u64>().read_unaligned()));
                p = p.add(8);
                n -= 8;
                while n >= 8 {
                    c = _mm_crc32_u64(c, u64::from_le(p.cast::<u64>().read_unaligned()));
                    p = p.add(8);
                    n -= 8;
                }
            }
        }
    }
    let mut c = c as u32;
    if n >= 4 {
        c = _mm_crc32_u32(c, u32::from_le(p.cast::<u32>().read_unaligned()));
        p = p.add(4);
        n -= 4;
    }
    while n > 0 {
        c = _mm_crc32_u8(c, *p);
        p = p.add(1);
        n -= 1;
    }
    !c
}

/// Writes a node into `mem` (`node_size(height, ..)` fresh bytes, 8-aligned)
/// with null forward pointers, and returns it.
///
/// # Safety
/// `mem` must be valid for writes of `node_size(height, user.len() + 8, value.len())`
/// bytes, 8-aligned, and not yet shared with any other thread.
pub(super) unsafe fn init_node(
    mem: *mut u8,
    height: usize,
    user: &[u8],
    trailer: u64,
    value: &[u8],
) -> *mut Node {
    debug_assert!((1..=MAX_HEIGHT).contains(&height));
    let node = mem.add(8 * (height - 1)).cast::<Node>();
    for i in 0..height {
        std::ptr::write(
            mem.cast::<AtomicPtr<Node>>().add(i),
            AtomicPtr::new(std::ptr::null_mut()),
        );
    }
    let mut p = mem.add(8 * height);
    let ikey_len = user.len() + 8;
    p = write_varint(p, ikey_len as u32);
    let key_start = p;
    std::ptr::copy_nonoverlapping(user.as_ptr(), p, user.len());
    p = p.add(user.len());
    std::ptr::copy_nonoverlapping(trailer.to_le_bytes().as_ptr(), p, 8);
    p = p.add(8);
    let ikey = std::slice::from_raw_parts(key_start, ikey_len);
    let key_prot = key_protection(ikey);
    let prot = crc32c_append(key_prot, value);
    std::ptr::copy_nonoverlapping(key_prot.to_le_bytes().as_ptr(), p, KEY_PROTECTION_LEN);
    p = p.add(KEY_PROTECTION_LEN);
    p = write_varint(p, value.len() as u32);
    std::ptr::copy_nonoverlapping(value.as_ptr(), p, value.len());
    p = p.add(value.len());
    std::ptr::copy_nonoverlapping(prot.to_le_bytes().as_ptr(), p, PROTECTION_LEN);
    node
}

/// # Safety
/// `p` must be valid for writes of 5 bytes.
unsafe fn write_varint(mut p: *mut u8, mut v: u32) -> *mut u8 {
    while v >= 0x80 {
        *p = (v as u8) | 0x80;
        p = p.add(1);
        v >>= 7;
    }
    *p = v as u8;
    p.add(1)
}

/// # Safety
/// `p` must point at a varint32 written by [`write_varint`].
#[inline(always)]
unsafe fn read_varint(p: *const u8) -> (usize, *const u8) {
    let b = *p;
    if b < 0x80 {
        return (usize::from(b), p.add(1));
    }
    let mut v = usize::from(b & 0x7f);
    let mut shift = 7;
    let mut q = p.add(1);
    loop {
        let b = *q;
        q = q.add(1);
        v |= usize::from(b & 0x7f) << shift;
        if b < 0x80 || shift >= 28 {
            return (v, q);
        }
        shift += 7;
    }
}

/// The forward-pointer slot of `n` at `level`.
///
/// # Safety
/// `n` is a node of a live skip list (or its head) whose height is > `level`.
#[inline(always)]
pub(super) unsafe fn next_slot<'a>(n: *mut Node, level: usize) -> &'a AtomicPtr<Node> {
    &*n.cast::<AtomicPtr<Node>>().sub(level)
}

/// The successor of `n` at `level`. Acquire: pairs with the release CAS that
/// linked the successor, so its bytes (and lower links) are visible.
///
/// # Safety
/// As for [`next_slot`].
#[inline(always)]
pub(super) unsafe fn next(n: *mut Node, level: usize) -> *mut Node {
    next_slot(n, level).load(Ordering::Acquire)
}

/// Address of the forward-pointer slot (for prefetching; never dereferenced here).
#[inline(always)]
pub(super) fn slot_addr(n: *mut Node, level: usize) -> *const u8 {
    n.cast::<u8>().wrapping_sub(8 * level)
}

/// The internal key of `n`.
///
/// # Safety
/// `n` is a published (or caller-owned, initialised) non-head node of a live
/// list; the returned slice lives as long as the list's arena.
#[inline(always)]
pub(super) unsafe fn key<'a>(n: *mut Node) -> &'a [u8] {
    let (len, p) = read_varint(n.cast::<u8>().add(8));
    std::slice::from_raw_parts(p, len)
}

/// The whole entry of `n`.
///
/// # Safety
/// As for [`key`].
#[inline]
pub(super) unsafe fn entry<'a>(n: *mut Node) -> Entry<'a> {
    let (klen, kp) = read_varint(n.cast::<u8>().add(8));
    let kpp = kp.add(klen);
    let (vlen, vp) = read_varint(kpp.add(KEY_PROTECTION_LEN));
    Entry {
        key: std::slice::from_raw_parts(kp, klen),
        value: std::slice::from_raw_parts(vp, vlen),
        key_protection: read_u32(kpp),
        protection: read_u32(vp.add(vlen)),
    }
}

/// The internal key and the value of `n`, without reading the protection
/// words (the one after the value is often on a line of its own).
///
/// # Safety
/// As for [`key`].
#[inline(always)]
pub(super) unsafe fn key_and_value<'a>(n: *mut Node) -> (&'a [u8], &'a [u8]) {
    let (klen, kp) = read_varint(n.cast::<u8>().add(8));
    let (vlen, vp) = read_varint(kp.add(klen + KEY_PROTECTION_LEN));
    (
        std::slice::from_raw_parts(kp, klen),
        std::slice::from_raw_parts(vp, vlen),
    )
}

/// The internal key of `n` and the address range of its value and
/// protection bytes, read without touching them (for prefetching).
///
/// # Safety
/// As for [`key`].
#[inline]
pub(super) unsafe fn key_and_value_span<'a>(n: *mut Node) -> (&'a [u8], std::ops::Range<usize>) {
    let (klen, kp) = read_varint(n.cast::<u8>().add(8));
    let (vlen, vp) = read_varint(kp.add(klen + KEY_PROTECTION_LEN));
    let start = vp as usize;
    (
        std::slice::from_raw_parts(kp, klen),
        start..start + vlen + PROTECTION_LEN,
    )
}

/// The internal key of `n` and its stored key protection word.
///
/// # Safety
/// As for [`key`].
#[inline]
pub(super) unsafe fn key_with_protection<'a>(n: *mut Node) -> (&'a [u8], u32) {
    let (klen, kp) = read_varint(n.cast::<u8>().add(8));
    (std::slice::from_raw_parts(kp, klen), read_u32(kp.add(klen)))
}

/// Is `ikey` an internal key of user key `user`? Word-wise and inlined:
/// every lookup asks it of its candidate, and a call to libc `memcmp` cost
/// ~20 instructions per 16-byte key.
#[inline(always)]
pub(super) fn is_entry_of(ikey: &[u8], user: &[u8]) -> bool {
    let n = user.len();
    if ikey.len() != n + TRAILER_LEN {
        return false;
    }
    let (a, b) = (ikey.as_ptr(), user.as_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n`, and both slices hold at least `n` bytes.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            return false;
        }
        i += 8;
    }
    while i < n {
        if ikey[i] != user[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// # Safety
/// `p` must be valid for reads of 4 bytes.
#[inline(always)]
unsafe fn read_u32(p: *const u8) -> u32 {
    let mut b = [0u8; 4];
    std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), 4);
    u32::from_le_bytes(b)
}

/// Address of the first entry byte (the key length), for tests that
/// corrupt entries.
#[cfg(test)]
pub(super) fn entry_addr(n: *mut Node) -> *mut u8 {
    n.cast::<u8>().wrapping_add(8)
}

thread_local! {
    /// Per-thread xorshift state: inserters never contend on a shared RNG.
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    // Relaxed: only distinctness matters, not ordering.
    let mut z = COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    // splitmix64 finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

/// A random height in `1..=MAX_HEIGHT`, P(height > h) = (1/4)^(h-1).
pub(super) fn random_height() -> usize {
    debug_assert_eq!(BRANCHING, 4);
    RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        // Each pair of zero low bits (probability 1/4) adds a level.
        let r = (x >> 32) as u32;
        1 + ((r.trailing_zeros() / 2) as usize).min(MAX_HEIGHT - 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_round_trips_its_entry() {
        for (ulen, vlen) in [(0usize, 0usize), (3, 5), (200, 70_000), (70_000, 1)] {
            let user: Vec<u8> = (0..ulen).map(|i| i as u8).collect();
            let value: Vec<u8> = (0..vlen).map(|i| (i * 7) as u8).collect();
            let h = 5;
            let size = node_size(h, ulen + 8, vlen);
            let mut buf = vec![0u64; size.div_ceil(8)];
            // SAFETY: `buf` is 8-aligned and holds `size` bytes.
            let n = unsafe { init_node(buf.as_mut_ptr().cast(), h, &user, 0x0012_3401, &value) };
            // SAFETY: `n` was just initialised inside `buf`.
            let e = unsafe { entry(n) };
            assert_eq!(&e.key[..ulen], &user[..]);
            assert_eq!(crate::key::trailer(e.key), 0x0012_3401);
            assert_eq!(e.value, &value[..]);
            assert_eq!(e.protection, protection(e.key, e.value));
            assert_eq!(e.key_protection, key_protection(e.key));
            // SAFETY: as above.
            assert_eq!(unsafe { key_with_protection(n) }, (e.key, e.key_protection));
            // SAFETY: as above; height 5 > 4.
            assert!(unsafe { next(n, 4) }.is_null());
            // SAFETY: as above.
            assert_eq!(unsafe { key(n) }, e.key);
        }
    }

    #[test]
    fn crc32c_append_matches_the_crate() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 91 + 7) as u8).collect();
        for n in [0, 1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 24, 100, 300] {
            for seed in [0, 1, 0xdead_beef, u32::MAX] {
                assert_eq!(
                    crc32c_append(seed, &data[..n]),
                    crc32c::crc32c_append(seed, &data[..n]),
                    "len {n} seed {seed:#x}"
                );
            }
        }
    }

    #[test]
    fn key_protection_is_crc32c() {
        let data: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        for n in 0..data.len() {
            assert_eq!(
                key_protection(&data[..n]),
                crc32c::crc32c(&data[..n]),
                "len {n}"
            );
        }
    }

    #[test]
    fn heights_follow_branching_four() {
        let n = 200_000;
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..n {
            counts[random_height()] += 1;
        }
        assert_eq!(counts[0], 0);
        // ~3/4 of nodes have height 1, ~3/16 height 2.
        let h1 = counts[1] as f64 / n as f64;
        let h2 = counts[2] as f64 / n as f64;
        assert!((h1 - 0.75).abs() < 0.01, "h1 = {h1}");
        assert!((h2 - 0.1875).abs() < 0.01, "h2 = {h2}");
    }
}
