//! [`BlockIter`]: a cursor over one [`Block`], forward and backward, with
//! binary search over the restart array.
//!
//! Every entry is bounds-checked as it is decoded; a malformed entry makes
//! the iterator invalid with a `Corruption` in `status()` (sticky: later
//! positioning calls do nothing). The layout-specific part is confined to
//! [`BlockIter::decode_at`].

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use super::{Block, KeyOrder, Layout};
use crate::coding::get_varint32;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::TRAILER_LEN;
use crate::prefetch::prefetch_read;

/// How much of a block a seek prefetches from the restart point its binary
/// search found: the entries its forward scan reads (16 entries of ~60
/// bytes; values of 100 bytes interleaved make it ~2 KiB, of which the
/// first half is where the average scan stops).
pub(crate) const SCAN_PREFETCH_BYTES: usize = 1024;

/// One decoded entry header: where its bytes are inside the block.
struct RawEntry {
    shared: usize,
    key_delta: Range<usize>,
    value_len: usize,
    /// Where the value starts, when the header says: always in the
    /// interleaved layout, at restart points in the separated one. `None`
    /// means "where the previous value ended".
    value_start: Option<usize>,
    /// Offset of the following entry.
    next: usize,
}

/// A cursor over a block's entries.
///
/// # Invariants
/// 1. Valid ⇔ `current < block.data_end`; then `key` holds the full key of
///    the entry at `current`, `value` its value range, `next` the offset of
///    the following entry and `at_restart` whether the current entry is a
///    restart point.
/// 2. When valid, `restart_index` is the last restart point `<= current`.
/// 3. Separated layout: `next_index` is the index in the block of the entry
///    at `next`, and `next_value` is `Some(end of the current value)` after
///    a sequential step, `None` right after jumping to a restart point.
/// 4. `err.is_some()` ⇒ not valid.
pub(crate) struct BlockIter {
    block: Arc<Block>,
    current: usize,
    next: usize,
    restart_index: usize,
    at_restart: bool,
    next_index: usize,
    next_value: Option<usize>,
    key: Vec<u8>,
    value: Range<usize>,
    err: Option<Error>,
}

impl BlockIter {
    /// An unpositioned iterator over `block`.
    pub(crate) fn new(block: Arc<Block>) -> BlockIter {
        let end = block.data_end;
        let count = block.restart_count;
        BlockIter {
            block,
            current: end,
            next: end,
            restart_index: count,
            at_restart: false,
            next_index: 0,
            next_value: None,
            key: Vec::new(),
            value: 0..0,
            err: None,
        }
    }

    /// True if the current entry is a restart point (stores its whole key
    /// and, in the separated layout, its value offset).
    #[cfg(test)]
    pub(crate) fn at_restart(&self) -> bool {
        debug_assert!(self.valid());
        self.at_restart
    }

    /// [`decode_entry`] in this iterator's block.
    fn decode_at(&self, p: usize, at_restart: bool) -> Result<RawEntry> {
        decode_entry(&self.block, p, at_restart)
    }

    fn corrupt(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.invalidate();
    }

    fn invalidate(&mut self) {
        self.current = self.block.data_end;
        self.next = self.block.data_end;
        self.restart_index = self.block.restart_count;
        self.at_restart = false;
        self.key.clear();
        self.value = 0..0;
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.restart(i);
        self.next_index = i * self.block.restart_interval;
        self.next_value = None;
    }

    /// Decodes the entry at `self.next` and makes it current; false (and
    /// invalid) at the end of the block or on corruption.
    fn parse_next(&mut self) -> bool {
        match self.try_parse_next() {
            Ok(valid) => valid,
            Err(e) => {
                self.corrupt(e);
                false
            }
        }
    }

