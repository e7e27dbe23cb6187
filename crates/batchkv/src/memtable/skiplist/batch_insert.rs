//! The batched insert ([`SkipList::insert_batch`]): a write group's entries
//! search for their splices together, interleaved, then are linked.
//!
//! # The searches
//! A chunk of up to [`INSERT_CHUNK`] entries gets its nodes first (one
//! arena lock for all of them), then one search per entry runs from the
//! top of the list. The searches advance round-robin, one node each: a
//! step compares the successor `z` it loaded (and prefetched) in its
//! previous turn, then loads and prefetches the node its next step reads,
//! so the cache misses of the chunk's searches overlap instead of
//! following one another (docs/design.md §4.3; RocksDB PR 14589's batched
//! insert does the same). A finished search leaves the round (the last one
//! in the round takes its place), so later rounds pass over no finished
//! ones. Each search records its splice only at the levels its node has:
//! the levels `link` needs.
//!
//! # Hints
//! An entry of height `h` needs its splices at levels `0..h`. When it
//! carries a hint of this list whose path still sorts before it
//! ([`SkipList::hinted_path`]: a read of its key just passed those nodes,
//! `Db::multi_get_hinted`) and `h ≤ HINT_LEVELS`, its search starts at
//! level `h - 1` from the path's node there, and at each level below from
//! that level's node, instead of at the top: a read-modify-write (the
//! server's INCR, APPEND) then searches the list once, not twice.
//! Pipelined INCR, 1M keys: the insert's share of the server's CPU went
//! from 12 % to 5 % with hints for nodes of height 1 (3 in 4), and its
//! instructions by a further 47 % with paths of 4 levels (callgrind).
//!
//! Tried and left out: sorting the chunk and descending its runs of keys
//! together (a node compared once per run, as the batched read does). On
//! random keys the shared top levels cut the comparisons per insert from
//! 27 to 20.5 (300k entries, batch 64), but the sort cost as many
//! instructions as they saved, and fillrandom was no faster
//! (`docs/perf/history/2026-11-29-engine-writes.md`).
//!
//! # Thread safety
//! As [`SkipList::insert`]: concurrent with other inserts and all readers.
//! A splice may be stale by the time it is linked (nodes inserted since,
//! by other threads or by this chunk); `link` then re-finds that level
//! from the splice's predecessor, which is still < the key (list.rs
//! invariant 1: nodes never move or disappear).
#![allow(unsafe_code)]

use super::list::{node_lt, prefetch_node, SkipList};
use super::node::{self, Node};
use crate::key::{pack_trailer, TRAILER_LEN};
use crate::memtable::{NewEntry, HINT_LEVELS};

/// Most entries whose searches run together. A core keeps ~16 misses in
/// flight; 64 searches keep it busy through the rounds where some search
/// waits on a line the others do not need. A longer batch is cut into
/// near-equal chunks of at most this many.
const INSERT_CHUNK: usize = 64;

/// Chunks of at most this many entries use state sized for it: a server
/// pipeline's group of a few writes need not set up 64 searches.
const SMALL_CHUNK: usize = 16;

/// Splice slots kept on the stack, two per entry of a full chunk: a node's
/// expected height is 4/3 (p = 1/4), so a chunk's heights rarely sum to
/// more than twice its length; a chunk whose heights do takes its slots
/// from the heap.
const STACK_SPLICE_SLOTS: usize = 2 * INSERT_CHUNK;

/// `node_lt(z, user, trailer)` for a search step: is `key(z) < (user,
/// trailer)`? The same order, computed straight from the node's bytes (its
/// one-byte key length, then the user key eight bytes at a time, then the
/// trailer): a step is one comparison, and the general comparison (slices,
/// `Ordering`) was about half of a step's instructions. A key length that
/// is not one varint byte (a user key of 120 bytes or more) takes the
/// general comparison.
///
/// # Safety
/// `z` is a linked non-head node of a live list.
#[inline(always)]
unsafe fn node_before(z: *mut Node, user: &[u8], trailer: u64) -> bool {
    // SAFETY: a node's entry starts 8 bytes after its pointer with the
    // varint key length (node.rs), followed by that many key bytes.
    unsafe {
        let p = z.cast::<u8>().add(8);
        let klen = usize::from(*p);
        if !(TRAILER_LEN..0x80).contains(&klen) {
            return node_lt(z, user, trailer);
        }
        let key = p.add(1);
        let zlen = klen - TRAILER_LEN;
        let n = zlen.min(user.len());
        let up = user.as_ptr();
        let mut i = 0;
        while i + 8 <= n {
            let a = key.add(i).cast::<u64>().read_unaligned();
            let b = up.add(i).cast::<u64>().read_unaligned();
            if a != b {
                return u64::from_be(a) < u64::from_be(b);
            }
            i += 8;
        }
        while i < n {
            let (a, b) = (*key.add(i), *up.add(i));
            if a != b {
                return a < b;
            }
            i += 1;
        }
        if zlen != user.len() {
            return zlen < user.len();
        }
        // Same user key: the larger (newer) trailer sorts first.
        u64::from_le(key.add(zlen).cast::<u64>().read_unaligned()) > trailer
    }
}

