//! A progress bar on stderr for the running benchmark (indicatif), shown
//! only when stderr is a terminal; otherwise nothing is printed.
//!
//! Benchmark threads count operations in a thread-local [`Ticker`] that
//! forwards to the shared bar every [`BATCH`] operations, so the bar costs
//! nothing measurable per operation.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Operations counted locally before the shared bar is updated.
const BATCH: u64 = 4096;

/// Starts a bar for benchmark `name` expecting `total` operations (0: a
/// spinner, e.g. for `--duration` runs). No-op unless stderr is a terminal.
pub fn begin(name: &str, total: u64) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let bar = if total > 0 {
        ProgressBar::new(total)
    } else {
        ProgressBar::new_spinner()
    };
    let style = ProgressStyle::with_template(
        "{prefix:>14} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} (eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(name.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    if let Ok(mut b) = BAR.lock() {
        *b = Some(bar);
    }
}

/// Removes the bar (before the benchmark's result line is printed).
pub fn finish() {
    if let Some(bar) = BAR.lock().ok().and_then(|mut b| b.take()) {
        bar.finish_and_clear();
    }
}

/// A thread's operation counter.
#[derive(Default)]
pub struct Ticker {
    pending: u64,
}

impl Ticker {
    pub fn tick(&mut self, ops: u64) {
        self.pending += ops;
        if self.pending >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.pending == 0 {
            return;
        }
        if let Ok(b) = BAR.lock() {
            if let Some(bar) = b.as_ref() {
                bar.inc(self.pending);
            }
        }
        self.pending = 0;
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.flush();
    }
}
