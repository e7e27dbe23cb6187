//! Starting a server on an ephemeral port and talking to it.
#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod reference;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use batchkv_server::{Config, Server};

/// A server on a temporary directory.
pub struct Harness {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

impl Harness {
    pub fn start() -> Harness {
        Harness::start_with(|_| {})
    }

    pub fn start_with(f: impl FnOnce(&mut Config)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let server = start_in(dir.path(), f);
        Harness { server, dir }
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.server.addr())
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    pub fn conn(&self) -> redis::Connection {
        self.client().get_connection().unwrap()
    }

    /// Runs `f(t, connection)` for each `t` in `0..n` at once, each on a
    /// thread of its own with a connection of its own; the results in
    /// order of `t` (a panic in one fails the caller).
    pub fn on_clients<R: Send>(
        &self,
        n: usize,
        f: impl Fn(usize, &mut redis::Connection) -> R + Sync,
    ) -> Vec<R> {
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..n)
                .map(|t| {
                    let client = self.client();
                    let f = &f;
                    s.spawn(move || f(t, &mut client.get_connection().unwrap()))
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        })
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.server.addr())
    }

    /// Shuts the server down (closing the database) and returns its
    /// directory.
    pub fn stop(self) -> tempfile::TempDir {
        let Harness { server, dir } = self;
        server.shutdown();
        server.join().unwrap();
        dir
    }

    /// Shuts the server down and starts a new one on the same directory.
    pub fn restart(self, f: impl FnOnce(&mut Config)) -> Harness {
        let dir = self.stop();
        let server = start_in(dir.path(), f);
        Harness { server, dir }
    }
}

pub fn start_in(dir: &std::path::Path, f: impl FnOnce(&mut Config)) -> Server {
    let mut cfg = Config::new(dir);
    cfg.threads = 2;
    f(&mut cfg);
    Server::start(cfg).unwrap()
}

/// Redis's error for a command on a key holding another type.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// `CODE detail` of a server error reply.
pub fn err_text(e: redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => e.to_string(),
    }
}

/// Runs a command expecting an error reply; returns its text.
pub fn query_err(con: &mut redis::Connection, args: &[&str]) -> String {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    match c.query::<redis::Value>(con) {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => err_text(e),
    }
}

/// Runs a command and converts the reply.
pub fn q<T: redis::FromRedisValue>(con: &mut redis::Connection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
        .unwrap_or_else(|e| panic!("{args:?}: {}", err_text(e)))
}

/// Runs `line` (split on spaces) as one command and converts the reply.
pub fn qs<T: redis::FromRedisValue>(c: &mut redis::Connection, line: &str) -> T {
    let args: Vec<&str> = line.split(' ').collect();
    q(c, &args)
}

/// Runs `line` (split on spaces) expecting an error; returns its text.
pub fn errs(c: &mut redis::Connection, line: &str) -> String {
    let args: Vec<&str> = line.split(' ').collect();
    query_err(c, &args)
}

/// Waits until the server `c` talks to reports `n` blocked clients (INFO
/// clients); fails after 10 s.
pub fn wait_blocked(c: &mut redis::Connection, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = q(c, &["INFO", "clients"]);
        if info.contains(&want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never {want:?}: {info}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A raw TCP connection for protocol-level tests.
pub struct Raw {
    pub sock: TcpStream,
}

impl Raw {
    pub fn connect(addr: std::net::SocketAddr) -> Raw {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw { sock }
    }

    pub fn send(&mut self, b: &[u8]) {
        self.sock.write_all(b).unwrap();
    }

    /// Reads until `want` bytes arrived or the peer closed.
    pub fn read_n(&mut self, want: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while out.len() < want {
            match self.sock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    }

    /// Reads until the data received ends with `suffix` (or the peer
    /// closed, or 5 s passed).
    pub fn read_until(&mut self, suffix: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while !out.ends_with(suffix) {
            match self.sock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    }

    /// Sends `b` and reads exactly the length of `expected`, comparing.
    pub fn expect(&mut self, b: &[u8], expected: &[u8]) {
        self.send(b);
        let got = self.read_n(expected.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "reply to {:?}",
            String::from_utf8_lossy(b)
        );
    }

    /// Whether the server closed the connection (read returns 0).
    pub fn closed(&mut self) -> bool {
        let mut buf = [0u8; 16];
        matches!(self.sock.read(&mut buf), Ok(0))
    }
}

/// Element keys (first byte 0x12 or 0x13: collections' elements and
/// sorted sets' score index) stored in the database at `dir`, which no
/// server may have open.
pub fn stored_elements(dir: &std::path::Path) -> usize {
    let (elements, index) = stored_element_keys(dir);
    elements + index
}

/// The element keys (first byte 0x12) and the sorted sets' score-index
/// keys (0x13) stored in the database at `dir`, which no server may have
/// open.
pub fn stored_element_keys(dir: &std::path::Path) -> (usize, usize) {
    let db = batchkv::Db::open(dir, batchkv::Options::default()).unwrap();
    let opts = batchkv::ReadOptions {
        lower_bound: Some(vec![0x12]),
        upper_bound: Some(vec![0x14]),
        ..Default::default()
    };
    let mut it = db.iter(&opts).unwrap();
    it.seek([0x12]);
    let (mut elements, mut index) = (0, 0);
    while it.valid() {
        if it.key()[0] == 0x12 {
            elements += 1;
        } else {
            index += 1;
        }
        it.next();
    }
    (elements, index)
}

/// The keys stored in the database at `dir` (which no server may have
/// open) whose first byte is `first`.
pub fn stored_keys_from(dir: &std::path::Path, first: u8) -> usize {
    let db = batchkv::Db::open(dir, batchkv::Options::default()).unwrap();
    let opts = batchkv::ReadOptions {
        lower_bound: Some(vec![first]),
        upper_bound: Some(vec![first + 1]),
        ..Default::default()
    };
    let mut it = db.iter(&opts).unwrap();
    it.seek([first]);
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    n
}

/// xorshift64*: a small deterministic generator for randomized tests
/// (seed it with a fixed or printed value).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// The keyspace events a subscriber of `__keyspace@*` (and of `done`)
/// received before a message on `done`, each as `<key> <event>`.
#[allow(dead_code, reason = "not every test file reads notifications")]
pub fn keyspace_events_until_done(ps: &mut redis::PubSub<'_>) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let m = ps.get_message().unwrap();
        let channel = m.get_channel_name();
        if channel == "done" {
            return out;
        }
        let key = channel.split_once("__:").unwrap().1;
        out.push(format!("{key} {}", m.get_payload::<String>().unwrap()));
    }
}
