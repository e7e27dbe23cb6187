//! [`Table::multi_get_blocks`]: a sorted batch of keys looked up in one
//! table in phases (filter, locate, block search), so that the cache
//! misses of different keys overlap; and the per-thread buffers it reuses.

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::{BlockReadOptions, Table};
use crate::cache::block_cache::{BatchBuffers, BlockKey};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{
    compare_internal_keys, lookup_trailer, parse_internal_key, SequenceNumber, ValueType,
};
use crate::sst::block::iter::{
    search_restart, search_restarts, seek_entry, seek_entry_after, BlockIter, ScanStop,
    SCAN_PREFETCH_BYTES,
};
use crate::sst::block::Block;
use crate::sst::filter::filter_hash;
use crate::sst::format::BlockHandle;

/// The callback of [`Table::multi_get_blocks`]: key index, result, and
/// the block holding the value when there is one.
pub(crate) type OnFoundInBlock<'f> =
    dyn FnMut(usize, Result<Versioned<'_>>, Option<&Arc<Block>>) + 'f;

/// A version found in a table: its sequence number (as stored: an
/// ingested file's entries carry 0), type and value (empty for a deletion).
pub(crate) type Versioned<'a> = (SequenceNumber, ValueType, &'a [u8]);

/// A version found by [`Table::multi_get_with`]: its type and value.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) type Found<'a> = (ValueType, &'a [u8]);

impl Table {
    /// [`Table::get_with`] for a batch. `keys` are distinct user keys in
    /// ascending order. Calls `on_result(j, …)` for each key `keys[j]` that
    /// has a version with sequence ≤ `seq` here (its type and value), or
    /// whose lookup failed; keys the table does not hold get no call.
    ///
    /// The batch goes through in phases, so the cache misses of different
    /// keys overlap instead of queueing one after another:
    /// 1. filter: hash every key and prefetch its filter line, then probe;
    /// 2. locate: the binary searches over the index's [`IndexFences`](crate::sst::block::fences::IndexFences)
    ///    run in lockstep (tables without fences search the index block
    ///    in lockstep, [`search_restarts`]); keys landing in the same
    ///    entry share its block; then the block cache lookups, batched;
    /// 3. search each key in its block, a software pipeline over the keys
    ///    (restart slot, probe key, restart search and scan prefetch,
    ///    scan: each stage some keys behind the one before). The scan of
    ///    a key in the block of the key before it goes on from where that
    ///    one stopped when its restart point is not further on
    ///    ([`seek_entry_after`]). A block whose
    ///    entries all sort before the key sends it down the single-key
    ///    path, so a block chosen too early costs time, never a wrong
    ///    answer.
    ///
    /// Its buffers are kept per thread between calls.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn multi_get_with(
        &self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        ro: BlockReadOptions,
        on_result: &mut dyn FnMut(usize, Result<Found<'_>>),
    ) {
        self.multi_get_blocks(keys, None, seq, ro, &mut |j, r, _| {
            on_result(j, r.map(|(_, t, v)| (t, v)))
        });
    }