    fn try_parse_next(&mut self) -> Result<bool> {
        let p = self.next;
        let b = &*self.block;
        if p >= b.data_end {
            self.invalidate();
            return Ok(false);
        }
        // Which restart point the entry belongs to, and whether it is one.
        let (restart_index, at_restart) = match b.layout {
            Layout::Interleaved => {
                let mut r = self.restart_index.min(b.restart_count - 1);
                while r + 1 < b.restart_count && b.restart(r + 1) <= p {
                    r += 1;
                }
                (r, b.restart(r) == p)
            }
            Layout::Separated => separated_position(b, self.next_index, p)?,
        };
        let e = self.decode_at(p, at_restart)?;
        rebuild_key(b, p, &e, at_restart, &mut self.key)?;
        let value = value_range(b, p, &e, self.next_value)?;
        let value_end = value.end;
        self.current = p;
        self.next = e.next;
        self.value = value;
        self.restart_index = restart_index;
        self.at_restart = at_restart;
        self.next_index += 1;
        self.next_value = Some(value_end);
        Ok(true)
    }

    /// Compares the full key stored at restart point `i` with `target`.
    /// [`InternalIterator::seek`] given the restart point its binary search
    /// would find (from [`search_restarts`]): scans forward from there.
    pub(crate) fn seek_from_restart(&mut self, restart: usize, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(restart.min(self.block.restart_count - 1));
        while self.parse_next() {
            if self.block.order.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }
}

/// Separated layout: the restart point of entry `idx` (at `p`) and
/// whether the entry is one (checked by [`check_separated_restart`]).
#[inline(always)]
fn separated_position(b: &Block, idx: usize, p: usize) -> Result<(usize, bool)> {
    let r = idx / b.restart_interval;
    let at = idx.is_multiple_of(b.restart_interval);
    if at {
        check_separated_restart(b, idx, r, p)?;
    }
    Ok((r, at))
}

/// Separated layout: checks that entry `idx`, at `p` and the first of its
/// restart interval, is listed as restart point `r`.
#[inline(always)]
fn check_separated_restart(b: &Block, idx: usize, r: usize, p: usize) -> Result<()> {
    if r >= b.restart_count || b.restart(r) != p {
        return Err(b.corruption(
            p,
            &format!("entry {idx} is not listed as restart point {r}"),
        ));
    }
    Ok(())
}

/// The value range of entry `e` at `p`: where the entry says (every
/// interleaved entry, a separated restart entry), else right after the
/// previous entry's value, ending at `prev_end` (`None` at the first
/// entry decoded). A separated restart entry's offset must continue the
/// previous value, and a separated value must end inside the values
/// section.
#[inline(always)]
fn value_range(b: &Block, p: usize, e: &RawEntry, prev_end: Option<usize>) -> Result<Range<usize>> {
    let start = match (e.value_start, prev_end) {
        (Some(s), Some(prev_end)) if b.layout == Layout::Separated && s != prev_end => {
            return Err(b.corruption(p, "value offset does not follow the previous value"))
        }
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => {
            return Err(b.corruption(p, "entry has no value offset (not a restart point)"))
        }
    };
    let end = start
        .checked_add(e.value_len)
        .filter(|&end| b.layout == Layout::Interleaved || end <= b.values.end)
        .ok_or_else(|| b.corruption(p, "value extends past the end of the values section"))?;
    Ok(start..end)
}

/// [`BlockIter::seek_from_restart`] for a point lookup, without an
/// iterator: scans from restart point `restart` (clamped to the last) to
/// the first entry whose key is at or above `target`, rebuilding keys in
/// `key` (a buffer the caller reuses across lookups). Returns that entry's
/// offset and value range, with its whole key left in `key`, or `None` if
/// every entry from there on sorts below `target`. The entries get the
/// iterator's checks, in either layout.
#[inline]
pub(crate) fn seek_entry_from_restart(
    block: &Block,
    restart: usize,
    target: &[u8],
    key: &mut Vec<u8>,
) -> Result<Option<(usize, Range<usize>)>> {
    Ok(seek_entry(block, restart, target, key)?.map(|stop| (stop.at, stop.value)))
}

/// Where a point scan stopped: the entry it found, and what a scan for a
/// larger target needs to go on from there ([`seek_entry_after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanStop {
    /// The entry's offset.
    pub at: usize,
    /// Its value's range in the block.
    pub value: Range<usize>,
    /// The restart point whose interval holds it.
    pub restart: usize,
    /// Separated layout: its index among the block's entries (0 when
    /// interleaved, where restart entries are known by their offsets).
    index: usize,
    /// The offset of the entry after it.
    next: usize,
}

