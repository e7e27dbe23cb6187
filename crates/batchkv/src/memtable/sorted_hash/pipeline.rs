//! Software-pipelined batched lookups in a chained hash table (docs/design.md §5):
//! Redis's prefetch state machine, with an AMAC-style rolling window.
//!
//! Each in-flight lookup moves `Bucket → Entry → Key → Value → Done`:
//! - **Bucket**: hash the key, prefetch its bucket slot → Entry.
//! - **Entry**: load the chain head (or the next link); none → Done (miss);
//!   else prefetch the entry → Key.
//! - **Key**: prefetch the key bytes if they are out of line → Value.
//! - **Value**: compare; the entry is the answer → prefetch its value, Done;
//!   the chain cannot hold the key → Done (miss); else → Entry.
//!
//! The driver round-robins over a window of in-flight lookups and moves to
//! the next one only after a step issued a prefetch (a step that issues none
//! continues the same lookup), so the cache misses of different keys
//! overlap. When a lookup finishes its slot takes the next key of the batch
//! at once — a *rolling* window, unlike Redis's fixed batches of 16, which
//! wait for the slowest lookup of each batch (measured in C on this machine:
//! naive 12.0 M/s, fixed batches 11.9 M/s, rolling window of 32 21.7 M/s).
//!
//! The table is abstracted by [`ChainTable`], so any chained hash structure
//! in the engine can reuse the driver. Counters are returned per call in
//! [`PipelineCounts`] and accumulated by the caller in [`PipelineStats`],
//! apart from every other statistic.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::prefetch::prefetch_read;

/// Default number of lookups in flight (a core keeps ~15–16 misses in
/// flight; one lookup has at most one outstanding prefetch).
pub const DEFAULT_WINDOW: usize = 24;

/// What comparing a batch key against one chain entry decided.
pub(crate) enum Probe<E> {
    /// This entry is the answer.
    Hit,
    /// The answer, if any, is further down the chain (`None`: chain ended).
    Next(Option<E>),
    /// The chain cannot hold the key.
    Miss,
}

/// A chained hash table the driver can probe. Addresses are only
/// prefetched, never dereferenced by the driver.
pub(crate) trait ChainTable {
    /// A handle to one chain entry.
    type Entry: Copy;
    /// The bucket of `key`.
    fn bucket_of(&self, key: &[u8]) -> usize;
    /// Address of bucket `b`'s head slot.
    fn bucket_addr(&self, b: usize) -> *const u8;
    /// The head of bucket `b`'s chain.
    fn head(&self, b: usize) -> Option<Self::Entry>;
    /// Address of the entry header.
    fn entry_addr(&self, e: Self::Entry) -> *const u8;
    /// Address of the key bytes when they lie on another cache line than the
    /// header (then the Key step prefetches them).
    fn key_addr(&self, e: Self::Entry) -> Option<*const u8>;
    /// Address of the value bytes (prefetched on a hit).
    fn value_addr(&self, e: Self::Entry) -> *const u8;
    /// Compares `key` with entry `e`.
    fn probe(&self, e: Self::Entry, key: &[u8]) -> Probe<Self::Entry>;
}

/// Work done by one [`lookup_batch`] call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PipelineCounts {
    /// Batches run through the pipeline (1 per call).
    pub batches: u64,
    /// Keys looked up.
    pub lookups: u64,
    /// Prefetches issued (buckets, entries, keys and values).
    pub prefetches: u64,
}

/// Cumulative pipeline counters of one table (relaxed atomics: statistics).
#[derive(Debug, Default)]
pub(crate) struct PipelineStats {
    batches: AtomicU64,
    lookups: AtomicU64,
    prefetches: AtomicU64,
}

impl PipelineStats {
    pub(crate) fn add(&self, c: PipelineCounts) {
        // Relaxed: independent statistics, nothing is published through them.
        self.batches.fetch_add(c.batches, Ordering::Relaxed);
        self.lookups.fetch_add(c.lookups, Ordering::Relaxed);
        self.prefetches.fetch_add(c.prefetches, Ordering::Relaxed);
    }

