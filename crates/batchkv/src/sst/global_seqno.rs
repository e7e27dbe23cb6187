//! [`GlobalSeqnoIter`]: the view of an ingested external table at its
//! global sequence number.
//!
//! An external table (written by [`crate::SstFileWriter`]) stores every
//! entry with sequence 0; the MANIFEST records the sequence number the
//! database assigned to the whole file at ingestion
//! ([`FileMetaData::global_seqno`](crate::version::FileMetaData), format in
//! `docs/format/sst.md` §9). Readers must see each entry *at* that sequence
//! so it shadows older data and is shadowed by later writes. Point reads
//! need no rewriting (a file with global seqno `g` is skipped when the read
//! sequence is below `g`, and otherwise every entry is visible: see
//! `FileMetaData::visible_at`); iterators, whose keys are compared with
//! other tables' keys by the merging iterator, DbIter and compaction, see the
//! keys through this adapter.
//!
//! # Invariants
//! 1. The inner table holds at most one entry per user key, each with
//!    sequence 0 (ingestion checks this). Replacing the sequence of every
//!    key by the same `g` then preserves the order of the keys, so the
//!    adapter moves exactly like the inner iterator; only comparisons with
//!    a caller's target differ (`k@g` sorts before `k@0`), which `seek` and
//!    `seek_for_prev` correct for.
//! 2. While valid, `key` is the inner key with its trailer replaced by
//!    `(g << 8 | type)`; an inner key that does not carry sequence 0 makes
//!    the iterator fail with `Corruption` instead of showing it.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, compare_internal_keys, parse_internal_key};
use crate::sst::{BlockReadOptions, Table};

/// Wraps `inner` so its keys carry sequence `global_seqno` (see the module
/// documentation). `file` names the table in errors.
pub(crate) struct GlobalSeqnoIter {
    inner: Box<dyn InternalIterator>,
    global_seqno: u64,
    file: String,
    /// The rewritten current key (invariant 2).
    key: Vec<u8>,
    err: Option<Error>,
}

/// The iterator readers and compaction use for a table: the table's own
/// iterator when `global_seqno` is 0, else the rewriting adapter.
pub(crate) fn table_iter(
    table: std::sync::Arc<Table>,
    ro: BlockReadOptions,
    global_seqno: u64,
    number: u64,
) -> Box<dyn InternalIterator> {
    let it = Box::new(table.iter_with(ro));
    if global_seqno == 0 {
        return it;
    }
    Box::new(GlobalSeqnoIter {
        inner: it,
        global_seqno,
        file: crate::filename::name(crate::filename::FileKind::Table, number),
        key: Vec::new(),
        err: None,
    })
}

impl GlobalSeqnoIter {
    /// Recomputes `key` after the inner iterator moved (invariant 2).
    fn sync_key(&mut self) {
        self.key.clear();
        if self.err.is_some() || !self.inner.valid() {
            return;
        }
        match parse_internal_key(self.inner.key()) {
            Some(p) if p.sequence == 0 => {
                append_internal_key(&mut self.key, p.user_key, self.global_seqno, p.value_type)
            }
            _ => {
                self.err = Some(Error::corruption(
                    &self.file,
                    0,
                    format!(
                        "ingested table holds key \"{}\" whose sequence is not 0",
                        self.inner.key().escape_ascii()
                    ),
                ));
            }
        }
    }
}

impl InternalIterator for GlobalSeqnoIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.inner.valid()
    }

    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.sync_key();
    }

    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.sync_key();
    }

    fn seek(&mut self, target: &[u8]) {
        // The inner key `k@0` is ≥ any target for user key `k`, but `k@g`
        // is below targets `k@s` with s < g: step past it (invariant 1).
        self.inner.seek(target);
        self.sync_key();
        while self.valid() && compare_internal_keys(&self.key, target) == Ordering::Less {
            self.inner.next();
            self.sync_key();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last key ≤ target is the first key ≥ target if equal, else
        // the one before it (or the last key when none is ≥ target).
        self.seek(target);
        if self.err.is_some() || self.inner.status().is_err() {
            return;
        }
        if !self.inner.valid() {
            self.seek_to_last();
        } else if compare_internal_keys(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.inner.next();
        self.sync_key();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        self.inner.prev();
        self.sync_key();
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::{scan_backward, scan_forward};
    use crate::key::{lookup_key, user_key, ValueType};
    use crate::sst::tests_support::{build_in_memory, open_mem};
    use crate::sst::TableOptions;

    fn table(entries: &[(Vec<u8>, Vec<u8>)]) -> std::sync::Arc<Table> {
        let opts = TableOptions::default();
        open_mem(build_in_memory(entries, &opts).0, &opts).unwrap()
    }

    fn ik(k: &str, seq: u64, t: ValueType) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k.as_bytes(), seq, t);
        v
    }

    fn wrapped(g: u64) -> GlobalSeqnoIter {
        let entries = vec![
            (ik("b", 0, ValueType::Value), b"vb".to_vec()),
            (ik("d", 0, ValueType::Deletion), Vec::new()),
            (ik("f", 0, ValueType::Value), b"vf".to_vec()),
        ];
        let table = table(&entries);
        GlobalSeqnoIter {
            inner: Box::new(table.iter_with(BlockReadOptions::default())),
            global_seqno: g,
            file: "t".into(),
            key: Vec::new(),
            err: None,
        }
    }

    #[test]
    fn keys_carry_the_global_seqno_both_ways() {
        let mut it = wrapped(42);
        let fwd = scan_forward(&mut it);
        it.status().unwrap();
        assert_eq!(
            fwd.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            vec![
                ik("b", 42, ValueType::Value),
                ik("d", 42, ValueType::Deletion),
                ik("f", 42, ValueType::Value)
            ]
        );
        assert_eq!(scan_backward(&mut it), fwd);
    }

    #[test]
    fn seek_and_seek_for_prev_compare_at_the_global_seqno() {
        let mut it = wrapped(42);
        // A read at sequence 41 must not land on d@42 but after it.
        it.seek(&lookup_key(b"d", 41));
        assert_eq!(user_key(it.key()), b"f");
        // At sequence 42 or later, d@42 is the answer.
        it.seek(&lookup_key(b"d", 42));
        assert_eq!(it.key(), &ik("d", 42, ValueType::Deletion)[..]);
        it.seek(&lookup_key(b"d", 100));
        assert_eq!(user_key(it.key()), b"d");
        // Past the end.
        it.seek(&lookup_key(b"g", 100));
        assert!(!it.valid());
        it.status().unwrap();

        // seek_for_prev(d@41 lookup): d@42 sorts before it, so it is the answer.
        it.seek_for_prev(&lookup_key(b"d", 41));
        assert_eq!(user_key(it.key()), b"d");
        // seek_for_prev(d@43 lookup): d@42 sorts after it: the answer is b.
        it.seek_for_prev(&lookup_key(b"d", 43));
        assert_eq!(user_key(it.key()), b"b");
        it.seek_for_prev(&lookup_key(b"z", 1));
        assert_eq!(user_key(it.key()), b"f");
        it.seek_for_prev(&lookup_key(b"a", 1));
        assert!(!it.valid());
        it.status().unwrap();
    }

    #[test]
    fn a_key_with_a_real_sequence_is_corruption() {
        let entries = vec![(ik("b", 7, ValueType::Value), b"v".to_vec())];
        let table = table(&entries);
        let mut it = GlobalSeqnoIter {
            inner: Box::new(table.iter_with(BlockReadOptions::default())),
            global_seqno: 9,
            file: "000009.sst".into(),
            key: Vec::new(),
            err: None,
        };
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
    }
}
