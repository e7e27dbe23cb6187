//! Compaction threads, manual `compact_range`, and installing results.
//!
//! Files being compacted are listed in `DbState::compacting`; the picker
//! never chooses a task that touches one, so several compaction threads can
//! run at once on disjoint files.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use super::{lock, Db, DbCore, DbState};
use crate::compaction::{
    pick_compaction, run_compaction, task_for, CompactionConfig, CompactionTask, OutputSpec,
};
use crate::error::{catch_panic, Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::user_key;
use crate::options::Options;
use crate::sst::BlockReadOptions;
use crate::version::{VersionEdit, NUM_LEVELS};

impl Db {
    /// Compacts every key in `[begin, end]` (`None` = unbounded) down the
    /// levels, after flushing the memtable. Blocks until done. With a
    /// compaction filter set, the last level holding keys of the range is
    /// rewritten as well, so every value in the range meets the filter.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.compact_range_in(0, begin, end)
    }

    /// [`Db::compact_range`] in column family `cf`.
    pub fn compact_range_cf(
        &self,
        cf: &super::ColumnFamily,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        cf.live()?;
        self.compact_range_in(cf.id(), begin, end)
    }

    fn compact_range_in(&self, cf: u32, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let core = self.core();
        super::flush::flush_and_wait(core, cf)?;
        let dropped = || Error::InvalidArgument(format!("column family id {cf} was dropped"));
        let cf_opts = {
            let st = lock(&core.state);
            Arc::clone(&st.cfs.get(&cf).ok_or_else(dropped)?.shared.opts)
        };
        let lo = begin.unwrap_or(&[]).to_vec();
        let in_range = |v: &crate::version::Version, level: usize| {
            v.levels[level]
                .iter()
                .filter(|f| {
                    end.is_none_or(|e| user_key(&f.smallest) <= e)
                        && user_key(&f.largest) >= lo.as_slice()
                })
                .cloned()
                .collect::<Vec<_>>()
        };
        let max_level = {
            let st = lock(&core.state);
            let v = st.versions.current_cf(cf).ok_or_else(dropped)?;
            // At least L0 → L1, as in LevelDB.
            (1..NUM_LEVELS)
                .rev()
                .find(|&l| !in_range(&v, l).is_empty())
                .unwrap_or(1)
        };
        // With a compaction filter the last level is rewritten too (RocksDB's
        // default `kIfHaveCompactionFilter`), so the filter sees every value
        // in the range; it moves one level down.
        let last = if cf_opts.compaction_filter.is_some() {
            (max_level + 1).min(NUM_LEVELS - 1)
        } else {
            max_level
        };
        for level in 0..last {
            let mut st = lock(&core.state);
            loop {
                if let Some(e) = &st.bg_error {
                    return Err(Error::Background(Box::new(e.clone())));
                }
                core.check_open()?;
                // The version is released before the task runs: held across
                // `run_task`, it kept the task's inputs live through the
                // sweep that follows the install, and nothing swept them
                // again until a reopen (issue 29 follow-up).
                let task = {
                    let v = st.versions.current_cf(cf).ok_or_else(dropped)?;
                    let files = if level == 0 {
                        v.levels[0].clone()
                    } else {
                        in_range(&v, level)
                    };
                    if files.is_empty() {
                        break;
                    }
                    task_for(&v, level, files, &st.compacting)
                };
                match task {
                    Some(task) => {
                        let (guard, result) = core.run_task(st, cf, task, false);
                        drop(guard);
                        result?;
                        break;
                    }
                    // Inputs busy in a background compaction: wait for it.
                    None => {
                        st = core
                            .bg_cv
                            .wait(st)
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                    }
                }
            }
        }
        Ok(())
    }
}

impl DbCore {
    pub(super) fn compaction_config(opts: &Options) -> CompactionConfig {
        CompactionConfig {
            level0_file_num_compaction_trigger: opts.level0_file_num_compaction_trigger,
            max_bytes_for_level_base: opts.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: opts.max_bytes_for_level_multiplier,
        }
    }

