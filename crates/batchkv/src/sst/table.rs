//! [`Table`]: an open SST file — footer, index, filter and properties held
//! in memory, data blocks read on demand through the shared block cache —
//! and [`TableIterator`], the two-level (index → data block) iterator over it.

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::block::fences::IndexFences;
use super::block::iter::{
    collect_entries, search_restart, search_restarts, seek_entry_from_restart, BlockIter,
    SCAN_PREFETCH_BYTES,
};
use super::block::{Block, KeyOrder};
use super::filter::{filter_hash, BloomFilter};
use super::format::{finish_block, read_block, stored_block_len, BlockHandle, Footer, FOOTER_LEN};
use super::properties::TableProperties;
use super::{TableOptions, FILTER_BLOCK_NAME, PROPERTIES_BLOCK_NAME};
use crate::cache::block_cache::{BatchBuffers, BlockKey};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iter::InternalIterator;
use crate::key::{
    compare_internal_keys, lookup_key, lookup_trailer, parse_internal_key, SequenceNumber,
    ValueType,
};
use crate::range_del::block::{self as range_del_block, RANGE_DEL_BLOCK_NAME};
use crate::range_del::TableRangeDels;

/// How one read uses the data blocks it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockReadOptions {
    /// Insert blocks read from the file into the block cache (default true).
    pub fill_cache: bool,
    /// Verify data block checksums (default true; a table opened with
    /// `verify_checksums = false` never verifies them).
    pub verify_checksums: bool,
}

impl Default for BlockReadOptions {
    fn default() -> Self {
        BlockReadOptions {
            fill_cache: true,
            verify_checksums: true,
        }
    }
}

/// The callback of [`Table::multi_get_blocks`]: key index, result, and
/// the block holding the value when there is one.
pub(crate) type OnFoundInBlock<'f> = dyn FnMut(usize, Result<Found<'_>>, Option<&Arc<Block>>) + 'f;

/// A version found in a table: its type and value (empty for a deletion).
pub(crate) type Found<'a> = (ValueType, &'a [u8]);

/// An open table. Immutable; shared by readers and iterators as `Arc<Table>`.
///
/// # Thread safety
/// All methods take `&self` and may run concurrently: the table holds no
/// mutable state, the file is read with positional reads, and the block
/// cache is thread-safe.
pub(crate) struct Table {
    file: Arc<dyn RandomAccessFile>,
    file_name: Arc<str>,
    opts: TableOptions,
    /// The shared block cache and this table's key in it (its file number).
    cache: Option<(Arc<BlockCache>, u64)>,
    /// Data-block restart interval (a property; the separated layout needs it).
    data_restart_interval: usize,
    index: Arc<Block>,
    /// The index's dense search summary for batched lookups; `None` for
    /// an index block it cannot summarize (they search the block itself).
    index_fences: Option<IndexFences>,
    filter: Option<BloomFilter>,
    properties: TableProperties,
    /// End of the block region (start of the footer): every block handle
    /// must lie below it.
    blocks_end: u64,
    /// Offset of the index block, for error messages.
    index_offset: u64,
    /// The range-deletion block, decoded at open; `None` if the table has
    /// none (every table written before range deletions existed).
    range_dels: Option<Arc<TableRangeDels>>,
}

