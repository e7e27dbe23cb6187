//! Runs one case of the model test (`tests/model.rs`) on a fresh database:
//! applies each operation to the database and to a `BTreeMap` model, and
//! compares every read (get, multi_get, iterator moves, full scans) with
//! the model, or, for snapshots and iterators, with the copy of the model
//! frozen when they were created.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use batchkv::merge_operators::StringAppendOperator;
use batchkv::{Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::model_ops::{describe, Bytes, Entry, Generator, Move, Op, View};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn verbose() -> bool {
    std::env::var_os("BATCHKV_MODEL_VERBOSE").is_some()
}

/// A case: the options of the first open and the operations.
#[derive(Clone)]
pub struct Case {
    pub options: String,
    pub ops: Vec<Op>,
}

impl Case {
    pub fn generate(seed: u64, steps: usize) -> Case {
        let mut g = Generator::new(seed);
        let options = g.initial_options();
        Case {
            options,
            ops: g.ops(steps),
        }
    }
}

/// Why a run failed.
pub struct Failure {
    pub step: usize,
    pub op: String,
    pub detail: String,
    /// Options in force at the failing step.
    pub options: String,
}

type Check = Result<(), String>;

fn engine<T>(what: &str, r: batchkv::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what} returned an error: {e}"))
}

/// An iterator kept alive across operations, with the keys it must see.
struct LiveIter {
    it: DbIterator,
    /// The visible entries (model at creation, within the bounds), in order.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Index into `entries`, `None` when not valid.
    pos: Option<usize>,
}

impl LiveIter {
    fn new(
        it: DbIterator,
        model: &Model,
        lower: &Option<Vec<u8>>,
        upper: &Option<Vec<u8>>,
    ) -> Self {
        let entries = model
            .iter()
            .filter(|(k, _)| lower.as_ref().is_none_or(|l| *k >= l))
            .filter(|(k, _)| upper.as_ref().is_none_or(|u| *k < u))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        LiveIter {
            it,
            entries,
            pos: None,
        }
    }

    /// Applies `moves` to the iterator and the model, comparing after each.
    fn run(&mut self, moves: &[Move]) -> Check {
        for (i, m) in moves.iter().enumerate() {
            let first_ge = |k: &[u8]| self.entries.partition_point(|(e, _)| e.as_slice() < k);
            let first_gt = |k: &[u8]| self.entries.partition_point(|(e, _)| e.as_slice() <= k);
            let n = self.entries.len();
            let at = |p: usize| (p < n).then_some(p);
            match m {
                Move::First => {
                    self.it.seek_to_first();
                    self.pos = at(0);
                }
                Move::Last => {
                    self.it.seek_to_last();
                    self.pos = n.checked_sub(1);
                }
                Move::Seek(k) => {
                    self.it.seek(k);
                    self.pos = at(first_ge(k));
                }
                Move::SeekForPrev(k) => {
                    self.it.seek_for_prev(k);
                    self.pos = first_gt(k).checked_sub(1);
                }
                Move::Next | Move::Prev if self.pos.is_none() => continue,
                Move::Next => {
                    self.it.next();
                    self.pos = at(self.pos.unwrap_or(0) + 1);
                }
                Move::Prev => {
                    self.it.prev();
                    self.pos = self.pos.and_then(|p| p.checked_sub(1));
                }
            }
            let want = self.pos.map(|p| &self.entries[p]);
            let got = self
                .it
                .valid()
                .then(|| (self.it.key().to_vec(), self.it.value().to_vec()));
            let same = match (want, &got) {
                (Some((wk, wv)), Some((gk, gv))) => wk == gk && wv == gv,
                (None, None) => true,
                _ => false,
            };
            if !same {
                let show = |e: Option<(&Vec<u8>, &Vec<u8>)>| match e {
                    None => "invalid".to_string(),
                    Some((k, v)) => format!("{:?} = {}", Bytes(k), describe(Some(v))),
                };
                // A full scan's moves are all first/next/last/prev.
                let all = if moves.len() <= 30 {
                    format!("{moves:?}")
                } else {
                    format!("{} moves", moves.len())
                };
                return Err(format!(
                    "iterator move {i} ({m:?}) of {all}\n  expected: {}\n  actual:   {}",
                    show(want.map(|(k, v)| (k, v))),
                    show(got.as_ref().map(|(k, v)| (k, v)))
                ));
            }
            if got.is_none() {
                engine("iterator status", self.it.status())?;
            }
        }
        Ok(())
    }
}

