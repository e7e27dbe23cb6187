//! Option strings, defaults and validation.

use super::*;

#[test]
fn an_option_string_applies_on_top_of_a_base() {
    let mut o = Options {
        block_cache_size: 1 << 30,
        ..Options::default()
    };
    o.apply_option_string("write_buffer_size=1MB; bloom_bits_per_key=5")
        .unwrap();
    assert_eq!(o.block_cache_size, 1 << 30);
    assert_eq!(o.write_buffer_size, 1 << 20);
    assert_eq!(o.bloom_bits_per_key, 5);
    // Invalid values are refused by name.
    let err = o.apply_option_string("max_open_files=0").unwrap_err();
    assert!(err.to_string().contains("max_open_files"), "{err}");
}

#[test]
fn option_string_sets_sizes_with_suffixes() {
    let o: Options = "write_buffer_size=64MB;max_write_buffer_number=4;"
        .parse()
        .unwrap();
    assert_eq!(o.write_buffer_size, 64 << 20);
    assert_eq!(o.max_write_buffer_number, 4);
    let o: Options = " block_size = 16k ; paranoid_memory_checks=true"
        .parse()
        .unwrap();
    assert_eq!(o.block_size, 16 << 10);
    assert!(o.paranoid_memory_checks);
}

#[test]
fn unknown_or_malformed_options_name_the_option() {
    let err = "write_bufer_size=1"
        .parse::<Options>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("write_bufer_size"), "{err}");
    let err = "write_buffer_size=lots"
        .parse::<Options>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("write_buffer_size"), "{err}");
    let err = "max_write_buffer_number=1"
        .parse::<Options>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_write_buffer_number"), "{err}");
    let err = "batch_lookup=zigzag"
        .parse::<Options>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("batch_lookup"), "{err}");
    assert!("noequals".parse::<Options>().is_err());
}

#[cfg(feature = "zstd")]
#[test]
fn table_options_parse_and_validate() {
    let o: Options = "compression=zstd;compression_level=7;separate_key_value_in_data_block=1;\
                      block_cache_size=8MB;max_open_files=-1;verify_checksums=false"
        .parse()
        .unwrap();
    assert_eq!(o.compression, CompressionType::Zstd);
    assert_eq!(o.compression_level, 7);
    assert!(o.separate_key_value_in_data_block);
    assert_eq!(o.block_cache_size, 8 << 20);
    assert_eq!(o.max_open_files, usize::MAX);
    assert!(!o.verify_checksums);
    let d = Options::default();
    assert_eq!(
        (d.compression, d.block_cache_size, d.max_open_files),
        (CompressionType::Lz4, 32 << 20, 1000)
    );
    for (s, name) in [
        ("compression=snappy", "compression"),
        ("compression=zstd;compression_level=99", "compression_level"),
        ("compression_level=x", "compression_level"),
        ("max_open_files=0", "max_open_files"),
        (
            "separate_key_value_in_data_block=maybe",
            "separate_key_value_in_data_block",
        ),
    ] {
        let err = s.parse::<Options>().unwrap_err().to_string();
        assert!(err.contains(name), "{s}: {err}");
    }
    let r = ReadOptions::default();
    assert!(r.fill_cache && r.verify_checksums);
}

#[test]
fn memtable_specs_parse_and_bad_ones_name_the_option() {
    let o: Options = "memtable=vector".parse().unwrap();
    assert_eq!(o.memtable, MemTableKind::Vector);
    let o: Options = "memtable=sorted_hash".parse().unwrap();
    assert_eq!(
        o.memtable,
        MemTableKind::SortedHash {
            buckets: 1_000_000,
            vector_limit: 10_000
        }
    );
    let o: Options = "memtable=sorted_hash:400000".parse().unwrap();
    assert_eq!(
        o.memtable,
        MemTableKind::SortedHash {
            buckets: 400_000,
            vector_limit: 10_000
        }
    );
    let o: Options = "memtable=sorted_hash:1000:50;hash_pipeline_window=8"
        .parse()
        .unwrap();
    assert_eq!(o.memtable.to_string(), "sorted_hash:1000:50");
    assert_eq!(o.hash_pipeline_window, 8);
    assert_eq!(
        "memtable=skiplist".parse::<Options>().unwrap().memtable,
        MemTableKind::SkipList
    );
    for bad in [
        "memtable=hash",
        "memtable=sorted_hash:",
        "memtable=sorted_hash:0",
        "memtable=sorted_hash:10:x",
        "memtable=sorted_hash:10:10:10",
        "memtable=vector:5",
        "memtable=sorted_hash:1000000;write_buffer_size=4MB",
    ] {
        let err = bad.parse::<Options>().unwrap_err().to_string();
        assert!(err.contains("memtable"), "{bad}: {err}");
    }
    let err = "hash_pipeline_window=0"
        .parse::<Options>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("hash_pipeline_window"), "{err}");
}

