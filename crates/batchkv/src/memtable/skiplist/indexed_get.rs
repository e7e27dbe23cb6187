//! Batched lookups through the point index (`point_index.rs`): per chunk
//! of keys, every bucket is prefetched, then every bucket probed and the
//! one candidate node of each key prefetched, then each candidate read.
//! A key's misses (bucket, node) overlap the other keys' as in the
//! pipelined hash lookups of §5. Keys whose bucket overflowed, or that two
//! ways claim, are searched in the list afterwards with the batch's
//! strategy.

use super::list::prefetch_node;
use super::point_index::{PointIndex, Probe, Tagged};
use super::{node, skip_newer, Node, SkipListMemTable};
use crate::error::Result;
use crate::memtable::{BatchLookup, EntryRef};

/// Keys probed together: enough buckets and nodes in flight to keep a
/// core's line-fill buffers busy, few enough that the first bucket is still
/// cached when it is probed.
const CHUNK: usize = 32;

impl SkipListMemTable {
    /// [`MemTable::multi_get`](crate::memtable::MemTable::multi_get) of
    /// sorted, distinct `keys` at `trailer`, unchecked and without hints,
    /// through `index`.
    pub(super) fn multi_get_indexed<'a>(
        &'a self,
        index: &PointIndex,
        keys: &[&[u8]],
        trailer: u64,
        strategy: BatchLookup,
        found: &mut dyn FnMut(usize, EntryRef<'a>),
    ) -> Result<()> {
        // Keys the index cannot answer, in order, with their positions.
        let mut rest: Vec<(usize, &[u8])> = Vec::new();
        let mut candidate = [std::ptr::null_mut::<Node>(); CHUNK];
        for (c, chunk) in keys.chunks(CHUNK).enumerate() {
            let base = c * CHUNK;
            let places: [_; CHUNK] =
                std::array::from_fn(|i| chunk.get(i).map(|k| index.place_and_prefetch(k)));
            for (i, place) in places.iter().enumerate() {
                let Some(place) = place else { break };
                candidate[i] = std::ptr::null_mut();
                match PointIndex::probe_tags(place) {
                    Tagged::Absent => {}
                    Tagged::One(n) => {
                        prefetch_node(n, 0);
                        candidate[i] = n;
                    }
                    Tagged::Several => match index.probe(chunk[i]) {
                        Probe::Newest(n) => candidate[i] = n,
                        Probe::Absent => {}
                        Probe::Unknown => rest.push((base + i, chunk[i])),
                    },
                    Tagged::Unknown => rest.push((base + i, chunk[i])),
                }
            }
            for (i, &user) in chunk.iter().enumerate() {
                let n = candidate[i];
                // SAFETY: ways hold linked nodes of this list (the index's
                // invariant 1), whose bytes live as long as `self`.
                if n.is_null() || !node::is_entry_of(unsafe { node::key(n) }, user) {
                    // No way holds the key (a tag shared with another key).
                    continue;
                }
                // SAFETY: `n` is a linked node holding `user` (checked above).
                let z = unsafe { skip_newer(n, user, trailer) };
                if let Some(e) = self.resolve_as::<false>(z, user)? {
                    found(base + i, e);
                }
            }
        }
        if rest.is_empty() {
            return Ok(());
        }
        let rest_keys: Vec<&[u8]> = rest.iter().map(|&(_, k)| k).collect();
        let mut emit = |j: usize, z: *mut Node, _: &super::Path| -> Result<()> {
            if let Some(e) = self.resolve_as::<false>(z, rest_keys[j])? {
                found(rest[j].0, e);
            }
            Ok(())
        };
        self.search::<false, false>(&rest_keys, trailer, strategy, &mut emit)
    }
}
