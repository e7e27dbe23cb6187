//! [`FaultInjectionFs`]: a [`FileSystem`] wrapper for crash and I/O-error
//! tests.
//!
//! It does two things, both on demand from the test:
//!
//! 1. **Fails operations.** [`FaultInjectionFs::inject`] arms a [`Fault`]:
//!    the `nth` matching write (append or flush), sync, rename or create
//!    from now on returns an I/O error — once, or every time from then on.
//!    A failed operation changes nothing on disk.
//! 2. **Simulates power loss.** The wrapper models what a disk keeps when the
//!    machine loses power (the model of LevelDB's `fault_injection_test` and
//!    redb's crash tests):
//!    - file *data* is durable up to the length at the file's last successful
//!      `sync`; anything appended later is lost;
//!    - directory *entries* are durable only after a `sync_dir` of their
//!      directory: a creation, rename or deletion not followed by one is
//!      undone.
//!
//!    - [`FaultInjectionFs::write_back`] makes one file's unsynced data and
//!      its name durable, as the OS writing it back on its own would.
//!
//!    A test calls [`FaultInjectionFs::power_off`] (every later operation
//!    fails, so a database being dropped cannot write anything more), drops
//!    the database, then [`FaultInjectionFs::lose_unsynced_data`], which
//!    rewrites the real directory into the state the model says survived and
//!    powers the filesystem back on.
//!
//! Simplifications (documented so a test does not rely on more): a file that
//! existed before this wrapper first saw it is treated as fully durable;
//! truncating an existing file by re-creating it makes its durable length 0
//! (the engine never re-creates a live file); power loss never tears a
//! single `sync`. Reads, listing, `exists` and locks are passed through and
//! never fail.
//!
//! Thread safety: all state is under one mutex; files opened through the
//! wrapper share it.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The kinds of operation a [`Fault`] can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `WritableFile::append` and `WritableFile::flush`.
    Write,
    /// `WritableFile::sync` and `FileSystem::sync_dir`.
    Sync,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::new_writable`.
    Create,
}

/// One armed fault: which operations it matches and when it fires.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The operation kind to fail.
    pub op: FaultOp,
    /// Only operations on files whose name contains this (".log", ".sst",
    /// "MANIFEST", "CURRENT"); `None` matches every file.
    pub name_contains: Option<String>,
    /// Fail the `nth` matching operation from now (1 = the next one).
    pub nth: u64,
    /// Keep failing every matching operation after the first failure.
    pub sticky: bool,
}

impl Fault {
    /// A fault that fails the next matching operation once.
    pub fn next(op: FaultOp) -> Fault {
        Fault {
            op,
            name_contains: None,
            nth: 1,
            sticky: false,
        }
    }

    /// Restricts the fault to files whose name contains `part`.
    pub fn on_files(mut self, part: &str) -> Fault {
        self.name_contains = Some(part.to_string());
        self
    }

    /// Fails the `nth` matching operation instead of the next one.
    pub fn nth(mut self, nth: u64) -> Fault {
        self.nth = nth.max(1);
        self
    }

    /// Keeps failing every matching operation once it has fired.
    pub fn sticky(mut self) -> Fault {
        self.sticky = true;
        self
    }
}

/// A directory change not yet made durable by `sync_dir`.
enum DirOp {
    Created(PathBuf),
    /// `replaced`: the durable content `to` had before, if it existed.
    Renamed {
        from: PathBuf,
        to: PathBuf,
        replaced: Option<Vec<u8>>,
    },
    /// The durable content of the deleted file.
    Deleted(PathBuf, Vec<u8>),
}

impl DirOp {
    fn dir(&self) -> Option<&Path> {
        match self {
            DirOp::Created(p) | DirOp::Deleted(p, _) | DirOp::Renamed { to: p, .. } => p.parent(),
        }
    }
}

#[derive(Default)]
struct State {
    /// Durable length of each file written through the wrapper.
    durable: HashMap<PathBuf, u64>,
    /// Directory changes in the order they happened.
    dir_ops: Vec<DirOp>,
    faults: Vec<Fault>,
    /// Operations failed so far (by faults or power-off).
    failures: u64,
    powered_off: bool,
}

impl State {
    /// Decides whether an `op` on `path` fails now, advancing the faults.
    fn should_fail(&mut self, op: FaultOp, path: &Path) -> bool {
        if self.powered_off {
            self.failures += 1;
            return true;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut fail = false;
        self.faults.retain_mut(|f| {
            let matches = f.op == op
                && f.name_contains
                    .as_ref()
                    .is_none_or(|s| name.contains(s.as_str()));
            if !matches {
                return true;
            }
            if f.nth > 1 {
                f.nth -= 1;
                return true;
            }
            fail = true;
            f.sticky
        });
        if fail {
            self.failures += 1;
        }
        fail
    }
}

struct Shared {
    inner: Arc<dyn FileSystem>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // Test-only bookkeeping; a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check(&self, op: FaultOp, path: &Path) -> Result<()> {
        if self.state().should_fail(op, path) {
            return Err(Error::io(
                format!("{op:?} on {} (injected fault)", path.display()),
                io::Error::other("injected fault"),
            ));
        }
        Ok(())
    }
}

/// A [`FileSystem`] that fails operations on demand and simulates power
/// loss; see the module documentation.
#[derive(Clone)]
pub struct FaultInjectionFs {
    shared: Arc<Shared>,
}

impl FaultInjectionFs {
    /// Wraps `inner` (usually [`super::PosixFs`]).
    pub fn new(inner: Arc<dyn FileSystem>) -> FaultInjectionFs {
        FaultInjectionFs {
            shared: Arc::new(Shared {
                inner,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Arms `fault`.
    pub fn inject(&self, fault: Fault) {
        self.shared.state().faults.push(fault);
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        self.shared.state().faults.clear();
    }

    /// Operations failed so far (by faults or while powered off).
    pub fn failures(&self) -> u64 {
        self.shared.state().failures
    }

    /// Cuts the power: every later write, sync, rename, create and delete
    /// fails until [`FaultInjectionFs::lose_unsynced_data`].
    pub fn power_off(&self) {
        self.shared.state().powered_off = true;
    }

    /// Puts the real directory into the state that survives a power loss at
    /// this moment (truncates files to their durable length, undoes
    /// directory changes not followed by `sync_dir`), forgets all tracking
    /// and faults, and powers the filesystem back on. Drop every database
    /// using this filesystem first.
    pub fn lose_unsynced_data(&self) -> Result<()> {
        let (durable, dir_ops) = {
            let mut st = self.shared.state();
            st.faults.clear();
            st.powered_off = false;
            (
                std::mem::take(&mut st.durable),
                std::mem::take(&mut st.dir_ops),
            )
        };
        let io =
            |what: &str, p: &Path, e: io::Error| Error::io(format!("{what} {}", p.display()), e);
        // 1. File data: cut every file back to its durable length.
        for (path, len) in &durable {
            if path.exists() {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| io("opening", path, e))?;
                f.set_len(*len).map_err(|e| io("truncating", path, e))?;
            }
        }
        // 2. Directory entries: undo, newest first.
        for op in dir_ops.into_iter().rev() {
            match op {
                DirOp::Created(p) => {
                    if p.exists() {
                        std::fs::remove_file(&p).map_err(|e| io("removing", &p, e))?;
                    }
                }
                DirOp::Renamed { from, to, replaced } => {
                    if to.exists() {
                        std::fs::rename(&to, &from).map_err(|e| io("renaming back", &to, e))?;
                    }
                    if let Some(content) = replaced {
                        std::fs::write(&to, content).map_err(|e| io("restoring", &to, e))?;
                    }
                }
                DirOp::Deleted(p, content) => {
                    std::fs::write(&p, content).map_err(|e| io("restoring", &p, e))?;
                }
            }
        }
        Ok(())
    }

    /// Simulates the OS writing `path` back on its own, before any fsync:
    /// the bytes handed to the OS so far become durable, and so does the
    /// file's directory entry together with every directory change made
    /// before its creation (a journaling file system commits them in
    /// order). With it a test makes a power loss keep a newer file's
    /// unsynced pages while an older file's are lost.
    pub fn write_back(&self, path: &Path) -> Result<()> {
        let len = std::fs::metadata(path)
            .map_err(|e| Error::io(format!("reading the size of {}", path.display()), e))?
            .len();
        let mut st = self.shared.state();
        st.durable.insert(path.to_path_buf(), len);
        let created = st
            .dir_ops
            .iter()
            .rposition(|op| matches!(op, DirOp::Created(p) if p == path));
        if let Some(i) = created {
            st.dir_ops.drain(..=i);
        }
        Ok(())
    }

    /// The bytes of `path` that would survive power loss now.
    fn durable_content(&self, st: &State, path: &Path) -> Option<Vec<u8>> {
        let mut data = std::fs::read(path).ok()?;
        if let Some(&len) = st.durable.get(path) {
            data.truncate(len as usize);
        }
        Some(data)
    }
}

struct FaultWritable {
    path: PathBuf,
    inner: Box<dyn WritableFile>,
    shared: Arc<Shared>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.shared.check(FaultOp::Write, &self.path)?;
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.shared.check(FaultOp::Write, &self.path)?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.shared.check(FaultOp::Sync, &self.path)?;
        self.inner.sync()?;
        let len = self.inner.len();
        self.shared.state().durable.insert(self.path.clone(), len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl FileSystem for FaultInjectionFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.inner.create_dir_all(dir)
    }

    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.shared.check(FaultOp::Create, path)?;
        let existed = self.shared.inner.exists(path);
        let inner = self.shared.inner.new_writable(path)?;
        let mut st = self.shared.state();
        st.durable.insert(path.to_path_buf(), 0);
        if !existed {
            st.dir_ops.push(DirOp::Created(path.to_path_buf()));
        }
        Ok(Box::new(FaultWritable {
            path: path.to_path_buf(),
            inner,
            shared: Arc::clone(&self.shared),
        }))
    }

    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared.inner.open_random_access(path)
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.shared.inner.read_all(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.shared.check(FaultOp::Rename, from)?;
        let mut st = self.shared.state();
        let replaced = self.durable_content(&st, to);
        self.shared.inner.rename(from, to)?;
        if let Some(len) = st.durable.remove(from) {
            st.durable.insert(to.to_path_buf(), len);
        } else {
            st.durable.remove(to);
        }
        st.dir_ops.push(DirOp::Renamed {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            replaced,
        });
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        if self.shared.state().powered_off {
            return self.shared.check(FaultOp::Write, path);
        }
        let mut st = self.shared.state();
        let content = self.durable_content(&st, path).unwrap_or_default();
        self.shared.inner.remove_file(path)?;
        st.durable.remove(path);
        st.dir_ops.push(DirOp::Deleted(path.to_path_buf(), content));
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.shared.inner.list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.shared.check(FaultOp::Sync, dir)?;
        self.shared.inner.sync_dir(dir)?;
        self.shared
            .state()
            .dir_ops
            .retain(|op| op.dir().is_some_and(|d| d != dir));
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.shared.inner.exists(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.shared.inner.lock(path)
    }
}
