//! Issue 27, item 2: a panicking user callback (merge operator, compaction
//! filter) killed the background compaction thread; `background-errors`
//! stayed 0, writes went on, the next `compact_range(None, None)` never
//! returned and `close()` returned `Ok`. Now the panic is caught where the
//! callback is called and becomes the database's background error, naming
//! the callback and the panic message: writes are refused, and `flush`,
//! `compact_range` and `close` return it instead of hanging. A panic on
//! the read path (a merge during `get`) is that call's error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use batchkv::{CompactionDecision, CompactionFilter, Db, MergeOperator, Options, ReadOptions};

/// A merge operator that panics in `full_merge` (and `partial_merge`).
struct Exploding {
    called: AtomicBool,
}

impl MergeOperator for Exploding {
    fn name(&self) -> &str {
        "exploding-op"
    }
    fn full_merge(&self, _: &[u8], _: Option<&[u8]>, _: &[&[u8]]) -> Option<Vec<u8>> {
        self.called.store(true, Ordering::SeqCst);
        panic!("boom in full_merge");
    }
    fn partial_merge(&self, _: &[u8], _: &[u8], _: &[u8]) -> Option<Vec<u8>> {
        self.called.store(true, Ordering::SeqCst);
        panic!("boom in partial_merge");
    }
}

struct ExplodingFilter;

impl CompactionFilter for ExplodingFilter {
    fn filter(&self, _: usize, _: &[u8], _: &[u8]) -> CompactionDecision {
        panic!("boom in filter");
    }
    fn name(&self) -> &str {
        "exploding-filter"
    }
}

/// Runs `f` on a thread and waits at most 60 s for it: a hang fails the
/// test instead of hanging it.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return within 60 s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

fn assert_names(e: &batchkv::Error, callback: &str, message: &str) {
    let text = e.to_string();
    assert!(text.contains(callback), "{callback:?} not in: {text}");
    assert!(text.contains(message), "{message:?} not in: {text}");
}

#[test]
fn panicking_merge_operator_in_background_compaction_becomes_a_background_error() {
    let dir = tempfile::tempdir().unwrap();
    let op = Arc::new(Exploding {
        called: AtomicBool::new(false),
    });
    let opts = Options {
        merge_operator: Some(op.clone()),
        level0_file_num_compaction_trigger: 2,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    // A base and an operand in two L0 files: the background compaction
    // they trigger must call full_merge.
    db.put(b"k", b"base").unwrap();
    db.flush().unwrap();
    db.merge(&Default::default(), b"k", b"op").unwrap();
    // The compaction this flush triggers may fail before it returns.
    if let Err(e) = db.flush() {
        assert_names(&e, "exploding-op", "boom in full_merge");
    }
    bounded("the background compaction", {
        let op = op.clone();
        move || {
            while !op.called.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });

    let d = db.clone();
    let r = bounded("compact_range", move || d.compact_range(None, None));
    let e = r.expect_err("compact_range after a panicking merge operator");
    assert_names(&e, "exploding-op", "boom in full_merge");
    assert_eq!(db.property_int("batchkv.background-errors"), Some(1));

    // Writes are refused with the same error; flush too.
    let d = db.clone();
    let w = bounded("put", move || d.put(b"other", b"v"));
    assert_names(&w.expect_err("a write"), "exploding-op", "boom");
    let d = db.clone();
    let f = bounded("flush", move || d.flush());
    assert_names(&f.expect_err("flush"), "exploding-op", "boom");
    // Reads of other keys still work.
    assert_eq!(db.get(b"nothing").unwrap(), None);

    let c = bounded("close", move || db.close());
    assert_names(&c.expect_err("close"), "exploding-op", "boom in full_merge");
}

#[test]
fn panicking_merge_operator_in_manual_compaction_is_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let op = Arc::new(Exploding {
        called: AtomicBool::new(false),
    });
    let opts = Options {
        merge_operator: Some(op),
        disable_auto_compactions: true,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put(b"k", b"base").unwrap();
    db.flush().unwrap();
    db.merge(&Default::default(), b"k", b"op").unwrap();
    let d = db.clone();
    let r = bounded("compact_range", move || d.compact_range(None, None));
    assert_names(
        &r.expect_err("compact_range"),
        "exploding-op",
        "boom in full_merge",
    );
    let d = db.clone();
    let w = bounded("put", move || d.put(b"other", b"v"));
    assert!(w.is_err(), "writes go on after a background error");
    let c = bounded("close", move || db.close());
    assert_names(&c.expect_err("close"), "exploding-op", "boom");
}

#[test]
fn panicking_compaction_filter_becomes_a_background_error() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compaction_filter: Some(Arc::new(ExplodingFilter)),
        disable_auto_compactions: true,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..10u64 {
        db.put(common::key(i), b"v").unwrap();
    }
    let d = db.clone();
    let r = bounded("compact_range", move || d.compact_range(None, None));
    assert_names(
        &r.expect_err("compact_range"),
        "exploding-filter",
        "boom in filter",
    );
    let d = db.clone();
    assert!(bounded("put", move || d.put(b"x", b"v")).is_err());
    let c = bounded("close", move || db.close());
    assert_names(&c.expect_err("close"), "exploding-filter", "boom in filter");
}

#[test]
fn panicking_merge_operator_on_get_is_that_calls_error() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        merge_operator: Some(Arc::new(Exploding {
            called: AtomicBool::new(false),
        })),
        disable_auto_compactions: true,
        ..common::opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put(b"k", b"base").unwrap();
    db.merge(&Default::default(), b"k", b"op").unwrap();
    let d = db.clone();
    let r = bounded("get", move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.get(b"k")))
    });
    let r = r.expect("get unwound into its caller");
    assert_names(&r.expect_err("get"), "exploding-op", "boom in full_merge");
    // multi_get and iterators: that key's result, the iterator's status.
    let keys: Vec<&[u8]> = vec![b"a", b"k"];
    let got = db.multi_get(&ReadOptions::default(), &keys[..]);
    assert_eq!(got[0].as_ref().unwrap(), &None);
    assert_names(
        got[1].as_ref().expect_err("multi_get"),
        "exploding-op",
        "boom in full_merge",
    );
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    assert_names(
        &it.status().expect_err("iterator"),
        "exploding-op",
        "boom in full_merge",
    );
    drop(it);
    // Only that read failed: the database is writable.
    db.put(b"j", b"v").unwrap();
    assert_eq!(db.get(b"j").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}

