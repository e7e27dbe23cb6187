//! Writes one block, interleaved or separated (see the module docs of
//! [`super`] and `docs/format/sst.md` §2).

use super::{Layout, RESTART_COUNT_MASK, SEPARATED_LAYOUT_BIT};
use crate::coding::{put_fixed32, put_varint32};

/// Accumulates sorted entries and produces the block's bytes.
///
/// The caller adds keys in strictly increasing order (the table builder
/// checks this); the block does not look at key contents.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    layout: Layout,
    /// Interleaved: the entries. Separated: the keys section.
    buf: Vec<u8>,
    /// Separated: the values section (empty when interleaved).
    values: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    num_entries: usize,
}

impl BlockBuilder {
    /// An empty interleaved builder; `restart_interval >= 1`.
    pub(crate) fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder::with_layout(restart_interval, Layout::Interleaved)
    }

    /// An empty builder for `layout`; `restart_interval >= 1`.
    pub(crate) fn with_layout(restart_interval: usize, layout: Layout) -> BlockBuilder {
        debug_assert!(restart_interval >= 1);
        BlockBuilder {
            layout,
            buf: Vec::new(),
            values: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
            num_entries: 0,
        }
    }

    /// Appends an entry. Key and value must each be shorter than 4 GiB and the
    /// block must stay below 4 GiB (the table builder bounds both).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let restart = self.counter == self.restart_interval;
        let shared = if restart {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        } else {
            crate::key::common_prefix_len(&self.last_key, key)
        };
        // The first entry is a restart point too (restart[0] = 0).
        let at_restart = restart || self.num_entries == 0;
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        match self.layout {
            Layout::Interleaved => {
                self.buf.extend_from_slice(&key[shared..]);
                self.buf.extend_from_slice(value);
            }
            Layout::Separated => {
                if at_restart {
                    put_varint32(&mut self.buf, self.values.len() as u32);
                }
                self.buf.extend_from_slice(&key[shared..]);
                self.values.extend_from_slice(value);
            }
        }
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Hands back the bytes a [`finish`](Self::finish) returned, once the
    /// caller is done with them, as the next block's buffer: grown from
    /// empty, a 4 KiB block was reallocated about ten times.
    pub(crate) fn recycle(&mut self, mut used: Vec<u8>) {
        if self.buf.is_empty() && used.capacity() > self.buf.capacity() {
            used.clear();
            self.buf = used;
        }
    }

    /// Size of the block if it were finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        let tail = match self.layout {
            Layout::Interleaved => 4,
            Layout::Separated => 8,
        };
        self.buf.len() + self.values.len() + 4 * self.restarts.len() + tail
    }

    /// True if nothing was added since the last reset.
    pub(crate) fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Appends the values section (separated), the restart array, the
    /// values offset (separated) and the footer word, returns the block's
    /// bytes and resets the builder for the next block.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let values_offset = self.buf.len() as u32;
        self.buf.append(&mut self.values);
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        debug_assert!(self.restarts.len() <= RESTART_COUNT_MASK as usize);
        let mut word = self.restarts.len() as u32;
        if self.layout == Layout::Separated {
            put_fixed32(&mut self.buf, values_offset);
            word |= SEPARATED_LAYOUT_BIT;
        }
        put_fixed32(&mut self.buf, word);
        let out = std::mem::take(&mut self.buf);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
        out
    }
}
