//! Streams in DUMP payloads: Redis 7.0's `RDB_TYPE_STREAM_LISTPACKS_2`
//! (type 19) written and read, Redis 5/6's `RDB_TYPE_STREAM_LISTPACKS`
//! (type 15) read.

use std::collections::HashSet;

use super::{
    canonical_int, listpack, listpack_entries, lp_put_entry, put_len, put_string,
    PayloadError::BadFormat, Reader, Result, LP_HEADER,
};
use crate::groups::{entries_up_to, UNKNOWN_READ};
use crate::meta::StreamIds;
use crate::streams::StreamId;

/// An entry's field-value pairs, in the order XADD gave them.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A stream and its consumer groups, as a payload holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// The entries in ID order (strictly increasing): ID and field-value
    /// pairs in the order XADD gave them (at least one pair each).
    pub entries: Vec<(StreamId, Fields)>,
    /// The last ID the stream ever had (at least the last entry's).
    pub last_id: StreamId,
    /// The first entry's ID (`0-0` when empty).
    pub first_id: StreamId,
    /// The largest ID ever deleted (`0-0`: none).
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// The consumer groups, in payload order (Redis's: by name, as its
    /// consumers are; `dump` keeps the order given).
    pub groups: Vec<Group>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: Vec<u8>,
    /// The last ID delivered.
    pub last_id: StreamId,
    /// Entries read, or -1 when unknown (Redis's
    /// `SCG_INVALID_ENTRIES_READ`).
    pub entries_read: i64,
    /// The pending entries, in ID order (strictly increasing).
    pub pending: Vec<Pending>,
    /// The consumers; each pending entry is in exactly one consumer's
    /// list.
    pub consumers: Vec<Consumer>,
}

/// A pending (delivered, not acknowledged) entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub id: StreamId,
    /// Last delivery time, ms since the Unix epoch.
    pub delivered: u64,
    pub count: u64,
}

/// A consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    pub name: Vec<u8>,
    /// When it last read or claimed, ms since the Unix epoch.
    pub seen: u64,
    /// Its pending entries' IDs, in ID order.
    pub pending: Vec<StreamId>,
}

// ---------------------------------------------------------------- layout
//
// Body (type 15 and 19; `[v2: …]` only in 19):
//
// ```text
// <nodes: len> (<master ID: string, 16 bytes> <listpack: string>)*
// <length: len> <last_id: len ms, len seq>
// [v2: <first_id: 2 lens> <max_deleted: 2 lens> <entries_added: len>]
// <groups: len> per group:
//   <name: string> <last_id: 2 lens> [v2: <entries_read: len, -1 as u64>]
//   <PEL: len> (<ID: 16 bytes> <delivered: 8 bytes LE ms> <count: len>)*
//   <consumers: len> per consumer:
//     <name: string> <seen: 8 bytes LE ms> <PEL: len> (<ID: 16 bytes>)*
// ```
//
// IDs as strings and raw bytes are ms then seq, 8 bytes big-endian each
// (Redis's radix tree keys). A node's listpack (Redis's `streamAppendItem`):
//
// ```text
// master entry: <count> <deleted> <n> <field>×n 0
// entry:        <flags> <ms - master ms> <seq - master seq>
//               (<m> (<field> <value>)×m | <value>×n if SAMEFIELDS) <lp-count>
// ```
//
// `count` and `deleted` are the node's live and flagged-deleted entries,
// the master fields are the node's first entry's (an entry with the same
// names in the same order is SAMEFIELDS), and `lp-count` is the
// number of elements of the entry before it (`n + 3`, or `2m + 4`). The
// numbers are listpack integers; the ID differences wrap around (Redis
// adds them as unsigned 64-bit integers). The first entry's ID is the
// master ID: Redis never removes an entry from a node, it flags it
// deleted; XDEL drops the node with its last live entry, XTRIM may leave
// a node of deleted entries only.

/// Entry flag: deleted (XDEL, XTRIM), to be skipped.
const FLAG_DELETED: i64 = 1;
/// Entry flag: the fields are the master entry's, only values follow.
const FLAG_SAMEFIELDS: i64 = 2;

/// Redis's default `stream-node-max-entries`: a node holds at most this
/// many entries (live and deleted).
const NODE_MAX_ENTRIES: usize = 100;
/// Redis's default `stream-node-max-bytes`: an entry opens a new node when
/// the node's listpack size plus the entry's field and value bytes would
/// reach it.
const NODE_MAX_BYTES: usize = 4096;

// ---------------------------------------------------------------- write

