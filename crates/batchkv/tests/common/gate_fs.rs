//! [`GateFs`]: a filesystem wrapper that stops a background job at an exact
//! point. A test arms a gate on one operation kind and file-name part; the
//! next thread that reaches a matching operation blocks *before* doing it
//! until the test releases the gate. Everything else passes through.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use batchkv::{Db, FileLock, FileSystem, Options, PosixFs, RandomAccessFile, Result, WritableFile};

/// The operations a gate can stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateOp {
    /// `FileSystem::new_writable`.
    Create,
    /// `FileSystem::sync_dir` (matched against the directory path).
    SyncDir,
    /// `FileSystem::rename` (matched against the target path).
    Rename,
    /// `FileSystem::remove_file`.
    Remove,
    /// `WritableFile::sync` of a file opened through the wrapper.
    Sync,
    /// `FileSystem::create_dir_all`.
    CreateDir,
}

#[derive(Default)]
struct Gates {
    /// The armed gate: its ticket, operation and file-name part.
    armed: Option<(u64, GateOp, String)>,
    /// Tickets handed out so far.
    issued: u64,
    /// The tickets whose gate a thread has reached.
    reached: Vec<u64>,
    /// Gates with a ticket ≤ this are open.
    released: u64,
}

/// Names one armed gate, for [`GateFs::wait_held`] and [`GateFs::release`].
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

pub struct GateFs {
    inner: Arc<dyn FileSystem>,
    gates: Mutex<Gates>,
    cv: Condvar,
    /// Itself, for the files it opens.
    this: std::sync::Weak<GateFs>,
}

/// A file opened through [`GateFs`]: its `sync` passes the gates.
struct GatedFile {
    inner: Box<dyn WritableFile>,
    path: std::path::PathBuf,
    gates: Arc<GateFs>,
}

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.gates.pass(GateOp::Sync, &self.path);
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

const WAIT: Duration = Duration::from_secs(30);

/// A database in a fresh directory whose file operations pass a [`GateFs`],
/// opened with `opts` but without automatic compactions (only the jobs the
/// test starts run); returns the options used, for reopening.
pub fn gated_db(opts: Options) -> (tempfile::TempDir, Arc<GateFs>, Db, Options) {
    let dir = tempfile::tempdir().unwrap();
    let fs = GateFs::new(Arc::new(PosixFs));
    let opts = Options {
        disable_auto_compactions: true,
        ..opts
    };
    let db = Db::open_with_fs(dir.path(), opts.clone(), fs.clone()).unwrap();
    (dir, fs, db, opts)
}

impl GateFs {
    pub fn new(inner: Arc<dyn FileSystem>) -> Arc<GateFs> {
        Arc::new_cyclic(|this| GateFs {
            inner,
            gates: Mutex::new(Gates::default()),
            cv: Condvar::new(),
            this: this.clone(),
        })
    }

    fn me(&self) -> Arc<GateFs> {
        self.this
            .upgrade()
            .expect("a GateFs outlives its files' calls")
    }

    /// The next `op` on a path containing `name_part` blocks until its
    /// ticket is released. Arming a gate disarms one not yet reached;
    /// threads already blocked stay blocked.
    pub fn hold(&self, op: GateOp, name_part: &str) -> Ticket {
        let mut g = self.gates.lock().unwrap();
        g.issued += 1;
        let t = g.issued;
        g.armed = Some((t, op, name_part.to_string()));
        Ticket(t)
    }

    /// Waits until a thread is blocked at `ticket`'s gate (panics after 30 s).
    pub fn wait_held(&self, ticket: Ticket) {
        let g = self.gates.lock().unwrap();
        let (_g, timeout) = self
            .cv
            .wait_timeout_while(g, WAIT, |g| !g.reached.contains(&ticket.0))
            .unwrap();
        assert!(!timeout.timed_out(), "no thread reached gate {ticket:?}");
    }

    /// Whether a thread reaches `ticket`'s gate within `timeout`.
    pub fn reached_within(&self, ticket: Ticket, timeout: Duration) -> bool {
        let g = self.gates.lock().unwrap();
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |g| !g.reached.contains(&ticket.0))
            .unwrap();
        g.reached.contains(&ticket.0)
    }

    /// Opens `ticket`'s gate (and every older one); disarms it if unreached.
    pub fn release(&self, ticket: Ticket) {
        let mut g = self.gates.lock().unwrap();
        g.released = g.released.max(ticket.0);
        if g.armed.as_ref().is_some_and(|a| a.0 <= ticket.0) {
            g.armed = None;
        }
        self.cv.notify_all();
    }

    fn pass(&self, op: GateOp, path: &Path) {
        let mut g = self.gates.lock().unwrap();
        let ticket = match &g.armed {
            Some((t, o, part)) if *o == op && path.to_string_lossy().contains(part.as_str()) => *t,
            _ => return,
        };
        g.armed = None;
        g.reached.push(ticket);
        self.cv.notify_all();
        let (_g, timeout) = self
            .cv
            .wait_timeout_while(g, WAIT, |g| g.released < ticket)
            .unwrap();
        assert!(!timeout.timed_out(), "gate {ticket} never released");
    }
}

impl FileSystem for GateFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.pass(GateOp::CreateDir, dir);
        self.inner.create_dir_all(dir)
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.pass(GateOp::Create, path);
        Ok(Box::new(GatedFile {
            inner: self.inner.new_writable(path)?,
            path: path.to_path_buf(),
            gates: Arc::clone(&self.me()),
        }))
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_random_access(path)
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.inner.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.pass(GateOp::Rename, to);
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.pass(GateOp::Remove, path);
        self.inner.remove_file(path)
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.pass(GateOp::SyncDir, dir);
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}