    /// Runs `task` (releasing the state lock while merging) and installs its
    /// result; returns the re-taken lock and the outcome. A failure becomes
    /// the background error: the inputs stay live, nothing is lost.
    fn run_task<'a>(
        &'a self,
        mut st: MutexGuard<'a, DbState>,
        cf: u32,
        task: CompactionTask,
        allow_trivial_move: bool,
    ) -> (MutexGuard<'a, DbState>, Result<()>) {
        let Some(opts) = st.cfs.get(&cf).map(|c| Arc::clone(&c.shared.opts)) else {
            return (st, Err(Error::cf_dropped(&format!("id {cf}"))));
        };
        st.compacting.extend(task.input_numbers());
        let mut edit = VersionEdit {
            column_family: cf,
            ..VersionEdit::default()
        };
        for (which, files) in task.inputs.iter().enumerate() {
            for f in files {
                edit.deleted_files
                    .push(((task.level + which) as u32, f.number));
            }
        }
        // The file numbers this job allocated (and protected in
        // `pending_outputs`); only these may lose that protection below.
        let mut allocated: Vec<u64> = Vec::new();
        let outputs = if allow_trivial_move && task.is_trivial_move() {
            Ok(task.inputs[0].iter().map(|f| (**f).clone()).collect())
        } else {
            let snapshots = self.snapshots.sequences();
            drop(st);
            // A panic in the job (user code is caught where it is called;
            // this is the last resort) fails it like any other error,
            // instead of killing the thread with its inputs still marked
            // as compacting.
            let merged = catch_panic(
                || {
                    format!(
                        "compaction of L{} into L{}",
                        task.level,
                        task.output_level()
                    )
                },
                || self.merge_inputs(&task, &opts, &snapshots, &mut allocated),
            )
            .and_then(|r| r);
            st = lock(&self.state);
            merged
        };
        let (mut st, result) = match outputs {
            Ok(files) => {
                if !allocated.is_empty() {
                    let c = &self.counters;
                    let read: u64 = task.inputs.iter().flatten().map(|f| f.file_size).sum();
                    let written: u64 = files.iter().map(|f| f.file_size).sum();
                    super::statistics::Counters::add(&c.compaction_bytes_read, read);
                    super::statistics::Counters::add(&c.compaction_bytes_written, written);
                }
                for f in files {
                    edit.new_files.push((task.output_level() as u32, f));
                }
                self.apply_edit(st, edit, |st| {
                    if let (Some(last), Some(c)) = (
                        task.inputs[0].iter().map(|f| user_key(&f.largest)).max(),
                        st.cfs.get_mut(&cf),
                    ) {
                        c.compact_cursor[task.level] = last.to_vec();
                    }
                    st.compaction_count += 1;
                    self.install_super_version(st, cf);
                })
            }
            Err(e) => {
                if st.cfs.contains_key(&cf) {
                    st.bg_error.get_or_insert(e.clone());
                }
                (st, Err(e))
            }
        };
        let dropped = !st.cfs.contains_key(&cf);
        match &result {
            Ok(()) => log::info!(
                "compaction: L{} {:?} + L{} {:?} -> L{} {:?}{}",
                task.level,
                task.inputs[0].iter().map(|f| f.number).collect::<Vec<_>>(),
                task.output_level(),
                task.inputs[1].iter().map(|f| f.number).collect::<Vec<_>>(),
                task.output_level(),
                allocated,
                if allocated.is_empty() { " (moved)" } else { "" }
            ),
            Err(e) if dropped => log::info!(
                "compaction of L{} abandoned: column family {cf} was dropped ({e})",
                task.level
            ),
            Err(e) => log::error!(
                "compaction of L{} into L{} failed, writes are stopped: {e}",
                task.level,
                task.output_level()
            ),
        }
        for n in task.input_numbers() {
            st.compacting.remove(&n);
        }
        // Installed outputs are protected by the version now; failed ones
        // are garbage for the obsolete-file sweep. Other jobs' pending
        // outputs keep their protection (issue 12, bug 2: a failed
        // compaction used to drop every job's, and a concurrent sweep then
        // deleted another compaction's finished outputs).
        st.pending_outputs.retain(|n| !allocated.contains(n));
        self.bg_cv.notify_all();
        if result.is_ok() || dropped {
            drop(st);
            self.delete_obsolete_files();
            st = lock(&self.state);
        }
        (st, result)
    }

    /// Merges the task's input files into new tables (no lock held).
    /// Every file number it allocates is pushed to `allocated` (and to
    /// `pending_outputs`, which the caller cleans up).
    fn merge_inputs(
        &self,
        task: &CompactionTask,
        opts: &Options,
        snapshots: &[u64],
        allocated: &mut Vec<u64>,
    ) -> Result<Vec<crate::version::FileMetaData>> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut range_dels = Vec::new();
        for f in task.inputs.iter().flatten() {
            // Compaction reads each block once: keep it out of the cache so
            // hot blocks stay.
            let ro = BlockReadOptions {
                fill_cache: false,
                verify_checksums: true,
            };
            let table = self.tables.get(f.number)?;
            if let Some(rd) = table.range_dels() {
                range_dels.extend(rd.tombstones.iter().cloned());
            }
            children.push(crate::sst::global_seqno::table_iter(
                table,
                ro,
                f.global_seqno,
                f.number,
            ));
        }
        let spec = OutputSpec {
            fs: self.fs.as_ref(),
            dir: &self.dir,
            table_options: opts.table_options(),
            target_file_size: opts.target_file_size_base,
            filter: opts.compaction_filter.as_deref(),
            merge_operator: opts.merge_operator.as_ref(),
        };
        let mut new_number = || {
            let mut st = lock(&self.state);
            let n = st.versions.new_file_number();
            st.pending_outputs.push(n);
            allocated.push(n);
            n
        };
        let files = run_compaction(
            task,
            Box::new(MergingIterator::new(children)),
            range_dels,
            snapshots,
            &spec,
            &mut new_number,
        )?
        .files;
        // The outputs' names must be durable before a MANIFEST edit refers
        // to them (and before the inputs, whose data they hold, go away).
        if !files.is_empty() {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(files)
    }
}

