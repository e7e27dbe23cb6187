//! Which files to compact next — a pure function of a version, the files
//! already being compacted, and the configuration.
//!
//! Scores (as in LevelDB/RocksDB): L0 = file count / trigger; level n ≥ 1 =
//! bytes / target, target(n) = `max_bytes_for_level_base ×
//! multiplier^(n−1)`. The highest score ≥ 1 wins. L0 compacts all its files
//! (they overlap) with the L1 files they overlap; level n ≥ 1 compacts one
//! file (the first, in key order, after the level's last compacted key) with
//! the level n+1 files it overlaps.

use std::collections::HashSet;
use std::sync::Arc;

use crate::key::user_key;
use crate::version::{FileMetaData, Version, NUM_LEVELS};

/// The knobs the picker reads (from `Options`).
#[derive(Debug, Clone)]
pub(crate) struct CompactionConfig {
    pub level0_file_num_compaction_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
}

impl CompactionConfig {
    /// Target size of level `level` ≥ 1.
    pub fn level_target(&self, level: usize) -> u64 {
        let mut t = self.max_bytes_for_level_base as f64;
        for _ in 1..level {
            t *= self.max_bytes_for_level_multiplier;
        }
        t.min(u64::MAX as f64) as u64
    }
}

/// A compaction to run: `inputs[0]` from `level`, `inputs[1]` from `level + 1`.
#[derive(Debug, Clone)]
pub(crate) struct CompactionTask {
    pub level: usize,
    pub inputs: [Vec<Arc<FileMetaData>>; 2],
    /// No level below `level + 1` holds a key in the inputs' range, so
    /// tombstones that no snapshot needs can be dropped.
    pub bottommost: bool,
}

impl CompactionTask {
    pub fn output_level(&self) -> usize {
        self.level + 1
    }

    /// Every input file number.
    pub fn input_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.inputs.iter().flatten().map(|f| f.number)
    }

    /// A single input file with nothing to merge at the next level can be
    /// moved there by a MANIFEST edit alone.
    pub fn is_trivial_move(&self) -> bool {
        self.level > 0 && self.inputs[0].len() == 1 && self.inputs[1].is_empty()
    }
}

/// The user-key range `[smallest, largest]` covered by `files`.
fn key_range(files: &[Arc<FileMetaData>]) -> Option<(&[u8], &[u8])> {
    let mut it = files.iter();
    let first = it.next()?;
    let (mut lo, mut hi) = (user_key(&first.smallest), user_key(&first.largest));
    for f in it {
        lo = lo.min(user_key(&f.smallest));
        hi = hi.max(user_key(&f.largest));
    }
    Some((lo, hi))
}

