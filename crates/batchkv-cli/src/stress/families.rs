//! `--column_families N`: the key space split over N column families
//! ("default", "cf1", …, "cf{N-1}") in contiguous chunks, so a key index
//! range maps to at most a few families and each family's keys still sort
//! like their indexes. Every operation goes to the family of its keys; a
//! batch or a range delete spanning chunks is one batch across families
//! (atomic), and the oracle checks each key whatever family holds it.

use batchkv::{ColumnFamily, Db, Options};

use super::CliResult;

/// The families of a stress run and how keys map to them.
pub struct Families {
    cfs: Vec<ColumnFamily>,
    /// Keys per family (the last may hold fewer).
    chunk: u64,
}

impl Families {
    /// The `n` families of the run, created with `opts` where missing
    /// (a reopened database has them from an earlier run).
    pub fn open(db: &Db, n: usize, opts: &Options, keys: u64) -> CliResult<Families> {
        if n == 0 {
            return Err("--column_families must be at least 1".into());
        }
        let mut cfs = vec![db.default_cf()];
        for j in 1..n {
            let name = format!("cf{j}");
            let cf = match db.cf_handle(&name) {
                Some(cf) => cf,
                None => db
                    .create_cf(&name, opts)
                    .map_err(|e| format!("creating column family {name}: {e}"))?,
            };
            cfs.push(cf);
        }
        Ok(Families {
            cfs,
            chunk: keys.div_ceil(n as u64).max(1),
        })
    }

    /// Every family, default first.
    pub fn all(&self) -> &[ColumnFamily] {
        &self.cfs
    }

    /// The family of key index `i`.
    pub fn of(&self, i: u64) -> &ColumnFamily {
        &self.cfs[self.index_of(i)]
    }

    fn index_of(&self, i: u64) -> usize {
        ((i / self.chunk) as usize).min(self.cfs.len() - 1)
    }

    /// `[lo, hi)` split at family boundaries: `(family, lo, hi)` per
    /// family it touches, ascending (nothing for an empty range).
    pub fn split(&self, lo: u64, hi: u64) -> Vec<(&ColumnFamily, u64, u64)> {
        let mut out = Vec::new();
        let mut a = lo;
        while a < hi {
            let f = self.index_of(a);
            let end = if f + 1 == self.cfs.len() {
                hi
            } else {
                hi.min((f as u64 + 1) * self.chunk)
            };
            out.push((&self.cfs[f], a, end));
            a = end;
        }
        out
    }
}
