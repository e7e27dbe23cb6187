//! The skip list's optional point index (`memtable_point_index`): a hash
//! table from user key to the key's newest node, so a `get` finds its key
//! in about two cache misses instead of a descent's dozen or more.
//!
//! # Layout
//! `buckets` (a power of two) cache-line buckets of 8 words, in memory
//! `mmap`ed per memtable (zero pages the kernel fills on first touch, so a
//! memtable switch does not pay for clearing it):
//! - words 0..7 are ways: 0 (empty) or `tag << 48 | node address`, where
//!   `tag` is the top 16 bits of the key's hash with bit 0 set (never 0);
//! - word 7 is the *overflow* flag: nonzero once an insert found every way
//!   taken by other keys. Sticky.
//!
//! A key's bucket is `hash & (buckets − 1)`.
//!
//! # Invariants
//! 1. A way, once claimed (0 → a node of key K), holds a node of K forever;
//!    it is only replaced by a newer node of K (larger trailer).
//! 2. When an insert of version v of K returns, either some way of K's
//!    bucket holds a node of K at least as new as v, or the bucket has
//!    overflowed. [`PointIndex::record`] runs after v is linked at level 0
//!    and before its insert returns, so before the write is published.
//! 3. Hence a read at sequence S, which sees every write published before
//!    it, finds in a bucket that has not overflowed: no way of K (K has no
//!    version in the memtable that the read could see), or ways of K whose
//!    newest node N is at or before the first version of K at S in list
//!    order. Versions of a key are adjacent, newest first, so the answer
//!    is N or a node after it on level 0 ([`PointIndex::probe`]'s caller
//!    walks there). Two ways may hold K (two inserts claimed at once);
//!    readers take the newer.
//!
//! Memory ordering: ways and the flag are updated with release (CAS,
//! store) and read with acquire, after the read's sequence number was
//! loaded with acquire; the write group publishes that number after its
//! inserts (and so after their `record`s) with release.

use std::sync::atomic::{AtomicU64, Ordering};

use super::node::{self, Node};
use crate::key::TRAILER_LEN;
use crate::memtable::sorted_hash::key_hash as hash;

const WAYS: usize = 7;
const WORDS: usize = 8;
const ADDRESS_BITS: u32 = 48;
const ADDRESS_MASK: u64 = (1 << ADDRESS_BITS) - 1;

/// What the index says about a user key.
pub(super) enum Probe {
    /// The newest node of the key (per invariant 3, at or before the answer).
    Newest(*mut Node),
    /// No version of the key in the memtable (invariant 3).
    Absent,
    /// The bucket overflowed: search the list.
    Unknown,
}

/// What a key's bucket says before any node is read: the batched probe
/// ([`PointIndex::probe_tags`]) reads the nodes only after prefetching them.
pub(super) enum Tagged {
    /// The bucket overflowed: search the list.
    Unknown,
    /// No way carries the key's tag: the key is not in the memtable.
    Absent,
    /// One way carries the tag: its node is the key's newest, if it holds
    /// the key at all (else the key is absent).
    One(*mut Node),
    /// Several ways carry the tag: [`PointIndex::probe`] decides.
    Several,
}

/// A key's bucket and tag ([`PointIndex::place_and_prefetch`]).
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    bucket: &'a [AtomicU64],
    tag: u64,
}

/// The index (see the module docs).
pub(super) struct PointIndex {
    /// The first bucket (2 MiB-aligned when huge pages were asked for).
    words: *mut AtomicU64,
    buckets: usize,
    /// The whole mapping, for `munmap`.
    map: *mut libc::c_void,
    map_len: usize,
}

// SAFETY: `words` is a private mapping owned by the index, accessed only
// through atomics; the node addresses it holds point into the list's arena,
// which outlives the index (both belong to one `SkipList`).
unsafe impl Send for PointIndex {}
// SAFETY: as above: every access is atomic.
unsafe impl Sync for PointIndex {}

