//! The server's fuzz target: random bytes become a connection's input —
//! raw protocol bytes and requests generated from the command table with
//! edge-case arguments — which goes through the RESP request parser and
//! the command dispatch of an in-process server, as `conn.rs` would run
//! it. The target fails (panics) if any command panicked: the panic
//! boundary (`panics.rs`) would have turned it into `-ERR internal error`
//! for a client, which is a bug all the same.
//!
//! The input is read as a stream of choices ([`Source`]; exhausted, it
//! reads zeros): per step, one byte picks raw bytes (appended to the
//! connection's buffer as they are, in arbitrary pieces, so partial and
//! malformed requests reach the parser) or a generated request (a command
//! or container subcommand from the table, an argument count around its
//! arity, and arguments from [`arg`]: keys of every type and missing ones,
//! integers at and past the i64 limits, huge counts, NaN/inf/1e308 and
//! friends, option words, range syntax, globs, empty and long strings,
//! raw bytes). Every input starts from the same keyspace, a key of each
//! type ([`SETUP`]), on a new database and server state (settings
//! included): an input fails or passes alone.
//!
//! Used by the stable driver in `cargo test` (`fuzz_server_dispatch`,
//! `BATCHKV_FUZZ_SECONDS`/`BATCHKV_FUZZ_SEED` for longer runs) and by the
//! cargo-fuzz target `fuzz/fuzz_targets/server_dispatch.rs` (feature
//! `fuzzing`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;

use batchkv::Db;
use bytes::{Bytes, BytesMut};

use crate::commands::{self, After, ConnState};
use crate::config::{AppendFsync, Config};
use crate::resp::{self, Reply};
use crate::shared::Shared;

/// Generated or raw steps per input at most (keeps each input fast).
const MAX_STEPS: usize = 48;

/// The keyspace every input starts from: a key of each type, some large
/// enough to be scanned in pages (more than 128 elements).
const SETUP: &[&[&str]] = &[
    &["SET", "s", "hello"],
    &["SET", "n", "42"],
    &["SET", "f", "1.5"],
    &["SET", "t", "v", "PX", "100000"],
    &["HSET", "h", "a", "1", "b", "2", "c", "x"],
    &["SADD", "S", "a", "b", "c", "1", "2"],
    &["SADD", "I", "1", "2", "3", "-5"],
    &[
        "ZADD", "z", "1", "a", "2", "b", "-inf", "m", "+inf", "n", "0", "o",
    ],
    &["RPUSH", "l", "a", "b", "c", "1", "2", "a"],
];

/// Keys the arguments name: every type (strings, integers, floats, a
/// volatile key, hash, sets, sorted set, list, the large ones), and keys
/// that do not exist (yet).
const KEYS: &[&str] = &[
    "s", "n", "f", "t", "h", "S", "I", "z", "l", "H", "Z", "L", "missing", "", "new", "k{1}",
];

/// Integers: the i64 limits and just past them, huge counts and offsets,
/// negatives, and almost-integers.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "-10",
    "100",
    "128",
    "129",
    "1000",
    "65535",
    "1048576",
    "-1048576",
    "-1048577",
    "4294967295",
    "4294967296",
    "2147483647",
    "-2147483648",
    "536870911",
    "536870912",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "99999999999999999999999",
    "00",
    "-0",
    "+1",
    "1 ",
    "0x10",
    "1e3",
];

/// Floats and what float parsers refuse.
const FLOATS: &[&str] = &[
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "+inf",
    "Infinity",
    "-infinity",
    "1e308",
    "-1e308",
    "1e309",
    "1.7976931348623157e308",
    "4.9e-324",
    "0.1",
    "-0.0",
    "1.5",
    "3.0e",
    ".5",
    "5.",
    "1e-400",
    "0x1p3",
    "1,5",
];

