//! Names of the files in a database directory:
//! `NNNNNN.log` (WAL), `NNNNNN.sst` (table), `MANIFEST-NNNNNN`, `CURRENT`,
//! `LOCK`, `OPTIONS`, and `NNNNNN.dbtmp` (a CURRENT or OPTIONS being written).

use std::path::{Path, PathBuf};

/// Names the live MANIFEST.
pub(crate) const CURRENT: &str = "CURRENT";
/// Held with an exclusive lock while the database is open.
pub(crate) const LOCK: &str = "LOCK";
/// The options of the last open, one `name=value` per line.
pub(crate) const OPTIONS: &str = "OPTIONS";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Wal,
    Table,
    Manifest,
    Temp,
}

pub(crate) fn name(kind: FileKind, number: u64) -> String {
    match kind {
        FileKind::Wal => format!("{number:06}.log"),
        FileKind::Table => format!("{number:06}.sst"),
        FileKind::Manifest => format!("MANIFEST-{number:06}"),
        FileKind::Temp => format!("{number:06}.dbtmp"),
    }
}

pub(crate) fn path(dir: &Path, kind: FileKind, number: u64) -> PathBuf {
    dir.join(name(kind, number))
}

/// Recognizes a numbered file name; `None` for CURRENT, LOCK and strangers.
pub(crate) fn parse(name: &str) -> Option<(FileKind, u64)> {
    // Digits only: `u64::from_str` would also take a leading `+`.
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(|n| (FileKind::Manifest, n));
    }
    let (stem, ext) = name.split_once('.')?;
    let number = number(stem)?;
    let kind = match ext {
        "log" => FileKind::Wal,
        "sst" => FileKind::Table,
        "dbtmp" => FileKind::Temp,
        _ => return None,
    };
    Some((kind, number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in [
            FileKind::Wal,
            FileKind::Table,
            FileKind::Manifest,
            FileKind::Temp,
        ] {
            assert_eq!(parse(&name(kind, 42)), Some((kind, 42)));
        }
        assert_eq!(parse("CURRENT"), None);
        assert_eq!(parse("LOCK"), None);
        assert_eq!(parse("abc.log"), None);
    }

    /// Found by fuzzing: `u64::from_str` takes a leading `+`.
    #[test]
    fn fuzz_regression_numbers_are_digits_only() {
        assert_eq!(parse("MANIFEST-+1"), None);
        assert_eq!(parse("+7.log"), None);
        assert_eq!(parse("MANIFEST-"), None);
        assert_eq!(parse(".sst"), None);
    }
}
