//! Running a compaction: merge the input files, drop what no reader can
//! see, and write the survivors into new tables of at most
//! `target_file_size` bytes (split only between user keys, so files of one
//! level never share a user key).
//!
//! What is dropped, for one user key (entries arrive newest first): the
//! snapshots split the sequence space into *stripes* (an entry with sequence
//! `s` belongs to the stripe of the oldest snapshot ≥ `s`, or to the
//! "latest" stripe). Within a stripe only the newest entry is visible to
//! anyone, so older ones in the same stripe are dropped. A tombstone is
//! dropped too when the output is the bottommost level for these keys and
//! no snapshot is older than it — then nothing it hides exists below.
//!
//! Range tombstones (`range_del`): a point entry `(k, s)` is dropped when
//! an input range tombstone covers `k` at some `T > s` in the same stripe
//! (no snapshot in `[s, T)` can see it). Tombstones are carried into the
//! outputs, each output getting the pieces inside its key span; a tombstone
//! is dropped only where a point tombstone would be: bottommost output and
//! no snapshot older than it (then every entry it covers in the inputs was
//! dropped too, and nothing older exists below).
//!
//! Output spans: a file cut after user key `k` ends its tombstones at
//! `k ‖ 0x00` (exclusive) and the next file's start there, so the file's
//! largest user key is `k` and adjacent files never share a user key
//! (`range_del::tombstone_end_key`).

use std::path::Path;

use crate::error::{catch_panic, Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::iter::InternalIterator;
use crate::key::{append_internal_key, parse_internal_key, SequenceNumber, ValueType};
use crate::range_del::{FragmentedTombstones, RangeTombstone};
use crate::sst::{TableBuilder, TableOptions};
use crate::version::FileMetaData;

use super::filter::{CompactionDecision, CompactionFilter};
use super::merge::{merge_run, RunContext};
use super::CompactionTask;

/// What a compaction produced.
#[derive(Debug, Default)]
pub(crate) struct CompactionOutput {
    pub files: Vec<FileMetaData>,
    pub entries_in: u64,
    pub entries_dropped: u64,
}

/// Where and how outputs are written.
pub(crate) struct OutputSpec<'a> {
    pub fs: &'a dyn FileSystem,
    pub dir: &'a Path,
    pub table_options: TableOptions,
    pub target_file_size: u64,
    /// Offered every value no snapshot can see (`compaction/filter.rs`).
    pub filter: Option<&'a dyn CompactionFilter>,
    /// Combines merge operands (`compaction/merge.rs`).
    pub merge_operator: Option<&'a std::sync::Arc<dyn crate::merge::MergeOperator>>,
}

