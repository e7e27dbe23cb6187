//! The settings CONFIG GET shows and CONFIG SET changes while the server
//! runs ([`Settings`]), with Redis 7's parameter names, value syntax,
//! ranges and error texts.
//!
//! Three kinds of parameters:
//! - effective: `requirepass`, `maxclients`, `timeout`,
//!   `slowlog-log-slower-than`, `slowlog-max-len`, `appendfsync`,
//!   `proto-max-bulk-len`, `client-query-buffer-limit`, `protected-mode`,
//!   `client-output-buffer-limit` (its `normal` class; the `replica` and
//!   `pubsub` classes are checked and shown only), `hll-sparse-max-bytes`,
//!   `notify-keyspace-events`, `stream-node-max-entries`. Hot paths read them
//!   from atomics, never under a lock.
//! - echoed: Redis's in-memory encoding thresholds and a few settings
//!   clients set (`save`, `appendonly`, `maxmemory`, ...). batchkv has no
//!   such encodings, snapshots or eviction; the value is checked as Redis
//!   checks it and stored, so CONFIG GET shows what was set (and OBJECT
//!   ENCODING reports encodings by the thresholds, `commands::object`).
//! - read-only: `databases`, `port`, `bind`, `dir`,
//!   `enable-debug-command`, and parameters read-only in Redis too that
//!   show what holds for batchkv (`daemonize no`, `replicaof` empty, …):
//!   CONFIG SET answers "can't set immutable config".

use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use super::{AppendFsync, Config};
use crate::keyspace::{glob_match, NUM_DBS};

/// How a parameter's value is checked and shown.
#[derive(Clone, Copy)]
enum Kind {
    /// An integer (no unit) in `[min, max]`.
    Int(i64, i64),
    /// A memory amount (`1gb`, `64mb`, `1k`, plain bytes) in `[min, max]`,
    /// shown in bytes.
    Mem(u64, u64),
    /// One of these names (case-insensitive), shown lowercase.
    Enum(&'static [&'static str]),
    /// `yes` or `no`.
    Bool,
    /// Any text.
    Text,
    /// `save`: pairs of seconds (≥ 1) and changes (≥ 0).
    Save,
    /// `notify-keyspace-events`: event class characters.
    Events,
    /// `client-output-buffer-limit`: `class hard soft seconds` groups.
    OutputLimits,
    /// Shown, never set.
    Immutable,
}

/// What a parameter's value does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Effect {
    /// Nothing: CONFIG GET shows it.
    Echo,
    RequirePass,
    MaxClients,
    Timeout,
    SlowlogSlowerThan,
    SlowlogMaxLen,
    AppendFsync,
    ProtoMaxBulkLen,
    QueryBufferLimit,
    ProtectedMode,
    OutputBufferLimit,
    HllSparseMaxBytes,
    NotifyKeyspaceEvents,
    StreamNodeMaxEntries,
}

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    effect: Effect,
    /// The starting value of an echoed parameter (effective and read-only
    /// ones start from the [`Config`]).
    default: &'static str,
}

const fn echo(
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
) -> Param {
    Param {
        name,
        alias,
        kind,
        effect: Effect::Echo,
        default,
    }
}

const fn live(name: &'static str, kind: Kind, effect: Effect) -> Param {
    Param {
        name,
        alias: None,
        kind,
        effect,
        default: "",
    }
}

const I64_MAX: i64 = i64::MAX;
/// Redis's default `hll-sparse-max-bytes`.
const DEFAULT_HLL_SPARSE_MAX: usize = 3000;
/// Redis's default `stream-node-max-entries`.
const DEFAULT_STREAM_NODE_MAX_ENTRIES: u64 = 100;
const I32: Kind = Kind::Int(i32::MIN as i64, i32::MAX as i64);
const SIZE: Kind = Kind::Int(0, I64_MAX);
/// Redis's memory-policy names, in its order (the error lists them so).
const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const FSYNC: &[&str] = &["everysec", "always", "no"];
/// The most a connection's bulk length may be set to: the longest value
/// the server stores (Redis allows up to 2^63-1).
const MAX_BULK: u64 = crate::keyspace::MAX_VALUE_LEN as u64;

