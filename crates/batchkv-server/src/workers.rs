//! The threads that run connections, and how connections are spread over
//! them (`--runtime`).
//!
//! - [`Schedule::Stealing`] (the default): one multi-threaded tokio
//!   runtime of that many workers (work stealing). A command that blocks
//!   its worker (a read from disk, an `fsync`) hands the worker's other
//!   connections to another thread first ([`crate::shared::block_in_place`]).
//!   The price: a worker that wakes a connection task while another worker
//!   sleeps wakes that one to steal it, and with one request per
//!   connection in flight most such wake-ups find nothing to do (HMGET of
//!   5 fields, `-c 50 -P 1`: 0.25 context switches per request against
//!   Redis's 0.015).
//! - [`Schedule::Pinned`]: one single-threaded tokio runtime per thread.
//!   The accept loop runs on the first and hands each new connection to
//!   the next thread in turn; the connection stays there. A request wakes
//!   only the thread its connection lives on, as Redis's one thread does
//!   (9–13 % less CPU per memtable-resident `-P 1` read). But a command
//!   that blocks runs in place: the other connections of its thread wait
//!   for the disk or the `fsync` (7–13 % fewer pipelined SETs under
//!   `appendfsync always`, ~10 % fewer SST-resident HMGETs at `-P 10`).
//!   Measurements: docs/perf/history/2026-11-29-pinned-runtime.md.
//!
//! Both keep the combining of `combine.rs` working: a job is gathered on
//! the thread it was submitted on, and a job queued for a leader on
//! another thread is answered through a channel, which wakes its task on
//! its own thread.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

/// How connections are scheduled over the server's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Schedule {
    /// Connections are tasks of one work-stealing runtime.
    #[default]
    Stealing,
    /// Each connection stays on one thread with its own runtime.
    Pinned,
}

/// The runtimes connections are spawned on. The first one's runtime is
/// returned by [`Workers::start`] for the caller to run the accept loop on;
/// the others run on threads of their own until [`Workers::stop`].
pub struct Workers {
    /// Where connections go, in turn.
    handles: Vec<Handle>,
    next: AtomicUsize,
    /// One per thread beyond the first: dropping or sending ends it.
    stops: Vec<oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `threads` threads (at least one) scheduled as `schedule`;
    /// returns the runtime for the caller's thread, the first.
    pub fn start(threads: usize, schedule: Schedule) -> io::Result<(Runtime, Workers)> {
        let threads = threads.max(1);
        let first = match schedule {
            Schedule::Stealing => Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("batchkv-serve")
                .enable_all()
                .build()?,
            Schedule::Pinned => Builder::new_current_thread().enable_all().build()?,
        };
        let mut workers = Workers {
            handles: vec![first.handle().clone()],
            next: AtomicUsize::new(0),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        if schedule == Schedule::Pinned {
            for i in 1..threads {
                let rt = Builder::new_current_thread().enable_all().build()?;
                workers.handles.push(rt.handle().clone());
                let (stop, stopped) = oneshot::channel::<()>();
                let thread = std::thread::Builder::new()
                    .name(format!("batchkv-serve-{i}"))
                    .spawn(move || {
                        // Runs the connections spawned on it until stopped.
                        let _ = rt.block_on(stopped);
                    })?;
                workers.stops.push(stop);
                workers.threads.push(thread);
            }
        }
        Ok((first, workers))
    }

    /// The runtime the next connection runs on (round robin).
    pub fn next(&self) -> &Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        &self.handles[i]
    }

    /// Whether connections may run on other runtimes than the accept
    /// loop's (a socket must then be moved to its runtime's reactor).
    pub fn is_spread(&self) -> bool {
        self.handles.len() > 1
    }

    /// Ends the threads beyond the first (their runtimes drop what they
    /// still hold) and waits for them.
    pub fn stop(&mut self) {
        self.stops.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
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
        let (rt, workers) = Workers::start(3, Schedule::Pinned).unwrap();
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
        // The first runtime is the caller's: its tasks run on this thread.
        let me = std::thread::current()
            .name()
            .map(String::from)
            .unwrap_or_default();
        assert_eq!(
            threads,
            [
                &me,
                "batchkv-serve-1",
                "batchkv-serve-2",
                &me,
                "batchkv-serve-1",
                "batchkv-serve-2"
            ]
        );
        assert!(workers.is_spread());
    }

    #[test]
    fn stealing_has_one_runtime() {
        let (rt, workers) = Workers::start(2, Schedule::Stealing).unwrap();
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
    fn stop_ends_the_threads_with_tasks_still_pending() {
        let (_rt, mut workers) = Workers::start(2, Schedule::Pinned).unwrap();
        workers.next();
        workers.next().spawn(std::future::pending::<()>());
        workers.stop();
        assert!(workers.threads.is_empty());
    }
}
