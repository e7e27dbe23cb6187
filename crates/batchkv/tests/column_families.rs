//! Column families: create/drop/list, per-family memtables and options,
//! atomic batches across families (through reopen and SIGKILL), independent
//! flush and the WALs it keeps, dropped families' data and files, reads
//! spanning families, snapshots, and the errors of invalid operations.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use batchkv::merge_operators::U64AddOperator;
use batchkv::{
    ColumnFamily, CompressionType, Db, Error, MemTableKind, Options, ReadOptions, WriteBatch,
    WriteOptions,
};

fn files(dir: &Path, ext: &str) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(ext)?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

/// Waits (up to 10 s) for `cond`: obsolete files are deleted by the flush
/// thread right after it wakes the caller of `flush`.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed().as_secs() < 10, "timed out waiting: {what}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn invalid(r: Result<impl std::fmt::Debug, Error>, needle: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
        other => panic!("expected InvalidArgument containing {needle:?}, got {other:?}"),
    }
}

fn scan(db: &Db, cf: &ColumnFamily) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range_cf(&ReadOptions::default(), cf, ..)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn create_drop_list_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.default_cf().name(), "default");
    assert_eq!(db.default_cf().id(), 0);
    let a = db.create_cf("a", &Options::default()).unwrap();
    let b = db.create_cf("b", &Options::default()).unwrap();
    assert_ne!(a.id(), b.id());
    assert_eq!(db.cf_names(), ["default", "a", "b"]);
    assert_eq!(db.cf_handle("a").unwrap().id(), a.id());
    assert!(db.cf_handle("zzz").is_none());
    db.put_cf(&a, b"k", b"in a").unwrap();
    db.put_cf(&b, b"k", b"in b").unwrap();
    db.put(b"k", b"in default").unwrap();
    assert_eq!(Db::list_cf(dir.path()).unwrap(), ["default", "a", "b"]);
    db.drop_cf(&a).unwrap();
    assert_eq!(db.cf_names(), ["default", "b"]);
    assert_eq!(Db::list_cf(dir.path()).unwrap(), ["default", "b"]);
    drop(db);

    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert!(db.cf_handle("a").is_none());
    let b2 = db.cf_handle("b").unwrap();
    assert_eq!(b2.id(), b.id());
    assert_eq!(db.get_cf(&b2, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"in default"[..]));
    // Ids are never reused: a new family after a drop gets a fresh one.
    let c = db.create_cf("a", &Options::default()).unwrap();
    assert!(c.id() > b.id());
    assert_eq!(
        db.get_cf(&c, b"k").unwrap(),
        None,
        "the dropped a's data is gone"
    );
    db.drop_cf_by_name("b").unwrap();
    drop(db);
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.cf_names(), ["default", "a"]);
}

#[test]
fn invalid_operations_give_specific_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    invalid(db.create_cf("a", &Options::default()), "already exists");
    invalid(
        db.create_cf("default", &Options::default()),
        "already exists",
    );
    invalid(db.create_cf("", &Options::default()), "empty");
    invalid(db.drop_cf(&db.default_cf()), "default");
    invalid(db.drop_cf_by_name("default"), "default");
    invalid(db.drop_cf_by_name("nope"), "nope");
    let bad = Options {
        write_buffer_size: 0,
        ..Options::default()
    };
    assert!(matches!(
        db.create_cf("bad", &bad),
        Err(Error::InvalidArgument(_))
    ));

    let mut batch = WriteBatch::new();
    batch.put(b"x", b"1");
    batch.put_cf(&a, b"x", b"1");
    db.drop_cf(&a).unwrap();
    invalid(db.put_cf(&a, b"k", b"v"), "\"a\"");
    invalid(db.get_cf(&a, b"k"), "\"a\"");
    invalid(db.delete_cf(&a, b"k"), "\"a\"");
    invalid(db.iter_cf(&ReadOptions::default(), &a).map(|_| ()), "\"a\"");
    invalid(
        db.range_cf(&ReadOptions::default(), &a, ..).map(|_| ()),
        "\"a\"",
    );
    invalid(
        db.prefix_cf(&ReadOptions::default(), &a, b"p").map(|_| ()),
        "\"a\"",
    );
    invalid(db.flush_cf(&a), "\"a\"");
    invalid(db.drop_cf(&a), "\"a\"");
    invalid(db.stats_cf(&a), "\"a\"");
    // A batch naming the dropped family is refused whole.
    invalid(db.write(&WriteOptions::default(), batch), "\"a\"");
    assert_eq!(db.get(b"x").unwrap(), None);
    let r = db.multi_get_cf(&ReadOptions::default(), &[(&a, b"k")]);
    invalid(r.into_iter().next().unwrap(), "\"a\"");
}

