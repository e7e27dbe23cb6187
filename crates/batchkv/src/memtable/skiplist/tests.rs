//! Tests of the skip-list memtable against a `BTreeMap` model: single-thread
//! model tests, strategy-equivalence property tests, concurrent
//! read-after-write, and paranoid corruption detection.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::*;
use crate::key::{append_internal_key, MAX_SEQUENCE};

const STRATEGIES: [BatchLookup; 4] = [
    BatchLookup::PerKey,
    BatchLookup::Finger,
    BatchLookup::Bfs,
    BatchLookup::Auto,
];

/// An owned lookup result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    Value(Vec<u8>),
    Deleted,
}

impl From<EntryRef<'_>> for Found {
    fn from(e: EntryRef<'_>) -> Found {
        match e {
            EntryRef::Value(v) => Found::Value(v.to_vec()),
            EntryRef::Deleted => Found::Deleted,
            EntryRef::Merge(_) => panic!("these tests write no merge operands"),
        }
    }
}

/// The model: (user key, newest first) → entry.
#[derive(Default)]
struct Model {
    map: BTreeMap<(Vec<u8>, Reverse<u64>), Found>,
}

impl Model {
    fn insert(&mut self, mt: &SkipListMemTable, k: &[u8], seq: u64, v: Option<&[u8]>) {
        let (t, val, f) = match v {
            Some(v) => (ValueType::Value, v, Found::Value(v.to_vec())),
            None => (ValueType::Deletion, &[][..], Found::Deleted),
        };
        mt.insert(seq, t, k, val).unwrap();
        self.map.insert((k.to_vec(), Reverse(seq)), f);
    }

    fn get(&self, k: &[u8], snap: u64) -> Option<Found> {
        self.map
            .range((k.to_vec(), Reverse(snap))..)
            .next()
            .filter(|((uk, _), _)| uk == k)
            .map(|(_, f)| f.clone())
    }

    /// Internal keys and values in order.
    fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.map
            .iter()
            .map(|((k, Reverse(s)), f)| {
                let mut ik = Vec::new();
                let (t, v) = match f {
                    Found::Value(v) => (ValueType::Value, v.clone()),
                    Found::Deleted => (ValueType::Deletion, Vec::new()),
                };
                append_internal_key(&mut ik, k, *s, t);
                (ik, v)
            })
            .collect()
    }
}

fn small_opts(paranoid: bool) -> SkipListOptions {
    SkipListOptions {
        id: 7,
        paranoid_checks: paranoid,
        huge_pages: false,
        arena_block_size: 4096,
        point_index_buckets: 0,
    }
}

/// [`small_opts`] with a point index of `buckets` buckets (64: the
/// smallest; a few hundred keys overflow some of them).
fn indexed_opts(buckets: usize) -> SkipListOptions {
    SkipListOptions {
        point_index_buckets: buckets,
        ..small_opts(false)
    }
}

fn multi(
    mt: &SkipListMemTable,
    keys: &[Vec<u8>],
    snap: u64,
    s: BatchLookup,
) -> Result<Vec<Option<Found>>> {
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let mut out = vec![None; keys.len()];
    let mut calls = 0;
    mt.multi_get(&refs, snap, s, &mut |i, e| {
        assert!(out[i].is_none(), "key {i} reported twice");
        out[i] = Some(Found::from(e));
        calls += 1;
    })?;
    assert!(calls <= keys.len());
    Ok(out)
}

fn key_of(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Builds a memtable of `n_keys` user keys with several versions each,
/// inserted in random order; returns it, the model and the max sequence.
fn build(rng: &mut StdRng, opts: SkipListOptions, n_keys: u32) -> (SkipListMemTable, Model, u64) {
    let mt = SkipListMemTable::new(opts);
    let mut model = Model::default();
    let mut ops = Vec::new();
    let mut seq = 1;
    for i in 0..n_keys {
        for _ in 0..rng.random_range(1..5) {
            ops.push((key_of(i * 2 + 1), seq));
            seq += 1;
        }
    }
    ops.shuffle(rng);
    for (k, s) in &ops {
        if rng.random_bool(0.2) {
            model.insert(&mt, k, *s, None);
        } else {
            let v = format!("v{s}-{}", "x".repeat(rng.random_range(0..40)));
            model.insert(&mt, k, *s, Some(v.as_bytes()));
        }
    }
    (mt, model, seq)
}

#[test]
fn lookups_match_the_model_across_snapshots() {
    let mut rng = StdRng::seed_from_u64(1);
    for opts in [
        small_opts(false),
        small_opts(true),
        SkipListOptions::default(),
        indexed_opts(64),
        indexed_opts(4096),
        // Huge pages: the buckets start 2 MiB-aligned inside the mapping.
        SkipListOptions {
            point_index_buckets: 4096,
            ..SkipListOptions::default()
        },
    ] {
        let (mt, model, max_seq) = build(&mut rng, opts, 300);
        assert_eq!(mt.num_entries() as usize, model.map.len());
        // Every key (present ones are odd), before the first, after the last.
        let mut probe: Vec<Vec<u8>> = (0..=601).map(key_of).collect();
        probe.insert(0, Vec::new());
        probe.push(b"\xff\xff".to_vec());
        for snap in [
            0,
            1,
            max_seq / 3,
            max_seq / 2,
            max_seq - 1,
            max_seq,
            MAX_SEQUENCE,
        ] {
            let want: Vec<Option<Found>> = probe.iter().map(|k| model.get(k, snap)).collect();
            for (k, w) in probe.iter().zip(&want) {
                assert_eq!(
                    mt.get(k, snap).unwrap().map(Found::from),
                    *w,
                    "get {k:?}@{snap}"
                );
            }
            for s in STRATEGIES {
                // The whole probe set: a batch larger than the memtable's key count.
                assert_eq!(multi(&mt, &probe, snap, s).unwrap(), want, "{s:?}@{snap}");
                assert_eq!(
                    multi(&mt, &[], snap, s).unwrap(),
                    Vec::<Option<Found>>::new()
                );
                // Random sorted sub-batches.
                for _ in 0..20 {
                    let n = rng.random_range(1..80);
                    let mut idx: Vec<usize> =
                        (0..n).map(|_| rng.random_range(0..probe.len())).collect();
                    idx.sort();
                    idx.dedup();
                    let keys: Vec<Vec<u8>> = idx.iter().map(|&i| probe[i].clone()).collect();
                    let w: Vec<Option<Found>> = idx.iter().map(|&i| want[i].clone()).collect();
                    assert_eq!(multi(&mt, &keys, snap, s).unwrap(), w, "{s:?}@{snap}");
                }
            }
        }
    }
}

#[test]
fn iterator_walks_all_versions_both_ways_and_seeks() {
    let mut rng = StdRng::seed_from_u64(2);
    let (mt, model, _) = build(&mut rng, small_opts(false), 200);
    let want = model.entries();
    let mt = Arc::new(mt);
    let mut it = mt.clone().iter();
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    assert_eq!(got, want);
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert_eq!(back, want);
    it.status().unwrap();

    // seek / seek_for_prev to lookup keys between, on and around entries.
    for i in 0..=401u32 {
        for snap in [0u64, 5, 100, MAX_SEQUENCE] {
            let target = crate::key::lookup_key(&key_of(i), snap);
            let ge = want
                .iter()
                .position(|(k, _)| crate::key::compare_internal_keys(k, &target).is_ge());
            it.seek(&target);
            assert_eq!(it.valid(), ge.is_some());
            if let Some(p) = ge {
                assert_eq!(it.key(), &want[p].0[..]);
            }
            let le = want
                .iter()
                .rposition(|(k, _)| crate::key::compare_internal_keys(k, &target).is_le());
            it.seek_for_prev(&target);
            assert_eq!(it.valid(), le.is_some());
            if let Some(p) = le {
                assert_eq!(it.key(), &want[p].0[..]);
            }
        }
    }
    // Exact entry keys are found by both seeks.
    for (k, _) in want.iter().step_by(7) {
        it.seek(k);
        assert_eq!(it.key(), &k[..]);
        it.seek_for_prev(k);
        assert_eq!(it.key(), &k[..]);
    }
    it.seek(b"short");
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(crate::Error::InvalidArgument(_))));
}

