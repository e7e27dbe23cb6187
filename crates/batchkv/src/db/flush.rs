//! The background flush: immutable memtable → L0 SST → MANIFEST edit.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::table_cache::TableCache;
use super::{lock, DbCore, DbState};
use crate::error::{catch_panic, Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::key::{parse_internal_key, SequenceNumber, ValueType};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sst::TableBuilder;
use crate::version::{FileMetaData, VersionEdit};

/// Writes the entries of `mem` that a reader can still see to table
/// `number` (see [`Shadowing`]; `snapshots`: the live snapshots' sequence
/// numbers, ascending); returns its metadata, or `None` for an empty
/// memtable (no file is left behind).
pub(super) fn write_level0_table(
    fs: &dyn FileSystem,
    dir: &Path,
    tables: &TableCache,
    mem: Arc<dyn MemTable>,
    number: u64,
    opts: &Options,
    snapshots: &[SequenceNumber],
) -> Result<Option<FileMetaData>> {
    let path = filename::path(dir, FileKind::Table, number);
    let range_dels = mem.range_dels().map(|d| d.tombstones()).unwrap_or_default();
    let mut iter = Arc::clone(&mem).iter();
    iter.seek_to_first();
    if !iter.valid() && range_dels.is_empty() {
        iter.status()?;
        return Ok(None);
    }
    let file = fs.new_writable(&path)?;
    let mut builder = TableBuilder::new(file, path.display().to_string(), opts.table_options())?;
    // The table's bounds cover these tombstones' extents (TableBuilder).
    for t in range_dels {
        builder.add_range_deletion(t);
    }
    let mut shadowing = Shadowing::new(snapshots);
    while iter.valid() {
        if !shadowing.shadowed(iter.key()) {
            builder.add(iter.key(), iter.value())?;
        }
        iter.next();
    }
    iter.status()?;
    let summary = builder.finish()?;
    // Bug found by fault_injection.rs (power_loss_*): the table's data was
    // fsynced but not its directory entry, so after a power loss the
    // MANIFEST could name a table that no longer exists while its WAL was
    // already deleted. Make the name durable before any edit refers to it.
    fs.sync_dir(dir)?;
    // The file must be readable before a version refers to it.
    tables.get(number)?;
    Ok(Some(FileMetaData {
        number,
        file_size: summary.file_size,
        smallest: summary.smallest,
        largest: summary.largest,
        num_entries: summary.num_entries,
        global_seqno: 0,
        pinned: Default::default(),
    }))
}

/// Which memtable entries a flush can leave out: an entry is shadowed when
/// a newer entry of the same user key lies in the same snapshot stripe (no
/// snapshot sequence number in between, so no reader can see the older one)
/// and that newer entry is a value or a deletion (a merge operand still
/// needs what lies below it). Compaction drops the same entries
/// (`compaction/executor.rs`); dropping them at flush already keeps
/// overwritten versions out of L0 (RocksDB's flush does the same; LevelDB's
/// writes every version). Snapshots taken after the flush read the list are
/// newer than every entry of a frozen memtable, so they see only newest
/// versions, which are kept.
struct Shadowing<'a> {
    snapshots: &'a [SequenceNumber],
    /// The last kept entry: its user key, stripe, and whether it hides
    /// older entries of its stripe.
    last: Option<(Vec<u8>, usize, bool)>,
}

