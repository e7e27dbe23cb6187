//! The ideal interleaved descent: W independent searches of an [`Index`]
//! in flight, advanced round-robin. Each step consumes the node prefetched
//! in the previous round (compare its key, move right or down) and
//! prefetches the next node to compare, so the batch's misses overlap.
//!
//! Per search: `x` (a node before the target; the head at first), `level`,
//! `z = next(x, level)` (prefetched, to be compared), and `bound`, the node
//! last found ≥ the target (at a level above) with `bound_eq` saying if it
//! equals it. A successor equal to `bound` needs no comparison: the search
//! goes down at once (or, at level 0, ends with `bound` as its answer).
//! The searches are independent: nothing is sorted or shared.
//!
//! Keys of up to [`INLINE_WORDS`] words are compared with the word count
//! as a constant and the target held in the search itself, which keeps a
//! step to a few dozen instructions: a ceiling that spends more on
//! instructions than the memory system makes it wait would be a CPU
//! ceiling instead.

use std::cmp::Ordering;

use super::cache::LineCache;
use super::index::{compare_words, pack_key, Index, NIL};

/// Key words compared with a constant word count (keys of ≤ 32 bytes).
const INLINE_WORDS: usize = 4;

/// One search in flight.
#[derive(Clone, Copy)]
struct Search {
    x: usize,
    z: usize,
    bound: usize,
    level: usize,
    /// The search's position in the batch.
    pos: usize,
    bound_eq: bool,
    /// The target's words when it has at most [`INLINE_WORDS`] (else
    /// they are in `Searcher::targets`).
    target: [u64; INLINE_WORDS],
}

/// Node and line counts of counted searches ([`Searcher::multi_get_counted`]).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Touched {
    pub lookups: u64,
    /// Nodes whose key a search compared.
    pub nodes: u64,
    /// Distinct cache lines each search read (tower slots and key words,
    /// the head's included), summed.
    pub lines: u64,
    /// Reads that missed a simulated last-level cache ([`LineCache`]),
    /// in the order the interleaved searches made them.
    pub misses: u64,
}

/// A thread's searcher: reusable per-batch state over one index.
pub struct Searcher<'a> {
    index: &'a Index,
    targets: Vec<u64>,
    live: Vec<Search>,
    /// Lines read per search (counted searches only).
    lines: Vec<Vec<usize>>,
    /// Counted searches only (made by the first).
    cache: Option<LineCache>,
}