#[test]
fn empty_memtable_finds_nothing() {
    let mt = Arc::new(SkipListMemTable::new(small_opts(true)));
    assert_eq!(mt.get(b"a", MAX_SEQUENCE).unwrap(), None);
    for s in STRATEGIES {
        assert_eq!(
            multi(&mt, &[b"a".to_vec(), b"b".to_vec()], 9, s).unwrap(),
            vec![None, None]
        );
    }
    let mut it = mt.clone().iter();
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    assert_eq!(mt.num_entries(), 0);
    assert!(
        mt.approximate_memory_usage() > 0,
        "the head node lives in the arena"
    );
}

#[test]
fn memory_usage_grows_with_entries() {
    let mt = SkipListMemTable::new(small_opts(false));
    let before = mt.approximate_memory_usage();
    for i in 0..1000u32 {
        mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i), &[7u8; 100])
            .unwrap();
    }
    // At least the raw entry bytes are counted.
    assert!(mt.approximate_memory_usage() >= before + 1000 * 118);
    // A value larger than a block gets its own block.
    let big = vec![3u8; 100_000];
    mt.insert(5000, ValueType::Value, b"big", &big).unwrap();
    assert_eq!(
        mt.get(b"big", MAX_SEQUENCE).unwrap(),
        Some(EntryRef::Value(&big[..]))
    );
    assert_eq!(mt.num_entries(), 1001);
}

#[test]
fn auto_uses_per_key_for_single_keys_and_bfs_for_batches() {
    assert_eq!(choose_strategy(0), BatchLookup::PerKey);
    assert_eq!(choose_strategy(1), BatchLookup::PerKey);
    assert_eq!(choose_strategy(AUTO_PER_KEY_MAX + 1), BatchLookup::Bfs);
    assert_eq!(choose_strategy(10_000), BatchLookup::Bfs);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_strategy_agrees_with_per_key_and_the_model(
        entries in proptest::collection::vec(
            (proptest::collection::vec(0u8..4, 0..4), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8))),
            0..300),
        batches in proptest::collection::vec(
            (proptest::collection::btree_set(proptest::collection::vec(0u8..4, 0..4), 0..70), 0u64..400),
            1..6),
        paranoid in any::<bool>(),
    ) {
        let mt = SkipListMemTable::new(small_opts(paranoid));
        let mut model = Model::default();
        // Sequence numbers are a permutation: insertion order ≠ seq order.
        let mut seqs: Vec<u64> = (1..=entries.len() as u64).collect();
        seqs.reverse();
        seqs.rotate_left(entries.len() / 3);
        for ((k, v), s) in entries.iter().zip(&seqs) {
            model.insert(&mt, k, *s, v.as_deref());
        }
        for (set, snap) in &batches {
            let keys: Vec<Vec<u8>> = set.iter().cloned().collect();
            let want: Vec<Option<Found>> = keys.iter().map(|k| model.get(k, *snap)).collect();
            let base = multi(&mt, &keys, *snap, BatchLookup::PerKey).unwrap();
            prop_assert_eq!(&base, &want);
            for s in STRATEGIES {
                prop_assert_eq!(&multi(&mt, &keys, *snap, s).unwrap(), &want, "{:?}", s);
            }
        }
    }
}

