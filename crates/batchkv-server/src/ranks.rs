//! A sorted set's rank index: counted fences over its score index, so
//! ZRANK and ZREVRANK read O(fanout × levels + n / fanout^levels) entries
//! instead of walking O(rank) (`docs/format/server-keyspace.md` §5a).
//!
//! # Layout (on disk: never change)
//! An *entry* is a score-index key less its prefix: `score key ‖ member`
//! (`meta.rs`). Every entry has a *fence level* ([`fence_level`]), a pure
//! function of its bytes: 0 for most, `L ≥ 1` for about one in 32^L.
//! A sorted set whose version has [`meta::RANKED`] (every set created
//! since the index) stores under `14 ‖ db ‖ len ‖ user key ‖ version`
//! - `‖ L ‖ entry` for each entry of fence level ≥ L, `L` in
//!   `1..=`[`LEVELS`]: the number of index entries after the previous
//!   entry of fence level ≥ L (or from the start) up to and including this
//!   one, 8 bytes little-endian: the count of the *block* the fence ends.
//!
//! Entries after the last fence of a level are in no block of that level.
//! A member's rank is the sum of the top level's records before its entry,
//! then of the level below's between the last of those fences and the
//! entry, and so on down, plus the score-index entries between the last
//! level-1 fence and the entry, walked ([`rank`]). Every read goes
//! forward; a write finds its entry's block with one forward seek per
//! level.
//!
//! # Invariants
//! 1. The records are exactly the ones the definition above gives for the
//!    set's score index; every writer of an indexed set updates them in
//!    the batch that changes the index ([`settle`]).
//! 2. Sets without [`meta::RANKED`] (created by older servers) have no
//!    records and get none: their ranks are walked.

use crate::meta::{self, Meta};
use crate::resp::Reply;
use crate::shared::{Cursor, Shared};
use batchkv::WriteBatch;
use std::cell::RefCell;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// Levels of fences kept (level L: about one entry in 32^L).
pub const LEVELS: u8 = 3;
/// log2 of the fanout: each level's fences are one in 2^FANOUT_BITS of
/// the level below's.
const FANOUT_BITS: u32 = 5;

/// The reply to a rank index that contradicts the score index.
pub const CORRUPT: &str = "ERR corrupt sorted set: the rank index does not match the score index";

/// [`CORRUPT`] as a reply.
pub fn corrupt() -> Reply {
    Reply::err(CORRUPT)
}

/// The fence level of `entry` (`score key ‖ member`): the number of
/// trailing all-zero 5-bit groups of `fmix64(fnv1a64(entry))`, at most
/// [`LEVELS`]. FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3), then MurmurHash3's 64-bit finalizer so the low bits
/// depend on every byte.
pub fn fence_level(entry: &[u8]) -> u8 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in entry {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    let groups = h.trailing_zeros() / FANOUT_BITS;
    groups.min(u32::from(LEVELS)) as u8
}

/// `14 ‖ db ‖ len ‖ user key ‖ version ‖ level`.
fn level_prefix(key: &[u8], version: u64, level: u8) -> Vec<u8> {
    let mut p = meta::rank_prefix(key, version);
    p.push(level);
    p
}

/// Whether the sorted set with `version` keeps a rank index.
pub fn indexed(version: u64) -> bool {
    version & meta::RANKED != 0
}

fn concat(a: &[u8], b: &[u8]) -> Vec<u8> {
    [a, b].concat()
}

fn decode_count(v: &[u8]) -> Result<u64, Reply> {
    Ok(u64::from_le_bytes(v.try_into().map_err(|_| corrupt())?))
}

/// The net changes one command makes to a sorted set's score index:
/// entry → +1 (added) or -1 (removed).
#[derive(Debug, Default)]
pub struct Changes(BTreeMap<Vec<u8>, i64>);

