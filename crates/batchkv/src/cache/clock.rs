//! [`ClockTable`]: one shard of the block cache — an open-addressing hash
//! table of `(table cache id, block offset) → block` whose slots double as the
//! ring of a CLOCK eviction policy. Not thread-safe by itself: the block
//! cache wraps each shard in a `Mutex`.
//!
//! Why not an LRU list: an LRU hit unlinks the entry and relinks it at the
//! head, writing two or three other entries scattered in memory — cache
//! misses on every hit, which on the SST read path cost as much as the
//! lookup itself. Here a hit sets one flag in the slot it already read.
//! Eviction sweeps a hand over the slots: a set flag is cleared (a second
//! chance), an entry whose flag is clear is evicted.
//!
//! Layout: linear probing over a power-of-two slot array, at most half
//! full (it doubles when an insert would pass that), deletions by backward
//! shift (no tombstones), so a lookup reads its home slot and, rarely, the
//! next few — usually one cache line.
//!
//! # Invariants
//! 1. Every occupied slot is reachable from its home slot by probing
//!    forward through occupied slots only (linear probing without
//!    tombstones; `remove_at` restores it).
//! 2. `len` counts the occupied slots and `2 * len <= slots.len()`.
//! 3. `usage` is the sum of the occupied slots' charges and
//!    `usage <= capacity` after every public call.

use std::sync::Arc;

use crate::prefetch::prefetch_read;

/// Cache key: the table's cache id (`BlockCache::new_id`) and the block's
/// offset in its file.
pub(crate) type BlockKey = (u64, u64);

/// A 64-bit hash of a key: multiply-shift of both halves (cache ids
/// are small, offsets multiples of a block size). The block cache picks
/// the shard from the top bits, [`ClockTable`] the slot from the low ones.
pub(crate) fn hash_key(key: &BlockKey) -> u64 {
    let h = (key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 32)
}

struct Entry<V> {
    key: BlockKey,
    value: Arc<V>,
    charge: usize,
    /// Set by a hit, cleared by a passing clock hand.
    referenced: bool,
}

/// Counters of one table since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClockStats {
    pub hits: u64,
    pub misses: u64,
    pub inserts: u64,
    pub evictions: u64,
}

/// A hash table with a charge capacity and CLOCK eviction.
pub(crate) struct ClockTable<V> {
    slots: Vec<Option<Entry<V>>>,
    len: usize,
    usage: usize,
    capacity: usize,
    hand: usize,
    pub(crate) stats: ClockStats,
}

const MIN_SLOTS: usize = 16;