/// Every parameter, in the order CONFIG GET lists matches.
static PARAMS: &[Param] = &[
    live("requirepass", Kind::Text, Effect::RequirePass),
    live(
        "maxclients",
        Kind::Int(1, u32::MAX as i64),
        Effect::MaxClients,
    ),
    live("timeout", Kind::Int(0, i32::MAX as i64), Effect::Timeout),
    live(
        "slowlog-log-slower-than",
        Kind::Int(-1, I64_MAX),
        Effect::SlowlogSlowerThan,
    ),
    live(
        "slowlog-max-len",
        Kind::Int(0, I64_MAX),
        Effect::SlowlogMaxLen,
    ),
    echo("appendonly", None, Kind::Bool, "yes"),
    live("appendfsync", Kind::Enum(FSYNC), Effect::AppendFsync),
    live(
        "proto-max-bulk-len",
        Kind::Mem(crate::keyspace::MIN_PROTO_MAX_BULK_LEN as u64, MAX_BULK),
        Effect::ProtoMaxBulkLen,
    ),
    live(
        "client-query-buffer-limit",
        Kind::Mem(1 << 20, I64_MAX as u64),
        Effect::QueryBufferLimit,
    ),
    live("protected-mode", Kind::Bool, Effect::ProtectedMode),
    live("enable-debug-command", Kind::Immutable, Effect::Echo),
    live(
        "client-output-buffer-limit",
        Kind::OutputLimits,
        Effect::OutputBufferLimit,
    ),
    live(
        "notify-keyspace-events",
        Kind::Events,
        Effect::NotifyKeyspaceEvents,
    ),
    echo("save", None, Kind::Save, ""),
    echo("maxmemory", None, Kind::Mem(0, u64::MAX), "0"),
    echo("maxmemory-policy", None, Kind::Enum(POLICIES), "noeviction"),
    echo("maxmemory-samples", None, Kind::Int(1, 64), "5"),
    echo(
        "busy-reply-threshold",
        Some("lua-time-limit"),
        Kind::Int(0, I64_MAX),
        "5000",
    ),
    echo(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        SIZE,
        "512",
    ),
    echo(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        SIZE,
        "64",
    ),
    echo("set-max-intset-entries", None, SIZE, "512"),
    echo(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        SIZE,
        "128",
    ),
    echo(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        SIZE,
        "64",
    ),
    echo(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        I32,
        "-2",
    ),
    echo(
        "list-compress-depth",
        None,
        Kind::Int(0, i32::MAX as i64),
        "0",
    ),
    echo(
        "stream-node-max-bytes",
        None,
        Kind::Mem(0, I64_MAX as u64),
        "4096",
    ),
    live(
        "stream-node-max-entries",
        Kind::Int(0, I64_MAX),
        Effect::StreamNodeMaxEntries,
    ),
    live(
        "hll-sparse-max-bytes",
        Kind::Mem(0, I64_MAX as u64),
        Effect::HllSparseMaxBytes,
    ),
    echo("lfu-log-factor", None, Kind::Int(0, i32::MAX as i64), "10"),
    echo("lfu-decay-time", None, Kind::Int(0, i32::MAX as i64), "1"),
    echo("activerehashing", None, Kind::Bool, "yes"),
    echo("lazyfree-lazy-user-del", None, Kind::Bool, "no"),
    echo("lazyfree-lazy-user-flush", None, Kind::Bool, "no"),
    live("databases", Kind::Immutable, Effect::Echo),
    live("port", Kind::Immutable, Effect::Echo),
    live("bind", Kind::Immutable, Effect::Echo),
    live("dir", Kind::Immutable, Effect::Echo),
    // Read-only in Redis too, shown as what holds for batchkv (it does
    // not daemonize, listen on a Unix socket, replicate, cluster, load
    // modules or ACL files, or set its process title).
    echo("daemonize", None, Kind::Immutable, "no"),
    echo("supervised", None, Kind::Immutable, "no"),
    echo("pidfile", None, Kind::Immutable, ""),
    echo("unixsocket", None, Kind::Immutable, ""),
    echo("unixsocketperm", None, Kind::Immutable, "0"),
    echo("replicaof", Some("slaveof"), Kind::Immutable, ""),
    echo("cluster-enabled", None, Kind::Immutable, "no"),
    echo("aclfile", None, Kind::Immutable, ""),
    echo("enable-module-command", None, Kind::Immutable, "no"),
    echo("set-proc-title", None, Kind::Immutable, "no"),
    echo("always-show-logo", None, Kind::Immutable, "no"),
    echo("syslog-enabled", None, Kind::Immutable, "no"),
];