#[test]
fn families_with_different_memtables_and_options_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let vec_opts = Options {
        memtable: MemTableKind::Vector,
        write_buffer_size: 128 * 1024,
        compression: CompressionType::None,
        block_size: 1024,
        ..Options::default()
    };
    let hash_opts = Options {
        memtable: "sorted_hash:2048:64".parse().unwrap(),
        write_buffer_size: 96 * 1024,
        ..Options::default()
    };
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let v = db.create_cf("vec", &vec_opts).unwrap();
        let h = db.create_cf("hash", &hash_opts).unwrap();
        assert_eq!(db.stats_cf(&v).unwrap().memtable_kind, "vector");
        assert_eq!(db.stats_cf(&h).unwrap().memtable_kind, "sorted_hash");
        for i in 0..3000u64 {
            db.put_cf(&v, common::key(i), format!("v{i}")).unwrap();
            db.put_cf(&h, common::key(i), format!("h{i}")).unwrap();
        }
        for i in (0..3000u64).step_by(7) {
            assert_eq!(
                db.get_cf(&v, common::key(i)).unwrap(),
                Some(format!("v{i}").into_bytes())
            );
            assert_eq!(
                db.get_cf(&h, common::key(i)).unwrap(),
                Some(format!("h{i}").into_bytes())
            );
        }
        assert_eq!(db.get(common::key(1)).unwrap(), None);
        // Small write buffers: both families flushed on their own.
        for cf in [&v, &h] {
            let s = db.stats_cf(cf).unwrap();
            assert!(s.flushes + s.immutable_memtables as u64 > 0, "{s:?}");
        }
    }
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let v = db.cf_handle("vec").unwrap();
    let h = db.cf_handle("hash").unwrap();
    assert_eq!(db.stats_cf(&v).unwrap().memtable_kind, "vector");
    assert_eq!(db.stats_cf(&h).unwrap().memtable_kind, "sorted_hash");
    assert_eq!(v.options().write_buffer_size, 128 * 1024);
    assert_eq!(v.options().compression, CompressionType::None);
    assert_eq!(v.options().block_size, 1024);
    assert_eq!(h.options().write_buffer_size, 96 * 1024);
    assert_eq!(scan(&db, &v).len(), 3000);
    assert_eq!(scan(&db, &h).len(), 3000);
    assert_eq!(
        db.get_cf(&h, common::key(2999)).unwrap(),
        Some(b"h2999".to_vec())
    );
    // The override variant replaces the recorded options.
    drop(db);
    let db = Db::open_with_cf_options(
        dir.path(),
        common::opts(),
        vec![("vec".into(), Options::default())],
    )
    .unwrap();
    let v = db.cf_handle("vec").unwrap();
    assert_eq!(db.stats_cf(&v).unwrap().memtable_kind, "skiplist");
    assert_eq!(scan(&db, &v).len(), 3000);
}

#[test]
fn atomic_batch_across_families_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let a = db.create_cf("a", &Options::default()).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"k1", b"d1");
        b.put_cf(&a, b"k1", b"a1");
        b.delete_cf(&a, b"gone");
        b.put_cf(&a, b"k2", b"a2");
        db.write(&WriteOptions::default(), b).unwrap();
        db.put_cf(&a, b"gone", b"x").unwrap();
        let mut b = WriteBatch::new();
        b.delete_cf(&a, b"gone");
        b.delete(b"k1");
        db.write(&WriteOptions::default(), b).unwrap();
    }
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(db.get(b"k1").unwrap(), None);
    assert_eq!(
        scan(&db, &a),
        vec![
            (b"k1".to_vec(), b"a1".to_vec()),
            (b"k2".to_vec(), b"a2".to_vec())
        ]
    );
}

