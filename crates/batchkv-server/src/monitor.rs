//! MONITOR: every command the server runs, as one status line to each
//! monitoring connection, in Redis's format:
//!
//! ```text
//! +1796180913.888531 [0 127.0.0.1:39308] "set" "a b" "x\"y"
//! ```
//!
//! (Unix time with microseconds, the client's database after the command
//! and its address, then each argument quoted as Redis's `sdscatrepr`
//! quotes it.) As in Redis, commands refused before they run (unknown,
//! wrong arity, not authenticated) and administrative ones (those flagged
//! `admin`: CONFIG, CLIENT LIST, SLOWLOG, ...) are not shown, and the
//! passwords of AUTH and HELLO's AUTH read `(redacted)`. A transaction
//! shows MULTI, its commands as EXEC runs them, then EXEC.
//!
//! A command is fed after it ran, by `commands::execute` (through
//! `call_slot`: single commands, EXEC's and write groups') and by the
//! record of batched reads and combined string writes; nothing is done
//! while nobody monitors ([`Monitors::active`] is one atomic load).
//!
//! # Slow monitors
//! Each monitor has a queue of [`MAX_QUEUED`] lines; a monitor whose queue
//! is full is dropped (its connection closes, as Redis closes a client over
//! its output limit), so a command never waits for a monitor.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::mpsc;

/// Most lines queued for one monitor.
pub const MAX_QUEUED: usize = 64 * 1024;

/// The monitoring connections. Shared by all connections (`Shared::monitors`).
#[derive(Default)]
pub struct Monitors {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `subs.len()`, read without the lock.
    count: AtomicUsize,
    subs: Mutex<Vec<(u64, mpsc::Sender<Bytes>)>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, mpsc::Sender<Bytes>)>> {
        // Every update leaves the list valid: poisoning is ignored.
        self.subs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remove(&self, id: u64) {
        let mut subs = self.lock();
        subs.retain(|(i, _)| *i != id);
        self.count.store(subs.len(), Relaxed);
    }
}

/// One connection's monitor subscription: the lines fed to it. Dropping
/// it ends the subscription.
pub struct Subscription {
    id: u64,
    rx: mpsc::Receiver<Bytes>,
    inner: Arc<Inner>,
}

impl Subscription {
    /// The next line, or `None` once the monitor was dropped for being
    /// too slow (the connection then closes).
    pub async fn recv(&mut self) -> Option<Bytes> {
        self.rx.recv().await
    }

    /// Appends every line already queued to `out`.
    pub fn drain(&mut self, out: &mut BytesMut) {
        while let Ok(line) = self.rx.try_recv() {
            out.put_slice(&line);
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.inner.remove(self.id);
    }
}

impl Monitors {
    /// Whether any connection monitors.
    pub fn active(&self) -> bool {
        self.inner.count.load(Relaxed) > 0
    }

    /// Starts feeding connection `id`.
    pub fn subscribe(&self, id: u64) -> Subscription {
        let (tx, rx) = mpsc::channel(MAX_QUEUED);
        let mut subs = self.inner.lock();
        subs.push((id, tx));
        self.inner.count.store(subs.len(), Relaxed);
        Subscription {
            id,
            rx,
            inner: self.inner.clone(),
        }
    }

    /// Shows command `args` (name included), run by the client at `addr`
    /// now in database `db`, to every monitor.
    pub fn feed(&self, db: u8, addr: &str, args: &[Bytes]) {
        let line = line(SystemTime::now(), db, addr, args);
        let mut subs = self.inner.lock();
        // A full (or closed) queue drops its monitor.
        subs.retain(|(_, tx)| tx.try_send(line.clone()).is_ok());
        self.inner.count.store(subs.len(), Relaxed);
    }
}

/// The argument positions of `args` (name included) that MONITOR shows
/// as `(redacted)`: AUTH's arguments, HELLO's AUTH username and password.
fn redacted(args: &[Bytes]) -> impl Fn(usize) -> bool + '_ {
    let name = &args[0];
    let auth = name.eq_ignore_ascii_case(b"auth");
    let hello_auth = if name.eq_ignore_ascii_case(b"hello") {
        args.iter()
            .position(|a| a.eq_ignore_ascii_case(b"auth"))
            .filter(|&i| i >= 2)
    } else {
        None
    };
    move |i| (auth && i >= 1) || hello_auth.is_some_and(|at| i == at + 1 || i == at + 2)
}