impl Changes {
    /// Records that the entry of `member` with (stored) `score` is added
    /// (`delta` 1) or removed (-1).
    pub fn note(&mut self, score: f64, member: &[u8], delta: i64) {
        match self.0.entry(meta::score_entry(score, member)) {
            Entry::Occupied(mut o) => {
                *o.get_mut() += delta;
                if *o.get() == 0 {
                    o.remove();
                }
            }
            Entry::Vacant(v) => {
                v.insert(delta);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sum of the changes to entries in `(from, to]` (`from` None:
    /// from the start).
    fn sum(&self, from: Option<&[u8]>, to: &[u8]) -> i64 {
        let lo = from.map_or(Bound::Unbounded, Bound::Excluded);
        self.0
            .range::<[u8], _>((lo, Bound::Included(to)))
            .map(|(_, d)| d)
            .sum()
    }
}

/// Adds to `b` what `m`'s rank index needs for the score-index changes
/// `ch` of one command, `m` being the set's metadata after it (the caller
/// holds the key's lock; reads see the state before the command):
/// - a new set (`existed` false) gets its records;
/// - an emptied one loses them;
/// - an indexed one has its records updated;
/// - a set without the index (created by an older server) is left as is.
pub fn settle(
    shared: &Shared,
    b: &mut WriteBatch,
    key: &[u8],
    m: &Meta,
    existed: bool,
    ch: &Changes,
) -> Result<(), Reply> {
    if ch.is_empty() || !indexed(m.version) {
        return Ok(());
    }
    if !existed {
        if m.size > 0 {
            build(b, key, m.version, ch.0.keys().map(Vec::as_slice));
        }
        return Ok(());
    }
    if m.size == 0 {
        let p = meta::rank_prefix(key, m.version);
        return shared.scan(&p, &meta::prefix_end(&p), false, true, |k, _| {
            b.delete(k);
            true
        });
    }
    update(shared, b, key, m.version, ch)
}

/// Adds to `b` the records of a new sorted set whose index entries are
/// `entries`, ascending.
pub fn build<'a>(
    b: &mut WriteBatch,
    key: &[u8],
    version: u64,
    entries: impl Iterator<Item = &'a [u8]>,
) {
    let prefixes: Vec<Vec<u8>> = (1..=LEVELS)
        .map(|l| level_prefix(key, version, l))
        .collect();
    // Per level: the entries since its last fence.
    let mut since = vec![0u64; usize::from(LEVELS)];
    for e in entries {
        let level = usize::from(fence_level(e));
        for (l, n) in since.iter_mut().enumerate() {
            *n += 1;
            if l < level {
                b.put(concat(&prefixes[l], e), n.to_le_bytes());
                *n = 0;
            }
        }
    }
}

/// A fence whose record an update rewrites.
struct Affected {
    /// Its stored count, if it is an old fence that stays.
    old: Option<u64>,
    /// The changes to entries of its block (when the block keeps its
    /// bounds).
    delta: i64,
    /// Its block's bounds change: count it again.
    recount: bool,
}

/// A fence found in a [`Level`]: its entry and, if it is stored, its
/// stored count (`None`: a fence the command adds).
type Found = (Vec<u8>, Option<u64>);

/// One level's fences as the command leaves them: the stored records with
/// the removed fences skipped and the added ones merged in.
struct Level<'a> {
    shared: &'a Shared,
    /// Over the set's rank records (every level's forward reads).
    cur: &'a RefCell<Cursor>,
    prefix: Vec<u8>,
    added: BTreeSet<&'a [u8]>,
    removed: BTreeSet<&'a [u8]>,
}

impl Level<'_> {
    /// The smallest fence ≥ `e` (> `e` if `strict`): the block `e` falls
    /// in (the next block). One forward seek.
    fn next(&self, e: &[u8], strict: bool) -> Result<Option<Found>, Reply> {
        let lo = if strict {
            [&self.prefix, e, &[0]].concat()
        } else {
            concat(&self.prefix, e)
        };
        let mut stored = None;
        let mut err = None;
        self.cur
            .borrow_mut()
            .scan(&lo, &meta::prefix_end(&self.prefix), |k, v| {
                let f = &k[self.prefix.len()..];
                if self.removed.contains(f) {
                    return true;
                }
                match decode_count(v) {
                    Ok(n) => stored = Some((f.to_vec(), Some(n))),
                    Err(x) => err = Some(x),
                }
                false
            })?;
        if let Some(x) = err {
            return Err(x);
        }
        let lo = if strict {
            Bound::Excluded(e)
        } else {
            Bound::Included(e)
        };
        let added = self.added.range::<[u8], _>((lo, Bound::Unbounded)).next();
        Ok(match (stored, added) {
            (Some(s), Some(&a)) if s.0.as_slice() < a => Some(s),
            (_, Some(&a)) => Some((a.to_vec(), None)),
            (s, None) => s,
        })
    }

    /// The greatest fence < `f`, given `floor`, the affected fence before
    /// `f` (every added fence is affected, so only stored ones can lie
    /// between the two): found reading forward from `floor`, where
    /// [`Level::prev`] would read backward, which costs the engine more.
    fn prev_above(&self, f: &[u8], floor: &[u8]) -> Result<Vec<u8>, Reply> {
        let lo = [&self.prefix, floor, &[0]].concat();
        let mut best = floor.to_vec();
        self.cur
            .borrow_mut()
            .scan(&lo, &concat(&self.prefix, f), |k, _| {
                let e = &k[self.prefix.len()..];
                if !self.removed.contains(e) {
                    best.clear();
                    best.extend_from_slice(e);
                }
                true
            })?;
        Ok(best)
    }

    /// [`Level::next`] of ascending queries: the last answer (`memo`) is
    /// reused while it still holds (no fence lies between the last query
    /// and its answer, so none between this query and it either). A run
    /// of changes in one block costs one seek, and a run of removed
    /// fences is skipped once, not once per change after it.
    fn next_ascending(
        &self,
        e: &[u8],
        strict: bool,
        memo: &mut Option<Option<Found>>,
    ) -> Result<Option<Found>, Reply> {
        match memo {
            // No fence after an earlier query: none after this one.
            Some(None) => return Ok(None),
            Some(Some((f, old))) if e < f.as_slice() || (!strict && e == f.as_slice()) => {
                return Ok(Some((f.clone(), *old)));
            }
            _ => {}
        }
        let found = self.next(e, strict)?;
        *memo = Some(found.clone());
        Ok(found)
    }

    /// The greatest fence < `f`, if any: where `f`'s block starts (after
    /// it). A backward read, taken only where a block's bounds change.
    fn prev(&self, f: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
        let mut stored = None;
        self.shared.scan(
            &self.prefix,
            &concat(&self.prefix, f),
            true,
            true,
            |k, _| {
                let e = &k[self.prefix.len()..];
                if self.removed.contains(e) {
                    return true;
                }
                stored = Some(e.to_vec());
                false
            },
        )?;
        let added = self
            .added
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(f)))
            .next_back();
        Ok(match (stored, added) {
            (Some(s), Some(&a)) if a < s.as_slice() => Some(s),
            (_, Some(&a)) => Some(a.to_vec()),
            (s, None) => s,
        })
    }
}

