//! [`IndexFences`]: a dense, in-memory summary of an index block for the
//! batched point lookups ([`Table::multi_get_blocks`](crate::sst::Table)).
//!
//! A binary search of the index block itself reads, per probe, a restart
//! slot and then the key it points at: two dependent cache misses scattered
//! over the whole block (hundreds of KiB for a large table), plus the
//! decoding of an entry header. The fences keep, per index entry, eight
//! bytes of its user key — the bytes after the prefix the entries share,
//! big-endian, so that comparing two fences as integers orders them as the
//! keys — in one contiguous array (8 bytes an entry, ~80 KiB for a million
//! keys of 100 bytes), and the entry's block handle, decoded once. A batch
//! of searches ([`IndexFences::seek_batch`]) is a set of branch-free binary
//! searches over integers run in lockstep; only entries whose fence equals
//! the target's are compared in full, in the index block.
//!
//! Keys often differ in two places: a server's collection element key is
//! `collection ‖ version ‖ element`, and a table holds the elements of many
//! collections, so the bytes after the table's shared prefix tell the
//! collections apart but not the dozens of blocks of one collection (its
//! entries share one fence). Each such run of equal fences gets a second
//! level: the run's own shared prefix (longer: it reaches into the
//! element) and, per entry, the fence under it. A search landing in a run
//! goes on by integers there, and compares in full only the entries whose
//! second fence equals the target's.
//!
//! Built when a table is opened, from blocks with restart interval 1 (every
//! entry a restart point: the index blocks this crate writes); any other
//! block, or one that fails to decode, gets none, and the lookups fall back
//! to the block search, which reports the corruption per key.
//!
//! # Invariants
//! 1. `fences.len() == handles.len()` == the number of entries of the block.
//! 2. `fences[i]` is `fence_of(user key of entry i, prefix)`: the
//!    big-endian word of its (up to) 8 bytes after `prefix`, zero-padded,
//!    for the keys that start with `prefix` (all but maybe the first and
//!    last entry), 0 or `u64::MAX` for keys below or above those.
//! 3. `fences` is non-decreasing (checked at build).
//! 4. `runs` lists, in entry order, every maximal range of two or more
//!    entries with equal fences; `run_of[i]` is the index in `runs` of the
//!    run holding entry `i`, [`NO_RUN`] for an entry in none (or
//!    `run_of` is empty when there are no runs). A run's `prefix` is the
//!    common prefix of the user keys of its first and last entry (so of
//!    all its entries, which sort between them), and `subs[i]` is
//!    `fence_of(user key of entry i, run prefix)`, non-decreasing within
//!    the run (`subs` is empty when there are no runs).

use std::cmp::Ordering;

use super::iter::restart_entry;
use super::{Block, KeyOrder, Layout};
use crate::error::Result;
use crate::key::{compare_bytes, compare_internal_keys, user_key};
use crate::prefetch::prefetch_read;
use crate::sst::format::BlockHandle;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct IndexFences {
    prefix: Box<[u8]>,
    fences: Box<[u64]>,
    handles: Box<[BlockHandle]>,
    /// The runs of equal fences (invariant 4).
    runs: Box<[Run]>,
    /// Per entry, its run's index in `runs`, or [`NO_RUN`].
    run_of: Box<[u32]>,
    /// Per entry, its fence under its run's prefix (0 outside runs).
    subs: Box<[u64]>,
    /// The runs' prefixes, one after another.
    run_prefixes: Box<[u8]>,
}

/// `run_of` of an entry whose fence no other entry shares.
const NO_RUN: u32 = u32::MAX;

/// Entries with equal fences, up to `end` (exclusive), and where their
/// shared prefix lies in `run_prefixes`.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u32,
    end: u32,
    prefix_at: u32,
    prefix_len: u32,
}

/// The fence of the user key `key` under the common prefix `prefix`:
/// 0 if `key` sorts below every key starting with `prefix`, `u64::MAX` if
/// above, else the big-endian word of its (up to) 8 bytes after the
/// prefix, zero-padded. Non-decreasing in `key`, and `fence_of(a) <
/// fence_of(b)` implies `a < b`.
#[inline]
fn fence_of(key: &[u8], prefix: &[u8]) -> u64 {
    let head = &key[..prefix.len().min(key.len())];
    match compare_bytes(head, prefix) {
        Ordering::Less => return 0,
        Ordering::Greater => return u64::MAX,
        Ordering::Equal if head.len() < prefix.len() => return 0,
        Ordering::Equal => {}
    }
    let rest = &key[prefix.len()..];
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(word)
}

impl IndexFences {
    /// Bytes held: the shared prefix, 8 per fence and a decoded handle per
    /// index entry.
    pub(crate) fn memory_usage(&self) -> usize {
        self.prefix.len()
            + std::mem::size_of_val(&*self.fences)
            + std::mem::size_of_val(&*self.handles)
            + std::mem::size_of_val(&*self.runs)
            + std::mem::size_of_val(&*self.run_of)
            + std::mem::size_of_val(&*self.subs)
            + self.run_prefixes.len()
    }