/// Option words of the commands, in both cases sometimes.
const WORDS: &[&str] = &[
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "GET",
    "PERSIST",
    "WITHSCORES",
    "WITHSCORE",
    "WITHVALUES",
    "LIMIT",
    "BYSCORE",
    "BYLEX",
    "REV",
    "MATCH",
    "COUNT",
    "TYPE",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "BIT",
    "BYTE",
    "IDX",
    "LEN",
    "MINMATCHLEN",
    "WITHMATCHLEN",
    "MIN",
    "MAX",
    "SUM",
    "AGGREGATE",
    "WEIGHTS",
    "STORE",
    "RANK",
    "MAXLEN",
    "REPLACE",
    "DB",
    "AUTH",
    "SETNAME",
    "ABORT",
    "NOSAVE",
    "NOW",
    "ASYNC",
    "SYNC",
    "ID",
    "ADDR",
    "LADDR",
    "USER",
    "SKIPME",
    "NORMAL",
    "PUBSUB",
    "MASTER",
    "default",
    "string",
    "hash",
    "list",
    "set",
    "zset",
    "maxclients",
    "timeout",
    "proto-max-bulk-len",
    "appendfsync",
    "requirepass",
    "client-query-buffer-limit",
    "slowlog-log-slower-than",
    "protected-mode",
    "save",
    "*",
    "yes",
    "no",
    "on",
    "off",
    "everysec",
    "always",
];

/// Range and glob syntax.
const RANGES: &[&str] = &[
    "(1",
    "[a",
    "(a",
    "-",
    "+",
    "(",
    "[",
    "(inf",
    "(-inf",
    "(nan",
    "[\u{ff}",
    "*",
    "?",
    "[a-",
    "\\",
    "a*",
    "*a*b*c*d*e*f*",
    "[^a]",
    "[z-a]",
    "h?",
    "\\*",
];

/// Reads an input as a stream of choices; past its end, zeros.
pub struct Source<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Source<'a> {
    /// A source reading `data` from its first byte.
    pub fn new(data: &'a [u8]) -> Source<'a> {
        Source { data, pos: 0 }
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        let v = usize::from(self.byte()) << 8 | usize::from(self.byte());
        v % n
    }

    /// Up to `max` raw bytes of the input.
    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }

    fn pick<'b>(&mut self, list: &[&'b str]) -> &'b str {
        list[self.below(list.len())]
    }
}

/// One generated argument.
fn arg(src: &mut Source<'_>) -> Vec<u8> {
    match src.byte() % 10 {
        0..=2 => src.pick(KEYS).into(),
        3 => src.pick(NUMBERS).into(),
        4 => src.pick(FLOATS).into(),
        5 => {
            let w = src.pick(WORDS);
            if src.byte().is_multiple_of(2) {
                w.to_ascii_lowercase().into_bytes()
            } else {
                w.into()
            }
        }
        6 => src.pick(RANGES).into(),
        7 => src.bytes(24).to_vec(),
        8 => match src.byte() % 4 {
            0 => Vec::new(),
            1 => vec![b'x'; 1000],
            2 => vec![b'y'; 70_000],
            _ => b"a\r\nb".to_vec(),
        },
        _ => (src.below(2000) as i64 - 1000).to_string().into_bytes(),
    }
}

/// A generated request: a command (or container subcommand) of the table
/// with an argument count around its arity; its first argument (after a
/// subcommand) is mostly a key.
fn request(src: &mut Source<'_>, names: &[String]) -> Vec<Vec<u8>> {
    let name = &names[src.below(names.len())];
    let mut args: Vec<Vec<u8>> = name.split('|').map(|p| p.as_bytes().to_vec()).collect();
    let arity = commands::lookup(&args[0]).map_or(1, |c| c.arity);
    // A container's arity counts its subcommand; its subcommands take a
    // few more arguments (their own arity is not in the table's view).
    let base = (arity.unsigned_abs() as usize).max(args.len());
    let want = match src.byte() % 16 {
        0 => base.saturating_sub(1),
        1 => base + 1,
        _ if arity < 0 || args.len() > 1 => base + src.below(6),
        _ => base,
    };
    let first = args.len();
    while args.len() < want {
        if args.len() == first && !src.byte().is_multiple_of(8) {
            args.push(src.pick(KEYS).into());
        } else {
            args.push(arg(src));
        }
    }
    args
}