/// [`seek_entry_from_restart`], returning where the scan stopped.
#[inline]
pub(crate) fn seek_entry(
    block: &Block,
    restart: usize,
    target: &[u8],
    key: &mut Vec<u8>,
) -> Result<Option<ScanStop>> {
    let r = restart.min(block.restart_count - 1);
    key.clear();
    let mut order = ScanOrder::new(block, target);
    let p = block.restart(r);
    match block.layout {
        Layout::Interleaved => scan_interleaved(block, r, p, &mut order, key),
        Layout::Separated => scan_separated(block, r, 0, p, None, &mut order, key),
    }
}

/// [`seek_entry`] for `target` in the block where `prev` was found for a
/// target at or below this one, with `key` still holding `prev`'s key, and
/// `restart` the restart point a binary search for `target` found (as for
/// [`seek_entry`]). A scan from there would pass every entry before `prev`
/// (they sort below the earlier target) when `restart` is not past
/// `prev`'s interval: then the scan goes on from `prev` instead (which may
/// be the answer again). Same answer as [`seek_entry`] in a well-formed
/// block; in a damaged one, the same checks of the entries it reads.
#[inline]
pub(crate) fn seek_entry_after(
    block: &Block,
    restart: usize,
    prev: &ScanStop,
    target: &[u8],
    key: &mut Vec<u8>,
) -> Result<Option<ScanStop>> {
    let r = restart.min(block.restart_count - 1);
    if r > prev.restart {
        return seek_entry(block, r, target, key);
    }
    let mut order = ScanOrder::new(block, target);
    if order.resume_after(block.order, key) != Ordering::Less {
        return Ok(Some(prev.clone()));
    }
    match block.layout {
        Layout::Interleaved => scan_interleaved(block, prev.restart, prev.next, &mut order, key),
        Layout::Separated => {
            let index = prev.index + 1;
            let interval = block.restart_interval;
            let (r, i) = (index / interval, index % interval);
            let end = Some(prev.value.end);
            scan_separated(block, r, i, prev.next, end, &mut order, key)
        }
    }
}

/// [`seek_entry`] in an interleaved block from the entry at `p` (a
/// restart point's, or the one after an entry [`ScanOrder`] has seen), in
/// restart interval `r` or a later one: restart entries are known by their
/// offsets, each value follows its key.
fn scan_interleaved(
    block: &Block,
    mut r: usize,
    mut p: usize,
    order: &mut ScanOrder<'_>,
    key: &mut Vec<u8>,
) -> Result<Option<ScanStop>> {
    let mut restart_at = block.restart(r);
    // Offset of the next restart point (`data_end` past the last).
    let mut next_restart = if r + 1 < block.restart_count {
        block.restart(r + 1)
    } else {
        block.data_end
    };
    while p < block.data_end {
        // The last restart point at or before `p` (restart offsets
        // ascend and lie below `data_end`, the sentinel).
        while next_restart <= p && next_restart < block.data_end {
            r += 1;
            restart_at = next_restart;
            next_restart = if r + 1 < block.restart_count {
                block.restart(r + 1)
            } else {
                block.data_end
            };
        }
        let at_restart = restart_at == p;
        let e = decode_entry(block, p, at_restart)?;
        if order.entry(block, p, &e, at_restart, key)? != Ordering::Less {
            let value = e.next - e.value_len..e.next;
            return Ok(Some(ScanStop {
                at: p,
                value,
                restart: r,
                index: 0,
                next: e.next,
            }));
        }
        p = e.next;
    }
    Ok(None)
}

