//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD
//! (blocking too) and XSETID, with Redis 7.0's parsing, IDs and errors.
//!
//! A stream is a collection (`meta.rs`): one element per entry, keyed by
//! its ID so that entries iterate in ID order, its fields stored as
//! `streams.rs` describes; the metadata record holds what Redis keeps
//! beside the entries (first and last ID, the largest deleted ID, the
//! number of entries ever added). Unlike the other collections, an emptied
//! stream stays. Consumer groups (XGROUP, XREADGROUP, XACK, ...) and XINFO
//! are not supported yet.
//!
//! Approximate trimming (`MAXLEN ~ n`, `MINID ~ id`) trims exactly, at most
//! LIMIT entries (10,000 without LIMIT, as Redis's default): Redis removes
//! only whole nodes of its radix tree, so it may keep more entries than
//! asked, which the option allows.

use bytes::Bytes;
use std::collections::HashSet;
use std::time::Duration;

use super::coll::{self, Others, Writer};
use super::strings::tri;
use super::{
    parse_int, spec, syntax_error, wrong_arity, CommandSpec, ConnState, Handler, KEY1, NO_KEYS, R,
    RS,
};
use crate::batcher::Shape;
use crate::blocking::WaitFor;
use crate::errors::{not_integer, wrong_type, NO_SUCH_KEY};
use crate::groups;
use crate::keyspace::db_key;
use crate::meta::{self, Kind, Meta};
use crate::notify::STREAM;
use crate::resp::Reply;
use crate::shared::{Shared, Value};
use crate::streams::{
    decode_fields, encode_fields, parse_bound, parse_id, IdSyntax, StreamId, INVALID_ID,
};

/// Redis's flags for XADD and XSETID, XDEL, XREAD.
const WRITE_FAST_OOM: &[&str] = &["write", "denyoom", "fast"];
const WRITE_FAST: &[&str] = &["write", "fast"];
const XREAD_FLAGS: &[&str] = &["readonly", "blocking", "movablekeys"];

/// The stream commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("xadd", -5, WRITE_FAST_OOM, KEY1, |s, c, a| xadd(s, c, a)),
    spec("xlen", 2, R, KEY1, |s, c, a| xlen(s, c, a)).batched(|_| Some(Shape::Card(Kind::Stream))),
    spec("xrange", -4, RS, KEY1, |s, c, a| xrange(s, c, a, false)),
    spec("xrevrange", -4, RS, KEY1, |s, c, a| xrange(s, c, a, true)),
    spec("xdel", -3, WRITE_FAST, KEY1, |s, c, a| xdel(s, c, a)),
    spec("xtrim", -4, super::W, KEY1, |s, c, a| xtrim(s, c, a)),
    spec("xread", -4, XREAD_FLAGS, NO_KEYS, |s, c, a| {
        xread(s, c, a, Others::Fail)
    }),
    spec("xsetid", -3, WRITE_FAST_OOM, KEY1, |s, c, a| {
        xsetid(s, c, a)
    }),
];

/// IDs of entries: `-` and `+` refused, `ms` alone is `ms-0`.
const STRICT: IdSyntax = IdSyntax {
    missing_seq: 0,
    strict: true,
    auto_seq: false,
};

/// Redis's default LIMIT of an approximate trim: 100 nodes of
/// `node_max` entries (`stream-node-max-entries`), 10,000 if that is 0,
/// at most 1,000,000.
fn approx_limit(node_max: u64) -> u64 {
    match node_max.saturating_mul(100) {
        0 => 10_000,
        n => n.min(1_000_000),
    }
}

pub(super) fn invalid_id() -> Reply {
    Reply::err(INVALID_ID)
}

pub(super) fn strict_id(arg: &[u8]) -> Result<StreamId, Reply> {
    parse_id(arg, STRICT)
        .map(|(id, _)| id)
        .ok_or_else(invalid_id)
}

