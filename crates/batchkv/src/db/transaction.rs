//! Optimistic transactions (RocksDB's `OptimisticTransactionDB`): a
//! [`Transaction`] buffers its writes, reads its own writes over a snapshot
//! taken at its start, and at [`commit`](Transaction::commit) checks that no
//! key it wrote or read with `get_for_update` was written by anyone after
//! that snapshot.
//!
//! # How the commit check is made atomic
//! The commit is one write-queue entry carrying a
//! [`Precondition`](super::write::Precondition): it is never grouped with
//! other writers, and its leader runs the check under the WAL lock after
//! every earlier write group has been published and before its batch gets
//! sequence numbers. No write (plain or transactional) and no ingestion can
//! be sequenced between the check and the write, so two conflicting
//! commits can never both succeed.
//!
//! # The check
//! For each tracked key, the newest sequence number of any write to it —
//! point entries in the memtables and SST files (at an ingested file's
//! global sequence number) and range tombstones covering it — is compared
//! with the snapshot's. The transaction holds its snapshot registered, so
//! compaction keeps every version newer than it (compaction never zeroes
//! sequence numbers), and the check is exact wherever the key lives: a
//! conflict is detected after a flush or a compaction too, never answered
//! with "try again". Not seen: files ingested at sequence number 0 (only
//! possible with `IngestOptions::snapshot_consistency = false`).
//!
//! # Invariants
//! 1. `index` is the effect of `ops` in order (rebuilt from `ops` when a
//!    savepoint is rolled back).
//! 2. `tracked_order` lists each key of `tracked` once, in the order it was
//!    first tracked (savepoints truncate it).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use super::key_range::KeyRange;
use super::lookup::{TableStage, Tombstones};
use super::{lock, CfShared, ColumnFamily, Db, DbCore, Snapshot};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::key::SequenceNumber;
use crate::key_list::KeyList;
use crate::options::{ReadOptions, WriteOptions};
use crate::sst::BlockReadOptions;

/// Options for [`Db::transaction_opt`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TransactionOptions {
    /// How the commit is written (`sync`, `disable_wal`).
    pub write_options: WriteOptions,
}

/// What the transaction did to one key, as its reads see it.
#[derive(Clone, Debug)]
enum Own {
    Put(Vec<u8>),
    Delete,
    /// Merge operands (oldest first) over `base`: `None` reads the base
    /// from the database at the snapshot; `Some(v)` is the transaction's
    /// own put (`Some(Some(..))`) or delete (`Some(None)`).
    Merge {
        base: Option<Option<Vec<u8>>>,
        operands: Vec<Vec<u8>>,
    },
}

impl Own {
    /// The state after applying `op` to `prev` (the earlier state, if any).
    fn apply(prev: Option<Own>, op: &Op) -> Own {
        match op.kind {
            OpKind::Put => Own::Put(op.value.clone()),
            OpKind::Delete => Own::Delete,
            OpKind::Merge => match prev {
                None => Own::Merge {
                    base: None,
                    operands: vec![op.value.clone()],
                },
                Some(Own::Put(v)) => Own::Merge {
                    base: Some(Some(v)),
                    operands: vec![op.value.clone()],
                },
                Some(Own::Delete) => Own::Merge {
                    base: Some(None),
                    operands: vec![op.value.clone()],
                },
                Some(Own::Merge { base, mut operands }) => {
                    operands.push(op.value.clone());
                    Own::Merge { base, operands }
                }
            },
        }
    }

    /// True if a read must consult the database to answer.
    fn needs_db(&self) -> bool {
        matches!(self, Own::Merge { base: None, .. })
    }

