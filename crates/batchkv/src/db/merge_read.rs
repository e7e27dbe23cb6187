//! The slow part of a point lookup: a stage whose newest visible version of
//! the key is a merge operand. The walks here judge that stage's versions
//! of the key newest → oldest with the lookup core's rules
//! ([`KeyLookup::judge`], `lookup.rs`), keeping operands, until one ends the
//! lookup; when the stage's versions run out the lookup goes on in the next
//! stage, where a plain lookup finds the next older version. So a key's
//! operands are collected in one pass over the stages, by `get` and
//! `multi_get` alike.
//!
//! Each walk starts again at the stage's newest visible version (the one
//! the caller met and did not judge).

use std::sync::Arc;

use super::lookup::{point_entry, Answer, KeyLookup, TableStage};
use super::{DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{lookup_key, parse_internal_key, SequenceNumber};
use crate::memtable::{EntryRef, MemTable};
use crate::sst::BlockReadOptions;

/// Walks memtable `mem`'s versions of `key` at or below `seq`:
/// `Some(answer)` when one ends the lookup, `None` when they ran out.
pub(super) fn walk_memtable(
    sv: &SuperVersion,
    mem: &Arc<dyn MemTable>,
    l: &mut KeyLookup,
    key: &[u8],
    seq: SequenceNumber,
) -> Result<Option<Answer<'static>>> {
    if mem.kind() != "sorted_hash" {
        // Skip list and vector: an iterator is one search and then a step
        // per version (creating one costs little).
        let mut it = Arc::clone(mem).iter();
        it.seek(&lookup_key(key, seq));
        return walk_iter(
            sv,
            &mut *it,
            l,
            key,
            |s| s,
            |t, v| {
                // Range tombstones never enter the point entries
                // (memtable/with_range_dels.rs).
                point_entry(t, v, || {
                    Error::corruption(mem.kind(), 0, "range deletion among the point entries")
                })
            },
        );
    }
    // Sorted hash: an iterator would seal and sort its write vector, so
    // walk with point lookups instead, each for the newest version below
    // the last one (memtable contract 5).
    let mut at = seq;
    while let Some((s, e)) = mem.get_versioned(key, at)? {
        let step = l.judge(s, e);
        if let Some(a) = l.settle(sv, key, step)? {
            return Ok(Some(a.into_owned()));
        }
        if s == 0 {
            break;
        }
        at = s - 1;
    }
    Ok(None)
}

/// Walks `stage`'s versions of `key` at or below `seq`: `Some(answer)`
/// when one ends the lookup, `None` when they ran out.
pub(super) fn walk_table(
    core: &DbCore,
    sv: &SuperVersion,
    stage: &TableStage,
    l: &mut KeyLookup,
    key: &[u8],
    seq: SequenceNumber,
    ro: BlockReadOptions,
) -> Result<Option<Answer<'static>>> {
    let mut it = Arc::clone(&*stage.table).iter_with(ro);
    it.seek(&lookup_key(key, seq));
    walk_iter(
        sv,
        &mut it,
        l,
        key,
        |s| stage.sequence(s),
        |t, v| stage.entry(core, t, v),
    )
}

/// Walks `it` (positioned at `key`'s newest visible version) through the
/// key's versions; `sequence` and `entry` read a stored entry as the stage
/// counts it.
fn walk_iter(
    sv: &SuperVersion,
    it: &mut dyn InternalIterator,
    l: &mut KeyLookup,
    key: &[u8],
    sequence: impl Fn(SequenceNumber) -> SequenceNumber,
    entry: impl for<'v> Fn(crate::key::ValueType, &'v [u8]) -> Result<EntryRef<'v>>,
) -> Result<Option<Answer<'static>>> {
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
        let step = l.judge(sequence(p.sequence), entry(p.value_type, it.value())?);
        if let Some(a) = l.settle(sv, key, step)? {
            return Ok(Some(a.into_owned()));
        }
        it.next();
    }
    it.status()?;
    Ok(None)
}
