//! Unit tests of the sorted-hash and vector memtables: model tests against a
//! `BTreeMap` of every version (gets at snapshots, batches, iterators in
//! both directions), concurrency (writers, readers and iterators while the
//! sorter cuts and merges), the read-after-write batch test, memory
//! accounting, and the sort-once and merge-down promises.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;

use super::{SortedHashMemTable, SortedHashOptions};
use crate::iter::{scan_backward, scan_forward, InternalIterator};
use crate::key::{append_internal_key, compare_internal_keys, lookup_key, ValueType};
use crate::memtable::vector::{VectorMemTable, VectorOptions};
use crate::memtable::{BatchLookup, EntryRef, MemTable};

fn sorted_hash(buckets: usize, limit: usize, window: usize) -> Arc<SortedHashMemTable> {
    Arc::new(SortedHashMemTable::new(SortedHashOptions {
        id: 1,
        buckets,
        vector_limit: limit,
        pipeline_window: window,
        arena_block_size: 4096,
        huge_pages: false,
    }))
}

fn vector() -> Arc<VectorMemTable> {
    Arc::new(VectorMemTable::new(VectorOptions {
        id: 2,
        arena_block_size: 4096,
        huge_pages: false,
    }))
}

/// Model: user key → (seq → Some(value) | None for a tombstone).
type Model = BTreeMap<Vec<u8>, BTreeMap<u64, Option<Vec<u8>>>>;

fn model_get(m: &Model, k: &[u8], seq: u64) -> Option<Option<Vec<u8>>> {
    m.get(k)?.range(..=seq).next_back().map(|(_, v)| v.clone())
}

fn entry_to_model(e: Option<EntryRef<'_>>) -> Option<Option<Vec<u8>>> {
    e.map(|e| match e {
        EntryRef::Value(v) => Some(v.to_vec()),
        EntryRef::Deleted => None,
        EntryRef::Merge(_) => panic!("these tests write no merge operands"),
    })
}

/// Every entry of the model as (internal key, value), in internal-key order.
fn model_entries(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (k, versions) in m {
        for (&seq, v) in versions.iter().rev() {
            let mut ik = Vec::new();
            let t = if v.is_some() {
                ValueType::Value
            } else {
                ValueType::Deletion
            };
            append_internal_key(&mut ik, k, seq, t);
            out.push((ik, v.clone().unwrap_or_default()));
        }
    }
    out
}

fn collect_forward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let out = scan_forward(it);
    it.status().unwrap();
    out
}

fn collect_backward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let out = scan_backward(it);
    it.status().unwrap();
    out
}

/// Checks gets, batches and an iterator of `mem` against the model.
fn check(mem: &Arc<dyn MemTable>, m: &Model, max_seq: u64, probes: &[(u8, u64)]) {
    let key = |k: u8| format!("k{:02}", k % 40).into_bytes();
    for &(k, s) in probes {
        let seq = s % (max_seq + 2);
        let uk = key(k);
        assert_eq!(
            entry_to_model(mem.get(&uk, seq).unwrap()),
            model_get(m, &uk, seq),
            "{} get {:?}@{seq}",
            mem.kind(),
            String::from_utf8_lossy(&uk)
        );
    }
    // Batches: every key, at a few snapshots.
    let all: Vec<Vec<u8>> = (0..40u8).map(key).collect();
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    for seq in [0, max_seq / 2, max_seq] {
        let mut got = vec![None; refs.len()];
        let mut calls = 0;
        mem.multi_get(&refs, seq, BatchLookup::Auto, &mut |i, e| {
            calls += 1;
            assert!(got[i].is_none(), "key reported twice");
            got[i] = entry_to_model(Some(e));
        })
        .unwrap();
        let want: Vec<_> = refs.iter().map(|k| model_get(m, k, seq)).collect();
        assert_eq!(got, want, "{} multi_get @{seq}", mem.kind());
        assert_eq!(calls, want.iter().filter(|w| w.is_some()).count());
    }
    // Iterator: all versions, both directions, seeks.
    let want = model_entries(m);
    let mut it = Arc::clone(mem).iter();
    assert_eq!(collect_forward(it.as_mut()), want, "{} forward", mem.kind());
    assert_eq!(
        collect_backward(it.as_mut()),
        want,
        "{} backward",
        mem.kind()
    );
    for &(k, s) in probes.iter().take(8) {
        let target = lookup_key(&key(k), s % (max_seq + 2));
        it.seek(&target);
        let ge = want
            .iter()
            .find(|(ik, _)| compare_internal_keys(ik, &target).is_ge());
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            ge.map(|e| e.0.clone()),
            "seek"
        );
        it.seek_for_prev(&target);
        let le = want
            .iter()
            .rev()
            .find(|(ik, _)| compare_internal_keys(ik, &target).is_le());
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            le.map(|e| e.0.clone()),
            "seek_for_prev"
        );
    }
}