#[test]
fn concurrent_inserts_are_read_after_write_by_every_strategy() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 6_000;
    const RING: usize = 256;
    let mt = Arc::new(SkipListMemTable::new(SkipListOptions {
        arena_block_size: 64 << 10,
        huge_pages: false,
        ..SkipListOptions::default()
    }));
    let mut all: Vec<u32> = (0..(THREADS * PER_THREAD) as u32).collect();
    all.shuffle(&mut StdRng::seed_from_u64(3));
    // Published keys, readable by every thread.
    let ring: Arc<Vec<AtomicUsize>> =
        Arc::new((0..RING).map(|_| AtomicUsize::new(usize::MAX)).collect());
    let ring_pos = Arc::new(AtomicUsize::new(0));
    let value_of = |k: u32| format!("value-{k}").into_bytes();
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let handles: Vec<_> = all
        .chunks(PER_THREAD)
        .enumerate()
        .map(|(t, mine)| {
            let mine = mine.to_vec();
            let (mt, ring, ring_pos, failures) =
                (mt.clone(), ring.clone(), ring_pos.clone(), failures.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + t as u64);
                for (n, &k) in mine.iter().enumerate() {
                    // Distinct sequence per key; all below the read snapshot.
                    mt.insert(u64::from(k) + 1, ValueType::Value, &key_of(k), &value_of(k))
                        .unwrap();
                    // Relaxed is enough: the skip list's own release/acquire
                    // makes the entry visible; the ring only names keys.
                    let slot = ring_pos.fetch_add(1, Ordering::Relaxed) % RING;
                    ring[slot].store(k as usize, Ordering::Release);
                    let mut batch = vec![k];
                    for _ in 0..rng.random_range(0..40) {
                        let other = ring[rng.random_range(0..RING)].load(Ordering::Acquire);
                        if other != usize::MAX {
                            batch.push(other as u32);
                        }
                    }
                    batch.sort();
                    batch.dedup();
                    let keys: Vec<Vec<u8>> = batch.iter().map(|&b| key_of(b)).collect();
                    let s = STRATEGIES[n % 4];
                    let got = multi(&mt, &keys, MAX_SEQUENCE, s).unwrap();
                    for (b, g) in batch.iter().zip(got) {
                        if g != Some(Found::Value(value_of(*b))) {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{s:?}: key {b} -> {g:?}"));
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} misses, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    // Afterwards everything is there, in order.
    assert_eq!(mt.num_entries() as usize, THREADS * PER_THREAD);
    let mut it = mt.clone().iter();
    it.seek_to_first();
    let mut n = 0;
    let mut last: Vec<u8> = Vec::new();
    while it.valid() {
        assert!(last.is_empty() || crate::key::compare_internal_keys(&last, it.key()).is_lt());
        last = it.key().to_vec();
        n += 1;
        it.next();
    }
    assert_eq!(n, THREADS * PER_THREAD);
}

fn corrupted(paranoid: bool, fix_checksum: bool) -> SkipListMemTable {
    let mt = SkipListMemTable::new(small_opts(paranoid));
    for i in 0..500u32 {
        mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i), b"v")
            .unwrap();
    }
    // key000250 -> key000150: sorts before its predecessor, so every search
    // that walks from key000249 to it meets an out-of-order pair.
    mt.corrupt_entry_for_test(&key_of(250), 6, 0x03, fix_checksum);
    mt
}

#[test]
fn paranoid_checks_turn_bad_entries_into_corruption() {
    for fix_checksum in [false, true] {
        let mt = corrupted(true, fix_checksum);
        // With the checksum fixed only an order check can notice. With it
        // stale, whichever check meets the node first reports it: the order
        // check if a search passes it above level 0 (node heights are
        // random), the checksum at level 0.
        let what: &[&str] = if fix_checksum {
            &["out of order"]
        } else {
            &["checksum mismatch", "out of order"]
        };
        let names = |e: &crate::Error| what.iter().any(|w| e.to_string().contains(w));
        let all: Vec<Vec<u8>> = (0..500).map(key_of).collect();
        let err = mt.get(&key_of(251), MAX_SEQUENCE).unwrap_err();
        assert!(err.is_corruption() && names(&err), "{err}");
        assert!(err.to_string().contains("memtable#7"), "{err}");
        for s in STRATEGIES {
            let err = multi(&mt, &all, MAX_SEQUENCE, s).unwrap_err();
            assert!(err.is_corruption() && names(&err), "{s:?}: {err}");
            // A small batch whose search passes the bad node.
            let few = vec![key_of(249), key_of(251)];
            let err = multi(&mt, &few, MAX_SEQUENCE, s).unwrap_err();
            assert!(err.is_corruption(), "{s:?}: {err}");
        }
    }
}

#[test]
fn without_paranoid_checks_corruption_goes_unnoticed() {
    // The same damage is invisible to unchecked lookups: this is what the
    // option buys (and proves the paranoid test above exercises the checks).
    let mt = corrupted(false, false);
    assert_eq!(
        mt.get(&key_of(10), MAX_SEQUENCE).unwrap(),
        Some(EntryRef::Value(&b"v"[..]))
    );
}

#[test]
fn paranoid_checks_catch_a_damaged_value_on_the_entry_returned() {
    let mt = SkipListMemTable::new(small_opts(true));
    for i in 0..100u32 {
        mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i), b"v")
            .unwrap();
    }
    // Entry bytes from the key: 17-byte key, 4-byte key protection, 1-byte
    // value length, then the value at offset 22.
    mt.corrupt_entry_for_test(&key_of(50), 22, 0x01, false);
    let err = mt.get(&key_of(50), MAX_SEQUENCE).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("checksum mismatch"),
        "{err}"
    );
    for s in STRATEGIES {
        let err = multi(&mt, &[key_of(49), key_of(50)], MAX_SEQUENCE, s).unwrap_err();
        assert!(err.is_corruption(), "{s:?}: {err}");
    }
    // Lookups that only pass the node read its key, which is intact.
    assert_eq!(
        mt.get(&key_of(51), MAX_SEQUENCE).unwrap(),
        Some(EntryRef::Value(&b"v"[..]))
    );
}

/// Regression: finger's first search started at level 0 with the bracket
/// (head, +∞) and walked the whole bottom list (found by the benchmark:
/// 0.004 M lookups/s at batch 1). Timing ratio with a 1000× margin.
#[test]
fn finger_first_search_descends_from_the_top() {
    let mt = SkipListMemTable::new(SkipListOptions {
        huge_pages: false,
        ..SkipListOptions::default()
    });
    for i in 0..100_000u32 {
        mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i), b"v")
            .unwrap();
    }
    let probe = [key_of(99_000)];
    let time = |s: BatchLookup| {
        let t = std::time::Instant::now();
        for _ in 0..300 {
            assert_eq!(
                multi(&mt, &probe, MAX_SEQUENCE, s).unwrap()[0],
                Some(Found::Value(b"v".to_vec()))
            );
        }
        t.elapsed()
    };
    let per_key = time(BatchLookup::PerKey);
    let finger = time(BatchLookup::Finger);
    assert!(
        finger < per_key * 30 + std::time::Duration::from_millis(5),
        "finger {finger:?} vs per-key {per_key:?}"
    );
}

/// Regression (paranoid checks stopped hashing every key passed on the way
/// down): a damaged key that still sorts between its neighbours but *below*
/// its true key makes a search pass the node it should stop at. The search's
/// final level-0 predecessor is then that node, and it must be verified —
/// otherwise the lookup would silently answer "not found".
#[test]
fn paranoid_checks_catch_a_node_passed_because_of_its_damaged_key() {
    // Only a node taller than 1 can be passed above level 0, so damage many
    // nodes in turn (a quarter of them are taller).
    for victim in 100..164u32 {
        let mt = SkipListMemTable::new(small_opts(true));
        for i in 0..500u32 {
            mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i * 10), b"v")
                .unwrap();
        }
        // The last digit '0' becomes '/': still after the previous key, now
        // before its true key, with the checksum left stale.
        let k = key_of(victim * 10);
        mt.corrupt_entry_for_test(&k, 8, 0x1f, false);
        let err = mt.get(&k, MAX_SEQUENCE).unwrap_err();
        assert!(err.is_corruption(), "victim {victim}: {err}");
        for s in STRATEGIES {
            let around = vec![
                key_of(victim * 10 - 10),
                k.clone(),
                key_of(victim * 10 + 10),
            ];
            for batch in [vec![k.clone()], around] {
                let err = multi(&mt, &batch, MAX_SEQUENCE, s).unwrap_err();
                assert!(err.is_corruption(), "victim {victim} {s:?}: {err}");
            }
        }
    }
}

/// A damaged key that sorts *after* its true place (and after its
/// successor) stops a search that should pass it. If it was first compared
/// above level 0, the level-0 walk meets it only as the known bound and
/// never compares it again; the search's candidate is then that node, so
/// the candidate's key protection must be verified even when its user key
/// does not match the lookup — otherwise the lookup would silently answer
/// "not found" for the successor's key.
#[test]
fn paranoid_checks_catch_a_node_that_stops_a_search_because_of_its_damaged_key() {
    for victim in 100..164u32 {
        let mt = SkipListMemTable::new(small_opts(true));
        for i in 0..500u32 {
            mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i * 10), b"v")
                .unwrap();
        }
        // The first digit '0' becomes '1': the key now sorts after every
        // other key, with the checksum left stale.
        mt.corrupt_entry_for_test(&key_of(victim * 10), 3, 0x01, false);
        let next = key_of(victim * 10 + 10);
        let err = mt.get(&next, MAX_SEQUENCE).unwrap_err();
        assert!(err.is_corruption(), "victim {victim}: {err}");
        for s in STRATEGIES {
            let around = vec![key_of(victim * 10 - 10), next.clone()];
            for batch in [vec![next.clone()], around] {
                let err = multi(&mt, &batch, MAX_SEQUENCE, s).unwrap_err();
                assert!(err.is_corruption(), "victim {victim} {s:?}: {err}");
            }
        }
    }
}