/// [`seek_entry`] in a separated block from entry `i` of restart interval
/// `r`, at `p` (`i == 0`: the restart entry; otherwise the entry after one
/// [`ScanOrder`] has seen, whose value ended at `value_end`): the keys
/// section alone is scanned (values are read only for the entry found),
/// restart entries are every `restart_interval`-th, and each value follows
/// the previous one.
///
/// An entry that is not a restart point, has three one-byte lengths, lies
/// inside the keys section with its value inside the values section, and
/// that [`ScanOrder::passes`] takes a few instructions; anything else
/// (restart entries, longer lengths, damage, the entries a comparison
/// decides) goes through the checked decode and [`ScanOrder::entry`],
/// which report what is wrong.
fn scan_separated(
    block: &Block,
    mut r: usize,
    mut i: usize,
    mut p: usize,
    mut value_end: Option<usize>,
    order: &mut ScanOrder<'_>,
    key: &mut Vec<u8>,
) -> Result<Option<ScanStop>> {
    let interval = block.restart_interval;
    let data = &block.contents[..block.data_end];
    let stop = |p: usize, value: Range<usize>, r: usize, i: usize, next: usize| ScanStop {
        at: p,
        value,
        restart: r,
        index: r * interval + i,
        next,
    };
    while p < data.len() {
        let mut end = if i == 0 {
            // Restart entry `r`.
            check_separated_restart(block, r * interval, r, p)?;
            let e = decode_entry(block, p, true)?;
            let value = value_range(block, p, &e, value_end)?;
            if order.entry(block, p, &e, true, key)? != Ordering::Less {
                return Ok(Some(stop(p, value, r, 0, e.next)));
            }
            p = e.next;
            i = 1;
            value.end
        } else {
            value_end.ok_or_else(|| {
                block.corruption(p, "entry has no value offset (not a restart point)")
            })?
        };
        // The rest of its interval.
        for k in i..interval {
            if p >= data.len() {
                return Ok(None);
            }
            if let Some(&[s, kl, v]) = data.get(p..p + 3) {
                let (s, kl, v) = (usize::from(s), usize::from(kl), usize::from(v));
                let next = p + 3 + kl;
                if (s | kl | v) < 0x80
                    && next <= data.len()
                    && end + v <= block.values.end
                    && order.passes(s, kl, || data[p + 3])
                {
                    p = next;
                    end += v;
                    continue;
                }
            }
            let e = decode_entry(block, p, false)?;
            let value = value_range(block, p, &e, Some(end))?;
            if order.entry(block, p, &e, false, key)? != Ordering::Less {
                return Ok(Some(stop(p, value, r, k, e.next)));
            }
            p = e.next;
            end = value.end;
        }
        value_end = Some(end);
        i = 0;
        r += 1;
    }
    Ok(None)
}

/// Orders a point scan's entries against its target, most of them from
/// their shared-prefix length alone, without rebuilding their keys.
///
/// Say the previous key agrees with the target on its first `m` bytes and
/// has a smaller byte at `m`, with `m` inside the target's user key. Then
/// it sorts below the target, and so does any key that agrees with the
/// target on `m` bytes and has a smaller byte at `m`: it differs from the
/// target inside both user keys (bytewise order decides), or its user key
/// ends first and is a proper prefix of the target's (in
/// [`KeyOrder::Internal`], the trailer comes after). Hence an entry
///
/// - sharing more than `m` bytes with the previous key (it has the same
///   byte at `m`) sorts below, and `m` stays;
/// - sharing `s <= m` bytes (so it begins with `target[..s]`) whose first
///   own byte, inside the target's user key, is below `target[s]` sorts
///   below, and `m` becomes `s`.
///
/// Any other entry has its key rebuilt (from `target[..s]` and its own
/// bytes, or from the previous key) and compared. Within a restart
/// interval of keys that differ in their last bytes, most entries take one
/// of the two rules.
///
/// # Invariants
/// 1. `lcp == Some(m)`: the previous entry's key is as above, and
///    `prev_len` is its length.
/// 2. `lcp == None` ⇒ `key` holds the previous entry's whole key (empty
///    before the first).
struct ScanOrder<'t> {
    target: &'t [u8],
    /// Bytes after the user key: the trailer in internal order.
    trailer: usize,
    /// Length of the target's user key (0 if it is shorter than a
    /// trailer, which [`ScanOrder::compare_from`] then compares whole).
    target_user: usize,
    lcp: Option<usize>,
    prev_len: usize,
}

