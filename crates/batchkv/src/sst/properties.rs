//! [`TableProperties`]: facts about a table recorded when it was built,
//! stored in the properties block as sorted `name → value` entries (a
//! bytewise-keyed block; numbers are varint64, the compression name is raw
//! UTF-8). Names are part of the format: never change them. Unknown names
//! are ignored so newer writers can add properties.

use std::sync::Arc;

use super::block::builder::BlockBuilder;
use super::block::iter::collect_entries;
use super::block::{Block, KeyOrder};
use crate::coding::{get_varint64, put_varint64};
use crate::error::{Error, Result};

/// Property names (on disk, never change), in the sorted order they are written.
mod names {
    pub const COMPRESSION: &str = "batchkv.compression";
    pub const CREATION_TIME: &str = "batchkv.creation.time";
    pub const DATA_RESTART_INTERVAL: &str = "batchkv.data.block.restart.interval";
    pub const EXTERNAL_SST_FILE_VERSION: &str = "batchkv.external.sst.file.version";
    pub const INDEX_RESTART_INTERVAL: &str = "batchkv.index.block.restart.interval";
    pub const LARGEST_SEQNO: &str = "batchkv.largest.seqno";
    pub const NUM_DATA_BLOCKS: &str = "batchkv.num.data.blocks";
    pub const NUM_DELETIONS: &str = "batchkv.num.deletions";
    pub const NUM_ENTRIES: &str = "batchkv.num.entries";
    pub const NUM_RANGE_DELETIONS: &str = "batchkv.num.range.deletions";
    pub const RAW_KEY_BYTES: &str = "batchkv.raw.key.bytes";
    pub const RAW_VALUE_BYTES: &str = "batchkv.raw.value.bytes";
    pub const SEPARATED: &str = "batchkv.separate.key.value.in.data.block";
    pub const SMALLEST_SEQNO: &str = "batchkv.smallest.seqno";
}

/// What a table records about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TableProperties {
    /// Entries (every version, values and tombstones).
    pub num_entries: u64,
    /// Tombstones among them.
    pub num_deletions: u64,
    /// Range tombstones in the range-deletion block (not among the
    /// entries). Written only when non-zero, so tables without any keep
    /// their old properties block byte for byte.
    pub num_range_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Restart interval of the data blocks.
    pub data_block_restart_interval: u64,
    /// Restart interval of the index block.
    pub index_block_restart_interval: u64,
    /// 1 if data blocks use the separated key/value layout.
    pub separate_key_value_in_data_block: u64,
    /// Compression of the data blocks ("none", "lz4" or "zstd"; a block
    /// that would not shrink by an eighth is stored raw whatever this says).
    pub compression_name: String,
    /// When the table was written (unix seconds).
    pub creation_time: u64,
    /// Smallest sequence number in the table (0 if empty).
    pub smallest_seqno: u64,
    /// Largest sequence number in the table (0 if empty).
    pub largest_seqno: u64,
    /// Non-zero for a table written by `SstFileWriter` (an external file
    /// for ingestion; every entry has sequence 0): the version of that
    /// scheme, currently 1. Written only when non-zero, so engine tables
    /// are unchanged.
    pub external_sst_file_version: u64,
}

