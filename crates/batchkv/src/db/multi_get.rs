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

use super::{Db, DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::key::{user_key, ValueType};
use crate::key_list::KeyList;
use crate::memtable::{BatchLookup, EntryRef, MemTable};
use crate::options::ReadOptions;
use crate::range_del::FragmentedTombstones;
use crate::sst::{Block, BlockReadOptions};

/// Resolution state of one distinct key; `'a` borrows memtable memory.
enum Slot<'a> {
    Pending,
    InMemory(&'a [u8]),
    /// A value inside a cached SST block, kept alive by holding the block.
    InBlock(Arc<Block>, Range<usize>),
    Owned(Vec<u8>),
    Deleted,
    /// The newest visible version is a merge operand: finished one by one
    /// on the slow path (`merge_read.rs`) after the batch stages.
    NeedsMerge,
    Failed(Error),
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
        mut on_result: impl FnMut(usize, Result<Option<&[u8]>>),
    ) {
        let keys = keys.as_key_slice();
        let core = self.core();
        let _timer =
            (core.counters.latency).timer(super::latency::Timed::MultiGet(keys.len() as u64));
        if let Err(e) = core.check_open() {
            for i in 0..keys.len() {
                on_result(i, Err(e.clone()));
            }
            return;
        }
        let seq = match core.read_sequence(opts) {
            Ok(seq) => seq,
            Err(e) => {
                for i in 0..keys.len() {
                    on_result(i, Err(e.clone()));
                }
                return;
            }
        };
        super::statistics::Counters::add(&core.counters.multi_gets, 1);
        super::statistics::Counters::add(&core.counters.multi_get_keys, keys.len() as u64);
        self.multi_get_in(&core.default_cf, opts, seq, keys, on_result)
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
        super::statistics::Counters::add(&core.counters.multi_gets, 1);
        super::statistics::Counters::add(&core.counters.multi_get_keys, keys.len() as u64);
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
            self.multi_get_in(shared, opts, seq, &group_keys, |j, r| {
                out[positions[j]] = r.map(|v| v.map(<[u8]>::to_vec));
            });
        }
        out
    }

    /// The batch pipeline over `cf` at `seq` (already loaded: before the
    /// super version, see `db/mod.rs`).
    fn multi_get_in<K: AsRef<[u8]>>(
        &self,
        cf: &super::CfShared,
        opts: &ReadOptions,
        seq: crate::key::SequenceNumber,
        keys: &[K],
        mut on_result: impl FnMut(usize, Result<Option<&[u8]>>),
    ) {
        let core = self.core();
        let sv: Arc<SuperVersion> = cf.sv.load_full();
        let strategy = opts.batch_lookup.unwrap_or(core.opts.batch_lookup);

        // 1. Sort and deduplicate.
        let order = sorted_order(keys);
        let mut distinct: Vec<&[u8]> = Vec::with_capacity(keys.len());
        let mut slot_of = vec![0u32; keys.len()];
        for &(_, i) in &order {
            let k = keys[i as usize].as_ref();
            if distinct.last() != Some(&k) {
                distinct.push(k);
            }
            slot_of[i as usize] = (distinct.len() - 1) as u32;
        }

        // 2. Stage by stage.
        let mut slots: Vec<Slot<'_>> = distinct.iter().map(|_| Slot::Pending).collect();
        resolve_in_memtables(&sv, &distinct, seq, strategy, &mut slots);
        resolve_in_tables(
            core,
            &sv,
            &distinct,
            seq,
            super::read::block_read_options(opts),
            &mut slots,
        );

        // Keys that met a merge operand, one by one.
        let ro = super::read::block_read_options(opts);
        for (u, slot) in slots.iter_mut().enumerate() {
            if matches!(slot, Slot::NeedsMerge) {
                *slot = match core.get_merged(&sv, distinct[u], seq, ro) {
                    Ok(Some(v)) => Slot::Owned(v),
                    Ok(None) => Slot::Deleted,
                    Err(e) => Slot::Failed(e),
                };
            }
        }

        // 3. Input order. The stages visited the keys in sorted order and
        // prefetched at most a value's first line; the callback reads whole
        // values in input order, so their lines are prefetched a few keys
        // ahead to overlap those misses too.
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
                Slot::Deleted | Slot::Pending => Ok(None),
                // Resolved by the loop just above.
                Slot::NeedsMerge => Err(Error::InvalidArgument(
                    "internal: merge operand left unresolved".into(),
                )),
                Slot::Failed(e) => Err(e.clone()),
            };
            on_result(i, r);
        }
    }
}

