//! The stable-Rust fuzz driver: each target of [`super`] runs over its
//! valid seed inputs (real WAL files, SSTs from the real builder in both
//! layouts and all compressions, encoded edits and batches, option strings),
//! a few thousand seeded mutations of them (bit flips, truncations, inserted
//! and deleted bytes, huge length fields, spliced seeds) and some pure
//! noise. Fixed seed, bounded time (a time budget per target cuts the
//! iterations short on a slow machine).
//!
//! Besides "no panic", each call's largest single allocation is measured
//! (a tracking global allocator, per thread) and must stay within
//! [`alloc_limit`] of the input size.
//!
//! `cargo test -p batchkv --release write_fuzz_seed_corpus -- --ignored`
//! writes the seeds to `fuzz/corpus/<target>/` for libFuzzer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::batch::WriteBatch;
use crate::key::{pack_trailer, ValueType};
use crate::sst::block::builder::BlockBuilder;
use crate::sst::block::Layout as BlockLayout;
use crate::sst::{Table, TableOptions};
use crate::version::{FileMetaData, VersionEdit};
use crate::wal::test_util::log_of;

use crate::fs::mem::SliceFile;

// ---------------------------------------------------------------------------
// Allocation tracking

/// Forwards to [`System`], recording the largest allocation size requested
/// by the current thread since [`reset_largest_alloc`].
struct TrackingAlloc;

thread_local! {
    static LARGEST_ALLOC: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    // `try_with`: the thread-local may be gone while a thread exits.
    let _ = LARGEST_ALLOC.try_with(|l| {
        if size > l.get() {
            l.set(size);
        }
    });
}

fn reset_largest_alloc() {
    LARGEST_ALLOC.with(|l| l.set(0));
}

fn largest_alloc() -> usize {
    LARGEST_ALLOC.with(|l| l.get())
}

#[allow(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; test builds only"
)]
// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the `GlobalAlloc` contract; the only addition is recording a size
// in a const-initialized thread-local `Cell`, which neither allocates nor
// has a destructor, so it cannot re-enter the allocator.
unsafe impl GlobalAlloc for TrackingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (every path above) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_alloc(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the
        // caller's contract for `new_size` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: TrackingAlloc = TrackingAlloc;

/// The largest single allocation a target may make for an input of `len`
/// bytes: a fixed allowance plus LZ4's maximum expansion (255:1). ZSTD may
/// legitimately reach 32768:1, but only with frames made of RLE blocks
/// whose declared sizes match the block's varint, which these mutations do
/// not produce; libFuzzer runs use `-malloc_limit_mb` instead.
fn alloc_limit(len: usize) -> usize {
    (1 << 20) + 256 * len
}

// ---------------------------------------------------------------------------
// Deterministic randomness and mutation

/// SplitMix64: tiny, seeded, the same on every platform and Rust version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Length fields a decoder must not trust: all-ones fixed32/fixed64, the
/// largest varint32, varints just past 32 bits and the largest varint64.
const HUGE_FIELDS: &[&[u8]] = &[
    &[0xff, 0xff, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0x7f],
    &[0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0x80, 0x80, 0x80, 0x80, 0x10],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    &[0xfe, 0xff, 0xff, 0x0f],
];

/// One to three random edits of `input`; `others` supplies splice material.
fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let len = v.len();
        let pos = if len == 0 { 0 } else { rng.below(len) };
        match rng.below(10) {
            0 | 1 if len > 0 => v[pos] ^= 1 << rng.below(8),
            2 if len > 0 => v[pos] = [0, 0xff, 0x80, 0x7f, 1][rng.below(5)],
            3 => v.truncate(rng.below(len + 1)),
            4 => {
                let n = 1 + rng.below(16);
                let ins = rng.bytes(n);
                v.splice(pos..pos, ins);
            }
            5 if len > 0 => {
                let end = (pos + 1 + rng.below(16)).min(len);
                v.drain(pos..end);
            }
            6 => {
                // Over a field of the same width, or in place of a one-byte
                // varint (so the bytes after it still parse).
                let field = HUGE_FIELDS[rng.below(HUGE_FIELDS.len())];
                let width = if rng.below(2) == 0 { field.len() } else { 1 };
                let end = (pos + width).min(len);
                v.splice(pos..end, field.iter().copied());
            }
            7 if len > 0 => {
                let from = rng.below(len);
                let n = (1 + rng.below(64)).min(len - from);
                let chunk = v[from..from + n].to_vec();
                v.splice(pos..pos, chunk);
            }
            8 if !others.is_empty() => {
                let other = &others[rng.below(others.len())];
                let at = rng.below(other.len() + 1);
                v.truncate(pos);
                v.extend_from_slice(&other[at..]);
            }
            _ if len >= 4 => {
                let small = (rng.below(64) as u32).to_le_bytes();
                let p = pos.min(len - 4);
                v[p..p + 4].copy_from_slice(&small);
            }
            _ => v.push(rng.next() as u8),
        }
    }
    v
}

