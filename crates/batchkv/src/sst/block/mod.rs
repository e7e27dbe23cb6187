//! Blocks: the unit an SST file is read in. A block is a sorted run of
//! key/value entries with prefix-compressed keys and a restart array that
//! lets a reader binary-search it.
//!
//! This module owns the parsed, validated [`Block`] (its footer word,
//! restart array and, in the separated layout, its values section);
//! [`builder`] writes blocks and [`iter`] reads them.
//!
//! # Layouts (byte by byte, with worked examples: `docs/format/sst.md` §2)
//! ```text
//! interleaved: entry* ‖ fixed32 restart[0..n] ‖ fixed32 footer_word
//!   entry = varint32 shared ‖ varint32 non_shared ‖ varint32 value_len ‖ key_delta ‖ value
//! separated:   key_entry* ‖ value* ‖ fixed32 restart[0..n] ‖ fixed32 values_offset ‖ fixed32 footer_word
//!   restart key_entry = varint32 0 ‖ varint32 non_shared ‖ varint32 value_size ‖ varint32 value_offset ‖ key
//!   other key_entry   = varint32 shared ‖ varint32 non_shared ‖ varint32 value_size ‖ key_delta
//! footer_word = n (low 28 bits) | separated (bit 28) | reserved (bits 29–31)
//! ```
//! Every `restart_interval`-th entry stores its whole key (`shared = 0`) and
//! its offset is listed in the restart array. In the separated layout, an
//! entry is a restart point iff its index in the block is a multiple of the
//! table's data-block restart interval (a table property, passed to
//! [`Block::new_data`]); a value's offset (relative to the values section)
//! is stored only at restart points, otherwise it starts where the previous
//! value ended. Index and meta blocks are always interleaved.
//!
//! # Invariants of a [`Block`] (checked by [`Block::new`] / [`Block::new_data`])
//! 1. `restart_count >= 1` and `restart[0] == 0`.
//! 2. Restart offsets strictly increase and each is `< data_end` (the only
//!    exception: an empty block, `data_end == 0`, with the single restart 0).
//! 3. Interleaved: `data_end + 4 * restart_count + 4 == contents.len()`.
//!    Separated: `data_end = values_offset <= values.end`, and
//!    `values.end + 4 * restart_count + 8 == contents.len()`.
//! 4. No unknown footer-word bit is set; the separated bit only in data
//!    blocks, and only with a restart interval `>= 1`.
pub(crate) mod builder;
pub(crate) mod fences;
pub(crate) mod iter;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use crate::coding::decode_fixed32;
use crate::error::{Error, Result};
use crate::key::compare_internal_keys;
use crate::prefetch::prefetch_read;

/// Bits 0–27 of the footer word: the number of restart points. Never change.
pub(crate) const RESTART_COUNT_MASK: u32 = (1 << 28) - 1;
/// Bit 28 of the footer word: keys and values in separate sections. Never change.
pub(crate) const SEPARATED_LAYOUT_BIT: u32 = 1 << 28;
/// Bits 29–31: reserved; a reader rejects any it does not know.
pub(crate) const RESERVED_BITS: u32 = !(RESTART_COUNT_MASK | SEPARATED_LAYOUT_BIT);

/// How the entries of a block are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Key and value of each entry next to each other.
    Interleaved,
    /// All keys (with value sizes) first, then all values.
    Separated,
}

/// The order of the keys in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyOrder {
    /// Internal keys ([`compare_internal_keys`]): data and index blocks.
    /// Every decoded key must be at least a trailer long.
    Internal,
    /// Plain bytewise order: metaindex and properties blocks.
    Bytewise,
}

impl KeyOrder {
    /// Compares two keys in this order.
    #[inline]
    pub(crate) fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Internal => compare_internal_keys(a, b),
            KeyOrder::Bytewise => crate::key::compare_bytes(a, b),
        }
    }
}

