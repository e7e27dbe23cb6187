//! Test helpers shared by the SST tests and the micro-measure: in-memory
//! files, building a table into memory, opening it.

use std::sync::{Arc, Mutex};

use super::{Table, TableBuilder, TableOptions, TableSummary};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, WritableFile};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A writable file whose bytes the test can take afterwards.
pub(crate) struct MemWritable(pub(crate) Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
}

pub(crate) struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let start = offset as usize;
        match self.0.get(start..start + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(Error::io(
                "reading MemFile",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

pub(crate) fn build_in_memory(entries: &Entries, opts: &TableOptions) -> (Vec<u8>, TableSummary) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut b = TableBuilder::new(
        Box::new(MemWritable(buf.clone())),
        "mem.sst".into(),
        opts.clone(),
    )
    .unwrap();
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    let summary = b.finish().unwrap();
    let bytes = std::mem::take(&mut *buf.lock().unwrap());
    assert_eq!(summary.file_size, bytes.len() as u64);
    (bytes, summary)
}

pub(crate) fn open_mem(bytes: Vec<u8>, opts: &TableOptions) -> Result<Arc<Table>> {
    Table::open(Arc::new(MemFile(bytes)), "mem.sst".into(), opts.clone())
}

/// Opens an in-memory table with a block cache.
pub(crate) fn open_mem_cached(
    bytes: Vec<u8>,
    opts: &TableOptions,
    cache: Option<(Arc<BlockCache>, u64)>,
) -> Arc<Table> {
    Table::open_cached(
        Arc::new(MemFile(bytes)),
        "mem.sst".into(),
        opts.clone(),
        cache,
    )
    .unwrap()
}
