//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, and RESET (which
//! also ends them), with Redis 7's replies. The mechanism — one engine
//! write per EXEC, isolation, the modification table WATCH reads — is in
//! `tx.rs`; this module holds the connection's transaction state and the
//! commands.
//!
//! Between MULTI and EXEC, [`queue`] (called by `execute` once a command
//! passed the name, authentication and arity checks) queues every command
//! except EXEC, DISCARD, MULTI, WATCH, QUIT and RESET, which run at once.
//! A command rejected meanwhile ([`rejected`]: unknown, wrong arity,
//! NOAUTH, not allowed in a transaction) makes EXEC answer EXECABORT.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

use bytes::{Bytes, BytesMut};

use super::{spec, CommandSpec, ConnState, NO_KEYS};
use crate::keyspace::{self, db_key, Entry};
use crate::meta;
use crate::resp::Reply;
use crate::shared::{stripes_of, Shared};
use crate::tx;

const TX_FLAGS: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];

/// The transaction commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("multi", 1, TX_FLAGS, NO_KEYS, |_, c, _| multi(c)),
    spec(
        "exec",
        1,
        &["noscript", "loading", "stale", "skip_slowlog"],
        NO_KEYS,
        exec,
    ),
    spec("discard", 1, TX_FLAGS, NO_KEYS, |_, c, _| discard(c)),
    spec("watch", -2, TX_FLAGS, super::ALL_KEYS, watch),
    spec("unwatch", 1, TX_FLAGS, NO_KEYS, |_, c, _| {
        c.tx.watched = Watches::default();
        Reply::ok()
    }),
    spec("reset", 1, super::NO_AUTH, NO_KEYS, |s, c, _| reset(s, c)),
];

/// A connection's transaction state.
#[derive(Default)]
pub struct TxState {
    /// Between MULTI and EXEC/DISCARD: the queued commands.
    queue: Option<Queue>,
    /// WATCHed stored keys.
    watched: Watches,
}

/// A connection's WATCHed keys, and while it has any, its count among the
/// watchers (`tx::Mods::watch`: writes note their keys only while some
/// client watches).
#[derive(Default)]
struct Watches {
    keys: BTreeMap<Vec<u8>, Watched>,
    _counted: Option<tx::WatchToken>,
}

impl TxState {
    /// Whether the connection is between MULTI and EXEC/DISCARD.
    pub fn in_multi(&self) -> bool {
        self.queue.is_some()
    }

    /// Commands queued since MULTI (`None` outside MULTI).
    pub fn queued(&self) -> Option<usize> {
        self.queue.as_ref().map(|q| q.cmds.len())
    }

    /// Keys WATCHed.
    pub fn watched_count(&self) -> usize {
        self.watched.keys.len()
    }

    /// Ends the transaction, if any, and forgets the watched keys.
    fn discard(&mut self) {
        self.queue = None;
        self.watched = Watches::default();
    }
}

