//! The exception hierarchy: `batchkv.Error` and one subclass per kind of
//! engine error ([`batchkv::Error`]'s variants).

use batchkv::Error as EngineError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

create_exception!(
    batchkv,
    Error,
    PyException,
    "Base class of every batchkv error."
);
create_exception!(
    batchkv,
    IOError,
    Error,
    "An operating-system I/O error (the message says what was being done)."
);
create_exception!(
    batchkv,
    Corruption,
    Error,
    "Stored data failed a check; the message names the file and offset."
);
create_exception!(
    batchkv,
    InvalidArgument,
    Error,
    "An argument or option is invalid; the message names it."
);
create_exception!(
    batchkv,
    Locked,
    Error,
    "Another handle, in this or another process, holds the database's lock."
);
create_exception!(
    batchkv,
    Closed,
    Error,
    "The database is closed (or closing)."
);
create_exception!(
    batchkv,
    ReadOnly,
    Error,
    "The operation needs a writable database."
);
create_exception!(
    batchkv,
    MergeFailed,
    Error,
    "The merge operator failed for a key."
);
create_exception!(
    batchkv,
    Unsupported,
    Error,
    "Stored data needs something this build lacks (e.g. ZSTD)."
);
create_exception!(
    batchkv,
    Conflict,
    Error,
    "A transaction could not commit: a key it wrote or read with \
     get_for_update was written by someone else after its snapshot. \
     Nothing was applied; retry the transaction. Attributes: key (bytes), \
     cf (the column family's name)."
);
create_exception!(
    batchkv,
    BackgroundError,
    Error,
    "A background failure (flush, compaction, WAL sync) stopped writes."
);

/// The Python exception for an engine error: the subclass of
/// `batchkv.Error` for its kind, with the engine's message.
pub(crate) fn to_py(e: EngineError) -> PyErr {
    let msg = e.to_string();
    match e {
        EngineError::Io { .. } => IOError::new_err(msg),
        EngineError::Corruption { .. } => Corruption::new_err(msg),
        EngineError::InvalidArgument(_) => InvalidArgument::new_err(msg),
        EngineError::Locked { .. } => Locked::new_err(msg),
        EngineError::Shutdown => Closed::new_err(msg),
        EngineError::ReadOnly(_) => ReadOnly::new_err(msg),
        EngineError::MergeFailed { .. } => MergeFailed::new_err(msg),
        EngineError::Unsupported { .. } => Unsupported::new_err(msg),
        EngineError::Background(_) => BackgroundError::new_err(msg),
        EngineError::Conflict { key, cf } => conflict(msg, &key, &cf),
        // The engine's enum is non-exhaustive: a kind added later is still
        // a batchkv.Error.
        _ => Error::new_err(msg),
    }
}

/// A `Conflict` carrying the key (`bytes`) and family name as attributes.
fn conflict(msg: String, key: &[u8], cf: &str) -> PyErr {
    Python::attach(|py| {
        let err = Conflict::new_err(msg);
        let value = err.value(py);
        let set = value
            .setattr("key", PyBytes::new(py, key))
            .and_then(|()| value.setattr("cf", cf));
        match set {
            Ok(()) => err,
            // Setting attributes on a fresh exception cannot fail short of
            // memory exhaustion; if it does, that error is raised instead.
            Err(e) => e,
        }
    })
}

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("IOError", py.get_type::<IOError>())?;
    m.add("Corruption", py.get_type::<Corruption>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("Locked", py.get_type::<Locked>())?;
    m.add("Closed", py.get_type::<Closed>())?;
    m.add("ReadOnly", py.get_type::<ReadOnly>())?;
    m.add("MergeFailed", py.get_type::<MergeFailed>())?;
    m.add("Unsupported", py.get_type::<Unsupported>())?;
    m.add("BackgroundError", py.get_type::<BackgroundError>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    Ok(())
}
