//! Combining the requests of many connections into one engine call: the
//! leader/follower protocol shared by the read batcher (`batcher.rs`: one
//! `multi_get` for the GETs of many clients) and the write combiner
//! (`write_combine.rs`: one engine write for the SETs of many clients).
//!
//! A connection submits a *job* (its request) and awaits its answer. Jobs
//! are combined the way the engine's group commit combines writes, with
//! one step added for a runtime of a few worker threads:
//!
//! 1. A small job (under [`Limits::gather_below`] entries) submitted on a
//!    worker thread where a leader is *gathering* joins that leader's
//!    jobs. Otherwise a submitter that finds fewer than `max_leaders`
//!    leaders at work becomes a leader, and the rest queue their jobs in
//!    the shared queue. Followers wait for their answers on a channel.
//! 2. A new leader with a small job that [`Execute::gathers`] gathers
//!    when other clients are connected (for most jobs, only while recent
//!    gatherers found others: [`Gather::WhileItFinds`]): it yields to the
//!    runtime once ([`tokio::task::yield_now`]) before it takes its jobs.
//!    The engine call is synchronous and holds its worker thread, so
//!    without the yield no other connection task could run on that thread
//!    before the leader had finished, and jobs of other connections were
//!    queued only while every worker was busy leading. During the yield
//!    the other ready connection tasks on its thread parse their input and
//!    join it. Gathering per thread keeps each follower's wake-up on the
//!    thread it runs on, and the other workers free to lead and gather
//!    their own connections' jobs.
//! 3. The leader takes its gathered jobs and the shared queue's (up to
//!    [`Limits::max_batch`] entries), runs them as one call
//!    ([`Execute::execute`]) with its own, and repeats while the shared
//!    queue holds jobs.
//!
//! A leader never queues its own job: it runs it in its first call and
//! encodes its replies straight into the connection's output buffer. So a
//! lone client — or any leader — pays no channel, no extra buffer and no
//! copy of its replies; only followers receive theirs through a channel.
//!
//! # Thread safety
//! Invariants (checked by `debug_assert!` where they change):
//! 1. `leaders` counts the submitters from becoming leader until they
//!    leave [`Combiner::lead`], gatherers included; it changes only under
//!    the queue lock, and a leader leaves only when it finds the shared
//!    queue empty.
//! 2. A queued job always has a leader coming for it: a job in a
//!    gatherer's list is taken by that gatherer after its yield (under the
//!    same lock that removes the gatherer, so no job joins it later); a
//!    job enters the shared queue only while `leaders == max_leaders >=
//!    1`, or from a leader that is counted in `leaders` (gathered jobs over
//!    the batch limit), and every leader looks at the shared queue again
//!    before leaving.
//! 3. `leaders <= max_leaders`; gatherers are leaders
//!    (`gatherers.len() <= leaders`), and a thread has at most one.
//! 4. Each queued job's answer is sent exactly once, by the leader that
//!    took it ([`Execute::execute`] must send on every job's channel, a
//!    panic included); a leader's own job is never queued. A gatherer
//!    whose task is cancelled during its yield (its connection aborted at
//!    shutdown) moves its jobs to the shared queue and serves it, from a
//!    drop guard.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use bytes::BytesMut;
use tokio::sync::oneshot;

/// Jobs a leader serves before handing the rest to a fresh task, so its
/// own connection is not held up indefinitely under load.
const MAX_ROUNDS_INLINE: usize = 4;

/// The engine call a [`Combiner`] makes for a batch of jobs.
pub trait Execute: Send + Sync + 'static {
    /// One submitter's request.
    type Request: Send + 'static;
    /// What a request got done (how many of its commands were answered,
    /// …); the default is "nothing", what a follower whose leader vanished
    /// gets.
    type Answer: Default + Send + 'static;

    /// Entries `req` adds to a batch (keys, bytes): what the [`Limits`]
    /// count.
    fn size(req: &Self::Request) -> usize;

    /// Whether a leader of `req`, a small request, yields to gather others
    /// (when other clients are connected).
    fn gathers(req: &Self::Request) -> Gather;

    /// Runs `own` (replies encoded into its buffer, after what it holds)
    /// and `jobs` (replies encoded into fresh buffers sent on each job's
    /// channel, exactly once, also after a panic) as one batch, in that
    /// order; returns what `own` got done.
    fn execute(
        &self,
        own: Option<(&Self::Request, &mut BytesMut)>,
        jobs: Vec<Job<Self::Request, Self::Answer>>,
    ) -> Option<Self::Answer>;
}

