//! The arena: big blocks from which skip-list nodes are carved; nothing is
//! freed until the arena (the memtable) is dropped.
//!
//! # Thread safety
//! [`Arena::allocate`] may be called from many threads at once. A short
//! mutex guards the bump pointer and the block list: an insert spends
//! ~1 µs (its search takes several cache misses), the uncontended
//! lock/unlock ~20 ns, so a lock-free bump was not worth its complexity
//! (a batched insert takes it once for all its nodes: `allocate_each`).
//!
//! # Invariants
//! 1. Every pointer returned by `allocate` is 8-aligned and stays valid (and
//!    is never handed out twice) until the arena is dropped.
//! 2. `memory` equals the sum of the sizes of `blocks` (bytes really held).
//! 3. With `huge_pages`, blocks of ≥ 2 MiB are 2 MiB-aligned and, on Linux,
//!    advised `MADV_HUGEPAGE` (transparent huge pages are in `madvise` mode
//!    on the target machines; huge pages make random node reads 1.3–1.6×
//!    faster, docs/design.md §4.3).
//! 4. A block comes either from the global allocator or from the arena's
//!    [`BlockPool`]; on drop, full-size blocks go back to the pool while it
//!    has room, every other block to the allocator.
//!
//! # Recycling
//! A memtable's blocks are written once, read, and freed when the memtable
//! has been flushed; the next memtable then asks for as many again. Fresh
//! blocks cost a page fault per page and the kernel's zeroing of it on the
//! writer's path (a 2 MiB huge page at a time; 3.4 % of the server's CPU
//! under APPEND, `docs/perf/history/2026-11-30-arena-recycling.md`), and
//! jemalloc's decay or glibc's `munmap` of large blocks hand freed blocks
//! back to the kernel. A [`BlockPool`] keeps up to one memtable's blocks
//! (as Pebble recycles its last memtable's arena) for the next, already
//! faulted in. It never holds more than the memtables it replaced held: a
//! flushed memtable's blocks enter it only after that memtable is dropped.
#![allow(unsafe_code)]

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Size and alignment of a transparent huge page on x86_64 Linux.
pub(crate) const HUGE_PAGE: usize = 2 << 20;
/// Smallest block size accepted (tests use small blocks to exercise switching).
const MIN_BLOCK: usize = 4096;
/// Alignment of every allocation (atomic pointers live at its start).
const ALIGN: usize = 8;

