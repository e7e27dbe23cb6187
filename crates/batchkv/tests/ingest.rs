//! Bulk loading: `SstFileWriter` builds external tables, and
//! `Db::ingest_external_file` adds them atomically at the right level and
//! sequence number — visible to every read path, invisible to older
//! snapshots, kept across reopen, compaction, checkpoint and power loss,
//! and refused whole (database unchanged, no files left) when bad.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use batchkv::{
    BatchLookup, Db, Error, Fault, FaultInjectionFs, FaultOp, IngestOptions, Options, PosixFs,
    ReadOptions, SstFileWriter, WriteBatch, WriteOptions,
};

/// `Some(v)` puts, `None` deletes.
type Entry<'a> = (&'a str, Option<&'a str>);

fn write_sst(dir: &Path, name: &str, entries: &[Entry<'_>]) -> PathBuf {
    let path = dir.join(name);
    let mut w = SstFileWriter::create(&path, &Options::default()).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    let info = w.finish().unwrap();
    assert_eq!(info.path, path);
    info.path
}

fn no_auto_compaction() -> Options {
    Options {
        disable_auto_compactions: true,
        ..common::opts()
    }
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

/// Every key the forward iterator sees, with the read options given.
fn scan(db: &Db, ro: &ReadOptions) -> Vec<(String, String)> {
    let mut it = db.iter(ro).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((
            String::from_utf8(it.key().to_vec()).unwrap(),
            String::from_utf8(it.value().to_vec()).unwrap(),
        ));
        it.next();
    }
    it.status().unwrap();
    out
}

/// Checks `expected` (key → value or absent) through get, multi_get with
/// every strategy, both iterator directions, seeks, and `range`.
fn assert_reads(db: &Db, ro: &ReadOptions, expected: &[(&str, Option<&str>)]) {
    let want = |v: &Option<&str>| v.map(|s| s.as_bytes().to_vec());
    for (k, v) in expected {
        assert_eq!(db.get_opt(ro, k).unwrap(), want(v), "get {k}");
    }
    let keys: Vec<&str> = expected.iter().map(|(k, _)| *k).collect();
    for strategy in [
        BatchLookup::PerKey,
        BatchLookup::Finger,
        BatchLookup::Bfs,
        BatchLookup::Auto,
    ] {
        let o = ReadOptions {
            batch_lookup: Some(strategy),
            ..ro.clone()
        };
        let got = db.multi_get(&o, &keys);
        for ((k, v), r) in expected.iter().zip(got) {
            assert_eq!(r.unwrap(), want(v), "multi_get {k} with {strategy:?}");
        }
    }
    let all = scan(db, ro);
    for (k, v) in expected {
        let found = all
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str());
        assert_eq!(found, *v, "iterator at {k}");
    }
    let mut backward = Vec::new();
    let mut it = db.iter(ro).unwrap();
    it.seek_to_last();
    while it.valid() {
        backward.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.prev();
    }
    it.status().unwrap();
    backward.reverse();
    assert_eq!(
        backward,
        all.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        "backward scan"
    );
    for (k, v) in expected {
        let mut it = db.iter(ro).unwrap();
        it.seek(k);
        let at = it.valid().then(|| it.key() == k.as_bytes());
        assert_eq!(at == Some(true), v.is_some(), "seek {k}");
        it.seek_for_prev(k);
        let at = it.valid().then(|| it.key() == k.as_bytes());
        assert_eq!(at == Some(true), v.is_some(), "seek_for_prev {k}");
        let in_range: Vec<_> = db
            .range(ro, k.as_bytes()..=k.as_bytes())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(in_range.len(), usize::from(v.is_some()), "range {k}");
    }
}

fn sst_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