/// The option string of the defaults, pinned: names, order and printed
/// values are stored in `OPTIONS` files and column-family MANIFEST
/// records, which older and newer binaries must read alike.
#[test]
fn the_default_option_string_is_pinned() {
    assert_eq!(
        Options::default().to_option_string(),
        "create_if_missing=true;error_if_exists=false;write_buffer_size=67108864;\
         max_write_buffer_number=2;wal_recovery_mode=tolerate_corrupted_tail_records;\
         paranoid_memory_checks=false;memtable_huge_pages=true;batch_lookup=auto;\
         memtable=skiplist;memtable_point_index=false;hash_pipeline_window=24;block_size=4096;\
         block_restart_interval=16;bloom_bits_per_key=10;max_background_jobs=2;\
         level0_file_num_compaction_trigger=4;level0_slowdown_writes_trigger=20;\
         level0_stop_writes_trigger=36;max_bytes_for_level_base=268435456;\
         max_bytes_for_level_multiplier=10;target_file_size_base=67108864;\
         disable_auto_compactions=false;compression=lz4;compression_level=3;\
         separate_key_value_in_data_block=false;block_cache_size=33554432;\
         max_open_files=1000;verify_checksums=true;statistics=true"
    );
}

/// Options with every string-form value changed from its default.
fn all_changed() -> Options {
    "create_if_missing=false;error_if_exists=true;write_buffer_size=8MB;\
     max_write_buffer_number=5;wal_recovery_mode=point-in-time;\
     paranoid_memory_checks=true;memtable_huge_pages=false;batch_lookup=per_key;\
     memtable=sorted_hash:1000:50;memtable_point_index=true;hash_pipeline_window=8;block_size=1k;\
     block_restart_interval=4;bloom_bits=7;max_background_jobs=3;\
     level0_file_num_compaction_trigger=2;level0_slowdown_writes_trigger=30;\
     level0_stop_writes_trigger=40;max_bytes_for_level_base=1G;\
     max_bytes_for_level_multiplier=2.5;target_file_size_base=2M;\
     disable_auto_compactions=true;compression_type=none;compression_level=1;\
     separate_key_value_in_data_block=true;cache_size=0;max_open_files=-1;\
     verify_checksums=false;statistics=false"
        .parse()
        .unwrap()
}

#[test]
fn every_option_prints_and_parses_back() {
    let changed = all_changed();
    let default = Options::default();
    // Each pair differs from the default's: the string above (aliases
    // included) reached every option.
    for ((name, a), (_, b)) in changed
        .to_option_pairs()
        .into_iter()
        .zip(default.to_option_pairs())
    {
        assert_ne!(a, b, "{name} still has its default");
    }
    let back: Options = changed.to_option_string().parse().unwrap();
    assert_eq!(back.to_option_string(), changed.to_option_string());
    // Each option alone, by its printed pair, through `set`.
    for (name, value) in changed.to_option_pairs() {
        let mut o = Options::default();
        o.set(name, &value).unwrap();
        let pairs = o.to_option_pairs();
        assert!(pairs.contains(&(name, value.clone())), "{name}={value}");
    }
}

#[test]
fn a_family_keeps_the_database_wide_options() {
    let db = Options::default();
    let family = all_changed().with_database_wide_from(&db);
    let database_wide: Vec<&str> = family
        .to_option_pairs()
        .into_iter()
        .zip(all_changed().to_option_pairs())
        .filter(|((_, kept), (_, own))| kept != own)
        .map(|((name, _), _)| name)
        .collect();
    assert_eq!(
        database_wide,
        [
            "create_if_missing",
            "error_if_exists",
            "wal_recovery_mode",
            "batch_lookup",
            "max_background_jobs",
            "block_cache_size",
            "max_open_files",
            "statistics",
        ]
    );
    // Objects set in code: the shared block cache is the database's, the
    // operators the family's own.
    let db = Options {
        block_cache: Some(crate::Cache::new(1 << 20)),
        ..Options::default()
    };
    let own = Options {
        merge_operator: Some(std::sync::Arc::new(crate::merge_operators::U64AddOperator)),
        ..Options::default()
    };
    let family = own.with_database_wide_from(&db);
    assert_eq!(family.block_cache.map(|c| c.capacity()), Some(1 << 20));
    assert!(family.merge_operator.is_some());
}

#[test]
fn the_table_view_carries_the_sst_options() {
    let o = all_changed();
    let t = o.table_options();
    assert_eq!(t.block_size, 1024);
    assert_eq!(t.restart_interval, 4);
    assert_eq!(t.bloom_bits_per_key, 7);
    assert!(!t.verify_checksums);
    assert_eq!(t.compression, CompressionType::None);
    assert_eq!(t.compression_level, 1);
    assert!(t.separate_key_value);
    assert_eq!(t.block_cache_size, 0);
    assert_eq!(t.max_open_files, usize::MAX);
    // Not an option: the index block's restart interval keeps its default.
    assert_eq!(
        t.index_restart_interval,
        crate::sst::TableOptions::default().index_restart_interval
    );
}

#[test]
fn the_options_file_names_objects_set_in_code() {
    let o = Options {
        merge_operator: Some(std::sync::Arc::new(crate::merge_operators::U64AddOperator)),
        block_cache: Some(crate::Cache::new(4096)),
        ..Options::default()
    };
    let text = o.options_file_text();
    let comments: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    use crate::MergeOperator as _;
    assert_eq!(
        comments[1..],
        [
            format!(
                "# merge_operator: {} (set in code)",
                crate::merge_operators::U64AddOperator.name()
            )
            .as_str(),
            "# block_cache: shared, capacity 4096 bytes (set in code)",
        ]
    );
    // The comments do not disturb reading the file back.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("OPTIONS");
    std::fs::write(&path, &text).unwrap();
    assert_eq!(
        Options::from_options_file(&path)
            .unwrap()
            .to_option_string(),
        o.to_option_string()
    );
}
