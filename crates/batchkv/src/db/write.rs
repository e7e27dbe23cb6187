//! The write path: validation, group commit, WAL append, memtable insert,
//! publication of the new sequence number, and memtable switching.
//!
//! Group commit (LevelDB's design): writers queue up; the writer at the
//! front is the leader. It takes a group of queued batches, writes them to
//! the WAL as one record (fsynced if any of them asked for `sync`, after
//! the WALs closed by memtable switches: `closed_wals.rs`),
//! inserts them into the memtable, publishes the last sequence number, and
//! wakes the group's followers with their result.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::statistics::Counters;
use super::{lock, Db, DbCore, ImmTable, LogState};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::memtable::NewEntry;
use crate::options::{WriteOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::wal;

/// A group stops growing past this many bytes of batches...
const MAX_GROUP_BYTES: usize = 1 << 20;
/// ...or, when the leader's batch is small, this much more than it, so a
/// small write is not delayed behind a large group.
const SMALL_GROUP_EXTRA: usize = 128 << 10;

/// How long a queued writer without `sync` yields its thread, checking
/// [`PendingWrite::woken`], before it sleeps on its condition variable
/// (RocksDB's adaptive yield in its write thread, there up to 100 µs): a
/// leader's small group is written in a few microseconds, less than a
/// sleep and a wake-up cost. 20 µs did better than 50 µs in every row of
/// docs/perf/history/2026-11-29-pinned-one-worker.md (concurrent writers
/// in `batchkv serve`).
const YIELD_BEFORE_WAIT: Duration = Duration::from_micros(20);

/// A check a write must pass before it is applied (a transaction's
/// conflict check): run by the write's own leader, under the WAL lock, after
/// every earlier group is published and before the write gets sequence
/// numbers. An `Err` fails the write, which then writes nothing.
pub(super) type Precondition = Box<dyn Fn(&DbCore) -> Result<()> + Send + Sync>;

/// One writer waiting in the queue.
pub(super) struct PendingWrite {
    batch: Mutex<Option<WriteBatch>>,
    opts: WriteOptions,
    /// A write with a precondition is always a group of its own (see
    /// [`Precondition`]).
    precondition: Option<Precondition>,
    /// `Some` once the write is done (by a leader, or by itself).
    result: Mutex<Option<Result<()>>>,
    cv: Condvar,
    /// Set where `cv` is notified (the write is done, or it is now the
    /// queue's front): what a yielding writer watches. Only a hint: the
    /// writer re-checks `result` and the queue under the queue's lock.
    woken: AtomicBool,
}

impl Db {
    /// Inserts or replaces `key`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(&WriteOptions::default(), key, value)
    }

    /// Deletes `key` (a no-op if absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(&WriteOptions::default(), key)
    }

    /// [`Db::put`] with write options (rust-rocksdb's `put_opt`): with
    /// `opts.sync` the write is durable when this returns.
    pub fn put_opt(
        &self,
        opts: &WriteOptions,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(opts, b)
    }

    /// [`Db::delete`] with write options (rust-rocksdb's `delete_opt`).
    pub fn delete_opt(&self, opts: &WriteOptions, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(opts, b)
    }

    /// Adds a merge operand for `key` (RocksDB's `Merge`): reads combine it
    /// with the key's older versions through `Options::merge_operator`
    /// (see [`MergeOperator`](crate::MergeOperator)); compaction combines
    /// operands ahead of time. Writing needs no operator, reading does.
    pub fn merge(
        &self,
        opts: &WriteOptions,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(opts, b)
    }

    /// Deletes every key in `[begin, end)` that exists now (RocksDB's
    /// `DeleteRange`): one range tombstone, however many keys the range
    /// holds; keys written afterwards are visible again, and snapshots taken
    /// before still see the old keys. `begin = end` is a no-op; `begin >
    /// end` is `InvalidArgument`.
    pub fn delete_range(
        &self,
        opts: &WriteOptions,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (begin, end) = (begin.as_ref(), end.as_ref());
        if begin > end {
            return Err(inverted_range(begin, end));
        }
        if begin == end {
            self.core().check_writable("delete_range")?;
            return Ok(());
        }
        let mut b = WriteBatch::new();
        b.delete_range(begin, end);
        self.write(opts, b)
    }

    /// Like [`Db::write`], leaving `batch` with the caller, to write again
    /// or to [`clear`](WriteBatch::clear) (which keeps its allocation) and
    /// refill. Costs one copy of the encoded batch (the group commit hands
    /// batches between threads, so it needs one it owns).
    pub fn write_ref(&self, opts: &WriteOptions, batch: &WriteBatch) -> Result<()> {
        self.write(opts, batch.clone())
    }

    /// Makes every write acknowledged so far durable (RocksDB's `SyncWAL`):
    /// fsyncs the write-ahead log without writing a record, so writes made
    /// without `sync` survive a crash or power loss from here on. Writes
    /// made with `disable_wal` are not in the log; only a flush persists
    /// them.
    ///
    /// Unlike a write with `sync`, the writes it covers were visible to
    /// readers before they were durable. A failed fsync is reported here
    /// and, as for a failed synced write, stops all further writes (what
    /// reached the disk is unknown).
    pub fn sync_wal(&self) -> Result<()> {
        self.core().sync_wal()
    }

    /// Applies `batch` atomically: after a crash either all or none of it
    /// is visible. With `opts.sync` it is durable when this returns.
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.write_checked(opts, batch, None)
    }

    /// [`Db::write`] with a [`Precondition`] checked atomically with the
    /// write. An empty batch is not written and its precondition not run.
    pub(super) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        precondition: Option<Precondition>,
    ) -> Result<()> {
        let core = self.core();
        let _timer = core.counters.latency.timer(super::latency::Timed::Write);
        core.check_writable("write")?;
        if batch.has_inverted_range() {
            let bad = batch.ops().find_map(|op| match op {
                crate::BatchOp::DeleteRange { begin, end } if begin > end => {
                    Some(inverted_range(begin, end))
                }
                _ => None,
            });
            return Err(
                bad.unwrap_or_else(|| Error::InvalidArgument("delete_range: begin > end".into()))
            );
        }
        if batch.max_key_len() > MAX_KEY_SIZE {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the limit of {MAX_KEY_SIZE} bytes",
                batch.max_key_len()
            )));
        }
        if batch.max_value_len() > MAX_VALUE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the limit of {MAX_VALUE_SIZE} bytes",
                batch.max_value_len()
            )));
        }
        if batch.is_empty() {
            return Ok(());
        }
        if batch.has_column_families() {
            let mut ids: Vec<u32> = batch.iter().map(|e| e.cf).collect();
            ids.sort_unstable();
            ids.dedup();
            core.check_cf_ids(&ids)?;
        }
        let (keys, bytes) = (batch.len() as u64, batch.approximate_size() as u64);
        core.write(*opts, batch, precondition)?;
        Counters::add(&core.counters.keys_written, keys);
        Counters::add(&core.counters.bytes_written, bytes);
        Ok(())
    }
}

