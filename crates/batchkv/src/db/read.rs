//! Point reads (`get` and its variants): one key through the lookup core
//! (`lookup.rs`): memtable → immutable memtables → L0 (newest first) →
//! L1…Ln.

use super::{Db, DbCore};
use crate::error::{Error, Result};
use crate::key::SequenceNumber;
use crate::options::ReadOptions;
use crate::sst::BlockReadOptions;

/// What the tables need of a read's options.
pub(super) fn block_read_options(opts: &ReadOptions) -> BlockReadOptions {
    BlockReadOptions {
        fill_cache: opts.fill_cache,
        verify_checksums: opts.verify_checksums,
    }
}

impl Db {
    /// The value of `key` in the latest state, or `None` if absent.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// The value of `key` as `opts` (snapshot) sees it.
    pub fn get_opt(&self, opts: &ReadOptions, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_in(&self.core().default_cf, opts, key.as_ref())
    }

    /// The value of `key` in column family `cf`, in the latest state.
    pub fn get_cf(
        &self,
        cf: &super::ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(&ReadOptions::default(), cf, key)
    }

    /// The value of `key` in column family `cf` as `opts` (snapshot) sees it.
    pub fn get_cf_opt(
        &self,
        opts: &ReadOptions,
        cf: &super::ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_in(cf.live()?, opts, key.as_ref())
    }

    /// The value of `key` as `opts` sees it, handed to `f` without a copy
    /// when it is in a memtable (RocksDB's `GetPinned`): `f` gets `None` if
    /// the key is absent. Saves the allocation and copy of [`Db::get_opt`].
    pub fn get_with<R>(
        &self,
        opts: &ReadOptions,
        key: impl AsRef<[u8]>,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R> {
        self.get_in_with(&self.core().default_cf, opts, key.as_ref(), f)
    }

    fn get_in(
        &self,
        cf: &super::CfShared,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.get_in_with(cf, opts, key, |v| v.map(<[u8]>::to_vec))
    }

    fn get_in_with<R>(
        &self,
        cf: &super::CfShared,
        opts: &ReadOptions,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R> {
        let core = self.core();
        let _timer = core.counters.latency.timer(super::latency::Timed::Get);
        core.check_open()?;
        let seq = core.read_sequence(opts)?;
        core.counters.reads.get();
        // A guard, not a new reference: `load_full` incremented the super
        // version's shared count (a cache line every reading thread
        // writes) and decremented it again.
        let sv = cf.sv.load();
        let answer = core.lookup(&sv, key, seq, block_read_options(opts))?;
        Ok(f(answer.as_deref()))
    }
}

impl DbCore {
    /// The sequence number a read with `opts` sees. Loaded before the
    /// super version (see the invariants in `db/mod.rs`).
    pub(super) fn read_sequence(&self, opts: &ReadOptions) -> Result<SequenceNumber> {
        match &opts.snapshot {
            Some(s) if !s.belongs_to(&self.snapshots) => Err(Error::InvalidArgument(
                "ReadOptions::snapshot was taken from another database".into(),
            )),
            Some(s) => Ok(s.sequence()),
            None => Ok(self.last_visible()),
        }
    }

    /// The error for a data-block entry of type `RangeDeletion` (range
    /// tombstones live only in the range-deletion block).
    pub(super) fn range_deletion_among_points(&self, number: u64) -> Error {
        let path = crate::filename::path(&self.dir, crate::filename::FileKind::Table, number);
        Error::corruption(
            path.display().to_string(),
            0,
            "range deletion among the point entries",
        )
    }
}
