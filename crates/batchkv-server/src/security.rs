//! Who may talk to the server: protected mode (Redis 7's), the password
//! comparison, the rate-limited log of failed AUTHs, and who may run
//! DEBUG (`enable-debug-command`).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Redis 7.0's reply to a client refused by protected mode (byte for byte,
/// its typos included), CRLF-terminated: the connection is closed after it.
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is \
enabled and no password is set for the default user. In this mode connections are only \
accepted from the loopback interface. If you want to connect from external computers to \
Redis you may adopt one of the following solutions: 1) Just disable protected mode sending \
the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis \
from the same host the server is running, however MAKE SURE Redis is not publicly accessible \
from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) \
Alternatively you can just disable the protected mode by editing the Redis configuration \
file, and setting the protected mode option to 'no', and then restarting the server. 3) If \
you started the server manually just for testing, restart it with the '--protected-mode no' \
option. 4) Setup a an authentication password for the default user. NOTE: You only need to \
do one of the above things in order for the server to start accepting connections from the \
outside.\r\n";

/// Whether `ip` is a loopback address: `127.0.0.0/8`, `::1`, or an
/// IPv4-mapped `::ffff:127.x.y.z` (Redis compares the peer's text with
/// `127.` and `::1`; a dual-stack socket shows IPv4 peers mapped).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether a client connecting from `peer` is refused by protected mode:
/// protected mode is on, no password is set, and the peer is not on the
/// loopback interface (Redis 7 no longer looks at the bind address: a
/// server bound to loopback only never sees such a peer).
pub fn denied(protected_mode: bool, password_set: bool, peer: SocketAddr) -> bool {
    protected_mode && !password_set && !is_loopback(peer.ip())
}

/// Whether binding `bind` accepts clients from other hosts: anything but
/// a loopback address (or `localhost`).
pub fn binds_beyond_loopback(bind: &str) -> bool {
    if bind.eq_ignore_ascii_case("localhost") {
        return false;
    }
    bind.parse::<IpAddr>().map_or(true, |ip| !is_loopback(ip))
}

/// Compares a password given by a client with the configured one in time
/// that depends on their lengths only, never on where they first differ:
/// every byte pair is combined with OR of XORs and the result is looked
/// at once, at the end (no early exit, no data-dependent branch; the
/// `black_box` keeps the optimizer from adding one).
pub fn password_matches(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, &e) in expected.iter().enumerate() {
        // Past the end of `given`, compare with 0 (the length already
        // differs): the loop always runs over all of `expected`.
        let g = given.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(g ^ e);
    }
    std::hint::black_box(diff) == 0
}

/// DEBUG's availability (Redis's `enable-debug-command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugCommand {
    /// DEBUG is refused for every client.
    No,
    /// DEBUG runs for every client.
    Yes,
    /// Only from loopback clients.
    Local,
}

impl DebugCommand {
    /// The setting's name as `--enable-debug-command` spells it: `no`,
    /// `yes` or `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }

    /// Whether a client at `peer` (`ip:port` text) may run DEBUG.
    pub fn allows(self, peer: &str) -> bool {
        match self {
            DebugCommand::No => false,
            DebugCommand::Yes => true,
            DebugCommand::Local => peer
                .parse::<SocketAddr>()
                .is_ok_and(|a| is_loopback(a.ip())),
        }
    }
}

impl std::str::FromStr for DebugCommand {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "no" => Ok(DebugCommand::No),
            "yes" => Ok(DebugCommand::Yes),
            "local" => Ok(DebugCommand::Local),
            _ => Err(format!("expected no, yes or local, got {s:?}")),
        }
    }
}

/// Redis's refusal of DEBUG when `enable-debug-command` does not allow it.
pub const DEBUG_NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the \
enable-debug-command option is set to \"local\", you can run it from a local connection, \
otherwise you need to set this option in the configuration file, and then restart the server.";

/// Failed AUTH attempts: a total (INFO `acl_access_denied_auth`, Redis
/// 7.2's name) and a log of at most one line per [`AUTH_LOG_INTERVAL`],
/// saying how many failed since the previous line.
#[derive(Default)]
pub struct AuthFailures {
    total: AtomicU64,
    /// When the last line was logged, and the failures since.
    log: Mutex<(Option<Instant>, u64)>,
}