fn hex(data: &[u8]) -> String {
    let shown: String = data.iter().take(512).map(|b| format!("{b:02x}")).collect();
    if data.len() > 512 {
        format!("{shown}… ({} bytes)", data.len())
    } else {
        shown
    }
}

/// Runs `target` on one input; panics (naming the input) on a target panic
/// or an allocation over [`alloc_limit`].
fn check_one(name: &str, target: fn(&[u8]), input: &[u8]) {
    reset_largest_alloc();
    let result = catch_unwind(AssertUnwindSafe(|| target(input)));
    let largest = largest_alloc();
    if result.is_err() {
        panic!("fuzz target {name} panicked on input {}", hex(input));
    }
    assert!(
        largest <= alloc_limit(input.len()),
        "fuzz target {name} allocated {largest} bytes at once for an input of {} bytes: {}",
        input.len(),
        hex(input)
    );
}

/// Runs `target` over `seeds` as they are, then up to `iterations` inputs
/// (mostly mutated seeds, one in sixteen pure noise) within `budget`.
/// `prepare` turns a mutated seed into the target's input (for example
/// adding a flags byte). Returns how many inputs ran.
fn run(
    name: &str,
    target: fn(&[u8]),
    seeds: &[Vec<u8>],
    iterations: usize,
    prepare: &dyn Fn(&mut Rng, Vec<u8>) -> Vec<u8>,
) -> usize {
    let (budget, iterations, seed) = settings(iterations);
    assert!(!seeds.is_empty());
    let mut rng = Rng(0x6261_7463_686b_7631 ^ name.len() as u64 ^ seed);
    for s in seeds {
        let input = prepare(&mut rng, s.clone());
        check_one(name, target, &input);
    }
    let start = Instant::now();
    let mut ran = seeds.len();
    for i in 0..iterations {
        if start.elapsed() > budget {
            break;
        }
        let raw = if i % 16 == 15 {
            let n = rng.below(300);
            rng.bytes(n)
        } else {
            let seed = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, seed, seeds)
        };
        let input = prepare(&mut rng, raw);
        check_one(name, target, &input);
        ran += 1;
    }
    eprintln!(
        "fuzz target {name}: {ran} inputs in {:.2} s (seed {seed:#x})",
        start.elapsed().as_secs_f64()
    );
    ran
}

/// The time budget, mutated inputs and RNG seed of a [`run`]: 3 s, at most
/// `iterations` inputs and seed 0 (the same inputs every time) unless
/// `BATCHKV_FUZZ_SECONDS` sets a budget (then as many inputs as fit) or
/// `BATCHKV_FUZZ_SEED` a seed, for longer runs on fresh inputs:
/// `BATCHKV_FUZZ_SECONDS=240 BATCHKV_FUZZ_SEED=$RANDOM cargo test -p
/// batchkv --release fuzz_block`.
fn settings(iterations: usize) -> (Duration, usize, u64) {
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|e| panic!("{name}={v:?}: {e}"))
        })
    };
    let seed = var("BATCHKV_FUZZ_SEED").unwrap_or(0);
    match var("BATCHKV_FUZZ_SECONDS") {
        Some(secs) => (Duration::from_secs(secs), usize::MAX, seed),
        None => (Duration::from_secs(3), iterations, seed),
    }
}

/// Mutated inputs per target (a time budget in [`run`] caps the run).
const ITERATIONS: usize = 20_000;

fn as_is(_: &mut Rng, v: Vec<u8>) -> Vec<u8> {
    v
}

// ---------------------------------------------------------------------------
// Seeds: valid inputs made by the real encoders

fn ik(user_key: &[u8], seq: u64, t: ValueType) -> Vec<u8> {
    let mut k = user_key.to_vec();
    k.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
    k
}

