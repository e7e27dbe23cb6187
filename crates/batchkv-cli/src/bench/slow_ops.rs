//! `--slowest N`: where the N slowest operations' time went.
//!
//! A latency maximum alone does not say whose it is: the engine's (a lock,
//! a condition variable, an fsync on the write path) or the machine's (a
//! preemption, or on a virtual machine a vCPU the hypervisor did not run).
//! With `--slowest` each timed operation also samples its thread's usage
//! (`getrusage(RUSAGE_THREAD)` and the thread CPU clock, two system calls
//! before and two after, so leave it off when measuring throughput) and
//! the N slowest operations keep, beside their wall time:
//! - `cpu`: the thread's user + system time during the operation;
//! - `waits`: voluntary context switches, i.e. the thread blocked (a
//!   lock, a condition variable, I/O): time the engine chose to wait;
//! - `preempted`: involuntary context switches, i.e. the scheduler took
//!   the CPU away while the thread could run.
//!
//! Wall time far above `cpu` with no `waits` was time the thread was
//! runnable but not running: the machine's, not the engine's (steal time
//! on a VM shows up here too, without even a preemption counted).

use std::sync::Mutex;
use std::time::Duration;

/// One slow operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowOp {
    /// When it started, from the start of its thread's benchmark loop.
    pub at: Duration,
    pub wall: Duration,
    pub cpu: Duration,
    pub waits: u64,
    pub preempted: u64,
}

impl SlowOp {
    /// One report line.
    pub fn line(self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "slow op: {:.3} ms wall, {:.3} ms on CPU, {} blocking waits, {} preemptions (at {:.3} s)",
            ms(self.wall),
            ms(self.cpu),
            self.waits,
            self.preempted,
            self.at.as_secs_f64()
        )
    }

    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "at_seconds": self.at.as_secs_f64(),
            "wall_micros": self.wall.as_secs_f64() * 1e6,
            "cpu_micros": self.cpu.as_secs_f64() * 1e6,
            "blocking_waits": self.waits,
            "preemptions": self.preempted,
        })
    }
}

/// The calling thread's usage so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    cpu: Duration,
    waits: u64,
    preempted: u64,
}

impl Usage {
    /// Reads the calling thread's usage (zero where the platform has no
    /// per-thread usage).
    pub fn now() -> Usage {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `getrusage` writes a `rusage` into the zeroed struct
            // we pass and reads nothing else.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: as above; RUSAGE_THREAD is valid on Linux.
            let ru_ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
            // The CPU time from the thread CPU clock: getrusage's times of
            // a running thread advance only at scheduler ticks (4 ms steps
            // were seen), the clock includes the time since the last one.
            // SAFETY: `clock_gettime` writes a `timespec` into the zeroed
            // struct we pass and reads nothing else.
            let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: as above; the clock id is valid on Linux.
            let ts_ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
            if ru_ok && ts_ok {
                return Usage {
                    cpu: Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.max(0) as u32),
                    waits: ru.ru_nvcsw.max(0) as u64,
                    preempted: ru.ru_nivcsw.max(0) as u64,
                };
            }
        }
        Usage::default()
    }

    /// The operation that started at `at` and took `wall`, with `self`
    /// sampled before it and `after` after it.
    pub fn op_until(self, after: Usage, at: Duration, wall: Duration) -> SlowOp {
        SlowOp {
            at,
            wall,
            cpu: after.cpu.saturating_sub(self.cpu),
            waits: after.waits.saturating_sub(self.waits),
            preempted: after.preempted.saturating_sub(self.preempted),
        }
    }
}

/// The `n` slowest operations seen, slowest first.
#[derive(Debug, Default)]
pub struct Slowest {
    n: usize,
    ops: Vec<SlowOp>,
}

impl Slowest {
    pub fn new(n: usize) -> Slowest {
        Slowest {
            n,
            ops: Vec::with_capacity(n + 1),
        }
    }

    /// Would an operation of `wall` be kept? (Callers skip building the
    /// record when not.)
    #[inline]
    pub fn admits(&self, wall: Duration) -> bool {
        self.n > 0 && (self.ops.len() < self.n || self.ops.last().is_some_and(|o| wall > o.wall))
    }

    pub fn offer(&mut self, op: SlowOp) {
        if !self.admits(op.wall) {
            return;
        }
        let at = self.ops.partition_point(|o| o.wall >= op.wall);
        self.ops.insert(at, op);
        self.ops.truncate(self.n);
    }

    pub fn merge(&mut self, other: Slowest) {
        self.n = self.n.max(other.n);
        for op in other.ops {
            self.offer(op);
        }
    }

    pub fn into_ops(self) -> Vec<SlowOp> {
        self.ops
    }
}

/// The benchmark-wide slowest operations, merged from the threads' probes.
pub static SINK: Mutex<Option<Slowest>> = Mutex::new(None);

#[cfg(test)]
mod tests {
    use super::*;

    fn op(ms: u64) -> SlowOp {
        SlowOp {
            at: Duration::ZERO,
            wall: Duration::from_millis(ms),
            cpu: Duration::ZERO,
            waits: 0,
            preempted: 0,
        }
    }

    #[test]
    fn keeps_the_n_slowest_slowest_first() {
        let mut s = Slowest::new(3);
        for ms in [5, 1, 9, 3, 7, 2] {
            s.offer(op(ms));
        }
        let mut t = Slowest::new(3);
        t.offer(op(8));
        t.offer(op(4));
        s.merge(t);
        let walls: Vec<u64> = s
            .into_ops()
            .iter()
            .map(|o| o.wall.as_millis() as u64)
            .collect();
        assert_eq!(walls, vec![9, 8, 7]);
        assert!(!Slowest::new(0).admits(Duration::from_secs(1)));
    }

    /// A thread that sleeps inside the operation shows a blocking wait and
    /// little CPU; one that spins shows CPU of about its wall time.
    #[cfg(target_os = "linux")]
    #[test]
    fn usage_tells_waiting_from_running() {
        let before = Usage::now();
        std::thread::sleep(Duration::from_millis(20));
        let slept = before.op_until(Usage::now(), Duration::ZERO, Duration::from_millis(20));
        assert!(slept.waits >= 1, "{slept:?}");
        assert!(slept.cpu < Duration::from_millis(10), "{slept:?}");

        let before = Usage::now();
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let spun = before.op_until(Usage::now(), Duration::ZERO, start.elapsed());
        assert!(spun.cpu >= Duration::from_millis(5), "{spun:?}");
    }
}
