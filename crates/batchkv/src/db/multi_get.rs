//! The batch read path.
//!
//! 1. Sort the batch once (remembering input positions) and collapse
//!    duplicate user keys: each distinct key is looked up once and the
//!    result is shared.
//! 2. Each stage — the active memtable, each immutable memtable (newest
//!    first), then the SST files — takes only the keys still unresolved,
//!    in sorted order. Memtables resolve them with a batch algorithm
//!    ([`BatchLookup`]) that overlaps cache misses. A value or a tombstone
//!    resolves a key; a stage's error resolves every key it was given.
//!    The SST stage asks each table once for all the keys in its range
//!    (filter probes, index search and block reads batched per table).
//! 3. Results are handed back in input order.

use std::ops::Range;
use std::sync::Arc;

use super::lookup::{Answer, KeyLookup, Step, TableStage, Tombstones};
use super::{Db, DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::key::{user_key, SequenceNumber};
use crate::key_list::KeyList;
use crate::memtable::{BatchLookup, EntryRef, InsertHint};
use crate::options::ReadOptions;
use crate::sst::filter::filter_hash;
use crate::sst::table::recycle;
use crate::sst::{Block, BlockReadOptions};

/// Resolution state of one distinct key; `'a` borrows memtable memory.
enum Slot<'a> {
    /// Not resolved yet: the key's lookup so far.
    Pending(KeyLookup),
    InMemory(&'a [u8]),
    /// A value inside a cached SST block, kept alive by holding the block.
    InBlock(Arc<Block>, Range<usize>),
    Owned(Vec<u8>),
    Deleted,
    Failed(Error),
}

impl<'a> Slot<'a> {
    /// The slot for what a stage said of a key: `None` leaves it pending.
    fn settled(r: Result<Option<Answer<'a>>>) -> Option<Slot<'a>> {
        match r {
            Ok(None) => None,
            Ok(Some(Answer::Absent)) => Some(Slot::Deleted),
            Ok(Some(Answer::Borrowed(v))) => Some(Slot::InMemory(v)),
            Ok(Some(Answer::Owned(v))) => Some(Slot::Owned(v)),
            Err(e) => Some(Slot::Failed(e)),
        }
    }

    fn is_pending(&self) -> bool {
        matches!(self, Slot::Pending(_))
    }
}

impl DbCore {
    /// What every batched read of `n` keys does first: checks that the
    /// database is open and finds the sequence number to read at (`seq`);
    /// on the first error, every key gets it and the answer is `None`.
    /// Otherwise the batch is counted in the statistics.
    pub(super) fn begin_multi_get<F>(
        &self,
        n: usize,
        seq: impl FnOnce() -> Result<SequenceNumber>,
        on_result: &mut F,
    ) -> Option<SequenceNumber>
    where
        F: FnMut(usize, Result<Option<&[u8]>>),
    {
        match self.check_open().and_then(|()| seq()) {
            Ok(seq) => {
                self.counters.reads.multi_get(n as u64);
                Some(seq)
            }
            Err(e) => {
                for i in 0..n {
                    on_result(i, Err(e.clone()));
                }
                None
            }
        }
    }
}

impl Db {
    /// Looks up every key in `keys` at one consistent sequence number.
    /// Results are in input order; duplicates get the same answer.
    /// `keys` is a slice, array or `Vec` of `AsRef<[u8]>` ([`KeyList`]; `&[]`
    /// compiles).
    pub fn multi_get<L: KeyList + ?Sized>(
        &self,
        opts: &ReadOptions,
        keys: &L,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys = keys.as_key_slice();
        let mut out: Vec<Result<Option<Vec<u8>>>> = Vec::with_capacity(keys.len());
        self.multi_get_with(opts, keys, |_, r| {
            out.push(r.map(|v| v.map(<[u8]>::to_vec)))
        });
        out
    }

    /// Like [`Db::multi_get`] without allocating per key: calls
    /// `on_result(i, result)` for each input index `i` in ascending order,
    /// with the value borrowed for the duration of the call.
    pub fn multi_get_with<L: KeyList + ?Sized>(
        &self,
        opts: &ReadOptions,
        keys: &L,
        on_result: impl FnMut(usize, Result<Option<&[u8]>>),
    ) {
        self.multi_get_default(opts, keys.as_key_slice(), on_result, None)
    }

    /// [`Db::multi_get_with`] for a read-modify-write: also calls
    /// `on_hint(i, hint)` with where a newer version of input key `i` goes
    /// in the memtable the read searched (the mutable one: the skip list
    /// tells it for every key, unless its paranoid checks are on; the other
    /// memtables for none). Writing the new versions
    /// with [`WriteBatch::put_hinted`](crate::WriteBatch::put_hinted) spares
    /// their inserts the search from the top. Results are those of
    /// [`Db::multi_get_with`]; the hints only speed up the write.
    pub fn multi_get_hinted<L: KeyList + ?Sized>(
        &self,
        opts: &ReadOptions,
        keys: &L,
        on_result: impl FnMut(usize, Result<Option<&[u8]>>),
        on_hint: &mut dyn FnMut(usize, InsertHint),
    ) {
        self.multi_get_default(opts, keys.as_key_slice(), on_result, Some(on_hint))
    }

    /// A timed batch read of the default family at the read's sequence
    /// ([`Db::multi_get_with`], with hints [`Db::multi_get_hinted`]).
    fn multi_get_default<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
        mut on_result: impl FnMut(usize, Result<Option<&[u8]>>),
        on_hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) {
        let core = self.core();
        let _timer =
            (core.counters.latency).timer(super::latency::Timed::MultiGet(keys.len() as u64));
        let Some(seq) =
            core.begin_multi_get(keys.len(), || core.read_sequence(opts), &mut on_result)
        else {
            return;
        };
        self.multi_get_in(&core.default_cf, opts, seq, keys, on_result, on_hint)
    }

    /// Looks up keys of several column families at one consistent sequence
    /// number (one snapshot across families): `keys` are `(family, key)`
    /// pairs; results are in input order. Keys of one family are looked up
    /// as one batch ([`Db::multi_get`]'s pipeline).
    pub fn multi_get_cf<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[(&super::ColumnFamily, K)],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let core = self.core();
        let mut out: Vec<Result<Option<Vec<u8>>>> = Vec::with_capacity(keys.len());
        out.resize_with(keys.len(), || Ok(None));
        let seq = match core.check_open().and_then(|()| core.read_sequence(opts)) {
            Ok(seq) => seq,
            Err(e) => return out.into_iter().map(|_| Err(e.clone())).collect(),
        };
        core.counters.reads.multi_get(keys.len() as u64);
        // Group the input positions by family, in first-seen order.
        let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
        for (i, (cf, _)) in keys.iter().enumerate() {
            match groups.iter_mut().find(|(id, _)| *id == cf.id()) {
                Some((_, v)) => v.push(i),
                None => groups.push((cf.id(), vec![i])),
            }
        }
        for (_, positions) in groups {
            let cf = keys[positions[0]].0;
            let shared = match cf.live() {
                Ok(s) => s,
                Err(e) => {
                    for &i in &positions {
                        out[i] = Err(e.clone());
                    }
                    continue;
                }
            };
            let group_keys: Vec<&[u8]> = positions.iter().map(|&i| keys[i].1.as_ref()).collect();
            let on_result = |j: usize, r: Result<Option<&[u8]>>| {
                out[positions[j]] = r.map(|v| v.map(<[u8]>::to_vec));
            };
            self.multi_get_in(shared, opts, seq, &group_keys, on_result, None);
        }
        out
    }

    /// The batch pipeline over `cf` at `seq` (already loaded: before the
    /// super version, see `db/mod.rs`).
    fn multi_get_in<K: AsRef<[u8]>>(
        &self,
        cf: &super::CfShared,
        opts: &ReadOptions,
        seq: SequenceNumber,
        keys: &[K],
        on_result: impl FnMut(usize, Result<Option<&[u8]>>),
        on_hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) {
        // A guard (see `Db::get_in_with`): no write to the shared count.
        let sv = cf.sv.load();
        self.multi_get_at(&sv, opts, seq, keys, on_result, on_hint)
    }

    /// The batch pipeline over the super version `sv` at `seq` (loaded
    /// before `sv`), with this thread's buffers ([`Scratch`]); with
    /// `on_hint`, the mutable memtable's insert hints too
    /// ([`Db::multi_get_hinted`]). A single key without `on_hint` takes
    /// the point lookup instead (`DbCore::lookup`, as `get` does).
    pub(super) fn multi_get_at<K: AsRef<[u8]>>(
        &self,
        sv: &SuperVersion,
        opts: &ReadOptions,
        seq: SequenceNumber,
        keys: &[K],
        mut on_result: impl FnMut(usize, Result<Option<&[u8]>>),
        mut on_hint: Option<&mut dyn FnMut(usize, InsertHint)>,
    ) {
        if let ([key], None) = (keys, &on_hint) {
            // One key: the point lookup `get` runs, the same stages in the
            // same order, without the pipeline's sort, slots and per-thread
            // buffers (~1,800 instructions of a server GET's 10,100).
            let ro = super::read::block_read_options(opts);
            match self.core().lookup(sv, key.as_ref(), seq, ro) {
                Ok(answer) => on_result(0, Ok(answer.as_deref())),
                Err(e) => on_result(0, Err(e)),
            }
            return;
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                let sc = &mut *scratch;
                self.multi_get_using(sc, sv, opts, seq, keys, &mut on_result, &mut on_hint);
                scratch.reset();
            }
            // Called again from inside `on_result`: buffers of its own.
            Err(_) => {
                let sc = &mut Scratch::default();
                self.multi_get_using(sc, sv, opts, seq, keys, &mut on_result, &mut on_hint)
            }
        });
    }

    /// [`Db::multi_get_at`] with its buffers.
    #[allow(
        clippy::too_many_arguments,
        reason = "the read's state, its buffers and its two callbacks"
    )]
    fn multi_get_using<K: AsRef<[u8]>>(
        &self,
        sc: &mut Scratch,
        sv: &SuperVersion,
        opts: &ReadOptions,
        seq: SequenceNumber,
        keys: &[K],
        on_result: &mut impl FnMut(usize, Result<Option<&[u8]>>),
        on_hint: &mut Option<&mut dyn FnMut(usize, InsertHint)>,
    ) {
        let core = self.core();

        // 1. Sort and deduplicate.
        sorted_order(keys, &mut sc.order);
        let mut distinct: Vec<&[u8]> = recycle(std::mem::take(&mut sc.distinct));
        let slot_of = &mut sc.slot_of;
        slot_of.clear();
        slot_of.resize(keys.len(), 0);
        for &(mark, i) in &sc.order {
            let k = keys[i as usize].as_ref();
            debug_assert_eq!(mark == NEW_KEY, distinct.last() != Some(&k));
            if mark == NEW_KEY {
                distinct.push(k);
            }
            slot_of[i as usize] = (distinct.len() - 1) as u32;
        }

        // 2. Stage by stage.
        let ro = super::read::block_read_options(opts);
        let mut slots: Vec<Slot<'_>> = recycle_slots(std::mem::take(&mut sc.slots));
        slots.extend(distinct.iter().map(|_| Slot::Pending(KeyLookup::default())));
        sc.hints.clear();
        if on_hint.is_some() {
            sc.hints.resize(distinct.len(), None);
        }
        resolve_in_memtables(core, sv, &distinct, seq, opts.batch_lookup, &mut slots, sc);
        resolve_in_tables(core, sv, &distinct, seq, ro, &mut slots, sc);
        // Past the last stage: keys that kept operands merge them.
        for (u, slot) in slots.iter_mut().enumerate() {
            if let Slot::Pending(l) = slot {
                if l.has_operands() {
                    let r = l.end(sv, distinct[u]).map(Some);
                    *slot = Slot::settled(r).unwrap_or(Slot::Deleted);
                }
            }
        }

        // 3. Input order. The stages visited the keys in sorted order and
        // prefetched at most a value's first line; the callback reads whole
        // values in input order, so their lines are prefetched a few keys
        // ahead to overlap those misses too.
        let slot_of = &sc.slot_of;
        for &s in slot_of.iter().take(DELIVERY_PREFETCH_AHEAD) {
            prefetch_value(&slots[s as usize]);
        }
        for (i, &s) in slot_of.iter().enumerate() {
            if let Some(&ahead) = slot_of.get(i + DELIVERY_PREFETCH_AHEAD) {
                prefetch_value(&slots[ahead as usize]);
            }
            let r = match &slots[s as usize] {
                Slot::InMemory(v) => Ok(Some(*v)),
                Slot::InBlock(b, r) => Ok(Some(b.bytes(r.clone()))),
                Slot::Owned(v) => Ok(Some(v.as_slice())),
                Slot::Deleted | Slot::Pending(_) => Ok(None),
                Slot::Failed(e) => Err(e.clone()),
            };
            on_result(i, r);
            if let (Some(on_hint), Some(&Some(h))) = (on_hint.as_mut(), sc.hints.get(s as usize)) {
                on_hint(i, h);
            }
        }
        // Emptied (blocks and owned values dropped) before they go back.
        slots.clear();
        sc.slots = recycle_slots(slots);
        distinct.clear();
        sc.distinct = recycle(distinct);
    }
}