/// The paranoid batch descent proves `key(x) < key(z)` on steps where all
/// of an item's keys move right from where both keys diverge from the
/// item's first key (`list::Divergence`), and compares the two keys only
/// when that proves nothing. A damaged key that sorts before its
/// predecessor (checksum rewritten, so only an order check can notice)
/// must be reported whichever word it diverges in: an earlier word than
/// its predecessor does (offset 3), the same word (offset 12, 16-byte
/// keys), or a tail shorter than a word (offset 17, 20-byte keys). A
/// single-key batch walks exactly the pairs a per-key lookup walks, so
/// it must fail whenever `get` does (`get` misses the damage only when the
/// damaged node is reached from the head, whose pairs have nothing to
/// compare).
#[test]
fn paranoid_checks_catch_an_out_of_order_pair_wherever_the_keys_diverge() {
    for (width, offset) in [(16usize, 3usize), (16, 12), (20, 17)] {
        let key = |i: u32| format!("{:0width$}", u64::from(i) * 10).into_bytes();
        let mut caught = 0;
        let victims = 101..141u32;
        for victim in victims.clone() {
            let mt = SkipListMemTable::new(small_opts(true));
            for i in 0..500u32 {
                mt.insert(u64::from(i) + 1, ValueType::Value, &key(i), b"v")
                    .unwrap();
            }
            // A digit d becomes 0x20 + d, below every digit: the key now
            // sorts before its predecessor (which shares the bytes before
            // `offset`), and after nothing it should.
            mt.corrupt_entry_for_test(&key(victim), offset, 0x10, true);
            let next = key(victim + 1);
            let Err(err) = mt.get(&next, MAX_SEQUENCE) else {
                continue;
            };
            assert!(err.to_string().contains("out of order"), "{err}");
            caught += 1;
            for s in STRATEGIES {
                let around = vec![key(victim - 1), next.clone()];
                for batch in [vec![next.clone()], around] {
                    let err = multi(&mt, &batch, MAX_SEQUENCE, s).unwrap_err();
                    assert!(
                        err.is_corruption() && err.to_string().contains("out of order"),
                        "width {width} offset {offset} victim {victim} {s:?}: {err}"
                    );
                }
            }
        }
        assert!(
            caught * 10 >= victims.len() * 9,
            "width {width} offset {offset}: only {caught} caught"
        );
    }
}

/// `Divergence::proves_before` must never claim an order the full
/// comparison denies (random keys over a 3-letter alphabet, so that keys
/// share words, differ in tails, are prefixes of each other or equal).
#[test]
fn divergence_proves_only_true_orders() {
    use super::list::{internal_key_lt, internal_key_lt_from, key_lt_div};
    use crate::key::{compare_internal_key_parts, compare_internal_keys};
    let mut rng = StdRng::seed_from_u64(0x5eed_d17e);
    let internal = |rng: &mut StdRng| {
        let len = rng.random_range(0..26);
        let user: Vec<u8> = (0..len).map(|_| b"abc"[rng.random_range(0..3)]).collect();
        let seq = rng.random_range(0..4u64);
        let mut k = Vec::new();
        append_internal_key(&mut k, &user, seq, ValueType::Value);
        (user, crate::key::pack_trailer(seq, ValueType::Value), k)
    };
    let (mut proofs, mut misses, mut prefixed) = (0, 0, 0);
    for _ in 0..200_000 {
        let (tu, tt, tk) = internal(&mut rng);
        let (xu, _, xk) = internal(&mut rng);
        let (_, _, mut zk) = internal(&mut rng);
        if rng.random_range(0..4) == 0 {
            // Another version of x's user key (the pairs ranks cannot order).
            zk.clear();
            append_internal_key(&mut zk, &xu, rng.random_range(0..4u64), ValueType::Value);
        }
        assert_eq!(
            internal_key_lt(&xk, &zk),
            compare_internal_keys(&xk, &zk).is_lt()
        );
        let (x_lt, dx) = key_lt_div(&xk, &tu, tt);
        let (z_lt, dz) = key_lt_div(&zk, &tu, tt);
        assert_eq!(x_lt, compare_internal_key_parts(&xk, &tu, tt).is_lt());
        assert_eq!(z_lt, compare_internal_keys(&zk, &tk).is_lt());
        if !(x_lt && z_lt) {
            continue;
        }
        // The bytes the order check may skip are equal, and the check from
        // there decides as the full comparison does.
        let from = dz.shared_prefix(dx.rank());
        if from > 0 {
            assert_eq!(xk[..from], zk[..from]);
            prefixed += 1;
        }
        assert_eq!(
            internal_key_lt_from(&xk, &zk, from),
            compare_internal_keys(&xk, &zk).is_lt()
        );
        if dx.proves_before(dz) {
            assert!(
                compare_internal_keys(&xk, &zk).is_lt(),
                "{xk:?} !< {zk:?} (target {tk:?})"
            );
            proofs += 1;
        } else if compare_internal_keys(&xk, &zk).is_lt() {
            misses += 1;
        }
    }
    // Not vacuous: most true orders with whole-word divergences are proven.
    assert!(
        proofs > 1000 && misses > 0 && prefixed > 1000,
        "{proofs} proofs, {misses} misses, {prefixed} shared prefixes"
    );
}

/// `insert_many` (the interleaved searches of `batch_insert.rs`) leaves
/// the list as `insert` of each entry would: every lookup and the full
/// ordered walk match the model, with batches of 1 to 150 entries (one
/// chunk of either size, or several) in random order, several versions of
/// one user key in a batch, keys new and old, and batches of neighbouring
/// keys (which find the same splices, so all but the first link of each
/// level fails its CAS and searches again).
#[test]
fn batched_inserts_match_the_model() {
    let mut rng = StdRng::seed_from_u64(11);
    for paranoid in [false, true] {
        let mt = SkipListMemTable::new(small_opts(paranoid));
        let mut model = Model::default();
        let mut seq = 1;
        for round in 0..300 {
            let n = rng.random_range(1..150);
            // Every third batch takes neighbouring keys from a random start.
            let base = rng.random_range(0..600);
            let mut entries: Vec<(Vec<u8>, u64, Option<Vec<u8>>)> = (0..n)
                .map(|i| {
                    let k = if round % 3 == 0 {
                        key_of(base + i)
                    } else {
                        key_of(rng.random_range(0..500))
                    };
                    seq += 1;
                    let v = rng.random_bool(0.8).then(|| {
                        format!("v{seq}")
                            .repeat(rng.random_range(1..4))
                            .into_bytes()
                    });
                    (k, seq, v)
                })
                .collect();
            entries.shuffle(&mut rng);
            let batch: Vec<NewEntry<'_>> = entries
                .iter()
                .map(|(k, s, v)| entry(*s, k, v, None))
                .collect();
            mt.insert_many(&batch).unwrap();
            for (k, s, v) in &entries {
                let f = v.clone().map_or(Found::Deleted, Found::Value);
                model.map.insert((k.clone(), Reverse(*s)), f);
            }
        }
        assert_holds_the_model(mt, &model, paranoid);
    }
}

