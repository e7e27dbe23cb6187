//! The SST fuzz targets: one block parsed and iterated on its own, and a
//! whole table opened and read through the engine's real paths (open,
//! iterate both ways, seek, get, multi_get).

use std::sync::Arc;

use super::assert_corruption;
use crate::cache::BlockCache;
use crate::checksum::mask_crc;
use crate::fs::mem::SliceFile;
use crate::iter::InternalIterator;
use crate::key::{lookup_key, parse_internal_key, user_key, MAX_SEQUENCE, TRAILER_LEN};
use crate::range_del::block as range_del_block;
use crate::sst::block::iter::{
    point_scan_agrees, search_restarts, seek_entry_from_restart, BlockIter,
};
use crate::sst::block::{Block, KeyOrder};
use crate::sst::format::{block_crc, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sst::{BlockReadOptions, Table, TableOptions};

const BLOCK_FILE: &str = "fuzz-block";
const BLOCK_OFFSET: u64 = 4096;
const RANGE_DEL_FILE: &str = "000123.sst";
const TABLE_FILE: &str = "fuzz.sst";
/// Most iterator steps one table scan takes (an index can point many
/// entries at one big block, so a table scan is not bounded by its size).
const MAX_TABLE_STEPS: usize = 20_000;
/// Most keys a table is probed with.
const MAX_PROBES: usize = 32;

/// One block. The first byte picks how the rest is parsed: `% 3 == 0` an
/// index block (internal keys), `1` a meta block (bytewise keys), `2` a
/// data block of either layout with restart interval `byte / 3`.
pub fn block(data: &[u8]) {
    let Some((&mode, contents)) = data.split_first() else {
        return;
    };
    let file: Arc<str> = BLOCK_FILE.into();
    let contents = contents.to_vec();
    let parsed = match mode % 3 {
        0 => Block::new(contents, KeyOrder::Internal, file, BLOCK_OFFSET),
        1 => Block::new(contents, KeyOrder::Bytewise, file, BLOCK_OFFSET),
        _ => Block::new_data(contents, usize::from(mode / 3), file, BLOCK_OFFSET),
    };
    let block = match parsed {
        Ok(b) => Arc::new(b),
        Err(e) => return assert_corruption(&e, BLOCK_FILE, Some(BLOCK_OFFSET)),
    };
    let internal = mode % 3 != 1;
    // Every entry takes at least three header bytes, so a scan of a block
    // of n bytes has fewer than n steps.
    let max_steps = data.len();
    let check = |it: &BlockIter| {
        if let Err(e) = it.status() {
            assert_corruption(&e, BLOCK_FILE, Some(BLOCK_OFFSET));
        }
    };
    let mut it = BlockIter::new(Arc::clone(&block));
    let keys = scan(&mut it, max_steps, true);
    check(&it);
    let mut it = BlockIter::new(Arc::clone(&block));
    scan(&mut it, max_steps, false);
    check(&it);

    let targets = targets(&keys, internal);
    for t in &targets {
        let mut it = BlockIter::new(Arc::clone(&block));
        it.seek(t);
        check(&it);
        let mut it = BlockIter::new(Arc::clone(&block));
        it.seek_for_prev(t);
        check(&it);
    }
    // The lockstep search the batched reads use, then their iterator-free
    // point scan of a data block, which must find what the iterator finds
    // (the same key and value) or fail where it fails.
    let searches: Vec<(&Block, &[u8])> = targets.iter().map(|t| (&*block, &t[..])).collect();
    let mut key = Vec::new();
    for (r, t) in search_restarts(&searches).into_iter().zip(&targets) {
        match r {
            Ok(r) => {
                let mut it = BlockIter::new(Arc::clone(&block));
                it.seek_from_restart(r, t);
                check(&it);
                if mode % 3 == 2 {
                    let scanned = seek_entry_from_restart(&block, r, t, &mut key);
                    if let Err(e) = point_scan_agrees(&block, &it, scanned, &key, &"block") {
                        assert_corruption(&e, BLOCK_FILE, Some(BLOCK_OFFSET));
                    }
                }
            }
            Err(e) => assert_corruption(&e, BLOCK_FILE, Some(BLOCK_OFFSET)),
        }
    }
}

/// An SST range-deletion block (`docs/format/sst.md` §8) as
/// `range_del::block::decode` reads it from a table. What decodes is in
/// block order (begin ascending, newest first, never a duplicate), every
/// tombstone is non-empty, and re-encoding then decoding gives it back.
pub fn range_del_block(data: &[u8]) {
    let file: Arc<str> = RANGE_DEL_FILE.into();
    let ts = match range_del_block::decode(data.to_vec(), file.clone(), BLOCK_OFFSET) {
        Ok(ts) => ts,
        Err(e) => return assert_corruption(&e, RANGE_DEL_FILE, Some(BLOCK_OFFSET)),
    };
    for t in &ts {
        assert!(t.begin < t.end, "decoded an empty tombstone {t:?}");
    }
    for w in ts.windows(2) {
        let ordered = w[0].begin < w[1].begin || (w[0].begin == w[1].begin && w[0].seq > w[1].seq);
        assert!(ordered, "decoded tombstones out of block order: {w:?}");
    }
    #[allow(
        clippy::expect_used,
        reason = "a fuzz target reports a failed property by panicking"
    )]
    let again = range_del_block::decode(range_del_block::encode(&ts), file, BLOCK_OFFSET)
        .expect("re-encoded tombstones decode");
    assert_eq!(again, ts, "re-encoding changed the tombstones");
}

