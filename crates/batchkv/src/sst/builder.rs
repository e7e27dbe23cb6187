//! [`TableBuilder`]: writes a table from entries given in increasing
//! internal-key order (layout in `docs/format/sst.md`), and the index
//! separator functions it uses.

use std::cmp::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use super::block::builder::BlockBuilder;
use super::block::Layout;
use super::compression::{Compressor, TYPE_NONE};
use super::filter::{build_filter, filter_hash};
use super::format::{put_block_trailer, BlockHandle, Footer};
use super::properties::TableProperties;
use super::{TableOptions, FILTER_BLOCK_NAME, PROPERTIES_BLOCK_NAME};
use crate::coding::put_fixed64;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{
    compare_internal_keys, lookup_trailer, parse_internal_key, user_key, ValueType, MAX_SEQUENCE,
};
use crate::range_del::block::{self as range_del_block, RANGE_DEL_BLOCK_NAME};
use crate::range_del::{tombstone_end_key, tombstone_start_key, RangeTombstone};

/// Largest key + value accepted in one entry (block offsets are 32-bit).
const MAX_ENTRY_BYTES: usize = 1 << 30;

/// What a finished table holds, for the caller's metadata (MANIFEST).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableSummary {
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Entries written (point entries plus range tombstones).
    pub num_entries: u64,
    /// Smallest internal key (empty if the table is empty); at or below
    /// every range tombstone's start ([`tombstone_start_key`]).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty if the table is empty); at or above
    /// every range tombstone's end bound ([`tombstone_end_key`]).
    pub largest: Vec<u8>,
}

/// Writes one table.
///
/// Data blocks are cut when their estimated size reaches `block_size`. The
/// index entry of a block is added only when the next key is known (or at
/// `finish`), so its separator can be shortened: LevelDB's "pending index
/// entry".
pub(crate) struct TableBuilder {
    file: Box<dyn WritableFile>,
    file_name: String,
    opts: TableOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    /// Handle of the last flushed data block, whose index entry waits for the next key.
    pending_index: Option<BlockHandle>,
    /// Last internal key added (empty before the first).
    last_key: Vec<u8>,
    smallest: Vec<u8>,
    /// Filter hashes of the distinct user keys, in order.
    filter_hashes: Vec<u64>,
    props: TableProperties,
    /// Compresses data blocks (index and meta blocks are stored raw).
    compressor: Compressor,
    /// Bytes written to `file` so far.
    offset: u64,
    /// Range tombstones for the range-deletion block, in any order.
    range_dels: Vec<RangeTombstone>,
}

impl TableBuilder {
    /// Starts a table in `file` (freshly created, empty).
    pub(crate) fn new(
        file: Box<dyn WritableFile>,
        file_name: String,
        opts: TableOptions,
    ) -> Result<TableBuilder> {
        opts.validate()?;
        let layout = if opts.separate_key_value {
            Layout::Separated
        } else {
            Layout::Interleaved
        };
        let props = TableProperties {
            data_block_restart_interval: opts.restart_interval as u64,
            index_block_restart_interval: opts.index_restart_interval as u64,
            separate_key_value_in_data_block: u64::from(opts.separate_key_value),
            compression_name: opts.compression.name().into(),
            smallest_seqno: u64::MAX,
            ..TableProperties::default()
        };
        Ok(TableBuilder {
            offset: file.len(),
            file,
            file_name,
            data: BlockBuilder::with_layout(opts.restart_interval, layout),
            compressor: Compressor::new(opts.compression, opts.compression_level)?,
            index: BlockBuilder::new(opts.index_restart_interval),
            opts,
            pending_index: None,
            last_key: Vec::new(),
            smallest: Vec::new(),
            filter_hashes: Vec::new(),
            props,
            range_dels: Vec::new(),
        })
    }

    /// Adds a range tombstone (any order relative to `add`); an empty
    /// range is ignored.
    pub(crate) fn add_range_deletion(&mut self, t: RangeTombstone) {
        if t.begin >= t.end {
            return;
        }
        let p = &mut self.props;
        p.num_range_deletions += 1;
        p.smallest_seqno = p.smallest_seqno.min(t.seq);
        p.largest_seqno = p.largest_seqno.max(t.seq);
        self.range_dels.push(t);
    }

