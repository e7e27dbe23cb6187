//! A pipeline's run of string read-modify-writes — INCR, DECR, INCRBY,
//! DECRBY, APPEND — executed as one engine write without the transaction
//! overlay (`write_group.rs` finds the runs; any other run of write
//! commands runs as EXEC runs a transaction, `tx::run_group`).
//!
//! The run locks the stripes of all its keys, reads each distinct key
//! once (one `multi_get`), applies the commands in order to those values
//! in memory, and writes the last value of each key it changed in one
//! batch. That answers and stores what the commands give one by one:
//! - each command sees the value the ones before it left: after the one
//!   read, the run's in-memory value is the key's latest;
//! - no other command interleaves (the stripes are held from the read to
//!   the write), and the batch is atomic, so other clients see none of
//!   the run or all of it, and a crash keeps a prefix of the client's
//!   commands either way;
//! - no one can see a key's values between two commands of the run, so
//!   writing only the last one is invisible to readers, to WATCH (it
//!   notes the key's slot either way) and to the key counts (they count
//!   the state after the write);
//! - a command that fails (an argument or value that is not an integer,
//!   an overflow, WRONGTYPE, a string over `proto-max-bulk-len`) answers
//!   its error and changes nothing, as alone; a failed engine write
//!   answers its error for every command of the run, as `tx::run_group`
//!   does;
//! - a key whose stored value had expired is replaced as `Shared::put`
//!   replaces it: the elements of an expired collection are dropped
//!   (`Shared::clear_old`) in the same batch.

use batchkv::{ReadOptions, WriteBatch};
use bytes::Bytes;

use super::strings::check_string_length;
use super::{not_integer, parse_int, ConnState};
use crate::errors::{corrupt, wrong_type, INCR_OVERFLOW};
use crate::keyspace::{self, Entry};
use crate::resp::Reply;
use crate::shared::Shared;

/// The commands a run takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Incr,
    Decr,
    IncrBy,
    DecrBy,
    Append,
}

/// The kind of `args` (name first) if it is one of the run's commands
/// with the arity Redis requires.
fn kind(args: &[Bytes]) -> Option<Kind> {
    let name = args.first()?;
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    match args.len() {
        2 if is("incr") => Some(Kind::Incr),
        2 if is("decr") => Some(Kind::Decr),
        3 if is("incrby") => Some(Kind::IncrBy),
        3 if is("decrby") => Some(Kind::DecrBy),
        3 if is("append") => Some(Kind::Append),
        _ => None,
    }
}

/// Whether `args` is a string read-modify-write a run can take.
pub fn is_string_update(args: &[Bytes]) -> bool {
    kind(args).is_some()
}

/// What a command does to its key's string.
enum Update<'a> {
    /// Add this, checked for overflow (INCR, DECR, INCRBY, DECRBY).
    Add(i64),
    /// Append these bytes.
    Append(&'a [u8]),
}

/// The update `args` makes, or the error it answers before reading its
/// key (as `strings.rs`: an increment that is not an integer, DECRBY of
/// `i64::MIN`).
fn update_of(kind: Kind, args: &[Bytes]) -> Result<Update<'_>, Reply> {
    match kind {
        Kind::Incr => Ok(Update::Add(1)),
        Kind::Decr => Ok(Update::Add(-1)),
        Kind::IncrBy => parse_int(&args[2]).map(Update::Add).ok_or_else(not_integer),
        Kind::DecrBy => match parse_int(&args[2]) {
            None => Err(not_integer()),
            Some(i64::MIN) => Err(Reply::err("ERR decrement would overflow")),
            Some(by) => Ok(Update::Add(-by)),
        },
        Kind::Append => Ok(Update::Append(&args[2])),
    }
}

/// A key of the run: its stored value as the run has left it so far.
struct Key<'a> {
    key: &'a [u8],
    /// The engine's encoding (`keyspace.rs`); `None`: absent.
    value: Option<Vec<u8>>,
    /// A command changed it: the run writes `value`.
    changed: bool,
    /// Its value when the run read it was there but expired: the first
    /// change replaces it as `Shared::put` does (`Shared::clear_old`).
    expired: bool,
}