    /// [`Table::multi_get_with`] that also hands over the block holding
    /// each value found (`None` on the rare single-key fallback), so a
    /// caller can keep the value by keeping the block instead of copying.
    ///
    /// `filter_hashes`, when given, holds [`filter_hash`] of each key (as
    /// many as `keys`): a batch that asks several tables hashes its keys
    /// once, not once per table (every table's filter uses that hash).
    pub(crate) fn multi_get_blocks(
        &self,
        keys: &[&[u8]],
        filter_hashes: Option<&[u64]>,
        seq: SequenceNumber,
        ro: BlockReadOptions,
        on_result: &mut OnFoundInBlock<'_>,
    ) {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys must ascend");
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                self.multi_get_in(&mut scratch, keys, filter_hashes, seq, ro, on_result);
                scratch.reset();
            }
            // Called again from inside `on_result`: buffers of its own.
            Err(_) => {
                let sc = &mut MultiGetScratch::default();
                self.multi_get_in(sc, keys, filter_hashes, seq, ro, on_result)
            }
        });
    }

    /// [`Table::multi_get_blocks`] with its buffers.
    fn multi_get_in(
        &self,
        sc: &mut MultiGetScratch,
        keys: &[&[u8]],
        filter_hashes: Option<&[u64]>,
        seq: SequenceNumber,
        ro: BlockReadOptions,
        on_result: &mut OnFoundInBlock<'_>,
    ) {
        // 1. Filter.
        sc.candidates.clear();
        match &self.filter {
            Some(f) => {
                let hashes = match filter_hashes {
                    Some(h) => {
                        debug_assert_eq!(h.len(), keys.len());
                        h
                    }
                    None => {
                        sc.hashes.clear();
                        sc.hashes.extend(keys.iter().map(|k| filter_hash(k)));
                        &sc.hashes
                    }
                };
                for &h in hashes {
                    f.prefetch_hash(h);
                }
                sc.candidates
                    .extend((0..keys.len()).filter(|&j| f.may_contain_hash(hashes[j])));
            }
            None => sc.candidates.extend(0..keys.len()),
        }
        let candidates = &sc.candidates[..];

        // 2. Locate each candidate's data block.
        // Every candidate's lookup key, in one buffer.
        sc.target_bytes.clear();
        sc.target_ends.clear();
        for &j in candidates {
            sc.target_bytes.extend_from_slice(keys[j]);
            sc.target_bytes
                .extend_from_slice(&lookup_trailer(seq).to_le_bytes());
            sc.target_ends.push(sc.target_bytes.len());
        }
        let mut targets: Vec<&[u8]> = recycle(std::mem::take(&mut sc.targets));
        let mut at = 0;
        for &end in &sc.target_ends {
            targets.push(&sc.target_bytes[at..end]);
            at = end;
        }
        // (candidate index into `candidates`, index into `handles`)
        let wanted = &mut sc.wanted;
        let handles = &mut sc.handles;
        wanted.clear();
        handles.clear();
        let located = match &self.index_fences {
            Some(fences) => {
                // Targets ascend, so a target landing in the previous
                // key's entry reuses its handle.
                fences.seek_batch(
                    &self.index,
                    &targets,
                    (&mut sc.fences, &mut sc.bases),
                    &mut sc.entries,
                );
                let mut last_entry = usize::MAX;
                for ((n, &j), entry) in candidates.iter().enumerate().zip(sc.entries.drain(..)) {
                    match entry {
                        Ok(e) if e == fences.len() => break, // past the last key, so are the rest
                        Ok(e) => {
                            if e != last_entry {
                                handles.push(fences.handle(e));
                                last_entry = e;
                            }
                            wanted.push((n, handles.len() - 1));
                        }
                        Err(e) => on_result(j, Err(e), None),
                    }
                }
                true
            }
            None => self
                .locate_by_search(candidates, &targets, wanted, handles, on_result)
                .is_continue(),
        };

        if located {
            // Fetch the blocks: cache lookups batched, then the misses
            // from the file.
            self.read_data_blocks(&sc.handles, ro, &mut sc.block_buffers, &mut sc.blocks);
            self.search_blocks(
                keys,
                seq,
                ro,
                candidates,
                &targets,
                &sc.wanted,
                &sc.blocks,
                &mut sc.search,
                on_result,
            );
        }
        targets.clear();
        sc.targets = recycle(targets);
    }

    /// Phase 3 of [`Table::multi_get_blocks`]: searches each located
    /// candidate's block, the restart searches in lockstep, then the scans.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site, the phase's inputs"
    )]
    fn search_blocks(
        &self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        ro: BlockReadOptions,
        candidates: &[usize],
        targets: &[&[u8]],
        wanted: &[(usize, usize)],
        blocks: &[Result<Arc<Block>>],
        buf: &mut SearchBuffers,
        on_result: &mut OnFoundInBlock<'_>,
    ) {
        let SearchBuffers {
            key,
            located,
            restarts,
        } = buf;
        // The candidates whose block was read: (index into `candidates`,
        // index into `blocks`).
        located.clear();
        for &(n, h) in wanted {
            match &blocks[h] {
                Ok(_) => located.push((n, h)),
                Err(e) => on_result(candidates[n], Err(e.clone()), None),
            }
        }
        let block_of = |h: usize| match &blocks[h] {
            Ok(b) => b,
            Err(_) => unreachable!("`located` holds only blocks that were read"),
        };
        // A software pipeline over the keys, each stage PIPELINE_DISTANCE
        // keys behind the one before: prefetch the restart slots the
        // block's binary search probes in its first two steps; prefetch the
        // keys those slots point at; search the restart array and prefetch
        // the entries the scan will read; scan. Each key's misses are in
        // flight while the keys ahead of it are worked on, and a bounded
        // number at a time.
        const D: usize = PIPELINE_DISTANCE;
        let m = located.len();
        restarts.clear();
        // The block (index into `blocks`) and entry where the last scan
        // stopped; `key` holds that entry's key.
        let mut last: Option<(usize, ScanStop)> = None;
        for step in 0..m + 3 * D {
            if let Some(&(_, h)) = located.get(step) {
                block_of(h).prefetch_probe_slots();
            }
            if let Some(&(_, h)) = step.checked_sub(D).and_then(|k| located.get(k)) {
                block_of(h).prefetch_probe_keys();
            }
            if let Some(&(n, h)) = step.checked_sub(2 * D).and_then(|k| located.get(k)) {
                let b = block_of(h);
                let r = search_restart(b, targets[n]);
                if let Ok(r) = r {
                    b.prefetch_scan(r, SCAN_PREFETCH_BYTES);
                }
                restarts.push(r);
            }
            let Some(k) = step.checked_sub(3 * D).filter(|&k| k < m) else {
                continue;
            };
            let (n, h) = located[k];
            let block = block_of(h);
            let (j, target) = (candidates[n], targets[n]);
            let restart = match std::mem::replace(&mut restarts[k], Ok(0)) {
                Ok(r) => r,
                Err(e) => {
                    on_result(j, Err(e), None);
                    continue;
                }
            };
            // Keys ascend, so the keys of one block come one after another:
            // a key whose scan would start at or before where the previous
            // key's stopped goes on from there.
            let scanned = match &last {
                Some((lh, prev)) if *lh == h => seek_entry_after(block, restart, prev, target, key),
                _ => seek_entry(block, restart, target, key),
            };
            last = None;
            let found = match scanned {
                Ok(Some(stop)) => {
                    let (at, value) = (stop.at, stop.value.clone());
                    last = Some((h, stop));
                    Some((at, &key[..], block.bytes(value)))
                }
                Ok(None) => None,
                Err(e) => {
                    on_result(j, Err(e), None);
                    continue;
                }
            };
            let Some((at, found_key, value)) = found else {
                // Every entry of the block sorts before `target` (it lies
                // between the block's last key and the separator). With
                // this crate's shortened separators only an absent key gets
                // here; a table whose separators were chosen otherwise may
                // hold the answer in a later block. Take the single-key path.
                match self.get_versioned(keys[j], seq, ro) {
                    Ok(Some((s, t, v))) => on_result(j, Ok((s, t, &v)), None),
                    Ok(None) => {}
                    Err(e) => on_result(j, Err(e), None),
                }
                continue;
            };
            match parse_internal_key(found_key) {
                None => on_result(
                    j,
                    Err(block.corruption(at, "entry has an unknown value type")),
                    None,
                ),
                Some(p) if p.user_key == keys[j] => {
                    on_result(j, Ok((p.sequence, p.value_type, value)), Some(block))
                }
                Some(_) => {}
            }
        }
    }

    /// Locates the candidates' data blocks by searching the index block
    /// (tables without [`IndexFences`](crate::sst::block::fences::IndexFences)): the binary searches in lockstep,
    /// then one forward pass of an index iterator. Pushes each located
    /// candidate to `wanted` and the distinct handles to `handles`; breaks
    /// after reporting an index error to every remaining candidate.
    fn locate_by_search(
        &self,
        candidates: &[usize],
        targets: &[&[u8]],
        wanted: &mut Vec<(usize, usize)>,
        handles: &mut Vec<BlockHandle>,
        on_result: &mut OnFoundInBlock<'_>,
    ) -> ControlFlow<()> {
        let searches: Vec<(&Block, &[u8])> = targets.iter().map(|&t| (&*self.index, t)).collect();
        let index_restarts = search_restarts(&searches);
        let mut index = BlockIter::new(self.index.clone());
        for (n, &j) in candidates.iter().enumerate() {
            let target = targets[n];
            // Every index entry before the iterator's separates keys below
            // the previous target, so when `target` is at or below the
            // current separator this entry is still the first that can
            // hold it, and its block is the last handle taken.
            let same_entry = !handles.is_empty()
                && index.valid()
                && compare_internal_keys(target, index.key()) != Ordering::Greater;
            if !same_entry {
                match &index_restarts[n] {
                    Ok(r) => index.seek_from_restart(*r, target),
                    Err(e) => {
                        on_result(j, Err(e.clone()), None);
                        continue;
                    }
                }
                if !index.valid() {
                    if let Err(e) = index.status() {
                        for &rest in &candidates[n..] {
                            on_result(rest, Err(e.clone()), None);
                        }
                        return ControlFlow::Break(());
                    }
                    break; // past the table's last key, and so are the keys after
                }
                match self.decode_handle(index.value()) {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        on_result(j, Err(e), None);
                        // Not reusable by the next key: seek again.
                        index = BlockIter::new(self.index.clone());
                        continue;
                    }
                }
            }
            wanted.push((n, handles.len() - 1));
        }
        ControlFlow::Continue(())
    }

    /// [`Table::read_data_block`] for many handles, into `out` (in handle
    /// order): the block cache lookups of all of them at once
    /// ([`BlockCache::get_batch`]), then the misses from the file.
    fn read_data_blocks(
        &self,
        handles: &[BlockHandle],
        ro: BlockReadOptions,
        sc: &mut BlockBuffers,
        out: &mut Vec<Result<Arc<Block>>>,
    ) {
        out.clear();
        sc.cached.clear();
        if let Some((cache, cache_id)) = &self.cache {
            sc.cache_keys.clear();
            sc.cache_keys
                .extend(handles.iter().map(|h| (*cache_id, h.offset)));
            cache.get_batch(&sc.cache_keys, &mut sc.batch, &mut sc.cached);
        }
        let mut cached = sc.cached.drain(..);
        out.extend(handles.iter().map(|&h| match cached.next().flatten() {
            Some(b) => Ok(b),
            None => self.load_data_block(h, ro),
        }));
    }
}

