//! Consumer groups: XGROUP, XREADGROUP (blocking too), XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM, and XINFO, with Redis 7.0's parsing, errors and
//! bookkeeping (`entries-read`, `lag`, delivery counts). The records are
//! `groups.rs`'s, stored beside the stream's entries under its version.
//!
//! As in Redis, the commands that only change a group's state (XACK,
//! XREADGROUP, XCLAIM, ...) do not count as modifying the key for WATCH:
//! they write group records only, never the stream's metadata.
//!
//! Every command holds its stream's key lock from the first read to its
//! write. The entries a command replies with are read in one batched read
//! (XREADGROUP's history, XCLAIM), or one range scan (new entries).

use batchkv::{ReadOptions, WriteBatch};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};

use super::coll;
use super::streams::{entry_reply, invalid_id, per_stream, range, read_stream, strict_id};
use super::strings::tri;
use super::{help_reply, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1, NO_KEYS};
use crate::errors::{bad_subcommand, corrupt, not_integer, wrong_type, NO_SUCH_KEY};
use crate::groups::{self, Consumer, Group, Keys, Nack, UNKNOWN_READ};
use crate::keyspace::{db_key, now_ms};
use crate::meta::{self, Kind, Meta, StreamId};
use crate::notify::STREAM;
use crate::resp::Reply;
use crate::shared::{Shared, Value};
use crate::streams::{parse_bound, parse_id, IdSyntax};

const W_FAST: &[&str] = &["write", "fast"];

/// The consumer-group commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("xgroup", -2, &[], NO_KEYS, xgroup),
    spec(
        "xreadgroup",
        -7,
        &["write", "blocking", "movablekeys"],
        NO_KEYS,
        |s, c, a| xreadgroup(s, c, a, false),
    ),
    spec("xack", -4, W_FAST, KEY1, xack),
    spec("xpending", -3, &["readonly"], KEY1, |s, c, a| {
        xpending(s, c, a)
    }),
    spec("xclaim", -6, W_FAST, KEY1, xclaim),
    spec("xautoclaim", -6, W_FAST, KEY1, |s, c, a| {
        xautoclaim(s, c, a)
    }),
    spec("xinfo", -2, &[], NO_KEYS, xinfo),
];

