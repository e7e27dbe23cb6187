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
//!    return the newest of those for the user key (a value, a tombstone or
//!    a merge operand).

pub(crate) mod arena;
pub mod skiplist;
pub mod sorted_hash;
pub mod vector;
pub(crate) mod with_range_dels;

use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SequenceNumber, ValueType};
use with_range_dels::MemRangeDels;

/// What a lookup found for a user key in one memtable or table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRef<'a> {
    /// The newest visible version is a value.
    Value(&'a [u8]),
    /// The newest visible version is a tombstone: the key is deleted, and
    /// older stages must not be consulted.
    Deleted,
    /// The newest visible version is a merge operand: the reader must
    /// collect older versions too (`merge.rs`, the slow path).
    Merge(&'a [u8]),
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

impl BatchLookup {
    /// The strategy that runs one memtable's batch of `batch_len` sorted
    /// keys when the database's `batch_lookup` option is `self` and the
    /// read asks for `read` ([`crate::ReadOptions::batch_lookup`]): the
    /// read's choice wins, and `Auto` becomes the skip list's measured
    /// pick for the batch's size (`skiplist::choose_strategy`: per-key
    /// descents for a single key, the breadth-first descent for more).
    /// Never `Auto`; resolving a resolved strategy returns it unchanged.
    ///
    /// The one place a strategy is chosen: the batch read path resolves
    /// each memtable stage's strategy here, and a skip list handed `Auto`
    /// directly (tests, benchmarks) resolves it here too.
    #[inline]
    pub fn resolve(self, read: Option<BatchLookup>, batch_len: usize) -> BatchLookup {
        match read.unwrap_or(self) {
            BatchLookup::Auto => skiplist::choose_strategy(batch_len),
            s => s,
        }
    }
}

/// The option-string name: `per_key`, `finger`, `bfs` or `auto`.
impl std::fmt::Display for BatchLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BatchLookup::PerKey => "per_key",
            BatchLookup::Finger => "finger",
            BatchLookup::Bfs => "bfs",
            BatchLookup::Auto => "auto",
        })
    }
}

/// Which memtable implementation a database uses (`memtable` option):
/// `skiplist` (default), `vector`, or `sorted_hash[:BUCKETS[:VECTOR_LIMIT]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemTableKind {
    /// Concurrent skip list: good at everything, best for mixed workloads.
    #[default]
    SkipList,
    /// Append-only vector sorted on first read: fastest bulk loads.
    Vector,
    /// Hash buckets plus background-sorted runs: fastest point reads and
    /// overwrites.
    SortedHash {
        /// Number of hash buckets (default 1,000,000).
        buckets: usize,
        /// Maximum entries per sorted run cut from the write list (default 10,000).
        vector_limit: usize,
    },
}

impl FromStr for MemTableKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| Err(Error::InvalidArgument(format!("memtable: {why}")));
        let mut parts = s.trim().split(':');
        let name = parts.next().unwrap_or_default();
        let mut num = |what: &str, default: usize| -> Result<usize> {
            match parts.next() {
                None => Ok(default),
                Some(p) => match p.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(Error::InvalidArgument(format!(
                        "memtable: {what} must be a positive integer, got {p:?} in {s:?}"
                    ))),
                },
            }
        };
        let kind = match name {
            "skiplist" => MemTableKind::SkipList,
            "vector" => MemTableKind::Vector,
            "sorted_hash" => MemTableKind::SortedHash {
                buckets: num("BUCKETS", sorted_hash::DEFAULT_BUCKETS)?,
                vector_limit: num("VECTOR_LIMIT", sorted_hash::DEFAULT_VECTOR_LIMIT)?,
            },
            _ => {
                return bad(format!(
                    "unknown memtable {s:?} (expected skiplist, vector or \
                     sorted_hash[:BUCKETS[:VECTOR_LIMIT]])"
                ))
            }
        };
        if parts.next().is_some() {
            return bad(format!("too many fields in {s:?}"));
        }
        Ok(kind)
    }
}

impl std::fmt::Display for MemTableKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemTableKind::SkipList => f.write_str("skiplist"),
            MemTableKind::Vector => f.write_str("vector"),
            MemTableKind::SortedHash {
                buckets,
                vector_limit,
            } => write!(f, "sorted_hash:{buckets}:{vector_limit}"),
        }
    }
}

