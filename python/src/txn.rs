//! `batchkv.Transaction`: an optimistic transaction (the engine's
//! [`batchkv::Transaction`]) from `Db.transaction()`.
//!
//! Thread safety: the engine transaction sits behind a mutex. The mutex is
//! only ever taken inside `Python::detach` closures and never held while
//! the GIL is (re)acquired, so a thread blocked on it never holds up the
//! thread that owns it.
//!
//! Invariants:
//! 1. `State::Finished` is final: once committed (successfully or not) or
//!    rolled back by the context manager, every call raises
//!    `InvalidArgument` naming how it ended, and the engine transaction
//!    (with its `Db` handle and snapshot) has been dropped.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard, PoisonError};

use batchkv::{ColumnFamily, Error as EngineError, Transaction};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::bytes_arg;
use crate::db::{optional_bytes, prefix_end, PyColumnFamily, PySnapshot};
use crate::errors::to_py;
use crate::iter::{Mode, PyDbIterator};

enum State {
    Active(Transaction),
    /// How it ended: "committed", "failed to commit", "rolled back".
    Finished(&'static str),
}

/// An optimistic transaction from `Db.transaction()`.
///
/// Writes are buffered and applied atomically by `commit()`; reads see
/// the transaction's own writes over the database as of the snapshot
/// taken when the transaction began (snapshot isolation). `commit()`
/// raises `batchkv.Conflict` (and applies nothing) if a key the
/// transaction wrote, or read with `get_for_update`, was written by anyone
/// after that snapshot: for those keys committed transactions are
/// serializable. Keys read with plain `get` are not checked. Nothing
/// waits or locks; on a conflict, retry the whole transaction.
///
/// As a context manager it commits when the block ends normally and
/// rolls back when it ends with an exception.
#[pyclass(module = "batchkv", name = "Transaction", frozen)]
pub(crate) struct PyTransaction {
    state: Mutex<State>,
}

/// The keys of a `multi_get` argument, borrowed from the Python objects
/// (kept alive by the caller while the GIL is released).
fn key_list<'a>(objs: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<Cow<'a, [u8]>>> {
    objs.iter().map(bytes_arg).collect()
}

/// The result list of a batched read: the first error, else the values.
fn value_list<'py>(
    py: Python<'py>,
    results: Vec<batchkv::Result<Option<Vec<u8>>>>,
) -> PyResult<Bound<'py, PyList>> {
    let values: Vec<Option<Vec<u8>>> = results
        .into_iter()
        .collect::<batchkv::Result<_>>()
        .map_err(to_py)?;
    PyList::new(
        py,
        values.iter().map(|v| match v {
            Some(v) => PyBytes::new(py, v).into_any(),
            None => py.None().into_bound(py),
        }),
    )
}

impl PyTransaction {
    pub(crate) fn new(txn: Transaction) -> Self {
        PyTransaction {
            state: Mutex::new(State::Active(txn)),
        }
    }