#[test]
fn writer_refuses_unordered_and_duplicate_keys_and_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sst");
    let mut w = SstFileWriter::create(&path, &Options::default()).unwrap();
    w.put("b", "1").unwrap();
    match w.put("a", "0") {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("\"a\"") && m.contains("ascending"), "{m}")
        }
        other => panic!("descending key accepted: {other:?}"),
    }
    match w.delete("b") {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("\"b\" added twice"), "{m}"),
        other => panic!("duplicate key accepted: {other:?}"),
    }
    w.delete("c").unwrap();
    assert_eq!(w.num_entries(), 2);
    let info = w.finish().unwrap();
    assert_eq!(
        (
            info.smallest_key.as_slice(),
            info.largest_key.as_slice(),
            info.num_entries
        ),
        (b"b".as_slice(), b"c".as_slice(), 2)
    );
    assert_eq!(info.file_size, std::fs::metadata(&path).unwrap().len());

    // No entries: refused, and no file is left.
    let empty = dir.path().join("empty.sst");
    let w = SstFileWriter::create(&empty, &Options::default()).unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
    assert!(!empty.exists());
    // Dropped unfinished: the partial file is removed.
    let partial = dir.path().join("partial.sst");
    let mut w = SstFileWriter::create(&partial, &Options::default()).unwrap();
    w.put("k", "v").unwrap();
    drop(w);
    assert!(!partial.exists());
}

#[test]
fn ingest_into_an_empty_db_lands_in_the_bottom_level_at_sequence_0() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let f = write_sst(src.path(), "1.sst", &[("a", Some("1")), ("b", Some("2"))]);
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        let stats = db.stats();
        assert_eq!(stats.files_per_level, vec![0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            stats.last_sequence, 0,
            "keys new to the db need no sequence"
        );
        assert!(f.exists(), "copying leaves the source");
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("a", Some("1")), ("b", Some("2")), ("c", None)],
        );
        // Later writes win.
        db.put("a", "new").unwrap();
        assert_eq!(get(&db, "a").as_deref(), Some("new"));
        let st = db.statistics();
        assert_eq!(st.ingested_files, 1);
        assert_eq!(st.ingested_bytes, std::fs::metadata(&f).unwrap().len());
    });
}

#[test]
fn ingest_goes_to_the_deepest_level_above_overlapping_data() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    db.put("m", "old").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().files_per_level[1], 1);
    // Overlaps the L1 file: goes to L0, above it.
    let f = write_sst(src.path(), "1.sst", &[("a", Some("1")), ("z", Some("1"))]);
    db.ingest_external_file(&[&f], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.stats().files_per_level, vec![1, 1, 0, 0, 0, 0, 0]);
    // Beside it, with nothing overlapping anywhere: the bottom.
    let g = write_sst(src.path(), "2.sst", &[("zz", Some("2"))]);
    db.ingest_external_file(&[&g], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.stats().files_per_level, vec![1, 1, 0, 0, 0, 0, 1]);
    assert_reads(
        &db,
        &ReadOptions::default(),
        &[
            ("a", Some("1")),
            ("m", Some("old")),
            ("z", Some("1")),
            ("zz", Some("2")),
        ],
    );
}

#[test]
fn ingest_over_memtable_data_flushes_first_and_the_ingested_value_wins() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        db.put("k", "memtable").unwrap();
        db.put("other", "kept").unwrap();
        let f = write_sst(
            src.path(),
            "1.sst",
            &[("j", Some("x")), ("k", Some("ingested"))],
        );

        // Without a blocking flush this is refused and changes nothing.
        let strict = IngestOptions {
            allow_blocking_flush: false,
            ..IngestOptions::default()
        };
        match db.ingest_external_file(&[&f], &strict) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("allow_blocking_flush"), "{m}"),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
        assert_eq!(get(&db, "k").as_deref(), Some("memtable"));
        assert_eq!(sst_files(dir.path()), Vec::<String>::new());

        let seq_before = db.stats().last_sequence;
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        let stats = db.stats();
        assert!(stats.flushes >= 1, "the memtable was flushed");
        // The flushed table (L0) overlaps, so the file goes to L0 above it
        // with a fresh sequence number.
        assert_eq!(stats.files_per_level[0], 2);
        assert_eq!(stats.last_sequence, seq_before + 1);
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[
                ("j", Some("x")),
                ("k", Some("ingested")),
                ("other", Some("kept")),
            ],
        );
        db.put("k", "later").unwrap();
        assert_eq!(get(&db, "k").as_deref(), Some("later"));
    });
}

