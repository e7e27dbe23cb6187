//! The database options and workload mix a stress run randomizes, chosen
//! from its seed.
//!
//! Each knob is one line of [`KNOBS`]: an option name and the values to
//! pick from. The choice is a RocksDB-style option string, printed with the
//! seed so a failing run can be replayed; `crashtest` recomputes it from the
//! child's seed to reopen the database the way the child did.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Option name and the values a run picks from (uniformly).
const KNOBS: &[(&str, &[&str])] = &[
    ("batch_lookup", &["per_key", "finger", "bfs", "auto"]),
    // Small buffers: flushes run constantly.
    ("write_buffer_size", &["64KB", "256KB", "1MB"]),
    ("max_write_buffer_number", &["2", "3", "4"]),
    ("paranoid_memory_checks", &["true", "false"]),
    ("memtable_huge_pages", &["true", "false"]),
    ("block_size", &["256", "1KB", "4KB"]),
    ("block_restart_interval", &["1", "4", "16"]),
    ("bloom_bits_per_key", &["0", "10"]),
    (
        "wal_recovery_mode",
        &["point_in_time", "tolerate_corrupted_tail_records"],
    ),
    // Bucket counts stay below write_buffer_size / 8 (the memtable option's rule).
    ("memtable", &["skiplist", "vector", "sorted_hash:1024:64"]),
    ("compression", &["none", "lz4", "zstd"]),
    ("separate_key_value_in_data_block", &["true", "false"]),
    ("block_cache_size", &["0", "64KB", "8MB"]),
    // Small levels: compactions run constantly too.
    ("level0_file_num_compaction_trigger", &["2", "4"]),
    ("max_bytes_for_level_base", &["256KB", "1MB"]),
    ("target_file_size_base", &["64KB", "256KB"]),
    // -1 pins every table's reader in its file metadata; 4 closes tables
    // that reads still hold.
    ("max_open_files", &["-1", "4", "1000"]),
    // The skip list's point index (ignored by the other memtables).
    ("memtable_point_index", &["true", "false"]),
];

/// The option string for a run with `seed`.
pub fn for_seed(seed: u64) -> String {
    // A stream of its own, so adding a knob does not change the workload.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6f70_7469_6f6e_7321);
    KNOBS
        .iter()
        .map(|(name, values)| format!("{name}={}", values[rng.random_range(0..values.len())]))
        .collect::<Vec<_>>()
        .join(";")
}

/// The parts of the operation mix a run randomizes (per mille).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Writes that skip the WAL (`disable_wal`).
    pub wal_less: u32,
    /// Operations that are a `flush()` (which persists WAL-less writes).
    pub flush: u32,
    /// Operations that are a manual `compact_range` (random bounds, a
    /// quarter of them unbounded), racing background compactions.
    pub compact_range: u32,
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wal_less={}/1000 flush={}/1000 compact_range={}/1000",
            self.wal_less, self.flush, self.compact_range
        )
    }
}

/// The workload mix for a run with `seed`.
pub fn workload_for_seed(seed: u64) -> Workload {
    // A stream of its own, like the options'.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x776f_726b_6c6f_6164);
    let mut pick = |values: &[u32]| values[rng.random_range(0..values.len())];
    Workload {
        wal_less: pick(&[0, 100, 500]),
        flush: pick(&[1, 5]),
        compact_range: pick(&[0, 1, 3]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_parses_and_a_seed_replays() {
        for seed in 0..200 {
            let s = for_seed(seed);
            s.parse::<batchkv::Options>()
                .unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(s, for_seed(seed));
        }
        assert_ne!(for_seed(1), for_seed(2));
    }
}
