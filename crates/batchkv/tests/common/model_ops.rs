//! The operations of the model test (`tests/model.rs`) and their generation
//! from a seed: the key universe, value descriptions, the per-open options,
//! and the weighted operation mix.
//!
//! Everything here is plain data generated up front, so a run is a pure
//! function of its seed (except for background-compaction timing) and an
//! operation list can be shrunk by dropping operations.

use std::fmt;

use batchkv::BatchLookup;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

/// Bytes shown escaped (`"k5\x00"`), so a report can be pasted into code.
pub struct Bytes<'a>(pub &'a [u8]);

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() <= 48 {
            write!(f, "\"{}\"", self.0.escape_ascii())
        } else {
            write!(
                f,
                "\"{}\"…({} bytes)",
                self.0[..40].escape_ascii(),
                self.0.len()
            )
        }
    }
}

/// A short description of a value: its length and the head, which names
/// the step that wrote it (`v<tag>|`).
pub fn describe(v: Option<&[u8]>) -> String {
    match v {
        None => "None".into(),
        Some(v) if v.len() <= 24 => format!("Some({:?})", Bytes(v)),
        Some(v) => format!("Some(len={} {:?}…)", v.len(), Bytes(&v[..16])),
    }
}

/// A value, described instead of stored: `v<tag>|` then filler up to `len`.
/// The tag is the generating step, so a wrong value read back names the
/// write it came from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Val {
    pub tag: u32,
    pub len: u32,
    /// Incompressible random filler instead of a repeated letter.
    pub random: bool,
}

impl Val {
    pub fn bytes(&self) -> Vec<u8> {
        if self.len == 0 {
            return Vec::new();
        }
        let mut v = format!("v{}|", self.tag).into_bytes();
        let len = (self.len as usize).max(v.len());
        if self.random {
            let mut rng = StdRng::seed_from_u64(0x5eed_0000_0000 ^ self.tag as u64);
            while v.len() < len {
                v.push(rng.random());
            }
        } else {
            v.resize(len, b'a' + (self.tag % 26) as u8);
        }
        v
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.random { "rnd" } else { "fill" };
        write!(f, "val(v{}, {} bytes {kind})", self.tag, self.len)
    }
}

/// What a read looks at: the latest state, or a live snapshot (index taken
/// modulo the live count; the latest state if none is live).
#[derive(Clone, Copy, Debug)]
pub enum View {
    Latest,
    Snapshot(usize),
}

/// One step of an iterator.
#[derive(Clone)]
pub enum Move {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
    /// Skipped when the iterator is not valid.
    Next,
    /// Skipped when the iterator is not valid.
    Prev,
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::First => write!(f, "first"),
            Move::Last => write!(f, "last"),
            Move::Seek(k) => write!(f, "seek({:?})", Bytes(k)),
            Move::SeekForPrev(k) => write!(f, "seek_for_prev({:?})", Bytes(k)),
            Move::Next => write!(f, "next"),
            Move::Prev => write!(f, "prev"),
        }
    }
}

/// One entry of a `WriteBatch` op, after its key (the range's begin for
/// `DeleteRange`).
#[derive(Clone)]
pub enum Entry {
    Put(Val),
    Delete,
    /// `delete_range(key, end)`.
    DeleteRange(Vec<u8>),
    /// `merge(key, operand)` (the model's operator appends with ",").
    Merge(Val),
}

/// One operation of a run.
#[derive(Clone)]
pub enum Op {
    Put {
        key: Vec<u8>,
        val: Val,
    },
    Delete {
        key: Vec<u8>,
    },
    /// `merge(key, operand)` (the model's operator appends with ",").
    Merge {
        key: Vec<u8>,
        val: Val,
    },
    /// `delete_range(begin, end)` (begin ≤ end).
    DeleteRange {
        begin: Vec<u8>,
        end: Vec<u8>,
    },
    /// A `WriteBatch`. May name one key several times.
    Write {
        entries: Vec<(Vec<u8>, Entry)>,
        sync: bool,
        disable_wal: bool,
    },
    Get {
        view: View,
        key: Vec<u8>,
    },
    /// Through `multi_get`, or `multi_get_with` if `callback`.
    MultiGet {
        view: View,
        keys: Vec<Vec<u8>>,
        lookup: Option<BatchLookup>,
        callback: bool,
        cold: bool,
    },
    /// Opens an iterator, runs `moves`, and keeps it alive (for later
    /// `IterMoves`, while writes go on) if `keep`.
    Scan {
        view: View,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        moves: Vec<Move>,
        keep: bool,
        cold: bool,
    },
    /// More moves on a kept iterator (index modulo the live count).
    IterMoves {
        which: usize,
        moves: Vec<Move>,
    },
    TakeSnapshot,
    ReleaseSnapshot(usize),
    Flush,
    CompactRange(Option<Vec<u8>>, Option<Vec<u8>>),
    /// Gives the background threads time to flush and compact.
    Pause {
        millis: u64,
    },
    /// Full comparison: forward and backward scans, `multi_get` of every key.
    CheckAll {
        view: View,
    },
    /// `close` then `open` with these options (an option string).
    Reopen {
        options: String,
    },
}

