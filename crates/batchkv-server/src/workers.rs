//! The threads that run connections, and how connections are spread over
//! them (`--runtime`).
//!
//! - [`Schedule::Adaptive`] (the default): the pinned threads below, but
//!   a connection runs where the threads' loads say (`balance.rs`): all
//!   on one thread while it keeps up, spread over the others when it
//!   saturates, gathered again when the load falls. It moves between
//!   requests (its socket goes to the other runtime's reactor,
//!   [`Placement`]). Light load costs what one thread costs (no worker
//!   woken to steal a request or two: GET and HGET at `-c 50 -P 1` at
//!   about redis-server's CPU per request, 0.02–0.04 context switches per
//!   request against stealing's 0.12–0.19), and heavy load gets every
//!   thread. What one-worker threads cannot do by themselves is steal: a
//!   thread busy with long batches would hold up its other connections
//!   while another thread idles. So a long batched read of a connection
//!   whose thread is busy runs on an idle thread (a *helper*,
//!   [`Placement::helper`]) while its own thread serves its other
//!   connections: SST-resident HMGETs of 100 fields at `-c 50` run at
//!   stealing's rate at `-P 1` and 11 % under it at `-P 10` (23–27 %
//!   under without helpers). Measurements:
//!   docs/perf/history/2026-11-30-adaptive-runtime.md,
//!   docs/perf/history/2026-11-30-read-helpers.md.
//! - [`Schedule::Stealing`]: one multi-threaded tokio runtime of that
//!   many workers (work stealing). A command that blocks
//!   its worker (a read from disk, an `fsync`) hands the worker's other
//!   connections to another thread first ([`crate::shared::block_in_place`]).
//!   The price: a worker that wakes a connection task while another worker
//!   sleeps wakes that one to steal it, and with one request per
//!   connection in flight most such wake-ups find nothing to do (HMGET of
//!   5 fields, `-c 50 -P 1`: 0.25 context switches per request against
//!   Redis's 0.015).
//! - [`Schedule::Pinned`]: one runtime of one worker thread per thread.
//!   The accept loop hands each new connection to the next runtime in
//!   turn; the connection stays on its thread. A request wakes only the
//!   thread its connection lives on, as Redis's one thread does (9–17 %
//!   less CPU per memtable-resident `-P 1` read). A command that blocks
//!   in [`crate::shared::block_in_place`] (an `fsync` under `appendfsync
//!   always`) hands its thread's other connections to a spare thread, as
//!   under stealing. What it cannot do is balance: a thread whose
//!   connections wait on block reads from disk, or simply have more work,
//!   keeps them (~6–10 % fewer SST-resident HMGETs at `-P 10`).
//!   Measurements: docs/perf/history/2026-11-29-pinned-runtime.md and
//!   docs/perf/history/2026-11-29-pinned-one-worker.md.
//!
//! All three keep the combining of `combine.rs` working: a job is gathered on
//! the thread it was submitted on, and a job queued for a leader on
//! another thread is answered through a channel, which wakes its task on
//! its own thread.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::{Builder, Handle, Runtime};

use crate::balance::Balance;

/// How connections are scheduled over the server's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Schedule {
    /// Connections are tasks of one work-stealing runtime.
    Stealing,
    /// Each connection stays on one thread with its own runtime.
    Pinned,
    /// Each thread has its own runtime; connections gather on as few
    /// threads as keep up with the load and move between them.
    #[default]
    Adaptive,
}

impl Schedule {
    /// The `--runtime` value.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Stealing => "stealing",
            Schedule::Pinned => "pinned",
            Schedule::Adaptive => "adaptive",
        }
    }
}

/// The runtimes connections are spawned on. The first one's runtime is
/// returned by [`Workers::start`] for the caller to run the accept loop on;
/// the others run on threads of their own until [`Workers::stop`].
pub struct Workers {
    /// Where connections go.
    handles: Arc<[Handle]>,
    /// The threads' loads ([`Schedule::Adaptive`] only).
    balance: Option<Arc<Balance>>,
    /// The next thread in turn ([`Schedule::Pinned`]).
    next: AtomicUsize,
    /// The pinned runtimes beyond the first (dropping one ends its
    /// thread and the connections still on it).
    runtimes: Vec<Runtime>,
}

