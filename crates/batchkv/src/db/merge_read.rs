//! The slow path of point reads: a key whose newest visible entry is a
//! merge operand. [`DbCore::get_merged`] walks the key's versions newest →
//! oldest through every stage (memtables, then the tables a point read
//! would consult, in the same order), collecting operands until a base
//! (`merge.rs` module docs), then applies the merge operator.
//!
//! Only keys that met a merge operand come here; the fast paths (`read.rs`,
//! `multi_get.rs`) are unchanged for everything else.
//!
//! Range tombstones: `covered` is the newest tombstone covering the key
//! seen so far, raised by each stage's tombstones *before* its entries are
//! walked; an entry older than it is hidden, which ends the walk with
//! base = none (everything further is older still).

use std::sync::Arc;

use super::{DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{lookup_key, parse_internal_key, SequenceNumber, ValueType};
use crate::memtable::EntryRef;
use crate::merge::full_merge_newest_first;
use crate::sst::BlockReadOptions;

/// What one version contributes to the walk.
enum Step {
    /// A merge operand: keep walking.
    Operand,
    /// The walk ends; the base value (`None`: no value below the operands).
    Base(Option<Vec<u8>>),
}

/// Operands collected so far (newest first) and the covering tombstone.
struct Walk {
    operands: Vec<Vec<u8>>,
    covered: SequenceNumber,
}

impl Walk {
    /// Classifies the version `(s, t, v)`; a merge operand is kept.
    fn step(&mut self, s: SequenceNumber, t: ValueType, v: &[u8]) -> Option<Step> {
        if s < self.covered {
            return Some(Step::Base(None));
        }
        match t {
            ValueType::Value => Some(Step::Base(Some(v.to_vec()))),
            ValueType::Deletion => Some(Step::Base(None)),
            ValueType::Merge => {
                self.operands.push(v.to_vec());
                Some(Step::Operand)
            }
            // Never among point entries: the caller reports corruption.
            ValueType::RangeDeletion => None,
        }
    }
}

impl DbCore {
    /// The value of `key` at `seq` in `sv`, merging operands: see the
    /// module docs. Errors: a missing operator (`InvalidArgument`), a
    /// failed merge ([`Error::MergeFailed`]), and the stages' own errors.
    pub(super) fn get_merged(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let mut w = Walk {
            operands: Vec::new(),
            covered: 0,
        };
        let base = self.find_base(sv, key, seq, ro, &mut w)?;
        if w.operands.is_empty() {
            // Only when the newest visible version was not an operand after
            // all; the base is then the answer.
            return Ok(base);
        }
        full_merge_newest_first(
            sv.opts.merge_operator.as_ref(),
            key,
            base.as_deref(),
            &w.operands,
        )
        .map(Some)
    }

    /// Walks the stages, collecting operands into `w`; returns the base.
    fn find_base(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
        w: &mut Walk,
    ) -> Result<Option<Vec<u8>>> {
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            if let Some(d) = mem.range_dels() {
                w.covered = w.covered.max(d.max_covering(key, seq));
            }
            if mem.kind() != "sorted_hash" {
                // Skip list and vector: an iterator is one search and then
                // a step per version (creating one costs little).
                let mut it = Arc::clone(mem).iter();
                it.seek(&lookup_key(key, seq));
                if let Some(b) = walk_iter(&mut *it, key, w, || {
                    Error::corruption(mem.kind(), 0, "range deletion among the point entries")
                })? {
                    return Ok(b);
                }
                continue;
            }
            // Sorted hash: an iterator would seal and sort its write vector,
            // so walk with point lookups instead, each for the newest
            // version below the last one (memtable contract 5).
            let mut at = seq;
            while let Some((s, e)) = mem.get_versioned(key, at)? {
                let (t, v) = match e {
                    EntryRef::Value(v) => (ValueType::Value, v),
                    EntryRef::Deleted => (ValueType::Deletion, &[][..]),
                    EntryRef::Merge(v) => (ValueType::Merge, v),
                };
                match w.step(s, t, v) {
                    Some(Step::Base(b)) => return Ok(b),
                    Some(Step::Operand) => {}
                    None => {
                        return Err(Error::corruption(
                            mem.kind(),
                            0,
                            "range deletion among the point entries",
                        ))
                    }
                }
                if s == 0 {
                    break;
                }
                at = s - 1;
            }
        }
        let target = lookup_key(key, seq);
        for level in 0..sv.version.levels.len() {
            for file in sv.version.files_for_key(level, key) {
                // An ingested file newer than the read holds nothing it sees.
                if !file.visible_at(seq) {
                    continue;
                }
                let table = self.tables.get(file.number)?;
                if let Some(rd) = table.range_dels() {
                    w.covered = w.covered.max(rd.fragmented.max_covering(key, seq));
                }
                if !table.may_contain(key) {
                    continue;
                }
                let mut it = Arc::clone(&table).iter_with(ro);
                it.seek(&target);
                if let Some(b) = walk_iter(&mut it, key, w, || {
                    self.range_deletion_among_points(file.number)
                })? {
                    return Ok(b);
                }
            }
        }
        Ok(None)
    }
}

/// Walks `it` (positioned at `key`'s newest visible version) through the
/// key's versions: `Some(base)` when the walk ends here, `None` when the
/// versions ran out (the walk goes on in the next stage).
fn walk_iter(
    it: &mut dyn InternalIterator,
    key: &[u8],
    w: &mut Walk,
    range_del_error: impl FnOnce() -> Error,
) -> Result<Option<Option<Vec<u8>>>> {
    while it.valid() {
        let ik = it.key();
        let p = parse_internal_key(ik).ok_or_else(|| {
            Error::corruption(
                "merge read",
                0,
                format!("unparsable internal key \"{}\"", ik.escape_ascii()),
            )
        })?;
        if p.user_key != key {
            break;
        }
        match w.step(p.sequence, p.value_type, it.value()) {
            Some(Step::Base(b)) => return Ok(Some(b)),
            Some(Step::Operand) => {}
            None => return Err(range_del_error()),
        }
        it.next();
    }
    it.status()?;
    Ok(None)
}
