//! Batched reads: runs of string reads (GET, MGET, STRLEN, GETRANGE,
//! GETBIT, BITCOUNT, BITFIELD_RO), key reads (EXISTS, TYPE, the TTL family),
//! collection point reads (HGET, HMGET, HEXISTS, HSTRLEN, SISMEMBER,
//! SMISMEMBER, ZSCORE, ZMSCORE, LINDEX, GEOPOS, GEOHASH, GEODIST), short
//! LRANGEs and size reads (HLEN, SCARD, ZCARD, LLEN, XLEN) from all
//! connections
//! executed as one `multi_get` (two with collection reads), with the
//! replies routed back in order.
//!
//! A connection submits a *job*: the keys of one run of pipelined GET and
//! MGET commands plus the shape of their replies. Jobs are combined by the
//! leader/follower protocol of [`combine`](crate::combine) (one leader per
//! runtime worker thread, so batching never leaves a core idle; a leader
//! of a small job yields once to gather the jobs of the other connections
//! on its thread). What is specific to reads:
//!
//! - Measured: without the gathering yield, 9.9 keys per batch at
//!   `redis-benchmark -c 50 -P 10` (one connection's pipeline); one
//!   gatherer for all threads was slower than one per thread
//!   (memtable-resident sorted_hash GET `-P 10`, 496 k/s against 559 k/s).
//! - A job of [`GATHER_BELOW_KEYS`] keys or more (an MGET of 100 keys) is
//!   already a batch: its leader neither yields nor joins a gatherer, so
//!   such jobs keep both cores busy (combining them too, into
//!   `multi_get`s of 1,100–3,200 keys on one core, measured slower for
//!   the sorted_hash memtable).
//! - A batch is one `multi_get` over the keys of its jobs (two for
//!   collection reads, see [`Reads::execute`]), whose replies are encoded
//!   straight from the engine's borrowed values.
//!
//! # Reply size
//! A job's reply is bounded by its [`ReplyLimits`]: once it holds
//! `split_at` bytes, the job's remaining commands are not answered (their
//! values are looked up by the `multi_get`s but not copied) and the
//! connection submits them again after writing what it has ([`Answered`]
//! says how many were answered; always at least one). A command boundary
//! in command order is the only place a job is split, so a collection
//! read's reply, like an MGET's, is answered whole or not at all. Past
//! `abort_at` bytes, encoding stops even inside a command: the client went
//! over its output hard limit and is closed. So 100 pipelined GETs of an
//! 8 MiB value hold one value's reply at a time, not 800 MiB.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use batchkv::{Db, ReadOptions, ReadView};
use bytes::BytesMut;

use crate::combine::{Combiner, Execute, Gather, Limits};
use crate::commands::bitfield::FieldGets;
use crate::commands::bits::BitCount;
use crate::commands::keys::TtlQuery;
use crate::commands::{bits, geo, lists, strings};
use crate::errors::{self, CORRUPT};
use crate::keyspace::{self, Entry, NotString};
use crate::meta::{self, Kind, Meta};
use crate::resp;
use crate::shared::Stats;

/// Jobs with fewer keys than this are worth combining with other
/// connections' jobs: their leader yields once to gather them (see the
/// module doc). A job of a GET pipeline (`-P 10`: up to 10 keys) is under
/// it, an MGET of 100 keys is over it.
const GATHER_BELOW_KEYS: usize = 64;
/// A job of a single key (one GET, not pipelined) does not gather: at
/// `redis-benchmark -c 50 -P 1` such gathering (one gatherer for all
/// threads) combined 3.0–3.7 keys per `multi_get` and was slower in all 6
/// paired runs (6–7 % in medians; a yield, a channel and a copy per key
/// cost more than the batch saves). Gathering per thread behind the gate
/// single writes use ([`Gather::WhileItFinds`]) measured no faster either
/// (`-c 50 -P 1`, 1M keys: 8.4–8.8 µs of CPU per GET both ways). It still
/// joins a gathering leader.
const GATHER_FROM_KEYS: usize = 2;
/// Keys gathered into one `multi_get` at most.
const MAX_BATCH_KEYS: usize = 4096;
/// Output bytes reserved per key before encoding (a bulk header and CRLF
/// around a 100-byte value); the buffer grows if values are longer.
const REPLY_BYTES_PER_KEY: usize = 128;

/// The reply shape of one command in a job, and where its arguments are
/// in the job's [`Keys`]: a string read's keys, or a collection read's
/// key followed by its fields (members).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// GET: one bulk string (or nil).
    Get,
    /// BITFIELD_RO key (GET type offset)+: an array of integers, the
    /// fields of the string (0 past its end or when absent).
    FieldGets(FieldGets),
    /// STRLEN key: an integer, the string's length (0 if absent).
    StrLen,
    /// GETRANGE (SUBSTR) key start end: a bulk string, the bytes between
    /// the indexes ([`strings::substring`]).
    GetRange { start: i64, end: i64 },
    /// GETBIT key offset: an integer, the bit (0 past the end or when
    /// absent); the offset is within the first MiB.
    GetBit(u32),
    /// BITCOUNT key [start end [BYTE|BIT]]: an integer, the set bits.
    BitCount(BitCount),
    /// EXISTS of n keys: an integer, how many of them are live keys of any
    /// type (a key named twice counts twice).
    Exists(usize),
    /// TYPE key: a simple string, the live key's type or `none`.
    Type,
    /// TTL, PTTL, EXPIRETIME, PEXPIRETIME key: an integer.
    Ttl(TtlQuery),
    /// MGET of n keys: an array of n bulk strings.
    Mget(usize),
    /// HGET key field: a bulk string (or nil).
    HGet,
    /// HEXISTS key field: an integer (1 if the field exists).
    HExists,
    /// HSTRLEN key field: an integer (the value's length, 0 if absent).
    HStrLen,
    /// LINDEX key index: a bulk string (or nil). Once phase 1 found the
    /// list, [`element_keys`] turns the index into the element to read.
    LIndex,
    /// LRANGE key start end of a span of at most [`lists::POINT_READ_MAX`]
    /// elements ([`lists::range_shape`]): an array of bulk strings. The
    /// indexes are held here, not in the job's [`Keys`]; once phase 1
    /// found the list, [`element_keys`] turns them into its elements.
    LRange { start: i64, end: i64 },
    /// HLEN, SCARD, ZCARD, LLEN, XLEN key: an integer, the size of the
    /// collection of this kind (0 if absent). Its metadata is all it reads.
    Card(Kind),
    /// HMGET key and n fields: an array of n bulk strings.
    HMget(usize),
    /// SISMEMBER key member: an integer.
    SIsMember,
    /// SMISMEMBER key and n members: an array of n integers.
    SMIsMember(usize),
    /// ZSCORE key member: a double (or nil).
    ZScore,
    /// ZMSCORE key and n members: an array of n doubles (or nils).
    ZMScore(usize),
    /// GEOPOS key and n members: an array of n positions (or nil arrays).
    GeoPos(usize),
    /// GEOHASH key and n members: an array of n geohashes (or nils).
    GeoHash(usize),
    /// GEODIST key member member [unit]: the distance in the unit, a bulk
    /// string (nil unless both members exist). The encoder holds the
    /// first member's score until the second arrives.
    GeoDist(geo::Unit),
}

impl Shape {
    /// Entries the command has in its job's [`Keys`]: a string read's
    /// keys, a collection read's key and its fields (members).
    pub fn keys(self) -> usize {
        match self {
            Shape::Get
            | Shape::FieldGets(_)
            | Shape::StrLen
            | Shape::GetRange { .. }
            | Shape::GetBit(_)
            | Shape::BitCount(_)
            | Shape::Type
            | Shape::Ttl(_)
            | Shape::Card(_)
            | Shape::LRange { .. } => 1,
            Shape::Mget(n) | Shape::Exists(n) => n,
            Shape::HGet
            | Shape::HExists
            | Shape::HStrLen
            | Shape::LIndex
            | Shape::SIsMember
            | Shape::ZScore => 2,
            Shape::GeoDist(_) => 3,
            Shape::HMget(n)
            | Shape::SMIsMember(n)
            | Shape::ZMScore(n)
            | Shape::GeoPos(n)
            | Shape::GeoHash(n) => n + 1,
        }
    }

    /// The collection a collection read reads; `None` for the reads of
    /// keys (GET, MGET, EXISTS, ...), whose keys phase 2 reads.
    fn kind(self) -> Option<Kind> {
        match self {
            Shape::Get
            | Shape::FieldGets(_)
            | Shape::StrLen
            | Shape::GetRange { .. }
            | Shape::GetBit(_)
            | Shape::BitCount(_)
            | Shape::Exists(_)
            | Shape::Type
            | Shape::Ttl(_)
            | Shape::Mget(_) => None,
            Shape::HGet | Shape::HExists | Shape::HStrLen | Shape::HMget(_) => Some(Kind::Hash),
            Shape::LIndex | Shape::LRange { .. } => Some(Kind::List),
            Shape::Card(kind) => Some(kind),
            Shape::SIsMember | Shape::SMIsMember(_) => Some(Kind::Set),
            Shape::ZScore
            | Shape::ZMScore(_)
            | Shape::GeoPos(_)
            | Shape::GeoHash(_)
            | Shape::GeoDist(_) => Some(Kind::ZSet),
        }
    }