/// A block owned by the arena (or waiting in a [`BlockPool`]).
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Block` owns its allocation exclusively (nothing else points
// into it once its arena is dropped), so moving it to another thread's
// pool or arena is moving plain owned memory.
unsafe impl Send for Block {}

/// Rounds a requested block size as arenas do: up to 4 KiB, and to 2 MiB
/// when `huge_pages`.
fn round_block_size(block_size: usize, huge_pages: bool) -> usize {
    let granule = if huge_pages { HUGE_PAGE } else { MIN_BLOCK };
    block_size.max(MIN_BLOCK).div_ceil(granule) * granule
}

/// Full-size arena blocks kept between memtables (see "Recycling" in the
/// module docs). Shared by the arenas of one memtable factory, whose
/// memtables all use the same block size; arenas of another block size
/// neither take from nor give to it.
pub(crate) struct BlockPool {
    /// Size of the blocks kept (rounded as arenas round theirs).
    block_size: usize,
    huge_pages: bool,
    /// Blocks kept at most.
    max_blocks: usize,
    free: Mutex<Vec<Block>>,
    /// Blocks handed out again instead of allocated (a statistic).
    reused: AtomicUsize,
}

impl BlockPool {
    /// A pool for arenas of `block_size` (and `huge_pages`) that keeps up
    /// to `max_bytes` of blocks: a whole number of blocks, at least one.
    pub(crate) fn new(block_size: usize, huge_pages: bool, max_bytes: usize) -> BlockPool {
        let block_size = round_block_size(block_size, huge_pages);
        BlockPool {
            block_size,
            huge_pages,
            max_blocks: max_bytes.div_ceil(block_size).max(1),
            free: Mutex::new(Vec::new()),
            reused: AtomicUsize::new(0),
        }
    }

    /// A kept block, if any.
    fn take(&self) -> Option<Block> {
        let b = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        // Relaxed: a statistic.
        self.reused.fetch_add(1, Ordering::Relaxed);
        Some(b)
    }

    /// Keeps `b` if it is a full-size block and there is room; otherwise
    /// hands it back to the caller to free.
    fn give(&self, b: Block) -> Option<Block> {
        if b.layout.size() != self.block_size {
            return Some(b);
        }
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() >= self.max_blocks {
            return Some(b);
        }
        free.push(b);
        None
    }

    /// Blocks handed out again so far.
    #[cfg(test)]
    pub(crate) fn reused_blocks(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    /// Bytes of the blocks kept now.
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self) -> usize {
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            * self.block_size
    }
}

impl Drop for BlockPool {
    fn drop(&mut self) {
        let free = self.free.get_mut().unwrap_or_else(PoisonError::into_inner);
        for b in free.drain(..) {
            // SAFETY: each kept block was allocated with exactly this layout
            // by an arena, which gave up its ownership when it kept it here.
            unsafe { dealloc(b.ptr.as_ptr(), b.layout) };
        }
    }
}

/// The mutable part, under the mutex.
struct State {
    /// Next free byte of the current block.
    cur: *mut u8,
    /// Free bytes left after `cur` in the current block.
    remaining: usize,
    /// Every block, in allocation order.
    blocks: Vec<Block>,
}

/// A bump allocator over large blocks (see the module docs).
pub(crate) struct Arena {
    block_size: usize,
    huge_pages: bool,
    /// Where full-size blocks come from first and go back to.
    pool: Option<Arc<BlockPool>>,
    state: Mutex<State>,
    /// Bytes of all blocks; written under the mutex, read without it.
    memory: AtomicUsize,
    /// Bytes handed out by `allocate` (≤ `memory`); as `memory`.
    in_use: AtomicUsize,
}

// SAFETY: the raw pointers in `State` point into blocks the arena owns
// exclusively; they are only read or changed under the mutex, and the memory
// handed out is managed by the skip list's own protocol (publish/acquire).
unsafe impl Send for Arena {}
// SAFETY: as above; all shared access to `State` goes through the mutex.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena of `block_size`-byte blocks (rounded up to 4 KiB, and to
    /// 2 MiB when `huge_pages`).
    #[cfg(test)]
    pub(crate) fn new(block_size: usize, huge_pages: bool) -> Arena {
        Arena::with_pool(block_size, huge_pages, None)
    }

    /// An arena of `block_size`-byte blocks (rounded as [`Arena::new`]
    /// rounds) whose full-size blocks come from `pool` while it has some,
    /// and go back to it when the arena is dropped. A pool made for another
    /// block size (or huge-page setting) is not used.
    pub(crate) fn with_pool(
        block_size: usize,
        huge_pages: bool,
        pool: Option<Arc<BlockPool>>,
    ) -> Arena {
        let block_size = round_block_size(block_size, huge_pages);
        let pool = pool.filter(|p| p.block_size == block_size && p.huge_pages == huge_pages);
        Arena {
            block_size,
            huge_pages,
            pool,
            state: Mutex::new(State {
                cur: std::ptr::null_mut(),
                remaining: 0,
                blocks: Vec::new(),
            }),
            memory: AtomicUsize::new(0),
            in_use: AtomicUsize::new(0),
        }
    }

    /// Returns `size` bytes, 8-aligned, uninitialised, valid until the arena
    /// is dropped. Entries larger than a quarter block get a block of their
    /// own so the current block is not wasted.
    pub(crate) fn allocate(&self, size: usize) -> *mut u8 {
        let size = size.div_ceil(ALIGN) * ALIGN;
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // Relaxed: a statistic; readers need no ordering with the bytes.
        self.in_use.fetch_add(size, Ordering::Relaxed);
        self.bump(&mut st, size)
    }

    /// [`Arena::allocate`] of each of `sizes` (`out[i]` gets `sizes[i]`
    /// bytes), under one lock: a batched insert takes the mutex once per
    /// batch instead of once per node.
    pub(crate) fn allocate_each(&self, sizes: &[usize], out: &mut [*mut u8]) {
        debug_assert_eq!(sizes.len(), out.len());
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut total = 0;
        for (p, &size) in out.iter_mut().zip(sizes) {
            let size = size.div_ceil(ALIGN) * ALIGN;
            total += size;
            *p = self.bump(&mut st, size);
        }
        // Relaxed: as in `allocate`.
        self.in_use.fetch_add(total, Ordering::Relaxed);
    }

    /// Carves `size` bytes (a multiple of [`ALIGN`]) from the current
    /// block, or from a new one.
    #[inline]
    fn bump(&self, st: &mut State, size: usize) -> *mut u8 {
        if size <= st.remaining {
            let p = st.cur;
            // SAFETY: `size ≤ remaining`, so `cur + size` stays inside the block.
            st.cur = unsafe { p.add(size) };
            st.remaining -= size;
            return p;
        }
        if size > self.block_size / 4 {
            return self.new_block(st, size);
        }
        let p = self.new_block(st, self.block_size);
        // SAFETY: the block holds `block_size ≥ size` bytes.
        st.cur = unsafe { p.add(size) };
        st.remaining = self.block_size - size;
        p
    }

    fn new_block(&self, st: &mut State, size: usize) -> *mut u8 {
        if size == self.block_size {
            if let Some(b) = self.pool.as_ref().and_then(|p| p.take()) {
                let raw = b.ptr.as_ptr();
                // Relaxed: a statistic, as below.
                self.memory.fetch_add(size, Ordering::Relaxed);
                st.blocks.push(b);
                return raw;
            }
        }
        let align = if self.huge_pages && size >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            MIN_BLOCK
        };
        #[allow(
            clippy::expect_used,
            reason = "blocks are at most 8 MiB (`MemTableFactory::new`) and entries at most \
                      a 64 KiB key and a 64 MiB value (`MAX_KEY_SIZE`, `MAX_VALUE_SIZE`), \
                      so `size` is far below `isize::MAX` and the layout is valid"
        )]
        let layout = Layout::from_size_align(size, align).expect("arena block size overflow");
        // SAFETY: `layout` has a non-zero size: `allocate` passes either
        // `block_size` (≥ 4 KiB) or a multiple of 8 larger than `remaining`.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        #[cfg(target_os = "linux")]
        if align == HUGE_PAGE {
            // SAFETY: the range is a block we own, 2 MiB-aligned; madvise only
            // changes how the kernel backs it. Failure is harmless (no THP).
            unsafe {
                libc::madvise(raw.cast(), size, libc::MADV_HUGEPAGE);
            }
        }
        st.blocks.push(Block { ptr, layout });
        // Relaxed: a statistic; nothing is published through it.
        self.memory.fetch_add(size, Ordering::Relaxed);
        raw
    }

    /// Bytes of all blocks allocated so far.
    pub(crate) fn memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    /// Bytes handed out so far (the unused tail of the current block is not
    /// counted): what decides that a memtable is full, so a write buffer the
    /// size of one block is not full after its first entry.
    pub(crate) fn bytes_in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// The offset of `p` in the arena's address space (blocks laid end to end
    /// in allocation order), for naming a bad node in errors; 0 if unknown.
    pub(crate) fn offset_of(&self, p: *const u8) -> u64 {
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut base = 0u64;
        for b in &st.blocks {
            let start = b.ptr.as_ptr() as usize;
            let addr = p as usize;
            if addr >= start && addr < start + b.layout.size() {
                return base + (addr - start) as u64;
            }
            base += b.layout.size() as u64;
        }
        0
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for b in st.blocks.drain(..) {
            // `&mut self` proves no node reference into `b` outlives the
            // arena: the pool may hand it to the next one.
            let b = match &self.pool {
                Some(pool) => match pool.give(b) {
                    Some(b) => b,
                    None => continue,
                },
                None => b,
            };
            // SAFETY: each block was allocated with exactly this layout and is
            // freed once (a kept block is freed by its pool instead).
            unsafe { dealloc(b.ptr.as_ptr(), b.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_counted() {
        let a = Arena::new(4096, false);
        assert_eq!(a.memory_usage(), 0);
        let mut ptrs = Vec::new();
        for i in 1..200usize {
            let p = a.allocate(i);
            assert_eq!(p as usize % 8, 0);
            // SAFETY: `p` points at `i` fresh bytes owned by the arena.
            unsafe { std::ptr::write_bytes(p, i as u8, i) };
            ptrs.push((p, i));
        }
        for &(p, i) in &ptrs {
            // SAFETY: as above; nothing else wrote these bytes.
            let s = unsafe { std::slice::from_raw_parts(p, i) };
            assert!(
                s.iter().all(|&b| b == i as u8),
                "allocation {i} overwritten"
            );
        }
        // 199 allocations of ≤ 200 bytes: several 4 KiB blocks, all counted.
        let used: usize = (1..200usize).map(|i| i.div_ceil(8) * 8).sum();
        assert!(a.memory_usage() >= used);
        assert_eq!(a.memory_usage() % 4096, 0);
        let big = a.allocate(10_000);
        assert!(a.offset_of(big) > 0);
        assert_eq!(a.offset_of(std::ptr::null()), 0);
    }

    /// `allocate_each` hands out what `allocate` of each size would: aligned,
    /// disjoint, counted, big entries in blocks of their own.
    #[test]
    fn allocate_each_matches_allocate() {
        let a = Arena::new(4096, false);
        let sizes: Vec<usize> = (0..300).map(|i| 1 + (i * 37) % 300).chain([2000]).collect();
        let mut ptrs = vec![std::ptr::null_mut(); sizes.len()];
        for (s, p) in sizes.chunks(64).zip(ptrs.chunks_mut(64)) {
            a.allocate_each(s, p);
        }
        for (i, (&p, &n)) in ptrs.iter().zip(&sizes).enumerate() {
            assert_eq!(p as usize % 8, 0);
            // SAFETY: `p` points at `n` fresh bytes owned by the arena.
            unsafe { std::ptr::write_bytes(p, i as u8, n) };
        }
        for (i, (&p, &n)) in ptrs.iter().zip(&sizes).enumerate() {
            // SAFETY: as above; nothing else wrote these bytes.
            let s = unsafe { std::slice::from_raw_parts(p, n) };
            assert!(
                s.iter().all(|&b| b == i as u8),
                "allocation {i} overwritten"
            );
        }
        let used: usize = sizes.iter().map(|n| n.div_ceil(8) * 8).sum();
        assert_eq!(a.bytes_in_use(), used);
        assert!(a.memory_usage() >= used);
    }

    #[test]
    fn huge_page_blocks_are_2mib_aligned() {
        let a = Arena::new(1, true);
        let p = a.allocate(64);
        assert_eq!(p as usize % HUGE_PAGE, 0);
        assert_eq!(a.memory_usage(), HUGE_PAGE);
    }

    /// The start of every block `a` holds now, in allocation order.
    fn block_starts(a: &Arena) -> Vec<usize> {
        let st = a.state.lock().unwrap();
        st.blocks.iter().map(|b| b.ptr.as_ptr() as usize).collect()
    }

    /// Fills `n` allocations of `size` bytes with `tag`.
    fn fill(a: &Arena, n: usize, size: usize, tag: u8) -> Vec<*mut u8> {
        (0..n)
            .map(|_| {
                let p = a.allocate(size);
                // SAFETY: `p` points at `size` bytes owned by `a`.
                unsafe { std::ptr::write_bytes(p, tag, size) };
                p
            })
            .collect()
    }

    fn holds(ptrs: &[*mut u8], size: usize, tag: u8) -> bool {
        ptrs.iter().all(|&p| {
            // SAFETY: each `p` points at `size` bytes of a live arena.
            let s = unsafe { std::slice::from_raw_parts(p, size) };
            s.iter().all(|&b| b == tag)
        })
    }

    /// A dropped arena's full-size blocks serve the next arena of the pool,
    /// up to the pool's size; its oversized blocks are freed.
    #[test]
    fn a_pool_hands_a_dropped_arenas_blocks_to_the_next() {
        let pool = Arc::new(BlockPool::new(4096, false, 3 * 4096));
        let a = Arena::with_pool(4096, false, Some(Arc::clone(&pool)));
        // 4 allocations of 1000 bytes per 4 KiB block: 5 blocks, plus one
        // block of its own for an entry over a quarter block.
        fill(&a, 20, 1000, 1);
        fill(&a, 1, 3000, 1);
        let first = block_starts(&a);
        assert_eq!(first.len(), 6);
        drop(a);
        assert_eq!(pool.kept_bytes(), 3 * 4096, "kept up to the pool's size");
        let mut kept: Vec<usize> = {
            let free = pool.free.lock().unwrap();
            free.iter().map(|b| b.ptr.as_ptr() as usize).collect()
        };
        assert!(kept.iter().all(|p| first.contains(p)), "kept a's blocks");

        let b = Arena::with_pool(4096, false, Some(Arc::clone(&pool)));
        let mine = fill(&b, 20, 1000, 2);
        let second = block_starts(&b);
        assert_eq!(pool.reused_blocks(), 3);
        assert_eq!(pool.kept_bytes(), 0);
        // b's first three blocks are the kept ones (the allocator may hand
        // out a's freed blocks again for the other two).
        let mut taken = second[..3].to_vec();
        taken.sort_unstable();
        kept.sort_unstable();
        assert_eq!(taken, kept, "b took the kept blocks first");
        assert_eq!(second.len(), 5);
        assert!(holds(&mine, 1000, 2));
        assert_eq!(b.memory_usage(), 5 * 4096);
        assert_eq!(b.bytes_in_use(), 20 * 1000);
    }

    /// An arena of another block size neither takes from nor gives to the
    /// pool.
    #[test]
    fn a_pool_of_another_block_size_is_not_used() {
        let pool = Arc::new(BlockPool::new(8192, false, 4 * 8192));
        let a = Arena::with_pool(8192, false, Some(Arc::clone(&pool)));
        fill(&a, 10, 1000, 1);
        drop(a);
        let kept = pool.kept_bytes();
        assert!(kept > 0);
        let b = Arena::with_pool(4096, false, Some(Arc::clone(&pool)));
        fill(&b, 10, 1000, 2);
        drop(b);
        assert_eq!(pool.reused_blocks(), 0);
        assert_eq!(pool.kept_bytes(), kept);
    }

    /// Arenas of one pool created, filled and dropped on several threads at
    /// once: no block is ever in two live arenas (each thread's bytes stay
    /// its own until it drops its arena), and blocks do get reused.
    #[test]
    fn arenas_of_one_pool_on_many_threads_never_share_a_block() {
        let pool = Arc::new(BlockPool::new(4096, false, 8 * 4096));
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let pool = Arc::clone(&pool);
                s.spawn(move || {
                    for round in 0..200usize {
                        let a = Arena::with_pool(4096, false, Some(Arc::clone(&pool)));
                        let n = 4 + round % 9;
                        let ptrs = fill(&a, n, 1000, t + 1);
                        std::thread::yield_now();
                        assert!(holds(&ptrs, 1000, t + 1), "thread {t} round {round}");
                    }
                });
            }
        });
        assert!(pool.reused_blocks() > 0);
        assert!(pool.kept_bytes() <= 8 * 4096);
    }
}