fn inverted_range(begin: &[u8], end: &[u8]) -> Error {
    Error::InvalidArgument(format!(
        "delete_range: begin \"{}\" is after end \"{}\"",
        begin.escape_ascii(),
        end.escape_ascii()
    ))
}

impl DbCore {
    /// [`Db::sync_wal`]: the WALs closed by switches first, then the
    /// current one (a durable record implies every older one is).
    fn sync_wal(&self) -> Result<()> {
        self.check_writable("sync_wal")?;
        if let Some(e) = &lock(&self.state).bg_error {
            return Err(Error::Background(Box::new(e.clone())));
        }
        // Taken by write leaders for their whole WAL append: a group's
        // record is either all written before this sync or after it.
        let mut log = lock(&self.log);
        self.sync_closed_wals()?;
        Counters::add(&self.counters.wal_syncs, 1);
        log.writer
            .sync()
            .inspect_err(|e| self.set_bg_error(e.clone()))
    }

    /// Pays the fsyncs memtable switches left owed (`closed_wals.rs`): every
    /// WAL closed so far, then the directory. A failure stops all further
    /// writes, as a failed WAL fsync on the write path does.
    pub(super) fn sync_closed_wals(&self) -> Result<()> {
        self.closed_wals
            .sync(self.fs.as_ref(), &self.dir)
            .map(|_| ())
            .inspect_err(|e| self.set_bg_error(e.clone()))
    }