fn no_group(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

fn no_group_of_key(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

fn decode<T>(v: Option<T>) -> Result<T, Reply> {
    v.ok_or_else(corrupt)
}

/// One group of a stream, being read and changed by a command: records
/// read once and kept, changes gathered in one batch (written by
/// [`Grp::save`]).
struct Grp<'a> {
    shared: &'a Shared,
    /// The stream's stored key.
    key: Vec<u8>,
    keys: Keys,
    name: Vec<u8>,
    rec: Group,
    /// Consumers read or created so far, and whether each changed.
    consumers: BTreeMap<Vec<u8>, (Consumer, bool)>,
    /// Pending entries read or changed so far (`None`: absent).
    nacks: HashMap<StreamId, Option<Nack>>,
    batch: WriteBatch,
    changed: bool,
    /// A consumer was created ([`Grp::seen`]): [`Grp::save`] publishes
    /// `xgroup-createconsumer`, as Redis's `streamCreateConsumer` does.
    created: bool,
    now: u64,
}

impl<'a> Grp<'a> {
    /// The group `name` of the stream `m` at stored key `key`, if it has
    /// one.
    fn open(shared: &'a Shared, key: &[u8], m: &Meta, name: &[u8]) -> Result<Option<Self>, Reply> {
        let keys = Keys {
            prefix: meta::group_prefix(key, m.version),
        };
        let Some(v) = shared.get_raw(&keys.group(name))? else {
            return Ok(None);
        };
        Ok(Some(Grp {
            shared,
            key: key.to_vec(),
            rec: decode(Group::decode(&v))?,
            keys,
            name: name.to_vec(),
            consumers: BTreeMap::new(),
            nacks: HashMap::new(),
            batch: WriteBatch::new(),
            changed: false,
            created: false,
            now: now_ms(),
        }))
    }

    /// The consumer `name`, read once; `None` if it does not exist.
    fn consumer(&mut self, name: &[u8]) -> Result<Option<&mut (Consumer, bool)>, Reply> {
        if !self.consumers.contains_key(name) {
            let Some(v) = self.shared.get_raw(&self.keys.consumer(&self.name, name))? else {
                return Ok(None);
            };
            let c = decode(Consumer::decode(&v))?;
            self.consumers.insert(name.to_vec(), (c, false));
        }
        Ok(self.consumers.get_mut(name))
    }

    /// The consumer `name`, created if absent; its seen time becomes now
    /// (Redis's `streamLookupConsumer` + `streamCreateConsumer`). Returns
    /// whether it was created.
    fn seen(&mut self, name: &[u8]) -> Result<bool, Reply> {
        let now = self.now;
        if let Some(c) = self.consumer(name)? {
            c.0.seen = now;
            c.1 = true;
            return Ok(false);
        }
        let c = Consumer {
            seen: now,
            pending: 0,
        };
        self.consumers.insert(name.to_vec(), (c, true));
        self.rec.consumers += 1;
        self.changed = true;
        self.created = true;
        Ok(true)
    }

    /// Adds `delta` to the pending count of existing consumer `name`.
    fn count_pending(&mut self, name: &[u8], delta: i64) -> Result<(), Reply> {
        let c = decode(self.consumer(name)?)?;
        c.0.pending = c.0.pending.wrapping_add_signed(delta);
        c.1 = true;
        Ok(())
    }

    /// The pending entry `id`.
    fn nack(&mut self, id: StreamId) -> Result<Option<Nack>, Reply> {
        if let Some(n) = self.nacks.get(&id) {
            return Ok(n.clone());
        }
        let n = match self.shared.get_raw(&self.keys.pending(&self.name, id))? {
            Some(v) => Some(decode(Nack::decode(&v))?),
            None => None,
        };
        self.nacks.insert(id, n.clone());
        Ok(n)
    }

    /// Reads the pending entries `ids` not read yet in one batched read,
    /// for [`Grp::nack`] to find.
    fn prefetch_nacks(&mut self, ids: &[StreamId]) -> Result<(), Reply> {
        let missing: Vec<StreamId> = ids
            .iter()
            .copied()
            .filter(|id| !self.nacks.contains_key(id))
            .collect();
        if missing.len() < 2 {
            return Ok(());
        }
        let keys: Vec<Vec<u8>> = missing
            .iter()
            .map(|&id| self.keys.pending(&self.name, id))
            .collect();
        let values = self.shared.get_many(&ReadOptions::default(), &keys)?;
        for (id, v) in missing.into_iter().zip(values) {
            let n = match v {
                Some(v) => Some(decode(Nack::decode(&v))?),
                None => None,
            };
            self.nacks.insert(id, n);
        }
        Ok(())
    }

    /// Makes `id` pending for `nack.consumer` (which exists), moving it
    /// from the consumer it was pending for, if another.
    fn set_nack(&mut self, id: StreamId, nack: Nack) -> Result<(), Reply> {
        let old = self.nack(id)?;
        let moved = old.as_ref().is_none_or(|o| o.consumer != nack.consumer);
        if let Some(o) = &old {
            if moved {
                self.batch
                    .delete(self.keys.consumer_pending(&self.name, &o.consumer, id));
                self.count_pending(&o.consumer, -1)?;
            }
        } else {
            self.rec.pending += 1;
            self.changed = true;
        }
        if moved {
            self.batch.put(
                self.keys.consumer_pending(&self.name, &nack.consumer, id),
                [],
            );
            self.count_pending(&nack.consumer, 1)?;
        }
        self.batch
            .put(self.keys.pending(&self.name, id), nack.encode());
        self.nacks.insert(id, Some(nack));
        Ok(())
    }

    /// Removes the pending entry `id` (`nack`).
    fn remove_nack(&mut self, id: StreamId, nack: &Nack) -> Result<(), Reply> {
        self.batch.delete(self.keys.pending(&self.name, id));
        self.batch
            .delete(self.keys.consumer_pending(&self.name, &nack.consumer, id));
        self.count_pending(&nack.consumer, -1)?;
        self.rec.pending -= 1;
        self.changed = true;
        self.nacks.insert(id, None);
        Ok(())
    }

    /// Delivers `id` (an entry after the group's last ID, in order) to
    /// `consumer`: the group's last ID and read count advance, and unless
    /// `noack` the entry becomes pending (Redis's `streamReplyWithRange`).
    fn deliver_new(
        &mut self,
        s: &Meta,
        id: StreamId,
        consumer: &[u8],
        noack: bool,
    ) -> Result<(), Reply> {
        if id > self.rec.last {
            self.rec.entries_read = groups::read_past(&self.rec, &s.stream, s.size, id);
            self.rec.last = id;
            self.changed = true;
        }
        if !noack {
            let nack = Nack {
                delivered: self.now,
                count: 1,
                consumer: consumer.to_vec(),
            };
            self.set_nack(id, nack)?;
        }
        Ok(())
    }

    /// Visits the records under `prefix` whose key continues with an ID
    /// in `[start, end]`, in ID order: `f(id, value)` returns whether to go
    /// on, `None` for a value it cannot decode (corruption).
    fn walk_ids(
        &self,
        prefix: &[u8],
        start: StreamId,
        end: StreamId,
        mut f: impl FnMut(StreamId, &[u8]) -> Option<bool>,
    ) -> Result<(), Reply> {
        let lo = [prefix, &start.to_key()].concat();
        let hi = [prefix, &end.to_key()[..], &[0]].concat();
        let mut bad = false;
        self.shared.scan(&lo, &hi, false, true, |k, v| {
            match StreamId::from_key(&k[prefix.len()..]).and_then(|id| f(id, v)) {
                Some(go_on) => go_on,
                None => {
                    bad = true;
                    false
                }
            }
        })?;
        if bad {
            return Err(corrupt());
        }
        Ok(())
    }

    /// The group's pending entries in `[start, end]` that `keep` accepts,
    /// at most `limit`, with their records.
    fn pending_from(
        &self,
        start: StreamId,
        end: StreamId,
        mut keep: impl FnMut(&Nack) -> bool,
        limit: usize,
    ) -> Result<Vec<(StreamId, Nack)>, Reply> {
        let mut out = Vec::new();
        let prefix = self.keys.pending_prefix(&self.name);
        self.walk_ids(&prefix, start, end, |id, v| {
            let n = Nack::decode(v)?;
            if keep(&n) {
                out.push((id, n));
            }
            Some(out.len() < limit)
        })?;
        Ok(out)
    }

    /// The IDs of `consumer`'s pending entries in `[start, end]`, at most
    /// `limit` (its PEL index; the records are the group's).
    fn pending_ids_of(
        &self,
        consumer: &[u8],
        start: StreamId,
        end: StreamId,
        limit: usize,
    ) -> Result<Vec<StreamId>, Reply> {
        let mut out = Vec::new();
        let prefix = self.keys.consumer_pending_prefix(&self.name, consumer);
        self.walk_ids(&prefix, start, end, |id, _| {
            out.push(id);
            Some(out.len() < limit)
        })?;
        Ok(out)
    }

    /// Writes the changes (nothing if none), then publishes the creation
    /// of a consumer.
    fn save(mut self) -> Result<(), Reply> {
        if self.changed {
            self.batch
                .put(self.keys.group(&self.name), self.rec.encode());
        }
        for (name, (c, changed)) in &self.consumers {
            if *changed {
                self.batch
                    .put(self.keys.consumer(&self.name, name), c.encode());
            }
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        self.shared.write(self.batch)?;
        if self.created {
            self.shared
                .notify(STREAM, "xgroup-createconsumer", &self.key);
        }
        Ok(())
    }
}

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// ENTRIESREAD's value: a count, or -1.
fn entries_read_arg(v: &[u8]) -> Result<i64, Reply> {
    match parse_int(v) {
        Some(n) if n >= 0 || n == UNKNOWN_READ => Ok(n),
        Some(_) => Err(Reply::err(
            "ERR value for ENTRIESREAD must be positive or -1",
        )),
        None => Err(not_integer()),
    }
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP, checked
/// in Redis's order (`xgroupCommand`).
pub fn xgroup(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let sub = a[0].to_ascii_lowercase();
    let sub = sub.as_slice();
    if sub == b"help" && a.len() == 1 {
        return help_reply(XGROUP_HELP);
    }
    let bad = || bad_subcommand(&a[0], "XGROUP");
    if a.len() < 3 {
        return bad();
    }
    let mut mkstream = false;
    let mut entries_read = UNKNOWN_READ;
    // CREATE's and SETID's options are checked before the key's type.
    let create = sub == b"create";
    if (create || sub == b"setid") && a.len() >= 5 {
        let mut i = 4;
        while i < a.len() {
            if create && a[i].eq_ignore_ascii_case(b"mkstream") {
                mkstream = true;
                i += 1;
            } else if a[i].eq_ignore_ascii_case(b"entriesread") && i + 1 < a.len() {
                entries_read = tri!(entries_read_arg(&a[i + 1]));
                i += 2;
            } else {
                return bad();
            }
        }
    }
    let key = db_key(conn.db, &a[1]);
    let _g = shared.lock_keys(&[&key]);
    let m = tri!(shared.read_meta(&key, Kind::Stream));
    let (user, name) = (&a[1][..], &a[2][..]);
    if m.is_none() && !mkstream {
        return Reply::err(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you \
             may want to use the MKSTREAM option to create an empty stream automatically.",
        );
    }
    let grp = match &m {
        Some(m) => tri!(Grp::open(shared, &key, m, name)),
        None => None,
    };
    let needs_group = matches!(sub, b"setid" | b"createconsumer" | b"delconsumer");
    if grp.is_none() && needs_group {
        return no_group_of_key(user, name);
    }
    match (sub, a.len()) {
        (b"create", 4..=7) => {
            let id = if &a[3][..] == b"$" {
                m.as_ref().map_or(StreamId::ZERO, |m| m.stream.last)
            } else {
                tri!(strict_id(&a[3]))
            };
            if grp.is_some() {
                return Reply::err("BUSYGROUP Consumer Group name already exists");
            }
            let rec = Group {
                last: id,
                entries_read,
                pending: 0,
                consumers: 0,
            };
            let mut w = match m {
                Some(_) => match tri!(coll::open_existing(shared, key.clone(), Kind::Stream)) {
                    Some(w) => w,
                    None => return corrupt(),
                },
                None => tri!(coll::open(shared, key.clone(), Kind::Stream)),
            };
            let keys = Keys {
                prefix: meta::group_prefix(&key, w.meta.version),
            };
            if w.existed {
                // The stream's metadata is unchanged: only the group is
                // written (no WATCH bump, as in Redis).
                let mut b = WriteBatch::new();
                b.put(keys.group(name), rec.encode());
                tri!(shared.write(b));
            } else {
                w.batch.put(keys.group(name), rec.encode());
                tri!(w.commit(shared));
            }
            shared.notify(STREAM, "xgroup-create", &key);
            Reply::ok()
        }
        (b"setid", 4 | 6) => {
            let (Some(m), Some(mut g)) = (m, grp) else {
                return bad();
            };
            let id = if &a[3][..] == b"$" {
                m.stream.last
            } else {
                let syntax = IdSyntax {
                    missing_seq: 0,
                    strict: false,
                    auto_seq: false,
                };
                tri!(parse_id(&a[3], syntax)
                    .map(|(id, _)| id)
                    .ok_or_else(invalid_id))
            };
            g.rec.last = id;
            g.rec.entries_read = entries_read;
            g.changed = true;
            tri!(g.save());
            shared.notify(STREAM, "xgroup-setid", &key);
            Reply::ok()
        }
        (b"destroy", 3) => {
            let Some(g) = grp else {
                return Reply::Int(0);
            };
            let mut b = WriteBatch::new();
            for (lo, hi) in g.keys.all_of(name) {
                b.delete_range(lo, hi);
            }
            // Its blocked readers answer NOGROUP, as in Redis.
            shared.signal_stream_after_write(&key);
            tri!(shared.write(b));
            shared.notify(STREAM, "xgroup-destroy", &key);
            Reply::Int(1)
        }
        (b"createconsumer", 4) => {
            let Some(mut g) = grp else {
                return no_group_of_key(user, name);
            };
            if tri!(g.consumer(&a[3])).is_some() {
                return Reply::Int(0);
            }
            tri!(g.seen(&a[3]));
            tri!(g.save());
            Reply::Int(1)
        }
        (b"delconsumer", 4) => {
            let Some(mut g) = grp else {
                return no_group_of_key(user, name);
            };
            let consumer = &a[3][..];
            let Some(&mut (c, _)) = tri!(g.consumer(consumer)) else {
                return Reply::Int(0);
            };
            let pending =
                tri!(g.pending_ids_of(consumer, StreamId::ZERO, StreamId::MAX, usize::MAX));
            for id in &pending {
                g.batch.delete(g.keys.pending(name, *id));
            }
            let prefix = g.keys.consumer_pending_prefix(name, consumer);
            let end = meta::prefix_end(&prefix);
            g.batch.delete_range(prefix, end);
            g.batch.delete(g.keys.consumer(name, consumer));
            g.consumers.remove(consumer);
            g.rec.pending -= pending.len() as u64;
            g.rec.consumers -= 1;
            g.changed = true;
            tri!(g.save());
            shared.notify(STREAM, "xgroup-delconsumer", &key);
            Reply::Int(c.pending as i64)
        }
        _ => bad(),
    }
}

/// XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key... id...
/// New entries (`>`) are delivered to the consumer and become pending
/// (not with NOACK); other IDs read the consumer's own pending entries
/// after them (its history; a deleted entry is its ID and nil). `retry`:
/// the run of a blocked client, which answers Redis's errors if the
/// stream or the group went away meanwhile.
pub fn xreadgroup(shared: &Shared, conn: &mut ConnState, a: &[Bytes], retry: bool) -> Reply {
    let args = tri!(super::streams::parse_read(a, true));
    let Some((group, consumer)) = args.group else {
        return Reply::err("ERR Missing GROUP option for XREADGROUP");
    };
    let stored: Vec<Vec<u8>> = args.keys.iter().map(|k| db_key(conn.db, k)).collect();
    let _g = shared.lock_keys(&stored);
    let values = shared.read_many(&stored);
    // Per stream, checked before any is served (as Redis): its metadata
    // and the ID (None: `>`).
    let mut targets = Vec::with_capacity(stored.len());
    for ((value, id), (user, key)) in values
        .into_iter()
        .zip(args.ids)
        .zip(args.keys.iter().zip(&stored))
    {
        let m = match tri!(value) {
            Some(Value::Coll(m)) if m.kind == Kind::Stream => Some(m),
            Some(_) if retry => return unblocked(),
            Some(_) => return wrong_type(),
            None => None,
        };
        let g = match &m {
            Some(m) => tri!(Grp::open(shared, key, m, group)),
            None => None,
        };
        let (Some(m), Some(g)) = (m, g) else {
            if retry && m.is_none() {
                return unblocked();
            }
            if retry {
                return Reply::err(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                );
            }
            return Reply::Error(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(user),
                String::from_utf8_lossy(group)
            ));
        };
        let after = match &id[..] {
            b"$" => return Reply::err(DOLLAR_IN_GROUP),
            b">" => None,
            // Redis marks `>` with the largest ID: that ID given
            // explicitly reads new entries too.
            _ => Some(tri!(strict_id(id))).filter(|&id| id != StreamId::MAX),
        };
        targets.push((user, key, m, after, g));
    }
    // A stream named twice has its group opened again when served the
    // second time, to see what serving it the first time changed.
    let mut served = Vec::new();
    for (i, (user, key, m, after, g)) in targets.into_iter().enumerate() {
        let mut g = if stored[..i].contains(key) {
            tri!(decode(tri!(Grp::open(shared, key, &m, group))))
        } else {
            g
        };
        let entries = match after {
            Some(after) => {
                tri!(g.seen(consumer));
                tri!(history(&mut g, key, &m, consumer, after, args.count))
            }
            // Served if the stream's last entry (not its last ID, which
            // may be deleted) is after the group's (`streamLastValidID`).
            None if m.size > 0
                && m.stream.last > g.rec.last
                && tri!(last_entry(shared, key, &m)).is_some_and(|id| id > g.rec.last) =>
            {
                tri!(g.seen(consumer));
                let start = g.rec.last.incr().unwrap_or(StreamId::MAX);
                let entries = tri!(range(
                    shared,
                    key,
                    &m,
                    start,
                    StreamId::MAX,
                    false,
                    args.count
                ));
                let mut out = Vec::with_capacity(entries.len());
                for (id, r) in entries {
                    tri!(g.deliver_new(&m, id, consumer, args.noack));
                    out.push(r);
                }
                out
            }
            None => continue,
        };
        tri!(g.save());
        served.push((Reply::bulk(user.clone()), Reply::Array(entries)));
    }
    if served.is_empty() {
        return Reply::NilArray;
    }
    per_stream(conn.proto, served)
}

/// The ID of the last entry of stream `m` at `key`, if any.
fn last_entry(shared: &Shared, key: &[u8], m: &Meta) -> Result<Option<StreamId>, Reply> {
    let last = range(shared, key, m, StreamId::ZERO, StreamId::MAX, true, 1)?;
    Ok(last.first().map(|(id, _)| *id))
}

const DOLLAR_IN_GROUP: &str = "ERR The $ ID is meaningless in the context of XREADGROUP: you \
    want to read the history of this consumer by specifying a proper ID, or use the > ID to get \
    new messages. The $ ID would just return an empty result set.";

fn unblocked() -> Reply {
    Reply::err("UNBLOCKED the stream key no longer exists")
}

/// The consumer's pending entries after `after`, at most `count` (0: no
/// limit), each delivered once more (a deleted entry: its ID and nil, its
/// count unchanged). The entries are one batched read.
fn history(
    g: &mut Grp,
    key: &[u8],
    m: &Meta,
    consumer: &[u8],
    after: StreamId,
    count: u64,
) -> Result<Vec<Reply>, Reply> {
    let Some(start) = after.incr() else {
        return Ok(Vec::new());
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    let ids = g.pending_ids_of(consumer, start, StreamId::MAX, limit)?;
    let values = entries(g.shared, key, m, &ids)?;
    g.prefetch_nacks(&ids)?;
    let mut out = Vec::with_capacity(ids.len());
    for (id, v) in ids.into_iter().zip(values) {
        match v {
            Some(v) => {
                let mut n = decode(g.nack(id)?)?;
                n.delivered = g.now;
                n.count += 1;
                g.set_nack(id, n)?;
                out.push(entry_reply(id, &v)?);
            }
            None => out.push(Reply::Array(vec![
                Reply::bulk(id.to_string()),
                Reply::NilArray,
            ])),
        }
    }
    Ok(out)
}

/// The stored entries `ids` of the stream `m` at `key` (one batched
/// read).
fn entries(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    ids: &[StreamId],
) -> Result<Vec<Option<Vec<u8>>>, Reply> {
    let subs: Vec<[u8; 16]> = ids.iter().map(|id| id.to_key()).collect();
    let subs: Vec<&[u8]> = subs.iter().map(|k| &k[..]).collect();
    coll::read_elements(shared, key, m, &subs)
}

/// Opens the group `a[1]` of the stream at `a[0]` for XACK-like commands
/// under the key's lock: `Ok(None)` if the key or group is absent.
fn open_group<'a>(
    shared: &'a Shared,
    conn: &ConnState,
    a: &[Bytes],
) -> Result<Option<(Vec<u8>, Meta, Grp<'a>)>, Reply> {
    let Some((key, m)) = read_stream(shared, conn.db, &a[0])? else {
        return Ok(None);
    };
    Ok(Grp::open(shared, &key, &m, &a[1])?.map(|g| (key, m, g)))
}

/// XACK key group id...
pub fn xack(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _l = shared.lock_keys(&[&key]);
    let Some((_, _, mut g)) = tri!(open_group(shared, conn, a)) else {
        return Reply::Int(0);
    };
    let ids: Vec<StreamId> = tri!(a[2..].iter().map(|x| strict_id(x)).collect());
    let mut acked = 0;
    for id in ids {
        if let Some(n) = tri!(g.nack(id)) {
            tri!(g.remove_nack(id, &n));
            acked += 1;
        }
    }
    tri!(g.save());
    Reply::Int(acked)
}

/// XPENDING key group [[IDLE ms] start end count [consumer]].
pub fn xpending(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let summary = a.len() == 2;
    if !summary && !(5..=8).contains(&a.len()) {
        return syntax_error();
    }
    let mut range_args = None;
    if !summary {
        let mut at = 2;
        let mut min_idle = 0;
        if a[2].eq_ignore_ascii_case(b"idle") {
            min_idle = tri!(parse_int(&a[3]).ok_or_else(not_integer));
            if a.len() < 7 {
                return syntax_error();
            }
            at += 2;
        }
        let count = tri!(parse_int(&a[at + 2]).ok_or_else(not_integer)).max(0) as usize;
        let (start, end) = tri!(interval(&a[at], &a[at + 1]));
        range_args = Some((min_idle, start, end, count, a.get(at + 3)));
    }
    let Some((_, _, mut g)) = tri!(open_group(shared, conn, a)) else {
        return no_group(&a[0], &a[1]);
    };
    let Some((min_idle, start, end, count, consumer)) = range_args else {
        return pending_summary(&g);
    };
    if let Some(c) = consumer {
        if tri!(g.consumer(c)).is_none() {
            return Reply::Array(Vec::new());
        }
    }
    let now = g.now;
    let idle = |n: &Nack| now.saturating_sub(n.delivered) as i64;
    let ids = if let Some(c) = consumer {
        // The consumer's index, then each entry's record.
        let ids = tri!(g.pending_ids_of(c, start, end, usize::MAX));
        tri!(g.prefetch_nacks(&ids[..ids.len().min(count)]));
        let mut out = Vec::new();
        for id in ids {
            if out.len() >= count {
                break;
            }
            let n = tri!(decode(tri!(g.nack(id))));
            if min_idle == 0 || idle(&n) >= min_idle {
                out.push((id, n));
            }
        }
        out
    } else {
        tri!(g.pending_from(start, end, |n| min_idle == 0 || idle(n) >= min_idle, count))
    };
    if count == 0 {
        return Reply::Array(Vec::new());
    }
    Reply::Array(
        ids.into_iter()
            .map(|(id, n)| {
                Reply::Array(vec![
                    Reply::bulk(id.to_string()),
                    Reply::bulk(Bytes::from(n.consumer.clone())),
                    Reply::Int(idle(&n)),
                    Reply::Int(n.count as i64),
                ])
            })
            .collect(),
    )
}

/// An interval's start and end as XPENDING and XAUTOCLAIM parse them
/// (`-`, `+`, `(` exclusive).
fn interval(start: &[u8], end: &[u8]) -> Result<(StreamId, StreamId), Reply> {
    let (mut s, s_ex) = parse_bound(start, 0).ok_or_else(invalid_id)?;
    if s_ex {
        s = s
            .incr()
            .ok_or_else(|| Reply::err("ERR invalid start ID for the interval"))?;
    }
    let (mut e, e_ex) = parse_bound(end, u64::MAX).ok_or_else(invalid_id)?;
    if e_ex {
        e = e
            .decr()
            .ok_or_else(|| Reply::err("ERR invalid end ID for the interval"))?;
    }
    Ok((s, e))
}

/// XPENDING's summary: the count, the smallest and largest pending IDs,
/// and the consumers with pending entries and their counts.
fn pending_summary(g: &Grp) -> Reply {
    if g.rec.pending == 0 {
        return Reply::Array(vec![Reply::Int(0), Reply::Nil, Reply::Nil, Reply::NilArray]);
    }
    let prefix = g.keys.pending_prefix(&g.name);
    let end = meta::prefix_end(&prefix);
    let mut edges = [None, None];
    for (i, rev) in [false, true].into_iter().enumerate() {
        tri!(g.shared.scan(&prefix, &end, rev, true, |k, _| {
            edges[i] = StreamId::from_key(&k[prefix.len()..]);
            false
        }));
    }
    let [Some(first), Some(last)] = edges else {
        return corrupt();
    };
    // The consumers with pending entries, found by the PEL index: one
    // seek per consumer there. (The consumer records themselves are
    // rewritten at every read, and an iterator would step over each of
    // their versions.) Once the consumers found own all of the group's
    // pending entries there is none left to seek (the records are read
    // at one snapshot). The index orders names by length first: sorted
    // by name afterwards, as Redis lists them.
    let index = g.keys.pending_index(&g.name);
    let end = meta::prefix_end(&index);
    let mut from = index.clone();
    let mut owners: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut owned = 0u64;
    while owned < g.rec.pending {
        let mut next = None;
        tri!(g.shared.scan(&from, &end, false, true, |k, _| {
            next = Some(groups::index_consumer(&k[index.len()..]).map(<[u8]>::to_vec));
            false
        }));
        let Some(name) = next else {
            break;
        };
        let Some(name) = name else {
            return corrupt();
        };
        let c = match tri!(g.shared.get_raw(&g.keys.consumer(&g.name, &name))) {
            Some(v) => tri!(decode(Consumer::decode(&v))),
            None => return corrupt(),
        };
        from = meta::prefix_end(&g.keys.consumer_pending_prefix(&g.name, &name));
        owned = owned.saturating_add(c.pending);
        owners.push((name, c.pending));
    }
    owners.sort_unstable();
    let consumers = owners
        .into_iter()
        .map(|(name, n)| {
            Reply::Array(vec![
                Reply::bulk(Bytes::from(name)),
                Reply::bulk(n.to_string()),
            ])
        })
        .collect();
    Reply::Array(vec![
        Reply::Int(g.rec.pending as i64),
        Reply::bulk(first.to_string()),
        Reply::bulk(last.to_string()),
        Reply::Array(consumers),
    ])
}

/// Moves the pending entry `id` (`n`) to `consumer` (created if absent)
/// with delivery time `delivered`; `count`: the new delivery count.
fn claim(
    g: &mut Grp,
    id: StreamId,
    mut n: Nack,
    consumer: &[u8],
    delivered: u64,
    count: u64,
) -> Result<(), Reply> {
    if !g.consumers.contains_key(consumer) {
        g.seen(consumer)?;
    }
    n.delivered = delivered;
    n.count = count;
    n.consumer = consumer.to_vec();
    g.set_nack(id, n)
}

/// XCLAIM key group consumer min-idle id... [IDLE ms] [TIME ms]
/// [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id].
pub fn xclaim(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _l = shared.lock_keys(&[&key]);
    let Some((key, m, mut g)) = tri!(open_group(shared, conn, a)) else {
        return no_group(&a[0], &a[1]);
    };
    let min_idle =
        tri!(parse_int(&a[3])
            .ok_or_else(|| Reply::err("ERR Invalid min-idle-time argument for XCLAIM")))
        .max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 4;
    while j < a.len() {
        match parse_id(&a[j], STRICT) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = g.now;
    let (mut force, mut justid) = (false, false);
    let mut delivered: Option<i64> = None;
    let mut retrycount: Option<i64> = None;
    let mut last_id = StreamId::ZERO;
    while j < a.len() {
        let more = j + 1 < a.len();
        let opt = &a[j][..];
        let is = |name: &str| opt.eq_ignore_ascii_case(name.as_bytes());
        let int = |v: &[u8], what: &str| {
            parse_int(v).ok_or_else(|| {
                Reply::Error(format!("ERR Invalid {what} option argument for XCLAIM"))
            })
        };
        if is("force") {
            force = true;
        } else if is("justid") {
            justid = true;
        } else if is("idle") && more {
            j += 1;
            delivered = Some(now as i64 - tri!(int(&a[j], "IDLE")));
        } else if is("time") && more {
            j += 1;
            delivered = Some(tri!(int(&a[j], "TIME")));
        } else if is("retrycount") && more {
            j += 1;
            retrycount = Some(tri!(int(&a[j], "RETRYCOUNT")));
        } else if is("lastid") && more {
            j += 1;
            last_id = tri!(strict_id(&a[j]));
        } else {
            return Reply::Error(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            ));
        }
        j += 1;
    }
    if last_id > g.rec.last {
        g.rec.last = last_id;
        g.changed = true;
    }
    let delivered = match delivered {
        Some(t) if t >= 0 && t <= now as i64 => t as u64,
        _ => now,
    };
    let consumer = &a[2][..];
    let stored = tri!(entries(shared, &key, &m, &ids));
    tri!(g.prefetch_nacks(&ids));
    let mut out = Vec::new();
    for (id, v) in ids.into_iter().zip(stored) {
        let n = tri!(g.nack(id));
        let Some(v) = v else {
            // The entry is gone: so is its pending record.
            if let Some(n) = n {
                tri!(g.remove_nack(id, &n));
            }
            continue;
        };
        let (n, forced) = match n {
            Some(n) => (n, false),
            None if force => (
                Nack {
                    delivered: now,
                    count: 1,
                    consumer: Vec::new(),
                },
                true,
            ),
            None => continue,
        };
        if !forced && min_idle > 0 && now.saturating_sub(n.delivered) < min_idle {
            continue;
        }
        let count = match retrycount {
            Some(c) if c >= 0 => c as u64,
            _ if justid => n.count,
            _ => n.count + 1,
        };
        // A forced entry is new to the PEL: `set_nack` adds it.
        tri!(claim(&mut g, id, n, consumer, delivered, count));
        out.push(if justid {
            Reply::bulk(id.to_string())
        } else {
            tri!(entry_reply(id, &v))
        });
    }
    tri!(g.save());
    Reply::Array(out)
}

/// The pending entries XAUTOCLAIM reads at a time, at most.
const PAGE: u64 = 256;

/// Entry IDs of XCLAIM's list: `-`/`+` refused, `ms` alone is `ms-0`.
const STRICT: IdSyntax = IdSyntax {
    missing_seq: 0,
    strict: true,
    auto_seq: false,
};

/// XAUTOCLAIM key group consumer min-idle start [COUNT n] [JUSTID]: the
/// next cursor, the claimed entries, and the IDs of deleted entries it
/// removed from the PEL.
pub fn xautoclaim(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let min_idle = tri!(parse_int(&a[3])
        .ok_or_else(|| Reply::err("ERR Invalid min-idle-time argument for XAUTOCLAIM")))
    .max(0) as u64;
    let (start, _) = tri!(interval(&a[4], b"+"));
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 5;
    while j < a.len() {
        let more = j + 1 < a.len();
        if a[j].eq_ignore_ascii_case(b"count") && more {
            // Redis's bound: LONG_MAX / 16 (the size of an ID).
            count = match parse_int(&a[j + 1]) {
                Some(c) if (1..=i64::MAX / 16).contains(&c) => c as u64,
                _ => return Reply::err("ERR COUNT must be > 0"),
            };
            j += 1;
        } else if a[j].eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let key = db_key(conn.db, &a[0]);
    let _l = shared.lock_keys(&[&key]);
    let Some((key, m, mut g)) = tri!(open_group(shared, conn, a)) else {
        return no_group(&a[0], &a[1]);
    };
    let consumer = &a[2][..];
    let now = g.now;
    // Redis examines at most 10 × COUNT pending entries in ID order from
    // `start`, and COUNT bounds the claimed and the deleted together. The
    // cursor is the first entry not examined (0-0 once the PEL is done).
    // The PEL is read in pages, each page's entries in one batched read.
    let mut tries = count.saturating_mul(10);
    let mut left = count;
    let page_len = tries.min(PAGE).saturating_add(1) as usize;
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut from = start;
    let mut next = StreamId::ZERO;
    'scan: loop {
        let page = tri!(g.pending_from(from, StreamId::MAX, |_| true, page_len));
        let ids: Vec<StreamId> = page.iter().map(|(id, _)| *id).collect();
        let stored = tri!(entries(shared, &key, &m, &ids));
        for ((id, n), v) in page.into_iter().zip(stored) {
            g.nacks.entry(id).or_insert_with(|| Some(n.clone()));
            if tries == 0 || left == 0 {
                next = id;
                break 'scan;
            }
            tries -= 1;
            let Some(v) = v else {
                tri!(g.remove_nack(id, &n));
                deleted.push(id_reply(id));
                left -= 1;
                continue;
            };
            if min_idle > 0 && now.saturating_sub(n.delivered) < min_idle {
                continue;
            }
            let c = if justid { n.count } else { n.count + 1 };
            tri!(claim(&mut g, id, n, consumer, now, c));
            claimed.push(if justid {
                id_reply(id)
            } else {
                tri!(entry_reply(id, &v))
            });
            left -= 1;
        }
        match ids.last().and_then(|id| id.incr()) {
            Some(after) if ids.len() == page_len => from = after,
            _ => break,
        }
    }
    tri!(g.save());
    Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(claimed),
        Reply::Array(deleted),
    ])
}

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