/// The database under test and everything the model knows.
struct Runner<'a> {
    dir: &'a Path,
    db: Option<Db>,
    options: String,
    model: Model,
    /// Live snapshots with the model as it was when each was taken.
    snapshots: Vec<(Snapshot, Model)>,
    iters: Vec<LiveIter>,
    /// Every key ever written, for full checks.
    universe: Vec<Vec<u8>>,
}

fn open(dir: &Path, options: &str) -> Result<Db, String> {
    let opts: Options = options
        .parse()
        .map_err(|e| format!("bad generated options {options:?}: {e}"))?;
    let opts = Options {
        merge_operator: Some(std::sync::Arc::new(StringAppendOperator::new(","))),
        ..opts
    };
    engine("open", Db::open(dir, opts))
}

impl<'a> Runner<'a> {
    fn db(&self) -> &Db {
        self.db
            .as_ref()
            .expect("the database is open between operations")
    }

    /// The read options and model of a view.
    fn view(&self, view: View) -> (ReadOptions, &Model, String) {
        match view {
            View::Snapshot(i) if !self.snapshots.is_empty() => {
                let i = i % self.snapshots.len();
                let (snap, model) = &self.snapshots[i];
                let ro = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..ReadOptions::default()
                };
                (
                    ro,
                    model,
                    format!("snapshot #{i} (seq {})", snap.sequence()),
                )
            }
            _ => (ReadOptions::default(), &self.model, "latest".into()),
        }
    }

    fn step(&mut self, op: &Op) -> Check {
        match op {
            Op::Put { key, val } => {
                let v = val.bytes();
                engine("put", self.db().put(key, &v))?;
                self.model.insert(key.clone(), v);
            }
            Op::Delete { key } => {
                engine("delete", self.db().delete(key))?;
                self.model.remove(key);
            }
            Op::Merge { key, val } => {
                let v = val.bytes();
                engine("merge", self.db().merge(&WriteOptions::default(), key, &v))?;
                model_merge(&mut self.model, key, &v);
            }
            Op::DeleteRange { begin, end } => {
                engine(
                    "delete_range",
                    self.db().delete_range(&WriteOptions::default(), begin, end),
                )?;
                model_delete_range(&mut self.model, begin, end);
            }
            Op::Write {
                entries,
                sync,
                disable_wal,
            } => {
                let mut b = WriteBatch::new();
                for (k, v) in entries {
                    match v {
                        Entry::Put(v) => b.put(k, v.bytes()),
                        Entry::Delete => b.delete(k),
                        Entry::DeleteRange(end) => b.delete_range(k, end),
                        Entry::Merge(v) => b.merge(k, v.bytes()),
                    }
                }
                let wo = WriteOptions {
                    sync: *sync,
                    disable_wal: *disable_wal,
                };
                engine("write", self.db().write(&wo, b))?;
                for (k, v) in entries {
                    match v {
                        Entry::Put(v) => {
                            self.model.insert(k.clone(), v.bytes());
                        }
                        Entry::Delete => {
                            self.model.remove(k);
                        }
                        Entry::DeleteRange(end) => model_delete_range(&mut self.model, k, end),
                        Entry::Merge(v) => model_merge(&mut self.model, k, &v.bytes()),
                    }
                }
            }
            Op::Get { view, key } => {
                let (ro, model, name) = self.view(*view);
                let got = engine("get", self.db().get_opt(&ro, key))?;
                let want = model.get(key);
                if got.as_ref() != want {
                    return Err(format!(
                        "get {:?} at {name}\n  expected: {}\n  actual:   {}",
                        Bytes(key),
                        describe(want.map(Vec::as_slice)),
                        describe(got.as_deref())
                    ));
                }
            }
            Op::MultiGet {
                view,
                keys,
                lookup,
                callback,
                cold,
            } => {
                let (mut ro, model, name) = self.view(*view);
                ro.batch_lookup = *lookup;
                ro.fill_cache = !cold;
                ro.verify_checksums = !cold;
                self.check_multi_get(&ro, model, keys, &name, *callback)?;
            }
            Op::Scan {
                view,
                lower,
                upper,
                moves,
                keep,
                cold,
            } => {
                let (mut ro, model, _) = self.view(*view);
                ro.fill_cache = !cold;
                ro.verify_checksums = !cold;
                ro.lower_bound = lower.clone();
                ro.upper_bound = upper.clone();
                let it = engine("iter", self.db().iter(&ro))?;
                let mut live = LiveIter::new(it, model, lower, upper);
                live.run(moves)?;
                if *keep {
                    if self.iters.len() >= 3 {
                        self.iters.remove(0);
                    }
                    self.iters.push(live);
                }
            }
            Op::IterMoves { which, moves } => {
                if !self.iters.is_empty() {
                    let n = self.iters.len();
                    self.iters[which % n]
                        .run(moves)
                        .map_err(|e| format!("kept iterator #{}: {e}", which % n))?;
                }
            }
            Op::TakeSnapshot => {
                if self.snapshots.len() >= 4 {
                    self.snapshots.remove(0);
                }
                let s = self.db().snapshot();
                self.snapshots.push((s, self.model.clone()));
            }
            Op::ReleaseSnapshot(i) => {
                if !self.snapshots.is_empty() {
                    let n = self.snapshots.len();
                    self.snapshots.remove(i % n);
                }
            }
            Op::Flush => engine("flush", self.db().flush())?,
            Op::CompactRange(a, b) => engine(
                "compact_range",
                self.db().compact_range(a.as_deref(), b.as_deref()),
            )?,
            Op::Pause { millis } => std::thread::sleep(Duration::from_millis(*millis)),
            Op::CheckAll { view } => self.check_all(*view)?,
            Op::Reopen { options } => self.reopen(options)?,
        }
        Ok(())
    }

    /// `multi_get` (or `multi_get_with`, whose callback must come in
    /// ascending input order) of `keys`, compared with `model`.
    fn check_multi_get(
        &self,
        ro: &ReadOptions,
        model: &Model,
        keys: &[Vec<u8>],
        name: &str,
        callback: bool,
    ) -> Check {
        let got: Vec<batchkv::Result<Option<Vec<u8>>>> = if callback {
            let mut got = Vec::with_capacity(keys.len());
            let mut order_ok = true;
            self.db().multi_get_with(ro, keys, |i, r| {
                order_ok &= i == got.len();
                got.push(r.map(|v| v.map(<[u8]>::to_vec)));
            });
            if !order_ok {
                return Err("multi_get_with called back out of input order".into());
            }
            got
        } else {
            self.db().multi_get(ro, keys)
        };
        let call = if callback {
            "multi_get_with"
        } else {
            "multi_get"
        };
        if got.len() != keys.len() {
            return Err(format!(
                "{call} of {} keys returned {} results",
                keys.len(),
                got.len()
            ));
        }
        for (i, (k, r)) in keys.iter().zip(got).enumerate() {
            let r = engine(call, r)?;
            let want = model.get(k);
            if r.as_ref() != want {
                return Err(format!(
                    "{call} at {name} (lookup {:?}), key #{i} {:?}\n  expected: {}\n  actual:   {}",
                    ro.batch_lookup,
                    Bytes(k),
                    describe(want.map(Vec::as_slice)),
                    describe(r.as_deref())
                ));
            }
        }
        Ok(())
    }

    /// Forward and backward scans and a `multi_get` of every key ever written.
    fn check_all(&self, view: View) -> Check {
        let (ro, model, name) = self.view(view);
        let it = engine("iter", self.db().iter(&ro))?;
        let mut live = LiveIter::new(it, model, &None, &None);
        let n = model.len();
        let mut moves = vec![Move::First];
        moves.extend(std::iter::repeat_n(Move::Next, n));
        moves.push(Move::Last);
        moves.extend(std::iter::repeat_n(Move::Prev, n));
        live.run(&moves)
            .map_err(|e| format!("full scan at {name}: {e}"))?;
        self.check_multi_get(&ro, model, &self.universe, &name, false)
    }

    fn reopen(&mut self, options: &str) -> Check {
        // Iterators and snapshots belong to the old instance.
        self.iters.clear();
        self.snapshots.clear();
        let db = self.db.take().expect("open");
        engine("close", db.close())?;
        self.db = Some(open(self.dir, options)?);
        self.options = options.to_string();
        // A clean close keeps every write, WAL or not.
        self.check_all(View::Latest)
            .map_err(|e| format!("after reopen: {e}"))
    }

    /// The checks after the last operation: every snapshot, then a full
    /// compaction, then a reopen with the same options.
    fn finish(&mut self) -> Check {
        for i in 0..self.snapshots.len() {
            self.check_all(View::Snapshot(i))?;
        }
        self.check_all(View::Latest)?;
        engine("compact_range", self.db().compact_range(None, None))?;
        self.check_all(View::Latest)
            .map_err(|e| format!("after compact_range(None, None): {e}"))?;
        let options = self.options.clone();
        self.reopen(&options)
    }
}