    /// The reply's array length, for the commands that reply with one.
    fn array(self) -> Option<usize> {
        match self {
            Shape::Mget(n)
            | Shape::HMget(n)
            | Shape::SMIsMember(n)
            | Shape::ZMScore(n)
            | Shape::GeoPos(n)
            | Shape::GeoHash(n) => Some(n),
            _ => None,
        }
    }
}

/// The keys of a job, database prefix included, in one buffer (no
/// allocation per key): key `i` is `bytes[ends[i-1]..ends[i]]`.
/// A collection read's fields (members) are stored as given, without the
/// database prefix.
#[derive(Debug, Default)]
pub struct Keys {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Keys {
    /// Empty, with room for `entries` entries of `bytes` bytes in all.
    pub fn with_capacity(entries: usize, bytes: usize) -> Keys {
        Keys {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(entries),
        }
    }

    /// Appends `db ‖ key` (the layout of [`keyspace::db_key`]).
    pub fn push(&mut self, db: u8, key: &[u8]) {
        self.bytes.push(db);
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    /// Appends the arguments (after the name) of a command of `shape`
    /// read in database `db`: every key of a string read; a collection
    /// read's key, then its fields as they are. Arguments past
    /// [`Shape::keys`] (LRANGE's indexes) are held by the shape.
    pub fn push_args<A: AsRef<[u8]>>(&mut self, db: u8, shape: Shape, args: &[A]) {
        debug_assert!(args.len() >= shape.keys());
        let args = &args[..shape.keys()];
        let bytes: usize = args.iter().map(|a| a.as_ref().len() + 1).sum();
        self.bytes.reserve(bytes);
        self.ends.reserve(args.len());
        let keys = if shape.kind().is_some() {
            args.len().min(1)
        } else {
            args.len()
        };
        for (i, a) in args.iter().enumerate() {
            if i < keys {
                self.push(db, a.as_ref());
            } else {
                self.bytes.extend_from_slice(a.as_ref());
                self.ends.push(self.bytes.len());
            }
        }
    }

    /// Removes every entry, keeping the allocation.
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Bytes of all entries together.
    pub(crate) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Entry `i`.
    fn entry(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// The entries in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.entry(i))
    }
}

/// How much of a job's reply to produce (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// Once the job's reply holds this many bytes, no further command is
    /// answered (the first always is).
    pub split_at: usize,
    /// Once it holds more than this many, nothing more is encoded, even
    /// inside a command, and the job is [`Answered::aborted`].
    pub abort_at: usize,
}

#[cfg(test)]
impl ReplyLimits {
    /// Every command answered, however large the reply.
    pub const NONE: ReplyLimits = ReplyLimits {
        split_at: usize::MAX,
        abort_at: usize::MAX,
    };
}

/// How much of a job was answered: its first `commands` commands, which
/// have `keys` entries in the job's [`Keys`] ([`Shape::keys`] each), or,
/// if `aborted`, a reply cut short past [`ReplyLimits::abort_at`] that
/// must not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answered {
    pub commands: usize,
    pub keys: usize,
    pub aborted: bool,
}

/// What one submitter asks for: its keys and the shape of its replies.
pub struct Request {
    keys: Keys,
    shapes: Vec<Shape>,
    proto: u8,
    limits: ReplyLimits,
}

/// A follower's request, queued for a leader.
type Job = crate::combine::Job<Request, Answered>;

/// Where the encoding of one request's replies stands.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// The output's length before the request's first reply.
    start: usize,
    answered: Answered,
    /// No more of the request's replies are encoded.
    stopped: bool,
}

/// A request in a batch, with its output buffer and how far its replies
/// got.
type Part<'r> = (&'r Request, &'r mut BytesMut, Progress);

/// The cross-connection read combiner.
pub type Batcher = Combiner<Reads>;

impl Batcher {
    /// A batcher running at most `max_leaders` `multi_get`s at once and
    /// counting its batches in `stats`.
    pub fn new(db: Db, max_leaders: usize, stats: Arc<Stats>, timing: Timing) -> Batcher {
        let limits = Limits {
            gather_below: GATHER_BELOW_KEYS,
            max_batch: MAX_BATCH_KEYS,
        };
        let reads = Reads {
            db,
            stats,
            timing,
            ns_per_key: AtomicU64::new(0),
        };
        Combiner::with(reads, max_leaders, limits)
    }

    /// Runs a job and appends its encoded replies to `out`, as much of
    /// them as `limits` allow; returns how much that was. With `combine`
    /// (other clients are connected), a submitter of a small job that
    /// becomes leader yields once first so that their jobs can join its
    /// `multi_get`.
    pub async fn submit_reads(
        self: &Arc<Self>,
        keys: Keys,
        shapes: Vec<Shape>,
        proto: u8,
        combine: bool,
        limits: ReplyLimits,
        out: &mut BytesMut,
    ) -> Answered {
        let req = Request {
            keys,
            shapes,
            proto,
            limits,
        };
        self.submit(req, combine, out).await
    }

    /// How long a job of `keys` keys is expected to take, in nanoseconds
    /// (recent batches' time per key; 0 where batches are not timed, see
    /// [`Reads::ns_per_key`]).
    pub fn expected_ns(&self, keys: usize) -> u64 {
        let per_key = self.exec().ns_per_key.load(Ordering::Relaxed);
        per_key.saturating_mul(keys as u64)
    }
}

/// The batcher's engine call: one `multi_get` for a batch of reads.
pub struct Reads {
    db: Db,
    stats: Arc<Stats>,
    timing: Timing,
    /// Unless [`Timing::Off`], recent nanoseconds per key of batches of
    /// at least [`TIMED_BATCH_KEYS`] keys (a moving average; 0 before any).
    ns_per_key: AtomicU64,
}

/// Whether batches are timed, and what a long one does about the other
/// connections of its thread, which cannot run while it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Neither (`--runtime stealing`: another worker steals them).
    Off,
    /// Batches are timed for [`Batcher::expected_ns`] (`--runtime
    /// adaptive`: a connection whose thread is busy runs a long job on an
    /// idle thread, `Placement::helper`).
    Timed,
    /// Timed, and a batch expected to take over [`LONG_BATCH_NS`] runs in
    /// [`crate::shared::block_in_place`], which hands the thread's other
    /// connections to a spare thread (`--runtime pinned`). Not under
    /// adaptive: the spare thread parks while the batch runs, so the
    /// thread's load reads as idle, and the helper does better
    /// (docs/perf/history/2026-11-30-read-helpers.md).
    HandOff,
}

/// Batches expected to take longer (keys times the recent time per key)
/// run in [`crate::shared::block_in_place`] under [`Timing::HandOff`]: the
/// hand-off costs a thread wake-up (~10–20 µs), worth it for batches that
/// read SST blocks, not for memtable-resident ones (~0.2 µs per key).
const LONG_BATCH_NS: u64 = 200_000;
/// Batches this large are timed for [`Reads::ns_per_key`].
const TIMED_BATCH_KEYS: usize = 16;

impl Execute for Reads {
    type Request = Request;
    type Answer = Answered;

    fn size(req: &Request) -> usize {
        req.keys.len()
    }

    fn gathers(req: &Request) -> Gather {
        if req.keys.len() >= GATHER_FROM_KEYS {
            // While gatherers find others: with two clients sending MGETs
            // of 5 keys at `-P 1` a yield that finds nobody cost a fifth
            // of the CPU per request (`combine.rs`, `Gather`).
            Gather::WhileItFinds
        } else {
            Gather::Never
        }
    }

