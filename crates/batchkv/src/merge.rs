//! Merge operators (RocksDB's `MergeOperator`): [`MergeOperator`], the
//! trait users implement, and the helpers the read paths and compaction use
//! to apply one (`docs/design.md` §11).
//!
//! A merge operand is an entry of type [`ValueType::Merge`]. The value a
//! reader sees for a key is found by collecting the key's visible entries
//! newest → oldest until a *base*: a value (base = that value), a deletion
//! or a covering range tombstone (base = none), or the end of the data
//! (base = none). The operands are then handed to
//! [`MergeOperator::full_merge`] oldest → newest.
//!
//! [`ValueType::Merge`]: crate::key::ValueType::Merge

use std::fmt;
use std::sync::Arc;

use crate::error::{catch_panic, Error, Result};

/// Combines merge operands with the value below them.
///
/// Both methods run on read and compaction threads, concurrently: they must
/// be pure functions of their arguments and must not call back into the
/// database. A panic in either is caught: on a read (`get`, `multi_get`,
/// an iterator) it is that call's [`Error::Panicked`]; in a compaction it
/// becomes the database's background error (writes are then refused, and
/// `flush`, `compact_range` and `close` return it). The operator's
/// [`name`](MergeOperator::name) is recorded per column family in the
/// `OPTIONS` file (`docs/format/options.md`): opening the database with
/// another operator, or none, is refused with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming both.
pub trait MergeOperator: Send + Sync {
    /// A stable name (recorded in the `OPTIONS` file and checked at every
    /// open, used in errors): change it only with the data's format.
    fn name(&self) -> &str;

    /// The value of `key` after applying `operands` (oldest first) to
    /// `existing` (`None`: the key had no value). `None` means the operands
    /// cannot be merged: reads of the key return [`Error::MergeFailed`] and
    /// a compaction that has to merge them fails.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;

    /// Combines two adjacent operands, `left` older than `right`, into one
    /// operand with the same effect, if possible. Compaction uses it to
    /// shrink operand runs it cannot fully merge; `None` (the default)
    /// keeps both operands as they are.
    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let _ = (key, left, right);
        None
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MergeOperator({})", self.name())
    }
}

/// The error for a read that met a merge operand with no operator set.
pub(crate) fn no_operator(key: &[u8]) -> Error {
    Error::InvalidArgument(format!(
        "no merge operator: key \"{}\" has merge operands but Options::merge_operator is not set",
        key.escape_ascii()
    ))
}

/// Runs `op.full_merge` (operands oldest first), turning `None` into
/// [`Error::MergeFailed`], a missing operator into `InvalidArgument` and a
/// panic in the operator into [`Error::Panicked`] naming it.
pub(crate) fn full_merge(
    op: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    base: Option<&[u8]>,
    operands: &[&[u8]],
) -> Result<Vec<u8>> {
    let op = op.ok_or_else(|| no_operator(key))?;
    catch_panic(
        || format!("merge operator {:?} (full_merge)", op.name()),
        || op.full_merge(key, base, operands),
    )?
    .ok_or_else(|| Error::MergeFailed {
        operator: op.name().to_string(),
        key: key.escape_ascii().to_string(),
    })
}

/// Runs `op.partial_merge`, turning a panic in it into [`Error::Panicked`]
/// naming the operator.
pub(crate) fn partial_merge(
    op: &Arc<dyn MergeOperator>,
    key: &[u8],
    left: &[u8],
    right: &[u8],
) -> Result<Option<Vec<u8>>> {
    catch_panic(
        || format!("merge operator {:?} (partial_merge)", op.name()),
        || op.partial_merge(key, left, right),
    )
}

/// [`full_merge`] with the operands in the order reads collect them
/// (newest first).
pub(crate) fn full_merge_newest_first(
    op: Option<&Arc<dyn MergeOperator>>,
    key: &[u8],
    base: Option<&[u8]>,
    newest_first: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let operands: Vec<&[u8]> = newest_first.iter().rev().map(Vec::as_slice).collect();
    full_merge(op, key, base, &operands)
}