#[derive(Default)]
struct Queue {
    cmds: Vec<(&'static CommandSpec, Vec<Bytes>)>,
    /// A command was rejected while queuing: EXEC answers EXECABORT.
    failed: bool,
}

/// What WATCH saw of a key (see `tx.rs`).
struct Watched {
    slot: u32,
    /// The slot's modification counter.
    stamp: u64,
    /// The key held a live value.
    live: bool,
}

/// Queues `args` (checked against `spec`) if the connection is in a
/// transaction; returns the reply then (`+QUEUED`, or an error for a
/// command not allowed in a transaction), `None` to run it now.
pub fn queue(conn: &mut ConnState, spec: &'static CommandSpec, args: &[Bytes]) -> Option<Reply> {
    let q = conn.tx.queue.as_mut()?;
    match spec.name {
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset" => None,
        // SHUTDOWN, SAVE.
        _ if spec.flags.contains(&"no_multi") => {
            q.failed = true;
            Some(Reply::err("ERR Command not allowed inside a transaction"))
        }
        _ => {
            q.cmds.push((spec, args.to_vec()));
            Some(Reply::Simple("QUEUED"))
        }
    }
}

/// The reply to a command rejected before it ran (`spec`: the command, if
/// known): a transaction in progress will abort. A rejected EXEC ends the
/// transaction and answers EXECABORT with the reason, as Redis does.
pub fn rejected(conn: &mut ConnState, spec: Option<&CommandSpec>, reply: Reply) -> Reply {
    if spec.is_some_and(|s| s.name == "exec") {
        conn.tx.discard();
        let why = match &reply {
            Reply::Error(e) => e.strip_prefix("ERR ").unwrap_or(e),
            _ => "",
        };
        return Reply::Error(format!("EXECABORT Transaction discarded because of: {why}"));
    }
    if let Some(q) = conn.tx.queue.as_mut() {
        q.failed = true;
    }
    reply
}

fn multi(conn: &mut ConnState) -> Reply {
    if conn.tx.in_multi() {
        return Reply::err("ERR MULTI calls can not be nested");
    }
    conn.tx.queue = Some(Queue::default());
    Reply::ok()
}

fn discard(conn: &mut ConnState) -> Reply {
    if !conn.tx.in_multi() {
        return Reply::err("ERR DISCARD without MULTI");
    }
    conn.tx.discard();
    Reply::ok()
}

/// RESET: ends any transaction, forgets watched keys, and returns the
/// connection to its initial state (no subscriptions, database 0, RESP2,
/// no name, authenticated only if no password is required).
fn reset(shared: &Shared, conn: &mut ConnState) -> Reply {
    conn.tx.discard();
    conn.pubsub.clear();
    conn.db = 0;
    conn.proto = 2;
    conn.name = None;
    conn.authenticated = !shared.settings.auth_required();
    Reply::Simple("RESET")
}

fn watch(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    if conn.tx.in_multi() {
        return Reply::err("ERR WATCH inside MULTI is not allowed");
    }
    let watches = &mut conn.tx.watched;
    // Counted before anything is read (`tx.rs`).
    watches._counted.get_or_insert_with(|| shared.mods.watch());
    for k in a {
        let key = db_key(conn.db, k);
        if watches.keys.contains_key(&key) {
            continue;
        }
        let slot = tx::slot_of(&key);
        // The counter first: a write that lands between this read and the
        // liveness read bumps it after, so EXEC sees the change.
        let w = Watched {
            slot,
            stamp: shared.mods.slot(slot),
            live: is_live(shared, &key),
        };
        watches.keys.insert(key, w);
    }
    Reply::ok()
}

fn is_live(shared: &Shared, key: &[u8]) -> bool {
    matches!(shared.read_value(key), Ok(Some(_)))
}

/// Whether a watched key changed since WATCH: written (its slot moved),
/// or live then and not now (expired, or flushed). Call with the watched
/// keys' stripes held.
fn watch_broken(shared: &Shared, watched: &BTreeMap<Vec<u8>, Watched>) -> bool {
    watched
        .iter()
        .any(|(key, w)| shared.mods.slot(w.slot) != w.stamp || (w.live && !is_live(shared, key)))
}

/// The stored keys the queued commands name (the command table's key
/// positions; EXEC adds the watched keys); `None` when EXEC must hold every
/// stripe: after a keyless command that reads or writes data (KEYS,
/// FLUSHDB, ...) or SELECT (later keys are in another database). A
/// command that locks a key its arguments do not name at these positions
/// (COPY ... DB) is caught when it locks it, and the transaction runs
/// again holding every stripe (`exec`).
fn exec_keys(db: u8, cmds: &[(&'static CommandSpec, &[Bytes])]) -> Option<Vec<Vec<u8>>> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for (spec, args) in cmds {
        let keyless_data = spec.first_key <= 0
            && spec
                .flags
                .iter()
                .any(|f| matches!(*f, "write" | "readonly"));
        if spec.name == "select" || keyless_data {
            return None;
        }
        keys.extend(spec.key_positions(args.len()).map(|i| db_key(db, &args[i])));
    }
    Some(keys)
}

/// What a queued command may change in the connection: restored before a
/// rerun of the transaction.
struct ConnSnapshot {
    db: u8,
    proto: u8,
    authenticated: bool,
    name: Option<Bytes>,
}

impl ConnSnapshot {
    fn take(c: &ConnState) -> ConnSnapshot {
        ConnSnapshot {
            db: c.db,
            proto: c.proto,
            authenticated: c.authenticated,
            name: c.name.clone(),
        }
    }

    fn restore(&self, c: &mut ConnState) {
        c.db = self.db;
        c.proto = self.proto;
        c.authenticated = self.authenticated;
        c.name = self.name.clone();
    }
}

/// EXEC: runs the queued commands as one atomic, isolated unit (`tx.rs`)
/// and answers their replies; a null array if a watched key changed;
/// EXECABORT if a command was rejected while queuing.
fn exec(shared: &Shared, conn: &mut ConnState, _: &[Bytes]) -> Reply {
    let Some(q) = conn.tx.queue.take() else {
        return Reply::err("ERR EXEC without MULTI");
    };
    let watched = std::mem::take(&mut conn.tx.watched);
    if q.failed {
        return Reply::err("EXECABORT Transaction discarded because of previous errors.");
    }
    let cmds: Vec<(&'static CommandSpec, &[Bytes])> = q
        .cmds
        .iter()
        .map(|(spec, a)| (*spec, a.as_slice()))
        .collect();
    // `watched` (and its count among the watchers) lives until EXEC is done.
    let result = run_isolated(shared, &mut [GroupRun { conn, cmds: &cmds }], &watched.keys);
    match result {
        Ok(mut replies) => Reply::Array(in_their_protocols(replies.remove(0), conn.proto)),
        Err(reply) => reply,
    }
}

/// Runs a pipeline's run of write commands `cmds` (name first in each;
/// checked as `execute` checks a command, none of them changing the
/// connection's state) as EXEC runs a transaction: one engine write,
/// isolated (`conn.rs`, `write_group.rs`). Their replies in order; each
/// is the write's error if the write failed.
pub fn run_group(
    shared: &Shared,
    conn: &mut ConnState,
    cmds: &[(&'static CommandSpec, &[Bytes])],
) -> Vec<Reply> {
    run_groups(shared, &mut [GroupRun { conn, cmds }]).remove(0)
}

/// One connection's part of [`run_groups`]: the connection's state and
/// its run of write commands.
pub struct GroupRun<'a, 'c> {
    pub conn: &'a mut ConnState,
    pub cmds: &'a [(&'static CommandSpec, &'c [Bytes])],
}

/// Runs the runs of write commands of several connections (each as
/// [`run_group`] takes it) as one: one engine write holding the stripes
/// of all their keys, the runs in order, each command reading through the
/// writes of the ones before it. Each run's replies, in order; each is
/// the write's error if the write failed (then none of the runs wrote).
pub fn run_groups(shared: &Shared, runs: &mut [GroupRun<'_, '_>]) -> Vec<Vec<Reply>> {
    let stats = &shared.stats;
    stats.write_batches.fetch_add(1, Relaxed);
    let n: usize = runs.iter().map(|r| r.cmds.len()).sum();
    stats.write_batched_commands.fetch_add(n as u64, Relaxed);
    match run_isolated(shared, runs, &BTreeMap::new()) {
        Ok(replies) => replies
            .into_iter()
            .map(|run| run.into_iter().map(|(r, _)| r).collect())
            .collect(),
        Err(e) => runs.iter().map(|r| vec![e.clone(); r.cmds.len()]).collect(),
    }
}

/// Runs the commands of `runs` as one atomic, isolated unit (`tx.rs`)
/// holding the stripes of their keys and of `watched`'s: each run's
/// replies, each with the protocol it was made in. `Err`: the reply
/// instead of theirs, a null array if a watched key changed, or the error
/// of the write.
fn run_isolated(
    shared: &Shared,
    runs: &mut [GroupRun<'_, '_>],
    watched: &BTreeMap<Vec<u8>, Watched>,
) -> Result<Vec<Vec<(Reply, u8)>>, Reply> {
    let snapshots: Vec<ConnSnapshot> = runs.iter().map(|r| ConnSnapshot::take(r.conn)).collect();
    let keys = runs.iter().try_fold(
        watched.keys().cloned().collect::<Vec<_>>(),
        |mut keys, r| {
            keys.extend(exec_keys(r.conn.db, r.cmds)?);
            Some(keys)
        },
    );
    let mut stripes = keys.as_deref().map(stripes_of);
    loop {
        let locks = shared.lock_stripes(stripes.as_deref());
        if watch_broken(shared, watched) {
            return Err(Reply::NilArray);
        }
        // The keys the commands name, read in one batch now that no one
        // else can write them (the commands' own reads take them from
        // the overlay).
        let prefetched = match (&stripes, &keys) {
            (Some(_), Some(k)) => prefetch_with_elements(shared, runs, k)?,
            _ => Default::default(),
        };
        let (replies, overlay) = tx::with_overlay(stripes.clone(), prefetched, || {
            runs.iter_mut()
                .map(|r| {
                    r.cmds
                        .iter()
                        .map(|(spec, args)| (super::call(shared, r.conn, spec, args), r.conn.proto))
                        .collect::<Vec<(Reply, u8)>>()
                })
                .collect::<Vec<_>>()
        });
        if overlay.escaped && stripes.is_some() {
            // A command wrote a key its arguments do not name: run it all
            // again holding every stripe.
            drop(locks);
            for (r, snapshot) in runs.iter_mut().zip(&snapshots) {
                snapshot.restore(r.conn);
            }
            stripes = None;
            continue;
        }
        if !overlay.batch.is_empty() {
            shared.write_without_events(overlay.batch)?;
        }
        shared.mods.touch(&overlay.touched);
        // Published before the locks go, so that no later write to these
        // keys publishes first. PUBLISH's messages to its own connection
        // are in its replies.
        for (channel, payload, publisher) in &overlay.published {
            shared.pubsub.publish(*publisher, channel, payload);
        }
        drop(locks);
        return Ok(replies);
    }
}

/// [`Shared::prefetch`] of `keys` (the keys `cmds` name, in database
/// `db`), then of the elements the commands look up in the live
/// collections at those keys ([`CommandSpec::lookups`]): two `multi_get`s instead of a
/// lookup per element. A command that runs after another changed its
/// collection (a new version) reads other element keys, and the engine.
fn prefetch_with_elements(
    shared: &Shared,
    runs: &[GroupRun<'_, '_>],
    keys: &[Vec<u8>],
) -> Result<tx::Prefetched, Reply> {
    let mut prefetched = shared.prefetch(keys)?;
    let now = keyspace::now_ms();
    let mut elements = Vec::new();
    let cmds = runs
        .iter()
        .flat_map(|r| r.cmds.iter().map(move |c| (r.conn.db, c)));
    for (db, (spec, args)) in cmds {
        let Some((kind, lookups)) = spec.lookups else {
            continue;
        };
        let key = db_key(db, &args[1]);
        let Some(stored) = prefetched.get(&key).and_then(|f| f.value.as_ref()) else {
            continue;
        };
        if let Ok(Some(Entry::Coll(m))) = keyspace::live_entry(stored, now) {
            if m.kind == kind {
                let subs = lookups(&args[1..]);
                elements.extend(subs.iter().map(|s| meta::element_key(&key, m.version, s)));
            }
        }
    }
    if !elements.is_empty() {
        prefetched.extend(shared.prefetch(&elements)?);
    }
    Ok(prefetched)
}

/// EXEC's replies, each paired with the protocol of the connection when
/// its command ran, for a connection now using `proto`: as Redis, a reply
/// is encoded in the protocol it was made in (a HELLO inside the
/// transaction switches the replies after it, not the ones before).
fn in_their_protocols(replies: Vec<(Reply, u8)>, proto: u8) -> Vec<Reply> {
    replies
        .into_iter()
        .map(|(r, p)| {
            if p == proto {
                return r;
            }
            let mut out = BytesMut::new();
            r.encode(p, &mut out);
            Reply::Encoded(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyless_data_commands_and_database_changes_lock_everything() {
        let owned = |names: &[&[&str]]| -> Vec<(&'static CommandSpec, Vec<Bytes>)> {
            names
                .iter()
                .map(|a| {
                    let spec = super::super::lookup(a[0].as_bytes()).unwrap();
                    (spec, a.iter().map(|s| Bytes::from(s.to_string())).collect())
                })
                .collect()
        };
        let in_db = |db: u8, names: &[&[&str]]| {
            let cmds = owned(names);
            let refs: Vec<(&'static CommandSpec, &[Bytes])> =
                cmds.iter().map(|(s, a)| (*s, a.as_slice())).collect();
            exec_keys(db, &refs)
        };
        let q = |names: &[&[&str]]| in_db(0, names);
        let keys = in_db(2, &[&["set", "a", "1"], &["mset", "b", "1", "c", "2"]]);
        assert_eq!(
            keys,
            Some(vec![db_key(2, b"a"), db_key(2, b"b"), db_key(2, b"c")])
        );
        assert_eq!(q(&[&["ping"], &["get", "a"]]).map(|k| k.len()), Some(1));
        for cmds in [
            &[&["flushdb"][..]][..],
            &[&["keys", "*"]],
            &[&["select", "1"], &["get", "a"]],
        ] {
            assert_eq!(q(cmds), None, "{cmds:?}");
        }
    }
}