/// Encodes `args` as a multibulk request (or, one time in eight, inline,
/// which loses arguments with spaces — fine for a fuzzer).
fn encode(src: &mut Source<'_>, args: &[Vec<u8>], out: &mut Vec<u8>) {
    if src.byte().is_multiple_of(8) {
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.extend(a.iter().filter(|&&c| c != b'\n' && c != b'\r'));
        }
        out.extend_from_slice(b"\r\n");
        return;
    }
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A directory removed when dropped (on tmpfs when there is one: the
/// engine's fsyncs cost nothing there).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let base = ["/dev/shm", "/tmp"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!(
            "batchkv-fuzz-server-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        #[allow(
            clippy::expect_used,
            reason = "the fuzz harness cannot run without its directory"
        )]
        std::fs::create_dir_all(&dir).expect("create the fuzz database directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One thread's fuzzing state: a directory where each input gets a new
/// database.
struct Fuzzer {
    cfg: Config,
    names: Vec<String>,
    dir: TempDir,
    inputs: u64,
}

impl Fuzzer {
    fn new() -> Fuzzer {
        let dir = TempDir::new();
        let mut cfg = Config::new(&dir.0);
        cfg.options.write_buffer_size = 4 << 20;
        cfg.options.block_cache_size = 8 << 20;
        cfg.batch = false;
        cfg.threads = 1;
        cfg.appendfsync = AppendFsync::No;
        Fuzzer {
            cfg,
            names: commands::stat_names(),
            dir,
            inputs: 0,
        }
    }

    /// Runs one input on a new database; panics if a command panicked.
    fn run(&mut self, data: &[u8]) {
        self.inputs += 1;
        let path = self.dir.0.join(self.inputs.to_string());
        let mut cfg = self.cfg.clone();
        cfg.dir.clone_from(&path);
        #[allow(
            clippy::expect_used,
            reason = "a fresh directory that cannot be opened is the harness's failure, reported by panicking"
        )]
        let db = Db::open(&path, cfg.options.clone()).expect("open the fuzz database");
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run_on(db.clone(), cfg, data)
        }));
        let _ = db.close();
        let _ = std::fs::remove_dir_all(&path);
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    }

    fn run_on(&self, db: Db, cfg: Config, data: &[u8]) {
        let (before, _) = crate::panics::caught();
        let (tx, _rx) = tokio::sync::watch::channel(false);
        let shared = crate::shared::new_shared(db, cfg, 0, tx);
        // As the server does before anything writes (DBSIZE, INFO keyspace).
        shared.key_counts.start(&shared.db);
        let mut conn = Conn::new(&shared);
        for cmd in SETUP {
            let args: Vec<Bytes> = cmd
                .iter()
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect();
            conn.run(&shared, &args);
        }
        for cmd in large_setup() {
            conn.run(&shared, &cmd);
        }
        let mut src = Source::new(data);
        for _ in 0..MAX_STEPS {
            if src.is_empty() {
                break;
            }
            let mut input = Vec::new();
            let choice = src.byte();
            if choice < 40 {
                input.extend_from_slice(src.bytes(64));
                // Mostly ended by a newline, so that the requests after it
                // are framed again.
                if !choice.is_multiple_of(4) {
                    input.extend_from_slice(b"\r\n");
                }
            } else {
                let args = request(&mut src, &self.names);
                encode(&mut src, &args, &mut input);
            }
            // In up to 4 pieces: the parser sees requests arrive over
            // several reads. (Not byte by byte: an inline line is searched
            // from its start on every read, as in Redis, which is
            // quadratic in its length — bounded by its 64 KiB limit.)
            let mut rest = &input[..];
            for _ in 0..3 {
                if rest.is_empty() || src.is_empty() {
                    break;
                }
                let n = 1 + src.below(rest.len());
                conn.feed(&shared, &rest[..n]);
                rest = &rest[n..];
            }
            conn.feed(&shared, rest);
            if conn.closed {
                conn = Conn::new(&shared);
            }
        }
        shared.key_counts.stop();
        let (after, last) = crate::panics::caught();
        if after != before {
            panic!(
                "a command panicked on this input ({} panic(s)): {}",
                after - before,
                last.unwrap_or_default()
            );
        }
    }
}

