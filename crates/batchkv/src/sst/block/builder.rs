//! Writes one block in the interleaved layout (see the module docs of
//! [`super`] and `docs/format/sst.md`).

use crate::coding::{put_fixed32, put_varint32};

/// Accumulates sorted entries and produces the block's bytes.
///
/// The caller adds keys in strictly increasing order (the table builder
/// checks this); the block does not look at key contents.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    num_entries: usize,
}

impl BlockBuilder {
    /// An empty builder; `restart_interval >= 1`.
    pub(crate) fn new(restart_interval: usize) -> BlockBuilder {
        debug_assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
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
        let shared = if self.counter < self.restart_interval {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Size of the block if it were finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// True if nothing was added since the last reset.
    pub(crate) fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Appends the restart array and footer word, returns the block's bytes
    /// and resets the builder for the next block.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        // Interleaved layout: no feature bits, only the restart count.
        debug_assert!(self.restarts.len() <= super::RESTART_COUNT_MASK as usize);
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        let out = std::mem::take(&mut self.buf);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
        out
    }
}