    /// The fences of `index`, or `None` if it is not an interleaved block
    /// of internal keys with every entry a restart point holding a well-formed
    /// block handle in non-decreasing key order.
    pub(crate) fn new(index: &Block) -> Option<IndexFences> {
        if index.order != KeyOrder::Internal || index.layout != Layout::Interleaved {
            return None;
        }
        if index.data_end == 0 {
            // No entries (a table without data blocks).
            return Some(IndexFences::without_runs(
                Box::default(),
                Box::default(),
                Box::default(),
            ));
        }
        let n = index.restart_count;
        let mut keys: Vec<&[u8]> = Vec::with_capacity(n);
        let mut handles: Vec<BlockHandle> = Vec::with_capacity(n);
        for i in 0..n {
            let (key, value, next) = restart_entry(index, i).ok()?;
            let expected_next = if i + 1 < n {
                index.restart(i + 1)
            } else {
                index.data_end
            };
            if next != expected_next {
                return None; // an entry between restart points
            }
            keys.push(user_key(key));
            handles.push(BlockHandle::decode_exact(value)?);
        }
        // The prefix most keys share. The first and last entries may not
        // (the last separators are often short successors such as "\x01"
        // or a server's reserved keys after the user's), so candidates
        // leave out more and more of both ends; the one whose fences tell
        // the most entries apart wins.
        let lcp = |i: usize| {
            let (a, b) = (keys[i], keys[n - 1 - i]);
            a.iter().zip(b).take_while(|(x, y)| x == y).count()
        };
        let mut best: Option<(usize, usize, usize, Box<[u64]>)> = None; // (duplicates, plen, i, fences)
        for i in [0, 1, n / 16, n / 4] {
            if i > 0 && 2 * i >= n {
                continue;
            }
            let plen = lcp(i);
            if best.as_ref().is_some_and(|b| b.1 == plen) {
                continue;
            }
            let prefix = &keys[i][..plen];
            let fences: Box<[u64]> = keys.iter().map(|k| fence_of(k, prefix)).collect();
            if !fences.windows(2).all(|w| w[0] <= w[1]) {
                return None;
            }
            let dups = fences.windows(2).filter(|w| w[0] == w[1]).count();
            if best.as_ref().is_none_or(|b| dups < b.0) {
                best = Some((dups, plen, i, fences));
            }
        }
        let (_, plen, i, fences) = best?;
        let prefix = &keys[i][..plen];
        let mut f = IndexFences::without_runs(prefix.into(), fences, handles.into_boxed_slice());
        f.add_runs(&keys)?;
        Some(f)
    }

    fn without_runs(
        prefix: Box<[u8]>,
        fences: Box<[u64]>,
        handles: Box<[BlockHandle]>,
    ) -> IndexFences {
        IndexFences {
            prefix,
            fences,
            handles,
            runs: Box::default(),
            run_of: Box::default(),
            subs: Box::default(),
            run_prefixes: Box::default(),
        }
    }

    /// Adds the second level (invariant 4) for the entries' user `keys`;
    /// `None` if a run's fences under its prefix are not in order (the
    /// keys are not sorted) or the block is too large to index by `u32`.
    fn add_runs(&mut self, keys: &[&[u8]]) -> Option<()> {
        let n = self.fences.len();
        let mut runs = Vec::new();
        let mut run_prefixes = Vec::new();
        let mut start = 0;
        while start < n {
            let f = self.fences[start];
            let end = start + self.fences[start..].partition_point(|&x| x == f);
            if end - start >= 2 {
                let (a, b) = (keys[start], keys[end - 1]);
                let plen = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                runs.push(Run {
                    start: u32::try_from(start).ok()?,
                    end: u32::try_from(end).ok()?,
                    prefix_at: u32::try_from(run_prefixes.len()).ok()?,
                    prefix_len: u32::try_from(plen).ok()?,
                });
                run_prefixes.extend_from_slice(&a[..plen]);
            }
            start = end;
        }
        if runs.is_empty() {
            return Some(());
        }
        let mut run_of = vec![NO_RUN; n];
        let mut subs = vec![0u64; n];
        for (r, run) in runs.iter().enumerate() {
            let prefix = &run_prefixes[run.prefix_at as usize..][..run.prefix_len as usize];
            let span = run.start as usize..run.end as usize;
            for i in span.clone() {
                run_of[i] = u32::try_from(r).ok()?;
                subs[i] = fence_of(keys[i], prefix);
            }
            if !subs[span].windows(2).all(|w| w[0] <= w[1]) {
                return None;
            }
        }
        self.runs = runs.into_boxed_slice();
        self.run_of = run_of.into_boxed_slice();
        self.subs = subs.into_boxed_slice();
        self.run_prefixes = run_prefixes.into_boxed_slice();
        Some(())
    }

