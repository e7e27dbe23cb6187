//! [`Version`]: an immutable set of live SST files per level.
//!
//! Readers and iterators hold the `Arc<Version>` they started with; a flush
//! or compaction builds a new one from the old plus a `VersionEdit`.
//!
//! Invariants:
//! 1. Level 0 is ordered newest file first (descending file number); its
//!    files may overlap.
//! 2. Levels ≥ 1 are ordered by smallest key and do not overlap.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::edit::{FileMetaData, VersionEdit};
use crate::error::{Error, Result};
use crate::key::{compare_internal_keys, user_key};

/// Number of levels (L0 … L6).
pub(crate) const NUM_LEVELS: usize = 7;

/// The live files of each level at one moment.
#[derive(Debug, Default, Clone)]
pub(crate) struct Version {
    pub levels: [Vec<Arc<FileMetaData>>; NUM_LEVELS],
}

impl Version {
    /// Builds the version that results from applying `edit` to `self`.
    /// `manifest` names the file the edit came from, for errors.
    pub fn apply(&self, edit: &VersionEdit, manifest: &str) -> Result<Version> {
        let deleted: BTreeSet<(u32, u64)> = edit.deleted_files.iter().copied().collect();
        let mut next = Version::default();
        for (level, files) in self.levels.iter().enumerate() {
            next.levels[level] = files
                .iter()
                .filter(|f| !deleted.contains(&(level as u32, f.number)))
                .cloned()
                .collect();
        }
        for (level, meta) in &edit.new_files {
            let level = *level as usize;
            if level >= NUM_LEVELS {
                return Err(Error::corruption(
                    manifest,
                    0,
                    format!(
                        "file {} placed at level {level}, beyond the last level",
                        meta.number
                    ),
                ));
            }
            next.levels[level].push(Arc::new(meta.clone()));
        }
        next.levels[0].sort_by_key(|f| std::cmp::Reverse(f.number));
        for files in next.levels.iter_mut().skip(1) {
            files.sort_by(|a, b| compare_internal_keys(&a.smallest, &b.smallest));
        }
        Ok(next)
    }

    /// Checks invariants 1 and 2 and that every file's range is ordered
    /// and no file number appears twice; `Err` describes the first
    /// violation. Run after every install when the `invariants` feature is
    /// on (tests turn it on).
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut seen = BTreeSet::new();
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if !seen.insert(f.number) {
                    return Err(format!("file {} appears twice", f.number));
                }
                if compare_internal_keys(&f.smallest, &f.largest).is_gt() {
                    return Err(format!("L{level} file {}: smallest > largest", f.number));
                }
            }
            for w in files.windows(2) {
                let ordered = if level == 0 {
                    w[0].number > w[1].number
                } else {
                    user_key(&w[0].largest) < user_key(&w[1].smallest)
                };
                if !ordered {
                    return Err(format!(
                        "L{level}: files {} and {} are out of order or overlap",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        Ok(())
    }

    /// All file numbers this version references.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// Files of `level` whose user-key range may hold `key`, in the order a
    /// point lookup must consult them (newest first on L0).
    pub fn files_for_key<'a>(
        &'a self,
        level: usize,
        key: &'a [u8],
    ) -> impl Iterator<Item = &'a Arc<FileMetaData>> + 'a {
        self.levels[level]
            .iter()
            .filter(move |f| user_key(&f.smallest) <= key && key <= user_key(&f.largest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{append_internal_key, ValueType};

    fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMetaData> {
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        append_internal_key(&mut smallest, lo.as_bytes(), 9, ValueType::Value);
        append_internal_key(&mut largest, hi.as_bytes(), 1, ValueType::Value);
        Arc::new(FileMetaData {
            number,
            file_size: 1,
            smallest,
            largest,
            num_entries: 1,
            global_seqno: 0,
            pinned: Default::default(),
        })
    }

    #[test]
    fn check_invariants_finds_each_violation() {
        let mut v = Version::default();
        v.levels[0] = vec![file(9, "a", "z"), file(7, "b", "c")];
        v.levels[1] = vec![file(1, "a", "c"), file(2, "d", "f")];
        assert_eq!(v.check_invariants(), Ok(()));

        let mut bad = v.clone();
        bad.levels[1][1] = file(2, "c", "f"); // shares user key c
        assert!(bad.check_invariants().unwrap_err().contains("overlap"));
        let mut bad = v.clone();
        bad.levels[0].reverse(); // L0 must be newest first
        assert!(bad.check_invariants().is_err());
        let mut bad = v.clone();
        bad.levels[2] = vec![file(9, "x", "y")];
        assert!(bad.check_invariants().unwrap_err().contains("twice"));
        let mut bad = v;
        bad.levels[3] = vec![file(5, "q", "p")];
        assert!(bad
            .check_invariants()
            .unwrap_err()
            .contains("smallest > largest"));
    }
}
