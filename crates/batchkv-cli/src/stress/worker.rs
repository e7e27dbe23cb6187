//! One stress thread: random operations over the key space, every read
//! checked against the oracle.
//!
//! A thread locks the keys an operation touches (ascending order) for the
//! whole operation, so while it holds them no other write to them is in
//! flight and the oracle's acknowledged state is exactly what the database
//! must return. Writes follow the oracle's begin → write → commit protocol;
//! a write that skipped the WAL commits with a ticket (its place in the
//! order of WAL-less acknowledgements), and a `flush()` or `compact_range`
//! that returns OK persists the tickets issued before it started.
//!
//! A transaction (`worker/transaction.rs`) locks its keys the same way before it
//! begins, so its reads must match the oracle exactly and its commit can
//! meet no conflict; the commit is recorded like a batch (one batch id).
//!
//! A range delete `[lo, hi)` (alone, or inside a batch) is recorded in the
//! oracle as a delete of every key index in `lo..hi` (key bytes sort like
//! their indexes: `k` + 8 zero-padded digits), all under one batch id, so
//! after a crash the keys it covers must be all-or-nothing like a batch's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use batchkv::{BatchLookup, Db, ReadOptions, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod transaction;

use super::families::Families;
use super::options::Workload;
use super::oracle::{key_bytes, value_bytes, KeyGuard, KeyState, Observed, Oracle, OracleResult};

/// State shared by the stress threads.
pub struct Shared {
    pub db: Db,
    /// The column families the keys are spread over (`--column_families`).
    pub fams: Families,
    pub oracle: Oracle,
    pub stop: AtomicBool,
    /// The first failure; set once, then every thread stops.
    pub failure: Mutex<Option<String>>,
    /// Operations completed.
    pub ops: AtomicU64,
    /// Key reads checked against the oracle.
    pub verified: AtomicU64,
    next_batch: AtomicU64,
    /// The last ticket given to an acknowledged WAL-less write.
    wal_less_ticket: AtomicU64,
    /// Acknowledged WAL-less writes, `flush()` calls, `compact_range` calls.
    pub wal_less_writes: AtomicU64,
    pub flushes: AtomicU64,
    pub compact_ranges: AtomicU64,
    /// Range deletes acknowledged (alone or inside a batch).
    pub range_deletes: AtomicU64,
    /// Transactions committed.
    pub transactions: AtomicU64,
    pub workload: Workload,
}

impl Shared {
    pub fn new(db: Db, fams: Families, oracle: Oracle, workload: Workload) -> Shared {
        let first_batch = oracle.epoch() << 32;
        Shared {
            db,
            fams,
            oracle,
            wal_less_ticket: AtomicU64::new(0),
            wal_less_writes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            compact_ranges: AtomicU64::new(0),
            range_deletes: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            workload,
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            ops: AtomicU64::new(0),
            verified: AtomicU64::new(0),
            next_batch: AtomicU64::new(first_batch + 1),
        }
    }

    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(msg);
        self.stop.store(true, Ordering::Release);
    }
}

const STRATEGIES: [BatchLookup; 4] = [
    BatchLookup::PerKey,
    BatchLookup::Finger,
    BatchLookup::Bfs,
    BatchLookup::Auto,
];

/// Runs random operations until `shared.stop`.
pub fn run(shared: &Shared, seed: u64) {
    let mut w = Worker {
        s: shared,
        rng: StdRng::seed_from_u64(seed),
    };
    let mix = shared.workload;
    while !shared.stop.load(Ordering::Acquire) {
        let r = if w.rng.random_ratio(mix.flush, 1000) {
            w.flush()
        } else if w.rng.random_ratio(mix.compact_range, 1000) {
            w.compact_range()
        } else {
            match w.rng.random_range(0..100) {
                0..20 => w.put_or_delete(true),
                20..24 => w.put_or_delete(false),
                24..26 => w.delete_range(),
                26..34 => w.write_batch(),
                34..38 => w.transaction(),
                38..56 => w.get(),
                56..78 => w.multi_get(),
                78..90 => w.scan(),
                _ => w.snapshot_read(),
            }
        };
        if let Err(msg) = r {
            shared.fail(msg);
            return;
        }
        shared.ops.fetch_add(1, Ordering::Relaxed);
    }
}

