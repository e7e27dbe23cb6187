//! Point reads: memtable → immutable memtables → L0 (newest first) → L1…Ln.

use std::sync::Arc;

use super::{Db, DbCore, SuperVersion};
use crate::error::{Error, Result};
use crate::key::{SequenceNumber, ValueType};
use crate::memtable::EntryRef;
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
        super::statistics::Counters::add(&core.counters.gets, 1);
        let sv = cf.sv.load_full();
        let ro = block_read_options(opts);
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            let covered = mem.range_dels().map_or(0, |d| d.max_covering(key, seq));
            if covered > 0 {
                // Only a version newer than the tombstone survives it; older
                // memtables and the tables hold only older versions.
                return match mem.get_versioned(key, seq)? {
                    Some((s, EntryRef::Value(v))) if s > covered => Ok(f(Some(v))),
                    Some((s, EntryRef::Merge(_))) if s > covered => {
                        Ok(f(core.get_merged(&sv, key, seq, ro)?.as_deref()))
                    }
                    _ => Ok(f(None)),
                };
            }
            match mem.get(key, seq)? {
                Some(EntryRef::Value(v)) => return Ok(f(Some(v))),
                Some(EntryRef::Deleted) => return Ok(f(None)),
                Some(EntryRef::Merge(_)) => {
                    return Ok(f(core.get_merged(&sv, key, seq, ro)?.as_deref()))
                }
                None => {}
            }
        }
        Ok(f(core.get_from_tables(&sv, key, seq, ro)?.as_deref()))
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

    /// Looks `key` up in the SST files of `sv`'s version.
    pub(super) fn get_from_tables(
        &self,
        sv: &Arc<SuperVersion>,
        key: &[u8],
        seq: SequenceNumber,
        ro: BlockReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        // The newest range tombstone covering `key` seen so far (0: none).
        let mut covered = 0;
        for level in 0..sv.version.levels.len() {
            for file in sv.version.files_for_key(level, key) {
                // An ingested file newer than the read holds nothing it sees.
                if !file.visible_at(seq) {
                    continue;
                }
                let table = self.tables.get(file.number)?;
                if let Some(rd) = table.range_dels() {
                    covered = covered.max(rd.fragmented.max_covering(key, seq));
                }
                if covered > 0 {
                    match table.get_versioned(key, seq, ro)? {
                        // An ingested file's entries are at its global seqno.
                        Some((s, ValueType::Value, v)) if s.max(file.global_seqno) > covered => {
                            return Ok(Some(v))
                        }
                        Some((s, ValueType::Merge, _)) if s.max(file.global_seqno) > covered => {
                            return self.get_merged(sv, key, seq, ro)
                        }
                        Some(_) => return Ok(None),
                        None => continue,
                    }
                }
                match table.get_with(key, seq, ro)? {
                    Some((ValueType::Value, v)) => return Ok(Some(v)),
                    Some((ValueType::Deletion, _)) => return Ok(None),
                    Some((ValueType::Merge, _)) => return self.get_merged(sv, key, seq, ro),
                    Some((ValueType::RangeDeletion, _)) => {
                        return Err(self.range_deletion_among_points(file.number))
                    }
                    None => {}
                }
            }
        }
        Ok(None)
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
