//! `batchkv.Db`, `batchkv.Snapshot` and `batchkv.ColumnFamily`.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use batchkv::merge_operators::{StringAppendOperator, U64AddOperator};
use batchkv::{
    ColumnFamily, Db, Options, ReadOptions, Snapshot, TransactionOptions, WriteBatch, WriteOptions,
};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::batch::PyWriteBatch;
use crate::bytes_arg;
use crate::errors::{to_py, Closed, InvalidArgument};
use crate::iter::{Mode, PyDbIterator};
use crate::txn::PyTransaction;

/// A consistent read view: reads given `snapshot=` see the database as it
/// was when `Db.snapshot()` was called. Released when garbage collected.
#[pyclass(module = "batchkv", name = "Snapshot", frozen)]
pub(crate) struct PySnapshot {
    snap: Snapshot,
}

impl PySnapshot {
    pub(crate) fn new(snap: Snapshot) -> Self {
        PySnapshot { snap }
    }
}

#[pymethods]
impl PySnapshot {
    /// The sequence number this snapshot reads at.
    #[getter]
    fn sequence(&self) -> u64 {
        self.snap.sequence()
    }

    fn __repr__(&self) -> String {
        format!("<batchkv.Snapshot sequence={}>", self.snap.sequence())
    }
}

/// A handle to a column family (a named key space of the database); pass
/// it as `cf=` to reads, writes and iterators.
#[pyclass(module = "batchkv", name = "ColumnFamily", frozen)]
pub(crate) struct PyColumnFamily {
    pub(crate) cf: ColumnFamily,
}

#[pymethods]
impl PyColumnFamily {
    /// The family's name.
    #[getter]
    fn name(&self) -> String {
        self.cf.name().to_owned()
    }

    fn __repr__(&self) -> String {
        format!("<batchkv.ColumnFamily {:?}>", self.cf.name())
    }
}

/// Builds engine options from Python keyword arguments: each `name=value`
/// goes through `Options::set` (the option-string parser; `True`/`False`
/// become `true`/`false`, numbers their decimal form), then the result is
/// validated. `merge_operator` is handled here: `"u64add"` or
/// `"string_append"` / `"string_append:<delimiter>"`.
fn options_from(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut opts = Options::default();
    let Some(kwargs) = kwargs else {
        return Ok(opts);
    };
    for (name, value) in kwargs.iter() {
        let name: String = name.extract()?;
        let value = option_value(&name, &value)?;
        if name == "merge_operator" {
            opts.merge_operator = Some(merge_operator(&value)?);
        } else {
            opts.set(&name, &value).map_err(to_py)?;
        }
    }
    opts.validate().map_err(to_py)?;
    Ok(opts)
}

/// The string form of one option value.
fn option_value(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        Ok(if value.extract::<bool>()? {
            "true"
        } else {
            "false"
        }
        .to_owned())
    } else if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        Ok(value.str()?.to_cow()?.into_owned())
    } else if let Ok(s) = value.cast::<PyString>() {
        Ok(s.to_cow()?.into_owned())
    } else {
        Err(PyTypeError::new_err(format!(
            "option {name}: expected bool, int, float or str, got {}",
            value.get_type().name()?
        )))
    }
}

fn merge_operator(name: &str) -> PyResult<Arc<dyn batchkv::MergeOperator>> {
    match name {
        "u64add" | "uint64add" => Ok(Arc::new(U64AddOperator)),
        "string_append" | "stringappend" => Ok(Arc::new(StringAppendOperator::new(","))),
        _ => match name.strip_prefix("string_append:") {
            Some(delim) => Ok(Arc::new(StringAppendOperator::new(delim))),
            None => Err(InvalidArgument::new_err(format!(
                "merge_operator: unknown operator {name:?} (expected u64add, \
                 string_append or string_append:<delimiter>)"
            ))),
        },
    }
}

/// Read options for one read: the snapshot, if given.
fn read_opts(snapshot: Option<&PySnapshot>) -> ReadOptions {
    ReadOptions {
        snapshot: snapshot.map(|s| s.snap.clone()),
        ..ReadOptions::default()
    }
}