impl<'a> Shadowing<'a> {
    fn new(snapshots: &'a [SequenceNumber]) -> Shadowing<'a> {
        debug_assert!(
            snapshots.windows(2).all(|w| w[0] <= w[1]),
            "snapshots ascending"
        );
        Shadowing {
            snapshots,
            last: None,
        }
    }

    /// Whether `ikey` (entries come in internal-key order) is shadowed. An
    /// unparsable key is never dropped here (the table builder reports it).
    fn shadowed(&mut self, ikey: &[u8]) -> bool {
        let Some(p) = parse_internal_key(ikey) else {
            return false;
        };
        let stripe = crate::compaction::snapshot_stripe(self.snapshots, p.sequence);
        if let Some((key, last_stripe, hides)) = &self.last {
            if *hides && *last_stripe == stripe && key.as_slice() == p.user_key {
                return true;
            }
        }
        let hides = matches!(p.value_type, ValueType::Value | ValueType::Deletion);
        match &mut self.last {
            Some((key, s, h)) => {
                key.clear();
                key.extend_from_slice(p.user_key);
                *s = stripe;
                *h = hides;
            }
            None => self.last = Some((p.user_key.to_vec(), stripe, hides)),
        }
        false
    }
}

/// The flush thread's loop: flush the oldest immutable memtable of a
/// family while there is one; exit at shutdown.
pub(super) fn run(core: &DbCore) {
    let mut st = lock(&core.state);
    loop {
        if core.shutting_down.load(Ordering::Acquire) {
            return;
        }
        if st.bg_error.is_none() {
            let next = st
                .cfs
                .values()
                .find(|c| !c.imms.is_empty() && !c.flushing)
                .map(|c| c.shared.id);
            if let Some(id) = next {
                st = flush_oldest(core, st, id);
                continue;
            }
        }
        st = core
            .bg_cv
            .wait(st)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

fn flush_oldest<'a>(
    core: &'a DbCore,
    mut st: std::sync::MutexGuard<'a, DbState>,
    id: u32,
) -> std::sync::MutexGuard<'a, DbState> {
    let Some(cf) = st.cfs.get_mut(&id) else {
        return st;
    };
    let Some(imm) = cf.imms.front() else {
        return st;
    };
    let mem = Arc::clone(&imm.mem);
    let opts = Arc::clone(&cf.shared.opts);
    cf.flushing = true;
    let number = st.versions.new_file_number();
    let snapshots = core.snapshots.sequences();
    st.pending_outputs.push(number);
    drop(st);

    // The WALs closed by switches (this memtable's among them) are synced
    // first thing, so they do not stay owed while the table is written.
    let closed_synced = core.sync_closed_wals();
    // A panic fails the flush like any other error (see `run_task`).
    let written = closed_synced.and_then(|()| {
        catch_panic(
            || format!("flush of table {number}"),
            || {
                write_level0_table(
                    core.fs.as_ref(),
                    &core.dir,
                    &core.tables,
                    mem,
                    number,
                    &opts,
                    &snapshots,
                )
            },
        )
        .and_then(|r| r)
    });

    let st = lock(&core.state);
    let (mut st, result) = match written {
        Ok(meta) => {
            if let Some(m) = &meta {
                super::statistics::Counters::add(&core.counters.flush_bytes, m.file_size);
            }
            match &meta {
                Some(m) => log::info!(
                    "flush: memtable -> L0 table {} ({} entries, {} bytes; column family {id})",
                    m.number,
                    m.num_entries,
                    m.file_size
                ),
                None => log::info!("flush: empty memtable, no table written"),
            }
            let mut edit = VersionEdit {
                column_family: id,
                ..VersionEdit::default()
            };
            if let Some(meta) = meta {
                edit.new_files.push((0, meta));
            }
            // The WALs before the next memtable's hold only flushed data of
            // this family now.
            if let Some(cf) = st.cfs.get(&id) {
                let next_log = cf.imms.get(1).map_or(cf.mem_log_number, |i| i.log_number);
                edit.log_number = Some(next_log);
            }
            // The table's sequence numbers must stay visible after a reopen
            // even once its WAL is gone.
            edit.last_sequence = Some(core.last_visible());
            // The edit names `next_log` and makes older WALs obsolete: a
            // switch since this flush started may have closed WALs (other
            // families' writes) and created `next_log` with its directory
            // entry not yet durable. `closed_wals.sync` covers every switch
            // made before `next_log` was read above, under `state`.
            drop(st);
            let synced = core.sync_closed_wals();
            let st = lock(&core.state);
            match synced {
                Ok(()) => core.apply_edit(st, edit, |st| {
                    if let Some(cf) = st.cfs.get_mut(&id) {
                        cf.imms.pop_front();
                        cf.flush_count += 1;
                    }
                    core.install_super_version(st, id);
                }),
                Err(e) => (st, Err(e)),
            }
        }
        Err(e) => {
            let mut st = st;
            if st.cfs.contains_key(&id) {
                st.bg_error.get_or_insert(e.clone());
            }
            (st, Err(e))
        }
    };
    let dropped = !st.cfs.contains_key(&id);
    if let Err(e) = &result {
        if dropped {
            log::info!("flush of table {number} abandoned: its column family was dropped");
        } else {
            log::error!("flush of table {number} failed, writes are stopped: {e}");
        }
    }
    st.pending_outputs.retain(|&n| n != number);
    if let Some(cf) = st.cfs.get_mut(&id) {
        cf.flushing = false;
    }
    core.bg_cv.notify_all();
    if result.is_ok() || dropped {
        drop(st);
        core.delete_obsolete_files();
        st = lock(&core.state);
    }
    st
}

/// Freezes family `cf`'s active memtable (if non-empty) and waits until
/// every memtable of it frozen so far has been flushed — not memtables
/// frozen later by writers, which would starve this call under a steady
/// write load.
pub(super) fn flush_and_wait(core: &DbCore, cf: u32) -> Result<()> {
    core.check_writable("flush")?;
    // The target is read before the log lock is released: only a holder of
    // that lock freezes memtables, so no writer's memtable frozen after the
    // switch can be counted in. (Reading it after the release let a writer
    // freeze one in between, and flush() then waited for that one too —
    // found by flush_waits_for_its_own_memtables under load, ~3% of runs.)
    let (mut st, target) = {
        let mut log = lock(&core.log);
        core.switch_memtable(&mut log, Some(cf))?;
        let st = lock(&core.state);
        let target = st.cfs.get(&cf).map(|c| c.frozen_count);
        drop(log);
        (st, target)
    };
    let Some(target) = target else {
        return Err(Error::cf_dropped(
            st.dropped_names.get(&cf).map_or("?", String::as_str),
        ));
    };
    loop {
        if let Some(e) = &st.bg_error {
            return Err(Error::Background(Box::new(e.clone())));
        }
        match st.cfs.get(&cf) {
            Some(c) if c.flush_count >= target => return Ok(()),
            Some(_) => {}
            // Dropped meanwhile: nothing of it is left to flush.
            None => return Ok(()),
        }
        if core.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Shutdown);
        }
        st = core
            .bg_cv
            .wait(st)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::Shadowing;
    use crate::key::{append_internal_key, ValueType};

