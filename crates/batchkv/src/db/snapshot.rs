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
    pub fn sequences(&self) -> Vec<SequenceNumber> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }

    /// Holds the list's lock: no snapshot is taken or released until the
    /// guard drops. Ingestion holds it while it decides that no snapshot
    /// exists and installs files readable at every sequence number (order:
    /// after `state`, as compaction's [`sequences`](Self::sequences) call).
    pub fn hold(&self) -> std::sync::MutexGuard<'_, BTreeMap<SequenceNumber, usize>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
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
    /// Registers a snapshot at the sequence `visible()` returns, read under
    /// the list's lock: a compaction that asks for [`SnapshotList::sequences`]
    /// either sees this snapshot or ran before its sequence was read, when
    /// every entry it can drop was newer than nothing this snapshot needs
    /// (issue 12: reading the sequence before taking the lock let a
    /// compaction drop a version the new snapshot could see).
    pub(crate) fn new(
        list: &Arc<SnapshotList>,
        visible: impl FnOnce() -> SequenceNumber,
    ) -> Snapshot {
        let mut live = list.live.lock().unwrap_or_else(PoisonError::into_inner);
        let sequence = visible();
        *live.entry(sequence).or_insert(0) += 1;
        drop(live);
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

    /// True if this snapshot was taken from the database owning `list`.
    pub(crate) fn belongs_to(&self, list: &Arc<SnapshotList>) -> bool {
        Arc::ptr_eq(&self.inner.list, list)
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