    /// Runs the commands of `own` (encoded into its buffer) and of `jobs`
    /// (encoded into fresh buffers sent to their submitters), encoding
    /// replies straight from the engine's borrowed values, in order.
    ///
    /// Jobs of GET and MGET only take one `multi_get` over their keys, at
    /// the latest state. A batch with collection reads takes two, at one
    /// engine state ([`ReadView`]): the first over the collections' metadata keys,
    /// the second over the string keys and the element keys of the live
    /// collections of the right kind (keyed by the version the first read
    /// found). Reading both at one state makes each command's reply
    /// the state of one moment: a collection replaced between two
    /// latest-state reads (SUNIONSTORE over a set, SET over a hash) would
    /// otherwise leave its old version's elements deleted and the reply
    /// empty, which no order of the commands produces.
    ///
    /// Each request's replies stay within its [`ReplyLimits`] (its values
    /// past a split or an abort are read but not encoded). Returns what
    /// `own` got answered.
    fn execute(&self, own: Option<(&Request, &mut BytesMut)>, jobs: Vec<Job>) -> Option<Answered> {
        let has_own = own.is_some();
        let mut outs: Vec<BytesMut> = jobs
            .iter()
            .map(|j| BytesMut::with_capacity(reserve_for(&j.req)))
            .collect();
        // Every request with its output buffer, in command order.
        let mut parts: Vec<Part> = Vec::with_capacity(jobs.len() + 1);
        parts.extend(own.map(|(r, o)| (r, o, Progress::default())));
        parts.extend(
            jobs.iter()
                .map(|j| &j.req)
                .zip(outs.iter_mut())
                .map(|(r, o)| (r, o, Progress::default())),
        );
        for (r, out, progress) in &mut parts {
            out.reserve(reserve_for(r));
            progress.start = out.len();
        }
        let now = keyspace::now_ms();
        let mut count = Count::default();
        let keys: usize = parts.iter().map(|(r, ..)| r.keys.len()).sum();
        // The panic boundary (`panics.rs`): a panic must neither leave the
        // leader count taken nor a job without its reply (invariant 4).
        let mut run = || {
            crate::panics::catch(
                || "a batched read".into(),
                || self.read_and_encode(&mut parts, now, &mut count),
            )
        };
        // Timed only where the average is used.
        let done = if self.timing != Timing::Off && keys >= TIMED_BATCH_KEYS {
            let recent = self.ns_per_key.load(Ordering::Relaxed);
            let long = self.timing == Timing::HandOff
                && recent.saturating_mul(keys as u64) > LONG_BATCH_NS;
            let began = std::time::Instant::now();
            let done = if long {
                crate::shared::block_in_place(run)
            } else {
                run()
            };
            let per_key =
                u64::try_from(began.elapsed().as_nanos() / keys as u128).unwrap_or(u64::MAX);
            // Racy read-modify-write of a statistic: a lost update only
            // delays the average.
            let avg = if recent == 0 {
                per_key
            } else {
                // 7/8 of `recent` plus 1/8 of `per_key`, in u128: a huge
                // recent (as tests set) must not overflow `recent * 7`.
                ((u128::from(recent) * 7 + u128::from(per_key)) / 8) as u64
            };
            self.ns_per_key.store(avg, Ordering::Relaxed);
            done
        } else {
            run()
        };
        if done.is_none() {
            // Every command of every request answers the error instead of
            // what it had encoded so far.
            for (req, out, progress) in &mut parts {
                out.truncate(progress.start);
                for _ in &req.shapes {
                    resp::encode_error(out, crate::panics::INTERNAL_ERROR);
                }
                progress.answered = Answered {
                    commands: req.shapes.len(),
                    keys: req.keys.len(),
                    aborted: false,
                };
            }
        }
        let answered: Vec<Answered> = parts.iter().map(|(.., p)| p.answered).collect();
        drop(parts);
        use std::sync::atomic::Ordering::Relaxed;
        let stats = &self.stats;
        stats.hits.fetch_add(count.hits, Relaxed);
        stats.misses.fetch_add(count.misses, Relaxed);
        stats.batches.fetch_add(count.batches, Relaxed);
        stats.batched_keys.fetch_add(count.keys, Relaxed);
        let (own_answered, theirs) = if has_own {
            (answered.first().copied(), &answered[1..])
        } else {
            (None, &answered[..])
        };
        for ((job, out), a) in jobs.into_iter().zip(outs).zip(theirs) {
            // A closed connection no longer wants its reply.
            let _ = job.tx.send((out, *a));
        }
        own_answered
    }
}

impl Reads {
    /// Reads the values of `parts` (one or two `multi_get`s, see
    /// [`Reads::execute`]) and encodes their replies, recording how far
    /// each got in its [`Progress`].
    fn read_and_encode(&self, parts: &mut [Part], now: u64, count: &mut Count) {
        #[cfg(test)]
        tests::maybe_panic();
        let mut buf = BUFFERS.with(Cell::take);
        let colls = parts.iter().any(|(r, ..)| r.has_coll());
        // Both reads of a batch with collection reads at one state: a
        // view (the memtables and files of one moment) rather than a
        // registered snapshot, which costs a lock and an allocation per
        // batch and is needed only by reads that outlive a compaction.
        let view = colls.then(|| self.db.read_view());
        let opts = ReadOptions::default();
        buf.found.clear();
        if let Some(view) = &view {
            self.read_metas(parts, view, now, count, &mut buf);
        }
        element_keys(parts, &mut buf.found, &mut buf.elems, &mut buf.live);
        let mut keys = recycle(std::mem::take(&mut buf.keys));
        read_keys(parts, &buf.found, &buf.elems, &mut keys);
        let read = !keys.is_empty();
        if read {
            count.batches += 1;
            count.keys += keys.len() as u64;
        }
        let mut enc = Encoder {
            parts,
            found: &buf.found,
            now,
            count,
            pi: 0,
            si: 0,
            ci: 0,
            ki: 0,
            reads: 0,
            begun: false,
            start: 0,
            failed: None,
            held: None,
            tally: 0,
        };
        if read {
            let on_value = |_: usize, r: batchkv::Result<Option<&[u8]>>| {
                enc.value(r.map_err(|e| e.to_string()))
            };
            match &view {
                Some(view) => view.multi_get_with(&opts, &keys, on_value),
                None => self.db.multi_get_with(&opts, &keys, on_value),
            }
        }
        enc.finish();
        buf.keys = recycle(keys);
        buf.put_back();
    }

    /// Phase 1 of a batch with collection reads: one `multi_get` of their
    /// keys; what each found, in command order, into `buf.found`.
    fn read_metas(
        &self,
        parts: &[Part],
        view: &ReadView,
        now: u64,
        count: &mut Count,
        buf: &mut Buffers,
    ) {
        let mut keys = recycle(std::mem::take(&mut buf.keys));
        let kinds = &mut buf.kinds;
        kinds.clear();
        for (r, ..) in parts {
            let r: &Request = r;
            let mut e = 0;
            for &s in &r.shapes {
                if let Some(kind) = s.kind() {
                    keys.push(r.keys.entry(e));
                    kinds.push(kind);
                }
                e += s.keys();
            }
        }
        let found = &mut buf.found;
        view.multi_get_with(&ReadOptions::default(), &keys, |i, r| {
            let f = match r {
                Err(e) => Found::Failed(errors::engine_error_text(e)),
                Ok(None) => Found::Missing,
                Ok(Some(v)) => match keyspace::live_entry(v, now) {
                    Ok(None) => Found::Missing,
                    Ok(Some(Entry::Coll(m))) if m.kind == kinds[i] => Found::Live(m),
                    Ok(Some(_)) => Found::WrongType,
                    Err(()) => Found::Failed(CORRUPT.into()),
                },
            };
            match f {
                Found::Live(_) | Found::WrongType => count.hits += 1,
                Found::Missing => count.misses += 1,
                Found::Failed(_) => {}
            }
            found.push(f);
        });
        count.batches += 1;
        count.keys += keys.len() as u64;
        buf.keys = recycle(keys);
    }
}

/// The buffers of a batch's reads, kept per thread between batches so
/// that a batch in the steady state allocates nothing but its replies.
/// A batch takes them out of [`BUFFERS`] (a batch nested in another, or
/// one after a panic, starts with empty ones) and puts them back.
#[derive(Default)]
struct Buffers {
    /// What phase 1 found, per collection read in command order.
    found: Vec<Found>,
    /// The kind each collection read reads, in the same order.
    kinds: Vec<Kind>,
    /// Phase 2's element keys.
    elems: Keys,
    /// [`element_keys`]'s list of live collection reads.
    live: Vec<LiveRead>,
    /// A `multi_get`'s keys; empty between uses ([`recycle`]).
    keys: Vec<&'static [u8]>,
}

/// Entries (keys, found) a buffer keeps at most between batches.
const BUFFERS_KEEP: usize = 4096;

impl Buffers {
    /// Empties the buffers (what was found is dropped), frees those a huge
    /// batch grew, and stores them for this thread's next batch.
    fn put_back(mut self) {
        self.found.clear();
        if self.found.capacity() > BUFFERS_KEEP
            || self.keys.capacity() > BUFFERS_KEEP
            || self.elems.bytes.capacity() > 64 * BUFFERS_KEEP
            || self.elems.ends.capacity() > BUFFERS_KEEP
        {
            return;
        }
        BUFFERS.with(|b| b.set(self));
    }
}

thread_local! {
    static BUFFERS: Cell<Buffers> = Cell::new(Buffers::default());
}

/// An empty vector with `v`'s allocation, for slices of another lifetime
/// (the same type otherwise, so the collect reuses the allocation in place).
fn recycle<'a, 'b>(mut v: Vec<&'a [u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| -> &'b [u8] { unreachable!() })
        .collect()
}

/// Statistics of one batch.
#[derive(Default)]
struct Count {
    hits: u64,
    misses: u64,
    /// `multi_get`s run.
    batches: u64,
    /// Keys they read.
    keys: u64,
}

/// What phase 1 found at a collection read's key.
enum Found {
    /// The live collection of the kind the command reads.
    Live(Meta),
    /// Absent or expired.
    Missing,
    /// A live value of another type.
    WrongType,
    /// The whole reply is this error.
    Failed(String),
}

impl Request {
    fn has_coll(&self) -> bool {
        self.shapes.iter().any(|s| s.kind().is_some())
    }
}

/// Keys a command reads in phase 2: a string read all its keys; a
/// collection read (`found`) its elements if the collection is live (an
/// LRANGE those of its span).
fn reads(shape: Shape, found: Option<&Found>) -> usize {
    match (found, shape) {
        (None, _) => shape.keys(),
        (Some(Found::Live(m)), Shape::LRange { start, end }) => {
            let (from, to) = lists::range_positions(m, start, end);
            (to - from) as usize
        }
        (Some(Found::Live(_)), _) => shape.keys() - 1,
        (Some(_), _) => 0,
    }
}

