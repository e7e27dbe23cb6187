//! The table cache: open SST readers by file number.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::filename::{self, FileKind};
use crate::error::Result;
use crate::fs::FileSystem;
use crate::sst::{Table, TableOptions};

pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    opts: TableOptions,
    open: Mutex<HashMap<u64, Arc<Table>>>,
}

impl TableCache {
    pub fn new(dir: PathBuf, fs: Arc<dyn FileSystem>, opts: TableOptions) -> TableCache {
        TableCache {
            dir,
            fs,
            opts,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The reader for table `number`, opening (and verifying) it on first use.
    pub fn get(&self, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&number)
        {
            return Ok(Arc::clone(t));
        }
        // Opened outside the lock: two threads may both open it; one wins.
        let path = filename::path(&self.dir, FileKind::Table, number);
        let file = self.fs.open_random_access(&path)?;
        let table = Table::open(file, path.display().to_string(), self.opts.clone())?;
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(open.entry(number).or_insert(table)))
    }

    /// Forgets table `number` (its file is being deleted).
    pub fn evict(&self, number: u64) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
    }
}
