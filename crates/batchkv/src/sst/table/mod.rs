//! [`Table`]: an open SST file — footer, index, filter and properties held
//! in memory, data blocks read on demand through the shared block cache.
//!
//! Files: this one opens a table and answers single-key lookups
//! ([`Table::get_versioned`]) and holds the data-block reads every path
//! shares; `multi_get.rs` answers a sorted batch of keys in phases
//! ([`Table::multi_get_blocks`]); `iter.rs` is [`TableIterator`], the
//! two-level (index → data block) iterator with readahead.

mod iter;
mod multi_get;

use std::ops::ControlFlow;
use std::sync::Arc;

use super::block::fences::IndexFences;
use super::block::iter::{
    collect_entries, search_restart, seek_entry_from_restart, BlockIter, SCAN_PREFETCH_BYTES,
};
use super::block::{Block, KeyOrder};
use super::filter::BloomFilter;
use super::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use super::properties::TableProperties;
use super::{TableOptions, FILTER_BLOCK_NAME, PROPERTIES_BLOCK_NAME};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iter::InternalIterator;
use crate::key::{lookup_key, parse_internal_key, SequenceNumber, ValueType};
use crate::range_del::block::{self as range_del_block, RANGE_DEL_BLOCK_NAME};
use crate::range_del::TableRangeDels;

pub(crate) use iter::TableIterator;
pub(crate) use multi_get::recycle;

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
    /// The block cache and this table's id in it (`BlockCache::new_id`,
    /// unique within the cache, so tables of databases sharing it never
    /// share a key).
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
    /// `(cache id, block offset)`: a table reopened after the table cache
    /// closed it, given the same id, finds its blocks still cached.
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

    /// Whether the table has a filter (a batch hashes its keys for the
    /// filters only when one is asked).
    pub(crate) fn has_filter(&self) -> bool {
        self.filter.is_some()
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn get_with(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<(ValueType, Vec<u8>)>> {
        Ok(self
            .get_versioned(user_key, seq, ro)?
            .map(|(_, t, v)| (t, v)))
    }

    /// [`Table::get_with`] with the found version's sequence number (as
    /// stored: an ingested file's entries carry 0), which reads compare
    /// with covering range tombstones.
    pub(crate) fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<(SequenceNumber, ValueType, Vec<u8>)>> {
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
        if let Some((cache, cache_id)) = &self.cache {
            if let Some(b) = cache.get(&(*cache_id, handle.offset)) {
                return Ok(b);
            }
        }
        self.load_data_block(handle, ro)
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
        if let (Some((cache, cache_id)), true) = (&self.cache, ro.fill_cache) {
            cache.insert((*cache_id, handle.offset), Arc::clone(&block));
        }
        Ok(block)
    }
}

/// A point lookup's answer: the sequence, type and value of the version
/// found.
type Answer = Option<(SequenceNumber, ValueType, Vec<u8>)>;

/// [`Table::get_versioned`]'s search of one data block for `target` (the
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
    Ok(ControlFlow::Break((parsed.user_key == user_key).then(
        || {
            (
                parsed.sequence,
                parsed.value_type,
                block.bytes(value).to_vec(),
            )
        },
    )))
}