const CHILD_DIR: &str = "BATCHKV_CF_KILL9_DIR";
const PER_FAMILY: u64 = 3;

/// The child: synced batches that each write `PER_FAMILY` keys in the
/// default family and in "a" and "b", printing `ACK n` after each.
#[test]
#[ignore = "child process of the cross-family kill9 test"]
fn cf_kill9_child_writer() {
    let dir = std::env::var(CHILD_DIR).expect("run by the parent test");
    let db = Db::open(
        &dir,
        Options {
            write_buffer_size: 64 * 1024,
            ..common::opts()
        },
    )
    .unwrap();
    let a = db.cf_handle("a").unwrap();
    let b = db.cf_handle("b").unwrap();
    let start = db.stats().last_sequence / (3 * PER_FAMILY);
    let sync = WriteOptions {
        sync: true,
        disable_wal: false,
    };
    let mut out = std::io::stdout().lock();
    for n in start.. {
        let mut batch = WriteBatch::new();
        for j in 0..PER_FAMILY {
            let k = format!("b{n:08}-{j}");
            batch.put(&k, vec![b'd'; 300]);
            batch.put_cf(&a, &k, vec![b'a'; 200]);
            batch.put_cf(&b, &k, vec![b'b'; 100]);
        }
        db.write(&sync, batch).unwrap();
        if n % 50 == 0 {
            // Independent flushes while the writes go on.
            db.flush_cf(&a).unwrap();
        }
        writeln!(out, "ACK {n}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn atomic_batch_across_families_survives_kill9() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        db.create_cf(
            "a",
            &Options {
                memtable: MemTableKind::Vector,
                write_buffer_size: 48 * 1024,
                ..Options::default()
            },
        )
        .unwrap();
        db.create_cf("b", &Options::default()).unwrap();
    }
    let mut acked = None;
    for cycle in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cf_kill9_child_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir.path())
            .env(common::MEMTABLE_ENV, common::memtable())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut seen = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(n) = line.strip_prefix("ACK ") {
                acked = Some(n.parse::<u64>().unwrap());
                seen += 1;
                if seen >= 150 + cycle * 40 {
                    break;
                }
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();

        let db = Db::open(dir.path(), common::opts()).unwrap();
        let a = db.cf_handle("a").unwrap();
        let b = db.cf_handle("b").unwrap();
        let last = acked.expect("the child acknowledged writes");
        let mut n = 0u64;
        loop {
            let k = format!("b{n:08}-0");
            let present = [
                db.get(&k).unwrap().is_some(),
                db.get_cf(&a, &k).unwrap().is_some(),
                db.get_cf(&b, &k).unwrap().is_some(),
            ];
            if present == [false; 3] {
                break;
            }
            for j in 0..PER_FAMILY {
                let k = format!("b{n:08}-{j}");
                assert_eq!(db.get(&k).unwrap(), Some(vec![b'd'; 300]), "batch {n}");
                assert_eq!(
                    db.get_cf(&a, &k).unwrap(),
                    Some(vec![b'a'; 200]),
                    "batch {n}"
                );
                assert_eq!(
                    db.get_cf(&b, &k).unwrap(),
                    Some(vec![b'b'; 100]),
                    "batch {n}"
                );
            }
            n += 1;
        }
        assert!(
            n > last,
            "acknowledged batch {last} missing (found {n} batches)"
        );
        let beyond = format!("b{:08}-0", n + 1);
        assert_eq!(
            db.get_cf(&b, &beyond).unwrap(),
            None,
            "a hole in the batches"
        );
    }
}