    fn write(
        &self,
        opts: WriteOptions,
        batch: WriteBatch,
        precondition: Option<Precondition>,
    ) -> Result<()> {
        let me = Arc::new(PendingWrite {
            batch: Mutex::new(Some(batch)),
            opts,
            precondition,
            result: Mutex::new(None),
            cv: Condvar::new(),
            woken: AtomicBool::new(false),
        });
        {
            let mut queue = lock(&self.write_queue);
            queue.push_back(Arc::clone(&me));
            let mut yielded = false;
            loop {
                if let Some(r) = lock(&me.result).take() {
                    return r;
                }
                if queue.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                    break;
                }
                if !yielded && !me.opts.sync {
                    // Once, before sleeping: give the leader the CPU and
                    // watch for its notification without the lock. Every
                    // change is made under the queue's lock, re-checked
                    // above once it is taken again, so a notification
                    // sent meanwhile is not lost. (A `sync` write waits
                    // for an fsync, far longer: it sleeps at once.)
                    yielded = true;
                    drop(queue);
                    let start = Instant::now();
                    while !me.woken.load(Ordering::Acquire) && start.elapsed() < YIELD_BEFORE_WAIT {
                        std::thread::yield_now();
                    }
                    queue = lock(&self.write_queue);
                    continue;
                }
                queue = me
                    .cv
                    .wait(queue)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        // We lead. The WAL lock is uncontended: only a leader takes it.
        let mut log = lock(&self.log);
        let checked = self.switch_memtable(&mut log, None).and_then(|()| {
            // Every earlier group is published and no other write or
            // ingestion runs until `log` is released.
            me.precondition.as_ref().map_or(Ok(()), |check| check(self))
        });
        let (group, result) = match checked {
            Ok(()) => {
                let group = self.take_group(&me);
                let r = self.write_group(&me, &group, &mut log);
                (group, r)
            }
            Err(e) => (vec![Arc::clone(&me)], Err(e)),
        };
        drop(log);
        self.finish_group(&me, &group, &result);
        result
    }

    /// Writes the group's batches to the WAL and the memtable, then
    /// publishes their sequence numbers.
    fn write_group(
        &self,
        me: &PendingWrite,
        group: &[Arc<PendingWrite>],
        log: &mut LogState,
    ) -> Result<()> {
        let mut batches: Vec<WriteBatch> = group
            .iter()
            .map(|w| lock(&w.batch).take().unwrap_or_default())
            .collect();
        let first_seq = self.last_visible() + 1;
        #[cfg(feature = "invariants")]
        {
            let recorded = lock(&self.state).versions.last_sequence();
            assert!(
                recorded < first_seq,
                "invariant violated: sequence {first_seq} would reuse one the MANIFEST records ({recorded})"
            );
        }
        let mut seq = first_seq;
        for b in &mut batches {
            b.set_sequence(seq);
            seq += b.len() as u64;
        }
        let sync = group.iter().any(|w| w.opts.sync);
        if !me.opts.disable_wal {
            let record = if batches.len() == 1 {
                std::borrow::Cow::Borrowed(batches[0].rep())
            } else {
                let mut merged = WriteBatch::new();
                merged.set_sequence(first_seq);
                for b in &batches {
                    merged.append(b);
                }
                std::borrow::Cow::Owned(merged.rep().to_vec())
            };
            Counters::add(&self.counters.wal_bytes, record.len() as u64);
            if sync {
                Counters::add(&self.counters.wal_syncs, 1);
            }
            // No hole after power loss: before a synced record can be
            // durable, so is every WAL a switch closed (and the current
            // one's directory entry). A write without `sync` owes nothing.
            let older_durable = if sync {
                self.closed_wals
                    .sync(self.fs.as_ref(), &self.dir)
                    .map(|_| ())
            } else {
                Ok(())
            };
            let logged = older_durable
                .and_then(|()| log.writer.add_record(&record))
                .and_then(|()| {
                    if sync {
                        log.writer.sync()
                    } else {
                        log.writer.flush()
                    }
                });
            if let Err(e) = logged {
                // The WAL may hold a partial record and the OS may have
                // dropped dirty pages: refuse all further writes.
                self.set_bg_error(e.clone());
                return Err(e);
            }
            if seq > first_seq {
                log.last_sequence = seq - 1;
            }
        }
        let multi_cf = batches.iter().any(WriteBatch::has_column_families);
        if !multi_cf {
            if me.opts.disable_wal {
                self.default_cf.unpersisted.store(true, Ordering::Release);
            }
            let mem = Arc::clone(&lock(&self.state).default_cf().mem);
            // The group's entries in one call: the memtable may overlap
            // their searches (`MemTable::insert_many`).
            let entries: Vec<NewEntry<'_>> = batches
                .iter()
                .flat_map(|b| {
                    let entries = (b.sequence()..).zip(b.iter()).zip(b.hints());
                    entries.map(|((seq, e), hint)| NewEntry {
                        seq,
                        t: e.value_type,
                        user_key: e.key,
                        value: e.value,
                        hint,
                    })
                })
                .collect();
            match mem.insert_many(&entries) {
                Ok(hinted) => Counters::add(&self.counters.hinted_inserts, hinted as u64),
                Err(e) => {
                    // The WAL has the group but the memtable does not.
                    self.set_bg_error(e.clone());
                    return Err(e);
                }
            }
        } else {
            // The families' memtables, looked up once per group. A family
            // dropped since `Db::write` checked it is skipped (as WAL replay
            // skips records of dropped families): it holds no data any more.
            let mems: Vec<(u32, Arc<dyn crate::memtable::MemTable>)> = {
                let st = lock(&self.state);
                st.cfs
                    .iter()
                    .map(|(&id, c)| (id, Arc::clone(&c.mem)))
                    .collect()
            };
            for b in &batches {
                for (s, entry) in (b.sequence()..).zip(b.iter()) {
                    let Some((_, mem)) = mems.iter().find(|(id, _)| *id == entry.cf) else {
                        continue;
                    };
                    if let Err(e) = mem.insert(s, entry.value_type, entry.key, entry.value) {
                        self.set_bg_error(e.clone());
                        return Err(e);
                    }
                }
            }
            if me.opts.disable_wal {
                let st = lock(&self.state);
                for b in &batches {
                    for e in b.iter() {
                        if let Some(c) = st.cfs.get(&e.cf) {
                            c.shared.unpersisted.store(true, Ordering::Release);
                        }
                    }
                }
            }
        }
        // Release: readers that load this sequence see every insert above.
        self.visible_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Pops the leader's group from the queue (the leader stays at the
    /// front until `finish_group`).
    fn take_group(&self, me: &Arc<PendingWrite>) -> Vec<Arc<PendingWrite>> {
        let queue = lock(&self.write_queue);
        let first_size = lock(&me.batch)
            .as_ref()
            .map_or(0, WriteBatch::approximate_size);
        let limit = if first_size <= SMALL_GROUP_EXTRA {
            first_size + SMALL_GROUP_EXTRA
        } else {
            MAX_GROUP_BYTES
        };
        let mut size = 0;
        let mut group = Vec::new();
        for w in queue.iter() {
            if !group.is_empty() {
                // A sync write must not ride in a group that will not fsync,
                // and WAL and no-WAL writes do not mix. A write with a
                // precondition is alone in its group: its check must see
                // every write sequenced before it.
                if (w.opts.sync && !me.opts.sync)
                    || w.opts.disable_wal != me.opts.disable_wal
                    || w.precondition.is_some()
                    || me.precondition.is_some()
                {
                    break;
                }
            }
            let s = lock(&w.batch)
                .as_ref()
                .map_or(0, WriteBatch::approximate_size);
            if !group.is_empty() && size + s > limit {
                break;
            }
            size += s;
            group.push(Arc::clone(w));
        }
        group
    }

    /// Hands every group member its result, removes them from the queue,
    /// and wakes the next leader.
    fn finish_group(
        &self,
        me: &Arc<PendingWrite>,
        group: &[Arc<PendingWrite>],
        result: &Result<()>,
    ) {
        let mut queue = lock(&self.write_queue);
        for w in group {
            if let Some(pos) = queue.iter().position(|q| Arc::ptr_eq(q, w)) {
                queue.remove(pos);
            }
            if !Arc::ptr_eq(w, me) {
                *lock(&w.result) = Some(result.clone());
                w.woken.store(true, Ordering::Release);
                w.cv.notify_one();
            }
        }
        if let Some(front) = queue.front() {
            front.woken.store(true, Ordering::Release);
            front.cv.notify_one();
        }
    }

    pub(super) fn set_bg_error(&self, e: Error) {
        log::error!("background error, writes are stopped: {e}");
        let mut st = lock(&self.state);
        st.bg_error.get_or_insert(e);
        self.bg_cv.notify_all();
    }

    /// Makes room in the active memtables: when a family's is full (or it
    /// is `force`d and non-empty), freezes it and starts a new memtable and
    /// WAL; stalls while `max_write_buffer_number` memtables of a family
    /// are in memory or a family has too many L0 files. The caller holds
    /// the WAL lock (it is the leader, or `flush`).
    pub(super) fn switch_memtable(&self, log: &mut LogState, force: Option<u32>) -> Result<()> {
        let started = std::time::Instant::now();
        let mut stalled = false;
        let r = self.make_room(log, force, &mut stalled);
        if stalled {
            Counters::add(
                &self.counters.stall_micros,
                started.elapsed().as_micros() as u64,
            );
        }
        r
    }

    /// [`switch_memtable`](Self::switch_memtable)'s body; sets `stalled`
    /// when it waited or slowed the writer down.
    fn make_room(
        &self,
        log: &mut LogState,
        mut force: Option<u32>,
        stalled: &mut bool,
    ) -> Result<()> {
        // Counts this writer in `writers_stopped` from its first stop wait
        // until it returns.
        struct Stopped<'a>(&'a std::sync::atomic::AtomicU64, bool);
        impl Stopped<'_> {
            fn enter(&mut self) {
                if !std::mem::replace(&mut self.1, true) {
                    Counters::add(self.0, 1);
                }
            }
        }
        impl Drop for Stopped<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        let mut stopped = Stopped(&self.counters.writers_stopped, false);
        let mut st = lock(&self.state);
        let mut delayed = false;
        // Each stall is logged once, not at every re-check.
        let mut warned = false;
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Box::new(e.clone())));
            }
            self.check_open()?;
            // The family with the most L0 files, against its own triggers.
            let l0 = st
                .cfs
                .values()
                .filter(|c| !c.shared.opts.disable_auto_compactions)
                .filter_map(|c| {
                    let n = st.versions.current_cf(c.shared.id)?.levels[0].len();
                    Some((n, &c.shared.opts))
                })
                .max_by_key(|(n, o)| n.saturating_sub(o.level0_slowdown_writes_trigger));
            if let Some((l0, o)) = l0 {
                if l0 >= o.level0_stop_writes_trigger {
                    // Stop: wait for compaction to bring L0 down.
                    *stalled = true;
                    stopped.enter();
                    if !std::mem::replace(&mut warned, true) {
                        log::warn!(
                            "write stall: {l0} L0 files (stop trigger {}); waiting for compaction",
                            o.level0_stop_writes_trigger
                        );
                    }
                    st = self
                        .bg_cv
                        .wait_timeout(st, std::time::Duration::from_millis(100))
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                    continue;
                }
                if l0 >= o.level0_slowdown_writes_trigger && !delayed {
                    // Slow down gradually (1 ms per write group) before the
                    // stop, so writers never hit a cliff.
                    *stalled = true;
                    drop(st);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    delayed = true;
                    st = lock(&self.state);
                    continue;
                }
            }
            // The first family whose memtable must be switched.
            let target = st.cfs.values().find(|c| {
                let full = c.mem.bytes_in_use() >= c.shared.opts.write_buffer_size;
                (full || force == Some(c.shared.id)) && c.mem.num_entries() > 0
            });
            let Some(cf) = target else {
                return Ok(());
            };
            let id = cf.shared.id;
            if cf.imms.len() + 1 >= cf.shared.opts.max_write_buffer_number {
                // Stall: memory stays bounded until the flush catches up.
                *stalled = true;
                stopped.enter();
                if !std::mem::replace(&mut warned, true) {
                    log::warn!(
                        "write stall: {} memtables of column family {:?} waiting for flush (max_write_buffer_number {})",
                        cf.imms.len(),
                        cf.shared.name,
                        cf.shared.opts.max_write_buffer_number
                    );
                }
                st = self
                    .bg_cv
                    .wait_timeout(st, std::time::Duration::from_millis(100))
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
                continue;
            }
            let number = st.versions.new_file_number();
            let path = filename::path(&self.dir, FileKind::Wal, number);
            // Every record of the old WAL is handed to the OS (a leader
            // flushes after its append; this flush finds nothing to do).
            // Its fsync and the new WAL's directory entry are owed, not
            // paid here: `closed_wals.rs` says who pays them before
            // anything depends on them.
            // The new WAL starts by naming the old one, its length and
            // last sequence number: if power loss keeps the new WAL's
            // pages and not the old one's end, recovery sees the hole
            // (`wal_replay.rs`) instead of applying later writes after it.
            let predecessor =
                wal::WalPredecessor::new(log.number, log.writer.file_len(), log.last_sequence);
            let created = log
                .writer
                .flush()
                .and_then(|()| self.fs.new_writable(&path))
                .and_then(|file| {
                    let mut w = wal::Writer::new(file);
                    w.add_predecessor(&predecessor)?;
                    Ok(w)
                });
            let writer = match created {
                Ok(w) => w,
                Err(e) => {
                    st.bg_error.get_or_insert(e.clone());
                    return Err(e);
                }
            };
            let old = std::mem::replace(&mut log.writer, writer);
            self.closed_wals.closed(log.number, old);
            log.number = number;
            log.last_sequence = 0;
            st.current_wal = number;
            // Idle families move to the new WAL: they need nothing older.
            // Exact under the log lock (no leader is inserting).
            for c in st.cfs.values_mut() {
                if c.imms.is_empty() && c.mem.num_entries() == 0 {
                    c.mem_log_number = number;
                }
            }
            #[allow(
                clippy::expect_used,
                reason = "the family was found in `st.cfs` above, under the same lock"
            )]
            let cf = st
                .cfs
                .get_mut(&id)
                .expect("found above under the same lock");
            let new_mem = self.new_memtable(&cf.memtables);
            let old = std::mem::replace(&mut cf.mem, new_mem);
            let old_log = std::mem::replace(&mut cf.mem_log_number, number);
            cf.imms.push_back(ImmTable {
                mem: old,
                log_number: old_log,
                // Under the log lock: no leader is inserting right now.
                unpersisted: cf.shared.unpersisted.swap(false, Ordering::AcqRel),
            });
            cf.frozen_count += 1;
            self.install_super_version(&mut st, id);
            self.bg_cv.notify_all();
            if force == Some(id) {
                force = None;
            }
        }
    }
}
