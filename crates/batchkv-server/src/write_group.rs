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
//!   keys: one WAL record, one write queue pass, and one batched lookup
//!   (`multi_get`) of all the keys for the counts.
//! - **Any other run of two or more keyed write commands** (HSET, LPUSH,
//!   INCR, SET with options, …: [`commands::groupable`]) runs as EXEC runs
//!   a transaction (`tx.rs`): the stripes of all their keys locked, each
//!   command reading through the overlay of the ones before it, one write.
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
//! A command the run cannot take (a read, a blocking or keyless command,
//! a wrong arity, a key over the limit, …) ends the run and goes through
//! the normal path, which answers it, errors included.

use bytes::Bytes;

use batchkv::WriteBatch;

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
pub enum Group {
    /// This many blind string writes.
    Strings(usize),
    /// These write commands (two or more), one per request.
    Commands(Vec<&'static CommandSpec>),
}

/// The group at the start of `reqs`, if any.
pub fn find(st: &ConnState, reqs: &[Vec<Bytes>]) -> Option<Group> {
    let (mut specs, mut bytes, mut blind) = (Vec::new(), 0, true);
    for args in reqs.iter().take(MAX_GROUP_COMMANDS) {
        let Some(spec) = commands::groupable(st, args) else {
            break;
        };
        let size: usize = args.iter().map(Bytes::len).sum();
        if !specs.is_empty() && bytes + size > MAX_GROUP_BYTES {
            break;
        }
        bytes += size;
        blind &= pairs(args).is_some();
        specs.push(spec);
    }
    match specs.len() {
        0 => None,
        n if blind => Some(Group::Strings(n)),
        1 => None,
        _ => Some(Group::Commands(specs)),
    }
}

/// Executes `reqs`, the blind string writes of a [`Group::Strings`], as
/// one write: the reply each of them answers.
pub fn run_strings(shared: &Shared, st: &ConnState, reqs: &[Vec<Bytes>]) -> Reply {
    let keys: Vec<Vec<u8>> = reqs
        .iter()
        .flat_map(|args| pairs(args).into_iter().flatten())
        .map(|p| keyspace::db_key(st.db, &p[0]))
        .collect();
    crate::panics::catch(
        || format!("a group of {} writes from {}", reqs.len(), st.client.addr),
        || write(shared, reqs, &keys),
    )
    .unwrap_or_else(|| Reply::err(crate::panics::INTERNAL_ERROR))
}

/// Writes the group's pairs, stored keys `keys` in order, under their
/// locks: `+OK`, or the error every command of the group answers.
fn write(shared: &Shared, reqs: &[Vec<Bytes>], keys: &[Vec<u8>]) -> Reply {
    let _g = shared.lock_keys(keys);
    let mut b = WriteBatch::new();
    let values = reqs
        .iter()
        .flat_map(|args| pairs(args).into_iter().flatten());
    for (key, p) in keys.iter().zip(values) {
        if let Err(e) = shared.clear_old(&mut b, key) {
            return e;
        }
        keyspace::put_value(&mut b, key, &p[1], None);
    }
    match shared.write(b) {
        Ok(()) => Reply::ok(),
        Err(e) => e,
    }
}
