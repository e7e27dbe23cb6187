//! The point-lookup core: the rules every point read follows, written once.
//! `get` (`read.rs`) runs them for one key, `multi_get` (`multi_get.rs`)
//! for a sorted batch of any size, stage by stage; merge operands are
//! collected by the same walk (`merge_read.rs` walks one stage's older
//! versions). Transactions' conflict check (`transaction.rs`) reads the
//! stages through the same [`TableStage`] and [`Tombstones`].
//!
//! A lookup of `key` at sequence `seq` visits the **stages** newest →
//! oldest: the active memtable, the immutable memtables (newest first),
//! the L0 files (newest first), then the file of each deeper level whose
//! range holds the key. In each stage:
//! 1. **Visibility.** A stage shows the versions of the key with sequence
//!    ≤ `seq`, newest first. An ingested table whose global sequence
//!    number is above `seq` shows nothing; its entries, stored with
//!    sequence 0, count as at that number ([`TableStage`]).
//! 2. **Cover.** Before a stage's versions are judged, its range tombstones
//!    covering `key` at `seq` raise `covered`, the sequence number of the
//!    newest covering tombstone seen so far ([`KeyLookup::cover`]).
//! 3. **Judge**, newest version first ([`KeyLookup::judge`]): a version
//!    older than `covered` is hidden and ends the lookup as a deletion
//!    would; a value or a deletion ends it; a merge operand is kept and the
//!    lookup goes on to the stage's older versions, then to the next
//!    stages (so one walk collects every operand).
//! 4. **End of a stage** ([`KeyLookup::after_stage`]). A memtable stage
//!    that leaves `covered > 0` with the key unresolved ends the lookup:
//!    every later stage holds only older versions (memtables are newer than
//!    every table; ingestion flushes the memtables an ingested file
//!    overlaps). Past the last stage the versions have run out.
//! 5. **Merge.** A lookup that kept operands ends by merging them onto the
//!    value that ended it, or onto none (a deletion, a hidden version, the
//!    end of the versions) ([`KeyLookup::settle`]).

use std::sync::Arc;