impl Workers {
    /// Starts `threads` threads (at least one) scheduled as `schedule`;
    /// returns the runtime for the caller's thread, the first. `churn`
    /// (tests) moves every adaptive connection at every chance.
    pub fn start(
        threads: usize,
        schedule: Schedule,
        churn: bool,
    ) -> io::Result<(Runtime, Workers)> {
        let threads = threads.max(1);
        let balance =
            (schedule == Schedule::Adaptive).then(|| Arc::new(Balance::new(threads, churn)));
        let mut runtimes = Vec::new();
        let first = match schedule {
            Schedule::Stealing => Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("batchkv-serve")
                .enable_all()
                .build()?,
            Schedule::Pinned | Schedule::Adaptive => {
                for i in 1..threads {
                    runtimes.push(one_worker(i, balance.as_ref())?);
                }
                one_worker(0, balance.as_ref())?
            }
        };
        let handles = std::iter::once(first.handle().clone())
            .chain(runtimes.iter().map(|rt| rt.handle().clone()))
            .collect();
        let workers = Workers {
            handles,
            balance,
            next: AtomicUsize::new(0),
            runtimes,
        };
        Ok((first, workers))
    }

    /// Where the next connection runs: the next thread in turn (pinned),
    /// or the one its load says (adaptive).
    pub fn place(&self) -> Placement {
        let thread = match &self.balance {
            Some(b) => b.place(),
            None => self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len(),
        };
        Placement {
            handles: self.handles.clone(),
            balance: self.balance.clone(),
            thread,
            until_check: CHECK_EVERY,
        }
    }

    /// The runtime of the next connection (see [`Workers::place`]).
    #[cfg(test)]
    pub fn next(&self) -> Handle {
        self.place().handle().clone()
    }

    /// The threads' loads (adaptive schedule only).
    pub fn balance(&self) -> Option<&Arc<Balance>> {
        self.balance.as_ref()
    }

    /// Whether connections may run on other runtimes than the accept
    /// loop's (a socket must then be moved to its runtime's reactor).
    pub fn is_spread(&self) -> bool {
        self.handles.len() > 1
    }

    /// Ends the runtimes beyond the first (they drop what they still
    /// hold) and waits for their threads.
    pub fn stop(&mut self) {
        self.runtimes.clear();
    }
}

/// Request boundaries between a connection's looks at the loads
/// ([`Placement::check`]).
const CHECK_EVERY: u32 = 16;

/// Where one connection runs: its thread, and (adaptive) whether it should
/// move.
pub struct Placement {
    handles: Arc<[Handle]>,
    balance: Option<Arc<Balance>>,
    thread: usize,
    until_check: u32,
}

impl Placement {
    /// The runtime of the connection's thread.
    pub fn handle(&self) -> &Handle {
        &self.handles[self.thread]
    }

    /// The connection's thread.
    #[cfg(test)]
    pub fn thread(&self) -> usize {
        self.thread
    }

    /// Called at a request boundary where the connection could move: the
    /// thread it should move to, if any (adaptive only; the loads are
    /// looked at every [`CHECK_EVERY`] calls).
    pub fn check(&mut self) -> Option<usize> {
        let balance = self.balance.as_ref()?;
        self.until_check -= 1;
        if self.until_check > 0 {
            return None;
        }
        self.until_check = CHECK_EVERY;
        balance.rebalance(self.thread)
    }

    /// Where a request expected to take `expected_ns` should run instead of
    /// the connection's busy thread: an idle thread's runtime
    /// ([`Balance::helper_for`]; adaptive only).
    pub fn helper(&self, expected_ns: u64) -> Option<&Handle> {
        let balance = self.balance.as_ref()?;
        let j = balance.helper_for(self.thread, expected_ns)?;
        Some(&self.handles[j])
    }

    /// The connection now runs on `thread`.
    pub fn moved_to(&mut self, thread: usize) {
        self.thread = thread;
    }
}

