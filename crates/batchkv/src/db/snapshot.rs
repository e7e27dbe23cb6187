//! Snapshots: a sequence number held registered so reads at it stay stable.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::key::SequenceNumber;

/// The sequence numbers of live snapshots, with reference counts.
/// Compaction asks for the oldest to decide which versions are droppable.
#[derive(Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    /// Sequence numbers of all live snapshots, ascending.
    #[allow(
        dead_code,
        reason = "compaction (issue 3) keeps versions these can see"
    )]
    pub fn sequences(&self) -> Vec<SequenceNumber> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }
}

/// A consistent, read-only view of the database at one sequence number.
///
/// Reads through `ReadOptions { snapshot: Some(s), .. }` see exactly the
/// writes acknowledged before the snapshot was taken. Cheap to clone; the
/// snapshot is released when the last clone is dropped.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

struct SnapshotInner {
    sequence: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    pub(crate) fn new(list: &Arc<SnapshotList>, sequence: SequenceNumber) -> Snapshot {
        *list
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(sequence)
            .or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(SnapshotInner {
                sequence,
                list: Arc::clone(list),
            }),
        }
    }

    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.inner.sequence
    }
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut live = self
            .list
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = live.get_mut(&self.sequence) {
            *count -= 1;
            if *count == 0 {
                live.remove(&self.sequence);
            }
        }
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("sequence", &self.sequence())
            .finish()
    }
}