/// A collection read whose collection phase 1 found live, for
/// [`element_keys`].
struct LiveRead {
    /// Its part, and its key's entry in the part's [`Keys`].
    part: usize,
    entry: usize,
    shape: Shape,
    /// The collection's version (in its element keys).
    version: u64,
    subs: Subs,
}

/// The sub-keys of the elements a live collection read reads.
enum Subs {
    /// Its fields (members) as given, the entries after its key.
    Args,
    /// A list's elements at absolute indexes `[from, to)`.
    Positions(u64, u64),
}

/// The element keys of the live collections' fields, in command order,
/// built into `elems` (emptied first; each collection's element-key
/// prefix is written once and copied for its other fields), with `live`
/// as a buffer.
///
/// A LINDEX of a live list reads the element at its index; one whose
/// index is outside the list reads nothing and replies nil (as for an
/// absent list), one whose index is not an integer replies the error
/// (checked after the type, as in Redis): its `found` becomes that. An
/// LRANGE reads the elements of its span ([`reads`]).
fn element_keys(parts: &[Part], found: &mut [Found], elems: &mut Keys, live: &mut Vec<LiveRead>) {
    elems.clear();
    if found.is_empty() {
        return;
    }
    live.clear();
    let mut ci = 0;
    for (part, (r, ..)) in parts.iter().enumerate() {
        let mut entry = 0;
        for &shape in &r.shapes {
            if shape.kind().is_some() {
                if let Found::Live(m) = &found[ci] {
                    // The elements to read, or what the read found instead.
                    let subs = match shape {
                        Shape::Card(_) => Ok(None), // its metadata is all it reads
                        Shape::LIndex => match lists::index_position(m, r.keys.entry(entry + 1)) {
                            Ok(Some(i)) => Ok(Some(Subs::Positions(i, i + 1))),
                            Ok(None) => Err(Found::Missing),
                            Err(_) => Err(Found::Failed(errors::NOT_INTEGER.into())),
                        },
                        Shape::LRange { start, end } => {
                            let (from, to) = lists::range_positions(m, start, end);
                            Ok((from < to).then_some(Subs::Positions(from, to)))
                        }
                        _ => Ok(Some(Subs::Args)),
                    };
                    let version = m.version;
                    match subs {
                        Ok(Some(subs)) => live.push(LiveRead {
                            part,
                            entry,
                            shape,
                            version,
                            subs,
                        }),
                        Ok(None) => {}
                        Err(f) => found[ci] = f,
                    }
                }
                ci += 1;
            }
            entry += shape.keys();
        }
    }
    let (mut bytes, mut count) = (0, 0);
    for l in live.iter() {
        let keys = &parts[l.part].0.keys;
        let prefix = meta::element_prefix_len(keys.entry(l.entry));
        let n = match l.subs {
            Subs::Args => {
                let fields = l.shape.keys() - 1;
                bytes += keys.ends[l.entry + fields] - keys.ends[l.entry];
                fields
            }
            Subs::Positions(from, to) => {
                bytes += 8 * (to - from) as usize;
                (to - from) as usize
            }
        };
        bytes += n * prefix;
        count += n;
    }
    elems.bytes.reserve(bytes);
    elems.ends.reserve(count);
    for l in live.iter() {
        let keys = &parts[l.part].0.keys;
        let start = elems.bytes.len();
        meta::push_element_prefix(&mut elems.bytes, keys.entry(l.entry), l.version);
        let prefix = start..elems.bytes.len();
        let push = |elems: &mut Keys, first: bool, sub: &[u8]| {
            if !first {
                elems.bytes.extend_from_within(prefix.clone());
            }
            elems.bytes.extend_from_slice(sub);
            elems.ends.push(elems.bytes.len());
        };
        match l.subs {
            Subs::Args => {
                for j in 1..l.shape.keys() {
                    push(elems, j == 1, keys.entry(l.entry + j));
                }
            }
            Subs::Positions(from, to) => {
                for i in from..to {
                    push(elems, i == from, &i.to_be_bytes());
                }
            }
        }
    }
    debug_assert_eq!(elems.bytes.len(), bytes);
}

/// Phase 2's keys in command order, into `keys` (empty): the string
/// reads' keys and the element keys in `elems`.
fn read_keys<'a>(
    parts: &[(&'a Request, &mut BytesMut, Progress)],
    found: &[Found],
    elems: &'a Keys,
    keys: &mut Vec<&'a [u8]>,
) {
    let (mut ci, mut ei) = (0, 0);
    for (r, ..) in parts {
        let r: &'a Request = r;
        let mut e = 0;
        for &s in &r.shapes {
            let f = s.kind().map(|_| {
                ci += 1;
                &found[ci - 1]
            });
            let n = reads(s, f);
            for j in 0..n {
                keys.push(match f {
                    None => r.keys.entry(e + j),
                    Some(_) => elems.entry(ei + j),
                });
            }
            if f.is_some() {
                ei += n;
            }
            e += s.keys();
        }
    }
}

/// Encodes phase 2's values into the replies, in command order: a cursor
/// over (part, command, key), which encodes the replies of commands with
/// nothing to read in phase 2 when it passes them. A part's commands from
/// the one that begins at or past its `split_at` on, or after its reply
/// passed `abort_at`, are passed over without encoding (their values are
/// skipped).
struct Encoder<'p, 'r> {
    parts: &'p mut [Part<'r>],
    found: &'p [Found],
    now: u64,
    count: &'p mut Count,
    /// Part, command in it, collection read (across parts), key in the
    /// command.
    pi: usize,
    si: usize,
    ci: usize,
    ki: usize,
    /// Keys the current command reads in phase 2.
    reads: usize,
    /// Whether the current command's reply is begun.
    begun: bool,
    /// Where the current command's reply starts in its output.
    start: usize,
    /// A collection read's error, which replaces its whole reply.
    failed: Option<String>,
    /// GEODIST's first member's score (`None`: absent), read before the
    /// second's.
    held: Option<Option<f64>>,
    /// EXISTS's count of live keys so far.
    tally: i64,
}

impl Encoder<'_, '_> {
    /// Begins the reply of the next command that reads a key in phase 2,
    /// encoding the replies of the commands before it that read none.
    fn settle(&mut self) {
        while self.pi < self.parts.len() && !self.begun {
            let (req, out, progress) = &mut self.parts[self.pi];
            let Some(&shape) = req.shapes.get(self.si) else {
                self.pi += 1;
                self.si = 0;
                continue;
            };
            let found = shape.kind().map(|_| &self.found[self.ci]);
            self.start = out.len();
            self.failed = None;
            self.held = None;
            self.tally = 0;
            self.reads = reads(shape, found);
            // A command boundary: the first command is always answered.
            if self.si > 0 && out.len() - progress.start >= req.limits.split_at {
                progress.stopped = true;
            }
            if !progress.stopped {
                match found {
                    Some(Found::Live(m)) if matches!(shape, Shape::Card(_)) => {
                        resp::encode_int(out, m.size as i64)
                    }
                    Some(Found::Live(_)) if matches!(shape, Shape::LRange { .. }) => {
                        resp::encode_array_header(out, self.reads)
                    }
                    None | Some(Found::Live(_)) => {
                        if let Some(n) = shape.array() {
                            resp::encode_array_header(out, n);
                        }
                    }
                    Some(Found::Missing) => encode_missing(req.proto, out, shape),
                    Some(Found::WrongType) => resp::encode_error(out, errors::WRONGTYPE),
                    Some(Found::Failed(e)) => resp::encode_error(out, e),
                }
                check_abort(req, out, progress);
            }
            if self.reads > 0 {
                self.begun = true;
            } else {
                self.next_command(shape);
            }
        }
    }

    /// Moves past the current command, counting it as answered unless
    /// its part stopped.
    fn next_command(&mut self, shape: Shape) {
        let progress = &mut self.parts[self.pi].2;
        if !progress.stopped {
            progress.answered.commands += 1;
            progress.answered.keys += shape.keys();
        }
        self.si += 1;
        if shape.kind().is_some() {
            self.ci += 1;
        }
        self.ki = 0;
        self.begun = false;
    }

