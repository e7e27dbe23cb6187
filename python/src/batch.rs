//! `batchkv.WriteBatch`: operations applied atomically by `Db.write`.

use std::sync::{Mutex, MutexGuard, PoisonError};

use batchkv::WriteBatch;
use pyo3::prelude::*;

use crate::bytes_arg;
use crate::db::PyColumnFamily;

/// A list of writes (put, delete, delete_range, merge) that `Db.write`
/// applies atomically, in order. Reusable: `clear()` empties it.
#[pyclass(module = "batchkv", name = "WriteBatch", frozen)]
pub(crate) struct PyWriteBatch {
    batch: Mutex<WriteBatch>,
}

impl PyWriteBatch {
    /// The batch; a panic elsewhere cannot leave it half-written, so a
    /// poisoned lock is taken as is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, WriteBatch> {
        self.batch.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyWriteBatch {
    /// An empty batch.
    #[new]
    fn new() -> Self {
        PyWriteBatch {
            batch: Mutex::new(WriteBatch::new()),
        }
    }

    /// Adds `key = value` (in column family `cf`, default: the default family).
    #[pyo3(signature = (key, value, cf=None))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(value)?);
        let mut b = self.lock();
        match cf {
            Some(cf) => b.put_cf(&cf.cf, k, v),
            None => b.put(k, v),
        }
        Ok(())
    }

    /// Adds a delete of `key`.
    #[pyo3(signature = (key, cf=None))]
    fn delete(
        &self,
        key: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let k = bytes_arg(key)?;
        let mut b = self.lock();
        match cf {
            Some(cf) => b.delete_cf(&cf.cf, k),
            None => b.delete(k),
        }
        Ok(())
    }

    /// Adds a delete of every key in `[start, end)`.
    #[pyo3(signature = (start, end, cf=None))]
    fn delete_range(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_arg(start)?, bytes_arg(end)?);
        let mut b = self.lock();
        match cf {
            Some(cf) => b.delete_range_cf(&cf.cf, s, e),
            None => b.delete_range(s, e),
        }
        Ok(())
    }

    /// Adds a merge of `operand` into `key` (needs a `merge_operator`).
    #[pyo3(signature = (key, operand, cf=None))]
    fn merge(
        &self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(operand)?);
        let mut b = self.lock();
        match cf {
            Some(cf) => b.merge_cf(&cf.cf, k, v),
            None => b.merge(k, v),
        }
        Ok(())
    }

    /// Removes every operation (keeps the allocation).
    fn clear(&self) {
        self.lock().clear();
    }

    /// The number of operations in the batch.
    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// The size of the encoded batch in bytes.
    #[getter]
    fn approximate_size(&self) -> usize {
        self.lock().approximate_size()
    }

    fn __repr__(&self) -> String {
        format!("<batchkv.WriteBatch ops={}>", self.lock().len())
    }
}