/// The input positions of `keys` in ascending key order, each with its
/// sort word: the (up to) 8 bytes after the prefix all keys share,
/// big-endian and zero-padded, so that most comparisons are of integers;
/// equal words (equal keys, or keys agreeing on those bytes) compare the
/// keys in full.
fn sorted_order<K: AsRef<[u8]>>(keys: &[K]) -> Vec<(u64, u32)> {
    let Some(first) = keys.first().map(AsRef::as_ref) else {
        return Vec::new();
    };
    let shared = keys[1..].iter().fold(first.len(), |n, k| {
        let k = k.as_ref();
        first[..n].iter().zip(k).take_while(|(a, b)| a == b).count()
    });
    let mut order: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let rest = &k.as_ref()[shared..];
            let mut word = [0u8; 8];
            let n = rest.len().min(8);
            word[..n].copy_from_slice(&rest[..n]);
            (u64::from_be_bytes(word), i as u32)
        })
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| keys[a.1 as usize].as_ref().cmp(keys[b.1 as usize].as_ref()))
    });
    order
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
/// memtable resolved.
fn resolve_in_memtables<'a>(
    sv: &'a SuperVersion,
    distinct: &[&[u8]],
    seq: u64,
    strategy: BatchLookup,
    slots: &mut [Slot<'a>],
) {
    let mut pending: Vec<u32> = (0..distinct.len() as u32).collect();
    let mut stage_keys: Vec<&[u8]> = Vec::with_capacity(distinct.len());
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if pending.is_empty() {
            return;
        }
        stage_keys.clear();
        stage_keys.extend(pending.iter().map(|&u| distinct[u as usize]));
        let result = mem.multi_get(&stage_keys, seq, strategy, &mut |j, entry| {
            slots[pending[j] as usize] = match entry {
                EntryRef::Value(v) => Slot::InMemory(v),
                EntryRef::Deleted => Slot::Deleted,
                EntryRef::Merge(_) => Slot::NeedsMerge,
            };
        });
        if let Err(e) = result {
            for &u in &pending {
                if matches!(slots[u as usize], Slot::Pending) {
                    slots[u as usize] = Slot::Failed(e.clone());
                }
            }
        }
        if let Some(frags) = mem.range_dels().and_then(|d| d.fragmented()) {
            apply_memtable_range_dels(&**mem, &frags, distinct, &pending, seq, slots);
        }
        pending.retain(|&u| matches!(slots[u as usize], Slot::Pending));
    }
}

/// Settles the keys of one memtable stage that a range tombstone of that
/// memtable covers: a version newer than the tombstone stands, anything
/// else (an older version, or none — older stages hold only older ones)
/// is deleted.
fn apply_memtable_range_dels<'a>(
    mem: &'a dyn MemTable,
    frags: &FragmentedTombstones,
    distinct: &[&[u8]],
    stage: &[u32],
    seq: u64,
    slots: &mut [Slot<'a>],
) {
    for &u in stage {
        let slot = &mut slots[u as usize];
        if matches!(slot, Slot::Failed(_)) {
            continue;
        }
        let key = distinct[u as usize];
        let covered = frags.max_covering(key, seq);
        if covered == 0 {
            continue;
        }
        *slot = match slot {
            Slot::Pending => Slot::Deleted,
            _ => match mem.get_versioned(key, seq) {
                Ok(Some((s, EntryRef::Value(v)))) if s > covered => Slot::InMemory(v),
                Ok(Some((s, EntryRef::Merge(_)))) if s > covered => Slot::NeedsMerge,
                Ok(_) => Slot::Deleted,
                Err(e) => Slot::Failed(e),
            },
        };
    }
}