#[test]
fn ingested_values_shadow_older_tables_and_later_writes_shadow_them() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        for (k, v) in [("a", "a0"), ("b", "b0"), ("c", "c0"), ("d", "d0")] {
            db.put(k, v).unwrap();
        }
        db.compact_range(None, None).unwrap(); // into L1
        db.put("c", "c1").unwrap();
        db.flush().unwrap(); // L0
        let f = write_sst(
            src.path(),
            "1.sst",
            &[
                ("b", Some("b-ing")),
                ("bb", Some("new")),
                ("c", Some("c-ing")),
            ],
        );
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        let expected = [
            ("a", Some("a0")),
            ("b", Some("b-ing")),
            ("bb", Some("new")),
            ("c", Some("c-ing")),
            ("d", Some("d0")),
        ];
        assert_reads(&db, &ReadOptions::default(), &expected);
        db.put("b", "b2").unwrap();
        db.delete("bb").unwrap();
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("b", Some("b2")), ("bb", None), ("c", Some("c-ing"))],
        );
        // Still so once the later writes are in a table too.
        db.flush().unwrap();
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("b", Some("b2")), ("bb", None), ("c", Some("c-ing"))],
        );
    });
}

#[test]
fn snapshot_taken_before_an_ingest_does_not_see_its_keys() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        db.put("k", "old").unwrap();
        db.flush().unwrap();
        let snap = db.snapshot();
        let f = write_sst(
            src.path(),
            "1.sst",
            &[("k", Some("new")), ("n", Some("fresh"))],
        );
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        let at_snap = ReadOptions {
            snapshot: Some(snap.clone()),
            ..ReadOptions::default()
        };
        assert_reads(&db, &at_snap, &[("k", Some("old")), ("n", None)]);
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("k", Some("new")), ("n", Some("fresh"))],
        );
        // Keys new to the database, with a snapshot alive: still a fresh
        // sequence number (snapshot_consistency), so the snapshot misses them.
        let g = write_sst(src.path(), "2.sst", &[("x", Some("1"))]);
        let seq = db.stats().last_sequence;
        db.ingest_external_file(&[&g], &IngestOptions::default())
            .unwrap();
        assert_eq!(db.stats().last_sequence, seq + 1);
        assert_reads(&db, &at_snap, &[("x", None)]);
        // A compaction keeps what the snapshot needs.
        db.compact_range(None, None).unwrap();
        assert_reads(
            &db,
            &at_snap,
            &[("k", Some("old")), ("n", None), ("x", None)],
        );
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("k", Some("new")), ("n", Some("fresh")), ("x", Some("1"))],
        );
        // allow_global_seqno = false cannot honour that: refused.
        let h = write_sst(src.path(), "3.sst", &[("y", Some("1"))]);
        let no_seqno = IngestOptions {
            allow_global_seqno: false,
            ..IngestOptions::default()
        };
        assert!(matches!(
            db.ingest_external_file(&[&h], &no_seqno),
            Err(Error::InvalidArgument(_))
        ));
        // Without snapshot consistency, new keys go in at sequence 0 and
        // the old snapshot sees them (RocksDB's documented trade-off).
        let loose = IngestOptions {
            snapshot_consistency: false,
            allow_global_seqno: false,
            ..IngestOptions::default()
        };
        db.ingest_external_file(&[&h], &loose).unwrap();
        assert_reads(&db, &at_snap, &[("y", Some("1"))]);
        drop(snap);
    });
}