/// Keys between two stages of the pipeline of a batch's block searches
/// ([`Table::search_blocks`]).
const PIPELINE_DISTANCE: usize = 8;

/// The buffers of [`Table::multi_get_blocks`], kept per thread between
/// calls so that a call in the steady state allocates nothing.
#[derive(Default)]
struct MultiGetScratch {
    candidates: Vec<usize>,
    hashes: Vec<u64>,
    target_bytes: Vec<u8>,
    target_ends: Vec<usize>,
    /// Always empty between uses ([`recycle`]d to borrow the targets).
    targets: Vec<&'static [u8]>,
    /// [`IndexFences::seek_batch`](crate::sst::block::fences::IndexFences::seek_batch)'s buffers and results.
    fences: Vec<u64>,
    bases: Vec<usize>,
    entries: Vec<Result<usize>>,
    wanted: Vec<(usize, usize)>,
    handles: Vec<BlockHandle>,
    block_buffers: BlockBuffers,
    blocks: Vec<Result<Arc<Block>>>,
    search: SearchBuffers,
}

/// The buffers of [`Table::search_blocks`].
#[derive(Default)]
struct SearchBuffers {
    /// A found entry's whole key.
    key: Vec<u8>,
    /// `(index into candidates, index into blocks)` of the keys whose
    /// block was read.
    located: Vec<(usize, usize)>,
    /// Each located key's restart search result, pipeline stage 3.
    restarts: Vec<Result<usize>>,
}