/// Walks `it` from one end (forward or backward) for at most `max_steps`
/// entries, returning the keys seen; panics if the walk does not end.
fn scan(it: &mut dyn InternalIterator, max_steps: usize, forward: bool) -> Vec<Vec<u8>> {
    let keys = scan_capped(it, max_steps, forward);
    assert!(!it.valid(), "scan does not end after {max_steps} steps");
    keys
}

/// Seek targets: some keys seen (and their neighbours), plus fixed ones.
/// Internal-order targets are always at least a trailer long.
fn targets(keys: &[Vec<u8>], internal: bool) -> Vec<Vec<u8>> {
    let step = (keys.len() / 8).max(1);
    let mut t: Vec<Vec<u8>> = keys.iter().step_by(step).take(8).cloned().collect();
    for k in keys.iter().step_by(step).take(4) {
        let mut k = k.clone();
        k.push(0);
        t.push(k);
    }
    t.push(Vec::new());
    t.push(b"m".to_vec());
    t.push(vec![0xff; 12]);
    if internal {
        for k in &mut t {
            if k.len() < TRAILER_LEN {
                *k = lookup_key(k, MAX_SEQUENCE);
            }
        }
    }
    t
}

/// A whole SST file, through [`Table::open_cached`]. The first byte holds
/// flags: bit 0 recomputes every checksum the harness can find first (see
/// [`reseal_checksums`]) so that mutations get past them; bit 1 turns data
/// block checksum verification off; bit 2 reads through a block cache.
pub fn table(data: &[u8]) {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let mut bytes = file.to_vec();
    if flags & 1 != 0 {
        reseal_checksums(&mut bytes);
    }
    let max_steps = MAX_TABLE_STEPS.min(bytes.len() * 4 + 16);
    let opts = TableOptions {
        verify_checksums: flags & 2 == 0,
        ..TableOptions::default()
    };
    let cache = (flags & 4 != 0).then(|| (Arc::new(BlockCache::new(1 << 20)), 7));
    let table = match Table::open_cached(
        Arc::new(SliceFile(bytes)),
        TABLE_FILE.to_string(),
        opts,
        cache,
    ) {
        Ok(t) => t,
        Err(e) => return assert_corruption(&e, TABLE_FILE, None),
    };
    let _ = table.properties().to_pairs();
    let check = |it: &dyn InternalIterator| {
        if let Err(e) = it.status() {
            assert_corruption(&e, TABLE_FILE, None);
        }
    };
    let ro = BlockReadOptions::default();
    let mut it = Arc::clone(&table).iter_with(ro);
    let keys = scan_capped(&mut it, max_steps, true);
    check(&it);
    let mut it = Arc::clone(&table).iter_with(ro);
    scan_capped(&mut it, max_steps, false);
    check(&it);

    let targets = targets(&keys, true);
    for t in &targets {
        let mut it = Arc::clone(&table).iter_with(ro);
        it.seek(t);
        check(&it);
        let mut it = Arc::clone(&table).iter_with(ro);
        it.seek_for_prev(t);
        check(&it);
    }
    // Point and batched lookups of the user keys seen, newest and oldest.
    let mut user_keys: Vec<&[u8]> = keys
        .iter()
        .filter(|k| parse_internal_key(k).is_some())
        .map(|k| user_key(k))
        .collect();
    user_keys.push(b"");
    user_keys.push(b"zzzz");
    user_keys.sort();
    user_keys.dedup();
    user_keys.truncate(MAX_PROBES);
    for seq in [MAX_SEQUENCE, 0] {
        for uk in &user_keys {
            if let Err(e) = table.get_with(uk, seq, ro) {
                assert_corruption(&e, TABLE_FILE, None);
            }
        }
        let mut calls = 0;
        table.multi_get_with(&user_keys, seq, ro, &mut |j, r| {
            assert!(j < user_keys.len(), "multi_get result for key {j}");
            calls += 1;
            if let Err(e) = r {
                assert_corruption(&e, TABLE_FILE, None);
            }
        });
        assert!(calls <= user_keys.len(), "multi_get answered {calls} times");
    }
}

