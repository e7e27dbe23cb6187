//! [`ReadView`]: one state of the database for a few batched reads, held
//! by pinning what the reads need instead of registering a snapshot.

use std::sync::Arc;

use arc_swap::Guard;

use super::{Db, SuperVersion};
use crate::error::{Error, Result};
use crate::key::SequenceNumber;
use crate::key_list::KeyList;
use crate::options::ReadOptions;

/// The latest state of the database when the view was made, for several
/// reads that must agree with each other (a read whose keys depend on
/// what an earlier one found).
///
/// Every read through one view sees exactly what a [`Snapshot`](crate::Snapshot)
/// taken at the view's creation would show. Unlike a snapshot it is not
/// registered with the database (no lock, no allocation): it holds the
/// memtables and the table files of that moment instead, which keep the
/// versions it can see whatever flushes and compactions do meanwhile. So
/// it is for short-lived use: while it lives, the memory of memtables that
/// were flushed and the disk space of files that were compacted away stay
/// taken (such files are deleted by the first flush or compaction after
/// it is dropped, as after a point read). Default column family only.
pub struct ReadView<'d> {
    db: &'d Db,
    /// Loaded before `sv`, so `sv` holds every entry it can see
    /// (invariant 1 in `db/mod.rs`).
    seq: SequenceNumber,
    /// A guard rather than a new reference: taking one (`load_full`) wrote
    /// the super version's shared count, a cache line every thread making
    /// views writes. Views are short-lived, as guards should be.
    sv: Guard<Arc<SuperVersion>>,
}

impl Db {
    /// A view of the latest state for a few reads that must agree; see
    /// [`ReadView`].
    pub fn read_view(&self) -> ReadView<'_> {
        let core = self.core();
        let seq = core.last_visible();
        let sv = core.default_cf.sv.load();
        ReadView { db: self, seq, sv }
    }
}

impl ReadView<'_> {
    /// The sequence number the view reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }

    /// [`Db::multi_get_with`] at the view's state. `opts.snapshot` must be
    /// `None` (the view is the state read): otherwise every key gets
    /// `InvalidArgument`.
    pub fn multi_get_with<L: KeyList + ?Sized>(
        &self,
        opts: &ReadOptions,
        keys: &L,
        mut on_result: impl FnMut(usize, Result<Option<&[u8]>>),
    ) {
        let keys = keys.as_key_slice();
        let core = self.db.core();
        let _timer =
            (core.counters.latency).timer(super::latency::Timed::MultiGet(keys.len() as u64));
        let at = || match opts.snapshot {
            Some(_) => Err(Error::InvalidArgument(
                "a ReadView reads at its own state: ReadOptions::snapshot must be None".into(),
            )),
            None => Ok(self.seq),
        };
        let Some(seq) = core.begin_multi_get(keys.len(), at, &mut on_result) else {
            return;
        };
        self.db
            .multi_get_at(&self.sv, opts, seq, keys, on_result, None)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Options, ReadOptions};

    fn read(view: &super::ReadView<'_>, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        let mut out = Vec::new();
        view.multi_get_with(&ReadOptions::default(), keys, |_, r| {
            out.push(r.unwrap().map(<[u8]>::to_vec))
        });
        out
    }

    /// Writes after the view was made, and the flush and compaction that
    /// drop the versions it sees from the live files, change nothing it
    /// reads; a new view sees the writes.
    #[test]
    fn a_view_reads_one_state_through_writes_flushes_and_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"2").unwrap();
        db.flush().unwrap();
        db.put(b"c", b"3").unwrap();
        let view = db.read_view();
        let want = vec![
            Some(b"1".to_vec()),
            Some(b"2".to_vec()),
            Some(b"3".to_vec()),
            None,
        ];
        let keys: &[&[u8]] = &[b"a", b"b", b"c", b"d"];
        assert_eq!(read(&view, keys), want);
        db.put(b"a", b"new").unwrap();
        db.delete(b"b").unwrap();
        db.delete(b"c").unwrap();
        db.put(b"d", b"4").unwrap();
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_eq!(read(&view, keys), want, "the view's state");
        let now = vec![Some(b"new".to_vec()), None, None, Some(b"4".to_vec())];
        assert_eq!(read(&db.read_view(), keys), now, "a new view");
        assert!(view.sequence() < db.read_view().sequence());
    }

    /// A snapshot in the options is refused for every key, by name.
    #[test]
    fn a_view_refuses_a_snapshot_in_the_options() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let opts = ReadOptions {
            snapshot: Some(db.snapshot()),
            ..ReadOptions::default()
        };
        let mut errors = Vec::new();
        db.read_view().multi_get_with(&opts, &[b"a", b"b"], |i, r| {
            errors.push((i, r.unwrap_err().to_string()))
        });
        assert_eq!(errors.len(), 2);
        assert!(errors[1].1.contains("ReadOptions::snapshot"), "{errors:?}");
    }
}
