//! Every database option, declared once: name, scope, type, default,
//! documentation, option-string codec and, where it has one, its SST-layer
//! field. `options/define.rs` explains a row and what is generated from it;
//! cross-option checks are in [`Options::validate`].
//!
//! Adding an option is adding a row here (and, if it needs one, a check in
//! `validate`); its string form appears in option strings, the `OPTIONS`
//! file and each column family's MANIFEST record at once, so an existing
//! option is never renamed (give the new name as an alias instead).

use std::sync::Arc;

use super::define::define_options;
use super::WalRecoveryMode;
use crate::cache::Cache;
use crate::memtable::sorted_hash::pipeline::DEFAULT_WINDOW;
use crate::memtable::{BatchLookup, MemTableKind};
use crate::sst::CompressionType;
use crate::{CompactionFilter, MergeOperator};

define_options! {
    /// Database options. Construct with `Options::default()` and set fields,
    /// use [`Options::builder`], or parse an option string with
    /// [`str::parse`] (its syntax: the `FromStr` implementation below).
    pub struct Options {
        /// Create the database if the directory holds none (default true).
        db create_if_missing: bool = true, Flag;
        /// Fail to open if a database already exists (default false).
        db error_if_exists: bool = false, Flag;
        /// Bytes of memtable memory after which the memtable is frozen and
        /// flushed (default 64 MiB).
        family write_buffer_size: usize = 64 << 20, Size;
        /// Memtables (active + immutable) allowed before writers stall until a
        /// flush finishes (default 2, minimum 2).
        family max_write_buffer_number: usize = 2, Size;
        /// How damaged WALs are treated at recovery (default
        /// `tolerate-corrupted-tail`: a crash's torn tail is accepted, damage
        /// followed by intact records fails the open).
        db wal_recovery_mode: WalRecoveryMode = WalRecoveryMode::TolerateCorruptedTailRecords, Named;
        /// Verify ordering and per-entry checksums during memtable lookups.
        family paranoid_memory_checks: bool = false, Flag;
        /// Ask for transparent huge pages on memtable arena blocks (Linux).
        family memtable_huge_pages: bool = true, Flag;
        /// How memtables resolve batched lookups (default `auto`).
        db batch_lookup: BatchLookup = BatchLookup::Auto, Named;
        /// The memtable implementation (default `skiplist`).
        family memtable: MemTableKind = MemTableKind::SkipList, Named;
        /// Give the `skiplist` memtable a hash index from each key to its
        /// newest entry, so point lookups (`get`, and `multi_get` without
        /// insert hints) take about two cache misses instead of a
        /// descent's dozen or more (default false). It maps an
        /// eighth of `write_buffer_size` (7 keys per 64-byte bucket, counted
        /// in the memtable's memory) and costs each insert a bucket update;
        /// keys of a bucket that overflowed are searched as without it.
        family memtable_point_index: bool = false, Flag;
        /// Lookups in flight in the sorted-hash memtable's pipelined
        /// `multi_get` (default 24).
        family hash_pipeline_window: usize = DEFAULT_WINDOW, Size;
        /// Target uncompressed size of an SST data block (default 4 KiB).
        family block_size: usize = 4096, Size => table.block_size;
        /// Keys between restart points in SST data blocks (default 16).
        family block_restart_interval: usize = 16, Size => table.restart_interval;
        /// Bloom filter bits per key in SST files; 0 disables filters (default 10).
        family bloom_bits_per_key | "bloom_bits": usize = 10, Size => table.bloom_bits_per_key;
        /// Background threads: one flushes, the rest (at least one) compact
        /// (default 2).
        db max_background_jobs: usize = 2, Size;
        /// L0 files that trigger an L0→L1 compaction (default 4).
        family level0_file_num_compaction_trigger: usize = 4, Size;
        /// L0 files at which each write is delayed by 1 ms (default 20).
        family level0_slowdown_writes_trigger: usize = 20, Size;
        /// L0 files at which writes wait for compaction (default 36).
        family level0_stop_writes_trigger: usize = 36, Size;
        /// Target size of L1 in bytes (default 256 MiB).
        family max_bytes_for_level_base: u64 = 256 << 20, Size;
        /// Each level below L1 is this many times larger (default 10).
        family max_bytes_for_level_multiplier: f64 = 10.0, Number;
        /// Compaction outputs are split at about this size (default 64 MiB).
        family target_file_size_base: u64 = 64 << 20, Size;
        /// Turn off background compactions (`compact_range` still works), and
        /// with them the L0 write stalls.
        family disable_auto_compactions: bool = false, Flag;
        /// Compression of SST data blocks (default LZ4; see the SST format doc).
        family compression | "compression_type": CompressionType = CompressionType::Lz4, Named
            => table.compression;
        /// ZSTD compression level (default 3; ignored by LZ4 and none).
        family compression_level: i32 = 3, Number => table.compression_level;
        /// Store keys and values of SST data blocks in separate sections, so
        /// seeks scan keys only (default false).
        family separate_key_value_in_data_block: bool = false, Flag => table.separate_key_value;
        /// Bytes of the database's own cache of decoded data blocks; 0
        /// disables it (default 32 MiB). Ignored when
        /// [`block_cache`](Options::block_cache) gives a shared cache.
        db block_cache_size | "cache_size": usize = 32 << 20, Size => table.block_cache_size;
        /// Most SST files kept open at once (default 1000; `-1` in an option
        /// string means no limit). With no limit, as with RocksDB's
        /// `max_open_files=-1`, each table's reader is pinned with the
        /// table's metadata on first use, and reads find it without the
        /// table cache's lock.
        db max_open_files: usize = 1000, SizeOrUnlimited => table.max_open_files;
        /// Verify SST data block checksums on reads (default true). Index,
        /// filter and meta blocks are always verified when a table is opened.
        family verify_checksums: bool = true, Flag => table.verify_checksums;
        /// Record latency histograms of `get`, `multi_get` and `write` for
        /// [`Db::statistics`](crate::Db::statistics) (default true: one clock
        /// read pair and three relaxed atomic operations per call; its measured
        /// cost: `docs/perf/history/2026-11-23-feature-costs.md`).
        db statistics: bool = true, Flag;
    }
    set in code {
        /// Offered each live value that compaction rewrites and no snapshot
        /// can see; may keep, remove or replace it (see [`CompactionFilter`](crate::CompactionFilter)).
        /// Not settable from an option string. Default none.
        family compaction_filter: Arc<dyn CompactionFilter>;
        /// Combines merge operands ([`Db::merge`](crate::Db::merge)) with the
        /// versions below them, on reads and in compaction (see
        /// [`MergeOperator`](crate::MergeOperator)). Not settable from an option
        /// string; its name is recorded in the `OPTIONS` file, and a reopen with
        /// another operator, or none, is refused. Default none: a
        /// read that meets a merge operand then fails with `InvalidArgument`.
        family merge_operator: Arc<dyn MergeOperator>;
        /// A block cache shared with other databases in this process
        /// (rust-rocksdb's `BlockBasedOptions::set_block_cache`): this
        /// database's data blocks are cached and charged there, and
        /// [`block_cache_size`](Options::block_cache_size) is ignored. Not
        /// settable from an option string. Default none: the database has
        /// a cache of its own of `block_cache_size` bytes.
        db block_cache: Cache;
    }
}