/// A filesystem whose table creations panic once armed: user code the
/// engine calls on the flush thread, outside any callback boundary.
struct PanickingFs {
    inner: batchkv::PosixFs,
    armed: AtomicBool,
}

impl batchkv::FileSystem for PanickingFs {
    fn create_dir_all(&self, dir: &std::path::Path) -> batchkv::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn new_writable(
        &self,
        path: &std::path::Path,
    ) -> batchkv::Result<Box<dyn batchkv::WritableFile>> {
        if self.armed.load(Ordering::SeqCst) && path.extension().is_some_and(|e| e == "sst") {
            panic!("boom in new_writable");
        }
        self.inner.new_writable(path)
    }
    fn open_random_access(
        &self,
        path: &std::path::Path,
    ) -> batchkv::Result<Arc<dyn batchkv::RandomAccessFile>> {
        self.inner.open_random_access(path)
    }
    fn read_all(&self, path: &std::path::Path) -> batchkv::Result<Vec<u8>> {
        self.inner.read_all(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> batchkv::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &std::path::Path) -> batchkv::Result<()> {
        self.inner.remove_file(path)
    }
    fn list_dir(&self, dir: &std::path::Path) -> batchkv::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> batchkv::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        self.inner.exists(path)
    }
    fn lock(&self, path: &std::path::Path) -> batchkv::Result<Box<dyn batchkv::FileLock>> {
        self.inner.lock(path)
    }
}

#[test]
fn a_panic_anywhere_in_a_flush_job_is_a_background_error() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(PanickingFs {
        inner: batchkv::PosixFs,
        armed: AtomicBool::new(false),
    });
    let db = Db::open_with_fs(dir.path(), common::opts(), fs.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    fs.armed.store(true, Ordering::SeqCst);
    let d = db.clone();
    let f = bounded("flush", move || d.flush());
    assert_names(
        &f.expect_err("flush"),
        "flush of table",
        "boom in new_writable",
    );
    let d = db.clone();
    assert!(bounded("put", move || d.put(b"x", b"v")).is_err());
    fs.armed.store(false, Ordering::SeqCst);
    let c = bounded("close", move || db.close());
    assert_names(
        &c.expect_err("close"),
        "flush of table",
        "boom in new_writable",
    );
}
