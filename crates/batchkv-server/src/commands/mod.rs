//! Command dispatch: the command table, authentication, and the
//! per-connection state commands change.
//!
//! The table ([`CommandSpec`], one `COMMANDS` list per module) is the one
//! list of commands: dispatch, COMMAND INFO/COUNT/DOCS/GETKEYS, the
//! statistics slots, EXEC's locks, the key-length checks and the batcher's
//! eligibility all read it.
//!
//! Every command runs synchronously against the engine; reads the table
//! marks as batched (GET, MGET, the collection point reads) are taken out
//! of a pipeline by the connection before they get here (see `conn.rs`).

mod admin;
pub(crate) mod bitfield;
pub(crate) mod bits;
mod client;
mod coll;
mod command;
mod config_cmd;
mod dbs;
mod docs;
mod dump;
mod dump_stream;
pub(crate) mod geo;
mod groups;
mod hashes;
mod hll;
mod info;
pub(crate) mod keys;
pub(crate) mod lists;
mod memory;
mod object;
mod pubsub;
mod sample;
mod sets;
mod slowlog;
mod sort;
pub(crate) mod streams;
mod string_runs;
pub(crate) mod strings;
mod subcommands;
mod tx;
pub(crate) mod zsets;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::batcher::Shape;
use crate::clients::{ClientHandle, BLOCKED};

pub(crate) use crate::errors::{
    engine_error, lossy, not_integer, syntax_error, unknown_command, wrong_arity,
};
use crate::meta::Kind;
use crate::resp::Reply;
use crate::shared::Shared;

/// What runs a command: the shared state, the connection, and the
/// arguments after the name (their count already checked against the
/// arity).
pub type Handler = fn(&Shared, &mut ConnState, &[Bytes]) -> Reply;

/// One command: Redis's COMMAND INFO fields, its handler, and whether a
/// batched run can take it. Each module lists its commands in a
/// `COMMANDS` table; [`lookup`] finds them all. The table is what
/// dispatch ([`execute`]), COMMAND INFO/COUNT/DOCS/GETKEYS, the batcher's
/// eligibility ([`batch_shape`]) and EXEC's locks read.
pub struct CommandSpec {
    pub name: &'static str,
    /// Positive: exact argument count (name included); negative: at least.
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// Key positions (name at 0): the first, the last (negative: from the
    /// end), the step; see [`key_positions`].
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub handler: Handler,
    /// Set for the reads a batched run can take (`conn.rs`): the shape of
    /// the command's batcher job from its arguments after the name (their
    /// count already checked against `arity`); `None` where these
    /// arguments run the command alone (an LRANGE of a long span).
    pub batch: Option<ShapeOf>,
    /// Set for the collection writes that look up elements of their key's
    /// collection before writing: its kind, and which of the arguments
    /// after the key name those elements. EXEC and write groups read them
    /// ahead with the key (`commands/tx.rs`).
    pub lookups: Option<(Kind, Lookups)>,
}

/// The elements (fields, members) a collection write looks up, given its
/// arguments with the key first.
pub type Lookups = for<'a> fn(&'a [Bytes]) -> Vec<&'a [u8]>;

pub(crate) const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        handler,
        batch: None,
        lookups: None,
    }
}

impl CommandSpec {
    /// This command, which a batched run can take as `shape` (see
    /// [`CommandSpec::batch`]).
    pub(crate) const fn batched(mut self, shape: ShapeOf) -> CommandSpec {
        self.batch = Some(shape);
        self
    }

    /// This command, which looks up the elements `lookups` gives of a
    /// collection of `kind` (see [`CommandSpec::lookups`]).
    pub(crate) const fn looks_up(mut self, kind: Kind, lookups: Lookups) -> CommandSpec {
        self.lookups = Some((kind, lookups));
        self
    }

    /// The indexes of the keys in a call with `argc` arguments (name
    /// included).
    pub fn key_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        key_positions((self.first_key, self.last_key, self.step), argc)
    }
}

/// The indexes in a command's arguments (name at 0, `argc` in all) that
/// hold keys, per `(first, last, step)` (a negative last counts from the
/// end; a first below 1 means no keys).
pub fn key_positions(keys: (i32, i32, i32), argc: usize) -> impl Iterator<Item = usize> {
    let (first, last, step) = keys;
    let argc = argc as i64;
    let last = match i64::from(last) {
        l if l < 0 => argc + l,
        l => l,
    }
    .min(argc - 1);
    let step = i64::from(step).max(1) as usize;
    // No keys: an empty range (`first` > `last`).
    let first = if first < 1 {
        last + 1
    } else {
        i64::from(first)
    };
    (first..=last).step_by(step).map(|i| i as usize)
}

