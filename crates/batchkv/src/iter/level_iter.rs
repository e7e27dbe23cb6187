//! [`LevelIterator`]: the files of one level ≥ 1 (sorted, non-overlapping)
//! read as one sequence, opening each table only when the iterator reaches it.

use std::cmp::Ordering;
use std::sync::Arc;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::key::compare_internal_keys;
use crate::version::FileMetaData;

/// Opens the iterator of one table.
pub(crate) type OpenTable =
    Arc<dyn Fn(&FileMetaData) -> Result<Box<dyn InternalIterator>> + Send + Sync>;

/// Concatenation of a level's files.
///
/// Invariant: `files` are ordered by key and do not overlap; `current`, when
/// set, is the iterator of `files[index]`.
pub(crate) struct LevelIterator {
    files: Vec<Arc<FileMetaData>>,
    open: OpenTable,
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
}

impl LevelIterator {
    pub fn new(files: Vec<Arc<FileMetaData>>, open: OpenTable) -> LevelIterator {
        LevelIterator {
            files,
            open,
            index: 0,
            current: None,
            error: None,
        }
    }

    /// Positions `current` on file `index` (or clears it past either end).
    fn open_file(&mut self, index: usize) -> bool {
        self.current = None;
        if index >= self.files.len() || self.error.is_some() {
            return false;
        }
        self.index = index;
        match (self.open)(&self.files[index]) {
            Ok(it) => {
                self.current = Some(it);
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    /// Stops on an error of the current file's iterator.
    fn take_error(&mut self) -> bool {
        if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
            self.error = Some(e);
            self.current = None;
            return true;
        }
        false
    }

    fn skip_forward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            if self.take_error() || !self.open_file(self.index + 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            if self.take_error() || self.index == 0 || !self.open_file(self.index - 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "callers check `valid()` first (trait contract), which implies `current`"
    )]
    fn current(&self) -> &dyn InternalIterator {
        self.current
            .as_deref()
            .expect("LevelIterator used while invalid")
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        if self.open_file(0) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        if !self.files.is_empty() && self.open_file(self.files.len() - 1) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
            self.skip_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal_keys(&f.largest, target) == Ordering::Less);
        if self.open_file(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal_keys(&f.smallest, target) != Ordering::Greater);
        if i > 0 && self.open_file(i - 1) {
            if let Some(c) = self.current.as_mut() {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        } else {
            self.current = None;
        }
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn value(&self) -> &[u8] {
        self.current().value()
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => self.current.as_ref().map_or(Ok(()), |c| c.status()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::vec_iter::VecIterator;
    use crate::key::{append_internal_key, ValueType};

    /// Three files of keys k00..k29 (ten each), one empty-looking gap.
    fn level() -> (Vec<Arc<FileMetaData>>, OpenTable, Vec<Vec<u8>>) {
        let mut all = Vec::new();
        let mut files = Vec::new();
        let mut contents = Vec::new();
        for f in 0..3u64 {
            let mut entries = Vec::new();
            for i in 0..10 {
                let mut k = Vec::new();
                append_internal_key(
                    &mut k,
                    format!("k{:02}", f * 10 + i).as_bytes(),
                    5,
                    ValueType::Value,
                );
                entries.push((k.clone(), k.clone()));
                all.push(k);
            }
            files.push(Arc::new(FileMetaData {
                number: f,
                file_size: 1,
                smallest: entries[0].0.clone(),
                largest: entries[9].0.clone(),
                num_entries: 10,
                global_seqno: 0,
                pinned: Default::default(),
            }));
            contents.push(entries);
        }
        let contents = Arc::new(contents);
        let open: OpenTable = Arc::new(move |f: &FileMetaData| {
            Ok(
                Box::new(VecIterator::new(contents[f.number as usize].clone()))
                    as Box<dyn InternalIterator>,
            )
        });
        (files, open, all)
    }

    #[test]
    fn scans_both_ways_across_files() {
        let (files, open, all) = level();
        let mut it = LevelIterator::new(files, open);
        it.seek_to_first();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push(it.key().to_vec());
            it.next();
        }
        assert_eq!(fwd, all);
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push(it.key().to_vec());
            it.prev();
        }
        back.reverse();
        assert_eq!(back, all);
    }

    #[test]
    fn seeks_land_in_the_right_file() {
        let (files, open, all) = level();
        let mut it = LevelIterator::new(files, open);
        for (i, k) in all.iter().enumerate() {
            it.seek(k);
            assert_eq!(it.key(), &k[..]);
            it.seek_for_prev(k);
            assert_eq!(it.key(), &k[..]);
            if i > 0 {
                it.prev();
                assert_eq!(it.key(), &all[i - 1][..]);
            }
        }
        let mut past = Vec::new();
        append_internal_key(&mut past, b"z", 1, ValueType::Value);
        it.seek(&past);
        assert!(!it.valid());
        it.seek_for_prev(&past);
        assert_eq!(it.key(), &all[29][..]);
        let mut before = Vec::new();
        append_internal_key(&mut before, b"a", 1, ValueType::Value);
        it.seek_for_prev(&before);
        assert!(!it.valid());
        it.seek(&before);
        assert_eq!(it.key(), &all[0][..]);
    }

    #[test]
    fn an_open_failure_is_reported() {
        let (files, _, _) = level();
        let open: OpenTable = Arc::new(|f: &FileMetaData| {
            Err(Error::corruption(format!("{}.sst", f.number), 0, "bad"))
        });
        let mut it = LevelIterator::new(files, open);
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
    }
}
