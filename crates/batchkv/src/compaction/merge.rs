//! Merge operands in compaction (`docs/design.md` §11).
//!
//! The executor hands over when it meets a key's newest merge operand in a
//! snapshot stripe (one no newer entry of the stripe shadows and no range
//! tombstone of the stripe covers). [`merge_run`] consumes the stripe's
//! operands below it, newest first, and stops at the first of:
//! - a value or deletion of the same stripe: the base. It is consumed and
//!   the operands are fully merged into one value at the newest operand's
//!   sequence (a deletion gives base = none);
//! - an entry a range tombstone of the same stripe covers: base = none, the
//!   covered entry is left to the executor (which drops it);
//! - an entry of an older stripe: the operands cannot be fully merged (the
//!   base belongs to older snapshots' view) — never merged across a
//!   snapshot boundary; they are partially merged;
//! - the key's end: at the bottommost level nothing older exists, so base
//!   = none and a full merge; elsewhere, a partial merge.
//!
//! A partial merge folds the operands oldest → newest with
//! [`MergeOperator::partial_merge`] into one operand at the newest
//! sequence; if any step declines, every operand is kept as it was. A full
//! merge that fails fails the compaction ([`Error::MergeFailed`], as
//! RocksDB). Without an operator the run is written back unchanged.
//! Merge results are not offered to the compaction filter (RocksDB's
//! default: filters see values written as values).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, parse_internal_key, SequenceNumber, ValueType};
use crate::merge::{full_merge, partial_merge, MergeOperator};
use crate::range_del::FragmentedTombstones;

/// What a run turned into.
pub(super) struct MergeRun {
    /// Entries to write, in internal-key order.
    pub out: Vec<(Vec<u8>, Vec<u8>)>,
    /// Entries consumed from the input.
    pub consumed: u64,
}

/// Why the run ended.
enum End {
    /// A base in the stripe (`None`: a deletion or a covering tombstone).
    Base(Option<(Vec<u8>, Vec<u8>)>, bool),
    /// An older stripe or the key's end.
    NoBase { key_ended: bool },
}

/// Where the run's context comes from.
pub(super) struct RunContext<'a> {
    pub op: Option<&'a Arc<dyn MergeOperator>>,
    pub covering: &'a FragmentedTombstones,
    pub stripe_of: &'a dyn Fn(SequenceNumber) -> usize,
    pub bottommost: bool,
}