/// A validated block held in memory. Cheap to share (`Arc<Block>`); the
/// iterator keeps it alive.
#[derive(Debug)]
pub(crate) struct Block {
    contents: Vec<u8>,
    /// End of the entries (interleaved) or of the keys section (separated).
    data_end: usize,
    /// Start of the restart array.
    restarts_at: usize,
    restart_count: usize,
    layout: Layout,
    /// Separated layout: the values section (`data_end..restarts_at`).
    /// Empty (at `restarts_at`) when interleaved.
    values: Range<usize>,
    /// Separated layout: entries per restart point. 0 when interleaved.
    restart_interval: usize,
    order: KeyOrder,
    /// File the block came from, for error messages.
    file: Arc<str>,
    /// Offset of the block in `file`, for error messages.
    offset: u64,
}

impl Block {
    /// Parses an index or meta block (always interleaved) of `contents`,
    /// read from `file` at `offset`.
    pub(crate) fn new(
        contents: Vec<u8>,
        order: KeyOrder,
        file: Arc<str>,
        offset: u64,
    ) -> Result<Block> {
        Block::parse(contents, order, None, file, offset)
    }

    /// Parses a data block, in either layout. `restart_interval` is the
    /// table's data-block restart interval (a property); the separated
    /// layout needs it to tell restart entries apart.
    pub(crate) fn new_data(
        contents: Vec<u8>,
        restart_interval: usize,
        file: Arc<str>,
        offset: u64,
    ) -> Result<Block> {
        Block::parse(
            contents,
            KeyOrder::Internal,
            Some(restart_interval),
            file,
            offset,
        )
    }

    fn parse(
        contents: Vec<u8>,
        order: KeyOrder,
        data_restart_interval: Option<usize>,
        file: Arc<str>,
        offset: u64,
    ) -> Result<Block> {
        let bad = |detail: String| Error::corruption(&*file, offset, detail);
        let len = contents.len();
        if len < 8 {
            return Err(bad(format!(
                "block of {len} bytes is too short for a restart array"
            )));
        }
        let word = decode_fixed32(&contents[len - 4..]);
        if word & RESERVED_BITS != 0 {
            return Err(bad(format!(
                "unrecognized block feature: footer word {word:#010x} sets reserved bits"
            )));
        }
        let layout = if word & SEPARATED_LAYOUT_BIT == 0 {
            Layout::Interleaved
        } else {
            Layout::Separated
        };
        let restart_interval = match (layout, data_restart_interval) {
            (Layout::Interleaved, _) => 0,
            (Layout::Separated, Some(i)) if i >= 1 => i,
            (Layout::Separated, Some(_)) => {
                return Err(bad(format!(
                    "separated data block (footer word {word:#010x}) but the table records no data block restart interval"
                )))
            }
            (Layout::Separated, None) => {
                return Err(bad(format!(
                    "unrecognized block feature: separated key/value layout (footer word {word:#010x}) in an index or meta block"
                )))
            }
        };
        // Bytes after the restart array: the footer word, and the values
        // offset in the separated layout.
        let tail = if layout == Layout::Separated { 8 } else { 4 };
        let restart_count = (word & RESTART_COUNT_MASK) as usize;
        let array_len = restart_count
            .checked_mul(4)
            .filter(|&n| restart_count >= 1 && n + tail <= len)
            .ok_or_else(|| {
                bad(format!(
                    "block of {len} bytes cannot hold {restart_count} restart points"
                ))
            })?;
        let restarts_at = len - tail - array_len;
        let (data_end, values) = match layout {
            Layout::Interleaved => (restarts_at, restarts_at..restarts_at),
            Layout::Separated => {
                let v = decode_fixed32(&contents[len - 8..]) as usize;
                if v > restarts_at {
                    return Err(bad(format!(
                        "values section offset {v} lies past the restart array at {restarts_at}"
                    )));
                }
                (v, v..restarts_at)
            }
        };
        let block = Block {
            contents,
            data_end,
            restarts_at,
            restart_count,
            layout,
            values,
            restart_interval,
            order,
            file: file.clone(),
            offset,
        };
        let mut prev = 0usize;
        for i in 0..restart_count {
            let r = block.restart(i);
            let ok = if i == 0 {
                r == 0
            } else {
                r > prev && r < data_end
            };
            if !ok {
                return Err(bad(format!(
                    "restart point {i} at offset {r} out of order or range (entries end at {data_end})"
                )));
            }
            prev = r;
        }
        Ok(block)
    }

