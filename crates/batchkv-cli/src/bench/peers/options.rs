//! RocksDB-family options: the bench's settings as RocksDB/Speedb
//! `key=value` options (DB, column family, block-based table), rendered as an
//! options string (RocksDB) or an OPTIONS file (Speedb), plus a reader for
//! the OPTIONS file the DB writes back.

use std::collections::HashMap;

use super::super::engine::EngineConfig;
use super::super::BenchArgs;

/// Which member of the RocksDB family: they differ in the options they know.
// A binary links RocksDB or Speedb, not both: one variant goes unbuilt.
#[cfg_attr(
    not(all(feature = "peer-rocksdb", feature = "peer-speedb")),
    allow(dead_code)
)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flavor {
    /// RocksDB 11.8 (rust-rocksdb 0.25).
    RocksDb,
    /// Speedb 2.7 (RocksDB 8.1 based; speedb crate 0.0.5).
    Speedb,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::RocksDb => "RocksDB",
            Flavor::Speedb => "Speedb",
        }
    }
}

/// The bench's settings in RocksDB option names.
#[derive(Debug, Default)]
pub struct RocksFamily {
    pub db: Vec<(String, String)>,
    pub cf: Vec<(String, String)>,
    pub table: Vec<(String, String)>,
    /// Printed: `--flag=value -> option` and what could not be set.
    pub mapping: Vec<String>,
    /// `(key, substring)` the DB's OPTIONS file must show for the setting
    /// to have taken.
    pub checks: Vec<(String, String)>,
    /// Iterators need `total_order_seek` (hash memtables).
    pub total_order_seek: bool,
}

impl RocksFamily {
    fn set(&mut self, section: Section, flag: &str, key: &str, value: impl ToString) {
        let value = value.to_string();
        self.mapping.push(format!("{flag} -> {key}={value}"));
        let list = match section {
            Section::Db => &mut self.db,
            Section::Cf => &mut self.cf,
            Section::Table => &mut self.table,
        };
        list.push((key.to_string(), value));
    }

    fn cannot(&mut self, flag: &str, why: &str) {
        self.mapping.push(format!("{flag} -> NOT SET: {why}"));
    }

    /// `k=v;…;block_based_table_factory={k=v;…}` for
    /// `Options::get_options_from_string`.
    #[cfg(any(test, feature = "peer-rocksdb"))]
    pub fn options_string(&self) -> String {
        let mut parts: Vec<String> = self
            .db
            .iter()
            .chain(&self.cf)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !self.table.is_empty() {
            let t: Vec<String> = self.table.iter().map(|(k, v)| format!("{k}={v}")).collect();
            parts.push(format!("block_based_table_factory={{{}}}", t.join(";")));
        }
        parts.join(";")
    }

    /// An OPTIONS file (RocksDB's INI format) that `Options::load_latest`
    /// reads: DB options, then the default column family and its table.
    #[cfg(any(test, feature = "peer-speedb"))]
    pub fn options_file(&self, rocksdb_version: &str) -> String {
        let mut s = format!(
            "# Written by batchkv bench for Options::load_latest.\n[Version]\n  \
             rocksdb_version={rocksdb_version}\n  options_file_version=1.1\n\n[DBOptions]\n"
        );
        let section = |s: &mut String, kv: &[(String, String)]| {
            for (k, v) in kv {
                s.push_str(&format!("  {k}={v}\n"));
            }
        };
        section(&mut s, &self.db);
        s.push_str("\n[CFOptions \"default\"]\n");
        section(&mut s, &self.cf);
        s.push_str("\n[TableOptions/BlockBasedTable \"default\"]\n");
        section(&mut s, &self.table);
        s
    }
}

#[derive(Clone, Copy)]
enum Section {
    Db,
    Cf,
    Table,
}

