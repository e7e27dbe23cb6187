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
//! job's buffer, and repeats while jobs keep arriving. Jobs that arrive
//! while a `multi_get` runs wait for the next one — that is the batching
//! window: it adds no delay when the server is idle and grows with load.
//!
//! A submitter that becomes leader never queues its own job: it runs it in
//! its first `multi_get` (with whatever was queued) and encodes its replies
//! straight into the connection's output buffer. So a lone client — or any
//! leader — pays no channel, no extra buffer and no copy of its replies;
//! only followers receive theirs through a channel.
//!
//! # Thread safety
//! Invariants:
//! 1. `leaders` counts the threads inside [`Batcher::lead`]; it changes
//!    only under the queue lock, and a leader leaves only when it finds
//!    the queue empty, so a queued job always has a leader coming for it.
//! 2. `leaders <= max_leaders`.
//! 3. Each queued job's reply is sent exactly once, by the leader that
//!    took it; a leader's own job is never queued.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use batchkv::{Db, ReadOptions};
use bytes::BytesMut;
use tokio::sync::oneshot;

use crate::keyspace;
use crate::resp;
use crate::server::{Shared, Stats};

/// Jobs a leader serves before handing the rest to a fresh task, so its
/// own connection is not held up indefinitely under load.
const MAX_ROUNDS_INLINE: usize = 4;
/// Keys gathered into one `multi_get` at most.
const MAX_BATCH_KEYS: usize = 4096;
/// Output bytes reserved per key before encoding (a bulk header and CRLF
/// around a 100-byte value); the buffer grows if values are longer.
const REPLY_BYTES_PER_KEY: usize = 128;

/// The reply shape of one command in a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// GET: one bulk string (or nil).
    Get,
    /// MGET of n keys: an array of n bulk strings.
    Mget(usize),
}

impl Shape {
    /// Keys the command reads.
    fn keys(self) -> usize {
        match self {
            Shape::Get => 1,
            Shape::Mget(n) => n,
        }
    }
}

/// The keys of a job, database prefix included, in one buffer (no
/// allocation per key): key `i` is `bytes[ends[i-1]..ends[i]]`.
#[derive(Debug, Default)]
pub struct Keys {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Keys {
    /// Appends `db ‖ key` (the layout of [`keyspace::db_key`]).
    pub fn push(&mut self, db: u8, key: &[u8]) {
        self.bytes.push(db);
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Appends every key as a slice to `out`.
    fn slices<'a>(&'a self, out: &mut Vec<&'a [u8]>) {
        let mut start = 0;
        for &end in &self.ends {
            out.push(&self.bytes[start..end]);
            start = end;
        }
    }
}

/// What one submitter asks for: its keys and the shape of its replies.
struct Request {
    keys: Keys,
    shapes: Vec<Shape>,
    proto: u8,
}

/// A follower's request, queued for a leader.
struct Job {
    req: Request,
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

    /// Runs a job and appends its encoded replies to `out`.
    pub async fn submit(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        keys: Keys,
        shapes: Vec<Shape>,
        proto: u8,
        out: &mut BytesMut,
    ) {
        let req = Request {
            keys,
            shapes,
            proto,
        };
        let rx = {
            let mut q = lock(&self.queue);
            if q.leaders < self.max_leaders {
                q.leaders += 1;
                // Lead: the own job first, with what is already queued.
                let others = take_jobs(&mut q.jobs, req.keys.len());
                drop(q);
                self.execute(&shared.stats, Some((&req, out)), others);
                self.lead(shared);
                return;
            }
            let (tx, rx) = oneshot::channel();
            q.jobs.push(Job { req, tx });
            rx
        };
        // The sender is dropped only after sending (invariant 3).
        out.extend_from_slice(&rx.await.unwrap_or_default());
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
                take_jobs(&mut q.jobs, 0)
            };
            self.execute(&shared.stats, None, jobs);
        }
        // Still busy: keep leading from a new task.
        let me = self.clone();
        let s = shared.clone();
        tokio::spawn(async move { me.lead(&s) });
    }

    /// One `multi_get` over the keys of `own` (encoded into its buffer)
    /// and of `jobs` (encoded into fresh buffers sent to their
    /// submitters), encoding as results arrive.
    fn execute(&self, stats: &Stats, own: Option<(&Request, &mut BytesMut)>, jobs: Vec<Job>) {
        let mut outs: Vec<BytesMut> = jobs
            .iter()
            .map(|j| BytesMut::with_capacity(REPLY_BYTES_PER_KEY * j.req.keys.len()))
            .collect();
        // Every request with its output buffer, in key order.
        let mut parts: Vec<(&Request, &mut BytesMut)> = Vec::with_capacity(jobs.len() + 1);
        parts.extend(own);
        parts.extend(jobs.iter().map(|j| &j.req).zip(outs.iter_mut()));
        let mut keys: Vec<&[u8]> =
            Vec::with_capacity(parts.iter().map(|(r, _)| r.keys.len()).sum());
        for (r, out) in &mut parts {
            let r: &Request = r;
            r.keys.slices(&mut keys);
            out.reserve(REPLY_BYTES_PER_KEY * r.keys.len());
        }
        let now = keyspace::now_ms();
        let (mut hits, mut misses) = (0u64, 0u64);
        // Cursor over (part, shape, key within shape) in input order.
        let (mut pi, mut si, mut ki) = (0usize, 0usize, 0usize);
        self.db
            .multi_get_with(&ReadOptions::default(), &keys, |_, r| {
                while ki == 0 && si == parts[pi].0.shapes.len() {
                    pi += 1;
                    si = 0;
                }
                let (req, out) = &mut parts[pi];
                let shape = req.shapes[si];
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
                        resp::encode_nil(req.proto, out);
                    }
                    Ok(Some(Err(()))) => out.extend_from_slice(b"-ERR corrupt value\r\n"),
                    Err(e) => {
                        out.extend_from_slice(format!("-ERR {e}\r\n").as_bytes());
                    }
                }
                ki += 1;
                if ki == shape.keys() {
                    ki = 0;
                    si += 1;
                }
            });
        drop(parts);
        use std::sync::atomic::Ordering::Relaxed;
        stats.hits.fetch_add(hits, Relaxed);
        stats.misses.fetch_add(misses, Relaxed);
        stats.batches.fetch_add(1, Relaxed);
        stats.batched_keys.fetch_add(keys.len() as u64, Relaxed);
        for (job, out) in jobs.into_iter().zip(outs) {
            // A closed connection no longer wants its reply.
            let _ = job.tx.send(out);
        }
    }
}

