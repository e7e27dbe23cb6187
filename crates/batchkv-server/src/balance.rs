//! How busy each connection thread is, and where a connection should run
//! under `--runtime adaptive` (`workers.rs`).
//!
//! Each thread's runtime reports when its worker parks (nothing to do) and
//! unparks ([`Balance::parked`], [`Balance::unparked`]); a thread's *load*
//! is the share of wall time its worker did not park, in thousandths,
//! sampled every [`PERIOD`] and smoothed over two periods. Connections ask
//! [`Balance::rebalance`] at request boundaries where they can move:
//!
//! - **Gather**: a thread under [`LIGHT`] hands a connection to the
//!   busiest other thread at least as busy (the lower-numbered of two
//!   equally busy ones) if the two loads add up to less than
//!   [`GATHER_MAX`], one thread's worth. At light load every connection
//!   ends up on one thread: a request wakes only that thread, and no second
//!   worker is woken to take a share of its work (a park and wake of a
//!   thread for a few requests: GET at `-c 50 -P 1` cost 8-20 % more CPU
//!   per request over two work-stealing threads than on one). Split
//!   connections cost more than gathered ones, so two threads whose loads
//!   add up to less than one thread's worth gather into one that is less
//!   busy than their sum.
//! - **Spread**: a thread at [`FULL`] or over (saturated) hands a
//!   connection to the least busy thread if that one is less busy by more
//!   than [`SPREAD_MARGIN`]: from one saturated thread to an idle one
//!   first, then between busy threads until neither is far behind the
//!   other (a thread that runs out of work cannot take a request from
//!   another's queue, as a work-stealing worker would).
//!
//! - **Help**: a long request (a batched read expected to take over
//!   [`HELP_FROM_NS`]) of a connection on a busy thread runs on an idle
//!   thread instead ([`Balance::helper_for`]), while the connection's
//!   thread serves its other connections. Loads are too slow a signal for
//!   this (a thread with 25 connections at 70 % still holds ready ones
//!   behind a 100 µs batch); *busy* is a worker that has run for
//!   [`BUSY_STREAK`] without parking, *idle* a worker parked right now.
//!
//! A thread gives away at most one connection per period
//! ([`Balance::claim_move`]), so loads are re-measured between moves. A
//! truly saturated load split over two threads adds up to more than one
//! thread's worth, so it does not gather again; a load just at the edge
//! may move a connection back and forth every few periods, which costs a
//! move (a socket handed from one reactor to the other) each time.
//!
//! The loads are a heuristic: a thread that hands its worker on in
//! [`crate::shared::block_in_place`] reports through the thread that takes
//! it over, and preemption by other processes counts as busy. Nothing
//! depends on them being exact; they decide only where connections run.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often loads are sampled.
pub const PERIOD: Duration = Duration::from_millis(20);
/// Load (thousandths) at which a thread is saturated and spreads.
pub const FULL: u32 = 900;
/// How much less busy than a saturated thread another must be to take
/// one of its connections.
pub const SPREAD_MARGIN: u32 = 150;
/// Load under which a thread gathers its connections onto another.
pub const LIGHT: u32 = 600;
/// What a thread's load plus the gathering thread's must stay under: one
/// thread's worth.
pub const GATHER_MAX: u32 = 1000;
/// How long a thread's worker must have run without parking for the
/// thread to count as having a queue ([`Balance::helper_for`]): it finished
/// task after task and always found another ready.
pub const BUSY_STREAK: Duration = Duration::from_micros(100);
/// Requests expected to take less than this are never run on a helper
/// thread: the two wake-ups (the helper's, then the connection's) cost
/// 10–20 µs.
pub const HELP_FROM_NS: u64 = 40_000;

/// One thread's park accounting.
#[derive(Default)]
struct ThreadLoad {
    /// Nanoseconds (since [`Balance::epoch`]) of the busy time finished
    /// at the last park.
    busy_ns: AtomicU64,
    /// When the worker last unparked (nanoseconds since the epoch, at
    /// least 1); 0 while it is parked.
    running_since: AtomicU64,
    /// The smoothed load, in thousandths.
    load: AtomicU32,
    /// The sample period in which this thread last gave a connection
    /// away (see [`Balance::claim_move`]).
    moved_in: AtomicU64,
}

