//! Write grouping: a run of pipelined write commands executed as one
//! engine write.
//!
//! Executed one by one, each write pays a WAL record and its `write`
//! call, a pass through the engine's write queue, and a lookup of its keys
//! for the key counts (`keycount.rs`). A run of them in one pipeline is one
//! engine write instead, in one of two ways:
//!
//! - **Blind string writes** (plain `SET key value`, `MSET`; a run of one
//!   too) become one [`WriteBatch`] under the stripe locks of all their
//!   keys: one WAL record, one write queue pass, one batched memtable
//!   insert. Such runs of *all connections* are combined further
//!   ([`WriteCombiner`], the protocol of `combine.rs`, with a leader per
//!   server thread at most): 50 clients each sending one SET are a few
//!   engine writes, not 50.
//! - **String read-modify-writes** (INCR, DECR, INCRBY, DECRBY, APPEND;
//!   a run of one too) read their distinct keys once and write the last
//!   value of each in one batch, under the stripe locks of all their keys
//!   (`commands/string_runs.rs`, which says why that is the same). Such
//!   runs of all connections are combined further, as blind writes are
//!   ([`UpdateCombiner`]): one lock set, one `multi_get`, one write.
//! - **Any other run of two or more keyed write commands** (HSET, LPUSH,
//!   SET with options, a mix of kinds, …: [`commands::groupable`]) runs as
//!   EXEC runs a transaction (`tx.rs`): the stripes of all their keys
//!   locked, the keys and the elements the collection writes look up read
//!   ahead in two `multi_get`s (`commands/tx.rs`), each command reading
//!   through the overlay of the ones before it, one write. Such runs of
//!   all connections are combined too ([`CommandCombiner`]): one lock set,
//!   the two `multi_get`s and one write for all of them, each run's
//!   commands executed on a copy of its connection's state
//!   ([`ConnState::detached`]; grouped commands change none of it). A
//!   subscriber's runs are not combined (its messages must stay in order
//!   with its replies).
//!
//! # Why this is the same as running them in order
//! - Each command sees the writes of the ones before it: a [`WriteBatch`]
//!   applies its operations in order, and blind writes read nothing; the
//!   overlay answers the reads of the others.
//! - The run's keys are locked before anything is read, so no other
//!   command interleaves with it: other clients see none of the run or
//!   all of it, a schedule a one-by-one execution could also have given.
//!   The write is atomic, so a crash keeps a prefix of the client's
//!   commands either way.
//! - A blind write that replaces a collection drops its elements
//!   (`Shared::clear_old`), read before the run's write: a key written
//!   twice in the run has its old elements dropped twice, which deletes
//!   nothing more.
//! - WATCH (`tx.rs`) and the key counts see the one batch as they would the
//!   sequence of batches: both replay its operations in order.
//!
//! Combining runs of several connections keeps these properties: each
//! run is one connection's next commands, the leader locks the keys of
//! all the runs it writes before reading any, and a run whose old value
//! cannot be read (`clear_old` fails) is taken out of the batch (a save
//! point) and answers the error, the others are written. A failed engine
//! write fails every run in it, as one connection's run fails as a whole.
//! Combined string updates are one run of all their commands, in the
//! order of their connections' runs: a command that fails answers its
//! error and changes nothing, the others go on.
//!
//! A command the run cannot take (a read, a blocking or keyless command,
//! a wrong arity, a key over the limit, …) ends the run and goes through
//! the normal path, which answers it, errors included.

use std::sync::atomic::Ordering;
use std::sync::Weak;

use bytes::{Bytes, BytesMut};

use batchkv::WriteBatch;

