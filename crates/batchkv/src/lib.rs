//! batchkv: an embedded log-structured merge key-value engine whose in-memory
//! read paths are built for batches — a batch of lookups overlaps its cache
//! misses instead of paying them one after another.
//!
//! ```no_run
//! use batchkv::{Db, Options, ReadOptions};
//! let db = Db::open("/tmp/example-db", Options::default())?;
//! db.put(b"k1", b"v1")?;
//! assert_eq!(db.get(b"k1")?, Some(b"v1".to_vec()));
//! let results = db.multi_get(&ReadOptions::default(), &[b"k1", b"k2"]);
//! assert_eq!(results[1].as_ref().unwrap(), &None);
//! db.close()?;
//! # Ok::<(), batchkv::Error>(())
//! ```
//!
//! The public surface is this file's list of exports; everything else is
//! crate-private.

#![deny(unsafe_code)]

mod batch;
mod cache;
mod checksum;
mod coding;
mod compaction;
mod db;
mod error;
mod filename;
#[cfg(test)]
mod format_examples;
mod fs;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod iter;
mod key;
mod key_list;
mod memtable;
mod merge;
pub mod merge_operators;
mod options;
mod prefetch;
mod range_del;
mod sst;
mod version;
mod wal;

pub use batch::{BatchOp, WriteBatch};
pub use cache::Cache;
pub use compaction::{CompactionDecision, CompactionFilter, TtlFilter};
pub use db::{
    ColumnFamily, Db, DbIterator, DbStats, IngestOptions, KeyRange, KvResult, LatencyStats,
    RangeIter, ReadView, RecoveryReport, RecoveryStatus, Snapshot, Statistics, Transaction,
    TransactionIter, TransactionOptions, WalDamage,
};
pub use error::{Error, Result};
pub use fs::{
    Fault, FaultInjectionFs, FaultOp, FileLock, FileSystem, PosixFs, RandomAccessFile, WritableFile,
};
pub use key::SequenceNumber;
pub use key_list::KeyList;
pub use memtable::{BatchLookup, InsertHint, MemTableKind};
pub use merge::MergeOperator;
pub use options::OptionsBuilder;
pub use options::{
    Options, ReadOptions, WalRecoveryMode, WriteOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE,
};
// Inspection of single files (`batchkv dump sst|wal|manifest`): read-only,
// off every engine path.
pub use sst::dump::{SstEntries, SstEntry, SstFileReader};
pub use sst::file_writer::{ExternalSstInfo, SstFileWriter};
pub use sst::CompressionType;
pub use version::dump::{DumpKey, ManifestEdit, ManifestFile, ManifestFileReader};
pub use wal::dump::{LogDamage, WalFileReader, WalOp, WalRecord};
pub use wal::WalPredecessor;
/// Memtable internals for the component micro-benchmarks only.
#[cfg(feature = "bench-internals")]
pub use {
    key::ValueType,
    memtable::skiplist::{SkipListMemTable, SkipListOptions},
    memtable::{EntryRef, MemTable},
};