/// The last sample: when, and each thread's busy total then.
struct Sample {
    at_ns: u64,
    busy_ns: Vec<u64>,
}

/// The loads of a fixed set of threads (see the module comment).
pub struct Balance {
    epoch: Instant,
    threads: Box<[ThreadLoad]>,
    sample: Mutex<Sample>,
    /// Sample periods elapsed (the number of the current one).
    period: AtomicU64,
    /// Tests: every connection moves to the next thread at every check,
    /// and every batched read runs on the next thread.
    churn: bool,
}

impl Balance {
    /// Loads of `threads` threads, all idle.
    pub fn new(threads: usize, churn: bool) -> Balance {
        let threads = threads.max(1);
        Balance {
            epoch: Instant::now(),
            threads: (0..threads).map(|_| ThreadLoad::default()).collect(),
            sample: Mutex::new(Sample {
                at_ns: 0,
                busy_ns: vec![0; threads],
            }),
            period: AtomicU64::new(0),
            churn,
        }
    }

    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    fn now_ns(&self) -> u64 {
        // At least 1: 0 means "parked" in `running_since`.
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Thread `i`'s worker is about to wait for work.
    pub fn parked(&self, i: usize) {
        let t = &self.threads[i];
        let since = t.running_since.swap(0, Ordering::Relaxed);
        if since != 0 {
            let busy = self.now_ns().saturating_sub(since);
            t.busy_ns.fetch_add(busy, Ordering::Relaxed);
        }
    }

    /// Thread `i`'s worker woke up with work.
    pub fn unparked(&self, i: usize) {
        self.threads[i]
            .running_since
            .store(self.now_ns(), Ordering::Relaxed);
    }

    /// Thread `i`'s smoothed load, in thousandths.
    pub fn load(&self, i: usize) -> u32 {
        self.threads[i].load.load(Ordering::Relaxed)
    }

    /// Every thread's load in percent, comma-separated (INFO).
    pub fn loads_percent(&self) -> String {
        self.sample();
        let loads: Vec<String> = (0..self.threads())
            .map(|i| (self.load(i) / 10).to_string())
            .collect();
        loads.join(",")
    }

    /// Samples the loads if a period has passed since the last sample (and
    /// no other caller is sampling).
    fn sample(&self) {
        let now = self.now_ns();
        let Ok(mut s) = self.sample.try_lock() else {
            return;
        };
        let span = now.saturating_sub(s.at_ns);
        if u128::from(span) < PERIOD.as_nanos() {
            return;
        }
        for (t, last) in self.threads.iter().zip(s.busy_ns.iter_mut()) {
            let since = t.running_since.load(Ordering::Relaxed);
            let running = if since == 0 {
                0
            } else {
                now.saturating_sub(since)
            };
            let busy = t.busy_ns.load(Ordering::Relaxed) + running;
            // The busy total can step back by the running part when a
            // park lands between the two loads above: count that as 0.
            let busy_in_span = busy.saturating_sub(*last);
            *last = busy.max(*last);
            let now_load =
                u32::try_from((busy_in_span.min(span) * 1000) / span.max(1)).unwrap_or(1000);
            let old = t.load.load(Ordering::Relaxed);
            t.load.store((old + now_load) / 2, Ordering::Relaxed);
        }
        s.at_ns = now;
        self.period.fetch_add(1, Ordering::Relaxed);
    }

    /// For a request on thread `i` expected to take `expected_ns`:
    /// another thread that could run it meanwhile, if the request is long
    /// ([`HELP_FROM_NS`]), thread `i` is busy (its worker has run for
    /// [`BUSY_STREAK`] without parking, so other connections wait behind
    /// the request) and that thread is idle (its worker is parked right
    /// now; the least busy of such). This is the work stealing one-worker
    /// threads lack, for requests long enough to pay for the wake-ups.
    /// Under `churn` (tests), every request runs on the next thread.
    pub fn helper_for(&self, i: usize, expected_ns: u64) -> Option<usize> {
        let n = self.threads();
        if n < 2 {
            return None;
        }
        if self.churn {
            return Some((i + 1) % n);
        }
        if expected_ns < HELP_FROM_NS {
            return None;
        }
        self.helper_at(i, self.now_ns())
    }

    /// [`Balance::helper_for`] of a long request at `now_ns`.
    fn helper_at(&self, i: usize, now_ns: u64) -> Option<usize> {
        let since = self.threads[i].running_since.load(Ordering::Relaxed);
        if since == 0 || u128::from(now_ns.saturating_sub(since)) < BUSY_STREAK.as_nanos() {
            return None;
        }
        (0..self.threads())
            .filter(|&j| j != i && self.threads[j].running_since.load(Ordering::Relaxed) == 0)
            .min_by_key(|&j| (self.load(j), j))
    }

    /// The thread a new connection goes to: the busiest one that is not
    /// saturated (the lowest-numbered among equals), else the least busy.
    pub fn place(&self) -> usize {
        self.sample();
        let loads: Vec<u32> = (0..self.threads()).map(|i| self.load(i)).collect();
        let open = (0..loads.len())
            .filter(|&i| loads[i] < FULL)
            .max_by_key(|&i| (loads[i], std::cmp::Reverse(i)));
        open.unwrap_or_else(|| least_busy(&loads, usize::MAX))
    }

    /// Where a connection on thread `i`, at a point where it can move,
    /// should go instead (`None`: stay).
    pub fn rebalance(&self, i: usize) -> Option<usize> {
        let n = self.threads();
        if n < 2 {
            return None;
        }
        if self.churn {
            return Some((i + 1) % n);
        }
        self.sample();
        let loads: Vec<u32> = (0..n).map(|j| self.load(j)).collect();
        let to = decide(&loads, i)?;
        self.claim_move(i).then_some(to)
    }

    /// Whether thread `i` may give a connection away in this period (at
    /// most one per period and thread).
    fn claim_move(&self, i: usize) -> bool {
        let period = self.period.load(Ordering::Relaxed) + 1;
        self.threads[i].moved_in.swap(period, Ordering::Relaxed) != period
    }
}

/// The policy of [`Balance::rebalance`] over the threads' `loads`, for a
/// connection on thread `i`.
fn decide(loads: &[u32], i: usize) -> Option<usize> {
    let mine = loads[i];
    if mine >= FULL {
        let j = least_busy(loads, i);
        return (loads[j] + SPREAD_MARGIN < mine).then_some(j);
    }
    if mine < LIGHT {
        // Onto the busiest thread at least as busy whose load with this
        // one's stays under one thread's worth; between two equally light
        // threads, onto the lower-numbered one (so they do not swap
        // connections).
        return (0..loads.len())
            .filter(|&j| j != i && loads[j] + mine < GATHER_MAX)
            .filter(|&j| loads[j] > mine || (loads[j] == mine && j < i))
            .max_by_key(|&j| (loads[j], std::cmp::Reverse(j)));
    }
    None
}

/// The least busy thread other than `except` (the lowest-numbered among
/// equals).
fn least_busy(loads: &[u32], except: usize) -> usize {
    (0..loads.len())
        .filter(|&j| j != except)
        .min_by_key(|&j| (loads[j], j))
        .unwrap_or(0)
}

impl std::fmt::Debug for Balance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loads: Vec<u32> = (0..self.threads()).map(|i| self.load(i)).collect();
        f.debug_struct("Balance").field("loads", &loads).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturated_thread_spreads_to_one_with_room() {
        assert_eq!(decide(&[950, 100], 0), Some(1));
        assert_eq!(decide(&[950, 700, 300], 0), Some(2));
        // Between saturated threads too, while one is well behind.
        assert_eq!(decide(&[1000, 800], 0), Some(1));
        // No thread far enough behind: stay.
        assert_eq!(decide(&[950, 850], 0), None);
        assert_eq!(decide(&[1000, 1000], 1), None);
    }