/// The records of one level the command rewrites: entry → new count
/// (`None`: deleted).
type Rewrites = BTreeMap<Vec<u8>, Option<u64>>;

/// Adds to `b` the record changes of an indexed set for `ch`, level by
/// level from the bottom: a fence whose block keeps its bounds adds the
/// changes inside it to its stored count; one whose bounds change (a new
/// fence, or a fence added or removed just before it) is counted again,
/// at level 1 by walking the old score index over its block, above by
/// summing the level below's new counts over it.
fn update(
    shared: &Shared,
    b: &mut WriteBatch,
    key: &[u8],
    version: u64,
    ch: &Changes,
) -> Result<(), Reply> {
    let rp = meta::rank_prefix(key, version);
    let cur = RefCell::new(shared.cursor(&rp, &meta::prefix_end(&rp))?);
    let mut below = Rewrites::new();
    for level in 1..=LEVELS {
        let fences = |sign: i64| -> BTreeSet<&[u8]> {
            ch.0.iter()
                .filter(|(e, d)| d.signum() == sign && fence_level(e) >= level)
                .map(|(e, _)| e.as_slice())
                .collect()
        };
        let lv = Level {
            shared,
            cur: &cur,
            prefix: level_prefix(key, version, level),
            added: fences(1),
            removed: fences(-1),
        };
        let mut affected: BTreeMap<Vec<u8>, Affected> = BTreeMap::new();
        let mut memo = None;
        for (e, d) in &ch.0 {
            if let Some((f, old)) = lv.next_ascending(e, false, &mut memo)? {
                let a = affected.entry(f).or_insert(Affected {
                    recount: old.is_none(),
                    old,
                    delta: 0,
                });
                a.delta += d;
            }
        }
        // The block after a fence added or removed starts elsewhere now.
        let mut memo = None;
        let changed = ch.0.keys().filter(|e| fence_level(e) >= level);
        for c in changed {
            if let Some((g, old)) = lv.next_ascending(c, true, &mut memo)? {
                affected
                    .entry(g)
                    .or_insert(Affected {
                        old,
                        delta: 0,
                        recount: true,
                    })
                    .recount = true;
            }
        }
        if affected.is_empty() && lv.removed.is_empty() {
            // Every change lies after this level's last fence and no fence
            // of it changed: the same holds for every level above.
            break;
        }
        let mut rewrites: Rewrites = lv.removed.iter().map(|&c| (c.to_vec(), None)).collect();
        // The last affected fence (ascending): a fence of the new state
        // below the next one, so that one's block starts at or after it.
        let mut floor: Option<Vec<u8>> = None;
        for (f, a) in affected {
            let n = match (a.recount, a.old) {
                (false, Some(old)) => old as i64 + a.delta,
                _ => {
                    let from = match &floor {
                        Some(fl) => Some(lv.prev_above(&f, fl)?),
                        None => lv.prev(&f)?,
                    };
                    if level == 1 {
                        count_index(shared, key, version, from.as_deref(), &f)? as i64
                            + ch.sum(from.as_deref(), &f)
                    } else {
                        sum_level(&cur, key, version, level - 1, &below, from.as_deref(), &f)?
                            as i64
                    }
                }
            };
            // A fence's block holds the fence itself.
            if n < 1 {
                return Err(corrupt());
            }
            floor = Some(f.clone());
            rewrites.insert(f, Some(n as u64));
        }
        for (e, n) in &rewrites {
            let k = concat(&lv.prefix, e);
            match n {
                Some(n) => b.put(k, n.to_le_bytes()),
                None => b.delete(k),
            }
        }
        below = rewrites;
    }
    Ok(())
}