    /// Adds an entry. `internal_key` must be a valid internal key, strictly
    /// greater than the previous one; otherwise `InvalidArgument`.
    pub(crate) fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let parsed = parse_internal_key(internal_key).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: not a valid internal key ({} bytes)",
                self.file_name,
                internal_key.len()
            ))
        })?;
        let first = self.props.num_entries == 0;
        if !first && compare_internal_keys(&self.last_key, internal_key) != Ordering::Less {
            return Err(Error::InvalidArgument(format!(
                "{}: keys added out of order ({:?} after {:?})",
                self.file_name, internal_key, self.last_key
            )));
        }
        if internal_key.len() + value.len() > MAX_ENTRY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "{}: entry of {} bytes exceeds the {MAX_ENTRY_BYTES}-byte limit",
                self.file_name,
                internal_key.len() + value.len()
            )));
        }
        if let Some(handle) = self.pending_index.take() {
            let sep = shortest_separator(&self.last_key, internal_key);
            self.add_index_entry(&sep, handle);
        }
        if self.opts.bloom_bits_per_key > 0
            && (first || user_key(&self.last_key) != parsed.user_key)
        {
            self.filter_hashes.push(filter_hash(parsed.user_key));
        }
        if first {
            self.smallest = internal_key.to_vec();
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);

        let p = &mut self.props;
        p.num_entries += 1;
        if parsed.value_type == ValueType::Deletion {
            p.num_deletions += 1;
        }
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seqno = p.smallest_seqno.min(parsed.sequence);
        p.largest_seqno = p.largest_seqno.max(parsed.sequence);

        self.data.add(internal_key, value);
        if self.data.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Marks the table as an external file for ingestion (property
    /// `batchkv.external.sst.file.version` = 1, `docs/format/sst.md` §9).
    /// The caller adds every entry with sequence 0.
    pub(crate) fn mark_external(&mut self) {
        self.props.external_sst_file_version = 1;
    }

    /// Entries added so far.
    #[cfg(test)]
    pub(crate) fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the data block being built.
    #[allow(dead_code, reason = "compaction (issue 3) splits output files by it")]
    pub(crate) fn estimated_file_size(&self) -> u64 {
        self.offset + self.data.estimated_size() as u64
    }

    fn add_index_entry(&mut self, sep: &[u8], handle: BlockHandle) {
        let mut v = Vec::with_capacity(super::format::MAX_BLOCK_HANDLE_LEN);
        handle.encode_to(&mut v);
        self.index.add(sep, &v);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        debug_assert!(!self.data.is_empty());
        let contents = self.data.finish();
        let (stored, kind) = self.compressor.compress(&contents);
        let handle = write_raw_block(&mut *self.file, &mut self.offset, stored, kind)?;
        self.data.recycle(contents);
        self.props.num_data_blocks += 1;
        self.pending_index = Some(handle);
        Ok(())
    }

    /// Appends uncompressed `contents` and its trailer; returns where they went.
    fn write_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        write_raw_block(&mut *self.file, &mut self.offset, contents, TYPE_NONE)
    }

    /// Writes the remaining data block, the filter, properties, metaindex
    /// and index blocks and the footer, then fsyncs the file.
    pub(crate) fn finish(mut self) -> Result<TableSummary> {
        if !self.data.is_empty() {
            self.flush_data_block()?;
        }
        if let Some(handle) = self.pending_index.take() {
            let sep = short_successor(&self.last_key);
            self.add_index_entry(&sep, handle);
        }
        let mut meta = Vec::new();
        if self.opts.bloom_bits_per_key > 0 && !self.filter_hashes.is_empty() {
            let filter = build_filter(&self.filter_hashes, self.opts.bloom_bits_per_key);
            meta.push((FILTER_BLOCK_NAME, self.write_block(&filter)?));
        }
        if !self.range_dels.is_empty() {
            range_del_block::sort_for_block(&mut self.range_dels);
            let block = range_del_block::encode(&self.range_dels);
            meta.push((RANGE_DEL_BLOCK_NAME, self.write_block(&block)?));
        }
        if self.props.num_entries == 0 && self.range_dels.is_empty() {
            self.props.smallest_seqno = 0;
        }
        self.props.creation_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let props = self.props.encode();
        meta.push((PROPERTIES_BLOCK_NAME, self.write_block(&props)?));
        meta.sort_by_key(|(name, _)| *name);
        let mut metaindex = BlockBuilder::new(1);
        for (name, handle) in meta {
            let mut v = Vec::new();
            handle.encode_to(&mut v);
            metaindex.add(name.as_bytes(), &v);
        }
        let metaindex = metaindex.finish();
        let metaindex = self.write_block(&metaindex)?;
        let index = self.index.finish();
        let index = self.write_block(&index)?;
        let mut footer = Vec::new();
        Footer { metaindex, index }.encode_to(&mut footer);
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.sync()?;
        let (mut smallest, mut largest) = (self.smallest, self.last_key);
        for t in &self.range_dels {
            let lo = tombstone_start_key(t);
            if smallest.is_empty() || compare_internal_keys(&lo, &smallest).is_lt() {
                smallest = lo;
            }
            let hi = tombstone_end_key(&t.end);
            if largest.is_empty() || compare_internal_keys(&hi, &largest).is_gt() {
                largest = hi;
            }
        }
        Ok(TableSummary {
            file_size: self.offset,
            num_entries: self.props.num_entries + self.props.num_range_deletions,
            smallest,
            largest,
        })
    }
}