/// A batch entry: `key → v`, or its deletion when `v` is `None`.
fn entry<'a>(
    seq: u64,
    key: &'a [u8],
    v: &'a Option<Vec<u8>>,
    hint: Option<InsertHint>,
) -> NewEntry<'a> {
    NewEntry {
        seq,
        t: if v.is_some() {
            ValueType::Value
        } else {
            ValueType::Deletion
        },
        user_key: key,
        value: v.as_deref().unwrap_or(&[]),
        hint,
    }
}

/// The list holds exactly the model's entries, in order (its count and a
/// walk of every entry).
fn assert_holds_the_model(mt: SkipListMemTable, model: &Model, paranoid: bool) {
    assert_eq!(mt.num_entries() as usize, model.map.len());
    let mut it = SkipListMemTable::iter(Arc::new(mt));
    it.seek_to_first();
    let mut walked = Vec::new();
    while it.valid() {
        walked.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    assert_eq!(walked, model.entries(), "paranoid: {paranoid}");
}

/// Batched inserts from several threads at once, racing for the same
/// splices (interleaved keys), with readers: every key is found after
/// its batch returns, and the list ends complete and in order. Batches of
/// 12 (one small chunk) and of 100 (two chunks of 50, whose neighbouring
/// keys share splices with each other and with the other threads').
#[test]
fn concurrent_batched_inserts_are_read_after_write() {
    concurrent_batched_inserts(400, 12, false);
    concurrent_batched_inserts(60, 100, false);
}

/// As above, each batch first read with hints ([`InsertHint`]) that the
/// other threads' inserts make stale before the batch is inserted; single
/// inserts (batches of 1) take the hinted single-insert path.
#[test]
fn concurrent_hinted_inserts_are_read_after_write() {
    concurrent_batched_inserts(300, 1, true);
    concurrent_batched_inserts(400, 12, true);
    concurrent_batched_inserts(60, 100, true);
}

fn concurrent_batched_inserts(batches: u32, per_batch: u32, hinted: bool) {
    const THREADS: u32 = 4;
    let mt = Arc::new(SkipListMemTable::new(SkipListOptions {
        arena_block_size: 64 << 10,
        huge_pages: false,
        ..SkipListOptions::default()
    }));
    let value_of = |k: u32| format!("value-{k}").into_bytes();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let mt = &mt;
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(u64::from(t));
                for b in 0..batches {
                    // Thread t owns keys ≡ t (mod THREADS): neighbours in
                    // the list belong to other threads.
                    let mut ks: Vec<u32> = (0..per_batch)
                        .map(|i| ((b * per_batch + i) * THREADS) + t)
                        .collect();
                    ks.shuffle(&mut rng);
                    let owned: Vec<(Vec<u8>, Vec<u8>)> =
                        ks.iter().map(|&k| (key_of(k), value_of(k))).collect();
                    let hints = if hinted {
                        let strategy = STRATEGIES[b as usize % STRATEGIES.len()];
                        read_hints(mt, owned.iter().map(|(k, _)| k.as_slice()), strategy)
                    } else {
                        vec![None; owned.len()]
                    };
                    let batch: Vec<NewEntry<'_>> = ks
                        .iter()
                        .zip(&owned)
                        .zip(hints)
                        .map(|((&k, (key, v)), hint)| NewEntry {
                            seq: u64::from(k) + 1,
                            t: ValueType::Value,
                            user_key: key,
                            value: v,
                            hint,
                        })
                        .collect();
                    mt.insert_many(&batch).unwrap();
                    let keys: Vec<Vec<u8>> = {
                        let mut sorted: Vec<Vec<u8>> =
                            owned.iter().map(|(k, _)| k.clone()).collect();
                        sorted.sort();
                        sorted
                    };
                    let got = multi(mt, &keys, MAX_SEQUENCE, BatchLookup::Bfs).unwrap();
                    for (k, g) in keys.iter().zip(got) {
                        let want = owned.iter().find(|(o, _)| o == k).unwrap().1.clone();
                        assert_eq!(g, Some(Found::Value(want)), "{k:?} after its batch");
                    }
                }
            });
        }
    });
    let total = (THREADS * batches * per_batch) as usize;
    assert_eq!(mt.num_entries() as usize, total);
    let mut it = mt.clone().iter();
    it.seek_to_first();
    let (mut n, mut last) = (0, Vec::new());
    while it.valid() {
        assert!(last.is_empty() || crate::key::compare_internal_keys(&last, it.key()).is_lt());
        last = it.key().to_vec();
        n += 1;
        it.next();
    }
    assert_eq!(n, total);
}

/// `seek_for_prev` seeks, then steps back while past the target. An insert
/// by another thread can land between the target and the seek's position
/// (or after the end, when the seek found nothing): one step back then
/// stopped on the new entry, past the target. The merging iterator, moving
/// back from a bounded iterator's upper bound, repositions the memtable so
/// and took it as the last entry before the bound: the entry it was moving
/// back from came out again, a key at or above the upper bound (crash test
/// "reverse scan ... returned keys outside its bounds"). Inserts at the
/// racing moment are made deterministically through the iterator's hook.
#[test]
fn seek_for_prev_stays_at_or_below_its_target_despite_inserts_during_it() {
    let ik = |k: &[u8], seq: u64| {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, ValueType::Value);
        v
    };
    let target = crate::key::lookup_key(b"b", MAX_SEQUENCE);
    // A memtable holding `(a, 1)` and `before`, an iterator on it whose
    // seek_for_prev(target) sees `racer` inserted right after its seek.
    let race = |huge_pages: bool, before: &[(u64, &'static [u8])], racer: (u64, &'static [u8])| {
        let mt = Arc::new(SkipListMemTable::new(small_opts(huge_pages)));
        mt.insert(1, ValueType::Value, b"a", b"va").unwrap();
        for &(seq, k) in before {
            mt.insert(seq, ValueType::Value, k, b"v").unwrap();
        }
        let mut it = super::iter::SkipListIter::new(Arc::clone(&mt));
        let mut once = Some(move || mt.insert(racer.0, ValueType::Value, racer.1, b"v").unwrap());
        it.after_seek = Some(Box::new(move || {
            if let Some(f) = once.take() {
                f()
            }
        }));
        it.seek_for_prev(&target);
        assert!(it.valid());
        assert_eq!(it.key(), &ik(b"a", 1)[..], "landed past the target");
        assert_eq!(it.value(), b"va");
        it.status().unwrap();
        it
    };
    // An entry lands between the target and the seek's stop: (b, 5) sorts
    // after the lookup key for b and before (c, 2). It is there for a
    // later seek, which finds it after the target.
    let mut it = race(false, &[(2, b"c")], (5, b"b"));
    it.seek(&target);
    assert_eq!(it.key(), &ik(b"b", 5)[..]);
    // An entry lands after the end while the seek finds nothing.
    race(true, &[], (3, b"c"));
}

