//! State shared by all connections ([`Shared`]): the database, the
//! configuration, statistics, key locks, and the primitives every command
//! reads and writes through.
//!
//! # Thread safety
//! [`Shared`] is used by every connection task at once. Invariants:
//! 1. Every command that writes a key holds that key's stripe lock
//!    ([`Shared::lock_keys`]) from its read to its write, so
//!    read-modify-write commands (INCR, APPEND, SETNX, RENAME, ...) are
//!    atomic against each other and against plain writes.
//! 2. Multi-key commands take their stripes in ascending stripe order, so
//!    two of them never deadlock.
//! 3. Plain reads take no lock: each engine read sees a committed state.
//!    A command that reads several keys without locking them (SUNION,
//!    ZINTER, ...) runs in [`Shared::at_snapshot`], so all its reads see
//!    the same committed state.
//! 4. Commands read and write the engine only through `Shared`'s methods
//!    (`get_raw`, `read_*`, `get_many`, `iter`, `write`, `put`, `delete`),
//!    never through `Shared::db` directly, so that one place decides what
//!    a read sees (inside EXEC: the engine with the transaction's pending
//!    writes on top, `tx.rs`).
//! 5. A [`KeyGuard`] records for WATCH the change of the keys its
//!    holder's writes changed before it releases the stripes (`tx.rs`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use batchkv::{
    BatchOp, Db, DbIterator, InsertHint, ReadOptions, Snapshot, WriteBatch, WriteOptions,
};
use tokio::sync::watch;

use crate::batcher::Batcher;
use crate::blocking::WaitFor;
use crate::config::{AppendFsync, Config};
use crate::errors::{corrupt, wrong_type};
use crate::keycount::KeyCounts;
use crate::keyspace::{self, Entry, NUM_DBS};
use crate::meta::{self, Kind, Meta, Versions};
use crate::ranks;
use crate::resp::Reply;
use crate::tx;

/// Runs `f` on a runtime worker that may block, when inside a
/// multi-threaded runtime (otherwise just runs it).
pub fn block_in_place<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// A live string read by a command: `(expiry ms, bytes)`, `None` if
/// absent or expired.
pub type Live = Option<(Option<u64>, Vec<u8>)>;

/// What a live key holds, read by a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string: its expiry and bytes.
    Str(Option<u64>, Vec<u8>),
    /// A collection's metadata (`meta.rs`).
    Coll(Meta),
}

impl Value {
    pub fn expire_at(&self) -> Option<u64> {
        match self {
            Value::Str(e, _) => *e,
            Value::Coll(m) => m.expire_at,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(..) => "string",
            Value::Coll(m) => m.kind.type_name(),
        }
    }

    fn from_entry(e: Entry<'_>) -> Value {
        match e {
            Entry::Str(d) => Value::Str(d.expire_at, d.data.to_vec()),
            Entry::Coll(m) => Value::Coll(m),
        }
    }
}

thread_local! {
    /// The engine snapshot this thread's reads see ([`Shared::at_snapshot`]).
    static READ_AT: RefCell<Option<Snapshot>> = const { RefCell::new(None) };
    /// The blocked clients this thread's next engine write wakes
    /// ([`Shared::signal_stream_after_write`],
    /// [`Shared::signal_dbs_after_write`]; signalled by [`Shared::apply`]).
    static TO_SIGNAL: RefCell<Vec<AfterWrite>> = const { RefCell::new(Vec::new()) };
}

/// Whom a write wakes once it is applied.
enum AfterWrite {
    /// The readers of the stream at this stored key.
    Stream(Vec<u8>),
    /// Every blocked client of these databases.
    Dbs(Vec<u8>),
}

/// What a stored key's raw record `raw` holds, if it has not expired.
pub fn live_value(raw: &[u8]) -> Result<Option<Value>, Reply> {
    match keyspace::live_entry(raw, keyspace::now_ms()) {
        Ok(e) => Ok(e.map(Value::from_entry)),
        Err(()) => Err(corrupt()),
    }
}

/// This thread's read snapshot ([`Shared::at_snapshot`]), if one is set.
fn read_snapshot() -> Option<Snapshot> {
    READ_AT.with(|r| r.borrow().clone())
}

/// `opts` reading at this thread's snapshot, if one is set and `opts` has
/// none of its own.
fn at_read_snapshot(opts: &ReadOptions) -> Cow<'_, ReadOptions> {
    if opts.snapshot.is_some() {
        return Cow::Borrowed(opts);
    }
    match read_snapshot() {
        Some(s) => Cow::Owned(ReadOptions {
            snapshot: Some(s),
            ..opts.clone()
        }),
        None => Cow::Borrowed(opts),
    }
}

/// Clears this thread's read snapshot when dropped (also on unwinding).
struct ReadAt;

impl Drop for ReadAt {
    fn drop(&mut self) {
        READ_AT.with(|r| r.borrow_mut().take());
    }
}

/// Number of key lock stripes (a `Mutex<()>` each: 512 KiB in all).
///
/// Many, so that the batches of concurrent write leaders (one per server
/// thread, `write_group.rs`), ~150 random keys each under `redis-benchmark
/// -c 50 -P 10`, rarely share one: two such batches share 150²/65536 ≈
/// 0.3 stripes on average, against 5.5 with 4096 stripes, where the second
/// leader nearly always blocked its thread until the first had written.
pub(crate) const STRIPES: usize = 65536;

