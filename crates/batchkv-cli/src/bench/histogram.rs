//! `--histogram`: per-operation latency percentiles (p50/p95/p99/p99.9/max).
//!
//! Each benchmark thread times its operations into a thread-local
//! [`Probe`] (an HDR histogram, no locking per operation); dropping the probe
//! merges it into the benchmark-wide sink, which [`take`] empties after the
//! benchmark. An operation is one engine call: a get, a seek with its nexts,
//! a write batch, or a whole multiread batch (as db_bench times MultiGet).
//! Without `--histogram` a probe only counts operations for the progress bar.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::progress;
use super::slow_ops::{self, SlowOp, Slowest, Usage};

static ENABLED: AtomicBool = AtomicBool::new(false);
static SINK: Mutex<Option<Histogram<u64>>> = Mutex::new(None);
/// `--slowest`: how many of the slowest operations to explain (0: none).
static SLOWEST: AtomicUsize = AtomicUsize::new(0);

/// Turns latency recording on or off for the benchmarks that follow, and
/// sets how many of the slowest operations [`slow_ops`] explains.
pub fn enable(on: bool, slowest: usize) {
    ENABLED.store(on, Ordering::Relaxed);
    SLOWEST.store(slowest, Ordering::Relaxed);
}

fn new_histogram() -> Option<Histogram<u64>> {
    // 1 ns .. 1 hour at 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).ok()
}

/// Latency percentiles of one benchmark, in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Summary {
    fn of(h: &Histogram<u64>) -> Summary {
        let us = |ns: u64| ns as f64 / 1e3;
        Summary {
            count: h.len(),
            mean: h.mean() / 1e3,
            p50: us(h.value_at_quantile(0.50)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }

    /// db_bench-style lines.
    pub fn lines(&self) -> String {
        format!(
            "Microseconds per op:\nCount: {} Average: {:.4}\nPercentiles: P50: {:.2} P95: {:.2} P99: {:.2} P99.9: {:.2} Max: {:.2}",
            self.count, self.mean, self.p50, self.p95, self.p99, self.p999, self.max
        )
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count, "mean_micros": self.mean, "p50_micros": self.p50,
            "p95_micros": self.p95, "p99_micros": self.p99, "p99_9_micros": self.p999,
            "max_micros": self.max,
        })
    }
}

/// Empties the sink: the latencies of the benchmark that just ran, if
/// `--histogram` is on and it recorded anything.
pub fn take() -> Option<Summary> {
    let h = SINK.lock().ok()?.take()?;
    (!h.is_empty()).then(|| Summary::of(&h))
}

/// Empties the slowest-operations sink (`--slowest`): the benchmark that
/// just ran, slowest first.
pub fn take_slowest() -> Vec<SlowOp> {
    let taken = slow_ops::SINK.lock().ok().and_then(|mut s| s.take());
    taken.map(Slowest::into_ops).unwrap_or_default()
}

/// A thread's recorder for one benchmark loop.
pub struct Probe {
    hist: Option<Histogram<u64>>,
    slow: Option<Slowest>,
    /// When the probe was made (the `at` of its slow operations).
    born: Instant,
    progress: progress::Ticker,
}

impl Probe {
    pub fn new() -> Probe {
        Probe {
            hist: if ENABLED.load(Ordering::Relaxed) {
                new_histogram()
            } else {
                None
            },
            slow: match SLOWEST.load(Ordering::Relaxed) {
                0 => None,
                n => Some(Slowest::new(n)),
            },
            born: Instant::now(),
            progress: progress::Ticker::default(),
        }
    }

    /// Runs one operation covering `ops` benchmark operations, timing it
    /// when `--histogram` is on.
    pub fn op<T>(&mut self, ops: u64, f: impl FnOnce() -> T) -> T {
        if self.slow.is_some() {
            return self.op_explained(ops, f);
        }
        if self.hist.is_none() {
            self.progress.tick(ops);
            return f();
        }
        let start = Instant::now();
        let r = f();
        self.record(ops, start.elapsed());
        r
    }

    /// [`Probe::op`] with the thread's usage sampled around it (`--slowest`).
    #[inline(never)]
    fn op_explained<T>(&mut self, ops: u64, f: impl FnOnce() -> T) -> T {
        let before = Usage::now();
        let start = Instant::now();
        let r = f();
        let wall = start.elapsed();
        let after = Usage::now();
        if let Some(slow) = &mut self.slow {
            if slow.admits(wall) {
                slow.offer(before.op_until(after, start - self.born, wall));
            }
        }
        self.record(ops, wall);
        r
    }

    /// Records one operation covering `ops` benchmark operations that
    /// took `elapsed` (timed by the caller).
    pub fn record(&mut self, ops: u64, elapsed: Duration) {
        self.progress.tick(ops);
        if let Some(h) = &mut self.hist {
            let ns = elapsed.as_nanos().min(u128::from(u64::MAX)) as u64;
            h.saturating_record(ns.max(1));
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if let Some(slow) = self.slow.take() {
            if let Ok(mut sink) = slow_ops::SINK.lock() {
                match sink.as_mut() {
                    Some(all) => all.merge(slow),
                    None => *sink = Some(slow),
                }
            }
        }
        let Some(h) = self.hist.take() else {
            return;
        };
        if let Ok(mut sink) = SINK.lock() {
            match sink.as_mut() {
                // Same bounds on both sides: add() cannot fail for range.
                Some(total) => {
                    let _ = total.add(&h);
                }
                None => *sink = Some(h),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_percentiles_in_micros() {
        let mut h = new_histogram().unwrap();
        for i in 1..=1000u64 {
            h.record(i * 1000).unwrap(); // 1..1000 us
        }
        let s = Summary::of(&h);
        assert_eq!(s.count, 1000);
        assert!((s.p50 - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
        assert!(s.p999 >= s.p99 && s.p95 <= s.p99);
        assert!(s.lines().contains("P99.9: 999"), "{}", s.lines());
    }

    #[test]
    fn probes_from_threads_merge_into_one_benchmark() {
        enable(true, 2);
        let _ = take();
        let _ = take_slowest();
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let mut p = Probe::new();
                    for _ in 0..10 {
                        p.op(1, || std::hint::black_box(1 + 1));
                    }
                });
            }
        });
        enable(false, 0);
        let s = take().unwrap();
        assert_eq!(s.count, 30);
        assert!(take().is_none(), "take empties the sink");
        assert_eq!(take_slowest().len(), 2, "the two slowest of all threads");
        assert!(take_slowest().is_empty(), "take_slowest empties the sink");
    }
}
