//! `batchkv serve` flags and the server's configuration: [`Config`] at
//! start; what CONFIG SET changes at runtime is in `config/runtime.rs`.

use std::path::PathBuf;
use std::str::FromStr;

use batchkv::{MemTableKind, Options};

use crate::keyspace::MAX_VALUE_LEN;
use crate::workers::Schedule;

pub use crate::security::DebugCommand;

mod runtime;
pub use runtime::{events, Settings};

/// WAL durability policy (Redis's `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendFsync {
    /// Every write is fsynced before it is acknowledged (`WriteOptions::sync`).
    Always,
    /// Writes are acknowledged after the WAL append; a task fsyncs the WAL
    /// once a second when anything was written.
    EverySec,
    /// The WAL is never fsynced by the server (the OS writes it back).
    No,
}

impl AppendFsync {
    /// The policy's name as `--appendfsync` and CONFIG GET spell it:
    /// `always`, `everysec` or `no`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::EverySec => "everysec",
            AppendFsync::No => "no",
        }
    }
}

impl FromStr for AppendFsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(AppendFsync::Always),
            "everysec" => Ok(AppendFsync::EverySec),
            "no" => Ok(AppendFsync::No),
            _ => Err(format!("expected always, everysec or no, got {s:?}")),
        }
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "yes" | "true" => Ok(true),
        "off" | "no" | "false" => Ok(false),
        _ => Err(format!("expected on or off, got {s:?}")),
    }
}

/// `batchkv serve`: a Redis-protocol server on a batchkv database.
/// Engine options come from the global `--options "k=v;..."`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Database directory (created if missing; the global --db also works).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Memtable: skiplist, vector or sorted_hash[:BUCKETS[:VECTOR_LIMIT]].
    #[allow(
        rustdoc::broken_intra_doc_links,
        reason = "this text is also `--help`, where the brackets mean optional parts"
    )]
    #[arg(long)]
    pub memtable: Option<String>,
    /// WAL fsync policy: always, everysec or no.
    #[arg(long, default_value = "everysec")]
    pub appendfsync: AppendFsync,
    /// Batch reads into multi_get and group pipelined SET/MSET into one write
    /// (on), or run every key and command alone (off).
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub batch: bool,
    /// Require AUTH with this password.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,
    /// Longest bulk string accepted in a request (bytes; at least 1 MiB,
    /// at most the longest value stored, 64 MiB minus 9 bytes).
    #[arg(long, default_value_t = MAX_VALUE_LEN)]
    pub proto_max_bulk_len: usize,
    /// Largest incomplete request a connection may hold (bytes; Redis's
    /// client-query-buffer-limit).
    #[arg(long, default_value_t = DEFAULT_QUERY_BUFFER_LIMIT)]
    pub client_query_buffer_limit: usize,
    /// Most bytes of unfinished requests all connections together may
    /// hold; the connection whose data goes past it is closed.
    #[arg(long, default_value_t = DEFAULT_MAX_PENDING_QUERY_BYTES)]
    pub max_pending_query_bytes: usize,
    /// Close a client idle for this many seconds (0: never; Redis's
    /// timeout).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
    /// Threads that run connections (default: the number of CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// How connections are scheduled over those threads: adaptive (each
    /// thread runs its own connections; they gather on one thread while it
    /// keeps up and spread when it saturates, and a busy thread's long
    /// reads run on an idle one: at light load a request wakes one thread,
    /// as in Redis), stealing (tokio's work-stealing runtime: an idle
    /// thread is woken to take a share of queued work) or pinned (each
    /// connection stays on the thread it was given in turn).
    #[arg(long, value_enum, default_value_t = Schedule::Adaptive)]
    pub runtime: Schedule,
    /// Protected mode (yes/no): without a password, refuse clients that
    /// are not on the loopback interface (Redis's DENIED error).
    #[arg(long, default_value = "yes", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub protected_mode: bool,
    /// Allow the DEBUG command: no, yes, or local (loopback clients only).
    #[arg(long, default_value = "no")]
    pub enable_debug_command: DebugCommand,
    /// Append log lines (the global `--log-level` and above; recovery
    /// reports, background errors) to FILE instead of stderr. The logger
    /// is installed by the `batchkv` binary, which reads this flag.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
}

/// Default [`Config::client_query_buffer_limit`]: 1 GiB, as in Redis.
pub const DEFAULT_QUERY_BUFFER_LIMIT: usize = 1 << 30;