/// Counters reported by INFO. Relaxed: they are statistics only.
#[derive(Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub commands: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub batches: AtomicU64,
    pub batched_keys: AtomicU64,
    /// Engine writes of combined blind string writes (`write_group.rs`),
    /// and the commands they answered.
    pub write_batches: AtomicU64,
    pub write_batched_commands: AtomicU64,
    pub wal_syncs: AtomicU64,
    /// SAVE and BGSAVE: how many, and the Unix time of the last (0: none
    /// since the start, which LASTSAVE reports instead).
    pub saves: AtomicU64,
    pub last_save: AtomicU64,
    /// Connections moved from one thread to another (`--runtime
    /// adaptive`, `balance.rs`).
    pub connection_moves: AtomicU64,
    /// Batched read jobs run on an idle thread rather than their
    /// connection's busy one (`--runtime adaptive`, `Placement::helper`).
    pub helped_reads: AtomicU64,
    /// The threads' loads under `--runtime adaptive` (INFO batchkv
    /// `thread_loads`), set once the threads start.
    pub balance: std::sync::OnceLock<Arc<crate::balance::Balance>>,
    /// Keys deleted by active expiry (`expiry.rs`).
    pub expired_keys: AtomicU64,
    /// Every value with an expiry is in the expiry index (INFO stats
    /// `expiry_index_complete`; false while a database from before the
    /// index is being walked).
    pub expiry_index_complete: AtomicBool,
    /// Bytes of unfinished requests all connections hold now (a gauge,
    /// bounded by `--max-pending-query-bytes`, `conn.rs`).
    pub pending_query_bytes: AtomicUsize,
}