/// The insert hints a hinted batch read gives `keys` (any order, distinct),
/// in their order; every key gets one.
fn read_hints<'k>(
    mt: &SkipListMemTable,
    keys: impl Iterator<Item = &'k [u8]>,
    strategy: BatchLookup,
) -> Vec<Option<InsertHint>> {
    let keys: Vec<&[u8]> = keys.collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    let sorted: Vec<&[u8]> = order.iter().map(|&i| keys[i]).collect();
    let mut hints = vec![None; keys.len()];
    mt.multi_get_hinted(
        &sorted,
        MAX_SEQUENCE,
        strategy,
        &mut |_, _| {},
        &mut |j, h| {
            assert!(hints[order[j]].replace(h).is_none(), "key {j} hinted twice");
        },
    )
    .unwrap();
    assert!(
        hints.iter().all(Option::is_some),
        "{strategy:?} hints every key"
    );
    hints
}

/// Inserts written with the hints of a read before them store exactly what
/// plain inserts store, whatever happened between the read and the write:
/// other keys inserted next to them (stale hints), newer versions of the
/// read keys than the read's snapshot saw (the hint's node then sorts after
/// the new entry: refused), hints of another memtable (ignored). Fresh
/// hints of this list are accepted, so the hinted path is the one taken.
#[test]
fn hinted_inserts_match_the_model() {
    let mut rng = StdRng::seed_from_u64(12);
    let other = SkipListMemTable::new(small_opts(false));
    other
        .insert(1, ValueType::Value, &key_of(250), b"x")
        .unwrap();
    for paranoid in [false, true] {
        let mt = SkipListMemTable::new(small_opts(paranoid));
        let mut model = Model::default();
        let mut seq = 1;
        let mut accepted = 0;
        for round in 0..300 {
            let n = rng.random_range(1..80);
            let mut keys: Vec<Vec<u8>> = (0..n).map(|_| key_of(rng.random_range(0..500))).collect();
            keys.sort();
            keys.dedup();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let strategy = STRATEGIES[round % STRATEGIES.len()];
            // Reads at an older snapshot now and then: their hints may sit
            // on versions newer than the snapshot.
            let snap = if round % 5 == 4 {
                seq / 2
            } else {
                MAX_SEQUENCE
            };
            let mut hints = vec![None; keys.len()];
            let source = if round % 7 == 6 { &other } else { &mt };
            source
                .multi_get_hinted(&refs, snap, strategy, &mut |_, _| {}, &mut |i, h| {
                    hints[i] = Some(h);
                })
                .unwrap();
            if paranoid && std::ptr::eq(source, &mt) {
                assert!(
                    hints.iter().all(Option::is_none),
                    "paranoid reads give no hints"
                );
            }
            // Between the read and the write: other keys next to them, and
            // newer versions of some of the read keys.
            for _ in 0..rng.random_range(0..20) {
                let k = if rng.random_bool(0.5) {
                    keys[rng.random_range(0..keys.len())].clone()
                } else {
                    key_of(rng.random_range(0..500))
                };
                seq += 1;
                model.insert(&mt, &k, seq, Some(format!("between{seq}").as_bytes()));
            }
            let first = seq + 1;
            let values: Vec<Option<Vec<u8>>> = keys
                .iter()
                .map(|_| {
                    rng.random_bool(0.8)
                        .then(|| format!("w{round}").into_bytes())
                })
                .collect();
            let batch: Vec<NewEntry<'_>> = (keys.iter().zip(&values).zip(&hints))
                .enumerate()
                .map(|(i, ((k, v), &hint))| entry(first + i as u64, k, v, hint))
                .collect();
            accepted += batch
                .iter()
                .filter(|e| {
                    let trailer = pack_trailer(e.seq, e.t);
                    mt.list.hinted_path(e.hint, e.user_key, trailer).is_some()
                })
                .count();
            mt.insert_many(&batch).unwrap();
            seq = first + keys.len() as u64;
            for (k, (v, e)) in keys.iter().zip(values.iter().zip(&batch)) {
                let f = v.clone().map_or(Found::Deleted, Found::Value);
                model.map.insert((k.clone(), Reverse(e.seq)), f);
            }
        }
        if !paranoid {
            assert!(accepted > 1000, "hints were taken: {accepted}");
        }
        assert_holds_the_model(mt, &model, paranoid);
    }
}