impl Table {
    /// Opens a table without a block cache: reads and verifies the footer,
    /// metaindex, properties, filter and index blocks.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        opts: TableOptions,
    ) -> Result<Arc<Table>> {
        Table::open_cached(file, file_name, opts, None)
    }

    /// Opens a table whose data blocks go through `cache`, keyed by
    /// `(file_number, block offset)`: a table reopened after the table cache
    /// closed it finds its blocks still cached.
    pub(crate) fn open_cached(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        opts: TableOptions,
        cache: Option<(Arc<BlockCache>, u64)>,
    ) -> Result<Arc<Table>> {
        let name: Arc<str> = file_name.into();
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &*name,
                0,
                format!("file of {size} bytes is too short to be a table (footer is {FOOTER_LEN})"),
            ));
        }
        let blocks_end = size - FOOTER_LEN as u64;
        let mut buf = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut buf, blocks_end)?;
        let footer = Footer::decode(&buf, &name, blocks_end)?;

        // Meta blocks are always verified, whatever `verify_checksums` says.
        let read = |h: BlockHandle| read_block(&*file, &name, h, blocks_end, true);
        let metaindex = Block::new(
            read(footer.metaindex)?,
            KeyOrder::Bytewise,
            name.clone(),
            footer.metaindex.offset,
        )?;
        let mut filter_handle = None;
        let mut props_handle = None;
        let mut range_del_handle = None;
        for (key, value) in collect_entries(Arc::new(metaindex))? {
            let slot = match &key[..] {
                k if k == FILTER_BLOCK_NAME.as_bytes() => &mut filter_handle,
                k if k == RANGE_DEL_BLOCK_NAME.as_bytes() => &mut range_del_handle,
                k if k == PROPERTIES_BLOCK_NAME.as_bytes() => &mut props_handle,
                _ => continue, // a meta block of a newer version
            };
            *slot = Some(BlockHandle::decode_exact(&value).ok_or_else(|| {
                Error::corruption(
                    &*name,
                    footer.metaindex.offset,
                    format!(
                        "metaindex: malformed handle for {}",
                        String::from_utf8_lossy(&key)
                    ),
                )
            })?);
        }
        let props_handle = props_handle.ok_or_else(|| {
            Error::corruption(
                &*name,
                footer.metaindex.offset,
                "metaindex: no properties block",
            )
        })?;
        let properties =
            TableProperties::decode(read(props_handle)?, name.clone(), props_handle.offset)?;
        // 0 (absent or out of range) makes every separated data block fail
        // to parse with `Corruption`; interleaved blocks do not need it.
        let data_restart_interval = usize::try_from(properties.data_block_restart_interval)
            .ok()
            .filter(|&i| i <= u32::MAX as usize)
            .unwrap_or(0);
        let filter = match filter_handle {
            Some(h) => Some(BloomFilter::parse(read(h)?).ok_or_else(|| {
                Error::corruption(
                    &*name,
                    h.offset,
                    "filter block: inconsistent size or probe count",
                )
            })?),
            None => None,
        };
        let range_dels = match range_del_handle {
            Some(h) => {
                let ts = range_del_block::decode(read(h)?, name.clone(), h.offset)?;
                (!ts.is_empty()).then(|| Arc::new(TableRangeDels::new(ts)))
            }
            None => None,
        };
        let index = Block::new(
            read(footer.index)?,
            KeyOrder::Internal,
            name.clone(),
            footer.index.offset,
        )?;
        Ok(Arc::new(Table {
            file,
            file_name: name,
            opts,
            cache,
            data_restart_interval,
            index_fences: IndexFences::new(&index),
            index: Arc::new(index),
            filter,
            properties,
            blocks_end,
            index_offset: footer.index.offset,
            range_dels,
        }))
    }

    /// The table's range tombstones; `None` when it has none.
    #[inline]
    pub(crate) fn range_dels(&self) -> Option<&Arc<TableRangeDels>> {
        self.range_dels.as_ref()
    }

    /// [`Table::get_with`] with the found version's sequence number, for
    /// reads that compare it with covering range tombstones (only those
    /// pay for the iterator this uses).
    pub(crate) fn get_versioned(
        self: &Arc<Self>,
        user_key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<(SequenceNumber, ValueType, Vec<u8>)>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        let mut it = Arc::clone(self).iter_with(ro);
        it.seek(&lookup_key(user_key, seq));
        it.status()?;
        if !it.valid() {
            return Ok(None);
        }
        let key = it.key();
        let p = parse_internal_key(key).ok_or_else(|| {
            Error::corruption(
                &*self.file_name,
                0,
                format!(
                    "entry with an unknown value type: key {:?}",
                    key.escape_ascii().to_string()
                ),
            )
        })?;
        if p.user_key != user_key {
            return Ok(None);
        }
        if p.value_type == ValueType::RangeDeletion {
            return Err(Error::corruption(
                &*self.file_name,
                0,
                "range deletion among the point entries",
            ));
        }
        Ok(Some((p.sequence, p.value_type, it.value().to_vec())))
    }

    /// Bytes this reader holds in memory outside the block cache: its
    /// index block, filter and index fences (what RocksDB's
    /// `estimate-table-readers-mem` counts: index and filter).
    pub(crate) fn memory_usage(&self) -> usize {
        self.index.size()
            + self.filter.as_ref().map_or(0, BloomFilter::size)
            + self
                .index_fences
                .as_ref()
                .map_or(0, IndexFences::memory_usage)
    }

    /// The table's recorded properties.
    pub(crate) fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// False only if the table certainly holds no version of `user_key`.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// [`Table::get_with`] with default read options.
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(ValueType, Vec<u8>)>> {
        self.get_with(user_key, seq, BlockReadOptions::default())
    }

    /// The newest version of `user_key` with sequence ≤ `seq`: its type and
    /// value (empty for a deletion), or `None` if the table has none.
    pub(crate) fn get_with(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<(ValueType, Vec<u8>)>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        let target = lookup_key(user_key, seq);
        // Usually one block; the search moves on to the next when the
        // block's entries all sort before `target` (the separator lies past
        // its last key).
        if let Some(fences) = &self.index_fences {
            let mut entry = fences.seek(&self.index, &target, 0)?;
            while entry < fences.len() {
                let block = self.read_block_at(fences.handle(entry), ro)?;
                if let ControlFlow::Break(found) = get_in_block(block, &target, user_key)? {
                    return Ok(found);
                }
                entry += 1;
            }
            return Ok(None);
        }
        let mut index = BlockIter::new(self.index.clone());
        index.seek(&target);
        while index.valid() {
            let block = self.read_data_block(index.value(), ro)?;
            if let ControlFlow::Break(found) = get_in_block(block, &target, user_key)? {
                return Ok(found);
            }
            index.next();
        }
        index.status()?;
        Ok(None)
    }

    /// [`Table::get_with`] for a batch. `keys` are distinct user keys in
    /// ascending order. Calls `on_result(j, …)` for each key `keys[j]` that
    /// has a version with sequence ≤ `seq` here (its type and value), or
    /// whose lookup failed; keys the table does not hold get no call.
    ///
    /// The batch goes through in phases, so the cache misses of different
    /// keys overlap instead of queueing one after another:
    /// 1. filter: hash every key and prefetch its filter line, then probe;
    /// 2. locate: the binary searches over the index's [`IndexFences`]
    ///    run in lockstep (tables without fences search the index block
    ///    in lockstep, [`search_restarts`]); keys landing in the same
    ///    entry share its block; then the block cache lookups, batched;
    /// 3. search each key in its block, a software pipeline over the keys
    ///    (restart slot, probe key, restart search and scan prefetch,
    ///    scan: each stage some keys behind the one before). A block whose
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
        self.multi_get_blocks(keys, seq, ro, &mut |j, r, _| on_result(j, r));
    }

    /// [`Table::multi_get_with`] that also hands over the block holding
    /// each value found (`None` on the rare single-key fallback), so a
    /// caller can keep the value by keeping the block instead of copying.
    pub(crate) fn multi_get_blocks(
        &self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        ro: BlockReadOptions,
        on_result: &mut OnFoundInBlock<'_>,
    ) {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys must ascend");
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                self.multi_get_in(&mut scratch, keys, seq, ro, on_result);
                scratch.reset();
            }
            // Called again from inside `on_result`: buffers of its own.
            Err(_) => self.multi_get_in(&mut MultiGetScratch::default(), keys, seq, ro, on_result),
        });
    }

    /// [`Table::multi_get_blocks`] with its buffers.
    fn multi_get_in(
        &self,
        sc: &mut MultiGetScratch,
        keys: &[&[u8]],
        seq: SequenceNumber,
        ro: BlockReadOptions,
        on_result: &mut OnFoundInBlock<'_>,
    ) {
        // 1. Filter.
        sc.candidates.clear();
        match &self.filter {
            Some(f) => {
                sc.hashes.clear();
                sc.hashes.extend(keys.iter().map(|k| filter_hash(k)));
                for &h in &sc.hashes {
                    f.prefetch_hash(h);
                }
                let hashes = &sc.hashes;
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
            let found = match seek_entry_from_restart(block, restart, target, key) {
                Ok(Some((at, value))) => Some((at, &key[..], block.bytes(value))),
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
                match self.get_with(keys[j], seq, ro) {
                    Ok(Some((t, v))) => on_result(j, Ok((t, &v)), None),
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
                    on_result(j, Ok((p.value_type, value)), Some(block))
                }
                Some(_) => {}
            }
        }
    }

    /// Locates the candidates' data blocks by searching the index block
    /// (tables without [`IndexFences`]): the binary searches in lockstep,
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

    /// The block handle an index entry holds.
    fn decode_handle(&self, index_value: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_exact(index_value).ok_or_else(|| {
            Error::corruption(
                &*self.file_name,
                self.index_offset,
                "index entry holds a malformed block handle",
            )
        })
    }

    /// The data block an index entry points at ([`Table::read_block_at`]).
    fn read_data_block(&self, index_value: &[u8], ro: BlockReadOptions) -> Result<Arc<Block>> {
        self.read_block_at(self.decode_handle(index_value)?, ro)
    }

    /// The data block at `handle` (from an index entry or the index
    /// fences), from the block cache or the file, where `read_block` checks
    /// it against the block region. All single data block reads go through
    /// here.
    fn read_block_at(&self, handle: BlockHandle, ro: BlockReadOptions) -> Result<Arc<Block>> {
        if let Some((cache, number)) = &self.cache {
            if let Some(b) = cache.get(&(*number, handle.offset)) {
                return Ok(b);
            }
        }
        self.load_data_block(handle, ro)
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
        if let Some((cache, number)) = &self.cache {
            sc.cache_keys.clear();
            sc.cache_keys
                .extend(handles.iter().map(|h| (*number, h.offset)));
            cache.get_batch(&sc.cache_keys, &mut sc.batch, &mut sc.cached);
        }
        let mut cached = sc.cached.drain(..);
        out.extend(handles.iter().map(|&h| match cached.next().flatten() {
            Some(b) => Ok(b),
            None => self.load_data_block(h, ro),
        }));
    }

    /// [`Table::read_data_block`] for an iterator moving forward: a miss
    /// goes through the iterator's [`Readahead`].
    fn read_data_block_ahead(
        &self,
        index_value: &[u8],
        ro: BlockReadOptions,
        ra: &mut Readahead,
    ) -> Result<Arc<Block>> {
        let handle = self.decode_handle(index_value)?;
        let len = stored_block_len(&self.file_name, handle, self.blocks_end)?;
        let sequential = ra.note(handle.offset, len);
        if let Some((cache, number)) = &self.cache {
            if let Some(b) = cache.get(&(*number, handle.offset)) {
                return Ok(b);
            }
        }
        let stored = match ra.take(handle.offset, len) {
            Some(bytes) => bytes,
            None if sequential => {
                ra.fill(&*self.file, handle.offset, len, self.blocks_end)?;
                ra.take(handle.offset, len)
                    .expect("the buffer was just filled from this block on")
            }
            None => return self.load_data_block(handle, ro),
        };
        let contents = finish_block(
            stored,
            &self.file_name,
            handle,
            self.opts.verify_checksums && ro.verify_checksums,
        )?;
        self.cache_data_block(handle, contents, ro)
    }

    /// Reads, verifies and parses the data block at `handle` from the
    /// file, and caches it if `ro.fill_cache`.
    fn load_data_block(&self, handle: BlockHandle, ro: BlockReadOptions) -> Result<Arc<Block>> {
        let contents = read_block(
            &*self.file,
            &self.file_name,
            handle,
            self.blocks_end,
            self.opts.verify_checksums && ro.verify_checksums,
        )?;
        self.cache_data_block(handle, contents, ro)
    }

    /// Parses the data block `contents` read at `handle`, and caches it
    /// if `ro.fill_cache`.
    fn cache_data_block(
        &self,
        handle: BlockHandle,
        contents: Vec<u8>,
        ro: BlockReadOptions,
    ) -> Result<Arc<Block>> {
        let block = Arc::new(Block::new_data(
            contents,
            self.data_restart_interval,
            self.file_name.clone(),
            handle.offset,
        )?);
        if let (Some((cache, number)), true) = (&self.cache, ro.fill_cache) {
            cache.insert((*number, handle.offset), Arc::clone(&block));
        }
        Ok(block)
    }

    /// An iterator over every entry of the table with default read
    /// options; it keeps the table alive.
    #[cfg(test)]
    pub(crate) fn iter(self: Arc<Self>) -> TableIterator {
        self.iter_with(BlockReadOptions::default())
    }

    /// An iterator over every entry of the table; it keeps the table alive.
    pub(crate) fn iter_with(self: Arc<Self>, ro: BlockReadOptions) -> TableIterator {
        let index = BlockIter::new(self.index.clone());
        TableIterator {
            table: self,
            index,
            data: None,
            ro,
            err: None,
            readahead: Readahead::default(),
        }
    }
}