/// The runtime settings (module docs). Shared by all connections.
pub struct Settings {
    maxclients: AtomicUsize,
    timeout: AtomicU64,
    slowlog_log_slower_than: AtomicI64,
    slowlog_max_len: AtomicUsize,
    appendfsync: AtomicU8,
    proto_max_bulk_len: AtomicUsize,
    client_query_buffer_limit: AtomicUsize,
    protected_mode: AtomicBool,
    /// `client-output-buffer-limit normal`: hard and soft limits (bytes,
    /// 0 = none) and the soft limit's seconds.
    output_hard: AtomicU64,
    output_soft: AtomicU64,
    output_soft_seconds: AtomicU64,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog longer turns dense.
    hll_sparse_max_bytes: AtomicUsize,
    /// `notify-keyspace-events`: the [`events`] flags (`notify.rs`).
    notify_keyspace_events: AtomicU32,
    /// `stream-node-max-entries`: the node size approximate stream
    /// trimming removes whole nodes of (`commands::streams`).
    stream_node_max_entries: AtomicU64,
    requirepass: RwLock<Option<String>>,
    /// Descriptors kept for other uses than clients (`limits.rs`): a
    /// higher `maxclients` must fit the descriptor limit with them.
    reserved_fds: u64,
    /// Each parameter's value as CONFIG GET shows it, by index in
    /// [`PARAMS`]. Also serializes CONFIG SETs (all-or-nothing).
    values: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The values are replaced whole; a panic cannot leave one half-written.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn fsync_code(a: AppendFsync) -> u8 {
    match a {
        AppendFsync::Always => 0,
        AppendFsync::EverySec => 1,
        AppendFsync::No => 2,
    }
}

impl Settings {
    /// The settings of a server started with `cfg`, listening on `port`.
    pub fn new(cfg: &Config, port: u16) -> Settings {
        let values = PARAMS
            .iter()
            .map(|p| match p.name {
                "requirepass" => cfg.requirepass.clone().unwrap_or_default(),
                "maxclients" => cfg.maxclients.to_string(),
                "timeout" => cfg.timeout.to_string(),
                "slowlog-log-slower-than" => "10000".into(),
                "slowlog-max-len" => "128".into(),
                "appendfsync" => cfg.appendfsync.as_str().into(),
                "proto-max-bulk-len" => cfg.proto_max_bulk_len.to_string(),
                "client-query-buffer-limit" => cfg.client_query_buffer_limit.to_string(),
                "protected-mode" => yes_no(cfg.protected_mode).into(),
                "enable-debug-command" => cfg.enable_debug_command.as_str().into(),
                "client-output-buffer-limit" => DEFAULT_OUTPUT_LIMITS.into(),
                "hll-sparse-max-bytes" => DEFAULT_HLL_SPARSE_MAX.to_string(),
                "notify-keyspace-events" => String::new(),
                "stream-node-max-entries" => DEFAULT_STREAM_NODE_MAX_ENTRIES.to_string(),
                "databases" => NUM_DBS.to_string(),
                "port" => port.to_string(),
                "bind" => cfg.bind.clone(),
                "dir" => cfg.dir.display().to_string(),
                _ => p.default.to_string(),
            })
            .collect();
        Settings {
            maxclients: AtomicUsize::new(cfg.maxclients),
            reserved_fds: crate::limits::reserved_fds(cfg.options.max_open_files),
            timeout: AtomicU64::new(cfg.timeout),
            slowlog_log_slower_than: AtomicI64::new(10_000),
            slowlog_max_len: AtomicUsize::new(128),
            appendfsync: AtomicU8::new(fsync_code(cfg.appendfsync)),
            proto_max_bulk_len: AtomicUsize::new(cfg.proto_max_bulk_len),
            client_query_buffer_limit: AtomicUsize::new(cfg.client_query_buffer_limit),
            protected_mode: AtomicBool::new(cfg.protected_mode),
            output_hard: AtomicU64::new(0),
            output_soft: AtomicU64::new(0),
            output_soft_seconds: AtomicU64::new(0),
            hll_sparse_max_bytes: AtomicUsize::new(DEFAULT_HLL_SPARSE_MAX),
            notify_keyspace_events: AtomicU32::new(0),
            stream_node_max_entries: AtomicU64::new(DEFAULT_STREAM_NODE_MAX_ENTRIES),
            requirepass: RwLock::new(cfg.requirepass.clone().filter(|p| !p.is_empty())),
            values: Mutex::new(values),
        }
    }

    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed)
    }

    /// Seconds a client may stay idle before it is closed (0: forever).
    pub fn timeout(&self) -> u64 {
        self.timeout.load(Ordering::Relaxed)
    }

    /// Commands that take at least this many microseconds are logged;
    /// negative: none.
    pub fn slowlog_log_slower_than(&self) -> i64 {
        self.slowlog_log_slower_than.load(Ordering::Relaxed)
    }

    pub fn slowlog_max_len(&self) -> usize {
        self.slowlog_max_len.load(Ordering::Relaxed)
    }

    pub fn appendfsync(&self) -> AppendFsync {
        match self.appendfsync.load(Ordering::Relaxed) {
            0 => AppendFsync::Always,
            1 => AppendFsync::EverySec,
            _ => AppendFsync::No,
        }
    }

    pub fn proto_max_bulk_len(&self) -> usize {
        self.proto_max_bulk_len.load(Ordering::Relaxed)
    }

    /// `hll-sparse-max-bytes` (`hll.rs`).
    /// The keyspace notification classes to publish (`notify.rs`; 0:
    /// none).
    pub fn notify_keyspace_events(&self) -> u32 {
        self.notify_keyspace_events.load(Ordering::Relaxed)
    }

    /// `stream-node-max-entries` (0: no limit by count).
    pub fn stream_node_max_entries(&self) -> u64 {
        self.stream_node_max_entries.load(Ordering::Relaxed)
    }

    pub fn hll_sparse_max_bytes(&self) -> usize {
        self.hll_sparse_max_bytes.load(Ordering::Relaxed)
    }

    pub fn client_query_buffer_limit(&self) -> usize {
        self.client_query_buffer_limit.load(Ordering::Relaxed)
    }

    /// Redis's `protected-mode` (`security::denied`).
    pub fn protected_mode(&self) -> bool {
        self.protected_mode.load(Ordering::Relaxed)
    }

    /// `client-output-buffer-limit` for normal clients.
    pub fn output_limits(&self) -> OutputLimits {
        OutputLimits {
            hard: self.output_hard.load(Ordering::Relaxed),
            soft: self.output_soft.load(Ordering::Relaxed),
            soft_seconds: self.output_soft_seconds.load(Ordering::Relaxed),
        }
    }

    /// The password of the default user (`None`: no password needed).
    pub fn requirepass(&self) -> Option<String> {
        self.requirepass
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether a new connection must authenticate first.
    pub fn auth_required(&self) -> bool {
        self.requirepass
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// CONFIG GET: `(name, value)` of every parameter matching one of the
    /// `patterns` (globs, case-insensitive; a name without glob characters
    /// is looked up as given and answered under that spelling, as Redis
    /// does), without repeats.
    pub fn get(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let values = lock(&self.values);
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |name: String, i: usize| {
            if !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                out.push((name, values[i].clone()));
            }
        };
        for pat in patterns {
            if !pat.iter().any(|c| matches!(c, b'*' | b'?' | b'[')) {
                if let Some((i, _)) = find(pat) {
                    push(String::from_utf8_lossy(pat).into_owned(), i);
                }
                continue;
            }
            let pat = pat.to_ascii_lowercase();
            for (i, p) in PARAMS.iter().enumerate() {
                for name in std::iter::once(p.name).chain(p.alias) {
                    if glob_match(&pat, name.as_bytes()) {
                        push(name.to_string(), i);
                    }
                }
            }
        }
        out
    }

    /// CONFIG SET of `pairs` (parameter, value, ...; an even count): all
    /// or nothing. The error is Redis's text, without the `ERR ` prefix.
    pub fn set(&self, pairs: &[&[u8]]) -> Result<(), String> {
        if !pairs.len().is_multiple_of(2) {
            return Err("syntax error".into());
        }
        // First every name (unknown, read-only, repeated), then every value.
        let mut targets: Vec<(usize, bool)> = Vec::new();
        let mut failure: Option<String> = None;
        for pair in pairs.chunks(2) {
            let given = String::from_utf8_lossy(pair[0]);
            let Some(target) = find(pair[0]) else {
                return Err(format!(
                    "Unknown option or number of arguments for CONFIG SET - '{given}'"
                ));
            };
            if failure.is_some() {
                continue;
            }
            if matches!(PARAMS[target.0].kind, Kind::Immutable) {
                failure = Some(set_failed(&given, "can't set immutable config"));
            } else if targets.contains(&target) {
                failure = Some(set_failed(&given, "duplicate parameter"));
            }
            targets.push(target);
        }
        if let Some(f) = failure {
            return Err(f);
        }
        let mut parsed = Vec::with_capacity(targets.len());
        for (pair, &(i, _)) in pairs.chunks(2).zip(&targets) {
            let value = parse(PARAMS[i].kind, pair[1])
                .map_err(|e| set_failed(&String::from_utf8_lossy(pair[0]), &e))?;
            parsed.push((i, value, pair[1]));
        }
        for (i, value, _) in &parsed {
            if matches!(PARAMS[*i].effect, Effect::MaxClients) {
                self.check_maxclients(value)?;
            }
        }
        let mut values = lock(&self.values);
        for (i, mut value, given) in parsed {
            if matches!(PARAMS[i].kind, Kind::OutputLimits) {
                // Classes not named keep their limits.
                value = output_limits::merge(&values[i], &value);
            }
            self.apply(PARAMS[i].effect, &value, given);
            values[i] = value;
        }
        Ok(())
    }

    /// As Redis: a `maxclients` above the current one raises the
    /// process's descriptor limit if it must, and is refused, naming the
    /// most that fits, if the limit cannot be raised that far.
    fn check_maxclients(&self, value: &str) -> Result<(), String> {
        let Ok(wanted) = value.parse::<usize>() else {
            return Ok(());
        };
        if wanted <= self.maxclients() {
            return Ok(());
        }
        let why = match crate::limits::adjust_open_files(wanted, self.reserved_fds) {
            Ok(fits) if fits >= wanted => return Ok(()),
            Ok(fits) => format!(
                "The operating system is not able to handle the specified number of clients, \
                 try with {fits}"
            ),
            Err(e) => e.to_string(),
        };
        Err(set_failed("maxclients", &why))
    }

    /// Makes `value` (already checked and shown as CONFIG GET shows it;
    /// `given` as set) take effect.
    fn apply(&self, effect: Effect, value: &str, given: &[u8]) {
        let int = || value.parse::<i64>().unwrap_or(0);
        let size = || usize::try_from(value.parse::<u64>().unwrap_or(0)).unwrap_or(usize::MAX);
        match effect {
            Effect::Echo => {}
            Effect::RequirePass => {
                *self
                    .requirepass
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) =
                    (!value.is_empty()).then(|| value.to_string());
            }
            Effect::MaxClients => self.maxclients.store(size(), Ordering::Relaxed),
            Effect::Timeout => self.timeout.store(int().max(0) as u64, Ordering::Relaxed),
            Effect::SlowlogSlowerThan => {
                self.slowlog_log_slower_than.store(int(), Ordering::Relaxed)
            }
            Effect::SlowlogMaxLen => self.slowlog_max_len.store(size(), Ordering::Relaxed),
            Effect::AppendFsync => {
                let a = value.parse().unwrap_or(AppendFsync::EverySec);
                self.appendfsync.store(fsync_code(a), Ordering::Relaxed);
            }
            Effect::ProtoMaxBulkLen => self.proto_max_bulk_len.store(size(), Ordering::Relaxed),
            Effect::QueryBufferLimit => self
                .client_query_buffer_limit
                .store(size(), Ordering::Relaxed),
            Effect::HllSparseMaxBytes => self.hll_sparse_max_bytes.store(size(), Ordering::Relaxed),
            Effect::StreamNodeMaxEntries => self
                .stream_node_max_entries
                .store(int().max(0) as u64, Ordering::Relaxed),
            Effect::NotifyKeyspaceEvents => {
                // As set: the shown form drops `n` next to `A`, as Redis's.
                let flags = events::parse(given).unwrap_or(0);
                self.notify_keyspace_events.store(flags, Ordering::Relaxed)
            }
            Effect::ProtectedMode => self.protected_mode.store(value == "yes", Ordering::Relaxed),
            Effect::OutputBufferLimit => {
                let l = output_limits::normal(value);
                self.output_hard.store(l.hard, Ordering::Relaxed);
                self.output_soft.store(l.soft, Ordering::Relaxed);
                self.output_soft_seconds
                    .store(l.soft_seconds, Ordering::Relaxed);
            }
        }
    }

    /// Whether `param` (a CONFIG SET argument) names a parameter whose
    /// value must not be shown in SLOWLOG (`requirepass`).
    pub fn is_sensitive(param: &[u8]) -> bool {
        param.eq_ignore_ascii_case(b"requirepass")
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn set_failed(arg: &str, why: &str) -> String {
    format!("CONFIG SET failed (possibly related to argument '{arg}') - {why}")
}

/// The parameter named `name` (case-insensitive): its index and whether
/// `name` is its alias.
fn find(name: &[u8]) -> Option<(usize, bool)> {
    PARAMS.iter().enumerate().find_map(|(i, p)| {
        if p.name.as_bytes().eq_ignore_ascii_case(name) {
            Some((i, false))
        } else if p
            .alias
            .is_some_and(|a| a.as_bytes().eq_ignore_ascii_case(name))
        {
            Some((i, true))
        } else {
            None
        }
    })
}

/// Checks `value` as Redis checks a parameter of `kind`; returns what
/// CONFIG GET will show, or Redis's reason.
fn parse(kind: Kind, value: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(value);
    match kind {
        Kind::Int(min, max) => {
            let n = crate::commands::parse_int(value)
                .ok_or("argument couldn't be parsed into an integer")?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Mem(min, max) => {
            let n = parse_memory(value).ok_or("argument must be a memory value")?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Enum(names) => names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(&text))
            .map(|n| n.to_string())
            .ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    names.join(", ")
                )
            }),
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_string()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Text => Ok(text.into_owned()),
        Kind::Save => parse_save(&text).ok_or_else(|| "Invalid save parameters".into()),
        Kind::Events => events::parse(value)
            .map(events::to_string)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        Kind::OutputLimits => output_limits::parse(&text),
        Kind::Immutable => Err("can't set immutable config".into()),
    }
}

