//! Rust iterators over key ranges: [`Db::range`] and [`Db::prefix`] give a
//! [`RangeIter`], an `Iterator` and `DoubleEndedIterator` of owned
//! `(key, value)` pairs, on top of the seekable [`DbIterator`].
//!
//! Invariants:
//! 1. Both ends read one snapshot (the caller's, or one taken at creation),
//!    so they see the same keys.
//! 2. `front_last` / `back_last` are the last keys yielded from each end;
//!    an end stops before reaching a key the other end already yielded, so
//!    no key is yielded twice and none is skipped.

use super::key_range::KeyRange;
use super::{Db, DbIterator};
use crate::error::{Error, Result};
use crate::options::ReadOptions;

/// One `(key, value)` pair, or the error that ended the iteration.
pub type KvResult = Result<(Vec<u8>, Vec<u8>)>;

/// Iterates the keys of a range in ascending order (`next`) or descending
/// order (`next_back`), both ends mixed freely. After an error is yielded
/// the iterator ends. Like [`DbIterator`], it owns what it reads and can be
/// moved across threads; writes made after its creation are not visible.
pub struct RangeIter {
    opts: ReadOptions,
    db: Db,
    /// The column family iterated.
    cf: std::sync::Arc<super::CfShared>,
    front: Option<DbIterator>,
    back: Option<DbIterator>,
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    done: bool,
}

impl Db {
    /// The keys in `range` (any [`KeyRange`]: `..`, `"a".."m"`,
    /// `b"a".as_slice()..=b"m".as_slice()`, a `(Bound, Bound)` pair, ...,
    /// no type annotation needed), intersected with the bounds in `opts`,
    /// as a Rust iterator.
    pub fn range(&self, opts: &ReadOptions, range: impl KeyRange) -> Result<RangeIter> {
        let (lower, upper) = range.into_bounds();
        self.range_iter(&self.core().default_cf, opts, lower, upper)
    }

    /// [`Db::range`] in column family `cf`.
    pub fn range_cf(
        &self,
        opts: &ReadOptions,
        cf: &super::ColumnFamily,
        range: impl KeyRange,
    ) -> Result<RangeIter> {
        let (lower, upper) = range.into_bounds();
        cf.live()?;
        self.range_iter(&cf.inner, opts, lower, upper)
    }

    /// The keys that start with `prefix`, as a Rust iterator.
    pub fn prefix(&self, opts: &ReadOptions, prefix: impl AsRef<[u8]>) -> Result<RangeIter> {
        let prefix = prefix.as_ref();
        self.range_iter(
            &self.core().default_cf,
            opts,
            Some(prefix.to_vec()),
            prefix_end(prefix),
        )
    }

    /// [`Db::prefix`] in column family `cf`.
    pub fn prefix_cf(
        &self,
        opts: &ReadOptions,
        cf: &super::ColumnFamily,
        prefix: impl AsRef<[u8]>,
    ) -> Result<RangeIter> {
        cf.live()?;
        let prefix = prefix.as_ref();
        self.range_iter(&cf.inner, opts, Some(prefix.to_vec()), prefix_end(prefix))
    }

    pub(super) fn range_iter(
        &self,
        cf: &std::sync::Arc<super::CfShared>,
        opts: &ReadOptions,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Result<RangeIter> {
        self.core().check_open()?;
        let mut opts = opts.clone();
        opts.lower_bound = match (opts.lower_bound.take(), lower) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        opts.upper_bound = match (opts.upper_bound.take(), upper) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if opts.snapshot.is_none() {
            opts.snapshot = Some(self.snapshot());
        }
        Ok(RangeIter {
            opts,
            db: self.clone(),
            cf: std::sync::Arc::clone(cf),
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            done: false,
        })
    }
}

/// The smallest key greater than every key starting with `prefix`; `None`
/// if there is none (the prefix is empty or all 0xff bytes).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl RangeIter {
    /// Yields the current entry of `it` unless the other end already
    /// yielded it (or one beyond it); `forward` tells the direction.
    fn take(&mut self, forward: bool) -> Option<KvResult> {
        if self.done {
            return None;
        }
        let it = if forward {
            self.front.as_mut()
        } else {
            self.back.as_mut()
        }?;
        if !it.valid() {
            self.done = true;
            return it.status().err().map(Err);
        }
        let key = it.key();
        let crossed = if forward {
            self.back_last.as_deref().is_some_and(|b| key >= b)
        } else {
            self.front_last.as_deref().is_some_and(|f| key <= f)
        };
        if crossed {
            self.done = true;
            return None;
        }
        let item = (key.to_vec(), it.value().to_vec());
        if forward {
            self.front_last = Some(item.0.clone());
        } else {
            self.back_last = Some(item.0.clone());
        }
        Some(Ok(item))
    }

    fn open(&self) -> Result<DbIterator> {
        if self.cf.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::cf_dropped(&self.cf.name));
        }
        self.db.iter_in(&self.cf, &self.opts)
    }

    fn fail(&mut self, e: Error) -> Option<KvResult> {
        self.done = true;
        Some(Err(e))
    }
}

impl RangeIter {
    /// One step from the front (`forward`) or the back: the first step
    /// opens that end's iterator at its bound, later ones move it.
    fn step(&mut self, forward: bool) -> Option<KvResult> {
        if self.done {
            return None;
        }
        let opened = if forward { &self.front } else { &self.back }.is_some();
        if !opened {
            match self.open() {
                Ok(mut it) => {
                    if forward {
                        it.seek_to_first();
                        self.front = Some(it);
                    } else {
                        it.seek_to_last();
                        self.back = Some(it);
                    }
                }
                Err(e) => return self.fail(e),
            }
        } else if forward {
            self.front.as_mut()?.next();
        } else {
            self.back.as_mut()?.prev();
        }
        self.take(forward)
    }
}

impl Iterator for RangeIter {
    type Item = KvResult;

    fn next(&mut self) -> Option<KvResult> {
        self.step(true)
    }
}

impl DoubleEndedIterator for RangeIter {
    fn next_back(&mut self) -> Option<KvResult> {
        self.step(false)
    }
}

impl std::iter::FusedIterator for RangeIter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_first_key_past_the_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
