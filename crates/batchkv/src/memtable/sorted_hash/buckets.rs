//! The bucket array of the sorted-hash memtable: `n` atomic chain heads;
//! each chain is sorted by internal key (so a user key's versions are
//! adjacent, newest first) and grows by lock-free CAS insertion.
//!
//! # Thread safety
//! Inserts and lookups run concurrently from any threads. Nodes are never
//! unlinked, so a reader walking a chain always walks valid nodes.
//!
//! # Invariants
//! 1. Every chain is strictly ascending in internal-key order.
//! 2. A node is linked by a release CAS after its bytes and its own `next`
//!    are written; readers follow links with acquire loads.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicPtr, Ordering};

use super::arena::{load_link, Node, NodeRef, HEADER};
use super::pipeline::{ChainTable, Probe};
use crate::key::{compare_internal_key_parts, compare_internal_keys, user_key};

/// Hashes a user key (64-bit multiply–rotate over 8-byte words, then
/// MurmurHash3's 64-bit finalizer). In memory only.
pub(crate) fn hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (key.len() as u64).wrapping_mul(K);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(31);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(31);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The fixed array of chain heads.
pub(crate) struct Buckets {
    slots: Box<[AtomicPtr<Node>]>,
}

impl Buckets {
    /// `n` empty buckets (at least 1). Every slot is written here, so the
    /// pages are faulted in before the memtable is used.
    pub(crate) fn new(n: usize) -> Buckets {
        let slots: Vec<AtomicPtr<Node>> = (0..n.max(1))
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        Buckets {
            slots: slots.into_boxed_slice(),
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.slots.len() * std::mem::size_of::<AtomicPtr<Node>>()
    }

    #[inline]
    fn index(&self, user: &[u8]) -> usize {
        // Lemire's multiply-shift range reduction: uniform, no division.
        ((u128::from(hash(user)) * self.slots.len() as u128) >> 64) as usize
    }

    /// Links `n` into its chain.
    ///
    /// # Safety
    /// `n` is fully written, not yet linked in any chain, and its arena (and
    /// that of every linked node) outlives the call.
    pub(crate) unsafe fn insert(&self, n: NodeRef) {
        // SAFETY: the caller keeps the arena alive (this function's contract).
        let ik = unsafe { n.ikey() };
        let mut slot: &AtomicPtr<Node> = &self.slots[self.index(user_key(ik))];
        loop {
            let cur = load_link(slot);
            if let Some(c) = cur {
                // SAFETY: linked nodes live as long as the arena.
                if unsafe { compare_internal_keys(c.ikey(), ik) }.is_lt() {
                    // SAFETY: as above.
                    slot = unsafe { c.next_slot() };
                    continue;
                }
            }
            let cur_ptr = cur.map_or(std::ptr::null_mut(), NodeRef::as_ptr);
            // Relaxed: published by the release CAS below.
            // SAFETY: `n` is still private to this thread.
            unsafe { n.next_slot() }.store(cur_ptr, Ordering::Relaxed);
            // Release: `n`'s bytes and link happen-before readers' acquire.
            if slot
                .compare_exchange(cur_ptr, n.as_ptr(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            // Another node was linked here: re-examine this slot.
        }
    }

    /// The first node of `user`'s chain at or after `user ‖ lookup` if it
    /// has user key `user` (the newest version visible at the lookup's
    /// sequence number).
    ///
    /// # Safety
    /// The arena of the linked nodes must be alive while the result is used.
    pub(crate) unsafe fn find(&self, user: &[u8], lookup: u64) -> Option<NodeRef> {
        let mut p = load_link(&self.slots[self.index(user)]);
        while let Some(c) = p {
            // SAFETY: the caller keeps the arena alive (this function's contract).
            let ik = unsafe { c.ikey() };
            if compare_internal_key_parts(ik, user, lookup).is_lt() {
                // SAFETY: the caller keeps the arena alive (this function's contract).
                p = unsafe { c.next() };
            } else {
                return (user_key(ik) == user).then_some(c);
            }
        }
        None
    }

    /// Checks invariant 1 on every chain (tests).
    #[cfg(test)]
    pub(crate) fn check_chains(&self) -> usize {
        let mut total = 0;
        for s in self.slots.iter() {
            let mut p = load_link(s);
            let mut prev: Option<&[u8]> = None;
            while let Some(c) = p {
                // SAFETY: tests keep the arena alive.
                let ik = unsafe { c.ikey() };
                if let Some(pk) = prev {
                    assert!(compare_internal_keys(pk, ik).is_lt(), "chain out of order");
                }
                prev = Some(ik);
                total += 1;
                // SAFETY: as above.
                p = unsafe { c.next() };
            }
        }
        total
    }
}

/// A lookup at one sequence number, as the pipeline sees the buckets.
pub(crate) struct PipelinedLookup<'a> {
    pub buckets: &'a Buckets,
    pub lookup: u64,
}

impl ChainTable for PipelinedLookup<'_> {
    type Entry = NodeRef;

    #[inline]
    fn bucket_of(&self, key: &[u8]) -> usize {
        self.buckets.index(key)
    }
    #[inline]
    fn bucket_addr(&self, b: usize) -> *const u8 {
        std::ptr::from_ref(&self.buckets.slots[b]).cast()
    }
    #[inline]
    fn head(&self, b: usize) -> Option<NodeRef> {
        load_link(&self.buckets.slots[b])
    }
    #[inline]
    fn entry_addr(&self, e: NodeRef) -> *const u8 {
        e.addr()
    }
    #[inline]
    fn key_addr(&self, e: NodeRef) -> Option<*const u8> {
        // The key starts HEADER bytes in; it needs its own prefetch only if
        // the node's first key bytes lie on the next cache line.
        let a = e.addr() as usize;
        ((a & 63) + HEADER + 8 > 64).then_some(e.addr().wrapping_add(HEADER + 8))
    }
    #[inline]
    fn value_addr(&self, e: NodeRef) -> *const u8 {
        // SAFETY: the pipeline runs while the memtable (arena) is borrowed.
        e.addr().wrapping_add(HEADER + unsafe { e.ikey() }.len())
    }
    #[inline]
    fn probe(&self, e: NodeRef, key: &[u8]) -> Probe<NodeRef> {
        // SAFETY: as above.
        let ik = unsafe { e.ikey() };
        if compare_internal_key_parts(ik, key, self.lookup).is_lt() {
            // SAFETY: as above.
            Probe::Next(unsafe { e.next() })
        } else if user_key(ik) == key {
            Probe::Hit
        } else {
            Probe::Miss
        }
    }
}