#[test]
fn overlapping_input_files_are_refused_and_the_db_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    db.put("base", "1").unwrap();
    db.flush().unwrap();
    let before = sst_files(dir.path());
    let f1 = write_sst(src.path(), "1.sst", &[("a", Some("1")), ("m", Some("1"))]);
    let f2 = write_sst(src.path(), "2.sst", &[("m", Some("2")), ("z", Some("2"))]);
    match db.ingest_external_file(&[&f1, &f2], &IngestOptions::default()) {
        Err(Error::InvalidArgument(m)) => {
            assert!(
                m.contains("1.sst") && m.contains("2.sst") && m.contains("overlap"),
                "{m}"
            )
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(sst_files(dir.path()), before, "staged copies removed");
    assert_eq!(get(&db, "a"), None);
    assert_eq!(get(&db, "base").as_deref(), Some("1"));
    // The same file twice overlaps itself.
    assert!(matches!(
        db.ingest_external_file(&[&f1, &f1], &IngestOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    // Disjoint files go in together.
    let f3 = write_sst(src.path(), "3.sst", &[("n", Some("3")), ("z", Some("3"))]);
    db.ingest_external_file(&[&f3, &f1], &IngestOptions::default())
        .unwrap();
    assert_reads(
        &db,
        &ReadOptions::default(),
        &[
            ("a", Some("1")),
            ("m", Some("1")),
            ("n", Some("3")),
            ("z", Some("3")),
        ],
    );
    db.close().unwrap();
}

#[test]
fn damaged_or_foreign_files_are_refused_with_a_specific_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    db.put("k", "v").unwrap();
    let entries: Vec<(String, Option<&str>)> = (0..2000)
        .map(|i| (format!("key{i:05}"), Some("value")))
        .collect();
    let entries: Vec<Entry<'_>> = entries.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let good = write_sst(src.path(), "good.sst", &entries);
    let bytes = std::fs::read(&good).unwrap();
    let check_refused = |damaged: &[u8], opts: &IngestOptions, want_corruption: bool| {
        let p = src.path().join("bad.sst");
        std::fs::write(&p, damaged).unwrap();
        let r = db.ingest_external_file(&[&p], opts);
        match &r {
            Err(e) if want_corruption => {
                assert!(e.is_corruption(), "expected Corruption, got {e}");
                assert!(e.to_string().contains("bad.sst"), "names the file: {e}");
            }
            Err(Error::InvalidArgument(_)) if !want_corruption => {}
            other => panic!("damaged file ingested or wrong error: {other:?}"),
        }
        assert_eq!(sst_files(dir.path()), Vec::<String>::new(), "no leftovers");
        assert_eq!(get(&db, "key00000"), None);
        assert_eq!(get(&db, "k").as_deref(), Some("v"));
    };
    // A flipped byte in the footer/index region: caught by opening.
    let mut d = bytes.clone();
    let n = d.len();
    d[n - 60] ^= 0x40;
    check_refused(&d, &IngestOptions::default(), true);
    // A flipped byte in a middle data block: caught when every block is
    // verified.
    let mut d = bytes.clone();
    d[n / 3] ^= 0x01;
    let verify = IngestOptions {
        verify_checksums_before_ingest: true,
        ..IngestOptions::default()
    };
    check_refused(&d, &verify, true);
    // Truncated.
    check_refused(&bytes[..n / 2], &IngestOptions::default(), true);
    // A table the engine wrote itself is not an external file.
    let other = tempfile::tempdir().unwrap();
    {
        let o = Db::open(other.path(), common::opts()).unwrap();
        o.put("x", "y").unwrap();
        o.flush().unwrap();
        o.close().unwrap();
    }
    let engine_sst = sst_files(other.path()).pop().unwrap();
    let engine_bytes = std::fs::read(other.path().join(engine_sst)).unwrap();
    check_refused(&engine_bytes, &IngestOptions::default(), false);
    // A missing file is an I/O error.
    let missing =
        db.ingest_external_file(&[src.path().join("nope.sst")], &IngestOptions::default());
    assert!(matches!(missing, Err(Error::Io { .. })), "{missing:?}");
    assert!(matches!(
        db.ingest_external_file::<&Path>(&[], &IngestOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    // The undamaged file still goes in, verified.
    db.ingest_external_file(&[&good], &verify).unwrap();
    assert_eq!(get(&db, "key01999").as_deref(), Some("value"));
}

#[test]
fn move_files_links_and_unlinks_the_source_while_copying_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let db_dir = dir.path().join("db");
    let db = Db::open(&db_dir, common::opts()).unwrap();
    let copied = write_sst(&src, "copied.sst", &[("a", Some("1"))]);
    db.ingest_external_file(&[&copied], &IngestOptions::default())
        .unwrap();
    assert!(copied.exists(), "a copied source stays");

    let moved = write_sst(&src, "moved.sst", &[("b", Some("2"))]);
    let ino = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&moved).unwrap().ino()
    };
    let move_opts = IngestOptions {
        move_files: true,
        ..IngestOptions::default()
    };
    db.ingest_external_file(&[&moved], &move_opts).unwrap();
    assert!(!moved.exists(), "a moved source is unlinked");
    // The database's file is the same inode: linked, not copied.
    let linked = sst_files(&db_dir).into_iter().any(|n| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(db_dir.join(n)).unwrap().ino() == ino
    });
    assert!(linked, "move_files hard-links on one filesystem");
    assert_reads(
        &db,
        &ReadOptions::default(),
        &[("a", Some("1")), ("b", Some("2"))],
    );
    db.close().unwrap();
    let db = Db::open(&db_dir, common::opts()).unwrap();
    assert_reads(
        &db,
        &ReadOptions::default(),
        &[("a", Some("1")), ("b", Some("2"))],
    );
}

#[test]
fn reopen_after_ingest_keeps_data_and_sequence_order() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        db.put("k", "old").unwrap();
        db.put("gone", "old").unwrap();
        db.flush().unwrap();
        let f = write_sst(
            src.path(),
            "1.sst",
            &[("gone", None), ("k", Some("ingested")), ("new", Some("n"))],
        );
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        let seq = db.stats().last_sequence;
        db.close().unwrap();

        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        assert_eq!(
            db.stats().last_sequence,
            seq,
            "the global seqno is recorded"
        );
        let expected = [("gone", None), ("k", Some("ingested")), ("new", Some("n"))];
        assert_reads(&db, &ReadOptions::default(), &expected);
        // Writes after the reopen are numbered after the ingested file.
        db.put("k", "after").unwrap();
        db.flush().unwrap();
        assert_eq!(get(&db, "k").as_deref(), Some("after"));
        db.close().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        assert_eq!(get(&db, "k").as_deref(), Some("after"));
    });
}