fn batch_seeds() -> Vec<Vec<u8>> {
    let mut out = vec![WriteBatch::new().rep().to_vec()];
    let mut b = WriteBatch::new();
    b.put("key", "value");
    b.delete("gone");
    b.set_sequence(42);
    out.push(b.rep().to_vec());
    let mut b = WriteBatch::new();
    for i in 0..20u32 {
        if i % 5 == 0 {
            b.delete(format!("k{i:03}"));
        } else {
            b.put(format!("k{i:03}"), vec![i as u8; (i * 13) as usize]);
        }
    }
    b.set_sequence(1 << 40);
    out.push(b.rep().to_vec());
    let mut b = WriteBatch::new();
    b.put(vec![7u8; 200], vec![9u8; 1000]);
    b.set_sequence(crate::key::MAX_SEQUENCE);
    out.push(b.rep().to_vec());
    out
}

/// WAL files: batches written through the real log writer, including
/// records fragmented across blocks and a block trailer.
fn wal_seeds() -> Vec<Vec<u8>> {
    let write = |records: &[Vec<u8>]| log_of(records);
    let batches = batch_seeds();
    let mut big = WriteBatch::new();
    big.put("big", vec![3u8; 40_000]);
    big.set_sequence(100);
    let mut fill = WriteBatch::new();
    // Leaves fewer than 7 bytes in the first block, so the next record
    // starts after zero padding.
    fill.put("f", vec![1u8; 32 * 1024 - 7 - 12 - 1 - 1 - 1 - 3 - 3]);
    vec![
        write(&batches[..1]),
        write(&batches),
        write(&[batches[1].clone(), big.rep().to_vec(), batches[2].clone()]),
        write(&[fill.rep().to_vec(), batches[1].clone()]),
    ]
}

fn sample_edits() -> Vec<VersionEdit> {
    let file = |number: u64, a: &[u8], b: &[u8]| FileMetaData {
        number,
        file_size: 4096 + number,
        smallest: ik(a, number, ValueType::Value),
        largest: ik(b, 1, ValueType::Deletion),
        num_entries: number * 10,
        global_seqno: 0,
        pinned: Default::default(),
    };
    vec![
        VersionEdit {
            comparator: Some("batchkv.BytewiseComparator".to_string()),
            log_number: Some(0),
            next_file_number: Some(2),
            last_sequence: Some(0),
            ..VersionEdit::default()
        },
        VersionEdit {
            log_number: Some(3),
            next_file_number: Some(6),
            last_sequence: Some(500),
            new_files: vec![(0, file(4, b"a", b"m")), (0, file(5, b"c", b"z"))],
            ..VersionEdit::default()
        },
        VersionEdit {
            next_file_number: Some(9),
            last_sequence: Some(900),
            deleted_files: vec![(0, 4), (0, 5)],
            new_files: vec![(1, file(7, b"a", b"k")), (1, file(8, b"l", b"z"))],
            ..VersionEdit::default()
        },
    ]
}

fn edit_seeds() -> Vec<Vec<u8>> {
    sample_edits()
        .iter()
        .map(|e| {
            let mut v = Vec::new();
            e.encode(&mut v);
            v
        })
        .collect()
}

/// MANIFEST files: edit sequences written through the real log writer.
fn manifest_seeds() -> Vec<Vec<u8>> {
    let edits = edit_seeds();
    (1..=edits.len()).map(|n| log_of(&edits[..n])).collect()
}

/// Entries for the SST seeds: several versions, deletions, values of
/// varied (compressible) lengths.
fn table_entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..n {
        let uk = format!("key{i:04}").into_bytes();
        for (j, seq) in [(0, 3 * i as u64 + 2), (1, 3 * i as u64 + 1)] {
            if j == 1 && i % 3 != 0 {
                continue;
            }
            let t = if (i + j) % 7 == 3 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let value = match t {
                ValueType::Deletion | ValueType::RangeDeletion => Vec::new(),
                ValueType::Value | ValueType::Merge => {
                    format!("value-{i}-{}", "ab".repeat(i % 17)).into_bytes()
                }
            };
            v.push((ik(&uk, seq, t), value));
        }
    }
    v
}

/// Builds a table in memory with the real builder.
fn build_table(entries: &[(Vec<u8>, Vec<u8>)], opts: &TableOptions) -> Vec<u8> {
    crate::sst::tests_support::build_in_memory(entries, opts).0
}