    /// Encodes the next value phase 2 read.
    fn value(&mut self, r: Result<Option<&[u8]>, String>) {
        if !self.begun {
            self.settle();
        }
        let Some((req, out, progress)) = self.parts.get_mut(self.pi) else {
            debug_assert!(false, "a value past the last command");
            return;
        };
        let shape = req.shapes[self.si];
        let skip = progress.stopped;
        match (shape, r) {
            // Not answered in this job (or aborted): the value is skipped.
            _ if skip => {}
            (
                Shape::Get
                | Shape::Mget(_)
                | Shape::FieldGets(_)
                | Shape::StrLen
                | Shape::GetRange { .. }
                | Shape::GetBit(_)
                | Shape::BitCount(_),
                r,
            ) => encode_string(req.proto, out, shape, r, self.now, self.count),
            (Shape::Exists(_) | Shape::Type | Shape::Ttl(_), r) => {
                let entry = match r.map(|v| v.map(|v| keyspace::live_entry(v, self.now))) {
                    Ok(None) | Ok(Some(Ok(None))) => {
                        self.count.misses += 1;
                        None
                    }
                    Ok(Some(Ok(Some(e)))) => {
                        self.count.hits += 1;
                        self.tally += 1;
                        Some(e)
                    }
                    Ok(Some(Err(()))) => {
                        self.failed = Some(CORRUPT.into());
                        None
                    }
                    Err(e) => {
                        self.failed = Some(errors::engine_error_text(e));
                        None
                    }
                };
                match shape {
                    // One integer once the last key is read.
                    Shape::Exists(_) if self.ki + 1 == self.reads => {
                        resp::encode_int(out, self.tally)
                    }
                    Shape::Exists(_) => {}
                    Shape::Type => {
                        resp::encode_simple(out, entry.as_ref().map_or("none", Entry::type_name))
                    }
                    _ => encode_ttl(out, shape, entry.map(|e| e.expire_at()), self.now),
                }
            }
            (_, Err(e)) => self.failed = Some(errors::engine_error_text(e)),
            (Shape::HGet | Shape::HMget(_) | Shape::LIndex | Shape::LRange { .. }, Ok(Some(v))) => {
                resp::encode_bulk(out, v)
            }
            (Shape::LRange { .. }, Ok(None)) => self.failed = Some(lists::ELEMENT_MISSING.into()),
            (Shape::HExists | Shape::SIsMember | Shape::SMIsMember(_), Ok(v)) => {
                resp::encode_int(out, i64::from(v.is_some()))
            }
            (Shape::HStrLen, Ok(v)) => resp::encode_int(out, v.map_or(0, |v| v.len() as i64)),
            (Shape::ZScore | Shape::ZMScore(_), Ok(Some(v))) => match <[u8; 8]>::try_from(v) {
                Ok(b) => resp::encode_double(req.proto, out, f64::from_le_bytes(b)),
                Err(_) => self.failed = Some(CORRUPT.into()),
            },
            (Shape::GeoPos(_) | Shape::GeoHash(_), Ok(Some(v))) => match <[u8; 8]>::try_from(v) {
                Ok(b) if matches!(shape, Shape::GeoPos(_)) => {
                    geo::encode_position(req.proto, out, f64::from_le_bytes(b))
                }
                Ok(b) => {
                    resp::encode_bulk(out, &crate::geo::standard_geohash(f64::from_le_bytes(b)))
                }
                Err(_) => self.failed = Some(CORRUPT.into()),
            },
            (Shape::GeoPos(_), Ok(None)) => resp::encode_nil_array(req.proto, out),
            (Shape::GeoDist(unit), Ok(v)) => {
                let score = match v.map(<[u8; 8]>::try_from) {
                    None => None,
                    Some(Ok(b)) => Some(f64::from_le_bytes(b)),
                    Some(Err(_)) => {
                        self.failed = Some(CORRUPT.into());
                        None
                    }
                };
                match self.held.take() {
                    None => self.held = Some(score),
                    Some(first) => geo::encode_distance(req.proto, out, first.zip(score), unit),
                }
            }
            (_, Ok(_)) => resp::encode_nil(req.proto, out),
        }
        self.ki += 1;
        if self.ki == self.reads {
            if let Some(e) = self.failed.take() {
                if !progress.stopped {
                    out.truncate(self.start);
                    resp::encode_error(out, &e);
                }
            }
        }
        if !skip {
            check_abort(req, out, progress);
        }
        if self.ki == self.reads {
            self.next_command(shape);
        }
    }

    /// Encodes the replies after the last value.
    fn finish(&mut self) {
        self.settle();
        debug_assert!(self.pi == self.parts.len(), "a command is missing values");
    }
}

/// Stops a request whose reply grew past its [`ReplyLimits::abort_at`]
/// since `progress.start`, marking it aborted.
fn check_abort(req: &Request, out: &BytesMut, progress: &mut Progress) {
    if out.len() - progress.start > req.limits.abort_at {
        progress.stopped = true;
        progress.answered.aborted = true;
    }
}

/// Output bytes reserved for a request before encoding: a guess for its
/// keys, never past its split point.
fn reserve_for(r: &Request) -> usize {
    (REPLY_BYTES_PER_KEY * r.keys.len()).min(r.limits.split_at)
}

/// Encodes the reply of a read of a string (GET, BITFIELD_RO, STRLEN,
/// GETRANGE, GETBIT, BITCOUNT), or one of an MGET's values.
fn encode_string(
    proto: u8,
    out: &mut BytesMut,
    shape: Shape,
    r: Result<Option<&[u8]>, String>,
    now: u64,
    count: &mut Count,
) {
    match r.map(|v| v.map(|v| keyspace::live_value(v, now))) {
        Ok(Some(Ok(Some(d)))) => {
            count.hits += 1;
            encode_string_reply(proto, out, shape, Some(d.data));
        }
        Ok(None) | Ok(Some(Ok(None))) => {
            count.misses += 1;
            encode_string_reply(proto, out, shape, None);
        }
        // MGET answers nil for a key that is not a string.
        Ok(Some(Err(NotString::WrongType))) if matches!(shape, Shape::Mget(_)) => {
            resp::encode_nil(proto, out)
        }
        Ok(Some(Err(NotString::WrongType))) => resp::encode_error(out, errors::WRONGTYPE),
        Ok(Some(Err(NotString::Corrupt))) => resp::encode_error(out, CORRUPT),
        Err(e) => resp::encode_error(out, &errors::engine_error_text(e)),
    }
}

/// Encodes what a string read answers of a live string's bytes, or of an
/// absent key (`None`).
fn encode_string_reply(proto: u8, out: &mut BytesMut, shape: Shape, data: Option<&[u8]>) {
    match (shape, data) {
        (Shape::FieldGets(f), d) => f.encode(out, d.unwrap_or_default()),
        (Shape::StrLen, d) => resp::encode_int(out, d.map_or(0, |d| d.len() as i64)),
        (Shape::GetRange { start, end }, d) => {
            resp::encode_bulk(out, strings::substring(d.unwrap_or_default(), start, end))
        }
        (Shape::BitCount(c), d) => resp::encode_int(out, c.count(d.unwrap_or_default())),
        (Shape::GetBit(offset), d) => resp::encode_int(
            out,
            i64::from(bits::bit_at(d.unwrap_or_default(), u64::from(offset))),
        ),
        (_, Some(d)) => resp::encode_bulk(out, d),
        (_, None) => resp::encode_nil(proto, out),
    }
}

/// Encodes a TTL-family reply (`shape` is [`Shape::Ttl`]) of a key that is
/// absent (`None`) or expires at the given time (`Some(None)`: never).
fn encode_ttl(out: &mut BytesMut, shape: Shape, expire_at: Option<Option<u64>>, now: u64) {
    if let Shape::Ttl(q) = shape {
        resp::encode_int(out, q.answer(expire_at, now));
    } else {
        debug_assert!(false, "not a TTL read: {shape:?}");
    }
}