    /// The value this state reads as; `db` is the database's value at the
    /// snapshot (used only when [`needs_db`](Self::needs_db)).
    fn resolve(&self, cf: &CfShared, key: &[u8], db: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        match self {
            Own::Put(v) => Ok(Some(v.clone())),
            Own::Delete => Ok(None),
            Own::Merge { base, operands } => {
                let base = match base {
                    Some(b) => b.as_deref(),
                    None => db,
                };
                let operands: Vec<&[u8]> = operands.iter().map(Vec::as_slice).collect();
                crate::merge::full_merge(cf.opts.merge_operator.as_ref(), key, base, &operands)
                    .map(Some)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    Put,
    Delete,
    Merge,
}

/// One buffered write, in the order the transaction made it.
#[derive(Clone, Debug)]
struct Op {
    cf: u32,
    kind: OpKind,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// What [`Transaction::rollback_to_savepoint`] returns to.
#[derive(Clone, Copy, Debug)]
struct Savepoint {
    ops: usize,
    tracked: usize,
}

/// An optimistic transaction (RocksDB's `OptimisticTransactionDB`
/// semantics), from [`Db::transaction`].
///
/// Writes are buffered in the transaction and applied atomically by
/// [`commit`](Transaction::commit); reads see the transaction's own writes
/// over the database as of the snapshot taken when the transaction began.
///
/// # Isolation
/// - Reads ([`get`](Self::get), [`multi_get`](Self::multi_get),
///   [`range`](Self::range)) see one snapshot, taken at
///   [`Db::transaction`], plus the transaction's own writes: **snapshot
///   isolation**.
/// - [`commit`](Self::commit) fails with [`Error::Conflict`] if any key the
///   transaction wrote, or read with
///   [`get_for_update`](Self::get_for_update), was written by anyone (another
///   transaction or a plain [`Db::put`], [`Db::delete_range`], …) after
///   that snapshot. So lost updates are impossible, and for the keys read
///   with `get_for_update` the committed transactions are
///   **serializable** (write skew between them is prevented). Keys read
///   with plain `get` are not checked: write skew through them is possible,
///   as under snapshot isolation.
/// - Nothing is locked and nobody waits: a conflict is found only at
///   commit, and the transaction must then be retried from the start.
///
/// # Merges
/// [`merge`](Self::merge) buffers an operand; reads of that key inside the
/// transaction apply the column family's merge operator to the operands
/// over the key's value (the transaction's own, or the database's at the
/// snapshot). Without a merge operator such a read returns the same
/// `InvalidArgument` error a database read of merge operands does.
///
/// # Example
/// ```
/// # let dir = std::env::temp_dir().join(format!("batchkv-txn-doc-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&dir);
/// use batchkv::{Db, Error, Options};
/// let db = Db::open(&dir, Options::default())?;
/// db.put(b"alice", b"100")?;
/// db.put(b"bob", b"0")?;
/// // Move 30 from alice to bob, retrying when another writer got there first.
/// loop {
///     let mut txn = db.transaction();
///     let parse = |v: Option<Vec<u8>>| -> u64 {
///         String::from_utf8(v.unwrap_or_default()).unwrap().parse().unwrap_or(0)
///     };
///     let alice = parse(txn.get_for_update(b"alice")?);
///     let bob = parse(txn.get_for_update(b"bob")?);
///     txn.put(b"alice", (alice - 30).to_string())?;
///     txn.put(b"bob", (bob + 30).to_string())?;
///     assert_eq!(txn.get(b"bob")?, Some(b"30".to_vec())); // its own write
///     match txn.commit() {
///         Ok(()) => break,
///         Err(e) if e.is_conflict() => continue,
///         Err(e) => return Err(e),
///     }
/// }
/// assert_eq!(db.get(b"alice")?, Some(b"70".to_vec()));
/// # drop(db);
/// # let _ = std::fs::remove_dir_all(&dir);
/// # Ok::<(), Error>(())
/// ```
pub struct Transaction {
    db: Db,
    snapshot: Snapshot,
    write_options: WriteOptions,
    /// The families the transaction touched, by id.
    cfs: HashMap<u32, Arc<CfShared>>,
    /// The writes, in order (they become the commit's batch).
    ops: Vec<Op>,
    /// Each written key's state (invariant 1).
    index: BTreeMap<(u32, Vec<u8>), Own>,
    /// Keys read with `get_for_update` (invariant 2).
    tracked: BTreeSet<(u32, Vec<u8>)>,
    tracked_order: Vec<(u32, Vec<u8>)>,
    savepoints: Vec<Savepoint>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("snapshot", &self.snapshot)
            .field("writes", &self.ops.len())
            .field("tracked", &self.tracked.len())
            .field("savepoints", &self.savepoints.len())
            .finish()
    }
}

impl Db {
    /// Begins an optimistic [`Transaction`] reading at a snapshot taken
    /// now. See [`Transaction`] for the isolation it gives.
    pub fn transaction(&self) -> Transaction {
        self.transaction_opt(&TransactionOptions::default())
    }

    /// [`Db::transaction`] with options (how the commit is written).
    pub fn transaction_opt(&self, opts: &TransactionOptions) -> Transaction {
        Transaction {
            db: self.clone(),
            snapshot: self.snapshot(),
            write_options: opts.write_options,
            cfs: HashMap::new(),
            ops: Vec::new(),
            index: BTreeMap::new(),
            tracked: BTreeSet::new(),
            tracked_order: Vec::new(),
            savepoints: Vec::new(),
        }
    }
}

impl Transaction {
    /// The snapshot the transaction reads at (taken when it began).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Number of buffered writes (puts, deletes and merges).
    pub fn pending_writes(&self) -> usize {
        self.ops.len()
    }

    fn read_options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: Some(self.snapshot.clone()),
            ..ReadOptions::default()
        }
    }

    fn default_cf(&self) -> ColumnFamily {
        ColumnFamily {
            inner: Arc::clone(&self.db.core().default_cf),
        }
    }

    /// Remembers `cf` for the commit check; `InvalidArgument` if dropped.
    fn note_cf(&mut self, cf: &ColumnFamily) -> Result<u32> {
        cf.live()?;
        self.cfs
            .entry(cf.id())
            .or_insert_with(|| Arc::clone(&cf.inner));
        Ok(cf.id())
    }

    // ---- reads ----

    /// The value of `key`: the transaction's own write if any, else the
    /// database's at the snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf(&self.default_cf(), key)
    }

