//! Differential test: `batchkv serve` against a real redis-server (7.x).
//!
//! A seeded random sequence of commands over a few keys, fields, members
//! and values (so that commands collide, across types too: a hash command
//! on a string key and the reverse) goes to both servers in pipelines of
//! 1-16 commands, most on a RESP2 connection pair, about a quarter on a
//! RESP3 pair (`HELLO 3`). The commands cover strings (bits and LCS too),
//! the keyspace (MOVE, SWAPDB and OBJECT too), hashes, sets, sorted sets,
//! lists (blocking ones too), HyperLogLogs, SORT, geo, streams, and MULTI/EXEC/DISCARD/WATCH blocks of random
//! commands. Every reply must be the same bytes, except where Redis leaves
//! something unspecified (see [`Cmp`]: the order of HGETALL/SMEMBERS/KEYS...,
//! the seconds a TTL shows, a SCAN's cursors). A few commands get an
//! argument dropped or added (wrong arity, syntax errors) or their name in
//! mixed case. batchkv restarts twice during the run, after which the whole
//! keyspace of databases 0 and 1 is compared ([`STATE_CHECKS`]), as it is at
//! the end. Where batchkv differs on purpose, [`ALLOWED`] says why (and how
//! the data is made equal again). [`REGRESSIONS`] replays, in a fixed
//! order, commands that once differed; `every_command_meets_every_type`
//! runs every row on keys of every type in turn (each data type's commands
//! must meet WRONGTYPE on every other type).
//!
//! On the first difference the test fails with the seed, the command's
//! index, the command, both replies (escaped) and the commands before it.
//!
//! Environment: `BATCHKV_SEED` replays a run (the seed is printed),
//! `BATCHKV_DIFF_COMMANDS` sets the number of commands,
//! `BATCHKV_DIFF_RESTARTS` the number of restarts, `BATCHKV_DIFF_TRACE=N`
//! prints every command sent and Redis's reply from the N-th on (to see
//! what led to a difference: the failure shows only the last few).
//! Without `redis-server` on PATH the test prints `SKIPPED: ...` and
//! returns (`scripts/install-redis.sh` installs it).
//!
//! # Adding a command
//!
//! Each data type has a table of [`CmdGen`] rows in `tests/diff/<type>.rs`
//! (`strings.rs`, `keys.rs`, `hashes.rs` are the simplest examples): a row
//! is the command's name, a weight (relative frequency; 2-10 for ordinary
//! commands, 1 for rare ones), a comparison mode, and a function that makes
//! one random instance from a [`Gen`]:
//!
//! ```text
//! CmdGen::new("smembers", 5, Unordered, |g| cmd("SMEMBERS", [g.key()])),
//! ```
//!
//! - Draw keys with `g.key()` (mostly the table's home key, sometimes its
//!   second key, sometimes any: that is what makes types collide), fields
//!   with `g.field()`, members with `g.member()`, values with `g.value()`
//!   / `g.list_value()`, scores and range bounds with `g.score()`,
//!   `g.score_bound()`, `g.lex_bound()`, counts and increments with
//!   `g.int_arg()` / `g.float_arg()` (all of which also yield invalid
//!   ones). Add invalid arguments of your own: Redis checks arguments, key
//!   type and syntax in an order of its own, and the error that comes
//!   first is compared too.
//! - The comparison mode: `Exact` unless Redis's order is unspecified
//!   (`Unordered` for SMEMBERS/SINTER..., `UnorderedPairs` for field/value
//!   or member/score pairs, `ScanPage` for a SCAN-family page asked with a
//!   COUNT larger than any collection here, `ScanAll` for a scan the test
//!   follows to the end on each server).
//! - A row of several commands (a setup then the command, a transaction)
//!   is a `CmdGen::steps` row: its function returns [`Step`]s, each with
//!   its own mode (`lists.rs`'s blocking commands, `tx.rs`).
//! - A random reply (SRANDMEMBER with a negative count) cannot be compared,
//!   and a random effect (SPOP of fewer than all members) makes the two
//!   servers' data diverge: generate only the forms whose result is
//!   determined (count 0, or at least the collection's size), and mark a
//!   row `.keep_arity()` if dropping its last argument would make it random.
//! - A relative expiry (EXPIRE) compared with GT/LT, or with another set a
//!   few ms later, depends on when each server ran it: use `g.ttl_s()` and
//!   the absolute `g.at_s()` as the keyspace table does.
//! - Redis's replies to lex ranges on a sorted set with mixed scores are
//!   undefined (its two encodings differ): `zsets.rs` runs them on a copy
//!   whose scores are all 0.
//! - A row that must not be queued in a transaction (EXEC, DISCARD) is
//!   marked `.not_in_multi()`; a transaction's commands are drawn from
//!   every other single-command row but the `ScanAll` ones.
//!
//! For a new type: add `pub mod <type>;` to `tests/diff/mod.rs`, its table
//! with a home key of its own to [`TABLES`], a command that makes a value
//! of it to [`TYPES`], and a whole-value read of the type to
//! [`STATE_CHECKS`].

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;
mod diff;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use common::Harness;
use diff::compare::{canonical, merge_scan_pages, scan_cursor, Cmp};
use diff::generate::{b, cmd, Args, CmdGen, Gen, Make, Step, KEYS};
use diff::redis_process::{self, RedisProcess};
use diff::resp::{encode, read_frame, Conn, Frame};

/// A command table and where its commands go.
struct TableDef {
    rows: &'static [CmdGen],
    /// The key its commands mostly use (see [`Gen::home`]; a different one
    /// per type).
    home: Option<&'static str>,
    /// Its second key, for its multi-key commands (see [`Gen::second`]).
    second: Option<&'static str>,
    /// The type (as TYPE names it) its commands work on, if one.
    kind: Option<&'static str>,
}

const fn table(
    rows: &'static [CmdGen],
    home: Option<&'static str>,
    second: Option<&'static str>,
    kind: Option<&'static str>,
) -> TableDef {
    TableDef {
        rows,
        home,
        second,
        kind,
    }
}