/// A memory amount as Redis's `memtoull`: digits, then an optional unit
/// `b`, `k` (1000), `kb` (1024), `m`, `mb`, `g`, `gb` (any case). Values
/// past 2^64-1 saturate.
fn parse_memory(v: &[u8]) -> Option<u64> {
    let digits = v.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = v[digits..].to_ascii_lowercase();
    let mul: u64 = match unit.as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1 << 20,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1 << 30,
        _ => return None,
    };
    let n = v[..digits].iter().fold(0u64, |n, &c| {
        n.saturating_mul(10).saturating_add(u64::from(c - b'0'))
    });
    Some(n.saturating_mul(mul))
}

/// `save`: "" (no snapshots) or pairs "seconds changes" separated by
/// single spaces (as Redis splits it: two spaces make an empty item, which
/// counts as 0), seconds ≥ 1 and changes ≥ 0; shown with the numbers as
/// parsed.
fn parse_save(v: &str) -> Option<String> {
    if v.is_empty() {
        return Some(String::new());
    }
    let parts: Vec<&str> = v.split(' ').collect();
    if !parts.len().is_multiple_of(2) {
        return None;
    }
    let mut nums = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let n: i64 = if p.is_empty() { 0 } else { p.parse().ok()? };
        if n < i64::from(i % 2 == 0) {
            return None;
        }
        nums.push(n.to_string());
    }
    Some(nums.join(" "))
}

