//! Streams' consumer groups: their stored records, and Redis's reckoning
//! of how far a group has read (`entries-read`, `lag`).
//!
//! # Records (on disk: never change; `docs/format/server-keyspace.md` §5c)
//! Under `15 ‖ db ‖ len ‖ user key ‖ version` (the stream's key and
//! version, as its entries' prefix with first byte `15`), then:
//! - `00 ‖ group` → the group: its last delivered ID (ms, then sequence,
//!   8 bytes little-endian each), entries read (8 bytes little-endian,
//!   signed; -1 unknown), pending entries and consumers (8 bytes
//!   little-endian each);
//! - `01 ‖ glen ‖ group ‖ consumer` → a consumer: the time it was last
//!   seen (ms since the Unix epoch) and its pending entries, 8 bytes
//!   little-endian each;
//! - `02 ‖ glen ‖ group ‖ id` → a pending entry of the group (its PEL):
//!   the last delivery's time (ms since the Unix epoch) and the delivery
//!   count, 8 bytes little-endian each, then the consumer's name;
//! - `03 ‖ glen ‖ group ‖ clen ‖ consumer ‖ id` → empty: the entry is in
//!   that consumer's PEL (an index of the group's, for XREADGROUP's
//!   history and XPENDING of one consumer).
//!
//! `glen` and `clen` are the group's and the consumer's name lengths (4
//! bytes big-endian), `id` an entry ID as 16 bytes big-endian
//! ([`StreamId::to_key`]), so that groups and consumers iterate in name
//! order (as Redis's radix trees do) and pending entries in ID order.
//!
//! # Invariants
//! 1. A group's `pending` is the number of its `02` records, a
//!    consumer's the number of its `03` records; every `02` record has
//!    the `03` record of the consumer it names, and that consumer exists.
//! 2. A group's `consumers` is the number of its `01` records.
//! 3. The records go with the stream: deleted, copied and moved with its
//!    entries (`shared.rs`), under the same version.

use crate::meta::{StreamId, StreamIds};

/// A group's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Group {
    /// The last ID delivered to the group's consumers.
    pub last: StreamId,
    /// Entries the group has read, counting from the stream's first entry
    /// ever; [`UNKNOWN_READ`] when it cannot be known.
    pub entries_read: i64,
    pub pending: u64,
    pub consumers: u64,
}

/// Redis's `SCG_INVALID_ENTRIES_READ`.
pub const UNKNOWN_READ: i64 = -1;

/// A consumer's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Consumer {
    /// When the consumer last read or claimed (ms since the Unix epoch).
    pub seen: u64,
    pub pending: u64,
}

/// A pending entry: delivered, not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    /// When it was last delivered (ms since the Unix epoch).
    pub delivered: u64,
    pub count: u64,
    /// The consumer it was delivered to.
    pub consumer: Vec<u8>,
}

const GROUP: u8 = 0;
const CONSUMER: u8 = 1;
const PENDING: u8 = 2;
const CONSUMER_PENDING: u8 = 3;

fn u64_at(v: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(v.get(at..at + 8)?.try_into().ok()?))
}

fn push_name(k: &mut Vec<u8>, name: &[u8]) {
    k.extend_from_slice(&(name.len() as u32).to_be_bytes());
    k.extend_from_slice(name);
}

/// Record keys of one stream's groups: its prefix (`meta::group_prefix`)
/// followed by each record's `sub`.
#[derive(Debug, Clone)]
pub struct Keys {
    pub prefix: Vec<u8>,
}

