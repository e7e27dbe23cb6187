//! [`BlockCache`]: decoded SST data blocks shared by every reader of a
//! database (or of several databases: [`Cache`](super::Cache)), keyed by
//! (table cache id, block offset), charged by the block's size in bytes.
//!
//! # Thread safety
//! `BlockCache` is `Send + Sync`. The key space is split over
//! [`NUM_SHARDS`] shards by a hash of the key; each shard is a
//! [`ClockTable`] behind its own `Mutex`, held only for the table
//! operation (never during I/O), so readers of different blocks rarely
//! contend. A hit writes only the slot it reads (CLOCK, not LRU; see
//! `clock.rs`), and the counters live in the shards, so readers on
//! different cores share no written cache line but the shard's. Blocks
//! are handed out as `Arc<Block>`: a block evicted while a reader uses it
//! stays alive until that reader drops it (such blocks are no longer
//! charged to the cache).
//!
//! # Invariants
//! 1. Each shard's capacity is `capacity / NUM_SHARDS` (at least 1 byte),
//!    so the cache holds at most `capacity` bytes of blocks in total.
//! 2. The counters only grow.
//! 3. [`BlockCache::new_id`] never returns the same id twice, so table
//!    readers given distinct ids never share a key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::clock::{hash_key, ClockTable};
use crate::prefetch::prefetch_read;
use crate::sst::block::Block;

pub(crate) use super::clock::BlockKey;

/// Number of shards (a power of two).
pub(crate) const NUM_SHARDS: usize = 16;

/// Counters of a [`BlockCache`] since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks inserted.
    pub inserts: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
}

/// Buffers of [`BlockCache::get_batch`], kept by its caller.
#[derive(Default)]
pub(crate) struct BatchBuffers {
    hashes: Vec<u64>,
    order: Vec<usize>,
}

/// A sharded CLOCK cache of data blocks with a byte capacity.
pub(crate) struct BlockCache {
    capacity: usize,
    shards: Vec<Mutex<ClockTable<Block>>>,
    /// The next table cache id to hand out (invariant 3).
    next_id: AtomicU64,
}

impl BlockCache {
    /// A cache holding at most `capacity` bytes of blocks.
    pub(crate) fn new(capacity: usize) -> BlockCache {
        let per_shard = (capacity / NUM_SHARDS).max(1);
        BlockCache {
            capacity,
            shards: (0..NUM_SHARDS)
                .map(|_| Mutex::new(ClockTable::new(per_shard)))
                .collect(),
            next_id: AtomicU64::new(1),
        }
    }

    /// A cache id no other caller of this cache was given: the first word
    /// of the keys of one table's blocks.
    pub(crate) fn new_id(&self) -> u64 {
        // Relaxed: only uniqueness matters, which the atomic add gives.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn shard_index(hash: u64) -> usize {
        (hash >> (64 - NUM_SHARDS.trailing_zeros())) as usize
    }

