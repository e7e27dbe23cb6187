//! What bench creates and must not leave behind: its temporary directories
//! and the child processes of `--engines`. Both are removed at the end of
//! a run and on SIGINT, SIGTERM or SIGHUP, after which bench exits with
//! 128 + the signal number (130 for Ctrl-C, 143 for SIGTERM).
//!
//! Thread safety: one process-wide registry behind a mutex. The signal
//! thread takes it, marks the process as terminating, stops the children
//! and removes the directories while holding it, and exits without
//! releasing it; so a directory or child registered before that is cleaned
//! up, and no new one can be registered after it ([`TempDir::new`] and
//! [`run_child`] register under the lock and refuse once terminating).
//!
//! Invariants:
//! 1. A directory in `dirs` was created by bench and holds nothing else
//!    of the user's (only bench's own database files and child outputs).
//! 2. A child in `children` was spawned by [`run_child`] and not yet
//!    reaped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use super::engine::BenchResult;

#[derive(Default)]
struct Registry {
    dirs: Vec<PathBuf>,
    children: Vec<(u64, Child)>,
    next_child: u64,
    /// Set by the signal thread; nothing new is registered after it.
    terminating: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    dirs: Vec::new(),
    children: Vec::new(),
    next_child: 0,
    terminating: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    // Every update is a single push or remove: a panic cannot leave the
    // registry half-changed, so poisoning is ignored.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Installs the signal handler (once per process).
pub fn install() -> BenchResult<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
                .map_err(|e| format!("installing the signal handler: {e}"))?;
            std::thread::Builder::new()
                .name("bench-signals".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        terminate(sig);
                    }
                })
                .map_err(|e| format!("starting the signal thread: {e}"))?;
            Ok(())
        })
        .clone()
        .map_err(Into::into)
}

/// On a signal: stop the children, remove the directories, exit.
fn terminate(sig: i32) -> ! {
    let mut reg = registry();
    reg.terminating = true;
    for (_, child) in &mut reg.children {
        // SIGKILL: a run's directory is deleted next, so nothing it would
        // do on a gentler signal matters; wait so it writes no more.
        let _ = child.kill();
        let _ = child.wait();
    }
    for dir in &reg.dirs {
        remove_dir(dir);
    }
    eprintln!("bench: interrupted by signal {sig}; removed its temporary directories");
    std::process::exit(128 + sig);
}

/// Removes `dir`, retrying while a background thread of an engine still
/// running in this process creates files in it.
fn remove_dir(dir: &Path) {
    for _ in 0..50 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    eprintln!("bench: could not remove {}", dir.display());
}

/// A directory bench created, removed when dropped or on a signal.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `PREFIX…` in `parent`, or in the system's temporary directory.
    pub fn new(prefix: &str, parent: Option<&Path>) -> BenchResult<TempDir> {
        let mut reg = registry();
        if reg.terminating {
            return Err("interrupted".into());
        }
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        let dir = match parent {
            Some(p) => builder.tempdir_in(p)?,
            None => builder.tempdir()?,
        };
        let path = dir.keep();
        reg.dirs.push(path.clone());
        Ok(TempDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let mut reg = registry();
        remove_dir(&self.path);
        reg.dirs.retain(|d| d != &self.path);
    }
}

/// Runs `cmd` to completion as a registered child, so a signal to bench
/// stops it too.
pub fn run_child(cmd: &mut Command) -> BenchResult<ExitStatus> {
    let id = {
        let mut reg = registry();
        if reg.terminating {
            return Err("interrupted".into());
        }
        let child = cmd.spawn()?;
        let id = reg.next_child;
        reg.next_child += 1;
        reg.children.push((id, child));
        id
    };
    loop {
        {
            let mut reg = registry();
            let pos = reg
                .children
                .iter()
                .position(|(i, _)| *i == id)
                .ok_or("internal: child not registered")?;
            if let Some(status) = reg.children[pos].1.try_wait()? {
                reg.children.swap_remove(pos);
                return Ok(status);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_dirs_are_registered_until_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let d = TempDir::new("t-", Some(parent.path())).unwrap();
        let path = d.path().to_path_buf();
        std::fs::write(path.join("f"), "x").unwrap();
        assert!(registry().dirs.contains(&path));
        drop(d);
        assert!(!path.exists());
        assert!(!registry().dirs.contains(&path));
    }

    #[test]
    fn children_run_to_completion_and_are_forgotten() {
        let status = run_child(&mut Command::new("true")).unwrap();
        assert!(status.success());
        assert!(registry().children.is_empty());
    }
}