    fn ik(k: &str, seq: u64, t: ValueType) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k.as_bytes(), seq, t);
        v
    }

    /// Entries in memtable order; returns the sequence numbers kept.
    fn kept(entries: &[(&str, u64, ValueType)], snapshots: &[u64]) -> Vec<u64> {
        let mut s = Shadowing::new(snapshots);
        entries
            .iter()
            .filter(|(k, seq, t)| !s.shadowed(&ik(k, *seq, *t)))
            .map(|e| e.1)
            .collect()
    }

    #[test]
    fn keeps_the_newest_version_per_stripe() {
        use ValueType::*;
        let e = [
            ("a", 9, Value),
            ("a", 7, Deletion),
            ("a", 5, Value),
            ("a", 2, Value),
            ("b", 8, Value),
            ("b", 1, Value),
        ];
        assert_eq!(kept(&e, &[]), vec![9, 8]);
        // A snapshot at 5 sees a@5 and b@1; one at 7 sees the deletion a@7.
        assert_eq!(kept(&e, &[5]), vec![9, 5, 8, 1]);
        assert_eq!(kept(&e, &[5, 7]), vec![9, 7, 5, 8, 1]);
    }

    #[test]
    fn merge_operands_keep_what_lies_below_them() {
        use ValueType::*;
        let e = [
            ("a", 9, Merge),
            ("a", 7, Merge),
            ("a", 5, Value),
            ("a", 2, Value),
        ];
        // The operands need a@5; a@5 hides a@2.
        assert_eq!(kept(&e, &[]), vec![9, 7, 5]);
        let e = [("a", 9, Value), ("a", 7, Merge), ("a", 5, Value)];
        assert_eq!(kept(&e, &[]), vec![9]);
        assert_eq!(kept(&e, &[7]), vec![9, 7, 5]);
    }
}