#[test]
fn compaction_of_ingested_files_keeps_their_data_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    let mut expected: Vec<(String, Option<String>)> = Vec::new();
    for i in 0..300u32 {
        db.put(format!("k{i:04}"), "base").unwrap();
    }
    db.flush().unwrap();
    // Three ingests over the same keys, each newer than the last, plus
    // deletions; all land in L0 with increasing sequence numbers.
    for round in 0..3u32 {
        let entries: Vec<(String, Option<String>)> = (0..300u32)
            .filter(|i| i % 3 == round)
            .map(|i| {
                let v = (i % 7 != 0).then(|| format!("r{round}"));
                (format!("k{i:04}"), v)
            })
            .collect();
        let refs: Vec<Entry<'_>> = entries
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let f = write_sst(src.path(), &format!("{round}.sst"), &refs);
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
    }
    for i in 0..300u32 {
        let v = (i % 7 != 0).then(|| format!("r{}", i % 3));
        expected.push((format!("k{i:04}"), v));
    }
    let want: Vec<(&str, Option<&str>)> = expected
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    assert_reads(&db, &ReadOptions::default(), &want);
    assert_eq!(db.stats().files_per_level[0], 4);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().files_per_level[0], 0);
    assert_reads(&db, &ReadOptions::default(), &want);
    // The compacted tables carry real sequence numbers: later writes win.
    db.put("k0001", "later").unwrap();
    assert_eq!(get(&db, "k0001").as_deref(), Some("later"));
    db.close().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    assert_eq!(get(&db, "k0001").as_deref(), Some("later"));
    assert_eq!(get(&db, "k0002").as_deref(), Some("r2"));
}

#[test]
fn delete_entries_in_an_external_file_hide_older_keys() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        db.put("a", "1").unwrap();
        db.put("b", "1").unwrap();
        db.compact_range(None, None).unwrap();
        let f = write_sst(src.path(), "1.sst", &[("a", None), ("c", None)]);
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("a", None), ("b", Some("1")), ("c", None)],
        );
        db.compact_range(None, None).unwrap();
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("a", None), ("b", Some("1")), ("c", None)],
        );
    });
}

#[test]
fn checkpoint_of_a_db_with_ingested_files_opens_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), no_auto_compaction()).unwrap();
    db.put("k", "old").unwrap();
    db.flush().unwrap();
    let f = write_sst(src.path(), "1.sst", &[("k", Some("new")), ("z", Some("z"))]);
    db.ingest_external_file(&[&f], &IngestOptions::default())
        .unwrap();
    let ckpt = dir.path().join("ckpt");
    db.checkpoint(&ckpt).unwrap();
    db.close().unwrap();
    let c = Db::open(&ckpt, no_auto_compaction()).unwrap();
    assert_reads(
        &c,
        &ReadOptions::default(),
        &[("k", Some("new")), ("z", Some("z"))],
    );
}

#[test]
fn ingest_is_refused_on_a_read_only_db() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    Db::open(dir.path(), common::opts())
        .unwrap()
        .close()
        .unwrap();
    let db = Db::open_read_only(dir.path(), common::opts()).unwrap();
    let f = write_sst(src.path(), "1.sst", &[("a", Some("1"))]);
    assert!(matches!(
        db.ingest_external_file(&[&f], &IngestOptions::default()),
        Err(Error::ReadOnly(_))
    ));
}

