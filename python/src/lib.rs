//! The Python module `batchkv`: PyO3 bindings for the batchkv engine.
//!
//! Every call that can block (I/O, flush, compaction, a batched read)
//! runs with the GIL released (`Python::detach`); argument conversion and
//! building the Python results happen with the GIL held.

#![deny(unsafe_code)]

mod batch;
mod db;
mod errors;
mod iter;
mod txn;

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// The bytes of a key or value argument: `bytes` (borrowed, no copy),
/// `bytearray` or `memoryview` (copied, since Python code may change them
/// while the GIL is released). `str` and other types are a `TypeError`.
///
/// The borrowed case lives as long as `obj`, which the caller keeps alive,
/// and `bytes` objects are immutable, so the slice may be read with the
/// GIL released.
pub(crate) fn bytes_arg<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.cast::<PyMemoryView>().is_ok() {
        let copy = obj.call_method0("tobytes")?;
        let b = copy.cast::<PyBytes>()?;
        return Ok(Cow::Owned(b.as_bytes().to_vec()));
    }
    if obj.cast::<PyString>().is_ok() {
        return Err(PyTypeError::new_err(
            "keys and values are bytes, not str (encode it first, e.g. s.encode())",
        ));
    }
    Err(PyTypeError::new_err(format!(
        "expected bytes, bytearray or memoryview, got {}",
        obj.get_type().name()?
    )))
}

/// The Python module `batchkv`.
#[pymodule(name = "batchkv")]
fn batchkv_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<db::PyDb>()?;
    m.add_class::<db::PySnapshot>()?;
    m.add_class::<db::PyColumnFamily>()?;
    m.add_class::<batch::PyWriteBatch>()?;
    m.add_class::<iter::PyDbIterator>()?;
    m.add_class::<txn::PyTransaction>()?;
    errors::register(m)
}