/// `client-output-buffer-limit` as Redis shows it at start.
const DEFAULT_OUTPUT_LIMITS: &str =
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// A normal client's output buffer limits (`client-output-buffer-limit
/// normal HARD SOFT SECONDS`): over `hard` bytes, or over `soft` bytes for
/// more than `soft_seconds`, the client is disconnected; 0 = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputLimits {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// `client-output-buffer-limit` values, with Redis 7's syntax and errors:
/// groups of `class hard soft seconds` separated by single spaces; class
/// `normal`, `replica` (shown as `slave`), `slave` or `pubsub` (any case);
/// limits as memory amounts; the whole value accepted or refused.
mod output_limits {
    use super::{parse_memory, OutputLimits};

    /// The classes in the order CONFIG GET shows them.
    const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

    fn class(name: &str) -> Option<usize> {
        match name.to_ascii_lowercase().as_str() {
            "normal" => Some(0),
            "slave" | "replica" => Some(1),
            "pubsub" => Some(2),
            _ => None,
        }
    }

    /// Checks a CONFIG SET value: the groups it sets, each as `class hard
    /// soft seconds` with the numbers as parsed (empty: no change).
    pub fn parse(v: &str) -> Result<String, String> {
        if v.is_empty() {
            return Ok(String::new());
        }
        let words: Vec<&str> = v.split(' ').collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let mut out = Vec::with_capacity(words.len() / 4);
        for g in words.chunks(4) {
            let c = class(g[0])
                .ok_or("Invalid client class specified in buffer limit configuration.")?;
            let bad =
                || "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            let hard = parse_memory(g[1].as_bytes()).ok_or_else(bad)?;
            let soft = parse_memory(g[2].as_bytes()).ok_or_else(bad)?;
            let secs = seconds(g[3]).ok_or_else(bad)?;
            out.push(format!("{} {hard} {soft} {secs}", CLASSES[c]));
        }
        Ok(out.join(" "))
    }