fn run_model(mem: Arc<dyn MemTable>, ops: &[(u8, Option<u16>, bool)], probes: &[(u8, u64)]) {
    let mut m = Model::new();
    let mut seq = 0u64;
    for &(k, v, read_now) in ops {
        seq += 1;
        let uk = format!("k{:02}", k % 40).into_bytes();
        let (t, val) = match v {
            Some(v) => (ValueType::Value, v.to_le_bytes().to_vec()),
            None => (ValueType::Deletion, Vec::new()),
        };
        mem.insert(seq, t, &uk, &val).unwrap();
        m.entry(uk)
            .or_default()
            .insert(seq, v.map(|v| v.to_le_bytes().to_vec()));
        if read_now {
            // Reads between writes: cuts of small tails, vector merges.
            check(&mem, &m, seq, &probes[..probes.len().min(4)]);
        }
    }
    check(&mem, &m, seq, probes);
    assert_eq!(mem.num_entries(), ops.len() as u64);
    assert!(mem.approximate_memory_usage() > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn memtables_match_the_model(
        ops in proptest::collection::vec(
            (any::<u8>(), proptest::option::weighted(0.8, any::<u16>()), proptest::bool::weighted(0.05)),
            1..250),
        probes in proptest::collection::vec((any::<u8>(), any::<u64>()), 1..30),
        buckets in 1usize..20,
        limit in 1usize..40,
        window in 1usize..40,
    ) {
        run_model(sorted_hash(buckets, limit, window), &ops, &probes);
        run_model(vector(), &ops, &probes);
    }
}

#[test]
fn memory_usage_is_honest_for_both() {
    let sh = sorted_hash(1000, 100, 16);
    let v = vector();
    // Empty: the bucket array is already held.
    assert_eq!(sh.approximate_memory_usage(), 8000);
    for i in 0..2000u64 {
        let k = format!("key{i:06}");
        sh.insert(i + 1, ValueType::Value, k.as_bytes(), &[7; 100])
            .unwrap();
        v.insert(i + 1, ValueType::Value, k.as_bytes(), &[7; 100])
            .unwrap();
    }
    let entry_bytes = 2000 * (9 + 8 + 100);
    assert!(sh.approximate_memory_usage() >= entry_bytes + 8000);
    assert!(v.approximate_memory_usage() >= entry_bytes);
    let before = v.approximate_memory_usage();
    let _ = v.get(b"key000001", 5000).unwrap();
    // The sorted run (8 bytes per entry) is counted once it exists.
    assert!(v.approximate_memory_usage() >= before + 2000 * 8);
}

#[test]
fn vector_bulk_load_sorts_once() {
    let v = vector();
    for i in (0..5000u64).rev() {
        v.insert(
            5000 - i,
            ValueType::Value,
            format!("{i:05}").as_bytes(),
            b"x",
        )
        .unwrap();
    }
    assert_eq!(v.sorts(), 0, "writes never sort");
    let mem: Arc<dyn MemTable> = v.clone();
    let n = collect_forward(Arc::clone(&mem).iter().as_mut()).len();
    assert_eq!(n, 5000);
    assert_eq!(
        v.get(b"00042", u64::MAX >> 8).unwrap(),
        Some(EntryRef::Value(b"x"))
    );
    let _ = collect_forward(mem.iter().as_mut());
    assert_eq!(v.sorts(), 1, "flush then reads reuse the one sorted run");
    // A later write is sorted into a small run, not a full re-sort.
    v.insert(6000, ValueType::Deletion, b"00042", b"").unwrap();
    assert_eq!(v.get(b"00042", 6000).unwrap(), Some(EntryRef::Deleted));
    assert_eq!(v.sorts(), 2);
    assert_eq!(v.run_count(), 2);
}

#[test]
fn sorter_cuts_and_merges_down_to_one_run_when_idle() {
    let sh = sorted_hash(4096, 100, 16);
    for i in 0..5000u64 {
        sh.insert(
            i + 1,
            ValueType::Value,
            format!("k{:05}", (i * 7919) % 5000).as_bytes(),
            b"v",
        )
        .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sh.runs_snapshot().len() != 1 || sh.shared.runs.pending() != 0 {
        assert!(std::time::Instant::now() < deadline, "sorter never settled");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(sh.runs_snapshot()[0].len(), 5000);
    assert!(sh.shared.runs.merges() > 0);
    assert_eq!(sh.shared.buckets.check_chains(), 5000);
    // Nothing written since: an iterator reuses the run as it is.
    let before = sh.shared.runs.sorts();
    let mem: Arc<dyn MemTable> = sh.clone();
    assert_eq!(collect_forward(mem.iter().as_mut()).len(), 5000);
    assert_eq!(sh.shared.runs.sorts(), before);
}

#[test]
fn pipelined_multi_get_counts_its_work_and_single_keys_skip_it() {
    let sh = sorted_hash(64, 1000, 8);
    for i in 0..1000u64 {
        sh.insert(i + 1, ValueType::Value, format!("k{i:04}").as_bytes(), b"v")
            .unwrap();
    }
    let keys: Vec<Vec<u8>> = (0..100u64)
        .map(|i| format!("k{:04}", i * 13).into_bytes())
        .collect();
    let mut refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    refs.sort();
    let mut found = 0;
    sh.multi_get(&refs, 2000, BatchLookup::Auto, &mut |_, _| found += 1)
        .unwrap();
    // Keys up to k0999 exist: i*13 < 1000 for i ≤ 76.
    assert_eq!(found, 77);
    let c = sh.pipeline_counts();
    assert_eq!((c.batches, c.lookups), (1, 100));
    // ≥ a bucket prefetch per key, an entry prefetch per non-empty chain
    // step, a value prefetch per hit.
    assert!(c.prefetches >= 100 + 77 + 77, "{c:?}");
    sh.multi_get(&refs[..1], 2000, BatchLookup::Auto, &mut |_, _| {})
        .unwrap();
    assert_eq!(
        sh.pipeline_counts().batches,
        1,
        "a single key skips the pipeline"
    );
}

/// One writer publishes `visible` after each insert; readers batch-read keys
/// at or below it and must find every one (the read-after-write property).
#[test]
fn sorted_hash_multi_get_reads_its_writes() {
    let sh = sorted_hash(1 << 12, 500, 24);
    let visible = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Readers that finished a round: the writer does not stop them before
    // each has checked at least one batch (on a loaded machine a reader
    // may first run after every write is in).
    let checked = Arc::new(AtomicU64::new(0));
    const N: u64 = 30_000;
    let key = |i: u64| format!("key{:08}", (i * 2_654_435_761) % 1_000_000_007).into_bytes();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (sh, visible, done, checked) = (
                Arc::clone(&sh),
                Arc::clone(&visible),
                Arc::clone(&done),
                Arc::clone(&checked),
            );
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !done.load(Ordering::Acquire) {
                    let seq = visible.load(Ordering::Acquire);
                    if seq == 0 {
                        continue;
                    }
                    let mut keys: Vec<Vec<u8>> = (0..32)
                        .map(|j| key(1 + (seq * 31 + j * 97 + r) % seq))
                        .collect();
                    keys.sort();
                    keys.dedup();
                    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                    let mut hits = vec![false; refs.len()];
                    sh.multi_get(&refs, seq, BatchLookup::Auto, &mut |i, e| {
                        assert_eq!(e, EntryRef::Value(refs[i]));
                        hits[i] = true;
                    })
                    .unwrap();
                    assert!(
                        hits.iter().all(|&h| h),
                        "a published write was not found at seq {seq}"
                    );
                    rounds += 1;
                    if rounds == 1 {
                        checked.fetch_add(1, Ordering::AcqRel);
                    }
                }
                rounds
            })
        })
        .collect();
    for i in 1..=N {
        let k = key(i);
        sh.insert(i, ValueType::Value, &k, &k).unwrap();
        visible.store(i, Ordering::Release);
    }
    while checked.load(Ordering::Acquire) < 2 {
        std::thread::yield_now();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

/// Writers on several threads, readers and iterators while the sorter cuts
/// and merges; every observation must be consistent.
#[test]
fn concurrent_writers_readers_and_iterators() {
    for mem in [
        sorted_hash(1 << 10, 300, 16) as Arc<dyn MemTable>,
        vector() as Arc<dyn MemTable>,
    ] {
        const W: u64 = 3;
        const PER: u64 = 4000;
        let seqs = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..W)
            .map(|w| {
                let (mem, seqs) = (Arc::clone(&mem), Arc::clone(&seqs));
                std::thread::spawn(move || {
                    for i in 0..PER {
                        let s = seqs.fetch_add(1, Ordering::Relaxed) + 1;
                        let k = format!("w{w}k{:05}", i % 1000);
                        let v = format!("{k}v{s}");
                        mem.insert(s, ValueType::Value, k.as_bytes(), v.as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (mem, done) = (Arc::clone(&mem), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !done.load(Ordering::Acquire) {
                        let k = format!("w{}k{:05}", n % W, (n * 37 + r) % 1000);
                        if let Some(EntryRef::Value(v)) =
                            mem.get(k.as_bytes(), u64::MAX >> 8).unwrap()
                        {
                            assert!(v.starts_with(k.as_bytes()), "value of another key");
                        }
                        if n.is_multiple_of(50) {
                            let mut it = Arc::clone(&mem).iter();
                            let mut prev: Option<Vec<u8>> = None;
                            it.seek_to_first();
                            while it.valid() {
                                if let Some(p) = &prev {
                                    assert!(
                                        compare_internal_keys(p, it.key()).is_lt(),
                                        "iterator out of order"
                                    );
                                }
                                prev = Some(it.key().to_vec());
                                it.next();
                            }
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
        let all = collect_forward(Arc::clone(&mem).iter().as_mut());
        assert_eq!(all.len() as u64, W * PER, "{}", mem.kind());
        assert_eq!(mem.num_entries(), W * PER);
    }
}