/// A pinned runtime: one worker thread, `batchkv-serve-{i}`, so a task
/// woken there runs there and wakes no other thread. It is a
/// multi-threaded runtime of one worker rather than a current-thread one
/// because of [`crate::shared::block_in_place`]: a command that blocks
/// (an `fsync`) hands the worker to a spare thread, which runs the
/// thread's other connections meanwhile.
fn one_worker(i: usize, balance: Option<&Arc<Balance>>) -> io::Result<Runtime> {
    let mut b = Builder::new_multi_thread();
    b.worker_threads(1)
        .thread_name(format!("batchkv-serve-{i}"))
        .enable_all();
    if let Some(balance) = balance {
        let (p, u) = (balance.clone(), balance.clone());
        b.on_thread_park(move || p.parked(i))
            .on_thread_unpark(move || u.unparked(i));
    }
    b.build()
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_connections_go_to_every_thread_in_turn() {
        let (rt, workers) = Workers::start(3, Schedule::Pinned, false).unwrap();
        let threads: Vec<String> = rt.block_on(async {
            let mut names = Vec::new();
            for _ in 0..6 {
                let name = workers
                    .next()
                    .spawn(async { std::thread::current().name().map(String::from) })
                    .await
                    .unwrap();
                names.push(name.unwrap_or_default());
            }
            names
        });
        assert_eq!(
            threads,
            [
                "batchkv-serve-0",
                "batchkv-serve-1",
                "batchkv-serve-2",
                "batchkv-serve-0",
                "batchkv-serve-1",
                "batchkv-serve-2"
            ]
        );
        assert!(workers.is_spread());
    }

    #[test]
    fn a_pinned_thread_that_blocks_hands_its_other_connections_on() {
        // One pinned thread: without the hand-off, the task blocked in
        // `block_in_place` would keep the other from ever running.
        let (rt, workers) = Workers::start(1, Schedule::Pinned, false).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let got = rt.block_on(async {
            let blocked = workers.next().spawn(async move {
                crate::shared::block_in_place(|| {
                    rx.recv_timeout(std::time::Duration::from_secs(10))
                })
            });
            // Let the first task block before the second is spawned.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            workers
                .next()
                .spawn(async move { tx.send(()) })
                .await
                .unwrap()
                .unwrap();
            blocked.await.unwrap()
        });
        assert_eq!(got, Ok(()));
    }

    #[test]
    fn adaptive_connections_gather_on_the_first_thread_while_all_are_idle() {
        let (_rt, workers) = Workers::start(3, Schedule::Adaptive, false).unwrap();
        assert!(workers.is_spread());
        for _ in 0..4 {
            assert_eq!(workers.place().thread(), 0);
        }
        // A connection placed on another thread (as after a spread) moves
        // back while the threads stay idle: once per period and thread.
        let mut p = workers.place();
        p.moved_to(2);
        let moves: Vec<Option<usize>> = (0..2 * CHECK_EVERY).map(|_| p.check()).collect();
        assert_eq!(moves.iter().flatten().collect::<Vec<_>>(), [&0]);
        assert_eq!(
            moves[CHECK_EVERY as usize - 1],
            Some(0),
            "checked every {CHECK_EVERY}"
        );
    }

    #[test]
    fn pinned_connections_never_move() {
        let (_rt, workers) = Workers::start(2, Schedule::Pinned, false).unwrap();
        let mut p = workers.place();
        p.moved_to(1);
        assert!((0..4 * CHECK_EVERY).all(|_| p.check().is_none()));
    }

    #[test]
    fn stealing_has_one_runtime() {
        let (rt, workers) = Workers::start(2, Schedule::Stealing, false).unwrap();
        assert!(!workers.is_spread());
        let on_worker = rt.block_on(async {
            workers
                .next()
                .spawn(async { std::thread::current().name().map(String::from) })
                .await
                .unwrap()
        });
        assert_eq!(on_worker.as_deref(), Some("batchkv-serve"));
    }

    #[test]
    fn stop_drops_the_tasks_still_pending_on_the_other_threads() {
        /// Sends when dropped.
        struct Dropped(std::sync::mpsc::Sender<()>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let (_rt, mut workers) = Workers::start(2, Schedule::Pinned, false).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        workers.next();
        let guard = Dropped(tx);
        workers.next().spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        });
        workers.stop();
        assert!(workers.runtimes.is_empty());
        // `stop` returned after the runtime dropped the task.
        assert_eq!(rx.try_recv(), Ok(()));
    }
}