/// `merge(key, operand)` on the model: `StringAppendOperator(",")`.
fn model_merge(model: &mut Model, key: &[u8], operand: &[u8]) {
    match model.get_mut(key) {
        Some(v) => {
            v.push(b',');
            v.extend_from_slice(operand);
        }
        None => {
            model.insert(key.to_vec(), operand.to_vec());
        }
    }
}

/// `delete_range(begin, end)` on the model: removes the keys in `[begin, end)`.
fn model_delete_range(model: &mut Model, begin: &[u8], end: &[u8]) {
    if begin >= end {
        return;
    }
    let gone: Vec<Vec<u8>> = model
        .range::<[u8], _>((
            std::ops::Bound::Included(begin),
            std::ops::Bound::Excluded(end),
        ))
        .map(|(k, _)| k.clone())
        .collect();
    for k in gone {
        model.remove(&k);
    }
}

/// Runs `case` on a fresh database.
pub fn run(case: &Case) -> Result<(), Failure> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut universe: Vec<Vec<u8>> = case
        .ops
        .iter()
        .flat_map(|op| match op {
            Op::Put { key, .. } | Op::Delete { key } | Op::Merge { key, .. } => {
                vec![key.clone()]
            }
            Op::Write { entries, .. } => entries.iter().map(|(k, _)| k.clone()).collect(),
            _ => vec![],
        })
        .collect();
    universe.sort();
    universe.dedup();
    let fail = |step: usize, op: String, detail: String, options: &str| Failure {
        step,
        op,
        detail,
        options: options.to_string(),
    };
    let db =
        open(dir.path(), &case.options).map_err(|e| fail(0, "open".into(), e, &case.options))?;
    let mut r = Runner {
        dir: dir.path(),
        db: Some(db),
        options: case.options.clone(),
        model: Model::new(),
        snapshots: Vec::new(),
        iters: Vec::new(),
        universe,
    };
    for (step, op) in case.ops.iter().enumerate() {
        if verbose() {
            eprintln!("step {step}: {op:?}");
        }
        CURRENT_STEP.set(step);
        r.step(op)
            .map_err(|e| fail(step, format!("{op:?}"), e, &r.options))?;
    }
    if verbose() {
        eprintln!("levels before the final checks: {:?}", r.db().stats());
    }
    let n = case.ops.len();
    CURRENT_STEP.set(n);
    r.finish()
        .map_err(|e| fail(n, "final checks".into(), e, &r.options))?;
    let db = r.db.take().expect("open");
    db.close()
        .map_err(|e| fail(n, "final close".into(), e.to_string(), &r.options))
}

thread_local! {
    /// The step running, for [`PanicReport`].
    pub static CURRENT_STEP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