    /// The seconds as Redis reads them: `strtoll` (sign, digits, saturating;
    /// empty is 0) kept in an `int`, refused if that is negative.
    fn seconds(w: &str) -> Option<i32> {
        let (neg, digits) = match w.as_bytes().first() {
            Some(b'-') => (true, &w[1..]),
            Some(b'+') => (false, &w[1..]),
            _ => (false, w),
        };
        // A sign alone converts nothing: `strtoll` leaves it unread.
        if (digits.is_empty() && !w.is_empty()) || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let n = digits.bytes().fold(0i64, |n, c| {
            n.saturating_mul(10).saturating_add(i64::from(c - b'0'))
        });
        let n = if neg { n.saturating_neg() } else { n };
        // Truncation to 32 bits, as Redis's assignment to an `int`.
        let kept = n as i32;
        (kept >= 0).then_some(kept)
    }

    /// `current` (all classes) with the groups of `update` applied.
    pub fn merge(current: &str, update: &str) -> String {
        let mut groups: Vec<Vec<&str>> = current
            .split(' ')
            .collect::<Vec<_>>()
            .chunks(4)
            .map(<[&str]>::to_vec)
            .collect();
        if update.is_empty() {
            return current.to_string();
        }
        for g in update.split(' ').collect::<Vec<_>>().chunks(4) {
            if let Some(slot) = groups.iter_mut().find(|c| c[0] == g[0]) {
                *slot = g.to_vec();
            }
        }
        groups
            .iter()
            .map(|g| g.join(" "))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The normal class's limits in a full value (as CONFIG GET shows).
    pub fn normal(value: &str) -> OutputLimits {
        let words: Vec<&str> = value.split(' ').collect();
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<i64>().ok())
                .unwrap_or(0)
        };
        let unsigned = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match words.first() {
            Some(&"normal") => OutputLimits {
                hard: unsigned(1),
                soft: unsigned(2),
                soft_seconds: num(3).max(0) as u64,
            },
            _ => OutputLimits::default(),
        }
    }
}

/// Keyspace notification classes (`notify-keyspace-events`), as Redis's
/// `NOTIFY_*` flags (checked and shown as Redis shows them; published by
/// `notify.rs`).
pub mod events {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 12;
    pub const NEW: u32 = 1 << 13;
    /// What `A` stands for.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

    /// The class characters and their flags, in the order Redis prints them.
    const CLASSES: &[(u8, u32)] = &[
        (b'g', GENERIC),
        (b'$', STRING),
        (b'l', LIST),
        (b's', SET),
        (b'h', HASH),
        (b'z', ZSET),
        (b'x', EXPIRED),
        (b'e', EVICTED),
        (b't', STREAM),
        (b'd', MODULE),
        (b'n', NEW),
    ];

    /// The flags of a class string; `None` for an unknown character.
    pub fn parse(s: &[u8]) -> Option<u32> {
        s.iter().try_fold(0, |flags, &c| {
            let f = match c {
                b'A' => ALL,
                b'K' => KEYSPACE,
                b'E' => KEYEVENT,
                b'm' => KEY_MISS,
                _ => CLASSES.iter().find(|(ch, _)| *ch == c)?.1,
            };
            Some(flags | f)
        })
    }