/// Default [`Config::max_pending_query_bytes`]: 1 GiB, the per-client
/// default of `client-query-buffer-limit`. One client may still send any
/// request Redis accepts by default, but all clients together cannot make
/// the server hold more than that in unfinished requests (without it, the
/// bound is 1 GiB × `maxclients`).
pub const DEFAULT_MAX_PENDING_QUERY_BYTES: usize = 1 << 30;

/// The block cache `batchkv serve` gives the engine unless `--options`
/// sets `block_cache_size`: 1 GiB instead of the embedded library's
/// 32 MiB. A Redis-protocol server is expected to serve its working set
/// from memory (Redis keeps everything there; kvrocks defaults its RocksDB
/// block cache to 4 GB); with 32 MiB, a dataset of a few hundred MB turns
/// most reads into file reads and block decoding.
pub const SERVE_BLOCK_CACHE_SIZE: usize = 1 << 30;

/// The engine options `batchkv serve` starts from (before `--options`):
/// the embedded library's, except
/// - the block cache, [`SERVE_BLOCK_CACHE_SIZE`];
/// - SST data blocks with keys and values stored apart
///   (`separate_key_value_in_data_block`). A Redis server's reads are
///   point lookups (GET, MGET, EXISTS), and a block search then scans the
///   keys section alone: for 100-byte values about 5 cache lines per
///   lookup instead of about 15, which is what a batched lookup, bound by
///   the cache lines it fetches, pays for (measured in
///   `docs/perf/history/2026-11-24-serve-vs-redis.md`, "Separated data
///   blocks by default"). Tables written with either layout stay readable, so
///   `--options separate_key_value_in_data_block=false` can switch back at
///   any time.
/// - the skip-list memtable's point index (`memtable_point_index`): a
///   server's reads of data in the memtable are point lookups, which it
///   turns from a descent into a hash probe (MGET of 100 keys 57 → 23 µs
///   of CPU, HMGET of 5 fields −23 %, at about the noise's cost to writes:
///   `docs/perf/history/2026-11-30-skiplist-point-index.md`). It takes an
///   eighth of `write_buffer_size` per memtable;
///   `--options memtable_point_index=false` turns it off.
pub fn serve_default_options() -> Options {
    Options {
        block_cache_size: SERVE_BLOCK_CACHE_SIZE,
        separate_key_value_in_data_block: true,
        memtable_point_index: true,
        ..Options::default()
    }
}

/// Everything the server needs to run. The fields are the values at
/// start: CONFIG SET changes `requirepass`, `maxclients`, `timeout`,
/// `appendfsync`, `proto_max_bulk_len`, `client_query_buffer_limit` and
/// `protected_mode` while the server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The database directory (created if missing).
    pub dir: PathBuf,
    /// The engine options the database is opened with ([`Config::new`]
    /// starts from the engine's defaults with a 1 GiB block cache and
    /// data blocks that store keys and values apart).
    pub options: Options,
    /// The address to listen on (`127.0.0.1` by default).
    pub bind: String,
    /// The TCP port to listen on; 0 picks a free one, which
    /// [`Server::addr`](crate::Server::addr) reports.
    pub port: u16,
    /// When the server fsyncs the WAL ([`AppendFsync`]).
    pub appendfsync: AppendFsync,
    /// Whether reads are batched into `multi_get` and pipelined writes
    /// grouped into one engine write (true), or every key and command runs
    /// alone (false).
    pub batch: bool,
    /// The password AUTH must give before other commands run (`None`: no
    /// AUTH needed).
    pub requirepass: Option<String>,
    /// Most clients connected at once; a connection beyond it is answered
    /// `-ERR max number of clients reached` and closed.
    pub maxclients: usize,
    /// Longest bulk string accepted in a request, in bytes (at least 1 MiB,
    /// as `serve` and CONFIG SET check, at most the longest value stored,
    /// 64 MiB minus 9 bytes); a longer one is a protocol error. Below
    /// 1 MiB (tests only) a batched BITFIELD_RO may read a field past it
    /// that the limit would refuse.
    pub proto_max_bulk_len: usize,
    /// Most bytes of requests not yet complete that a connection may have
    /// sent (Redis's `client-query-buffer-limit`); beyond it the connection
    /// gets a protocol error and is closed. Bounds the memory one client
    /// can make the server hold with one huge request of many arguments.
    pub client_query_buffer_limit: usize,
    /// Most bytes of unfinished requests (received, not yet complete) all
    /// connections together may hold; a connection whose read would take
    /// the total past it gets a protocol error and is closed.
    pub max_pending_query_bytes: usize,
    /// Seconds after which an idle client is closed (0: never); CONFIG SET
    /// `timeout` changes it.
    pub timeout: u64,
    /// Threads that run connections (at least 1 is used).
    pub threads: usize,
    /// How connections are scheduled over them (`workers.rs`).
    pub schedule: Schedule,
    /// Tests only: under the adaptive schedule, every connection moves to
    /// the next thread at every request boundary where it can, and every
    /// batched read runs on the next thread (`balance.rs`).
    #[doc(hidden)]
    pub churn: bool,
    /// Stop on SIGTERM/SIGINT (the CLI); tests leave it off.
    pub handle_signals: bool,
    /// Redis's `protected-mode`: with no password set, clients from other
    /// hosts than this one are refused (`security.rs`).
    pub protected_mode: bool,
    /// Redis's `enable-debug-command`.
    pub enable_debug_command: DebugCommand,
}

