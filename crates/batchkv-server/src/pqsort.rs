//! Redis's `pqsort`: Bentley and McIlroy's quicksort ("Engineering a Sort
//! Function", as in NetBSD's qsort) that sorts only the partitions
//! overlapping a range of positions. Redis uses it for GEOSEARCH ... COUNT
//! and SORT ... BY ... LIMIT; where elements compare equal, which of them
//! lands in the range is this algorithm's choice, so the server makes the
//! same one by running the same steps.

use std::cmp::Ordering;

/// Sorts `v` far enough that positions `lo..=hi` hold what a full sort by
/// `cmp` would put there, moving elements exactly as Redis's `pqsort`.
pub fn pqsort<T>(v: &mut [T], lo: usize, hi: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    partial(v, 0, v.len(), lo, hi, cmp);
}

fn med3<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

/// Swaps the `n` elements from `a` with the `n` from `b`, in order.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// `_pqsort` on `v[base..base + n]`; `lo..=hi` the positions wanted.
fn partial<T>(
    v: &mut [T],
    mut base: usize,
    mut n: usize,
    lo: usize,
    hi: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) {
    loop {
        if n < 7 {
            for pm in base + 1..base + n {
                let mut pl = pm;
                while pl > base && cmp(&v[pl - 1], &v[pl]).is_gt() {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = base + n / 2;
        if n > 7 {
            let mut pl = base;
            let mut pn = base + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(base, pm);
        let (mut pa, mut pb) = (base + 1, base + 1);
        // `pc` and `pd` may step below `base` when everything is at most
        // the pivot: signed positions, as C's pointers.
        let (mut pc, mut pd) = ((base + n - 1) as isize, (base + n - 1) as isize);
        loop {
            while pb as isize <= pc {
                let r = cmp(&v[pb], &v[base]);
                if r.is_gt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb as isize <= pc {
                let r = cmp(&v[pc as usize], &v[base]);
                if r.is_lt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pc as usize, pd as usize);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb as isize > pc {
                break;
            }
            v.swap(pb, pc as usize);
            pb += 1;
            pc -= 1;
        }
        let pn = base + n;
        let r = (pa - base).min(pb - pa);
        vecswap(v, base, pb - r, r);
        let r = ((pd - pc) as usize).min(pn - pd as usize - 1);
        vecswap(v, pb, pn - r, r);
        // The left part: its elements, if any of them is in the range.
        let left = pb - pa;
        if left > 1 && !(hi < base || lo >= base + left) {
            partial(v, base, left, lo, hi, cmp);
        }
        let right = (pd - pc) as usize;
        if right <= 1 {
            return;
        }
        base = pn - right;
        n = right;
        if hi < base || lo >= base + n {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range holds what a full sort puts there, for any data.
    #[test]
    fn the_range_is_sorted_as_a_full_sort_sorts_it() {
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in [0usize, 1, 5, 7, 8, 40, 41, 100, 1000] {
            for _ in 0..20 {
                let v: Vec<u64> = (0..len).map(|_| next() % 50).collect();
                let mut full = v.clone();
                full.sort();
                let lo = if len == 0 { 0 } else { (next() as usize) % len };
                let hi = if len == 0 {
                    0
                } else {
                    lo + (next() as usize) % (len - lo)
                };
                let mut p = v.clone();
                pqsort(&mut p, lo, hi, &mut |a, b| a.cmp(b));
                if len > 0 {
                    assert_eq!(p[lo..=hi], full[lo..=hi], "len {len} {lo}..={hi}");
                }
                let mut all = v.clone();
                pqsort(&mut all, 0, len.saturating_sub(1), &mut |a, b| a.cmp(b));
                assert_eq!(all, full);
            }
        }
    }
}