/// Maps the bench's flags to `flavor`'s options.
pub fn map(args: &BenchArgs, cfg: &EngineConfig, flavor: Flavor) -> RocksFamily {
    use Section::*;
    let mut o = RocksFamily::default();
    let who = flavor.name();
    o.set(Db, "(always)", "create_if_missing", true);
    o.set(
        Db,
        &format!("--max_background_jobs={}", cfg.max_background_jobs),
        "max_background_jobs",
        cfg.max_background_jobs,
    );
    let open_files = i64::try_from(cfg.max_open_files).unwrap_or(-1);
    o.set(
        Db,
        &format!("--open_files={open_files}"),
        "max_open_files",
        open_files,
    );
    let wbs = format!("--write_buffer_size={}", cfg.write_buffer_size);
    o.set(Cf, &wbs, "write_buffer_size", cfg.write_buffer_size);
    let mwbn = format!("--max_write_buffer_number={}", cfg.max_write_buffer_number);
    o.set(
        Cf,
        &mwbn,
        "max_write_buffer_number",
        cfg.max_write_buffer_number,
    );
    o.set(
        Cf,
        &format!(
            "--level0_file_num_compaction_trigger={}",
            cfg.level0_file_num_compaction_trigger
        ),
        "level0_file_num_compaction_trigger",
        cfg.level0_file_num_compaction_trigger,
    );
    o.set(
        Cf,
        &format!(
            "--max_bytes_for_level_base={}",
            cfg.max_bytes_for_level_base
        ),
        "max_bytes_for_level_base",
        cfg.max_bytes_for_level_base,
    );
    o.set(
        Cf,
        &format!(
            "--max_bytes_for_level_multiplier={}",
            cfg.max_bytes_for_level_multiplier
        ),
        "max_bytes_for_level_multiplier",
        cfg.max_bytes_for_level_multiplier,
    );
    o.set(
        Cf,
        &format!("--target_file_size_base={}", cfg.target_file_size_base),
        "target_file_size_base",
        cfg.target_file_size_base,
    );
    o.set(
        Cf,
        &format!(
            "--disable_auto_compactions={}",
            cfg.disable_auto_compactions
        ),
        "disable_auto_compactions",
        cfg.disable_auto_compactions,
    );
    let flag = format!("--compression_type={}", cfg.compression.name());
    let kind = match cfg.compression {
        batchkv::CompressionType::None => "kNoCompression",
        batchkv::CompressionType::Lz4 => "kLZ4Compression",
        batchkv::CompressionType::Zstd => "kZSTD",
    };
    o.set(Cf, &flag, "compression", kind);
    o.checks.push(("compression".into(), kind.into()));
    if cfg.compression == batchkv::CompressionType::Zstd {
        o.set(
            Cf,
            &format!("--compression_level={}", cfg.compression_level),
            "compression_opts",
            format!("{{level={}}}", cfg.compression_level),
        );
        // The OPTIONS file writes the struct as `{…;level=N;…}`.
        o.checks.push((
            "compression_opts".into(),
            format!(";level={};", cfg.compression_level),
        ));
    }

    // Memtable representation.
    let rep = args.memtablerep.as_str();
    let kind = rep.split(':').next().unwrap_or(rep);
    let flag = format!("--memtablerep={rep}");
    match (kind, flavor) {
        ("skiplist", _) => {
            o.set(Cf, &flag, "memtable_factory", "SkipListFactory");
            o.checks
                .push(("memtable_factory".into(), "SkipList".into()));
        }
        ("vector", _) => {
            o.set(Cf, &flag, "memtable_factory", "VectorRepFactory");
            o.checks
                .push(("memtable_factory".into(), "VectorRep".into()));
            o.mapping.push(format!(
                "{flag} -> note: {who}'s vector memtable sorts a copy of itself for every \
                 read of the active memtable (bulk loads only)"
            ));
        }
        ("sorted_hash", Flavor::Speedb) => {
            o.set(Cf, &flag, "memtable_factory", "hash_spdb");
            o.checks
                .push(("memtable_factory".into(), "HashSpdb".into()));
        }
        ("sorted_hash", Flavor::RocksDb) => {
            // RocksDB's hash skip list needs a prefix extractor (without one
            // it silently falls back to the skip list); the whole key as the
            // prefix makes it a pure hash of keys, and iterators then need
            // total_order_seek.
            o.set(Cf, &flag, "memtable_factory", "HashSkipListRepFactory");
            o.set(
                Cf,
                &format!("{flag} (hash needs a prefix)"),
                "prefix_extractor",
                format!("rocksdb.FixedPrefix.{}", args.key_size),
            );
            o.checks
                .push(("memtable_factory".into(), "HashSkipList".into()));
            o.total_order_seek = true;
            // Only the skip list takes concurrent inserts; RocksDB refuses
            // to open otherwise.
            o.set(
                Db,
                &format!("{flag} (no concurrent inserts)"),
                "allow_concurrent_memtable_write",
                false,
            );
        }
        _ => o.cannot(
            &flag,
            &format!("{who} has no memtable like {rep:?}; default skip list"),
        ),
    }

    // Batched memtable lookups.
    let flag = format!("--batch_lookup={}", args.batch_lookup);
    match (flavor, args.batch_lookup.as_str()) {
        (Flavor::RocksDb, "per_key") => {
            o.set(Cf, &flag, "memtable_batch_lookup_optimization", false)
        }
        // RocksDB's batched lookup is a skip-list finger search; on the hash
        // skip list it made MultiGet ~2000x slower (460 keys/s vs 1.18 M
        // per key, 20k keys, measured), so that one gets per-key lookups.
        (Flavor::RocksDb, _) if kind == "sorted_hash" => o.set(
            Cf,
            &format!("{flag} (not on RocksDB's hash skip list: it looks keys up one by one)"),
            "memtable_batch_lookup_optimization",
            false,
        ),
        (Flavor::RocksDb, mode) => {
            o.set(Cf, &flag, "memtable_batch_lookup_optimization", true);
            o.checks.push(("memtable_batch_lookup_optimization".into(), "true".into()));
            if mode != "finger" {
                o.mapping.push(format!(
                    "{flag} -> RocksDB has only finger search (no BFS / auto choice)"
                ));
            }
        }
        (Flavor::Speedb, "per_key") => {}
        (Flavor::Speedb, _) => o.cannot(
            &flag,
            "Speedb 2.7 has no batched memtable lookup; MultiGet looks keys up one by one in the memtable",
        ),
    }
    if args.paranoid_memory_checks {
        match flavor {
            Flavor::RocksDb => o.set(
                Cf,
                "--paranoid_memory_checks=true",
                "paranoid_memory_checks",
                true,
            ),
            Flavor::Speedb => o.cannot(
                "--paranoid_memory_checks=true",
                "Speedb 2.7 has no memtable checks",
            ),
        }
    }

    // Block-based table.
    o.set(
        Table,
        &format!("--block_size={}", cfg.block_size),
        "block_size",
        cfg.block_size,
    );
    o.set(
        Table,
        &format!("--block_restart_interval={}", cfg.block_restart_interval),
        "block_restart_interval",
        cfg.block_restart_interval,
    );
    if cfg.bloom_bits > 0 {
        o.set(
            Table,
            &format!("--bloom_bits={}", cfg.bloom_bits),
            "filter_policy",
            format!("bloomfilter:{}:false", cfg.bloom_bits),
        );
    }
    o.set(
        Table,
        "(index blocks stored raw, as batchkv)",
        "enable_index_compression",
        false,
    );
    let flag = format!("--cache_size={}", args.cache_size);
    match flavor {
        // The Speedb path hands its cache to Options::load_latest instead.
        Flavor::RocksDb => o.set(Table, &flag, "block_cache", args.cache_size),
        Flavor::Speedb => o.mapping.push(format!(
            "{flag} -> LRU block cache of {} bytes",
            args.cache_size
        )),
    }
    let flag = format!(
        "--separate_key_value_in_data_block={}",
        args.separate_key_value_in_data_block
    );
    match flavor {
        Flavor::RocksDb => {
            o.set(
                Table,
                &flag,
                "separate_key_value_in_data_block",
                args.separate_key_value_in_data_block,
            );
            o.checks.push((
                "separate_key_value_in_data_block".into(),
                args.separate_key_value_in_data_block.to_string(),
            ));
        }
        Flavor::Speedb if args.separate_key_value_in_data_block => {
            o.cannot(&flag, "Speedb 2.7 has no separated data blocks")
        }
        Flavor::Speedb => {}
    }
    o
}