impl Config {
    /// A configuration for `dir` with the defaults of `batchkv serve`, on
    /// 127.0.0.1 and a free port.
    pub fn new(dir: impl Into<PathBuf>) -> Config {
        Config {
            dir: dir.into(),
            options: serve_default_options(),
            bind: "127.0.0.1".into(),
            port: 0,
            appendfsync: AppendFsync::EverySec,
            batch: true,
            requirepass: None,
            maxclients: 10_000,
            proto_max_bulk_len: MAX_VALUE_LEN,
            client_query_buffer_limit: DEFAULT_QUERY_BUFFER_LIMIT,
            max_pending_query_bytes: DEFAULT_MAX_PENDING_QUERY_BYTES,
            timeout: 0,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            schedule: Schedule::Adaptive,
            churn: false,
            handle_signals: false,
            protected_mode: true,
            enable_debug_command: DebugCommand::No,
        }
    }

    /// Builds the configuration from the command line: `db` is the global
    /// `--db`, `options` the global `--options`.
    pub fn from_args(
        args: ServeArgs,
        db: Option<PathBuf>,
        options: Option<&str>,
    ) -> Result<Config, String> {
        let dir = args
            .dir
            .or(db)
            .ok_or("serve needs --dir DIR (the database directory)")?;
        let mut cfg = Config::new(dir);
        if let Some(o) = options {
            cfg.options
                .apply_option_string(o)
                .map_err(|e| format!("--options: {e}"))?;
        }
        if let Some(m) = args.memtable {
            cfg.options.memtable =
                MemTableKind::from_str(&m).map_err(|e| format!("--memtable: {e}"))?;
        }
        cfg.bind = args.bind;
        cfg.port = args.port;
        cfg.appendfsync = args.appendfsync;
        cfg.batch = args.batch;
        cfg.requirepass = args.requirepass;
        cfg.maxclients = args.maxclients;
        if args.proto_max_bulk_len > MAX_VALUE_LEN {
            return Err(format!(
                "--proto-max-bulk-len: at most {MAX_VALUE_LEN} (the longest value stored)"
            ));
        }
        // Redis's minimum, as CONFIG SET's (batched BITFIELD_RO relies on it).
        let least = crate::keyspace::MIN_PROTO_MAX_BULK_LEN;
        if args.proto_max_bulk_len < least {
            return Err(format!("--proto-max-bulk-len: at least {least} (1mb)"));
        }
        if args.timeout > i32::MAX as u64 {
            return Err(format!("--timeout: at most {}", i32::MAX));
        }
        cfg.proto_max_bulk_len = args.proto_max_bulk_len;
        cfg.client_query_buffer_limit = args.client_query_buffer_limit;
        cfg.protected_mode = args.protected_mode;
        cfg.enable_debug_command = args.enable_debug_command;
        cfg.max_pending_query_bytes = args.max_pending_query_bytes;
        cfg.timeout = args.timeout;
        if let Some(t) = args.threads {
            cfg.threads = t;
        }
        cfg.schedule = args.runtime;
        cfg.handle_signals = true;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn parse(argv: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(cli.args, None, Some("write_buffer_size=1MB"))
    }

    #[test]
    fn options_override_the_serve_defaults() {
        let cli = Cli::try_parse_from(["serve", "--dir", "/tmp/x"]).unwrap();
        let c = Config::from_args(
            cli.args,
            None,
            Some("block_cache_size=8MB;separate_key_value_in_data_block=false"),
        )
        .unwrap();
        assert_eq!(c.options.block_cache_size, 8 << 20);
        assert!(!c.options.separate_key_value_in_data_block);
        let cli = Cli::try_parse_from(["serve", "--dir", "/tmp/x"]).unwrap();
        assert_eq!(
            Config::from_args(cli.args, None, None)
                .unwrap()
                .options
                .block_cache_size,
            SERVE_BLOCK_CACHE_SIZE
        );
        let cli = Cli::try_parse_from(["serve", "--dir", "/tmp/x"]).unwrap();
        let bad = Config::from_args(cli.args, None, Some("block_cache_size=lots"));
        assert!(bad.unwrap_err().contains("block_cache_size"));
    }

    #[test]
    fn flags_map_to_the_config() {
        let c = parse(&[
            "--dir",
            "/tmp/x",
            "--batch",
            "off",
            "--appendfsync",
            "always",
            "--memtable",
            "sorted_hash:1000",
            "--port",
            "0",
            "--client-query-buffer-limit",
            "65536",
            "--max-pending-query-bytes",
            "1000000",
            "--timeout",
            "30",
        ])
        .unwrap();
        assert_eq!(c.max_pending_query_bytes, 1_000_000);
        assert_eq!(c.timeout, 30);
        assert!(!c.batch);
        assert_eq!(c.client_query_buffer_limit, 65536);
        assert_eq!(c.appendfsync, AppendFsync::Always);
        assert_eq!(c.options.write_buffer_size, 1 << 20);
        assert!(matches!(
            c.options.memtable,
            MemTableKind::SortedHash { buckets: 1000, .. }
        ));
        assert_eq!(c.options.block_cache_size, SERVE_BLOCK_CACHE_SIZE);
        let d = parse(&["--dir", "/tmp/x"]).unwrap();
        assert_eq!(d.options.block_cache_size, SERVE_BLOCK_CACHE_SIZE);
        assert!(d.options.separate_key_value_in_data_block);
        assert!(d.options.memtable_point_index);
        assert!(d.batch);
        assert_eq!(d.appendfsync, AppendFsync::EverySec);
        assert_eq!((d.bind.as_str(), d.port), ("127.0.0.1", 6379));
        assert_eq!(d.client_query_buffer_limit, 1 << 30);
        assert!(d.protected_mode);
        assert_eq!(d.enable_debug_command, DebugCommand::No);
        let e = parse(&[
            "--dir",
            "/tmp/x",
            "--protected-mode",
            "no",
            "--enable-debug-command",
            "local",
        ])
        .unwrap();
        assert!(!e.protected_mode);
        assert_eq!(e.enable_debug_command, DebugCommand::Local);
        assert_eq!(d.max_pending_query_bytes, 1 << 30);
        assert_eq!(d.timeout, 0);
        assert_eq!(d.proto_max_bulk_len, MAX_VALUE_LEN);
    }

    #[test]
    fn bad_flags_are_refused() {
        assert!(parse(&[]).unwrap_err().contains("--dir"));
        assert!(parse(&["--dir", "x", "--batch", "maybe"]).is_err());
        assert!(parse(&["--dir", "x", "--appendfsync", "sometimes"]).is_err());
        assert!(parse(&["--dir", "x", "--protected-mode", "maybe"]).is_err());
        assert!(parse(&["--dir", "x", "--enable-debug-command", "always"]).is_err());
        assert!(parse(&["--dir", "x", "--memtable", "btree"])
            .unwrap_err()
            .contains("--memtable"));
        let too_long = (MAX_VALUE_LEN + 1).to_string();
        assert!(parse(&["--dir", "x", "--proto-max-bulk-len", &too_long])
            .unwrap_err()
            .contains("--proto-max-bulk-len"));
        assert!(parse(&["--dir", "x", "--proto-max-bulk-len", "1048575"])
            .unwrap_err()
            .contains("at least 1048576"));
        assert!(parse(&["--dir", "x", "--proto-max-bulk-len", "1048576"]).is_ok());
        assert!(parse(&["--dir", "x", "--timeout", "-1"]).is_err());
    }
}