/// Cold reads neither fill the block cache nor verify checksums.
fn cold_str(cold: bool) -> &'static str {
    if cold {
        " (fill_cache=false, verify_checksums=false)"
    } else {
        ""
    }
}

/// Choices derived from the step rather than drawn from the generator, so
/// that adding them left the operations of every earlier seed unchanged.
fn coin(tag: u32, bit: u32) -> bool {
    (tag.wrapping_mul(0x9e37_79b9) >> bit) & 1 == 1
}

fn opt_bytes(k: &Option<Vec<u8>>) -> String {
    match k {
        None => "None".into(),
        Some(k) => format!("{:?}", Bytes(k)),
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Put { key, val } => write!(f, "put {:?} = {val:?}", Bytes(key)),
            Op::Delete { key } => write!(f, "delete {:?}", Bytes(key)),
            Op::Merge { key, val } => write!(f, "merge {:?} += {val:?}", Bytes(key)),
            Op::DeleteRange { begin, end } => {
                write!(f, "delete_range {:?}..{:?}", Bytes(begin), Bytes(end))
            }
            Op::Write {
                entries,
                sync,
                disable_wal,
            } => {
                write!(f, "write(sync={sync}, disable_wal={disable_wal}) [")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    match v {
                        Entry::Put(v) => write!(f, "{sep}put {:?} = {v:?}", Bytes(k))?,
                        Entry::Delete => write!(f, "{sep}delete {:?}", Bytes(k))?,
                        Entry::DeleteRange(e) => {
                            write!(f, "{sep}delete_range {:?}..{:?}", Bytes(k), Bytes(e))?
                        }
                        Entry::Merge(v) => write!(f, "{sep}merge {:?} += {v:?}", Bytes(k))?,
                    }
                }
                write!(f, "]")
            }
            Op::Get { view, key } => write!(f, "get {view:?} {:?}", Bytes(key)),
            Op::MultiGet {
                view,
                keys,
                lookup,
                callback,
                cold,
            } => {
                let keys: Vec<Bytes> = keys.iter().map(|k| Bytes(k)).collect();
                let name = if *callback {
                    "multi_get_with"
                } else {
                    "multi_get"
                };
                write!(
                    f,
                    "{name} {view:?} lookup={lookup:?}{} {keys:?}",
                    cold_str(*cold)
                )
            }
            Op::Scan {
                view,
                lower,
                upper,
                moves,
                keep,
                cold,
            } => write!(
                f,
                "scan {view:?} [{}, {}) keep={keep}{} {moves:?}",
                opt_bytes(lower),
                opt_bytes(upper),
                cold_str(*cold)
            ),
            Op::IterMoves { which, moves } => write!(f, "iter#{which} {moves:?}"),
            Op::TakeSnapshot => write!(f, "take_snapshot"),
            Op::ReleaseSnapshot(i) => write!(f, "release_snapshot #{i}"),
            Op::Flush => write!(f, "flush"),
            Op::CompactRange(a, b) => {
                write!(f, "compact_range({}, {})", opt_bytes(a), opt_bytes(b))
            }
            Op::Pause { millis } => write!(f, "pause {millis} ms"),
            Op::CheckAll { view } => write!(f, "check_all {view:?}"),
            Op::Reopen { options } => write!(f, "reopen {options:?}"),
        }
    }
}