/// One MONITOR line (a status reply, `\r\n` included).
fn line(at: SystemTime, db: u8, addr: &str, args: &[Bytes]) -> Bytes {
    let t = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut out = BytesMut::with_capacity(48 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    out.put_slice(format!("+{}.{:06} [{db} {addr}]", t.as_secs(), t.subsec_micros()).as_bytes());
    let hidden = redacted(args);
    for (i, a) in args.iter().enumerate() {
        out.put_u8(b' ');
        if hidden(i) {
            out.put_slice(b"\"(redacted)\"");
        } else {
            quote(&mut out, a);
        }
    }
    out.put_slice(b"\r\n");
    out.freeze()
}

/// Appends `s` quoted as Redis's `sdscatrepr`: `"`, backslash escapes for
/// `\\ " \n \r \t \a \b`, `\xHH` for other bytes that are not printable
/// ASCII.
fn quote(out: &mut BytesMut, s: &[u8]) {
    out.put_u8(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => out.put_slice(&[b'\\', c]),
            b'\n' => out.put_slice(b"\\n"),
            b'\r' => out.put_slice(b"\\r"),
            b'\t' => out.put_slice(b"\\t"),
            0x07 => out.put_slice(b"\\a"),
            0x08 => out.put_slice(b"\\b"),
            0x20..=0x7e => out.put_u8(c),
            _ => out.put_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args(a: &[&[u8]]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s)).collect()
    }

    #[test]
    fn lines_quote_and_redact_as_redis() {
        let at = UNIX_EPOCH + Duration::from_micros(1_796_180_913_000_042);
        let l =
            |a: &[&[u8]]| String::from_utf8(line(at, 3, "1.2.3.4:5", &args(a)).to_vec()).unwrap();
        assert_eq!(
            l(&[b"set", b"a b", b"x\"y\\\n\x01\xff"]),
            "+1796180913.000042 [3 1.2.3.4:5] \"set\" \"a b\" \"x\\\"y\\\\\\n\\x01\\xff\"\r\n"
        );
        assert_eq!(
            l(&[b"AUTH", b"user", b"pw"]),
            "+1796180913.000042 [3 1.2.3.4:5] \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        assert_eq!(
            l(&[b"hello", b"3", b"SETNAME", b"n", b"auth", b"u", b"p"]),
            "+1796180913.000042 [3 1.2.3.4:5] \"hello\" \"3\" \"SETNAME\" \"n\" \"auth\" \
             \"(redacted)\" \"(redacted)\"\r\n"
        );
    }

    #[tokio::test]
    async fn a_full_monitor_is_dropped_and_others_keep_their_lines() {
        let m = Monitors::default();
        assert!(!m.active());
        let mut fast = m.subscribe(1);
        let mut slow = m.subscribe(2);
        for i in 0..MAX_QUEUED {
            m.feed(0, "a:1", &args(&[b"get", i.to_string().as_bytes()]));
            if i % 1000 == 0 {
                let mut out = BytesMut::new();
                fast.drain(&mut out);
            }
        }
        m.feed(0, "a:1", &args(&[b"ping"]));
        // The slow one had MAX_QUEUED lines queued: the next did not fit.
        let mut out = BytesMut::new();
        slow.drain(&mut out);
        assert!(slow.recv().await.is_none());
        assert!(m.active());
        m.feed(0, "a:1", &args(&[b"last"]));
        let mut out = BytesMut::new();
        fast.drain(&mut out);
        assert!(out.ends_with(b"\"last\"\r\n"));
        drop(fast);
        assert!(!m.active());
    }
}