/// Takes queued jobs while the batch stays within [`MAX_BATCH_KEYS`] keys,
/// counting `taken` keys already in it (with none taken, at least one job).
fn take_jobs(queue: &mut Vec<Job>, taken: usize) -> Vec<Job> {
    let mut total = taken;
    let mut n = 0;
    while n < queue.len()
        && ((n == 0 && taken == 0) || total + queue[n].req.keys.len() <= MAX_BATCH_KEYS)
    {
        total += queue[n].req.keys.len();
        n += 1;
    }
    queue.drain(..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use batchkv::Options;

    fn keys(db: u8, names: &[&str]) -> Keys {
        let mut k = Keys::default();
        for n in names {
            k.push(db, n.as_bytes());
        }
        k
    }

    /// A leader's own job and the followers' jobs it takes share one
    /// `multi_get`: each gets exactly its replies, in order — the own job
    /// in the connection's buffer (after what was already there), the
    /// others through their channels.
    #[test]
    fn a_leaders_own_job_and_queued_jobs_get_their_own_replies() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for (k, v) in [("a", "1"), ("b", "22"), ("c", "333")] {
            db.put(
                keyspace::db_key(0, k.as_bytes()),
                keyspace::encode_value(v.as_bytes(), None),
            )
            .unwrap();
        }
        // Expired: absent to every reader.
        db.put(
            keyspace::db_key(0, b"old"),
            keyspace::encode_value(b"x", Some(1)),
        )
        .unwrap();
        let batcher = Batcher::new(db, 1);
        let stats = Stats::default();
        let own = Request {
            keys: keys(0, &["c", "a", "zz", "b"]),
            shapes: vec![Shape::Get, Shape::Mget(2), Shape::Get],
            proto: 2,
        };
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        let jobs = vec![
            Job {
                req: Request {
                    keys: keys(0, &["b", "old"]),
                    shapes: vec![Shape::Mget(2)],
                    proto: 3,
                },
                tx: tx1,
            },
            Job {
                // Database 1 holds none of the keys.
                req: Request {
                    keys: keys(1, &["a"]),
                    shapes: vec![Shape::Get],
                    proto: 2,
                },
                tx: tx2,
            },
        ];
        let mut out = BytesMut::from(&b"+OK\r\n"[..]);
        batcher.execute(&stats, Some((&own, &mut out)), jobs);
        assert_eq!(
            &out[..],
            b"+OK\r\n$3\r\n333\r\n*2\r\n$1\r\n1\r\n$-1\r\n$2\r\n22\r\n"
        );
        assert_eq!(&rx1.try_recv().unwrap()[..], b"*2\r\n$2\r\n22\r\n_\r\n");
        assert_eq!(&rx2.try_recv().unwrap()[..], b"$-1\r\n");
        use std::sync::atomic::Ordering::Relaxed;
        assert_eq!(stats.batches.load(Relaxed), 1);
        assert_eq!(stats.batched_keys.load(Relaxed), 7);
        assert_eq!(stats.hits.load(Relaxed), 4);
        assert_eq!(stats.misses.load(Relaxed), 3);
    }

    #[test]
    fn take_jobs_counts_the_leaders_own_keys_against_the_batch_limit() {
        let job = |n: usize| {
            let mut k = Keys::default();
            for i in 0..n {
                k.push(0, &i.to_le_bytes());
            }
            let (tx, _rx) = oneshot::channel();
            Job {
                req: Request {
                    keys: k,
                    shapes: vec![Shape::Mget(n)],
                    proto: 2,
                },
                tx,
            }
        };
        let mut q = vec![job(1000), job(1000), job(3000)];
        // A leader with 2,500 keys of its own takes one 1,000-key job.
        assert_eq!(take_jobs(&mut q, 2500).len(), 1);
        // With none of its own, at least one job even when it is large.
        let mut q = vec![job(5000), job(10)];
        assert_eq!(take_jobs(&mut q, 0).len(), 1);
        // An own job over the limit takes nothing else.
        assert_eq!(take_jobs(&mut q, 5000).len(), 0);
        assert_eq!(q.len(), 1);
    }
}
