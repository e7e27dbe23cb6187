//! [`KeyList`]: what [`Db::multi_get`](crate::Db::multi_get) and
//! [`Db::multi_get_with`](crate::Db::multi_get_with) accept as their keys.
//!
//! Why a trait and not `&[K]` with `K: AsRef<[u8]>`: `db.multi_get(&ro,
//! &[])` could not say what `K` is and did not compile. Here an empty
//! array literal matches exactly one impl, the one for `[&[u8]; 0]`, so
//! its element type is inferred. That impl would overlap a
//! const-generic impl for every `[K; N]`, so arrays have impls for lengths
//! 1 to 64 only; a longer array is passed as a slice (`&keys[..]`).

/// A list of keys: a slice, array (length 0–64) or `Vec` of anything
/// that is `AsRef<[u8]>` (`&[u8]`, `Vec<u8>`, `&str`, `[u8; N]`, …), or a
/// reference to one.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = batchkv::Db::open(dir.path(), batchkv::Options::default())?;
/// use batchkv::ReadOptions;
/// let ro = ReadOptions::default();
/// db.multi_get(&ro, &[b"a", b"b"]);
/// db.multi_get(&ro, &[]);
/// db.multi_get(&ro, &vec![b"a".to_vec()]);
/// let keys: &[&[u8]] = &[b"a"];
/// db.multi_get(&ro, keys);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KeyList {
    /// The element type.
    type Key: AsRef<[u8]>;
    /// The keys as a slice.
    fn as_key_slice(&self) -> &[Self::Key];
}

impl<K: AsRef<[u8]>> KeyList for [K] {
    type Key = K;
    fn as_key_slice(&self) -> &[K] {
        self
    }
}

impl<K: AsRef<[u8]>> KeyList for Vec<K> {
    type Key = K;
    fn as_key_slice(&self) -> &[K] {
        self
    }
}

/// `&&[K]`, `&Vec<K>` behind another reference, … (what `&[K]` parameters
/// accepted through deref coercion).
impl<L: KeyList + ?Sized> KeyList for &L {
    type Key = L::Key;
    fn as_key_slice(&self) -> &[L::Key] {
        (**self).as_key_slice()
    }
}

/// The empty array literal: the only impl for length 0, so `&[]` infers.
impl<'a> KeyList for [&'a [u8]; 0] {
    type Key = &'a [u8];
    fn as_key_slice(&self) -> &[&'a [u8]] {
        self
    }
}

macro_rules! array_impls {
    ($($n:literal)*) => {
        $(
            impl<K: AsRef<[u8]>> KeyList for [K; $n] {
                type Key = K;
                fn as_key_slice(&self) -> &[K] {
                    self
                }
            }
        )*
    };
}

array_impls! {
    1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64
}
