//! Entry storage shared by the sorted-hash and vector memtables: a bump
//! arena of *nodes*, each one entry (internal key and value) behind a small
//! header, and the lock-free *write list* every insert is pushed onto.
//!
//! Node layout (in memory only, 8-aligned):
//! ```text
//! offset 0   next   AtomicPtr<Node>  bucket-chain link (sorted-hash only)
//! offset 8   wnext  AtomicPtr<Node>  write-list link
//! offset 16  klen   u32              internal key length (user key + 8)
//! offset 20  vlen   u32              value length
//! offset 24  internal key bytes, then value bytes
//! ```
//! The vector memtable does not use `next` (8 bytes per entry it could save;
//! kept so both memtables share one node type).
//!
//! # Thread safety
//! [`Arena::alloc_node`] may be called from many threads: a short mutex
//! guards the bump pointer (uncontended ≈ 20 ns; the engine has one
//! inserting thread per write group). Node bytes are written before the node
//! is published by a release store/CAS of a link; readers reach nodes only
//! through acquire loads of links, so they never see a half-written node.
//!
//! # Invariants
//! 1. A node's bytes never change after publication, except its two links,
//!    which are atomics.
//! 2. Every node lives until the arena is dropped; nothing is freed earlier.
//! 3. `memory` equals the bytes of all blocks held (honest usage).
#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::error::{Error, Result};
use crate::key::{ValueType, TRAILER_LEN};
pub(crate) use crate::memtable::arena::Arena as BlockArena;
use crate::memtable::EntryRef;

/// Node alignment (the header holds atomics).
const ALIGN: usize = 8;
/// Bytes before the entry bytes of a node.
pub(crate) const HEADER: usize = 24;

/// The fixed part of a node; the entry bytes follow it.
#[repr(C)]
pub(crate) struct Node {
    next: AtomicPtr<Node>,
    wnext: AtomicPtr<Node>,
    klen: u32,
    vlen: u32,
}

/// A pointer to a published node. Copyable and sendable; dereferencing it
/// (the `unsafe` accessors) requires that its arena is still alive.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct NodeRef(NonNull<Node>);

// SAFETY: a NodeRef is a pointer to immutable (or atomic) data in an arena
// that is Sync; moving the pointer between threads is harmless, and every
// dereference states why the arena is alive.
unsafe impl Send for NodeRef {}
// SAFETY: as above.
unsafe impl Sync for NodeRef {}

impl NodeRef {
    fn from_ptr(p: *mut Node) -> Option<NodeRef> {
        NonNull::new(p).map(NodeRef)
    }

    pub(crate) fn as_ptr(self) -> *mut Node {
        self.0.as_ptr()
    }

    /// Address of the node header (for prefetching; never dereferenced here).
    #[inline]
    pub(crate) fn addr(self) -> *const u8 {
        self.0.as_ptr().cast::<u8>()
    }

    /// Address of the internal key (for prefetching; never dereferenced
    /// here).
    #[inline]
    pub(crate) fn key_addr(self) -> *const u8 {
        self.addr().wrapping_add(HEADER)
    }

    /// The internal key.
    ///
    /// # Safety
    /// The arena that allocated the node must outlive `'a`.
    #[inline]
    pub(crate) unsafe fn ikey<'a>(self) -> &'a [u8] {
        let n = self.0.as_ptr();
        // SAFETY: the caller keeps the arena alive; `klen` and the key bytes
        // were written before publication and never change (invariant 1).
        unsafe { std::slice::from_raw_parts(n.cast::<u8>().add(HEADER), (*n).klen as usize) }
    }

    /// The value.
    ///
    /// # Safety
    /// As for [`NodeRef::ikey`].
    #[inline]
    pub(crate) unsafe fn value<'a>(self) -> &'a [u8] {
        let n = self.0.as_ptr();
        // SAFETY: as for `ikey`; the value follows the key inside the node.
        unsafe {
            let off = HEADER + (*n).klen as usize;
            std::slice::from_raw_parts(n.cast::<u8>().add(off), (*n).vlen as usize)
        }
    }

    /// The bucket-chain link slot.
    ///
    /// # Safety
    /// As for [`NodeRef::ikey`].
    #[inline]
    pub(crate) unsafe fn next_slot<'a>(self) -> &'a AtomicPtr<Node> {
        // SAFETY: the caller keeps the arena alive; `next` is an atomic.
        unsafe { &(*self.0.as_ptr()).next }
    }