    /// [`get`](Self::get) in column family `cf`.
    pub fn get_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let shared = cf.live()?;
        match self.index.get(&(cf.id(), key.to_vec())) {
            Some(own) if !own.needs_db() => own.resolve(shared, key, None),
            own => {
                let db = self.db.get_cf_opt(&self.read_options(), cf, key)?;
                match own {
                    Some(own) => own.resolve(shared, key, db.as_deref()),
                    None => Ok(db),
                }
            }
        }
    }

    /// [`get`](Self::get), and `commit` fails with [`Error::Conflict`] if
    /// anyone writes `key` after the transaction's snapshot.
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf(&self.default_cf(), key)
    }

    /// [`get_for_update`](Self::get_for_update) in column family `cf`.
    pub fn get_for_update_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let id = self.note_cf(cf)?;
        self.track(id, key);
        self.get_cf(cf, key)
    }

    fn track(&mut self, cf: u32, key: &[u8]) {
        if self.tracked.insert((cf, key.to_vec())) {
            self.tracked_order.push((cf, key.to_vec()));
        }
    }

    /// Looks up every key of `keys` (results in input order): the
    /// transaction's own writes first, then one batched database read
    /// ([`Db::multi_get`]) at the snapshot for the rest.
    pub fn multi_get<L: KeyList + ?Sized>(&self, keys: &L) -> Vec<Result<Option<Vec<u8>>>> {
        let cf = self.default_cf();
        let pairs: Vec<(&ColumnFamily, &[u8])> = keys
            .as_key_slice()
            .iter()
            .map(|k| (&cf, k.as_ref()))
            .collect();
        self.multi_get_cf(&pairs)
    }

    /// [`multi_get`](Self::multi_get) of `(family, key)` pairs: one
    /// batched database read ([`Db::multi_get_cf`]) for the keys the
    /// transaction's own writes do not answer.
    pub fn multi_get_cf<K: AsRef<[u8]>>(
        &self,
        keys: &[(&ColumnFamily, K)],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let mut out: Vec<Option<Result<Option<Vec<u8>>>>> = Vec::with_capacity(keys.len());
        // Input positions that need the database, and their lookups.
        let mut pending: Vec<usize> = Vec::new();
        let mut lookups: Vec<(&ColumnFamily, &[u8])> = Vec::new();
        for (i, (cf, key)) in keys.iter().enumerate() {
            let key = key.as_ref();
            let answer = match cf.live() {
                Err(e) => Some(Err(e)),
                Ok(shared) => match self.index.get(&(cf.id(), key.to_vec())) {
                    Some(own) if !own.needs_db() => Some(own.resolve(shared, key, None)),
                    _ => None,
                },
            };
            if answer.is_none() {
                pending.push(i);
                lookups.push((cf, key));
            }
            out.push(answer);
        }
        if !lookups.is_empty() {
            let found = self.db.multi_get_cf(&self.read_options(), &lookups);
            for ((i, (cf, key)), db) in pending.into_iter().zip(lookups).zip(found) {
                let r = db.and_then(|db| match self.index.get(&(cf.id(), key.to_vec())) {
                    Some(own) => own.resolve(&cf.inner, key, db.as_deref()),
                    None => Ok(db),
                });
                out[i] = Some(r);
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    /// [`multi_get`](Self::multi_get), tracking every key as
    /// [`get_for_update`](Self::get_for_update) does.
    pub fn multi_get_for_update<L: KeyList + ?Sized>(
        &mut self,
        keys: &L,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let cf = self.default_cf();
        if let Err(e) = self.note_cf(&cf) {
            return keys.as_key_slice().iter().map(|_| Err(e.clone())).collect();
        }
        for k in keys.as_key_slice() {
            self.track(0, k.as_ref());
        }
        self.multi_get(keys)
    }

    /// [`multi_get_cf`](Self::multi_get_cf) (one batched database read),
    /// tracking every `(family, key)` pair as
    /// [`get_for_update_cf`](Self::get_for_update_cf) does. A key of a
    /// dropped family is not tracked; its result is the `InvalidArgument`
    /// error `get_for_update_cf` returns.
    pub fn multi_get_for_update_cf<K: AsRef<[u8]>>(
        &mut self,
        keys: &[(&ColumnFamily, K)],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        for (cf, key) in keys {
            if let Ok(id) = self.note_cf(cf) {
                self.track(id, key.as_ref());
            }
        }
        self.multi_get_cf(keys)
    }

    /// The keys in `range` (as [`Db::range`]) as the transaction sees them:
    /// its own writes (as of this call) merged over the database at the
    /// snapshot — its puts added or replacing, its deletes hiding keys, its
    /// merges applied. Ascending with `next`, descending with `next_back`.
    pub fn range(&self, range: impl KeyRange) -> Result<TransactionIter> {
        self.range_cf(&self.default_cf(), range)
    }

    /// [`range`](Self::range) in column family `cf`.
    pub fn range_cf(&self, cf: &ColumnFamily, range: impl KeyRange) -> Result<TransactionIter> {
        cf.live()?;
        let (lower, upper) = range.into_bounds();
        let db = self.db.range_iter(
            &cf.inner,
            &self.read_options(),
            lower.clone(),
            upper.clone(),
        )?;
        let id = cf.id();
        if let (Some(l), Some(u)) = (&lower, &upper) {
            if l >= u {
                // An empty (or inverted) range: no own writes in it.
                return Ok(TransactionIter {
                    db,
                    cf: Arc::clone(&cf.inner),
                    own: VecDeque::new(),
                    front: None,
                    back: None,
                    done: false,
                });
            }
        }
        let from = Bound::Included((id, lower.unwrap_or_default()));
        let to = match upper {
            Some(u) => Bound::Excluded((id, u)),
            None => match id.checked_add(1) {
                Some(next) => Bound::Excluded((next, Vec::new())),
                None => Bound::Unbounded,
            },
        };
        let own = self
            .index
            .range((from, to))
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect();
        Ok(TransactionIter {
            db,
            cf: Arc::clone(&cf.inner),
            own,
            front: None,
            back: None,
            done: false,
        })
    }

    // ---- writes ----

    fn push(&mut self, cf: &ColumnFamily, kind: OpKind, key: &[u8], value: &[u8]) -> Result<()> {
        let id = self.note_cf(cf)?;
        let op = Op {
            cf: id,
            kind,
            key: key.to_vec(),
            value: value.to_vec(),
        };
        let slot = (id, op.key.clone());
        let prev = self.index.remove(&slot);
        self.index.insert(slot, Own::apply(prev, &op));
        self.ops.push(op);
        Ok(())
    }

    /// Buffers `key → value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_cf(&self.default_cf(), key, value)
    }

    /// [`put`](Self::put) in column family `cf`.
    pub fn put_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.push(cf, OpKind::Put, key.as_ref(), value.as_ref())
    }

    /// Buffers a deletion of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf(&self.default_cf(), key)
    }

    /// [`delete`](Self::delete) in column family `cf`.
    pub fn delete_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<()> {
        self.push(cf, OpKind::Delete, key.as_ref(), &[])
    }

    /// Buffers a merge operand for `key` (see the type's "Merges").
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_cf(&self.default_cf(), key, operand)
    }

    /// [`merge`](Self::merge) in column family `cf`.
    pub fn merge_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.push(cf, OpKind::Merge, key.as_ref(), operand.as_ref())
    }

    // ---- savepoints and rollback ----

    /// Marks the current state; [`rollback_to_savepoint`](Self::rollback_to_savepoint)
    /// returns to it. Savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(Savepoint {
            ops: self.ops.len(),
            tracked: self.tracked_order.len(),
        });
    }

    /// Undoes the writes made since the last savepoint and stops tracking
    /// the keys first read with `get_for_update` since then (RocksDB's
    /// behaviour), removing that savepoint. `InvalidArgument` if there is
    /// none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let sp = self.savepoints.pop().ok_or_else(|| {
            Error::InvalidArgument("rollback_to_savepoint: no savepoint is set".into())
        })?;
        for key in self.tracked_order.drain(sp.tracked..) {
            self.tracked.remove(&key);
        }
        self.ops.truncate(sp.ops);
        self.index.clear();
        for op in &self.ops {
            let slot = (op.cf, op.key.clone());
            let prev = self.index.remove(&slot);
            self.index.insert(slot, Own::apply(prev, op));
        }
        Ok(())
    }

    /// Discards every write, tracked key and savepoint; the transaction
    /// stays usable, at its original snapshot.
    pub fn rollback(&mut self) {
        self.ops.clear();
        self.index.clear();
        self.tracked.clear();
        self.tracked_order.clear();
        self.savepoints.clear();
    }

    // ---- commit ----

    /// Applies the transaction's writes atomically, unless a key it wrote
    /// or read with `get_for_update` was written by anyone after its
    /// snapshot: then nothing is applied and the result is
    /// [`Error::Conflict`] naming the first such key (in (family id, key)
    /// order). The check and the write are one step of the write queue, so
    /// no other write comes between them. A transaction without writes
    /// still checks its `get_for_update` keys.
    pub fn commit(self) -> Result<()> {
        let mut keys: BTreeSet<(u32, Vec<u8>)> = self.tracked;
        keys.extend(self.index.into_keys());
        if keys.is_empty() {
            return Ok(());
        }
        let mut checked: Vec<(Arc<CfShared>, Vec<u8>)> = Vec::with_capacity(keys.len());
        for (id, key) in keys {
            #[allow(
                clippy::expect_used,
                reason = "`get_for_update` and every write call `note_cf` (which fills `cfs`) before they track or index a key"
            )]
            let cf = self
                .cfs
                .get(&id)
                .expect("every tracked or written key's family is noted");
            checked.push((Arc::clone(cf), key));
        }
        let snap = self.snapshot.sequence();
        let check = move |core: &DbCore| check_conflicts(core, &checked, snap);
        if self.ops.is_empty() {
            // Nothing to write: check under the WAL lock, which every write
            // leader and ingestion holds until its sequence is published.
            let core = self.db.core();
            core.check_open()?;
            let _log = lock(&core.log);
            return check(core);
        }
        let mut batch = WriteBatch::new();
        for op in &self.ops {
            match op.kind {
                OpKind::Put => batch.put_in(op.cf, &op.key, &op.value),
                OpKind::Delete => batch.delete_in(op.cf, &op.key),
                OpKind::Merge => batch.merge_in(op.cf, &op.key, &op.value),
            }
        }
        let result = self
            .db
            .write_checked(&self.write_options, batch, Some(Box::new(check)));
        // Keep the snapshot registered until the check has run.
        drop(self.snapshot);
        result
    }
}