fn field(name: &'static str, v: Reply) -> (Reply, Reply) {
    (Reply::bulk(Bytes::from_static(name.as_bytes())), v)
}

fn id_reply(id: StreamId) -> Reply {
    Reply::bulk(id.to_string())
}

fn read_count(n: i64) -> Reply {
    if n == UNKNOWN_READ {
        Reply::Nil
    } else {
        Reply::Int(n)
    }
}

/// The groups of the stream `m` at `key`, in name order.
pub(super) fn all_groups(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
) -> Result<Vec<(Vec<u8>, Group)>, Reply> {
    let keys = Keys {
        prefix: meta::group_prefix(key, m.version),
    };
    let (lo, hi, at) = keys.groups();
    let mut out = Vec::new();
    let mut bad = false;
    shared.scan(&lo, &hi, false, true, |k, v| match Group::decode(v) {
        Some(g) => {
            out.push((k[at..].to_vec(), g));
            true
        }
        None => {
            bad = true;
            false
        }
    })?;
    if bad {
        return Err(corrupt());
    }
    Ok(out)
}

/// XINFO STREAM|GROUPS|CONSUMERS|HELP.
pub fn xinfo(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let sub = a[0].to_ascii_lowercase();
    if sub == b"help" {
        return help_reply(XINFO_HELP);
    }
    let full = sub == b"stream" && a.len() >= 3 && a[2].eq_ignore_ascii_case(b"full");
    let shape_ok = match sub.as_slice() {
        b"consumers" => a.len() == 3,
        b"groups" => a.len() == 2,
        b"stream" => a.len() == 2 || (full && (a.len() == 3 || a.len() == 5)),
        _ => false,
    };
    if !shape_ok {
        return bad_subcommand(&a[0], "XINFO");
    }
    let key = db_key(conn.db, &a[1]);
    let _l = shared.lock_keys(&[&key]);
    let Some(m) = tri!(shared.read_meta(&key, Kind::Stream)) else {
        return Reply::err(NO_SUCH_KEY);
    };
    match sub.as_slice() {
        b"groups" => {
            let groups = tri!(all_groups(shared, &key, &m));
            Reply::Array(
                groups
                    .into_iter()
                    .map(|(name, g)| {
                        Reply::Map(vec![
                            field("name", Reply::bulk(Bytes::from(name))),
                            field("consumers", Reply::Int(g.consumers as i64)),
                            field("pending", Reply::Int(g.pending as i64)),
                            field("last-delivered-id", id_reply(g.last)),
                            field("entries-read", read_count(g.entries_read)),
                            field(
                                "lag",
                                groups::lag(&g, &m.stream, m.size).map_or(Reply::Nil, Reply::Int),
                            ),
                        ])
                    })
                    .collect(),
            )
        }
        b"consumers" => {
            let Some(g) = tri!(Grp::open(shared, &key, &m, &a[2])) else {
                return no_group_of_key(&a[1], &a[2]);
            };
            let prefix = g.keys.consumers(&g.name);
            let end = meta::prefix_end(&prefix);
            let mut out = Vec::new();
            let now = g.now;
            tri!(shared.scan(&prefix, &end, false, true, |k, v| {
                if let Some(c) = Consumer::decode(v) {
                    out.push(Reply::Map(vec![
                        field(
                            "name",
                            Reply::bulk(Bytes::copy_from_slice(&k[prefix.len()..])),
                        ),
                        field("pending", Reply::Int(c.pending as i64)),
                        field("idle", Reply::Int(now.saturating_sub(c.seen) as i64)),
                    ]));
                }
                true
            }));
            Reply::Array(out)
        }
        _ if full => {
            let count = match a.get(3..5) {
                Some([opt, n]) if opt.eq_ignore_ascii_case(b"count") => {
                    tri!(parse_int(n).ok_or_else(not_integer)).max(0) as u64
                }
                Some(_) => return bad_subcommand(&a[0], "XINFO"),
                None => 10,
            };
            stream_full(shared, &key, &m, count)
        }
        _ => {
            let groups = tri!(all_groups(shared, &key, &m));
            let mut fields = stream_fields(&m);
            fields.push(field("groups", Reply::Int(groups.len() as i64)));
            let edge = |rev| -> Result<Reply, Reply> {
                let e = range(shared, &key, &m, StreamId::ZERO, StreamId::MAX, rev, 1)?;
                Ok(e.into_iter().next().map_or(Reply::Nil, |(_, r)| r))
            };
            fields.push(field("first-entry", tri!(edge(false))));
            fields.push(field("last-entry", tri!(edge(true))));
            Reply::Map(fields)
        }
    }
}

