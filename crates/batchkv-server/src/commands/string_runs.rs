//! A pipeline's run of string read-modify-writes — INCR, DECR, INCRBY,
//! DECRBY, APPEND — executed as one engine write without the transaction
//! overlay (`write_group.rs` finds the runs and combines the runs of
//! several connections into one call; any other run of write commands
//! runs as EXEC runs a transaction, `tx::run_group`).
//!
//! The runs of one call are one run here, in the order given: what
//! follows holds for it as a whole, hence for each connection's part. The
//! run locks the stripes of all its keys, reads each distinct key
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
//!   answers its error for every command of the run (of every connection
//!   in it), as `tx::run_group` does;
//! - a key whose stored value had expired is replaced as `Shared::put`
//!   replaces it: the elements of an expired collection are dropped
//!   (`Shared::clear_old`) in the same batch.

use batchkv::{InsertHint, ReadOptions, WriteBatch};
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;

use super::strings::check_string_length;
use super::{not_integer, parse_int};
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
    /// Bytes the run's APPENDs to it add at most: the read copy of its
    /// value is allocated with room for them (no reallocation).
    appended: usize,
    /// Where the read found its place in the memtable: its write starts
    /// there (`WriteBatch::put_hinted`).
    hint: Option<InsertHint>,
}

/// Bytes a key's batch entry takes besides its key and value (entry
/// header), with room for an INCR's digits where no value was read.
const ENTRY_SLACK: usize = 32;

/// One connection's run: its database and its commands (each
/// [`is_string_update`], as `groupable` found it).
pub type Run<'a> = (u8, &'a [Vec<Bytes>]);

/// Runs `runs` (of one connection or of several, combined by
/// `write_group.rs`) as one engine write, one run after the other: the
/// replies of all their commands in order. Runs of several connections
/// executed together keep each run's guarantees above: all their keys
/// are locked before any is read, so the runs apply as if one after the
/// other, and the write of all of them is atomic.
pub fn run(shared: &Shared, runs: &[Run<'_>]) -> Vec<Reply> {
    let n: usize = runs.iter().map(|(_, reqs)| reqs.len()).sum();
    let mut stored_keys = crate::batcher::Keys::default();
    for (db, reqs) in runs {
        for args in reqs.iter() {
            stored_keys.push(*db, &args[1]);
        }
    }
    let stored: Vec<&[u8]> = stored_keys.iter().collect();
    let reqs = || runs.iter().flat_map(|(_, reqs)| reqs.iter());
    let kinds: Vec<Option<Kind>> = reqs().map(|a| kind(a)).collect();
    // Each distinct key once, and each command's key in `distinct`.
    let (distinct, at) = first_occurrences(&stored);
    let _g = shared.lock_keys(&distinct);
    let now = keyspace::now_ms();
    let mut keys: Vec<Key<'_>> = distinct
        .iter()
        .map(|&key| Key {
            key,
            value: None,
            changed: false,
            expired: false,
            appended: 0,
            hint: None,
        })
        .collect();
    for ((args, &i), command) in reqs().zip(&at).zip(&kinds) {
        if let (Some(Kind::Append), Some(k)) = (command, keys.get_mut(i)) {
            k.appended = k.appended.saturating_add(args[2].len());
        }
    }
    // Under the locks: the latest values, which the key counts of the
    // write below recall (`keycount::remember`).
    let mut hints: Vec<Option<InsertHint>> = vec![None; distinct.len()];
    let on_value = |i: usize, v: Option<&[u8]>| {
        if let (Some(k), Some(v)) = (keys.get_mut(i), v) {
            k.expired = matches!(keyspace::live_entry(v, now), Ok(None));
            let mut copy = Vec::with_capacity(v.len().saturating_add(k.appended));
            copy.extend_from_slice(v);
            k.value = Some(copy);
        }
    };
    let mut on_hint = |i: usize, h: InsertHint| {
        if let Some(slot) = hints.get_mut(i) {
            *slot = Some(h);
        }
    };
    let opts = ReadOptions::default();
    let read = shared.get_many_hinted(&opts, &distinct, on_value, Some(&mut on_hint));
    for (k, h) in keys.iter_mut().zip(hints) {
        k.hint = h;
    }
    if let Err(e) = read {
        return vec![e; n];
    }
    // Sized once: each key, its value as read, what APPENDs add to it.
    let capacity = keys.iter().fold(0usize, |n, k| {
        let value = k.value.as_ref().map_or(0, Vec::len);
        n.saturating_add(k.key.len() + value + ENTRY_SLACK)
            .saturating_add(k.appended)
    });
    let mut b = WriteBatch::with_capacity(capacity);
    let replies: Vec<Reply> = reqs()
        .zip(&at)
        .zip(&kinds)
        .map(|((args, &i), &command)| match (keys.get_mut(i), command) {
            (Some(k), Some(command)) => apply(shared, &mut b, k, command, args, now),
            _ => Reply::err(crate::panics::INTERNAL_ERROR),
        })
        .collect();
    for k in keys.iter().filter(|k| k.changed) {
        if let Some(v) = &k.value {
            b.put_hinted(k.key, v, k.hint);
            let expires = keyspace::decode_value(v).and_then(|d| d.expire_at);
            if let Some(t) = expires {
                b.put(keyspace::expiry_index_key(t, k.key), []);
            }
        }
    }
    let stats = &shared.stats;
    stats.write_batches.fetch_add(1, Relaxed);
    stats.write_batched_commands.fetch_add(n as u64, Relaxed);
    if !b.is_empty() {
        if let Err(e) = shared.write(b) {
            return vec![e; n];
        }
    }
    replies
}

/// The distinct keys of `keys` in the order they first occur, and each
/// key's index among them. A hash of each key instead of a sort: the
/// engine's `multi_get` orders the keys itself, and the stripe locks sort
/// their slots (a sort of the keys here cost ~360 instructions per
/// pipelined INCR, callgrind).
fn first_occurrences<'k>(keys: &[&'k [u8]]) -> (Vec<&'k [u8]>, Vec<usize>) {
    use std::hash::BuildHasher;
    // Seeded per process: the keys are clients'.
    let hasher = foldhash::fast::RandomState::default();
    let mut index = hashbrown::HashTable::<usize>::with_capacity(keys.len());
    let mut distinct: Vec<&[u8]> = Vec::with_capacity(keys.len());
    let at = keys
        .iter()
        .map(|&key| {
            let hash = hasher.hash_one(key);
            let entry = index.entry(
                hash,
                |&i| distinct[i] == key,
                |&i| hasher.hash_one(distinct[i]),
            );
            *entry
                .or_insert_with(|| {
                    distinct.push(key);
                    distinct.len() - 1
                })
                .get()
        })
        .collect();
    (distinct, at)
}

