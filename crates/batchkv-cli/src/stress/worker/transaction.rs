//! The stress workload's optimistic transaction: read-modify-write of a
//! few keys in one [`batchkv::Transaction`], through the oracle's protocol.
//!
//! The keys are locked (ascending) before the transaction begins, so no
//! other stress thread writes them between its snapshot and its commit:
//! every read must return exactly the acknowledged state, and a commit
//! that reports a conflict is a bug (no conflicting write can exist).
//! After a crash the commit is all-or-nothing, like a batch (one batch id).

use std::sync::atomic::Ordering;

use batchkv::TransactionOptions;
use rand::Rng;

use super::Worker;
use crate::stress::oracle::{key_bytes, value_bytes, Observed, OracleResult};

impl Worker<'_> {
    /// Locks 1..=6 keys, reads them in a transaction (`get_for_update`
    /// or a batched `multi_get`), buffers and rolls back scratch writes
    /// behind a savepoint (they must never reach the database), then
    /// writes each key (mostly puts) and commits.
    pub(super) fn transaction(&mut self) -> OracleResult<()> {
        let n = self.rng.random_range(1..=6);
        let keys = self.keys(n);
        let opts = self.write_opts();
        let batch = self.s.next_batch.fetch_add(1, Ordering::Relaxed);
        let mut guards = self.lock_all(&keys);
        let mut txn = self.s.db.transaction_opt(&TransactionOptions {
            write_options: opts,
        });
        let fail = |what: &str, e: batchkv::Error| format!("transaction {batch:#x}: {what}: {e}");
        // Reads: each key checked against the acknowledged state.
        if self.rng.random_bool(0.5) {
            for g in &guards {
                let i = g.index;
                let got = txn
                    .get_for_update_cf(self.s.fams.of(i), key_bytes(i))
                    .map_err(|e| fail("get_for_update", e))?;
                self.check(g, "transaction get_for_update", got.as_deref())?;
            }
        } else {
            let query: Vec<(&batchkv::ColumnFamily, Vec<u8>)> = keys
                .iter()
                .map(|&i| (self.s.fams.of(i), key_bytes(i)))
                .collect();
            for (g, r) in guards.iter().zip(txn.multi_get_cf(&query)) {
                let got = r.map_err(|e| fail("multi_get", e))?;
                self.check(g, "transaction multi_get", got.as_deref())?;
            }
        }
        // Scratch writes undone by a savepoint: a value that leaked into
        // the commit would be read back as a mismatch.
        if self.rng.random_ratio(1, 4) {
            txn.set_savepoint();
            for &i in &keys {
                txn.put_cf(self.s.fams.of(i), key_bytes(i), b"rolled back")
                    .map_err(|e| fail("put", e))?;
            }
            txn.rollback_to_savepoint()
                .map_err(|e| fail("rollback_to_savepoint", e))?;
        }
        for g in &mut guards {
            let i = g.index;
            let cf = self.s.fams.of(i);
            let put = self.rng.random_ratio(4, 5);
            let v = g.begin(put, batch)?;
            let want = put.then(|| value_bytes(i, v, batch));
            let written = match &want {
                Some(value) => txn.put_cf(cf, key_bytes(i), value),
                None => txn.delete_cf(cf, key_bytes(i)),
            };
            written.map_err(|e| fail("write", e))?;
            // The transaction reads its own write.
            let own = txn
                .get_cf(cf, key_bytes(i))
                .map_err(|e| fail("get of its own write", e))?;
            if own != want {
                let obs = Observed::parse(i, own.as_deref());
                return Err(format!(
                    "transaction {batch:#x}: reading its own write of key {i} gave {}",
                    obs.describe()
                ));
            }
        }
        txn.commit().map_err(|e| fail("commit", e))?;
        self.s.transactions.fetch_add(1, Ordering::Relaxed);
        self.commit(&opts, &mut guards)
    }
}