#[test]
fn independent_flush_keeps_the_wal_until_every_family_is_flushed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let a = db.create_cf("a", &Options::default()).unwrap();
        for i in 0..100u64 {
            db.put(common::key(i), b"default").unwrap();
            db.put_cf(&a, common::key(i), b"a").unwrap();
        }
        let wals_before = files(dir.path(), ".log");
        let oldest = wals_before[0];
        db.flush_cf(&a).unwrap();
        let sa = db.stats_cf(&a).unwrap();
        assert_eq!(sa.memtable_entries, 0);
        assert_eq!(sa.files_per_level[0], 1);
        let sd = db.stats();
        assert_eq!(
            sd.memtable_entries, 100,
            "the default family was not flushed"
        );
        assert_eq!(sd.files_per_level[0], 0);
        assert!(
            files(dir.path(), ".log").contains(&oldest),
            "the WAL holding the default family's writes was deleted"
        );
        // More writes to a after its flush (in the newer WAL), then the
        // default family's flush: now no family needs the oldest WAL.
        for i in 100..150u64 {
            db.put_cf(&a, common::key(i), b"a2").unwrap();
        }
        db.flush().unwrap();
        eventually(
            "the oldest WAL deleted once both families flushed it",
            || !files(dir.path(), ".log").contains(&oldest),
        );
        assert_eq!(db.stats_cf(&a).unwrap().memtable_entries, 50);
    }
    // Reopen: a's unflushed writes come back from the WAL that is left.
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(common::scan_all(&db).len(), 100);
    let all = scan(&db, &a);
    assert_eq!(all.len(), 150);
    assert!(all[..100].iter().all(|(_, v)| v == b"a"));
    assert!(all[100..].iter().all(|(_, v)| v == b"a2"));
}

#[test]
fn an_empty_family_does_not_pin_wals() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let _idle = db.create_cf("idle", &Options::default()).unwrap();
    for round in 0..3u64 {
        db.put(common::key(round), b"v").unwrap();
        db.flush().unwrap();
    }
    eventually("idle family kept old WALs", || {
        files(dir.path(), ".log").len() == 1
    });
}

#[test]
fn dropped_family_data_and_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let keep = db.create_cf("keep", &Options::default()).unwrap();
    let gone = db.create_cf("gone", &Options::default()).unwrap();
    db.put_cf(&keep, b"k", b"keep").unwrap();
    db.flush_cf(&keep).unwrap();
    let keep_tables = files(dir.path(), ".sst");
    assert_eq!(keep_tables.len(), 1);
    for i in 0..200u64 {
        db.put_cf(&gone, common::key(i), b"x").unwrap();
    }
    db.flush_cf(&gone).unwrap();
    db.put_cf(&gone, b"unflushed", b"x").unwrap();
    assert_eq!(files(dir.path(), ".sst").len(), 2);
    // An iterator keeps the dropped family's table alive until it ends.
    let mut it = db.iter_cf(&ReadOptions::default(), &gone).unwrap();
    db.drop_cf(&gone).unwrap();
    assert_eq!(files(dir.path(), ".sst").len(), 2);
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!(it.key(), common::key(0));
    // Dropping the iterator that kept it deletes it at once, not at the
    // next flush, compaction or drop.
    drop(it);
    assert_eq!(files(dir.path(), ".sst"), keep_tables);
    db.put(b"d", b"v").unwrap();
    db.flush().unwrap();
    eventually("the dropped family's table deleted", || {
        files(dir.path(), ".sst").len() == 2
    });
    assert!(files(dir.path(), ".sst").contains(&keep_tables[0]));
    drop(db);
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert!(db.cf_handle("gone").is_none());
    let again = db.create_cf("gone", &Options::default()).unwrap();
    assert_eq!(db.get_cf(&again, b"unflushed").unwrap(), None);
    assert_eq!(db.get_cf(&again, common::key(0)).unwrap(), None);
    let keep = db.cf_handle("keep").unwrap();
    assert_eq!(db.get_cf(&keep, b"k").unwrap(), Some(b"keep".to_vec()));
}

