//! Differential test: `batchkv serve` against a real redis-server (7.x).
//!
//! A seeded random sequence of commands over a few keys, fields and values
//! (so that commands collide, across types too: a hash command on a string
//! key and the reverse) goes to both servers in pipelines of 1-16 commands,
//! most on a RESP2 connection pair, about a quarter on a RESP3 pair (`HELLO
//! 3`). Every reply must be the same bytes, except where Redis leaves
//! something unspecified (see [`Cmp`]: the order of HGETALL/HKEYS/HVALS/KEYS,
//! the seconds a TTL shows). A few commands get an argument dropped or added
//! (wrong arity, syntax errors) or their name in mixed case. batchkv
//! restarts twice during the run, after which the whole keyspace is compared
//! ([`STATE_CHECKS`]), as it is at the end. Where batchkv differs on
//! purpose, [`ALLOWED`] says why (and how the data is made equal again).
//! [`REGRESSIONS`] replays, in a fixed order, commands that once differed.
//!
//! On the first difference the test fails with the seed, the command's
//! index, the command, both replies (escaped) and the commands before it.
//!
//! Environment: `BATCHKV_SEED` replays a run (the seed is printed),
//! `BATCHKV_DIFF_COMMANDS` sets the number of commands,
//! `BATCHKV_DIFF_RESTARTS` the number of restarts. Without `redis-server` on
//! PATH the test prints `SKIPPED: ...` and returns
//! (`scripts/install-redis.sh` installs it).
//!
//! # Adding a command
//!
//! Each data type has a table of [`CmdGen`] rows in `tests/diff/<type>.rs`
//! (`strings.rs`, `keys.rs`, `hashes.rs` are the examples): a row is the
//! command's name, a weight (relative frequency; 2-10 for ordinary
//! commands, 1 for rare ones), a comparison mode, and a function that makes
//! one random instance from a [`Gen`]:
//!
//! ```text
//! CmdGen::new("smembers", 5, Unordered, |g| cmd("SMEMBERS", [g.key()])),
//! ```
//!
//! - Draw keys with `g.key()` (mostly the table's home key, sometimes any:
//!   that is what makes types collide), members/fields with `g.field()`,
//!   values with `g.value()`, counts and increments with `g.int_arg()` /
//!   `g.float_arg()` (which also yield invalid ones). Add invalid arguments
//!   of your own: Redis checks arguments, key type and syntax in an order
//!   of its own, and the error that comes first is compared too.
//! - The comparison mode: `Exact` unless Redis's order is unspecified
//!   (`Unordered` for SMEMBERS/SINTER..., `UnorderedPairs` for field/value
//!   or member/score pairs, `ScanPage` for a SCAN-family page asked with a
//!   COUNT larger than any collection here).
//! - A random reply (SRANDMEMBER with a negative count) cannot be compared,
//!   and a random effect (SPOP of fewer than all members) makes the two
//!   servers' data diverge: generate only the forms whose result is
//!   determined (count 0, or at least the collection's size), and mark a
//!   row `.keep_arity()` if dropping its last argument would make it random.
//! - A relative expiry (EXPIRE) compared with GT/LT, or with another set a
//!   few ms later, depends on when each server ran it: use `g.ttl_s()` and
//!   the absolute `g.at_s()` as the keyspace table does.
//!
//! For a new type: add `pub mod <type>;` to `tests/diff/mod.rs`, its table
//! with a home key of its own to [`TABLES`], and a whole-value read of the
//! type (SMEMBERS, ZRANGE 0 -1 WITHSCORES, LRANGE 0 -1) to [`STATE_CHECKS`].

mod common;
mod diff;

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use common::Harness;
use diff::compare::{canonical, Cmp};
use diff::generate::{b, cmd, Args, CmdGen, Gen, KEYS};
use diff::redis_process::{self, RedisProcess};
use diff::resp::{encode, Conn, Frame};

/// Every data type's command table, and the key its commands mostly use
/// (see [`Gen::home`]; a different one per type).
static TABLES: &[(&[CmdGen], Option<&str>)] = &[
    (diff::strings::COMMANDS, Some("a")),
    (diff::keys::COMMANDS, None),
    (diff::hashes::COMMANDS, Some("c")),
    // EXTENSION POINT: one line per new type's table, with its own key
    // from `KEYS` (sets, sorted sets, lists), e.g.
    // `(diff::sets::COMMANDS, Some("ab")),`.
];

/// Commands run on every key of [`KEYS`] to compare the whole keyspace
/// after a restart and at the end: each reads one type's whole value (and
/// answers WRONGTYPE, compared too, for the other types).
const STATE_CHECKS: &[(&str, Cmp)] = &[
    ("TYPE", Cmp::Exact),
    ("TTL", Cmp::Ttl),
    ("GET", Cmp::Exact),
    ("HGETALL", Cmp::UnorderedPairs),
    // EXTENSION POINT: e.g. `("SMEMBERS", Cmp::Unordered),`.
];

/// A difference batchkv serve has on purpose.
struct Allowed {
    /// The command table row's name.
    command: &'static str,
    /// Why batchkv differs.
    reason: &'static str,
    /// Whether the difference between Redis's reply and batchkv's is this
    /// one (and nothing else): `(command, redis, batchkv)`.
    applies: fn(&Args, &Frame, &Frame) -> bool,
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
static ALLOWED: &[Allowed] = &[];

/// One row chosen by weight.
struct Table {
    /// Each row and its table's home key.
    rows: Vec<(&'static CmdGen, Option<&'static str>)>,
    /// Running sums of the rows' weights.
    cumulative: Vec<u32>,
}

impl Table {
    fn new() -> Table {
        let rows: Vec<(&'static CmdGen, Option<&'static str>)> = TABLES
            .iter()
            .flat_map(|(t, home)| t.iter().map(move |r| (r, *home)))
            .collect();
        let cumulative = rows
            .iter()
            .scan(0, |sum, (r, _)| {
                *sum += r.weight;
                Some(*sum)
            })
            .collect();
        Table { rows, cumulative }
    }

