//! `hiccup`: how long the machine itself stops a thread that does nothing.
//!
//! `--threads` threads (one per vCPU keeps every vCPU busy, as a fill with
//! background compaction does) each read the monotonic clock in a loop for
//! `--duration` seconds (10 s when 0), no engine involved; each gap between two consecutive
//! readings is one operation in the `--histogram` (jHiccup's idea). A
//! gap far above the clock read's own cost is time the thread was not
//! running: a scheduler preemption, an interrupt, or — on a virtual
//! machine — the hypervisor running something else on the vCPU (steal).
//! No engine operation's latency can go below the largest such gap, so a
//! `fillrandom … max` is to be read beside this benchmark's max in the same
//! run.
//!
//! The result line counts the gaps of at least [`LONG_GAP`] and the steal
//! time the kernel reports in `/proc/stat` over the benchmark (Linux; 0
//! where it is not available).

use std::time::{Duration, Instant};

use super::engine::BenchResult;
use super::histogram::Probe;
use super::workloads::{process_cpu_seconds, Stats};
use super::BenchArgs;

/// Gaps at least this long are counted separately (issue 30's latency
/// bound for a write).
const LONG_GAP: Duration = Duration::from_millis(2);

/// Seconds to run when `--duration` is 0.
const DEFAULT_SECONDS: u64 = 10;

/// Runs the benchmark (see the module docs).
pub fn run(args: &BenchArgs) -> BenchResult<Stats> {
    let seconds = if args.duration > 0 {
        args.duration
    } else {
        DEFAULT_SECONDS
    };
    let steal_start = steal_millis();
    let cpu_start = process_cpu_seconds();
    let start = Instant::now();
    let length = Duration::from_secs(seconds);
    let g = std::thread::scope(|s| {
        let loops: Vec<_> = (0..args.threads.max(1))
            .map(|_| s.spawn(|| measure_gaps(length)))
            .collect();
        loops.into_iter().try_fold(Gaps::default(), |all, h| {
            h.join()
                .map(|g| all.merge(g))
                .map_err(|_| "clock loop thread panicked")
        })
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu_start;
    let steal = match (steal_start, steal_millis()) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64,
        _ => 0.0,
    };
    let extra = format!(
        "(longest gap {:.2} ms; {} gaps of ≥ {} ms totalling {:.1} ms; steal {steal:.0} ms)",
        g.longest.as_secs_f64() * 1e3,
        g.long_gaps,
        LONG_GAP.as_millis(),
        g.long_total.as_secs_f64() * 1e3,
    );
    Ok(Stats {
        ops: g.reads,
        seconds: elapsed,
        cpu_seconds,
        extra,
        user_bytes: 0,
        fields: vec![
            ("longest_gap_micros", g.longest.as_secs_f64() * 1e6),
            ("long_gaps", g.long_gaps as f64),
            ("steal_millis", steal),
        ],
    })
}

/// What the clock loop saw.
#[derive(Debug, Default)]
struct Gaps {
    reads: u64,
    longest: Duration,
    long_gaps: u64,
    long_total: Duration,
}

impl Gaps {
    /// What two loops saw together.
    fn merge(self, other: Gaps) -> Gaps {
        Gaps {
            reads: self.reads + other.reads,
            longest: self.longest.max(other.longest),
            long_gaps: self.long_gaps + other.long_gaps,
            long_total: self.long_total + other.long_total,
        }
    }
}

/// Reads the clock until `length` has passed, timing each gap into a
/// probe (the `--histogram` lines) and keeping the long ones' tally.
fn measure_gaps(length: Duration) -> Gaps {
    let mut probe = Probe::new();
    let mut g = Gaps::default();
    let start = Instant::now();
    let mut last = start;
    while last.duration_since(start) < length {
        let now = Instant::now();
        let gap = now.duration_since(last);
        probe.record(1, gap);
        g.reads += 1;
        if gap > g.longest {
            g.longest = gap;
        }
        if gap >= LONG_GAP {
            g.long_gaps += 1;
            g.long_total += gap;
        }
        last = now;
    }
    g
}

/// The machine's total steal time so far, in milliseconds: the eighth
/// value of `/proc/stat`'s `cpu` line, in clock ticks (USER_HZ, 100 on
/// Linux). `None` where the file or field is missing.
fn steal_millis() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal_ticks(&stat).map(|ticks| ticks * 10)
}

fn parse_steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line() {
        let stat = "cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_steal_ticks(stat), Some(80));
        assert_eq!(parse_steal_ticks("cpu0 1 2 3\n"), None);
        assert_eq!(parse_steal_ticks("cpu  1 2 3\n"), None);
    }

    #[test]
    fn merged_loops_keep_the_longest_gap_and_add_the_rest() {
        let ms = Duration::from_millis;
        let a = Gaps {
            reads: 10,
            longest: ms(3),
            long_gaps: 1,
            long_total: ms(3),
        };
        let b = Gaps {
            reads: 5,
            longest: ms(7),
            long_gaps: 2,
            long_total: ms(11),
        };
        let m = a.merge(b);
        assert_eq!(
            (m.reads, m.longest, m.long_gaps, m.long_total),
            (15, ms(7), 3, ms(14))
        );
    }

    #[test]
    fn the_loop_counts_every_reading_and_the_longest_gap_bounds_them() {
        let g = measure_gaps(Duration::from_millis(30));
        assert!(g.reads > 100, "{g:?}");
        assert!(g.longest > Duration::ZERO, "{g:?}");
        assert!(g.long_total >= LONG_GAP * g.long_gaps as u32, "{g:?}");
        assert!(
            g.long_total <= Duration::from_millis(30) + g.longest,
            "{g:?}"
        );
    }
}