impl<'t> ScanOrder<'t> {
    fn new(block: &Block, target: &'t [u8]) -> ScanOrder<'t> {
        let trailer = match block.order {
            KeyOrder::Internal => TRAILER_LEN,
            KeyOrder::Bytewise => 0,
        };
        ScanOrder {
            target,
            trailer,
            target_user: target.len().saturating_sub(trailer),
            lcp: None,
            prev_len: 0,
        }
    }

    /// Starts a scan after an entry whose whole key is `key` (already
    /// checked): how that key sorts against the target, and if below, it
    /// becomes the previous entry.
    fn resume_after(&mut self, order: KeyOrder, key: &[u8]) -> Ordering {
        let (o, lcp) = self.compare_from(order, key, 0);
        if o == Ordering::Less {
            self.lcp = lcp;
            self.prev_len = key.len();
        }
        o
    }

    /// Whether an entry sharing `shared` bytes with the previous key and
    /// adding `delta_len` more (the first of them `first_delta()`) sorts
    /// below the target by the two rules above, its key checked as
    /// [`ScanOrder::entry`] checks it. If so, records it as the previous
    /// entry; if not (or when it cannot tell), changes nothing, and the
    /// caller takes [`ScanOrder::entry`].
    #[inline(always)]
    fn passes(&mut self, shared: usize, delta_len: usize, first_delta: impl Fn() -> u8) -> bool {
        let Some(m) = self.lcp else {
            return false;
        };
        let len = shared + delta_len;
        if shared > self.prev_len || len < self.trailer {
            return false;
        }
        if shared <= m {
            if delta_len == 0 || shared >= self.target_user || first_delta() >= self.target[shared]
            {
                return false;
            }
            self.lcp = Some(shared);
        }
        self.prev_len = len;
        true
    }

    /// How entry `e` at `p` sorts against the target, after the checks
    /// [`rebuild_key`] makes. Leaves its whole key in `key` unless it sorts
    /// below.
    #[inline(always)]
    fn entry(
        &mut self,
        block: &Block,
        p: usize,
        e: &RawEntry,
        at_restart: bool,
        key: &mut Vec<u8>,
    ) -> Result<Ordering> {
        let shared = e.shared;
        if shared > self.prev_len || (at_restart && shared != 0) {
            return Err(block.corruption(
                p,
                "entry shares more key bytes than the previous key has (or a restart entry shares any)",
            ));
        }
        let len = shared + e.key_delta.len();
        if len < self.trailer {
            return Err(block.corruption(p, "internal key shorter than its 8-byte trailer"));
        }
        self.prev_len = len;
        match self.lcp {
            Some(m) if shared > m => return Ok(Ordering::Less),
            // The key begins with `target[..shared]`.
            Some(_) => {
                key.clear();
                key.extend_from_slice(&self.target[..shared]);
            }
            // `key` holds the previous key (invariant 2).
            None => key.truncate(shared),
        }
        key.extend_from_slice(&block.contents[e.key_delta.clone()]);
        let from = if self.lcp.is_some() { shared } else { 0 };
        let (order, lcp) = self.compare_from(block.order, key, from);
        self.lcp = lcp;
        Ok(order)
    }

    /// `key` against the target, given that they agree on their first
    /// `from` bytes: the order, and where they first differ when `key`
    /// sorts below by a byte inside both user keys.
    #[inline(always)]
    fn compare_from(&self, order: KeyOrder, key: &[u8], from: usize) -> (Ordering, Option<usize>) {
        let target = self.target;
        if let (Some(ku), Some(tu)) = (
            key.len().checked_sub(self.trailer),
            target.len().checked_sub(self.trailer),
        ) {
            let n = ku.min(tu);
            if from <= n {
                let c = from + crate::key::common_prefix_len(&key[from..n], &target[from..n]);
                if c < n {
                    let o = key[c].cmp(&target[c]);
                    return (o, (o == Ordering::Less).then_some(c));
                }
            }
        }
        (order.compare(key, target), None)
    }
}

/// Rebuilds in `key` (holding the previous entry's key) the whole key of
/// the entry `e` at `p`, with the checks every reader makes: a restart
/// entry shares nothing, no entry shares more than the previous key has,
/// and an internal key holds its 8-byte trailer.
#[inline(always)]
fn rebuild_key(
    b: &Block,
    p: usize,
    e: &RawEntry,
    at_restart: bool,
    key: &mut Vec<u8>,
) -> Result<()> {
    if e.shared > key.len() || (at_restart && e.shared != 0) {
        return Err(b.corruption(
            p,
            "entry shares more key bytes than the previous key has (or a restart entry shares any)",
        ));
    }
    key.truncate(e.shared);
    key.extend_from_slice(&b.contents[e.key_delta.clone()]);
    if b.order == KeyOrder::Internal && key.len() < TRAILER_LEN {
        return Err(b.corruption(p, "internal key shorter than its 8-byte trailer"));
    }
    Ok(())
}

/// The decoded entry at restart point `i` of `block` and its whole key,
/// checked as an iterator would check it.
#[inline(always)]
fn restart_key(block: &Block, i: usize) -> Result<(RawEntry, &[u8])> {
    let p = block.restart(i);
    let e = decode_entry(block, p, true)?;
    if e.shared != 0 {
        return Err(block.corruption(p, "restart entry has a shared key prefix"));
    }
    let key = &block.contents[e.key_delta.clone()];
    if block.order == KeyOrder::Internal && key.len() < TRAILER_LEN {
        return Err(block.corruption(p, "internal key shorter than its 8-byte trailer"));
    }
    Ok((e, key))
}

/// How the key at restart point `i` of `block` compares with `target`.
fn restart_key_order(block: &Block, i: usize, target: &[u8]) -> Result<Ordering> {
    let (_, key) = restart_key(block, i)?;
    Ok(block.order.compare(key, target))
}

/// The entry at restart point `i` of the interleaved block `block`: its
/// whole key, its value, and where the next entry starts. Checked as an
/// iterator would check it.
pub(crate) fn restart_entry(block: &Block, i: usize) -> Result<(&[u8], &[u8], usize)> {
    let (e, key) = restart_key(block, i)?;
    let value = match e.value_start {
        Some(s) if block.layout == Layout::Interleaved => &block.contents[s..s + e.value_len],
        _ => return Err(block.corruption(block.restart(i), "not an interleaved block")),
    };
    Ok((key, value, e.next))
}

/// Decodes the entry header at `p` of `b` (a restart point if
/// `at_restart`), checking every length against the end of the entries
/// (keys section). This and the value resolution in
/// [`BlockIter::parse_next`] are the only layout-specific code of the
/// reader; neither reads value bytes.
#[inline]
fn decode_entry(b: &Block, p: usize, at_restart: bool) -> Result<RawEntry> {
    // Fast path, inlined into every search and scan (`Db::get` included):
    // an entry with three one-byte lengths, inside the entries, and no
    // value offset (every interleaved entry; a separated entry that is not
    // a restart point). Anything else, errors included, takes the full
    // path.
    let interleaved = b.layout == Layout::Interleaved;
    if interleaved || !at_restart {
        if let Some(&[s, k, v]) = b.contents[..b.data_end].get(p..p + 3) {
            if (s | k | v) < 0x80 {
                let key_start = p + 3;
                let key_end = key_start + usize::from(k);
                // The value follows the key only when interleaved.
                let next = key_end + if interleaved { usize::from(v) } else { 0 };
                if next <= b.data_end {
                    return Ok(RawEntry {
                        shared: usize::from(s),
                        key_delta: key_start..key_end,
                        value_len: usize::from(v),
                        value_start: interleaved.then_some(key_end),
                        next,
                    });
                }
            }
        }
    }
    decode_entry_full(b, p, at_restart)
}

/// [`decode_entry`] for every layout and length, with its errors.
#[inline(never)]
fn decode_entry_full(b: &Block, p: usize, at_restart: bool) -> Result<RawEntry> {
    let data = &b.contents[..b.data_end];
    // Fast path for a separated restart entry (every restart search probe
    // and scan start): three one-byte lengths and a value offset of one or
    // two varint bytes (values sections up to 16 KiB), decoded as the
    // general path below decodes them.
    if b.layout == Layout::Separated && at_restart {
        if let Some(&[s, k, v, o0, o1]) = data.get(p..p + 5) {
            let (offset, n) = match (o0 < 0x80, o1 < 0x80) {
                (true, _) => (usize::from(o0), 4),
                (false, true) => (usize::from(o0 & 0x7f) | usize::from(o1) << 7, 5),
                (false, false) => (0, 0),
            };
            let key_end = p + n + usize::from(k);
            if n != 0 && (s | k | v) < 0x80 && key_end <= data.len() {
                return Ok(RawEntry {
                    shared: usize::from(s),
                    key_delta: p + n..key_end,
                    value_len: usize::from(v),
                    value_start: Some(b.values.start.saturating_add(offset)),
                    next: key_end,
                });
            }
        }
    }
    let bad = |what: &str| b.corruption(p, what);
    let rest = data
        .get(p..)
        .ok_or_else(|| bad("entry offset past end of entries"))?;
    let mut n = 0;
    let varint = |rest: &[u8], n: &mut usize| -> Result<usize> {
        let (v, len) = get_varint32(&rest[*n..]).ok_or_else(|| bad("malformed entry header"))?;
        *n += len;
        Ok(v as usize)
    };
    // Fast path: all three lengths below 128 (one byte each), the usual
    // case for short keys and values.
    let (shared, non_shared, value_len) = match rest {
        [s, k, v, ..] if (s | k | v) < 0x80 => {
            n = 3;
            (usize::from(*s), usize::from(*k), usize::from(*v))
        }
        _ => (
            varint(rest, &mut n)?,
            varint(rest, &mut n)?,
            varint(rest, &mut n)?,
        ),
    };
    let separated_start = match b.layout {
        Layout::Separated if at_restart => Some(varint(rest, &mut n)?),
        _ => None,
    };
    let key_start = p + n;
    let key_end = key_start + non_shared;
    if key_end > data.len() {
        return Err(bad("key extends past the end of the block's entries"));
    }
    match b.layout {
        Layout::Interleaved => {
            let value_end = key_end
                .checked_add(value_len)
                .filter(|&e| e <= data.len())
                .ok_or_else(|| bad("entry extends past the end of the block's entries"))?;
            Ok(RawEntry {
                shared,
                key_delta: key_start..key_end,
                value_len,
                value_start: Some(key_end),
                next: value_end,
            })
        }
        Layout::Separated => Ok(RawEntry {
            shared,
            key_delta: key_start..key_end,
            value_len,
            value_start: separated_start.map(|off| b.values.start.saturating_add(off)),
            next: key_end,
        }),
    }
}

/// The binary searches of [`InternalIterator::seek`] for many
/// `(block, target)` pairs at once, in lockstep: each round moves every
/// unfinished search one probe on, in three passes over the searches —
/// prefetch the restart slot each will probe, prefetch the key that slot
/// points at, then compare — so the cache misses of a whole round are in
/// flight together instead of one after another. Returns, per search, the
/// last restart point whose key is below the target (0 if none), which
/// [`BlockIter::seek_from_restart`] scans on from, or the corruption met.
pub(crate) fn search_restarts(searches: &[(&Block, &[u8])]) -> Vec<Result<usize>> {
    let mut state: Vec<RestartSearch> = searches
        .iter()
        .map(|(b, _)| RestartSearch::new(b))
        .collect();
    let mut failed: Vec<Option<Error>> = vec![None; searches.len()];
    let mut active: Vec<usize> = (0..searches.len()).filter(|&i| !state[i].done()).collect();
    while !active.is_empty() {
        for &i in &active {
            let b = searches[i].0;
            prefetch_read(
                b.contents
                    .as_ptr()
                    .wrapping_add(b.restarts_at + 4 * state[i].probe()),
            );
        }
        for &i in &active {
            let b = searches[i].0;
            prefetch_read(
                b.contents
                    .as_ptr()
                    .wrapping_add(b.restart(state[i].probe())),
            );
        }
        for &i in &active {
            let (b, target) = searches[i];
            if let Err(e) = state[i].step(b, target) {
                failed[i] = Some(e);
            }
        }
        active.retain(|&i| failed[i].is_none() && !state[i].done());
    }
    failed
        .into_iter()
        .zip(state)
        .map(|(f, s)| match f {
            Some(e) => Err(e),
            None => Ok(s.left),
        })
        .collect()
}

/// One binary search over a block's restart array for the last restart
/// point whose key is below a target; it lies in `left..=right`.
#[derive(Clone, Copy)]
struct RestartSearch {
    left: usize,
    right: usize,
}

impl RestartSearch {
    fn new(block: &Block) -> RestartSearch {
        RestartSearch {
            left: 0,
            right: block.restart_count - 1,
        }
    }