    #[test]
    fn light_threads_gather_onto_the_busiest_that_has_room() {
        assert_eq!(decide(&[500, 100], 1), Some(0));
        // Split at -P 1: two threads under half busy gather.
        assert_eq!(decide(&[470, 450], 1), Some(0));
        assert_eq!(
            decide(&[300, 100, 950], 1),
            Some(0),
            "950 + 100 is over one thread's worth"
        );
        // Equally light: onto the lower-numbered, never the other way.
        assert_eq!(decide(&[0, 0], 1), Some(0));
        assert_eq!(decide(&[0, 0], 0), None);
        // The busier of two light threads stays.
        assert_eq!(decide(&[300, 100], 0), None);
    }

    #[test]
    fn busy_threads_stay() {
        // Neither light nor saturated.
        assert_eq!(decide(&[800, 0], 0), None);
        // Saturated but about even.
        assert_eq!(decide(&[920, 900], 0), None);
        // A saturated load split over two threads: more than one thread's
        // worth, no gathering, and neither is saturated.
        assert_eq!(decide(&[850, 300], 1), None);
        assert_eq!(decide(&[550, 550], 0), None);
        assert_eq!(decide(&[550, 550], 1), None);
    }

    #[test]
    fn a_gathered_thread_under_full_keeps_its_connections() {
        assert_eq!(decide(&[850, 0], 0), None);
    }