/// The fields XINFO STREAM starts with. Redis's radix-tree figures
/// describe its memory layout; batchkv reports the node count its
/// layout would have (one node per 100 entries, Redis's
/// `stream-node-max-entries`), not a measured one.
fn stream_fields(m: &Meta) -> Vec<(Reply, Reply)> {
    let s = &m.stream;
    let nodes = m.size.div_ceil(100) as i64;
    vec![
        field("length", Reply::Int(m.size as i64)),
        field("radix-tree-keys", Reply::Int(nodes)),
        field("radix-tree-nodes", Reply::Int(nodes + 1)),
        field("last-generated-id", id_reply(s.last)),
        field("max-deleted-entry-id", id_reply(s.max_deleted)),
        field("entries-added", Reply::Int(s.entries_added as i64)),
        field("recorded-first-entry-id", id_reply(s.first)),
    ]
}

/// XINFO STREAM key FULL [COUNT n]: the stream, its first `count`
/// entries (0: all), and each group with its first `count` pending
/// entries and its consumers with theirs.
fn stream_full(shared: &Shared, key: &[u8], m: &Meta, count: u64) -> Reply {
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    let mut fields = stream_fields(m);
    let entries = tri!(range(
        shared,
        key,
        m,
        StreamId::ZERO,
        StreamId::MAX,
        false,
        count
    ));
    fields.push(field(
        "entries",
        Reply::Array(entries.into_iter().map(|(_, r)| r).collect()),
    ));
    let mut groups_out = Vec::new();
    for (name, rec) in tri!(all_groups(shared, key, m)) {
        let Some(mut g) = tri!(Grp::open(shared, key, m, &name)) else {
            continue;
        };
        let pel = tri!(g.pending_from(StreamId::ZERO, StreamId::MAX, |_| true, limit));
        let pel_replies = pel
            .iter()
            .map(|(id, n)| {
                Reply::Array(vec![
                    id_reply(*id),
                    Reply::bulk(Bytes::from(n.consumer.clone())),
                    Reply::Int(n.delivered as i64),
                    Reply::Int(n.count as i64),
                ])
            })
            .collect();
        let prefix = g.keys.consumers(&name);
        let end = meta::prefix_end(&prefix);
        let mut consumers = Vec::new();
        tri!(shared.scan(&prefix, &end, false, true, |k, v| {
            if let Some(c) = Consumer::decode(v) {
                consumers.push((k[prefix.len()..].to_vec(), c));
            }
            true
        }));
        let mut consumer_replies = Vec::new();
        for (cname, c) in consumers {
            let ids = tri!(g.pending_ids_of(&cname, StreamId::ZERO, StreamId::MAX, limit));
            tri!(g.prefetch_nacks(&ids));
            let mut pending = Vec::new();
            for id in ids {
                let n = tri!(decode(tri!(g.nack(id))));
                pending.push(Reply::Array(vec![
                    id_reply(id),
                    Reply::Int(n.delivered as i64),
                    Reply::Int(n.count as i64),
                ]));
            }
            consumer_replies.push(Reply::Map(vec![
                field("name", Reply::bulk(Bytes::from(cname))),
                field("seen-time", Reply::Int(c.seen as i64)),
                field("pel-count", Reply::Int(c.pending as i64)),
                field("pending", Reply::Array(pending)),
            ]));
        }
        groups_out.push(Reply::Map(vec![
            field("name", Reply::bulk(Bytes::from(name))),
            field("last-delivered-id", id_reply(rec.last)),
            field("entries-read", read_count(rec.entries_read)),
            field(
                "lag",
                groups::lag(&rec, &m.stream, m.size).map_or(Reply::Nil, Reply::Int),
            ),
            field("pel-count", Reply::Int(rec.pending as i64)),
            field("pending", Reply::Array(pel_replies)),
            field("consumers", Reply::Array(consumer_replies)),
        ]));
    }
    fields.push(field("groups", Reply::Array(groups_out)));
    Reply::Map(fields)
}