/// The shortest time between two lines of the failed-AUTH log.
pub const AUTH_LOG_INTERVAL: Duration = Duration::from_secs(1);

impl AuthFailures {
    /// Counts a failed AUTH (or HELLO AUTH) from `peer`; logs a warning
    /// unless one was logged less than [`AUTH_LOG_INTERVAL`] ago. Returns
    /// the number of failures the line logged reports, if one was.
    pub fn record(&self, peer: &str, now: Instant) -> Option<u64> {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.1 += 1;
        if log
            .0
            .is_some_and(|t| now.duration_since(t) < AUTH_LOG_INTERVAL)
        {
            return None;
        }
        let n = std::mem::take(&mut log.1);
        log.0 = Some(now);
        drop(log);
        log::warn!(
            "batchkv serve: {n} failed AUTH attempt(s) since the last report, the latest from {peer}"
        );
        Some(n)
    }

    /// Failed AUTHs since the server started (or CONFIG RESETSTAT).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Zeroes the total (CONFIG RESETSTAT).
    pub fn reset(&self) {
        self.total.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn protected_mode_refuses_only_remote_peers_without_a_password() {
        for local in [
            "127.0.0.1:5000",
            "127.9.8.7:1",
            "[::1]:5000",
            "[::ffff:127.0.0.1]:9",
        ] {
            assert!(!denied(true, false, addr(local)), "{local}");
        }
        for remote in [
            "10.0.0.5:5000",
            "192.168.1.2:1",
            "[2001:db8::1]:80",
            "[::ffff:10.1.2.3]:9",
        ] {
            assert!(denied(true, false, addr(remote)), "{remote}");
            assert!(!denied(false, false, addr(remote)), "off: {remote}");
            assert!(!denied(true, true, addr(remote)), "password: {remote}");
        }
    }

    #[test]
    fn bind_addresses_beyond_loopback() {
        for b in ["0.0.0.0", "::", "10.0.0.1", "eth0.example"] {
            assert!(binds_beyond_loopback(b), "{b}");
        }
        for b in ["127.0.0.1", "::1", "localhost", "127.0.0.2"] {
            assert!(!binds_beyond_loopback(b), "{b}");
        }
    }

    #[test]
    fn the_denied_text_is_one_line() {
        assert!(DENIED.starts_with("-DENIED Redis is running in protected mode because"));
        assert_eq!(DENIED.matches("\r\n").count(), 1);
        assert!(DENIED.ends_with("from the outside.\r\n"));
        assert!(
            !DENIED.contains("  "),
            "no doubled spaces from the line breaks"
        );
    }

    #[test]
    fn passwords_compare_whole() {
        assert!(password_matches(b"secret", b"secret"));
        assert!(password_matches(b"", b""));
        for wrong in [&b"secreT"[..], b"secre", b"secrets", b"", b"Secret"] {
            assert!(!password_matches(wrong, b"secret"), "{wrong:?}");
        }
        assert!(!password_matches(b"x", b""));
    }

    #[test]
    fn debug_command_modes() {
        assert!(!DebugCommand::No.allows("127.0.0.1:1"));
        assert!(DebugCommand::Yes.allows("10.0.0.1:1"));
        assert!(DebugCommand::Local.allows("127.0.0.1:1"));
        assert!(DebugCommand::Local.allows("[::1]:1"));
        assert!(!DebugCommand::Local.allows("10.0.0.1:1"));
        assert_eq!("LOCAL".parse(), Ok(DebugCommand::Local));
        assert!("maybe".parse::<DebugCommand>().is_err());
    }

    #[test]
    fn failed_auths_are_counted_and_logged_once_a_second() {
        let f = AuthFailures::default();
        let t0 = Instant::now();
        assert_eq!(f.record("a", t0), Some(1));
        for i in 1..1000u64 {
            let at = t0 + Duration::from_micros(i * 100);
            assert_eq!(f.record("a", at), None);
        }
        assert_eq!(f.total(), 1000);
        // The next line, a second later, reports the 999 held back and it.
        assert_eq!(f.record("b", t0 + AUTH_LOG_INTERVAL), Some(1000));
        f.reset();
        assert_eq!(f.total(), 0);
    }
}