use crate::batcher::{Keys, Shape};
use crate::combine::{Combiner, Execute, Gather, Limits};
use crate::commands::{self, CommandSpec, ConnState};
use crate::keyspace::{self, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::resp::Reply;
use crate::shared::Shared;

/// Commands in one group at most.
const MAX_GROUP_COMMANDS: usize = 1024;
/// Key and value bytes in one group at most (the batch holds a copy).
const MAX_GROUP_BYTES: usize = 4 << 20;

/// The `(key, value)` pairs `args` writes if it is a blind string write a
/// group can take: `SET key value` or `MSET key value [key value ...]`,
/// keys and values within the limits.
fn pairs(args: &[Bytes]) -> Option<std::slice::ChunksExact<'_, Bytes>> {
    let name = &args[0];
    let fits = (args.len() == 3 && name.eq_ignore_ascii_case(b"set"))
        || (args.len() >= 3 && args.len() % 2 == 1 && name.eq_ignore_ascii_case(b"mset"));
    if !fits {
        return None;
    }
    let kv = args[1..].chunks_exact(2);
    let ok = kv
        .clone()
        .all(|p| p[0].len() <= MAX_KEY_LEN && p[1].len() <= MAX_VALUE_LEN);
    ok.then_some(kv)
}

/// A run of commands at the start of a pipeline that runs as one write.
/// The indexes are each command's in the command table, as
/// [`commands::groupable`] gives them (also their statistics slots).
pub enum Group {
    /// Blind string writes.
    Strings(Vec<usize>),
    /// String read-modify-writes.
    StringUpdates(Vec<usize>),
    /// These write commands, one per request (a single one is worth a
    /// group only to combine it with other connections').
    Commands(Vec<&'static CommandSpec>),
}

/// The group at the start of `reqs`, if any. Without `string_paths` a
/// run of string writes is a [`Group::Commands`] too: its handlers run
/// (keyspace notifications need them, `notify.rs`).
pub fn find(st: &ConnState, reqs: &[Vec<Bytes>], string_paths: bool) -> Option<Group> {
    // Sized at the first command that groups, for the pipeline's rest (up
    // to 64: a pipeline's run is mostly all of it, and a longer one grows).
    let (mut indexes, mut bytes) = (Vec::new(), 0);
    let (mut blind, mut updates) = (string_paths, string_paths);
    // A pipeline mostly repeats one command: a name equal to the previous
    // one's needs no lookup, and (its arity checked by `groupable`, which
    // is exact for the string updates) is a string update if that was.
    let mut last: Option<(&Bytes, usize, bool)> = None;
    for args in reqs.iter().take(MAX_GROUP_COMMANDS) {
        let same = last.filter(|(name, ..)| **name == args[0]);
        let Some(index) = commands::groupable(st, args, same.map(|(_, i, _)| i)) else {
            break;
        };
        let size: usize = args.iter().map(Bytes::len).sum();
        if !indexes.is_empty() && bytes + size > MAX_GROUP_BYTES {
            break;
        }
        bytes += size;
        blind &= pairs(args).is_some();
        let update = match same {
            Some((.., update)) => update,
            None => commands::is_string_update(args),
        };
        updates &= update;
        last = Some((&args[0], index, update));
        if indexes.is_empty() {
            indexes.reserve(reqs.len().min(64));
        }
        indexes.push(index);
    }
    match indexes.len() {
        0 => None,
        _ if blind => Some(Group::Strings(indexes)),
        _ if updates => Some(Group::StringUpdates(indexes)),
        _ => Some(Group::Commands(
            indexes.into_iter().map(commands::spec_at).collect(),
        )),
    }
}

/// Runs of blind string writes of several connections combined into one
/// engine write.
pub type WriteCombiner = Combiner<StringWrites>;

/// A combined batch's weight at most: key and value bytes
/// ([`Strings::weight`]).
const MAX_COMBINED_BYTES: usize = MAX_GROUP_BYTES;
/// A run lighter than this joins a leader gathering on its thread, and
/// its leader gathers: every run but the largest.
const GATHER_BELOW_BYTES: usize = 64 << 10;

/// How a run of string writes gathers: only while gatherers find other
/// runs ([`Gather::WhileItFinds`]), a pipeline too: with two clients
/// sending pipelines of 10 SETs, yields that found nobody cost 2–15 % of
/// the CPU per SET; under load (50 clients) the average stays over the
/// threshold and every leader gathers. Any run joins a gathering leader.
fn gather_runs() -> Gather {
    Gather::WhileItFinds
}
/// Bytes a pair weighs besides its key and value (the batch entry's
/// header and the key's lock).
const PAIR_WEIGHT: usize = 32;

/// The limits of both write combiners (weights in bytes).
const LIMITS: Limits = Limits {
    gather_below: GATHER_BELOW_BYTES,
    max_batch: MAX_COMBINED_BYTES,
};

/// A combiner for the server `shared` (which holds it), with up to
/// `leaders` (the server's threads) writing at once.
///
/// One leader per thread, not one in all: with a single leader, the
/// thread that leads writes the runs of every connection while the other
/// threads' connections wait for it and their threads idle; the threads
/// took turns, and 2 of them did no more than 1. Concurrent leaders read
/// and prepare their batches in parallel and meet in the engine's group
/// commit. Their key sets rarely share a lock stripe ([`STRIPES`]).
///
/// [`STRIPES`]: crate::shared::STRIPES
pub fn combiner(shared: Weak<Shared>, leaders: usize) -> WriteCombiner {
    Combiner::with(StringWrites { shared }, leaders.max(1), LIMITS)
}

/// One connection's run of blind string writes: the request of a
/// [`WriteCombiner`].
pub struct Strings {
    /// Stored keys (database prefix included), in command order.
    keys: Keys,
    /// The value of each key.
    values: Vec<Bytes>,
    /// Commands in the run (each answers the same reply).
    commands: usize,
    proto: u8,
}

impl Strings {
    /// The run `reqs` of [`Group::Strings`] of a connection in state `st`.
    pub fn new(st: &ConnState, reqs: &[Vec<Bytes>]) -> Strings {
        // A SET is 3 arguments, an MSET pair 2 more.
        let n = reqs.iter().map(|a| a.len() / 2).sum();
        let (mut names, mut values) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for p in reqs
            .iter()
            .flat_map(|args| pairs(args).into_iter().flatten())
        {
            names.push(&p[0]);
            values.push(p[1].clone());
        }
        Strings {
            keys: stored_keys(st.db, &names),
            values,
            commands: reqs.len(),
            proto: st.proto,
        }
    }