/// Concurrent writers outside and inside the ingested range: the ingest
/// succeeds, every acknowledged write is readable, and for the key both
/// touch, whichever was ordered last wins.
#[test]
fn ingest_while_writers_run_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                db.put(common::key(i), "w").unwrap();
                i += 1;
            }
            i
        })
    };
    let entries: Vec<String> = (0..500).map(|i| format!("ing{i:04}")).collect();
    let refs: Vec<Entry<'_>> = entries.iter().map(|k| (k.as_str(), Some("i"))).collect();
    for round in 0..5 {
        let f = write_sst(src.path(), &format!("{round}.sst"), &refs);
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    let n = writer.join().unwrap();
    for i in 0..n {
        assert_eq!(db.get(common::key(i)).unwrap().as_deref(), Some(&b"w"[..]));
    }
    for k in &entries {
        assert_eq!(get(&db, k).as_deref(), Some("i"));
    }
}

/// One crash point: a fault (sticky from its first firing) on the `nth`
/// matching operation, then power loss. Returns whether the fault fired.
/// After reopening, the ingest must be all there (if it returned `Ok`) or
/// all or nothing (if it failed), and earlier synced writes must survive.
fn ingest_crash_point(fault: Fault) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let fs = FaultInjectionFs::new(Arc::new(PosixFs));
    let opts = no_auto_compaction();
    let db = Db::open_with_fs(dir.path(), opts.clone(), Arc::new(fs.clone())).unwrap();
    let sync = WriteOptions {
        sync: true,
        disable_wal: false,
    };
    let mut b = WriteBatch::new();
    b.put("k", "old");
    b.put("kept", "yes");
    db.write(&sync, b).unwrap();
    db.flush().unwrap();
    db.put("unflushed-k", "old").unwrap();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i:04}")).collect();
    let refs: Vec<Entry<'_>> = keys.iter().map(|k| (k.as_str(), Some("ing"))).collect();
    let f1 = write_sst(src.path(), "1.sst", &refs);
    let f2 = write_sst(
        src.path(),
        "2.sst",
        &[("unflushed-k", Some("ing")), ("x", Some("ing"))],
    );

    let failures = fs.failures();
    fs.inject(fault.clone());
    let result = db.ingest_external_file(&[&f1, &f2], &IngestOptions::default());
    let fired = fs.failures() > failures;
    assert!(
        result.is_ok() || fired,
        "{fault:?}: failed without a fault: {result:?}"
    );
    fs.power_off();
    drop(db);
    fs.lose_unsynced_data().unwrap();

    let db = Db::open(dir.path(), opts)
        .unwrap_or_else(|e| panic!("{fault:?}: reopen after power loss failed: {e}"));
    assert_eq!(get(&db, "kept").as_deref(), Some("yes"), "{fault:?}");
    let ingested: Vec<bool> = keys
        .iter()
        .map(|k| k.as_str())
        .chain(["unflushed-k", "x"])
        .map(|k| get(&db, k).as_deref() == Some("ing"))
        .collect();
    let all = ingested.iter().all(|&b| b);
    let none = ingested.iter().all(|&b| !b);
    assert!(
        all || none,
        "{fault:?}: a partial ingest survived: {ingested:?}"
    );
    if result.is_ok() {
        assert!(all, "{fault:?}: an acknowledged ingest was lost");
    }
    if none {
        assert_eq!(get(&db, "k").as_deref(), Some("old"), "{fault:?}");
        assert_eq!(get(&db, "x"), None, "{fault:?}");
    }
    // Nothing but live tables is left in the directory.
    assert_eq!(
        sst_files(dir.path()).len(),
        db.stats().files_per_level.iter().sum::<usize>(),
        "{fault:?}: leftover tables"
    );
    db.close().unwrap();
    fired
}