/// The buffers of [`Table::read_data_blocks`].
#[derive(Default)]
struct BlockBuffers {
    cache_keys: Vec<BlockKey>,
    batch: BatchBuffers,
    cached: Vec<Option<Arc<Block>>>,
}

/// Elements kept at most by a buffer between calls (a huge batch does not
/// pin its memory).
const SCRATCH_KEEP: usize = 4096;

impl MultiGetScratch {
    /// Drops the blocks held and shrinks buffers a huge batch grew.
    fn reset(&mut self) {
        self.blocks.clear();
        if self.target_bytes.capacity() > 64 * SCRATCH_KEEP {
            *self = MultiGetScratch::default();
        } else if self.candidates.capacity() > SCRATCH_KEEP {
            self.candidates.shrink_to(SCRATCH_KEEP);
            self.hashes.shrink_to(SCRATCH_KEEP);
            self.target_ends.shrink_to(SCRATCH_KEEP);
            self.fences.shrink_to(SCRATCH_KEEP);
            self.bases.shrink_to(SCRATCH_KEEP);
            self.entries.shrink_to(SCRATCH_KEEP);
            self.wanted.shrink_to(SCRATCH_KEEP);
            self.handles.shrink_to(SCRATCH_KEEP);
            self.block_buffers = BlockBuffers::default();
            self.blocks.shrink_to(SCRATCH_KEEP);
            self.search.located.shrink_to(SCRATCH_KEEP);
            self.search.restarts.shrink_to(SCRATCH_KEEP);
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<MultiGetScratch> =
        std::cell::RefCell::new(MultiGetScratch::default());
}

/// An empty vector with `v`'s allocation, for elements of another lifetime
/// (the same type otherwise, so the collect reuses the allocation in place).
pub(crate) fn recycle<'a, 'b>(mut v: Vec<&'a [u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}