    /// Entries whose fence equals the one before.
    #[cfg(test)]
    pub(crate) fn duplicates(&self) -> usize {
        self.fences.windows(2).filter(|w| w[0] == w[1]).count()
    }

    /// Entries whose fence and second-level fence both equal the one
    /// before's (searches landing there compare keys in full).
    #[cfg(test)]
    pub(crate) fn full_duplicates(&self) -> usize {
        (1..self.fences.len())
            .filter(|&i| {
                self.fences[i] == self.fences[i - 1]
                    && self.run_of.get(i) == self.run_of.get(i - 1)
                    && self.subs.get(i) == self.subs.get(i - 1)
            })
            .count()
    }

    /// Number of entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.fences.len()
    }

    /// The block handle of entry `i` (`i < len()`).
    #[inline]
    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// [`IndexFences::seek`] for many targets at once, into `out` (one
    /// result per target, in order): the binary searches over the fences
    /// run in lockstep — every target moves one step per round, with no
    /// dependency between targets — so their cache misses overlap.
    /// `fences` and `base` are buffers.
    pub(crate) fn seek_batch(
        &self,
        index: &Block,
        targets: &[&[u8]],
        (fences, base): (&mut Vec<u64>, &mut Vec<usize>),
        out: &mut Vec<Result<usize>>,
    ) {
        out.clear();
        let n = self.fences.len();
        if n == 0 {
            out.extend(targets.iter().map(|_| Ok(0)));
            return;
        }
        fences.clear();
        fences.extend(targets.iter().map(|t| fence_of(user_key(t), &self.prefix)));
        // Branch-free lower bounds (the last fence below each target's),
        // the same step sizes for every target.
        base.clear();
        base.resize(targets.len(), 0);
        let mut size = n;
        while size > 1 {
            let half = size / 2;
            for (b, &t) in base.iter_mut().zip(fences.iter()) {
                let mid = *b + half;
                *b = if self.fences[mid] < t { mid } else { *b };
            }
            size -= half;
        }
        for ((&b, &t), target) in base.iter().zip(fences.iter()).zip(targets) {
            let lo = b + usize::from(self.fences[b] < t);
            // The caller reads the entry's handle next.
            if let Some(h) = self.handles.get(lo) {
                prefetch_read(h);
            }
            out.push(if lo < n && self.fences[lo] == t {
                self.resolve(index, target, t, lo)
            } else {
                Ok(lo)
            });
        }
    }

    /// The first entry of `index` (the block these fences were built from)
    /// whose key is at or above the internal key `target`: the entry whose
    /// block can hold `target`; `len()` if every key is below it. `from` is
    /// a lower bound on the answer (0, or the answer for a smaller target).
    /// Fails only if an entry it compares in full does not decode.
    pub(crate) fn seek(&self, index: &Block, target: &[u8], from: usize) -> Result<usize> {
        let n = self.fences.len();
        let from = from.min(n);
        let t = fence_of(user_key(target), &self.prefix);
        let lo = from + self.fences[from..].partition_point(|&f| f < t);
        self.resolve(index, target, t, lo)
    }

    /// The answer of a seek for `target` (of fence `t`) given `lo`, the
    /// first entry whose fence is not below `t`: the entries from there
    /// whose fence equals `t` agree with `target` on the fence bytes. One
    /// of them alone is compared in full; a run of them is searched by
    /// their second-level fences first, and only the entries whose second
    /// fence equals the target's are compared in full (usually none or
    /// one).
    fn resolve(&self, index: &Block, target: &[u8], t: u64, lo: usize) -> Result<usize> {
        let run = match self.run_of.get(lo) {
            Some(&r) if r != NO_RUN && self.fences[lo] == t => self.runs[r as usize],
            _ => {
                let hi = lo + self.fences[lo..].partition_point(|&f| f == t);
                return Self::compare_in_full(index, target, lo, hi);
            }
        };
        // `lo` is the run's first entry, or a later one when a seek
        // started past it (`from`).
        let end = run.end as usize;
        let prefix = &self.run_prefixes[run.prefix_at as usize..][..run.prefix_len as usize];
        let t2 = fence_of(user_key(target), prefix);
        let lo2 = lo + self.subs[lo..end].partition_point(|&s| s < t2);
        let hi2 = lo2 + self.subs[lo2..end].partition_point(|&s| s == t2);
        Self::compare_in_full(index, target, lo2, hi2)
    }

    /// The first entry of `lo..hi` whose key is at or above `target`
    /// (`hi` if none), comparing keys in full: every entry before `lo`
    /// is below `target`, every entry from `hi` on at or above it.
    fn compare_in_full(index: &Block, target: &[u8], lo: usize, hi: usize) -> Result<usize> {
        let (mut left, mut right) = (lo, hi);
        while left < right {
            let mid = left + (right - left) / 2;
            let (key, _, _) = restart_entry(index, mid)?;
            if compare_internal_keys(key, target) == Ordering::Less {
                left = mid + 1;
            } else {
                right = mid;
            }
        }
        Ok(left)
    }
}
