//! The threads that run connections, and how connections are spread over
//! them (`--runtime`).
//!
//! - [`Schedule::Pinned`] (the default): one single-threaded tokio runtime
//!   per thread. The accept loop runs on the first and hands each new
//!   connection to the next thread in turn; the connection stays there.
//!   A request wakes only the thread its connection lives on, which reads
//!   it, runs it and writes the reply, as Redis's one thread does.
//! - [`Schedule::Stealing`]: one multi-threaded runtime of that many
//!   workers (tokio's work-stealing scheduler). A worker that queues a
//!   woken connection task while another worker sleeps wakes that one to
//!   steal it. With one request per connection in flight, most such
//!   wake-ups find nothing to do: measured with HMGET of 5 fields,
//!   `-c 50 -P 1`, they were 0.25 context switches per request against
//!   Redis's 0.015, and a third of the server's CPU time per request.
//!
//! Both keep the combining of `combine.rs` working: a job is gathered on
//! the thread it was submitted on, and a job queued for a leader on
//! another thread is answered through a channel, which wakes its task on
//! its own thread.
//!
//! Pinned threads have no one to hand their other connections to while a
//! command blocks its thread (an `fsync` under `appendfsync always`, a
//! large write): [`crate::shared::block_in_place`] runs it in place. The
//! connections of that thread wait, as all of Redis's do.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

/// How connections are scheduled over the server's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Schedule {
    /// Each connection stays on one thread with its own runtime.
    #[default]
    Pinned,
    /// Connections are tasks of one work-stealing runtime.
    Stealing,
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
