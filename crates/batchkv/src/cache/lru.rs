//! [`LruCache`]: a map with a capacity in "charge" units (bytes for blocks,
//! 1 per open table) that evicts least-recently-used entries to stay within
//! it. Not thread-safe by itself: callers wrap it in a `Mutex` (one per
//! shard).
//!
//! Entries live in a slab (`Vec`) linked into a doubly-linked recency list
//! by index, and a `HashMap` finds them by key: lookup, insert and eviction
//! are O(1).

use std::collections::HashMap;
use std::hash::Hash;

const NIL: usize = usize::MAX;

struct Node<K, V> {
    key: K,
    value: Option<V>,
    charge: usize,
    /// Towards the most recently used end.
    newer: usize,
    /// Towards the least recently used end.
    older: usize,
}

/// A least-recently-used cache.
///
/// # Invariants
/// 1. `map` holds exactly the keys of the linked nodes; free slab slots are
///    in `free` and hold `value: None`.
/// 2. `usage` is the sum of the linked nodes' charges and `usage <=
///    capacity` after every public call.
/// 3. `newest`/`oldest` are the ends of the recency list (`NIL` when empty).
pub(crate) struct LruCache<K, V> {
    capacity: usize,
    usage: usize,
    map: HashMap<K, usize>,
    slab: Vec<Node<K, V>>,
    free: Vec<usize>,
    newest: usize,
    oldest: usize,
}

impl<K: Hash + Eq + Copy, V: Clone> LruCache<K, V> {
    /// An empty cache holding at most `capacity` charge units.
    pub(crate) fn new(capacity: usize) -> LruCache<K, V> {
        LruCache {
            capacity,
            usage: 0,
            map: HashMap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            newest: NIL,
            oldest: NIL,
        }
    }

    /// The value under `key`, marking it most recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<V> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_newest(i);
        self.slab[i].value.clone()
    }

    /// Inserts (or replaces) `key` with `charge`, evicting the least recently
    /// used entries as needed; returns how many were evicted. An entry whose
    /// charge alone exceeds the capacity is not kept (the caller still has
    /// its value).
    pub(crate) fn insert(&mut self, key: K, value: V, charge: usize) -> usize {
        self.remove(&key);
        if charge > self.capacity {
            return 0;
        }
        let mut evicted = 0;
        while self.usage + charge > self.capacity && self.oldest != NIL {
            let old = self.slab[self.oldest].key;
            self.remove(&old);
            evicted += 1;
        }
        let node = Node {
            key,
            value: Some(value),
            charge,
            newer: NIL,
            older: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = node;
                i
            }
            None => {
                self.slab.push(node);
                self.slab.len() - 1
            }
        };
        self.map.insert(key, i);
        self.push_newest(i);
        self.usage += charge;
        evicted
    }

    /// Drops `key`; true if it was there.
    pub(crate) fn remove(&mut self, key: &K) -> bool {
        let Some(i) = self.map.remove(key) else {
            return false;
        };
        self.unlink(i);
        self.usage -= self.slab[i].charge;
        self.slab[i].value = None;
        self.free.push(i);
        true
    }

    /// Every value held, in no particular order (recency unchanged).
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.slab.iter().filter_map(|n| n.value.as_ref())
    }

    /// Sum of the charges of the entries held.
    #[cfg(test)]
    pub(crate) fn usage(&self) -> usize {
        self.usage
    }

    /// Number of entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    fn unlink(&mut self, i: usize) {
        let (newer, older) = (self.slab[i].newer, self.slab[i].older);
        if newer == NIL {
            self.newest = older;
        } else {
            self.slab[newer].older = older;
        }
        if older == NIL {
            self.oldest = newer;
        } else {
            self.slab[older].newer = newer;
        }
    }

    fn push_newest(&mut self, i: usize) {
        self.slab[i].newer = NIL;
        self.slab[i].older = self.newest;
        if self.newest != NIL {
            self.slab[self.newest].newer = i;
        }
        self.newest = i;
        if self.oldest == NIL {
            self.oldest = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn evicts_least_recently_used_by_charge() {
        let mut c = LruCache::new(100);
        assert_eq!(c.insert(1u64, "a", 40), 0);
        assert_eq!(c.insert(2, "b", 40), 0);
        assert_eq!(c.get(&1), Some("a")); // 2 is now the oldest
        assert_eq!(c.insert(3, "c", 30), 1);
        assert_eq!(c.get(&2), None);
        assert_eq!((c.get(&1), c.get(&3)), (Some("a"), Some("c")));
        assert_eq!(c.usage(), 70);
        // Too big to keep at all: nothing is evicted for it.
        assert_eq!(c.insert(4, "d", 101), 0);
        assert_eq!((c.len(), c.usage()), (2, 70));
        // Replacing re-charges.
        c.insert(1, "A", 10);
        assert_eq!((c.get(&1), c.usage()), (Some("A"), 40));
        assert!(c.remove(&3) && !c.remove(&3));
        assert_eq!((c.len(), c.usage()), (1, 10));
    }

    proptest! {
        /// Against a model: a Vec in recency order, evicting from the front.
        #[test]
        fn matches_a_model(ops in proptest::collection::vec((0u8..3, 0u8..12, 1usize..40), 1..300)) {
            let cap = 100;
            let mut c = LruCache::new(cap);
            let mut model: Vec<(u8, usize)> = Vec::new(); // oldest first
            for (op, k, charge) in ops {
                match op {
                    0 => {
                        model.retain(|e| e.0 != k);
                        while model.iter().map(|e| e.1).sum::<usize>() + charge > cap {
                            model.remove(0);
                        }
                        model.push((k, charge));
                        c.insert(k, k as u32 * 1000 + charge as u32, charge);
                    }
                    1 => {
                        let pos = model.iter().position(|e| e.0 == k);
                        let got = c.get(&k);
                        match pos {
                            Some(p) => {
                                let e = model.remove(p);
                                prop_assert_eq!(got, Some(k as u32 * 1000 + e.1 as u32));
                                model.push(e);
                            }
                            None => prop_assert_eq!(got, None),
                        }
                    }
                    _ => {
                        let was = model.iter().any(|e| e.0 == k);
                        model.retain(|e| e.0 != k);
                        prop_assert_eq!(c.remove(&k), was);
                    }
                }
                prop_assert_eq!(c.usage(), model.iter().map(|e| e.1).sum::<usize>());
                prop_assert_eq!(c.len(), model.len());
            }
        }
    }
}