/// Appends the body of a type-19 payload for `s` (after the type byte),
/// as Redis 7.0 writes it: the entries in nodes as XADD would have built
/// them from an empty stream; groups, consumers and pending entries in
/// the order given (Redis writes names and IDs in byte order).
pub(super) fn put_stream(w: &mut Vec<u8>, s: &Stream) {
    let nodes = nodes(&s.entries);
    put_len(w, nodes.len() as u64);
    for (master, lp) in &nodes {
        put_string(w, &master.to_key());
        put_string(w, lp);
    }
    put_len(w, s.entries.len() as u64);
    put_id(w, s.last_id);
    put_id(w, s.first_id);
    put_id(w, s.max_deleted);
    put_len(w, s.entries_added);
    put_len(w, s.groups.len() as u64);
    for g in &s.groups {
        put_string(w, &g.name);
        put_id(w, g.last_id);
        // -1 as rdbSaveLen((uint64_t)-1): 0x81 and eight 0xFF.
        put_len(w, g.entries_read as u64);
        put_len(w, g.pending.len() as u64);
        for p in &g.pending {
            w.extend_from_slice(&p.id.to_key());
            w.extend_from_slice(&p.delivered.to_le_bytes());
            put_len(w, p.count);
        }
        put_len(w, g.consumers.len() as u64);
        for c in &g.consumers {
            put_string(w, &c.name);
            w.extend_from_slice(&c.seen.to_le_bytes());
            put_len(w, c.pending.len() as u64);
            for id in &c.pending {
                w.extend_from_slice(&id.to_key());
            }
        }
    }
}

/// An ID as two lengths, ms then seq.
fn put_id(w: &mut Vec<u8>, id: StreamId) {
    put_len(w, id.ms);
    put_len(w, id.seq);
}

/// A listpack integer entry (Redis's `lpAppendInteger`).
fn lp_put_int(w: &mut Vec<u8>, v: i64) {
    lp_put_entry(w, v.to_string().as_bytes());
}

/// A node being filled: its master ID and fields (its first entry's), and
/// its entries' listpack elements.
struct Node<'a> {
    master: StreamId,
    fields: &'a [(Vec<u8>, Vec<u8>)],
    /// The master entry after its count: deleted (0), the field count,
    /// the fields, the 0 terminator.
    master_rest: Vec<u8>,
    entries: Vec<u8>,
    count: usize,
    elements: usize,
}

impl<'a> Node<'a> {
    fn new(master: StreamId, fields: &'a [(Vec<u8>, Vec<u8>)]) -> Self {
        let mut master_rest = Vec::new();
        lp_put_int(&mut master_rest, 0);
        lp_put_int(&mut master_rest, fields.len() as i64);
        for (f, _) in fields {
            lp_put_entry(&mut master_rest, f);
        }
        lp_put_int(&mut master_rest, 0);
        Node {
            master,
            fields,
            master_rest,
            entries: Vec::new(),
            count: 0,
            // count, deleted, field count, fields, terminator
            elements: fields.len() + 4,
        }
    }

    /// The listpack's size in bytes (Redis's `lpBytes`): the count is
    /// at most `NODE_MAX_ENTRIES` (< 128), a 1-byte integer and its 1-byte
    /// back length.
    fn bytes(&self) -> usize {
        LP_HEADER + 2 + self.master_rest.len() + self.entries.len() + 1
    }

    /// Appends the entry `id` with `fields` (Redis's `streamAppendItem`).
    fn push(&mut self, id: StreamId, fields: &[(Vec<u8>, Vec<u8>)]) {
        let same = fields.len() == self.fields.len()
            && fields.iter().zip(self.fields).all(|(a, b)| a.0 == b.0);
        let e = &mut self.entries;
        lp_put_int(e, if same { FLAG_SAMEFIELDS } else { 0 });
        lp_put_int(e, id.ms.wrapping_sub(self.master.ms) as i64);
        lp_put_int(e, id.seq.wrapping_sub(self.master.seq) as i64);
        let n = fields.len() as i64;
        let lp_count = if same {
            for (_, v) in fields {
                lp_put_entry(e, v);
            }
            n + 3
        } else {
            lp_put_int(e, n);
            for (f, v) in fields {
                lp_put_entry(e, f);
                lp_put_entry(e, v);
            }
            2 * n + 4
        };
        lp_put_int(e, lp_count);
        self.count += 1;
        self.elements += lp_count as usize + 1;
    }

    /// The node's listpack.
    fn finish(self) -> (StreamId, Vec<u8>) {
        let mut body = Vec::with_capacity(self.bytes());
        lp_put_int(&mut body, self.count as i64);
        body.extend_from_slice(&self.master_rest);
        body.extend_from_slice(&self.entries);
        (self.master, listpack(&body, self.elements))
    }
}

