//! Named database properties, RocksDB style (`Db::property("batchkv.stats")`,
//! `Db::property_int("batchkv.num-files-at-level0")`, or RocksDB's names:
//! `Db::property_int("rocksdb.estimate-num-keys")`).
//!
//! | name | value |
//! |---|---|
//! | `batchkv.num-files-at-level<N>` | SST files at level N |
//! | `batchkv.total-sst-files-size` | bytes of all live SST files |
//! | `batchkv.num-immutable-mem-table` | memtables frozen, waiting for flush |
//! | `batchkv.cur-size-all-mem-tables` | bytes of the active and frozen memtables |
//! | `batchkv.estimate-num-keys` | entries in memtables and SSTs (overwrites and tombstones counted) |
//! | `batchkv.estimate-table-readers-mem` | bytes the open SST readers hold outside the block cache: index blocks, filters, index fences |
//! | `batchkv.num-snapshots` | live snapshots |
//! | `batchkv.last-sequence` | highest sequence number visible to reads |
//! | `batchkv.background-errors` | 1 if a background error stopped writes, else 0 |
//! | `batchkv.is-write-stopped` | 1 while a writer waits for a flush or an L0 compaction to make room, else 0 |
//! | `batchkv.num-flushes`, `batchkv.num-compactions` | completed since open |
//! | `batchkv.stats` | a multi-line summary: per level files and bytes, memtables, counters, latency percentiles (with `Options::statistics`) |
//! | `batchkv.levelstats` | the per-level table of `batchkv.stats` |
//!
//! RocksDB's names are accepted as aliases where batchkv has the same
//! figure (`ROCKSDB_ALIASES`); other `rocksdb.` names return `None`:
//!
//! | RocksDB name | answered by | note |
//! |---|---|---|
//! | `rocksdb.num-files-at-level<N>` | `batchkv.num-files-at-level<N>` | |
//! | `rocksdb.total-sst-files-size` | `batchkv.total-sst-files-size` | the current version's files; RocksDB's also counts files only an older version (an open iterator) still holds |
//! | `rocksdb.live-sst-files-size` | `batchkv.total-sst-files-size` | |
//! | `rocksdb.num-immutable-mem-table` | `batchkv.num-immutable-mem-table` | |
//! | `rocksdb.cur-size-all-mem-tables` | `batchkv.cur-size-all-mem-tables` | |
//! | `rocksdb.estimate-num-keys` | `batchkv.estimate-num-keys` | an estimate in both: overwrites and tombstones are counted |
//! | `rocksdb.estimate-table-readers-mem` | `batchkv.estimate-table-readers-mem` | |
//! | `rocksdb.num-snapshots` | `batchkv.num-snapshots` | |
//! | `rocksdb.background-errors` | `batchkv.background-errors` | 0 or 1 (RocksDB counts them) |
//! | `rocksdb.is-write-stopped` | `batchkv.is-write-stopped` | |
//! | `rocksdb.stats` | `batchkv.stats` | batchkv's text, not RocksDB's layout |
//! | `rocksdb.levelstats` | `batchkv.levelstats` | batchkv's text, not RocksDB's layout |
//!
//! `property`/`property_int` describe the default column family;
//! `property_cf`/`property_int_cf` another one (file, memtable, flush and
//! key counts are the family's; snapshots, sequence, errors, stalls,
//! compactions and table readers the database's).

use super::{lock, Db, DbStats};
use std::fmt::Write as _;

const PREFIX: &str = "batchkv.";

/// RocksDB property names (without `rocksdb.`) answered by the batchkv
/// property of the second name, where the figure is the same (the table in
/// this module's documentation). `num-files-at-level<N>` is handled apart.
pub(crate) const ROCKSDB_ALIASES: &[(&str, &str)] = &[
    ("total-sst-files-size", "total-sst-files-size"),
    ("live-sst-files-size", "total-sst-files-size"),
    ("num-immutable-mem-table", "num-immutable-mem-table"),
    ("cur-size-all-mem-tables", "cur-size-all-mem-tables"),
    ("estimate-num-keys", "estimate-num-keys"),
    ("estimate-table-readers-mem", "estimate-table-readers-mem"),
    ("num-snapshots", "num-snapshots"),
    ("background-errors", "background-errors"),
    ("is-write-stopped", "is-write-stopped"),
    ("stats", "stats"),
    ("levelstats", "levelstats"),
];

/// The batchkv property (without its prefix) that `name` asks for: a
/// `batchkv.` name, or a RocksDB name with an alias; `None` otherwise.
fn property_key(name: &str) -> Option<&str> {
    if let Some(prop) = name.strip_prefix(PREFIX) {
        return Some(prop);
    }
    let prop = name.strip_prefix("rocksdb.")?;
    if prop.starts_with("num-files-at-level") {
        return Some(prop);
    }
    ROCKSDB_ALIASES
        .iter()
        .find(|(rocks, _)| *rocks == prop)
        .map(|(_, ours)| *ours)
}