/// Every data type's command table.
static TABLES: &[TableDef] = &[
    table(diff::strings::COMMANDS, Some("a"), None, Some("string")),
    table(diff::keys::COMMANDS, None, None, None),
    table(diff::hashes::COMMANDS, Some("c"), None, Some("hash")),
    table(diff::sets::COMMANDS, Some("ab"), Some("s:2"), Some("set")),
    table(
        diff::zsets::COMMANDS,
        Some("x:1"),
        Some("z:2"),
        Some("zset"),
    ),
    table(diff::lists::COMMANDS, Some("b"), Some("l:2"), Some("list")),
    table(
        diff::hll::COMMANDS,
        Some("s:2"),
        Some("l:2"),
        Some("string"),
    ),
    table(diff::sort::COMMANDS, Some("b"), Some("ab"), None),
    table(diff::geo::COMMANDS, Some("z:2"), Some("x:1"), Some("zset")),
    table(
        diff::streams::COMMANDS,
        Some("s:2"),
        Some("l:2"),
        Some("stream"),
    ),
    table(diff::tx::COMMANDS, None, None, None),
];

/// Every type, and a command that makes a key `k` of it (none: nothing).
const TYPES: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("string", &["SET", "k", "abc"]),
    // A HyperLogLog is a string too.
    ("string", &["PFADD", "k", "a", "b"]),
    ("hash", &["HSET", "k", "f1", "v", "ab", "1"]),
    ("set", &["SADD", "k", "m1", "1"]),
    ("zset", &["ZADD", "k", "1", "m1", "2", "m2"]),
    ("list", &["RPUSH", "k", "a", "b"]),
    ("stream", &["XADD", "k", "1-1", "f", "v"]),
];

/// Commands run on every key of [`KEYS`], in databases 0 and 1, to compare
/// the whole keyspace after a restart and at the end: each reads one
/// type's whole value (and answers WRONGTYPE, compared too, for the other
/// types). Each is a command name, the key, then the given arguments.
const STATE_CHECKS: &[(&str, &str, &[&str], Cmp)] = &[
    ("(state)", "TYPE", &[], Cmp::Exact),
    ("(state)", "TTL", &[], Cmp::Ttl),
    ("(state)", "GET", &[], Cmp::Exact),
    ("(state)", "HGETALL", &[], Cmp::UnorderedPairs),
    ("(state)", "SMEMBERS", &[], Cmp::Unordered),
    (
        "(state) zrange",
        "ZRANGE",
        &["0", "-1", "WITHSCORES"],
        Cmp::Exact,
    ),
    ("(state)", "LRANGE", &["0", "-1"], Cmp::Exact),
    ("(state)", "XRANGE", &["-", "+"], Cmp::Exact),
];

/// A difference batchkv serve has on purpose.
struct Allowed {
    /// The command table rows' names (or steps' names) it applies to.
    commands: &'static [&'static str],
    /// Why batchkv differs.
    reason: &'static str,
    /// Whether the difference between Redis's reply and batchkv's is this
    /// one (and nothing else): `(command, comparison mode, redis,
    /// batchkv)`.
    applies: fn(&Args, Cmp, &Frame, &Frame) -> bool,
    /// When the difference is in the stored data too: commands, sent to
    /// both servers right after, that make their data the same again
    /// (from the command and Redis's reply). A command with a resync ends
    /// its pipeline, so that nothing runs on the diverged data.
    resync: Option<fn(&Args, &Frame) -> Vec<Args>>,
}

/// The differences batchkv serve has on purpose. Never add a real bug here.
/// (INCRBYFLOAT and HINCRBYFLOAT were here while batchkv added in f64; they
/// now compute in an emulated long double, `src/ldouble.rs`, and must match
/// exactly.)
static ALLOWED: &[Allowed] = &[
    Allowed {
        commands: &["object"],
        reason: "OBJECT ENCODING: Redis's encoding depends on how the value was built and \
             never returns to a compact one (APPEND, SETRANGE, SETBIT, BITOP, PFADD and \
             PFMERGE make `raw` strings, INCRBYFLOAT `embstr` ones; a set, hash or sorted set that once passed \
             a threshold stays `hashtable`/`skiplist` after it shrinks); batchkv keeps no \
             encoding and reports what Redis would use for the value as it is now \
             (src/commands/object.rs)",
        applies: less_compact_in_redis,
        resync: None,
    },
    Allowed {
        commands: ZSET_SCORE_REPLIES,
        reason: "a score of -0 in a sorted set Redis keeps as a skiplist (one that has had \
                 more than 128 members): the skiplist keeps the sign (the listpack of \
                 smaller sets does not), batchkv stores -0 as 0 at every size \
                 (src/commands/zsets.rs); nothing else differs, as the two zeros compare \
                 equal in every range and aggregate",
        applies: only_negative_zero_scores,
        resync: None,
    },
    Allowed {
        commands: &["sort", "sort_ro", "sort nosort store", "sort unordered"],
        reason: "Redis 7.0's SORT tests `errno == ERANGE` after `strtod` without clearing \
                 errno first, so an ERANGE any earlier command left (a number out of range, \
                 `ZADD z 1e400 m`) makes it refuse string elements or BY values it would \
                 otherwise sort; batchkv judges each number alone \
                 (src/commands/sort.rs)",
        applies: stale_errno_sort,
        resync: Some(drop_sort_destination),
    },
];

/// Whether Redis refused a SORT with its number error where batchkv
/// sorted (the stale-errno case above).
fn stale_errno_sort(_: &Args, _: Cmp, r: &Frame, o: &Frame) -> bool {
    r.raw == b"-ERR One or more scores can't be converted into double\r\n" && o.kind != b'-'
}