/// A point lookup's answer: the type and value of the version found.
type Answer = Option<(ValueType, Vec<u8>)>;

/// [`Table::get_with`]'s search of one data block for `target` (the
/// lookup key of `user_key`): `Break` with the answer (the first entry at or
/// above `target`, if it is a version of `user_key`), or `Continue` when
/// every entry of the block sorts before `target`.
fn get_in_block(block: Arc<Block>, target: &[u8], user_key: &[u8]) -> Result<ControlFlow<Answer>> {
    // The batched lookup's restart search and point scan, for one key.
    let r = search_restart(&block, target)?;
    block.prefetch_scan(r, SCAN_PREFETCH_BYTES);
    let mut key = Vec::with_capacity(target.len());
    let Some((at, value)) = seek_entry_from_restart(&block, r, target, &mut key)? else {
        return Ok(ControlFlow::Continue(()));
    };
    let parsed = parse_internal_key(&key)
        .ok_or_else(|| block.corruption(at, "entry has an unknown value type"))?;
    Ok(ControlFlow::Break(
        (parsed.user_key == user_key).then(|| (parsed.value_type, block.bytes(value).to_vec())),
    ))
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
    /// [`IndexFences::seek_batch`]'s buffers and results.
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
fn recycle<'a, 'b>(mut v: Vec<&'a [u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}

/// Two-level iterator: the index iterator picks a data block, a block
/// iterator walks it.
///
/// # Invariants
/// 1. `data.is_some()` ⇒ it iterates the block the index iterator is at.
/// 2. Valid ⇔ no error and `data` is at an entry.
/// 3. After an error (`err` set) every positioning call does nothing.
pub(crate) struct TableIterator {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    ro: BlockReadOptions,
    err: Option<Error>,
    readahead: Readahead,
}

/// First and largest readahead of one iterator.
const READAHEAD_MIN: usize = 16 << 10;
const READAHEAD_MAX: usize = 256 << 10;

/// An iterator's readahead buffer. Once a data block follows the one read
/// before it in the file (a forward scan or a compaction input), block
/// misses read `size` bytes at once — from 16 KiB doubling to 256 KiB, as
/// RocksDB's iterators do — and later blocks are cut from the buffer, one
/// `pread` for many blocks instead of one each. Point reads and backward
/// steps never read ahead. Only whole stored blocks inside the data-block
/// region are cut out; their checksums are checked as for any read.
#[derive(Default)]
pub(crate) struct Readahead {
    /// File bytes `[start, start + buf.len())`.
    buf: Vec<u8>,
    start: u64,
    /// Where the block after the last one asked for begins.
    next: u64,
    /// The next fill's size (0 until the first).
    size: usize,
}

impl Readahead {
    /// Records a read of the block `[offset, offset + len)`; true if it
    /// directly follows the previous one.
    fn note(&mut self, offset: u64, len: usize) -> bool {
        let sequential = self.next != 0 && offset == self.next;
        self.next = offset + len as u64;
        sequential
    }

    /// The stored block `[offset, offset + len)`, if the buffer holds it.
    fn take(&self, offset: u64, len: usize) -> Option<Vec<u8>> {
        let from = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        self.buf
            .get(from..from.checked_add(len)?)
            .map(<[u8]>::to_vec)
    }

    /// Reads the next chunk from `offset` (at least `len` bytes, never past
    /// `limit`, the end of the data blocks, which `len` is checked against).
    fn fill(
        &mut self,
        file: &dyn crate::fs::RandomAccessFile,
        offset: u64,
        len: usize,
        limit: u64,
    ) -> Result<()> {
        self.size = if self.size == 0 {
            READAHEAD_MIN
        } else {
            (self.size * 2).min(READAHEAD_MAX)
        };
        let room = usize::try_from(limit - offset).unwrap_or(usize::MAX);
        let want = self.size.max(len).min(room);
        self.buf.resize(want, 0);
        self.start = offset;
        if let Err(e) = file.read_exact_at(&mut self.buf, offset) {
            self.buf.clear();
            return Err(e);
        }
        Ok(())
    }
}

impl TableIterator {
    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.data = None;
    }

    /// Loads the block under the index iterator; false (with `data = None`)
    /// if the index is exhausted or on error.
    fn load_block(&mut self) -> bool {
        self.data = None;
        if let Err(e) = self.index.status() {
            self.fail(e);
            return false;
        }
        if !self.index.valid() {
            return false;
        }
        let read =
            self.table
                .read_data_block_ahead(self.index.value(), self.ro, &mut self.readahead);
        match read {
            Ok(b) => {
                self.data = Some(BlockIter::new(b));
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// Picks up a block iterator error; true if the data iterator is usable.
    fn check_data(&mut self) -> bool {
        let status = match &self.data {
            Some(d) => d.status(),
            None => return false,
        };
        match status {
            Ok(()) => true,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// Moves forward past empty or exhausted blocks.
    fn skip_forward(&mut self) {
        while self.check_data() && !self.data_valid() {
            self.index.next();
            if !self.load_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    /// Moves backward past empty or exhausted blocks.
    fn skip_backward(&mut self) {
        while self.check_data() && !self.data_valid() {
            self.index.prev();
            if !self.load_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data_valid()
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_first();
        if self.load_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_last();
        if self.load_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
            self.skip_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.index.seek(target);
        if self.load_block() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // The first block whose separator is >= target holds the answer or
        // the answer is the last entry of an earlier block.
        self.index.seek(target);
        if let Err(e) = self.index.status() {
            self.fail(e);
            return;
        }
        if !self.index.valid() {
            self.index.seek_to_last();
            if self.load_block() {
                if let Some(d) = &mut self.data {
                    d.seek_to_last();
                }
                self.skip_backward();
            }
            return;
        }
        if self.load_block() {
            if let Some(d) = &mut self.data {
                d.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) => d.key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) => d.value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