#[test]
fn multi_get_spans_families_at_one_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    let b = db.create_cf("b", &Options::default()).unwrap();
    let d = db.default_cf();
    db.put(b"k", b"d").unwrap();
    db.put_cf(&a, b"k", b"a").unwrap();
    db.put_cf(&b, b"other", b"b").unwrap();
    db.flush_cf(&a).unwrap();
    let r = db.multi_get_cf(
        &ReadOptions::default(),
        &[
            (&a, &b"k"[..]),
            (&d, b"k"),
            (&b, b"k"),
            (&b, b"other"),
            (&a, b"missing"),
            (&a, b"k"),
        ],
    );
    let r: Vec<Option<Vec<u8>>> = r.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        r,
        vec![
            Some(b"a".to_vec()),
            Some(b"d".to_vec()),
            None,
            Some(b"b".to_vec()),
            None,
            Some(b"a".to_vec())
        ]
    );
    // The single-family multi_get is the default family's.
    let r = db.multi_get(&ReadOptions::default(), &[&b"k"[..], b"other"]);
    assert_eq!(r[0].as_ref().unwrap().as_deref(), Some(&b"d"[..]));
    assert_eq!(r[1].as_ref().unwrap(), &None);
}

#[test]
fn iterators_are_per_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    for i in 0..20u64 {
        db.put(format!("d{i:02}"), b"x").unwrap();
        db.put_cf(&a, format!("a{i:02}"), b"y").unwrap();
        db.put_cf(&a, format!("p{i:02}"), b"z").unwrap();
    }
    db.flush_cf(&a).unwrap();
    db.delete_range_cf(&WriteOptions::default(), &a, b"a05", b"a10")
        .unwrap();
    let mut it = db.iter_cf(&ReadOptions::default(), &a).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert!(it.key()[0] == b'a' || it.key()[0] == b'p');
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 35);
    assert_eq!(
        db.prefix_cf(&ReadOptions::default(), &a, b"p")
            .unwrap()
            .count(),
        20
    );
    assert_eq!(db.prefix(&ReadOptions::default(), b"p").unwrap().count(), 0);
    let back: Vec<Vec<u8>> = db
        .range_cf(&ReadOptions::default(), &a, &b"a00"[..]..&b"a07"[..])
        .unwrap()
        .rev()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(
        back,
        vec![
            b"a04".to_vec(),
            b"a03".to_vec(),
            b"a02".to_vec(),
            b"a01".to_vec(),
            b"a00".to_vec()
        ]
    );
    assert_eq!(common::scan_all(&db).len(), 20);
}

#[test]
fn snapshots_apply_across_families() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    db.put(b"k", b"d1").unwrap();
    db.put_cf(&a, b"k", b"a1").unwrap();
    let snap = db.snapshot();
    let mut b = WriteBatch::new();
    b.put(b"k", b"d2");
    b.put_cf(&a, b"k", b"a2");
    b.put_cf(&a, b"new", b"n");
    db.write(&WriteOptions::default(), b).unwrap();
    db.flush_cf(&a).unwrap();
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(&ro, b"k").unwrap(), Some(b"d1".to_vec()));
    assert_eq!(db.get_cf_opt(&ro, &a, b"k").unwrap(), Some(b"a1".to_vec()));
    assert_eq!(db.get_cf_opt(&ro, &a, b"new").unwrap(), None);
    let r = db.multi_get_cf(&ro, &[(&a, b"k"), (&db.default_cf(), b"k")]);
    assert_eq!(r[0].as_ref().unwrap().as_deref(), Some(&b"a1"[..]));
    assert_eq!(r[1].as_ref().unwrap().as_deref(), Some(&b"d1"[..]));
    assert_eq!(db.range_cf(&ro, &a, ..).unwrap().count(), 1);
    assert_eq!(db.get_cf(&a, b"k").unwrap(), Some(b"a2".to_vec()));
}

#[test]
fn merge_operator_is_per_family_and_must_be_resupplied() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Options {
        merge_operator: Some(std::sync::Arc::new(U64AddOperator)),
        ..Options::default()
    };
    let one = 1u64.to_le_bytes();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let c = db.create_cf("counters", &counters).unwrap();
        for _ in 0..5 {
            db.merge_cf(&WriteOptions::default(), &c, b"n", one)
                .unwrap();
        }
        assert_eq!(
            db.get_cf(&c, b"n").unwrap(),
            Some(5u64.to_le_bytes().to_vec())
        );
        // The default family has no operator.
        db.merge(&WriteOptions::default(), b"n", one).unwrap();
        assert!(db.get(b"n").is_err());
    }
    // Reopened without it: the open is refused, naming the family and the
    // operator its OPTIONS file records (RocksDB's check).
    invalid(
        Db::open(dir.path(), common::opts()).map(|_| ()),
        "column family \"counters\" was written with merge operator \"batchkv.U64AddOperator\"",
    );
    let db = Db::open_with_cf_options(
        dir.path(),
        common::opts(),
        vec![("counters".into(), counters)],
    )
    .unwrap();
    let c = db.cf_handle("counters").unwrap();
    db.flush_cf(&c).unwrap();
    db.compact_range_cf(&c, None, None).unwrap();
    assert_eq!(
        db.get_cf(&c, b"n").unwrap(),
        Some(5u64.to_le_bytes().to_vec())
    );
}

