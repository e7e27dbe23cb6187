//! Latency histograms for [`Db::statistics`](crate::Db::statistics): `get`,
//! `multi_get` (per call and per key) and `write`.
//!
//! Each histogram is a fixed array of atomic counters over log-linear
//! buckets of nanoseconds: values below 8 ns get a bucket each; above, each
//! power of two `[2^e, 2^(e+1))` is split into 8 equal buckets, so a
//! bucket is at most 1/8 (12.5%) as wide as the values in it. Recording is
//! one `Instant::now()` pair per call and three relaxed atomic operations
//! (bucket, sum, max) — no locks, no allocation.
//!
//! Thread safety: any number of threads record and snapshot concurrently.
//! Invariants:
//! 1. `bucket_of(ns)` is the bucket whose `bucket_bounds` contain `ns`
//!    (values past the last bucket's bound go to the last bucket).
//! 2. A snapshot taken while others record may count a call in a bucket
//!    but not yet in `sum`/`max` (or the reverse): the figures are each
//!    exact, not mutually consistent; percentiles are clamped to `max`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// log2 of the sub-buckets per power of two.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// The highest power of two with buckets of its own (2^45 ns ≈ 9.8 hours).
const MAX_EXP: u32 = 44;
const BUCKETS: usize = SUB + (MAX_EXP - SUB_BITS + 1) as usize * SUB;

/// The bucket of a latency of `ns` nanoseconds.
fn bucket_of(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    // ns ≥ 8, so e ≥ SUB_BITS.
    let e = 63 - ns.leading_zeros();
    if e > MAX_EXP {
        return BUCKETS - 1;
    }
    let sub = ((ns >> (e - SUB_BITS)) as usize) & (SUB - 1);
    SUB + (e - SUB_BITS) as usize * SUB + sub
}

/// `[low, high)` of bucket `b`, in nanoseconds.
fn bucket_bounds(b: usize) -> (u64, u64) {
    if b < SUB {
        return (b as u64, b as u64 + 1);
    }
    let e = ((b - SUB) / SUB) as u32 + SUB_BITS;
    let width = 1u64 << (e - SUB_BITS);
    let low = (1u64 << e) + ((b - SUB) % SUB) as u64 * width;
    (low, low + width)
}

/// One latency histogram.
pub(crate) struct Histogram {
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    /// Records `n` events of `each_ns` nanoseconds each (a `multi_get` of
    /// `n` keys records its per-key share this way), `total_ns` in all.
    // Relaxed throughout: statistics only, no ordering with other data.
    fn record_n(&self, each_ns: u64, n: u64, total_ns: u64) {
        self.buckets[bucket_of(each_ns)].fetch_add(n, Ordering::Relaxed);
        self.sum_ns.fetch_add(total_ns, Ordering::Relaxed);
        // A load first: the max rarely changes, and a plain load does not
        // take the cache line exclusively.
        if each_ns > self.max_ns.load(Ordering::Relaxed) {
            self.max_ns.fetch_max(each_ns, Ordering::Relaxed);
        }
    }

    fn record(&self, ns: u64) {
        self.record_n(ns, 1, ns);
    }

    /// The percentiles of what was recorded so far.
    pub(crate) fn snapshot(&self) -> LatencyStats {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let count: u64 = counts.iter().sum();
        if count == 0 {
            return LatencyStats::default();
        }
        let max = self.max_ns.load(Ordering::Relaxed);
        let percentile = |q: f64| -> Duration {
            // The smallest value with at least q of the events at or below
            // it, interpolated linearly inside its bucket.
            let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
            let mut below = 0u64;
            for (b, &c) in counts.iter().enumerate() {
                if c > 0 && below + c >= rank {
                    let (low, high) = bucket_bounds(b);
                    let frac = (rank - below) as f64 / c as f64;
                    let ns = low + ((high - low - 1) as f64 * frac) as u64;
                    return Duration::from_nanos(ns.min(max));
                }
                below += c;
            }
            Duration::from_nanos(max)
        };
        LatencyStats {
            count,
            mean: Duration::from_nanos(self.sum_ns.load(Ordering::Relaxed) / count),
            p50: percentile(0.50),
            p95: percentile(0.95),
            p99: percentile(0.99),
            p999: percentile(0.999),
            max: Duration::from_nanos(max),
        }
    }
}

/// Percentiles of one kind of call's latency since open (bucketed: each
/// percentile is within 12.5% of the exact one; `max` is exact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatencyStats {
    /// Calls (for the per-key `multi_get` figures: keys) recorded.
    pub count: u64,
    /// Mean latency.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 95th percentile.
    pub p95: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Largest latency recorded.
    pub max: Duration,
}

impl std::fmt::Display for LatencyStats {
    /// `count N mean X p50 X p95 X p99 X p99.9 X max X`, in microseconds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Duration| d.as_nanos() as f64 / 1000.0;
        write!(
            f,
            "count {} mean {:.2} p50 {:.2} p95 {:.2} p99 {:.2} p99.9 {:.2} max {:.2} (µs)",
            self.count,
            us(self.mean),
            us(self.p50),
            us(self.p95),
            us(self.p99),
            us(self.p999),
            us(self.max)
        )
    }
}