/// The nodes (master ID, listpack) XADD builds for `entries`: a new node
/// when the last one holds `NODE_MAX_ENTRIES` entries, or when its size
/// plus the entry's field and value bytes reaches `NODE_MAX_BYTES` (an
/// entry bigger than that gets a node alone).
fn nodes(entries: &[(StreamId, Fields)]) -> Vec<(StreamId, Vec<u8>)> {
    let mut out = Vec::new();
    let mut node: Option<Node> = None;
    for (id, fields) in entries {
        let size: usize = fields.iter().map(|(f, v)| f.len() + v.len()).sum();
        if let Some(n) = node.take() {
            if n.bytes() + size >= NODE_MAX_BYTES || n.count >= NODE_MAX_ENTRIES {
                out.push(n.finish());
            } else {
                node = Some(n);
            }
        }
        node.get_or_insert_with(|| Node::new(*id, fields))
            .push(*id, fields);
    }
    out.extend(node.map(Node::finish));
    out
}

// ----------------------------------------------------------------- read

/// Reads the body of a type-15 (`v2 == false`) or type-19 payload, as
/// Redis 7.0's `rdbLoadObject`; type 15 lacks the first ID, the largest
/// deleted ID, entries added and the groups' entries read, which get
/// Redis's values on load: the first entry's ID, `0-0`, the length, and
/// the estimate of `streamEstimateDistanceFromFirstEverEntry`. The first
/// ID is the first live entry's (`0-0` if none) in both.
///
/// Refused (BadFormat): a listpack that does not parse or has no entry
/// (one whose entries are all deleted is fine: XTRIM leaves those), an
/// entry without fields, a node whose first entry's ID is not its master
/// ID, master counts that disagree with the entries, live IDs not
/// strictly increasing, a length other than the live entries', a last ID
/// below the last entry's, entries added below the length, entries read
/// below -1; a duplicate group or consumer name, a group PEL not strictly
/// increasing, a consumer PEL ID not in the group's, owned by two
/// consumers or out of order, and a group PEL entry without a consumer
/// (Redis accepts one unless it sanitizes the payload deeply).
pub(super) fn read_stream(r: &mut Reader, v2: bool) -> Result<Stream> {
    let nodes = r.len()?;
    let mut entries = Vec::new();
    for _ in 0..nodes {
        let key = r.string()?;
        let master = StreamId::from_key(&key).ok_or(BadFormat)?;
        let lp = r.string()?;
        read_node(master, listpack_entries(&lp)?, &mut entries)?;
    }
    if r.len()? != entries.len() as u64 {
        return Err(BadFormat);
    }
    let last_id = read_id(r)?;
    let last_entry = entries.last().map(|(id, _)| *id);
    if last_entry.is_some_and(|id| id > last_id) {
        return Err(BadFormat);
    }
    let first_entry = entries.first().map_or(StreamId::ZERO, |(id, _)| *id);
    let len = entries.len() as u64;
    let (first_id, max_deleted, entries_added) = if v2 {
        // The first entry's, as Redis keeps it (but 0-0 for the largest
        // ID that Redis 7.0 holds in an empty stream it loaded from a
        // type-15 payload): taken from the entries, not checked.
        read_id(r)?;
        let max_deleted = read_id(r)?;
        let added = r.len()?;
        if added < len {
            return Err(BadFormat);
        }
        (first_entry, max_deleted, added)
    } else {
        (first_entry, StreamId::ZERO, len)
    };
    let ids = StreamIds {
        first: first_id,
        last: last_id,
        max_deleted,
        entries_added,
    };

    let n = r.len()?;
    let mut groups = Vec::with_capacity(r.cap(n));
    let mut names = HashSet::new();
    for _ in 0..n {
        let g = read_group(r, v2, &ids, len)?;
        if !names.insert(g.name.clone()) {
            return Err(BadFormat);
        }
        groups.push(g);
    }
    Ok(Stream {
        entries,
        last_id,
        first_id,
        max_deleted,
        entries_added,
        groups,
    })
}

/// An ID as two lengths, ms then seq.
fn read_id(r: &mut Reader) -> Result<StreamId> {
    Ok(StreamId {
        ms: r.len()?,
        seq: r.len()?,
    })
}

/// An ID as 16 raw bytes.
fn raw_id(r: &mut Reader) -> Result<StreamId> {
    StreamId::from_key(&r.array::<16>()?).ok_or(BadFormat)
}

/// A listpack element that must be an integer (Redis's `lpGetInteger`: an
/// integer encoding, or a string in canonical integer form).
fn int(e: Option<Vec<u8>>) -> Result<i64> {
    e.and_then(|e| canonical_int(&e)).ok_or(BadFormat)
}