/// What trimming removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Oldest entries until at most this many remain.
    MaxLen(u64),
    /// Entries with smaller IDs.
    MinId(StreamId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Trim {
    strategy: Strategy,
    /// `~`: whole nodes only ([`approx_maxlen`]).
    approx: bool,
    /// At most this many entries are removed; 0: no limit.
    limit: u64,
}

/// XADD's and XTRIM's options.
struct AddArgs {
    trim: Option<Trim>,
    nomkstream: bool,
    /// XADD: the ID argument's position in the arguments (key at 0) and
    /// what it says (`None`: `*`; else the ID and whether its sequence
    /// was given). `at` is past the end when no ID came.
    at: usize,
    id: Option<(StreamId, bool)>,
}

/// Parses the options of XADD (`xadd`) or XTRIM after the key, as Redis's
/// `streamParseAddOrTrimArgsOrReply` does, in its order; `node_max` is
/// `stream-node-max-entries` (the default LIMIT of `~`).
fn parse_add_or_trim(a: &[Bytes], xadd: bool, node_max: u64) -> Result<AddArgs, Reply> {
    let mut strategy = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let mut nomkstream = false;
    let mut id = None;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = &a[i][..];
        let is = |name: &str| opt.eq_ignore_ascii_case(name.as_bytes());
        if xadd && opt == b"*" {
            break;
        } else if (is("maxlen") || is("minid")) && more > 0 {
            if strategy.is_some() {
                return Err(Reply::err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            approx = false;
            let next = &a[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let value = &a[i + 1];
            strategy = Some(if is("maxlen") {
                match parse_int(value) {
                    Some(n) if n >= 0 => Strategy::MaxLen(n as u64),
                    Some(_) => return Err(Reply::err("ERR The MAXLEN argument must be >= 0.")),
                    None => return Err(not_integer()),
                }
            } else {
                Strategy::MinId(strict_id(value)?)
            });
            i += 1;
        } else if is("limit") && more > 0 {
            limit = parse_int(&a[i + 1]).ok_or_else(not_integer)?;
            if limit < 0 {
                return Err(Reply::err("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && is("nomkstream") {
            nomkstream = true;
        } else if xadd {
            let syntax = IdSyntax {
                auto_seq: true,
                ..STRICT
            };
            id = Some(parse_id(opt, syntax).ok_or_else(invalid_id)?);
            break;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    if limit != 0 && strategy.is_none() {
        return Err(Reply::err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && strategy.is_none() {
        return Err(Reply::err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    let limit = if limit_given {
        if !approx {
            return Err(Reply::err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        limit as u64
    } else if approx {
        approx_limit(node_max)
    } else {
        0
    };
    Ok(AddArgs {
        trim: strategy.map(|strategy| Trim {
            strategy,
            approx,
            limit,
        }),
        nomkstream,
        at: i,
        id,
    })
}

/// The ID XADD gives a new entry of the stream whose last ID is `last`
/// (not [`StreamId::MAX`]): `asked` as parsed (`None`: `*`, from the
/// clock). Redis's error if it is not above `last`.
fn next_id(last: StreamId, asked: Option<(StreamId, bool)>) -> Result<StreamId, Reply> {
    let too_small = || {
        Reply::err(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    let id = match asked {
        None => {
            let now = crate::keyspace::now_ms();
            if now > last.ms {
                StreamId { ms: now, seq: 0 }
            } else {
                last.incr().ok_or_else(too_small)?
            }
        }
        Some((id, true)) => id,
        // `ms-*`: the next sequence within `last`'s millisecond.
        Some((id, false)) if id.ms == last.ms => {
            if last.seq == u64::MAX {
                return Err(too_small());
            }
            StreamId {
                ms: id.ms,
                seq: last.seq + 1,
            }
        }
        Some((id, false)) => id,
    };
    if id <= last {
        return Err(too_small());
    }
    Ok(id)
}

pub fn xadd(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let node_max = shared.settings.stream_node_max_entries();
    let args = tri!(parse_add_or_trim(a, true, node_max));
    let fields = a.get(args.at + 1..).unwrap_or_default();
    if fields.len() < 2 || !fields.len().is_multiple_of(2) {
        return wrong_arity("xadd");
    }
    if args.id == Some((StreamId::ZERO, true)) {
        return Reply::err("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let mut w = if args.nomkstream {
        match tri!(coll::open_existing(shared, key.clone(), Kind::Stream)) {
            Some(w) => w,
            None => return Reply::Nil,
        }
    } else {
        tri!(coll::open(shared, key.clone(), Kind::Stream))
    };
    let s = w.meta.stream;
    if s.last == StreamId::MAX {
        return Reply::err(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        );
    }
    let id = tri!(next_id(s.last, args.id));
    let ek = w.element_key(&id.to_key());
    w.batch.put(ek, encode_fields(fields));
    if w.meta.size == 0 {
        w.meta.stream.first = id;
    }
    w.meta.size += 1;
    w.meta.stream.last = id;
    w.meta.stream.entries_added += 1;
    let mut trimmed = 0;
    if let Some(t) = args.trim {
        trimmed = tri!(trim(shared, &mut w, t, Some(id)));
    }
    tri!(w.commit(shared));
    shared.notify(STREAM, "xadd", &key);
    if trimmed > 0 {
        shared.notify(STREAM, "xtrim", &key);
    }
    shared.blocking.signal_kind(&key, WaitFor::Stream);
    Reply::bulk(id.to_string())
}

/// Removes from the stream in `w` what `t` asks (oldest first) and returns
/// how many entries went. `added`: an entry this command added to the
/// batch (the newest; it is removed only if every other one is).
fn trim(shared: &Shared, w: &mut Writer, t: Trim, added: Option<StreamId>) -> Result<u64, Reply> {
    let node_max = shared.settings.stream_node_max_entries();
    let mut budget = match t.strategy {
        Strategy::MaxLen(n) if t.approx => match approx_maxlen(&w.meta, n, t.limit, node_max) {
            Some(whole_nodes) => whole_nodes,
            None => w.meta.size.saturating_sub(n),
        },
        Strategy::MaxLen(n) => w.meta.size.saturating_sub(n),
        Strategy::MinId(_) => u64::MAX,
    };
    if t.limit > 0 {
        budget = budget.min(t.limit);
    }
    if budget == 0 {
        return Ok(0);
    }
    let goes = |id: StreamId, deleted: u64| {
        deleted < budget && !matches!(t.strategy, Strategy::MinId(min) if id >= min)
    };
    let mut deleted = 0;
    let mut kept = None;
    if w.existed && w.meta.size > u64::from(added.is_some()) {
        let prefix = meta::element_prefix(&w.key, w.meta.version);
        let lo = [&prefix[..], &w.meta.stream.first.to_key()].concat();
        let batch = &mut w.batch;
        shared.scan(&lo, &meta::prefix_end(&prefix), false, true, |k, _| {
            let Some(id) = StreamId::from_key(&k[prefix.len()..]) else {
                return true;
            };
            if !goes(id, deleted) {
                kept = Some(id);
                return false;
            }
            batch.delete(k);
            deleted += 1;
            true
        })?;
    }
    if let (None, Some(id)) = (kept, added) {
        if goes(id, deleted) {
            let ek = w.element_key(&id.to_key());
            w.batch.delete(ek);
            deleted += 1;
        } else {
            kept = Some(id);
        }
    }
    w.meta.size -= deleted;
    if deleted > 0 {
        w.meta.stream.first = kept.unwrap_or(StreamId::ZERO);
    }
    Ok(deleted)
}

/// How many of the oldest entries `MAXLEN ~ maxlen` removes from the
/// stream `m`, as Redis's `streamTrim` does with its radix-tree nodes:
/// whole nodes only, oldest first, while the stream keeps at least
/// `maxlen` entries and at most `limit` (0: any number) go. Redis starts
/// a node every `node_max` entries appended (or sooner, at
/// `stream-node-max-bytes`), so the nodes here are the runs of `node_max`
/// entries counted from the stream's first entry ever: entry `i` (0-based
/// among the `entries_added`) is in node `i / node_max`. `None` when that
/// cannot be known (an entry inside the stream was deleted, or
/// `node_max` is 0): the trim is then exact up to `limit`.
fn approx_maxlen(m: &Meta, maxlen: u64, limit: u64, node_max: u64) -> Option<u64> {
    let s = &m.stream;
    if node_max == 0 || groups::has_tombstones(s, m.size, s.first, StreamId::MAX) {
        return None;
    }
    let mut ordinal = s.entries_added.checked_sub(m.size)?;
    let (mut left, mut removed) = (m.size, 0);
    while left > maxlen {
        let in_node = (node_max - ordinal % node_max).min(left);
        if (limit > 0 && removed + in_node > limit) || left - in_node < maxlen {
            break;
        }
        left -= in_node;
        removed += in_node;
        ordinal += in_node;
    }
    Some(removed)
}

pub fn xtrim(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let node_max = shared.settings.stream_node_max_entries();
    let args = tri!(parse_add_or_trim(a, false, node_max));
    let Some(t) = args.trim else {
        return syntax_error();
    };
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::Stream)) else {
        return Reply::Int(0);
    };
    let deleted = tri!(trim(shared, &mut w, t, None));
    if deleted > 0 {
        tri!(w.commit(shared));
        shared.notify(STREAM, "xtrim", &key);
    }
    Reply::Int(deleted as i64)
}

/// The live stream at `key` of database `db`'s metadata.
pub(super) fn read_stream(
    shared: &Shared,
    db: u8,
    key: &[u8],
) -> Result<Option<(Vec<u8>, Meta)>, Reply> {
    let k = db_key(db, key);
    Ok(shared.read_meta(&k, Kind::Stream)?.map(|m| (k, m)))
}

pub fn xlen(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    Reply::Int(tri!(read_stream(shared, conn.db, &a[0])).map_or(0, |(_, m)| m.size as i64))
}

/// One entry as Redis replies it: its ID, then its fields and values.
pub(super) fn entry_reply(id: StreamId, v: &[u8]) -> Result<Reply, Reply> {
    let fields =
        decode_fields(v).ok_or_else(|| Reply::err(format!("ERR corrupt stream entry {id}")))?;
    Ok(Reply::Array(vec![
        Reply::bulk(id.to_string()),
        Reply::Array(
            fields
                .into_iter()
                .map(|f| Reply::bulk(Bytes::copy_from_slice(f)))
                .collect(),
        ),
    ]))
}

/// The entries of the stream `m` at stored key `key` with IDs in
/// `[start, end]`, ascending (descending with `rev`), at most `count` (0:
/// all): each ID with its reply.
pub(super) fn range(
    shared: &Shared,
    key: &[u8],
    m: &Meta,
    start: StreamId,
    end: StreamId,
    rev: bool,
    count: u64,
) -> Result<Vec<(StreamId, Reply)>, Reply> {
    let mut out = Vec::new();
    if m.size == 0 || start > end {
        return Ok(out);
    }
    let prefix = meta::element_prefix(key, m.version);
    // Nothing lies before the first entry: start there (past the
    // tombstones of trimmed entries).
    let lo = [&prefix[..], &start.max(m.stream.first).to_key()].concat();
    let hi = [&prefix[..], &end.to_key()[..], &[0]].concat();
    let mut err = None;
    shared.scan(&lo, &hi, rev, true, |k, v| {
        let Some(id) = StreamId::from_key(&k[prefix.len()..]) else {
            return true;
        };
        match entry_reply(id, v) {
            Ok(r) => out.push((id, r)),
            Err(e) => {
                err = Some(e);
                return false;
            }
        }
        count == 0 || (out.len() as u64) < count
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// XRANGE key start end [COUNT n], XREVRANGE key end start [COUNT n].
pub fn xrange(shared: &Shared, conn: &ConnState, a: &[Bytes], rev: bool) -> Reply {
    let (start_arg, end_arg) = if rev { (&a[2], &a[1]) } else { (&a[1], &a[2]) };
    let (mut start, start_ex) = tri!(parse_bound(start_arg, 0).ok_or_else(invalid_id));
    if start_ex {
        start = tri!(start
            .incr()
            .ok_or_else(|| Reply::err("ERR invalid start ID for the interval")));
    }
    let (mut end, end_ex) = tri!(parse_bound(end_arg, u64::MAX).ok_or_else(invalid_id));
    if end_ex {
        end = tri!(end
            .decr()
            .ok_or_else(|| Reply::err("ERR invalid end ID for the interval")));
    }
    let mut count: Option<i64> = None;
    let mut rest = &a[3..];
    while let Some(opt) = rest.first() {
        match rest.get(1) {
            Some(n) if opt.eq_ignore_ascii_case(b"count") => {
                count = Some(tri!(parse_int(n).ok_or_else(not_integer)).max(0));
                rest = &rest[2..];
            }
            _ => return syntax_error(),
        }
    }
    let Some((k, m)) = tri!(read_stream(shared, conn.db, &a[0])) else {
        return Reply::Array(Vec::new());
    };
    if count == Some(0) {
        return Reply::NilArray;
    }
    let count = count.unwrap_or(0) as u64;
    let entries = tri!(range(shared, &k, &m, start, end, rev, count));
    Reply::Array(entries.into_iter().map(|(_, r)| r).collect())
}

pub fn xdel(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::Stream)) else {
        return Reply::Int(0);
    };
    let ids: Vec<StreamId> = tri!(a[1..].iter().map(|x| strict_id(x)).collect());
    let keys: Vec<[u8; 16]> = ids.iter().map(|id| id.to_key()).collect();
    let subs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let found = tri!(w.read(shared, &subs));
    let mut gone = HashSet::new();
    for (id, v) in ids.iter().zip(&found) {
        if v.is_none() || !gone.insert(*id) {
            continue;
        }
        let ek = w.element_key(&id.to_key());
        w.batch.delete(ek);
        let s = &mut w.meta.stream;
        s.max_deleted = s.max_deleted.max(*id);
    }
    if gone.is_empty() {
        return Reply::Int(0);
    }
    w.meta.size -= gone.len() as u64;
    if w.meta.size == 0 {
        w.meta.stream.first = StreamId::ZERO;
    } else if gone.contains(&w.meta.stream.first) {
        w.meta.stream.first = tri!(first_after(shared, &w, &gone));
    }
    tri!(w.commit(shared));
    shared.notify(STREAM, "xdel", &key);
    Reply::Int(gone.len() as i64)
}

/// The first entry of the stream in `w` whose ID is not in `gone` (the
/// stream has one).
fn first_after(shared: &Shared, w: &Writer, gone: &HashSet<StreamId>) -> Result<StreamId, Reply> {
    let prefix = meta::element_prefix(&w.key, w.meta.version);
    let lo = [&prefix[..], &w.meta.stream.first.to_key()].concat();
    let mut first = None;
    shared.scan(
        &lo,
        &meta::prefix_end(&prefix),
        false,
        true,
        |k, _| match StreamId::from_key(&k[prefix.len()..]) {
            Some(id) if !gone.contains(&id) => {
                first = Some(id);
                false
            }
            _ => true,
        },
    )?;
    first.ok_or_else(|| Reply::err("ERR corrupt stream: fewer entries than its length"))
}

/// The ID of the last entry of the non-empty stream `m` at `key`.
fn last_entry(shared: &Shared, key: &[u8], m: &Meta) -> Result<Option<StreamId>, Reply> {
    let prefix = meta::element_prefix(key, m.version);
    let mut last = None;
    shared.scan(&prefix, &meta::prefix_end(&prefix), true, true, |k, _| {
        last = StreamId::from_key(&k[prefix.len()..]);
        last.is_none()
    })?;
    Ok(last)
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
pub fn xsetid(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let id = tri!(strict_id(&a[1]));
    let mut entries_added = None;
    let mut max_deleted = StreamId::ZERO;
    let mut rest = &a[2..];
    while let Some(opt) = rest.first() {
        let Some(v) = rest.get(1) else {
            return syntax_error();
        };
        if opt.eq_ignore_ascii_case(b"entriesadded") {
            let n = tri!(parse_int(v).ok_or_else(not_integer));
            if n < 0 {
                return Reply::err("ERR entries_added must be positive");
            }
            entries_added = Some(n as u64);
        } else if opt.eq_ignore_ascii_case(b"maxdeletedid") {
            max_deleted = tri!(strict_id(v));
            if id < max_deleted {
                return Reply::err(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
        } else {
            return syntax_error();
        }
        rest = &rest[2..];
    }
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let Some(mut w) = tri!(coll::open_existing(shared, key.clone(), Kind::Stream)) else {
        return Reply::err(NO_SUCH_KEY);
    };
    // Redis 7.0 compares the ID with the stream's own largest deleted ID
    // nowhere: XSETID may set the last ID below it.
    if w.meta.size > 0 {
        let top = tri!(last_entry(shared, &w.key, &w.meta)).unwrap_or(w.meta.stream.last);
        if id < top {
            return Reply::err(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added.is_some_and(|n| w.meta.size > n) {
            return Reply::err(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    let s = &mut w.meta.stream;
    s.last = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if max_deleted != StreamId::ZERO {
        s.max_deleted = max_deleted;
    }
    tri!(w.commit(shared));
    shared.notify(STREAM, "xsetid", &key);
    Reply::ok()
}

/// XREAD's and XREADGROUP's arguments after the name.
pub(super) struct ReadArgs<'a> {
    /// BLOCK's milliseconds (0: forever); `None` without BLOCK.
    pub block: Option<u64>,
    /// 0: no limit.
    pub count: u64,
    /// XREADGROUP's GROUP: the group and the consumer.
    pub group: Option<(&'a Bytes, &'a Bytes)>,
    pub noack: bool,
    pub keys: &'a [Bytes],
    pub ids: &'a [Bytes],
}

/// Parses XREAD's options (XREADGROUP's with `group`) as Redis does, in
/// its order.
pub(super) fn parse_read(a: &[Bytes], group: bool) -> Result<ReadArgs<'_>, Reply> {
    let mut out = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        ids: &[],
    };
    let mut i = 0;
    while i < a.len() {
        let more = a.len() - i - 1;
        let opt = &a[i][..];
        let is = |name: &str| opt.eq_ignore_ascii_case(name.as_bytes());
        if is("block") && more > 0 {
            i += 1;
            let ms = parse_int(&a[i])
                .ok_or_else(|| Reply::err("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(Reply::err("ERR timeout is negative"));
            }
            if ms > 0 && ms > i64::MAX - crate::keyspace::now_ms() as i64 {
                return Err(Reply::err("ERR timeout is out of range"));
            }
            out.block = Some(ms as u64);
        } else if is("count") && more > 0 {
            i += 1;
            out.count = parse_int(&a[i]).ok_or_else(not_integer)?.max(0) as u64;
        } else if is("streams") && more > 0 {
            let streams = &a[i + 1..];
            if !streams.len().is_multiple_of(2) {
                return Err(Reply::err(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' \
                     must be specified.",
                ));
            }
            (out.keys, out.ids) = streams.split_at(streams.len() / 2);
            if group && out.group.is_none() {
                return Err(Reply::err("ERR Missing GROUP option for XREADGROUP"));
            }
            return Ok(out);
        } else if is("group") && more >= 2 {
            if !group {
                return Err(Reply::err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.group = Some((&a[i + 1], &a[i + 2]));
            i += 2;
        } else if is("noack") {
            if !group {
                return Err(Reply::err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.noack = true;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    Err(syntax_error())
}

/// XREAD [COUNT n] [BLOCK ms] STREAMS key... id...: the entries after each
/// ID, for the streams that have some. The keys' metadata is one batched
/// read. With BLOCK and nothing to serve it answers nil, and records its
/// arguments with `$` resolved for the blocked client's retries
/// (`others` = [`Others::Skip`]: keys of other types are passed over).
pub fn xread(shared: &Shared, conn: &mut ConnState, a: &[Bytes], others: Others) -> Reply {
    let args = tri!(parse_read(a, false));
    let stored: Vec<Vec<u8>> = args.keys.iter().map(|k| db_key(conn.db, k)).collect();
    let values = shared.read_many(&stored);
    let mut streams = Vec::with_capacity(stored.len());
    let mut after = Vec::with_capacity(stored.len());
    for (value, id) in values.into_iter().zip(args.ids) {
        let m = match tri!(value) {
            Some(Value::Coll(m)) if m.kind == Kind::Stream => Some(m),
            Some(_) if others == Others::Fail => return wrong_type(),
            _ => None,
        };
        after.push(match &id[..] {
            b"$" => m.map_or(StreamId::ZERO, |m| m.stream.last),
            b">" => {
                return Reply::err(
                    "ERR The > ID can be specified only when calling XREADGROUP using the \
                     GROUP <group> <consumer> option.",
                )
            }
            _ => tri!(strict_id(id)),
        });
        streams.push(m);
    }
    let mut served = Vec::new();
    for (i, m) in streams.iter().enumerate() {
        let (Some(m), Some(start)) = (m, after[i].incr()) else {
            continue;
        };
        let entries = tri!(range(
            shared,
            &stored[i],
            m,
            start,
            StreamId::MAX,
            false,
            args.count
        ));
        if !entries.is_empty() {
            let entries = entries.into_iter().map(|(_, r)| r).collect();
            served.push((Reply::bulk(args.keys[i].clone()), Reply::Array(entries)));
        }
    }
    if !served.is_empty() {
        return per_stream(conn.proto, served);
    }
    if args.block.is_some() && others == Others::Fail {
        // What the blocked client runs again: `$` stands for the last ID
        // as of now, not as of each retry.
        let n = a.len() - args.ids.len();
        let mut again: Vec<Bytes> = Vec::with_capacity(a.len() + 1);
        again.push(Bytes::from_static(b"xread"));
        again.extend_from_slice(&a[..n]);
        again.extend(after.iter().map(|id| Bytes::from(id.to_string())));
        conn.block_args = Some(again);
    }
    Reply::NilArray
}

/// XREAD's and XREADGROUP's reply: for each stream served, its name and
/// its entries; RESP2 an array of pairs, RESP3 a map.
pub(super) fn per_stream(proto: u8, served: Vec<(Reply, Reply)>) -> Reply {
    if proto == 2 {
        Reply::Array(
            served
                .into_iter()
                .map(|(k, e)| Reply::Array(vec![k, e]))
                .collect(),
        )
    } else {
        Reply::Map(served)
    }
}

/// For XREAD or XREADGROUP with BLOCK (`args`, name included) that answered nil: the
/// stored keys it waits on, its timeout (`None`: forever) and the handler
/// its retries run. `None` for anything else.
pub(crate) fn block_request(
    db: u8,
    args: &[Bytes],
) -> Option<(Vec<Vec<u8>>, Option<Duration>, Handler)> {
    let (name, a) = args.split_first()?;
    let group = name.eq_ignore_ascii_case(b"xreadgroup");
    if !group && !name.eq_ignore_ascii_case(b"xread") {
        return None;
    }
    let parsed = parse_read(a, group).ok()?;
    let ms = parsed.block?;
    let keys = parsed.keys.iter().map(|k| db_key(db, k)).collect();
    let retry: Handler = if group {
        |s, c, a| super::groups::xreadgroup(s, c, a, true)
    } else {
        |s, c, a| xread(s, c, a, Others::Skip)
    };
    Some((keys, (ms > 0).then(|| Duration::from_millis(ms)), retry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|s| Bytes::from(s.to_string()))
            .collect()
    }

    /// Parses with Redis's default `stream-node-max-entries`.
    fn parse_add_or_trim_100(a: &[Bytes], xadd: bool) -> Result<AddArgs, Reply> {
        parse_add_or_trim(a, xadd, 100)
    }

    /// A stream of `len` entries, `added` ever added, none deleted inside.
    fn stream(len: u64, added: u64) -> Meta {
        let mut m = Meta::new(Kind::Stream, 1);
        m.size = len;
        m.stream.first = StreamId { ms: 1, seq: 0 };
        m.stream.last = StreamId { ms: added, seq: 0 };
        m.stream.entries_added = added;
        m
    }

    /// The cases of Redis's `unit/type/stream` tests of `~`, with the
    /// counts redis-server gives.
    #[test]
    fn approximate_maxlen_removes_whole_nodes_as_redis() {
        // XADD MAXLEN ~ 555 a thousand times, nodes of 100: 600 remain.
        let mut m = stream(0, 0);
        for _ in 0..1000 {
            m.size += 1;
            m.stream.entries_added += 1;
            m.size -= approx_maxlen(&m, 555, 10_000, 100).unwrap();
        }
        assert_eq!(m.size, 600);
        // 1000 entries trimmed exactly to 555, then ~ 444: 500; ~ 400: 400.
        let m = stream(555, 1000);
        assert_eq!(approx_maxlen(&m, 444, 10_000, 100), Some(55));
        assert_eq!(
            approx_maxlen(&stream(500, 1000), 400, 10_000, 100),
            Some(100)
        );
        // Nodes of 10, 101 entries, ~ 55 LIMIT 30: 71; again after one more: 62.
        assert_eq!(approx_maxlen(&stream(101, 101), 55, 30, 10), Some(30));
        assert_eq!(approx_maxlen(&stream(72, 102), 55, 30, 10), Some(10));
        // Nodes of 1, 102 entries, ~ 1 with the default limit (100): 2 remain.
        assert_eq!(
            approx_maxlen(&stream(102, 102), 1, approx_limit(1), 1),
            Some(100)
        );
        // A node larger than LIMIT is not removed.
        assert_eq!(approx_maxlen(&stream(3, 3), 0, 1, 2), Some(0));
        assert_eq!(approx_maxlen(&stream(3, 3), 0, 2, 2), Some(2));
        assert_eq!(approx_maxlen(&stream(4, 4), 0, 1, 100), Some(0));
        // Unknown nodes: an entry inside the stream was deleted.
        let mut m = stream(10, 20);
        m.stream.max_deleted = StreamId { ms: 15, seq: 0 };
        assert_eq!(approx_maxlen(&m, 0, 0, 100), None);
        assert_eq!(approx_maxlen(&stream(10, 20), 0, 0, 0), None);
    }

    fn err_text(r: Result<AddArgs, Reply>) -> String {
        match r {
            Err(Reply::Error(e)) => e,
            _ => "no error".into(),
        }
    }

    #[test]
    fn add_options_parse_in_redis_order() {
        let a =
            parse_add_or_trim_100(&args("k NOMKSTREAM MAXLEN ~ 5 LIMIT 3 7-* f v"), true).unwrap();
        assert!(a.nomkstream);
        assert_eq!(a.at, 7);
        assert_eq!(a.id, Some((StreamId { ms: 7, seq: 0 }, false)));
        assert_eq!(
            a.trim,
            Some(Trim {
                strategy: Strategy::MaxLen(5),
                approx: true,
                limit: 3
            })
        );
        let a = parse_add_or_trim_100(&args("k MINID = 3 * f v"), true).unwrap();
        assert_eq!(a.id, None);
        assert_eq!(a.trim.unwrap().limit, 0);
        let a = parse_add_or_trim_100(&args("k MAXLEN ~ 5 * f v"), true).unwrap();
        assert_eq!(a.trim.unwrap().limit, 10_000);
        assert!(err_text(parse_add_or_trim_100(
            &args("k MAXLEN 1 MINID 2 * f v"),
            true
        ))
        .contains("not compatible"));
        assert!(err_text(parse_add_or_trim_100(
            &args("k MAXLEN 1 LIMIT 2 * f v"),
            true
        ))
        .contains("special ~"));
        assert!(
            err_text(parse_add_or_trim_100(&args("k LIMIT 2 * f v"), true))
                .contains("trimming strategy")
        );
        assert!(err_text(parse_add_or_trim_100(&args("k MAXLEN -1 * f v"), true)).contains(">= 0"));
        assert_eq!(
            err_text(parse_add_or_trim_100(&args("k 1-x f v"), true)),
            INVALID_ID
        );
        assert!(err_text(parse_add_or_trim_100(&args("k NOMKSTREAM"), false)).contains("syntax"));
    }

    #[test]
    fn new_ids_follow_the_last() {
        let id = |ms, seq| StreamId { ms, seq };
        assert_eq!(
            next_id(id(5, 3), Some((id(5, 0), false))).ok(),
            Some(id(5, 4))
        );
        assert_eq!(
            next_id(id(5, 3), Some((id(6, 0), false))).ok(),
            Some(id(6, 0))
        );
        assert!(next_id(id(5, 3), Some((id(4, 0), false))).is_err());
        assert!(next_id(id(5, 3), Some((id(5, 3), true))).is_err());
        assert!(next_id(id(5, u64::MAX), Some((id(5, 0), false))).is_err());
        assert_eq!(
            next_id(StreamId::ZERO, Some((id(0, 0), false))).ok(),
            Some(id(0, 1))
        );
        // The clock behind the last ID: one past it.
        let future = id(u64::MAX - 1, 7);
        assert_eq!(next_id(future, None).ok(), Some(id(u64::MAX - 1, 8)));
    }

    #[test]
    fn read_options_parse_in_redis_order() {
        let a = args("COUNT 2 BLOCK 0 STREAMS a b 1 $");
        let r = parse_read(&a, false).ok().unwrap();
        assert_eq!(
            (r.block, r.count, r.keys.len(), r.ids.len()),
            (Some(0), 2, 2, 2)
        );
        assert!(parse_read(&args("STREAMS a b 1"), false).is_err());
        assert!(parse_read(&args("COUNT 2"), false).is_err());
        assert!(parse_read(&args("BLOCK -1 STREAMS a 1"), false).is_err());
        assert!(parse_read(&args("GROUP g c STREAMS a 1"), false).is_err());
        let a = args("GROUP g c NOACK COUNT 3 STREAMS a >");
        let r = parse_read(&a, true).ok().unwrap();
        assert_eq!(
            (r.group.unwrap().1.as_ref(), r.noack, r.count),
            (&b"c"[..], true, 3)
        );
        assert!(parse_read(&args("STREAMS a >"), true).is_err());
    }
}
