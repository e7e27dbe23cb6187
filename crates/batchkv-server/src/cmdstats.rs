//! Per-command statistics (INFO commandstats), error statistics (INFO
//! errorstats) and the sampled command rate (`instantaneous_ops_per_sec`).
//!
//! Each command and each subcommand of a container command (`config|get`)
//! has a slot of relaxed atomic counters, indexed as
//! `commands::stat_names` lists them; `commands::execute` updates one slot
//! per command. Errors are counted by their code (the reply's first word)
//! under a lock taken only for error replies.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// One command's counters, on a cache line of their own: connections on
/// other threads running other commands do not contend for it.
#[derive(Default)]
#[repr(align(64))]
struct Slot {
    calls: AtomicU64,
    usec: AtomicU64,
    /// Refused before running (wrong arity, NOAUTH, ...).
    rejected: AtomicU64,
    /// Ran and answered an error.
    failed: AtomicU64,
}

/// The statistics of every command (module docs).
pub struct CommandStats {
    names: Vec<String>,
    slots: Vec<Slot>,
    errors: Mutex<BTreeMap<String, u64>>,
    total_errors: AtomicU64,
    /// `(commands processed at the previous sample, ops/s since)`.
    rate: Mutex<(u64, u64)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters only: any state after a panic is acceptable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CommandStats {
    /// Statistics for the slots named `names` (`get`, `config|get`, ...).
    pub fn new(names: Vec<String>) -> CommandStats {
        let slots = names.iter().map(|_| Slot::default()).collect();
        CommandStats {
            names,
            slots,
            errors: Mutex::new(BTreeMap::new()),
            total_errors: AtomicU64::new(0),
            rate: Mutex::new((0, 0)),
        }
    }

    /// The name of slot `slot` (`config|get`).
    pub fn name(&self, slot: usize) -> &str {
        self.names.get(slot).map_or("", String::as_str)
    }

    /// Records `calls` runs of the command in `slot` that took `took` in
    /// all, `failed` of which answered an error.
    pub fn record(&self, slot: usize, calls: u64, took: Duration, failed: bool) {
        let Some(s) = self.slots.get(slot) else {
            return;
        };
        s.calls.fetch_add(calls, Relaxed);
        s.usec.fetch_add(took.as_micros() as u64, Relaxed);
        if failed {
            s.failed.fetch_add(calls, Relaxed);
        }
    }

    /// Records the answer of a command that blocked (counted as a call
    /// when it blocked): the time of the run that answered it, and whether
    /// that answer is an error.
    pub fn record_unblocked(&self, slot: usize, took: Duration, failed: bool) {
        self.record(slot, 0, took, false);
        if let (Some(s), true) = (self.slots.get(slot), failed) {
            s.failed.fetch_add(1, Relaxed);
        }
    }

    /// Records a command refused before it ran.
    pub fn reject(&self, slot: usize) {
        if let Some(s) = self.slots.get(slot) {
            s.rejected.fetch_add(1, Relaxed);
        }
    }

    /// Counts an error reply under its code (`ERR`, `WRONGTYPE`, ...).
    pub fn count_error(&self, text: &str) {
        let code = text.split(' ').next().unwrap_or("ERR");
        self.total_errors.fetch_add(1, Relaxed);
        let mut errors = lock(&self.errors);
        let known = errors.len();
        match errors.get_mut(code) {
            Some(n) => *n += 1,
            // Redis tracks at most 128 codes.
            None if known < 128 => {
                errors.insert(code.to_string(), 1);
            }
            None => {}
        }
    }

    pub fn total_errors(&self) -> u64 {
        self.total_errors.load(Relaxed)
    }

    /// INFO commandstats lines, for every slot that ran or was refused.
    pub fn commandstats(&self) -> String {
        let mut out = String::new();
        for (name, s) in self.names.iter().zip(&self.slots) {
            let (calls, usec) = (s.calls.load(Relaxed), s.usec.load(Relaxed));
            let (rejected, failed) = (s.rejected.load(Relaxed), s.failed.load(Relaxed));
            if calls == 0 && rejected == 0 && failed == 0 {
                continue;
            }
            let per_call = if calls == 0 {
                0.0
            } else {
                usec as f64 / calls as f64
            };
            out.push_str(&format!(
                "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per_call:.2},\
                 rejected_calls={rejected},failed_calls={failed}\r\n"
            ));
        }
        out
    }

    /// INFO errorstats lines.
    pub fn errorstats(&self) -> String {
        lock(&self.errors)
            .iter()
            .map(|(code, n)| format!("errorstat_{code}:count={n}\r\n"))
            .collect()
    }

    /// Forgets every count (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for s in &self.slots {
            for c in [&s.calls, &s.usec, &s.rejected, &s.failed] {
                c.store(0, Relaxed);
            }
        }
        lock(&self.errors).clear();
        self.total_errors.store(0, Relaxed);
    }

    /// Called once a second with the commands processed so far.
    pub fn sample_rate(&self, processed: u64) {
        let mut r = lock(&self.rate);
        *r = (processed, processed.saturating_sub(r.0));
    }

    /// Commands per second over the last second.
    pub fn ops_per_sec(&self) -> u64 {
        lock(&self.rate).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_follow_redis_format_and_skip_unused_slots() {
        let s = CommandStats::new(vec!["get".into(), "config|get".into(), "set".into()]);
        s.record(0, 2, Duration::from_micros(3), false);
        s.record(0, 1, Duration::from_micros(0), true);
        s.reject(1);
        assert_eq!(
            s.commandstats(),
            "cmdstat_get:calls=3,usec=3,usec_per_call=1.00,rejected_calls=0,failed_calls=1\r\n\
             cmdstat_config|get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n"
        );
        s.count_error("WRONGTYPE Operation against a key");
        s.count_error("ERR x");
        s.count_error("ERR y");
        assert_eq!(
            s.errorstats(),
            "errorstat_ERR:count=2\r\nerrorstat_WRONGTYPE:count=1\r\n"
        );
        assert_eq!(s.total_errors(), 3);
        s.reset();
        assert_eq!(
            (s.commandstats(), s.errorstats()),
            (String::new(), String::new())
        );
    }
}
