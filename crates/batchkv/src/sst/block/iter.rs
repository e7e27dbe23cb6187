//! [`BlockIter`]: a cursor over one [`Block`], forward and backward, with
//! binary search over the restart array.
//!
//! Every entry is bounds-checked as it is decoded; a malformed entry makes
//! the iterator invalid with a `Corruption` in `status()` (sticky: later
//! positioning calls do nothing). The layout-specific part is confined to
//! [`BlockIter::decode_at`].

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use super::{Block, KeyOrder, Layout};
use crate::coding::get_varint32;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::TRAILER_LEN;

/// One decoded entry header: where its bytes are inside the block.
struct RawEntry {
    shared: usize,
    key_delta: Range<usize>,
    value: Range<usize>,
    /// Offset of the following entry.
    next: usize,
}

/// A cursor over a block's entries.
///
/// # Invariants
/// 1. Valid ⇔ `current < block.data_end`; then `key` holds the full key of
///    the entry at `current`, `value` its value range and `next` the offset
///    of the following entry.
/// 2. When valid, `restart_index` is the last restart point `<= current`.
/// 3. `err.is_some()` ⇒ not valid.
pub(crate) struct BlockIter {
    block: Arc<Block>,
    current: usize,
    next: usize,
    restart_index: usize,
    key: Vec<u8>,
    value: Range<usize>,
    err: Option<Error>,
}

impl BlockIter {
    /// An unpositioned iterator over `block`.
    pub(crate) fn new(block: Arc<Block>) -> BlockIter {
        let end = block.data_end;
        let count = block.restart_count;
        BlockIter {
            block,
            current: end,
            next: end,
            restart_index: count,
            key: Vec::new(),
            value: 0..0,
            err: None,
        }
    }

    /// A corruption error about the current entry (for checks made by callers).
    pub(crate) fn corruption_here(&self, detail: &str) -> Error {
        self.block.corruption(self.current, detail)
    }

    /// Decodes the entry header at `p`, checking every length against the
    /// end of the entries. This is the only layout-specific code of the reader.
    fn decode_at(&self, p: usize) -> Result<RawEntry> {
        let b = &*self.block;
        let data = &b.contents[..b.data_end];
        match b.layout {
            Layout::Interleaved => {
                let bad = |what: &str| b.corruption(p, what);
                let rest = data
                    .get(p..)
                    .ok_or_else(|| bad("entry offset past end of entries"))?;
                let (shared, n1) =
                    get_varint32(rest).ok_or_else(|| bad("malformed entry header"))?;
                let (non_shared, n2) =
                    get_varint32(&rest[n1..]).ok_or_else(|| bad("malformed entry header"))?;
                let (value_len, n3) =
                    get_varint32(&rest[n1 + n2..]).ok_or_else(|| bad("malformed entry header"))?;
                let key_start = p + n1 + n2 + n3;
                let key_end = key_start + non_shared as usize;
                let value_end = key_end
                    .checked_add(value_len as usize)
                    .filter(|&e| e <= data.len())
                    .ok_or_else(|| bad("entry extends past the end of the block's entries"))?;
                Ok(RawEntry {
                    shared: shared as usize,
                    key_delta: key_start..key_end,
                    value: key_end..value_end,
                    next: value_end,
                })
            }
        }
    }

    fn corrupt(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.invalidate();
    }

    fn invalidate(&mut self) {
        self.current = self.block.data_end;
        self.next = self.block.data_end;
        self.restart_index = self.block.restart_count;
        self.key.clear();
        self.value = 0..0;
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.restart(i);
    }

    /// Decodes the entry at `self.next` and makes it current; false (and
    /// invalid) at the end of the block or on corruption.
    fn parse_next(&mut self) -> bool {
        let p = self.next;
        if p >= self.block.data_end {
            self.invalidate();
            return false;
        }
        let e = match self.decode_at(p) {
            Ok(e) => e,
            Err(err) => {
                self.corrupt(err);
                return false;
            }
        };
        if e.shared > self.key.len() {
            let err = self
                .block
                .corruption(p, "entry shares more key bytes than the previous key has");
            self.corrupt(err);
            return false;
        }
        self.key.truncate(e.shared);
        self.key
            .extend_from_slice(&self.block.contents[e.key_delta.clone()]);
        if self.block.order == KeyOrder::Internal && self.key.len() < TRAILER_LEN {
            let err = self
                .block
                .corruption(p, "internal key shorter than its 8-byte trailer");
            self.corrupt(err);
            return false;
        }
        self.current = p;
        self.next = e.next;
        self.value = e.value;
        while self.restart_index + 1 < self.block.restart_count
            && self.block.restart(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        true
    }

    /// Compares the full key stored at restart point `i` with `target`.
    fn compare_restart_key(&self, i: usize, target: &[u8]) -> Result<Ordering> {
        let p = self.block.restart(i);
        let e = self.decode_at(p)?;
        if e.shared != 0 {
            return Err(self
                .block
                .corruption(p, "restart entry has a shared key prefix"));
        }
        let key = &self.block.contents[e.key_delta];
        if self.block.order == KeyOrder::Internal && key.len() < TRAILER_LEN {
            return Err(self
                .block
                .corruption(p, "internal key shorter than its 8-byte trailer"));
        }
        Ok(self.block.order.compare(key, target))
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.data_end
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(self.block.restart_count - 1);
        if !self.parse_next() {
            return;
        }
        while self.next < self.block.data_end {
            if !self.parse_next() {
                return;
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // Find the last restart point whose key is < target.
        let (mut left, mut right) = (0usize, self.block.restart_count - 1);
        while left < right {
            let mid = (left + right).div_ceil(2);
            match self.compare_restart_key(mid, target) {
                Ok(Ordering::Less) => left = mid,
                Ok(_) => right = mid - 1,
                Err(e) => {
                    self.corrupt(e);
                    return;
                }
            }
        }
        self.seek_to_restart(left);
        while self.parse_next() {
            if self.block.order.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if self.block.order.compare(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let original = self.current;
        // Back up to the last restart point strictly before the current entry.
        while self.block.restart(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        // Walk forward to the entry just before `original`.
        while self.parse_next() {
            if self.next >= original {
                return;
            }
        }
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.key
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.block.contents[self.value.clone()]
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// Reads every entry of a small bytewise-keyed meta block (metaindex,
/// properties) in order.
pub(crate) fn collect_entries(block: Arc<Block>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = BlockIter::new(block);
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}
