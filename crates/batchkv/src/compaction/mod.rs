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