/// SSTs from the real builder: both layouts, every compression, with and
/// without a filter, a few restart intervals, and an empty table.
fn table_seeds() -> Vec<Vec<u8>> {
    let entries = table_entries(60);
    let mut out = Vec::new();
    let compressions = crate::sst::compression::AVAILABLE;
    for (n, (separate_key_value, compression)) in [false, true]
        .into_iter()
        .flat_map(|s| compressions.iter().map(move |&c| (s, c)))
        .enumerate()
    {
        let opts = TableOptions {
            block_size: 200 + 100 * n,
            restart_interval: 1 + n % 4,
            index_restart_interval: 1 + n % 2,
            bloom_bits_per_key: if n % 3 == 2 { 0 } else { 10 },
            separate_key_value,
            compression,
            ..TableOptions::default()
        };
        out.push(build_table(&entries, &opts));
    }
    out.push(build_table(&[], &TableOptions::default()));
    // With a range-deletion block, which `Table::open` decodes.
    let ts = [
        ("key0005", "key0017", 200),
        ("key0010", "key0030", 150),
        ("key0040", "key0041", 7),
    ];
    let ts: Vec<_> = ts
        .iter()
        .map(|&(b, e, seq)| crate::range_del::RangeTombstone {
            begin: b.into(),
            end: e.into(),
            seq,
        })
        .collect();
    out.push(
        crate::sst::tests_support::build_in_memory_with_range_dels(
            &entries,
            &ts,
            &TableOptions::default(),
        )
        .0,
    );
    out
}

/// Blocks with the target's mode byte: index-like (internal keys), meta
/// (bytewise keys), and data blocks of both layouts.
fn block_seeds() -> Vec<Vec<u8>> {
    let entries = table_entries(24);
    let block = |mode: u8, layout: BlockLayout, interval: usize, internal: bool| {
        let mut b = BlockBuilder::with_layout(interval, layout);
        for (k, v) in &entries {
            let key: &[u8] = if internal { k } else { &k[..k.len() - 8] };
            b.add(key, v);
        }
        let mut out = vec![mode];
        out.extend_from_slice(&b.finish());
        out
    };
    let mut out = vec![
        block(0, BlockLayout::Interleaved, 1, true),
        block(1, BlockLayout::Interleaved, 1, false),
        block(3, BlockLayout::Interleaved, 16, true),
    ];
    for interval in [1u8, 2, 4] {
        let mode = 3 * interval + 2;
        out.push(block(
            mode,
            BlockLayout::Interleaved,
            usize::from(interval),
            true,
        ));
        out.push(block(
            mode,
            BlockLayout::Separated,
            usize::from(interval),
            true,
        ));
    }
    out
}

/// Range-deletion blocks from the real encoder: overlapping, nested and
/// stacked tombstones (same begin, several sequence numbers), and none.
fn range_del_seeds() -> Vec<Vec<u8>> {
    use crate::range_del::block::{encode, sort_for_block};
    use crate::range_del::RangeTombstone;
    let t = |b: &str, e: &str, seq: u64| RangeTombstone {
        begin: b.into(),
        end: e.into(),
        seq,
    };
    let sets = [
        vec![],
        vec![t("a", "b", 1)],
        vec![
            t("a", "z", 12),
            t("a", "c", 9),
            t("m", "p", 3),
            t("key0010", "key0020", 40),
        ],
        (0..20)
            .map(|i| t(&format!("k{i:03}"), &format!("k{:03}", i + 7), 100 - i))
            .collect(),
    ];
    sets.into_iter()
        .map(|mut ts| {
            sort_for_block(&mut ts);
            encode(&ts)
        })
        .collect()
}