/// The key bounds of the entries in `(from, to]` (`from` None: from the
/// start) under `prefix`.
fn block_bounds(prefix: &[u8], from: Option<&[u8]>, to: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let lo = match from {
        Some(f) => [prefix, f, &[0]].concat(),
        None => prefix.to_vec(),
    };
    (lo, [prefix, to, &[0]].concat())
}

/// The number of stored score-index entries in `(from, to]`.
fn count_index(
    shared: &Shared,
    key: &[u8],
    version: u64,
    from: Option<&[u8]>,
    to: &[u8],
) -> Result<u64, Reply> {
    let (lo, hi) = block_bounds(&meta::score_prefix(key, version), from, to);
    let mut n = 0;
    shared.scan(&lo, &hi, false, true, |_, _| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// The sum of the new counts of level `level`'s records in `(from, to]`:
/// the stored ones with `rewrites` applied.
fn sum_level(
    cur: &RefCell<Cursor>,
    key: &[u8],
    version: u64,
    level: u8,
    rewrites: &Rewrites,
    from: Option<&[u8]>,
    to: &[u8],
) -> Result<u64, Reply> {
    let p = level_prefix(key, version, level);
    let (lo, hi) = block_bounds(&p, from, to);
    let mut n = 0u64;
    let mut err = None;
    cur.borrow_mut().scan(&lo, &hi, |k, v| {
        if !rewrites.contains_key(&k[p.len()..]) {
            match decode_count(v) {
                Ok(c) => n += c,
                Err(x) => err = Some(x),
            }
        }
        err.is_none()
    })?;
    if let Some(x) = err {
        return Err(x);
    }
    let lo = from.map_or(Bound::Unbounded, Bound::Excluded);
    for (_, c) in rewrites.range::<[u8], _>((lo, Bound::Included(to))) {
        n += c.unwrap_or(0);
    }
    Ok(n)
}

/// The rank of `own` (an entry of the indexed sorted set at `key` with
/// `version`): the number of score-index entries before it. From the top
/// level down, the records of the fences before `own` after the last
/// fence the level above summed to, then the entries after the last
/// level-1 fence, walked (see the module doc). Reads only forward.
pub fn rank(shared: &Shared, key: &[u8], version: u64, own: &[u8]) -> Result<u64, Reply> {
    let mut n = 0u64;
    // The last fence summed so far (its entry), if any.
    let mut from: Option<Vec<u8>> = None;
    let rp = meta::rank_prefix(key, version);
    let mut cur = shared.cursor(&rp, &meta::prefix_end(&rp))?;
    for level in (1..=LEVELS).rev() {
        let p = level_prefix(key, version, level);
        let (lo, _) = block_bounds(&p, from.as_deref(), own);
        let mut last: Option<Vec<u8>> = None;
        let mut err = None;
        cur.scan(&lo, &concat(&p, own), |k, v| {
            match decode_count(v) {
                Ok(c) => n += c,
                Err(x) => err = Some(x),
            }
            let e = last.get_or_insert_with(Vec::new);
            e.clear();
            e.extend_from_slice(&k[p.len()..]);
            err.is_none()
        })?;
        if let Some(x) = err {
            return Err(x);
        }
        if last.is_some() {
            from = last;
        }
    }
    let (lo, _) = block_bounds(&meta::score_prefix(key, version), from.as_deref(), own);
    let own_key = concat(&meta::score_prefix(key, version), own);
    shared.scan(&lo, &own_key, false, true, |_, _| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// The entry at rank `r` (0-based) of the indexed sorted set at `key`
/// with `version`, which has more than `r` members: from the top level
/// down, the block holding rank `r` is found among the records after the
/// last fence the level above passed, then the entry is walked to from
/// the last level-1 fence before it. Reads only forward; a rank past the
/// records' counts is corruption.
pub fn select(shared: &Shared, key: &[u8], version: u64, r: u64) -> Result<Vec<u8>, Reply> {
    // Entries up to and including `from`; the block `until` closes holds
    // rank `r`.
    let mut n = 0u64;
    let mut from: Option<Vec<u8>> = None;
    let mut until: Option<Vec<u8>> = None;
    let bounds = |p: &[u8], from: Option<&[u8]>, until: Option<&[u8]>| {
        let lo = match from {
            Some(f) => [p, f, &[0]].concat(),
            None => p.to_vec(),
        };
        let hi = match until {
            Some(u) => [p, u, &[0]].concat(),
            None => meta::prefix_end(p),
        };
        (lo, hi)
    };
    let rp = meta::rank_prefix(key, version);
    let mut cur = shared.cursor(&rp, &meta::prefix_end(&rp))?;
    for level in (1..=LEVELS).rev() {
        let p = level_prefix(key, version, level);
        let (lo, hi) = bounds(&p, from.as_deref(), until.as_deref());
        let mut err = None;
        cur.scan(&lo, &hi, |k, v| {
            let c = match decode_count(v) {
                Ok(c) => c,
                Err(x) => {
                    err = Some(x);
                    return false;
                }
            };
            let f = k[p.len()..].to_vec();
            if n + c > r {
                until = Some(f);
                return false;
            }
            n += c;
            from = Some(f);
            true
        })?;
        if let Some(x) = err {
            return Err(x);
        }
    }
    let p = meta::score_prefix(key, version);
    let (lo, hi) = bounds(&p, from.as_deref(), until.as_deref());
    let mut found = None;
    shared.scan(&lo, &hi, false, true, |k, _| {
        if n == r {
            found = Some(k[p.len()..].to_vec());
            return false;
        }
        n += 1;
        true
    })?;
    found.ok_or_else(corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_levels_thin_out_by_the_fanout() {
        let mut at = [0usize; LEVELS as usize + 1];
        for i in 0..200_000u32 {
            let e = meta::score_entry(f64::from(i), format!("m:{i}").as_bytes());
            at[usize::from(fence_level(&e))] += 1;
        }
        // About 1/32 of the entries reach level 1, 1/1024 level 2.
        let ge1: usize = at[1..].iter().sum();
        let ge2: usize = at[2..].iter().sum();
        assert!((5_000..7_500).contains(&ge1), "{at:?}");
        assert!((120..280).contains(&ge2), "{at:?}");
    }
}
