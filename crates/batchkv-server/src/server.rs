//! The server: state shared by all connections, the accept loop, the
//! `everysec` WAL sync task, and graceful shutdown.
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

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use batchkv::{Db, FileSystem, PosixFs, ReadOptions, WriteBatch, WriteOptions};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::batcher::Batcher;
use crate::config::{AppendFsync, Config};
use crate::keyspace::{self, Decoded};
use crate::resp::Reply;

/// A live value read by a command: `(expiry ms, bytes)`, `None` if absent
/// or expired.
pub type Live = Option<(Option<u64>, Vec<u8>)>;

/// Number of key lock stripes.
const STRIPES: usize = 4096;
/// SCAN cursors remembered (oldest forgotten first).
const MAX_CURSORS: usize = 16 * 1024;

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
    pub wal_syncs: AtomicU64,
    /// Keys deleted by active expiry (`expiry.rs`).
    pub expired_keys: AtomicU64,
    /// Every value with an expiry is in the expiry index (INFO stats
    /// `expiry_index_complete`; false while a database from before the
    /// index is being walked).
    pub expiry_index_complete: AtomicBool,
}

/// State shared by all connections.
pub struct Shared {
    pub db: Db,
    pub cfg: Config,
    /// Shared with the batcher, which counts its batches here.
    pub stats: Arc<Stats>,
    pub batcher: Option<Arc<Batcher>>,
    pub started: Instant,
    pub port: u16,
    pub clients: AtomicUsize,
    next_client_id: AtomicU64,
    /// Set by every write, cleared by the `everysec` sync task.
    dirty: AtomicBool,
    stripes: Vec<Mutex<()>>,
    cursors: Mutex<Cursors>,
    shutdown: watch::Sender<bool>,
}

#[derive(Default)]
struct Cursors {
    next: u64,
    map: HashMap<u64, (u8, Vec<u8>)>,
    order: VecDeque<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data is either `()` or a cursor map that is valid after
    // any panic, so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stripe_of(key: &[u8]) -> usize {
    // FNV-1a: fast, and good enough to spread keys over stripes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % STRIPES as u64) as usize
}

/// Held stripe locks (see the module's invariants).
pub struct KeyGuard<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl Shared {
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Locks the stripes of all `keys` (stored keys) in ascending order.
    pub fn lock_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> KeyGuard<'_> {
        let mut idx: Vec<usize> = keys.iter().map(|k| stripe_of(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        KeyGuard {
            _guards: idx.into_iter().map(|i| lock(&self.stripes[i])).collect(),
        }
    }

    /// Records that a write happened (for the `everysec` sync task).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Applies `batch` with the configured durability.
    pub fn write(&self, batch: WriteBatch) -> Result<(), Reply> {
        self.mark_dirty();
        let opts = WriteOptions {
            sync: self.cfg.appendfsync == AppendFsync::Always,
            ..Default::default()
        };
        let r = if opts.sync {
            // The fsync blocks: let the runtime move other tasks off this
            // worker meanwhile (and let concurrent writers group-commit).
            block_in_place(|| self.db.write(&opts, batch))
        } else {
            self.db.write(&opts, batch)
        };
        r.map_err(crate::commands::engine_error)
    }

    /// Puts one string value.
    pub fn put(&self, key: &[u8], data: &[u8], expire_at: Option<u64>) -> Result<(), Reply> {
        let mut b = WriteBatch::new();
        keyspace::put_value(&mut b, key, data, expire_at);
        self.write(b)
    }

    /// Deletes one key.
    pub fn delete(&self, key: &[u8]) -> Result<(), Reply> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Reads a live (unexpired) value: `(expiry, bytes)`.
    pub fn read(&self, key: &[u8]) -> Result<Live, Reply> {
        let v = self.db.get(key).map_err(crate::commands::engine_error)?;
        let Some(v) = v else { return Ok(None) };
        match keyspace::live_value(&v, keyspace::now_ms()) {
            Ok(Some(Decoded { expire_at, data })) => Ok(Some((expire_at, data.to_vec()))),
            Ok(None) => Ok(None),
            Err(()) => Err(Reply::err(
                "ERR corrupt value (not written by batchkv serve)",
            )),
        }
    }

    /// Reads many keys with one `multi_get` (or a loop of `get` with
    /// `--batch off`); expired and absent keys are `None`.
    pub fn read_many(&self, keys: &[Vec<u8>]) -> Vec<Result<Live, Reply>> {
        if self.batcher.is_none() {
            return keys.iter().map(|k| self.read(k)).collect();
        }
        let now = keyspace::now_ms();
        let mut out = Vec::with_capacity(keys.len());
        self.db
            .multi_get_with(&ReadOptions::default(), keys, |_, r| {
                out.push(match r {
                    Err(e) => Err(crate::commands::engine_error(e)),
                    Ok(None) => Ok(None),
                    Ok(Some(v)) => match keyspace::live_value(v, now) {
                        Ok(Some(d)) => Ok(Some((d.expire_at, d.data.to_vec()))),
                        Ok(None) => Ok(None),
                        Err(()) => Err(Reply::err("ERR corrupt value")),
                    },
                })
            });
        out
    }

    /// Remembers where a SCAN stopped; returns the cursor to hand out.
    pub fn save_cursor(&self, db: u8, next_key: Vec<u8>) -> u64 {
        let mut c = lock(&self.cursors);
        c.next += 1;
        let id = c.next;
        c.map.insert(id, (db, next_key));
        c.order.push_back(id);
        while c.order.len() > MAX_CURSORS {
            if let Some(old) = c.order.pop_front() {
                c.map.remove(&old);
            }
        }
        id
    }

    /// The key a SCAN cursor resumes at (`None`: unknown cursor).
    pub fn load_cursor(&self, db: u8, id: u64) -> Option<Vec<u8>> {
        let c = lock(&self.cursors);
        match c.map.get(&id) {
            Some((d, k)) if *d == db => Some(k.clone()),
            _ => None,
        }
    }

    /// Asks the server to shut down gracefully.
    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Makes every acknowledged write durable: an fsync of the engine's
    /// WAL ([`batchkv::Db::sync_wal`]), no record written.
    fn sync_wal(&self) -> batchkv::Result<()> {
        self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        self.db.sync_wal()
    }
}

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

/// A server running on its own threads (see [`Server::start`]).
pub struct Server {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Opens the database, binds, and serves on a new runtime in a
    /// background thread. Port 0 picks a free port ([`Server::addr`]).
    pub fn start(cfg: Config) -> std::io::Result<Server> {
        Server::start_with_fs(cfg, Arc::new(PosixFs))
    }