use super::table_cache::TableRef;
use super::{DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::key::{SequenceNumber, ValueType};
use crate::memtable::{EntryRef, MemTable};
use crate::merge::full_merge_newest_first;
use crate::range_del::{FragmentedTombstones, TableRangeDels};
use crate::version::FileMetaData;

/// One key's lookup, carried from stage to stage (module docs).
#[derive(Debug, Default)]
pub(super) struct KeyLookup {
    /// The sequence number of the newest range tombstone covering the key
    /// seen so far (0: none; real sequence numbers start at 1).
    covered: SequenceNumber,
    /// The merge operands met so far, newest first.
    operands: Vec<Vec<u8>>,
}

/// What judging a version does to a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step<'v> {
    /// Ends the lookup: this value is the answer.
    Value(&'v [u8]),
    /// Ends the lookup: the key is absent.
    Absent,
    /// Ends the lookup: the kept operands merged onto this base (`None`:
    /// no value below them) are the answer.
    Merge(Option<&'v [u8]>),
    /// The version was a merge operand, now kept: older versions decide.
    Older,
}

/// The answer a lookup ended with.
#[derive(Debug)]
pub(super) enum Answer<'a> {
    Absent,
    /// A value borrowed from a memtable of the read's super version.
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl<'a> Answer<'a> {
    /// The value, if the key is present.
    pub(super) fn as_deref(&self) -> Option<&[u8]> {
        match self {
            Answer::Absent => None,
            Answer::Borrowed(v) => Some(v),
            Answer::Owned(v) => Some(v),
        }
    }

    /// The answer without its borrow (a value borrowed from an iterator
    /// that is about to go).
    pub(super) fn into_owned(self) -> Answer<'static> {
        match self {
            Answer::Absent => Answer::Absent,
            Answer::Borrowed(v) => Answer::Owned(v.to_vec()),
            Answer::Owned(v) => Answer::Owned(v),
        }
    }
}

impl KeyLookup {
    /// Rule 2: a stage's newest tombstone covering the key (0: none).
    #[inline]
    pub(super) fn cover(&mut self, tombstone: SequenceNumber) {
        self.covered = self.covered.max(tombstone);
    }

    /// Rule 3 for `entry`, the newest version not yet judged, whose
    /// sequence number is `version` (for a table's entry, as
    /// [`TableStage::sequence`] counts it).
    #[inline(always)]
    pub(super) fn judge<'v>(&mut self, version: SequenceNumber, entry: EntryRef<'v>) -> Step<'v> {
        match entry {
            _ if version < self.covered => self.ran_out(),
            EntryRef::Value(v) if self.operands.is_empty() => Step::Value(v),
            EntryRef::Value(v) => Step::Merge(Some(v)),
            EntryRef::Deleted => self.ran_out(),
            EntryRef::Merge(v) => {
                self.operands.push(v.to_vec());
                Step::Older
            }
        }
    }

    /// Rule 3 for a stage's newest version found without its sequence
    /// number (a batched memtable lookup): the step it takes, or `None`
    /// when the stage must be asked again for this key
    /// ([`DbCore::lookup_in_memtable`]): under a covering tombstone the
    /// version's sequence number decides, and a merge operand needs the
    /// stage's older versions.
    #[inline]
    pub(super) fn decide<'v>(&mut self, entry: EntryRef<'v>) -> Option<Step<'v>> {
        if self.covered > 0 || matches!(entry, EntryRef::Merge(_)) {
            return None;
        }
        // With nothing covering the key no version is hidden, whatever
        // its sequence number.
        Some(self.judge(0, entry))
    }

    /// Rule 4, after a stage that did not end the lookup: the step that
    /// ends it there, if any.
    #[inline]
    pub(super) fn after_stage(&self, memtable: bool) -> Option<Step<'static>> {
        (memtable && self.covered > 0).then(|| self.ran_out())
    }

    /// The step when no version is left: absent, or the operands merged
    /// onto none.
    #[inline]
    pub(super) fn ran_out(&self) -> Step<'static> {
        if self.operands.is_empty() {
            Step::Absent
        } else {
            Step::Merge(None)
        }
    }

    /// True if merge operands were kept.
    pub(super) fn has_operands(&self) -> bool {
        !self.operands.is_empty()
    }

    /// The answer `step` gives (rule 5 merges with `sv`'s operator), or
    /// `None` for [`Step::Older`]. Errors: a missing operator
    /// (`InvalidArgument`) and a failed merge ([`crate::Error::MergeFailed`]).
    #[inline]
    pub(super) fn settle<'v>(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        step: Step<'v>,
    ) -> Result<Option<Answer<'v>>> {
        Ok(Some(match step {
            Step::Value(v) => Answer::Borrowed(v),
            Step::Absent => Answer::Absent,
            Step::Merge(base) => self.merge(sv, key, base)?,
            Step::Older => return Ok(None),
        }))
    }

    /// Rule 5: the kept operands merged onto `base`. Out of line: the
    /// value and deletion arms of [`KeyLookup::settle`] are every read's
    /// path, this one allocates anyway.
    #[inline(never)]
    fn merge(&self, sv: &SuperVersion, key: &[u8], base: Option<&[u8]>) -> Result<Answer<'static>> {
        Ok(Answer::Owned(full_merge_newest_first(
            sv.opts.merge_operator.as_ref(),
            key,
            base,
            &self.operands,
        )?))
    }

    /// The answer once every stage was visited.
    #[inline]
    pub(super) fn end(&self, sv: &SuperVersion, key: &[u8]) -> Result<Answer<'static>> {
        Ok(self
            .settle(sv, key, self.ran_out())?
            .unwrap_or(Answer::Absent))
    }
}

/// A stage's range tombstones, fetched once per stage.
pub(super) enum Tombstones<'s> {
    Memtable(Arc<FragmentedTombstones>),
    Table(&'s TableRangeDels),
}