    fn weight(&self) -> usize {
        self.keys.byte_len()
            + self.values.iter().map(Bytes::len).sum::<usize>()
            + PAIR_WEIGHT * self.values.len()
    }
}

/// The stored keys of `names` in database `db`, in one buffer sized once
/// (the layout of an MGET's keys).
pub fn stored_keys(db: u8, names: &[&Bytes]) -> Keys {
    let mut keys = Keys::default();
    keys.push_args(db, Shape::Mget(names.len()), names);
    keys
}

/// What a run got: every command answered, with `error` (the error all of
/// them answered) or `+OK`. The default, no command answered, means the
/// run was never executed (its connection must close).
#[derive(Debug, Default)]
pub struct Written {
    pub commands: usize,
    pub error: Option<String>,
}

/// The engine call of a [`WriteCombiner`].
pub struct StringWrites {
    /// The server (a weak reference: it holds the combiner).
    shared: Weak<Shared>,
}

type Job = crate::combine::Job<Strings, Written>;

impl Execute for StringWrites {
    type Request = Strings;
    type Answer = Written;

    fn size(req: &Strings) -> usize {
        req.weight()
    }

    fn gathers(_: &Strings) -> Gather {
        gather_runs()
    }

    fn execute(&self, own: Option<(&Strings, &mut BytesMut)>, jobs: Vec<Job>) -> Option<Written> {
        let (own_req, own_out) = own.unzip();
        let runs: Vec<&Strings> = own_req
            .into_iter()
            .chain(jobs.iter().map(|j| &j.req))
            .collect();
        let results = on_server(
            &self.shared,
            || format!("a combined write of {} runs of writes", runs.len()),
            runs.len(),
            Err,
            |shared| write(shared, &runs),
        );
        // What each run's replies need, so that the jobs can be handed out.
        let shapes: Vec<(usize, u8)> = runs.iter().map(|r| (r.commands, r.proto)).collect();
        crate::combine::deliver(own_out, jobs, |i, out| {
            let (commands, proto) = shapes[i];
            let ok = Reply::ok();
            let reply = results[i].as_ref().err().unwrap_or(&ok);
            for _ in 0..commands {
                reply.encode(proto, out);
            }
            Written {
                commands,
                error: match reply {
                    Reply::Error(text) => Some(text.clone()),
                    _ => None,
                },
            }
        })
    }
}

/// Runs `f`, a combiner's engine call giving `n` results, on the server
/// `shared` refers to, as the panic boundary of its batch (`what` names
/// the batch in the log): if `f` panicked, or the server is gone, every
/// result is `failed` of the error that says so.
fn on_server<T: Clone>(
    shared: &Weak<Shared>,
    what: impl FnOnce() -> String,
    n: usize,
    failed: impl Fn(Reply) -> T,
    f: impl FnOnce(&Shared) -> Vec<T>,
) -> Vec<T> {
    match shared.upgrade() {
        Some(shared) => crate::panics::catch(what, || f(&shared))
            .unwrap_or_else(|| vec![failed(Reply::err(crate::panics::INTERNAL_ERROR)); n]),
        None => vec![failed(Reply::err("ERR server is shutting down")); n],
    }
}

/// Runs of string read-modify-writes (INCR, APPEND, …) of several
/// connections combined into one engine write (`string_runs.rs`).
pub type UpdateCombiner = Combiner<StringUpdates>;

/// A combiner for the server `shared` (which holds it), with the limits
/// and the leaders of the blind writes' [`combiner`]: each batch's reads
/// and write are done under the locks of its keys.
pub fn update_combiner(shared: Weak<Shared>, leaders: usize) -> UpdateCombiner {
    Combiner::with(StringUpdates { shared }, leaders.max(1), LIMITS)
}

/// One connection's run of string read-modify-writes: the request of an
/// [`UpdateCombiner`].
pub struct Updates {
    /// The commands (each `commands::is_string_update`).
    reqs: Vec<Vec<Bytes>>,
    db: u8,
    proto: u8,
}

impl Updates {
    /// The run `reqs` of [`Group::StringUpdates`] of a connection in state
    /// `st`.
    pub fn new(st: &ConnState, reqs: &[Vec<Bytes>]) -> Updates {
        Updates {
            reqs: reqs.to_vec(),
            db: st.db,
            proto: st.proto,
        }
    }