/// Flags: a write command.
pub(crate) const W: &[&str] = &["write"];
/// A write that may allocate (Redis's `denyoom`).
pub(crate) const WM: &[&str] = &["write", "denyoom"];
/// A fast read.
pub(crate) const R: &[&str] = &["readonly", "fast"];
/// A read whose cost grows with the data (Redis: no `fast`).
pub(crate) const RS: &[&str] = &["readonly"];
pub(crate) const F: &[&str] = &["fast"];
/// Redis's flags of the commands a client may run before AUTH (AUTH,
/// HELLO, QUIT, RESET).
pub(crate) const NO_AUTH: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
/// Key positions: none; the first argument; all arguments from the first.
pub(crate) const NO_KEYS: (i32, i32, i32) = (0, 0, 0);
pub(crate) const KEY1: (i32, i32, i32) = (1, 1, 1);
pub(crate) const ALL_KEYS: (i32, i32, i32) = (1, -1, 1);

/// Every module's command table.
static TABLES: &[&[CommandSpec]] = &[
    admin::COMMANDS,
    strings::COMMANDS,
    keys::COMMANDS,
    hashes::COMMANDS,
    dbs::COMMANDS,
    object::COMMANDS,
    bits::COMMANDS,
    bitfield::COMMANDS,
    hll::COMMANDS,
    sets::COMMANDS,
    tx::COMMANDS,
    lists::COMMANDS,
    zsets::COMMANDS,
    geo::COMMANDS,
    pubsub::COMMANDS,
    client::COMMANDS,
    command::COMMANDS,
    config_cmd::COMMANDS,
    info::COMMANDS,
    slowlog::COMMANDS,
    memory::COMMANDS,
    sort::COMMANDS,
    streams::COMMANDS,
    groups::COMMANDS,
    dump::COMMANDS,
];

/// Every command the server knows, in table order.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// The command table in table order, with what `execute` needs to find a
/// command and its statistics slot.
struct Table {
    specs: Vec<&'static CommandSpec>,
    /// Looked up once or more per command: foldhash, several times cheaper
    /// than the default SipHash on these short names (the table is built
    /// once; clients' names only look up).
    by_name: HashMap<&'static [u8], usize, foldhash::fast::RandomState>,
    /// By command index: a container's subcommands and the statistics
    /// slot of the first one.
    subs: Vec<Option<(&'static [subcommands::SubSpec], usize)>>,
    /// Statistics slot names: every command, then every subcommand.
    slot_names: Vec<String>,
    /// By statistics slot: whether MONITOR leaves the command out (the
    /// command or subcommand is flagged `admin`, as in Redis).
    unmonitored: Vec<bool>,
    /// The commands a batched run can take ([`CommandSpec::batch`]): so
    /// few that comparing their names is cheaper than a lookup.
    batched: Vec<usize>,
}

fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let specs: Vec<_> = all_commands().collect();
        let by_name = specs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect();
        let mut slot_names: Vec<String> = specs.iter().map(|c| c.name.to_string()).collect();
        let admin = |flags: &[&str]| flags.contains(&"admin");
        let mut unmonitored: Vec<bool> = specs.iter().map(|c| admin(c.flags)).collect();
        let subs = specs
            .iter()
            .map(|c| {
                let list = subcommands::of(c.name)?;
                let first = slot_names.len();
                slot_names.extend(list.iter().map(|s| format!("{}|{}", c.name, s.name)));
                unmonitored.extend(list.iter().map(|s| admin(s.flags)));
                Some((list, first))
            })
            .collect();
        let batched = (0..specs.len())
            .filter(|&i| specs[i].batch.is_some())
            .collect();
        Table {
            specs,
            by_name,
            subs,
            slot_names,
            unmonitored,
            batched,
        }
    })
}

/// The index in [`all_commands`] of a command by its (case-insensitive)
/// name.
fn lookup_index(name: &[u8]) -> Option<usize> {
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    table().by_name.get(&*lower).copied()
}

/// Finds a command by its (case-insensitive) name.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_index(name).map(|i| table().specs[i])
}

/// The names of the statistics slots (INFO commandstats): every command,
/// then every subcommand as `container|sub`.
pub fn stat_names() -> Vec<String> {
    table().slot_names.clone()
}

/// The index (also its statistics slot) and batcher job shape of `args`
/// (name included) if its command is one a batched run can take
/// ([`CommandSpec::batch`]) and `args` has the arity it requires (if not,
/// the command runs alone and answers the error).
pub fn batch_shape(args: &[Bytes]) -> Option<(usize, Shape)> {
    let t = table();
    let &index = t
        .batched
        .iter()
        .find(|&&i| t.specs[i].name.as_bytes().eq_ignore_ascii_case(&args[0]))?;
    let spec = t.specs[index];
    let shape = spec.batch?;
    if !arity_ok(spec, args.len()) {
        return None;
    }
    Some((index, shape(&args[1..])?))
}

/// Whether `argc` (name included) satisfies `spec`'s arity.
pub fn arity_ok(spec: &CommandSpec, argc: usize) -> bool {
    arity_ok_n(spec.arity, argc)
}