/// A listpack element that must be a count.
fn count(e: Option<Vec<u8>>) -> Result<usize> {
    usize::try_from(int(e)?).map_err(|_| BadFormat)
}

/// Appends the live entries of the node `master` (its listpack's
/// `elements`) to `out`, whose IDs they must follow.
fn read_node(
    master: StreamId,
    elements: Vec<Vec<u8>>,
    out: &mut Vec<(StreamId, Fields)>,
) -> Result<()> {
    let mut it = elements.into_iter();
    let live_count = count(it.next())?;
    let deleted_count = count(it.next())?;
    let n = count(it.next())?;
    let mut master_fields = Vec::with_capacity(n.min(it.len()));
    for _ in 0..n {
        master_fields.push(it.next().ok_or(BadFormat)?);
    }
    if int(it.next())? != 0 {
        return Err(BadFormat);
    }
    let (mut live, mut deleted) = (0usize, 0usize);
    while let Some(flags) = it.next() {
        let flags = int(Some(flags))?;
        if flags & !(FLAG_DELETED | FLAG_SAMEFIELDS) != 0 {
            return Err(BadFormat);
        }
        let id = StreamId {
            ms: master.ms.wrapping_add(int(it.next())? as u64),
            seq: master.seq.wrapping_add(int(it.next())? as u64),
        };
        if live + deleted == 0 && id != master {
            return Err(BadFormat);
        }
        let same = flags & FLAG_SAMEFIELDS != 0;
        let m = if same { n } else { count(it.next())? };
        if m == 0 {
            return Err(BadFormat);
        }
        let mut pairs = Vec::with_capacity(m.min(it.len()));
        if same {
            for f in &master_fields {
                pairs.push((f.clone(), it.next().ok_or(BadFormat)?));
            }
        } else {
            for _ in 0..m {
                let f = it.next().ok_or(BadFormat)?;
                pairs.push((f, it.next().ok_or(BadFormat)?));
            }
        }
        let expected = if same { m + 3 } else { 2 * m + 4 };
        if count(it.next())? != expected {
            return Err(BadFormat);
        }
        if flags & FLAG_DELETED != 0 {
            deleted += 1;
            continue;
        }
        if out.last().is_some_and(|(last, _)| *last >= id) {
            return Err(BadFormat);
        }
        live += 1;
        out.push((id, pairs));
    }
    if live + deleted == 0 || live != live_count || deleted != deleted_count {
        return Err(BadFormat);
    }
    Ok(())
}

/// A consumer group; `ids` and `len` (live entries) are the stream's, for
/// a type-15 group's entries read.
fn read_group(r: &mut Reader, v2: bool, ids: &StreamIds, len: u64) -> Result<Group> {
    let name = r.string()?;
    let last_id = read_id(r)?;
    let entries_read = if v2 {
        r.len()? as i64
    } else {
        entries_up_to(ids, len, last_id)
    };
    if entries_read < UNKNOWN_READ {
        return Err(BadFormat);
    }
    let n = r.len()?;
    let mut pending: Vec<Pending> = Vec::with_capacity(r.cap(n));
    for _ in 0..n {
        let id = raw_id(r)?;
        if pending.last().is_some_and(|p| p.id >= id) {
            return Err(BadFormat);
        }
        let delivered = u64::from_le_bytes(r.array()?);
        pending.push(Pending {
            id,
            delivered,
            count: r.len()?,
        });
    }
    // Whether each pending entry has its consumer yet.
    let mut owned = vec![false; pending.len()];
    let n = r.len()?;
    let mut consumers = Vec::with_capacity(r.cap(n));
    let mut names = HashSet::new();
    for _ in 0..n {
        let name = r.string()?;
        if !names.insert(name.clone()) {
            return Err(BadFormat);
        }
        let seen = u64::from_le_bytes(r.array()?);
        let k = r.len()?;
        let mut ids: Vec<StreamId> = Vec::with_capacity(r.cap(k));
        for _ in 0..k {
            let id = raw_id(r)?;
            if ids.last().is_some_and(|last| *last >= id) {
                return Err(BadFormat);
            }
            let i = pending
                .binary_search_by_key(&id, |p| p.id)
                .map_err(|_| BadFormat)?;
            match owned.get_mut(i) {
                Some(o) if !*o => *o = true,
                _ => return Err(BadFormat),
            }
            ids.push(id);
        }
        consumers.push(Consumer {
            name,
            seen,
            pending: ids,
        });
    }
    if owned.contains(&false) {
        return Err(BadFormat);
    }
    Ok(Group {
        name,
        last_id,
        entries_read,
        pending,
        consumers,
    })
}