impl Tombstones<'_> {
    /// The tombstones of memtable `mem`; `None` when it has none (one
    /// atomic load).
    #[inline]
    pub(super) fn of_memtable(mem: &dyn MemTable) -> Option<Tombstones<'static>> {
        mem.range_dels()?.fragmented().map(Tombstones::Memtable)
    }

    /// The sequence number of the newest tombstone covering `key` at
    /// `seq` (0: none).
    #[inline]
    pub(super) fn covering(&self, key: &[u8], seq: SequenceNumber) -> SequenceNumber {
        let fragments = match self {
            Tombstones::Memtable(f) => f,
            Tombstones::Table(t) => &t.fragmented,
        };
        fragments.max_covering(key, seq)
    }
}

impl SuperVersion {
    /// The memtable stages, newest first.
    pub(super) fn memtables(&self) -> impl Iterator<Item = &Arc<dyn MemTable>> {
        std::iter::once(&self.mem).chain(self.imms.iter())
    }
}

/// A table stage: an SST file as a read at one sequence number sees it
/// (rule 1), its reader borrowed from the file's metadata when pinned.
pub(super) struct TableStage<'f> {
    pub table: TableRef<'f>,
    /// The file number, for errors.
    pub number: u64,
    /// Nonzero for an ingested file: the sequence number its entries count at.
    global_seqno: SequenceNumber,
}

impl<'f> TableStage<'f> {
    /// `file` for a read at `seq`, opened through the table cache; `None`
    /// if it holds nothing the read sees (an ingested file newer than it).
    #[inline]
    pub(super) fn open(
        core: &DbCore,
        file: &'f FileMetaData,
        seq: SequenceNumber,
    ) -> Option<Result<TableStage<'f>>> {
        if !file.visible_at(seq) {
            return None;
        }
        Some(core.tables.reader(file).map(|table| TableStage {
            table,
            number: file.number,
            global_seqno: file.global_seqno,
        }))
    }

    /// The table's range tombstones, if it has any.
    #[inline]
    pub(super) fn tombstones(&self) -> Option<Tombstones<'_>> {
        self.table.range_dels().map(|t| Tombstones::Table(t))
    }

    /// The sequence number an entry stored with `stored` counts at.
    #[inline]
    pub(super) fn sequence(&self, stored: SequenceNumber) -> SequenceNumber {
        stored.max(self.global_seqno)
    }

    /// A stored point entry as a version; a range deletion among the point
    /// entries is `Corruption` (they live only in the range-deletion block).
    #[inline]
    pub(super) fn entry<'v>(
        &self,
        core: &DbCore,
        t: ValueType,
        v: &'v [u8],
    ) -> Result<EntryRef<'v>> {
        point_entry(t, v, || core.range_deletion_among_points(self.number))
    }
}

/// A stored point entry of type `t` as a version; a range deletion is
/// `range_del_error()` (range tombstones live beside the point entries,
/// never among them).
#[inline]
pub(super) fn point_entry<'v>(
    t: ValueType,
    v: &'v [u8],
    range_del_error: impl FnOnce() -> Error,
) -> Result<EntryRef<'v>> {
    match t {
        ValueType::Value => Ok(EntryRef::Value(v)),
        ValueType::Deletion => Ok(EntryRef::Deleted),
        ValueType::Merge => Ok(EntryRef::Merge(v)),
        ValueType::RangeDeletion => Err(range_del_error()),
    }
}