/// Consumes the merge run at `input`'s position (see the module docs).
pub(super) fn merge_run(input: &mut dyn InternalIterator, cx: &RunContext<'_>) -> Result<MergeRun> {
    let first = parse(input.key())?;
    debug_assert_eq!(first.value_type, ValueType::Merge);
    let key = first.user_key.to_vec();
    let stripe = (cx.stripe_of)(first.sequence);
    // (sequence, operand), newest first.
    let mut operands: Vec<(SequenceNumber, Vec<u8>)> =
        vec![(first.sequence, input.value().to_vec())];
    let mut consumed = 1;
    input.next();
    let end = loop {
        if !input.valid() {
            input.status()?;
            break End::NoBase { key_ended: true };
        }
        let p = parse(input.key())?;
        if p.user_key != key.as_slice() {
            break End::NoBase { key_ended: true };
        }
        if (cx.stripe_of)(p.sequence) != stripe {
            break End::NoBase { key_ended: false };
        }
        let covered = !cx.covering.is_empty()
            && cx
                .covering
                .smallest_covering_above(p.user_key, p.sequence)
                .is_some_and(|t| (cx.stripe_of)(t) == stripe);
        if covered {
            break End::Base(None, false);
        }
        let entry = (input.key().to_vec(), input.value().to_vec());
        match p.value_type {
            ValueType::Merge => operands.push((p.sequence, entry.1)),
            ValueType::Value => {
                consumed += 1;
                input.next();
                break End::Base(Some(entry), true);
            }
            ValueType::Deletion => {
                consumed += 1;
                input.next();
                break End::Base(Some(entry), false);
            }
            ValueType::RangeDeletion => {
                return Err(Error::corruption(
                    "compaction input",
                    0,
                    "range deletion among the point entries",
                ))
            }
        }
        consumed += 1;
        input.next();
    };
    let newest = operands[0].0;
    let unchanged = |base: Option<(Vec<u8>, Vec<u8>)>| {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = operands
            .iter()
            .map(|(s, v)| (ikey(&key, *s, ValueType::Merge), v.clone()))
            .collect();
        out.extend(base);
        MergeRun { out, consumed }
    };
    let Some(op) = cx.op else {
        // Nothing can be merged; keep every consumed entry.
        return Ok(match end {
            End::Base(base, _) => unchanged(base),
            End::NoBase { .. } => unchanged(None),
        });
    };
    let oldest_first: Vec<&[u8]> = operands.iter().rev().map(|(_, v)| v.as_slice()).collect();
    let full = |base: Option<&[u8]>| -> Result<MergeRun> {
        let v = full_merge(Some(op), &key, base, &oldest_first)?;
        Ok(MergeRun {
            out: vec![(ikey(&key, newest, ValueType::Value), v)],
            consumed,
        })
    };
    match end {
        End::Base(Some((_, v)), true) => full(Some(&v)),
        End::Base(_, _) => full(None),
        End::NoBase { key_ended: true } if cx.bottommost => full(None),
        End::NoBase { .. } => {
            if operands.len() == 1 {
                return Ok(unchanged(None));
            }
            let mut acc = oldest_first[0].to_vec();
            for right in &oldest_first[1..] {
                match partial_merge(op, &key, &acc, right)? {
                    Some(v) => acc = v,
                    None => return Ok(unchanged(None)),
                }
            }
            Ok(MergeRun {
                out: vec![(ikey(&key, newest, ValueType::Merge), acc)],
                consumed,
            })
        }
    }
}

fn ikey(key: &[u8], seq: SequenceNumber, t: ValueType) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 8);
    append_internal_key(&mut k, key, seq, t);
    k
}

