//! Collections (hashes, sets, sorted sets, lists, streams): the metadata record
//! stored at the key itself and the keys of their elements
//! (`docs/format/server-keyspace.md` §4–§5 give the layout with examples).
//!
//! # Metadata (on disk: never change)
//! At `db ‖ user key`, where a string stores its value (`keyspace.rs`),
//! a collection stores:
//!
//! `02 ‖ kind ‖ expire_at ‖ version ‖ size [‖ head ‖ tail]`
//! `02 ‖ 05 ‖ expire_at ‖ version ‖ size ‖ first ‖ last ‖ max_deleted ‖ entries_added`
//!
//! - `kind`: 1 byte, [`Kind`] (1 hash, 2 set, 3 sorted set, 4 list,
//!   5 stream);
//! - `expire_at`: 8 bytes little-endian ms since the Unix epoch, 0 = none;
//! - `version`: 8 bytes little-endian, the generation of the elements
//!   (a new one each time the key is created, see [`Versions`]);
//! - `size`: 8 bytes little-endian, the number of elements (never 0: an
//!   emptied collection is deleted, as in Redis);
//! - lists only: `head` and `tail`, 8 bytes little-endian each, the
//!   element indexes `[head, tail)`;
//! - streams only ([`StreamIds`]): the first entry's ID (`0-0` when
//!   empty), the last ID handed out, the largest ID XDEL deleted, 16 bytes
//!   each (ms then sequence, 8 bytes little-endian each), and the number
//!   of entries ever added, 8 bytes little-endian. A stream's `size` may
//!   be 0: an emptied stream stays (as in Redis).
//!
//! # Elements (on disk: never change)
//! `12 ‖ db ‖ len ‖ user key ‖ version ‖ sub`, `len` 4 bytes big-endian
//! (the user key's length, so one key's elements are one contiguous range
//! that no other key's elements share), `version` 8 bytes big-endian:
//! - hash: `sub` = field, value = the field's value;
//! - set: `sub` = member, value empty;
//! - sorted set: `sub` = member, value = the score (8 bytes, the f64's bits
//!   little-endian), and a score-index entry
//!   `13 ‖ db ‖ len ‖ user key ‖ version ‖ score key ‖ member`, value
//!   empty, where the score key ([`score_key`]) sorts as the scores do;
//! - list: `sub` = the index, 8 bytes big-endian, value = the element;
//! - stream: `sub` = the entry's ID, ms then sequence, 8 bytes big-endian
//!   each (so the keys sort as the IDs do), value = the entry's fields
//!   (`streams.rs`); its consumer groups are records
//!   `15 ‖ db ‖ len ‖ user key ‖ version ‖ …` (`groups.rs`).
//!
//! # Invariants
//! 1. A collection's elements are exactly the element keys under its
//!    current version; elements of older versions are garbage that the
//!    writer that replaced the collection deleted in the same batch
//!    ([`drop_elements`]): point deletes for a small collection, one range
//!    deletion over the version's prefix for a large one, so DEL of a
//!    million elements is one small write.
//! 2. `size` equals the number of elements; writers keep it in the same
//!    batch as the elements they add or remove.
//! 3. A stream's `first` is its smallest entry ID (`0-0` when empty), and
//!    every entry ID is at most `last`.

use batchkv::{Db, ReadOptions};

pub use crate::streams::StreamId;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tag byte of a collection's metadata (strings use 0 and 1).
pub const TAG_COLLECTION: u8 = 2;
/// First byte of element keys.
pub const ELEMENTS: u8 = 0x12;
/// First byte of sorted-set score-index keys.
pub const SCORES: u8 = 0x13;
/// First byte of sorted-set rank-index keys (`ranks.rs`).
pub const RANKS: u8 = 0x14;
/// First byte of streams' consumer-group records (`groups.rs`).
pub const GROUPS: u8 = 0x15;
/// The first bytes of the key ranges a collection's version owns, each
/// `first ‖ db ‖ len ‖ user key ‖ version ‖ …`.
pub const VERSIONED: [u8; 4] = [ELEMENTS, SCORES, RANKS, GROUPS];

