//! `batchkv.Iterator`: a Python iterator over an engine `DbIterator`.
//!
//! Invariants:
//! 1. The engine iterator owns what it reads (memtables, table files) and
//!    reads one sequence number, so it outlives `Db.close()` safely and
//!    never sees writes made after its creation.
//! 2. Entries are read in chunks with the GIL released; after a chunk the
//!    engine iterator is positioned at the next entry to read, so chunks
//!    neither skip nor repeat entries.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use batchkv::{DbIterator, Error as EngineError};
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

struct State {
    it: DbIterator,
    reverse: bool,
    started: bool,
    /// The engine iterator ran off its range (or failed: `err`).
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
        if !self.started {
            self.started = true;
            if self.reverse {
                self.it.seek_to_last();
            } else {
                self.it.seek_to_first();
            }
        }
        let mut bytes = 0;
        while self.buf.len() < self.chunk && bytes < MAX_CHUNK_BYTES {
            if !self.it.valid() {
                self.done = true;
                self.err = self.it.status().err();
                break;
            }
            let key = if mode == Mode::Values {
                Vec::new()
            } else {
                self.it.key().to_vec()
            };
            let value = if mode == Mode::Keys {
                Vec::new()
            } else {
                self.it.value().to_vec()
            };
            bytes += key.len() + value.len();
            self.buf.push_back((key, value));
            if self.reverse {
                self.it.prev();
            } else {
                self.it.next();
            }
        }
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
    }
}

/// An iterator over a key range of one snapshot, from `Db.items()`,
/// `Db.keys()`, `Db.values()` or `Db.prefix()`. Writes made after it was
/// created are not visible to it.
#[pyclass(module = "batchkv", name = "Iterator", frozen)]
pub(crate) struct PyDbIterator {
    state: Mutex<State>,
    mode: Mode,
}

impl PyDbIterator {
    /// Wraps an unpositioned engine iterator whose `ReadOptions` carry the
    /// range's bounds.
    pub(crate) fn new(it: DbIterator, reverse: bool, mode: Mode) -> Self {
        PyDbIterator {
            state: Mutex::new(State {
                it,
                reverse,
                started: false,
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
