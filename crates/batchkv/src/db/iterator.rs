//! The public iterator: a [`DbIter`] over the merge of every memtable and
//! table of one super version, at one sequence number.

use std::sync::Arc;

use super::obsolete::PinnedSuperVersion;
use super::{Db, DbCore, SuperVersion};
use crate::error::Result;
use crate::iter::level_iter::OpenTable;
use crate::iter::{DbIter, InternalIterator, LevelIterator, MergingIterator};
use crate::options::ReadOptions;
use crate::range_del::{FragmentedTombstones, RangeTombstone};
use crate::sst::global_seqno::table_iter;
use crate::version::FileMetaData;

/// An iterator over the user keys visible at one snapshot, in ascending
/// key order, within optional bounds.
///
/// It owns what it reads (memtables and tables), so it can be stored and
/// moved across threads independently of the `Db` handle; writes made after
/// it was created are not visible to it.
pub struct DbIterator {
    inner: DbIter,
    /// Keeps the memtables and the version (and so the files) alive;
    /// dropped after `inner` (field order), sweeping the files it alone
    /// kept.
    _sv: PinnedSuperVersion,
}

impl Db {
    /// An iterator over the state `opts` describes (snapshot, bounds).
    /// It starts unpositioned: call a `seek*` method first.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.iter_in(&self.core().default_cf, opts)
    }

    /// An iterator over column family `cf` (see [`Db::iter`]).
    pub fn iter_cf(&self, opts: &ReadOptions, cf: &super::ColumnFamily) -> Result<DbIterator> {
        self.iter_in(cf.live()?, opts)
    }

    pub(super) fn iter_in(&self, cf: &super::CfShared, opts: &ReadOptions) -> Result<DbIterator> {
        let core = self.core();
        core.check_open()?;
        let seq = core.read_sequence(opts)?;
        let sv = cf.sv.load_full();
        let ro = super::read::block_read_options(opts);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Arc::clone(&sv.mem).iter());
        for imm in &sv.imms {
            children.push(Arc::clone(imm).iter());
        }
        for f in &sv.version.levels[0] {
            children.push(table_iter(
                core.tables.get(f.number)?,
                ro,
                f.global_seqno,
                f.number,
            ));
        }
        // Levels ≥ 1 do not overlap: one lazily opening iterator per level.
        for files in sv.version.levels.iter().skip(1).filter(|f| !f.is_empty()) {
            let tables = Arc::clone(&core.tables);
            let open: OpenTable = Arc::new(move |f: &FileMetaData| {
                Ok(table_iter(
                    tables.get(f.number)?,
                    ro,
                    f.global_seqno,
                    f.number,
                ))
            });
            children.push(Box::new(LevelIterator::new(files.clone(), open)));
        }
        // A sole child is the active memtable's iterator (nothing else to
        // read: no immutable memtable, no table), used as it is: merging
        // one child costs a heap check and two virtual calls per entry and
        // per key read, and adds nothing (a memtable iterator has no
        // errors for the merge to keep sticky).
        let merged: Box<dyn InternalIterator> = match children.len() {
            1 => children.remove(0),
            _ => Box::new(MergingIterator::new(children)),
        };
        let range_dels = range_dels_for_iterator(core, &sv, seq)?;
        Ok(DbIterator {
            inner: DbIter::new(
                merged,
                seq,
                opts.lower_bound.clone(),
                opts.upper_bound.clone(),
            )
            .with_range_dels(range_dels)
            .with_merge_operator(sv.opts.merge_operator.clone()),
            _sv: PinnedSuperVersion::new(sv, &self.handle.core),
        })
    }
}

/// Every range tombstone an iterator at `seq` over `sv` can see,
/// fragmented; `None` if there is none (then iteration costs nothing more).
fn range_dels_for_iterator(
    core: &DbCore,
    sv: &SuperVersion,
    seq: crate::key::SequenceNumber,
) -> Result<Option<Arc<FragmentedTombstones>>> {
    let mut ts: Vec<RangeTombstone> = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if let Some(d) = mem.range_dels().filter(|d| d.len() > 0) {
            ts.extend(d.tombstones().into_iter().filter(|t| t.seq <= seq));
        }
    }
    let in_tables = match sv.table_range_dels.get() {
        Some(t) => Arc::clone(t),
        None => {
            let mut all = Vec::new();
            for f in sv.version.levels.iter().flatten() {
                if let Some(rd) = core.tables.get(f.number)?.range_dels() {
                    all.extend(rd.tombstones.iter().cloned());
                }
            }
            Arc::clone(sv.table_range_dels.get_or_init(|| Arc::new(all)))
        }
    };
    ts.extend(in_tables.iter().filter(|t| t.seq <= seq).cloned());
    Ok((!ts.is_empty()).then(|| Arc::new(FragmentedTombstones::new(&ts))))
}

impl DbIterator {
    /// True if positioned at a key.
    pub fn valid(&self) -> bool {
        self.inner.valid()
    }
    /// Positions at the first key (≥ the lower bound).
    pub fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
    }
    /// Positions at the last key (< the upper bound).
    pub fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }
    /// Positions at the first key ≥ `key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.inner.seek(key.as_ref());
    }
    /// [`DbIterator::seek`] for a key near the last `seek_near`'s, either
    /// side: a cursor re-seeked within a small key range. In the skip-list
    /// memtable the search starts from the last one's path and costs
    /// O(log distance) instead of a descent from the top; elsewhere, and
    /// for the first, it is `seek`. Same result as `seek`; a far key costs
    /// a little more than `seek` would.
    pub fn seek_near(&mut self, key: impl AsRef<[u8]>) {
        self.inner.seek_near(key.as_ref());
    }
    /// Positions at the last key ≤ `key`.
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        self.inner.seek_for_prev(key.as_ref());
    }
    /// Moves to the next key; does nothing unless `valid()`.
    pub fn next(&mut self) {
        if self.inner.valid() {
            self.inner.next();
        }
    }
    /// Moves to the previous key; does nothing unless `valid()`.
    pub fn prev(&mut self) {
        if self.inner.valid() {
            self.inner.prev();
        }
    }
    /// The current key; empty unless `valid()` (no call order panics).
    pub fn key(&self) -> &[u8] {
        if self.inner.valid() {
            self.inner.key()
        } else {
            &[]
        }
    }
    /// The current value; empty unless `valid()`.
    pub fn value(&self) -> &[u8] {
        if self.inner.valid() {
            self.inner.value()
        } else {
            &[]
        }
    }
    /// The first error met (I/O or corruption); an iterator that stopped
    /// early because of an error is invalid and reports it here.
    pub fn status(&self) -> Result<()> {
        self.inner.status()
    }
}