impl Keys {
    fn with(&self, tag: u8, len: usize) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + 1 + len);
        k.extend_from_slice(&self.prefix);
        k.push(tag);
        k
    }

    /// The group `name`'s record.
    pub fn group(&self, name: &[u8]) -> Vec<u8> {
        let mut k = self.with(GROUP, name.len());
        k.extend_from_slice(name);
        k
    }

    /// Where the group records lie: `[lo, hi)`, and the length of the
    /// prefix before each name.
    pub fn groups(&self) -> (Vec<u8>, Vec<u8>, usize) {
        let lo = self.with(GROUP, 0);
        let hi = self.with(GROUP + 1, 0);
        let at = lo.len();
        (lo, hi, at)
    }

    fn in_group(&self, tag: u8, group: &[u8], more: usize) -> Vec<u8> {
        let mut k = self.with(tag, 4 + group.len() + more);
        push_name(&mut k, group);
        k
    }

    /// The consumer `name` of `group`.
    pub fn consumer(&self, group: &[u8], name: &[u8]) -> Vec<u8> {
        let mut k = self.in_group(CONSUMER, group, name.len());
        k.extend_from_slice(name);
        k
    }

    /// The prefix of `group`'s consumer records (a name follows).
    pub fn consumers(&self, group: &[u8]) -> Vec<u8> {
        self.in_group(CONSUMER, group, 0)
    }

    /// `group`'s pending entry `id`.
    pub fn pending(&self, group: &[u8], id: StreamId) -> Vec<u8> {
        let mut k = self.in_group(PENDING, group, 16);
        k.extend_from_slice(&id.to_key());
        k
    }

    /// The prefix of `group`'s pending entries (an ID follows).
    pub fn pending_prefix(&self, group: &[u8]) -> Vec<u8> {
        self.in_group(PENDING, group, 0)
    }

    /// The prefix of `consumer`'s pending entries in `group` (an ID
    /// follows).
    pub fn consumer_pending_prefix(&self, group: &[u8], consumer: &[u8]) -> Vec<u8> {
        let mut k = self.in_group(CONSUMER_PENDING, group, 4 + consumer.len() + 16);
        push_name(&mut k, consumer);
        k
    }

    /// The index record of `id` in `consumer`'s PEL of `group`.
    pub fn consumer_pending(&self, group: &[u8], consumer: &[u8], id: StreamId) -> Vec<u8> {
        let mut k = self.consumer_pending_prefix(group, consumer);
        k.extend_from_slice(&id.to_key());
        k
    }

    /// The prefix of `group`'s consumer PEL index (`03` records: a
    /// consumer's name and an ID follow; see [`index_consumer`]).
    pub fn pending_index(&self, group: &[u8]) -> Vec<u8> {
        self.in_group(CONSUMER_PENDING, group, 0)
    }

    /// Every record of `group`: `[lo, hi)` of each of its four kinds.
    pub fn all_of(&self, group: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        [CONSUMER, PENDING, CONSUMER_PENDING]
            .into_iter()
            .map(|tag| {
                let lo = self.in_group(tag, group, 0);
                let hi = crate::meta::prefix_end(&lo);
                (lo, hi)
            })
            .chain(std::iter::once({
                let k = self.group(group);
                let mut hi = k.clone();
                hi.push(0);
                (k, hi)
            }))
            .collect()
    }
}

/// The consumer named by a consumer PEL index key, less the
/// [`Keys::pending_index`] prefix (`clen ‖ consumer ‖ id`).
pub fn index_consumer(rest: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    rest.get(4..4usize.checked_add(len)?)
}

impl Group {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        v.extend_from_slice(&self.last.ms.to_le_bytes());
        v.extend_from_slice(&self.last.seq.to_le_bytes());
        v.extend_from_slice(&self.entries_read.to_le_bytes());
        v.extend_from_slice(&self.pending.to_le_bytes());
        v.extend_from_slice(&self.consumers.to_le_bytes());
        v
    }

    /// `None` unless `v` is a group record (40 bytes).
    pub fn decode(v: &[u8]) -> Option<Group> {
        if v.len() != 40 {
            return None;
        }
        Some(Group {
            last: StreamId {
                ms: u64_at(v, 0)?,
                seq: u64_at(v, 8)?,
            },
            entries_read: u64_at(v, 16)? as i64,
            pending: u64_at(v, 24)?,
            consumers: u64_at(v, 32)?,
        })
    }
}

impl Consumer {
    pub fn encode(&self) -> Vec<u8> {
        [self.seen.to_le_bytes(), self.pending.to_le_bytes()].concat()
    }

    /// `None` unless `v` is a consumer record (16 bytes).
    pub fn decode(v: &[u8]) -> Option<Consumer> {
        (v.len() == 16).then_some(Consumer {
            seen: u64_at(v, 0)?,
            pending: u64_at(v, 8)?,
        })
    }
}

impl Nack {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + self.consumer.len());
        v.extend_from_slice(&self.delivered.to_le_bytes());
        v.extend_from_slice(&self.count.to_le_bytes());
        v.extend_from_slice(&self.consumer);
        v
    }

    /// `None` unless `v` is a pending-entry record (16 bytes or more).
    pub fn decode(v: &[u8]) -> Option<Nack> {
        Some(Nack {
            delivered: u64_at(v, 0)?,
            count: u64_at(v, 8)?,
            consumer: v.get(16..)?.to_vec(),
        })
    }
}

/// Whether the stream holds a deleted entry (a tombstone, in Redis's
/// words) with an ID in `[start, end]` as far as its largest deleted ID
/// tells (Redis's `streamRangeHasTombstones`). `len`: its entries.
pub fn has_tombstones(s: &StreamIds, len: u64, start: StreamId, end: StreamId) -> bool {
    if len == 0 || s.max_deleted == StreamId::ZERO || s.first > s.max_deleted {
        return false;
    }
    start <= s.max_deleted && s.max_deleted <= end
}

/// How many entries had been added to the stream up to `id`, counting
/// from the first ever, if it can be known (Redis's
/// `streamEstimateDistanceFromFirstEverEntry`): exact at the first and
/// last entries, and before the first when nothing was deleted after it.
pub fn entries_up_to(s: &StreamIds, len: u64, id: StreamId) -> i64 {
    let added = s.entries_added as i64;
    if s.entries_added == 0 {
        return 0;
    }
    if len == 0 && id <= s.last {
        return added;
    }
    if id == s.last {
        return added;
    }
    if id > s.last {
        return UNKNOWN_READ;
    }
    if s.max_deleted == StreamId::ZERO || s.max_deleted < s.first {
        if id < s.first {
            return added - len as i64;
        }
        if id == s.first {
            return added - len as i64 + 1;
        }
    }
    UNKNOWN_READ
}