/// Random options for one open, as an option string (`Options::from_str`),
/// so a report can name them exactly.
pub fn random_options(rng: &mut StdRng) -> String {
    let pick = |rng: &mut StdRng, xs: &[u64]| *xs.choose(rng).unwrap();
    // Tiny buffers and levels so that a short run flushes and compacts a lot
    // (4096 is the smallest write buffer the engine accepts).
    let write_buffer = pick(rng, &[4096, 8192, 16 << 10, 32 << 10, 64 << 10, 1 << 20]);
    let memtable = match rng.random_range(0..3) {
        0 => "skiplist".to_string(),
        1 => "vector".to_string(),
        _ => {
            // The bucket array (8 bytes a bucket) must stay below the buffer.
            let buckets = rng.random_range(1..(write_buffer / 16).min(4096));
            format!("sorted_hash:{buckets}:{}", rng.random_range(1..512))
        }
    };
    let trigger = rng.random_range(1..=4u64);
    let slowdown = trigger + rng.random_range(2..=12u64);
    let stop = slowdown + rng.random_range(0..=12u64);
    let compression = match rng.random_range(0..3) {
        0 => "none".to_string(),
        1 => "lz4".to_string(),
        // Same draws without the zstd feature, so seeds still replay.
        _ if cfg!(not(feature = "zstd")) => "lz4".to_string(),
        _ => format!("zstd;compression_level={}", rng.random_range(1..=5)),
    };
    let lookup = ["per_key", "finger", "bfs", "auto"].choose(rng).unwrap();
    let mut s = vec![
        format!("memtable={memtable}"),
        format!("write_buffer_size={write_buffer}"),
        format!("max_write_buffer_number={}", rng.random_range(2..=4)),
        format!("compression={compression}"),
        format!("separate_key_value_in_data_block={}", rng.random_bool(0.5)),
        format!(
            "max_bytes_for_level_base={}",
            pick(rng, &[4096, 8192, 16 << 10, 64 << 10])
        ),
        format!(
            "max_bytes_for_level_multiplier={}",
            ["1.5", "2", "3", "4", "10"].choose(rng).unwrap()
        ),
        format!(
            "target_file_size_base={}",
            pick(rng, &[4096, 8192, 16 << 10, 64 << 10])
        ),
        format!("level0_file_num_compaction_trigger={trigger}"),
        format!("level0_slowdown_writes_trigger={slowdown}"),
        format!("level0_stop_writes_trigger={stop}"),
        format!("block_size={}", pick(rng, &[64, 256, 1024, 4096])),
        format!("block_restart_interval={}", pick(rng, &[1, 2, 4, 16, 32])),
        format!("bloom_bits_per_key={}", pick(rng, &[0, 1, 5, 10, 20])),
        format!("max_background_jobs={}", rng.random_range(2..=4)),
        format!("paranoid_memory_checks={}", rng.random_bool(0.5)),
        format!("verify_checksums={}", rng.random_bool(0.7)),
        format!("batch_lookup={lookup}"),
        format!("hash_pipeline_window={}", pick(rng, &[1, 3, 8, 24])),
        format!(
            "block_cache_size={}",
            pick(rng, &[0, 16 << 10, 1 << 20, 32 << 20])
        ),
        // -1: no limit, every table's reader pinned in its file metadata.
        match pick(rng, &[2, 5, 1000, 0]) {
            0 => "max_open_files=-1".to_string(),
            n => format!("max_open_files={n}"),
        },
        format!("memtable_point_index={}", rng.random_bool(0.5)),
        "memtable_huge_pages=false".to_string(),
    ];
    if rng.random_bool(0.1) {
        s.push("disable_auto_compactions=true".into());
    }
    s.join(";")
}

/// The keys of one run: 50–500 of them, of several shapes (shared prefixes,
/// binary bytes, the empty key, long keys).
pub fn key_universe(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let n = rng.random_range(50..=500usize);
    let mut keys = std::collections::BTreeSet::new();
    keys.insert(vec![0x00]);
    keys.insert(vec![0xff, 0xff]);
    if rng.random_bool(0.5) {
        keys.insert(Vec::new());
    }
    while keys.len() < n {
        let i = rng.random_range(0..n);
        let k = match rng.random_range(0..10) {
            // k1, k10, k100: keys that are prefixes of one another.
            0..=3 => format!("k{i}").into_bytes(),
            4 => format!("user/{i:04}/profile").into_bytes(),
            5 => {
                let mut k = format!("k{i}").into_bytes();
                k.push(0x00);
                k
            }
            6 | 7 => {
                let len = rng.random_range(1..6);
                (0..len)
                    .map(|_| *[0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff].choose(rng).unwrap())
                    .collect()
            }
            8 => {
                let mut k = vec![b'p'; rng.random_range(50..300)];
                k.extend_from_slice(format!("{i}").as_bytes());
                k
            }
            _ => format!("z{i:03}").into_bytes(),
        };
        keys.insert(k);
    }
    keys.into_iter().collect()
}

/// Relative weights of the operations; varied per seed so that different
/// seeds stress different paths.
struct Mix {
    put: u32,
    delete: u32,
    write: u32,
    get: u32,
    multi_get: u32,
    scan: u32,
    iter_moves: u32,
    take_snapshot: u32,
    release_snapshot: u32,
    flush: u32,
    compact: u32,
    pause: u32,
    check_all: u32,
    reopen: u32,
}

