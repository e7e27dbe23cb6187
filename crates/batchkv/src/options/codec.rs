//! How each option's value is read from and written to its option-string
//! form (`name=value`, the syntax of [`Options::set`](super::Options::set),
//! of option strings and of the `OPTIONS` file). The option list names one
//! codec per option; printing then parsing a value gives it back.

use std::sync::Arc;

use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::memtable::{BatchLookup, MemTableKind};
use crate::options::WalRecoveryMode;
use crate::sst::CompressionType;

/// Reads and writes values of type `T` in option strings.
pub(crate) trait Codec<T> {
    /// Parses `value`; the error names option `name` (as the caller spelled
    /// it, alias included).
    fn parse(name: &str, value: &str) -> Result<T>;
    /// The form `parse` reads back.
    fn print(value: &T) -> String;
}

/// Booleans: `true`/`1`/`on`/`yes` and `false`/`0`/`off`/`no`; printed
/// `true`/`false`.
pub(crate) struct Flag;

/// Counts and byte sizes: digits with an optional K/KB/M/MB/G/GB/T/TB
/// suffix (binary multiples, case-insensitive); printed as plain digits.
pub(crate) struct Size;

/// [`Size`], where `-1` means no limit (`usize::MAX`, printed `-1`):
/// RocksDB's `max_open_files=-1`.
pub(crate) struct SizeOrUnlimited;

/// Plain numbers (`i32` integers, `f64` reals) in Rust's syntax.
pub(crate) struct Number;

/// Enum-like values with a name of their own (their `FromStr`, whose
/// errors name the option).
pub(crate) struct Named;

impl Codec<bool> for Flag {
    fn parse(name: &str, value: &str) -> Result<bool> {
        match value {
            "true" | "1" | "on" | "yes" => Ok(true),
            "false" | "0" | "off" | "no" => Ok(false),
            _ => Err(Error::InvalidArgument(format!(
                "{name}: expected a boolean, got {value:?}"
            ))),
        }
    }
    fn print(value: &bool) -> String {
        value.to_string()
    }
}

impl Codec<usize> for Size {
    fn parse(name: &str, value: &str) -> Result<usize> {
        parse_size(name, value)
    }
    fn print(value: &usize) -> String {
        value.to_string()
    }
}

impl Codec<u64> for Size {
    fn parse(name: &str, value: &str) -> Result<u64> {
        Ok(parse_size(name, value)? as u64)
    }
    fn print(value: &u64) -> String {
        value.to_string()
    }
}

impl Codec<usize> for SizeOrUnlimited {
    fn parse(name: &str, value: &str) -> Result<usize> {
        match value {
            "-1" => Ok(usize::MAX),
            _ => parse_size(name, value),
        }
    }
    fn print(value: &usize) -> String {
        match *value {
            usize::MAX => "-1".to_string(),
            n => n.to_string(),
        }
    }
}

impl Codec<i32> for Number {
    fn parse(name: &str, value: &str) -> Result<i32> {
        value.parse().map_err(|_| {
            Error::InvalidArgument(format!("{name}: expected an integer, got {value:?}"))
        })
    }
    fn print(value: &i32) -> String {
        value.to_string()
    }
}

impl Codec<f64> for Number {
    fn parse(name: &str, value: &str) -> Result<f64> {
        value.parse().map_err(|_| {
            Error::InvalidArgument(format!("{name}: expected a number, got {value:?}"))
        })
    }
    fn print(value: &f64) -> String {
        value.to_string()
    }
}

/// [`Named`] for types whose `Display` is their option-string form.
macro_rules! named_by_display {
    ($($t:ty),*) => {$(
        impl Codec<$t> for Named {
            fn parse(_: &str, value: &str) -> Result<$t> {
                value.parse()
            }
            fn print(value: &$t) -> String {
                value.to_string()
            }
        }
    )*};
}
named_by_display!(BatchLookup, CompressionType, MemTableKind);

impl Codec<WalRecoveryMode> for Named {
    fn parse(_: &str, value: &str) -> Result<WalRecoveryMode> {
        value.parse()
    }
    /// The snake-case names older binaries parse (option strings are
    /// stored in the OPTIONS file and, per column family, the MANIFEST).
    fn print(value: &WalRecoveryMode) -> String {
        match value {
            WalRecoveryMode::TolerateCorruptedTailRecords => "tolerate_corrupted_tail_records",
            WalRecoveryMode::AbsoluteConsistency => "absolute_consistency",
            WalRecoveryMode::PointInTime => "point_in_time",
            WalRecoveryMode::SkipAnyCorruptedRecords => "skip_any_corrupted_records",
        }
        .to_string()
    }
}

/// Options without a string form (objects set in code): how the `OPTIONS`
/// file's comment line describes one.
pub(crate) trait Describe {
    /// What the comment says, e.g. the operator's name.
    fn describe(&self) -> String;
}

impl Describe for Arc<dyn crate::CompactionFilter> {
    fn describe(&self) -> String {
        self.name().to_string()
    }
}

impl Describe for Arc<dyn crate::MergeOperator> {
    fn describe(&self) -> String {
        self.name().to_string()
    }
}

impl Describe for Cache {
    fn describe(&self) -> String {
        format!("shared, capacity {} bytes", self.capacity())
    }
}

/// Parses a count or byte size: digits with an optional K/KB/M/MB/G/GB/T/TB
/// suffix (binary multiples, case-insensitive).
pub(crate) fn parse_size(name: &str, value: &str) -> Result<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_overflow_is_rejected() {
        assert!(parse_size("x", "99999999999999999999").is_err());
        assert!(parse_size("x", "17179869184TB").is_err());
    }

    /// Each of `values`, printed by `C`, parses back to itself.
    fn round_trip<C: Codec<T>, T: PartialEq + std::fmt::Debug>(values: &[T]) {
        for v in values {
            assert_eq!(&C::parse("x", &C::print(v)).unwrap(), v);
        }
    }

    #[test]
    fn printed_values_parse_back() {
        round_trip::<SizeOrUnlimited, usize>(&[0, 1, 4096, usize::MAX]);
        assert_eq!(SizeOrUnlimited::print(&usize::MAX), "-1");
        round_trip::<Flag, bool>(&[true, false]);
        round_trip::<Number, f64>(&[1.0, 10.0, 2.5, 1e300]);
        round_trip::<Number, i32>(&[-5, 0, 22]);
        use BatchLookup::*;
        round_trip::<Named, BatchLookup>(&[PerKey, Finger, Bfs, Auto]);
        use WalRecoveryMode::*;
        round_trip::<Named, WalRecoveryMode>(&[
            TolerateCorruptedTailRecords,
            AbsoluteConsistency,
            PointInTime,
            SkipAnyCorruptedRecords,
        ]);
    }
}