/// One entry for [`MemTable::insert_many`].
#[derive(Debug, Clone, Copy)]
pub struct NewEntry<'a> {
    pub seq: SequenceNumber,
    pub t: ValueType,
    pub user_key: &'a [u8],
    pub value: &'a [u8],
    /// Where a read of `user_key` found its place ([`InsertHint`]).
    pub hint: Option<InsertHint>,
}

/// Where a newer version of a key that was just read goes in the memtable
/// that answered the read ([`crate::Db::multi_get_hinted`]): that
/// memtable's identity (unique in the process, never reused) and its
/// entries just before the key (for the skip list: at each of its lowest
/// four levels). A write hands it back
/// ([`crate::WriteBatch::put_hinted`]) so that the memtable links the new
/// entry from there instead of searching from its top.
///
/// Only a hint: one of another memtable (the read's memtable was switched
/// since), or one whose entry no longer sorts before the new one (a newer
/// version of the key was written since the read), is ignored, and the
/// entry is inserted as without it. A hint therefore never changes what is
/// stored, only how fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsertHint {
    /// The identity of the memtable that made it.
    pub(crate) table: u64,
    /// That memtable's entries (their addresses), meaningful only to it.
    pub(crate) path: [usize; HINT_LEVELS],
}

/// Levels of the skip list an [`InsertHint`] holds the key's predecessor
/// at: a new node of at most this height (all but 1 in 256 at p = 1/4) is
/// linked from them without a search from the top.
pub(crate) const HINT_LEVELS: usize = 4;

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

    /// Adds the entries of one write group, as [`MemTable::insert`] of
    /// each (new and distinct; none is read before the caller publishes
    /// their sequence numbers, so the order they are linked in is free). A
    /// memtable may overlap their searches (the skip list does); the
    /// default inserts them one by one. Stops at the first error. Returns
    /// how many entries' [`NewEntry::hint`]s it used (the default: none).
    fn insert_many(&self, entries: &[NewEntry<'_>]) -> Result<usize> {
        for e in entries {
            self.insert(e.seq, e.t, e.user_key, e.value)?;
        }
        Ok(0)
    }

    /// The newest version of `user_key` with sequence ≤ `seq`, if any.
    fn get(&self, user_key: &[u8], seq: SequenceNumber) -> Result<Option<EntryRef<'_>>>;

    /// [`MemTable::get`] with the found version's sequence number, which
    /// reads compare with covering range tombstones.
    fn get_versioned(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(SequenceNumber, EntryRef<'_>)>>;

    /// Looks up a batch: `keys` are sorted ascending and distinct. For each
    /// key that has a visible version, calls `found(index_in_keys, entry)`
    /// exactly once; keys without one are not reported. Values borrow the
    /// memtable, so callers may keep them while they hold it. `strategy`
    /// comes from [`BatchLookup::resolve`] (a memtable that has strategies
    /// resolves an `Auto` it is handed there too).
    fn multi_get<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()>;

    /// [`MemTable::multi_get`] that also calls `hint(index_in_keys, h)`
    /// with where a newer version of a key would be inserted, for the keys
    /// it can say that of (none by default; the skip list for every key,
    /// unless its paranoid checks are on). A write of those keys that follows passes
    /// the hints back ([`NewEntry::hint`]).
    fn multi_get_hinted<'a>(
        &'a self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
        hint: &mut dyn FnMut(usize, InsertHint),
    ) -> Result<()> {
        let _ = hint;
        self.multi_get(keys, seq, strategy, found)
    }

    /// An iterator over all entries (every version), in internal-key order.
    /// It keeps the memtable alive.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;

    /// Bytes held by the memtable (arena blocks, indexes).
    fn approximate_memory_usage(&self) -> usize;

    /// Bytes taken by entries and indexes, without the unused rest of the
    /// current arena block: compared with `write_buffer_size` to decide
    /// that the memtable is full (issue 12: a 4 KiB write buffer in 4 KiB
    /// blocks was "full" after every write).
    fn bytes_in_use(&self) -> usize;

    /// Number of entries inserted.
    fn num_entries(&self) -> u64;

    /// The range tombstones, for memtables that hold them (the engine wraps
    /// every memtable in [`with_range_dels::WithRangeDels`]); `None` for a
    /// bare memtable, which must never be given a `RangeDeletion` insert.
    fn range_dels(&self) -> Option<&MemRangeDels> {
        None
    }
}