/// Encodes the reply of a collection read of an absent key, as the
/// unbatched commands reply.
fn encode_missing(proto: u8, out: &mut BytesMut, shape: Shape) {
    match shape {
        Shape::SIsMember | Shape::HExists | Shape::HStrLen | Shape::Card(_) => {
            resp::encode_int(out, 0)
        }
        Shape::SMIsMember(n) => {
            resp::encode_array_header(out, n);
            for _ in 0..n {
                resp::encode_int(out, 0);
            }
        }
        Shape::HMget(n) | Shape::ZMScore(n) | Shape::Mget(n) | Shape::GeoHash(n) => {
            resp::encode_array_header(out, n);
            for _ in 0..n {
                resp::encode_nil(proto, out);
            }
        }
        Shape::GeoPos(n) => {
            resp::encode_array_header(out, n);
            for _ in 0..n {
                resp::encode_nil_array(proto, out);
            }
        }
        Shape::Get | Shape::HGet | Shape::LIndex | Shape::ZScore | Shape::GeoDist(_) => {
            resp::encode_nil(proto, out)
        }
        Shape::FieldGets(_)
        | Shape::StrLen
        | Shape::GetRange { .. }
        | Shape::GetBit(_)
        | Shape::BitCount(_) => encode_string_reply(proto, out, shape, None),
        Shape::Exists(_) => resp::encode_int(out, 0),
        Shape::Type => resp::encode_simple(out, "none"),
        Shape::Ttl(_) => encode_ttl(out, shape, None, 0),
        Shape::LRange { .. } => resp::encode_array_header(out, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::QueueState;
    use batchkv::Options;
    use tokio::sync::oneshot;

    /// No leader, gatherer or queued job.
    fn idle() -> QueueState {
        QueueState {
            leaders: 0,
            gatherers: Vec::new(),
            jobs: 0,
        }
    }

    thread_local! {
        /// Makes the next `execute` on this thread panic.
        static PANIC_NEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// The test hook in `execute`: panics once if asked to.
    pub(super) fn maybe_panic() {
        if PANIC_NEXT.with(|p| p.replace(false)) {
            panic!("injected batcher panic");
        }
    }

    /// A panic in a batch answers every command of every request with the
    /// error (nothing of what was encoded before it is sent), and the
    /// batcher keeps working.
    #[test]
    fn a_panicking_batch_answers_every_command_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(
            keyspace::db_key(0, b"a"),
            keyspace::encode_value(b"1", None),
        )
        .unwrap();
        let batcher = Arc::new(Batcher::new(db, 1, Arc::new(Stats::default()), Timing::Off));
        let own = Request {
            keys: keys(0, &["a", "a", "b"]),
            shapes: vec![Shape::Get, Shape::Mget(2)],
            proto: 2,
            limits: ReplyLimits::NONE,
        };
        let (tx, mut rx) = oneshot::channel();
        let job = Job {
            req: Request {
                keys: keys(0, &["a"]),
                shapes: vec![Shape::Get],
                proto: 3,
                limits: ReplyLimits::NONE,
            },
            tx,
        };
        let mut out = BytesMut::from(&b"+OK\r\n"[..]);
        PANIC_NEXT.with(|p| p.set(true));
        let answered = batcher.exec().execute(Some((&own, &mut out)), vec![job]);
        let err = b"-ERR internal error\r\n";
        assert_eq!(&out[..], [&b"+OK\r\n"[..], err, err].concat());
        let all = |commands, keys| Answered {
            commands,
            keys,
            aborted: false,
        };
        assert_eq!(answered, Some(all(2, 3)));
        let (theirs, a) = rx.try_recv().unwrap();
        assert_eq!(&theirs[..], err);
        assert_eq!(a, all(1, 1));
        // The leader count was given back: a new submitter leads.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut out = BytesMut::new();
        rt.block_on(batcher.submit_reads(
            keys(0, &["a"]),
            vec![Shape::Get],
            2,
            false,
            ReplyLimits::NONE,
            &mut out,
        ));
        assert_eq!(&out[..], b"$1\r\n1\r\n");
    }

    /// A job holds a shape per command: BITFIELD_RO's fields are packed
    /// so that they make it no larger than LRANGE's two indexes do.
    #[test]
    fn shapes_stay_three_words() {
        assert_eq!(std::mem::size_of::<Shape>(), 24);
    }

    fn keys(db: u8, names: &[&str]) -> Keys {
        let mut k = Keys::default();
        for n in names {
            k.push(db, n.as_bytes());
        }
        k
    }

    /// A leader's own job and the followers' jobs it takes share one
    /// `multi_get`: each gets exactly its replies, in order — the own job
    /// in the connection's buffer (after what was already there), the
    /// others through their channels.
    #[test]
    fn a_leaders_own_job_and_queued_jobs_get_their_own_replies() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for (k, v) in [("a", "1"), ("b", "22"), ("c", "333")] {
            db.put(
                keyspace::db_key(0, k.as_bytes()),
                keyspace::encode_value(v.as_bytes(), None),
            )
            .unwrap();
        }
        // Expired: absent to every reader.
        db.put(
            keyspace::db_key(0, b"old"),
            keyspace::encode_value(b"x", Some(1)),
        )
        .unwrap();
        let stats = Arc::new(Stats::default());
        let batcher = Batcher::new(db, 1, stats.clone(), Timing::Off);
        let own = Request {
            keys: keys(0, &["c", "a", "zz", "b"]),
            shapes: vec![Shape::Get, Shape::Mget(2), Shape::Get],
            proto: 2,
            limits: ReplyLimits::NONE,
        };
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        let jobs = vec![
            Job {
                req: Request {
                    keys: keys(0, &["b", "old"]),
                    shapes: vec![Shape::Mget(2)],
                    proto: 3,
                    limits: ReplyLimits::NONE,
                },
                tx: tx1,
            },
            Job {
                // Database 1 holds none of the keys.
                req: Request {
                    keys: keys(1, &["a"]),
                    shapes: vec![Shape::Get],
                    proto: 2,
                    limits: ReplyLimits::NONE,
                },
                tx: tx2,
            },
        ];
        let mut out = BytesMut::from(&b"+OK\r\n"[..]);
        let answered = batcher.exec().execute(Some((&own, &mut out)), jobs);
        assert_eq!(
            answered,
            Some(Answered {
                commands: 3,
                keys: 4,
                aborted: false
            })
        );
        assert_eq!(
            &out[..],
            b"+OK\r\n$3\r\n333\r\n*2\r\n$1\r\n1\r\n$-1\r\n$2\r\n22\r\n"
        );
        assert_eq!(&rx1.try_recv().unwrap().0[..], b"*2\r\n$2\r\n22\r\n_\r\n");
        assert_eq!(&rx2.try_recv().unwrap().0[..], b"$-1\r\n");
        use std::sync::atomic::Ordering::Relaxed;
        assert_eq!(stats.batches.load(Relaxed), 1);
        assert_eq!(stats.batched_keys.load(Relaxed), 7);
        assert_eq!(stats.hits.load(Relaxed), 4);
        assert_eq!(stats.misses.load(Relaxed), 3);
    }

    /// Collection reads of two jobs share the two `multi_get`s of their
    /// batch (metadata, then strings and elements), each reply encoded in
    /// its command's place: a live hash, set and sorted set, a missing
    /// key, a key of the wrong type, an expired collection.
    #[test]
    fn collection_reads_of_several_jobs_share_two_multi_gets() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let put_coll =
            |key: &str, kind: Kind, version: u64, expire: Option<u64>, elems: &[(&str, &[u8])]| {
                let k = keyspace::db_key(0, key.as_bytes());
                let mut m = Meta::new(kind, version);
                m.size = elems.len() as u64;
                m.expire_at = expire;
                db.put(&k, m.encode()).unwrap();
                for (sub, v) in elems {
                    db.put(meta::element_key(&k, version, sub.as_bytes()), v)
                        .unwrap();
                }
            };
        put_coll("h", Kind::Hash, 7, None, &[("f", b"v"), ("g", b"ww")]);
        put_coll("s", Kind::Set, 8, None, &[("x", b"")]);
        put_coll("z", Kind::ZSet, 9, None, &[("x", &2.5f64.to_le_bytes())]);
        put_coll("old", Kind::Hash, 10, Some(1), &[("f", b"v")]);
        let (head, tail) = (meta::LIST_MIDDLE - 1, meta::LIST_MIDDLE + 1);
        let list_key = keyspace::db_key(0, b"l");
        let mut list = Meta::new(Kind::List, 11);
        (list.head, list.tail, list.size) = (head, tail, 2);
        db.put(&list_key, list.encode()).unwrap();
        for (i, v) in [(head, "x"), (head + 1, "y")] {
            db.put(meta::element_key(&list_key, 11, &i.to_be_bytes()), v)
                .unwrap();
        }
        // A list whose second element is missing (corrupt).
        let bad_key = keyspace::db_key(0, b"bad");
        let mut bad = Meta::new(Kind::List, 12);
        (bad.head, bad.tail, bad.size) = (head, tail, 2);
        db.put(&bad_key, bad.encode()).unwrap();
        db.put(meta::element_key(&bad_key, 12, &head.to_be_bytes()), "x")
            .unwrap();
        db.put(
            keyspace::db_key(0, b"str"),
            keyspace::encode_value(b"S", None),
        )
        .unwrap();
        let stats = Arc::new(Stats::default());
        let batcher = Batcher::new(db, 1, stats.clone(), Timing::Off);
        let lrange = |start, end| Shape::LRange { start, end };
        let request = |cmds: &[(Shape, &[&str])], proto: u8| {
            let mut keys = Keys::default();
            for (shape, args) in cmds {
                keys.push_args(0, *shape, args);
            }
            Request {
                keys,
                shapes: cmds.iter().map(|c| c.0).collect(),
                proto,
                limits: ReplyLimits::NONE,
            }
        };
        let own = request(
            &[
                (Shape::HMget(3), &["h", "g", "nope", "f"]),
                (Shape::Get, &["str"]),
                (Shape::SIsMember, &["s", "x"]),
                (Shape::ZMScore(2), &["z", "x", "y"]),
                (Shape::HGet, &["str", "f"]),
                (Shape::SMIsMember(2), &["missing", "x", "y"]),
                (Shape::HGet, &["old", "f"]),
                (lrange(0, 9), &["l"]),
                (lrange(-1, -1), &["l"]),
                (lrange(5, 9), &["l"]),
                (lrange(0, 1), &["missing"]),
                (lrange(0, 1), &["h"]),
                (lrange(0, 1), &["bad"]),
                (lrange(1, 0), &["l"]),
            ],
            2,
        );
        let (tx, mut rx) = oneshot::channel();
        let theirs = Job {
            req: request(
                &[
                    (Shape::ZScore, &["z", "x"]),
                    (Shape::HMget(1), &["missing", "f"]),
                    (Shape::SMIsMember(2), &["h", "x", "y"]),
                    (Shape::Card(Kind::Hash), &["h"]),
                    (Shape::HExists, &["h", "f"]),
                    (Shape::HStrLen, &["h", "g"]),
                    (Shape::HStrLen, &["h", "nope"]),
                    (Shape::Card(Kind::List), &["l"]),
                    (Shape::Card(Kind::Set), &["missing"]),
                    (Shape::Card(Kind::ZSet), &["s"]),
                    (Shape::HExists, &["old", "f"]),
                    (Shape::LIndex, &["l", "-1"]),
                    (Shape::LIndex, &["l", "0"]),
                    (Shape::LIndex, &["l", "2"]),
                    (Shape::LIndex, &["l", "x"]),
                    (Shape::LIndex, &["missing", "x"]),
                    (Shape::LIndex, &["h", "0"]),
                ],
                3,
            ),
            tx,
        };
        let mut out = BytesMut::new();
        batcher.exec().execute(Some((&own, &mut out)), vec![theirs]);
        let wrongtype = format!("-{}\r\n", errors::WRONGTYPE);
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!(
                "*3\r\n$2\r\nww\r\n$-1\r\n$1\r\nv\r\n$1\r\nS\r\n:1\r\n\
                 *2\r\n$3\r\n2.5\r\n$-1\r\n{wrongtype}*2\r\n:0\r\n:0\r\n$-1\r\n\
                 *2\r\n$1\r\nx\r\n$1\r\ny\r\n*1\r\n$1\r\ny\r\n*0\r\n*0\r\n\
                 {wrongtype}-{}\r\n*0\r\n",
                lists::ELEMENT_MISSING
            )
        );
        assert_eq!(
            String::from_utf8_lossy(&rx.try_recv().unwrap().0),
            format!(
                ",2.5\r\n*1\r\n_\r\n{wrongtype}:2\r\n:1\r\n:2\r\n:0\r\n\
                 :2\r\n:0\r\n{wrongtype}:0\r\n\
                 $1\r\ny\r\n$1\r\nx\r\n_\r\n-{}\r\n_\r\n{wrongtype}",
                errors::NOT_INTEGER
            )
        );
        use std::sync::atomic::Ordering::Relaxed;
        // Metadata of 30 collection reads, then 1 string key and the 17
        // fields of the 12 live collections of the right kind that have
        // fields to read (the list's size is all its LLEN reads; LINDEX
        // reads only an index inside the list, LRANGE the elements of its
        // span).
        assert_eq!(stats.batches.load(Relaxed), 2);
        assert_eq!(stats.batched_keys.load(Relaxed), 30 + 18);
    }

    /// A job stops answering at the command where its reply reached
    /// `split_at` (the first command always answered, even when larger),
    /// and stops encoding altogether past `abort_at`.
    #[test]
    fn a_jobs_reply_is_cut_at_a_command_boundary_or_aborted() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let big = vec![b'x'; 1000];
        db.put(
            keyspace::db_key(0, b"big"),
            keyspace::encode_value(&big, None),
        )
        .unwrap();
        db.put(
            keyspace::db_key(0, b"s"),
            keyspace::encode_value(b"1", None),
        )
        .unwrap();
        let batcher = Batcher::new(db, 1, Arc::new(Stats::default()), Timing::Off);
        let bulk = format!("$1000\r\n{}\r\n", "x".repeat(1000));
        let run = |names: &[&str], shapes: Vec<Shape>, limits: ReplyLimits| {
            let req = Request {
                keys: keys(0, names),
                shapes,
                proto: 2,
                limits,
            };
            // Output already pending does not count against the limits.
            let mut out = BytesMut::from(&b"+OK\r\n"[..]);
            let a = batcher
                .exec()
                .execute(Some((&req, &mut out)), Vec::new())
                .unwrap();
            (a, String::from_utf8(out[5..].to_vec()).unwrap())
        };
        let split = ReplyLimits {
            split_at: 500,
            abort_at: usize::MAX,
        };
        let gets = vec![Shape::Get; 3];
        let (a, out) = run(&["big", "big", "s"], gets.clone(), split);
        assert_eq!((a.commands, a.keys, a.aborted), (1, 1, false));
        assert_eq!(out, bulk);
        let (a, out) = run(&["s", "s", "big", "s"], vec![Shape::Get; 4], split);
        assert_eq!((a.commands, a.keys), (3, 3));
        assert_eq!(out, format!("$1\r\n1\r\n$1\r\n1\r\n{bulk}"));
        // An MGET is answered whole or not at all.
        let (a, out) = run(
            &["s", "big", "big", "s"],
            vec![Shape::Get, Shape::Mget(3)],
            split,
        );
        assert_eq!((a.commands, a.keys), (2, 4));
        assert!(out.starts_with("$1\r\n1\r\n*3\r\n") && out.ends_with("$1\r\n1\r\n"));
        let abort = ReplyLimits {
            split_at: usize::MAX,
            abort_at: 1500,
        };
        let (a, out) = run(&["big", "big", "big"], vec![Shape::Mget(3)], abort);
        assert_eq!((a.commands, a.aborted), (0, true));
        assert_eq!(
            out.len(),
            4 + 2 * bulk.len(),
            "stopped after the key that crossed"
        );
        let (a, _) = run(&["big", "big", "s"], gets, ReplyLimits::NONE);
        assert_eq!((a.commands, a.keys, a.aborted), (3, 3, false));
    }

    /// Collection reads are cut like string reads, at a command boundary
    /// in command order (whatever phase read their values), and count
    /// their key and fields as answered entries, as [`Keys::push_args`]
    /// stores them; a cut job's string and element values are skipped
    /// and its later replies without values (a missing key) not encoded.
    #[test]
    fn collection_reads_are_cut_at_a_command_boundary_or_aborted() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let big = vec![b'x'; 1000];
        let hash = keyspace::db_key(0, b"h");
        let mut m = Meta::new(Kind::Hash, 3);
        m.size = 2;
        db.put(&hash, m.encode()).unwrap();
        db.put(meta::element_key(&hash, 3, b"big"), &big).unwrap();
        db.put(meta::element_key(&hash, 3, b"s"), b"1").unwrap();
        let set = keyspace::db_key(0, b"st");
        let mut m = Meta::new(Kind::Set, 4);
        m.size = 1;
        db.put(&set, m.encode()).unwrap();
        db.put(meta::element_key(&set, 4, b"x"), b"").unwrap();
        db.put(
            keyspace::db_key(0, b"str"),
            keyspace::encode_value(b"S", None),
        )
        .unwrap();
        let batcher = Batcher::new(db, 1, Arc::new(Stats::default()), Timing::Off);
        let bulk = format!("$1000\r\n{}\r\n", "x".repeat(1000));
        let run = |cmds: &[(Shape, &[&str])], limits: ReplyLimits| {
            let mut keys = Keys::default();
            for (shape, args) in cmds {
                keys.push_args(0, *shape, args);
            }
            let req = Request {
                keys,
                shapes: cmds.iter().map(|c| c.0).collect(),
                proto: 2,
                limits,
            };
            let mut out = BytesMut::from(&b"+OK\r\n"[..]);
            let a = batcher
                .exec()
                .execute(Some((&req, &mut out)), Vec::new())
                .unwrap();
            (a, String::from_utf8(out[5..].to_vec()).unwrap())
        };
        let split = ReplyLimits {
            split_at: 500,
            abort_at: usize::MAX,
        };
        // The first command is answered however large; nothing after it.
        let (a, out) = run(
            &[
                (Shape::HGet, &["h", "big"]),
                (Shape::SIsMember, &["st", "x"]),
                (Shape::Get, &["str"]),
                (Shape::HMget(2), &["missing", "a", "b"]),
            ],
            split,
        );
        assert_eq!((a.commands, a.keys, a.aborted), (1, 2, false));
        assert_eq!(out, bulk);
        // An HMGET that begins under the split point is answered whole.
        let (a, out) = run(
            &[
                (Shape::SIsMember, &["st", "x"]),
                (Shape::Get, &["str"]),
                (Shape::HMget(2), &["h", "big", "s"]),
                (Shape::HGet, &["h", "s"]),
                (Shape::SMIsMember(1), &["missing", "x"]),
            ],
            split,
        );
        assert_eq!((a.commands, a.keys, a.aborted), (3, 2 + 1 + 3, false));
        assert_eq!(out, format!(":1\r\n$1\r\nS\r\n*2\r\n{bulk}$1\r\n1\r\n"));
        // Past the hard limit, encoding stops inside the command.
        let abort = ReplyLimits {
            split_at: usize::MAX,
            abort_at: 1500,
        };
        let (a, out) = run(
            &[
                (Shape::Get, &["str"]),
                (Shape::HMget(3), &["h", "big", "big", "big"]),
                (Shape::HGet, &["h", "s"]),
            ],
            abort,
        );
        assert_eq!((a.commands, a.aborted), (1, true));
        assert_eq!(out.len(), 7 + 4 + 2 * bulk.len());
        let (a, _) = run(
            &[
                (Shape::HMget(3), &["h", "big", "big", "big"]),
                (Shape::ZScore, &["missing", "m"]),
            ],
            ReplyLimits::NONE,
        );
        assert_eq!((a.commands, a.keys, a.aborted), (2, 6, false));
    }

    #[test]
    fn take_jobs_counts_the_leaders_own_keys_against_the_batch_limit() {
        let job = |n: usize| {
            let mut k = Keys::default();
            for i in 0..n {
                k.push(0, &i.to_le_bytes());
            }
            let (tx, _rx) = oneshot::channel();
            Job {
                req: Request {
                    keys: k,
                    shapes: vec![Shape::Mget(n)],
                    proto: 2,
                    limits: ReplyLimits::NONE,
                },
                tx,
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let b = Batcher::new(db, 1, Arc::new(Stats::default()), Timing::Off);
        let mut q = vec![job(1000), job(1000), job(3000)];
        // A leader with 2,500 keys of its own takes one 1,000-key job.
        assert_eq!(b.take_jobs(&mut q, 2500).len(), 1);
        // With none of its own, at least one job even when it is large.
        let mut q = vec![job(5000), job(10)];
        assert_eq!(b.take_jobs(&mut q, 0).len(), 1);
        // An own job over the limit takes nothing else.
        assert_eq!(b.take_jobs(&mut q, 5000).len(), 0);
        assert_eq!(q.len(), 1);
    }

    /// A database holding `k{c}-{i}` = `v{c}-{i}` for `conns` connections
    /// of `per_conn` keys each.
    fn db_with_conn_keys(dir: &std::path::Path, conns: usize, per_conn: usize) -> Db {
        let db = Db::open(dir, Options::default()).unwrap();
        for c in 0..conns {
            for i in 0..per_conn {
                db.put(
                    keyspace::db_key(0, format!("k{c}-{i}").as_bytes()),
                    keyspace::encode_value(format!("v{c}-{i}").as_bytes(), None),
                )
                .unwrap();
            }
        }
        db
    }

    /// Connection `c`'s job `round`: GETs and an MGET of its own keys
    /// (and one absent key), with the replies they must get.
    fn conn_job(c: usize, round: usize, per_conn: usize) -> (Keys, Vec<Shape>, Vec<u8>) {
        let (mut keys, mut shapes, mut want) = (Keys::default(), Vec::new(), Vec::new());
        let name = |i: usize| format!("k{c}-{}", (round + i) % per_conn);
        let bulk = |i: usize| {
            let v = format!("v{c}-{}", (round + i) % per_conn);
            format!("${}\r\n{v}\r\n", v.len()).into_bytes()
        };
        for i in 0..1 + round % 3 {
            keys.push(0, name(i).as_bytes());
            shapes.push(Shape::Get);
            want.extend(bulk(i));
        }
        keys.push(0, name(7).as_bytes());
        keys.push(0, format!("absent{c}").as_bytes());
        shapes.push(Shape::Mget(2));
        want.extend(b"*2\r\n");
        want.extend(bulk(7));
        want.extend(b"$-1\r\n");
        (keys, shapes, want)
    }

    /// Connection `c`'s MGET of [`GATHER_BELOW_KEYS`] of its keys, with
    /// its reply.
    fn big_job(c: usize, per_conn: usize) -> (Keys, Vec<Shape>, Vec<u8>) {
        let (mut keys, mut want) = (Keys::default(), Vec::new());
        want.extend(format!("*{GATHER_BELOW_KEYS}\r\n").into_bytes());
        for i in 0..GATHER_BELOW_KEYS {
            keys.push(0, format!("k{c}-{}", i % per_conn).as_bytes());
            let v = format!("v{c}-{}", i % per_conn);
            want.extend(format!("${}\r\n{v}\r\n", v.len()).into_bytes());
        }
        (keys, vec![Shape::Mget(GATHER_BELOW_KEYS)], want)
    }

    /// Submits one job per connection (`big`: a [`big_job`], else a
    /// [`conn_job`]) from concurrent tasks on a one-thread runtime;
    /// returns the batcher's `(batches, keys)`.
    fn submit_from_conns(conns: usize, combine: bool, big: bool) -> (u64, u64) {
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_conn_keys(dir.path(), conns, 10);
        let stats = Arc::new(Stats::default());
        let batcher = Arc::new(Batcher::new(db, 2, stats.clone(), Timing::Off));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        submit_on(&rt, &batcher, conns, combine, big);
        use std::sync::atomic::Ordering::Relaxed;
        (
            stats.batches.load(Relaxed),
            stats.batched_keys.load(Relaxed),
        )
    }

    /// Submits one job per connection (`big`: a [`big_job`], else a
    /// [`conn_job`]) from concurrent tasks on `rt`; each must get exactly
    /// its replies, and the batcher ends idle.
    fn submit_on(
        rt: &tokio::runtime::Runtime,
        batcher: &Arc<Batcher>,
        conns: usize,
        combine: bool,
        big: bool,
    ) {
        rt.block_on(async {
            let tasks: Vec<_> = (0..conns)
                .map(|c| {
                    let b = batcher.clone();
                    tokio::spawn(async move {
                        let (keys, shapes, want) = if big {
                            big_job(c, 10)
                        } else {
                            conn_job(c, 0, 10)
                        };
                        let mut out = BytesMut::new();
                        b.submit_reads(keys, shapes, 2, combine, ReplyLimits::NONE, &mut out)
                            .await;
                        assert_eq!(&out[..], &want[..], "connection {c}");
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(batcher.state(), idle());
    }

    /// With [`Timing::HandOff`], a batch expected to be long runs in
    /// `block_in_place` (forced here by a huge recent time per key) on a
    /// one-worker runtime, as under `--runtime adaptive`: every job still
    /// gets exactly its replies, and the average is re-measured.
    /// (`--runtime pinned`.)
    #[test]
    fn long_batches_handed_off_answer_every_job() {
        let dir = tempfile::tempdir().unwrap();
        let conns = 6;
        let db = db_with_conn_keys(dir.path(), conns, 10);
        let batcher = Arc::new(Batcher::new(
            db,
            1,
            Arc::new(Stats::default()),
            Timing::HandOff,
        ));
        let per_key = &batcher.exec().ns_per_key;
        per_key.store(u64::MAX / 4, Ordering::Relaxed);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        submit_on(&rt, &batcher, conns, true, true);
        assert!(
            per_key.load(Ordering::Relaxed) < u64::MAX / 4,
            "re-measured"
        );
    }

    /// The leader's yield lets the other ready connections queue their
    /// jobs: eight connections' jobs are served by one `multi_get`, each
    /// getting exactly its own replies. Without the yield (a lone client),
    /// each job is a `multi_get` of its own.
    #[test]
    fn jobs_of_concurrent_connections_share_one_multi_get() {
        // Each job: one GET and an MGET of two keys.
        assert_eq!(submit_from_conns(8, true, false), (1, 24));
        assert_eq!(submit_from_conns(8, false, false), (8, 24));
    }

    /// A job that is already a batch (an MGET of 64 keys or more) is run
    /// at once: its leader does not yield to gather others.
    #[test]
    fn large_jobs_are_not_held_back_to_gather_others() {
        let n = GATHER_BELOW_KEYS as u64;
        assert_eq!(submit_from_conns(4, true, true), (4, 4 * n));
    }

    /// Many connections submitting in loops on a two-worker runtime: every
    /// submitter gets exactly its replies, in order, the batcher ends idle,
    /// and jobs were combined (fewer batches than jobs; how many fewer is
    /// measured by `scripts/redis-bench.sh`, not asserted here).
    #[test]
    fn concurrent_submitters_get_their_own_replies_in_order() {
        const CONNS: usize = 16;
        const ROUNDS: usize = 200;
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_conn_keys(dir.path(), CONNS, 10);
        let stats = Arc::new(Stats::default());
        let batcher = Arc::new(Batcher::new(db, 2, stats.clone(), Timing::Off));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        rt.block_on(async {
            let tasks: Vec<_> = (0..CONNS)
                .map(|c| {
                    let b = batcher.clone();
                    tokio::spawn(async move {
                        // A connection's buffer keeps earlier replies.
                        let mut out = BytesMut::new();
                        let mut want = Vec::new();
                        for round in 0..ROUNDS {
                            let (keys, shapes, w) = conn_job(c, round, 10);
                            want.extend(w);
                            b.submit_reads(keys, shapes, 2, true, ReplyLimits::NONE, &mut out)
                                .await;
                        }
                        assert!(out[..] == want[..], "connection {c}");
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(batcher.state(), idle());
        use std::sync::atomic::Ordering::Relaxed;
        let batches = stats.batches.load(Relaxed);
        let jobs = (CONNS * ROUNDS) as u64;
        // How much is combined depends on scheduling (a busy machine
        // combines less: 1,671 batches for 3,200 jobs was seen); that some
        // jobs were combined does not.
        assert!(batches < jobs, "{batches} batches for {jobs} jobs");
    }

    /// A gathering leader cancelled during its yield (a connection aborted
    /// at shutdown) still serves the jobs queued for it, and leaves.
    #[test]
    fn a_cancelled_gathering_leader_serves_the_queue() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_conn_keys(dir.path(), 2, 10);
        let stats = Arc::new(Stats::default());
        let batcher = Arc::new(Batcher::new(db, 2, stats.clone(), Timing::Off));
        let mut own = BytesMut::new();
        let (keys, shapes, _) = conn_job(0, 0, 10);
        let mut lead =
            Box::pin(batcher.submit_reads(keys, shapes, 2, true, ReplyLimits::NONE, &mut own));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(lead.as_mut().poll(&mut cx), Poll::Pending));
        assert_eq!(batcher.state().gatherers, [0]);
        // Another connection's job, queued while the leader yields.
        let (keys, shapes, want) = conn_job(1, 0, 10);
        let mut theirs = BytesMut::new();
        let mut follow =
            Box::pin(batcher.submit_reads(keys, shapes, 2, true, ReplyLimits::NONE, &mut theirs));
        assert!(matches!(follow.as_mut().poll(&mut cx), Poll::Pending));
        assert_eq!(batcher.state().gatherers, [1]);
        drop(lead);
        assert!(matches!(follow.as_mut().poll(&mut cx), Poll::Ready(a) if a.commands == 2));
        drop(follow);
        assert_eq!(&theirs[..], &want[..]);
        assert!(own.is_empty());
        assert_eq!(batcher.state(), idle());
    }
}