    #[cfg(test)]
    pub(crate) fn get(&self) -> PipelineCounts {
        PipelineCounts {
            batches: self.batches.load(Ordering::Relaxed),
            lookups: self.lookups.load(Ordering::Relaxed),
            prefetches: self.prefetches.load(Ordering::Relaxed),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Bucket,
    Entry,
    Key,
    Value,
    Done,
}

struct Slot<E> {
    /// Index of the key in the batch.
    idx: usize,
    state: State,
    bucket: usize,
    /// At `Entry`: `None` means "load the bucket head"; else the entry.
    cur: Option<E>,
    at_head: bool,
}

/// Looks up every key of `keys` with `window` lookups in flight and calls
/// `hit(index, entry)` once for each key whose chain holds its answer (in
/// completion order). A window of 1 degenerates to one lookup at a time.
pub(crate) fn lookup_batch<T: ChainTable>(
    table: &T,
    keys: &[&[u8]],
    window: usize,
    mut hit: impl FnMut(usize, T::Entry),
) -> PipelineCounts {
    let mut counts = PipelineCounts {
        batches: 1,
        lookups: keys.len() as u64,
        prefetches: 0,
    };
    let w = window.clamp(1, keys.len().max(1));
    let mut slots: Vec<Slot<T::Entry>> = (0..w.min(keys.len()))
        .map(|idx| Slot {
            idx,
            state: State::Bucket,
            bucket: 0,
            cur: None,
            at_head: true,
        })
        .collect();
    let mut next_key = slots.len();
    let mut active = slots.len();
    let mut i = 0;
    while active > 0 {
        let s = &mut slots[i];
        if s.state != State::Done {
            step(table, keys, s, &mut counts, &mut hit);
            if s.state == State::Done {
                if next_key < keys.len() {
                    // Rolling window: the slot takes the next key at once.
                    *s = Slot {
                        idx: next_key,
                        state: State::Bucket,
                        bucket: 0,
                        cur: None,
                        at_head: true,
                    };
                    next_key += 1;
                    step(table, keys, s, &mut counts, &mut hit);
                } else {
                    active -= 1;
                }
            }
        }
        i += 1;
        if i == slots.len() {
            i = 0;
        }
    }
    counts
}

/// Advances one lookup until it issues a prefetch or finishes.
fn step<T: ChainTable>(
    t: &T,
    keys: &[&[u8]],
    s: &mut Slot<T::Entry>,
    counts: &mut PipelineCounts,
    hit: &mut impl FnMut(usize, T::Entry),
) {
    let key = keys[s.idx];
    loop {
        match s.state {
            State::Bucket => {
                s.bucket = t.bucket_of(key);
                prefetch_read(t.bucket_addr(s.bucket));
                counts.prefetches += 1;
                s.state = State::Entry;
                return;
            }
            State::Entry => {
                let e = if s.at_head {
                    s.at_head = false;
                    t.head(s.bucket)
                } else {
                    s.cur
                };
                match e {
                    None => {
                        s.state = State::Done;
                        return;
                    }
                    Some(e) => {
                        s.cur = Some(e);
                        prefetch_read(t.entry_addr(e));
                        counts.prefetches += 1;
                        s.state = State::Key;
                        return;
                    }
                }
            }
            State::Key => {
                s.state = State::Value;
                if let Some(e) = s.cur {
                    if let Some(a) = t.key_addr(e) {
                        prefetch_read(a);
                        counts.prefetches += 1;
                        return;
                    }
                }
            }
            State::Value => {
                let Some(e) = s.cur else {
                    s.state = State::Done;
                    return;
                };
                match t.probe(e, key) {
                    Probe::Hit => {
                        prefetch_read(t.value_addr(e));
                        counts.prefetches += 1;
                        hit(s.idx, e);
                        s.state = State::Done;
                        return;
                    }
                    Probe::Miss => {
                        s.state = State::Done;
                        return;
                    }
                    Probe::Next(n) => {
                        s.cur = n;
                        s.state = State::Entry;
                    }
                }
            }
            State::Done => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy chained table: buckets of sorted `u64` chains, keys are
    /// decimal strings.
    struct Toy {
        buckets: Vec<Vec<u64>>,
    }

    impl ChainTable for Toy {
        type Entry = (usize, usize);
        fn bucket_of(&self, key: &[u8]) -> usize {
            let k: u64 = std::str::from_utf8(key).unwrap().parse().unwrap();
            (k % self.buckets.len() as u64) as usize
        }
        fn bucket_addr(&self, b: usize) -> *const u8 {
            self.buckets[b].as_ptr().cast()
        }
        fn head(&self, b: usize) -> Option<(usize, usize)> {
            (!self.buckets[b].is_empty()).then_some((b, 0))
        }
        fn entry_addr(&self, e: (usize, usize)) -> *const u8 {
            self.buckets[e.0][e.1..].as_ptr().cast()
        }
        fn key_addr(&self, e: (usize, usize)) -> Option<*const u8> {
            (e.1 % 2 == 1).then(|| self.entry_addr(e))
        }
        fn value_addr(&self, e: (usize, usize)) -> *const u8 {
            self.entry_addr(e)
        }
        fn probe(&self, e: (usize, usize), key: &[u8]) -> Probe<(usize, usize)> {
            let k: u64 = std::str::from_utf8(key).unwrap().parse().unwrap();
            let v = self.buckets[e.0][e.1];
            match v.cmp(&k) {
                std::cmp::Ordering::Equal => Probe::Hit,
                std::cmp::Ordering::Greater => Probe::Miss,
                std::cmp::Ordering::Less => {
                    Probe::Next((e.1 + 1 < self.buckets[e.0].len()).then_some((e.0, e.1 + 1)))
                }
            }
        }
    }

    #[test]
    fn every_window_finds_exactly_the_present_keys_once() {
        let mut buckets = vec![Vec::new(); 7];
        for k in (0..300u64).filter(|k| k % 3 != 0) {
            buckets[(k % 7) as usize].push(k);
        }
        let toy = Toy { buckets };
        let keys: Vec<String> = (0..300u64).map(|k| k.to_string()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        for window in [0, 1, 2, 5, 16, 32, 1000] {
            let mut seen = vec![0u32; refs.len()];
            let c = lookup_batch(&toy, &refs, window, |i, e| {
                assert_eq!(toy.buckets[e.0][e.1], i as u64);
                seen[i] += 1;
            });
            for (k, &n) in seen.iter().enumerate() {
                assert_eq!(n, u32::from(k % 3 != 0), "key {k}, window {window}");
            }
            assert_eq!((c.batches, c.lookups), (1, 300));
            // One bucket prefetch per key, one value prefetch per hit, and at
            // least one entry prefetch per key with a non-empty chain.
            assert!(c.prefetches >= 300 + 200 + 200, "{c:?}");
        }
        let c = lookup_batch(&toy, &[], 16, |_, _| panic!("no keys"));
        assert_eq!((c.lookups, c.prefetches), (0, 0));
    }

    #[test]
    fn stats_accumulate_counts() {
        let s = PipelineStats::default();
        s.add(PipelineCounts {
            batches: 1,
            lookups: 10,
            prefetches: 30,
        });
        s.add(PipelineCounts {
            batches: 1,
            lookups: 5,
            prefetches: 12,
        });
        assert_eq!(
            s.get(),
            PipelineCounts {
                batches: 2,
                lookups: 15,
                prefetches: 42
            }
        );
    }
}