    fn done(&self) -> bool {
        self.left >= self.right
    }

    /// The restart point the next step compares.
    fn probe(&self) -> usize {
        (self.left + self.right).div_ceil(2)
    }

    /// Compares the probe's key with `target` and halves the range.
    fn step(&mut self, block: &Block, target: &[u8]) -> Result<()> {
        let mid = self.probe();
        if restart_key_order(block, mid, target)? == Ordering::Less {
            self.left = mid;
        } else {
            self.right = mid - 1;
        }
        Ok(())
    }
}

/// The plain binary search of [`InternalIterator::seek`].
pub(crate) fn search_restart(block: &Block, target: &[u8]) -> Result<usize> {
    let mut s = RestartSearch::new(block);
    while !s.done() {
        s.step(block, target)?;
    }
    Ok(s.left)
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.data_end
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(self.block.restart_count - 1);
        if !self.parse_next() {
            return;
        }
        while self.next < self.block.data_end {
            if !self.parse_next() {
                return;
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        match search_restart(&self.block, target) {
            Ok(r) => {
                // The scan's entries in flight together, not one by one.
                self.block.prefetch_scan(r, SCAN_PREFETCH_BYTES);
                self.seek_from_restart(r, target)
            }
            Err(e) => self.corrupt(e),
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if self.block.order.compare(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let original = self.current;
        // Back up to the last restart point strictly before the current entry.
        while self.block.restart(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        // Walk forward to the entry just before `original`.
        while self.parse_next() {
            if self.next >= original {
                return;
            }
        }
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.key
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.block.contents[self.value.clone()]
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// Reads every entry of a small bytewise-keyed meta block (metaindex,
/// properties) in order.
pub(crate) fn collect_entries(block: Arc<Block>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = BlockIter::new(block);
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Test and fuzz support: compares [`seek_entry_from_restart`]'s answer
/// (`scanned`, with the key it rebuilt in `key`) with the iterator's after
/// the same seek (`it`), and panics (naming `what`) where they differ.
/// Returns `Ok(true)` when both found the same entry (same key and value),
/// `Ok(false)` when both found none, and the scan's error when both failed.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn point_scan_agrees(
    block: &Block,
    it: &BlockIter,
    scanned: Result<Option<(usize, Range<usize>)>>,
    key: &[u8],
    what: &dyn std::fmt::Display,
) -> Result<bool> {
    match (it.status(), scanned) {
        (Ok(()), Ok(Some((_, value)))) => {
            assert!(it.valid(), "{what}: scan found what seek did not");
            assert_eq!(key, it.key(), "{what}");
            assert_eq!(block.bytes(value), it.value(), "{what}");
            Ok(true)
        }
        (Ok(()), Ok(None)) => {
            assert!(!it.valid(), "{what}: scan missed an entry");
            Ok(false)
        }
        (Err(_), Err(e)) => Err(e),
        (want, got) => panic!("{what}: seek {want:?}, scan {got:?}"),
    }
}