impl<V> ClockTable<V> {
    /// An empty table holding at most `capacity` charge units.
    pub(crate) fn new(capacity: usize) -> ClockTable<V> {
        ClockTable {
            slots: std::iter::repeat_with(|| None).take(MIN_SLOTS).collect(),
            len: 0,
            usage: 0,
            capacity,
            hand: 0,
            stats: ClockStats::default(),
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask()
    }

    /// The slot holding `key`, if any.
    fn find(&self, key: &BlockKey, hash: u64) -> Option<usize> {
        let mut i = self.home(hash);
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) if e.key == *key => return Some(i),
                Some(_) => i = (i + 1) & self.mask(),
            }
        }
    }

    /// The address of the slot a lookup of `hash` reads first, for a
    /// prefetch ahead of [`ClockTable::get`].
    pub(crate) fn home_slot_addr(&self, hash: u64) -> *const u8 {
        (&self.slots[self.home(hash)] as *const Option<Entry<V>>).cast()
    }

    /// Starts fetching the value under `key` (the cache lines of its
    /// reference count, which [`ClockTable::get`] writes, and of the
    /// value's own fields): the second step
    /// of a batch of lookups, after [`ClockTable::home_slot_addr`] was
    /// prefetched. Neither counts as a lookup.
    pub(crate) fn prefetch_value(&self, key: &BlockKey, hash: u64) {
        // `find` returns only occupied slots.
        if let Some(e) = self.find(key, hash).and_then(|i| self.slots[i].as_ref()) {
            // The reference counts sit just before the value in the `Arc`
            // allocation; a prefetch of a stale address is harmless.
            // The value itself is read next (a block's fields lie on two or
            // three lines): every line from the counts to its end.
            let value = Arc::as_ptr(&e.value).cast::<u8>();
            let start = value.wrapping_sub(2 * std::mem::size_of::<usize>()) as usize;
            let end = value as usize + std::mem::size_of::<V>().max(1);
            for line in ((start & !63)..end).step_by(64) {
                prefetch_read(line as *const u8);
            }
        }
    }

    /// The value under `key` (whose hash is `hash`), marking it referenced.
    pub(crate) fn get(&mut self, key: &BlockKey, hash: u64) -> Option<Arc<V>> {
        // `find` returns only occupied slots.
        match self.find(key, hash).and_then(|i| self.slots[i].as_mut()) {
            Some(e) => {
                self.stats.hits += 1;
                e.referenced = true;
                Some(Arc::clone(&e.value))
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Inserts (or replaces) `key` with `charge`, evicting unreferenced
    /// entries as needed. An entry whose charge alone exceeds the capacity
    /// is not kept (the caller still has its value).
    pub(crate) fn insert(&mut self, key: BlockKey, hash: u64, value: Arc<V>, charge: usize) {
        self.stats.inserts += 1;
        if let Some(i) = self.find(&key, hash) {
            self.remove_at(i);
        }
        if charge > self.capacity {
            return;
        }
        while self.usage + charge > self.capacity && self.len > 0 {
            self.evict_one();
        }
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(hash);
        while self.slots[i].is_some() {
            i = (i + 1) & self.mask();
        }
        self.slots[i] = Some(Entry {
            key,
            value,
            charge,
            referenced: false,
        });
        self.len += 1;
        self.usage += charge;
    }

    /// Advances the hand to the first unreferenced entry, clearing the
    /// flags it passes, and evicts it. Terminates within two sweeps: the
    /// first clears every flag. Requires `len > 0`.
    fn evict_one(&mut self) {
        debug_assert!(self.len > 0);
        loop {
            self.hand = (self.hand + 1) & self.mask();
            if let Some(e) = &mut self.slots[self.hand] {
                if e.referenced {
                    e.referenced = false;
                } else {
                    self.remove_at(self.hand);
                    self.stats.evictions += 1;
                    return;
                }
            }
        }
    }

    /// Empties slot `i` and shifts later entries of its probe run back so
    /// that invariant 1 holds without tombstones.
    /// Callers pass an occupied slot; an empty one is left as it is.
    fn remove_at(&mut self, mut i: usize) {
        let Some(e) = self.slots[i].take() else {
            return;
        };
        self.len -= 1;
        self.usage -= e.charge;
        let mask = self.mask();
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some(next) = &self.slots[j] else { return };
            let home = self.home(hash_key(&next.key));
            // `next` may move to the hole at `i` unless its home lies
            // cyclically in (i, j]: then it would become unreachable.
            let home_in_between = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !home_in_between {
                self.slots[i] = self.slots[j].take();
                i = j;
            }
        }
    }

    fn grow(&mut self) {
        let bigger = std::iter::repeat_with(|| None)
            .take(self.slots.len() * 2)
            .collect();
        let old = std::mem::replace(&mut self.slots, bigger);
        for e in old.into_iter().flatten() {
            let mut i = self.home(hash_key(&e.key));
            while self.slots[i].is_some() {
                i = (i + 1) & self.mask();
            }
            self.slots[i] = Some(e);
        }
        self.hand &= self.mask();
    }

    /// Sum of the charges of the entries held.
    pub(crate) fn usage(&self) -> usize {
        self.usage
    }

    /// Number of entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(t: &mut ClockTable<u64>, key: BlockKey, charge: usize) {
        t.insert(key, hash_key(&key), Arc::new(key.1), charge);
    }

    fn get(t: &mut ClockTable<u64>, key: BlockKey) -> Option<u64> {
        t.get(&key, hash_key(&key)).map(|v| *v)
    }

    /// Every occupied slot reachable from its home through occupied slots.
    fn check_reachable(t: &ClockTable<u64>) {
        let mut occupied = 0;
        for (i, s) in t.slots.iter().enumerate() {
            if let Some(e) = s {
                occupied += 1;
                let mut p = t.home(hash_key(&e.key));
                while p != i {
                    assert!(t.slots[p].is_some(), "slot {i} unreachable from home");
                    p = (p + 1) & t.mask();
                }
            }
        }
        assert_eq!(occupied, t.len);
        assert!(2 * t.len <= t.slots.len());
    }

    #[test]
    fn a_referenced_entry_gets_a_second_chance() {
        let mut t = ClockTable::new(300);
        put(&mut t, (1, 0), 100);
        put(&mut t, (1, 1), 100);
        put(&mut t, (1, 2), 100);
        assert_eq!(get(&mut t, (1, 0)), Some(0));
        assert_eq!(get(&mut t, (1, 2)), Some(2));
        put(&mut t, (1, 3), 100); // full: evicts the only unreferenced one
        assert_eq!(get(&mut t, (1, 1)), None);
        assert_eq!(get(&mut t, (1, 0)), Some(0));
        assert_eq!(get(&mut t, (1, 2)), Some(2));
        assert_eq!(get(&mut t, (1, 3)), Some(3));
        assert_eq!(t.usage(), 300);
        assert_eq!(t.stats.evictions, 1);
        check_reachable(&t);
    }

    #[test]
    fn replacing_a_key_recharges_it_and_oversized_entries_are_not_kept() {
        let mut t = ClockTable::new(1000);
        put(&mut t, (2, 2), 100);
        put(&mut t, (2, 2), 300);
        assert_eq!((t.len(), t.usage()), (1, 300));
        put(&mut t, (3, 3), 1001);
        assert_eq!(get(&mut t, (3, 3)), None);
        assert_eq!((t.len(), t.usage()), (1, 300));
    }

    /// Random inserts, gets and evictions against a model of what must be
    /// present: the table never loses an entry it did not evict, never
    /// returns a wrong value, and stays within its capacity.
    #[test]
    fn random_operations_keep_every_entry_reachable() {
        let mut t = ClockTable::new(5_000);
        let mut present = std::collections::HashMap::new();
        let mut x: u64 = 0x1234_5678;
        for step in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 7, (x >> 8) % 600);
            if x.is_multiple_of(3) {
                let evictions = t.stats.evictions;
                put(&mut t, key, 10 + (x >> 20) as usize % 90);
                present.insert(key, key.1);
                if t.stats.evictions != evictions {
                    // Forget what may have gone; re-learn from the table.
                    present.retain(|k, _| t.find(k, hash_key(k)).is_some());
                }
            } else {
                let got = get(&mut t, key);
                if let Some(v) = got {
                    assert_eq!(v, key.1);
                }
                assert_eq!(got.is_some(), present.contains_key(&key), "step {step}");
            }
            assert!(t.usage() <= 5_000);
            if step % 5_000 == 0 {
                check_reachable(&t);
            }
        }
        check_reachable(&t);
        assert!(t.stats.evictions > 0);
    }
}