/// After [`stale_errno_sort`]: the STORE destination batchkv wrote and
/// Redis did not is deleted on both. It is SET first, so that the DEL's
/// reply is the same on both whatever each held (the destination may be
/// a key Redis kept and batchkv's empty result deleted: `STORE` onto
/// the sorted key itself).
fn drop_sort_destination(args: &Args, _: &Frame) -> Vec<Args> {
    args.iter()
        .position(|a| a.eq_ignore_ascii_case(b"store"))
        .and_then(|i| args.get(i + 1))
        .map(|dst| {
            vec![
                vec![b("SET"), dst.clone(), b("resync")],
                vec![b("DEL"), dst.clone()],
            ]
        })
        .unwrap_or_default()
}

/// The rows (and steps) whose replies can carry a sorted set's scores.
const ZSET_SCORE_REPLIES: &[&str] = &[
    "zadd",
    "zincrby",
    "zscore",
    "zmscore",
    "zrange",
    "zrangebyscore",
    "zrevrangebyscore",
    "zrevrange",
    "zpopmin",
    "zpopmax",
    "zrandmember withscores",
    "zscan",
    "(state) zrange",
];

/// Whether Redis's reply shows a score -0 where batchkv's shows 0, and
/// that is the only difference (no member here is named `-0`).
fn only_negative_zero_scores(_: &Args, cmp: Cmp, r: &Frame, o: &Frame) -> bool {
    fn replace(raw: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            if raw[i..].starts_with(from) {
                out.extend_from_slice(to);
                i += from.len();
            } else {
                out.push(raw[i]);
                i += 1;
            }
        }
        out
    }
    let resp2 = replace(&r.raw, b"$2\r\n-0\r\n", b"$1\r\n0\r\n");
    let both = replace(&resp2, b",-0\r\n", b",0\r\n");
    both != r.raw
        && read_frame(&mut both.as_slice()).is_ok_and(|f| canonical(cmp, &f) == canonical(cmp, o))
}

/// Whether Redis reports a less compact encoding than batchkv, as it does
/// for a value built in place or a collection that shrank (never the
/// other way round).
fn less_compact_in_redis(_: &Args, _: Cmp, r: &Frame, o: &Frame) -> bool {
    const PAIRS: &[(&[u8], &[u8])] = &[
        (b"raw", b"embstr"),
        (b"raw", b"int"),
        (b"embstr", b"int"),
        (b"hashtable", b"intset"),
        (b"hashtable", b"listpack"),
        (b"skiplist", b"listpack"),
    ];
    let body = |f: &Frame| {
        let start = f.raw.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
        f.raw[start..].strip_suffix(b"\r\n").map(<[u8]>::to_vec)
    };
    r.kind == b'$'
        && o.kind == b'$'
        && matches!((body(r), body(o)), (Some(r), Some(o))
            if PAIRS.contains(&(r.as_slice(), o.as_slice())))
}

/// One row chosen by weight.
struct Table {
    /// Each row and its table's home and second keys.
    rows: Vec<Row>,
    /// Running sums of the rows' weights.
    cumulative: Vec<u32>,
}

impl Table {
    fn new() -> Table {
        let rows: Vec<Row> = TABLES
            .iter()
            .flat_map(|t| t.rows.iter().map(move |r| (r, t.home, t.second)))
            .collect();
        let cumulative = rows
            .iter()
            .scan(0, |sum, (r, _, _)| {
                *sum += r.weight;
                Some(*sum)
            })
            .collect();
        Table { rows, cumulative }
    }

    /// A row, chosen by weight; sets `g.home` and `g.second` to its
    /// table's keys.
    fn pick(&self, g: &mut Gen) -> &'static CmdGen {
        let total = *self.cumulative.last().expect("no commands");
        let x = g.range(0, i64::from(total) - 1) as u32;
        let (row, home, second) = self.rows[self.cumulative.partition_point(|&c| c <= x)];
        g.home = home;
        g.second = second;
        row
    }

    /// A random command of a single-command row that can run anywhere in
    /// a pipeline and inside MULTI (not a full-iteration scan, not one
    /// that may need a resync, not EXEC or DISCARD).
    fn draw(&self, g: &mut Gen) -> Step {
        loop {
            let row = self.pick(g);
            if let Make::One(make) = row.make {
                if row.in_multi && !ends_pipeline(row.name, row.cmp) {
                    return instance(g, row, make);
                }
            }
        }
    }
}

