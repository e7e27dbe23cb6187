//! Options: per database ([`Options`]), per read ([`ReadOptions`]) and per
//! write ([`WriteOptions`]), and the RocksDB-style option-string parser.

use std::str::FromStr;

use crate::db::Snapshot;
use crate::error::{Error, Result};
use crate::memtable::{BatchLookup, MemTableKind};
use crate::sst::CompressionType;

/// Largest user key accepted, in bytes. Larger keys return `InvalidArgument`.
pub const MAX_KEY_SIZE: usize = 64 * 1024;
/// Largest value accepted, in bytes. Larger values return `InvalidArgument`.
pub const MAX_VALUE_SIZE: usize = 64 * 1024 * 1024;

/// What recovery does when a WAL is damaged (RocksDB's modes; their
/// differences from RocksDB's are in `docs/format/wal.md` §4).
///
/// Damage is a **tail** when nothing intact follows it: no record after
/// it in its log and none in any later log. That is what a crash leaves
/// (a torn last write, zero fill the data never reached), so every mode
/// but `AbsoluteConsistency` accepts it, applying everything before it.
/// Damage followed by intact records is not (it is media or software
/// corruption, or power loss that wrote later pages of unsynced data
/// before earlier ones); what happens to it is what the modes differ in.
/// Whatever is not applied is listed by
/// [`Db::recovery_report`](crate::Db::recovery_report) and logged, and a
/// WAL whose intact records were not applied is first copied to `lost/`.
///
/// Option-string names: `tolerate-corrupted-tail`, `absolute`,
/// `point-in-time`, `skip-corrupted` (RocksDB's `kTolerateCorruptedTailRecords`,
/// ... and the snake-case names `tolerate_corrupted_tail_records`, ... are
/// accepted too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// The default: a tail is accepted; damage followed by intact records
    /// fails the open with [`Error::Corruption`] naming the WAL and the
    /// offset and saying how to salvage, and changes nothing on disk.
    #[default]
    TolerateCorruptedTailRecords,
    /// Any damage, a torn tail included, fails the open with `Corruption`.
    AbsoluteConsistency,
    /// Stop at the first damage and keep everything before it, dropping
    /// the intact records after it (and later WALs, so the result is a
    /// prefix of the write order).
    PointInTime,
    /// Skip damaged records and apply every intact one after them
    /// (salvage; the result may not be a prefix of the write order).
    SkipAnyCorruptedRecords,
}

impl WalRecoveryMode {
    /// The option-string name: `tolerate-corrupted-tail`, `absolute`,
    /// `point-in-time` or `skip-corrupted`.
    pub fn name(self) -> &'static str {
        match self {
            WalRecoveryMode::TolerateCorruptedTailRecords => "tolerate-corrupted-tail",
            WalRecoveryMode::AbsoluteConsistency => "absolute",
            WalRecoveryMode::PointInTime => "point-in-time",
            WalRecoveryMode::SkipAnyCorruptedRecords => "skip-corrupted",
        }
    }
}

impl std::fmt::Display for WalRecoveryMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WalRecoveryMode {
    type Err = Error;

    /// Parses any of the names in the type's documentation.
    fn from_str(value: &str) -> Result<WalRecoveryMode> {
        Ok(match value {
            "tolerate-corrupted-tail"
            | "kTolerateCorruptedTailRecords"
            | "tolerate_corrupted_tail_records" => WalRecoveryMode::TolerateCorruptedTailRecords,
            "absolute" | "kAbsoluteConsistency" | "absolute_consistency" => {
                WalRecoveryMode::AbsoluteConsistency
            }
            "point-in-time" | "kPointInTimeRecovery" | "point_in_time" => {
                WalRecoveryMode::PointInTime
            }
            "skip-corrupted" | "kSkipAnyCorruptedRecords" | "skip_any_corrupted_records" => {
                WalRecoveryMode::SkipAnyCorruptedRecords
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "wal_recovery_mode: unknown mode {value:?} (expected \
                     tolerate-corrupted-tail, absolute, point-in-time or skip-corrupted)"
                )))
            }
        })
    }
}