/// The large keys of the keyspace: a hash, sorted set and list of 130
/// elements each (scanned in pages: more than the 128 Redis keeps compact).
fn large_setup() -> Vec<Vec<Bytes>> {
    let mut h = vec![Bytes::from_static(b"HSET"), Bytes::from_static(b"H")];
    let mut z = vec![Bytes::from_static(b"ZADD"), Bytes::from_static(b"Z")];
    let mut l = vec![Bytes::from_static(b"RPUSH"), Bytes::from_static(b"L")];
    for i in 0..130 {
        h.extend([Bytes::from(format!("f{i}")), Bytes::from(i.to_string())]);
        z.extend([Bytes::from(i.to_string()), Bytes::from(format!("m{i}"))]);
        l.push(Bytes::from(format!("e{i}")));
    }
    vec![h, z, l]
}

/// A connection as `conn.rs` runs it: its buffer, parser, state and the
/// replies it would write.
struct Conn {
    st: ConnState,
    parser: resp::RequestParser,
    buf: BytesMut,
    out: BytesMut,
    closed: bool,
}

impl Conn {
    fn new(shared: &Shared) -> Conn {
        let id = shared.next_client_id();
        let client = Arc::new(crate::clients::ClientHandle::new(
            id,
            "127.0.0.1:1".into(),
            "127.0.0.1:6379".into(),
            -1,
        ));
        Conn {
            st: ConnState {
                id,
                db: 0,
                proto: 2,
                authenticated: !shared.settings.auth_required(),
                name: None,
                tx: Default::default(),
                pubsub: Default::default(),
                client,
                block_args: None,
                reply: Default::default(),
                monitor: None,
            },
            parser: resp::RequestParser::default(),
            buf: BytesMut::new(),
            out: BytesMut::new(),
            closed: false,
        }
    }

    /// Appends `bytes` to the input and runs every complete request.
    fn feed(&mut self, shared: &Shared, bytes: &[u8]) {
        if self.closed {
            return;
        }
        self.buf.extend_from_slice(bytes);
        loop {
            match self
                .parser
                .parse(&mut self.buf, shared.settings.proto_max_bulk_len())
            {
                Ok(Some(args)) if args.is_empty() => {}
                Ok(Some(args)) => {
                    self.run(shared, &args);
                    if self.closed {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    Reply::Error(format!("ERR {}", e.0)).encode(self.st.proto, &mut self.out);
                    self.closed = true;
                    return;
                }
            }
        }
        if self.buf.len() > shared.settings.client_query_buffer_limit() {
            self.closed = true;
        }
    }

    /// Runs one request as `conn.rs` does (a blocking command that would
    /// wait answers nothing here; QUIT, SHUTDOWN and a kill close).
    fn run(&mut self, shared: &Shared, args: &[Bytes]) {
        self.st.pubsub.drain(self.st.proto, &mut self.out);
        let (reply, after) = commands::execute(shared, &mut self.st, args);
        match after {
            After::Continue => reply.encode(self.st.proto, &mut self.out),
            After::Block => {}
            After::Close | After::Shutdown => self.closed = true,
        }
        // The replies are not kept: only their encoding is exercised.
        self.out.clear();
    }
}

thread_local! {
    static FUZZER: RefCell<Option<Fuzzer>> = const { RefCell::new(None) };
}

/// The fuzz target: runs `data` as one connection's input against this
/// thread's in-process server (module docs). Panics if a command panicked
/// (or the parser or dispatch did).
pub fn server_dispatch(data: &[u8]) {
    FUZZER.with(|f| {
        let mut f = f.borrow_mut();
        f.get_or_insert_with(Fuzzer::new).run(data);
    });
}

#[cfg(test)]
mod tests;
