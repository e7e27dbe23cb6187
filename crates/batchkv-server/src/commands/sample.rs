//! Random picks for the RAND commands (SRANDMEMBER, SPOP, HRANDFIELD,
//! ZRANDMEMBER) without holding the whole collection.
//!
//! A collection's metadata knows its size `n`, so the picks are drawn as
//! *positions* in element order first: `count` ≥ 0 distinct positions
//! (all `n` if `count` ≥ `n`), `count` < 0 `|count|` independent ones.
//! Then one walk of the collection copies the elements at those positions
//! and stops at the last of them, from the end of the collection nearer to
//! the picks (walking from the last element when the lowest pick is
//! nearer to it than the highest is to the first, counting a step back as
//! [`REVERSE_COST`] steps forward). A pick of one element walks 28 % of
//! the collection on average, and memory is the reply's size, not the
//! collection's. The reply is shuffled, so its order is
//! random as Redis's is (distinct picks in any order; repeats independent).
//!
//! A large distinct pick (more than [`MAX_DRAWN`] elements, or the whole
//! collection) is not drawn ahead: the walk visits every element and takes
//! each with probability `picks left / elements left` (selection sampling,
//! Knuth's Algorithm S), so no memory is sized from the metadata before an
//! element is read: a damaged size cannot make the server allocate it.
//!
//! A walk that ends before the last pick means the metadata counts more
//! elements than the collection holds: a corruption error, not a shorter
//! reply.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::errors::COLLECTION_SHORT;
use crate::resp::Reply;

/// The most distinct picks drawn as positions ahead of the walk; more are
/// taken by selection sampling.
pub const MAX_DRAWN: u64 = 1 << 16;

/// What a step of a walk from the end costs against a step forward: the
/// engine's iterators step back by searching (memtable) or re-decoding
/// from a restart point (SST block), and keep every version they pass.
/// Measured with callgrind on SRANDMEMBER (memtable-resident):
/// `DbIterator::prev` 2.0× `next` per element.
const REVERSE_COST: u64 = 2;

/// The most elements a reply's buffer is sized for ahead of the walk.
const MAX_PRESIZE: usize = 1 << 12;

/// How the picks are made.
enum Picks {
    /// Positions in walk order (ascending from the walk's start), a
    /// position picked twice appearing twice; `next` indexes the next one
    /// the walk reaches.
    Drawn { at: Vec<u64>, next: usize },
    /// Selection sampling: `left` picks still to take.
    Streamed { left: u64 },
}

/// The positions a RAND command picks from a collection of `n` elements,
/// and the state of the walk that collects them.
pub struct Sample {
    n: u64,
    picks: Picks,
    /// The number of picks (the reply's length).
    len: u64,
    /// The walk position of the element the walk is at.
    pos: u64,
    /// Whether the walk starts at the last element.
    reverse: bool,
}

impl Sample {
    /// Draws `count`'s picks (see the module doc) from `n` elements (none
    /// from an empty collection).
    pub fn new(n: u64, count: i64) -> Sample {
        let mut rng = rand::rng();
        let streamed = |len: u64| Sample {
            n,
            picks: Picks::Streamed { left: len },
            len,
            pos: 0,
            reverse: false,
        };
        let mut at: Vec<u64> = if n == 0 {
            Vec::new()
        } else if count < 0 {
            // At most `MAX_RAND_REPEATS` (the count's parser bounds it).
            (0..count.unsigned_abs())
                .map(|_| rng.random_range(0..n))
                .collect()
        } else if count as u64 >= n || count as u64 > MAX_DRAWN {
            return streamed((count as u64).min(n));
        } else {
            // `count` ≤ MAX_DRAWN < `n`: usize on every target.
            rand::seq::index::sample(&mut rng, n as usize, count as usize)
                .into_iter()
                .map(|i| i as u64)
                .collect()
        };
        at.sort_unstable();
        let (lo, hi) = (at.first().copied(), at.last().copied());
        let reverse = match (lo, hi) {
            (Some(lo), Some(hi)) => REVERSE_COST * (n - lo) < hi + 1,
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
            len: at.len() as u64,
            picks: Picks::Drawn { at, next: 0 },
            pos: 0,
            reverse,
        }
    }

    /// The number of picks (the reply's length).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// A capacity to reserve for the reply: the picks, bounded (the
    /// metadata's size is trusted only as far as elements are read).
    pub fn presize(&self) -> usize {
        usize::try_from(self.len).map_or(MAX_PRESIZE, |l| l.min(MAX_PRESIZE))
    }

    /// Whether the walk goes from the last element to the first.
    pub fn reverse(&self) -> bool {
        self.reverse
    }