/// Database options. Construct with `Options::default()` and set fields, or
/// parse an option string (see [`Options::from_str`]).
#[derive(Debug, Clone)]
pub struct Options {
    /// Create the database if the directory holds none (default true).
    pub create_if_missing: bool,
    /// Fail to open if a database already exists (default false).
    pub error_if_exists: bool,
    /// Bytes of memtable memory after which the memtable is frozen and
    /// flushed (default 64 MiB).
    pub write_buffer_size: usize,
    /// Memtables (active + immutable) allowed before writers stall until a
    /// flush finishes (default 2, minimum 2).
    pub max_write_buffer_number: usize,
    /// How damaged WALs are treated at recovery (default
    /// `tolerate-corrupted-tail`: a crash's torn tail is accepted, damage
    /// followed by intact records fails the open).
    pub wal_recovery_mode: WalRecoveryMode,
    /// Verify ordering and per-entry checksums during memtable lookups.
    pub paranoid_memory_checks: bool,
    /// Ask for transparent huge pages on memtable arena blocks (Linux).
    pub memtable_huge_pages: bool,
    /// How memtables resolve batched lookups (default `auto`).
    pub batch_lookup: BatchLookup,
    /// The memtable implementation (default `skiplist`).
    pub memtable: MemTableKind,
    /// Lookups in flight in the sorted-hash memtable's pipelined
    /// `multi_get` (default 24).
    pub hash_pipeline_window: usize,
    /// Target uncompressed size of an SST data block (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points in SST data blocks (default 16).
    pub block_restart_interval: usize,
    /// Bloom filter bits per key in SST files; 0 disables filters (default 10).
    pub bloom_bits_per_key: usize,
    /// Background threads: one flushes, the rest (at least one) compact
    /// (default 2).
    pub max_background_jobs: usize,
    /// L0 files that trigger an L0→L1 compaction (default 4).
    pub level0_file_num_compaction_trigger: usize,
    /// L0 files at which each write is delayed by 1 ms (default 20).
    pub level0_slowdown_writes_trigger: usize,
    /// L0 files at which writes wait for compaction (default 36).
    pub level0_stop_writes_trigger: usize,
    /// Target size of L1 in bytes (default 256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Each level below L1 is this many times larger (default 10).
    pub max_bytes_for_level_multiplier: f64,
    /// Compaction outputs are split at about this size (default 64 MiB).
    pub target_file_size_base: u64,
    /// Turn off background compactions (`compact_range` still works), and
    /// with them the L0 write stalls.
    pub disable_auto_compactions: bool,
    /// Compression of SST data blocks (default LZ4; see the SST format doc).
    pub compression: CompressionType,
    /// ZSTD compression level (default 3; ignored by LZ4 and none).
    pub compression_level: i32,
    /// Store keys and values of SST data blocks in separate sections, so
    /// seeks scan keys only (default false).
    pub separate_key_value_in_data_block: bool,
    /// Bytes of the shared cache of decoded data blocks; 0 disables it
    /// (default 32 MiB).
    pub block_cache_size: usize,
    /// Most SST files kept open at once (default 1000; `-1` in an option
    /// string means no limit).
    pub max_open_files: usize,
    /// Verify SST data block checksums on reads (default true). Index,
    /// filter and meta blocks are always verified when a table is opened.
    pub verify_checksums: bool,
    /// Record latency histograms of `get`, `multi_get` and `write` for
    /// [`Db::statistics`](crate::Db::statistics) (default true: one clock
    /// read pair and three relaxed atomic operations per call; its measured
    /// cost: `docs/perf/history/2026-11-23-feature-costs.md`).
    pub statistics: bool,
    /// Offered each live value that compaction rewrites and no snapshot
    /// can see; may keep, remove or replace it (see [`CompactionFilter`](crate::CompactionFilter)).
    /// Not settable from an option string. Default none.
    pub compaction_filter: Option<std::sync::Arc<dyn crate::CompactionFilter>>,
    /// Combines merge operands ([`Db::merge`](crate::Db::merge)) with the
    /// versions below them, on reads and in compaction (see
    /// [`MergeOperator`](crate::MergeOperator)). Not settable from an option
    /// string; its name is recorded in the `OPTIONS` file, and a reopen with
    /// another operator, or none, is refused. Default none: a
    /// read that meets a merge operand then fails with `InvalidArgument`.
    pub merge_operator: Option<std::sync::Arc<dyn crate::MergeOperator>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            wal_recovery_mode: WalRecoveryMode::TolerateCorruptedTailRecords,
            paranoid_memory_checks: false,
            memtable_huge_pages: true,
            batch_lookup: BatchLookup::Auto,
            memtable: MemTableKind::SkipList,
            hash_pipeline_window: crate::hash_pipeline::DEFAULT_WINDOW,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            max_background_jobs: 2,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size_base: 64 << 20,
            disable_auto_compactions: false,
            compression: CompressionType::Lz4,
            compression_level: 3,
            separate_key_value_in_data_block: false,
            block_cache_size: 32 << 20,
            max_open_files: 1000,
            verify_checksums: true,
            statistics: true,
            compaction_filter: None,
            merge_operator: None,
        }
    }
}

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

    /// Applies one `name=value` setting.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        match name {
            "create_if_missing" => self.create_if_missing = parse_bool(name, value)?,
            "error_if_exists" => self.error_if_exists = parse_bool(name, value)?,
            "write_buffer_size" => self.write_buffer_size = parse_size(name, value)?,
            "max_write_buffer_number" => self.max_write_buffer_number = parse_size(name, value)?,
            "wal_recovery_mode" => self.wal_recovery_mode = value.parse()?,
            "paranoid_memory_checks" => self.paranoid_memory_checks = parse_bool(name, value)?,
            "memtable_huge_pages" => self.memtable_huge_pages = parse_bool(name, value)?,
            "batch_lookup" => self.batch_lookup = value.parse()?,
            "memtable" => self.memtable = value.parse()?,
            "hash_pipeline_window" => self.hash_pipeline_window = parse_size(name, value)?,
            "block_size" => self.block_size = parse_size(name, value)?,
            "block_restart_interval" => self.block_restart_interval = parse_size(name, value)?,
            "bloom_bits_per_key" | "bloom_bits" => {
                self.bloom_bits_per_key = parse_size(name, value)?
            }
            "max_background_jobs" => self.max_background_jobs = parse_size(name, value)?,
            "level0_file_num_compaction_trigger" => {
                self.level0_file_num_compaction_trigger = parse_size(name, value)?
            }
            "level0_slowdown_writes_trigger" => {
                self.level0_slowdown_writes_trigger = parse_size(name, value)?
            }
            "level0_stop_writes_trigger" => {
                self.level0_stop_writes_trigger = parse_size(name, value)?
            }
            "max_bytes_for_level_base" => {
                self.max_bytes_for_level_base = parse_size(name, value)? as u64
            }
            "max_bytes_for_level_multiplier" => {
                self.max_bytes_for_level_multiplier = value.parse().map_err(|_| {
                    Error::InvalidArgument(format!("{name}: expected a number, got {value:?}"))
                })?
            }
            "target_file_size_base" => self.target_file_size_base = parse_size(name, value)? as u64,
            "disable_auto_compactions" => self.disable_auto_compactions = parse_bool(name, value)?,
            "compression" | "compression_type" => self.compression = value.parse()?,
            "compression_level" => {
                self.compression_level = value.parse().map_err(|_| {
                    Error::InvalidArgument(format!(
                        "compression_level: expected an integer, got {value:?}"
                    ))
                })?
            }
            "separate_key_value_in_data_block" => {
                self.separate_key_value_in_data_block = parse_bool(name, value)?
            }
            "block_cache_size" | "cache_size" => self.block_cache_size = parse_size(name, value)?,
            "max_open_files" => {
                self.max_open_files = match value {
                    "-1" => usize::MAX,
                    _ => parse_size(name, value)?,
                }
            }
            "verify_checksums" => self.verify_checksums = parse_bool(name, value)?,
            "statistics" => self.statistics = parse_bool(name, value)?,
            _ => return Err(Error::InvalidArgument(format!("unknown option {name:?}"))),
        }
        Ok(())
    }
}

