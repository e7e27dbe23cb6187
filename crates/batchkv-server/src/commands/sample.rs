//! Random picks for the RAND commands (SRANDMEMBER, SPOP, HRANDFIELD,
//! ZRANDMEMBER) without holding the whole collection.
//!
//! A collection's metadata knows its size `n`, so the picks are drawn as
//! *positions* in element order first: `count` ≥ 0 distinct positions
//! (all `n` if `count` ≥ `n`), `count` < 0 `|count|` independent ones.
//! Then one walk of the collection copies the elements at those positions
//! and stops at the last of them, from the end of the collection nearer to
//! the picks (walking from the last element when the lowest pick is
//! nearer to it than the highest is to the first). A pick of one element
//! walks a quarter of the collection on average, and memory is the reply's
//! size, not the collection's. The reply is shuffled, so its order is
//! random as Redis's is (distinct picks in any order; repeats independent).
//!
//! A walk that ends before the last position means the metadata counts
//! more elements than the collection holds: a corruption error, not a
//! shorter reply.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::errors::COLLECTION_SHORT;
use crate::resp::Reply;

/// The positions a RAND command picks from a collection of `n` elements,
/// and the state of the walk that collects them.
pub struct Sample {
    n: u64,
    /// Picked positions in walk order (ascending from the walk's start),
    /// a position picked twice appearing twice.
    at: Vec<u64>,
    /// The index in `at` of the next pick the walk reaches.
    next: usize,
    /// The walk position of the element the walk is at.
    pos: u64,
    /// Whether the walk starts at the last element.
    reverse: bool,
}

impl Sample {
    /// Draws `count`'s picks (see the module doc) from `n` ≥ 1 elements.
    pub fn new(n: u64, count: i64) -> Sample {
        let mut rng = rand::rng();
        let mut at: Vec<u64> = if count < 0 {
            (0..count.unsigned_abs())
                .map(|_| rng.random_range(0..n))
                .collect()
        } else if count as u64 >= n {
            (0..n).collect()
        } else {
            // `count` < `n`, which is a number of stored elements: fits usize.
            rand::seq::index::sample(&mut rng, n as usize, count as usize)
                .into_iter()
                .map(|i| i as u64)
                .collect()
        };
        at.sort_unstable();
        let (lo, hi) = (at.first().copied(), at.last().copied());
        let reverse = match (lo, hi) {
            (Some(lo), Some(hi)) => n - lo < hi + 1,
            _ => false,
        };
        if reverse {
            for p in &mut at {
                *p = n - 1 - *p;
            }
            at.reverse();
        }
        Sample {
            n,
            at,
            next: 0,
            pos: 0,
            reverse,
        }
    }

    /// The number of picks (the reply's length).
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether the walk goes from the last element to the first.
    pub fn reverse(&self) -> bool {
        self.reverse
    }

    /// The elements the walk visits: up to and including the last pick.
    pub fn walk_len(&self) -> u64 {
        self.at.last().map_or(0, |&p| p + 1)
    }

    /// The picked positions in element order (0 = the first element),
    /// ascending, repeats adjacent: for a caller that reaches elements by
    /// position instead of walking.
    pub fn positions(&self) -> Vec<u64> {
        let mut v: Vec<u64> = if self.reverse {
            self.at.iter().rev().map(|&p| self.n - 1 - p).collect()
        } else {
            self.at.clone()
        };
        v.sort_unstable();
        v
    }

    /// Called once per element of the walk, in walk order: how many copies
    /// of it the reply takes (0 for most).
    pub fn take(&mut self) -> usize {
        let start = self.next;
        while self.at.get(self.next) == Some(&self.pos) {
            self.next += 1;
        }
        self.pos += 1;
        self.next - start
    }

    /// Whether every pick was reached (the walk can stop).
    pub fn done(&self) -> bool {
        self.next == self.at.len()
    }

    /// After the walk: the error if it ended before its last pick, else
    /// `out` (the picked elements) shuffled into a random order.
    pub fn finish<T>(&self, mut out: Vec<T>) -> Result<Vec<T>, Reply> {
        if !self.done() {
            return Err(Reply::err(COLLECTION_SHORT));
        }
        shuffle(&mut out);
        Ok(out)
    }
}

/// Puts picks collected in element order into a random order.
pub fn shuffle<T>(picks: &mut [T]) {
    picks.shuffle(&mut rand::rng());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `n` elements (their positions) the way a command does.
    fn walk(s: &mut Sample) -> Vec<u64> {
        let n = s.n;
        let mut out = Vec::new();
        for i in 0..n {
            let p = if s.reverse() { n - 1 - i } else { i };
            for _ in 0..s.take() {
                out.push(p);
            }
            if s.done() {
                break;
            }
        }
        out
    }

    #[test]
    fn distinct_picks_are_distinct_and_all_when_count_reaches_n() {
        for n in [1u64, 2, 5, 100] {
            for count in [0i64, 1, 3, 50, 100, 1000] {
                let mut s = Sample::new(n, count);
                let want = (count as u64).min(n) as usize;
                assert_eq!(s.len(), want);
                let mut got = walk(&mut s);
                assert!(s.done());
                assert!(s.walk_len() <= n);
                got.sort_unstable();
                got.dedup();
                assert_eq!(got.len(), want, "n {n} count {count}");
                assert!(got.iter().all(|&p| p < n));
            }
        }
    }

    #[test]
    fn repeated_picks_keep_their_count_and_positions_match_the_walk() {
        for n in [1u64, 3, 40] {
            let mut s = Sample::new(n, -200);
            let mut positions = s.positions();
            let mut got = walk(&mut s);
            assert_eq!(got.len(), 200);
            got.sort_unstable();
            positions.sort_unstable();
            assert_eq!(got, positions);
        }
    }

    #[test]
    fn every_element_is_picked_about_equally_often() {
        // 10 elements, 20,000 single picks: each ~2,000 (σ ≈ 42).
        let mut hits = [0u32; 10];
        for _ in 0..20_000 {
            let mut s = Sample::new(10, 1);
            for p in walk(&mut s) {
                hits[p as usize] += 1;
            }
        }
        assert!(
            hits.iter().all(|&h| (1_750..2_250).contains(&h)),
            "{hits:?}"
        );
    }

    #[test]
    fn a_walk_short_of_its_picks_is_corruption() {
        // The collection holds none of its ten counted elements.
        let s = Sample::new(10, -5);
        assert!(!s.done());
        assert!(s.finish(Vec::<u64>::new()).is_err());
        let mut full = Sample::new(10, 10);
        let out = walk(&mut full);
        assert_eq!(full.finish(out).map(|v| v.len()).ok(), Some(10));
    }
}
