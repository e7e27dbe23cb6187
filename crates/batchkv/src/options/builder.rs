//! [`OptionsBuilder`]: `Options::builder().write_buffer_size(..)....build()`,
//! which validates like [`Options::validate`]. Struct literals with
//! `..Options::default()` keep working; the builder is another way in.

use crate::error::{Error, Result};
use crate::options::Options;

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
    /// What `build` returns; the generated setters write its fields.
    pub(super) opts: Options,
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

// The setters, one per option, are generated from the option list
// (`options/list.rs`).

impl OptionsBuilder {
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
    use std::sync::Arc;

    use super::*;
    use crate::memtable::MemTableKind;
    use crate::sst::CompressionType;
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
