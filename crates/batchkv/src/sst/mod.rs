//! Sorted string tables: the immutable files of the LSM tree.
//!
//! A table is written once by [`TableBuilder`] and then read by [`Table`]
//! (point lookups through the bloom filter and the index) and
//! [`TableIterator`](table::TableIterator) (ordered scans both ways). The byte format is
//! documented in `docs/format/sst.md`; docs/design.md §6 gives the rationale.
//!
//! ```text
//! data block* ‖ filter block? ‖ properties block ‖ metaindex block ‖ index block ‖ footer
//! ```
//!
//! Modules: [`format`] (handles, block trailer, footer, the single block
//! read), [`compression`] (the codecs), [`block`] (both block layouts,
//! builder, iterator), [`filter`] (blocked bloom filter), [`properties`],
//! [`builder`] (the writer), [`table`] (the reader, its block-cache use and
//! its iterator), [`dump`] (the public inspection reader behind
//! `batchkv dump sst`), [`file_writer`] (the public `SstFileWriter` for
//! external files) and [`global_seqno`] (reading an ingested file at its
//! assigned sequence number).

pub(crate) mod block;
pub(crate) mod builder;
pub(crate) mod compression;
pub(crate) mod dump;
pub(crate) mod file_writer;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod global_seqno;
pub(crate) mod properties;
pub(crate) mod table;

#[cfg(test)]
mod measure;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_support;

pub(crate) use block::Block;
pub(crate) use builder::TableBuilder;
pub(crate) use table::{BlockReadOptions, Table};

use crate::error::{Error, Result};
pub use compression::CompressionType;

/// Metaindex name of the filter block. On disk — never change.
pub(crate) const FILTER_BLOCK_NAME: &str = "filter.batchkv.blockedbloom64";
/// Metaindex name of the properties block. On disk — never change.
pub(crate) const PROPERTIES_BLOCK_NAME: &str = "properties";

/// Largest `block_size` accepted (keeps every block's offsets in 32 bits
/// and its restart count in the footer word's 28 bits).
const MAX_BLOCK_SIZE: usize = 256 << 20;

/// How tables are written and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableOptions {
    /// Target size of a data block's contents, in bytes (default 4096).
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub restart_interval: usize,
    /// Entries between restart points in the index block (default 1).
    pub index_restart_interval: usize,
    /// Bloom filter bits per user key; 0 writes no filter (default 10).
    pub bloom_bits_per_key: usize,
    /// Verify data block checksums on every read (default true). Index,
    /// filter, properties and metaindex blocks are always verified.
    pub verify_checksums: bool,
    /// Data block compression (default none here; the engine's default is
    /// in `Options`).
    pub compression: CompressionType,
    /// ZSTD level (ignored by the other types).
    pub compression_level: i32,
    /// Write data blocks in the separated key/value layout.
    pub separate_key_value: bool,
    /// Table cache: bytes of the shared block cache; 0 disables it.
    pub block_cache_size: usize,
    /// Table cache: most tables kept open at once.
    pub max_open_files: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            index_restart_interval: 1,
            bloom_bits_per_key: 10,
            verify_checksums: true,
            compression: CompressionType::None,
            compression_level: 3,
            separate_key_value: false,
            block_cache_size: 0,
            max_open_files: usize::MAX,
        }
    }
}

impl TableOptions {
    /// Checks the options; `InvalidArgument` names the bad one.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |s: String| Err(Error::InvalidArgument(s));
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return bad(format!(
                "block_size {} must be in 1..={MAX_BLOCK_SIZE}",
                self.block_size
            ));
        }
        if self.restart_interval == 0 || self.index_restart_interval == 0 {
            return bad(format!(
                "restart intervals must be >= 1 (data {}, index {})",
                self.restart_interval, self.index_restart_interval
            ));
        }
        if self.bloom_bits_per_key > 100 {
            return bad(format!(
                "bloom_bits_per_key {} must be at most 100",
                self.bloom_bits_per_key
            ));
        }
        if let (CompressionType::Zstd, Some(why)) = (self.compression, compression::zstd_missing())
        {
            return bad(why.into());
        }
        if self.compression == CompressionType::Zstd
            && !compression::zstd_level_range().contains(&self.compression_level)
        {
            return bad(format!(
                "compression_level {} is outside zstd's range {:?}",
                self.compression_level,
                compression::zstd_level_range()
            ));
        }
        if self.max_open_files == 0 {
            return bad("max_open_files must be at least 1".into());
        }
        Ok(())
    }
}
