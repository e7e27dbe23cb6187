//! The slow log (SLOWLOG): the latest commands that took at least
//! `slowlog-log-slower-than` microseconds, at most `slowlog-max-len` of
//! them, newest first — Redis's entry format and truncation: at most 32
//! arguments (the last one then says how many more there were), each cut
//! at 128 bytes with how many more bytes there were; passwords are
//! replaced by `(redacted)`.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

/// Most arguments an entry keeps.
const MAX_ARGC: usize = 32;
/// Most bytes an argument keeps.
const MAX_STRING: usize = 128;

/// One logged command.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: u64,
    /// Unix time in seconds when it was logged.
    pub time: u64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    /// The client's `ip:port` and name.
    pub addr: String,
    pub name: Bytes,
}

#[derive(Default)]
struct Log {
    next_id: u64,
    entries: VecDeque<Entry>,
}

/// The slow log (module docs).
#[derive(Default)]
pub struct SlowLog {
    log: Mutex<Log>,
}

fn lock(m: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // Entries are pushed and popped whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SlowLog {
    /// Logs `args` (name included), which took `micros`, then trims the
    /// log to `max_len` entries (as Redis, a smaller `max_len` takes effect
    /// at the next entry).
    pub fn push(
        &self,
        args: &[Bytes],
        micros: u64,
        addr: &str,
        name: Option<&Bytes>,
        max_len: usize,
    ) {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let args = entry_args(args);
        let mut log = lock(&self.log);
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry {
            id,
            time,
            micros,
            args,
            addr: addr.to_string(),
            name: name.cloned().unwrap_or_default(),
        });
        log.entries.truncate(max_len);
    }

    /// The newest `count` entries (all with `None`), newest first.
    pub fn get(&self, count: Option<usize>) -> Vec<Entry> {
        let log = lock(&self.log);
        let n = count.unwrap_or(usize::MAX).min(log.entries.len());
        log.entries.iter().take(n).cloned().collect()
    }

    pub fn len(&self) -> usize {
        lock(&self.log).entries.len()
    }

    /// Forgets every entry (ids keep counting, as in Redis).
    pub fn reset(&self) {
        lock(&self.log).entries.clear();
    }
}

/// The arguments an entry keeps (module docs).
fn entry_args(args: &[Bytes]) -> Vec<Bytes> {
    let redacted = redacted(args);
    let kept = args.len().min(MAX_ARGC);
    (0..kept)
        .map(|i| {
            if kept < args.len() && i == kept - 1 {
                Bytes::from(format!("... ({} more arguments)", args.len() - kept + 1))
            } else if redacted.contains(&i) {
                Bytes::from_static(b"(redacted)")
            } else if args[i].len() > MAX_STRING {
                let mut s = args[i][..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", args[i].len() - MAX_STRING).as_bytes(),
                );
                Bytes::from(s)
            } else {
                args[i].clone()
            }
        })
        .collect()
}

/// The positions of passwords in `args` (name included): AUTH's
/// arguments, HELLO's after AUTH, and the value of CONFIG SET requirepass.
fn redacted(args: &[Bytes]) -> Vec<usize> {
    let Some(name) = args.first() else {
        return Vec::new();
    };
    if name.eq_ignore_ascii_case(b"auth") {
        return (1..args.len()).collect();
    }
    if name.eq_ignore_ascii_case(b"hello") {
        return match args.iter().position(|a| a.eq_ignore_ascii_case(b"auth")) {
            Some(i) if i >= 2 => vec![i + 1, i + 2],
            _ => Vec::new(),
        };
    }
    let config_set = args.len() >= 2
        && name.eq_ignore_ascii_case(b"config")
        && args[1].eq_ignore_ascii_case(b"set");
    if config_set {
        return (2..args.len())
            .step_by(2)
            .filter(|&i| crate::config::Settings::is_sensitive(&args[i]))
            .map(|i| i + 1)
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Bytes> {
        v.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn entries_are_cut_as_redis_cuts_them() {
        let mut many = args(&["rpush", "l"]);
        many.extend((0..40).map(|i| Bytes::from(i.to_string())));
        let kept = entry_args(&many);
        assert_eq!(kept.len(), 32);
        assert_eq!(kept[31], "... (11 more arguments)");
        assert_eq!(kept[30], "28");
        let long = entry_args(&args(&["set", "k", &"x".repeat(200)]));
        assert_eq!(long[2], format!("{}... (72 more bytes)", "x".repeat(128)));
        assert_eq!(
            entry_args(&args(&["AUTH", "u", "p"]))[1..],
            ["(redacted)", "(redacted)"]
        );
        let hello = entry_args(&args(&["hello", "3", "AUTH", "u", "p", "setname", "n"]));
        assert_eq!(
            hello,
            [
                "hello",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "setname",
                "n"
            ]
        );
        let cfg = entry_args(&args(&[
            "config",
            "set",
            "timeout",
            "1",
            "REQUIREPASS",
            "pw",
        ]));
        assert_eq!(cfg[3], "1");
        assert_eq!(cfg[5], "(redacted)");
    }

    #[test]
    fn the_log_keeps_the_newest_entries() {
        let log = SlowLog::default();
        for i in 0..5 {
            log.push(&args(&["set", &i.to_string()]), i, "a:1", None, 3);
        }
        let got = log.get(None);
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), [4, 3, 2]);
        assert_eq!(log.get(Some(1))[0].args[1], "4");
        log.reset();
        assert_eq!(log.len(), 0);
        log.push(&args(&["get", "k"]), 1, "a:1", None, 3);
        assert_eq!(log.get(None)[0].id, 5);
    }
}