    /// The class string Redis shows for `flags` (`A` for all classes).
    pub fn to_string(flags: u32) -> String {
        let mut s = String::new();
        if flags & ALL == ALL {
            // As Redis: `A` hides `n` (which `A` does not include).
            s.push('A');
        } else {
            for &(c, f) in CLASSES {
                if flags & f != 0 {
                    s.push(c as char);
                }
            }
        }
        for (c, f) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
            if flags & f != 0 {
                s.push(c);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::new(&Config::new("/tmp/x"), 6379)
    }

    fn set(s: &Settings, args: &[&str]) -> Result<(), String> {
        let a: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        s.set(&a)
    }

    fn get(s: &Settings, name: &str) -> String {
        s.get(&[name.as_bytes()])[0].1.clone()
    }

    #[test]
    fn maxclients_beyond_the_descriptor_limit_is_refused_with_what_fits() {
        let s = settings();
        // More descriptors than any kernel allows (fs.nr_open is at most
        // about 2^30).
        let e = set(&s, &["maxclients", "4000000000"]).unwrap_err();
        assert!(
            e.starts_with("CONFIG SET failed (possibly related to argument 'maxclients') - ")
                && e.contains("try with"),
            "{e}"
        );
        assert_eq!(get(&s, "maxclients"), "10000");
        assert_eq!(s.maxclients(), 10_000);
        set(&s, &["maxclients", "50"]).unwrap();
        assert_eq!(s.maxclients(), 50);
    }

    #[test]
    fn set_is_all_or_nothing_with_redis_errors() {
        let s = settings();
        assert_eq!(
            set(&s, &["maxclients", "5", "timeout", "x"]).unwrap_err(),
            "CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
        );
        assert_eq!(s.maxclients(), 10_000);
        assert_eq!(
            set(&s, &["maxclients", "5", "foo", "1"]).unwrap_err(),
            "Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        assert!(set(&s, &["TIMEOUT", "5", "timeout", "6"])
            .unwrap_err()
            .ends_with("'timeout') - duplicate parameter"));
        assert!(set(&s, &["port", "1"])
            .unwrap_err()
            .ends_with("can't set immutable config"));
        set(
            &s,
            &[
                "maxclients",
                "5",
                "timeout",
                "7",
                "slowlog-log-slower-than",
                "-1",
            ],
        )
        .unwrap();
        assert_eq!(
            (s.maxclients(), s.timeout(), s.slowlog_log_slower_than()),
            (5, 7, -1)
        );
    }

    #[test]
    fn values_are_checked_and_shown_as_redis_does() {
        let s = settings();
        set(&s, &["maxmemory", "1kb", "proto-max-bulk-len", "2mb"]).unwrap();
        assert_eq!(get(&s, "maxmemory"), "1024");
        assert_eq!(s.proto_max_bulk_len(), 2 << 20);
        assert!(set(&s, &["maxmemory", "1.5mb"])
            .unwrap_err()
            .ends_with("must be a memory value"));
        assert!(set(&s, &["proto-max-bulk-len", "100"])
            .unwrap_err()
            .ends_with("between 1048576 and 67108855 inclusive"));
        set(
            &s,
            &["save", "3600 1 300 100", "notify-keyspace-events", "KEA"],
        )
        .unwrap();
        assert_eq!(get(&s, "save"), "3600 1 300 100");
        assert_eq!(get(&s, "notify-keyspace-events"), "AKE");
        assert_eq!(
            s.notify_keyspace_events(),
            events::ALL | events::KEYSPACE | events::KEYEVENT
        );
        // Shown as Redis shows it (`A` hides `n`), in effect as set.
        set(&s, &["notify-keyspace-events", "KEAn"]).unwrap();
        assert_eq!(get(&s, "notify-keyspace-events"), "AKE");
        assert_ne!(s.notify_keyspace_events() & events::NEW, 0);
        assert!(set(&s, &["notify-keyspace-events", "KEq"]).is_err());
        assert_ne!(
            s.notify_keyspace_events() & events::NEW,
            0,
            "a refused value changes nothing"
        );
        set(&s, &["notify-keyspace-events", ""]).unwrap();
        assert_eq!(s.notify_keyspace_events(), 0);
        for bad in ["0 1", "  ", "3600 1  300 100", "3600"] {
            assert!(set(&s, &["save", bad]).is_err(), "{bad:?}");
        }
        set(
            &s,
            &["appendfsync", "ALWAYS", "maxmemory-policy", "AllKeys-LRU"],
        )
        .unwrap();
        assert_eq!(s.appendfsync(), AppendFsync::Always);
        assert_eq!(get(&s, "maxmemory-policy"), "allkeys-lru");
        set(&s, &["hash-max-ziplist-entries", "100"]).unwrap();
        assert_eq!(get(&s, "hash-max-listpack-entries"), "100");
        set(&s, &["requirepass", "pw"]).unwrap();
        assert_eq!(s.requirepass().as_deref(), Some("pw"));
        set(&s, &["requirepass", ""]).unwrap();
        assert!(!s.auth_required());
        assert_eq!(get(&s, "protected-mode"), "yes");
        assert!(s.protected_mode());
        set(&s, &["protected-mode", "NO"]).unwrap();
        assert!(!s.protected_mode());
        assert_eq!(get(&s, "protected-mode"), "no");
        assert!(set(&s, &["protected-mode", "maybe"])
            .unwrap_err()
            .ends_with("argument must be 'yes' or 'no'"));
        assert_eq!(get(&s, "enable-debug-command"), "no");
        assert!(set(&s, &["enable-debug-command", "yes"])
            .unwrap_err()
            .ends_with("can't set immutable config"));
        // Read-only in Redis as well, with what holds for batchkv.
        assert_eq!(get(&s, "daemonize"), "no");
        assert_eq!(
            set(&s, &["daemonize", "yes"]).unwrap_err(),
            "CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config"
        );
        assert_eq!(
            s.get(&[b"slaveof", b"replicaof", b"cluster-enabled"]),
            [
                ("slaveof".to_string(), String::new()),
                ("replicaof".to_string(), String::new()),
                ("cluster-enabled".to_string(), "no".to_string())
            ]
        );
    }

    #[test]
    fn get_matches_globs_and_aliases_without_repeats() {
        let s = settings();
        let names: Vec<String> = s
            .get(&[
                b"hash-*",
                b"hash-max-listpack-value",
                b"HASH-MAX-ZIPLIST-VALUE",
            ])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "hash-max-listpack-entries",
                "hash-max-ziplist-entries",
                "hash-max-listpack-value",
                "hash-max-ziplist-value"
            ]
        );
        assert_eq!(
            s.get(&[b"TIMEOUT"]),
            [("TIMEOUT".to_string(), "0".to_string())]
        );
        assert!(s.get(&[b"nosuch"]).is_empty());
    }

    #[test]
    fn output_buffer_limits_parse_merge_and_apply_like_redis() {
        let s = settings();
        let name = "client-output-buffer-limit";
        assert_eq!(get(&s, name), DEFAULT_OUTPUT_LIMITS);
        assert_eq!(s.output_limits(), OutputLimits::default());
        set(&s, &[name, "normal 256mb 64mb 60"]).unwrap();
        assert_eq!(
            get(&s, name),
            "normal 268435456 67108864 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        assert_eq!(
            s.output_limits(),
            OutputLimits {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_seconds: 60
            }
        );
        // Later groups win; `replica` is shown as `slave`; units as Redis.
        set(&s, &[name, "REPLICA 1 2 3 normal 1gb 2 3 Normal 1K 2kb +3"]).unwrap();
        assert_eq!(
            get(&s, name),
            "normal 1000 2048 3 slave 1 2 3 pubsub 33554432 8388608 60"
        );
        set(&s, &[name, ""]).unwrap();
        // Seconds kept in 32 bits; empty words are 0.
        set(&s, &[name, "pubsub 0 0 99999999999"]).unwrap();
        assert_eq!(
            get(&s, name),
            "normal 1000 2048 3 slave 1 2 3 pubsub 0 0 1215752191"
        );
        set(&s, &[name, "slave  1 -0"]).unwrap();
        assert_eq!(
            get(&s, name),
            "normal 1000 2048 3 slave 0 1 0 pubsub 0 0 1215752191"
        );
        let why = |v: &str| {
            set(&s, &[name, v])
                .unwrap_err()
                .split(" - ")
                .nth(1)
                .unwrap()
                .to_string()
        };
        for (v, e) in [
            (
                "bogus 1 2 3",
                "Invalid client class specified in buffer limit configuration.",
            ),
            (
                "master 1 2 3",
                "Invalid client class specified in buffer limit configuration.",
            ),
            (
                " normal 1 2 3",
                "Wrong number of arguments in buffer limit configuration.",
            ),
            (
                "normal 1 2",
                "Wrong number of arguments in buffer limit configuration.",
            ),
            (
                "normal 1 2 3 ",
                "Wrong number of arguments in buffer limit configuration.",
            ),
            (
                "normal x 2 3",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 -3",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1.5 2 3",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 2147483648",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 99999999999999999999",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 -",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 0x10",
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
            ),
            (
                "normal 1 2 3 bogus 1 2 3",
                "Invalid client class specified in buffer limit configuration.",
            ),
        ] {
            assert_eq!(why(v), e, "{v:?}");
        }
        // Nothing changed by the refused values.
        assert_eq!(s.output_limits().hard, 1000);
        set(&s, &[name, "normal 0 0 0"]).unwrap();
        assert_eq!(s.output_limits(), OutputLimits::default());
    }

    #[test]
    fn event_classes_round_trip_like_redis() {
        for (given, shown) in [
            ("KEA", "AKE"),
            ("Kg$", "g$K"),
            ("", ""),
            ("An", "A"),
            ("nm$", "$nm"),
            ("g$lshzxetd", "A"),
        ] {
            let flags = events::parse(given.as_bytes()).unwrap();
            assert_eq!(events::to_string(flags), shown, "{given}");
        }
        assert_eq!(events::parse(b"Z"), None);
    }
}