/// The group's entries read after it was handed `id` (greater than its
/// last ID): one more while the count is known and no deleted entry lies
/// ahead, else recomputed (Redis's `streamReplyWithRange` bookkeeping).
pub fn read_past(g: &Group, s: &StreamIds, len: u64, id: StreamId) -> i64 {
    if g.entries_read != UNKNOWN_READ && !has_tombstones(s, len, id, StreamId::MAX) {
        g.entries_read + 1
    } else if s.entries_added > 0 {
        entries_up_to(s, len, id)
    } else {
        g.entries_read
    }
}

/// The entries not yet delivered to the group (XINFO's `lag`), `None`
/// when it cannot be known (Redis's `streamReplyWithCGLag`).
pub fn lag(g: &Group, s: &StreamIds, len: u64) -> Option<i64> {
    let added = s.entries_added as i64;
    if s.entries_added == 0 {
        return Some(0);
    }
    if g.entries_read != UNKNOWN_READ && !has_tombstones(s, len, g.last, StreamId::MAX) {
        return Some(added - g.entries_read);
    }
    match entries_up_to(s, len, g.last) {
        UNKNOWN_READ => None,
        read => Some(added - read),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn records_round_trip() {
        let g = Group {
            last: id(5, 6),
            entries_read: UNKNOWN_READ,
            pending: 3,
            consumers: 2,
        };
        assert_eq!(Group::decode(&g.encode()), Some(g));
        let c = Consumer {
            seen: 1_700_000_000_000,
            pending: 9,
        };
        assert_eq!(Consumer::decode(&c.encode()), Some(c));
        let n = Nack {
            delivered: 7,
            count: 2,
            consumer: b"alice".to_vec(),
        };
        assert_eq!(Nack::decode(&n.encode()), Some(n));
        assert_eq!(Group::decode(&[0; 39]), None);
        assert_eq!(Consumer::decode(&[0; 17]), None);
        assert_eq!(Nack::decode(&[0; 15]), None);
    }

    #[test]
    fn keys_order_by_name_then_id() {
        let k = Keys {
            prefix: crate::meta::group_prefix(b"\x00s", 1),
        };
        assert!(k.group(b"a") < k.group(b"ab"));
        assert!(k.group(b"ab") < k.group(b"b"));
        let (lo, hi, at) = k.groups();
        assert!(lo <= k.group(b"") && k.group(b"\xff\xff") < hi);
        assert_eq!(&k.group(b"g")[at..], b"g");
        // One group's consumers never mix with another's.
        assert!(k.consumer(b"g", b"\xff") < k.consumer(b"g2", b""));
        assert!(k.pending(b"g", id(1, 0)) < k.pending(b"g", id(1, 1)));
        assert!(k.pending(b"g", id(1, u64::MAX)) < k.pending(b"g", id(2, 0)));
        assert!(k
            .consumer_pending(b"g", b"c", id(3, 3))
            .starts_with(&k.consumer_pending_prefix(b"g", b"c")));
        for (lo, hi) in k.all_of(b"g") {
            assert!(lo < hi);
            assert!(!(lo..hi).contains(&k.group(b"g2")));
        }
    }

    #[test]
    fn entries_read_follow_redis() {
        // Five entries added, none deleted: exact at the edges.
        let s = StreamIds {
            first: id(1, 0),
            last: id(5, 0),
            max_deleted: StreamId::ZERO,
            entries_added: 5,
        };
        assert_eq!(entries_up_to(&s, 5, id(5, 0)), 5);
        assert_eq!(entries_up_to(&s, 5, id(1, 0)), 1);
        assert_eq!(entries_up_to(&s, 5, id(0, 0)), 0);
        assert_eq!(entries_up_to(&s, 5, id(3, 0)), UNKNOWN_READ);
        assert_eq!(entries_up_to(&s, 5, id(6, 0)), UNKNOWN_READ);
        let g = Group {
            last: id(0, 0),
            entries_read: UNKNOWN_READ,
            ..Group::default()
        };
        assert_eq!(lag(&g, &s, 5), Some(5));
        assert_eq!(read_past(&g, &s, 5, id(1, 0)), 1);
        // A deletion ahead of the group makes its count unknown.
        let t = StreamIds {
            max_deleted: id(3, 0),
            ..s
        };
        assert!(has_tombstones(&t, 4, id(2, 0), StreamId::MAX));
        assert!(!has_tombstones(&t, 4, id(4, 0), StreamId::MAX));
        let g = Group {
            last: id(2, 0),
            entries_read: 2,
            ..Group::default()
        };
        assert_eq!(lag(&g, &t, 4), None);
        assert_eq!(lag(&g, &s, 5), Some(3));
        // An empty stream: everything up to its last ID was added.
        let e = StreamIds {
            first: StreamId::ZERO,
            ..t
        };
        assert_eq!(entries_up_to(&e, 0, id(2, 0)), 5);
    }
}