#[test]
fn power_loss_during_ingest_leaves_all_or_nothing() {
    let mut points = 0;
    for (op, name) in [
        (FaultOp::Create, ".sst"),
        (FaultOp::Write, ".sst"),
        (FaultOp::Sync, ".sst"),
        (FaultOp::Sync, ""),
        (FaultOp::Rename, ".sst"),
        (FaultOp::Write, "MANIFEST"),
        (FaultOp::Sync, "MANIFEST"),
    ] {
        for nth in 1.. {
            let mut fault = Fault::next(op).nth(nth).sticky();
            if !name.is_empty() {
                fault = fault.on_files(name);
            }
            points += 1;
            if !ingest_crash_point(fault) {
                break; // the ingest finished before the nth operation
            }
            assert!(nth < 50, "{op:?} {name}: too many crash points");
        }
    }
    // No fault at all: acknowledged, then power loss.
    ingest_crash_point(Fault::next(FaultOp::Create).on_files("never-matches"));
    assert!(points > 10, "only {points} crash points exercised");
}

/// A `delete_range` still in the memtable covers an ingest range with no
/// point key in it: the ingest must flush it and come out newer (before
/// the check looked at memtable range tombstones, the keys went in at
/// sequence 0 and the older tombstone hid them). A later `delete_range`
/// hides ingested keys, in memory and once flushed.
#[test]
fn range_deletions_order_with_ingested_files() {
    common::for_each_memtable(|_| {
        let dir = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
        db.put("a", "1").unwrap();
        db.flush().unwrap();
        db.delete_range(&WriteOptions::default(), "a", "z").unwrap();
        let f = write_sst(src.path(), "1.sst", &[("m", Some("ingested"))]);
        db.ingest_external_file(&[&f], &IngestOptions::default())
            .unwrap();
        assert_reads(
            &db,
            &ReadOptions::default(),
            &[("a", None), ("m", Some("ingested"))],
        );
        db.delete_range(&WriteOptions::default(), "l", "n").unwrap();
        assert_reads(&db, &ReadOptions::default(), &[("a", None), ("m", None)]);
        db.flush().unwrap();
        assert_reads(&db, &ReadOptions::default(), &[("a", None), ("m", None)]);
        db.compact_range(None, None).unwrap();
        assert_reads(&db, &ReadOptions::default(), &[("a", None), ("m", None)]);
    });
}

/// `ingest_external_file_cf` puts the files' keys into that family only:
/// its overlapping memtable is flushed first, the ingested value wins over
/// the family's older data, other families (with the same keys) are
/// untouched, it survives reopen, and a dropped family is refused.
#[test]
fn ingest_into_a_column_family_touches_only_that_family() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    let users = db.create_cf("users", &no_auto_compaction()).unwrap();
    db.put("k", "default").unwrap();
    db.put_cf(&users, "k", "users-memtable").unwrap();
    db.put_cf(&users, "z", "users-kept").unwrap();
    let f = write_sst(
        src.path(),
        "1.sst",
        &[("j", Some("ingested-j")), ("k", Some("ingested-k"))],
    );
    db.ingest_external_file_cf(&users, &[&f], &IngestOptions::default())
        .unwrap();
    let read = |db: &Db, cf: &batchkv::ColumnFamily, k: &str| {
        db.get_cf(cf, k)
            .unwrap()
            .map(|v| String::from_utf8(v).unwrap())
    };
    let check = |db: &Db| {
        let users = db.cf_handle("users").unwrap();
        assert_eq!(read(db, &users, "j").as_deref(), Some("ingested-j"));
        assert_eq!(read(db, &users, "k").as_deref(), Some("ingested-k"));
        assert_eq!(read(db, &users, "z").as_deref(), Some("users-kept"));
        assert_eq!(get(db, "k").as_deref(), Some("default"));
        assert_eq!(get(db, "j"), None, "the default family got no keys");
        let keys: Vec<(&batchkv::ColumnFamily, &[u8])> =
            vec![(&users, b"j"), (&users, b"k"), (&users, b"missing")];
        let got: Vec<Option<Vec<u8>>> = db
            .multi_get_cf(&ReadOptions::default(), &keys)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            got,
            vec![
                Some(b"ingested-j".to_vec()),
                Some(b"ingested-k".to_vec()),
                None
            ]
        );
    };
    check(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), no_auto_compaction()).unwrap();
    check(&db);

    // A dropped family is refused and nothing is left behind.
    let users = db.cf_handle("users").unwrap();
    db.drop_cf(&users).unwrap();
    let g = write_sst(src.path(), "2.sst", &[("q", Some("x"))]);
    let before = sst_files(dir.path());
    match db.ingest_external_file_cf(&users, &[&g], &IngestOptions::default()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("users"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(sst_files(dir.path()), before);
}