/// Runs the SST stages: L0 files newest first, then each deeper level.
/// Every table is asked once, for the still-unresolved keys inside its key
/// range, in ascending order ([`Table::multi_get_with`]). Levels ≥ 1 do not
/// overlap, so their files and the sorted keys are walked together.
fn resolve_in_tables(
    core: &DbCore,
    sv: &Arc<SuperVersion>,
    distinct: &[&[u8]],
    seq: u64,
    ro: BlockReadOptions,
    slots: &mut [Slot<'_>],
) {
    let mut pending: Vec<u32> = (0..distinct.len() as u32)
        .filter(|&u| matches!(slots[u as usize], Slot::Pending))
        .collect();
    if let [u] = pending[..] {
        // One key: nothing to overlap; the single-key path allocates less.
        slots[u as usize] = match core.get_from_tables(sv, distinct[u as usize], seq, ro) {
            Ok(Some(v)) => Slot::Owned(v),
            Ok(None) => Slot::Deleted,
            Err(e) => Slot::Failed(e),
        };
        return;
    }
    // Per distinct key, the newest range tombstone covering it seen so far
    // (0: none); empty until a table with range tombstones is met.
    let mut covered: Vec<u64> = Vec::new();
    let mut group: Vec<u32> = Vec::with_capacity(pending.len());
    let mut group_keys: Vec<&[u8]> = Vec::with_capacity(pending.len());
    for (level, files) in sv.version.levels.iter().enumerate() {
        let mut rest = &pending[..];
        for file in files {
            if pending.is_empty() {
                return;
            }
            let (lo, hi) = (user_key(&file.smallest), user_key(&file.largest));
            if level > 0 {
                // Sorted, disjoint files: keys below this file's range
                // belong to no file of the level.
                let skip = rest.partition_point(|&u| distinct[u as usize] < lo);
                rest = &rest[skip..];
            }
            group.clear();
            group.extend(
                rest.iter()
                    .copied()
                    .take_while(|&u| distinct[u as usize] <= hi)
                    .filter(|&u| {
                        distinct[u as usize] >= lo && matches!(slots[u as usize], Slot::Pending)
                    }),
            );
            if level > 0 {
                rest = &rest[rest.partition_point(|&u| distinct[u as usize] <= hi)..];
            }
            // An ingested file newer than the read holds nothing it sees.
            if group.is_empty() || !file.visible_at(seq) {
                continue;
            }
            group_keys.clear();
            group_keys.extend(group.iter().map(|&u| distinct[u as usize]));
            let table = match core.tables.get(file.number) {
                Ok(t) => t,
                Err(e) => {
                    for &u in &group {
                        slots[u as usize] = Slot::Failed(e.clone());
                    }
                    continue;
                }
            };
            if table.range_dels().is_some() || !covered.is_empty() {
                settle_covered_keys(
                    &table,
                    file.global_seqno,
                    distinct,
                    seq,
                    ro,
                    &mut covered,
                    &mut group,
                    slots,
                );
                if group.is_empty() {
                    continue;
                }
                group_keys.clear();
                group_keys.extend(group.iter().map(|&u| distinct[u as usize]));
            }
            table.multi_get_blocks(&group_keys, seq, ro, &mut |j, r, block| {
                slots[group[j] as usize] = match r {
                    Ok((ValueType::Value, v)) => {
                        match block.and_then(|b| Some((b, b.range_of(v)?))) {
                            Some((b, range)) => Slot::InBlock(Arc::clone(b), range),
                            None => Slot::Owned(v.to_vec()),
                        }
                    }
                    Ok((ValueType::Deletion, _)) => Slot::Deleted,
                    Ok((ValueType::Merge, _)) => Slot::NeedsMerge,
                    Ok((ValueType::RangeDeletion, _)) => {
                        Slot::Failed(core.range_deletion_among_points(file.number))
                    }
                    Err(e) => Slot::Failed(e),
                };
            });
        }
        pending.retain(|&u| matches!(slots[u as usize], Slot::Pending));
    }
}

/// Range tombstones in the SST stage: raises `covered` for `group`'s keys
/// by `table`'s tombstones, then resolves here, one by one and comparing
/// sequence numbers, every key a tombstone covers (a version newer than the
/// tombstone stands; an older one is deleted; none leaves the key for the
/// next table). Only the uncovered keys stay in `group` for the batch path.
/// `global_seqno`: the table's, if it is an ingested file (its entries are
/// stored at sequence 0 and read at that sequence).
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, all state of the stage"
)]
fn settle_covered_keys(
    table: &Arc<crate::sst::Table>,
    global_seqno: u64,
    distinct: &[&[u8]],
    seq: u64,
    ro: BlockReadOptions,
    covered: &mut Vec<u64>,
    group: &mut Vec<u32>,
    slots: &mut [Slot<'_>],
) {
    if let Some(rd) = table.range_dels() {
        if covered.is_empty() {
            covered.resize(distinct.len(), 0);
        }
        for &u in group.iter() {
            let c = &mut covered[u as usize];
            *c = (*c).max(rd.fragmented.max_covering(distinct[u as usize], seq));
        }
    }
    group.retain(|&u| {
        let c = covered[u as usize];
        if c == 0 {
            return true;
        }
        slots[u as usize] = match table.get_versioned(distinct[u as usize], seq, ro) {
            Ok(Some((s, ValueType::Value, v))) if s.max(global_seqno) > c => Slot::Owned(v),
            Ok(Some((s, ValueType::Merge, _))) if s.max(global_seqno) > c => Slot::NeedsMerge,
            Ok(Some(_)) => Slot::Deleted,
            Ok(None) => Slot::Pending,
            Err(e) => Slot::Failed(e),
        };
        false
    });
}

#[cfg(test)]
mod tests {
    use super::sorted_order;

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
            let got: Vec<&[u8]> = sorted_order(&keys)
                .into_iter()
                .map(|(_, i)| keys[i as usize])
                .collect();
            let mut want = keys.clone();
            want.sort();
            assert_eq!(got, want);
        }
    }
}
