//! The server: the accept loop, the `everysec` WAL sync task, and
//! graceful shutdown. The state connections share is in `shared.rs`.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{Db, FileSystem, PosixFs};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{AppendFsync, Config};
use crate::shared::new_shared;
use crate::workers::Workers;

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
    pub fn start_with_fs(mut cfg: Config, fs: Arc<dyn FileSystem>) -> std::io::Result<Server> {
        cfg.maxclients = crate::limits::adjust_open_files(
            cfg.maxclients,
            crate::limits::reserved_fds(cfg.options.max_open_files),
        )?;
        warn_if_exposed(&cfg);
        let (runtime, workers) = Workers::start(cfg.threads, cfg.schedule, cfg.churn)?;
        let db =
            Db::open_with_fs(&cfg.dir, cfg.options.clone(), fs).map_err(std::io::Error::other)?;
        crate::marker::claim(&db, &cfg.dir)?;
        let std_listener = std::net::TcpListener::bind((cfg.bind.as_str(), cfg.port))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (tx, rx) = watch::channel(false);
        let shutdown = tx.clone();
        let thread = std::thread::Builder::new()
            .name("batchkv-serve-main".into())
            .spawn(move || {
                let r = runtime.block_on(async {
                    let listener = TcpListener::from_std(std_listener)?;
                    serve(db, cfg, listener, tx, rx, &workers).await
                });
                // Every connection has ended (`serve` waited for them).
                drop(workers);
                r
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

/// Warns when the server accepts clients from other hosts without a
/// password: refused by protected mode, or, with it off, let in.
fn warn_if_exposed(cfg: &Config) {
    let no_password = cfg.requirepass.as_deref().is_none_or(str::is_empty);
    if !no_password || !crate::security::binds_beyond_loopback(&cfg.bind) {
        return;
    }
    if cfg.protected_mode {
        log::warn!(
            "batchkv serve: listening on {} without a password: protected mode refuses clients \
             from other hosts (set --requirepass, or --protected-mode no to let them in)",
            cfg.bind
        );
    } else {
        log::warn!(
            "batchkv serve: listening on {} without a password and with protected mode off: \
             any host that can reach the port can read and change every key",
            cfg.bind
        );
    }
}

/// Backs off the accept loop while `accept` fails (out of descriptors:
/// EMFILE/ENFILE, or out of memory) instead of retrying at once, and logs
/// the failures at most once a second.
struct AcceptBackoff {
    delay: Duration,
    failures: u64,
    logged: Option<Instant>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_millis(100);

    fn new() -> AcceptBackoff {
        AcceptBackoff {
            delay: Duration::ZERO,
            failures: 0,
            logged: None,
        }
    }

    /// Records a failure; returns how long to wait before the next accept.
    fn failed(&mut self, e: &std::io::Error, now: Instant) -> Duration {
        self.failures += 1;
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::MAX);
        if self
            .logged
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            log::error!(
                "batchkv serve: accepting a connection failed: {e} ({} failure(s) since the \
                 last report; retrying in {} ms)",
                self.failures,
                self.delay.as_millis()
            );
            self.failures = 0;
            self.logged = Some(now);
        }
        self.delay
    }

    /// Records a success: the next failure starts the backoff over.
    fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }
}

/// Answers a client refused by protected mode with Redis's DENIED error
/// and closes the connection.
async fn refuse(mut sock: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let _ = sock.write_all(crate::security::DENIED.as_bytes()).await;
    let _ = sock.shutdown().await;
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
                log::warn!("batchkv serve: signal received, shutting down");
                tx.send_replace(true);
            })
        });
    }
    // The readiness line goes to stderr whatever the log level or
    // `--logfile` (scripts wait for it), and to the log at `info`.
    eprintln!("batchkv serve: listening on {}", server.addr());
    log::info!("batchkv serve: listening on {}", server.addr());
    server.join()
}

async fn serve(
    db: Db,
    cfg: Config,
    listener: TcpListener,
    shutdown_tx: watch::Sender<bool>,
    mut shutdown_rx: watch::Receiver<bool>,
    workers: &Workers,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let shared = new_shared(db.clone(), cfg, port, shutdown_tx);
    if let Some(b) = workers.balance() {
        let _ = shared.stats.balance.set(b.clone());
    }
    {
        // `appendfsync` can change at runtime (CONFIG SET): the task runs
        // always and syncs only under `everysec`.
        let s = shared.clone();
        let mut stop = shutdown_rx.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => return,
                }
                if s.settings.appendfsync() != AppendFsync::EverySec {
                    continue;
                }
                if s.dirty.swap(false, Ordering::Relaxed) {
                    let s2 = s.clone();
                    let r = tokio::task::spawn_blocking(move || s2.sync_wal()).await;
                    if let Ok(Err(e)) = r {
                        log::error!("batchkv serve: WAL sync failed: {e}");
                    }
                }
            }
        });
    }
    // Before anything writes: the counts' deltas start now.
    shared.key_counts.start(&shared.db);
    let expiry = tokio::spawn(crate::expiry::run(shared.clone(), shutdown_rx.clone()));
    tokio::spawn(crate::clients::cron(shared.clone(), shutdown_rx.clone()));
    let mut conns = tokio::task::JoinSet::new();
    let mut backoff = AcceptBackoff::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (sock, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        let wait = backoff.failed(&e, Instant::now());
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = shutdown_rx.changed() => break,
                        }
                        continue;
                    }
                };
                backoff.succeeded();
                shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                let settings = &shared.settings;
                if crate::security::denied(settings.protected_mode(), settings.auth_required(), peer) {
                    shared.stats.rejected_connections.fetch_add(1, Ordering::Relaxed);
                    conns.spawn(refuse(sock));
                    continue;
                }
                let _ = sock.set_nodelay(true);
                let s = shared.clone();
                let rx = shutdown_rx.clone();
                // Spread over threads, the connection runs on its own
                // thread's runtime, from a task of this one
                // (`conn::serve_on_its_thread`).
                let placement = workers.is_spread().then(|| workers.place());
                conns.spawn(crate::conn::serve_conn(s, sock, rx, placement));
            }
            _ = shutdown_rx.changed() => break,
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                // Commands run inside the panic boundary (`panics.rs`);
                // anything else that panics ends its connection only.
                if let Err(e) = done {
                    if e.is_panic() {
                        log::error!("batchkv serve: a connection task panicked: {e}");
                    }
                }
            }
        }
    }
    drop(listener);
    // Connections see the shutdown flag and finish the pipeline they are
    // in (those waiting for input are woken to see it); give them a
    // moment, then stop the rest.
    shared.clients_reg.wake_all();
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
        s.key_counts.stop();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_doubling_and_start_over_after_a_success() {
        let mut b = AcceptBackoff::new();
        let e = std::io::Error::from_raw_os_error(libc::EMFILE);
        let t = Instant::now();
        let waits: Vec<u128> = (0..6).map(|_| b.failed(&e, t).as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 100, 100]);
        b.succeeded();
        assert_eq!(b.failed(&e, t).as_millis(), 10);
    }
}
