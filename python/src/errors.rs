//! The exception hierarchy: `batchkv.Error` and one subclass per kind of
//! engine error ([`batchkv::Error`]'s variants).

use batchkv::Error as EngineError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

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
        // The engine's enum is non-exhaustive: a kind added later is still
        // a batchkv.Error.
        _ => Error::new_err(msg),
    }
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
    Ok(())
}
