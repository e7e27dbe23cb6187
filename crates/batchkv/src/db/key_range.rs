//! [`KeyRange`]: the key ranges [`Db::range`](crate::Db::range) and
//! [`Transaction::range`](crate::Transaction::range) take, as the
//! iterator's inclusive lower and exclusive upper bound.
//!
//! A trait of its own rather than `RangeBounds<K>`: `..` implements
//! `RangeBounds<K>` for every `K`, so a generic `K` could not be inferred
//! (E0283) and callers had to write `range::<&[u8], _>(..)`. Each range
//! type here names its key type, or has none (`..`).

use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A range of byte-string keys: `..`, `a..b`, `a..=b`, `a..`, `..b`,
/// `..=b`, or a `(Bound, Bound)` pair, over any key type that is
/// `AsRef<[u8]>` (`&[u8]`, `Vec<u8>`, `&str`, `String`, byte arrays and
/// references to them). No type annotation is needed:
///
/// ```no_run
/// # use batchkv::{Db, ReadOptions};
/// # use std::ops::Bound;
/// # fn f(db: &Db) -> batchkv::Result<()> {
/// let ro = ReadOptions::default();
/// db.range(&ro, ..)?;
/// db.range(&ro, "a".."m")?;
/// db.range(&ro, b"a".as_slice()..=b"m".as_slice())?;
/// db.range(&ro, vec![1u8]..)?;
/// db.range(&ro, ..*b"zz")?;
/// db.range(&ro, (Bound::Excluded("a"), Bound::Unbounded))?;
/// # Ok(()) }
/// ```
pub trait KeyRange {
    /// The inclusive lower bound and the exclusive upper bound (`None`:
    /// unbounded on that side).
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>);
}

/// The smallest key greater than `k` in bytewise order.
fn successor_key(k: &[u8]) -> Vec<u8> {
    let mut s = k.to_vec();
    s.push(0);
    s
}

fn lower<K: AsRef<[u8]>>(b: Bound<K>) -> Option<Vec<u8>> {
    match b {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(successor_key(k.as_ref())),
        Bound::Unbounded => None,
    }
}

fn upper<K: AsRef<[u8]>>(b: Bound<K>) -> Option<Vec<u8>> {
    match b {
        Bound::Included(k) => Some(successor_key(k.as_ref())),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    }
}

impl KeyRange for RangeFull {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, None)
    }
}

impl<K: AsRef<[u8]>> KeyRange for Range<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (
            lower(Bound::Included(self.start)),
            upper(Bound::Excluded(self.end)),
        )
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeInclusive<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let (start, end) = self.into_inner();
        (lower(Bound::Included(start)), upper(Bound::Included(end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeFrom<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (lower(Bound::Included(self.start)), None)
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeTo<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, upper(Bound::Excluded(self.end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeToInclusive<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, upper(Bound::Included(self.end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for (Bound<K>, Bound<K>) {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (lower(self.0), upper(self.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_gives_inclusive_lower_and_exclusive_upper_bounds() {
        let v = |s: &str| Some(s.as_bytes().to_vec());
        assert_eq!((..).into_bounds(), (None, None));
        assert_eq!(("a".."c").into_bounds(), (v("a"), v("c")));
        assert_eq!(("a"..="c").into_bounds(), (v("a"), v("c\0")));
        assert_eq!((b"a".to_vec()..).into_bounds(), (v("a"), None));
        assert_eq!((..*b"c").into_bounds(), (None, v("c")));
        assert_eq!((..=b"c".as_slice()).into_bounds(), (None, v("c\0")));
        assert_eq!(
            (Bound::Excluded("a"), Bound::Included("c")).into_bounds(),
            (v("a\0"), v("c\0"))
        );
        assert_eq!(
            (Bound::Unbounded, Bound::Excluded(String::from("c"))).into_bounds(),
            (None, v("c"))
        );
    }
}