/// The buffers of [`Db::multi_get_at`], kept per thread between calls so
/// that a call in the steady state allocates nothing. The vectors of
/// borrows are empty between calls ([`recycle`]: their `'static` is the
/// lifetime of nothing they hold).
#[derive(Default)]
struct Scratch {
    /// [`sorted_order`]'s result.
    order: Vec<(u64, u32)>,
    /// Per input key, its index among the distinct keys.
    slot_of: Vec<u32>,
    distinct: Vec<&'static [u8]>,
    slots: Vec<Slot<'static>>,
    /// A stage's still unresolved distinct keys (indexes, ascending).
    pending: Vec<u32>,
    /// The keys of `pending` (memtable stages) or of `group` (tables).
    stage_keys: Vec<&'static [u8]>,
    /// Memtable stage: keys its batch answer did not decide.
    undecided: Vec<u32>,
    /// Per distinct key, the mutable memtable's insert hint; empty when
    /// the read asked for none ([`Db::multi_get_hinted`]).
    hints: Vec<Option<InsertHint>>,
    /// Table stage: the pending keys inside the table's range.
    group: Vec<u32>,
    /// Table stages: [`filter_hash`] per distinct key, computed at the
    /// first table asked that has a filter (each key once, however many
    /// tables it meets);
    /// empty before. Entries of keys no longer pending are stale.
    ///
    /// [`filter_hash`]: crate::sst::filter::filter_hash
    filter_hashes: Vec<u64>,
    /// The hashes of `group`'s keys, in its order.
    group_hashes: Vec<u64>,
    /// Table stage: keys whose newest version there is a merge operand.
    operands_at: Vec<u32>,
}