/// Appends `stored` (a block's contents as stored, of compression type
/// `kind`) and its trailer at `*offset`; advances it and returns the handle.
fn write_raw_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    stored: &[u8],
    kind: u8,
) -> Result<BlockHandle> {
    let handle = BlockHandle {
        offset: *offset,
        size: stored.len() as u64,
    };
    let mut trailer = Vec::with_capacity(super::format::BLOCK_TRAILER_LEN);
    put_block_trailer(&mut trailer, stored, kind);
    file.append(stored)?;
    file.append(&trailer)?;
    *offset += (stored.len() + trailer.len()) as u64;
    Ok(handle)
}

/// An internal key `k` with `a <= k < b` (in internal-key order), shorter
/// than `a` where the user keys allow: when the user keys differ, the user
/// key of `a` is cut after the first differing byte, which is incremented,
/// and given the largest trailer (it then sorts before every real version
/// of that user key). Otherwise `a` itself.
pub(crate) fn shortest_separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    let (ua, ub) = (user_key(a), user_key(b));
    let common = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    if common < ua.len() && common < ub.len() {
        let d = ua[common];
        if d < 0xff && d + 1 < ub[common] && common + 1 < ua.len() {
            let mut k = ua[..=common].to_vec();
            k[common] = d + 1;
            put_fixed64(&mut k, lookup_trailer(MAX_SEQUENCE));
            debug_assert_eq!(compare_internal_keys(a, &k), Ordering::Less);
            debug_assert_eq!(compare_internal_keys(&k, b), Ordering::Less);
            return k;
        }
    }
    a.to_vec()
}

/// An internal key `k >= a`, short: the user key cut after its first byte
/// that is not 0xff, which is incremented, with the largest trailer. `a`
/// itself if its user key is all 0xff bytes.
pub(crate) fn short_successor(a: &[u8]) -> Vec<u8> {
    let ua = user_key(a);
    match ua.iter().position(|&b| b != 0xff) {
        Some(i) if i + 1 < ua.len() => {
            let mut k = ua[..=i].to_vec();
            k[i] += 1;
            put_fixed64(&mut k, lookup_trailer(MAX_SEQUENCE));
            debug_assert_eq!(compare_internal_keys(a, &k), Ordering::Less);
            k
        }
        _ => a.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::append_internal_key;

    fn ik(k: &[u8], seq: u64) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k, seq, ValueType::Value);
        v
    }

    #[test]
    fn separator_is_short_and_between() {
        let (a, b) = (ik(b"abcdefg", 5), ik(b"abzzz", 9));
        let s = shortest_separator(&a, &b);
        assert_eq!(user_key(&s), b"abd");
        assert_eq!(compare_internal_keys(&a, &s), Ordering::Less);
        assert_eq!(compare_internal_keys(&s, &b), Ordering::Less);
        // Same user key (versions spanning blocks): keep `a`.
        assert_eq!(shortest_separator(&ik(b"k", 9), &ik(b"k", 3)), ik(b"k", 9));
        // Prefix, adjacent bytes, 0xff: no shortening possible.
        assert_eq!(
            shortest_separator(&ik(b"ab", 1), &ik(b"abc", 1)),
            ik(b"ab", 1)
        );
        assert_eq!(
            shortest_separator(&ik(b"abc", 1), &ik(b"abd", 1)),
            ik(b"abc", 1)
        );
        assert_eq!(
            shortest_separator(&ik(b"a\xffx", 1), &ik(b"b", 1)),
            ik(b"a\xffx", 1)
        );
    }

    #[test]
    fn successor_is_short_and_not_smaller() {
        let a = ik(b"\xff\x01zzz", 3);
        let s = short_successor(&a);
        assert_eq!(user_key(&s), b"\xff\x02");
        assert_eq!(compare_internal_keys(&a, &s), Ordering::Less);
        assert_eq!(short_successor(&ik(b"\xff\xff", 3)), ik(b"\xff\xff", 3));
        assert_eq!(short_successor(&ik(b"", 3)), ik(b"", 3));
    }
}