fn parse(ik: &[u8]) -> Result<crate::key::ParsedInternalKey<'_>> {
    parse_internal_key(ik).ok_or_else(|| {
        Error::corruption(
            "compaction input",
            0,
            format!("unparsable internal key {ik:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::vec_iter::VecIterator;
    use crate::merge_operators::StringAppendOperator;
    use crate::range_del::RangeTombstone;

    /// Entry (key, seq, type, value) → internal entry.
    fn e(k: &str, seq: u64, t: ValueType, v: &str) -> (Vec<u8>, Vec<u8>) {
        (ikey(k.as_bytes(), seq, t), v.as_bytes().to_vec())
    }

    /// Runs a merge run at the first entry; returns (outputs as
    /// (key, seq, type, value), consumed, key of the next input entry).
    #[allow(clippy::type_complexity, reason = "a test's plain tuple report")]
    fn run(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        snapshots: &[u64],
        tombstones: &[RangeTombstone],
        bottommost: bool,
        op: Option<Arc<dyn MergeOperator>>,
    ) -> Result<(Vec<(String, u64, ValueType, String)>, u64, Option<u64>)> {
        let mut it = VecIterator::new(entries);
        it.seek_to_first();
        let covering = FragmentedTombstones::new(tombstones);
        let stripe_of = |seq: u64| snapshots.partition_point(|&s| s < seq);
        let r = merge_run(
            &mut it,
            &RunContext {
                op: op.as_ref(),
                covering: &covering,
                stripe_of: &stripe_of,
                bottommost,
            },
        )?;
        let out = r
            .out
            .iter()
            .map(|(k, v)| {
                let p = parse_internal_key(k).unwrap();
                (
                    String::from_utf8(p.user_key.to_vec()).unwrap(),
                    p.sequence,
                    p.value_type,
                    String::from_utf8(v.clone()).unwrap(),
                )
            })
            .collect();
        let next = it
            .valid()
            .then(|| parse_internal_key(it.key()).unwrap().sequence);
        Ok((out, r.consumed, next))
    }

    fn append() -> Option<Arc<dyn MergeOperator>> {
        Some(Arc::new(StringAppendOperator::new(",")))
    }

    use ValueType::{Deletion as D, Merge as M, Value as V};

    #[test]
    fn operands_on_a_value_become_one_value_at_the_newest_sequence() {
        let entries = vec![
            e("a", 9, M, "c"),
            e("a", 8, M, "b"),
            e("a", 5, V, "a"),
            e("a", 2, V, "old"),
        ];
        let (out, consumed, next) = run(entries, &[], &[], false, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, V, "a,b,c".into())]);
        assert_eq!((consumed, next), (3, Some(2)), "stops after the base");
    }

    #[test]
    fn a_deletion_or_covering_tombstone_is_a_base_of_none() {
        let entries = vec![e("a", 9, M, "c"), e("a", 8, M, "b"), e("a", 5, D, "")];
        let (out, ..) = run(entries, &[], &[], false, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, V, "b,c".into())]);
        let t = RangeTombstone {
            begin: b"a".to_vec(),
            end: b"b".to_vec(),
            seq: 7,
        };
        let entries = vec![e("a", 9, M, "c"), e("a", 5, V, "hidden")];
        let (out, consumed, next) = run(entries, &[], &[t], false, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, V, "c".into())]);
        assert_eq!(
            (consumed, next),
            (1, Some(5)),
            "the covered entry is left to the executor"
        );
    }

    #[test]
    fn never_merges_across_a_snapshot_and_partially_merges_without_a_base() {
        // Snapshot 6: stripe (6, ∞) holds 9, 8; stripe ≤ 6 holds 5.
        let entries = vec![e("a", 9, M, "c"), e("a", 8, M, "b"), e("a", 5, V, "a")];
        let (out, consumed, next) = run(entries.clone(), &[6], &[], true, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, M, "b,c".into())]);
        assert_eq!((consumed, next), (2, Some(5)));
        // Not bottommost and the key ends: older levels may hold the base.
        let (out, ..) = run(entries[..2].to_vec(), &[], &[], false, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, M, "b,c".into())]);
        // Bottommost and the key ends: nothing older exists.
        let (out, ..) = run(entries[..2].to_vec(), &[], &[], true, append()).unwrap();
        assert_eq!(out, vec![("a".into(), 9, V, "b,c".into())]);
    }

    /// Declines partial merges and fails full merges of the operand "bad".
    struct Picky;
    impl MergeOperator for Picky {
        fn name(&self) -> &str {
            "picky"
        }
        fn full_merge(&self, _: &[u8], _: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
            (!ops.contains(&&b"bad"[..])).then(|| ops.concat())
        }
    }

    #[test]
    fn declined_partial_merges_keep_operands_and_failed_full_merges_fail() {
        let op: Option<Arc<dyn MergeOperator>> = Some(Arc::new(Picky));
        let entries = vec![e("a", 9, M, "c"), e("a", 8, M, "b")];
        let (out, ..) = run(entries.clone(), &[], &[], false, op.clone()).unwrap();
        assert_eq!(
            out,
            vec![
                ("a".into(), 9, M, "c".into()),
                ("a".into(), 8, M, "b".into())
            ]
        );
        let bad = vec![e("a", 9, M, "bad"), e("a", 3, V, "x")];
        let err = run(bad.clone(), &[], &[], false, op).err().unwrap();
        assert!(matches!(err, Error::MergeFailed { .. }), "{err}");
        // No operator: everything is written back as it was.
        let (out, consumed, _) = run(bad, &[], &[], false, None).unwrap();
        assert_eq!(
            out,
            vec![
                ("a".into(), 9, M, "bad".into()),
                ("a".into(), 3, V, "x".into())
            ]
        );
        assert_eq!(consumed, 2);
    }
}