/// Every strategy's hint holds the search's exact [`list::Path`]: at each
/// of the lowest `HINT_LEVELS` levels, the last node before the lookup key
/// there (found by walking that level from the head), the head at levels
/// the list does not reach. Lists from 1 to 3,000 keys (heights from 1),
/// batches of 1 to 200 keys present and absent, reads at old snapshots.
#[test]
fn hints_hold_the_search_path_at_every_level() {
    use crate::memtable::HINT_LEVELS;
    let mut rng = StdRng::seed_from_u64(41);
    for n_keys in [1, 3, 20, 300, 3000] {
        let (mt, _, max_seq) = build(&mut rng, small_opts(false), n_keys);
        let list = &mt.list;
        for _ in 0..20 {
            let mut ids: Vec<u32> = (0..rng.random_range(1..200))
                .map(|_| rng.random_range(0..n_keys * 2 + 2))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let keys: Vec<Vec<u8>> = ids.iter().map(|&i| key_of(i)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            let snap = rng.random_range(1..=max_seq);
            let trailer = lookup_trailer(snap);
            // The last node before `key` at `level`, walking from the head
            // (which has every level): only nodes of height > level are
            // on that level's chain.
            let expected = |key: &[u8], level: usize| -> usize {
                let mut x = list.head;
                loop {
                    // SAFETY: `x` is the head or a node reached at `level`.
                    let z = unsafe { node::next(x, level) };
                    // SAFETY: `z` is a linked non-head node.
                    if z.is_null() || !unsafe { list::node_lt(z, key, trailer) } {
                        return x as usize;
                    }
                    x = z;
                }
            };
            for strategy in [BatchLookup::PerKey, BatchLookup::Finger, BatchLookup::Bfs] {
                let mut hints = vec![None; keys.len()];
                mt.multi_get_hinted(&refs, snap, strategy, &mut |_, _| {}, &mut |i, h| {
                    assert!(hints[i].replace(h).is_none(), "key {i} hinted twice");
                })
                .unwrap();
                for (k, h) in keys.iter().zip(&hints) {
                    let h = h.expect("every key is hinted");
                    let want: [usize; HINT_LEVELS] = std::array::from_fn(|l| expected(k, l));
                    assert_eq!(h.path, want, "{strategy:?}, {n_keys} keys");
                }
            }
        }
    }
}

/// A hint is refused where the new entry would not follow its node: a
/// newer version of the key than the read saw, or another list's hint.
#[test]
fn hints_that_no_longer_fit_are_refused() {
    let mt = SkipListMemTable::new(small_opts(false));
    for (i, seq) in [(1, 1), (2, 2), (3, 3)] {
        mt.insert(seq, ValueType::Value, &key_of(i), b"v").unwrap();
    }
    let (k2, k3) = (key_of(2), key_of(3));
    let read = |snap| {
        let mut hint = None;
        let keys = [k2.as_slice(), k3.as_slice()];
        (mt.multi_get_hinted(
            &keys,
            snap,
            BatchLookup::Bfs,
            &mut |_, _| {},
            &mut |i, h| {
                if i == 0 {
                    hint = Some(h);
                }
            },
        ))
        .unwrap();
        hint
    };
    let fresh = read(MAX_SEQUENCE);
    let new = pack_trailer(10, ValueType::Value);
    assert!(mt.list.hinted_path(fresh, &k2, new).is_some());
    // A read at snapshot 1 passes key2@5 and key2@2 (both newer than it):
    // its hint is key2@2, which sorts after key2@10.
    mt.insert(5, ValueType::Value, &k2, b"v5").unwrap();
    let old = read(1);
    assert!(
        mt.list.hinted_path(old, &k2, new).is_none(),
        "key2@5 sorts after key2@10"
    );
    let other = SkipListMemTable::new(small_opts(false));
    assert!(
        other.list.hinted_path(fresh, &k2, new).is_none(),
        "another list's hint"
    );
    assert!(mt.list.hinted_path(None, &k2, new).is_none());
}

/// The point index under racing writers of the same keys: a get never
/// returns a version older than one whose insert had returned before it
/// (the index's invariant 2), whether the key's bucket holds it, holds it
/// twice or overflowed (64 buckets: some overflow; 4096: none).
#[test]
fn point_index_gets_see_every_finished_insert_under_racing_writers() {
    use std::sync::atomic::AtomicU64;
    const KEYS: usize = 600;
    const WRITERS: usize = 3;
    const PER_WRITER: usize = 8_000;
    for buckets in [64, 4096] {
        let mt = Arc::new(SkipListMemTable::new(SkipListOptions {
            arena_block_size: 64 << 10,
            huge_pages: false,
            point_index_buckets: buckets,
            ..SkipListOptions::default()
        }));
        let next_seq = Arc::new(AtomicU64::new(1));
        // Per key: the newest sequence whose insert returned.
        let finished: Arc<Vec<AtomicU64>> =
            Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
        let done = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for t in 0..WRITERS {
            let (mt, next_seq, finished, done) =
                (mt.clone(), next_seq.clone(), finished.clone(), done.clone());
            handles.push(std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(40 + t as u64);
                for _ in 0..PER_WRITER {
                    let k = rng.random_range(0..KEYS);
                    let seq = next_seq.fetch_add(1, Ordering::Relaxed);
                    let value = seq.to_le_bytes();
                    if rng.random_bool(0.1) {
                        mt.insert(seq, ValueType::Deletion, &key_of(k as u32), &[])
                            .unwrap();
                    } else {
                        mt.insert(seq, ValueType::Value, &key_of(k as u32), &value)
                            .unwrap();
                    }
                    finished[k].fetch_max(seq, Ordering::Release);
                }
                done.fetch_add(1, Ordering::Release);
            }));
        }
        let reader = {
            let (mt, finished, done) = (mt.clone(), finished.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(99);
                let mut checked = 0u64;
                while done.load(Ordering::Acquire) < WRITERS || checked < 10_000 {
                    let k = rng.random_range(0..KEYS);
                    let floor = finished[k].load(Ordering::Acquire);
                    let got = mt.get_versioned(&key_of(k as u32), MAX_SEQUENCE).unwrap();
                    let seq = got.map_or(0, |(s, _)| s);
                    assert!(
                        seq >= floor,
                        "{buckets} buckets: key {k} read at sequence {seq}, \
                         but the insert of {floor} had returned"
                    );
                    if let Some((s, EntryRef::Value(v))) = got {
                        assert_eq!(v, s.to_le_bytes(), "key {k}: the value of another version");
                    }
                    // A batch (through the index's batched probe): each
                    // value's version is at least what had been written.
                    let mut batch: Vec<usize> = (0..8).map(|_| rng.random_range(0..KEYS)).collect();
                    batch.sort_unstable();
                    batch.dedup();
                    let floors: Vec<u64> = batch
                        .iter()
                        .map(|&b| finished[b].load(Ordering::Acquire))
                        .collect();
                    let keys: Vec<Vec<u8>> = batch.iter().map(|&b| key_of(b as u32)).collect();
                    let got = multi(&mt, &keys, MAX_SEQUENCE, BatchLookup::Bfs).unwrap();
                    for ((b, floor), g) in batch.iter().zip(&floors).zip(got) {
                        match g {
                            None => assert_eq!(*floor, 0, "{buckets} buckets: key {b} not found"),
                            Some(Found::Value(v)) => {
                                let s = u64::from_le_bytes(v.try_into().unwrap());
                                assert!(s >= *floor, "{buckets} buckets: key {b} at {s} < {floor}");
                            }
                            Some(Found::Deleted) => {}
                        }
                    }
                    checked += 1;
                }
            })
        };
        for h in handles {
            h.join().unwrap();
        }
        reader.join().unwrap();
        // Afterwards every key's get is its newest version, at every
        // snapshot a sample takes.
        let plain = SkipListMemTable::new(small_opts(false));
        let mut it = mt.clone().iter();
        it.seek_to_first();
        while it.valid() {
            let k = it.key();
            let user = &k[..k.len() - TRAILER_LEN];
            let tr = crate::key::trailer(k);
            let t = ValueType::from_u8(tr as u8).unwrap();
            plain.insert(tr >> 8, t, user, it.value()).unwrap();
            it.next();
        }
        let last = next_seq.load(Ordering::Relaxed);
        for k in 0..KEYS {
            for snap in [1, last / 4, last / 2, last - 1, MAX_SEQUENCE] {
                let key = key_of(k as u32);
                assert_eq!(
                    mt.get(&key, snap).unwrap().map(Found::from),
                    plain.get(&key, snap).unwrap().map(Found::from),
                    "{buckets} buckets: key {k} at {snap}"
                );
            }
        }
    }
}