    #[test]
    fn loads_follow_the_parks_and_placement_prefers_the_busy_open_thread() {
        let b = Balance::new(2, false);
        assert_eq!(b.place(), 0, "all idle: the first thread");
        // Thread 1 runs without parking for a period; thread 0 stays
        // parked.
        b.unparked(1);
        std::thread::sleep(PERIOD * 2);
        b.sample();
        assert!(b.load(1) >= 400, "{b:?}");
        assert_eq!(b.load(0), 0, "{b:?}");
        assert_eq!(b.place(), 1, "the busier thread that is not saturated");
        b.parked(1);
        // Parked since: the load decays.
        for _ in 0..6 {
            std::thread::sleep(PERIOD);
            b.sample();
        }
        assert!(b.load(1) < 100, "{b:?}");
    }

    #[test]
    fn a_thread_gives_away_one_connection_per_period() {
        let b = Balance::new(2, false);
        // Thread 1 idle, thread 0 idle: a connection on 1 gathers onto 0
        // once per period.
        assert_eq!(b.rebalance(1), Some(0));
        assert_eq!(b.rebalance(1), None, "the same period");
        assert_eq!(b.rebalance(0), None, "thread 0 is where others gather");
    }

    #[test]
    fn a_busy_thread_gets_help_from_an_idle_one_for_long_requests() {
        let b = Balance::new(3, false);
        let streak = BUSY_STREAK.as_nanos() as u64;
        // Thread 0 runs; 1 runs too; 2 is parked (never unparked).
        b.unparked(0);
        b.unparked(1);
        let since = b.threads[0].running_since.load(Ordering::Relaxed);
        // Busy for less than the streak: its queue may be empty.
        assert_eq!(b.helper_at(0, since + streak / 2), None);
        assert_eq!(b.helper_at(0, since + streak), Some(2));
        // Only parked threads help.
        b.unparked(2);
        assert_eq!(b.helper_at(0, since + streak), None);
        b.parked(1);
        assert_eq!(b.helper_at(0, since + streak), Some(1));
        // A parked thread asks for no help.
        b.parked(0);
        assert_eq!(b.helper_at(0, u64::MAX), None);
        // Short requests stay, whatever the threads do.
        b.unparked(0);
        assert_eq!(b.helper_for(0, HELP_FROM_NS - 1), None);
        // One thread has nobody to ask.
        assert_eq!(Balance::new(1, false).helper_for(0, u64::MAX), None);
    }

    #[test]
    fn a_helper_is_the_least_busy_idle_thread() {
        let b = Balance::new(3, false);
        b.threads[1].load.store(500, Ordering::Relaxed);
        b.threads[2].load.store(200, Ordering::Relaxed);
        b.unparked(0);
        let since = b.threads[0].running_since.load(Ordering::Relaxed);
        let at = since + BUSY_STREAK.as_nanos() as u64;
        assert_eq!(b.helper_at(0, at), Some(2));
        b.threads[2].load.store(600, Ordering::Relaxed);
        assert_eq!(b.helper_at(0, at), Some(1));
    }

    #[test]
    fn churn_moves_every_connection_to_the_next_thread() {
        let b = Balance::new(3, true);
        assert_eq!(b.rebalance(0), Some(1));
        assert_eq!(b.rebalance(2), Some(0));
        assert_eq!(b.helper_for(1, 0), Some(2));
        assert_eq!(Balance::new(1, true).rebalance(0), None);
    }
}