/// Whether `argc` satisfies `arity` (positive: exactly; negative: at
/// least its absolute value).
pub(super) fn arity_ok_n(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

/// A batched read's job shape from its arguments after the name
/// ([`CommandSpec::batch`]).
pub type ShapeOf = fn(&[Bytes]) -> Option<Shape>;

/// Per-connection state.
pub struct ConnState {
    pub id: u64,
    pub db: u8,
    /// 2 or 3 (HELLO).
    pub proto: u8,
    pub authenticated: bool,
    pub name: Option<Bytes>,
    /// MULTI/EXEC and WATCH state (`tx.rs`).
    pub tx: tx::TxState,
    /// Pub/Sub subscriptions and queued messages.
    pub pubsub: crate::pubsub::Session,
    /// What CLIENT LIST shows of this connection (`clients.rs`).
    pub client: Arc<ClientHandle>,
    /// Set by a blocking XREAD that found nothing: its arguments (name
    /// included) with each `$` replaced by the ID it stood for, what the
    /// blocked client runs again (`blocking::wait` takes it).
    pub block_args: Option<Vec<Bytes>>,
    /// CLIENT REPLY: whether replies are sent.
    pub reply: ReplyMode,
    /// After MONITOR: the commands fed to this connection.
    pub monitor: Option<crate::monitor::Subscription>,
}

/// CLIENT REPLY's modes, as the connection applies them after each
/// command ([`ReplyMode::after_command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    #[default]
    On,
    /// CLIENT REPLY OFF: no replies until CLIENT REPLY ON.
    Off,
    /// Set by CLIENT REPLY SKIP, whose own reply is not sent.
    SkipSet,
    /// The reply of the next command is not sent.
    SkipNext,
}

impl ReplyMode {
    /// Whether the reply of the command just run is sent, moving a skip
    /// along: the command after CLIENT REPLY SKIP is silent, the one after
    /// that is answered again. Pub/Sub's subscription confirmations are
    /// pushed whatever the mode (as Redis pushes them); `pushed` says the
    /// reply is one (asked only when replies are off or skipped).
    pub fn after_command(&mut self, pushed: impl FnOnce() -> bool) -> bool {
        let send = *self == ReplyMode::On || pushed();
        *self = match *self {
            ReplyMode::SkipSet => ReplyMode::SkipNext,
            ReplyMode::SkipNext => ReplyMode::On,
            m => m,
        };
        send
    }
}

impl ConnState {
    /// Whether this connection's commands may run batched or grouped with
    /// others, their replies encoded as they are produced: authenticated,
    /// outside MULTI, not a RESP2 subscriber, replies on.
    pub fn groups_commands(&self) -> bool {
        self.authenticated
            && !self.tx.in_multi()
            && !(self.proto == 2 && self.pubsub.is_subscribed())
            && self.reply == ReplyMode::On
    }

    /// A copy of this state for running its write group on another
    /// connection's thread (`write_group.rs`): what a grouped command may
    /// read of it (`groupable`: such commands change none of it), with no
    /// transaction and no subscriptions (a subscriber's group is not
    /// combined).
    pub fn detached(&self) -> ConnState {
        ConnState {
            id: self.id,
            db: self.db,
            proto: self.proto,
            authenticated: self.authenticated,
            name: self.name.clone(),
            tx: Default::default(),
            pubsub: Default::default(),
            client: self.client.clone(),
            block_args: None,
            reply: ReplyMode::On,
            monitor: None,
        }
    }
}

/// What the connection does after writing a command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Continue,
    /// QUIT: close this connection after the reply.
    Close,
    /// SHUTDOWN: stop the server (the connection closes without a reply).
    Shutdown,
    /// A blocking command (BLPOP, ...) found nothing to pop: the reply is
    /// its answer if it cannot block (inside MULTI); otherwise the
    /// connection waits and runs it again (`blocking::wait`).
    Block,
}

/// A SCAN-family reply: the next cursor and this page's items.
pub fn scan_reply(next: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![
        Reply::bulk(Bytes::from(next.to_string())),
        Reply::Array(items),
    ])
}