/// The smallest key greater than every key starting with `prefix`; `None`
/// if there is none (the prefix is empty or all `0xff`).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// An open database. `Db(path, **options)` opens it (creating it if
/// missing, unless `create_if_missing=False`); options are the engine's
/// option names (`write_buffer_size=64 << 20`, `compression="zstd"`, ...).
/// Use it as a context manager, or call `close()`: the database's lock is
/// held until then. Safe to share between threads.
#[pyclass(module = "batchkv", name = "Db", frozen)]
pub(crate) struct PyDb {
    /// `None` once closed. Each call clones the handle (an `Arc`) under
    /// the read lock and works on the clone without the GIL.
    db: RwLock<Option<Db>>,
    path: PathBuf,
}

impl PyDb {
    /// The open handle, or `batchkv.Closed`.
    fn handle(&self) -> PyResult<Db> {
        self.db
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| Closed::new_err("database is closed"))
    }

    /// Applies one write (built by `build`) as a batch, durably if `sync`.
    fn write_one(
        &self,
        py: Python<'_>,
        sync: bool,
        build: impl FnOnce(&mut WriteBatch) + Send,
    ) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| {
            let mut b = WriteBatch::new();
            build(&mut b);
            db.write(&write_opts(sync), b)
        })
        .map_err(to_py)
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "mirrors the Python signature: bounds, direction, snapshot, family, mode"
    )]
    fn iterator(
        &self,
        py: Python<'_>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
        mode: Mode,
    ) -> PyResult<PyDbIterator> {
        let db = self.handle()?;
        let mut ro = read_opts(snapshot.as_deref());
        ro.lower_bound = lower;
        ro.upper_bound = upper;
        let cf = cf.map(|c| c.cf.clone());
        let it = py
            .detach(|| match &cf {
                Some(cf) => db.iter_cf(&ro, cf),
                None => db.iter(&ro),
            })
            .map_err(to_py)?;
        Ok(PyDbIterator::new(it, reverse, mode))
    }

    fn get_inner(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        snapshot: Option<&PySnapshot>,
        cf: Option<&PyColumnFamily>,
    ) -> PyResult<Option<Vec<u8>>> {
        let db = self.handle()?;
        let k = bytes_arg(key)?;
        let ro = read_opts(snapshot);
        let cf = cf.map(|c| c.cf.clone());
        py.detach(|| match &cf {
            Some(cf) => db.get_cf_opt(&ro, cf, &k),
            None => db.get_opt(&ro, &k),
        })
        .map_err(to_py)
    }
}

/// The results of a batched read, gathered without the GIL: every value
/// copied into one buffer (one allocation for the batch, not one per key).
struct Found {
    data: Vec<u8>,
    /// Per key, in input order: the value's `(start, len)` in `data`, or
    /// `None` if absent.
    spans: Vec<Option<(usize, usize)>>,
    /// The first error met (the call then raises it).
    err: Option<batchkv::Error>,
}