/// Elements kept at most by a [`Scratch`] vector between calls (a huge
/// batch does not pin its memory).
const SCRATCH_KEEP: usize = 4096;

impl Scratch {
    /// Shrinks the buffers a huge batch grew.
    fn reset(&mut self) {
        if self.order.capacity() > SCRATCH_KEEP || self.pending.capacity() > SCRATCH_KEEP {
            *self = Scratch::default();
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// An empty vector with `v`'s allocation, for slots of another lifetime
/// (the same type otherwise, so the collect reuses the allocation in place).
fn recycle_slots<'a, 'b>(mut v: Vec<Slot<'a>>) -> Vec<Slot<'b>> {
    v.clear();
    v.into_iter()
        .map(|_| -> Slot<'b> { unreachable!() })
        .collect()
}

/// [`sorted_order`]'s mark of a key that differs from the one before it
/// in sorted order (the first key's too).
const NEW_KEY: u64 = 1;
/// [`sorted_order`]'s mark of a key equal to the one before it.
const SAME_KEY: u64 = 0;

/// Fills `order` with the input positions of `keys` in ascending key
/// order, each with its mark: [`NEW_KEY`] or [`SAME_KEY`], so that
/// duplicates are found without comparing keys again.
fn sorted_order<K: AsRef<[u8]>>(keys: &[K], order: &mut Vec<(u64, u32)>) {
    order.clear();
    order.extend((0..keys.len() as u32).map(|i| (0, i)));
    sort_run(keys, order, 0);
    if let Some(first) = order.first_mut() {
        first.0 = NEW_KEY;
    }
}

/// Sorts `run` (input positions into `keys`) by key: by a sort word, the
/// (up to) 8 bytes after the prefix all of the run's keys share,
/// big-endian and zero-padded, so that most comparisons are of integers;
/// then each run of equal words the same way from its own longer shared
/// prefix (a batch's keys often come in groups that share long prefixes,
/// such as one collection's elements, which a single word over the
/// batch's shared prefix cannot tell apart). A run in which one key is a
/// prefix of all the others (its word and a zero byte's look alike)
/// compares the keys in full; a run of equal keys stays as it is.
///
/// The run's keys are at least `known` bytes long and agree on those. On
/// return, the word of every entry but the first is its mark
/// ([`NEW_KEY`] or [`SAME_KEY`], against the entry before it); the
/// first's is the caller's to set.
fn sort_run<K: AsRef<[u8]>>(keys: &[K], run: &mut [(u64, u32)], known: usize) {
    if run.len() < 2 {
        return;
    }
    let key = |i: u32| keys[i as usize].as_ref();
    let first = key(run[0].1);
    let (mut shared, mut shortest) = (first.len(), first.len());
    for &(_, i) in &run[1..] {
        let k = key(i);
        debug_assert!(k.len() >= known && k[..known] == first[..known]);
        shared = known + crate::key::common_prefix_len(&first[known..shared], &k[known..]);
        shortest = shortest.min(k.len());
    }
    if shortest == shared {
        if run.iter().all(|&(_, i)| key(i).len() == shared) {
            for e in &mut run[1..] {
                e.0 = SAME_KEY; // all equal
            }
            return;
        }
        run.sort_unstable_by(|a, b| key(a.1).cmp(key(b.1)));
        for j in 1..run.len() {
            let new = key(run[j].1) != key(run[j - 1].1);
            run[j].0 = if new { NEW_KEY } else { SAME_KEY };
        }
        return;
    }
    // Every key has a byte at `shared`, and two of them differ there: each
    // level orders by at least one more byte (keys of equal words agree
    // on it).
    for (w, i) in run.iter_mut() {
        let rest = &key(*i)[shared..];
        *w = match rest.get(..8) {
            Some(word) => u64::from_be_bytes(word.try_into().unwrap_or_default()),
            None => {
                let mut word = [0u8; 8];
                word[..rest.len()].copy_from_slice(rest);
                u64::from_be_bytes(word)
            }
        };
    }
    run.sort_unstable_by_key(|&(w, _)| w);
    let mut from = 0;
    while from < run.len() {
        let w = run[from].0;
        let to = from + run[from..].iter().take_while(|e| e.0 == w).count();
        sort_run(keys, &mut run[from..to], shared + 1);
        // Its word differs from the previous entry's: so does its key.
        run[from].0 = NEW_KEY;
        from = to;
    }
}

/// Keys ahead of the one being handed back whose values are prefetched.
const DELIVERY_PREFETCH_AHEAD: usize = 8;
/// Cache lines of a value prefetched at most (longer values stream in).
const DELIVERY_PREFETCH_LINES: usize = 4;

/// Prefetches the first lines of a resolved slot's value.
#[inline]
fn prefetch_value(slot: &Slot<'_>) {
    let v: &[u8] = match slot {
        Slot::InMemory(v) => v,
        Slot::InBlock(b, r) => b.bytes(r.clone()),
        _ => return,
    };
    let start = v.as_ptr() as usize;
    for line in ((start & !63)..start + v.len())
        .step_by(64)
        .take(DELIVERY_PREFETCH_LINES)
    {
        crate::prefetch::prefetch_read(line as *const u8);
    }
}

/// Runs the memtable stages: each memtable sees only the keys no newer
/// memtable resolved, searched with the strategy
/// [`BatchLookup::resolve`] picks for that stage's keys (`read_strategy`:
/// the read's override).
fn resolve_in_memtables<'a>(
    core: &DbCore,
    sv: &'a SuperVersion,
    distinct: &[&[u8]],
    seq: SequenceNumber,
    read_strategy: Option<BatchLookup>,
    slots: &mut [Slot<'a>],
    sc: &mut Scratch,
) {
    let pending = &mut sc.pending;
    pending.clear();
    pending.extend(0..distinct.len() as u32);
    let mut stage_keys: Vec<&[u8]> = recycle(std::mem::take(&mut sc.stage_keys));
    // Keys the batch answer did not decide, asked again one by one.
    let undecided = &mut sc.undecided;
    for mem in sv.memtables() {
        if pending.is_empty() {
            break;
        }
        stage_keys.clear();
        stage_keys.extend(pending.iter().map(|&u| distinct[u as usize]));
        if let Some(t) = Tombstones::of_memtable(&**mem) {
            for &u in pending.iter() {
                if let Slot::Pending(l) = &mut slots[u as usize] {
                    l.cover(t.covering(distinct[u as usize], seq));
                }
            }
        }
        undecided.clear();
        let strategy = (core.opts.batch_lookup).resolve(read_strategy, stage_keys.len());
        // Hints of the first (mutable) memtable, where the writes go.
        let want_hints = !sc.hints.is_empty() && std::ptr::eq(mem, &sv.mem);
        let hints = &mut sc.hints;
        let mut hint = |j: usize, h: InsertHint| {
            if let Some(slot) = hints.get_mut(pending[j] as usize) {
                *slot = Some(h);
            }
        };
        let mut found = |j: usize, entry| {
            let u = pending[j];
            let slot = &mut slots[u as usize];
            let Slot::Pending(l) = slot else {
                return;
            };
            *slot = match l.decide(entry) {
                None => return undecided.push(u),
                Some(Step::Value(v)) => Slot::InMemory(v),
                Some(Step::Absent) => Slot::Deleted,
                Some(step) => {
                    let key = distinct[u as usize];
                    match Slot::settled(l.settle(sv, key, step)) {
                        Some(s) => s,
                        None => return,
                    }
                }
            };
        };
        let result = if want_hints {
            mem.multi_get_hinted(&stage_keys, seq, strategy, &mut found, &mut hint)
        } else {
            mem.multi_get(&stage_keys, seq, strategy, &mut found)
        };
        if let Err(e) = result {
            for &u in pending.iter() {
                if slots[u as usize].is_pending() {
                    slots[u as usize] = Slot::Failed(e.clone());
                }
            }
            break;
        }
        // `pending` ascends; the batch may report its keys in any order.
        undecided.sort_unstable();
        let mut undecided = undecided.iter().copied().peekable();
        for &u in pending.iter() {
            let key = distinct[u as usize];
            let slot = &mut slots[u as usize];
            let Slot::Pending(l) = slot else {
                continue;
            };
            let r = if undecided.next_if_eq(&u).is_some() {
                core.lookup_in_memtable(sv, mem, l, key, seq)
            } else {
                match l.after_stage(true) {
                    Some(step) => l.settle(sv, key, step),
                    None => continue,
                }
            };
            if let Some(s) = Slot::settled(r) {
                *slot = s;
            }
        }
        pending.retain(|&u| slots[u as usize].is_pending());
    }
    stage_keys.clear();
    sc.stage_keys = recycle(stage_keys);
}

/// Runs the SST stages: L0 files newest first, then each deeper level.
/// Every table is asked once, for the still-unresolved keys inside its key
/// range, in ascending order ([`Table::multi_get_blocks`]), however many
/// they are. Levels ≥ 1 do not overlap, so their files and the sorted keys
/// are walked together.
///
/// [`Table::multi_get_blocks`]: crate::sst::Table::multi_get_blocks
fn resolve_in_tables(
    core: &DbCore,
    sv: &SuperVersion,
    distinct: &[&[u8]],
    seq: SequenceNumber,
    ro: BlockReadOptions,
    slots: &mut [Slot<'_>],
    sc: &mut Scratch,
) {
    let pending = &mut sc.pending;
    pending.clear();
    pending.extend((0..distinct.len() as u32).filter(|&u| slots[u as usize].is_pending()));
    if pending.is_empty() {
        return;
    }
    let group = &mut sc.group;
    let (filter_hashes, group_hashes) = (&mut sc.filter_hashes, &mut sc.group_hashes);
    filter_hashes.clear();
    let mut group_keys: Vec<&[u8]> = recycle(std::mem::take(&mut sc.stage_keys));
    // Keys whose newest version in a table is a merge operand.
    let operands_at = &mut sc.operands_at;
    'levels: for (level, files) in sv.version.levels.iter().enumerate() {
        let mut rest = &pending[..];
        for file in files {
            if rest.is_empty() && level > 0 {
                break;
            }
            if pending.is_empty() {
                break 'levels;
            }
            // The keys in the file's range: `rest` ascends, so two binary
            // searches find them (a few compares per table, not two per key:
            // L0 files' ranges overlap, and every key meets each of them).
            let (lo, hi) = (user_key(&file.smallest), user_key(&file.largest));
            let from = rest.partition_point(|&u| distinct[u as usize] < lo);
            let to = from + rest[from..].partition_point(|&u| distinct[u as usize] <= hi);
            group.clear();
            group.extend(
                rest[from..to]
                    .iter()
                    .copied()
                    .filter(|&u| slots[u as usize].is_pending()),
            );
            if level > 0 {
                // Sorted, disjoint files: keys up to this file's end belong
                // to no later file of the level.
                rest = &rest[to..];
            }
            if group.is_empty() {
                continue;
            }
            let stage = match TableStage::open(core, file, seq) {
                None => continue,
                Some(Ok(stage)) => stage,
                Some(Err(e)) => {
                    for &u in group.iter() {
                        slots[u as usize] = Slot::Failed(e.clone());
                    }
                    continue;
                }
            };
            if let Some(t) = stage.tombstones() {
                for &u in group.iter() {
                    if let Slot::Pending(l) = &mut slots[u as usize] {
                        l.cover(t.covering(distinct[u as usize], seq));
                    }
                }
            }
            let hashes = if stage.table.has_filter() {
                if filter_hashes.is_empty() {
                    // Every key still pending may meet a table from here on.
                    filter_hashes.resize(distinct.len(), 0);
                    for &u in pending.iter() {
                        filter_hashes[u as usize] = filter_hash(distinct[u as usize]);
                    }
                }
                group_hashes.clear();
                group_hashes.extend(group.iter().map(|&u| filter_hashes[u as usize]));
                Some(&group_hashes[..])
            } else {
                None
            };
            group_keys.clear();
            group_keys.extend(group.iter().map(|&u| distinct[u as usize]));
            operands_at.clear();
            stage
                .table
                .multi_get_blocks(&group_keys, hashes, seq, ro, &mut |j, r, block| {
                    let u = group[j];
                    let slot = &mut slots[u as usize];
                    let Slot::Pending(l) = slot else {
                        return;
                    };
                    let found = r.and_then(|(s, t, v)| Ok((s, stage.entry(core, t, v)?)));
                    *slot = match found {
                        Err(e) => Slot::Failed(e),
                        Ok((_, EntryRef::Merge(_))) => return operands_at.push(u),
                        Ok((s, e)) => match l.judge(stage.sequence(s), e) {
                            Step::Value(v) => match block.and_then(|b| Some((b, b.range_of(v)?))) {
                                Some((b, range)) => Slot::InBlock(Arc::clone(b), range),
                                None => Slot::Owned(v.to_vec()),
                            },
                            step => {
                                let key = distinct[u as usize];
                                let r = l.settle(sv, key, step).map(|a| a.map(Answer::into_owned));
                                match Slot::settled(r) {
                                    Some(s) => s,
                                    None => return,
                                }
                            }
                        },
                    };
                });
            for &u in operands_at.iter() {
                if let Slot::Pending(l) = &mut slots[u as usize] {
                    let key = distinct[u as usize];
                    let r = super::merge_read::walk_table(core, sv, &stage, l, key, seq, ro);
                    if let Some(s) = Slot::settled(r) {
                        slots[u as usize] = s;
                    }
                }
            }
        }
        pending.retain(|&u| slots[u as usize].is_pending());
    }
    group_keys.clear();
    sc.stage_keys = recycle(group_keys);
}

#[cfg(test)]
mod tests {
    use super::{sorted_order, NEW_KEY, SAME_KEY};

    /// `keys` in the order [`sorted_order`] gives, after checking that
    /// each key's mark says whether it differs from the key before it.
    fn sorted_checking_marks<K: AsRef<[u8]>>(keys: &[K]) -> Vec<&[u8]> {
        let mut order = Vec::new();
        sorted_order(keys, &mut order);
        let got: Vec<&[u8]> = order
            .iter()
            .map(|&(_, i)| keys[i as usize].as_ref())
            .collect();
        for (j, &(mark, _)) in order.iter().enumerate() {
            let new = j == 0 || got[j] != got[j - 1];
            let want = if new { NEW_KEY } else { SAME_KEY };
            assert_eq!(mark, want, "mark of {:?} at {j} in {got:?}", got[j]);
        }
        got
    }

    /// The sort words order keys as their bytes do: shared prefixes,
    /// prefixes of each other, zero bytes, duplicates, long equal runs.
    #[test]
    fn sorted_order_is_byte_order() {
        let cases: Vec<Vec<&[u8]>> = vec![
            vec![],
            vec![b"a"],
            vec![
                b"key:000000000002",
                b"key:000000000001",
                b"key:000000000002",
            ],
            vec![
                b"ab",
                b"ab\0",
                b"a",
                b"",
                b"ab\0\0\0\0\0\0\0\0\x01",
                b"ab\0\0\0\0\0\0\0\0",
            ],
            vec![
                b"prefix-0123456789-b",
                b"prefix-0123456789-a",
                b"prefix-01234567",
                b"prefix-\xff",
                b"prefix-",
            ],
        ];
        for keys in cases {
            let got = sorted_checking_marks(&keys);
            let mut want = keys.clone();
            want.sort();
            assert_eq!(got, want);
        }
    }

    proptest::proptest! {
        /// Keys built from few pieces share long prefixes in groups (as
        /// a collection's element keys do), contain zero bytes, repeat,
        /// and are prefixes of each other: the refined words still order
        /// them as their bytes do, with equal keys adjacent.
        #[test]
        fn sorted_order_is_byte_order_for_grouped_keys(
            picks in proptest::collection::vec(proptest::collection::vec(0usize..6, 0..8), 0..200)
        ) {
            const PIECES: [&[u8]; 6] = [b"", b"\0", b"\0\0\0\0\0\0\0\0", b"h:0000000001", b"f:000", b"\xff"];
            let keys: Vec<Vec<u8>> = picks
                .iter()
                .map(|p| p.iter().flat_map(|&i| PIECES[i].iter().copied()).collect())
                .collect();
            let got = sorted_checking_marks(&keys);
            let mut want: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            want.sort();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
