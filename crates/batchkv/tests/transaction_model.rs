//! Model test of optimistic transactions under real concurrency: random
//! transactions from several threads, plus a plain writer, interleave
//! freely; every history must be explainable by a serial one.
//!
//! Each round starts from a known state (the model's). Every thread begins
//! its transaction, then all meet at a barrier, so each snapshot is exactly
//! the round's starting state. After the barrier the threads read and
//! write at random (yielding between steps), commit, and a plain writer
//! puts and deletes (and sometimes flushes) at the same time. Every commit
//! and plain write is stamped with ticks of one shared counter taken just
//! before it starts and just after it returns. Then the round is checked:
//!
//! 1. Every read inside a transaction returned the round's starting state
//!    overlaid with the transaction's own writes (checked in the thread).
//! 2. Serializable for `get_for_update` keys: the committed transactions
//!    and plain writes have a serial order in which each committed
//!    transaction comes before every other writer of a key it read for
//!    update or wrote (it saw none of their writes, or it would have had
//!    to fail), and which agrees with real time (what ended before another
//!    began comes first). Such an order must exist: the graph of those
//!    "must come before" edges has no cycle.
//! 3. Each conflict reported is real: the key named is one the transaction
//!    read for update or wrote, and a committed transaction or plain write
//!    of that key began before the failed commit returned.
//! 4. The database afterwards equals the model: each key's last writer in
//!    the serial order (unique: a key's writers are ordered by 2).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};