impl Found {
    /// One `multi_get_with` of `keys` in the default family.
    fn collect(db: &Db, ro: &ReadOptions, keys: &[Cow<'_, [u8]>]) -> Found {
        let mut f = Found {
            data: Vec::new(),
            spans: Vec::with_capacity(keys.len()),
            err: None,
        };
        db.multi_get_with(ro, keys, |_, r| {
            let span = match r {
                Ok(Some(v)) => {
                    let start = f.data.len();
                    f.data.extend_from_slice(v);
                    Some((start, v.len()))
                }
                Ok(None) => None,
                Err(e) => {
                    f.err.get_or_insert(e);
                    None
                }
            };
            f.spans.push(span);
        });
        f
    }

    /// The same shape from per-key results (`multi_get_cf`).
    fn from_results(results: Vec<batchkv::Result<Option<Vec<u8>>>>) -> Found {
        let mut f = Found {
            data: Vec::new(),
            spans: Vec::with_capacity(results.len()),
            err: None,
        };
        for r in results {
            let span = match r {
                Ok(Some(v)) => {
                    let start = f.data.len();
                    f.data.extend_from_slice(&v);
                    Some((start, v.len()))
                }
                Ok(None) => None,
                Err(e) => {
                    f.err.get_or_insert(e);
                    None
                }
            };
            f.spans.push(span);
        }
        f
    }
}

fn write_opts(sync: bool) -> WriteOptions {
    WriteOptions {
        sync,
        ..WriteOptions::default()
    }
}

pub(crate) fn optional_bytes(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<u8>>> {
    obj.map(|o| bytes_arg(o).map(Cow::into_owned)).transpose()
}

#[pymethods]
impl PyDb {
    /// Opens the database in `path` with the given engine options.
    #[new]
    #[pyo3(signature = (path, **options))]
    fn new(py: Python<'_>, path: PathBuf, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let opts = options_from(options)?;
        let db = py.detach(|| Db::open(&path, opts)).map_err(to_py)?;
        Ok(PyDb {
            db: RwLock::new(Some(db)),
            path,
        })
    }

    /// Opens a secondary instance of the database in `primary`: a
    /// read-only view that follows a primary (in this process or another)
    /// which keeps writing, flushing and compacting. `secondary` is the
    /// instance's own directory (created if missing; it holds only a lock
    /// file). It shows the primary's state as of this call; call
    /// `try_catch_up_with_primary()` to see later writes. Nothing is written
    /// to `primary`; writes, `flush`, `compact_range` and `checkpoint`
    /// raise `batchkv.ReadOnly`. `options` as for `Db(...)`.
    #[staticmethod]
    #[pyo3(signature = (primary, secondary, **options))]
    fn open_as_secondary(
        py: Python<'_>,
        primary: PathBuf,
        secondary: PathBuf,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let opts = options_from(options)?;
        let db = py
            .detach(|| Db::open_as_secondary(&primary, &secondary, opts))
            .map_err(to_py)?;
        Ok(PyDb {
            db: RwLock::new(Some(db)),
            path: primary,
        })
    }

    /// Brings a secondary instance up to date with its primary: afterwards
    /// it shows every write the primary acknowledged before the call.
    /// Reads and iterators begun before it keep what they saw. Raises
    /// `batchkv.InvalidArgument` on a database not opened with
    /// `Db.open_as_secondary`.
    fn try_catch_up_with_primary(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.try_catch_up_with_primary()).map_err(to_py)
    }

    /// Closes the database: flushes what only memory holds, stops the
    /// background threads, releases the lock. Idempotent. Later calls
    /// raise `batchkv.Closed`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = self
            .db
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match db {
            Some(db) => py.detach(|| db.close()).map_err(to_py),
            None => Ok(()),
        }
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.db
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the database; exceptions propagate.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!("<batchkv.Db {:?}{state}>", self.path)
    }