/// A compaction thread's loop: run the most urgent compaction while there
/// is one; sleep until a flush or compaction changes the picture.
pub(super) fn run(core: &DbCore) {
    let mut st = lock(&core.state);
    loop {
        if core.shutting_down.load(Ordering::Acquire) {
            return;
        }
        if st.bg_error.is_none() {
            // The families in id order; each decides from its own options.
            let picked = st.cfs.values().find_map(|c| {
                if c.shared.opts.disable_auto_compactions {
                    return None;
                }
                let v = st.versions.current_cf(c.shared.id)?;
                let cfg = DbCore::compaction_config(&c.shared.opts);
                pick_compaction(&v, &cfg, &st.compacting, &c.compact_cursor)
                    .map(|t| (c.shared.id, t))
            });
            if let Some((cf, task)) = picked {
                st = core.run_task(st, cf, task, true).0;
                continue;
            }
        }
        st = core
            .bg_cv
            .wait(st)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filename::{self, FileKind};
    use crate::fs::{Fault, FaultInjectionFs, FaultOp, FileSystem, PosixFs};

    /// Issue 12, bug 2: a failed compaction dropped the `pending_outputs`
    /// protection of every other job, so the next obsolete-file sweep (a
    /// concurrent flush's) deleted another job's finished outputs, which
    /// that job then installed in the MANIFEST anyway.
    #[test]
    fn failed_compaction_keeps_other_jobs_outputs_protected() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultInjectionFs::new(Arc::new(PosixFs)));
        let opts = Options {
            disable_auto_compactions: true,
            ..Options::default()
        };
        let db = Db::open_with_fs(dir.path(), opts, fs.clone()).unwrap();
        for k in [b"a", b"b", b"c"] {
            db.put(k, b"v").unwrap();
        }
        db.flush().unwrap();
        // Another job in flight: its output number is allocated and
        // protected, and its file is already written.
        let core = db.core();
        let other = {
            let mut st = lock(&core.state);
            let n = st.versions.new_file_number();
            st.pending_outputs.push(n);
            n
        };
        let other_path = filename::path(dir.path(), FileKind::Table, other);
        let mut f = fs.new_writable(&other_path).unwrap();
        f.append(b"finished output of another job").unwrap();
        f.sync().unwrap();
        drop(f);

        fs.inject(Fault::next(FaultOp::Create).on_files(".sst"));
        assert!(db.compact_range(None, None).is_err(), "the fault fires");
        // The sweep a concurrent flush or compaction runs after installing.
        core.delete_obsolete_files();
        assert!(
            other_path.exists(),
            "another job's pending output was deleted by the sweep"
        );
        assert!(lock(&core.state).pending_outputs.contains(&other));
    }
}