/// Applies the command `args` (of kind `command`) to key `k` (its old elements, if it was an
/// expired collection, dropped into `b`); its reply.
fn apply(
    shared: &Shared,
    b: &mut WriteBatch,
    k: &mut Key<'_>,
    command: Kind,
    args: &[Bytes],
    now: u64,
) -> Reply {
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
            let (cur, digits_len) = match live {
                None => (0, None),
                Some((_, data)) => match parse_int(data) {
                    Some(n) => (n, Some(data.len())),
                    None => return not_integer(),
                },
            };
            let Some(n) = cur.checked_add(by) else {
                return Reply::err(INCR_OVERFLOW);
            };
            let mut digits = [0u8; 20];
            let text = format_i64(n, &mut digits);
            let value = match (digits_len, k.value.take()) {
                // The stored value is the live string's encoding (tag,
                // expiry, digits): keep its header (the expiry stays, as
                // INCR keeps it) and replace the digits in place.
                (Some(old), Some(mut v)) => {
                    v.truncate(v.len() - old);
                    v.extend_from_slice(text);
                    v
                }
                (_, old) => {
                    k.value = old;
                    keyspace::encode_value(text, None)
                }
            };
            (value, Reply::Int(n))
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

/// Writes `n` in decimal (as `i64::to_string`, without allocating) into
/// `buf`; the digits written.
fn format_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut m = n.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn distinct_keys_keep_their_first_order_and_every_key_finds_its_own() {
        let keys: Vec<&[u8]> = vec![b"b", b"a", b"b", b"", b"a", b"c", b"b"];
        let (distinct, at) = first_occurrences(&keys);
        assert_eq!(distinct, [&b"b"[..], b"a", b"", b"c"]);
        assert_eq!(at, [0, 1, 0, 2, 1, 3, 0]);
        for (k, &i) in keys.iter().zip(&at) {
            assert_eq!(distinct[i], *k);
        }
        let (distinct, at) = first_occurrences(&[]);
        assert!(distinct.is_empty() && at.is_empty());
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
    fn integers_are_written_as_to_string_writes_them() {
        let mut buf = [0u8; 20];
        for n in [0, 1, -1, 9, 10, -10, 4_294_967_296, i64::MAX, i64::MIN] {
            assert_eq!(format_i64(n, &mut buf), n.to_string().as_bytes(), "{n}");
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
