//! `batchkv.Iterator`: a Python iterator over an engine `DbIterator` (of a
//! `Db`) or `TransactionIter` (of a `Transaction`).
//!
//! Invariants:
//! 1. The engine iterator owns what it reads (memtables, table files; a
//!    transaction's writes as of the iterator's creation) and reads one
//!    sequence number, so it outlives `Db.close()` safely and never sees
//!    writes made after its creation.
//! 2. Entries are read in chunks with the GIL released; after a chunk the
//!    engine iterator is positioned at the next entry to read, so chunks
//!    neither skip nor repeat entries.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use batchkv::{DbIterator, Error as EngineError, TransactionIter};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::to_py;

/// What each step of the iterator yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `(key, value)` tuples.
    Items,
    /// Keys only (values are not copied).
    Keys,
    /// Values only.
    Values,
}

/// The most entries (and bytes) one chunk reads.
const MAX_CHUNK: usize = 4096;
const MAX_CHUNK_BYTES: usize = 1 << 20;

/// Where entries come from.
#[allow(
    clippy::large_enum_variant,
    reason = "one per Python iterator, never stored in bulk: the size does not matter"
)]
enum Source {
    /// A database iterator, positioned at its first entry on the first
    /// read (`started`).
    Db { it: DbIterator, started: bool },
    /// A transaction's merged view; owned pairs, from either end.
    Txn(TransactionIter),
}

impl Source {
    /// The next entry in the iteration's direction; `None` at the end.
    /// Copies only what `mode` yields.
    fn next_entry(&mut self, reverse: bool, mode: Mode) -> Option<batchkv::KvResult> {
        match self {
            Source::Db { it, started } => {
                if !*started {
                    *started = true;
                    if reverse {
                        it.seek_to_last();
                    } else {
                        it.seek_to_first();
                    }
                }
                if !it.valid() {
                    return it.status().err().map(Err);
                }
                let key = if mode == Mode::Values {
                    Vec::new()
                } else {
                    it.key().to_vec()
                };
                let value = if mode == Mode::Keys {
                    Vec::new()
                } else {
                    it.value().to_vec()
                };
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
                Some(Ok((key, value)))
            }
            Source::Txn(it) => {
                if reverse {
                    it.next_back()
                } else {
                    it.next()
                }
            }
        }
    }
}

struct State {
    source: Source,
    reverse: bool,
    /// The source ran off its range (or failed: `err`).
    done: bool,
    err: Option<EngineError>,
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// Entries the next chunk reads: starts small (a loop that stops early
    /// reads little), doubles up to [`MAX_CHUNK`].
    chunk: usize,
}

/// One step: an entry, the end (with the error that ended it, if any), or
/// an empty buffer that needs a chunk read first.
enum Step {
    Item((Vec<u8>, Vec<u8>)),
    End(Option<EngineError>),
    Empty,
}

impl State {
    fn step(&mut self) -> Step {
        if let Some(kv) = self.buf.pop_front() {
            Step::Item(kv)
        } else if self.done {
            Step::End(self.err.take())
        } else {
            Step::Empty
        }
    }

    /// Reads the next chunk into `buf` (blocking: call without the GIL).
    fn fill(&mut self, mode: Mode) {
        let mut bytes = 0;
        while self.buf.len() < self.chunk && bytes < MAX_CHUNK_BYTES {
            match self.source.next_entry(self.reverse, mode) {
                Some(Ok((key, value))) => {
                    bytes += key.len() + value.len();
                    self.buf.push_back((key, value));
                }
                Some(Err(e)) => {
                    self.done = true;
                    self.err = Some(e);
                    break;
                }
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
    }
}

/// An iterator over a key range of one snapshot, from `items()`,
/// `keys()`, `values()` or `prefix()` of a `Db` or a `Transaction`. Writes
/// made after it was created are not visible to it.
#[pyclass(module = "batchkv", name = "Iterator", frozen)]
pub(crate) struct PyDbIterator {
    state: Mutex<State>,
    mode: Mode,
}

impl PyDbIterator {
    /// Wraps an unpositioned engine iterator whose `ReadOptions` carry the
    /// range's bounds.
    pub(crate) fn new(it: DbIterator, reverse: bool, mode: Mode) -> Self {
        Self::with_source(Source::Db { it, started: false }, reverse, mode)
    }

    /// Wraps a transaction's range iterator (bounded at its creation).
    pub(crate) fn from_transaction(it: TransactionIter, reverse: bool, mode: Mode) -> Self {
        Self::with_source(Source::Txn(it), reverse, mode)
    }

    fn with_source(source: Source, reverse: bool, mode: Mode) -> Self {
        PyDbIterator {
            state: Mutex::new(State {
                source,
                reverse,
                done: false,
                err: None,
                buf: VecDeque::new(),
                chunk: 64,
            }),
            mode,
        }
    }

    /// The state; a panic elsewhere leaves it consistent (every field is
    /// updated before the next entry is read), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyDbIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next entry; raises `StopIteration` at the end, or the engine
    /// error (I/O, corruption) that ended the iteration.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            // The guard is dropped at the end of this statement: the fill
            // below locks again without the GIL.
            let step = self.lock().step();
            match step {
                Step::Item((k, v)) => {
                    let obj = match self.mode {
                        Mode::Keys => PyBytes::new(py, &k).into_any(),
                        Mode::Values => PyBytes::new(py, &v).into_any(),
                        Mode::Items => PyTuple::new(
                            py,
                            [
                                PyBytes::new(py, &k).into_any(),
                                PyBytes::new(py, &v).into_any(),
                            ],
                        )?
                        .into_any(),
                    };
                    return Ok(Some(obj.unbind()));
                }
                Step::End(None) => return Ok(None),
                Step::End(Some(e)) => return Err(to_py(e)),
                Step::Empty => {
                    let mode = self.mode;
                    py.detach(|| self.lock().fill(mode));
                }
            }
        }
    }
}