impl Options {
    /// Every option that has a string form, as `name=value` pairs in the
    /// form [`Options::set`] takes: `to_option_string().parse()` gives back
    /// equal options (except `compaction_filter`, which has none).
    pub fn to_option_pairs(&self) -> Vec<(&'static str, String)> {
        // The snake-case names older binaries parse (option strings are
        // stored in the OPTIONS file and, per column family, the MANIFEST).
        let mode = match self.wal_recovery_mode {
            WalRecoveryMode::TolerateCorruptedTailRecords => "tolerate_corrupted_tail_records",
            WalRecoveryMode::AbsoluteConsistency => "absolute_consistency",
            WalRecoveryMode::PointInTime => "point_in_time",
            WalRecoveryMode::SkipAnyCorruptedRecords => "skip_any_corrupted_records",
        };
        let lookup = match self.batch_lookup {
            BatchLookup::PerKey => "per_key",
            BatchLookup::Finger => "finger",
            BatchLookup::Bfs => "bfs",
            BatchLookup::Auto => "auto",
        };
        let max_open_files = if self.max_open_files == usize::MAX {
            "-1".to_string()
        } else {
            self.max_open_files.to_string()
        };
        vec![
            ("create_if_missing", self.create_if_missing.to_string()),
            ("error_if_exists", self.error_if_exists.to_string()),
            ("write_buffer_size", self.write_buffer_size.to_string()),
            (
                "max_write_buffer_number",
                self.max_write_buffer_number.to_string(),
            ),
            ("wal_recovery_mode", mode.to_string()),
            (
                "paranoid_memory_checks",
                self.paranoid_memory_checks.to_string(),
            ),
            ("memtable_huge_pages", self.memtable_huge_pages.to_string()),
            ("batch_lookup", lookup.to_string()),
            ("memtable", self.memtable.to_string()),
            (
                "hash_pipeline_window",
                self.hash_pipeline_window.to_string(),
            ),
            ("block_size", self.block_size.to_string()),
            (
                "block_restart_interval",
                self.block_restart_interval.to_string(),
            ),
            ("bloom_bits_per_key", self.bloom_bits_per_key.to_string()),
            ("max_background_jobs", self.max_background_jobs.to_string()),
            (
                "level0_file_num_compaction_trigger",
                self.level0_file_num_compaction_trigger.to_string(),
            ),
            (
                "level0_slowdown_writes_trigger",
                self.level0_slowdown_writes_trigger.to_string(),
            ),
            (
                "level0_stop_writes_trigger",
                self.level0_stop_writes_trigger.to_string(),
            ),
            (
                "max_bytes_for_level_base",
                self.max_bytes_for_level_base.to_string(),
            ),
            (
                "max_bytes_for_level_multiplier",
                self.max_bytes_for_level_multiplier.to_string(),
            ),
            (
                "target_file_size_base",
                self.target_file_size_base.to_string(),
            ),
            (
                "disable_auto_compactions",
                self.disable_auto_compactions.to_string(),
            ),
            ("compression", self.compression.to_string()),
            ("compression_level", self.compression_level.to_string()),
            (
                "separate_key_value_in_data_block",
                self.separate_key_value_in_data_block.to_string(),
            ),
            ("block_cache_size", self.block_cache_size.to_string()),
            ("max_open_files", max_open_files),
            ("verify_checksums", self.verify_checksums.to_string()),
            ("statistics", self.statistics.to_string()),
        ]
    }