use batchkv::{Db, Error, Options, Transaction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;
/// A small key space, so transactions collide often.
const KEYS: u64 = 12;
const ROUNDS: u64 = 300;

type State = BTreeMap<Vec<u8>, Vec<u8>>;
/// A transaction's own writes: each key's final value (`None`: deleted).
type Own = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// A committed transaction or plain write, or a failed commit.
#[derive(Debug)]
struct Writer {
    name: String,
    /// A transaction (else a plain write).
    is_txn: bool,
    /// Keys read with `get_for_update` or written (transactions only:
    /// a plain write's footprint is its key).
    footprint: BTreeSet<Vec<u8>>,
    /// Each written key's final value.
    writes: Own,
    /// Ticks taken just before the commit (or write) started and just
    /// after it returned.
    begin: u64,
    end: u64,
    /// `None` if it committed; else the key the conflict named.
    conflict: Option<Vec<u8>>,
}

/// The shared clock: every stamp is unique and, because `fetch_add` on one
/// atomic is totally ordered, a stamp taken after another operation
/// returned is larger than every stamp taken before it started.
struct Clock(AtomicU64);

impl Clock {
    fn tick(&self) -> u64 {
        // SeqCst: the stamps order events across threads (real time).
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

/// What the transaction must see for `k`: its own write, else the start.
fn view(start: &State, own: &Own, k: &[u8]) -> Option<Vec<u8>> {
    match own.get(k) {
        Some(v) => v.clone(),
        None => start.get(k).cloned(),
    }
}

/// Runs one random transaction (already begun at the round's start),
/// checking every read against the model, and commits it.
fn run_transaction(
    mut txn: Transaction,
    start: &State,
    rng: &mut StdRng,
    clock: &Clock,
    name: String,
) -> Writer {
    let mut own = Own::new();
    let mut tracked: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut savepoints: Vec<(Own, BTreeSet<Vec<u8>>)> = Vec::new();
    let steps = rng.random_range(1..8);
    for step in 0..steps {
        if rng.random_bool(0.5) {
            std::thread::yield_now();
        }
        let k = key(rng.random_range(0..KEYS));
        match rng.random_range(0..100) {
            0..=24 => {
                let got = txn.get_for_update(&k).unwrap();
                tracked.insert(k.clone());
                assert_eq!(got, view(start, &own, &k), "{name}: get_for_update");
            }
            25..=34 => {
                assert_eq!(txn.get(&k).unwrap(), view(start, &own, &k), "{name}: get");
            }
            35..=44 => {
                let keys: Vec<Vec<u8>> = (0..rng.random_range(1..5))
                    .map(|_| key(rng.random_range(0..KEYS)))
                    .collect();
                let for_update = rng.random_bool(0.5);
                let got = if for_update {
                    tracked.extend(keys.iter().cloned());
                    txn.multi_get_for_update(&keys)
                } else {
                    txn.multi_get(&keys)
                };
                for (k, r) in keys.iter().zip(got) {
                    assert_eq!(r.unwrap(), view(start, &own, k), "{name}: multi_get");
                }
            }
            45..=69 => {
                let v = format!("{name}-s{step}").into_bytes();
                txn.put(&k, &v).unwrap();
                own.insert(k, Some(v));
            }
            70..=79 => {
                txn.delete(&k).unwrap();
                own.insert(k, None);
            }
            80..=87 => {
                let (a, b) = (rng.random_range(0..KEYS), rng.random_range(0..=KEYS));
                let (lo, hi) = (key(a), key(b));
                let got: Vec<(Vec<u8>, Vec<u8>)> = txn
                    .range(lo.clone()..hi.clone())
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let mut want = State::new();
                if lo < hi {
                    let bounds = (Bound::Included(&lo), Bound::Excluded(&hi));
                    for (k, v) in start.range::<Vec<u8>, _>(bounds) {
                        want.insert(k.clone(), v.clone());
                    }
                    for (k, v) in own.range::<Vec<u8>, _>(bounds) {
                        match v {
                            Some(v) => want.insert(k.clone(), v.clone()),
                            None => want.remove(k),
                        };
                    }
                }
                assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{name}: range");
            }
            88..=93 => {
                txn.set_savepoint();
                savepoints.push((own.clone(), tracked.clone()));
            }
            _ => match savepoints.pop() {
                Some((o, t)) => {
                    txn.rollback_to_savepoint().unwrap();
                    (own, tracked) = (o, t);
                }
                None => assert!(txn.rollback_to_savepoint().is_err()),
            },
        }
    }
    let mut footprint = tracked;
    footprint.extend(own.keys().cloned());
    let begin = clock.tick();
    let result = txn.commit();
    let end = clock.tick();
    let conflict = match result {
        Ok(()) => None,
        Err(Error::Conflict { key, cf }) => {
            assert_eq!(cf, "default");
            Some(key)
        }
        Err(e) => panic!("{name}: commit failed with {e}"),
    };
    Writer {
        name,
        is_txn: true,
        footprint,
        writes: own,
        begin,
        end,
        conflict,
    }
}

/// The plain writer of a round: a few puts and deletes, sometimes a flush.
fn run_plain_writes(db: &Db, rng: &mut StdRng, clock: &Clock, round: u64) -> Vec<Writer> {
    let mut out = Vec::new();
    for i in 0..rng.random_range(0..4) {
        std::thread::yield_now();
        let k = key(rng.random_range(0..KEYS));
        let v = if rng.random_bool(0.8) {
            Some(format!("r{round}-plain{i}").into_bytes())
        } else {
            None
        };
        let begin = clock.tick();
        match &v {
            Some(v) => db.put(&k, v).unwrap(),
            None => db.delete(&k).unwrap(),
        }
        let end = clock.tick();
        if rng.random_bool(0.1) {
            db.flush().unwrap();
        }
        out.push(Writer {
            name: format!("r{round}-plain{i}"),
            is_txn: false,
            footprint: BTreeSet::from([k.clone()]),
            writes: BTreeMap::from([(k, v)]),
            begin,
            end,
            conflict: None,
        });
    }
    out
}

/// Checks 2–4 for one round's committed writers and failed commits, and
/// returns the state the database must now hold.
fn check_round(start: &State, writers: &[Writer]) -> State {
    let committed: Vec<&Writer> = writers.iter().filter(|w| w.conflict.is_none()).collect();
    // 3. Every conflict is real.
    for f in writers.iter().filter(|w| w.conflict.is_some()) {
        let k = f.conflict.as_ref().unwrap();
        assert!(
            f.footprint.contains(k),
            "{}: conflict on {:?}, which it neither wrote nor read for update",
            f.name,
            String::from_utf8_lossy(k)
        );
        assert!(
            committed
                .iter()
                .any(|w| w.writes.contains_key(k) && w.begin < f.end),
            "{}: conflict on {:?}, but no writer of it began before the commit returned",
            f.name,
            String::from_utf8_lossy(k)
        );
    }
    // 2. "a must come before b" edges among the committed writers.
    let n = committed.len();
    let mut before = vec![BTreeSet::new(); n];
    for (a, wa) in committed.iter().enumerate() {
        for (b, wb) in committed.iter().enumerate() {
            if a == b {
                continue;
            }
            let saw_none_of_b = wa.is_txn && wb.writes.keys().any(|k| wa.footprint.contains(k));
            if saw_none_of_b || wa.end < wb.begin {
                before[a].insert(b);
            }
        }
    }
    // Kahn's algorithm: a serial order, or the writers left on a cycle.
    let mut indegree = vec![0usize; n];
    for succ in &before {
        for &b in succ {
            indegree[b] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(a) = ready.pop() {
        order.push(a);
        for &b in &before[a] {
            indegree[b] -= 1;
            if indegree[b] == 0 {
                ready.push(b);
            }
        }
    }
    assert_eq!(
        order.len(),
        n,
        "no serial order explains the committed writers: {:#?}",
        (0..n)
            .filter(|&i| indegree[i] > 0)
            .map(|i| committed[i])
            .collect::<Vec<_>>()
    );
    // 4. Each key's writers are totally ordered by the edges (two
    // committed transactions never both write a key, and a transaction
    // comes before every plain write of its keys), so the result is the
    // same for every serial order.
    let mut state = start.clone();
    for i in order {
        for (k, v) in &committed[i].writes {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
    }
    state
}

fn run(seed: u64) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            // Small memtables (the plain writer also flushes): conflicts
            // must also be found in SST files.
            write_buffer_size: 32 * 1024,
            ..common::small_buffers()
        },
    )
    .unwrap();
    let clock = Clock(AtomicU64::new(0));
    let mut state = State::new();
    let (mut commits, mut conflicts) = (0, 0);
    for round in 0..ROUNDS {
        let begun = Barrier::new(THREADS + 1);
        let writers = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (db, state, clock, begun, writers) = (&db, &state, &clock, &begun, &writers);
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed ^ (round << 8) ^ t as u64);
                    let txn = db.transaction();
                    begun.wait();
                    let w = run_transaction(txn, state, &mut rng, clock, format!("r{round}-t{t}"));
                    writers.lock().unwrap().push(w);
                });
            }
            let mut rng = StdRng::seed_from_u64(seed ^ (round << 8) ^ 0xff);
            begun.wait();
            let plain = run_plain_writes(&db, &mut rng, &clock, round);
            writers.lock().unwrap().extend(plain);
        });
        let writers = writers.into_inner().unwrap();
        for w in writers.iter().filter(|w| w.is_txn) {
            if w.conflict.is_some() {
                conflicts += 1;
            } else if !w.writes.is_empty() {
                commits += 1;
            }
        }
        state = check_round(&state, &writers);
        assert_eq!(
            common::scan_all(&db),
            state.clone().into_iter().collect::<Vec<_>>(),
            "round {round}: the database differs from the model"
        );
    }
    (commits, conflicts)
}

#[test]
fn concurrent_transactions_are_serializable_and_conflicts_are_real() {
    common::for_each_memtable(|m| {
        let seed = rand::rng().random();
        eprintln!("seed {seed} memtable {m}");
        let (commits, conflicts) = run(seed);
        eprintln!("{commits} writing transactions committed, {conflicts} conflicts");
        // Both outcomes must occur, or the check above proved nothing.
        assert!(commits > ROUNDS as usize, "too few commits: {commits}");
        assert!(
            conflicts > ROUNDS as usize / 4,
            "too few conflicts: {conflicts}"
        );
    });
}