    /// The state; a panic while it was held cannot leave the engine
    /// transaction half-updated in a way later calls misread (each call is
    /// one engine method), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the active transaction with the GIL released.
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Transaction) -> batchkv::Result<R> + Send,
    ) -> PyResult<R> {
        py.detach(|| match &mut *self.lock() {
            State::Active(txn) => f(txn),
            State::Finished(how) => Err(finished(how)),
        })
        .map_err(to_py)
    }

    /// Commits (`commit = true`) or rolls back and ends the transaction.
    /// An already finished transaction is an error, unless `if_active`
    /// (the context manager's exit), which leaves it as it is.
    fn finish(&self, py: Python<'_>, commit: bool, if_active: bool) -> PyResult<()> {
        py.detach(|| {
            let mut state = self.lock();
            let how = if commit { "committed" } else { "rolled back" };
            match std::mem::replace(&mut *state, State::Finished(how)) {
                State::Active(txn) if commit => {
                    let r = txn.commit();
                    if r.is_err() {
                        *state = State::Finished("failed to commit");
                    }
                    r
                }
                State::Active(_rolled_back) => Ok(()),
                State::Finished(how) => {
                    *state = State::Finished(how);
                    if if_active {
                        Ok(())
                    } else {
                        Err(finished(how))
                    }
                }
            }
        })
        .map_err(to_py)
    }

    fn iterator(
        &self,
        py: Python<'_>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
        mode: Mode,
    ) -> PyResult<PyDbIterator> {
        let cf = cf.map(|c| c.cf.clone());
        let range = (
            lower.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
            upper.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
        );
        let it = self.run(py, |txn| match &cf {
            Some(cf) => txn.range_cf(cf, range),
            None => txn.range(range),
        })?;
        Ok(PyDbIterator::from_transaction(it, reverse, mode))
    }

    fn get_inner(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        cf: Option<&PyColumnFamily>,
        for_update: bool,
    ) -> PyResult<Option<Vec<u8>>> {
        let k = bytes_arg(key)?;
        let cf = cf.map(|c| c.cf.clone());
        self.run(py, |txn| match (&cf, for_update) {
            (Some(cf), false) => txn.get_cf(cf, &k),
            (None, false) => txn.get(&k),
            (Some(cf), true) => txn.get_for_update_cf(cf, &k),
            (None, true) => txn.get_for_update(&k),
        })
    }

    /// `multi_get` or, with `for_update`, `multi_get_for_update`: one
    /// batched engine read, in `cf` or the default family.
    fn multi_get_inner<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        cf: Option<&PyColumnFamily>,
        for_update: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let objs: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let ks = key_list(&objs)?;
        let cf = cf.map(|c| c.cf.clone());
        let results = self.run(py, |txn| {
            Ok(match &cf {
                Some(cf) => {
                    let pairs: Vec<(&ColumnFamily, &[u8])> =
                        ks.iter().map(|k| (cf, k.as_ref())).collect();
                    if for_update {
                        txn.multi_get_for_update_cf(&pairs)
                    } else {
                        txn.multi_get_cf(&pairs)
                    }
                }
                None if for_update => txn.multi_get_for_update(&ks),
                None => txn.multi_get(&ks),
            })
        })?;
        value_list(py, results)
    }
}

/// The error for using a finished transaction.
fn finished(how: &str) -> EngineError {
    EngineError::InvalidArgument(format!(
        "the transaction is finished ({how}); begin a new one with Db.transaction()"
    ))
}