/// An OPTIONS file as `key -> value` (the last section wins on a clash; the
/// sections we read do not share keys), plus its `[Version]` section.
pub struct OptionsFile {
    values: HashMap<String, String>,
    pub version: Vec<(String, String)>,
}

impl OptionsFile {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// Parses RocksDB's OPTIONS INI format: `[Section]` lines and `key=value`
/// lines, `#` comments.
pub fn parse_options_file(text: &str) -> OptionsFile {
    let mut values = HashMap::new();
    let mut version = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if section == "[Version]" {
                version.push((k.trim().to_string(), v.trim().to_string()));
            } else {
                values.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    OptionsFile { values, version }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn args(extra: &[&str]) -> BenchArgs {
        let mut v = vec!["bench"];
        v.extend_from_slice(extra);
        Cli::parse_from(v).args
    }

    #[test]
    fn rocksdb_string_carries_finger_search_and_separated_blocks() {
        let a = args(&[
            "--batch_lookup=finger",
            "--separate_key_value_in_data_block",
            "--memtablerep=vector",
        ]);
        let o = map(&a, &a.engine_config().unwrap(), Flavor::RocksDb);
        let s = o.options_string();
        assert!(s.contains("memtable_batch_lookup_optimization=true"), "{s}");
        assert!(s.contains("memtable_factory=VectorRepFactory"), "{s}");
        assert!(
            s.contains("block_based_table_factory={block_size=4096;")
                && s.contains("separate_key_value_in_data_block=true}"),
            "{s}"
        );
        assert!(!o.total_order_seek);
    }

    #[test]
    fn speedb_sorted_hash_uses_hash_spdb_and_reports_what_it_lacks() {
        let a = args(&[
            "--memtablerep=sorted_hash",
            "--separate_key_value_in_data_block=1",
        ]);
        let o = map(&a, &a.engine_config().unwrap(), Flavor::Speedb);
        let ini = o.options_file("8.1.1");
        assert!(ini.contains("[CFOptions \"default\"]\n"), "{ini}");
        assert!(ini.contains("  memtable_factory=hash_spdb\n"), "{ini}");
        assert!(!ini.contains("separate_key_value"), "{ini}");
        assert!(!ini.contains("memtable_batch_lookup"), "{ini}");
        let lines = o.mapping.join("\n");
        assert!(
            lines.contains("--separate_key_value_in_data_block=true -> NOT SET"),
            "{lines}"
        );
        assert!(lines.contains("--batch_lookup=auto -> NOT SET"), "{lines}");
    }

    #[test]
    fn compression_maps_to_the_rocksdb_type_and_zstd_level() {
        for (flag, kind) in [
            ("none", "kNoCompression"),
            ("lz4", "kLZ4Compression"),
            ("zstd", "kZSTD"),
        ] {
            let a = args(&[
                &format!("--compression_type={flag}"),
                "--compression_level=7",
            ]);
            for flavor in [Flavor::RocksDb, Flavor::Speedb] {
                let o = map(&a, &a.engine_config().unwrap(), flavor);
                let cf: HashMap<_, _> = o.cf.iter().cloned().collect();
                assert_eq!(cf["compression"], kind, "{flag} on {flavor:?}");
                assert_eq!(
                    cf.get("compression_opts").map(String::as_str),
                    (flag == "zstd").then_some("{level=7}"),
                    "{flag} on {flavor:?}"
                );
                assert!(o.checks.contains(&("compression".into(), kind.into())));
                let t: HashMap<_, _> = o.table.iter().cloned().collect();
                assert_eq!(t["enable_index_compression"], "false");
            }
        }
    }

    #[test]
    fn rocksdb_hash_memtable_gets_a_whole_key_prefix() {
        let a = args(&["--memtablerep=sorted_hash", "--key_size=20"]);
        let o = map(&a, &a.engine_config().unwrap(), Flavor::RocksDb);
        assert!(o
            .options_string()
            .contains("prefix_extractor=rocksdb.FixedPrefix.20"));
        assert!(o.total_order_seek);
        // RocksDB refuses to open a hash memtable with concurrent writes.
        assert!(o
            .options_string()
            .contains("allow_concurrent_memtable_write=false"));
        // Its batched lookup is for the skip list only.
        assert!(o
            .options_string()
            .contains("memtable_batch_lookup_optimization=false"));
    }

    #[test]
    fn options_file_parser_reads_sections() {
        let f = parse_options_file(
            "# c\n[Version]\n  rocksdb_version=11.8.1\n[CFOptions \"default\"]\n  \
             memtable_factory={id=HashSpdbRepFactory;}\n[TableOptions/BlockBasedTable \"default\"]\n  block_size=4096\n",
        );
        assert_eq!(
            f.version,
            vec![("rocksdb_version".to_string(), "11.8.1".to_string())]
        );
        assert_eq!(f.get("memtable_factory"), Some("{id=HashSpdbRepFactory;}"));
        assert_eq!(f.get("block_size"), Some("4096"));
        assert_eq!(f.get("rocksdb_version"), None);
    }
}