    /// The next node of the bucket chain (acquire: its bytes are visible).
    ///
    /// # Safety
    /// As for [`NodeRef::ikey`].
    #[inline]
    pub(crate) unsafe fn next(self) -> Option<NodeRef> {
        // SAFETY: the caller keeps the arena alive (this function's contract).
        NodeRef::from_ptr(unsafe { self.next_slot() }.load(Ordering::Acquire))
    }
}

/// Loads a chain head published in `slot`.
#[inline]
pub(crate) fn load_link(slot: &AtomicPtr<Node>) -> Option<NodeRef> {
    // Acquire: pairs with the release CAS that published the node.
    NodeRef::from_ptr(slot.load(Ordering::Acquire))
}

/// The node allocator: the memtables' shared block arena (huge pages,
/// honest usage), with the node layout above on top.
pub(crate) struct Arena {
    blocks: BlockArena,
}

impl Arena {
    /// An arena of `block_size`-byte blocks (rounded up to 4 KiB, or to
    /// 2 MiB when `huge_pages`).
    #[cfg(test)]
    pub(crate) fn new(block_size: usize, huge_pages: bool) -> Arena {
        Arena::over(BlockArena::with_pool(block_size, huge_pages, None))
    }

    /// The node allocator over `blocks` (which may take its blocks from a
    /// pool: [`BlockArena::with_pool`]).
    pub(crate) fn over(blocks: BlockArena) -> Arena {
        Arena { blocks }
    }

    /// Bytes of all blocks allocated so far.
    pub(crate) fn memory_usage(&self) -> usize {
        self.blocks.memory_usage()
    }

    /// Bytes of nodes allocated so far.
    pub(crate) fn bytes_in_use(&self) -> usize {
        self.blocks.bytes_in_use()
    }

    /// What node `n` (allocated here) holds for a point read; a damaged
    /// type byte is `Corruption` naming the memtable, the node's offset in
    /// this arena and its key.
    /// `memtable` names it, called only on error (reads stay allocation-free).
    pub(crate) fn resolve(
        &self,
        n: NodeRef,
        memtable: impl FnOnce() -> String,
    ) -> Result<EntryRef<'_>> {
        // SAFETY: `n` was allocated by this arena, which `&self` keeps alive.
        let (ik, v) = unsafe { (n.ikey(), n.value()) };
        let (user_key, t) = (&ik[..ik.len() - TRAILER_LEN], ik[ik.len() - TRAILER_LEN]);
        match ValueType::from_u8(t) {
            Some(ValueType::Value) => Ok(EntryRef::Value(v)),
            Some(ValueType::Deletion) => Ok(EntryRef::Deleted),
            Some(ValueType::Merge) => Ok(EntryRef::Merge(v)),
            // Range tombstones never enter the arena (memtable/with_range_dels.rs).
            Some(ValueType::RangeDeletion) | None => Err(Error::corruption(
                memtable(),
                self.blocks.offset_of(n.addr()),
                format!(
                    "unknown value type {t} in the entry for key {:?}",
                    String::from_utf8_lossy(user_key)
                ),
            )),
        }
    }

    /// Copies an entry into a new, unpublished node with null links.
    pub(crate) fn alloc_node(&self, user_key: &[u8], trailer: u64, value: &[u8]) -> NodeRef {
        let klen = user_key.len() + TRAILER_LEN;
        // Invariant: the write path bounds keys (≤ 64 KiB) and values
        // (≤ 64 MiB), so both lengths fit in u32.
        debug_assert!(klen <= u32::MAX as usize && value.len() <= u32::MAX as usize);
        let size = (HEADER + klen + value.len()).div_ceil(ALIGN) * ALIGN;
        let p = self.blocks.allocate(size).cast::<Node>();
        // SAFETY: `p` is 8-aligned and owns `size` fresh bytes, enough for the
        // header and entry bytes; no other thread can see it yet.
        unsafe {
            p.write(Node {
                next: AtomicPtr::new(std::ptr::null_mut()),
                wnext: AtomicPtr::new(std::ptr::null_mut()),
                klen: klen as u32,
                vlen: value.len() as u32,
            });
            let d = p.cast::<u8>().add(HEADER);
            std::ptr::copy_nonoverlapping(user_key.as_ptr(), d, user_key.len());
            let t = trailer.to_le_bytes();
            std::ptr::copy_nonoverlapping(t.as_ptr(), d.add(user_key.len()), TRAILER_LEN);
            std::ptr::copy_nonoverlapping(value.as_ptr(), d.add(klen), value.len());
            NodeRef(NonNull::new_unchecked(p))
        }
    }
}