/// Collections up to this size are deleted element by element; larger
/// ones by one range deletion per key range.
pub const POINT_DELETE_MAX: u64 = 64;

/// A collection's type (on disk: never change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hash = 1,
    Set = 2,
    ZSet = 3,
    List = 4,
    Stream = 5,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hash,
            2 => Kind::Set,
            3 => Kind::ZSet,
            4 => Kind::List,
            5 => Kind::Stream,
            _ => return None,
        })
    }

    /// The name TYPE answers.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::List => "list",
            Kind::Stream => "stream",
        }
    }
}

/// First list index of a new list: pushes on either side have room.
pub const LIST_MIDDLE: u64 = 1 << 63;

/// A stream's IDs and counters, stored in its metadata record (module
/// docs; Redis keeps the same fields in its `stream` struct).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamIds {
    /// The smallest entry ID; `0-0` while the stream is empty.
    pub first: StreamId,
    /// The last ID handed out (XADD) or set (XSETID).
    pub last: StreamId,
    /// The largest ID XDEL removed (`0-0`: none).
    pub max_deleted: StreamId,
    /// Entries ever added (XADD; XSETID may set it).
    pub entries_added: u64,
}

/// A collection's metadata record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub expire_at: Option<u64>,
    pub version: u64,
    pub size: u64,
    /// Lists: first element index (inclusive).
    pub head: u64,
    /// Lists: last element index + 1.
    pub tail: u64,
    /// Streams: IDs and counters (zero for other kinds).
    pub stream: StreamIds,
}

