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
