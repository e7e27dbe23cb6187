//! The default memtable: a concurrent arena skip list (docs/design.md §4.1) with
//! batched lookups — finger search (§4.2) and a breadth-first prefetching
//! descent (§4.3) — and optional paranoid checks (§4.4).
//!
//! Files: `arena.rs` (blocks, huge pages), `node.rs` (node layout),
//! `list.rs` (insert, single-key search, checks), `batch_insert.rs` (a
//! write group's interleaved searches), `finger.rs`, `bfs.rs`, `iter.rs`.
//!
//! # Thread safety
//! Every method may be called from any number of threads at once; inserts
//! are lock-free apart from the arena's short allocation mutex.
//!
//! # Lookups
//! A lookup of `(user_key, seq)` searches for `user_key ‖ lookup_trailer(seq)`;
//! the first node at or after it is the answer if it has the same user key
//! (its type decides `Value` or `Deleted`). Because the search key already
//! sorts after every version newer than `seq`, no walk over versions is
//! needed at level 0.
//!
//! # Batch strategy (`Auto`)
//! See [`choose_strategy`]: per-key descents for batches of
//! ≤ [`AUTO_PER_KEY_MAX`] keys, the breadth-first descent above. Measured
//! with `cargo bench -p batchkv --bench memtable_multiget` (2M entries,
//! random sorted batches, median of 5 interleaved rounds, on a 2-core VM
//! shared with 4 compiling builders — load 5–8, so ±30% noise): bfs/per-key
//! = 0.73–0.98× at batch 1, 1.04–1.17× at 2, 2.1–2.7× at 8, 4.1–4.2× at 32,
//! 3.1–5.4× at 64, 4.3× at 256. So a single key takes the per-key path
//! (bfs pays its item bookkeeping for nothing) and every real batch takes
//! bfs. Finger search is never chosen: 0.87–1.23× of per-key, i.e. no gain
//! on random batches (each search waits on the previous one's misses).
#![allow(unsafe_code)]

mod batch_insert;
mod bfs;
mod finger;
mod indexed_get;
mod iter;
mod list;
mod node;
mod point_index;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::memtable::arena::{Arena, BlockPool};

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{lookup_trailer, pack_trailer, SequenceNumber, ValueType, TRAILER_LEN};
use crate::memtable::{BatchLookup, EntryRef, InsertHint, MemTable, NewEntry};
use list::{Path, SkipList};
use node::Node;
use point_index::{PointIndex, Probe};

/// Batches of at most this many keys use per-key descents under `Auto`.
pub const AUTO_PER_KEY_MAX: usize = 1;

/// Options of a [`SkipListMemTable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipListOptions {
    /// Names the memtable in errors: `memtable#<id>`.
    pub id: u64,
    /// Check order and entry checksums on every lookup (docs/design.md §4.4).
    pub paranoid_checks: bool,
    /// Back the arena with 2 MiB transparent huge pages (Linux, `madvise`).
    pub huge_pages: bool,
    /// Arena block size in bytes (rounded up to 2 MiB with huge pages).
    pub arena_block_size: usize,
    /// Buckets of the point index (`point_index.rs`; 7 keys each); 0: no
    /// index.
    pub point_index_buckets: usize,
}

impl Default for SkipListOptions {
    fn default() -> Self {
        SkipListOptions {
            id: 0,
            paranoid_checks: false,
            huge_pages: true,
            arena_block_size: crate::memtable::arena::HUGE_PAGE,
            point_index_buckets: 0,
        }
    }
}

/// The strategy `Auto` uses for a batch of `batch_len` sorted keys: a pure
/// function so it can be tested and reasoned about from measurements.
pub fn choose_strategy(batch_len: usize) -> BatchLookup {
    if batch_len <= AUTO_PER_KEY_MAX {
        BatchLookup::PerKey
    } else {
        BatchLookup::Bfs
    }
}

/// A concurrent skip-list memtable in an arena (see the module docs).
pub struct SkipListMemTable {
    list: SkipList,
    paranoid: bool,
    entries: AtomicU64,
}

impl SkipListMemTable {
    /// An empty memtable.
    #[cfg(any(test, feature = "bench-internals"))]
    pub fn new(opts: SkipListOptions) -> SkipListMemTable {
        SkipListMemTable::with_pool(opts, None)
    }

    /// An empty memtable whose arena takes its blocks from `pool` first
    /// (and gives them back when dropped).
    pub(crate) fn with_pool(
        opts: SkipListOptions,
        pool: Option<Arc<BlockPool>>,
    ) -> SkipListMemTable {
        SkipListMemTable {
            list: SkipList::new(
                format!("memtable#{}", opts.id),
                Arena::with_pool(opts.arena_block_size, opts.huge_pages, pool),
                // Without the mapping, lookups search the list as usual.
                (opts.point_index_buckets > 0)
                    .then(|| PointIndex::new(opts.point_index_buckets, opts.huge_pages))
                    .flatten(),
            ),
            paranoid: opts.paranoid_checks,
            entries: AtomicU64::new(0),
        }
    }

