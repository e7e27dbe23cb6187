//! Blocks: the unit an SST file is read in. A block is a sorted run of
//! key/value entries with prefix-compressed keys and a restart array that
//! lets a reader binary-search it.
//!
//! This module owns the parsed, validated [`Block`] (its footer word and
//! restart array); [`builder`] writes blocks and [`iter`] reads them.
//!
//! # Layout (interleaved, the only one written today)
//! ```text
//! entry*  ‖ fixed32 restart[0..n] ‖ fixed32 footer_word
//! entry = varint32 shared ‖ varint32 non_shared ‖ varint32 value_len ‖ key_delta ‖ value
//! footer_word = n (low 28 bits) | separated (bit 28) | reserved (bits 29–31)
//! ```
//! Every `restart_interval`-th entry stores its whole key (`shared = 0`) and
//! its offset is listed in the restart array. Full byte layout with a worked
//! example: `docs/format/sst.md`.
//!
//! # Invariants of a [`Block`] (checked by [`Block::new`])
//! 1. `restart_count >= 1` and `restart[0] == 0`.
//! 2. Restart offsets strictly increase and each is `< data_end` (the only
//!    exception: an empty block, `data_end == 0`, with the single restart 0).
//! 3. `data_end + 4 * restart_count + 4 == contents.len()`.
//! 4. No unknown footer-word bit is set.
//!
//! # Adding the separated layout (DESIGN §6)
//! [`Layout`] names the layout; [`Block::new`] will parse the extra fixed32
//! values offset (and check it lies before the restart array), and the entry
//! decoder in [`iter`] (`BlockIter::decode_at`) grows a second arm that takes
//! the value from the values section. Seeking, restart search and backward
//! iteration do not change.

pub(crate) mod builder;
pub(crate) mod iter;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::decode_fixed32;
use crate::error::{Error, Result};
use crate::key::compare_internal_keys;

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
            KeyOrder::Bytewise => a.cmp(b),
        }
    }
}

/// A validated block held in memory. Cheap to share (`Arc<Block>`); the
/// iterator keeps it alive.
#[derive(Debug)]
pub(crate) struct Block {
    contents: Vec<u8>,
    /// End of the entries (start of the restart array).
    data_end: usize,
    restart_count: usize,
    layout: Layout,
    order: KeyOrder,
    /// File the block came from, for error messages.
    file: Arc<str>,
    /// Offset of the block in `file`, for error messages.
    offset: u64,
}

impl Block {
    /// Parses the footer word and restart array of `contents`, read from
    /// `file` at `offset`.
    pub(crate) fn new(
        contents: Vec<u8>,
        order: KeyOrder,
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
        if word & SEPARATED_LAYOUT_BIT != 0 {
            return Err(bad(format!(
                "unrecognized block feature: separated key/value layout (footer word {word:#010x}) is not supported by this version"
            )));
        }
        let restart_count = (word & RESTART_COUNT_MASK) as usize;
        let array_len = restart_count
            .checked_mul(4)
            .filter(|&n| restart_count >= 1 && n + 4 <= len)
            .ok_or_else(|| {
                bad(format!(
                    "block of {len} bytes cannot hold {restart_count} restart points"
                ))
            })?;
        let data_end = len - 4 - array_len;
        let block = Block {
            contents,
            data_end,
            restart_count,
            layout: Layout::Interleaved,
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
        let p = self.data_end + 4 * i;
        decode_fixed32(&self.contents[p..p + 4]) as usize
    }

    /// Number of bytes the block occupies in memory.
    #[allow(dead_code, reason = "the block cache (issue 3) charges by it")]
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
