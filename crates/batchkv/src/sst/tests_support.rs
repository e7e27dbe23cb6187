//! Test helpers shared by the SST tests and the micro-measure: in-memory
//! files, building a table into memory, opening it.

use std::sync::{Arc, Mutex};

use super::builder::TableSummary;
use super::{Table, TableBuilder, TableOptions};
use crate::cache::BlockCache;
use crate::error::Result;
use crate::fs::mem::{MemFile, SliceFile};

pub(crate) fn build_in_memory(
    entries: &[(Vec<u8>, Vec<u8>)],
    opts: &TableOptions,
) -> (Vec<u8>, TableSummary) {
    build_in_memory_with_range_dels(entries, &[], opts)
}

/// [`build_in_memory`] with range tombstones in the table's
/// range-deletion block.
pub(crate) fn build_in_memory_with_range_dels(
    entries: &[(Vec<u8>, Vec<u8>)],
    range_dels: &[crate::range_del::RangeTombstone],
    opts: &TableOptions,
) -> (Vec<u8>, TableSummary) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut b = TableBuilder::new(
        Box::new(MemFile::sharing(buf.clone())),
        "mem.sst".into(),
        opts.clone(),
    )
    .unwrap();
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    for t in range_dels {
        b.add_range_deletion(t.clone());
    }
    let summary = b.finish().unwrap();
    let bytes = std::mem::take(&mut *buf.lock().unwrap());
    assert_eq!(summary.file_size, bytes.len() as u64);
    (bytes, summary)
}

pub(crate) fn open_mem(bytes: Vec<u8>, opts: &TableOptions) -> Result<Arc<Table>> {
    Table::open(Arc::new(SliceFile(bytes)), "mem.sst".into(), opts.clone())
}

/// Opens an in-memory table with a block cache.
pub(crate) fn open_mem_cached(
    bytes: Vec<u8>,
    opts: &TableOptions,
    cache: Option<(Arc<BlockCache>, u64)>,
) -> Arc<Table> {
    Table::open_cached(
        Arc::new(SliceFile(bytes)),
        "mem.sst".into(),
        opts.clone(),
        cache,
    )
    .unwrap()
}