#[test]
fn checkpoint_and_read_only_open_see_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    db.put(b"k", b"d").unwrap();
    db.put_cf(&a, b"flushed", b"1").unwrap();
    db.flush_cf(&a).unwrap();
    db.put_cf(&a, b"in-wal", b"2").unwrap();
    let cp = dir.path().join("cp");
    db.checkpoint(&cp).unwrap();

    let ro = Db::open_read_only(dir.path(), common::opts()).unwrap();
    let ra = ro.cf_handle("a").unwrap();
    assert_eq!(ro.get_cf(&ra, b"flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(ro.get_cf(&ra, b"in-wal").unwrap(), Some(b"2".to_vec()));
    assert!(matches!(
        ro.create_cf("x", &Options::default()),
        Err(Error::ReadOnly(_))
    ));
    drop(ro);
    drop(db);

    let c = Db::open(&cp, common::opts()).unwrap();
    let ca = c.cf_handle("a").unwrap();
    assert_eq!(c.get(b"k").unwrap(), Some(b"d".to_vec()));
    assert_eq!(c.get_cf(&ca, b"flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(c.get_cf(&ca, b"in-wal").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn families_compact_independently() {
    let dir = tempfile::tempdir().unwrap();
    let small = Options {
        write_buffer_size: 32 * 1024,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &small).unwrap();
    for i in 0..4000u64 {
        db.put_cf(&a, common::key(i % 1000), format!("{i:0100}"))
            .unwrap();
    }
    db.compact_range_cf(&a, None, None).unwrap();
    let s = db.stats_cf(&a).unwrap();
    assert_eq!(s.files_per_level[0], 0, "{s:?}");
    assert!(s.files_per_level[1..].iter().sum::<usize>() > 0);
    assert_eq!(db.stats().files_per_level.iter().sum::<usize>(), 0);
    assert_eq!(scan(&db, &a).len(), 1000);
    assert_eq!(
        db.get_cf(&a, common::key(999)).unwrap(),
        Some(format!("{:0100}", 3999).into_bytes())
    );
}

/// A database written before column families existed (the `zstd_feature`
/// fixture: its MANIFEST and WAL have no family tags) opens as
/// default-only, reads back, and takes a new family.
#[cfg(feature = "zstd")]
#[test]
fn a_database_from_before_column_families_opens_as_default_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zstd_db");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    assert_eq!(Db::list_cf(&dir).unwrap(), ["default"]);
    {
        let db = Db::open(&dir, Options::default()).unwrap();
        assert_eq!(db.cf_names(), ["default"]);
        assert!(db.get(b"key0000").unwrap().is_some());
        let a = db.create_cf("a", &Options::default()).unwrap();
        db.put_cf(&a, b"key0000", b"in a").unwrap();
    }
    let db = Db::open(&dir, Options::default()).unwrap();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(db.get_cf(&a, b"key0000").unwrap(), Some(b"in a".to_vec()));
    assert_ne!(db.get(b"key0000").unwrap(), Some(b"in a".to_vec()));
}

/// Replay skips a family's records in WALs below its log number: they are
/// in its tables already (replaying them would write a second table).
#[test]
fn replay_skips_records_a_family_already_flushed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), common::opts()).unwrap();
        let a = db.create_cf("a", &Options::default()).unwrap();
        for i in 0..50u64 {
            db.put(common::key(i), b"d").unwrap();
            db.put_cf(&a, common::key(i), b"a").unwrap();
        }
        db.flush_cf(&a).unwrap();
        assert_eq!(db.stats_cf(&a).unwrap().files_per_level[0], 1);
        // The WAL still holds a's records (the default family needs it).
    }
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(
        db.stats_cf(&a).unwrap().files_per_level[0],
        1,
        "a's flushed records were replayed into a second table"
    );
    assert_eq!(
        db.stats().files_per_level[0],
        1,
        "the default family's replayed table"
    );
    assert_eq!(scan(&db, &a).len(), 50);
    assert_eq!(common::scan_all(&db).len(), 50);
}