/// Merges `input` (the task's files, merged) into new tables. `new_number`
/// hands out file numbers (and protects them from deletion until installed).
/// `range_dels` are the input tables' range tombstones.
pub(crate) fn run_compaction(
    task: &CompactionTask,
    mut input: Box<dyn InternalIterator>,
    range_dels: Vec<RangeTombstone>,
    snapshots: &[SequenceNumber],
    out: &OutputSpec<'_>,
    new_number: &mut dyn FnMut() -> u64,
) -> Result<CompactionOutput> {
    debug_assert!(
        snapshots.windows(2).all(|w| w[0] <= w[1]),
        "snapshots ascending"
    );
    let stripe_of = |seq: SequenceNumber| super::snapshot_stripe(snapshots, seq);
    let covering = FragmentedTombstones::new(&range_dels);
    let range_dels_in = range_dels.len();
    let kept_range_dels: Vec<RangeTombstone> = range_dels
        .into_iter()
        .filter(|t| !(task.bottommost && stripe_of(t.seq) == 0))
        .collect();
    let mut result = CompactionOutput::default();
    result.entries_dropped += (range_dels_in - kept_range_dels.len()) as u64;
    let mut builder: Option<(u64, TableBuilder)> = None;
    // Inclusive lower end of the current output's span (None: unbounded).
    let mut span_start: Option<Vec<u8>> = None;
    let mut current_key: Option<Vec<u8>> = None;
    let mut last_stripe: Option<usize> = None;
    input.seek_to_first();
    while input.valid() {
        let ikey = input.key();
        result.entries_in += 1;
        let parsed = parse_internal_key(ikey).ok_or_else(|| {
            Error::corruption(
                "compaction input",
                0,
                format!("unparsable internal key {ikey:?}"),
            )
        })?;
        let new_user_key = current_key.as_deref() != Some(parsed.user_key);
        if new_user_key {
            // A file boundary may fall only between user keys.
            let full = builder.take_if(|(_, b)| b.estimated_file_size() >= out.target_file_size);
            if let Some((number, mut b)) = full {
                // The span ends right after the last user key seen.
                let mut span_end = current_key.clone().unwrap_or_default();
                span_end.push(0);
                add_range_dels(
                    &mut b,
                    &kept_range_dels,
                    span_start.as_deref(),
                    Some(&span_end),
                );
                span_start = Some(span_end);
                result.files.push(finish_output(number, b)?);
            }
            // In place: a new allocation per user key was a malloc and a
            // free per compacted entry.
            match &mut current_key {
                Some(k) => {
                    k.clear();
                    k.extend_from_slice(parsed.user_key);
                }
                None => current_key = Some(parsed.user_key.to_vec()),
            }
            last_stripe = None;
        }
        let stripe = stripe_of(parsed.sequence);
        let shadowed = last_stripe == Some(stripe);
        last_stripe = Some(stripe);
        // Covered by a range tombstone no snapshot between them separates.
        let range_deleted = !covering.is_empty()
            && covering
                .smallest_covering_above(parsed.user_key, parsed.sequence)
                .is_some_and(|t| stripe_of(t) == stripe);
        if range_deleted {
            result.entries_dropped += 1;
            input.next();
            continue;
        }
        if parsed.value_type == ValueType::Merge && !shadowed {
            // The stripe's operands (and base) become `run.out`.
            let run = merge_run(
                &mut *input,
                &RunContext {
                    op: out.merge_operator,
                    covering: &covering,
                    stripe_of: &stripe_of,
                    bottommost: task.bottommost,
                },
            )?;
            // `entries_in` already counts the first entry.
            result.entries_in += run.consumed - 1;
            result.entries_dropped += run.consumed - run.out.len() as u64;
            let (_, b) = match &mut builder {
                Some(open) => open,
                None => builder.insert(new_output(out, new_number)?),
            };
            for (k, v) in &run.out {
                b.add(k, v)?;
            }
            continue;
        }
        // The newest value that no snapshot sees goes through the filter.
        let mut filtered: Option<(Vec<u8>, Vec<u8>)> = None;
        if let Some(f) = out.filter {
            if !shadowed && stripe == snapshots.len() && parsed.value_type == ValueType::Value {
                let decision = catch_panic(
                    || format!("compaction filter {:?}", f.name()),
                    || f.filter(task.output_level(), parsed.user_key, input.value()),
                )?;
                match decision {
                    CompactionDecision::Keep => {}
                    CompactionDecision::Remove => {
                        let mut tomb = Vec::with_capacity(ikey.len());
                        append_internal_key(
                            &mut tomb,
                            parsed.user_key,
                            parsed.sequence,
                            ValueType::Deletion,
                        );
                        filtered = Some((tomb, Vec::new()));
                    }
                    CompactionDecision::ChangeValue(v) => filtered = Some((ikey.to_vec(), v)),
                }
            }
        }
        let is_tombstone = parsed.value_type == ValueType::Deletion
            || filtered.as_ref().is_some_and(|(k, _)| k.as_slice() != ikey);
        let obsolete_tombstone = is_tombstone && task.bottommost && stripe == 0;
        if shadowed || obsolete_tombstone {
            result.entries_dropped += 1;
        } else {
            let (_, b) = match &mut builder {
                Some(open) => open,
                None => builder.insert(new_output(out, new_number)?),
            };
            match &filtered {
                Some((k, v)) => b.add(k, v)?,
                None => b.add(ikey, input.value())?,
            }
        }
        input.next();
    }
    input.status()?;
    let tail_has_range_dels = kept_range_dels
        .iter()
        .any(|t| t.clip(span_start.as_deref(), None).is_some());
    if builder.is_none() && tail_has_range_dels {
        // Only tombstones are left for the last span.
        builder = Some(new_output(out, new_number)?);
    }
    if let Some((number, mut b)) = builder {
        add_range_dels(&mut b, &kept_range_dels, span_start.as_deref(), None);
        result.files.push(finish_output(number, b)?);
    }
    Ok(result)
}