    /// The elements the walk visits: up to and including the last pick.
    pub fn walk_len(&self) -> u64 {
        match &self.picks {
            Picks::Drawn { at, .. } => at.last().map_or(0, |&p| p + 1),
            Picks::Streamed { .. } => self.n,
        }
    }

    /// The picked positions in element order (0 = the first element),
    /// ascending, repeats adjacent, if they were drawn ahead: for a caller
    /// that reaches elements by position instead of walking.
    pub fn positions(&self) -> Option<Vec<u64>> {
        let Picks::Drawn { at, .. } = &self.picks else {
            return None;
        };
        let mut v: Vec<u64> = if self.reverse {
            at.iter().rev().map(|&p| self.n - 1 - p).collect()
        } else {
            at.clone()
        };
        v.sort_unstable();
        Some(v)
    }

    /// Called once per element of the walk, in walk order: how many copies
    /// of it the reply takes (0 for most).
    pub fn take(&mut self) -> usize {
        let pos = self.pos;
        self.pos += 1;
        match &mut self.picks {
            Picks::Drawn { at, next } => {
                let start = *next;
                while at.get(*next) == Some(&pos) {
                    *next += 1;
                }
                *next - start
            }
            Picks::Streamed { left } => {
                // Elements left, this one included (the metadata may count
                // fewer than the walk finds: then take the rest).
                let remaining = self.n.saturating_sub(pos).max(1);
                let take = *left > 0 && rand::rng().random_range(0..remaining) < *left;
                if take {
                    *left -= 1;
                }
                usize::from(take)
            }
        }
    }

    /// Whether every pick was reached (the walk can stop).
    pub fn done(&self) -> bool {
        match &self.picks {
            Picks::Drawn { at, next } => *next == at.len(),
            Picks::Streamed { left } => *left == 0,
        }
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
    fn walk(s: &mut Sample, n: u64) -> Vec<u64> {
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
                let want = (count as u64).min(n);
                assert_eq!(s.len(), want);
                let mut got = walk(&mut s, n);
                assert!(s.done());
                assert!(s.walk_len() <= n);
                got.sort_unstable();
                got.dedup();
                assert_eq!(got.len() as u64, want, "n {n} count {count}");
                assert!(got.iter().all(|&p| p < n));
            }
        }
    }

    #[test]
    fn repeated_picks_keep_their_count_and_positions_match_the_walk() {
        for n in [1u64, 3, 40] {
            let mut s = Sample::new(n, -200);
            let mut positions = s.positions().unwrap();
            let mut got = walk(&mut s, n);
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
            for p in walk(&mut s, 10) {
                hits[p as usize] += 1;
            }
        }
        assert!(
            hits.iter().all(|&h| (1_750..2_250).contains(&h)),
            "{hits:?}"
        );
    }

    /// More distinct picks than [`MAX_DRAWN`] are taken by selection
    /// sampling: exactly `count`, distinct, spread evenly.
    #[test]
    fn large_picks_are_streamed_evenly() {
        let (n, count) = (100_000u64, 70_000i64);
        let mut s = Sample::new(n, count);
        assert!(s.positions().is_none(), "not drawn ahead");
        let got = walk(&mut s, n);
        assert_eq!(got.len(), 70_000);
        let mut seen = vec![0u32; 10];
        for p in &got {
            seen[(*p / 10_000) as usize] += 1;
        }
        // 7,000 per tenth expected (σ < 46).
        assert!(
            seen.iter().all(|&h| (6_700..7_300).contains(&h)),
            "{seen:?}"
        );
        let mut d = got.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), got.len());
    }

    /// A size of 0 (damaged metadata) picks nothing; a huge size allocates
    /// nothing ahead, and the walk that finds few elements is an error.
    #[test]
    fn damaged_sizes_neither_panic_nor_allocate() {
        for count in [-3i64, 0, 1, 5] {
            let mut s = Sample::new(0, count);
            assert_eq!(s.len(), 0);
            assert!(walk(&mut s, 0).is_empty());
            assert_eq!(s.finish(Vec::<u64>::new()).map(|v| v.len()).ok(), Some(0));
        }
        let mut s = Sample::new(1 << 40, i64::MAX);
        assert!(s.presize() <= MAX_PRESIZE);
        let got = walk(&mut s, 10);
        assert_eq!(got.len(), 10, "the elements there are all taken");
        assert!(s.finish(got).is_err());
    }

    #[test]
    fn a_walk_short_of_its_picks_is_corruption() {
        // The collection holds none of its ten counted elements.
        let s = Sample::new(10, -5);
        assert!(!s.done());
        assert!(s.finish(Vec::<u64>::new()).is_err());
        let mut full = Sample::new(10, 10);
        let out = walk(&mut full, 10);
        assert_eq!(full.finish(out).map(|v| v.len()).ok(), Some(10));
    }
}