    fn weight(&self) -> usize {
        let args: usize = self.reqs.iter().flatten().map(Bytes::len).sum();
        args + PAIR_WEIGHT * self.reqs.len()
    }
}

/// What a run of updates got: how many commands were answered (none: the
/// run was never executed, its connection must close) and the errors
/// among their replies, as (command index in the run, error text).
#[derive(Debug, Default)]
pub struct Updated {
    pub commands: usize,
    pub errors: Vec<(usize, String)>,
}

/// The engine call of an [`UpdateCombiner`].
pub struct StringUpdates {
    /// The server (a weak reference: it holds the combiner).
    shared: Weak<Shared>,
}

impl Execute for StringUpdates {
    type Request = Updates;
    type Answer = Updated;

    fn size(req: &Updates) -> usize {
        req.weight()
    }

    fn gathers(_: &Updates) -> Gather {
        gather_runs()
    }

    fn execute(
        &self,
        own: Option<(&Updates, &mut BytesMut)>,
        jobs: Vec<crate::combine::Job<Updates, Updated>>,
    ) -> Option<Updated> {
        let (own_req, own_out) = own.unzip();
        let runs: Vec<commands::StringRun<'_>> = own_req
            .into_iter()
            .chain(jobs.iter().map(|j| &j.req))
            .map(|r| (r.db, &r.reqs[..]))
            .collect();
        let n = runs.iter().map(|(_, reqs)| reqs.len()).sum();
        let replies = on_server(
            &self.shared,
            || format!("a combined run of {n} string updates"),
            n,
            |reply| reply,
            |shared| commands::run_string_updates(shared, &runs),
        );
        // What each run's replies need, so that the jobs can be handed out.
        let shapes: Vec<(usize, u8)> = own_req
            .into_iter()
            .chain(jobs.iter().map(|j| &j.req))
            .map(|r| (r.reqs.len(), r.proto))
            .collect();
        drop(runs);
        // The runs are answered in order; each one's replies follow the
        // previous one's.
        let mut first = 0;
        crate::combine::deliver(own_out, jobs, |i, out| {
            let (commands, proto) = shapes[i];
            let replies = &replies[first..first + commands];
            first += commands;
            let mut errors = Vec::new();
            for (at, reply) in replies.iter().enumerate() {
                reply.encode(proto, out);
                if let Reply::Error(text) = reply {
                    errors.push((at, text.clone()));
                }
            }
            Updated { commands, errors }
        })
    }
}

/// Writes the pairs of `runs` as one batch under the locks of all their
/// keys: for each run, `Ok` (written) or the error it answers.
fn write(shared: &Shared, runs: &[&Strings]) -> Vec<Result<(), Reply>> {
    let keys: Vec<&[u8]> = runs.iter().flat_map(|r| r.keys.iter()).collect();
    let _g = shared.lock_keys(&keys);
    // The collections the runs replace, read in one batch (`None`: none
    // was ever created; or the read failed, and each key is read alone,
    // so that only the runs whose key cannot be read answer the error).
    let olds = shared.old_collections(&keys).ok().flatten();
    let mut first = 0;
    // Sized once: the runs' keys and values and an entry header each.
    let mut b = WriteBatch::with_capacity(runs.iter().map(|r| r.weight()).sum());
    let mut results = Vec::with_capacity(runs.len());
    // Each value's stored encoding, built here (the batch copies it).
    let mut encoded = Vec::new();
    for run in runs {
        b.set_save_point();
        let mut result = Ok(());
        // Each run's keys follow the previous run's in `keys`.
        let own = first..first + run.values.len();
        first += run.values.len();
        for (at, value) in own.zip(&run.values) {
            let key = keys[at];
            let cleared = match olds.as_ref().map(|o| &o[at]) {
                Some(Some(old)) => shared.drop_elements(&mut b, key, old),
                Some(None) => Ok(()),
                None => shared.clear_old(&mut b, key),
            };
            #[cfg(test)]
            let cleared = cleared.and_then(|()| tests::injected_failure(key));
            if let Err(e) = cleared {
                result = Err(e);
                break;
            }
            // `keyspace::put_value` without an expiry, without an
            // allocation per value.
            keyspace::encode_value_into(&mut encoded, value, None);
            b.put(key, &encoded);
        }
        // The save point was set just above: neither call can fail.
        let restored = if result.is_ok() {
            b.pop_save_point()
        } else {
            b.rollback_to_save_point()
        };
        debug_assert!(restored.is_ok());
        results.push(result);
    }
    let stats = &shared.stats;
    stats.write_batches.fetch_add(1, Ordering::Relaxed);
    let commands = runs.iter().map(|r| r.commands as u64).sum();
    stats
        .write_batched_commands
        .fetch_add(commands, Ordering::Relaxed);
    if b.is_empty() {
        return results;
    }
    if let Err(e) = shared.write(b) {
        for r in results.iter_mut().filter(|r| r.is_ok()) {
            *r = Err(e.clone());
        }
    }
    results
}

/// Runs of other write commands (HSET, SADD, LPUSH, SET with options, a
/// mix, …: [`Group::Commands`]) of several connections combined into one
/// engine write (`commands::run_groups`).
pub type CommandCombiner = Combiner<CommandRuns>;

/// A combiner for the server `shared` (which holds it), with the limits
/// and the leaders of the string combiners.
pub fn command_combiner(shared: Weak<Shared>, leaders: usize) -> CommandCombiner {
    Combiner::with(CommandRuns { shared }, leaders.max(1), LIMITS)
}

/// One connection's run of write commands: the request of a
/// [`CommandCombiner`].
pub struct Commands {
    /// A copy of the connection's state ([`ConnState::detached`]).
    st: ConnState,
    cmds: Vec<(&'static CommandSpec, Vec<Bytes>)>,
}

impl Commands {
    /// The run `cmds` ([`Group::Commands`]) of a connection in state `st`
    /// (not a subscriber: a subscriber's messages must stay in order with
    /// its replies, so its runs are not combined).
    pub fn new(st: &ConnState, cmds: &[(&'static CommandSpec, &[Bytes])]) -> Commands {
        Commands {
            st: st.detached(),
            cmds: cmds
                .iter()
                .map(|&(spec, args)| (spec, args.to_vec()))
                .collect(),
        }
    }

    fn weight(&self) -> usize {
        let args: usize = self.cmds.iter().flat_map(|(_, a)| a).map(Bytes::len).sum();
        args + PAIR_WEIGHT * self.cmds.len()
    }
}

/// The engine call of a [`CommandCombiner`]; its answer is how many of a
/// run's commands were answered (none: the run was never executed, its
/// connection must close).
pub struct CommandRuns {
    /// The server (a weak reference: it holds the combiner).
    shared: Weak<Shared>,
}

impl Execute for CommandRuns {
    type Request = Commands;
    type Answer = usize;

    fn size(req: &Commands) -> usize {
        req.weight()
    }

    fn gathers(_: &Commands) -> Gather {
        // A single command is submitted only where it joins a gatherer or
        // gathers (`Combiner::takes_single`, in `conn.rs`); otherwise it
        // takes the cheaper normal path. A pipeline's run always gathers:
        // behind the moving average, HSET pipelines of two clients (`-c 2
        // -P 10`) measured 4–9 % slower.
        Gather::Always
    }

    fn execute(
        &self,
        own: Option<(&Commands, &mut BytesMut)>,
        jobs: Vec<crate::combine::Job<Commands, usize>>,
    ) -> Option<usize> {
        let (own_req, own_out) = own.unzip();
        let reqs: Vec<&Commands> = own_req
            .into_iter()
            .chain(jobs.iter().map(|j| &j.req))
            .collect();
        let mut conns: Vec<ConnState> = reqs.iter().map(|r| r.st.detached()).collect();
        let cmds: Vec<Vec<(&'static CommandSpec, &[Bytes])>> = reqs
            .iter()
            .map(|r| r.cmds.iter().map(|(s, a)| (*s, a.as_slice())).collect())
            .collect();
        let n: usize = cmds.iter().map(Vec::len).sum();
        // Per run: its replies, or (a panic, the server gone) the error
        // that answers each of its commands.
        let results = on_server(
            &self.shared,
            || format!("a combined group of {n} write commands"),
            cmds.len(),
            Err,
            |shared| {
                let mut runs: Vec<commands::GroupRun<'_, '_>> = conns
                    .iter_mut()
                    .zip(&cmds)
                    .map(|(conn, cmds)| commands::GroupRun { conn, cmds })
                    .collect();
                commands::run_groups(shared, &mut runs)
                    .into_iter()
                    .map(Ok)
                    .collect()
            },
        );
        // What each run's replies need, so that the jobs can be handed out.
        let shapes: Vec<(usize, u8)> = reqs.iter().map(|r| (r.cmds.len(), r.st.proto)).collect();
        drop((cmds, reqs));
        crate::combine::deliver(own_out, jobs, |i, out| {
            let (commands, proto) = shapes[i];
            match &results[i] {
                Ok(replies) => replies.iter().for_each(|r| r.encode(proto, out)),
                Err(e) => (0..commands).for_each(|_| e.encode(proto, out)),
            }
            commands
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use batchkv::Db;

    use super::*;
    use crate::config::Config;
    use crate::shared::new_shared;

    thread_local! {
        /// A stored key whose old value "cannot be read" on this thread.
        static FAIL_KEY: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
    }

    /// The test hook in `write`: an error for the key set in `FAIL_KEY`.
    pub(super) fn injected_failure(key: &[u8]) -> Result<(), Reply> {
        match FAIL_KEY.with(|f| f.borrow().as_deref() == Some(key)) {
            true => Err(Reply::err("ERR injected read failure")),
            false => Ok(()),
        }
    }

    fn server(dir: &std::path::Path) -> Arc<Shared> {
        let mut cfg = Config::new(dir);
        cfg.threads = 1;
        let db = Db::open(dir, cfg.options.clone()).unwrap();
        let (tx, _rx) = tokio::sync::watch::channel(false);
        new_shared(db, cfg, 0, tx)
    }

    /// Connection `c`'s run: `commands` SETs of `k{c}-{i}` to `v{c}-{i}`.
    fn run(c: usize, commands: usize, proto: u8) -> Strings {
        let mut keys = Keys::default();
        let mut values = Vec::new();
        for i in 0..commands {
            keys.push(0, format!("k{c}-{i}").as_bytes());
            values.push(Bytes::from(format!("v{c}-{i}")));
        }
        Strings {
            keys,
            values,
            commands,
            proto,
        }
    }

    fn value(shared: &Shared, key: &str) -> Option<Vec<u8>> {
        let raw = shared
            .db
            .get(keyspace::db_key(0, key.as_bytes()))
            .unwrap()?;
        Some(keyspace::decode_value(&raw).unwrap().data.to_vec())
    }

    fn engine_writes(shared: &Shared) -> u64 {
        shared.db.statistics().write_latency.count
    }

    /// Runs submitted by concurrent connections while a leader gathers are
    /// one engine write; each connection gets exactly its replies, and
    /// every pair is written. A lone client (no combining) writes alone.
    #[test]
    fn runs_of_concurrent_connections_share_one_engine_write() {
        let dir = tempfile::tempdir().unwrap();
        let shared = server(dir.path());
        let writes = shared.writes.clone().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = engine_writes(&shared);
        rt.block_on(async {
            let tasks: Vec<_> = (0..8)
                .map(|c| {
                    let w = writes.clone();
                    tokio::spawn(async move {
                        let mut out = BytesMut::new();
                        let a = w.submit(run(c, 2 + c % 3, 2), true, &mut out).await;
                        assert_eq!((a.commands, a.error), (2 + c % 3, None));
                        assert_eq!(&out[..], "+OK\r\n".repeat(2 + c % 3).as_bytes());
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(engine_writes(&shared) - before, 1);
        for c in 0..8 {
            for i in 0..2 + c % 3 {
                let want = format!("v{c}-{i}").into_bytes();
                assert_eq!(value(&shared, &format!("k{c}-{i}")), Some(want));
            }
        }
        // Without combining, each run is a write of its own.
        let before = engine_writes(&shared);
        rt.block_on(async {
            for c in 0..3 {
                let mut out = BytesMut::new();
                writes.submit(run(c, 2, 3), false, &mut out).await;
                assert_eq!(&out[..], b"+OK\r\n+OK\r\n");
            }
        });
        assert_eq!(engine_writes(&shared) - before, 3);
    }

    /// Connection `c`'s run of string updates: `args` in database 0.
    fn updates(args: &[&[&str]], proto: u8) -> Updates {
        let reqs = args
            .iter()
            .map(|a| a.iter().map(|w| Bytes::from(w.to_string())).collect())
            .collect();
        Updates { reqs, db: 0, proto }
    }

    /// Runs of INCR and APPEND submitted by concurrent connections while a
    /// leader gathers are one engine write over the same keys; each
    /// connection gets its replies in order and a failing command answers
    /// its error alone.
    #[test]
    fn string_updates_of_concurrent_connections_share_one_engine_write() {
        let dir = tempfile::tempdir().unwrap();
        let shared = server(dir.path());
        let combiner = shared.updates.clone().unwrap();
        shared
            .db
            .put(
                keyspace::db_key(0, b"text"),
                keyspace::encode_value(b"x", None),
            )
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = engine_writes(&shared);
        let outs = rt.block_on(async {
            let tasks: Vec<_> = (0..6)
                .map(|c| {
                    let u = combiner.clone();
                    tokio::spawn(async move {
                        let run = updates(
                            &[
                                &["incr", "n"],
                                &["incrby", "n", "10"],
                                &["incr", "text"],
                                &["append", "s", "ab"],
                            ],
                            2 + (c % 2) as u8,
                        );
                        let mut out = BytesMut::new();
                        let a = u.submit(run, true, &mut out).await;
                        (a, out)
                    })
                })
                .collect();
            let mut outs = Vec::new();
            for t in tasks {
                outs.push(t.await.unwrap());
            }
            outs
        });
        assert_eq!(engine_writes(&shared) - before, 1);
        let not_int = "ERR value is not an integer or out of range";
        for (c, (a, out)) in outs.into_iter().enumerate() {
            // The runs apply in the order they joined the batch: the
            // leader's first, then its followers'.
            let n = 11 * c as i64;
            let want = format!(
                ":{}\r\n:{}\r\n-{not_int}\r\n:{}\r\n",
                n + 1,
                n + 11,
                2 * (c + 1)
            );
            assert_eq!(std::str::from_utf8(&out).unwrap(), want, "connection {c}");
            assert_eq!(a.commands, 4);
            assert_eq!(a.errors, vec![(2, not_int.to_string())]);
        }
        assert_eq!(value(&shared, "n"), Some(b"66".to_vec()));
        assert_eq!(value(&shared, "s"), Some(b"ab".repeat(6)));
        assert_eq!(value(&shared, "text"), Some(b"x".to_vec()));
    }

    /// A run whose old value cannot be read answers the error and writes
    /// nothing, not even its pairs before the failing one; the other runs
    /// of the batch are written.
    #[test]
    fn a_failing_run_is_taken_out_of_the_combined_write() {
        let dir = tempfile::tempdir().unwrap();
        let shared = server(dir.path());
        let writes = shared.writes.clone().unwrap();
        let (a, b, c) = (run(0, 2, 2), run(1, 3, 2), run(2, 1, 2));
        FAIL_KEY.with(|f| *f.borrow_mut() = Some(keyspace::db_key(0, b"k1-1")));
        let (tx_b, rx_b) = tokio::sync::oneshot::channel();
        let (tx_c, rx_c) = tokio::sync::oneshot::channel();
        let jobs = vec![
            crate::combine::Job { req: b, tx: tx_b },
            crate::combine::Job { req: c, tx: tx_c },
        ];
        let mut out = BytesMut::from(&b"+PONG\r\n"[..]);
        let own = writes.exec().execute(Some((&a, &mut out)), jobs).unwrap();
        FAIL_KEY.with(|f| *f.borrow_mut() = None);
        assert_eq!((own.commands, own.error), (2, None));
        assert_eq!(&out[..], b"+PONG\r\n+OK\r\n+OK\r\n");
        let (out_b, written_b) = rx_b.blocking_recv().unwrap();
        let err = "-ERR injected read failure\r\n";
        assert_eq!(&out_b[..], err.repeat(3).as_bytes());
        assert_eq!(
            written_b.error.as_deref(),
            Some("ERR injected read failure")
        );
        let (out_c, _) = rx_c.blocking_recv().unwrap();
        assert_eq!(&out_c[..], b"+OK\r\n");
        assert_eq!(value(&shared, "k0-1"), Some(b"v0-1".to_vec()));
        assert_eq!(value(&shared, "k1-0"), None);
        assert_eq!(value(&shared, "k1-2"), None);
        assert_eq!(value(&shared, "k2-0"), Some(b"v2-0".to_vec()));
    }
}
