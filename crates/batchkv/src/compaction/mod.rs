//! Leveled compaction: a pure *picker* that decides from a [`Version`]
//! (testable without a database) and an *executor* that merges the chosen
//! files into new ones. The database's compaction threads (`db/compaction.rs`)
//! drive them and install the results.
//!
//! [`Version`]: crate::version::Version

mod executor;
mod filter;
mod merge;
mod picker;

pub(crate) use executor::{run_compaction, OutputSpec};
pub use filter::{CompactionDecision, CompactionFilter, TtlFilter};
pub(crate) use picker::{pick_compaction, task_for, CompactionConfig, CompactionTask};

/// The snapshot stripe of an entry with sequence `seq` (see
/// `executor.rs`): the number of live snapshots (`snapshots`, ascending)
/// older than it. Entries of one user key in the same stripe are seen by
/// the same readers, so only the newest of them matters; compaction and
/// flush both drop by this rule.
pub(crate) fn snapshot_stripe(
    snapshots: &[crate::key::SequenceNumber],
    seq: crate::key::SequenceNumber,
) -> usize {
    snapshots.partition_point(|&s| s < seq)
}
