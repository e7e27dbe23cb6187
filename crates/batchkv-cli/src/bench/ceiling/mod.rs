//! `memceiling`: what the memory system allows a batched memtable lookup.
//!
//! It builds a plain skip list ([`index`]) of the keys fillrandom writes
//! (`--num`, `--seed`, `--key_size`; nodes as big as the memtable's for
//! `--value_size`, placed in insertion order), then reads it exactly as
//! multireadrandom reads the engine — the same key generator, seeds,
//! batches of `--batch_size` and `--threads` — with the ideal interleaved
//! descent ([`descent`]): `--batch_size` independent searches in flight,
//! each step consuming the node prefetched in the previous round. No engine
//! code runs. Building the list is not timed.
//!
//! After the timed run, a counting pass over the first [`COUNTED`] lookups
//! of the first thread gives the nodes compared, the distinct cache lines
//! read, and the reads that miss a simulated last-level cache
//! ([`cache::LineCache`], the machine's size and ways) per lookup. Its found count matches multireadrandom's on the
//! same flags (same keys, same reads).

mod cache;
mod descent;
mod index;

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::engine::BenchResult;
use super::gen::make_key;
use super::histogram::Probe;
use super::workloads::{multi_batches, process_cpu_seconds, run_threads, Budget, Stats};
use super::BenchArgs;
use descent::{Searcher, Touched};
use index::{memtable_entry_bytes, Index};

/// Lookups the counting pass counts (enough for stable averages).
const COUNTED: u64 = 100_000;