/// Whether a small request's leader yields to gather other connections'
/// jobs ([`Execute::gathers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gather {
    /// Never: its leader runs it at once.
    Never,
    /// Only while the recent gatherers found other jobs
    /// ([`FoundPerGather`]). With many clients sending one command each
    /// (`redis-benchmark -c 50 -P 1`), a gathering leader finds one or two
    /// others and their engine calls become one; with two or four clients
    /// it mostly finds none, and its yield (a scheduling round trip, often
    /// a park and wake of the thread) costs more than it saves.
    WhileItFinds,
    /// Always: where the batch pays for the yield by itself, or the
    /// caller decided to gather ([`Combiner::takes_single`]).
    Always,
}

/// How many jobs a gathering leader found during its yield, recently: an
/// exponentially weighted average in sixteenths, updated (racily: a
/// statistic) by every gatherer, and read by leaders of
/// [`Gather::WhileItFinds`] jobs.
struct FoundPerGather(AtomicU32);

/// The average (in sixteenths of a job) from which
/// [`Gather::WhileItFinds`] leaders gather.
const GATHER_FROM: u32 = 16;
/// While the average is below [`GATHER_FROM`], one such leader in this
/// many on a thread gathers anyway (a probe), so that the average follows
/// the load.
const PROBE_EVERY: u32 = 32;

thread_local! {
    /// [`Gather::WhileItFinds`] leaders on this thread since the last probe.
    static SINCE_PROBE: Cell<u32> = const { Cell::new(0) };
}

impl FoundPerGather {
    /// Whether a leader of a [`Gather::WhileItFinds`] job gathers now.
    fn gathers_now(&self) -> bool {
        if self.0.load(Ordering::Relaxed) >= GATHER_FROM {
            return true;
        }
        SINCE_PROBE.with(|n| {
            let probe = n.get() + 1 >= PROBE_EVERY;
            n.set(if probe { 0 } else { n.get() + 1 });
            probe
        })
    }

    /// Counts a gathering that found `found` jobs (weight 1/8).
    fn record(&self, found: usize) {
        let old = self.0.load(Ordering::Relaxed);
        let sample = (found.min(64) as u32) * 16;
        self.0.store(old - old / 8 + sample / 8, Ordering::Relaxed);
    }
}

/// A follower's request, queued for a leader, with the channel its
/// replies and answer go back on.
pub struct Job<R, A> {
    pub req: R,
    pub tx: oneshot::Sender<(BytesMut, A)>,
}

/// Hands out the answers of a batch whose requests were the leader's own
/// (first, if `own_out` is given) and then `jobs`'s, in that order:
/// `answer(i, out)` encodes request `i`'s replies into `out` and gives its
/// answer. The own answer is returned (its replies go to `own_out`); each
/// job's is sent on its channel with a fresh buffer.
pub fn deliver<R, A>(
    own_out: Option<&mut BytesMut>,
    jobs: Vec<Job<R, A>>,
    mut answer: impl FnMut(usize, &mut BytesMut) -> A,
) -> Option<A> {
    let first = usize::from(own_out.is_some());
    let own = own_out.map(|out| answer(0, out));
    for (i, job) in jobs.into_iter().enumerate() {
        let mut out = BytesMut::with_capacity(64);
        let a = answer(first + i, &mut out);
        // A closed connection no longer wants its reply.
        let _ = job.tx.send((out, a));
    }
    own
}

/// When jobs are gathered, and how large a batch grows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A job of fewer entries is small: it joins a gathering leader on
    /// its thread, and its leader may gather.
    pub gather_below: usize,
    /// Entries in one batch at most (a single job may exceed it).
    pub max_batch: usize,
}

/// A leader yielding to gather the small jobs submitted on its thread.
struct Gatherer<R, A> {
    /// The worker thread it started on; submitters there join it.
    thread: ThreadId,
    /// Names it among the gatherers (threads repeat over time).
    id: u64,
    jobs: Vec<Job<R, A>>,
}

struct Queue<R, A> {
    /// Leaders at work, gatherers included (invariants 1–3).
    leaders: usize,
    /// Leaders that have yet to take their jobs after their yield.
    gatherers: Vec<Gatherer<R, A>>,
    next_gatherer: u64,
    /// Jobs queued while every leader slot was taken.
    jobs: Vec<Job<R, A>>,
}