    /// The value of `key`, or `None` if it is absent.
    #[pyo3(signature = (key, snapshot=None, cf=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = self.get_inner(py, key, snapshot.as_deref(), cf.as_deref())?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    /// Sets `key` to `value`; `sync=True` makes it durable (WAL fsync)
    /// before returning.
    #[pyo3(signature = (key, value, sync=false, cf=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(value)?);
        let cf = cf.map(|c| c.cf.clone());
        self.write_one(py, sync, |b| match &cf {
            Some(cf) => b.put_cf(cf, &k, &v),
            None => b.put(&k, &v),
        })
    }

    /// Deletes `key` (absent keys are no error).
    #[pyo3(signature = (key, sync=false, cf=None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        sync: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let k = bytes_arg(key)?;
        let cf = cf.map(|c| c.cf.clone());
        self.write_one(py, sync, |b| match &cf {
            Some(cf) => b.delete_cf(cf, &k),
            None => b.delete(&k),
        })
    }

    /// Merges `operand` into `key` with the database's `merge_operator`.
    #[pyo3(signature = (key, operand, sync=false, cf=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        sync: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key)?, bytes_arg(operand)?);
        let cf = cf.map(|c| c.cf.clone());
        self.write_one(py, sync, |b| match &cf {
            Some(cf) => b.merge_cf(cf, &k, &v),
            None => b.merge(&k, &v),
        })
    }

    /// Deletes every key in `[start, end)` with one write.
    #[pyo3(signature = (start, end, sync=false, cf=None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        sync: bool,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let db = self.handle()?;
        let (s, e) = (bytes_arg(start)?, bytes_arg(end)?);
        let cf = cf.map(|c| c.cf.clone());
        py.detach(|| match &cf {
            Some(cf) => db.delete_range_cf(&write_opts(sync), cf, &s, &e),
            None => db.delete_range(&write_opts(sync), &s, &e),
        })
        .map_err(to_py)
    }

    /// Applies `batch` atomically; `sync=True` makes it durable first.
    /// The batch is unchanged and can be written again or cleared.
    #[pyo3(signature = (batch, sync=false))]
    fn write(&self, py: Python<'_>, batch: PyRef<'_, PyWriteBatch>, sync: bool) -> PyResult<()> {
        let db = self.handle()?;
        let batch: &PyWriteBatch = &batch;
        py.detach(|| {
            let b = batch.lock().clone();
            db.write(&write_opts(sync), b)
        })
        .map_err(to_py)
    }

    /// The values of `keys` (a list or other iterable of bytes-like keys),
    /// in order, `None` for absent keys: one batched engine lookup at one
    /// consistent point, with the GIL released.
    #[pyo3(signature = (keys, snapshot=None, cf=None))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let db = self.handle()?;
        // Holding the key objects keeps the borrowed `bytes` alive while
        // the GIL is released.
        let objs: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let ks: Vec<Cow<'_, [u8]>> = objs.iter().map(bytes_arg).collect::<PyResult<_>>()?;
        let ro = read_opts(snapshot.as_deref());
        let cf = cf.map(|c| c.cf.clone());
        let found = py.detach(|| match &cf {
            None => Found::collect(&db, &ro, &ks),
            Some(cf) => {
                let pairs: Vec<(&ColumnFamily, &[u8])> =
                    ks.iter().map(|k| (cf, k.as_ref())).collect();
                Found::from_results(db.multi_get_cf(&ro, &pairs))
            }
        });
        if let Some(e) = found.err {
            return Err(to_py(e));
        }
        let values = found.spans.iter().map(|span| match *span {
            Some((start, len)) => PyBytes::new(py, &found.data[start..start + len]).into_any(),
            None => py.None().into_bound(py),
        });
        let list = PyList::new(py, values)?;
        Ok(list)
    }

    /// `db[key]`: the value, or `KeyError`.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_inner(py, key, None, None)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `db[key] = value`.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, false, None)
    }

    /// `del db[key]`: deletes it; like RocksDB (and unlike `dict`), an
    /// absent key is not an error.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, false, None)
    }

    /// `key in db`.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_inner(py, key, None, None)?.is_some())
    }

    /// Iterates `(key, value)` pairs with `start <= key < end` (either
    /// bound may be `None`), ascending, or descending with `reverse=True`.
    #[pyo3(signature = (start=None, end=None, reverse=false, snapshot=None, cf=None))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, snapshot, cf, Mode::Items)
    }

    /// Like `items()`, yielding keys only.
    #[pyo3(signature = (start=None, end=None, reverse=false, snapshot=None, cf=None))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, snapshot, cf, Mode::Keys)
    }

    /// Like `items()`, yielding values only.
    #[pyo3(signature = (start=None, end=None, reverse=false, snapshot=None, cf=None))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        self.iterator(py, lo, hi, reverse, snapshot, cf, Mode::Values)
    }

    /// Iterates the `(key, value)` pairs whose key starts with `prefix`.
    #[pyo3(signature = (prefix, reverse=false, snapshot=None, cf=None))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
        snapshot: Option<PyRef<'_, PySnapshot>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<PyDbIterator> {
        let p = bytes_arg(prefix)?.into_owned();
        let hi = prefix_end(&p);
        self.iterator(py, Some(p), hi, reverse, snapshot, cf, Mode::Items)
    }

    /// `iter(db)` iterates all keys, ascending.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyDbIterator> {
        self.iterator(py, None, None, false, None, None, Mode::Keys)
    }

    /// A snapshot of the current state, for `get(..., snapshot=s)`,
    /// `multi_get` and the iterators.
    fn snapshot(&self) -> PyResult<PySnapshot> {
        Ok(PySnapshot {
            snap: self.handle()?.snapshot(),
        })
    }

    /// Begins an optimistic transaction reading at a snapshot taken now;
    /// `sync=True` makes its commit durable (WAL fsync) before `commit()`
    /// returns. Use it as a context manager: the block's normal end
    /// commits, an exception rolls back.
    #[pyo3(signature = (sync=false))]
    fn transaction(&self, sync: bool) -> PyResult<PyTransaction> {
        let opts = TransactionOptions {
            write_options: write_opts(sync),
        };
        Ok(PyTransaction::new(self.handle()?.transaction_opt(&opts)))
    }

    /// Creates column family `name` with the given engine options
    /// (`InvalidArgument` if it exists).
    #[pyo3(signature = (name, **options))]
    fn create_column_family(
        &self,
        py: Python<'_>,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyColumnFamily> {
        let db = self.handle()?;
        let opts = options_from(options)?;
        let cf = py.detach(|| db.create_cf(name, &opts)).map_err(to_py)?;
        Ok(PyColumnFamily { cf })
    }

    /// The handle of column family `name`, or `None` if there is none.
    fn get_column_family(&self, name: &str) -> PyResult<Option<PyColumnFamily>> {
        Ok(self
            .handle()?
            .cf_handle(name)
            .map(|cf| PyColumnFamily { cf }))
    }

    /// Drops a column family (a handle or a name) and its data.
    fn drop_column_family(&self, py: Python<'_>, cf: &Bound<'_, PyAny>) -> PyResult<()> {
        let db = self.handle()?;
        if let Ok(handle) = cf.cast::<PyColumnFamily>() {
            let cf = handle.get().cf.clone();
            py.detach(|| db.drop_cf(&cf)).map_err(to_py)
        } else {
            let name: String = cf.extract()?;
            py.detach(|| db.drop_cf_by_name(&name)).map_err(to_py)
        }
    }

    /// The names of the column families, `"default"` first.
    fn column_families(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.cf_names())
    }

    /// Writes the memtable to an SST file and waits for it (of `cf`, or of
    /// the default family).
    #[pyo3(signature = (cf=None))]
    fn flush(&self, py: Python<'_>, cf: Option<PyRef<'_, PyColumnFamily>>) -> PyResult<()> {
        let db = self.handle()?;
        let cf = cf.map(|c| c.cf.clone());
        py.detach(|| match &cf {
            Some(cf) => db.flush_cf(cf),
            None => db.flush(),
        })
        .map_err(to_py)
    }

    /// Fsyncs the WAL: every write acknowledged so far survives power loss.
    fn sync_wal(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.sync_wal()).map_err(to_py)
    }

    /// Compacts the keys in `[start, end]` (`None`: unbounded) down the
    /// levels, blocking until done.
    #[pyo3(signature = (start=None, end=None, cf=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        let db = self.handle()?;
        let (lo, hi) = (optional_bytes(start)?, optional_bytes(end)?);
        let cf = cf.map(|c| c.cf.clone());
        py.detach(|| match &cf {
            Some(cf) => db.compact_range_cf(cf, lo.as_deref(), hi.as_deref()),
            None => db.compact_range(lo.as_deref(), hi.as_deref()),
        })
        .map_err(to_py)
    }

    /// Writes a consistent, openable copy of the database into `path`
    /// (a new directory).
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.checkpoint(&path)).map_err(to_py)
    }

    /// The value of a `batchkv.` property (`"batchkv.stats"`,
    /// `"batchkv.estimate-num-keys"`, ...), or `None` if unknown.
    #[pyo3(signature = (name, cf=None))]
    fn property(
        &self,
        py: Python<'_>,
        name: &str,
        cf: Option<PyRef<'_, PyColumnFamily>>,
    ) -> PyResult<Option<String>> {
        let db = self.handle()?;
        let cf = cf.map(|c| c.cf.clone());
        Ok(py.detach(|| match &cf {
            Some(cf) => db.property_cf(cf, name),
            None => db.property(name),
        }))
    }
}