impl Db {
    /// The value of a named property (table in `db/properties.rs`, names as
    /// in RocksDB with the `batchkv.` prefix; RocksDB's own `rocksdb.` names
    /// where batchkv has the same figure, e.g. `rocksdb.estimate-num-keys`),
    /// or `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<String> {
        self.property_in(&self.default_cf(), name)
    }

    /// [`Db::property`] of column family `cf` (`None` once it is dropped).
    pub fn property_cf(&self, cf: &super::ColumnFamily, name: &str) -> Option<String> {
        cf.live().ok()?;
        self.property_in(cf, name)
    }

    /// [`Db::property_int`] of column family `cf` (`None` once it is dropped).
    pub fn property_int_cf(&self, cf: &super::ColumnFamily, name: &str) -> Option<u64> {
        cf.live().ok()?;
        self.property_int_in(cf, name)
    }

    fn property_in(&self, cf: &super::ColumnFamily, name: &str) -> Option<String> {
        let prop = property_key(name)?;
        if let Some(n) = self.property_int_in(cf, name) {
            return Some(n.to_string());
        }
        let stats = self.stats_cf(cf).ok()?;
        match prop {
            "levelstats" => Some(level_table(&stats)),
            "stats" => {
                let mut s = String::new();
                if cf.id() == 0 {
                    let _ = writeln!(s, "** batchkv stats **");
                } else {
                    let _ = writeln!(s, "** batchkv stats: column family {} **", cf.name());
                }
                s.push_str(&level_table(&stats));
                let _ =
                    writeln!(
                    s,
                    "memtable: {} ({}), {} entries in the active one, {} frozen, {} bytes in all",
                    stats.memtable_kind,
                    if stats.immutable_memtables > 0 { "flush pending" } else { "idle" },
                    stats.memtable_entries,
                    stats.immutable_memtables,
                    stats.memtable_bytes
                );
                let _ = writeln!(
                    s,
                    "flushes: {}, compactions: {}, last sequence: {}, snapshots: {}, background error: {}",
                    stats.flushes,
                    stats.compactions,
                    stats.last_sequence,
                    self.core().snapshots.sequences().len(),
                    lock(&self.core().state)
                        .bg_error
                        .as_ref()
                        .map_or("none".to_string(), |e| e.to_string())
                );
                if self.core().counters.latency.enabled() {
                    let st = self.statistics();
                    let _ = writeln!(s, "latency (µs):");
                    for (name, l) in [
                        ("get", st.get_latency),
                        ("multi_get", st.multi_get_latency),
                        ("multi_get/key", st.multi_get_per_key_latency),
                        ("write", st.write_latency),
                    ] {
                        let _ = writeln!(s, "  {name:<14} {l}");
                    }
                }
                Some(s)
            }
            _ => None,
        }
    }

    /// The value of a numeric property, or `None` for an unknown or
    /// non-numeric name.
    pub fn property_int(&self, name: &str) -> Option<u64> {
        self.property_int_in(&self.default_cf(), name)
    }

    fn property_int_in(&self, cf: &super::ColumnFamily, name: &str) -> Option<u64> {
        let prop = property_key(name)?;
        let core = self.core();
        if let Some(level) = prop.strip_prefix("num-files-at-level") {
            let level: usize = level.parse().ok()?;
            let st = lock(&core.state);
            return st
                .versions
                .current_cf(cf.id())?
                .levels
                .get(level)
                .map(|f| f.len() as u64);
        }
        let stats = || self.stats_cf(cf).unwrap_or_else(|_| self.stats());
        Some(match prop {
            "total-sst-files-size" => stats().sst_bytes_per_level.iter().sum(),
            "num-immutable-mem-table" => stats().immutable_memtables as u64,
            "cur-size-all-mem-tables" => stats().memtable_bytes as u64,
            "estimate-num-keys" => {
                let st = lock(&core.state);
                let tables: u64 = st
                    .versions
                    .current_cf(cf.id())?
                    .levels
                    .iter()
                    .flatten()
                    .map(|f| f.num_entries)
                    .sum();
                let d = st.cfs.get(&cf.id())?;
                let mems: u64 =
                    d.mem.num_entries() + d.imms.iter().map(|i| i.mem.num_entries()).sum::<u64>();
                tables + mems
            }
            "estimate-table-readers-mem" => core.tables.readers_memory() as u64,
            "num-snapshots" => core.snapshots.sequences().len() as u64,
            "last-sequence" => core.last_visible(),
            "background-errors" => u64::from(lock(&core.state).bg_error.is_some()),
            "is-write-stopped" => u64::from(
                core.counters
                    .writers_stopped
                    .load(std::sync::atomic::Ordering::Relaxed)
                    > 0,
            ),
            "num-flushes" => stats().flushes,
            "num-compactions" => stats().compactions,
            _ => return None,
        })
    }
}

fn level_table(stats: &DbStats) -> String {
    let mut s = String::from("level  files  bytes\n");
    for (level, (files, bytes)) in stats
        .files_per_level
        .iter()
        .zip(&stats.sst_bytes_per_level)
        .enumerate()
    {
        let _ = writeln!(s, "L{level:<5} {files:>5}  {bytes}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_names_map_to_batchkv_names_and_others_to_none() {
        assert_eq!(property_key("batchkv.stats"), Some("stats"));
        assert_eq!(property_key("rocksdb.stats"), Some("stats"));
        assert_eq!(
            property_key("rocksdb.live-sst-files-size"),
            Some("total-sst-files-size")
        );
        assert_eq!(
            property_key("rocksdb.num-files-at-level3"),
            Some("num-files-at-level3")
        );
        // batchkv-only figures have no RocksDB alias...
        assert_eq!(property_key("rocksdb.last-sequence"), None);
        assert_eq!(property_key("rocksdb.num-flushes"), None);
        // ...and RocksDB figures batchkv lacks stay unknown.
        assert_eq!(property_key("rocksdb.num-running-compactions"), None);
        assert_eq!(property_key("leveldb.stats"), None);
        for (rocks, ours) in ROCKSDB_ALIASES {
            assert_eq!(property_key(&format!("rocksdb.{rocks}")), Some(*ours));
        }
    }
}