/// [`scan`] that stops quietly after `max_steps` (table scans may legally
/// revisit blocks).
fn scan_capped(it: &mut dyn InternalIterator, max_steps: usize, forward: bool) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    while it.valid() && keys.len() < max_steps {
        keys.push(it.key().to_vec());
        let _ = it.value();
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    keys
}

/// Recomputes the footer checksum and the trailer checksum of every block
/// reachable from it (metaindex, index, and the blocks they point at), so
/// that a mutated table reaches the parsers behind the checksums. Harness
/// code: it trusts nothing and gives up quietly on anything malformed.
pub(crate) fn reseal_checksums(bytes: &mut [u8]) {
    let Some(footer_at) = bytes.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    let crc_at = footer_at + FOOTER_LEN - 12;
    let crc = mask_crc(crc32c::crc32c(&bytes[footer_at..crc_at]));
    bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    let Ok(footer) = Footer::decode(&bytes[footer_at..], "reseal", 0) else {
        return;
    };
    let end = footer_at as u64;
    for (h, order) in [
        (footer.metaindex, KeyOrder::Bytewise),
        (footer.index, KeyOrder::Internal),
    ] {
        let Some(contents) = reseal_block(bytes, h, end) else {
            continue;
        };
        let Ok(block) = Block::new(contents, order, "reseal".into(), 0) else {
            continue;
        };
        let mut it = BlockIter::new(Arc::new(block));
        it.seek_to_first();
        let mut steps = 0;
        while it.valid() && steps < 10_000 {
            if let Some(child) = BlockHandle::decode_exact(it.value()) {
                reseal_block(bytes, child, end);
            }
            it.next();
            steps += 1;
        }
    }
}

/// Rewrites the trailer checksum of the block at `h` (if it lies inside
/// `[0, end)`); returns its contents when stored uncompressed.
fn reseal_block(bytes: &mut [u8], h: BlockHandle, end: u64) -> Option<Vec<u8>> {
    let block_end = h.offset.checked_add(h.size)?;
    if block_end.checked_add(BLOCK_TRAILER_LEN as u64)? > end {
        return None;
    }
    let (start, n) = (
        usize::try_from(h.offset).ok()?,
        usize::try_from(block_end).ok()?,
    );
    let kind = bytes[n];
    let crc = mask_crc(block_crc(&bytes[start..n], kind));
    bytes[n + 1..n + 5].copy_from_slice(&crc.to_le_bytes());
    (kind == 0).then(|| bytes[start..n].to_vec())
}