impl SkipList {
    /// Inserts every entry (internal keys new and distinct, in any order).
    /// The result is that of [`SkipList::insert`] of each, in any order;
    /// their searches overlap (module docs). Returns how many started from
    /// their hints.
    pub(super) fn insert_batch(&self, entries: &[NewEntry<'_>]) -> usize {
        if entries.is_empty() {
            return 0;
        }
        // Near-equal chunks: 65 entries are chunks of 33 and 32, not 64 and 1.
        let chunks = entries.len().div_ceil(INSERT_CHUNK);
        let mut hinted = 0;
        for chunk in entries.chunks(entries.len().div_ceil(chunks)) {
            hinted += match chunk {
                [e] => {
                    let trailer = pack_trailer(e.seq, e.t);
                    usize::from(self.insert_hinted(e.user_key, trailer, e.value, e.hint))
                }
                _ if chunk.len() <= SMALL_CHUNK => self.insert_chunk::<SMALL_CHUNK>(chunk),
                _ => self.insert_chunk::<INSERT_CHUNK>(chunk),
            };
        }
        hinted
    }

    /// [`SkipList::insert_batch`] of 2 to `N` entries.
    fn insert_chunk<const N: usize>(&self, entries: &[NewEntry<'_>]) -> usize {
        let n = entries.len();
        debug_assert!((2..=N).contains(&n));
        // Per entry: its trailer, node height and the offset of its splice
        // (`height` slots) in `prev` / `next`.
        let mut trailer = [0u64; N];
        let mut height = [0u8; N];
        let mut offset = [0u16; N];
        let mut size = [0usize; N];
        let mut tallest = 1;
        let mut slots = 0;
        for (i, e) in entries.iter().enumerate() {
            let h = node::random_height();
            trailer[i] = pack_trailer(e.seq, e.t);
            height[i] = h as u8;
            offset[i] = slots as u16;
            size[i] = node::node_size(h, e.user_key.len() + TRAILER_LEN, e.value.len());
            slots += h;
            tallest = tallest.max(h);
        }
        let mut nodes = [std::ptr::null_mut::<u8>(); N];
        self.arena.allocate_each(&size[..n], &mut nodes[..n]);
        for (i, e) in entries.iter().enumerate() {
            // SAFETY: `nodes[i]` is fresh arena memory of `size[i]` bytes
            // (`node_size` of this height, key and value), 8-aligned, not
            // yet visible to any other thread.
            nodes[i] = unsafe {
                node::init_node(
                    nodes[i],
                    usize::from(height[i]),
                    e.user_key,
                    trailer[i],
                    e.value,
                )
            }
            .cast();
        }
        let mut stack_prev = [std::ptr::null_mut::<Node>(); STACK_SPLICE_SLOTS];
        let mut stack_next = [std::ptr::null_mut::<Node>(); STACK_SPLICE_SLOTS];
        let (mut heap_prev, mut heap_next);
        let (prev, next): (&mut [*mut Node], &mut [*mut Node]) = if slots <= stack_prev.len() {
            (&mut stack_prev[..slots], &mut stack_next[..slots])
        } else {
            heap_prev = vec![std::ptr::null_mut(); slots];
            heap_next = vec![std::ptr::null_mut(); slots];
            (heap_prev.as_mut_slice(), heap_next.as_mut_slice())
        };
        if let Some(index) = &self.index {
            // Their buckets load while the searches run.
            for e in entries {
                index.prefetch(e.user_key);
            }
        }
        let top = self.raise_max_height(tallest);
        let hinted = self.search_splices::<N>(entries, &trailer, &height, &offset, top, prev, next);
        for (i, e) in entries.iter().enumerate() {
            let (h, at) = (usize::from(height[i]), usize::from(offset[i]));
            // SAFETY: `nodes[i]` is a fresh node of height `h`, not yet
            // linked; `prev[at..at + h]` holds its splice, whose
            // predecessors are the head or linked nodes < the key (nodes
            // linked since only sit after them: `link` re-finds).
            unsafe {
                self.link(
                    nodes[i].cast(),
                    h,
                    e.user_key,
                    trailer[i],
                    &mut prev[at..at + h],
                    &mut next[at..at + h],
                );
            }
        }
        hinted
    }

    /// Runs the searches of `entries` (module docs) from level `top - 1`
    /// down, or for a hinted entry from its hint's path: entry `i`'s splice
    /// at level `l < height[i]` goes to
    /// `prev[offset[i] + l]` / `next[offset[i] + l]`, with `prev < key ≤
    /// next` (null = +∞) as searched. Returns how many started at a hint.
    #[allow(
        clippy::too_many_arguments,
        reason = "the chunk's per-entry arrays, apart"
    )]
    fn search_splices<const N: usize>(
        &self,
        entries: &[NewEntry<'_>],
        trailer: &[u64; N],
        height: &[u8; N],
        offset: &[u16; N],
        top: usize,
        prev: &mut [*mut Node],
        next: &mut [*mut Node],
    ) -> usize {
        // Per search: `x` < key at `level`; `z` = next(x, level), loaded
        // and prefetched in the search's previous turn.
        let mut x = [self.head; N];
        let mut z = [std::ptr::null_mut::<Node>(); N];
        let mut level = [top - 1; N];
        // The searches that start from their hint's path.
        let mut hinted = [false; N];
        // The searches still running, in round order.
        let mut round = [0u8; N];
        // SAFETY: the head has MAX_HEIGHT ≥ top levels.
        let first = unsafe { node::next(self.head, top - 1) };
        prefetch_node(first, top - 1);
        let mut hinted_searches = 0;
        for (i, (e, r)) in entries.iter().zip(&mut round).enumerate() {
            *r = i as u8;
            // A node of at most HINT_LEVELS levels starts at the top of its
            // own height, from the path its read left (`hinted_path`).
            let h = usize::from(height[i]);
            let path = match h <= HINT_LEVELS {
                true => self.hinted_path(e.hint, e.user_key, trailer[i]),
                false => None,
            };
            if let Some(path) = path {
                hinted[i] = true;
                hinted_searches += 1;
                x[i] = path[h - 1];
                level[i] = h - 1;
                // SAFETY: `path[h - 1]` is the head or a linked node of
                // height > h - 1 (`Path`).
                z[i] = unsafe { node::next(x[i], h - 1) };
                prefetch_node(z[i], h - 1);
            } else {
                z[i] = first;
            }
        }
        let mut running = entries.len();
        while running > 0 {
            let mut k = 0;
            while k < running {
                let i = usize::from(round[k]);
                let (user, t) = (entries[i].user_key, trailer[i]);
                let (xi, zi, l) = (x[i], z[i], level[i]);
                // SAFETY: `zi`, if non-null, is a linked node (list.rs
                // invariant 1).
                let passed = !zi.is_null() && unsafe { node_before(zi, user, t) };
                let (xi, l) = if passed {
                    (zi, l)
                } else {
                    debug_assert!(
                        zi.is_null()
                            // SAFETY: as above.
                            || unsafe {
                                crate::key::compare_internal_key_parts(node::key(zi), user, t)
                            }
                            .is_gt(),
                        "internal key inserted twice"
                    );
                    if l < usize::from(height[i]) {
                        let at = usize::from(offset[i]) + l;
                        prev[at] = xi;
                        next[at] = zi;
                    }
                    if l == 0 {
                        // Done: the last search of the round takes its turn.
                        running -= 1;
                        round[k] = round[running];
                        continue;
                    }
                    // A hinted search goes on from its path's node below
                    // (before the key: `hinted_path` accepted it).
                    match (hinted[i], entries[i].hint) {
                        (true, Some(h)) => (h.path[l - 1] as *mut Node, l - 1),
                        _ => (xi, l - 1),
                    }
                };
                x[i] = xi;
                level[i] = l;
                // SAFETY: `xi` is the head or a linked node reached at level
                // `l` or above, so its height is > l.
                let zn = unsafe { node::next(xi, l) };
                prefetch_node(zn, l);
                z[i] = zn;
                k += 1;
            }
        }
        hinted_searches
    }
}
