//! Compaction filters: user code that sees each live value as compaction
//! rewrites it and may keep, remove or replace it (RocksDB's
//! `CompactionFilter`), and [`TtlFilter`], expiry built on it.
//!
//! Semantics (as RocksDB's):
//! - Only values no snapshot can see are offered (the newest version of a
//!   key written after the newest live snapshot); tombstones never are.
//! - `Remove` turns the value into a tombstone with the same sequence
//!   number, so older versions in deeper levels stay hidden; the tombstone
//!   is dropped later like any other at the bottom level.
//! - Trivial moves (a file moved down by a MANIFEST edit alone) and flushes
//!   do not run the filter; reads never do. A filter is eventually applied,
//!   not at a given time.
//! - A filter runs on compaction threads, concurrently: it must be
//!   `Send + Sync` and must not call back into the database.
//! - A panic in a filter is caught and becomes the database's background
//!   error (`Error::Panicked` naming the filter): writes are refused, and
//!   `flush`, `compact_range` and `close` return it.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// What to do with one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionDecision {
    /// Keep the value as it is.
    Keep,
    /// Remove the key (a tombstone replaces the value).
    Remove,
    /// Keep the key with this value instead.
    ChangeValue(Vec<u8>),
}

/// Decides, during compaction, what happens to each live value.
pub trait CompactionFilter: Send + Sync {
    /// `level` is the level the output goes to.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> CompactionDecision;

    /// A name for logs and `Debug` output.
    fn name(&self) -> &str;
}

impl fmt::Debug for dyn CompactionFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CompactionFilter({})", self.name())
    }
}

/// Time to live on top of a compaction filter: `expiry_of` reads a value's
/// expiry (milliseconds since the Unix epoch) from the value itself, `None`
/// for a value that never expires; compaction removes values whose expiry
/// has passed. Readers must still check expiry themselves (until a
/// compaction runs, an expired value is still stored), as with RocksDB's
/// TTL.
pub struct TtlFilter<F> {
    expiry_of: F,
    now_ms: fn() -> u64,
}

impl<F: Fn(&[u8]) -> Option<u64> + Send + Sync> TtlFilter<F> {
    /// Removes values whose `expiry_of(value)` is at or before the clock.
    pub fn new(expiry_of: F) -> TtlFilter<F> {
        TtlFilter {
            expiry_of,
            now_ms: unix_now_ms,
        }
    }

    /// The same with another clock (tests).
    pub fn with_clock(expiry_of: F, now_ms: fn() -> u64) -> TtlFilter<F> {
        TtlFilter { expiry_of, now_ms }
    }
}

fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl<F: Fn(&[u8]) -> Option<u64> + Send + Sync> CompactionFilter for TtlFilter<F> {
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> CompactionDecision {
        match (self.expiry_of)(value) {
            Some(at) if at <= (self.now_ms)() => CompactionDecision::Remove,
            _ => CompactionDecision::Keep,
        }
    }

    fn name(&self) -> &str {
        "batchkv.TtlFilter"
    }
}