impl<R, A> Queue<R, A> {
    /// Removes gatherer `id`, returning its jobs.
    fn end_gathering(&mut self, id: u64) -> Vec<Job<R, A>> {
        match self.gatherers.iter().position(|g| g.id == id) {
            Some(i) => self.gatherers.swap_remove(i).jobs,
            None => {
                debug_assert!(false, "gatherer {id} is missing");
                Vec::new()
            }
        }
    }
}

/// What the queue holds, for tests: `(leaders, gatherers, queued jobs)`
/// and the jobs each gatherer holds.
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub struct QueueState {
    pub leaders: usize,
    pub gatherers: Vec<usize>,
    pub jobs: usize,
}

/// Combines the jobs of many submitters into calls of `E`.
pub struct Combiner<E: Execute> {
    exec: E,
    max_leaders: usize,
    limits: Limits,
    queue: Mutex<Queue<E::Request, E::Answer>>,
    found: FoundPerGather,
}

/// A gathering leader's claim while it yields: dropped armed (the
/// leader's task was cancelled), it moves the jobs gathered for it to the
/// shared queue and serves that, so they still get their replies
/// (invariant 4).
struct Gathering<'a, E: Execute>(Option<(&'a Arc<Combiner<E>>, u64)>);

impl<E: Execute> Drop for Gathering<'_, E> {
    fn drop(&mut self) {
        if let Some((c, id)) = self.0.take() {
            {
                let mut q = c.lock();
                let jobs = q.end_gathering(id);
                q.jobs.extend(jobs);
            }
            c.lead();
        }
    }
}

impl<E: Execute> Combiner<E> {
    /// A combiner making at most `max_leaders` calls of `exec` at once.
    pub fn with(exec: E, max_leaders: usize, limits: Limits) -> Combiner<E> {
        Combiner {
            exec,
            max_leaders: max_leaders.max(1),
            limits,
            queue: Mutex::new(Queue {
                leaders: 0,
                gatherers: Vec::new(),
                next_gatherer: 0,
                jobs: Vec::new(),
            }),
            // Starts where single commands gather: a server under load
            // keeps it there, and the first probes of an idle one lower it.
            found: FoundPerGather(AtomicU32::new(GATHER_FROM)),
        }
    }

    /// Whether a single command is worth submitting, for a caller whose
    /// single commands are cheaper run alone: when a leader gathers on
    /// this thread (it joins it), or when a leader of it would gather
    /// ([`Gather::WhileItFinds`]; counts towards the next probe). A
    /// single command submitted after this must gather
    /// ([`Gather::Always`]): a probe that no other connection could join
    /// would never find any.
    pub fn takes_single(&self) -> bool {
        let thread = std::thread::current().id();
        self.lock().gatherers.iter().any(|g| g.thread == thread) || self.found.gathers_now()
    }

    /// The engine call (and its state).
    pub fn exec(&self) -> &E {
        &self.exec
    }