    /// What the candidate node `z` says about `user`, checked when the
    /// memtable is paranoid.
    fn resolve(&self, z: *mut Node, user: &[u8]) -> Result<Option<EntryRef<'_>>> {
        if self.paranoid {
            self.resolve_as::<true>(z, user)
        } else {
            self.resolve_as::<false>(z, user)
        }
    }

    /// [`Self::resolve`], checked when `P`.
    #[inline(always)]
    fn resolve_as<const P: bool>(&self, z: *mut Node, user: &[u8]) -> Result<Option<EntryRef<'_>>> {
        Ok(self.resolve_versioned_as::<P>(z, user)?.map(|(_, e)| e))
    }

    /// [`Self::resolve_as`] with the found version's sequence number, read
    /// from the internal key the check already decoded (not decoded again).
    #[inline(always)]
    fn resolve_versioned_as<const P: bool>(
        &self,
        z: *mut Node,
        user: &[u8],
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        if z.is_null() {
            return Ok(None);
        }
        // SAFETY: `z` is a linked non-head node of `self.list`; its bytes
        // live as long as `self`.
        let (key, value) = unsafe { node::key_and_value(z) };
        if !node::is_entry_of(key, user) {
            return Ok(None);
        }
        let seq = crate::key::trailer(key) >> 8;
        Ok(self.entry_ref::<P>(z, key, value)?.map(|e| (seq, e)))
    }

    /// [`MemTable::get_versioned`], checked when `P`.
    #[inline(always)]
    fn get_versioned_as<const P: bool>(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        let z = self.find_for_get::<P>(user_key, lookup_trailer(seq))?;
        self.resolve_versioned_as::<P>(z, user_key)
    }

    /// The first node ≥ `(user, trailer)` if it holds `user`, else that
    /// node or null (what [`Self::resolve`] needs): through the point index
    /// when there is one and it knows the key, else by a search.
    #[inline(always)]
    fn find_for_get<const P: bool>(&self, user: &[u8], trailer: u64) -> Result<*mut Node> {
        if !P {
            if let Some(index) = &self.list.index {
                match index.probe(user) {
                    Probe::Absent => return Ok(std::ptr::null_mut()),
                    // SAFETY: `n` is a linked node of this list holding
                    // `user` (the index's invariant 1).
                    Probe::Newest(n) => return Ok(unsafe { skip_newer(n, user, trailer) }),
                    Probe::Unknown => {}
                }
            }
        }
        self.list.find_ge::<P>(user, trailer)
    }

    /// The answer the entry `key → value` of node `z` (a search's
    /// candidate) gives for its user key. Unchecked lookups must not read
    /// the protection word after the value here: it is a cache miss in the
    /// middle of the search (measured: batch-64 bfs at 1.55–1.93 M keys/s
    /// when it was read, 2.28–2.31 without; `memtable_multiget`, 2M).
    #[inline(always)]
    fn entry_ref<'a, const P: bool>(
        &'a self,
        z: *mut Node,
        key: &'a [u8],
        value: &'a [u8],
    ) -> Result<Option<EntryRef<'a>>> {
        if P {
            // Returned entries get the full check (the search verified the
            // key; walked nodes had only their keys checked).
            // SAFETY: `z` is a linked non-head node of `self.list` (the
            // caller found `key` in it).
            unsafe { self.list.check_found_entry(z)? };
        }
        let t = key[key.len() - TRAILER_LEN];
        match ValueType::from_u8(t) {
            Some(ValueType::Value) => Ok(Some(EntryRef::Value(value))),
            Some(ValueType::Deletion) => Ok(Some(EntryRef::Deleted)),
            Some(ValueType::Merge) => Ok(Some(EntryRef::Merge(value))),
            // Range tombstones never enter the list (memtable/with_range_dels.rs).
            Some(ValueType::RangeDeletion) | None => Err(self
                .list
                .corruption(z, format!("unknown value type {t} in entry"))),
        }
    }

    fn multi_get_with<'a, const P: bool>(
        &'a self,
        keys: &[&[u8]],
        trailer: u64,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
        hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) -> Result<()> {
        if P {
            return self.multi_get_paranoid(keys, trailer, strategy, found);
        }
        let Some(hint) = hint else {
            if let Some(index) = &self.list.index {
                return self.multi_get_indexed(index, keys, trailer, strategy, found);
            }
            let mut emit = |i: usize, z: *mut Node, _: &Path| -> Result<()> {
                if let Some(e) = self.resolve_as::<false>(z, keys[i])? {
                    found(i, e);
                }
                Ok(())
            };
            return self.search::<false, false>(keys, trailer, strategy, &mut emit);
        };
        let mut emit = |i: usize, z: *mut Node, path: &Path| -> Result<()> {
            hint(i, self.list.hint(path));
            if let Some(e) = self.resolve_as::<false>(z, keys[i])? {
                found(i, e);
            }
            Ok(())
        };
        self.search::<false, true>(keys, trailer, strategy, &mut emit)
    }

    /// Runs `strategy`'s search of `keys`, calling `emit(i, candidate,
    /// path)` (`path`: the search's predecessors of the key, [`Path`]; the
    /// batched descent keeps them above level 0 only with `PATHS`).
    fn search<const P: bool, const PATHS: bool>(
        &self,
        keys: &[&[u8]],
        trailer: u64,
        strategy: BatchLookup,
        emit: &mut impl FnMut(usize, *mut Node, &Path) -> Result<()>,
    ) -> Result<()> {
        // `strategy` is resolved (`multi_get_checks`): never `Auto`.
        match strategy {
            BatchLookup::PerKey | BatchLookup::Auto => {
                for (i, k) in keys.iter().enumerate() {
                    let (path, z) = self.list.find_ge_path::<P>(k, trailer)?;
                    emit(i, z, &path)?;
                }
                Ok(())
            }
            BatchLookup::Finger => finger::multi_get::<P>(&self.list, keys, trailer, emit),
            BatchLookup::Bfs => bfs::multi_get::<P, PATHS>(&self.list, keys, trailer, emit),
        }
    }

    /// The paranoid batch: per chunk of [`bfs::CHUNK`] keys, search first,
    /// prefetching the value lines of every entry about to be returned, then
    /// resolve (the full entry check reads the whole value). Resolving inside
    /// the search made each returned entry's value miss a serial stall: the
    /// search itself touches only key lines. Same checks, same results; a
    /// corruption found by a chunk's search fails the whole chunk.
    fn multi_get_paranoid<'a>(
        &'a self,
        keys: &[&[u8]],
        trailer: u64,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        let mut base = 0;
        for chunk in keys.chunks(bfs::CHUNK) {
            // The candidates that hold their key (the others answer None).
            let mut hits = [(0u32, std::ptr::null_mut::<Node>()); bfs::CHUNK];
            let mut n = 0;
            self.search::<true, false>(chunk, trailer, strategy, &mut |i, z, _| {
                if prefetch_value(z, chunk[i]) {
                    hits[n] = (i as u32, z);
                    n += 1;
                }
                Ok(())
            })?;
            for &(i, z) in &hits[..n] {
                // SAFETY: `z` is a linked non-head node of `self.list`
                // (`prefetch_value` matched its key); its bytes live as
                // long as `self`.
                let (key, value) = unsafe { node::key_and_value(z) };
                if let Some(e) = self.entry_ref::<true>(z, key, value)? {
                    found(base + i as usize, e);
                }
            }
            base += chunk.len();
        }
        Ok(())
    }

    /// [`MemTable::multi_get`] with the paranoid checks on or off whatever
    /// the memtable's option says (entries always carry their protection
    /// words), so a benchmark can time the checked and the unchecked search
    /// on one and the same list: two lists filled alike still differ in
    /// layout (heights, arena placement, huge pages) by more than the
    /// checks cost.
    #[cfg(feature = "bench-internals")]
    pub fn multi_get_checked<'a>(
        &'a self,
        checks: bool,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        self.multi_get_checks(checks, keys, seq, strategy, found, None)
    }

    /// A batch lookup, checked when `checks` ([`MemTable::multi_get`]
    /// passes the memtable's option).
    fn multi_get_checks<'a>(
        &'a self,
        checks: bool,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
        hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) -> Result<()> {
        debug_assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "keys must be sorted and distinct"
        );
        let strategy = strategy.resolve(None, keys.len());
        let trailer = lookup_trailer(seq);
        if checks {
            // Paranoid lookups give no hints (their searches are apart).
            self.multi_get_with::<true>(keys, trailer, strategy, found, None)
        } else {
            self.multi_get_with::<false>(keys, trailer, strategy, found, hint)
        }
    }

    /// Test hook: flips bits of one entry's byte at `offset` from the start
    /// of its internal key (the first node with `user_key`; offsets past the
    /// key reach the key protection, value length and value); with
    /// `fix_checksum`, rewrites the protection bytes to match, so that only
    /// an order check can notice. Single-threaded tests only.
    #[cfg(test)]
    pub(crate) fn corrupt_entry_for_test(
        &self,
        user_key: &[u8],
        offset: usize,
        xor: u8,
        fix_checksum: bool,
    ) {
        let z = self
            .list
            .find_ge::<false>(user_key, lookup_trailer(crate::key::MAX_SEQUENCE))
            .expect("lookup without checks cannot fail");
        assert!(!z.is_null(), "no entry for the key to corrupt");
        // SAFETY: tests call this with no concurrent readers; `z` is linked
        // and its entry bytes lie inside its arena allocation. The key length
        // is a 1-byte varint for the short keys tests use.
        unsafe {
            let e = node::entry(z);
            let entry_len = e
                .value
                .as_ptr()
                .add(e.value.len())
                .offset_from(e.key.as_ptr());
            assert!((offset as isize) < entry_len && e.key.len() < 128);
            let p = node::entry_addr(z).add(1 + offset);
            *p ^= xor;
            if fix_checksum {
                let e = node::entry(z);
                let kprot = node::key_protection(e.key).to_le_bytes();
                let kp = e.key.as_ptr().add(e.key.len()).cast_mut();
                std::ptr::copy_nonoverlapping(kprot.as_ptr(), kp, kprot.len());
                let prot = node::protection(e.key, e.value).to_le_bytes();
                let pp = e.value.as_ptr().add(e.value.len()).cast_mut();
                std::ptr::copy_nonoverlapping(prot.as_ptr(), pp, prot.len());
            }
        }
    }
}

