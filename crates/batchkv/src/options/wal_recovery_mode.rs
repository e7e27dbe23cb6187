//! [`WalRecoveryMode`]: what recovery does with a damaged WAL.

use std::str::FromStr;

use crate::error::{Error, Result};

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
