//! The one error type of the engine.
//!
//! "Not found" is never an error (`Option`); corruption always names the file
//! (or memtable) and the byte offset where it was detected.

use std::path::PathBuf;
use std::sync::Arc;

/// The result type used throughout batchkv.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure batchkv reports.
///
/// `Error` is `Clone` so that a background error can be handed to every
/// writer that runs into it; I/O errors are therefore shared behind an `Arc`.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with what was being done.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the engine was doing ("appending to WAL 000007.log").
        context: String,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Stored data failed a check (checksum, ordering, framing).
    #[error("corruption in {file} at offset {offset}: {detail}")]
    Corruption {
        /// The file (or `memtable#N`) that holds the bad data.
        file: String,
        /// Byte offset of the bad record or block within `file`.
        offset: u64,
        /// What check failed, with stored and computed values where known.
        detail: String,
    },
    /// A caller-supplied argument or option is invalid; the message names it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another handle (in this or another process) holds the database lock.
    #[error("database at {path} is locked by another process or handle")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// The database is closed or closing.
    #[error("database is shut down")]
    Shutdown,
    /// The operation needs a writable database; this one was opened with
    /// [`Db::open_read_only`](crate::Db::open_read_only).
    #[error("not supported on a database opened read-only: {0}")]
    ReadOnly(&'static str),
    /// The merge operator's `full_merge` returned `None` for a key (on a
    /// read, or in a compaction, which then fails).
    #[error("merge operator {operator} failed for key \"{key}\"")]
    MergeFailed {
        /// The operator's name.
        operator: String,
        /// The key, with non-printable bytes escaped.
        key: String,
    },
    /// Stored data needs something this build lacks (a ZSTD-compressed
    /// block read by a build without the `zstd` cargo feature).
    #[error("unsupported data in {file} at offset {offset}: {detail}")]
    Unsupported {
        /// The file that holds the data.
        file: String,
        /// Byte offset of the block within `file`.
        offset: u64,
        /// What is missing and how to get it.
        detail: String,
    },
    /// A [`Transaction`](crate::Transaction) could not commit: `key` (in
    /// column family `cf`), which it wrote or read with `get_for_update`,
    /// was written by someone else after the transaction's snapshot.
    /// Nothing of the transaction was applied; retry it from the start.
    #[error("transaction conflict: key \"{}\" in column family {cf:?} was written after the transaction's snapshot", .key.escape_ascii())]
    Conflict {
        /// The conflicting key (the first in (family id, key) order).
        key: Vec<u8>,
        /// The name of the key's column family.
        cf: String,
    },
    /// An earlier background failure (flush, compaction, WAL sync) put the
    /// database into read-only mode; writes are refused with this error.
    #[error("database is read-only after a background error: {0}")]
    Background(Box<Error>),
    /// Code that is not the engine's panicked and the panic was caught: a
    /// user callback (merge operator, compaction filter) or, as a last
    /// resort, a whole flush or compaction job. On a background job this
    /// becomes the background error; on a read it is that read's error.
    #[error("{what} panicked: {message}")]
    Panicked {
        /// What panicked: `merge operator "NAME" (full_merge)`,
        /// `compaction filter "NAME"`, `compaction job`, ...
        what: String,
        /// The panic message (`"<non-string panic payload>"` when it had none).
        message: String,
    },
}

/// Runs `f`, turning a panic in it into [`Error::Panicked`] naming `what()`.
///
/// Used at the boundary where the engine calls user code (merge operators,
/// compaction filters) and around whole background jobs, so a panic ends
/// that call or job with an error instead of unwinding through the
/// engine's threads (a background thread that dies leaves its waiters
/// waiting forever). `AssertUnwindSafe` is sound here: the callbacks get
/// only shared borrows of bytes, and a job that fails is discarded whole
/// (its outputs are deleted as garbage, its inputs stay live).
pub(crate) fn catch_panic<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "<non-string panic payload>".to_string()
        };
        Error::Panicked {
            what: what(),
            message,
        }
    })
}

impl Error {
    /// Builds an [`Error::Io`] from an `io::Error` and a description of the action.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<String>, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// The error for using a column family that has been dropped
    /// (`InvalidArgument` naming it).
    pub(crate) fn cf_dropped(name: &str) -> Error {
        Error::InvalidArgument(format!("column family {name:?} has been dropped"))
    }

    /// True for [`Error::Conflict`]: the transaction lost a race and can
    /// be retried.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// True for [`Error::Corruption`] (also when wrapped as a background error).
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Corruption { .. } => true,
            Error::Background(inner) => inner.is_corruption(),
            _ => false,
        }
    }
}