/// From `n`, the newest node of `user`, the first node ≥ `(user,
/// trailer)`: versions of a key are adjacent on level 0, newest first.
///
/// # Safety
/// `n` is a linked node of the list holding `user`.
#[inline]
unsafe fn skip_newer(mut n: *mut Node, user: &[u8], trailer: u64) -> *mut Node {
    // SAFETY: `n` and its level-0 successors are linked nodes of the list
    // (or null), whose bytes live as long as the list.
    unsafe {
        while !n.is_null() && list::node_lt(n, user, trailer) {
            n = node::next(n, 0);
        }
    }
    n
}

/// Lines of a value prefetched at most (longer values stream in anyway).
const PREFETCH_VALUE_LINES: usize = 8;

/// Prefetches the value and protection lines of candidate `z` if its user
/// key is `user` (the entry a lookup will return and fully check), and says
/// whether it is. Reads only `z`'s key line, which the search just
/// compared.
#[inline]
fn prefetch_value(z: *mut Node, user: &[u8]) -> bool {
    if z.is_null() {
        return false;
    }
    // SAFETY: `z` is a linked non-head node of a live list.
    let (key, span) = unsafe { node::key_and_value_span(z) };
    if !node::is_entry_of(key, user) {
        return false;
    }
    for line in ((span.start & !63)..span.end)
        .step_by(64)
        .take(PREFETCH_VALUE_LINES)
    {
        crate::prefetch::prefetch_read(line as *const u8);
    }
    true
}