/// A HELP subcommand's reply: one simple string per line, as Redis's.
pub(crate) fn help_reply(lines: &[&str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}

/// Parses an integer argument as Redis does (`string2ll`).
pub fn parse_int(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with('+') || s.len() > 20 {
        return None;
    }
    if s.len() > 1 && (s.starts_with('0') || s.starts_with("-0")) {
        return None;
    }
    s.parse().ok()
}

/// Checks the name (and subcommand), arity and authentication, in Redis's
/// order, then runs the command (or queues it inside MULTI, `tx.rs`).
pub fn execute(shared: &Shared, conn: &mut ConnState, args: &[Bytes]) -> (Reply, After) {
    let Some(index) = lookup_index(&args[0]) else {
        return reject(shared, conn, None, None, unknown_command(args));
    };
    let t = table();
    let spec = t.specs[index];
    if conn.client.flags() & BLOCKED != 0 {
        conn.client.set_flag(BLOCKED, false);
    }
    // Only the command that just answered may leave arguments to block on.
    if conn.block_args.is_some() {
        conn.block_args = None;
    }
    let (slot, sub) = match subcommand(index, args) {
        Ok(found) => found,
        Err(e) => return reject(shared, conn, None, Some(spec), e),
    };
    let arity_fits = match sub {
        Some(s) => arity_ok_n(s.arity, args.len()),
        None => arity_ok(spec, args.len()),
    };
    if !arity_fits {
        return reject(
            shared,
            conn,
            Some(slot),
            Some(spec),
            wrong_arity(&t.slot_names[slot]),
        );
    }
    if !conn.authenticated && !spec.flags.contains(&"no_auth") {
        let e = Reply::err("NOAUTH Authentication required.");
        return reject(shared, conn, Some(slot), Some(spec), e);
    }
    // Redis's "protected" commands: DEBUG only as `enable-debug-command`
    // allows.
    if spec.name == "debug" && !shared.cfg.enable_debug_command.allows(&conn.client.addr) {
        let e = Reply::err(crate::security::DEBUG_NOT_ALLOWED);
        return reject(shared, conn, Some(slot), Some(spec), e);
    }
    // Redis checks a subcommand and its arity before queuing too.
    if spec.name == "object" {
        if let Some(e) = object::check_subcommand(&args[1..]) {
            return (tx::rejected(conn, Some(spec), e), After::Continue);
        }
    }
    if let Some(e) = pubsub::subscribed_context(conn, spec.name, args) {
        return (tx::rejected(conn, Some(spec), e), After::Continue);
    }
    if let Some(e) = crate::keyspace::check_new_keys(spec, args) {
        return reject(shared, conn, Some(slot), Some(spec), e);
    }
    let start = Instant::now();
    conn.client.touch(start, slot);
    if let Some(queued) = tx::queue(conn, spec, args) {
        publish(conn);
        return (queued, After::Continue);
    }
    let reply = call_slot(shared, conn, spec, slot, args, start);
    publish(conn);
    if matches!(spec.name, "client" | "hello" | "reset" | "exec") {
        conn.client.set_name(conn.name.clone());
    }
    let after = match spec.name {
        "quit" => After::Close,
        // A refused SHUTDOWN (bad options, ABORT) answers and goes on.
        "shutdown" if !matches!(reply, Reply::Error(_)) => After::Shutdown,
        // A blocking command answers nil exactly when it would block.
        _ if spec.flags.contains(&"blocking") && matches!(reply, Reply::Nil | Reply::NilArray) => {
            conn.client.set_flag(BLOCKED, true);
            After::Block
        }
        // Killed (CLIENT KILL ... SKIPME no): the reply, then close.
        _ if conn.client.is_killed() => After::Close,
        _ => After::Continue,
    };
    (reply, after)
}

/// The reply to a command refused before it ran, counted in its
/// statistics slot (if known) and the error statistics.
fn reject(
    shared: &Shared,
    conn: &mut ConnState,
    slot: Option<usize>,
    spec: Option<&CommandSpec>,
    e: Reply,
) -> (Reply, After) {
    if let Some(slot) = slot {
        shared.cmdstats.reject(slot);
    }
    if let Reply::Error(text) = &e {
        shared.cmdstats.count_error(text);
    }
    (tx::rejected(conn, spec, e), After::Continue)
}

/// The statistics slot of `args` for the command at `index` and, for a
/// container command (CONFIG, CLIENT, ...) given a subcommand, the
/// subcommand; an unknown subcommand is Redis's error.
fn subcommand(
    index: usize,
    args: &[Bytes],
) -> Result<(usize, Option<&'static subcommands::SubSpec>), Reply> {
    let (Some((subs, first)), Some(name)) = (table().subs[index], args.get(1)) else {
        return Ok((index, None));
    };
    match subs
        .iter()
        .position(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
    {
        Some(j) => Ok((first + j, Some(&subs[j]))),
        None => Err(crate::errors::unknown_subcommand(name, &args[0])),
    }
}

/// Publishes what CLIENT LIST shows of the connection.
fn publish(conn: &ConnState) {
    let (queued, watched) = (conn.tx.queued(), conn.tx.watched_count());
    conn.client.publish(conn.db, conn.proto, queued, watched);
}

/// The command `args` names if it may run in a pipeline's write group
/// (`write_group.rs`): its index in [`all_commands`] (also its statistics
/// slot: such a command has no subcommand), for a write command with keys
/// that cannot block, with no subcommand, its arity and key lengths
/// valid, sent by an authenticated connection outside MULTI and outside a
/// RESP2 subscriber's context. `execute` would run it with no other
/// check, and it changes no connection state. `known`: what this
/// function gave for an earlier command of the same name and connection
/// state (a pipeline repeats names), sparing the lookup and the checks
/// of the command itself.
pub fn groupable(conn: &ConnState, args: &[Bytes], known: Option<usize>) -> Option<usize> {
    let index = match known {
        Some(i) => i,
        None => {
            if !conn.groups_commands() {
                return None;
            }
            let i = lookup_index(&args[0])?;
            let spec = table().specs[i];
            let kind_fits = spec.first_key > 0
                && spec.flags.contains(&"write")
                && !spec.flags.contains(&"blocking");
            if !kind_fits {
                return None;
            }
            i
        }
    };
    let spec = table().specs[index];
    let fits = arity_ok(spec, args.len())
        && (table().subs[index].is_none() || matches!(subcommand(index, args), Ok((_, None))))
        && crate::keyspace::check_new_keys(spec, args).is_none();
    fits.then_some(index)
}

/// The command at `index` in [`all_commands`] (as [`groupable`] gives it).
pub fn spec_at(index: usize) -> &'static CommandSpec {
    table().specs[index]
}

/// Runs a pipeline's write group (`write_group.rs`): `cmds`, each as
/// [`groupable`] found it, as one engine write; their replies in order.
pub fn run_group(
    shared: &Shared,
    conn: &mut ConnState,
    cmds: &[(&'static CommandSpec, &[Bytes])],
) -> Vec<Reply> {
    let replies = tx::run_group(shared, conn, cmds);
    after_group(conn, cmds);
    replies
}

pub use tx::GroupRun;

/// Runs the write groups of several connections (each as [`run_group`]
/// takes it, on a [`ConnState::detached`] copy of its state;
/// `write_group.rs` combines them) as one engine write: each run's
/// replies, in order. Each connection then calls [`after_group`] on its
/// own state.
pub fn run_groups(shared: &Shared, runs: &mut [GroupRun<'_, '_>]) -> Vec<Vec<Reply>> {
    tx::run_groups(shared, runs)
}

/// Updates what CLIENT LIST shows of a connection after its write group
/// `cmds`.
pub fn after_group(conn: &ConnState, cmds: &[(&'static CommandSpec, &[Bytes])]) {
    if let Some((_, last)) = cmds.last() {
        let slot = lookup_index(&last[0]).unwrap_or(0);
        conn.client.touch(Instant::now(), slot);
    }
    publish(conn);
}

/// Whether `args` is a string read-modify-write (INCR, DECR, INCRBY,
/// DECRBY, APPEND) that a pipeline's run of them takes
/// ([`run_string_updates`]).
pub fn is_string_update(args: &[Bytes]) -> bool {
    string_runs::is_string_update(args)
}

/// One connection's run of string read-modify-writes: its database and
/// its commands (each [`groupable`] and [`is_string_update`]).
pub use string_runs::Run as StringRun;

/// Runs runs of string read-modify-writes (`write_group.rs`: one
/// connection's pipeline, or the runs of several combined) as one engine
/// write (`string_runs.rs`): the replies of all their commands in order.
/// The caller is the panic boundary and records the commands
/// ([`record_grouped`]).
pub fn run_string_updates(shared: &Shared, runs: &[StringRun<'_>]) -> Vec<Reply> {
    string_runs::run(shared, runs)
}

/// Runs a command queued in a transaction (EXEC): counted as
/// [`execute`] counts a command.
pub fn call(
    shared: &Shared,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Reply {
    let index = lookup_index(spec.name.as_bytes()).unwrap_or(0);
    let slot = subcommand(index, args).map_or(index, |(slot, _)| slot);
    call_slot(shared, conn, spec, slot, args, Instant::now())
}

/// Shows command `args`, which just ran in statistics slot `slot`, to the
/// monitoring connections (`monitor.rs`), if any.
fn feed_monitors(shared: &Shared, conn: &ConnState, slot: usize, args: &[Bytes]) {
    if shared.monitors.active() && !table().unmonitored[slot] {
        shared.monitors.feed(conn.db, &conn.client.addr, args);
    }
}

/// Stands, in an error reply's text, for the command's name as the client
/// typed it (Redis prints its `argv[0]` in a few errors): [`call_slot`]
/// puts the name in its place.
pub(crate) const TYPED_NAME: &str = "\u{1}typed name\u{1}";

/// Runs `spec`'s handler on `args` (name included), started at `start`;
/// counts it and its time (INFO stats, commandstats, errorstats) and logs
/// it in SLOWLOG if it was slow.
fn call_slot(
    shared: &Shared,
    conn: &mut ConnState,
    spec: &'static CommandSpec,
    slot: usize,
    args: &[Bytes],
    start: Instant,
) -> Reply {
    // The panic boundary (`panics.rs`): every command runs through here,
    // EXEC's queued ones included.
    // A read of keys holds no locks: it reads at one snapshot, so a
    // collection's metadata and elements, or several keys, come from one
    // committed state (Redis runs each command atomically).
    let client = conn.client.clone();
    let reply = crate::panics::catch(
        || format!("command '{}' from {}", spec.name, client.addr),
        || {
            if spec.first_key != 0 && spec.flags.contains(&"readonly") {
                shared.at_snapshot(|| (spec.handler)(shared, conn, &args[1..]))
            } else {
                (spec.handler)(shared, conn, &args[1..])
            }
        },
    )
    .unwrap_or_else(|| Reply::err(crate::panics::INTERNAL_ERROR));
    shared.flush_held_events();
    feed_monitors(shared, conn, slot, args);
    let reply = match reply {
        Reply::Error(t) if t.contains(TYPED_NAME) => {
            Reply::Error(t.replace(TYPED_NAME, &String::from_utf8_lossy(&args[0])))
        }
        r => r,
    };
    let took = start.elapsed();
    shared
        .stats
        .commands
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let failed = if let Reply::Error(text) = &reply {
        shared.cmdstats.count_error(text);
        true
    } else {
        false
    };
    shared.cmdstats.record(slot, 1, took, failed);
    // A command about to block is logged when it is answered
    // ([`record_unblocked`]), as Redis logs it.
    let blocks = spec.flags.contains(&"blocking")
        && matches!(reply, Reply::Nil | Reply::NilArray)
        && !crate::tx::active();
    if is_slow(shared, took) && !spec.flags.contains(&"skip_slowlog") && !blocks {
        log_slow(shared, conn, args, took);
    }
    reply
}

/// Records the answer `reply` of a blocking command `args` (name
/// included) once it is answered after blocking (`blocking::wait`): an
/// error in the error statistics and as a failed call (the call itself
/// was counted when it blocked), and the command in the slow log if the
/// run that answered it took long enough (`took`; zero for a timeout).
pub fn record_unblocked(
    shared: &Shared,
    conn: &ConnState,
    args: &[Bytes],
    reply: &Reply,
    took: Duration,
) {
    let failed = if let Reply::Error(text) = reply {
        shared.cmdstats.count_error(text);
        true
    } else {
        false
    };
    if let Some(slot) = lookup_index(&args[0]) {
        shared.cmdstats.record_unblocked(slot, took, failed);
    }
    if is_slow(shared, took) {
        log_slow(shared, conn, args, took);
    }
}

/// Whether a command that took `took` goes to the slow log
/// (`slowlog-log-slower-than`; negative: none does).
fn is_slow(shared: &Shared, took: Duration) -> bool {
    let threshold = shared.settings.slowlog_log_slower_than();
    threshold >= 0 && took.as_micros() >= threshold as u128
}

/// Adds `args` (name included), which took `took`, to the slow log.
fn log_slow(shared: &Shared, conn: &ConnState, args: &[Bytes], took: Duration) {
    let max_len = shared.settings.slowlog_max_len();
    let micros = took.as_micros() as u64;
    let name = conn.name.as_ref();
    shared
        .slowlog
        .push(args, micros, &conn.client.addr, name, max_len);
}

/// Records a run of commands `reqs` answered together: batched reads (GET,
/// MGET, collection point reads: `conn.rs`) or grouped writes (SET, MSET,
/// INCR, …: `write_group.rs`), counted as [`execute`] counts commands,
/// each taking an equal share of the run's time. `slots[i]` is the
/// statistics slot [`batch_shape`] or [`groupable`] gave for `reqs[i]`,
/// `error_of(i)` its error if it failed.
pub fn record_grouped<'e>(
    shared: &Shared,
    conn: &ConnState,
    reqs: &[Vec<Bytes>],
    slots: &[usize],
    began: Instant,
    error_of: impl Fn(usize) -> Option<&'e str>,
) {
    record_run(shared, conn, reqs, |i| slots[i], began, error_of);
}

/// Records a run of commands `reqs` answered together, started at
/// `began`, as [`execute`] counts commands, each taking an equal share of
/// the run's time; command `i` has statistics slot `slot_of(i)`, and
/// failed if `error_of(i)` is its error.
fn record_run<'e>(
    shared: &Shared,
    conn: &ConnState,
    reqs: &[Vec<Bytes>],
    slot_of: impl Fn(usize) -> usize,
    began: Instant,
    error_of: impl Fn(usize) -> Option<&'e str>,
) {
    if reqs.is_empty() {
        return;
    }
    if shared.monitors.active() {
        for (i, args) in reqs.iter().enumerate() {
            feed_monitors(shared, conn, slot_of(i), args);
        }
    }
    let n = reqs.len() as u32;
    shared
        .stats
        .commands
        .fetch_add(u64::from(n), std::sync::atomic::Ordering::Relaxed);
    let each = began.elapsed() / n;
    // Calls per slot and outcome, in a run of consecutive commands of one
    // slot and outcome.
    let mut run: Option<(usize, bool, u32)> = None;
    for i in 0..reqs.len() {
        let (slot, failed) = (slot_of(i), error_of(i).is_some());
        match &mut run {
            Some((s, f, calls)) if *s == slot && *f == failed => *calls += 1,
            _ => {
                if let Some((s, f, calls)) = run.replace((slot, failed, 1)) {
                    shared.cmdstats.record(s, u64::from(calls), each * calls, f);
                }
            }
        }
    }
    // The last command's slot, for CLIENT LIST.
    let mut last = 0;
    if let Some((s, f, calls)) = run {
        shared.cmdstats.record(s, u64::from(calls), each * calls, f);
        last = s;
    }
    for text in (0..reqs.len()).filter_map(&error_of) {
        shared.cmdstats.count_error(text);
    }
    if is_slow(shared, each) {
        for args in reqs {
            log_slow(shared, conn, args, each);
        }
    }
    conn.client.touch(began, last);
}

#[cfg(test)]
mod tests {
    use super::*;
    use keys::TtlQuery;

    /// What each collection write says it looks up (`CommandSpec::lookups`),
    /// read ahead by EXEC and write groups; the others say nothing.
    #[test]
    fn collection_writes_name_the_elements_they_look_up() {
        let cases: &[(&str, &str, Kind, &[&str])] = &[
            ("hset", "k f1 v1 f2 v2", Kind::Hash, &["f1", "f2"]),
            ("hmset", "k f1 v1", Kind::Hash, &["f1"]),
            ("hsetnx", "k f v", Kind::Hash, &["f"]),
            ("hdel", "k a b", Kind::Hash, &["a", "b"]),
            ("hincrby", "k f 3", Kind::Hash, &["f"]),
            ("hincrbyfloat", "k f 0.5", Kind::Hash, &["f"]),
            ("sadd", "k a b", Kind::Set, &["a", "b"]),
            ("srem", "k a", Kind::Set, &["a"]),
            ("zadd", "k NX ch 1 a 2 b", Kind::ZSet, &["a", "b"]),
            ("zadd", "k 1 a 2", Kind::ZSet, &["a"]),
            ("zincrby", "k 2 m", Kind::ZSet, &["m"]),
            ("zrem", "k a b", Kind::ZSet, &["a", "b"]),
        ];
        for &(name, args, kind, want) in cases {
            let args: Vec<Bytes> = args.split(' ').map(|w| Bytes::from(w.to_owned())).collect();
            let spec = spec_at(lookup_index(name.as_bytes()).unwrap());
            let (k, lookups) = spec.lookups.unwrap();
            assert_eq!(k, kind, "{name}");
            let got: Vec<&[u8]> = lookups(&args);
            let want: Vec<&[u8]> = want.iter().map(|w| w.as_bytes()).collect();
            assert_eq!(got, want, "{name} {args:?}");
        }
        for name in ["hget", "hmget", "set", "lpush", "smove", "zrangestore"] {
            let spec = spec_at(lookup_index(name.as_bytes()).unwrap());
            assert!(spec.lookups.is_none(), "{name}");
        }
    }

    fn positions(keys: (i32, i32, i32), argc: usize) -> Vec<usize> {
        key_positions(keys, argc).collect()
    }

    #[test]
    fn key_positions_follow_the_command_table() {
        assert_eq!(positions(KEY1, 3), [1]);
        assert_eq!(positions(ALL_KEYS, 4), [1, 2, 3]);
        assert_eq!(positions((1, -1, 2), 5), [1, 3]);
        assert_eq!(positions((1, 2, 1), 5), [1, 2]);
        assert_eq!(positions(NO_KEYS, 5), Vec::<usize>::new());
        // Fewer arguments than the table names: no out-of-range index.
        assert_eq!(positions((1, 2, 1), 2), [1]);
        assert_eq!(positions(ALL_KEYS, 1), Vec::<usize>::new());
    }

    #[test]
    fn the_table_says_which_reads_a_batched_run_takes() {
        let shape = |line: &str| {
            let args: Vec<Bytes> = line
                .split(' ')
                .map(|a| Bytes::from(a.to_string()))
                .collect();
            batch_shape(&args)
                .map(|(index, shape)| (all_commands().nth(index).unwrap().name, shape))
        };
        assert_eq!(shape("GeT k"), Some(("get", Shape::Get)));
        assert_eq!(shape("mget a b c"), Some(("mget", Shape::Mget(3))));
        assert_eq!(shape("hget h f"), Some(("hget", Shape::HGet)));
        assert_eq!(shape("HMGET h f g"), Some(("hmget", Shape::HMget(2))));
        assert_eq!(
            shape("sismember s m"),
            Some(("sismember", Shape::SIsMember))
        );
        assert_eq!(
            shape("smismember s m"),
            Some(("smismember", Shape::SMIsMember(1)))
        );
        assert_eq!(shape("zscore z m"), Some(("zscore", Shape::ZScore)));
        assert_eq!(
            shape("zmscore z m n o"),
            Some(("zmscore", Shape::ZMScore(3)))
        );
        assert_eq!(shape("geopos g a b"), Some(("geopos", Shape::GeoPos(2))));
        assert_eq!(shape("geohash g a"), Some(("geohash", Shape::GeoHash(1))));
        assert_eq!(
            shape("geodist g a b"),
            Some(("geodist", Shape::GeoDist(geo::Unit::M)))
        );
        assert_eq!(
            shape("geodist g a b KM"),
            Some(("geodist", Shape::GeoDist(geo::Unit::Km)))
        );
        // A bad unit or arity: run alone (the handler's error).
        assert_eq!(shape("geodist g a b parsec"), None);
        assert_eq!(shape("geodist g a b km x"), None);
        // No members: run alone (an empty array).
        assert_eq!(shape("geopos g"), None);
        assert_eq!(shape("strlen s"), Some(("strlen", Shape::StrLen)));
        let getrange = |start, end| Shape::GetRange { start, end };
        assert_eq!(
            shape("GETRANGE s 0 -1"),
            Some(("getrange", getrange(0, -1)))
        );
        assert_eq!(shape("substr s -3 9"), Some(("substr", getrange(-3, 9))));
        assert_eq!(shape("getrange s 0 x"), None);
        assert_eq!(
            shape("getbit s 8388607"),
            Some(("getbit", Shape::GetBit(8388607)))
        );
        for line in ["getbit s 8388608", "getbit s -1", "getbit s x"] {
            assert_eq!(shape(line), None, "{line}");
        }
        assert_eq!(shape("exists a b a"), Some(("exists", Shape::Exists(3))));
        for line in [
            "bitcount b",
            "bitcount b 0 -1",
            "BITCOUNT b -3 9 bit",
            "bitcount b 1 2 Byte",
        ] {
            assert!(
                matches!(shape(line), Some(("bitcount", Shape::BitCount(_)))),
                "{line}"
            );
        }
        for line in [
            "bitcount b 0",
            "bitcount b 0 x",
            "bitcount b 0 1 bits",
            "bitcount b 0 1 bit x",
            "bitcount b 0 2147483648",
        ] {
            assert_eq!(shape(line), None, "{line}");
        }
        assert_eq!(shape("type k"), Some(("type", Shape::Type)));
        for (line, name, q) in [
            ("ttl k", "ttl", TtlQuery::TTL),
            ("PTTL k", "pttl", TtlQuery::PTTL),
            ("expiretime k", "expiretime", TtlQuery::EXPIRETIME),
            ("pexpiretime k", "pexpiretime", TtlQuery::PEXPIRETIME),
        ] {
            assert_eq!(shape(line), Some((name, Shape::Ttl(q))));
        }
        // BITFIELD_RO of 1-4 GETs whose fields are valid at any
        // proto-max-bulk-len; anything else runs alone.
        for line in [
            "bitfield_ro b GET u8 0",
            "BITFIELD_RO b get i64 #131071 GET u1 8388607 get i5 3 GET u63 #2",
        ] {
            assert!(
                matches!(shape(line), Some(("bitfield_ro", Shape::FieldGets(_)))),
                "{line}"
            );
        }
        for line in [
            "bitfield_ro b",
            "bitfield_ro b GET u8",
            "bitfield_ro b GET u8 0 GET u8 1 GET u8 2 GET u8 3 GET u8 4",
            "bitfield_ro b OVERFLOW WRAP GET u8 0",
            "bitfield_ro b SET u8 0 1",
            "bitfield_ro b GET u64 0",
            "bitfield_ro b GET U8 0",
            "bitfield_ro b GET u8 -1",
            "bitfield_ro b GET u8 8388608",
            "bitfield_ro b GET i64 #131072",
            "bitfield b GET u8 0",
        ] {
            assert_eq!(shape(line), None, "{line}");
        }
        assert_eq!(shape("hexists h f"), Some(("hexists", Shape::HExists)));
        assert_eq!(shape("hstrlen h f"), Some(("hstrlen", Shape::HStrLen)));
        assert_eq!(shape("lindex l -1"), Some(("lindex", Shape::LIndex)));
        // LRANGE when its span holds at most 16 elements, whatever the
        // list's length: integers of one sign, at most 15 apart.
        let lrange = |start, end| Some(("lrange", Shape::LRange { start, end }));
        assert_eq!(shape("lrange l 0 9"), lrange(0, 9));
        assert_eq!(shape("lrange l 0 15"), lrange(0, 15));
        assert_eq!(shape("LRANGE l -16 -1"), lrange(-16, -1));
        assert_eq!(shape("lrange l 5 0"), lrange(5, 0));
        for line in [
            "lrange l 0 16",
            "lrange l -17 -1",
            "lrange l 0 -1",
            "lrange l -1 0",
            "lrange l x 1",
            "lrange l 0 1.5",
            "lrange l -9223372036854775808 9223372036854775807",
        ] {
            assert_eq!(shape(line), None, "{line}");
        }
        for (line, name, kind) in [
            ("hlen h", "hlen", Kind::Hash),
            ("scard s", "scard", Kind::Set),
            ("ZCARD z", "zcard", Kind::ZSet),
            ("llen l", "llen", Kind::List),
            ("xlen x", "xlen", Kind::Stream),
        ] {
            assert_eq!(shape(line), Some((name, Shape::Card(kind))));
        }
        // The wrong arity runs alone (and answers the error); so does
        // every other command.
        for line in [
            "get",
            "get a b",
            "mget",
            "hget h",
            "hmget h",
            "zscore z m n",
            "set k v",
            "getx k",
        ] {
            assert_eq!(shape(line), None, "{line}");
        }
        // Only keyed reads are batched: the batcher reads without locks.
        for c in all_commands().filter(|c| c.batch.is_some()) {
            assert!(
                c.flags.contains(&"readonly") && c.first_key == 1,
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn only_commands_flagged_no_auth_run_before_auth() {
        let no_auth: Vec<_> = all_commands()
            .filter(|c| c.flags.contains(&"no_auth"))
            .map(|c| c.name)
            .collect();
        assert_eq!(no_auth, ["auth", "hello", "quit", "reset"]);
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"0"), Some(0));
        for bad in [
            &b"+1"[..],
            b"01",
            b"1.0",
            b"",
            b" 1",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn command_names_are_unique_and_arity_is_checked() {
        let all: Vec<_> = all_commands().collect();
        for (i, c) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|o| o.name != c.name), "{}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(lookup(c.name.to_uppercase().as_bytes()).is_some());
        }
        let get = lookup(b"GeT").unwrap();
        assert!(arity_ok(get, 2) && !arity_ok(get, 3));
        let mget = lookup(b"mget").unwrap();
        assert!(arity_ok(mget, 5) && !arity_ok(mget, 1));
    }
}