    /// Offset of restart point `i` (`i < restart_count`).
    #[inline]
    pub(crate) fn restart(&self, i: usize) -> usize {
        let p = self.restarts_at + 4 * i;
        decode_fixed32(&self.contents[p..p + 4]) as usize
    }

    /// The restart points the first two steps of a binary search of this
    /// block may probe (the first probe, then one of the two halves'),
    /// `None` where a search has no such step. The search of a data block
    /// with few restart points (3 for 4 KiB blocks of 100-byte values)
    /// ends within them.
    #[inline]
    fn first_probes(&self) -> [Option<usize>; 3] {
        let last = self.restart_count - 1;
        if last == 0 {
            return [None; 3];
        }
        // Mirrors `RestartSearch`: probe the upper middle of left..=right.
        let mid = last.div_ceil(2);
        let below = (mid > 1).then(|| (mid - 1).div_ceil(2));
        let above = (mid < last).then(|| (mid + last).div_ceil(2));
        [Some(mid), below, above]
    }

    /// Starts fetching the restart slots a search probes first
    /// ([`Block::first_probes`]).
    #[inline]
    pub(crate) fn prefetch_probe_slots(&self) {
        for p in self.first_probes().into_iter().flatten() {
            prefetch_read(
                self.contents
                    .as_ptr()
                    .wrapping_add(self.restarts_at + 4 * p),
            );
        }
    }

    /// Starts fetching the keys a search probes first (reads their
    /// slots).
    #[inline]
    pub(crate) fn prefetch_probe_keys(&self) {
        for p in self.first_probes().into_iter().flatten() {
            prefetch_read(self.contents.as_ptr().wrapping_add(self.restart(p)));
        }
    }

    /// Starts fetching the entries a seek scans from restart point `r`
    /// (those up to the next restart point), at most `max_bytes` of them,
    /// so that the scans of a batch overlap their cache misses. Only a
    /// hint: offsets of a damaged block are clamped, never trusted.
    pub(crate) fn prefetch_scan(&self, r: usize, max_bytes: usize) {
        let r = r.min(self.restart_count - 1);
        let start = self.restart(r).min(self.data_end);
        let next = if r + 1 < self.restart_count {
            self.restart(r + 1)
        } else {
            self.data_end
        };
        let end = next.clamp(start, self.data_end).min(start + max_bytes);
        for off in (start..end).step_by(64) {
            prefetch_read(self.contents[off..].as_ptr());
        }
    }

    /// Where `part` (a slice of this block, such as a value an iterator
    /// returned) lies in the block; `None` if it is not inside it.
    pub(crate) fn range_of(&self, part: &[u8]) -> Option<Range<usize>> {
        let start = (part.as_ptr() as usize).checked_sub(self.contents.as_ptr() as usize)?;
        let end = start + part.len();
        (end <= self.contents.len()).then_some(start..end)
    }

    /// The bytes at `range` (from [`Block::range_of`]).
    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.contents[range]
    }

    /// Number of bytes the block occupies in memory.
    pub(crate) fn size(&self) -> usize {
        self.contents.len()
    }

    /// Builds the corruption error for a problem at `in_block` bytes into this block.
    pub(crate) fn corruption(&self, in_block: usize, detail: &str) -> Error {
        Error::corruption(
            &*self.file,
            self.offset,
            format!(
                "{detail} (at byte {in_block} of the block of {} bytes)",
                self.contents.len()
            ),
        )
    }
}
