//! Write amplification, measured the same way for every engine: bytes the
//! process handed to `write(2)`-family calls (`wchar` in `/proc/self/io`:
//! WAL, flushed and compacted SSTs, MANIFEST, every thread) divided by the
//! bytes of keys and values the benchmark wrote. Every engine runs in this
//! process and writes its files with buffered writes, so one counter covers
//! them all; it does not see mmap writes (no engine here uses them) and it
//! counts the little the benchmark itself prints (the progress bar).

/// `wchar` of this process, if `/proc/self/io` is readable (Linux).
pub fn process_bytes_written() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    parse_wchar(&io)
}

fn parse_wchar(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Bytes written since the benchmark run began, against user bytes.
pub struct WriteAmp {
    start: Option<u64>,
    user_bytes: u64,
}

/// The cumulative figures after one benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cumulative {
    pub file_bytes: u64,
    pub user_bytes: u64,
}

impl Cumulative {
    /// File bytes per user byte; `None` before anything was written.
    pub fn ratio(&self) -> Option<f64> {
        (self.user_bytes > 0).then(|| self.file_bytes as f64 / self.user_bytes as f64)
    }

    /// `write-amp   : F MB written to files / U MB of keys and values = R`
    pub fn line(&self) -> Option<String> {
        let r = self.ratio()?;
        Some(format!(
            "{:<12} : {:.1} MB written to files / {:.1} MB of keys and values = {r:.2} \
             (cumulative; WAL + flush + compaction + MANIFEST)",
            "write-amp",
            self.file_bytes as f64 / 1e6,
            self.user_bytes as f64 / 1e6,
        ))
    }
}

impl WriteAmp {
    pub fn start() -> WriteAmp {
        WriteAmp {
            start: process_bytes_written(),
            user_bytes: 0,
        }
    }

    /// Adds one benchmark's user bytes; returns the totals so far.
    pub fn after(&mut self, user_bytes: u64) -> Option<Cumulative> {
        self.user_bytes += user_bytes;
        let now = process_bytes_written()?;
        Some(Cumulative {
            file_bytes: now.saturating_sub(self.start?),
            user_bytes: self.user_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wchar_from_proc_io() {
        let io = "rchar: 100\nwchar: 12345\nsyscr: 3\nsyscw: 4\nread_bytes: 0\nwrite_bytes: 8192\n";
        assert_eq!(parse_wchar(io), Some(12345));
        assert_eq!(parse_wchar("rchar: 1\n"), None);
    }

    #[test]
    fn the_counter_sees_a_file_write() {
        let Some(before) = process_bytes_written() else {
            return; // not Linux: nothing to measure
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 1 << 20]).unwrap();
        let after = process_bytes_written().unwrap();
        assert!(after - before >= 1 << 20, "{before} -> {after}");
    }

    #[test]
    fn ratio_is_cumulative_and_absent_before_writes() {
        let c = Cumulative {
            file_bytes: 300,
            user_bytes: 100,
        };
        assert_eq!(c.ratio(), Some(3.0));
        assert!(c.line().unwrap().contains("= 3.00"));
        assert_eq!(
            Cumulative {
                file_bytes: 5,
                user_bytes: 0
            }
            .ratio(),
            None
        );
    }
}