#[test]
fn properties_per_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    let a = db.create_cf("a", &Options::default()).unwrap();
    db.put_cf(&a, b"k", b"v").unwrap();
    db.flush_cf(&a).unwrap();
    db.put_cf(&a, b"k2", b"v").unwrap();
    assert_eq!(
        db.property_int_cf(&a, "batchkv.num-files-at-level0"),
        Some(1)
    );
    assert_eq!(db.property_int("batchkv.num-files-at-level0"), Some(0));
    assert_eq!(db.property_int_cf(&a, "batchkv.estimate-num-keys"), Some(2));
    assert_eq!(db.property_int("batchkv.estimate-num-keys"), Some(0));
    let stats = db.property_cf(&a, "batchkv.stats").unwrap();
    assert!(stats.contains("column family a"), "{stats}");
    db.drop_cf(&a).unwrap();
    assert_eq!(db.property_int_cf(&a, "batchkv.num-files-at-level0"), None);
}

/// Writers of cross-family batches, a thread flushing and compacting
/// families, and a thread creating and dropping a family, all at once: no
/// deadlock (lock order log → manifest → state), no lost write, and the
/// churned family's handles fail once it is dropped.
#[test]
fn concurrent_writes_flushes_and_family_churn() {
    let dir = tempfile::tempdir().unwrap();
    let small = Options {
        write_buffer_size: 32 * 1024,
        ..Options::default()
    };
    let db = Db::open(dir.path(), common::small_buffers()).unwrap();
    let a = db.create_cf("a", &small).unwrap();
    let b = db.create_cf("b", &small).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let writers_done = std::sync::atomic::AtomicUsize::new(0);
    let (flushes, drops) = (
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    );
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (db, a, b, writers_done) = (&db, &a, &b, &writers_done);
            s.spawn(move || {
                for i in 0..1500u64 {
                    let k = format!("t{t}-{i:05}");
                    let mut batch = WriteBatch::new();
                    batch.put(&k, b"d");
                    batch.put_cf(a, &k, vec![b'a'; 100]);
                    batch.put_cf(b, &k, vec![b'b'; 50]);
                    db.write(&WriteOptions::default(), batch).unwrap();
                }
                writers_done.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            });
        }
        s.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let cf = [&a, &b][n % 2];
                if n % 5 == 4 {
                    db.compact_range_cf(cf, None, None).unwrap();
                } else {
                    db.flush_cf(cf).unwrap();
                }
                flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                n += 1;
            }
        });
        s.spawn(|| {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let tmp = db.create_cf("tmp", &small).unwrap();
                for i in 0..200u64 {
                    db.put_cf(&tmp, format!("{round}-{i}"), b"x").unwrap();
                }
                if round % 2 == 0 {
                    db.flush_cf(&tmp).unwrap();
                }
                db.drop_cf(&tmp).unwrap();
                invalid(db.put_cf(&tmp, b"k", b"v"), "\"tmp\"");
                drops.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                round += 1;
            }
        });
        // Stop the background churn once the writers are done.
        s.spawn(|| {
            while writers_done.load(std::sync::atomic::Ordering::Acquire) < 2 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
        });
    });
    assert!(flushes.into_inner() > 0 && drops.into_inner() > 0);
    for cf in [&a, &b] {
        assert_eq!(scan(&db, cf).len(), 3000, "{}", cf.name());
    }
    assert_eq!(common::scan_all(&db).len(), 3000);
    drop(db);
    let db = Db::open(dir.path(), common::opts()).unwrap();
    assert_eq!(db.cf_names(), ["default", "a", "b"]);
    let a = db.cf_handle("a").unwrap();
    assert_eq!(scan(&db, &a).len(), 3000);
}
