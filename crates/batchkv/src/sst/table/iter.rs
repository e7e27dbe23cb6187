//! [`TableIterator`]: the two-level (index → data block) iterator over a
//! table, and the [`Readahead`] it uses for forward scans.

use std::sync::Arc;

use super::{BlockReadOptions, Table};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block::iter::BlockIter;
use crate::sst::block::Block;
use crate::sst::format::{finish_block, stored_block_len};

impl Table {
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
        if let Some((cache, cache_id)) = &self.cache {
            if let Some(b) = cache.get(&(*cache_id, handle.offset)) {
                return Ok(b);
            }
        }
        let stored = match ra.take(handle.offset, len) {
            Some(bytes) => bytes,
            None if sequential => {
                ra.fill(&*self.file, handle.offset, len, self.blocks_end)?;
                // `fill` read at least `len` bytes from the block's offset
                // (`len` was checked against `blocks_end`), so `take` finds
                // the block; were it short, the block is read on its own.
                match ra.take(handle.offset, len) {
                    Some(bytes) => bytes,
                    None => return self.load_data_block(handle, ro),
                }
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
