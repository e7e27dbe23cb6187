//! [`OptionsBuilder`]: `Options::builder().write_buffer_size(..)....build()`,
//! which validates like [`Options::validate`]. Struct literals with
//! `..Options::default()` keep working; the builder is another way in.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::memtable::{BatchLookup, MemTableKind};
use crate::options::{Options, WalRecoveryMode};
use crate::sst::CompressionType;

/// Builds [`Options`] from the defaults; [`build`](OptionsBuilder::build)
/// checks them. Each setter is named and documented like the field it sets.
///
/// ```
/// use batchkv::{CompressionType, MemTableKind, Options};
/// let opts = Options::builder()
///     .write_buffer_size(8 << 20)
///     .memtable(MemTableKind::Vector)
///     .compression(CompressionType::None)
///     .build()?;
/// assert_eq!(opts.write_buffer_size, 8 << 20);
/// assert!(Options::builder().max_write_buffer_number(1).build().is_err());
/// # Ok::<(), batchkv::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "call build() to get the Options"]
pub struct OptionsBuilder {
    opts: Options,
    /// The first error of an [`option`](OptionsBuilder::option) call,
    /// returned by `build` (so a chain needs no `?` per step).
    error: Option<Error>,
}

impl Options {
    /// A builder starting from `Options::default()`.
    pub fn builder() -> OptionsBuilder {
        OptionsBuilder {
            opts: Options::default(),
            error: None,
        }
    }
}

/// One setter per field: `name(value)` sets `Options::name`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        impl OptionsBuilder {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> OptionsBuilder {
                    self.opts.$name = value;
                    self
                }
            )*
        }
    };
}

setters! {
    /// [`Options::create_if_missing`].
    create_if_missing: bool;
    /// [`Options::error_if_exists`].
    error_if_exists: bool;
    /// [`Options::write_buffer_size`].
    write_buffer_size: usize;
    /// [`Options::max_write_buffer_number`].
    max_write_buffer_number: usize;
    /// [`Options::wal_recovery_mode`].
    wal_recovery_mode: WalRecoveryMode;
    /// [`Options::paranoid_memory_checks`].
    paranoid_memory_checks: bool;
    /// [`Options::memtable_huge_pages`].
    memtable_huge_pages: bool;
    /// [`Options::batch_lookup`].
    batch_lookup: BatchLookup;
    /// [`Options::memtable`].
    memtable: MemTableKind;
    /// [`Options::hash_pipeline_window`].
    hash_pipeline_window: usize;
    /// [`Options::block_size`].
    block_size: usize;
    /// [`Options::block_restart_interval`].
    block_restart_interval: usize;
    /// [`Options::bloom_bits_per_key`].
    bloom_bits_per_key: usize;
    /// [`Options::max_background_jobs`].
    max_background_jobs: usize;
    /// [`Options::level0_file_num_compaction_trigger`].
    level0_file_num_compaction_trigger: usize;
    /// [`Options::level0_slowdown_writes_trigger`].
    level0_slowdown_writes_trigger: usize;
    /// [`Options::level0_stop_writes_trigger`].
    level0_stop_writes_trigger: usize;
    /// [`Options::max_bytes_for_level_base`].
    max_bytes_for_level_base: u64;
    /// [`Options::max_bytes_for_level_multiplier`].
    max_bytes_for_level_multiplier: f64;
    /// [`Options::target_file_size_base`].
    target_file_size_base: u64;
    /// [`Options::disable_auto_compactions`].
    disable_auto_compactions: bool;
    /// [`Options::compression`].
    compression: CompressionType;
    /// [`Options::compression_level`].
    compression_level: i32;
    /// [`Options::separate_key_value_in_data_block`].
    separate_key_value_in_data_block: bool;
    /// [`Options::block_cache_size`].
    block_cache_size: usize;
    /// [`Options::max_open_files`].
    max_open_files: usize;
    /// [`Options::verify_checksums`].
    verify_checksums: bool;
    /// [`Options::statistics`].
    statistics: bool;
}

impl OptionsBuilder {
    /// [`Options::compaction_filter`].
    pub fn compaction_filter(mut self, filter: Arc<dyn crate::CompactionFilter>) -> OptionsBuilder {
        self.opts.compaction_filter = Some(filter);
        self
    }

    /// [`Options::merge_operator`].
    pub fn merge_operator(mut self, op: Arc<dyn crate::MergeOperator>) -> OptionsBuilder {
        self.opts.merge_operator = Some(op);
        self
    }

    /// Sets an option by its option-string name and value
    /// ([`Options::set`]); a bad name or value is returned by `build`.
    pub fn option(mut self, name: &str, value: &str) -> OptionsBuilder {
        if self.error.is_none() {
            if let Err(e) = self.opts.set(name, value) {
                self.error = Some(e);
            }
        }
        self
    }

    /// The options, if [`Options::validate`] accepts them (and no
    /// [`option`](OptionsBuilder::option) call failed); the error names
    /// the option.
    pub fn build(self) -> Result<Options> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.opts.validate()?;
        Ok(self.opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MergeOperator as _;

    #[test]
    fn build_sets_fields_and_rejects_what_validate_rejects() {
        let o = Options::builder()
            .write_buffer_size(1 << 20)
            .max_write_buffer_number(3)
            .memtable(MemTableKind::Vector)
            .block_size(1024)
            .statistics(false)
            .option("compression", "none")
            .merge_operator(Arc::new(crate::merge_operators::U64AddOperator))
            .build()
            .unwrap();
        assert_eq!(
            o.merge_operator.as_ref().map(|m| m.name().to_string()),
            Some(crate::merge_operators::U64AddOperator.name().to_string())
        );
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.max_write_buffer_number, 3);
        assert_eq!(o.memtable, MemTableKind::Vector);
        assert_eq!(o.block_size, 1024);
        assert!(!o.statistics);
        assert_eq!(o.compression, CompressionType::None);
        // The same as the struct literal.
        let literal = Options {
            write_buffer_size: 1 << 20,
            max_write_buffer_number: 3,
            memtable: MemTableKind::Vector,
            block_size: 1024,
            statistics: false,
            compression: CompressionType::None,
            ..Options::default()
        };
        assert_eq!(o.to_option_string(), literal.to_option_string());

        for (b, name) in [
            (
                Options::builder().write_buffer_size(100),
                "write_buffer_size",
            ),
            (Options::builder().block_size(1), "block_size"),
            (Options::builder().option("no_such", "1"), "no_such"),
            (Options::builder().option("block_size", "big"), "block_size"),
        ] {
            match b.build() {
                Err(Error::InvalidArgument(m)) => assert!(m.contains(name), "{m}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