fn options_seeds() -> Vec<Vec<u8>> {
    [
        "",
        "write_buffer_size=64MB;max_write_buffer_number=4;",
        " block_size = 16k ; paranoid_memory_checks=true",
        "memtable=sorted_hash:1000:100;write_buffer_size=1MB",
        "compression=zstd;compression_level=19;verify_checksums=false",
        "wal_recovery_mode=kAbsoluteConsistency;max_open_files=-1",
        "max_bytes_for_level_multiplier=16.5;level0_file_num_compaction_trigger=2",
        "batch_lookup=bfs;bloom_bits=12;separate_key_value_in_data_block=true",
        "target_file_size_base=1G;max_bytes_for_level_base=8TB;block_cache_size=0",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

// ---------------------------------------------------------------------------
// The tests: one per target

#[test]
fn fuzz_wal_log() {
    let seeds = wal_seeds();
    let n = run("wal_log", super::wal_log, &seeds, ITERATIONS, &as_is);
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_write_batch() {
    let n = run(
        "write_batch",
        super::write_batch,
        &batch_seeds(),
        ITERATIONS,
        &as_is,
    );
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_version_edit() {
    let n = run(
        "version_edit",
        super::version_edit,
        &edit_seeds(),
        ITERATIONS,
        &as_is,
    );
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_manifest() {
    // Most inputs have their record checksums resealed after mutation, so
    // damaged edits reach the decoder and the version logic.
    let prepare = |rng: &mut Rng, v: Vec<u8>| {
        let mut out = vec![u8::from(rng.below(4) != 0)];
        out.extend_from_slice(&v);
        out
    };
    let n = run(
        "manifest",
        super::manifest,
        &manifest_seeds(),
        ITERATIONS,
        &prepare,
    );
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_block() {
    let n = run("block", super::block, &block_seeds(), ITERATIONS, &as_is);
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_range_del_block() {
    let seeds = range_del_seeds();
    for s in &seeds {
        let ts = crate::range_del::block::decode(s.clone(), "seed.sst".into(), 0);
        assert!(ts.is_ok(), "seed decodes: {ts:?}");
    }
    let n = run(
        "range_del_block",
        super::range_del_block,
        &seeds,
        ITERATIONS,
        &as_is,
    );
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_table() {
    let seeds = table_seeds();
    let mut with_range_dels = 0;
    for s in &seeds {
        let file = std::sync::Arc::new(SliceFile(s.clone()));
        let t = Table::open(file, "seed.sst".into(), TableOptions::default())
            .expect("seed table opens");
        with_range_dels += usize::from(t.range_dels().is_some());
    }
    assert_eq!(
        with_range_dels, 1,
        "one seed carries a range-deletion block"
    );
    // Most inputs have their checksums resealed after mutation so the
    // damage reaches the block, index and properties parsers; the flags
    // byte also varies data-block verification and the block cache.
    let prepare = |rng: &mut Rng, v: Vec<u8>| {
        let flags = match rng.below(8) {
            0 => 0,
            f => (1 | (f << 1)) as u8,
        };
        let mut out = vec![flags];
        out.extend_from_slice(&v);
        out
    };
    let n = run("table", super::table, &seeds, ITERATIONS, &prepare);
    assert!(n > 2000, "only {n} inputs ran");
}

#[test]
fn fuzz_options() {
    let n = run(
        "options",
        super::options,
        &options_seeds(),
        ITERATIONS,
        &as_is,
    );
    assert!(n > 2000, "only {n} inputs ran");
}

/// Writes every seed to `fuzz/corpus/<target>/` as libFuzzer's starting
/// corpus (the table and manifest seeds with flags 0 and "reseal checksums").
#[test]
#[ignore = "writes files into fuzz/corpus; run by hand before cargo fuzz"]
fn write_fuzz_seed_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let with_flags = |seeds: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
        seeds
            .into_iter()
            .flat_map(|s| {
                [0u8, 1].map(|f| {
                    let mut v = vec![f];
                    v.extend_from_slice(&s);
                    v
                })
            })
            .collect()
    };
    for (target, seeds) in [
        ("wal_log", wal_seeds()),
        ("write_batch", batch_seeds()),
        ("version_edit", edit_seeds()),
        ("manifest", with_flags(manifest_seeds())),
        ("block", block_seeds()),
        ("range_del_block", range_del_seeds()),
        ("table", with_flags(table_seeds())),
        ("options", options_seeds()),
    ] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:02}")), s).unwrap();
        }
    }
}

/// Found while writing the SST targets: a ZSTD block whose varint and frame
/// header both declare ~4 GiB made `decompress` reserve that much before
/// the codec looked at the (few) bytes behind it. The declared size must be
/// one the codec can reach from the stored bytes (ZSTD expands at most
/// 32768:1: a 4-byte RLE block yields at most 128 KiB).
#[cfg(feature = "zstd")]
#[test]
fn fuzz_regression_zstd_block_declaring_4_gib_is_rejected_before_allocating() {
    use crate::coding::put_varint32;
    use crate::sst::compression::{decompress, TYPE_ZSTD};
    let declared: u32 = 0xffff_fff0;
    let mut stored = Vec::new();
    put_varint32(&mut stored, declared);
    // Frame: magic, descriptor (single segment, 4-byte content size), the size.
    stored.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0xa0]);
    stored.extend_from_slice(&declared.to_le_bytes());
    // One last RLE block of 128 KiB (header bits: last, type 1, size).
    let header: u32 = 1 | (1 << 1) | ((128 << 10) << 3);
    stored.extend_from_slice(&header.to_le_bytes()[..3]);
    stored.push(b'x');
    reset_largest_alloc();
    let result = decompress(stored, TYPE_ZSTD, "000012.sst", 4096);
    let largest = largest_alloc();
    let e = result.unwrap_err();
    assert!(
        matches!(&e, crate::Error::Corruption { file, offset: 4096, .. } if file == "000012.sst"),
        "{e}"
    );
    assert!(
        largest < 1 << 20,
        "allocated {largest} bytes before rejecting"
    );
}