    fn lock(&self) -> MutexGuard<'_, Queue<E::Request, E::Answer>> {
        // Queue updates are single pushes/takes: valid after any panic.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    pub fn state(&self) -> QueueState {
        let q = self.lock();
        QueueState {
            leaders: q.leaders,
            gatherers: q.gatherers.iter().map(|g| g.jobs.len()).collect(),
            jobs: q.jobs.len(),
        }
    }

    /// Runs `req` and appends its replies to `out`; returns its answer.
    /// With `combine` (other clients are connected), a submitter of a
    /// small job that becomes leader yields once first so that their jobs
    /// can join its call.
    pub async fn submit(
        self: &Arc<Self>,
        req: E::Request,
        combine: bool,
        out: &mut BytesMut,
    ) -> E::Answer {
        let size = E::size(&req);
        let small = size < self.limits.gather_below;
        let policy = if combine && small {
            E::gathers(&req)
        } else {
            Gather::Never
        };
        let thread = std::thread::current().id();
        // Either lead (`Ok`: the request kept, and the id of the gatherer
        // it became, if it did) or follow (`Err`: the request queued and a
        // channel for its replies).
        let role = {
            let mut q = self.lock();
            let join = if small {
                q.gatherers.iter().position(|g| g.thread == thread)
            } else {
                None
            };
            // A channel only for a follower: a leader encodes its own
            // replies straight into `out`.
            if let Some(i) = join {
                let (tx, rx) = oneshot::channel();
                q.gatherers[i].jobs.push(Job { req, tx });
                Err(rx)
            } else if q.leaders >= self.max_leaders {
                debug_assert!(q.leaders >= 1, "a queued job needs a leader");
                let (tx, rx) = oneshot::channel();
                q.jobs.push(Job { req, tx });
                Err(rx)
            } else {
                q.leaders += 1;
                debug_assert!(q.leaders <= self.max_leaders);
                // Asked of leaders only: the probes count leaders.
                let gather = match policy {
                    Gather::Never => false,
                    Gather::WhileItFinds => self.found.gathers_now(),
                    Gather::Always => true,
                };
                let id = gather.then(|| {
                    let id = q.next_gatherer;
                    q.next_gatherer += 1;
                    q.gatherers.push(Gatherer {
                        thread,
                        id,
                        jobs: Vec::new(),
                    });
                    id
                });
                debug_assert!(q.gatherers.len() <= q.leaders);
                Ok((req, id))
            }
        };
        let (req, gatherer) = match role {
            Ok(lead) => lead,
            Err(rx) => {
                // The sender is dropped only after sending (invariant 4);
                // were it not, the default answer (nothing done) makes the
                // caller close.
                let (replies, answer) = rx.await.unwrap_or_default();
                out.extend_from_slice(&replies);
                return answer;
            }
        };
        if let Some(id) = gatherer {
            let mut claim = Gathering(Some((self, id)));
            tokio::task::yield_now().await;
            claim.0 = None;
        }
        // Lead: the own job first, with the jobs gathered meanwhile and
        // what the shared queue holds (beyond the batch limit, gathered
        // jobs move to the shared queue, which this leader serves next).
        let others = {
            let mut q = self.lock();
            let mut gathered = match gatherer {
                Some(id) => q.end_gathering(id),
                None => Vec::new(),
            };
            if gatherer.is_some() {
                self.found.record(gathered.len());
            }
            let mut others = self.take_jobs(&mut gathered, size);
            q.jobs.extend(gathered);
            let taken = size + others.iter().map(|j| E::size(&j.req)).sum::<usize>();
            others.extend(self.take_jobs(&mut q.jobs, taken));
            others
        };
        let answer = self.exec.execute(Some((&req, out)), others);
        self.lead();
        answer.unwrap_or_default()
    }

    /// Serves queued jobs until the queue is empty (or hands off).
    fn lead(self: &Arc<Self>) {
        loop {
            for _ in 0..MAX_ROUNDS_INLINE {
                let jobs = {
                    let mut q = self.lock();
                    if q.jobs.is_empty() {
                        debug_assert!(q.leaders >= 1);
                        q.leaders -= 1;
                        return;
                    }
                    self.take_jobs(&mut q.jobs, 0)
                };
                self.exec.execute(None, jobs);
            }
            // Still busy: keep leading from a new task, so that this
            // connection can send its replies. (Outside a runtime, as in a
            // drop guard at shutdown, keep leading here.)
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let me = self.clone();
                rt.spawn(async move { me.lead() });
                return;
            }
        }
    }

    /// Takes queued jobs while the batch stays within
    /// [`Limits::max_batch`] entries, counting `taken` entries already in
    /// it (with none taken, at least one job).
    pub(crate) fn take_jobs(
        &self,
        queue: &mut Vec<Job<E::Request, E::Answer>>,
        taken: usize,
    ) -> Vec<Job<E::Request, E::Answer>> {
        let mut total = taken;
        let mut n = 0;
        while n < queue.len()
            && ((n == 0 && taken == 0) || total + E::size(&queue[n].req) <= self.limits.max_batch)
        {
            total += E::size(&queue[n].req);
            n += 1;
        }
        queue.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Requests are command counts; every call is counted.
    #[derive(Default)]
    struct Calls(AtomicUsize);

    impl Execute for Calls {
        type Request = usize;
        type Answer = usize;

        fn size(req: &usize) -> usize {
            *req
        }

        fn gathers(req: &usize) -> Gather {
            if *req >= 2 {
                Gather::Always
            } else {
                Gather::WhileItFinds
            }
        }

        fn execute(
            &self,
            own: Option<(&usize, &mut BytesMut)>,
            jobs: Vec<Job<usize, usize>>,
        ) -> Option<usize> {
            self.0.fetch_add(1, Ordering::Relaxed);
            let own = own.map(|(n, _)| *n);
            for job in jobs {
                let n = job.req;
                let _ = job.tx.send((BytesMut::new(), n));
            }
            own
        }
    }

    const LIMITS: Limits = Limits {
        gather_below: 64,
        max_batch: 1024,
    };

    /// Submits one request of `n` commands from each of `conns` tasks on
    /// one thread (so that they are all ready when the first leads);
    /// returns the engine calls made.
    fn submit_from_conns(c: &Arc<Combiner<Calls>>, conns: usize, n: usize) -> usize {
        let before = c.exec().0.load(Ordering::Relaxed);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let tasks: Vec<_> = (0..conns)
                .map(|_| {
                    let c = c.clone();
                    tokio::spawn(async move { c.submit(n, true, &mut BytesMut::new()).await })
                })
                .collect();
            for t in tasks {
                assert_eq!(t.await.unwrap(), n, "every request answered");
            }
        });
        let s = c.state();
        assert_eq!((s.leaders, s.gatherers.len(), s.jobs), (0, 0, 0));
        c.exec().0.load(Ordering::Relaxed) - before
    }

    /// Single commands gather while gatherers find others: under load
    /// they are combined; after gatherings that found nothing (a few
    /// clients) each runs at once, but for one probe in `PROBE_EVERY`;
    /// and once a gathering finds others again they are combined again.
    #[test]
    fn single_commands_gather_while_gathering_finds_others() {
        let c = Arc::new(Combiner::with(Calls::default(), 2, LIMITS));
        // The average starts where singles gather: 8 ready connections'
        // commands are one call.
        assert_eq!(submit_from_conns(&c, 8, 1), 1);
        assert!(c.found.0.load(Ordering::Relaxed) >= GATHER_FROM);
        // Lone clients: each gathering finds nothing, and the average
        // falls below the threshold.
        let mut lone_gathers = 0;
        while c.found.0.load(Ordering::Relaxed) >= GATHER_FROM {
            assert_eq!(submit_from_conns(&c, 1, 1), 1);
            lone_gathers += 1;
            assert!(lone_gathers < 64, "the average never fell");
        }
        // Now ready connections' single commands each run at once, but
        // for the probe: one in PROBE_EVERY leaders gathers.
        let conns = PROBE_EVERY as usize - 1;
        SINCE_PROBE.with(|n| n.set(0));
        assert_eq!(submit_from_conns(&c, conns, 1), conns);
        // The next leader probes; it finds the other ready connections'
        // commands, and that lifts the average back over the threshold.
        assert_eq!(submit_from_conns(&c, 8, 1), 1);
        assert!(c.found.0.load(Ordering::Relaxed) >= GATHER_FROM);
        assert_eq!(submit_from_conns(&c, 8, 1), 1);
    }

    /// `takes_single`: yes while a leader gathers on this thread (the
    /// command joins it) or while the average is over the threshold; else
    /// only for the probe.
    #[test]
    fn a_single_command_is_taken_to_join_or_gather() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let c = Arc::new(Combiner::with(Calls::default(), 2, LIMITS));
        assert!(c.takes_single(), "the average starts at the threshold");
        c.found.0.store(0, Ordering::Relaxed);
        SINCE_PROBE.with(|n| n.set(0));
        let taken = (0..PROBE_EVERY).filter(|_| c.takes_single()).count();
        assert_eq!(taken, 1, "only the probe");
        // A pipeline's leader gathering on this thread: single commands
        // are taken to join it.
        let mut out = BytesMut::new();
        let mut lead = Box::pin(c.submit(2, true, &mut out));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(lead.as_mut().poll(&mut cx), Poll::Pending));
        assert!((0..PROBE_EVERY).all(|_| c.takes_single()));
        assert!(matches!(lead.as_mut().poll(&mut cx), Poll::Ready(2)));
        assert!(!c.takes_single(), "the gatherer is gone; not a probe");
    }

    /// A pipeline's leader always gathers, whatever the average says.
    #[test]
    fn pipelines_gather_while_single_commands_do_not() {
        let c = Arc::new(Combiner::with(Calls::default(), 2, LIMITS));
        c.found.0.store(0, Ordering::Relaxed);
        SINCE_PROBE.with(|n| n.set(0));
        assert_eq!(submit_from_conns(&c, 4, 1), 4);
        assert_eq!(submit_from_conns(&c, 4, 10), 1);
    }

    /// The average moves by an eighth of the difference per gathering.
    #[test]
    fn found_per_gather_is_a_moving_average() {
        let f = FoundPerGather(AtomicU32::new(0));
        for _ in 0..100 {
            f.record(3);
        }
        // Converges to 3 jobs (48 sixteenths) from below, within rounding.
        let v = f.0.load(Ordering::Relaxed);
        assert!((40..=48).contains(&v), "{v}");
        for _ in 0..100 {
            f.record(0);
        }
        assert!(f.0.load(Ordering::Relaxed) < GATHER_FROM);
    }
}