impl Meta {
    /// A new, empty collection of `kind` with `version`.
    pub fn new(kind: Kind, version: u64) -> Meta {
        Meta {
            kind,
            expire_at: None,
            version,
            size: 0,
            head: LIST_MIDDLE,
            tail: LIST_MIDDLE,
            stream: StreamIds::default(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(82);
        v.push(TAG_COLLECTION);
        v.push(self.kind as u8);
        v.extend_from_slice(&self.expire_at.unwrap_or(0).to_le_bytes());
        v.extend_from_slice(&self.version.to_le_bytes());
        v.extend_from_slice(&self.size.to_le_bytes());
        if self.kind == Kind::List {
            v.extend_from_slice(&self.head.to_le_bytes());
            v.extend_from_slice(&self.tail.to_le_bytes());
        }
        if self.kind == Kind::Stream {
            let s = &self.stream;
            for id in [s.first, s.last, s.max_deleted] {
                v.extend_from_slice(&id.ms.to_le_bytes());
                v.extend_from_slice(&id.seq.to_le_bytes());
            }
            v.extend_from_slice(&s.entries_added.to_le_bytes());
        }
        v
    }

    /// Decodes a metadata record; `None` if `v` is not one.
    pub fn decode(v: &[u8]) -> Option<Meta> {
        if v.len() < 26 || v[0] != TAG_COLLECTION {
            return None;
        }
        let kind = Kind::from_byte(v[1])?;
        let u = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&v[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let (head, tail) = match kind {
            Kind::List if v.len() == 42 => (u(26), u(34)),
            Kind::List => return None,
            Kind::Stream if v.len() == 82 => (LIST_MIDDLE, LIST_MIDDLE),
            Kind::Stream => return None,
            _ if v.len() == 26 => (LIST_MIDDLE, LIST_MIDDLE),
            _ => return None,
        };
        let mut stream = StreamIds::default();
        if kind == Kind::Stream {
            let id = |i: usize| StreamId {
                ms: u(i),
                seq: u(i + 8),
            };
            stream = StreamIds {
                first: id(26),
                last: id(42),
                max_deleted: id(58),
                entries_added: u(74),
            };
        }
        let exp = u(2);
        Some(Meta {
            kind,
            expire_at: (exp != 0).then_some(exp),
            version: u(10),
            size: u(18),
            head,
            tail,
            stream,
        })
    }
}

/// Bit 62 of a version: set in every version handed out since sorted sets
/// keep a rank index (`ranks.rs`), so a sorted set whose version has it
/// keeps one, and one whose version lacks it (created by an older server)
/// does not. Versions without it are microseconds since the epoch, far
/// below.
pub const RANKED: u64 = 1 << 62;

/// Hands out element versions: strictly increasing within a process, and
/// starting above any earlier run's (microseconds since the epoch, with
/// [`RANKED`] set), so a re-created key never shares a version with its
/// previous elements.
pub struct Versions(AtomicU64);

impl Versions {
    pub fn new() -> Versions {
        Versions(AtomicU64::new(0))
    }

    pub fn next(&self) -> u64 {
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
            | RANKED;
        // Relaxed: only uniqueness and monotonicity of this one counter
        // matter, which fetch_update guarantees.
        let prev = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                Some(now_us.max(p + 1))
            })
            .unwrap_or(0);
        now_us.max(prev + 1)
    }
}

impl Default for Versions {
    fn default() -> Self {
        Versions::new()
    }
}

/// `prefix ‖ db ‖ len ‖ user key ‖ version`: the start of one version's
/// element (or score-index) keys.
fn version_prefix(first: u8, stored_key: &[u8], version: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(element_prefix_len(stored_key) + 16);
    push_version_prefix(&mut k, first, stored_key, version);
    k
}

/// Appends [`version_prefix`] to `out`.
fn push_version_prefix(out: &mut Vec<u8>, first: u8, stored_key: &[u8], version: u64) {
    let (db, user) = (stored_key[0], &stored_key[1..]);
    out.push(first);
    out.push(db);
    out.extend_from_slice(&(user.len() as u32).to_be_bytes());
    out.extend_from_slice(user);
    out.extend_from_slice(&version.to_be_bytes());
}

/// The length of [`element_prefix`] for stored key `key`.
pub fn element_prefix_len(key: &[u8]) -> usize {
    // tag, db, len, user key (the stored key less its db byte), version
    2 + 4 + (key.len() - 1) + 8
}

/// Appends [`element_prefix`]`(key, version)` to `out` (no allocation
/// beyond `out`'s growth).
pub fn push_element_prefix(out: &mut Vec<u8>, key: &[u8], version: u64) {
    push_version_prefix(out, ELEMENTS, key, version);
}

/// The element-key prefix of the collection at stored key `key`
/// (`db ‖ user key`) with `version`; append `sub` for one element.
pub fn element_prefix(key: &[u8], version: u64) -> Vec<u8> {
    version_prefix(ELEMENTS, key, version)
}

/// The element key of `sub` in the collection at `key` with `version`.
pub fn element_key(key: &[u8], version: u64, sub: &[u8]) -> Vec<u8> {
    let mut k = element_prefix(key, version);
    k.extend_from_slice(sub);
    k
}

/// The score-index prefix of the sorted set at `key` with `version`.
pub fn score_prefix(key: &[u8], version: u64) -> Vec<u8> {
    version_prefix(SCORES, key, version)
}

/// The consumer-group prefix of the stream at `key` with `version`
/// (`groups.rs`).
pub fn group_prefix(key: &[u8], version: u64) -> Vec<u8> {
    version_prefix(GROUPS, key, version)
}

/// The rank-index prefix of the sorted set at `key` with `version`
/// (`ranks.rs`).
pub fn rank_prefix(key: &[u8], version: u64) -> Vec<u8> {
    version_prefix(RANKS, key, version)
}

/// A score-index entry: a score-index key less its prefix,
/// `score key ‖ member` (what the rank index counts, `ranks.rs`).
pub fn score_entry(score: f64, member: &[u8]) -> Vec<u8> {
    [&score_key(score)[..], member].concat()
}

/// The score-index key of `member` with `score`.
pub fn score_index_key(key: &[u8], version: u64, score: f64, member: &[u8]) -> Vec<u8> {
    let mut k = score_prefix(key, version);
    k.extend_from_slice(&score_key(score));
    k.extend_from_slice(member);
    k
}

/// 8 bytes that sort bytewise as `score` sorts numerically, with -0 equal
/// to +0 (Redis compares scores as doubles, then members bytewise).
pub fn score_key(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

/// The score whose [`score_key`] is `k` (-0 comes back as +0).
pub fn score_from_key(k: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(k);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// The smallest key above every key that starts with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Only 0xff bytes: no key range of ours looks like this.
    vec![0xff; prefix.len() + 1]
}

/// Whether any element key is stored (at start: whether a collection may
/// exist). Errs on the side of true.
pub fn any_elements(db: &Db) -> bool {
    let opts = ReadOptions {
        lower_bound: Some(vec![ELEMENTS]),
        upper_bound: Some(vec![SCORES + 1]),
        fill_cache: false,
        ..Default::default()
    };
    match db.iter(&opts) {
        Ok(mut it) => {
            it.seek([ELEMENTS]);
            it.valid() || it.status().is_err()
        }
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_matches_the_documented_layout() {
        let m = Meta {
            kind: Kind::Hash,
            expire_at: Some(1_700_000_000_000),
            version: 5,
            size: 3,
            head: LIST_MIDDLE,
            tail: LIST_MIDDLE,
            stream: StreamIds::default(),
        };
        let v = m.encode();
        // The example in docs/format/server-keyspace.md §4.
        assert_eq!(
            v,
            [
                2, 1, 0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0,
                0, 0, 0, 0
            ]
        );
        assert_eq!(Meta::decode(&v), Some(m));
        let mut l = Meta::new(Kind::List, 9);
        l.tail += 2;
        l.size = 2;
        assert_eq!(Meta::decode(&l.encode()), Some(l));
        assert_eq!(Meta::decode(b"\x00hello"), None);
        assert_eq!(Meta::decode(&v[..25]), None);
        let mut st = Meta::new(Kind::Stream, 10);
        st.size = 2;
        st.stream = StreamIds {
            first: StreamId { ms: 1, seq: 2 },
            last: StreamId { ms: 3, seq: 4 },
            max_deleted: StreamId { ms: 2, seq: 0 },
            entries_added: 7,
        };
        let enc = st.encode();
        assert_eq!(enc.len(), 82);
        assert_eq!(&enc[26..34], &1u64.to_le_bytes());
        assert_eq!(&enc[74..82], &7u64.to_le_bytes());
        assert_eq!(Meta::decode(&enc), Some(st));
        assert_eq!(Meta::decode(&enc[..26]), None);
        let mut bad = v.clone();
        bad[1] = 9;
        assert_eq!(Meta::decode(&bad), None);
    }

    #[test]
    fn element_keys_of_different_keys_never_interleave() {
        // "a" with any sub sorts entirely before or after "ab"'s elements:
        // the length prefix separates them.
        let a = element_key(b"\x00a", 1, b"\xff\xff");
        let ab = element_key(b"\x00ab", 1, b"");
        assert!(a < ab);
        assert!(!ab.starts_with(&element_prefix(b"\x00a", 1)));
        assert_eq!(
            element_key(b"\x00k", 7, b"f"),
            [0x12, 0, 0, 0, 0, 1, b'k', 0, 0, 0, 0, 0, 0, 0, 7, b'f']
        );
    }

    #[test]
    fn score_keys_sort_as_doubles() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(score_key(w[0]) < score_key(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(score_key(-0.0), score_key(0.0));
        for x in xs {
            assert_eq!(score_from_key(score_key(x)).to_bits(), x.to_bits());
        }
        assert_eq!(score_from_key(score_key(-0.0)).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn versions_increase() {
        let v = Versions::new();
        let a = v.next();
        let b = v.next();
        assert!(b > a);
    }

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), b"ac");
        assert_eq!(prefix_end(b"a\xff"), b"b");
    }
}