struct Worker<'a> {
    s: &'a Shared,
    rng: StdRng,
}

fn mismatch(i: u64, what: &str, st: &KeyState, obs: &Observed) -> String {
    format!(
        "MISMATCH key {} (index {i}) in {what}: expected {}, actual {}",
        String::from_utf8_lossy(&key_bytes(i)),
        st.describe(),
        obs.describe()
    )
}

impl<'a> Worker<'a> {
    fn key(&mut self) -> u64 {
        self.rng.random_range(0..self.s.oracle.num_keys())
    }

    /// `n` random distinct keys, ascending.
    fn keys(&mut self, n: usize) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).map(|_| self.key()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn lock_all(&self, keys: &[u64]) -> Vec<KeyGuard<'a>> {
        let s: &'a Shared = self.s;
        keys.iter().map(|&i| s.oracle.lock(i)).collect()
    }

    fn write_opts(&mut self) -> WriteOptions {
        let disable_wal = self.rng.random_ratio(self.s.workload.wal_less, 1000);
        WriteOptions {
            sync: !disable_wal && self.rng.random_ratio(1, 8),
            disable_wal,
        }
    }

    /// Records the acknowledgement of a write made with `opts` to the keys
    /// of `guards`.
    fn commit(&self, opts: &WriteOptions, guards: &mut [KeyGuard<'_>]) -> OracleResult<()> {
        if opts.disable_wal {
            // AcqRel: a flush that reads the counter after this increment
            // started after the write was acknowledged.
            let ticket = self.s.wal_less_ticket.fetch_add(1, Ordering::AcqRel) + 1;
            self.s.wal_less_writes.fetch_add(1, Ordering::Relaxed);
            for g in guards {
                g.commit_unpersisted(ticket)?;
            }
        } else {
            for g in guards {
                g.commit()?;
            }
        }
        Ok(())
    }

    /// `flush()`: every WAL-less write acknowledged before it started is
    /// durable once it returns OK.
    fn flush(&mut self) -> OracleResult<()> {
        let ticket = self.s.wal_less_ticket.load(Ordering::Acquire);
        for cf in self.s.fams.all() {
            self.s
                .db
                .flush_cf(cf)
                .map_err(|e| format!("flush of {} failed: {e}", cf.name()))?;
        }
        self.s.flushes.fetch_add(1, Ordering::Relaxed);
        self.s.oracle.persist_upto(ticket)
    }

    /// A manual compaction of a random range (a quarter of them unbounded,
    /// some half-open), racing the background compactions and the other
    /// threads' writes. It flushes first, so it persists like `flush()`.
    fn compact_range(&mut self) -> OracleResult<()> {
        let (a, b) = (self.key(), self.key());
        let (lo, hi) = (a.min(b), a.max(b));
        let (begin, end) = match self.rng.random_range(0..8) {
            0 | 1 => (None, None),
            2 => (None, Some(key_bytes(hi))),
            3 => (Some(key_bytes(lo)), None),
            _ => (Some(key_bytes(lo)), Some(key_bytes(hi))),
        };
        let ticket = self.s.wal_less_ticket.load(Ordering::Acquire);
        // Every family: each flushes first, so WAL-less writes persist.
        for cf in self.s.fams.all() {
            self.s
                .db
                .compact_range_cf(cf, begin.as_deref(), end.as_deref())
                .map_err(|e| format!("compact_range({lo}..={hi}) of {} failed: {e}", cf.name()))?;
        }
        self.s.compact_ranges.fetch_add(1, Ordering::Relaxed);
        self.s.oracle.persist_upto(ticket)
    }

    fn check(&self, g: &KeyGuard<'_>, what: &str, got: Option<&[u8]>) -> OracleResult<()> {
        let obs = Observed::parse(g.index, got);
        let st = g.state();
        if !st.allows(&obs) {
            return Err(mismatch(g.index, what, &st, &obs));
        }
        self.s.verified.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn put_or_delete(&mut self, put: bool) -> OracleResult<()> {
        let i = self.key();
        self.single_write(i, put)
    }

    /// One put or delete of key `i`, through the oracle's protocol.
    fn single_write(&mut self, i: u64, put: bool) -> OracleResult<()> {
        let opts = self.write_opts();
        let mut g = self.s.oracle.lock(i);
        let v = g.begin(put, 0)?;
        let mut b = WriteBatch::new();
        let cf = self.s.fams.of(i);
        if put {
            b.put_cf(cf, key_bytes(i), value_bytes(i, v, 0));
        } else {
            b.delete_cf(cf, key_bytes(i));
        }
        self.s
            .db
            .write(&opts, b)
            .map_err(|e| format!("write of key {i} failed: {e}"))?;
        self.commit(&opts, std::slice::from_mut(&mut g))
    }

    /// A batch of 2..=8 puts and deletes of random keys; a quarter of the
    /// batches also hold a short range delete, placed at a random position
    /// among them and overlapping one of their keys, so that puts before it
    /// (deleted) and after it (surviving) in the same batch are exercised.
    fn write_batch(&mut self) -> OracleResult<()> {
        let n = self.rng.random_range(2..=8);
        let keys = self.keys(n);
        let mut ops: Vec<BatchOpPlan> = keys
            .iter()
            .map(|&i| {
                if self.rng.random_ratio(4, 5) {
                    BatchOpPlan::Put(i)
                } else {
                    BatchOpPlan::Delete(i)
                }
            })
            .collect();
        // Shuffled, so puts and deletes land on both sides of the range.
        for j in (1..ops.len()).rev() {
            ops.swap(j, self.rng.random_range(0..=j));
        }
        if self.rng.random_ratio(1, 4) {
            let anchor = keys[self.rng.random_range(0..keys.len())];
            let lo = anchor.saturating_sub(self.rng.random_range(0..4));
            let (lo, hi) = self.range_from(lo);
            let at = self.rng.random_range(0..=ops.len());
            ops.insert(at, BatchOpPlan::DeleteRange(lo, hi));
        }
        self.apply_batch(&ops)
    }

    /// A range `[lo, hi)` of 1..=16 keys starting at `lo` (clipped to the
    /// key space; `hi` may be the key count, one past the last key).
    fn range_from(&mut self, lo: u64) -> (u64, u64) {
        let n = self.s.oracle.num_keys();
        let lo = lo.min(n - 1);
        let hi = (lo + self.rng.random_range(1..=16)).min(n);
        (lo, hi)
    }

    /// `Db::delete_range` of a short range (one in 16 of them empty,
    /// `begin == end`, which must be a no-op).
    fn delete_range(&mut self) -> OracleResult<()> {
        let lo = self.key();
        let (lo, hi) = if self.rng.random_ratio(1, 16) {
            (lo, lo)
        } else {
            self.range_from(lo)
        };
        self.apply_delete_range(lo, hi)
    }

    fn apply_delete_range(&mut self, lo: u64, hi: u64) -> OracleResult<()> {
        let opts = self.write_opts();
        let batch = self.s.next_batch.fetch_add(1, Ordering::Relaxed);
        let keys: Vec<u64> = (lo..hi).collect();
        let mut guards = self.lock_all(&keys);
        for g in &mut guards {
            g.begin(false, batch)?;
        }
        // One range delete per family it spans, in one batch (atomic);
        // `begin == end` goes to `delete_range` (a no-op there).
        let r = if lo == hi {
            self.s
                .db
                .delete_range_cf(&opts, self.s.fams.of(lo), key_bytes(lo), key_bytes(hi))
        } else {
            let mut b = WriteBatch::new();
            for (cf, a, z) in self.s.fams.split(lo, hi) {
                b.delete_range_cf(cf, key_bytes(a), key_bytes(z));
            }
            self.s.db.write(&opts, b)
        };
        r.map_err(|e| format!("delete_range [{lo}, {hi}) (batch {batch:#x}) failed: {e}"))?;
        if lo < hi {
            self.s.range_deletes.fetch_add(1, Ordering::Relaxed);
        }
        self.commit(&opts, &mut guards)
    }

    /// Writes `ops` as one batch through the oracle's protocol: every key
    /// they touch is locked, each gets one pending version (its final state
    /// in the batch, [`final_states`]), and a put that a later range delete
    /// of the batch covers still carries that version, so reading it back
    /// would not match the (deleted) expected state.
    fn apply_batch(&mut self, ops: &[BatchOpPlan]) -> OracleResult<()> {
        let opts = self.write_opts();
        let batch = self.s.next_batch.fetch_add(1, Ordering::Relaxed);
        let finals = final_states(ops);
        let keys: Vec<u64> = finals.keys().copied().collect();
        let mut guards = self.lock_all(&keys);
        let mut versions = BTreeMap::new();
        for g in &mut guards {
            let v = g.begin(finals[&g.index], batch)?;
            versions.insert(g.index, v);
        }
        let mut b = WriteBatch::new();
        let mut ranges = 0;
        for op in ops {
            match *op {
                BatchOpPlan::Put(i) => b.put_cf(
                    self.s.fams.of(i),
                    key_bytes(i),
                    value_bytes(i, versions[&i], batch),
                ),
                BatchOpPlan::Delete(i) => b.delete_cf(self.s.fams.of(i), key_bytes(i)),
                BatchOpPlan::DeleteRange(lo, hi) => {
                    ranges += u64::from(lo < hi);
                    for (cf, a, z) in self.s.fams.split(lo, hi) {
                        b.delete_range_cf(cf, key_bytes(a), key_bytes(z));
                    }
                }
            }
        }
        self.s
            .db
            .write(&opts, b)
            .map_err(|e| format!("write of batch {batch:#x} ({ops:?}) failed: {e}"))?;
        self.s.range_deletes.fetch_add(ranges, Ordering::Relaxed);
        self.commit(&opts, &mut guards)
    }

    fn get(&mut self) -> OracleResult<()> {
        let i = self.key();
        let g = self.s.oracle.lock(i);
        let got = self
            .s
            .db
            .get_cf(self.s.fams.of(i), key_bytes(i))
            .map_err(|e| format!("get of key {i} failed: {e}"))?;
        self.check(&g, "get", got.as_deref())
    }

    fn multi_get(&mut self) -> OracleResult<()> {
        let n = self.rng.random_range(1..=64);
        // With duplicates, in random order.
        let wanted: Vec<u64> = (0..n).map(|_| self.key()).collect();
        let mut distinct = wanted.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let guards = self.lock_all(&distinct);
        let ropts = ReadOptions {
            batch_lookup: Some(STRATEGIES[self.rng.random_range(0..STRATEGIES.len())]),
            ..ReadOptions::default()
        };
        let keys: Vec<Vec<u8>> = wanted.iter().map(|&i| key_bytes(i)).collect();
        let results = self.multi_get_keys(&ropts, &wanted, &keys);
        let what = format!("multi_get ({:?})", ropts.batch_lookup);
        for (&i, r) in wanted.iter().zip(results) {
            let got = r.map_err(|e| format!("multi_get of key {i} failed: {e}"))?;
            let pos = distinct
                .binary_search(&i)
                .map_err(|_| "internal: key not locked")?;
            self.check(&guards[pos], &what, got.as_deref())?;
        }
        Ok(())
    }

    fn scan(&mut self) -> OracleResult<()> {
        let n = self.s.oracle.num_keys();
        let len = self.rng.random_range(1..=64).min(n);
        let start = self.rng.random_range(0..=n - len);
        let range: Vec<u64> = (start..start + len).collect();
        let guards = self.lock_all(&range);
        let reverse = self.rng.random_bool(0.3);
        let ropts = ReadOptions {
            lower_bound: Some(key_bytes(start)),
            upper_bound: Some(key_bytes(start + len)),
            ..ReadOptions::default()
        };
        let found = self.read_span(&ropts, start, start + len, reverse)?;
        let what = if reverse { "reverse scan" } else { "scan" };
        for g in &guards {
            self.check(g, what, found.get(&key_bytes(g.index)).map(Vec::as_slice))?;
        }
        if found.len() > guards.len() {
            return Err(format!(
                "{what} of [{start}, {}) returned keys outside its bounds",
                start + len
            ));
        }
        Ok(())
    }

    /// Takes a snapshot while holding some keys, overwrites one of them,
    /// then reads them all through the snapshot: it must show the old state.
    fn snapshot_read(&mut self) -> OracleResult<()> {
        // Keys within a window of 64, so the snapshot scan stays short.
        let window = 64.min(self.s.oracle.num_keys());
        let base = self.rng.random_range(0..=self.s.oracle.num_keys() - window);
        let n = self.rng.random_range(1..=16);
        let mut keys: Vec<u64> = (0..n)
            .map(|_| base + self.rng.random_range(0..window))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let (snap, states) = {
            let guards = self.lock_all(&keys);
            let snap = self.s.db.snapshot();
            let states: Vec<KeyState> = guards.iter().map(KeyGuard::state).collect();
            (snap, states)
        };
        let victim = keys[self.rng.random_range(0..keys.len())];
        // A range delete from the victim on must not hide the keys from
        // the older snapshot either.
        match self.rng.random_range(0..8) {
            0 | 1 => {
                let (lo, hi) = self.range_from(victim);
                self.apply_delete_range(lo, hi)?;
            }
            r => self.single_write(victim, r > 2)?,
        }
        let ropts = ReadOptions {
            snapshot: Some(snap),
            batch_lookup: Some(STRATEGIES[self.rng.random_range(0..STRATEGIES.len())]),
            ..ReadOptions::default()
        };
        let bytes: Vec<Vec<u8>> = keys.iter().map(|&i| key_bytes(i)).collect();
        let results = self.multi_get_keys(&ropts, &keys, &bytes);
        let first = keys[0];
        let last = keys[keys.len() - 1];
        let scan_opts = ReadOptions {
            lower_bound: Some(key_bytes(first)),
            upper_bound: Some(key_bytes(last + 1)),
            ..ropts.clone()
        };
        let scanned = self.read_span(&scan_opts, first, last + 1, false)?;
        for ((&i, st), r) in keys.iter().zip(&states).zip(results) {
            let got = r.map_err(|e| format!("snapshot multi_get of key {i} failed: {e}"))?;
            let single = self
                .s
                .db
                .get_cf_opt(&ropts, self.s.fams.of(i), key_bytes(i))
                .map_err(|e| format!("snapshot get of key {i} failed: {e}"))?;
            for (what, got) in [
                ("snapshot multi_get", got.as_deref()),
                ("snapshot get", single.as_deref()),
                (
                    "snapshot scan",
                    scanned.get(&key_bytes(i)).map(Vec::as_slice),
                ),
            ] {
                let obs = Observed::parse(i, got);
                // Exact: no write to these keys was in flight at the snapshot.
                if !obs.matches(st.acked) {
                    return Err(mismatch(i, what, st, &obs));
                }
                self.s.verified.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

impl Worker<'_> {
    /// `multi_get` of key indexes `idx` (bytes `keys`) across their
    /// families, one consistent read; with one family the plain
    /// `multi_get`.
    fn multi_get_keys(
        &self,
        ropts: &ReadOptions,
        idx: &[u64],
        keys: &[Vec<u8>],
    ) -> Vec<batchkv::Result<Option<Vec<u8>>>> {
        if self.s.fams.all().len() == 1 {
            return self.s.db.multi_get(ropts, keys);
        }
        let query: Vec<(&batchkv::ColumnFamily, &[u8])> = idx
            .iter()
            .zip(keys)
            .map(|(&i, k)| (self.s.fams.of(i), k.as_slice()))
            .collect();
        self.s.db.multi_get_cf(ropts, &query)
    }

    /// The keys of indexes `[lo, hi)` an iterator with `ropts` (whose
    /// bounds are those keys) yields, family by family.
    fn read_span(
        &self,
        ropts: &ReadOptions,
        lo: u64,
        hi: u64,
        reverse: bool,
    ) -> OracleResult<BTreeMap<Vec<u8>, Vec<u8>>> {
        let mut out = BTreeMap::new();
        for (cf, _, _) in self.s.fams.split(lo, hi) {
            out.extend(read_range(&self.s.db, cf, ropts, reverse)?);
        }
        Ok(out)
    }
}

/// One operation of a planned batch, by key index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchOpPlan {
    Put(u64),
    Delete(u64),
    /// Every key index in `lo..hi`.
    DeleteRange(u64, u64),
}

/// The state each key `ops` touch is in once the batch is applied: the
/// last operation covering a key decides (a batch applies in order), true
/// for a put.
fn final_states(ops: &[BatchOpPlan]) -> BTreeMap<u64, bool> {
    let mut out = BTreeMap::new();
    for op in ops {
        match *op {
            BatchOpPlan::Put(i) => {
                out.insert(i, true);
            }
            BatchOpPlan::Delete(i) => {
                out.insert(i, false);
            }
            BatchOpPlan::DeleteRange(lo, hi) => {
                for i in lo..hi {
                    out.insert(i, false);
                }
            }
        }
    }
    out
}

/// Every key/value an iterator with `ropts` yields, forward or backward
/// (checking the order as it goes).
fn read_range(
    db: &Db,
    cf: &batchkv::ColumnFamily,
    ropts: &ReadOptions,
    reverse: bool,
) -> OracleResult<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut it = db
        .iter_cf(ropts, cf)
        .map_err(|e| format!("creating an iterator failed: {e}"))?;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut out = BTreeMap::new();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        let k = it.key().to_vec();
        if let Some(p) = &prev {
            if (reverse && p <= &k) || (!reverse && p >= &k) {
                return Err(format!(
                    "iterator out of order: {:?} after {:?}",
                    String::from_utf8_lossy(&k),
                    String::from_utf8_lossy(p)
                ));
            }
        }
        out.insert(k.clone(), it.value().to_vec());
        prev = Some(k);
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status().map_err(|e| format!("iterator failed: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use BatchOpPlan::*;

    #[test]
    fn the_last_operation_on_a_key_decides_its_state() {
        let ops = [Put(3), DeleteRange(2, 5), Put(4), Delete(9), Put(9)];
        let f = final_states(&ops);
        // 3 was put before the range: deleted; 4 after it: present; 2 only
        // covered by the range; 5 is the range's (exclusive) end: untouched.
        let want: BTreeMap<u64, bool> = [(2, false), (3, false), (4, true), (9, true)]
            .into_iter()
            .collect();
        assert_eq!(f, want);
        assert!(final_states(&[DeleteRange(7, 7)]).is_empty());
    }

    #[test]
    fn key_bytes_sort_like_their_indexes() {
        // A range delete of [key_bytes(lo), key_bytes(hi)) covers exactly
        // the indexes lo..hi only if this holds.
        for (a, b) in [
            (0u64, 1u64),
            (9, 10),
            (99, 100),
            (9_999, 10_000),
            (12_345, 99_999_999),
        ] {
            assert!(key_bytes(a) < key_bytes(b), "{a} {b}");
        }
    }
}