impl<'a> Searcher<'a> {
    pub fn new(index: &'a Index) -> Searcher<'a> {
        Searcher {
            index,
            targets: Vec::new(),
            live: Vec::new(),
            lines: Vec::new(),
            cache: None,
        }
    }

    /// Looks up `keys` (each `key_size` bytes) together; calls
    /// `found(i, ordinal)` for each key `i` present, with the insertion
    /// ordinal of its newest node. Returns how many were found.
    pub fn multi_get(
        &mut self,
        keys: &[&[u8]],
        found: &mut impl FnMut(usize, u64),
    ) -> Result<usize, String> {
        self.run::<false>(keys, found, &mut Touched::default())
    }

    /// [`Searcher::multi_get`], also counting the nodes and lines each
    /// search reads (slower: for the report, not for timing).
    pub fn multi_get_counted(
        &mut self,
        keys: &[&[u8]],
        touched: &mut Touched,
    ) -> Result<usize, String> {
        self.run::<true>(keys, &mut |_, _| {}, touched)
    }

    /// Checks and packs the targets, then runs the descent for the key
    /// length.
    fn run<const COUNT: bool>(
        &mut self,
        keys: &[&[u8]],
        found: &mut impl FnMut(usize, u64),
        touched: &mut Touched,
    ) -> Result<usize, String> {
        let index = self.index;
        self.targets.clear();
        for k in keys {
            if k.len() != index.key_size() {
                return Err(format!(
                    "memceiling: a {}-byte key in an index of {}-byte keys",
                    k.len(),
                    index.key_size()
                ));
            }
            pack_key(k, &mut self.targets);
        }
        if index.nodes() == 0 {
            return Ok(0);
        }
        Ok(match index.key_words() {
            1 => self.descend::<COUNT, 1>(keys.len(), found, touched),
            2 => self.descend::<COUNT, 2>(keys.len(), found, touched),
            3 => self.descend::<COUNT, 3>(keys.len(), found, touched),
            4 => self.descend::<COUNT, 4>(keys.len(), found, touched),
            _ => self.descend::<COUNT, 0>(keys.len(), found, touched),
        })
    }

    /// The interleaved descent of the `n` packed targets; `KW` is the key's
    /// word count, or 0 for keys longer than [`INLINE_WORDS`] words.
    #[inline(always)]
    fn descend<const COUNT: bool, const KW: usize>(
        &mut self,
        n: usize,
        found: &mut impl FnMut(usize, u64),
        touched: &mut Touched,
    ) -> usize {
        let index = self.index;
        let kw = index.key_words();
        let (head, top) = (index.head(), index.top() - 1);
        let first = index.next(head, top);
        prefetch_node(index, first, top);
        self.live.clear();
        let targets = &self.targets;
        self.live.extend((0..n).map(|pos| {
            let mut target = [0; INLINE_WORDS];
            if KW > 0 {
                target[..KW].copy_from_slice(&targets[pos * KW..][..KW]);
            }
            Search {
                x: head,
                z: first,
                bound: NIL,
                level: top,
                pos,
                bound_eq: false,
                target,
            }
        }));
        if COUNT {
            touched.lookups += n as u64;
            self.lines.resize_with(n, Vec::new);
            let cache = self.cache.get_or_insert_with(LineCache::last_level);
            for l in &mut self.lines[..n] {
                l.clear();
                note(l, cache, touched, line_of(index, head - top));
            }
        }
        let mut hits = 0;
        let mut live = self.live.len();
        while live > 0 {
            let mut i = 0;
            while i < live {
                let s = &mut self.live[i];
                // `s.z` was prefetched in the previous round; never NIL
                // here (a NIL successor equals the NIL bound).
                let ord = if KW > 0 {
                    compare_words(index.key_array::<KW>(s.z), &s.target[..KW])
                } else {
                    compare_words(index.key(s.z), &self.targets[s.pos * kw..][..kw])
                };
                if COUNT {
                    touched.nodes += 1;
                    if let Some(cache) = &mut self.cache {
                        let l = &mut self.lines[s.pos];
                        note(l, cache, touched, line_of(index, s.z + 1));
                        note(l, cache, touched, line_of(index, s.z + kw));
                    }
                }
                let mut done = false;
                if ord == Ordering::Less {
                    s.x = s.z;
                } else {
                    s.bound = s.z;
                    s.bound_eq = ord == Ordering::Equal;
                    done = s.level == 0;
                    s.level = s.level.saturating_sub(1);
                }
                // The next node to compare: right of `x`, or down through
                // the bound without comparing it again.
                while !done {
                    if let (true, Some(cache)) = (COUNT, &mut self.cache) {
                        let line = line_of(index, s.x - s.level);
                        note(&mut self.lines[s.pos], cache, touched, line);
                    }
                    s.z = index.next(s.x, s.level);
                    if s.z != s.bound {
                        break;
                    }
                    done = s.level == 0;
                    s.level = s.level.saturating_sub(1);
                }
                if done {
                    if s.bound_eq {
                        hits += 1;
                        found(s.pos, index.ordinal(s.bound));
                    }
                    if COUNT {
                        touched.lines += dedup_count(&mut self.lines[s.pos]);
                    }
                    live -= 1;
                    self.live.swap(i, live);
                    continue;
                }
                prefetch_node(index, s.z, s.level);
                i += 1;
            }
        }
        hits
    }
}

/// Prefetches what comparing `node` at `level` reads: its key and its
/// successor slot at that level.
#[inline(always)]
fn prefetch_node(index: &Index, node: usize, level: usize) {
    prefetch(index.addr(node + 1));
    prefetch(index.addr(node - level));
}

/// A counted search reads `line`.
fn note(lines: &mut Vec<usize>, cache: &mut LineCache, touched: &mut Touched, line: usize) {
    lines.push(line);
    touched.misses += u64::from(cache.access(line));
}

fn line_of(index: &Index, word: usize) -> usize {
    index.addr(word) as usize / 64
}

/// Distinct entries of `lines` (emptied).
fn dedup_count(lines: &mut Vec<usize>) -> u64 {
    lines.sort_unstable();
    lines.dedup();
    let n = lines.len() as u64;
    lines.clear();
    n
}

/// Hints the CPU to bring the line holding `p` into L1. No-op on targets
/// without a stable prefetch intrinsic.
#[inline(always)]
fn prefetch(p: *const u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is a hint: it does not fault on any address,
        // and reads and writes nothing the program can observe; SSE is
        // part of the x86_64 baseline. (`unused_unsafe`: newer compilers
        // make the intrinsic safe.)
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
    }
}
