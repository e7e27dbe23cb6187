//! Memtables: the in-memory, sorted write buffer in front of the SST files.
//!
//! # Contract (every memtable)
//! 1. Entries are never removed while the memtable lives, and an entry's
//!    bytes never change after it is published.
//! 2. An internal key (user key + sequence + type) is inserted at most once.
//! 3. Readers run concurrently with writers and never see a half-written
//!    entry: an entry becomes visible only after all its bytes are written.
//! 4. [`MemTable::approximate_memory_usage`] reports the real bytes held,
//!    never 0 for a non-empty memtable.
//! 5. Lookups at snapshot `seq` see only entries with sequence ≤ `seq`, and
//!    return the newest of those for the user key (a value or a tombstone).

pub mod skiplist;

use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SequenceNumber, ValueType};

/// What a lookup found for a user key in one memtable or table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRef<'a> {
    /// The newest visible version is a value.
    Value(&'a [u8]),
    /// The newest visible version is a tombstone: the key is deleted, and
    /// older stages must not be consulted.
    Deleted,
}

/// How a memtable resolves a sorted batch of keys (`batch_lookup` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchLookup {
    /// One full descent from the head per key (the baseline).
    PerKey,
    /// Reuse the previous key's search path (finger search, O(log d)).
    Finger,
    /// Breadth-first descent of the whole batch with prefetching.
    Bfs,
    /// Chosen per batch by size (see the skip list's documentation).
    #[default]
    Auto,
}

impl FromStr for BatchLookup {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "per_key" => Ok(BatchLookup::PerKey),
            "finger" => Ok(BatchLookup::Finger),
            "bfs" => Ok(BatchLookup::Bfs),
            "auto" => Ok(BatchLookup::Auto),
            _ => Err(Error::InvalidArgument(format!(
                "batch_lookup: unknown strategy {s:?} (expected per_key, finger, bfs or auto)"
            ))),
        }
    }
}

/// The memtable interface the engine programs against.
///
/// # Thread safety
/// Every method may be called from many threads at once; `insert` is
/// concurrent with itself and with all readers.
pub trait MemTable: Send + Sync + 'static {
    /// Short name used in error messages ("skiplist").
    fn kind(&self) -> &'static str;

    /// Adds one entry. The caller guarantees `(user_key, seq, t)` is new.
    fn insert(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<()>;

    /// The newest version of `user_key` with sequence ≤ `seq`, if any.
    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>>;

    /// Looks up a batch: `keys` are sorted ascending and distinct. For each
    /// key that has a visible version, calls `found(index_in_keys, entry)`
    /// exactly once; keys without one are not reported. Values borrow the
    /// memtable, so callers may keep them while they hold it.
    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()>;

    /// An iterator over all entries (every version), in internal-key order.
    /// It keeps the memtable alive.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;

    /// Bytes held by the memtable (arena blocks, indexes).
    fn approximate_memory_usage(&self) -> usize;

    /// Number of entries inserted.
    fn num_entries(&self) -> u64;
}