/// The iterator's `seek_near` starts from the last one's path (finger
/// search), up or down from it: seeks in any order (near the last one, far
/// from it, to the same target, between `next` calls and plain seeks that
/// move the position but not the path) land where the model says,
/// paranoid or not.
#[test]
fn reseeks_in_any_order_land_where_a_fresh_search_does() {
    for paranoid in [false, true] {
        let mut rng = StdRng::seed_from_u64(31);
        // Enough keys for towers of several levels.
        let (mt, model, seq) = build(&mut rng, small_opts(paranoid), 3000);
        let want = model.entries();
        let mt = Arc::new(mt);
        let mut it = mt.clone().iter();
        let mut i = rng.random_range(0..6002u32);
        for step in 0..4000 {
            i = match step % 4 {
                // Near the last target, either side.
                0 | 1 => (i as i64 + rng.random_range(-40..=40)).clamp(0, 6002) as u32,
                // Anywhere.
                2 => rng.random_range(0..6002),
                // The same user key again.
                _ => i,
            };
            let snap = [0, seq / 2, MAX_SEQUENCE][rng.random_range(0..3)];
            if step % 7 == 0 {
                // A plain seek elsewhere leaves the finger where it was.
                it.seek(&crate::key::lookup_key(
                    &key_of(rng.random_range(0..6002)),
                    snap,
                ));
            }
            let target = crate::key::lookup_key(&key_of(i), snap);
            it.seek_near(&target);
            let ge = want
                .iter()
                .position(|(k, _)| crate::key::compare_internal_keys(k, &target).is_ge());
            assert_eq!(it.valid(), ge.is_some(), "seek {step} to key {i} at {snap}");
            if let Some(p) = ge {
                assert_eq!(it.key(), &want[p].0[..], "seek {step} to key {i} at {snap}");
                let steps = rng.random_range(0..4);
                for (k, _) in want.iter().skip(p + 1).take(steps) {
                    it.next();
                    assert_eq!(it.key(), &k[..]);
                }
            }
            it.status().unwrap();
        }
    }
}

/// A memtable of the even keys `key_of(0..4000 step 2)` and a thread
/// inserting the odd ones between them, ascending or (`descending`)
/// descending, calling `inserted(i)` after key `2i + 1`.
fn even_keys_and_odd_writer(
    descending: bool,
    inserted: impl Fn(u32) + Send + 'static,
) -> (Arc<SkipListMemTable>, std::thread::JoinHandle<()>) {
    let mt = Arc::new(SkipListMemTable::new(small_opts(false)));
    for i in 0..2000u32 {
        mt.insert(u64::from(i) + 1, ValueType::Value, &key_of(i * 2), b"v")
            .unwrap();
    }
    let writer = {
        let mt = Arc::clone(&mt);
        std::thread::spawn(move || {
            for j in 0..2000u32 {
                let i = if descending { 1999 - j } else { j };
                mt.insert(
                    10_000 + u64::from(i),
                    ValueType::Value,
                    &key_of(i * 2 + 1),
                    b"w",
                )
                .unwrap();
                inserted(i);
            }
        })
    };
    (mt, writer)
}

/// `prev` searches for the current key from the finger: runs of steps
/// back, mixed with `next`, `seek_near` and plain seeks (which move the
/// position but not the finger), land on the entry before, paranoid or
/// not, down to "not valid" before the first entry.
#[test]
fn steps_back_land_where_a_fresh_search_does() {
    for paranoid in [false, true] {
        let mut rng = StdRng::seed_from_u64(47);
        let (mt, model, _) = build(&mut rng, small_opts(paranoid), 3000);
        let want = model.entries();
        let mt = Arc::new(mt);
        let mut it = mt.clone().iter();
        for step in 0..1500 {
            let p = rng.random_range(0..want.len());
            match step % 3 {
                0 => it.seek_near(&want[p].0),
                1 => it.seek(&want[p].0),
                _ => {
                    it.seek_near(&want[rng.random_range(0..want.len())].0);
                    it.seek(&want[p].0);
                }
            }
            assert_eq!(it.key(), &want[p].0[..], "step {step}");
            let mut at = p;
            for _ in 0..rng.random_range(1..40) {
                if rng.random_range(0..5) == 0 && at + 1 < want.len() {
                    it.next();
                    at += 1;
                } else {
                    it.prev();
                    if at == 0 {
                        assert!(!it.valid(), "step {step}: before the first");
                        break;
                    }
                    at -= 1;
                }
                assert_eq!(it.key(), &want[at].0[..], "step {step}");
            }
            it.status().unwrap();
        }
        // The whole list backward.
        it.seek_to_last();
        let mut back = 0;
        while it.valid() {
            back += 1;
            assert_eq!(it.key(), &want[want.len() - back].0[..]);
            it.prev();
        }
        assert_eq!(back, want.len());
    }
}

/// Steps back racing inserts: each lands below the key it left and at or
/// after the last entry below it that was there before the step began
/// (the even keys from the start; the odd ones the writer, going down,
/// had inserted by then).
#[test]
fn steps_back_racing_inserts_never_skip_an_entry_that_was_there() {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Odd keys 2i + 1 with i ≥ this are in the list.
    let lowest = Arc::new(AtomicU32::new(2000));
    let (mt, writer) = {
        let lowest = Arc::clone(&lowest);
        even_keys_and_odd_writer(true, move |i| lowest.store(i, Ordering::Release))
    };
    let mut it = mt.clone().iter();
    for _ in 0..10 {
        it.seek_to_last();
        let mut last = crate::key::user_key(it.key()).to_vec();
        loop {
            let low = lowest.load(Ordering::Acquire);
            it.prev();
            if !it.valid() {
                break;
            }
            let k = crate::key::user_key(it.key()).to_vec();
            assert!(k < last, "stepped back from {last:?} to {k:?}");
            // The key just below `last` (`key` + 6 digits) if it was there
            // before the step, else the even one below it.
            let at: u32 = std::str::from_utf8(&last[3..]).unwrap().parse().unwrap();
            let below = at - 1;
            let there = below.is_multiple_of(2) || (below - 1) / 2 >= low;
            let b = key_of(if there { below } else { below - 1 });
            assert!(k >= b, "stepped back from {last:?} past {b:?} to {k:?}");
            last = k;
        }
        assert_eq!(last, key_of(0), "walked back to the first key");
    }
    writer.join().unwrap();
    it.status().unwrap();
}

/// Re-seeks racing inserts: every seek lands at or after its target and
/// at or before the first entry ≥ it that was there before the seek began
/// (entries inserted meanwhile may be found or not).
#[test]
fn reseeks_racing_inserts_never_skip_an_entry_that_was_there() {
    let (mt, writer) = even_keys_and_odd_writer(false, |_| {});
    let mut rng = StdRng::seed_from_u64(5);
    let mut it = mt.clone().iter();
    let mut i = 0u32;
    for _ in 0..20_000 {
        i = (i as i64 + rng.random_range(-30..=30)).clamp(0, 3999) as u32;
        let target = crate::key::lookup_key(&key_of(i), MAX_SEQUENCE);
        it.seek_near(&target);
        // The first even key ≥ key i: inserted before the writer started.
        let first_old = key_of(i.div_ceil(2) * 2);
        assert!(it.valid() || i > 3998, "seek to key {i} found nothing");
        if it.valid() {
            let k = crate::key::user_key(it.key()).to_vec();
            assert!(k >= key_of(i), "seek to key {i} landed before it");
            if i <= 3998 {
                assert!(k <= first_old, "seek to key {i} skipped {first_old:?}");
            }
        }
    }
    writer.join().unwrap();
    it.status().unwrap();
}