    /// A row, chosen by weight; sets `g.home` to its table's home key.
    fn pick(&self, g: &mut Gen) -> &'static CmdGen {
        let total = *self.cumulative.last().expect("no commands");
        let x = g.range(0, i64::from(total) - 1) as u32;
        let (row, home) = self.rows[self.cumulative.partition_point(|&c| c <= x)];
        g.home = home;
        row
    }
}

/// A command to send and how to compare its replies.
struct Planned {
    row: &'static CmdGen,
    args: Args,
}

/// A random command: a row's instance, sometimes with an argument dropped
/// or added, sometimes with its name in mixed case.
fn plan(g: &mut Gen, table: &Table) -> Planned {
    let row = table.pick(g);
    let mut args = (row.make)(g);
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
    Planned { row, args }
}

/// Whether a row's command may need a resync (and so ends its pipeline).
fn may_resync(row: &CmdGen) -> bool {
    ALLOWED
        .iter()
        .any(|a| a.command == row.name && a.resync.is_some())
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
    /// Per row: commands, error replies.
    per_command: BTreeMap<&'static str, (usize, usize)>,
    /// Per allow-list entry (by reason): how often it applied, and the
    /// first instance (command, both replies).
    allowed: BTreeMap<&'static str, (usize, String)>,
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
                .find(|a| a.command == name && (a.applies)(args, r, o))
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
            if let Some(f) = a.resync {
                resync = f(args, r);
            }
        }
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

    /// Sends `cmds` to both servers of `side` as one pipeline and compares
    /// the replies; then sends what allowed differences need to resync.
    fn pipeline(&mut self, side: &mut Side, cmds: &[(&'static str, Cmp, Args)]) {
        let mut wire = Vec::new();
        for (_, _, args) in cmds {
            encode(args, &mut wire);
        }
        side.redis.send(&wire).expect("sending to redis-server");
        side.ours.send(&wire).expect("sending to batchkv");
        let mut resync = Vec::new();
        for (name, cmp, args) in cmds {
            let r = side.redis.read().unwrap_or_else(|e| {
                panic!(
                    "seed {}: redis-server reply to {}: {e}",
                    self.seed,
                    show(args)
                )
            });
            let o = side.ours.read().unwrap_or_else(|e| {
                panic!(
                    "seed {}: batchkv reply to #{} {}: {e}",
                    self.seed,
                    self.index,
                    show(args)
                )
            });
            resync.extend(self.check(side.proto, name, *cmp, args, &r, &o));
        }
        if side.proto == 3 {
            self.resp3 += cmds.len();
        }
        if !resync.is_empty() {
            let fix: Vec<_> = resync
                .into_iter()
                .map(|a| ("(resync)", Cmp::Exact, a))
                .collect();
            self.pipeline(side, &fix);
        }
    }

    /// Compares every key's whole value ([`STATE_CHECKS`]) and DBSIZE.
    fn compare_keyspace(&mut self, side: &mut Side) {
        let mut cmds = vec![("(state) dbsize", Cmp::Exact, cmd("DBSIZE", []))];
        for k in KEYS {
            for (c, cmp) in STATE_CHECKS {
                cmds.push(("(state)", *cmp, cmd(c, [b(k)])));
            }
        }
        self.pipeline(side, &cmds);
    }
}

/// Prints a line on stderr past the test harness's output capture (which
/// takes only `eprintln!`), so that a skip and the summary show in every
/// `cargo test` log.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
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
            allowed: BTreeMap::new(),
        }
    }
}

#[test]
fn batchkv_matches_redis_server() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let seed: u64 = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    // 8-17 s in a release build (15,000-34,000 commands/s checked on two
    // cores, shared or not), about 7 s in a debug build (7,000/s).
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
    let mut restarts_done = 0;
    while run.index < total {
        if restarts_done < restarts && run.index >= total * (restarts_done + 1) / (restarts + 1) {
            servers.restart_ours();
            restarts_done += 1;
            run.compare_keyspace(&mut servers.sides[0]);
        }
        let side = &mut servers.sides[usize::from(g.chance(0.25))];
        let n = g.range(1, 16) as usize;
        let mut cmds = Vec::new();
        while cmds.len() < n && run.index + cmds.len() < total {
            let p = plan(&mut g, &table);
            let ends = may_resync(p.row);
            cmds.push((p.row.name, p.row.cmp, p.args));
            if ends {
                break;
            }
        }
        run.pipeline(side, &cmds);
    }
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
        .filter(|(r, _)| !run.per_command.contains_key(r.name))
        .map(|(r, _)| r.name)
        .collect();
    assert!(
        total < 20_000 || missing.is_empty(),
        "commands never generated: {missing:?}"
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
];

#[test]
fn past_differences_stay_fixed() {
    let Some(mut servers) = Servers::start() else {
        return;
    };
    let mut run = Run::new(0, None);
    for side in &mut servers.sides {
        for c in REGRESSIONS {
            let args: Args = c.iter().map(|a| b(a)).collect();
            run.pipeline(side, &[("(regression)", Cmp::Exact, args)]);
        }
    }
}