/// The write list: every inserted node, newest first, as a Treiber stack
/// through the nodes' `wnext` links. A consumer takes the whole list at
/// once (a *cut*) by exchanging the anchor with null.
///
/// A push is a CAS loop rather than a bare exchange so the chain is never
/// observable with a missing link (an exchange-then-link push leaves a
/// window in which a cut would lose the tail). With the engine's single
/// inserting thread the CAS never retries.
pub(crate) struct WriteList {
    anchor: AtomicPtr<Node>,
}

impl WriteList {
    pub(crate) fn new() -> WriteList {
        WriteList {
            anchor: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Publishes `n` (fully written, unpublished on this list).
    pub(crate) fn push(&self, n: NodeRef) {
        // Relaxed: only a CAS success publishes, below.
        let mut head = self.anchor.load(Ordering::Relaxed);
        loop {
            // SAFETY: `n` is ours until the CAS below publishes it.
            unsafe { &(*n.as_ptr()).wnext }.store(head, Ordering::Relaxed);
            // Release: the node's bytes and `wnext` happen-before the cut
            // that acquires the anchor.
            match self.anchor.compare_exchange_weak(
                head,
                n.as_ptr(),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// True if no node was pushed since the last cut.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        // Acquire: a reader that sees an empty list after loading the
        // published sequence sees the runs of the cut that emptied it.
        self.anchor.load(Ordering::Acquire).is_null()
    }

    /// Takes every node pushed so far (newest first).
    ///
    /// # Safety
    /// The arena of the pushed nodes must be alive during the call.
    pub(crate) unsafe fn take_all(&self) -> Vec<NodeRef> {
        // AcqRel: acquire pairs with the pushes' release.
        let mut p = self.anchor.swap(std::ptr::null_mut(), Ordering::AcqRel);
        let mut out = Vec::new();
        while let Some(n) = NodeRef::from_ptr(p) {
            out.push(n);
            // SAFETY: the caller keeps the arena alive; `wnext` was set before
            // the node's publication and never changes after.
            p = unsafe { &(*n.as_ptr()).wnext }.load(Ordering::Relaxed);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_hold_their_entries_and_the_list_returns_them_newest_first() {
        let a = Arena::new(4096, false);
        let list = WriteList::new();
        assert!(list.is_empty());
        let mut made = Vec::new();
        for i in 0..500u32 {
            let k = format!("key{i}");
            let v = vec![i as u8; (i % 300) as usize];
            let n = a.alloc_node(k.as_bytes(), u64::from(i) << 8 | 1, &v);
            assert_eq!(n.addr() as usize % 8, 0);
            list.push(n);
            made.push((n, k, v));
        }
        assert!(a.memory_usage() >= 500 * HEADER);
        // SAFETY: `a` is alive for the whole test.
        let got = unsafe { list.take_all() };
        assert!(list.is_empty());
        assert_eq!(got.len(), 500);
        for (g, (n, k, v)) in got.iter().zip(made.iter().rev()) {
            assert_eq!(g, n);
            // SAFETY: as above.
            let (ik, val) = unsafe { (g.ikey(), g.value()) };
            assert_eq!(&ik[..ik.len() - 8], k.as_bytes());
            assert_eq!(val, &v[..]);
        }
    }

    /// Issue 12: corruption found by the vector and sorted-hash memtables
    /// named offset 0 and no key; it names the node's offset and key now.
    #[test]
    fn a_damaged_type_byte_names_the_node_offset_and_key() {
        let arena = Arena::new(4096, false);
        for i in 0..10u64 {
            arena.alloc_node(format!("k{i}").as_bytes(), (i << 8) | 1, b"v");
        }
        let bad = arena.alloc_node(b"victim", (11 << 8) | 0x7f, b"v");
        let expected = arena.blocks.offset_of(bad.addr());
        assert!(expected > 0);
        match arena.resolve(bad, || "memtable#3".into()) {
            Err(crate::error::Error::Corruption {
                file,
                offset,
                detail,
            }) => {
                assert_eq!((file.as_str(), offset), ("memtable#3", expected));
                assert!(
                    detail.contains("victim") && detail.contains("127"),
                    "{detail}"
                );
            }
            other => panic!("expected Corruption, got {other:?}"),
        }
    }
}