impl PointIndex {
    /// An index of `buckets` buckets (rounded up to a power of two, at
    /// least 64), on transparent huge pages if `huge_pages` (Linux; the
    /// buckets are read at random, and 4 KiB pages would cost a TLB miss
    /// per probe); `None` if the memory cannot be mapped.
    #[cfg(unix)]
    pub(super) fn new(buckets: usize, huge_pages: bool) -> Option<PointIndex> {
        const HUGE: usize = crate::memtable::arena::HUGE_PAGE;
        let buckets = buckets.max(64).checked_next_power_of_two()?;
        let len = buckets.checked_mul(WORDS * 8)?;
        let map_len = len.checked_add(if huge_pages { HUGE } else { 0 })?;
        // SAFETY: an anonymous private mapping; the result is checked.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let mut start = map.cast::<u8>();
        if huge_pages {
            // SAFETY: at most HUGE − 1 bytes into the mapping, which has
            // HUGE bytes more than the buckets need.
            start = unsafe { start.add(start.align_offset(HUGE)) };
            #[cfg(target_os = "linux")]
            // SAFETY: a range of our own mapping; madvise only changes how
            // the kernel backs it. Failure is harmless (no THP).
            unsafe {
                libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE);
            }
        }
        Some(PointIndex {
            words: start.cast(),
            buckets,
            map,
            map_len,
        })
    }

    /// Without `mmap` there is no index: lookups search the list.
    #[cfg(not(unix))]
    pub(super) fn new(_buckets: usize, _huge_pages: bool) -> Option<PointIndex> {
        None
    }

    /// Bytes of memory the index maps.
    pub(super) fn bytes(&self) -> usize {
        self.buckets * WORDS * 8
    }

    /// Key `user`'s bucket and tag.
    #[inline]
    fn place(&self, user: &[u8]) -> (&[AtomicU64], u64) {
        let h = hash(user);
        let b = (h as usize) & (self.buckets - 1);
        // SAFETY: `b < buckets`; the mapping holds `buckets * WORDS` words,
        // zero-initialized (a valid `AtomicU64`), alive as long as `self`.
        let bucket = unsafe { std::slice::from_raw_parts(self.words.add(b * WORDS), WORDS) };
        (bucket, (h >> ADDRESS_BITS) | 1)
    }

    /// Key `user`'s bucket, its load started: for a batch, which probes
    /// the bucket ([`PointIndex::probe_tags`]) once all are on their way.
    #[inline]
    pub(super) fn place_and_prefetch(&self, user: &[u8]) -> Place<'_> {
        let (bucket, tag) = self.place(user);
        crate::prefetch::prefetch_read(bucket.as_ptr().cast::<u8>());
        Place { bucket, tag }
    }

    /// Starts loading `user`'s bucket, which [`PointIndex::record`] will
    /// update once the node is linked (the search for its place runs
    /// meanwhile).
    #[inline]
    pub(super) fn prefetch(&self, user: &[u8]) {
        self.place_and_prefetch(user);
    }

    /// Records node `n`, holding `user` with `trailer`, just linked on
    /// level 0 (invariant 2).
    ///
    /// # Safety
    /// `n` is a linked node of the list this index belongs to.
    pub(super) unsafe fn record(&self, n: *mut Node, user: &[u8], trailer: u64) {
        let (bucket, tag) = self.place(user);
        let address = n as u64;
        if address & !ADDRESS_MASK != 0 {
            // An address beyond 48 bits cannot be tagged: give up on this
            // bucket (readers search the list).
            bucket[WAYS].store(1, Ordering::Release);
            return;
        }
        let mine = tag << ADDRESS_BITS | address;
        'retry: loop {
            let mut empty = None;
            for way in &bucket[..WAYS] {
                let w = way.load(Ordering::Acquire);
                if w == 0 {
                    empty = empty.or(Some(way));
                    continue;
                }
                if w >> ADDRESS_BITS != tag {
                    continue;
                }
                let held = (w & ADDRESS_MASK) as *mut Node;
                // SAFETY: ways hold linked nodes of this list (invariant 1).
                let (held_user, held_trailer) = unsafe { user_and_trailer(held) };
                if held_user != user {
                    continue;
                }
                if held_trailer >= trailer {
                    return;
                }
                match way.compare_exchange(w, mine, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => return,
                    // A newer node of `user` (invariant 1): compare again.
                    Err(_) => continue 'retry,
                }
            }
            let Some(way) = empty else {
                bucket[WAYS].store(1, Ordering::Release);
                return;
            };
            if way
                .compare_exchange(0, mine, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            // Another insert claimed it (maybe for `user`): look again.
        }
    }

    /// The ways of a key's bucket that carry its tag, without reading a
    /// node ([`Tagged`]; invariant 3 as for [`PointIndex::probe`]).
    #[inline]
    pub(super) fn probe_tags(place: &Place<'_>) -> Tagged {
        let (bucket, tag) = (place.bucket, place.tag);
        if bucket[WAYS].load(Ordering::Acquire) != 0 {
            return Tagged::Unknown;
        }
        let mut found = Tagged::Absent;
        for way in &bucket[..WAYS] {
            let w = way.load(Ordering::Acquire);
            if w != 0 && w >> ADDRESS_BITS == tag {
                found = match found {
                    Tagged::Absent => Tagged::One((w & ADDRESS_MASK) as *mut Node),
                    _ => return Tagged::Several,
                };
            }
        }
        found
    }

    /// What the index knows of `user` (invariant 3).
    #[inline]
    pub(super) fn probe(&self, user: &[u8]) -> Probe {
        let (bucket, tag) = self.place(user);
        if bucket[WAYS].load(Ordering::Acquire) != 0 {
            return Probe::Unknown;
        }
        let mut newest: Option<(*mut Node, u64)> = None;
        for way in &bucket[..WAYS] {
            let w = way.load(Ordering::Acquire);
            if w == 0 || w >> ADDRESS_BITS != tag {
                continue;
            }
            let n = (w & ADDRESS_MASK) as *mut Node;
            // SAFETY: ways hold linked nodes of this list (invariant 1).
            let (held_user, trailer) = unsafe { user_and_trailer(n) };
            if held_user == user && newest.is_none_or(|(_, t)| trailer > t) {
                newest = Some((n, trailer));
            }
        }
        match newest {
            Some((n, _)) => Probe::Newest(n),
            None => Probe::Absent,
        }
    }
}

impl Drop for PointIndex {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// The user key and trailer of node `n`.
///
/// # Safety
/// `n` is a linked non-head node; its bytes live as long as the list.
#[inline]
unsafe fn user_and_trailer<'a>(n: *mut Node) -> (&'a [u8], u64) {
    // SAFETY: the caller's contract.
    let key = unsafe { node::key(n) };
    (&key[..key.len() - TRAILER_LEN], crate::key::trailer(key))
}