impl TableProperties {
    /// Encodes the properties block (contents, no trailer).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        let num = |b: &mut BlockBuilder, name: &str, v: u64| {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            b.add(name.as_bytes(), &buf);
        };
        b.add(
            names::COMPRESSION.as_bytes(),
            self.compression_name.as_bytes(),
        );
        num(&mut b, names::CREATION_TIME, self.creation_time);
        num(
            &mut b,
            names::DATA_RESTART_INTERVAL,
            self.data_block_restart_interval,
        );
        if self.external_sst_file_version != 0 {
            num(
                &mut b,
                names::EXTERNAL_SST_FILE_VERSION,
                self.external_sst_file_version,
            );
        }
        num(
            &mut b,
            names::INDEX_RESTART_INTERVAL,
            self.index_block_restart_interval,
        );
        num(&mut b, names::LARGEST_SEQNO, self.largest_seqno);
        num(&mut b, names::NUM_DATA_BLOCKS, self.num_data_blocks);
        num(&mut b, names::NUM_DELETIONS, self.num_deletions);
        num(&mut b, names::NUM_ENTRIES, self.num_entries);
        if self.num_range_deletions > 0 {
            num(&mut b, names::NUM_RANGE_DELETIONS, self.num_range_deletions);
        }
        num(&mut b, names::RAW_KEY_BYTES, self.raw_key_bytes);
        num(&mut b, names::RAW_VALUE_BYTES, self.raw_value_bytes);
        num(
            &mut b,
            names::SEPARATED,
            self.separate_key_value_in_data_block,
        );
        num(&mut b, names::SMALLEST_SEQNO, self.smallest_seqno);
        b.finish()
    }

    /// Every property as `(on-disk name, printable value)`, in name order.
    pub(crate) fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            (names::COMPRESSION, self.compression_name.clone()),
            (names::CREATION_TIME, self.creation_time.to_string()),
            (
                names::DATA_RESTART_INTERVAL,
                self.data_block_restart_interval.to_string(),
            ),
            (
                names::INDEX_RESTART_INTERVAL,
                self.index_block_restart_interval.to_string(),
            ),
            (names::LARGEST_SEQNO, self.largest_seqno.to_string()),
            (names::NUM_DATA_BLOCKS, self.num_data_blocks.to_string()),
            (names::NUM_DELETIONS, self.num_deletions.to_string()),
            (names::NUM_ENTRIES, self.num_entries.to_string()),
            (
                names::NUM_RANGE_DELETIONS,
                self.num_range_deletions.to_string(),
            ),
            (names::RAW_KEY_BYTES, self.raw_key_bytes.to_string()),
            (names::RAW_VALUE_BYTES, self.raw_value_bytes.to_string()),
            (
                names::SEPARATED,
                self.separate_key_value_in_data_block.to_string(),
            ),
            (names::SMALLEST_SEQNO, self.smallest_seqno.to_string()),
        ];
        if self.external_sst_file_version != 0 {
            pairs.insert(
                3,
                (
                    names::EXTERNAL_SST_FILE_VERSION,
                    self.external_sst_file_version.to_string(),
                ),
            );
        }
        pairs
    }

    /// Decodes a properties block read from `file` at `offset`.
    pub(crate) fn decode(
        contents: Vec<u8>,
        file: Arc<str>,
        offset: u64,
    ) -> Result<TableProperties> {
        let bad = |detail: String| Error::corruption(&*file, offset, detail);
        let block = Block::new(contents, KeyOrder::Bytewise, file.clone(), offset)?;
        let mut p = TableProperties::default();
        for (name, value) in collect_entries(Arc::new(block))? {
            let name = String::from_utf8_lossy(&name);
            if name == names::COMPRESSION {
                p.compression_name = String::from_utf8(value)
                    .map_err(|_| bad("property batchkv.compression is not UTF-8".into()))?;
                continue;
            }
            let slot = match &*name {
                names::CREATION_TIME => &mut p.creation_time,
                names::DATA_RESTART_INTERVAL => &mut p.data_block_restart_interval,
                names::EXTERNAL_SST_FILE_VERSION => &mut p.external_sst_file_version,
                names::INDEX_RESTART_INTERVAL => &mut p.index_block_restart_interval,
                names::LARGEST_SEQNO => &mut p.largest_seqno,
                names::NUM_DATA_BLOCKS => &mut p.num_data_blocks,
                names::NUM_DELETIONS => &mut p.num_deletions,
                names::NUM_ENTRIES => &mut p.num_entries,
                names::NUM_RANGE_DELETIONS => &mut p.num_range_deletions,
                names::RAW_KEY_BYTES => &mut p.raw_key_bytes,
                names::RAW_VALUE_BYTES => &mut p.raw_value_bytes,
                names::SEPARATED => &mut p.separate_key_value_in_data_block,
                names::SMALLEST_SEQNO => &mut p.smallest_seqno,
                _ => continue, // written by a newer version
            };
            *slot = match get_varint64(&value) {
                Some((v, n)) if n == value.len() => v,
                _ => return Err(bad(format!("property {name} is not a varint64"))),
            };
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_names_are_sorted() {
        let p = TableProperties {
            num_entries: 1,
            num_deletions: 2,
            num_range_deletions: 4,
            raw_key_bytes: 3,
            raw_value_bytes: 1 << 40,
            num_data_blocks: 5,
            data_block_restart_interval: 16,
            index_block_restart_interval: 1,
            separate_key_value_in_data_block: 0,
            compression_name: "none".into(),
            creation_time: 1_700_000_000,
            smallest_seqno: 7,
            largest_seqno: u64::MAX >> 8,
            external_sst_file_version: 0,
        };
        let enc = p.encode();
        assert_eq!(TableProperties::decode(enc, "t".into(), 0).unwrap(), p);
        // The external-file property is written only when set.
        let ext = TableProperties {
            external_sst_file_version: 1,
            ..p.clone()
        };
        let ext_enc = ext.encode();
        assert!(ext_enc.len() > p.encode().len());
        assert_eq!(
            TableProperties::decode(ext_enc, "t".into(), 0).unwrap(),
            ext
        );
        let ext_pairs = ext.to_pairs();
        assert!(ext_pairs.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(ext_pairs.contains(&(names::EXTERNAL_SST_FILE_VERSION, "1".to_string())));
        let pairs = p.to_pairs();
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(pairs.contains(&(names::RAW_VALUE_BYTES, (1u64 << 40).to_string())));
        let all = [
            names::COMPRESSION,
            names::CREATION_TIME,
            names::DATA_RESTART_INTERVAL,
            names::EXTERNAL_SST_FILE_VERSION,
            names::INDEX_RESTART_INTERVAL,
            names::LARGEST_SEQNO,
            names::NUM_DATA_BLOCKS,
            names::NUM_DELETIONS,
            names::NUM_ENTRIES,
            names::NUM_RANGE_DELETIONS,
            names::RAW_KEY_BYTES,
            names::RAW_VALUE_BYTES,
            names::SEPARATED,
            names::SMALLEST_SEQNO,
        ];
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn rejects_a_non_varint_value() {
        let mut b = BlockBuilder::new(1);
        b.add(names::NUM_ENTRIES.as_bytes(), &[0x80]);
        let err = TableProperties::decode(b.finish(), "t".into(), 9).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
}