/// `Err(Conflict)` naming the first of `keys` written after `snap`.
fn check_conflicts(
    core: &DbCore,
    keys: &[(Arc<CfShared>, Vec<u8>)],
    snap: SequenceNumber,
) -> Result<()> {
    if core.last_visible() <= snap {
        return Ok(());
    }
    for (cf, key) in keys {
        if written_after(core, cf, key, snap)? {
            return Err(Error::Conflict {
                key: key.clone(),
                cf: cf.name.clone(),
            });
        }
    }
    Ok(())
}

/// True if some write to `key` in `cf` visible now — a point entry or a
/// range tombstone covering it — has a sequence number above `snap`.
/// Called with every write up to `last_visible` published and no write in
/// flight.
fn written_after(core: &DbCore, cf: &CfShared, key: &[u8], snap: SequenceNumber) -> Result<bool> {
    if cf.dropped.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::cf_dropped(&cf.name));
    }
    let seq = core.last_visible();
    let sv = cf.sv.load_full();
    for mem in sv.memtables() {
        if Tombstones::of_memtable(&**mem).map_or(0, |t| t.covering(key, seq)) > snap {
            return Ok(true);
        }
        if let Some((s, _)) = mem.get_versioned(key, seq)? {
            if s > snap {
                return Ok(true);
            }
        }
    }
    let ro = BlockReadOptions {
        fill_cache: true,
        verify_checksums: true,
    };
    for level in 0..sv.version.levels.len() {
        for file in sv.version.files_for_key(level, key) {
            let Some(stage) = TableStage::open(core, file, seq) else {
                continue;
            };
            let stage = stage?;
            if stage.tombstones().map_or(0, |t| t.covering(key, seq)) > snap {
                return Ok(true);
            }
            if let Some((s, t, v)) = stage.table.get_versioned(key, seq, ro)? {
                stage.entry(core, t, &v)?;
                if stage.sequence(s) > snap {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The iterator of [`Transaction::range`]: the transaction's writes (as of
/// its creation) merged over a database range iterator at the snapshot.
/// Yields owned `(key, value)` pairs from either end; after an error it
/// ends.
pub struct TransactionIter {
    db: super::RangeIter,
    cf: Arc<CfShared>,
    /// The transaction's writes in the range, ascending; consumed from
    /// both ends.
    own: VecDeque<(Vec<u8>, Own)>,
    /// The next database entry of each end, taken but not yet yielded.
    /// Every database entry not yet yielded is in `db` or one of these.
    front: Option<(Vec<u8>, Vec<u8>)>,
    back: Option<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl std::fmt::Debug for TransactionIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionIter")
            .field("own_remaining", &self.own.len())
            .field("done", &self.done)
            .finish()
    }
}

impl TransactionIter {
    /// Fills this end's database slot: from the database iterator, or, when
    /// that is exhausted, the other end's slot (the last entry left).
    fn refill(&mut self, forward: bool) -> Result<()> {
        let slot = if forward { &self.front } else { &self.back };
        if slot.is_some() {
            return Ok(());
        }
        let next = if forward {
            self.db.next()
        } else {
            self.db.next_back()
        };
        let entry = match next {
            Some(r) => Some(r?),
            None if forward => self.back.take(),
            None => self.front.take(),
        };
        if forward {
            self.front = entry;
        } else {
            self.back = entry;
        }
        Ok(())
    }

    /// The next pair from the front (`forward`) or the back, skipping keys
    /// the transaction deleted.
    fn step(&mut self, forward: bool) -> Option<crate::KvResult> {
        while !self.done {
            if let Err(e) = self.refill(forward) {
                self.done = true;
                return Some(Err(e));
            }
            let slot = if forward {
                &mut self.front
            } else {
                &mut self.back
            };
            let own_key = if forward {
                self.own.front()
            } else {
                self.own.back()
            }
            .map(|(k, _)| k.clone());
            let take_own = match (&own_key, slot.as_ref()) {
                (None, None) => {
                    self.done = true;
                    return None;
                }
                (None, Some(_)) => false,
                (Some(_), None) => true,
                (Some(o), Some((d, _))) => {
                    if forward {
                        o <= d
                    } else {
                        o >= d
                    }
                }
            };
            let popped = match (take_own, forward) {
                (false, _) => None,
                (true, true) => self.own.pop_front(),
                (true, false) => self.own.pop_back(),
            };
            // `take_own` implies `own` is non-empty (`own_key` came from it).
            let Some((key, own)) = popped else {
                return slot.take().map(Ok);
            };
            // The database's entry for the same key is shadowed.
            let db = match slot.as_ref() {
                Some((d, _)) if *d == key => slot.take().map(|(_, v)| v),
                _ => None,
            };
            match own.resolve(&self.cf, &key, db.as_deref()) {
                Ok(Some(v)) => return Some(Ok((key, v))),
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl Iterator for TransactionIter {
    type Item = crate::KvResult;

    fn next(&mut self) -> Option<crate::KvResult> {
        self.step(true)
    }
}

impl DoubleEndedIterator for TransactionIter {
    fn next_back(&mut self) -> Option<crate::KvResult> {
        self.step(false)
    }
}

impl std::iter::FusedIterator for TransactionIter {}