/// Runs the benchmark (see the module docs).
pub fn run(args: &BenchArgs) -> BenchResult<Stats> {
    let built = Instant::now();
    let index = build_fill_index(args)?;
    let build_seconds = built.elapsed().as_secs_f64();

    let start = Instant::now();
    let cpu_start = process_cpu_seconds();
    let (ops, found) = run_threads(args, |seed| {
        let mut searcher = Searcher::new(&index);
        let mut probe = Probe::new();
        multi_batches(args, seed, &Budget::new(args, args.reads()), |keys| {
            probe.op(keys.len() as u64, || {
                Ok(searcher.multi_get(keys, &mut |_, _| {})?)
            })
        })
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu_start;

    let t = count_touched(&index, args)?;
    let per = |v: u64| v as f64 / t.lookups.max(1) as f64;
    let (nodes, lines, misses) = (per(t.nodes), per(t.lines), per(t.misses));
    let extra = format!(
        "({found} of {ops} found; per lookup {nodes:.1} nodes, {lines:.1} lines, \
         {misses:.1} missing a simulated LLC; skip list of {} nodes, {:.0} MB, built in \
         {build_seconds:.1} s)",
        index.nodes(),
        index.bytes() as f64 / 1e6,
    );
    Ok(Stats {
        ops,
        seconds,
        cpu_seconds,
        extra,
        user_bytes: 0,
        fields: vec![
            ("nodes_per_lookup", nodes),
            ("lines_per_lookup", lines),
            ("llc_misses_per_lookup", misses),
        ],
    })
}

/// The list of the keys fillrandom writes, in its order: its key
/// generator (`fill` in workloads.rs, `KeyOrder::Random`) with its seed.
fn build_fill_index(args: &BenchArgs) -> BenchResult<Index> {
    let num = usize::try_from(args.num)?;
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let keys = (0..num).map(|_| {
        let mut k = Vec::with_capacity(args.key_size);
        make_key(&mut k, rng.random_range(0..args.num.max(1)), args.key_size);
        k
    });
    let entry_bytes = memtable_entry_bytes(args.key_size, args.value_size);
    Ok(Index::build(
        args.key_size,
        entry_bytes,
        args.seed ^ 0xce11_1a6e,
        keys,
    )?)
}

/// Counts nodes and lines over the first thread's first lookups.
fn count_touched(index: &Index, args: &BenchArgs) -> BenchResult<Touched> {
    let mut searcher = Searcher::new(index);
    let mut touched = Touched::default();
    let budget = Budget::count(args.reads().min(COUNTED));
    multi_batches(
        args,
        super::workloads::reader_seed(args, 0),
        &budget,
        |keys| Ok(searcher.multi_get_counted(keys, &mut touched)?),
    )?;
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::descent::Searcher;
    use super::index::Index;
    use super::*;

    /// Builds a list of `n` random keys (with repeats) and checks every
    /// lookup: present keys find their newest insertion, absent ones miss,
    /// for several batch sizes and list shapes.
    fn check(n: u64, key_size: usize, entry_bytes: usize, batch: usize) {
        let mut rng = SmallRng::seed_from_u64(n ^ batch as u64);
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let mut k = Vec::new();
                // Even indexes only: odd ones are the absent keys.
                make_key(&mut k, 2 * rng.random_range(0..n), key_size);
                k
            })
            .collect();
        let newest: HashMap<&[u8], u64> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_slice(), i as u64))
            .collect();
        let index = Index::build(key_size, entry_bytes, 7, keys.iter()).unwrap();
        assert_eq!(index.nodes(), n as usize);
        let mut searcher = Searcher::new(&index);
        let mut probes: Vec<Vec<u8>> = (0..2 * n + 2)
            .map(|i| {
                let mut k = Vec::new();
                make_key(&mut k, i, key_size);
                k
            })
            .collect();
        // Random order: the searches of a batch are independent.
        for i in (1..probes.len()).rev() {
            probes.swap(i, rng.random_range(0..=i));
        }
        let (mut hits, mut misses) = (0, 0);
        for chunk in probes.chunks(batch) {
            let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            let mut got: Vec<Option<u64>> = vec![None; refs.len()];
            let count = searcher
                .multi_get(&refs, &mut |i, ordinal| {
                    assert!(got[i].is_none(), "key {i} reported twice");
                    got[i] = Some(ordinal);
                })
                .unwrap();
            assert_eq!(count, got.iter().flatten().count());
            for (k, g) in refs.iter().zip(&got) {
                assert_eq!(
                    *g,
                    newest.get(k).copied(),
                    "key {:?}",
                    String::from_utf8_lossy(k)
                );
                if g.is_some() {
                    hits += 1;
                } else {
                    misses += 1;
                }
            }
        }
        assert_eq!(hits, newest.len());
        assert!(misses > n as usize, "the odd keys all miss");
    }

    #[test]
    fn every_lookup_finds_its_newest_node_and_absent_keys_miss() {
        for &(n, batch) in &[
            (1, 1),
            (2, 3),
            (1000, 1),
            (1000, 8),
            (5000, 64),
            (20_000, 256),
        ] {
            check(n, 16, 134, batch);
        }
        // Keys that are not whole words, and no padding.
        check(3000, 5, 0, 16);
        check(3000, 21, 0, 7);
    }

    #[test]
    fn an_empty_list_finds_nothing_and_a_key_of_another_size_is_an_error() {
        let index = Index::build(16, 0, 1, std::iter::empty::<Vec<u8>>()).unwrap();
        let mut s = Searcher::new(&index);
        assert_eq!(
            s.multi_get(&[b"0000000000000001".as_slice()], &mut |_, _| ())
                .unwrap(),
            0
        );
        let err = s
            .multi_get(&[b"short".as_slice()], &mut |_, _| ())
            .unwrap_err();
        assert!(err.contains("5-byte key"), "{err}");
        let Err(err) = Index::build(16, 0, 1, [b"short".to_vec()].into_iter()) else {
            panic!("a 5-byte key in a list of 16-byte keys was accepted");
        };
        assert!(err.contains("key 0 is 5 bytes"), "{err}");
    }

    #[test]
    fn counting_sees_a_few_nodes_and_lines_per_lookup() {
        let mut rng = SmallRng::seed_from_u64(3);
        let keys: Vec<Vec<u8>> = (0..50_000)
            .map(|_| {
                let mut k = Vec::new();
                make_key(&mut k, rng.random_range(0..1_000_000), 16);
                k
            })
            .collect();
        let index = Index::build(16, 134, 9, keys.iter()).unwrap();
        let mut s = Searcher::new(&index);
        let mut t = Touched::default();
        let refs: Vec<&[u8]> = keys[..64].iter().map(Vec::as_slice).collect();
        assert_eq!(s.multi_get_counted(&refs, &mut t).unwrap(), 64);
        assert_eq!(t.lookups, 64);
        // log4(50k) ≈ 7.8 levels: a search compares a handful of nodes per
        // level and reads at least one line per node.
        let (nodes, lines) = (t.nodes as f64 / 64.0, t.lines as f64 / 64.0);
        assert!((8.0..40.0).contains(&nodes), "{nodes} nodes per lookup");
        assert!(
            lines >= nodes * 0.5 && lines <= nodes * 3.0 + 2.0,
            "{lines} lines"
        );
    }
}
