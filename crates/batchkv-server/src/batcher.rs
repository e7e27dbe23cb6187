//! Batched reads: runs of GET/MGET from all connections executed as one
//! `multi_get`, with the replies routed back in order.
//!
//! A connection submits a *job*: the keys of one run of pipelined GET and
//! MGET commands plus the shape of their replies. Jobs are combined the way
//! the engine's group commit combines writes: a submitter finding fewer
//! than `max_leaders` leaders at work (one per runtime worker thread, so
//! batching never leaves a core idle) becomes a leader, takes every job
//! queued so far, runs one `multi_get` over all their keys, encodes each
//! job's replies straight from the engine's borrowed values into that
//! job's buffer, and repeats while jobs keep arriving. Jobs that arrive while a `multi_get` runs wait
//! for the next one — that is the batching window: it adds no delay when
//! the server is idle and grows with load.
//!
//! # Thread safety
//! Invariants:
//! 1. `leaders` counts the threads inside [`Batcher::lead`]; it changes
//!    only under the queue lock, and a leader leaves only when it finds
//!    the queue empty, so a queued job always has a leader coming for it.
//! 2. `leaders <= max_leaders`.
//! 3. Each job's reply is sent exactly once, by the leader that took it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use batchkv::{Db, ReadOptions};
use bytes::BytesMut;
use tokio::sync::oneshot;

use crate::keyspace;
use crate::resp;
use crate::server::Shared;

/// Jobs a leader serves before handing the rest to a fresh task, so its
/// own connection is not held up indefinitely under load.
const MAX_ROUNDS_INLINE: usize = 4;
/// Keys gathered into one `multi_get` at most.
const MAX_BATCH_KEYS: usize = 4096;

/// The reply shape of one command in a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// GET: one bulk string (or nil).
    Get,
    /// MGET of n keys: an array of n bulk strings.
    Mget(usize),
}

struct Job {
    keys: Vec<Vec<u8>>,
    shapes: Vec<Shape>,
    proto: u8,
    tx: oneshot::Sender<BytesMut>,
}

#[derive(Default)]
struct Queue {
    leaders: usize,
    jobs: Vec<Job>,
}

/// The cross-connection read combiner.
pub struct Batcher {
    db: Db,
    max_leaders: usize,
    queue: Mutex<Queue>,
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // Queue updates are single pushes/takes: valid after any panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Batcher {
    /// A batcher running at most `max_leaders` `multi_get`s at once.
    pub fn new(db: Db, max_leaders: usize) -> Batcher {
        Batcher {
            db,
            max_leaders: max_leaders.max(1),
            queue: Mutex::new(Queue::default()),
        }
    }

    /// Runs a job and returns its encoded replies.
    pub async fn submit(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        keys: Vec<Vec<u8>>,
        shapes: Vec<Shape>,
        proto: u8,
    ) -> BytesMut {
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut q = lock(&self.queue);
            q.jobs.push(Job {
                keys,
                shapes,
                proto,
                tx,
            });
            if q.leaders < self.max_leaders {
                q.leaders += 1;
                true
            } else {
                false
            }
        };
        if lead {
            self.lead(shared);
        }
        // The sender is dropped only after sending (invariant 3).
        rx.await.unwrap_or_default()
    }

    /// Serves queued jobs until the queue is empty (or hands off).
    fn lead(self: &Arc<Self>, shared: &Arc<Shared>) {
        for _ in 0..MAX_ROUNDS_INLINE {
            let jobs = {
                let mut q = lock(&self.queue);
                if q.jobs.is_empty() {
                    q.leaders -= 1;
                    return;
                }
                take_jobs(&mut q.jobs)
            };
            self.execute(shared, jobs);
        }
        // Still busy: keep leading from a new task.
        let me = self.clone();
        let s = shared.clone();
        tokio::spawn(async move { me.lead(&s) });
    }

    /// One `multi_get` over all the jobs' keys, encoding as results arrive.
    fn execute(&self, shared: &Shared, jobs: Vec<Job>) {
        let mut keys: Vec<&[u8]> = Vec::new();
        for j in &jobs {
            keys.extend(j.keys.iter().map(Vec::as_slice));
        }
        let mut outs: Vec<BytesMut> = jobs
            .iter()
            .map(|j| BytesMut::with_capacity(64 * j.keys.len()))
            .collect();
        let now = keyspace::now_ms();
        let (mut hits, mut misses) = (0u64, 0u64);
        // Cursor over (job, shape, key within shape) in input order.
        let (mut ji, mut si, mut ki) = (0usize, 0usize, 0usize);
        self.db
            .multi_get_with(&ReadOptions::default(), &keys, |_, r| {
                while ki == 0 && si == jobs[ji].shapes.len() {
                    ji += 1;
                    si = 0;
                }
                let job = &jobs[ji];
                let out = &mut outs[ji];
                let shape = job.shapes[si];
                if let (Shape::Mget(n), 0) = (shape, ki) {
                    resp::encode_array_header(out, n);
                }
                match r.map(|v| v.map(|v| keyspace::live_value(v, now))) {
                    Ok(Some(Ok(Some(d)))) => {
                        hits += 1;
                        resp::encode_bulk(out, d.data);
                    }
                    Ok(None) | Ok(Some(Ok(None))) => {
                        misses += 1;
                        resp::encode_nil(job.proto, out);
                    }
                    Ok(Some(Err(()))) => out.extend_from_slice(b"-ERR corrupt value\r\n"),
                    Err(e) => {
                        out.extend_from_slice(format!("-ERR {e}\r\n").as_bytes());
                    }
                }
                ki += 1;
                let len = match shape {
                    Shape::Get => 1,
                    Shape::Mget(n) => n,
                };
                if ki == len {
                    ki = 0;
                    si += 1;
                }
            });
        use std::sync::atomic::Ordering::Relaxed;
        shared.stats.hits.fetch_add(hits, Relaxed);
        shared.stats.misses.fetch_add(misses, Relaxed);
        shared.stats.batches.fetch_add(1, Relaxed);
        shared
            .stats
            .batched_keys
            .fetch_add(keys.len() as u64, Relaxed);
        for (job, out) in jobs.into_iter().zip(outs) {
            // A closed connection no longer wants its reply.
            let _ = job.tx.send(out);
        }
    }
}

/// Takes queued jobs up to [`MAX_BATCH_KEYS`] keys (at least one job).
fn take_jobs(queue: &mut Vec<Job>) -> Vec<Job> {
    let mut total = 0;
    let mut n = 0;
    while n < queue.len() && (n == 0 || total + queue[n].keys.len() <= MAX_BATCH_KEYS) {
        total += queue[n].keys.len();
        n += 1;
    }
    queue.drain(..n).collect()
}
