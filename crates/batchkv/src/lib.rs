//! batchkv: an embedded log-structured merge key-value engine whose in-memory
//! read paths are built for batches — a batch of lookups overlaps its cache
//! misses instead of paying them one after another.
//!
//! The public surface is this file's list of exports; everything else is
//! crate-private.

#![deny(unsafe_code)]
#![warn(missing_docs)]
// Temporary while the modules are assembled into `Db`; removed when every module is wired in.
#![allow(dead_code)]

mod coding;
mod error;
mod fs;
mod iter;
mod key;
mod memtable;
mod prefetch;

pub use error::{Error, Result};
pub use iter::InternalIterator;
pub use key::{SequenceNumber, ValueType};
pub use memtable::skiplist::{SkipListMemTable, SkipListOptions};
pub use memtable::{BatchLookup, EntryRef, MemTable};