/// Runs `reqs` (each [`is_string_update`], as `groupable` found it, for a
/// connection in state `conn`) as one engine write; their replies in order.
pub fn run(shared: &Shared, conn: &ConnState, reqs: &[Vec<Bytes>]) -> Vec<Reply> {
    let stored: Vec<Vec<u8>> = reqs
        .iter()
        .map(|a| keyspace::db_key(conn.db, &a[1]))
        .collect();
    let mut distinct: Vec<&[u8]> = stored.iter().map(Vec::as_slice).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let _g = shared.lock_keys(&distinct);
    let now = keyspace::now_ms();
    let mut keys: Vec<Key<'_>> = distinct
        .iter()
        .map(|&key| Key {
            key,
            value: None,
            changed: false,
            expired: false,
        })
        .collect();
    // Under the locks: the latest values, which the key counts of the
    // write below recall (`keycount::remember`).
    let read = shared.get_many_with(&ReadOptions::default(), &distinct, |i, v| {
        if let (Some(k), Some(v)) = (keys.get_mut(i), v) {
            k.expired = matches!(keyspace::live_entry(v, now), Ok(None));
            k.value = Some(v.to_vec());
        }
    });
    if let Err(e) = read {
        return vec![e; reqs.len()];
    }
    let mut b = WriteBatch::new();
    let replies: Vec<Reply> = reqs
        .iter()
        .zip(&stored)
        .map(|(args, key)| {
            // `distinct` holds every key of the run, sorted.
            let at = distinct.partition_point(|d| *d < key.as_slice());
            match keys.get_mut(at) {
                Some(k) => apply(shared, &mut b, k, args, now),
                None => Reply::err(crate::panics::INTERNAL_ERROR),
            }
        })
        .collect();
    for k in keys.iter().filter(|k| k.changed) {
        if let Some(v) = &k.value {
            b.put(k.key, v);
            let expires = keyspace::decode_value(v).and_then(|d| d.expire_at);
            if let Some(t) = expires {
                b.put(keyspace::expiry_index_key(t, k.key), []);
            }
        }
    }
    if !b.is_empty() {
        if let Err(e) = shared.write(b) {
            return vec![e; reqs.len()];
        }
    }
    replies
}

/// Applies the command `args` to key `k` (its old elements, if it was an
/// expired collection, dropped into `b`); its reply.
fn apply(shared: &Shared, b: &mut WriteBatch, k: &mut Key<'_>, args: &[Bytes], now: u64) -> Reply {
    let Some(command) = kind(args) else {
        return Reply::err(crate::panics::INTERNAL_ERROR);
    };
    let update = match update_of(command, args) {
        Ok(u) => u,
        Err(reply) => return reply,
    };
    // The live string: its expiry, its bytes and where they start in the
    // stored value (`None`: absent or expired).
    let live = match k.value.as_deref().map(|v| keyspace::live_entry(v, now)) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(Entry::Str(d)))) => Some((d.expire_at, d.data)),
        Some(Ok(Some(Entry::Coll(_)))) => return wrong_type(),
        Some(Err(())) => return corrupt(),
    };
    let (new_value, reply) = match update {
        Update::Add(by) => {
            let (exp, cur) = match live {
                None => (None, 0),
                Some((exp, data)) => match parse_int(data) {
                    Some(n) => (exp, n),
                    None => return not_integer(),
                },
            };
            let Some(n) = cur.checked_add(by) else {
                return Reply::err(INCR_OVERFLOW);
            };
            let text = n.to_string();
            (keyspace::encode_value(text.as_bytes(), exp), Reply::Int(n))
        }
        Update::Append(tail) => {
            let len = live.map_or(0, |(_, data)| data.len());
            if let Err(reply) = check_string_length(shared, len as u64, tail.len() as u64) {
                return reply;
            }
            let reply = Reply::Int((len + tail.len()) as i64);
            match (live.is_some(), k.value.take()) {
                // The stored value is the live string's encoding (tag,
                // expiry, bytes): extend it in place.
                (true, Some(mut v)) => {
                    v.extend_from_slice(tail);
                    (v, reply)
                }
                (_, old) => {
                    k.value = old;
                    (keyspace::encode_value(tail, None), reply)
                }
            }
        }
    };
    if k.expired && !k.changed {
        if let Err(reply) = shared.clear_old(b, k.key) {
            return reply;
        }
    }
    k.value = Some(new_value);
    k.changed = true;
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn takes_the_string_updates_with_their_arity_only() {
        for ok in [
            &["incr", "k"][..],
            &["DECR", "k"],
            &["IncrBy", "k", "5"],
            &["decrby", "k", "x"],
            &["APPEND", "k", "v"],
        ] {
            assert!(is_string_update(&args(ok)), "{ok:?}");
        }
        for no in [
            &["incr"][..],
            &["incr", "k", "1"],
            &["incrby", "k"],
            &["append", "k"],
            &["incrbyfloat", "k", "1"],
            &["set", "k", "v"],
            &["setrange", "k", "0", "v"],
        ] {
            assert!(!is_string_update(&args(no)), "{no:?}");
        }
    }

    #[test]
    fn invalid_increments_are_refused_before_the_key_is_read() {
        let a = args(&["incrby", "k", "1.5"]);
        assert!(matches!(update_of(Kind::IncrBy, &a), Err(r) if r == not_integer()));
        let a = args(&["decrby", "k", &i64::MIN.to_string()]);
        assert!(
            matches!(update_of(Kind::DecrBy, &a), Err(Reply::Error(e)) if e == "ERR decrement would overflow")
        );
        let a = args(&["decrby", "k", "7"]);
        assert!(matches!(update_of(Kind::DecrBy, &a), Ok(Update::Add(-7))));
    }
}