/// Files of `level` whose user-key range intersects `[lo, hi]`.
fn overlapping(version: &Version, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMetaData>> {
    version.levels[level]
        .iter()
        .filter(|f| user_key(&f.smallest) <= hi && user_key(&f.largest) >= lo)
        .cloned()
        .collect()
}

/// Builds the task for compacting `start` files of `level` into `level + 1`;
/// `None` if any file it needs is `busy`.
pub(crate) fn task_for(
    version: &Version,
    level: usize,
    start: Vec<Arc<FileMetaData>>,
    busy: &HashSet<u64>,
) -> Option<CompactionTask> {
    let (lo, hi) = key_range(&start)?;
    let (lo, hi) = (lo.to_vec(), hi.to_vec());
    let next = overlapping(version, level + 1, &lo, &hi);
    if start.iter().chain(&next).any(|f| busy.contains(&f.number)) {
        return None;
    }
    // Bottommost is judged over everything the task rewrites: the next
    // level's inputs may reach past `start`'s range, and a tombstone there
    // must survive while an older version lives deeper (issue 12, bug 1).
    let all: Vec<Arc<FileMetaData>> = start.iter().chain(&next).cloned().collect();
    let (lo, hi) = key_range(&all)?;
    let bottommost = (level + 2..NUM_LEVELS).all(|l| overlapping(version, l, lo, hi).is_empty());
    Some(CompactionTask {
        level,
        inputs: [start, next],
        bottommost,
    })
}

/// The most urgent compaction, or `None` if every score is below 1 or the
/// files it would need are busy. `cursor[level]` is the largest user key
/// compacted last at that level (round-robin through the key space).
pub(crate) fn pick_compaction(
    version: &Version,
    cfg: &CompactionConfig,
    busy: &HashSet<u64>,
    cursor: &[Vec<u8>],
) -> Option<CompactionTask> {
    let mut scores: Vec<(f64, usize)> = Vec::new();
    let trigger = cfg.level0_file_num_compaction_trigger.max(1);
    scores.push((version.levels[0].len() as f64 / trigger as f64, 0));
    for level in 1..NUM_LEVELS - 1 {
        let bytes: u64 = version.levels[level].iter().map(|f| f.file_size).sum();
        scores.push((bytes as f64 / cfg.level_target(level).max(1) as f64, level));
    }
    scores.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (score, level) in scores {
        if score < 1.0 {
            break;
        }
        let files = &version.levels[level];
        let task = if level == 0 {
            task_for(version, 0, files.clone(), busy)
        } else {
            // Files in key order after the cursor, then wrapping around.
            let after = cursor.get(level).map(Vec::as_slice).unwrap_or(&[]);
            let pos = files
                .iter()
                .position(|f| user_key(&f.largest) > after)
                .unwrap_or(0);
            files[pos..]
                .iter()
                .chain(&files[..pos])
                .find_map(|f| task_for(version, level, vec![Arc::clone(f)], busy))
        };
        if task.is_some() {
            return task;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{append_internal_key, ValueType};

    fn file(number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMetaData> {
        let mut smallest = Vec::new();
        append_internal_key(&mut smallest, lo.as_bytes(), 100, ValueType::Value);
        let mut largest = Vec::new();
        append_internal_key(&mut largest, hi.as_bytes(), 1, ValueType::Value);
        Arc::new(FileMetaData {
            number,
            file_size: size,
            smallest,
            largest,
            num_entries: 1,
            global_seqno: 0,
            pinned: Default::default(),
        })
    }

    fn cfg() -> CompactionConfig {
        CompactionConfig {
            level0_file_num_compaction_trigger: 4,
            max_bytes_for_level_base: 1000,
            max_bytes_for_level_multiplier: 10.0,
        }
    }

    fn numbers(files: &[Arc<FileMetaData>]) -> Vec<u64> {
        files.iter().map(|f| f.number).collect()
    }

    #[test]
    fn nothing_to_do_below_the_triggers() {
        let mut v = Version::default();
        v.levels[0] = vec![file(3, "a", "c", 10), file(2, "b", "d", 10)];
        v.levels[1] = vec![file(1, "a", "z", 900)];
        assert!(pick_compaction(&v, &cfg(), &HashSet::new(), &[]).is_none());
    }

    #[test]
    fn l0_at_trigger_takes_all_l0_and_overlapping_l1() {
        let mut v = Version::default();
        v.levels[0] = vec![
            file(9, "c", "d", 1),
            file(8, "a", "b", 1),
            file(7, "e", "f", 1),
            file(6, "b", "e", 1),
        ];
        v.levels[1] = vec![
            file(1, "a", "a", 1),
            file(2, "d", "e", 1),
            file(3, "g", "h", 1),
        ];
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &[]).unwrap();
        assert_eq!(t.level, 0);
        assert_eq!(numbers(&t.inputs[0]), vec![9, 8, 7, 6]);
        assert_eq!(numbers(&t.inputs[1]), vec![1, 2]);
        assert!(t.bottommost);
        // Busy inputs block the task.
        let busy: HashSet<u64> = [2].into_iter().collect();
        assert!(pick_compaction(&v, &cfg(), &busy, &[]).is_none());
    }

    #[test]
    fn oversized_level_compacts_one_file_round_robin() {
        let mut v = Version::default();
        v.levels[1] = vec![
            file(1, "a", "b", 600),
            file(2, "c", "d", 600),
            file(3, "e", "f", 600),
        ];
        v.levels[2] = vec![file(4, "c", "c", 10), file(5, "x", "y", 10)];
        v.levels[3] = vec![file(6, "e", "e", 10)];
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &[]).unwrap();
        assert_eq!(
            (t.level, numbers(&t.inputs[0]), numbers(&t.inputs[1])),
            (1, vec![1], vec![])
        );
        assert!(t.is_trivial_move());
        let cursor = vec![Vec::new(), b"b".to_vec()];
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &cursor).unwrap();
        assert_eq!(
            (numbers(&t.inputs[0]), numbers(&t.inputs[1])),
            (vec![2], vec![4])
        );
        assert!(t.bottommost);
        let cursor = vec![Vec::new(), b"d".to_vec()];
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &cursor).unwrap();
        assert_eq!(numbers(&t.inputs[0]), vec![3]);
        assert!(!t.bottommost, "L3 holds key e");
        // Wraps around after the last file.
        let cursor = vec![Vec::new(), b"z".to_vec()];
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &cursor).unwrap();
        assert_eq!(numbers(&t.inputs[0]), vec![1]);
    }

    /// Issue 12, bug 1: a deleted key came back. `bottommost` was judged
    /// from the upper input's range only; the L2 input reaching past it held
    /// the tombstone of `k5`, which was dropped while `k5`'s value lived in L3.
    #[test]
    fn bottommost_covers_the_next_level_inputs_too() {
        let mut v = Version::default();
        v.levels[1] = vec![file(1, "a", "a", 10)];
        v.levels[2] = vec![file(2, "a", "k5", 10)];
        v.levels[3] = vec![file(3, "k5", "k5", 10)];
        let t = task_for(&v, 1, vec![Arc::clone(&v.levels[1][0])], &HashSet::new()).unwrap();
        assert_eq!(numbers(&t.inputs[1]), vec![2]);
        assert!(!t.bottommost, "L3 holds k5, inside the L2 input's range");
        v.levels[3].clear();
        let t = task_for(&v, 1, vec![Arc::clone(&v.levels[1][0])], &HashSet::new()).unwrap();
        assert!(t.bottommost);
    }

    #[test]
    fn highest_score_wins() {
        let mut v = Version::default();
        v.levels[0] = vec![file(10, "a", "b", 1); 4]; // score 1
        v.levels[1] = vec![file(1, "m", "n", 5000)]; // score 5
        let t = pick_compaction(&v, &cfg(), &HashSet::new(), &[]).unwrap();
        assert_eq!(t.level, 1);
        assert_eq!(cfg().level_target(3), 100_000);
    }
}