/// The engine's latency histograms (in `Counters`).
#[derive(Default)]
pub(crate) struct Latencies {
    /// `Options::statistics`; set once at open, before any call records.
    enabled: AtomicBool,
    pub get: Histogram,
    pub multi_get: Histogram,
    pub multi_get_per_key: Histogram,
    pub write: Histogram,
}

/// Which histogram a [`Timer`] records into when dropped.
pub(crate) enum Timed {
    Get,
    /// A `multi_get` of this many keys.
    MultiGet(u64),
    Write,
}

/// Measures one call from its creation to its drop (so every return path
/// of the call is measured).
pub(crate) struct Timer<'a> {
    lat: &'a Latencies,
    what: Timed,
    /// `None` when statistics are off: then the drop does nothing.
    start: Option<Instant>,
}

impl Latencies {
    pub fn set_enabled(&self, on: bool) {
        // Relaxed: read by the same threads that use the database after
        // `open` returns, which publishes it.
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts timing a call.
    pub fn timer(&self, what: Timed) -> Timer<'_> {
        Timer {
            lat: self,
            what,
            start: self.enabled().then(Instant::now),
        }
    }
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        let Some(start) = self.start else {
            return;
        };
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        match self.what {
            Timed::Get => self.lat.get.record(ns),
            Timed::Write => self.lat.write.record(ns),
            Timed::MultiGet(keys) => {
                self.lat.multi_get.record(ns);
                // An empty multi_get has no per-key share.
                if let Some(each) = ns.checked_div(keys) {
                    self.lat.multi_get_per_key.record_n(each, keys, ns);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_its_buckets_bounds() {
        let mut values: Vec<u64> = (0..5000).collect();
        for e in 3..64 {
            let p = 1u64 << e;
            values.extend([p - 1, p, p + 1, p + p / 3]);
        }
        for ns in values {
            let b = bucket_of(ns);
            assert!(b < BUCKETS);
            let (low, high) = bucket_bounds(b);
            if b < BUCKETS - 1 {
                assert!(low <= ns && ns < high, "{ns} in bucket {b} [{low}, {high})");
                // Log-linear: a bucket is at most 1/8 of its values wide.
                assert!((high - low) * 8 <= low.max(8), "{ns}: [{low}, {high})");
            } else {
                assert!(ns >= low);
            }
        }
        // Buckets tile the line: each starts where the previous ends.
        for b in 1..BUCKETS {
            assert_eq!(bucket_bounds(b - 1).1, bucket_bounds(b).0, "bucket {b}");
        }
    }

    #[test]
    fn percentiles_are_within_a_bucket_of_the_exact_ones() {
        let h = Histogram::default();
        // 1 µs .. 1000 µs, one each: p50 ≈ 500 µs, p99 ≈ 990 µs.
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let s = h.snapshot();
        assert_eq!(s.count, 1000);
        assert_eq!(s.max, Duration::from_micros(1000));
        assert_eq!(s.mean, Duration::from_nanos(500_500));
        for (got, want_us) in [
            (s.p50, 500.0),
            (s.p95, 950.0),
            (s.p99, 990.0),
            (s.p999, 999.0),
        ] {
            let got_us = got.as_nanos() as f64 / 1000.0;
            assert!(
                (got_us - want_us).abs() <= want_us / 8.0,
                "got {got_us} µs, want ≈ {want_us}"
            );
        }
        assert!(s.p50 <= s.p95 && s.p95 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max);
        assert_eq!(Histogram::default().snapshot(), LatencyStats::default());
    }

    #[test]
    fn a_multi_get_records_its_per_key_share() {
        let lat = Latencies::default();
        lat.set_enabled(true);
        drop(lat.timer(Timed::MultiGet(4)));
        drop(lat.timer(Timed::MultiGet(0)));
        assert_eq!(lat.multi_get.snapshot().count, 2);
        assert_eq!(lat.multi_get_per_key.snapshot().count, 4);
        lat.set_enabled(false);
        drop(lat.timer(Timed::Get));
        assert_eq!(lat.get.snapshot().count, 0);
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// The cost of one measured call (clock pair, bucket, sum, max), the
    /// figure `docs/perf/history/2026-11-23-feature-costs.md` quotes:
    /// `cargo test --release -p batchkv --lib latency::cost -- --ignored
    /// --nocapture`. Ignored: a timing, meaningful in release builds on a
    /// quiet machine only.
    #[test]
    #[ignore]
    fn one_timer_costs_well_under_a_microsecond() {
        let lat = Latencies::default();
        lat.set_enabled(true);
        let n = 2_000_000u32;
        let (on, off) = (0..3)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..n {
                    drop(std::hint::black_box(lat.timer(Timed::Get)));
                }
                let on = t.elapsed() / n;
                lat.set_enabled(false);
                let t = Instant::now();
                for _ in 0..n {
                    drop(std::hint::black_box(lat.timer(Timed::Get)));
                }
                let off = t.elapsed() / n;
                lat.set_enabled(true);
                (on, off)
            })
            .min()
            .unwrap_or_default();
        println!("timer: {on:?} per call on, {off:?} off");
        assert!(on < Duration::from_micros(1), "{on:?}");
    }
}