    /// [`Server::start`] with the database opened through `fs` (tests
    /// pass a [`batchkv::FaultInjectionFs`] to simulate power loss).
    pub fn start_with_fs(cfg: Config, fs: Arc<dyn FileSystem>) -> std::io::Result<Server> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.threads.max(1))
            .thread_name("batchkv-serve")
            .enable_all()
            .build()?;
        let mut opts = cfg.options.clone();
        opts.compaction_filter = Some(keyspace::ttl_filter());
        let db = Db::open_with_fs(&cfg.dir, opts, fs).map_err(std::io::Error::other)?;
        let std_listener = std::net::TcpListener::bind((cfg.bind.as_str(), cfg.port))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (tx, rx) = watch::channel(false);
        let shutdown = tx.clone();
        let thread = std::thread::Builder::new()
            .name("batchkv-serve-main".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(std_listener)?;
                    serve(db, cfg, listener, tx, rx).await
                })
            })?;
        Ok(Server {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Asks the server to stop (as SIGTERM or SHUTDOWN do).
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Waits until the server has stopped and closed the database.
    pub fn join(mut self) -> std::io::Result<()> {
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("server thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves until SIGTERM/SIGINT or SHUTDOWN, then closes the database.
///
/// The signal handlers are installed before "listening on" is printed:
/// a supervisor (or test) that sends SIGTERM as soon as it reads that line
/// must get a graceful shutdown, not the default action (termination
/// without closing the database).
pub fn run(cfg: Config) -> std::io::Result<()> {
    let signals = cfg.handle_signals;
    let server = Server::start(cfg)?;
    if signals {
        use tokio::signal::unix::{signal, SignalKind};
        let tx = server.shutdown.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (mut term, mut int) = rt.block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })?;
        std::thread::spawn(move || {
            rt.block_on(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                eprintln!("batchkv serve: signal received, shutting down");
                tx.send_replace(true);
            })
        });
    }
    eprintln!("batchkv serve: listening on {}", server.addr());
    server.join()
}

async fn serve(
    db: Db,
    cfg: Config,
    listener: TcpListener,
    shutdown_tx: watch::Sender<bool>,
    mut shutdown_rx: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let stats = Arc::new(Stats::default());
    let batcher = cfg
        .batch
        .then(|| Arc::new(Batcher::new(db.clone(), cfg.threads, stats.clone())));
    let shared = Arc::new(Shared {
        db: db.clone(),
        stats,
        batcher,
        started: Instant::now(),
        port,
        clients: AtomicUsize::new(0),
        next_client_id: AtomicU64::new(0),
        dirty: AtomicBool::new(false),
        stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        cursors: Mutex::new(Cursors::default()),
        shutdown: shutdown_tx,
        cfg,
    });
    if shared.cfg.appendfsync == AppendFsync::EverySec {
        let s = shared.clone();
        let mut stop = shutdown_rx.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => return,
                }
                if s.dirty.swap(false, Ordering::Relaxed) {
                    let s2 = s.clone();
                    let r = tokio::task::spawn_blocking(move || s2.sync_wal()).await;
                    if let Ok(Err(e)) = r {
                        eprintln!("batchkv serve: WAL sync failed: {e}");
                    }
                }
            }
        });
    }
    let expiry = tokio::spawn(crate::expiry::run(shared.clone(), shutdown_rx.clone()));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((sock, _)) = accepted else { continue };
                let _ = sock.set_nodelay(true);
                shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                let s = shared.clone();
                let rx = shutdown_rx.clone();
                conns.spawn(crate::conn::serve_conn(s, sock, rx));
            }
            _ = shutdown_rx.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    // Connections see the shutdown flag and finish the pipeline they are
    // in; give them a moment, then stop the rest.
    let deadline = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            r = conns.join_next() => if r.is_none() { break },
            _ = &mut deadline => { conns.abort_all(); break }
        }
    }
    while conns.join_next().await.is_some() {}
    let _ = expiry.await;
    let s = shared.clone();
    drop(shared);
    tokio::task::spawn_blocking(move || {
        // Everything acknowledged becomes durable, then the engine closes.
        let r1 = s.sync_wal();
        let r2 = s.db.clone().close();
        r1.and(r2)
    })
    .await
    .map_err(std::io::Error::other)?
    .map_err(std::io::Error::other)?;
    drop(db);
    Ok(())
}