    fn lock(&self, hash: u64) -> MutexGuard<'_, ClockTable<Block>> {
        self.lock_shard(Self::shard_index(hash))
    }

    fn lock_shard(&self, shard: usize) -> MutexGuard<'_, ClockTable<Block>> {
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn shard(&self, key: &BlockKey) -> &Mutex<ClockTable<Block>> {
        &self.shards[Self::shard_index(hash_key(key))]
    }

    /// [`BlockCache::get`] for a batch: `out[i]` is the block under
    /// `keys[i]`. The lookups go in three passes — prefetch every key's
    /// slot, then (slots now at hand) prefetch every found block's header,
    /// then take the blocks — so their cache misses overlap instead of
    /// queueing. In each pass the keys are taken shard by shard, each
    /// shard's lock held once for all its keys (not once per key).
    pub(crate) fn get_batch(
        &self,
        keys: &[BlockKey],
        buf: &mut BatchBuffers,
        out: &mut Vec<Option<Arc<Block>>>,
    ) {
        out.clear();
        if let [key] = keys {
            out.push(self.get(key));
            return;
        }
        let BatchBuffers { hashes, order } = buf;
        hashes.clear();
        hashes.extend(keys.iter().map(hash_key));
        // The keys' indexes grouped by shard (a counting sort).
        let mut start = [0usize; NUM_SHARDS + 1];
        for &h in hashes.iter() {
            start[Self::shard_index(h) + 1] += 1;
        }
        for s in 0..NUM_SHARDS {
            start[s + 1] += start[s];
        }
        let mut next = start;
        order.clear();
        order.resize(keys.len(), 0);
        for (i, &h) in hashes.iter().enumerate() {
            let s = Self::shard_index(h);
            order[next[s]] = i;
            next[s] += 1;
        }
        let groups = || {
            (0..NUM_SHARDS)
                .filter(|&s| start[s] < start[s + 1])
                .map(|s| (s, &order[start[s]..start[s + 1]]))
        };
        for (s, group) in groups() {
            let table = self.lock_shard(s);
            for &i in group {
                prefetch_read(table.home_slot_addr(hashes[i]));
            }
        }
        for (s, group) in groups() {
            let table = self.lock_shard(s);
            for &i in group {
                table.prefetch_value(&keys[i], hashes[i]);
            }
        }
        out.resize(keys.len(), None);
        for (s, group) in groups() {
            let mut table = self.lock_shard(s);
            for &i in group {
                out[i] = table.get(&keys[i], hashes[i]);
            }
        }
    }

    /// The cached block under `key`, if any (counts a hit or a miss).
    pub(crate) fn get(&self, key: &BlockKey) -> Option<Arc<Block>> {
        let hash = hash_key(key);
        self.lock(hash).get(key, hash)
    }

    /// Caches `block` under `key`, charged by its size.
    pub(crate) fn insert(&self, key: BlockKey, block: Arc<Block>) {
        let charge = block.size();
        let hash = hash_key(&key);
        self.lock(hash).insert(key, hash, block, charge);
    }

    /// Bytes of blocks held now.
    pub(crate) fn usage(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).usage())
            .sum()
    }

    /// The configured capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The counters so far (summed over the shards).
    pub(crate) fn stats(&self) -> CacheStats {
        let mut total = CacheStats::default();
        for s in &self.shards {
            let st = s.lock().unwrap_or_else(PoisonError::into_inner).stats;
            total.hits += st.hits;
            total.misses += st.misses;
            total.inserts += st.inserts;
            total.evictions += st.evictions;
        }
        total
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::block::builder::BlockBuilder;
    use crate::sst::block::KeyOrder;

    /// A valid block of roughly `n` bytes.
    fn block(n: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(1);
        b.add(b"k", &vec![7u8; n.saturating_sub(20)]);
        Arc::new(Block::new(b.finish(), KeyOrder::Bytewise, "t".into(), 0).unwrap())
    }

    #[test]
    fn hits_misses_and_eviction_by_bytes() {
        let cache = BlockCache::new(16 * 1000);
        assert_eq!(cache.capacity(), 16_000);
        // Keys landing in one shard (capacity 1000 bytes there).
        let same_shard: Vec<BlockKey> = (0..10_000u64)
            .map(|o| (1, o * 4096))
            .filter(|k| std::ptr::eq(cache.shard(k), cache.shard(&(1, 0))))
            .take(5)
            .collect();
        assert_eq!(same_shard.len(), 5);
        let b = block(400);
        let size = b.size();
        assert!(size > 333 && size <= 500, "{size}");
        cache.insert(same_shard[0], b.clone());
        cache.insert(same_shard[1], b.clone());
        assert!(cache.get(&same_shard[0]).is_some()); // [0] referenced, [1] not
        cache.insert(same_shard[2], b.clone()); // 3 × size > 1000: evicts [1]
        assert!(cache.get(&same_shard[1]).is_none());
        assert!(cache.get(&same_shard[0]).is_some());
        assert!(cache.get(&same_shard[2]).is_some());
        assert_eq!(cache.usage(), 2 * size);
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 3,
                misses: 1,
                inserts: 3,
                evictions: 1
            }
        );
        // A block larger than a shard is never kept.
        cache.insert((9, 9), block(2000));
        assert!(cache.get(&(9, 9)).is_none());
    }

    #[test]
    fn keys_spread_over_every_shard_and_total_stays_bounded() {
        let cache = BlockCache::new(64 * 1024);
        let mut used = [0usize; NUM_SHARDS];
        let b = block(1000);
        for file in 1..20u64 {
            for off in 0..50u64 {
                let key = (file, off * 4123);
                let s = cache.shard(&key) as *const _;
                let idx = cache
                    .shards
                    .iter()
                    .position(|m| std::ptr::eq(m, s))
                    .unwrap();
                used[idx] += 1;
                cache.insert(key, b.clone());
            }
        }
        // 950 keys over 16 shards: every shard gets a fair share.
        assert!(used.iter().all(|&n| n > 950 / NUM_SHARDS / 2), "{used:?}");
        assert!(cache.usage() <= 64 * 1024);
        assert!(cache.usage() > 64 * 1024 / 2);
        assert!(cache.stats().evictions > 0);
    }

    #[test]
    fn batch_lookups_match_single_ones() {
        let cache = BlockCache::new(1 << 20);
        let b = block(100);
        for off in (0..200u64).step_by(2) {
            cache.insert((3, off), b.clone());
        }
        let single = BlockCache::new(1 << 20);
        for off in (0..200u64).step_by(2) {
            single.insert((3, off), b.clone());
        }
        let mut buf = BatchBuffers::default();
        let mut out = Vec::new();
        for keys in [
            (0..200u64).map(|o| (3, o)).collect::<Vec<_>>(),
            vec![(3, 4)],
            vec![(4, 4), (3, 4), (3, 4)],
            vec![],
        ] {
            cache.get_batch(&keys, &mut buf, &mut out);
            assert_eq!(out.len(), keys.len());
            for (k, got) in keys.iter().zip(&out) {
                assert_eq!(got.is_some(), single.get(k).is_some(), "{k:?}");
            }
        }
        assert_eq!(cache.stats(), single.stats());
    }

    #[test]
    fn concurrent_readers_and_writers() {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let b = block(500);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let cache = &cache;
                let b = b.clone();
                s.spawn(move || {
                    for i in 0..2000u64 {
                        let key = (t, i % 300);
                        if cache.get(&key).is_none() {
                            cache.insert(key, b.clone());
                        }
                    }
                });
            }
        });
        let st = cache.stats();
        assert_eq!(st.hits + st.misses, 8000);
        assert_eq!(st.inserts, st.misses);
        assert!(cache.usage() <= 1 << 20);
    }
}