    /// `name=value;name=value;...` for every option with a string form.
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
        if let Some(f) = &self.compaction_filter {
            text.push_str(&format!(
                "# compaction_filter: {} (set in code)\n",
                f.name()
            ));
        }
        if let Some(m) = &self.merge_operator {
            text.push_str(&format!("# merge_operator: {} (set in code)\n", m.name()));
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

fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err(Error::InvalidArgument(format!(
            "{name}: expected a boolean, got {value:?}"
        ))),
    }
}

/// Parses a count or byte size: digits with an optional K/KB/M/MB/G/GB/T/TB
/// suffix (binary multiples, case-insensitive).
fn parse_size(name: &str, value: &str) -> Result<usize> {
    let invalid = || Error::InvalidArgument(format!("{name}: expected a size, got {value:?}"));
    let upper = value.to_ascii_uppercase();
    let digits_end = upper
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(upper.len());
    let (digits, suffix) = upper.split_at(digits_end);
    let n: u64 = digits.parse().map_err(|_| invalid())?;
    let shift = match suffix.trim() {
        "" => 0,
        "K" | "KB" => 10,
        "M" | "MB" => 20,
        "G" | "GB" => 30,
        "T" | "TB" => 40,
        _ => return Err(invalid()),
    };
    let bytes = n.checked_mul(1u64 << shift).ok_or_else(invalid)?;
    usize::try_from(bytes).map_err(|_| invalid())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_string_applies_on_top_of_a_base() {
        let mut o = Options {
            block_cache_size: 1 << 30,
            ..Options::default()
        };
        o.apply_option_string("write_buffer_size=1MB; bloom_bits_per_key=5")
            .unwrap();
        assert_eq!(o.block_cache_size, 1 << 30);
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.bloom_bits_per_key, 5);
        // Invalid values are refused by name.
        let err = o.apply_option_string("max_open_files=0").unwrap_err();
        assert!(err.to_string().contains("max_open_files"), "{err}");
    }

    #[test]
    fn option_string_sets_sizes_with_suffixes() {
        let o: Options = "write_buffer_size=64MB;max_write_buffer_number=4;"
            .parse()
            .unwrap();
        assert_eq!(o.write_buffer_size, 64 << 20);
        assert_eq!(o.max_write_buffer_number, 4);
        let o: Options = " block_size = 16k ; paranoid_memory_checks=true"
            .parse()
            .unwrap();
        assert_eq!(o.block_size, 16 << 10);
        assert!(o.paranoid_memory_checks);
    }

    #[test]
    fn unknown_or_malformed_options_name_the_option() {
        let err = "write_bufer_size=1"
            .parse::<Options>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("write_bufer_size"), "{err}");
        let err = "write_buffer_size=lots"
            .parse::<Options>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("write_buffer_size"), "{err}");
        let err = "max_write_buffer_number=1"
            .parse::<Options>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_write_buffer_number"), "{err}");
        let err = "batch_lookup=zigzag"
            .parse::<Options>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch_lookup"), "{err}");
        assert!("noequals".parse::<Options>().is_err());
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn table_options_parse_and_validate() {
        let o: Options = "compression=zstd;compression_level=7;separate_key_value_in_data_block=1;\
                          block_cache_size=8MB;max_open_files=-1;verify_checksums=false"
            .parse()
            .unwrap();
        assert_eq!(o.compression, CompressionType::Zstd);
        assert_eq!(o.compression_level, 7);
        assert!(o.separate_key_value_in_data_block);
        assert_eq!(o.block_cache_size, 8 << 20);
        assert_eq!(o.max_open_files, usize::MAX);
        assert!(!o.verify_checksums);
        let d = Options::default();
        assert_eq!(
            (d.compression, d.block_cache_size, d.max_open_files),
            (CompressionType::Lz4, 32 << 20, 1000)
        );
        for (s, name) in [
            ("compression=snappy", "compression"),
            ("compression=zstd;compression_level=99", "compression_level"),
            ("compression_level=x", "compression_level"),
            ("max_open_files=0", "max_open_files"),
            (
                "separate_key_value_in_data_block=maybe",
                "separate_key_value_in_data_block",
            ),
        ] {
            let err = s.parse::<Options>().unwrap_err().to_string();
            assert!(err.contains(name), "{s}: {err}");
        }
        let r = ReadOptions::default();
        assert!(r.fill_cache && r.verify_checksums);
    }

    #[test]
    fn memtable_specs_parse_and_bad_ones_name_the_option() {
        let o: Options = "memtable=vector".parse().unwrap();
        assert_eq!(o.memtable, MemTableKind::Vector);
        let o: Options = "memtable=sorted_hash".parse().unwrap();
        assert_eq!(
            o.memtable,
            MemTableKind::SortedHash {
                buckets: 1_000_000,
                vector_limit: 10_000
            }
        );
        let o: Options = "memtable=sorted_hash:400000".parse().unwrap();
        assert_eq!(
            o.memtable,
            MemTableKind::SortedHash {
                buckets: 400_000,
                vector_limit: 10_000
            }
        );
        let o: Options = "memtable=sorted_hash:1000:50;hash_pipeline_window=8"
            .parse()
            .unwrap();
        assert_eq!(o.memtable.to_string(), "sorted_hash:1000:50");
        assert_eq!(o.hash_pipeline_window, 8);
        assert_eq!(
            "memtable=skiplist".parse::<Options>().unwrap().memtable,
            MemTableKind::SkipList
        );
        for bad in [
            "memtable=hash",
            "memtable=sorted_hash:",
            "memtable=sorted_hash:0",
            "memtable=sorted_hash:10:x",
            "memtable=sorted_hash:10:10:10",
            "memtable=vector:5",
            "memtable=sorted_hash:1000000;write_buffer_size=4MB",
        ] {
            let err = bad.parse::<Options>().unwrap_err().to_string();
            assert!(err.contains("memtable"), "{bad}: {err}");
        }
        let err = "hash_pipeline_window=0"
            .parse::<Options>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("hash_pipeline_window"), "{err}");
    }

    #[test]
    fn size_overflow_is_rejected() {
        assert!(parse_size("x", "99999999999999999999").is_err());
        assert!(parse_size("x", "17179869184TB").is_err());
    }
}