impl MemTable for SkipListMemTable {
    fn kind(&self) -> &'static str {
        "skiplist"
    }

    fn insert(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        self.list.insert(user_key, pack_trailer(seq, t), value);
        // Relaxed: a statistic; entries are published by the list itself.
        self.entries.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn insert_many(&self, entries: &[NewEntry<'_>]) -> Result<usize> {
        if let [e] = entries {
            // One entry (a single put): nothing to overlap, no copy.
            let trailer = pack_trailer(e.seq, e.t);
            let hinted = (self.list).insert_hinted(e.user_key, trailer, e.value, e.hint);
            // Relaxed: as in `insert`.
            self.entries.fetch_add(1, Ordering::Relaxed);
            return Ok(usize::from(hinted));
        }
        let hinted = self.list.insert_batch(entries);
        // Relaxed: as in `insert`.
        self.entries
            .fetch_add(entries.len() as u64, Ordering::Relaxed);
        Ok(hinted)
    }

    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>> {
        let trailer = lookup_trailer(seq);
        let z = if self.paranoid {
            self.list.find_ge::<true>(user_key, trailer)?
        } else {
            self.find_for_get::<false>(user_key, trailer)?
        };
        self.resolve(z, user_key)
    }

    fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>> {
        if self.paranoid {
            self.get_versioned_as::<true>(user_key, seq)
        } else {
            self.get_versioned_as::<false>(user_key, seq)
        }
    }

    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        self.multi_get_checks(self.paranoid, keys, seq, strategy, found, None)
    }

    fn multi_get_hinted<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
        hint: &mut dyn FnMut(usize, InsertHint),
    ) -> Result<()> {
        let checks = self.paranoid;
        self.multi_get_checks(checks, keys, seq, strategy, found, Some(hint))
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(iter::SkipListIter::new(self))
    }

    fn approximate_memory_usage(&self) -> usize {
        self.list.arena.memory_usage() + self.list.index.as_ref().map_or(0, PointIndex::bytes)
    }

    fn bytes_in_use(&self) -> usize {
        self.list.arena.bytes_in_use()
    }

    fn num_entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }
}