/// Starts a new output table.
fn new_output(
    out: &OutputSpec<'_>,
    new_number: &mut dyn FnMut() -> u64,
) -> Result<(u64, TableBuilder)> {
    let number = new_number();
    let path = filename::path(out.dir, FileKind::Table, number);
    let file = out.fs.new_writable(&path)?;
    let b = TableBuilder::new(file, path.display().to_string(), out.table_options.clone())?;
    Ok((number, b))
}

/// Adds the pieces of `ts` inside `[lo, hi)` to `b`.
fn add_range_dels(
    b: &mut TableBuilder,
    ts: &[RangeTombstone],
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) {
    for t in ts {
        if let Some(piece) = t.clip(lo, hi) {
            b.add_range_deletion(piece);
        }
    }
}

fn finish_output(number: u64, builder: TableBuilder) -> Result<FileMetaData> {
    let summary = builder.finish()?;
    Ok(FileMetaData {
        number,
        file_size: summary.file_size,
        smallest: summary.smallest,
        largest: summary.largest,
        num_entries: summary.num_entries,
        global_seqno: 0,
        pinned: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fs::PosixFs;
    use crate::iter::vec_iter::VecIterator;

    fn ik(k: &str, seq: u64, t: ValueType) -> Vec<u8> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k.as_bytes(), seq, t);
        v
    }

    fn run(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        snapshots: &[u64],
        bottommost: bool,
    ) -> Vec<(String, u64)> {
        run_filtered(entries, snapshots, bottommost, None)
            .into_iter()
            .map(|(k, s, _, _)| (k, s))
            .collect()
    }

    /// Kept entries as (user key, sequence, is value, value).
    fn run_filtered(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        snapshots: &[u64],
        bottommost: bool,
        filter: Option<&dyn CompactionFilter>,
    ) -> Vec<(String, u64, bool, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let task = CompactionTask {
            level: 1,
            inputs: [vec![], vec![]],
            bottommost,
        };
        let spec = OutputSpec {
            fs: &PosixFs,
            dir: dir.path(),
            table_options: TableOptions::default(),
            target_file_size: 1 << 20,
            filter,
            merge_operator: None,
        };
        let mut n = 10;
        let out = run_compaction(
            &task,
            Box::new(VecIterator::new(entries)),
            Vec::new(),
            snapshots,
            &spec,
            &mut || {
                n += 1;
                n
            },
        )
        .unwrap();
        let mut kept = Vec::new();
        for f in &out.files {
            let path = filename::path(dir.path(), FileKind::Table, f.number);
            let file = PosixFs.open_random_access(&path).unwrap();
            let table =
                crate::sst::Table::open(file, path.display().to_string(), TableOptions::default())
                    .unwrap();
            let mut it = table.iter();
            it.seek_to_first();
            while it.valid() {
                let p = parse_internal_key(it.key()).unwrap();
                kept.push((
                    String::from_utf8(p.user_key.to_vec()).unwrap(),
                    p.sequence,
                    p.value_type == ValueType::Value,
                    it.value().to_vec(),
                ));
                it.next();
            }
        }
        kept
    }

    #[test]
    fn keeps_the_newest_version_per_snapshot_stripe() {
        let entries = vec![
            (ik("a", 9, ValueType::Value), b"9".to_vec()),
            (ik("a", 7, ValueType::Value), b"7".to_vec()),
            (ik("a", 5, ValueType::Value), b"5".to_vec()),
            (ik("a", 2, ValueType::Value), b"2".to_vec()),
            (ik("b", 3, ValueType::Value), b"3".to_vec()),
        ];
        // No snapshots: only the newest of each key.
        assert_eq!(
            run(entries.clone(), &[], false),
            vec![("a".into(), 9), ("b".into(), 3)]
        );
        // A snapshot at 6 sees a@5; one at 2 sees a@2.
        assert_eq!(
            run(entries, &[2, 6], false),
            vec![
                ("a".into(), 9),
                ("a".into(), 5),
                ("a".into(), 2),
                ("b".into(), 3)
            ]
        );
    }

    #[test]
    fn tombstones_drop_only_at_the_bottom_with_no_older_snapshot() {
        let entries = vec![
            (ik("a", 8, ValueType::Deletion), Vec::new()),
            (ik("a", 4, ValueType::Value), b"4".to_vec()),
            (ik("b", 6, ValueType::Value), b"6".to_vec()),
        ];
        assert_eq!(run(entries.clone(), &[], true), vec![("b".into(), 6)]);
        assert_eq!(
            run(entries.clone(), &[], false),
            vec![("a".into(), 8), ("b".into(), 6)]
        );
        // A snapshot at 5 still sees a@4, so both the tombstone and a@4 stay.
        assert_eq!(
            run(entries, &[5], true),
            vec![("a".into(), 8), ("a".into(), 4), ("b".into(), 6)]
        );
    }

    /// Removes values starting with "x", rewrites "up" to "UP".
    struct TestFilter;
    impl CompactionFilter for TestFilter {
        fn filter(&self, level: usize, _key: &[u8], value: &[u8]) -> CompactionDecision {
            assert_eq!(level, 2, "the output level");
            match value {
                [b'x', ..] => CompactionDecision::Remove,
                b"up" => CompactionDecision::ChangeValue(b"UP".to_vec()),
                _ => CompactionDecision::Keep,
            }
        }
        fn name(&self) -> &str {
            "test"
        }
    }

    #[test]
    fn filter_sees_only_values_no_snapshot_can_see() {
        let entries = vec![
            (ik("a", 9, ValueType::Value), b"x".to_vec()),
            (ik("a", 4, ValueType::Value), b"old".to_vec()),
            (ik("b", 6, ValueType::Value), b"up".to_vec()),
            (ik("c", 3, ValueType::Value), b"x-but-snapshot".to_vec()),
            (ik("d", 8, ValueType::Deletion), Vec::new()),
        ];
        let f = TestFilter;
        // Not bottommost: a@9 becomes a tombstone at the same sequence and
        // hides a@4 (still needed by the snapshot at 5); b is rewritten; c
        // is seen by the snapshot at 5 and is not offered.
        assert_eq!(
            run_filtered(entries.clone(), &[5], false, Some(&f)),
            vec![
                ("a".into(), 9, false, vec![]),
                ("a".into(), 4, true, b"old".to_vec()),
                ("b".into(), 6, true, b"UP".to_vec()),
                ("c".into(), 3, true, b"x-but-snapshot".to_vec()),
                ("d".into(), 8, false, vec![]),
            ]
        );
        // Bottommost and no snapshot: the removal leaves nothing behind.
        assert_eq!(
            run_filtered(entries, &[], true, Some(&f)),
            vec![("b".into(), 6, true, b"UP".to_vec())]
        );
    }

    /// Runs a compaction with range tombstones; returns, per output, its
    /// user-key bounds, kept point entries (key, seq) and tombstones.
    #[allow(clippy::type_complexity, reason = "a test's plain tuple report")]
    fn run_with_range_dels(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        range_dels: Vec<RangeTombstone>,
        snapshots: &[u64],
        bottommost: bool,
        target_file_size: u64,
    ) -> Vec<((String, String), Vec<(String, u64)>, Vec<RangeTombstone>)> {
        let dir = tempfile::tempdir().unwrap();
        let task = CompactionTask {
            level: 1,
            inputs: [vec![], vec![]],
            bottommost,
        };
        let spec = OutputSpec {
            fs: &PosixFs,
            dir: dir.path(),
            table_options: TableOptions {
                block_size: 64,
                ..TableOptions::default()
            },
            target_file_size,
            filter: None,
            merge_operator: None,
        };
        let mut n = 10;
        let out = run_compaction(
            &task,
            Box::new(VecIterator::new(entries)),
            range_dels,
            snapshots,
            &spec,
            &mut || {
                n += 1;
                n
            },
        )
        .unwrap();
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        out.files
            .iter()
            .map(|f| {
                let path = filename::path(dir.path(), FileKind::Table, f.number);
                let file = PosixFs.open_random_access(&path).unwrap();
                let table = crate::sst::Table::open(
                    file,
                    path.display().to_string(),
                    TableOptions::default(),
                )
                .unwrap();
                let dels = table
                    .range_dels()
                    .map(|r| r.tombstones.clone())
                    .unwrap_or_default();
                let mut it = Arc::clone(&table).iter();
                let mut kept = Vec::new();
                it.seek_to_first();
                while it.valid() {
                    let p = parse_internal_key(it.key()).unwrap();
                    kept.push((s(p.user_key), p.sequence));
                    it.next();
                }
                let bounds = (
                    s(crate::key::user_key(&f.smallest)),
                    s(crate::key::user_key(&f.largest)),
                );
                (bounds, kept, dels)
            })
            .collect()
    }

    fn rt(b: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            begin: b.into(),
            end: e.into(),
            seq,
        }
    }

    #[test]
    fn covered_entries_drop_unless_a_snapshot_separates_them() {
        let entries = vec![
            (ik("a", 3, ValueType::Value), b"a3".to_vec()),
            (ik("b", 12, ValueType::Value), b"b12".to_vec()),
            (ik("b", 4, ValueType::Value), b"b4".to_vec()),
            (ik("c", 2, ValueType::Deletion), vec![]),
            (ik("d", 1, ValueType::Value), b"d1".to_vec()),
        ];
        let dels = vec![rt("b", "d", 10)];
        // No snapshot: b@4 and c@2 are covered; b@12 is newer. Not
        // bottommost: the tombstone stays for older data below.
        let out = run_with_range_dels(entries.clone(), dels.clone(), &[], false, 1 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].1,
            vec![("a".into(), 3), ("b".into(), 12), ("d".into(), 1)]
        );
        assert_eq!(out[0].2, dels);
        // A snapshot at 5 sees b@4 (the tombstone is newer): kept. (c@2,
        // a point tombstone at the bottom with no older snapshot, goes by
        // the point rule.)
        let out = run_with_range_dels(entries.clone(), dels.clone(), &[5], true, 1 << 20);
        assert_eq!(
            out[0].1,
            vec![
                ("a".into(), 3),
                ("b".into(), 12),
                ("b".into(), 4),
                ("d".into(), 1)
            ]
        );
        assert_eq!(out[0].2, dels, "the snapshot still needs the tombstone");
        // Bottommost, no snapshot: the tombstone goes with what it covered.
        let out = run_with_range_dels(entries, dels, &[], true, 1 << 20);
        assert_eq!(
            out[0].1,
            vec![("a".into(), 3), ("b".into(), 12), ("d".into(), 1)]
        );
        assert!(out[0].2.is_empty());
    }

    #[test]
    fn tombstones_are_clipped_to_output_spans_that_never_share_a_user_key() {
        // Many keys, small outputs; one tombstone newer than all of them
        // but a snapshot keeps the keys, so they and it span every output.
        let mut entries = Vec::new();
        for i in 0..200 {
            entries.push((ik(&format!("k{i:03}"), 5, ValueType::Value), vec![b'x'; 40]));
        }
        let dels = vec![rt("a", "z", 50), rt("k050", "k060", 60)];
        let out = run_with_range_dels(entries, dels, &[10], false, 2048);
        assert!(out.len() >= 3, "{} outputs", out.len());
        for w in out.windows(2) {
            assert!(
                w[0].0 .1 < w[1].0 .0,
                "{:?} and {:?} overlap",
                w[0].0,
                w[1].0
            );
        }
        assert_eq!(out[0].0 .0, "a");
        assert_eq!(out.last().unwrap().0 .1, "z");
        // The pieces of each tombstone tile its range exactly.
        for (begin, end, seq) in [("a", "z", 50), ("k050", "k060", 60)] {
            let mut pieces: Vec<RangeTombstone> = out
                .iter()
                .flat_map(|o| o.2.iter().filter(|t| t.seq == seq).cloned())
                .collect();
            pieces.sort_by(|a, b| a.begin.cmp(&b.begin));
            assert_eq!(pieces.first().unwrap().begin, begin.as_bytes());
            assert_eq!(pieces.last().unwrap().end, end.as_bytes());
            assert!(
                pieces.windows(2).all(|w| w[0].end == w[1].begin),
                "{pieces:?}"
            );
        }
        // Each output's tombstones stay inside its claimed bounds.
        for ((lo, hi), _, ts) in &out {
            for t in ts {
                assert!(t.begin.as_slice() >= lo.as_bytes(), "{t:?} below {lo}");
                let last = crate::range_del::tombstone_end_key(&t.end);
                assert!(
                    crate::key::user_key(&last) <= hi.as_bytes(),
                    "{t:?} past {hi}"
                );
            }
        }
    }

    #[test]
    fn tombstones_alone_still_make_an_output() {
        let out = run_with_range_dels(vec![], vec![rt("m", "p", 9)], &[], false, 1 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, ("m".into(), "p".into()));
        assert!(out[0].1.is_empty());
        let out = run_with_range_dels(vec![], vec![rt("m", "p", 9)], &[], true, 1 << 20);
        assert!(out.is_empty(), "bottommost with nothing to cover: dropped");
    }
}