impl Mix {
    fn random(rng: &mut StdRng) -> Mix {
        let mut w = |lo: u32, hi: u32| rng.random_range(lo..=hi);
        Mix {
            put: w(20, 60),
            delete: w(5, 30),
            write: w(5, 20),
            get: w(5, 20),
            multi_get: w(3, 10),
            scan: w(2, 8),
            iter_moves: w(0, 4),
            take_snapshot: w(0, 3),
            release_snapshot: w(0, 3),
            flush: w(1, 5),
            compact: w(1, 8),
            pause: w(0, 2),
            check_all: w(0, 2),
            reopen: w(0, 2),
        }
    }
}

/// Generates the operations of one run.
pub struct Generator {
    rng: StdRng,
    keys: Vec<Vec<u8>>,
    /// A small subset of `keys` written and deleted more often.
    hot: Vec<Vec<u8>>,
    mix: Mix,
    /// Probability that a value is large (KB) rather than small.
    large: f64,
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        let mut rng = StdRng::seed_from_u64(seed);
        let keys = key_universe(&mut rng);
        let n_hot = rng.random_range(3..12);
        let hot: Vec<Vec<u8>> = keys.choose_multiple(&mut rng, n_hot).cloned().collect();
        let mix = Mix::random(&mut rng);
        let large = rng.random_range(0.05..0.5);
        Generator {
            rng,
            keys,
            hot,
            mix,
            large,
        }
    }

    pub fn initial_options(&mut self) -> String {
        random_options(&mut self.rng)
    }

    /// `steps` operations.
    pub fn ops(&mut self, steps: usize) -> Vec<Op> {
        (0..steps).map(|i| self.op(i as u32)).collect()
    }

    fn key(&mut self) -> Vec<u8> {
        if self.rng.random_bool(0.3) {
            self.hot.choose(&mut self.rng).unwrap().clone()
        } else {
            self.keys.choose(&mut self.rng).unwrap().clone()
        }
    }

    /// A key to read or seek to: usually from the universe, sometimes next
    /// to one (a byte appended or removed) or arbitrary bytes.
    fn probe(&mut self) -> Vec<u8> {
        let mut k = self.key();
        match self.rng.random_range(0..10) {
            0 => k.push(self.rng.random()),
            1 => {
                k.pop();
            }
            2 => {
                k = (0..self.rng.random_range(0..4))
                    .map(|_| self.rng.random())
                    .collect()
            }
            _ => {}
        }
        k
    }

    fn val(&mut self, tag: u32) -> Val {
        let len = if self.rng.random_bool(self.large) {
            self.rng.random_range(1024..9000)
        } else if self.rng.random_bool(0.05) {
            0
        } else {
            self.rng.random_range(1..200)
        };
        Val {
            tag,
            len,
            random: self.rng.random_bool(0.5),
        }
    }

    fn view(&mut self) -> View {
        if self.rng.random_bool(0.6) {
            View::Latest
        } else {
            View::Snapshot(self.rng.random_range(0..8))
        }
    }

    fn moves(&mut self) -> Vec<Move> {
        let n = self.rng.random_range(1..24);
        (0..n)
            .map(|_| match self.rng.random_range(0..12) {
                0 => Move::First,
                1 => Move::Last,
                2 => Move::Seek(self.probe()),
                3 => Move::SeekForPrev(self.probe()),
                4..=7 => Move::Next,
                _ => Move::Prev,
            })
            .collect()
    }

    /// The end of a range deletion starting at `begin`, derived from the
    /// step (no draw from the generator): a key of the universe 0–63 keys
    /// further on (so sometimes `begin` itself, an empty range), or past
    /// the last key; never before `begin` (a key of the universe).
    fn range_end(&self, begin: &[u8], tag: u32, j: u32) -> Vec<u8> {
        let h = tag.wrapping_mul(0x9e37_79b9) ^ j.wrapping_mul(0x85eb_ca6b);
        let at = self.keys.partition_point(|k| k.as_slice() < begin);
        let span = (h >> 7) as usize % 64;
        match self.keys.get(at + span) {
            Some(k) if !h.is_multiple_of(7) => k.clone(),
            _ => {
                // Just past the largest key of the universe.
                let mut past = self.keys.last().cloned().unwrap_or_default();
                past.push(0);
                past
            }
        }
    }

    fn bound(&mut self) -> Option<Vec<u8>> {
        self.rng.random_bool(0.3).then(|| self.probe())
    }

    fn op(&mut self, tag: u32) -> Op {
        let m = &self.mix;
        let weights = [
            m.put,
            m.delete,
            m.write,
            m.get,
            m.multi_get,
            m.scan,
            m.iter_moves,
            m.take_snapshot,
            m.release_snapshot,
            m.flush,
            m.compact,
            m.pause,
            m.check_all,
            m.reopen,
        ];
        let total: u32 = weights.iter().sum();
        let mut r = self.rng.random_range(0..total);
        let mut which = 0;
        while r >= weights[which] {
            r -= weights[which];
            which += 1;
        }
        match which {
            0 => {
                let key = self.key();
                let val = self.val(tag);
                // A quarter of the puts are merges (derived from the step,
                // so earlier seeds draw the same numbers).
                if coin(tag, 5) && coin(tag, 16) {
                    return Op::Merge { key, val };
                }
                Op::Put { key, val }
            }
            1 => {
                let key = self.key();
                // A quarter of the deletes delete a range from the key on
                // (derived from the step, so earlier seeds' other ops stay
                // as they were).
                if coin(tag, 3) && coin(tag, 9) {
                    let end = self.range_end(&key, tag, 0);
                    return Op::DeleteRange { begin: key, end };
                }
                Op::Delete { key }
            }
            2 => {
                let n = self.rng.random_range(1..20);
                let mut entries: Vec<(Vec<u8>, Entry)> = Vec::new();
                for j in 0..n {
                    // Sometimes the same key again in one batch.
                    let key = match entries.last() {
                        Some((k, _)) if self.rng.random_bool(0.2) => k.clone(),
                        _ => self.key(),
                    };
                    let entry = match self.rng.random_bool(0.6).then(|| self.val(tag)) {
                        Some(v) if coin(tag.wrapping_add(j), 6) && coin(tag, 17) => Entry::Merge(v),
                        Some(v) => Entry::Put(v),
                        None if coin(tag.wrapping_add(j), 4) && coin(tag, 11) => {
                            Entry::DeleteRange(self.range_end(&key, tag, j))
                        }
                        None => Entry::Delete,
                    };
                    entries.push((key, entry));
                }
                Op::Write {
                    entries,
                    sync: self.rng.random_bool(0.1),
                    disable_wal: self.rng.random_bool(0.3),
                }
            }
            3 => Op::Get {
                view: self.view(),
                key: self.probe(),
            },
            4 => {
                // A quarter are of one key: `multi_get` runs those as a
                // point lookup, not through the batch pipeline.
                let n = match self.rng.random_bool(0.25) {
                    true => 1,
                    false => self.rng.random_range(0..40),
                };
                let mut keys: Vec<Vec<u8>> = Vec::new();
                for _ in 0..n {
                    match keys.choose(&mut self.rng) {
                        Some(k) if self.rng.random_bool(0.15) => keys.push(k.clone()),
                        _ => keys.push(self.probe()),
                    }
                }
                let lookup = [
                    None,
                    Some(BatchLookup::PerKey),
                    Some(BatchLookup::Finger),
                    Some(BatchLookup::Bfs),
                    Some(BatchLookup::Auto),
                ];
                Op::MultiGet {
                    view: self.view(),
                    keys,
                    lookup: *lookup.choose(&mut self.rng).unwrap(),
                    callback: coin(tag, 7),
                    cold: coin(tag, 13) && coin(tag, 14),
                }
            }
            5 => Op::Scan {
                view: self.view(),
                lower: self.bound(),
                upper: self.bound(),
                moves: self.moves(),
                keep: self.rng.random_bool(0.3),
                cold: coin(tag, 13) && coin(tag, 14),
            },
            6 => Op::IterMoves {
                which: self.rng.random_range(0..4),
                moves: self.moves(),
            },
            7 => Op::TakeSnapshot,
            8 => Op::ReleaseSnapshot(self.rng.random_range(0..8)),
            9 => Op::Flush,
            10 => {
                // Mostly narrow ranges: they compact a few files into wide
                // next-level files, where bottommost decisions are subtle.
                let a = self.rng.random_bool(0.85).then(|| self.probe());
                let b = match (&a, self.rng.random_range(0..4)) {
                    (Some(a), 0 | 1) => Some(a.clone()),
                    (_, 3) => None,
                    _ => Some(self.probe()),
                };
                Op::CompactRange(a, b)
            }
            11 => Op::Pause {
                millis: self.rng.random_range(1..30),
            },
            12 => Op::CheckAll { view: self.view() },
            _ => Op::Reopen {
                options: random_options(&mut self.rng),
            },
        }
    }
}