#[pymethods]
impl PyTransaction {
    /// The value of `key` as the transaction sees it: its own write if
    /// any, else the database's at the transaction's snapshot; `None` if
    /// absent. Not checked at commit (see `get_for_update`).
    #[pyo3(signature = (key, cf=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = self.get_inner(py, key, cf.as_deref(), false)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    /// Like `get`, and `commit()` raises `Conflict` if anyone writes
    /// `key` after the transaction's snapshot.
    #[pyo3(signature = (key, cf=None))]
    fn get_for_update<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = self.get_inner(py, key, cf.as_deref(), true)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    /// The values of `keys` in order (`None` for absent keys): the
    /// transaction's own writes first, one batched engine read at the
    /// snapshot for the rest, with the GIL released.
    #[pyo3(signature = (keys, cf=None))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.multi_get_inner(py, keys, cf.as_deref(), false)
    }

    /// `multi_get` (one batched engine read), tracking every key as
    /// `get_for_update` does.
    #[pyo3(signature = (keys, cf=None))]
    fn multi_get_for_update<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.multi_get_inner(py, keys, cf.as_deref(), true)
    }

    /// Buffers `key = value`.
    #[pyo3(signature = (key, value, cf=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(value)?);
        let cf = cf.map(|c| c.cf.clone());
        self.run(py, |txn| match &cf {
            Some(cf) => txn.put_cf(cf, &k, &v),
            None => txn.put(&k, &v),
        })
    }

    /// Buffers a delete of `key` (absent keys are no error).
    #[pyo3(signature = (key, cf=None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let k = bytes_arg(key)?;
        let cf = cf.map(|c| c.cf.clone());
        self.run(py, |txn| match &cf {
            Some(cf) => txn.delete_cf(cf, &k),
            None => txn.delete(&k),
        })
    }

    /// Buffers a merge of `operand` into `key`; reads of `key` in the
    /// transaction apply the family's `merge_operator`.
    #[pyo3(signature = (key, operand, cf=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(operand)?);
        let cf = cf.map(|c| c.cf.clone());
        self.run(py, |txn| match &cf {
            Some(cf) => txn.merge_cf(cf, &k, &v),
            None => txn.merge(&k, &v),
        })
    }

    /// `txn[key]`: the value (as `get`), or `KeyError`.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_inner(py, key, None, false)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `txn[key] = value`: buffers a put.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None)
    }

    /// `del txn[key]`: buffers a delete (absent keys are no error).
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, None)
    }

    /// `key in txn` (as `get`).
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_inner(py, key, None, false)?.is_some())
    }

    /// Iterates `(key, value)` pairs with `start <= key < end` as the
    /// transaction sees them: its writes made before this call merged over
    /// the database at the snapshot. Descending with `reverse=True`.
    #[pyo3(signature = (start=None, end=None, reverse=false, cf=None))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, cf, Mode::Items)
    }

    /// Like `items()`, yielding keys only.
    #[pyo3(signature = (start=None, end=None, reverse=false, cf=None))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, cf, Mode::Keys)
    }

    /// Like `items()`, yielding values only.
    #[pyo3(signature = (start=None, end=None, reverse=false, cf=None))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, cf, Mode::Values)
    }

    /// Iterates the `(key, value)` pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, reverse=false, cf=None))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let p = bytes_arg(prefix)?.into_owned();
        let hi = prefix_end(&p);
        self.iterator(py, Some(p), hi, reverse, cf, Mode::Items)
    }

    /// `iter(txn)` iterates all keys of the default family, ascending.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyDbIterator> {
        self.iterator(py, None, None, false, None, Mode::Keys)
    }

    /// Marks the current state; `rollback_to_savepoint()` returns to it.
    /// Savepoints nest.
    fn set_savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |txn| {
            txn.set_savepoint();
            Ok(())
        })
    }

    /// Undoes the writes made since the last savepoint and stops tracking
    /// the keys first read with `get_for_update` since then, removing that
    /// savepoint. `InvalidArgument` if none is set.
    fn rollback_to_savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |txn| txn.rollback_to_savepoint())
    }

    /// Discards every write, tracked key and savepoint. The transaction
    /// stays usable, at its original snapshot.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |txn| {
            txn.rollback();
            Ok(())
        })
    }

    /// Applies the writes atomically, or raises `Conflict` (its `key` and
    /// `cf` attributes name the first conflicting key) and applies
    /// nothing. Either way the transaction is finished afterwards.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.finish(py, true, false)
    }

    /// The number of buffered writes (puts, deletes, merges).
    #[getter]
    fn pending_writes(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, |txn| Ok(txn.pending_writes()))
    }

    /// The snapshot the transaction reads at (usable with `Db` reads).
    #[getter]
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let snap = self.run(py, |txn| Ok(txn.snapshot().clone()))?;
        Ok(PySnapshot::new(snap))
    }

    /// True once committed (successfully or not) or rolled back by the
    /// context manager.
    #[getter]
    fn finished(&self, py: Python<'_>) -> bool {
        py.detach(|| matches!(*self.lock(), State::Finished(_)))
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits if the block ended normally (a `Conflict` propagates),
    /// rolls back if it raised; an already finished transaction is left
    /// as it is. Exceptions from the block propagate.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.finish(py, exc_type.is_none(), true)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        py.detach(|| match &*self.lock() {
            State::Active(txn) => format!(
                "<batchkv.Transaction sequence={} pending_writes={}>",
                txn.snapshot().sequence(),
                txn.pending_writes()
            ),
            State::Finished(how) => format!("<batchkv.Transaction {how}>"),
        })
    }
}
