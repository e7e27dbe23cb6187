//! Options: per database ([`Options`]), per read ([`ReadOptions`]) and per
//! write ([`WriteOptions`]), and the RocksDB-style option strings.
//!
//! The database options are declared once, in `list.rs`; `define.rs` is the
//! macro that generates the struct, its defaults, [`Options::set`],
//! [`Options::to_option_pairs`], the builder's setters and the SST-layer
//! and column-family views from that list, and `codec.rs` parses and prints
//! each value. This file holds what is written by hand: the checks across
//! options ([`Options::validate`]), option strings and the `OPTIONS` file.

mod builder;
mod codec;
mod define;
mod list;
mod wal_recovery_mode;

#[cfg(test)]
mod tests;

use std::str::FromStr;

use crate::db::Snapshot;
use crate::error::{Error, Result};
use crate::memtable::{BatchLookup, MemTableKind};
use crate::sst::CompressionType;

pub use builder::OptionsBuilder;
pub use list::Options;
pub use wal_recovery_mode::WalRecoveryMode;

/// Largest user key accepted, in bytes. Larger keys return `InvalidArgument`.
pub const MAX_KEY_SIZE: usize = 64 * 1024;
/// Largest value accepted, in bytes. Larger values return `InvalidArgument`.
pub const MAX_VALUE_SIZE: usize = 64 * 1024 * 1024;

impl Options {
    /// Checks option values against each other; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, why: &str| Err(Error::InvalidArgument(format!("{name}: {why}")));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size", "must be at least 4096 bytes");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number", "must be at least 2");
        }
        if self.block_size < 64 || self.block_size > (1 << 30) {
            return bad("block_size", "must be between 64 bytes and 1 GiB");
        }
        if self.block_restart_interval == 0 || self.block_restart_interval > 1 << 16 {
            return bad("block_restart_interval", "must be between 1 and 65536");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key", "must be at most 64");
        }
        if self.max_background_jobs < 2 {
            return bad(
                "max_background_jobs",
                "must be at least 2 (one flush, one compaction thread)",
            );
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger", "must be at least 1");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger {
            return bad(
                "level0_slowdown_writes_trigger",
                "must be at least level0_file_num_compaction_trigger",
            );
        }
        if self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return bad(
                "level0_stop_writes_trigger",
                "must be at least level0_slowdown_writes_trigger",
            );
        }
        if self.max_bytes_for_level_base < 4096 {
            return bad("max_bytes_for_level_base", "must be at least 4096");
        }
        if !(self.max_bytes_for_level_multiplier >= 1.0
            && self.max_bytes_for_level_multiplier.is_finite())
        {
            return bad(
                "max_bytes_for_level_multiplier",
                "must be a finite number ≥ 1",
            );
        }
        if self.target_file_size_base < 4096 {
            return bad("target_file_size_base", "must be at least 4096");
        }
        if self.compression == CompressionType::Zstd {
            if let Some(why) = crate::sst::compression::zstd_missing() {
                return Err(Error::InvalidArgument(why.into()));
            }
        }
        let zstd_levels = crate::sst::compression::zstd_level_range();
        if self.compression == CompressionType::Zstd
            && !zstd_levels.contains(&self.compression_level)
        {
            return bad(
                "compression_level",
                &format!("must be in {zstd_levels:?} for zstd"),
            );
        }
        if self.max_open_files == 0 {
            return bad("max_open_files", "must be at least 1 (or -1 for no limit)");
        }
        if self.hash_pipeline_window == 0 || self.hash_pipeline_window > 1024 {
            return bad("hash_pipeline_window", "must be between 1 and 1024");
        }
        if let MemTableKind::SortedHash { buckets, .. } = self.memtable {
            // The bucket array counts as memtable memory: if it alone filled
            // the write buffer, every write would switch memtables.
            if buckets.saturating_mul(8) >= self.write_buffer_size {
                return bad(
                    "memtable",
                    "the sorted_hash bucket array (8 bytes per bucket) must be \
                     smaller than write_buffer_size",
                );
            }
        }
        Ok(())
    }

    /// Applies an option string (`"name=value;name=value"`, the format of
    /// [`FromStr`]) on top of these options and validates the result —
    /// RocksDB's `GetOptionsFromString` with a base: options the string
    /// does not name keep their values here.
    pub fn apply_option_string(&mut self, s: &str) -> Result<()> {
        for part in s.split(';') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (name, value) = part.split_once('=').ok_or_else(|| {
                Error::InvalidArgument(format!("option {part:?} is not of the form name=value"))
            })?;
            self.set(name.trim(), value.trim())?;
        }
        self.validate()
    }
}

impl Options {
    /// `name=value;name=value;...` for every option with a string form
    /// ([`Options::to_option_pairs`]).
    pub fn to_option_string(&self) -> String {
        self.to_option_pairs()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// The options a database was last opened with, from the `OPTIONS` file
    /// it writes at every open (one `name=value` per line, `#` comments; the
    /// `[merge_operators]` section that follows is not read here).
    pub fn from_options_file(path: impl AsRef<std::path::Path>) -> Result<Options> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        text.lines()
            .map(str::trim)
            // Sections (`[merge_operators]`) record what is set in code.
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join(";")
            .parse()
    }

    /// The `OPTIONS` file's text.
    pub(crate) fn options_file_text(&self) -> String {
        let mut text = String::from(
            "# batchkv options, written at open; read back with Options::from_options_file\n",
        );
        for line in self.code_only_comments() {
            text.push_str(&format!("# {line} (set in code)\n"));
        }
        for (k, v) in self.to_option_pairs() {
            text.push_str(&format!("{k}={v}\n"));
        }
        text
    }
}

/// Parses `"name=value;name=value"` (RocksDB style; whitespace around names
/// and values is ignored, a trailing `;` is allowed) over the defaults, then
/// validates. Unknown or malformed options return `InvalidArgument` naming them.
impl FromStr for Options {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let mut opts = Options::default();
        opts.apply_option_string(s)?;
        Ok(opts)
    }
}

/// Options for one read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot; `None` reads the latest committed state.
    pub snapshot: Option<Snapshot>,
    /// Iterators: first user key included (inclusive lower bound).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: first user key excluded (exclusive upper bound).
    pub upper_bound: Option<Vec<u8>>,
    /// Overrides [`Options::batch_lookup`] for this read.
    pub batch_lookup: Option<BatchLookup>,
    /// Keep the SST data blocks this read loads in the block cache
    /// (default true; scans that should not evict hot blocks set false).
    pub fill_cache: bool,
    /// Verify the checksums of SST data blocks read from disk (default
    /// true; has no effect when [`Options::verify_checksums`] is false).
    pub verify_checksums: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            batch_lookup: None,
            fill_cache: true,
            verify_checksums: true,
        }
    }
}

/// Options for one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Fsync the WAL before acknowledging: the write survives power loss.
    /// Without it the write survives a process crash only.
    pub sync: bool,
    /// Skip the WAL: the write lives only in the memtable until flushed.
    pub disable_wal: bool,
}