impl Stats {
    /// Zeroes the counters Redis's CONFIG RESETSTAT zeroes.
    pub fn reset(&self) {
        for c in [
            &self.connections,
            &self.rejected_connections,
            &self.commands,
            &self.hits,
            &self.misses,
            &self.expired_keys,
            &self.batches,
            &self.batched_keys,
            &self.write_batches,
            &self.write_batched_commands,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// State shared by all connections.
pub struct Shared {
    pub db: Db,
    pub cfg: Config,
    /// Shared with the batcher, which counts its batches here.
    pub stats: Arc<Stats>,
    pub batcher: Option<Arc<Batcher>>,
    /// Combines the blind string writes of all connections (with
    /// batching on; `write_group.rs`).
    pub(crate) writes: Option<Arc<crate::write_group::WriteCombiner>>,
    /// Combines the runs of string read-modify-writes of all connections
    /// (with batching on; `write_group.rs`).
    pub(crate) updates: Option<Arc<crate::write_group::UpdateCombiner>>,
    /// Combines the other write groups of connections (HSET, LPUSH, …;
    /// `write_group.rs`); `None` with batching off.
    pub(crate) command_runs: Option<Arc<crate::write_group::CommandCombiner>>,
    pub started: Instant,
    pub port: u16,
    pub clients: AtomicUsize,
    pub(crate) next_client_id: AtomicU64,
    /// Set by every write, cleared by the `everysec` sync task.
    pub(crate) dirty: AtomicBool,
    /// Element versions of new collections (`meta.rs`).
    pub(crate) versions: Versions,
    /// Some collection may exist (set at start if any element key is
    /// stored, and before any collection is created; never cleared).
    /// While false, a string write cannot be replacing a collection and
    /// need not read the key first.
    pub(crate) has_collections: AtomicBool,
    /// Keys per database, kept by every write (`keycount.rs`).
    pub(crate) key_counts: Arc<KeyCounts>,
    pub(crate) stripes: Vec<Mutex<()>>,
    /// Modification counters read by WATCH (`tx.rs`).
    pub(crate) mods: tx::Mods,
    /// Recent SCAN-family cursors (`cursors.rs`).
    pub(crate) cursors: Mutex<crate::cursors::Cursors>,
    pub(crate) shutdown: watch::Sender<bool>,
    /// Clients blocked in BLPOP and friends (`blocking.rs`).
    pub blocking: crate::blocking::Blocking,
    /// Pub/Sub subscriptions (not persisted).
    pub(crate) pubsub: Arc<crate::pubsub::Broker>,
    /// MONITOR's connections.
    pub(crate) monitors: crate::monitor::Monitors,
    /// What CONFIG SET can change (`config/runtime.rs`).
    pub settings: crate::config::Settings,
    /// Every connection, for CLIENT LIST/KILL (`clients.rs`).
    pub clients_reg: crate::clients::Clients,
    /// SLOWLOG (`slowlog.rs`).
    pub slowlog: crate::slowlog::SlowLog,
    /// INFO commandstats and errorstats (`cmdstats.rs`).
    pub cmdstats: crate::cmdstats::CommandStats,
    /// A random 40-hex-digit id of this server run (INFO `run_id`).
    pub run_id: String,
    /// Failed AUTHs: counted for INFO, logged at a limited rate.
    pub auth_failures: crate::security::AuthFailures,
}

/// The state connections share, for a server on `db` listening on
/// `port`; `shutdown` is what SHUTDOWN signals.
pub(crate) fn new_shared(
    db: Db,
    cfg: Config,
    port: u16,
    shutdown: watch::Sender<bool>,
) -> Arc<Shared> {
    let stats = Arc::new(Stats::default());
    let batcher = cfg.batch.then(|| {
        // Connections that stay on one thread wait for its long
        // batches unless they run elsewhere (`Timing`).
        use crate::batcher::Timing;
        use crate::workers::Schedule;
        let timing = match cfg.schedule {
            _ if cfg.threads < 2 => Timing::Off,
            Schedule::Stealing => Timing::Off,
            Schedule::Adaptive => Timing::Timed,
            Schedule::Pinned => Timing::HandOff,
        };
        Arc::new(Batcher::new(db.clone(), cfg.threads, stats.clone(), timing))
    });
    Arc::new_cyclic(|me| Shared {
        stats,
        batcher,
        writes: cfg
            .batch
            .then(|| Arc::new(crate::write_group::combiner(me.clone(), cfg.threads))),
        updates: cfg
            .batch
            .then(|| Arc::new(crate::write_group::update_combiner(me.clone(), cfg.threads))),
        command_runs: cfg.batch.then(|| {
            Arc::new(crate::write_group::command_combiner(
                me.clone(),
                cfg.threads,
            ))
        }),
        started: Instant::now(),
        port,
        clients: AtomicUsize::new(0),
        next_client_id: AtomicU64::new(0),
        dirty: AtomicBool::new(false),
        versions: Versions::new(),
        has_collections: AtomicBool::new(meta::any_elements(&db)),
        db,
        key_counts: Arc::new(KeyCounts::new()),
        stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        mods: crate::tx::Mods::default(),
        cursors: Mutex::new(crate::cursors::Cursors::default()),
        shutdown,
        blocking: crate::blocking::Blocking::new(),
        pubsub: Default::default(),
        monitors: Default::default(),
        settings: crate::config::Settings::new(&cfg, port),
        clients_reg: crate::clients::Clients::default(),
        slowlog: crate::slowlog::SlowLog::default(),
        cmdstats: crate::cmdstats::CommandStats::new(crate::commands::stat_names()),
        run_id: (0..40)
            .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
            .collect(),
        auth_failures: Default::default(),
        cfg,
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data is either `()` or a cursor map that is valid after
    // any panic, so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lock stripes of `keys` (stored keys), ascending, without repeats.
pub fn stripes_of<K: AsRef<[u8]>>(keys: &[K]) -> Vec<usize> {
    let mut idx: Vec<usize> = keys
        .iter()
        .map(|k| tx::stripe_of_slot(tx::slot_of(k.as_ref())))
        .collect();
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// Held stripe locks (see the module's invariants). When dropped, records
/// for WATCH the change of the keys its holder wrote (`tx.rs`) before the
/// stripes are released.
pub struct KeyGuard<'a> {
    mods: &'a tx::Mods,
    /// Whose changes the guard records.
    scope: Scope,
    /// Where the guard's noted changes start (`tx::begin_guard`).
    noted_at: usize,
    _guards: Vec<MutexGuard<'a, ()>>,
    /// Reads under the locks spare the key counts a lookup (`keycount.rs`).
    _recording: crate::keycount::Recording,
}

/// The keys whose changes a [`KeyGuard`] records when dropped.
enum Scope {
    /// Those of these modification-table slots (sorted, no repeats) that
    /// its holder's writes changed.
    Keys(Vec<u32>),
    /// Every key its holder's writes changed (every stripe is held).
    All,
    /// None: inside EXEC, whose own guard records the transaction's write.
    Deferred,
}

impl Drop for KeyGuard<'_> {
    fn drop(&mut self) {
        let (mods, scope) = (self.mods, &self.scope);
        tx::end_guard(self.noted_at, |noted, skipped| match scope {
            // A write went un-noted (no client watched then) and a client
            // watches now: it may have watched after that write, so bump
            // all the guard holds (`tx.rs`, the modification table).
            Scope::Keys(slots) if skipped && mods.watched_now() => mods.touch(slots),
            Scope::All if skipped && mods.watched_now() => mods.touch_all(),
            Scope::Keys(slots) => {
                for &s in slots {
                    if noted.binary_search(&s).is_ok() {
                        mods.touch(&[s]);
                    }
                }
            }
            Scope::All => {
                for (i, &s) in noted.iter().enumerate() {
                    if i == 0 || noted[i - 1] != s {
                        mods.touch(&[s]);
                    }
                }
            }
            Scope::Deferred => {}
        });
    }
}

impl Shared {
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Locks the stripes of all `keys` (stored keys) in ascending order.
    /// Inside EXEC (`tx.rs`) locks nothing: EXEC holds them already.
    pub fn lock_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> KeyGuard<'_> {
        let mut slots: Vec<u32> = keys.iter().map(|k| tx::slot_of(k.as_ref())).collect();
        slots.sort_unstable();
        slots.dedup();
        let mut idx: Vec<usize> = slots.iter().map(|&s| tx::stripe_of_slot(s)).collect();
        idx.sort_unstable();
        idx.dedup();
        if tx::active() {
            tx::check_held(&idx);
            return self.guard(Scope::Deferred, Vec::new());
        }
        let guards = idx.into_iter().map(|i| lock(&self.stripes[i])).collect();
        self.guard(Scope::Keys(slots), guards)
    }

    /// Locks every stripe (FLUSHDB, FLUSHALL, SWAPDB), so no write or EXEC
    /// interleaves with the holder. Records the change of every key its
    /// holder's writes name (SWAPDB's rewritten keys); WATCH sees a flush
    /// by the keys it left not live (`tx.rs`).
    pub fn lock_all(&self) -> KeyGuard<'_> {
        if tx::active() {
            tx::check_held(&(0..STRIPES).collect::<Vec<_>>());
            return self.guard(Scope::Deferred, Vec::new());
        }
        self.lock_stripes(None)
    }

    /// Locks `stripes` (ascending; `None`: all) for EXEC. The guard records
    /// the change of every key written while it is held (EXEC's one write
    /// of the transaction, `tx.rs`).
    pub fn lock_stripes(&self, stripes: Option<&[usize]>) -> KeyGuard<'_> {
        let guards = match stripes {
            Some(idx) => idx.iter().map(|&i| lock(&self.stripes[i])).collect(),
            None => self.stripes.iter().map(lock).collect(),
        };
        self.guard(Scope::All, guards)
    }

    fn guard<'a>(&'a self, scope: Scope, guards: Vec<MutexGuard<'a, ()>>) -> KeyGuard<'a> {
        KeyGuard {
            mods: &self.mods,
            scope,
            noted_at: tx::begin_guard(),
            _guards: guards,
            _recording: crate::keycount::Recording::start(),
        }
    }

    /// Whether the engine holds a live value at stored key `key` (an
    /// engine error or a value it cannot decode counts as live).
    fn is_live_stored(&self, key: &[u8]) -> bool {
        // What the command read under its lock spares a lookup.
        if let Some(live) = crate::keycount::recall_live(key, keyspace::now_ms()) {
            return live;
        }
        match self.db.get(key) {
            Ok(Some(v)) => !matches!(keyspace::live_entry(&v, keyspace::now_ms()), Ok(None)),
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Records that a write happened (for the `everysec` sync task).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Applies `batch` with the configured durability (inside EXEC:
    /// records it in the transaction's overlay, `tx.rs`).
    /// Holds the keyspace notifications `expired` for every expired key
    /// it replaces or deletes and `new` for every key it creates
    /// (`notify.rs`): they go out before the command's first event on
    /// the key.
    pub fn write(&self, batch: WriteBatch) -> Result<(), Reply> {
        let events = if self.notifies(crate::notify::NEW | crate::notify::EXPIRED) {
            self.replaced_keys(&batch)?
        } else {
            Vec::new()
        };
        self.write_without_events(batch)?;
        self.hold_events(events);
        Ok(())
    }

    /// [`Shared::write`] publishing no notifications: the write of a
    /// transaction's overlay, whose commands published theirs.
    pub fn write_without_events(&self, batch: WriteBatch) -> Result<(), Reply> {
        if tx::active() {
            tx::record(&batch);
            return Ok(());
        }
        tx::note_written(&self.mods, &batch, |k| self.is_live_stored(k));
        let opts = WriteOptions {
            sync: self.settings.appendfsync() == AppendFsync::Always,
            ..Default::default()
        };
        self.apply(&opts, batch)
    }

    /// The notifications a write of `batch` causes by itself: `expired`
    /// for each top-level key (string or collection metadata) it writes
    /// that holds an expired value, `new` for each it puts that holds no
    /// live one; in the batch's order, each key once.
    fn replaced_keys(&self, batch: &WriteBatch) -> Result<Vec<crate::notify::Event>, Reply> {
        use crate::notify::{EXPIRED, NEW};
        let mut seen: Vec<&[u8]> = Vec::new();
        let mut events = Vec::new();
        for op in batch.ops() {
            let (key, put) = match op {
                BatchOp::Put { key, .. } => (key, true),
                BatchOp::Delete { key } => (key, false),
                _ => continue,
            };
            if key.first().is_none_or(|&d| usize::from(d) >= NUM_DBS) || seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let live = match self.get_raw(key)? {
                None => false,
                Some(raw) => {
                    let live = live_value(&raw)?.is_some();
                    if !live {
                        events.push((EXPIRED, "expired", key.to_vec()));
                    }
                    live
                }
            };
            if put && !live {
                events.push((NEW, "new", key.to_vec()));
            }
        }
        Ok(events)
    }

    /// Applies `batch` to the engine with `opts` and counts the keys it
    /// adds or removes (`keycount.rs`; the caller holds the locks of the
    /// keys it writes).
    pub fn apply(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<(), Reply> {
        self.mark_dirty();
        let written = self
            .key_counts
            .write(&self.db, batch, |batch| {
                if opts.sync {
                    // The fsync blocks: let the runtime move other tasks off
                    // this worker meanwhile (and let concurrent writers
                    // group-commit).
                    block_in_place(|| self.db.write(opts, batch))
                } else {
                    self.db.write(opts, batch)
                }
            })
            .map_err(crate::commands::engine_error);
        // Streams the written batch deleted or replaced (`drop_elements`),
        // databases it flushed or swapped (a batch that failed signals
        // too: a retry that finds what it waits for unchanged stays
        // blocked).
        for s in TO_SIGNAL.with(|d| std::mem::take(&mut *d.borrow_mut())) {
            match s {
                AfterWrite::Stream(key) => self.blocking.signal_kind(&key, WaitFor::Stream),
                AfterWrite::Dbs(dbs) => self.blocking.signal_dbs(&dbs),
            }
        }
        written
    }

    /// Keys in database `db` and how many have an expiry (`keycount.rs`;
    /// inside EXEC including what the transaction wrote so far). Outside
    /// EXEC: O(keys written since the write window last closed), at most
    /// `window::WINDOW_KEYS_HARD` lookups, batched.
    pub fn key_count(&self, db: u8) -> Result<crate::keycount::Count, Reply> {
        let mut c = self
            .key_counts
            .get(&self.db, usize::from(db))
            .map_err(Reply::err)?;
        let pending = tx::pending(|b| KeyCounts::delta_of(&self.db, b));
        if let Some(delta) = pending {
            let delta = delta.map_err(crate::commands::engine_error)?;
            c = delta.applied_to(c, usize::from(db));
        }
        Ok(c)
    }

    /// Puts one string value (replacing whatever the key held).
    pub fn put(&self, key: &[u8], data: &[u8], expire_at: Option<u64>) -> Result<(), Reply> {
        let mut b = WriteBatch::new();
        self.clear_old(&mut b, key)?;
        keyspace::put_value(&mut b, key, data, expire_at);
        self.write(b)
    }

    /// Deletes one key (of any type).
    pub fn delete(&self, key: &[u8]) -> Result<(), Reply> {
        let mut b = WriteBatch::new();
        self.clear_old(&mut b, key)?;
        b.delete(key);
        self.write(b)
    }

    /// Runs `f` with every engine read this thread makes through `Shared`
    /// at one snapshot, taken now: a command that reads several keys
    /// without holding their locks sees one committed state, as a serial
    /// execution would. Inside EXEC, or nested, just runs `f` (EXEC holds
    /// the locks of the keys its commands name).
    pub fn at_snapshot<R>(&self, f: impl FnOnce() -> R) -> R {
        if tx::active() || READ_AT.with(|r| r.borrow().is_some()) {
            return f();
        }
        READ_AT.with(|r| *r.borrow_mut() = Some(self.db.snapshot()));
        let _clear = ReadAt;
        f()
    }

    /// Runs `f` with this thread's reads at the latest state, outside
    /// any snapshot [`Shared::at_snapshot`] set (restored after): for a
    /// read-only command that writes back what it computed (PFCOUNT's
    /// cache), under the key's lock.
    pub fn latest<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Snapshot>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let s = self.0.take();
                READ_AT.with(|r| *r.borrow_mut() = s);
            }
        }
        let _restore = Restore(READ_AT.with(|r| r.borrow_mut().take()));
        f()
    }

    /// Reads one engine key as it is stored.
    pub fn get_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        if tx::active() {
            if let Some(v) = tx::lookup(key).or_else(|| tx::prefetched(key)) {
                return Ok(v);
            }
        }
        let opts = ReadOptions::default();
        let opts = at_read_snapshot(&opts);
        let v = self
            .db
            .get_opt(&opts, key)
            .map_err(crate::commands::engine_error)?;
        // Reads of the latest state are what the key counts need.
        if !tx::active() && opts.snapshot.is_none() {
            crate::keycount::remember(key, v.as_deref());
        }
        Ok(v)
    }

    /// Visits the stored entries with keys in `[lo, hi)`, ascending (or
    /// descending with `reverse`), calling `f(key, value)` until it returns
    /// false. `fill_cache` false for walks that should not evict the block
    /// cache (KEYS, SCAN).
    pub fn scan(
        &self,
        lo: &[u8],
        hi: &[u8],
        reverse: bool,
        fill_cache: bool,
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Reply> {
        if tx::active() {
            return tx::scan_merged(lo, hi, reverse, f, |g| {
                self.scan_engine(lo, hi, reverse, fill_cache, g)
            });
        }
        self.scan_engine(lo, hi, reverse, fill_cache, f)
    }

    /// [`Shared::scan`] of the engine alone.
    fn scan_engine(
        &self,
        lo: &[u8],
        hi: &[u8],
        reverse: bool,
        fill_cache: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Reply> {
        let mut it = self.engine_iter(lo, hi, fill_cache)?;
        if reverse {
            it.seek_to_last();
            while it.valid() {
                if !f(it.key(), it.value()) {
                    break;
                }
                it.prev();
            }
            return it.status().map_err(crate::commands::engine_error);
        }
        it.seek(lo);
        // The iterator's own bound ends the walk: `hi` is not compared.
        walk(&mut it, None, f)
    }

    /// An engine iterator over `[lo, hi)` at this thread's snapshot,
    /// unpositioned.
    fn engine_iter(&self, lo: &[u8], hi: &[u8], fill_cache: bool) -> Result<DbIterator, Reply> {
        // Built at this thread's snapshot directly: `at_read_snapshot`
        // would copy the bounds once more.
        let opts = ReadOptions {
            lower_bound: Some(lo.to_vec()),
            upper_bound: Some(hi.to_vec()),
            fill_cache,
            snapshot: read_snapshot(),
            ..Default::default()
        };
        self.db.iter(&opts).map_err(crate::commands::engine_error)
    }

    /// A [`Cursor`] for forward scans within `[lo, hi)`.
    pub fn cursor(&self, lo: &[u8], hi: &[u8]) -> Result<Cursor, Reply> {
        Ok(Cursor {
            it: self.engine_iter(lo, hi, true)?,
        })
    }

    /// Visits the elements of the collection `meta` at stored key `key`:
    /// `f(sub, value)` (`meta.rs`: for a sorted set, `sub` is the member
    /// and the value its score), ascending by `sub` (descending with
    /// `reverse`), until `f` returns false.
    pub fn scan_elements(
        &self,
        key: &[u8],
        m: &Meta,
        reverse: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Reply> {
        let p = meta::element_prefix(key, m.version);
        self.scan(&p, &meta::prefix_end(&p), reverse, true, |k, v| {
            f(&k[p.len()..], v)
        })
    }

    /// Adds to `b` the deletion of every element of the collection `m` at
    /// stored key `key` (`meta.rs`, invariant 1). Small collections are
    /// read and deleted key by key; large ones get one range deletion per
    /// key range.
    pub fn drop_elements(&self, b: &mut WriteBatch, key: &[u8], m: &Meta) -> Result<(), Reply> {
        let mut prefixes = vec![meta::element_prefix(key, m.version)];
        if m.kind == Kind::ZSet {
            prefixes.push(meta::score_prefix(key, m.version));
            prefixes.push(meta::rank_prefix(key, m.version));
        }
        for p in prefixes {
            let end = meta::prefix_end(&p);
            if m.size > meta::POINT_DELETE_MAX {
                b.delete_range(&p, end);
                continue;
            }
            self.scan(&p, &end, false, true, |k, _| {
                b.delete(k);
                true
            })?;
        }
        if m.kind == Kind::Stream {
            // Its blocked XREADGROUP clients answer UNBLOCKED.
            self.signal_stream_after_write(key);
            // Consumer groups: their number is not in the metadata, so
            // they are counted here; as many as a large collection's
            // elements, and one range deletion replaces the point ones.
            let p = meta::group_prefix(key, m.version);
            let end = meta::prefix_end(&p);
            let mut records = Vec::new();
            self.scan(&p, &end, false, true, |k, _| {
                records.push(k.to_vec());
                records.len() as u64 <= meta::POINT_DELETE_MAX
            })?;
            if records.len() as u64 > meta::POINT_DELETE_MAX {
                b.delete_range(&p, end);
            } else {
                records.into_iter().for_each(|k| b.delete(k));
            }
        }
        Ok(())
    }

    /// Wakes the clients blocked on stream `key` after this thread's next
    /// engine write (inside EXEC: the transaction's), which changes the
    /// stream's groups or deletes it: XREADGROUP clients then answer
    /// NOGROUP or UNBLOCKED.
    pub fn signal_stream_after_write(&self, key: &[u8]) {
        if self.blocking.blocked_clients() > 0 {
            TO_SIGNAL.with(|d| d.borrow_mut().push(AfterWrite::Stream(key.to_vec())));
        }
    }

    /// Wakes every client blocked on a key of databases `dbs` after this
    /// thread's next engine write (inside EXEC: the transaction's), which
    /// flushes or swaps them: list and sorted-set clients retry, XREADGROUP
    /// clients whose stream is gone answer UNBLOCKED (as in Redis 7).
    pub fn signal_dbs_after_write(&self, dbs: &[u8]) {
        if self.blocking.blocked_clients() > 0 {
            TO_SIGNAL.with(|d| d.borrow_mut().push(AfterWrite::Dbs(dbs.to_vec())));
        }
    }

    /// Adds to `b` a copy of every element of the collection `m` at stored
    /// key `src` as elements of `dst` with version `version` (RENAME, COPY,
    /// MOVE: O(elements), as in Kvrocks).
    fn copy_elements(
        &self,
        b: &mut WriteBatch,
        src: &[u8],
        m: &Meta,
        dst: &[u8],
        version: u64,
    ) -> Result<(), Reply> {
        let mut ranges = vec![(
            meta::element_prefix(src, m.version),
            meta::element_prefix(dst, version),
        )];
        // A sorted set's rank index: its records hold no version, so an
        // indexed set's are copied as they are; a set from before the
        // index gets one built from its score index (read here anyway).
        let mut unranked = None;
        if m.kind == Kind::Stream {
            ranges.push((
                meta::group_prefix(src, m.version),
                meta::group_prefix(dst, version),
            ));
        }
        if m.kind == Kind::ZSet {
            ranges.push((
                meta::score_prefix(src, m.version),
                meta::score_prefix(dst, version),
            ));
            if ranks::indexed(m.version) {
                ranges.push((
                    meta::rank_prefix(src, m.version),
                    meta::rank_prefix(dst, version),
                ));
            } else if ranks::indexed(version) {
                unranked = Some(Vec::new());
            }
        }
        for (from, to) in &ranges {
            let scores = from[0] == meta::SCORES;
            self.scan(from, &meta::prefix_end(from), false, true, |k, v| {
                let mut nk = to.clone();
                nk.extend_from_slice(&k[from.len()..]);
                b.put(nk, v);
                if let (true, Some(entries)) = (scores, unranked.as_mut()) {
                    entries.push(k[from.len()..].to_vec());
                }
                true
            })?;
        }
        if let Some(entries) = unranked {
            ranks::build(b, dst, version, entries.iter().map(Vec::as_slice));
        }
        Ok(())
    }

    /// Adds to `b` the deletion of the elements of the collection stored at
    /// `key`, live or expired, if there is one: every write that replaces
    /// or deletes a key calls this first (`meta.rs`, invariant 1). Free
    /// while no collection was ever created.
    pub fn clear_old(&self, b: &mut WriteBatch, key: &[u8]) -> Result<(), Reply> {
        // Acquire: pairs with the Release in `new_collection`; the stripe
        // lock the caller holds orders it anyway for the same key.
        if !self.has_collections.load(Ordering::Acquire) {
            return Ok(());
        }
        let raw = self.get_raw(key)?;
        if let Some(m) = raw.as_deref().and_then(Meta::decode) {
            self.drop_elements(b, key, &m)?;
        }
        Ok(())
    }

    /// [`Shared::clear_old`] of each of `keys` (stored keys whose stripes
    /// the caller holds), their old values read in one batch.
    pub fn clear_old_many<K: AsRef<[u8]>>(
        &self,
        b: &mut WriteBatch,
        keys: &[K],
    ) -> Result<(), Reply> {
        let Some(metas) = self.old_collections(keys)? else {
            return Ok(());
        };
        for (k, m) in keys.iter().zip(&metas) {
            if let Some(m) = m {
                self.drop_elements(b, k.as_ref(), m)?;
            }
        }
        Ok(())
    }

    /// The collection stored at each of `keys` (live or expired; `None`:
    /// a string or nothing), read in one batch (`get_many_with`), for the
    /// writes that replace them ([`Shared::clear_old_many`]); `None` while
    /// no collection was ever created (nothing is read). A pipeline of SETs
    /// read its keys one by one here once a collection existed: half the
    /// rate of a keyspace of strings only (SET `-c 50 -P 10`, 1M keys).
    pub fn old_collections<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
    ) -> Result<Option<Vec<Option<Meta>>>, Reply> {
        // As in `clear_old`.
        if !self.has_collections.load(Ordering::Acquire) {
            return Ok(None);
        }
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let mut metas = vec![None; refs.len()];
        self.get_many_with(&ReadOptions::default(), &refs, |i, v| {
            if let Some(m) = metas.get_mut(i) {
                *m = v.and_then(Meta::decode);
            }
        })?;
        Ok(Some(metas))
    }

    /// Metadata for a new, empty collection of `kind` (a fresh version).
    /// The caller adds elements, sets `size`, and writes it with
    /// [`Shared::clear_old`] for the key first.
    pub fn new_collection(&self, kind: Kind) -> Meta {
        self.has_collections.store(true, Ordering::Release);
        Meta::new(kind, self.versions.next())
    }

    /// Adds to `b` a copy of `value` (read at stored key `src`) stored at
    /// `dst` with expiry `expire_at`: a string as it is, a collection with
    /// its elements under a new version. `dst`'s old value is not cleared.
    pub fn copy_value(
        &self,
        b: &mut WriteBatch,
        src: &[u8],
        value: &Value,
        dst: &[u8],
        expire_at: Option<u64>,
    ) -> Result<(), Reply> {
        match value {
            Value::Str(_, data) => keyspace::put_value(b, dst, data, expire_at),
            Value::Coll(m) => {
                let mut copy = self.new_collection(m.kind);
                copy.size = m.size;
                copy.head = m.head;
                copy.tail = m.tail;
                copy.stream = m.stream;
                copy.expire_at = expire_at;
                self.copy_elements(b, src, m, dst, copy.version)?;
                keyspace::put_meta(b, dst, &copy);
            }
        }
        Ok(())
    }

    /// Moves `value`, read at stored key `src`, to stored key `dst` with
    /// its expiry, replacing whatever `dst` held (an expired collection's
    /// elements too), and deletes `src`: one write (RENAME, MOVE). Then
    /// wakes the clients blocked on `dst`. The caller holds both keys'
    /// locks, and `src != dst`.
    pub fn move_value(&self, src: &[u8], value: &Value, dst: &[u8]) -> Result<(), Reply> {
        let mut b = WriteBatch::new();
        self.clear_old(&mut b, dst)?;
        self.copy_value(&mut b, src, value, dst, value.expire_at())?;
        self.clear_old(&mut b, src)?;
        b.delete(src);
        self.write(b)?;
        self.blocking.signal(dst);
        Ok(())
    }

    /// Adds to `b` `value` at `key` with a new expiry (its elements, if a
    /// collection, stay as they are).
    pub fn set_expiry(b: &mut WriteBatch, key: &[u8], value: &Value, expire_at: Option<u64>) {
        match value {
            Value::Str(_, data) => keyspace::put_value(b, key, data, expire_at),
            Value::Coll(m) => keyspace::put_meta(b, key, &Meta { expire_at, ..*m }),
        }
    }

    /// Reads a live (unexpired) string: `(expiry, bytes)`. A collection
    /// is a WRONGTYPE error.
    pub fn read(&self, key: &[u8]) -> Result<Live, Reply> {
        match self.read_value(key)? {
            None => Ok(None),
            Some(Value::Str(e, d)) => Ok(Some((e, d))),
            Some(Value::Coll(_)) => Err(wrong_type()),
        }
    }

    /// Reads what a live key holds, of any type.
    pub fn read_value(&self, key: &[u8]) -> Result<Option<Value>, Reply> {
        match self.get_raw(key)? {
            Some(raw) => live_value(&raw),
            None => Ok(None),
        }
    }

    /// Reads the live collection of `kind` at `key`; another type is a
    /// WRONGTYPE error.
    pub fn read_meta(&self, key: &[u8], kind: Kind) -> Result<Option<Meta>, Reply> {
        match self.read_value(key)? {
            None => Ok(None),
            Some(Value::Coll(m)) if m.kind == kind => Ok(Some(m)),
            Some(_) => Err(wrong_type()),
        }
    }

    /// The engine values of stored keys `keys` (duplicates allowed), read
    /// with one `multi_get` of the latest state: for EXEC and write groups
    /// to prefetch, under their locks, the keys their commands name
    /// (`tx::with_overlay`). Also remembered for the key counts of the
    /// one write that follows (`keycount::remember`), so it looks them up
    /// no second time.
    pub fn prefetch(&self, keys: &[Vec<u8>]) -> Result<tx::Prefetched, Reply> {
        let mut sorted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(sorted.len());
        let mut hints: Vec<Option<InsertHint>> = vec![None; sorted.len()];
        let mut err = None;
        let on_result = |i: usize, r: batchkv::Result<Option<&[u8]>>| match r {
            Ok(v) => {
                // The latest state under the caller's locks: what the
                // key counts of its one write need too.
                crate::keycount::remember(sorted[i], v);
                values.push(v.map(<[u8]>::to_vec));
            }
            Err(e) => {
                err.get_or_insert(e);
                values.push(None);
            }
        };
        let mut on_hint = |i: usize, h: InsertHint| {
            if let Some(slot) = hints.get_mut(i) {
                *slot = Some(h);
            }
        };
        (self.db).multi_get_hinted(&ReadOptions::default(), &sorted, on_result, &mut on_hint);
        let mut out = tx::Prefetched::with_capacity_and_hasher(sorted.len(), Default::default());
        for ((key, value), hint) in sorted.iter().zip(values).zip(hints) {
            out.insert(key.to_vec(), tx::Fetched { value, hint });
        }
        match err {
            Some(e) => Err(crate::commands::engine_error(e)),
            None => Ok(out),
        }
    }

    /// Reads many keys with one `multi_get` (or a loop of `get` with
    /// `--batch off`); expired and absent keys are `None`.
    pub fn read_many(&self, keys: &[Vec<u8>]) -> Vec<Result<Option<Value>, Reply>> {
        if self.batcher.is_none() || tx::active() {
            return keys.iter().map(|k| self.read_value(k)).collect();
        }
        let now = keyspace::now_ms();
        let mut out = Vec::with_capacity(keys.len());
        self.db
            .multi_get_with(&at_read_snapshot(&ReadOptions::default()), keys, |_, r| {
                out.push(match r {
                    Err(e) => Err(crate::commands::engine_error(e)),
                    Ok(None) => Ok(None),
                    Ok(Some(v)) => match keyspace::live_entry(v, now) {
                        Ok(e) => Ok(e.map(Value::from_entry)),
                        Err(()) => Err(corrupt()),
                    },
                })
            });
        out
    }

    /// Reads many engine keys as they are with one `multi_get` (a loop of
    /// `get` with `--batch off`), copying each value.
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Result<Vec<Option<Vec<u8>>>, Reply> {
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
        let mut out = Vec::with_capacity(keys.len());
        self.get_many_with(opts, &refs, |_, v| out.push(v.map(<[u8]>::to_vec)))?;
        Ok(out)
    }

    /// Reads many engine keys as they are (element keys, say) with one
    /// `multi_get` (a loop of `get` with `--batch off`), calling
    /// `f(i, value)` for each key in input order with the value borrowed
    /// (no copy). On an engine error `f` may
    /// have seen some keys; the error is returned.
    pub fn get_many_with(
        &self,
        opts: &ReadOptions,
        keys: &[&[u8]],
        f: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<(), Reply> {
        self.get_many_hinted(opts, keys, f, None)
    }

    /// [`Shared::get_many_with`] for keys about to be rewritten: also calls
    /// `on_hint(i, hint)` with the memtable's insert hint of key `i`
    /// (`Db::multi_get_hinted`), to be handed to the write
    /// (`WriteBatch::put_hinted`). Reads one by one (`--batch off`, inside
    /// EXEC) give none.
    pub fn get_many_hinted(
        &self,
        opts: &ReadOptions,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, Option<&[u8]>),
        on_hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) -> Result<(), Reply> {
        let opts = &*at_read_snapshot(opts);
        // Inside EXEC every key first goes through the overlay (`tx.rs`).
        let in_tx = tx::active();
        // Reads of the latest state are what the key counts need.
        let latest = !in_tx && opts.snapshot.is_none();
        if self.batcher.is_none() || in_tx {
            for (i, k) in keys.iter().enumerate() {
                let v = match in_tx
                    .then(|| tx::lookup(k).or_else(|| tx::prefetched(k)))
                    .flatten()
                {
                    Some(v) => v,
                    None => self
                        .db
                        .get_opt(opts, k)
                        .map_err(crate::commands::engine_error)?,
                };
                if latest {
                    crate::keycount::remember(k, v.as_deref());
                }
                f(i, v.as_deref());
            }
            return Ok(());
        }
        let mut err = None;
        let on_result = |i: usize, r: batchkv::Result<Option<&[u8]>>| match r {
            Ok(v) => {
                if latest {
                    crate::keycount::remember(keys[i], v);
                }
                f(i, v)
            }
            Err(e) => {
                err.get_or_insert(e);
            }
        };
        match on_hint {
            Some(on_hint) => self.db.multi_get_hinted(opts, keys, on_result, on_hint),
            None => self.db.multi_get_with(opts, keys, on_result),
        }
        match err {
            Some(e) => Err(crate::commands::engine_error(e)),
            None => Ok(()),
        }
    }

    /// Remembers that a scan of `scope` (`[db]` for SCAN, a collection's
    /// element prefix for HSCAN/SSCAN/ZSCAN) stopped before `position`;
    /// returns the cursor to hand out (never 0; `cursors.rs`).
    pub fn save_cursor(&self, scope: &[u8], position: Vec<u8>) -> u64 {
        lock(&self.cursors).save(scope, position)
    }

    /// Where a scan of `scope` resumes for `cursor` (not 0): exactly where
    /// it stopped, or a position before that (`cursors.rs`). Never fails.
    pub fn resume_cursor(&self, scope: &[u8], cursor: u64) -> Vec<u8> {
        lock(&self.cursors).resume(scope, cursor)
    }

    /// Asks the server to shut down gracefully.
    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Makes every acknowledged write durable: an fsync of the engine's
    /// WAL ([`batchkv::Db::sync_wal`]), no record written.
    pub(crate) fn sync_wal(&self) -> batchkv::Result<()> {
        self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        self.db.sync_wal()
    }
}

/// Forward scans of one key range (e.g. one sorted set's rank records)
/// through one engine iterator, re-seeked for each (`seek_near`): after
/// the first, a seek costs the memtable O(log distance) from the last one
/// (its finger search) and no iterator is built.
pub struct Cursor {
    it: DbIterator,
}

impl Cursor {
    /// [`Shared::scan`] forward over `[lo, hi)`, which lies within the
    /// cursor's range.
    pub fn scan(
        &mut self,
        lo: &[u8],
        hi: &[u8],
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Reply> {
        if tx::active() {
            return tx::scan_merged(lo, hi, false, f, |g| {
                self.it.seek_near(lo);
                walk(&mut self.it, Some(hi), g)
            });
        }
        self.it.seek_near(lo);
        walk(&mut self.it, Some(hi), f)
    }
}

/// Visits `it`'s entries from its position (below `hi`, if given) until
/// `f` returns false.
fn walk(
    it: &mut DbIterator,
    hi: Option<&[u8]>,
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), Reply> {
    while it.valid() && hi.is_none_or(|hi| it.key() < hi) {
        if !f(it.key(), it.value()) {
            break;
        }
        it.next();
    }
    it.status().map_err(crate::commands::engine_error)
}

#[cfg(test)]
mod tests {
    use batchkv::{Db, WriteBatch, WriteOptions};

    use super::*;
    use crate::config::Config;

    /// The race `tx.rs` closes: a write noted while no client watched, a
    /// WATCH of its key before its engine write, the write, then its
    /// guard's end. The guard must bump the key's slot (so EXEC aborts);
    /// with no WATCH it bumps nothing, and a write noted while a client
    /// watches bumps exactly its keys.
    #[test]
    fn a_watch_that_races_an_unnoted_write_still_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::new(dir.path());
        let db = Db::open(dir.path(), cfg.options.clone()).unwrap();
        let (tx, _rx) = tokio::sync::watch::channel(false);
        let shared = new_shared(db, cfg, 0, tx);
        let (key, other) = (keyspace::db_key(0, b"k"), keyspace::db_key(0, b"other"));
        let (slot, other_slot) = (tx::slot_of(&key), tx::slot_of(&other));
        let put = || {
            let mut b = WriteBatch::new();
            b.put(&key, b"v");
            b
        };
        let opts = WriteOptions::default();

        // Nobody watches: nothing noted, nothing bumped.
        let g = shared.lock_keys(&[&key, &other]);
        shared.write(put()).unwrap();
        drop(g);
        assert_eq!(
            (shared.mods.slot(slot), shared.mods.slot(other_slot)),
            (0, 0)
        );

        // WATCH lands between the write's note and its engine write.
        let g = shared.lock_keys(&[&key, &other]);
        let batch = put();
        tx::note_written(&shared.mods, &batch, |_| true);
        let watching = shared.mods.watch();
        let stamp = shared.mods.slot(slot);
        shared.apply(&opts, batch).unwrap();
        drop(g);
        assert_ne!(
            shared.mods.slot(slot),
            stamp,
            "the write after WATCH was missed"
        );

        // Noted while watched: only the written key's slot moves.
        let (before, other_before) = (shared.mods.slot(slot), shared.mods.slot(other_slot));
        let g = shared.lock_keys(&[&key, &other]);
        shared.write(put()).unwrap();
        drop(g);
        assert_eq!(shared.mods.slot(slot), before + 1);
        assert_eq!(shared.mods.slot(other_slot), other_before);
        drop(watching);
    }
}