impl DbCore {
    /// `key`'s lookup through the memtable stage `mem` (rules 2–5):
    /// `Some(answer)` when it ends there.
    #[inline]
    pub(super) fn lookup_in_memtable<'a>(
        &self,
        sv: &SuperVersion,
        mem: &'a Arc<dyn MemTable>,
        l: &mut KeyLookup,
        key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<Answer<'a>>> {
        if let Some(t) = Tombstones::of_memtable(&**mem) {
            l.cover(t.covering(key, seq));
        }
        if let Some((s, e)) = mem.get_versioned(key, seq)? {
            if let EntryRef::Merge(_) = e {
                if let Some(a) = super::merge_read::walk_memtable(sv, mem, l, key, seq)? {
                    return Ok(Some(a));
                }
            } else {
                let step = l.judge(s, e);
                return l.settle(sv, key, step);
            }
        }
        match l.after_stage(true) {
            Some(step) => l.settle(sv, key, step),
            None => Ok(None),
        }
    }

    /// `key`'s lookup through the table stage `stage` (rules 2, 3 and 5):
    /// `Some(answer)` when it ends there.
    pub(super) fn lookup_in_table(
        &self,
        sv: &SuperVersion,
        stage: &TableStage,
        l: &mut KeyLookup,
        key: &[u8],
        seq: SequenceNumber,
        ro: crate::sst::BlockReadOptions,
    ) -> Result<Option<Answer<'static>>> {
        if let Some(t) = stage.tombstones() {
            l.cover(t.covering(key, seq));
        }
        let Some((s, t, v)) = stage.table.get_versioned(key, seq, ro)? else {
            return Ok(None);
        };
        let step = match stage.entry(self, t, &v)? {
            EntryRef::Merge(_) => {
                return super::merge_read::walk_table(self, sv, stage, l, key, seq, ro)
            }
            e => l.judge(stage.sequence(s), e),
        };
        if let Step::Value(_) = step {
            return Ok(Some(Answer::Owned(v)));
        }
        Ok(l.settle(sv, key, step)?.map(Answer::into_owned))
    }

    /// The value of `key` at `seq` in `sv`: every stage in turn until one
    /// ends the lookup (module docs).
    pub(super) fn lookup<'a>(
        &self,
        sv: &'a SuperVersion,
        key: &[u8],
        seq: SequenceNumber,
        ro: crate::sst::BlockReadOptions,
    ) -> Result<Answer<'a>> {
        let mut l = KeyLookup::default();
        for mem in sv.memtables() {
            if let Some(a) = self.lookup_in_memtable(sv, mem, &mut l, key, seq)? {
                return Ok(a);
            }
        }
        for level in 0..sv.version.levels.len() {
            for file in sv.version.files_for_key(level, key) {
                let Some(stage) = TableStage::open(self, file, seq) else {
                    continue;
                };
                if let Some(a) = self.lookup_in_table(sv, &stage?, &mut l, key, seq, ro)? {
                    return Ok(a);
                }
            }
        }
        l.end(sv, key)
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyLookup, Step};
    use crate::memtable::EntryRef;

    /// Rule 3: a version older than the covering tombstone is hidden; a
    /// newer one stands.
    #[test]
    fn cover_hides_only_older_versions() {
        let mut l = KeyLookup::default();
        l.cover(5);
        assert_eq!(l.judge(6, EntryRef::Value(b"v")), Step::Value(b"v"));
        assert_eq!(l.judge(4, EntryRef::Value(b"v")), Step::Absent);
        assert_eq!(
            l.decide(EntryRef::Value(b"v")),
            None,
            "covered: needs its sequence"
        );
    }

    /// Rules 3 and 5: operands are kept newest first and end on a base.
    #[test]
    fn operands_end_on_a_base() {
        let mut l = KeyLookup::default();
        assert_eq!(
            l.decide(EntryRef::Merge(b"m")),
            None,
            "an operand is walked"
        );
        assert_eq!(l.judge(9, EntryRef::Merge(b"m2")), Step::Older);
        assert_eq!(l.judge(8, EntryRef::Merge(b"m1")), Step::Older);
        assert_eq!(l.operands, vec![b"m2".to_vec(), b"m1".to_vec()]);
        assert_eq!(l.judge(7, EntryRef::Value(b"b")), Step::Merge(Some(b"b")));
        assert_eq!(l.judge(7, EntryRef::Deleted), Step::Merge(None));
        l.cover(8);
        assert_eq!(
            l.judge(7, EntryRef::Value(b"b")),
            Step::Merge(None),
            "hidden base"
        );
    }

    /// Rule 4: only a memtable stage under a tombstone ends the lookup.
    #[test]
    fn a_covering_memtable_ends_the_lookup() {
        let mut l = KeyLookup::default();
        assert_eq!(l.after_stage(true), None);
        l.cover(3);
        assert_eq!(l.after_stage(false), None);
        assert_eq!(l.after_stage(true), Some(Step::Absent));
        l.judge(4, EntryRef::Merge(b"m"));
        assert_eq!(l.after_stage(true), Some(Step::Merge(None)));
    }
}