/// A command table row and its table's home and second keys.
type Row = (&'static CmdGen, Option<&'static str>, Option<&'static str>);

/// A row's instance, sometimes with an argument dropped or added,
/// sometimes with its name in mixed case.
fn instance(g: &mut Gen, row: &'static CmdGen, make: fn(&mut Gen) -> Args) -> Step {
    let mut args = make(g);
    if row.mutate && g.chance(0.03) {
        if args.len() > 1 && g.chance(0.5) {
            args.pop();
        } else {
            args.push(g.key());
        }
    }
    if g.chance(0.1) {
        args[0] = g.mixed_case(&args[0]);
    }
    Step::new(row.name, row.cmp, args)
}

/// A random row's commands, and the row.
fn plan(g: &mut Gen, table: &Table) -> (&'static CmdGen, Vec<Step>) {
    let row = table.pick(g);
    (row, row_steps(g, table, row))
}

/// An instance of `row` (its commands; `table` for a transaction's).
fn row_steps(g: &mut Gen, table: &Table, row: &'static CmdGen) -> Vec<Step> {
    match row.make {
        Make::One(make) => vec![instance(g, row, make)],
        Make::Steps(make) => make(g, &mut |g: &mut Gen| table.draw(g)),
    }
}

/// Whether a command must be the last of its pipeline: a full-iteration
/// scan (the test sends its next pages after its reply), or one that may
/// need a resync.
fn ends_pipeline(name: &str, cmp: Cmp) -> bool {
    matches!(cmp, Cmp::ScanAll { .. })
        || ALLOWED
            .iter()
            .any(|a| a.commands.contains(&name) && a.resync.is_some())
}

/// A connection to each server with the same protocol.
struct Side {
    proto: u8,
    redis: Conn,
    ours: Conn,
}

fn connect(addr: SocketAddr, proto: u8) -> Conn {
    let mut c = Conn::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    if proto == 3 {
        let hello = c.call(&["HELLO", "3"]).expect("HELLO 3");
        assert_eq!(hello.kind, b'%', "HELLO 3 reply from {addr}: {hello:?}");
    }
    c
}

fn escape(b: &[u8], max: usize) -> String {
    let s = b.escape_ascii().to_string();
    if s.len() > max {
        format!("{}... ({} bytes)", &s[..max], b.len())
    } else {
        s
    }
}

fn show(args: &Args) -> String {
    args.iter()
        .map(|a| {
            let s = escape(a, 80);
            if s.is_empty() || s.contains(' ') {
                format!("\"{s}\"")
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The run's state and counters.
struct Run {
    seed: u64,
    /// The run's length (for the replay line); `None` for the fixed list.
    replay: Option<usize>,
    /// The last commands and Redis's replies, for a failure report.
    history: VecDeque<String>,
    /// Commands compared so far (the index of the next one).
    index: usize,
    resp3: usize,
    /// Per row (or part of a row): commands, error replies.
    per_command: BTreeMap<&'static str, (usize, usize)>,
    /// The rows generated.
    rows: BTreeSet<&'static str>,
    /// WRONGTYPE replies (from Redis) so far.
    wrongtype: usize,
    /// `BATCHKV_DIFF_TRACE`: the index from which to print every command.
    trace_from: Option<usize>,
    /// Per allow-list entry (by reason): how often it applied, and the
    /// first instance (command, both replies).
    allowed: BTreeMap<&'static str, (usize, String)>,
    /// Keyspace notification subscribers, when the run compares them.
    taps: Option<Taps>,
}

/// A `PSUBSCRIBE *` connection to each server: after each pipeline the
/// keyspace notifications both published must be the same, in the same
/// order ([`Run::compare_events`]).
struct Taps {
    redis: Conn,
    ours: Conn,
    /// Sync messages published so far (each names its own channel).
    syncs: u64,
    /// Notifications compared.
    events: usize,
    /// An allowed difference in the replies since the last comparison:
    /// the servers' data differed until resynced, so may their
    /// notifications (not compared).
    skip: bool,
}

/// The notification classes the event run enables: all but `x` (expired:
/// published when each server's expiry gets to the key, at different
/// times), `e` (evicted: no eviction) and `m` (key misses: not
/// published by batchkv), plus `n` (new keys).
const EVENT_FLAGS: &str = "KEg$lshztn";

impl Taps {
    fn start(servers: &mut Servers) -> Taps {
        for side in &mut servers.sides[..1] {
            for c in [&mut side.redis, &mut side.ours] {
                let r = c
                    .call(&["CONFIG", "SET", "notify-keyspace-events", EVENT_FLAGS])
                    .expect("CONFIG SET notify-keyspace-events");
                assert_eq!(r.raw, b"+OK\r\n");
            }
        }
        let tap = |addr| {
            let mut c = connect(addr, 2);
            let r = c.call(&["PSUBSCRIBE", "*"]).expect("PSUBSCRIBE *");
            assert_eq!(r.children.len(), 3, "PSUBSCRIBE reply {r:?}");
            c
        };
        Taps {
            redis: tap(servers.redis.addr),
            ours: tap(servers.ours.as_ref().expect("running").server.addr()),
            syncs: 0,
            events: 0,
            skip: false,
        }
    }
}

/// The notifications `tap` received up to the message on `sync`, each
/// as `channel payload`.
fn events_until(tap: &mut Conn, sync: &[u8]) -> Vec<String> {
    let mut events = Vec::new();
    loop {
        let m = tap.read().expect("reading a notification");
        let [_, _, channel, payload] = &m.children[..] else {
            panic!("not a pmessage: {}", escape(&m.raw, 200));
        };
        let channel = &channel.raw[channel.header.len() + 3..channel.raw.len() - 2];
        let payload = &payload.raw[payload.header.len() + 3..payload.raw.len() - 2];
        if channel == sync {
            return events;
        }
        events.push(format!("{} {}", escape(channel, 100), escape(payload, 100)));
    }
}

const HISTORY: usize = 12;

impl Run {
    /// Compares one command's replies; panics on a difference that is not
    /// allowed. Returns the resync commands an allowed difference needs.
    fn check(
        &mut self,
        proto: u8,
        name: &'static str,
        cmp: Cmp,
        args: &Args,
        r: &Frame,
        o: &Frame,
    ) -> Vec<Args> {
        let mut resync = Vec::new();
        if canonical(cmp, r) != canonical(cmp, o) {
            let Some(a) = ALLOWED
                .iter()
                .find(|a| a.commands.contains(&name) && (a.applies)(args, cmp, r, o))
            else {
                self.fail(proto, cmp, args, r, o);
            };
            let e = self.allowed.entry(a.reason).or_insert_with(|| {
                let example = format!(
                    "{} -> redis-server {}, batchkv {}",
                    show(args),
                    escape(&r.raw, 100),
                    escape(&o.raw, 100)
                );
                (0, example)
            });
            e.0 += 1;
            if let Some(t) = &mut self.taps {
                t.skip = true;
            }
            if let Some(f) = a.resync {
                resync = f(args, r);
            }
        }
        self.note(proto, name, args, r);
        resync
    }

    /// Compares the keyspace notifications of the commands sent so far
    /// (if the run has taps): each server's side connection publishes a
    /// sync message, and each tap's messages before it must be the same.
    fn compare_events(&mut self, side: &mut Side) {
        let Some(taps) = &mut self.taps else {
            return;
        };
        taps.syncs += 1;
        let sync = format!("sync:{}", taps.syncs);
        for c in [&mut side.redis, &mut side.ours] {
            c.call(&["PUBLISH", &sync, ""]).expect("PUBLISH");
        }
        let r = events_until(&mut taps.redis, sync.as_bytes());
        let o = events_until(&mut taps.ours, sync.as_bytes());
        if std::mem::take(&mut taps.skip) {
            return;
        }
        taps.events += r.len();
        if r != o {
            let mut msg = format!(
                "batchkv's keyspace notifications differ from redis-server's \
                 (seed {}, after command #{})\n  redis-server: {r:?}\n  batchkv:      {o:?}\n  \
                 previous commands:\n",
                self.seed, self.index
            );
            for h in &self.history {
                msg.push_str(&format!("    {h}\n"));
            }
            panic!("{msg}");
        }
    }

    /// Whether to print commands and replies (`BATCHKV_DIFF_TRACE`).
    fn tracing(&self) -> bool {
        self.trace_from.is_some_and(|n| self.index >= n)
    }

    /// Counts a compared command and keeps it in the history.
    fn note(&mut self, proto: u8, name: &'static str, args: &Args, r: &Frame) {
        if self.tracing() {
            say(&format!(
                "trace: #{} {} -> {}",
                self.index,
                show(args),
                escape(&r.raw, 200)
            ));
        }
        self.wrongtype += usize::from(r.raw.starts_with(b"-WRONGTYPE"));
        let e = self.per_command.entry(name).or_default();
        e.0 += 1;
        e.1 += usize::from(r.kind == b'-');
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(format!(
            "#{} RESP{proto} {} -> {}",
            self.index,
            show(args),
            escape(&r.raw, 200)
        ));
        self.index += 1;
    }

    /// Compares EXEC's replies: when both are arrays of one reply per
    /// queued command, each element by its command's mode; otherwise
    /// (nil, EXECABORT, an error) byte for byte.
    fn check_exec(&mut self, proto: u8, exec: &Step, r: &Frame, o: &Frame) -> Vec<Args> {
        let n = exec.queued.len();
        let elements = r.kind == b'*'
            && o.kind == b'*'
            && r.header == o.header
            && r.children.len() == n
            && o.children.len() == n
            && r.header == n.to_string().as_bytes();
        if !elements {
            return self.check(proto, exec.name, Cmp::Exact, &exec.args, r, o);
        }
        self.note(proto, exec.name, &exec.args, r);
        let mut resync = Vec::new();
        for (q, (rc, oc)) in exec.queued.iter().zip(r.children.iter().zip(&o.children)) {
            resync.extend(self.check(proto, q.name, q.cmp, &q.args, rc, oc));
        }
        resync
    }

    fn fail(&self, proto: u8, cmp: Cmp, args: &Args, r: &Frame, o: &Frame) -> ! {
        let mut msg = String::from("batchkv differs from redis-server\n");
        msg.push_str(&match self.replay {
            Some(total) => format!(
                "  seed {}, replay: BATCHKV_SEED={} BATCHKV_DIFF_COMMANDS={total}\n",
                self.seed, self.seed
            ),
            None => "  in the fixed command list\n".to_string(),
        });
        msg.push_str(&format!(
            "  command #{} on RESP{proto}: {}\n  redis-server: {}\n  batchkv:      {}\n",
            self.index,
            show(args),
            escape(&r.raw, 2000),
            escape(&o.raw, 2000),
        ));
        msg.push_str(&format!(
            "  (compared: {cmp:?})\n  previous commands (with redis-server's replies):\n"
        ));
        for h in &self.history {
            msg.push_str(&format!("    {h}\n"));
        }
        panic!("{msg}");
    }

    /// Sends `steps` to both servers of `side` as one pipeline and
    /// compares the replies; then sends what allowed differences need to
    /// resync. A full-iteration scan must be the last step: its further
    /// pages are asked after every reply is in.
    fn pipeline(&mut self, side: &mut Side, steps: &[Step]) {
        let mut wire = Vec::new();
        for s in steps {
            if self.tracing() {
                say(&format!(
                    "trace: send on RESP{} ({}, {:?}): {}",
                    side.proto,
                    s.name,
                    s.cmp,
                    show(&s.args)
                ));
            }
            encode(&s.args, &mut wire);
        }
        side.redis.send(&wire).expect("sending to redis-server");
        side.ours.send(&wire).expect("sending to batchkv");
        let mut resync = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            let mut r = side.redis.read().unwrap_or_else(|e| {
                panic!(
                    "seed {}: redis-server reply to {}: {e}",
                    self.seed,
                    show(&s.args)
                )
            });
            let mut o = side.ours.read().unwrap_or_else(|e| {
                panic!(
                    "seed {}: batchkv reply to #{} {}: {e}",
                    self.seed,
                    self.index,
                    show(&s.args)
                )
            });
            match s.cmp {
                Cmp::Exec => resync.extend(self.check_exec(side.proto, s, &r, &o)),
                Cmp::ScanAll { pairs } => {
                    assert_eq!(i + 1, steps.len(), "a full scan ends its pipeline");
                    r = self.scan_to_end(&mut side.redis, &s.args, r, pairs);
                    o = self.scan_to_end(&mut side.ours, &s.args, o, pairs);
                    resync.extend(self.check(side.proto, s.name, s.cmp, &s.args, &r, &o));
                }
                _ => resync.extend(self.check(side.proto, s.name, s.cmp, &s.args, &r, &o)),
            }
        }
        if side.proto == 3 {
            self.resp3 += steps.len();
        }
        if !resync.is_empty() {
            let fix: Vec<_> = resync
                .into_iter()
                .map(|a| Step::new("(resync)", Cmp::Exact, a))
                .collect();
            self.pipeline(side, &fix);
        }
        self.compare_events(side);
    }

    /// Sends steps some of which go to the other connection pair
    /// ([`Step::other`]): in order, each run of steps on one connection as
    /// a pipeline. `side` indexes `sides` (two).
    fn on_both(&mut self, sides: &mut [Side], side: usize, steps: &[Step]) {
        for group in steps.chunk_by(|x, y| x.other == y.other) {
            let which = if group[0].other { 1 - side } else { side };
            self.pipeline(&mut sides[which], group);
        }
    }

    /// Follows a SCAN-family command's cursor on one server from its first
    /// page `first` (`args`: the command, its cursor third) to the end;
    /// returns all the pages as one ([`merge_scan_pages`]), or `first` if
    /// it is not a page (an error).
    fn scan_to_end(&self, conn: &mut Conn, args: &Args, first: Frame, pairs: bool) -> Frame {
        if scan_cursor(&first).is_none() || args.len() < 3 {
            return first;
        }
        let mut pages = vec![first];
        while let Some(cursor) = pages.last().and_then(scan_cursor) {
            if cursor == b"0" {
                break;
            }
            assert!(
                pages.len() < 100_000,
                "seed {}: {} never ends",
                self.seed,
                show(args)
            );
            let mut next = args.clone();
            next[2] = cursor.to_vec();
            let mut wire = Vec::new();
            encode(&next, &mut wire);
            conn.send(&wire).expect("sending a scan");
            pages.push(conn.read().expect("reading a scan page"));
        }
        merge_scan_pages(&pages, pairs)
    }

    /// Compares every key's whole value ([`STATE_CHECKS`]) and DBSIZE, in
    /// databases 0 and 1 (MOVE and SWAPDB put keys in 1).
    fn compare_keyspace(&mut self, side: &mut Side) {
        let mut steps = Vec::new();
        for db in ["1", "0"] {
            steps.push(Step::new("(state)", Cmp::Exact, cmd("SELECT", [b(db)])));
            steps.push(Step::new("(state) dbsize", Cmp::Exact, cmd("DBSIZE", [])));
            for k in KEYS {
                for (name, c, extra, cmp) in STATE_CHECKS {
                    let mut args = cmd(c, [b(k)]);
                    args.extend(extra.iter().map(|a| b(a)));
                    steps.push(Step::new(name, *cmp, args));
                }
            }
        }
        self.pipeline(side, &steps);
    }
}

/// Prints a line on stderr past the test harness's output capture (which
/// takes only `eprintln!`), so that a skip and the summary show in every
/// `cargo test` log.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `BATCHKV_SEED`, or a random seed.
fn seed_from_env() -> u64 {
    std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random)
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// The engine writes small tables, so the run goes through flushes and
/// compactions.
fn config(c: &mut batchkv_server::Config) {
    c.options
        .apply_option_string("write_buffer_size=16384;target_file_size_base=16384")
        .unwrap();
}

/// Both servers, and a RESP2 and a RESP3 connection pair to them.
struct Servers {
    redis: RedisProcess,
    /// `None` only while restarting.
    ours: Option<Harness>,
    /// RESP2, then RESP3.
    sides: Vec<Side>,
}

impl Servers {
    /// Starts both, or prints that the test is skipped and returns `None`
    /// when there is no redis-server.
    fn start() -> Option<Servers> {
        if !redis_process::available() {
            say("SKIPPED: redis-server not found (run scripts/install-redis.sh)");
            return None;
        }
        let redis = RedisProcess::start().unwrap_or_else(|e| panic!("{e}"));
        let ours = Harness::start_with(config);
        let sides = Self::connect_all(redis.addr, ours.server.addr());
        Some(Servers {
            redis,
            ours: Some(ours),
            sides,
        })
    }

    fn connect_all(redis: SocketAddr, ours: SocketAddr) -> Vec<Side> {
        [2, 3]
            .into_iter()
            .map(|proto| Side {
                proto,
                redis: connect(redis, proto),
                ours: connect(ours, proto),
            })
            .collect()
    }

    /// Restarts batchkv on its directory (the connections are reopened).
    fn restart_ours(&mut self) {
        self.sides.clear();
        let h = self.ours.take().expect("running").restart(config);
        self.sides = Self::connect_all(self.redis.addr, h.server.addr());
        self.ours = Some(h);
    }
}

impl Run {
    fn new(seed: u64, replay: Option<usize>) -> Run {
        Run {
            seed,
            replay,
            history: VecDeque::new(),
            index: 0,
            resp3: 0,
            per_command: BTreeMap::new(),
            rows: BTreeSet::new(),
            wrongtype: 0,
            trace_from: env_usize("BATCHKV_DIFF_TRACE"),
            allowed: BTreeMap::new(),
            taps: None,
        }
    }
}

#[test]
fn batchkv_matches_redis_server() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let seed = seed_from_env();
    // 8-16 s in a release build (15,000-32,000 commands/s checked on two
    // cores, shared or not; about 10 s on a quiet machine), about 7 s in a
    // debug build (7,500/s).
    let default = if cfg!(debug_assertions) {
        50_000
    } else {
        250_000
    };
    let total = env_usize("BATCHKV_DIFF_COMMANDS").unwrap_or(default);
    let restarts = env_usize("BATCHKV_DIFF_RESTARTS").unwrap_or(2);
    say(&format!(
        "redis_diff: seed {seed} (BATCHKV_SEED), {total} commands (BATCHKV_DIFF_COMMANDS), \
         {restarts} restarts, against {}",
        redis_process::version()
    ));
    let table = Table::new();
    let mut g = Gen::new(seed);
    let mut run = Run::new(seed, Some(total));
    let start = Instant::now();
    random_run(&mut servers, &mut run, &mut g, &table, total, restarts);
    run.compare_keyspace(&mut servers.sides[0]);
    let secs = start.elapsed().as_secs_f64();
    say(&format!(
        "redis_diff: {} commands ({} on RESP3) gave the same replies in {secs:.1} s: \
         {:.0} commands/s checked; seed {seed}",
        run.index,
        run.resp3,
        run.index as f64 / secs
    ));
    let counts: Vec<String> = run
        .per_command
        .iter()
        .map(|(name, (n, errs))| format!("{name} {n} ({errs} err)"))
        .collect();
    say(&format!("redis_diff: per command: {}", counts.join(", ")));
    for (reason, (n, example)) in &run.allowed {
        say(&format!(
            "redis_diff: allowed difference x{n} ({reason}), e.g. {example}"
        ));
    }
    let missing: Vec<&str> = table
        .rows
        .iter()
        .filter(|(r, _, _)| !run.rows.contains(r.name))
        .map(|(r, _, _)| r.name)
        .collect();
    assert!(
        total < 20_000 || missing.is_empty(),
        "commands never generated: {missing:?}"
    );
}

/// Sends `total` random commands of `table` to both servers and compares
/// the replies, restarting batchkv `restarts` times (and comparing the
/// keyspace after each restart).
fn random_run(
    servers: &mut Servers,
    run: &mut Run,
    g: &mut Gen,
    table: &Table,
    total: usize,
    restarts: usize,
) {
    let mut restarts_done = 0;
    while run.index < total {
        if restarts_done < restarts && run.index >= total * (restarts_done + 1) / (restarts + 1) {
            servers.restart_ours();
            restarts_done += 1;
            run.compare_keyspace(&mut servers.sides[0]);
        }
        let side = usize::from(g.chance(0.25));
        let n = g.range(1, 16) as usize;
        let mut steps: Vec<Step> = Vec::new();
        while steps.len() < n && run.index + steps.len() < total {
            let (row, planned) = plan(g, table);
            run.rows.insert(row.name);
            let ends = planned.iter().any(|s| ends_pipeline(s.name, s.cmp));
            if planned.iter().any(|s| s.other) {
                run.pipeline(&mut servers.sides[side], &steps);
                steps.clear();
                run.on_both(&mut servers.sides, side, &planned);
                break;
            }
            steps.extend(planned);
            if ends {
                break;
            }
        }
        run.pipeline(&mut servers.sides[side], &steps);
    }
}

/// The random run with keyspace notifications on (every class but
/// expiry, eviction and key misses; [`EVENT_FLAGS`]): after each pipeline
/// the notifications both servers published must be the same, in order.
/// No restarts (the subscribers would miss what happens meanwhile).
#[test]
fn keyspace_notifications_match_redis_server() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let seed = seed_from_env();
    let default = if cfg!(debug_assertions) {
        10_000
    } else {
        50_000
    };
    let total = env_usize("BATCHKV_DIFF_EVENT_COMMANDS").unwrap_or(default);
    say(&format!(
        "redis_diff events: seed {seed} (BATCHKV_SEED), {total} commands \
         (BATCHKV_DIFF_EVENT_COMMANDS), notify-keyspace-events {EVENT_FLAGS}"
    ));
    let table = Table::new();
    let mut g = Gen::new(seed);
    let mut run = Run::new(seed, Some(total));
    run.taps = Some(Taps::start(&mut servers));
    let start = Instant::now();
    random_run(&mut servers, &mut run, &mut g, &table, total, 0);
    let taps = run.taps.as_ref().expect("taps");
    say(&format!(
        "redis_diff events: {} commands published the same {} notifications in {:.1} s; \
         seed {seed}",
        run.index,
        taps.events,
        start.elapsed().as_secs_f64()
    ));
    assert!(
        total < 1_000 || taps.events > total / 10,
        "too few notifications to mean anything: {}",
        taps.events
    );
}

/// Commands on which batchkv once differed from redis-server (found by the
/// random run above, fixed in the command modules), in a fixed order, so
/// that every run checks them.
const REGRESSIONS: &[&[&str]] = &[
    &["FLUSHDB"],
    // SET/GETEX options as Redis parses them: repeats allowed (the last
    // expiry wins), syntax errors before the expiry's value is checked.
    &["SET", "k", "v", "KEEPTTL", "KEEPTTL"],
    &["SET", "k", "v", "NX", "NX", "GET", "GET"],
    &["SET", "k", "v", "EX", "abc", "EX", "100"],
    &["SET", "k", "v", "EX", "abc", "NX", "XX"],
    &["SET", "k", "v", "EX", "0", "PX", "100"],
    &["SET", "k", "v", "EX", "100", "KEEPTTL"],
    &["SET", "k", "v", "KEEPTTL", "EX", "100"],
    &["GETEX", "missing", "EX", "abc"],
    &["HSET", "h", "f", "1"],
    &["GETEX", "h", "EX", "abc"],
    &["GETEX", "k", "EX", "abc"],
    &["GETEX", "k", "EX", "0"],
    &["GETEX", "k", "PERSIST", "PERSIST"],
    &["GETEX", "k", "EX", "abc", "EX", "100"],
    &["GETEX", "k", "PERSIST", "EX", "100"],
    &["GETEX", "k", "EX", "100", "PX", "100"],
    // INCRBYFLOAT checks the key before the increment; HINCRBYFLOAT
    // rejects an infinite increment before the key.
    &["INCRBYFLOAT", "h", "abc"],
    &["HINCRBYFLOAT", "k", "f", "inf"],
    &["HINCRBYFLOAT", "h", "f", "-inf"],
    &["HINCRBYFLOAT", "h", "f", "nan"],
    // HRANDFIELD: the count first (within ±i64::MAX), then the syntax.
    &["HRANDFIELD", "h", "x", "bogus"],
    &["HRANDFIELD", "h", "-9223372036854775808"],
    &["HRANDFIELD", "h", "9223372036854775807"],
    &["HRANDFIELD", "h", "9223372036854775807", "WITHVALUES"],
    &["HRANDFIELD", "k", "1", "bogus"],
    &["HRANDFIELD", "missing", "-9223372036854775808"],
    // WITHVALUES: counts up to ±i64::MAX / 2 inclusive.
    &["HRANDFIELD", "h", "4611686018427387903", "WITHVALUES"],
    &["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
    &["HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"],
    // HSCAN: a missing key or another type before the options.
    &["HSCAN", "missing", "0", "COUNT", "x"],
    &["HSCAN", "k", "0", "COUNT", "x"],
    &["HSCAN", "h", "0", "COUNT", "x"],
    // EXPIRETIME rounds without overflowing near i64::MAX.
    &["SET", "k", "v", "PXAT", "9223372036854775807"],
    &["EXPIRETIME", "k"],
    &["PEXPIRETIME", "k"],
    // OBJECT: a known subcommand with the wrong argument count, and an
    // unknown one, are refused before running (and before queuing).
    &["OBJECT", "ENCODING"],
    &["OBJECT", "help", "x"],
    &["OBJECT", "bogus", "k"],
    &["MULTI"],
    &["OBJECT", "ENCODING"],
    &["EXEC"],
    // BITCOUNT looks the key up before the range; two negative indexes in
    // the wrong order answer 0 before the unit is checked. BITPOS: the
    // bit, the key, the start, the unit, then the end.
    &["BITCOUNT", "missing", "8"],
    &["BITCOUNT", "h", "8"],
    &["BITCOUNT", "k", "-1", "-9", "WORD"],
    &["BITCOUNT", "k", "5", "3", "WORD"],
    &["BITPOS", "missing", "1", "x"],
    &["BITPOS", "k", "1", "-1", "x", "WORD"],
    // LCS checks the keys' types before its options.
    &["LCS", "h", "h", "LEN", "MINMATCHLEN", "x"],
    // ZPOPMIN checks the key's type before a count of 0 answers empty.
    &["ZPOPMIN", "k", "0"],
    // ZSCAN: another type before the options.
    &["ZSCAN", "k", "0", "COUNT", "x"],
    // ZRANGE by rank accepts LIMIT with a count of -1 and ignores it.
    &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    &["ZRANGE", "z", "0", "-1", "LIMIT", "-1", "-1", "REV"],
    &["ZRANGE", "z", "0", "-1", "LIMIT", "5", "-1"],
    // OBJECT ENCODING of values made in one step: exactly as Redis (the
    // allowed difference is for values built in place or shrunk).
    &["SET", "e", "01"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "-0"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "+1"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "9223372036854775808"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "-9223372036854775808"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    &["OBJECT", "ENCODING", "e"],
    &["SET", "e", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    &["OBJECT", "ENCODING", "e"],
    &["SADD", "se", "1", "-2"],
    &["OBJECT", "ENCODING", "se"],
    &["SADD", "se", "a"],
    &["OBJECT", "ENCODING", "se"],
    &[
        "HSET",
        "he",
        "f",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ],
    &["OBJECT", "ENCODING", "he"],
    &[
        "ZADD",
        "ze",
        "1",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ],
    &["OBJECT", "ENCODING", "ze"],
    &["RPUSH", "le", "a"],
    &["OBJECT", "ENCODING", "le"],
    // A PFADD that meets a damaged sparse HLL keeps the registers it set
    // before the damage, and those in-place sparse updates invalidated the
    // cached cardinality (the high bit of header byte 15).
    &["DEL", "hd"],
    &["PFADD", "hd"],
    &["SETRANGE", "hd", "13", "-0.25"],
    &["PFCOUNT", "hd"],
    &[
        "PFADD", "hd", "e615415", "e615416", "e615417", "e615418", "e615419", "e615420", "e615421",
        "e615422", "e615423", "e615424", "e615425", "e615426",
    ],
    &["GET", "hd"],
    // XGROUP CREATE's and SETID's options are checked before the key's
    // type (SETID takes ENTRIESREAD only).
    &["SADD", "wt", "a"],
    &["XGROUP", "SETID", "wt", "g1", "$", "ENTRIESREAD", "-2"],
    &["XGROUP", "SETID", "wt", "g1", "$", "MKSTREAM"],
    &["XGROUP", "SETID", "wt", "g1", "$", "ENTRIESREAD", "5"],
    &["XGROUP", "CREATE", "wt", "g1", "$", "ENTRIESREAD", "x"],
];

/// Every row of every table, a few times, with every key holding one type,
/// for each type in turn (and no key): every command meets every type. A
/// data type's commands must have answered WRONGTYPE on each other type.
#[test]
fn every_command_meets_every_type() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let run = every_command_on_every_type(&mut servers, false);
    say(&format!(
        "redis_diff: every command on every type: {} commands, {} WRONGTYPE",
        run.index, run.wrongtype
    ));
}

/// [`every_command_meets_every_type`] with keyspace notifications on
/// ([`EVENT_FLAGS`]): each command publishes what Redis publishes on each
/// type.
#[test]
fn every_command_on_every_type_publishes_redis_events() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let run = every_command_on_every_type(&mut servers, true);
    let events = run.taps.as_ref().map_or(0, |t| t.events);
    say(&format!(
        "redis_diff events: every command on every type: {} commands, {events} notifications",
        run.index
    ));
    assert!(events > run.index / 10, "too few notifications: {events}");
}

/// Runs every row of every table a few times with every key holding one
/// type, for each type in turn (and no key); the data type's commands
/// must have answered WRONGTYPE on each other type. With `events`, the
/// keyspace notifications are compared too.
fn every_command_on_every_type(servers: &mut Servers, events: bool) -> Run {
    let seed = 7;
    let table = Table::new();
    let mut g = Gen::new(seed);
    let mut run = Run::new(seed, None);
    if events {
        run.taps = Some(Taps::start(servers));
    }
    let mut never = Vec::new();
    for def in TABLES {
        for (kind, make) in TYPES {
            let before = run.wrongtype;
            for row in def.rows {
                let mut setup = vec![Step::new("(setup)", Cmp::Exact, cmd("FLUSHALL", []))];
                for k in KEYS.iter().filter(|_| !make.is_empty()) {
                    let args = make.iter().map(|a| b(if *a == "k" { k } else { a }));
                    setup.push(Step::new("(setup)", Cmp::Exact, args.collect()));
                }
                run.pipeline(&mut servers.sides[0], &setup);
                for i in 0..3 {
                    g.home = def.home;
                    g.second = def.second;
                    let steps = row_steps(&mut g, &table, row);
                    run.on_both(&mut servers.sides, i % 2, &steps);
                }
            }
            run.compare_keyspace(&mut servers.sides[0]);
            let other_type = def.kind.is_some_and(|k| k != *kind) && *kind != "none";
            if other_type && run.wrongtype == before {
                never.push(format!("{:?} commands on a {kind}", def.kind));
            }
        }
    }
    assert!(never.is_empty(), "never answered WRONGTYPE: {never:?}");
    run
}

#[test]
fn past_differences_stay_fixed() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let mut run = Run::new(0, None);
    for side in &mut servers.sides {
        for c in REGRESSIONS {
            let args: Args = c.iter().map(|a| b(a)).collect();
            run.pipeline(side, &[Step::new("(regression)", Cmp::Exact, args)]);
        }
    }
}
