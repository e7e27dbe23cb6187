//! `Db::open_as_secondary` + `try_catch_up_with_primary`: a read-only
//! instance that follows a live primary's MANIFEST and WALs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use batchkv::{Db, Error, Options, ReadOptions, WriteOptions};

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(60)).into_bytes()
}

/// Keys with `i % 10 == 9` are deleted right after being written.
fn deleted(i: u64) -> bool {
    i % 10 == 9
}

fn check_key(db: &Db, i: u64, when: &str) {
    let got = db.get(common::key(i)).unwrap();
    if deleted(i) {
        assert_eq!(got, None, "key {i} was deleted ({when})");
    } else {
        assert_eq!(got, Some(value(i)), "key {i} ({when})");
    }
}

/// A writer keeps writing, deleting, flushing and compacting while the
/// secondary catches up in a loop: every key acknowledged before a
/// catch-up began is visible (or, deleted, absent) after it.
#[test]
fn secondary_sees_every_acknowledged_write_of_a_busy_primary() {
    let dir = tempfile::tempdir().unwrap();
    let (primary_dir, secondary_dir) = (dir.path().join("p"), dir.path().join("s"));
    let opts = Options {
        write_buffer_size: 32 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_background_jobs: 2,
        ..common::opts()
    };
    let primary = Db::open(&primary_dir, opts.clone()).unwrap();
    primary.put(common::key(0), value(0)).unwrap();
    let acked = Arc::new(AtomicU64::new(1));
    let done = Arc::new(AtomicBool::new(false));
    const N: u64 = 12_000;
    let writer = {
        let (db, acked, done) = (primary.clone(), acked.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 1..N {
                db.put(common::key(i), value(i)).unwrap();
                if deleted(i) {
                    db.delete(common::key(i)).unwrap();
                }
                acked.store(i + 1, Ordering::Release);
                if i % 1500 == 0 {
                    db.flush().unwrap();
                }
                if i % 4000 == 0 {
                    db.compact_range(None, None).unwrap();
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let secondary = Db::open_as_secondary(&primary_dir, &secondary_dir, opts).unwrap();
    assert_eq!(secondary.secondary_path(), Some(secondary_dir.as_path()));
    let mut checked = 0u64;
    let mut catch_ups = 0u64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        let finished = done.load(Ordering::Acquire);
        let before = acked.load(Ordering::Acquire);
        secondary.try_catch_up_with_primary().unwrap();
        catch_ups += 1;
        // Every key acknowledged since the last round...
        for i in checked..before {
            check_key(&secondary, i, "acknowledged before the catch-up");
        }
        // ...and a sample of older ones (their tables may have been
        // compacted away on the primary meanwhile).
        for _ in 0..50 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            check_key(&secondary, rng % before, "older key");
        }
        checked = before;
        if finished {
            break;
        }
    }
    writer.join().unwrap();
    assert_eq!(checked, N);
    let level_files: u64 = (0..7)
        .map(|l| {
            primary
                .property_int(&format!("batchkv.num-files-at-level{l}"))
                .unwrap()
        })
        .sum();
    assert!(primary.property_int("batchkv.num-flushes").unwrap() > 3);
    assert!(primary.property_int("batchkv.num-compactions").unwrap() > 0);
    assert!(level_files > 0);
    assert!(catch_ups >= 2, "{catch_ups} catch-ups");
    // A whole scan agrees with the primary.
    let ro = ReadOptions::default();
    let mine: Vec<_> = secondary
        .range(&ro, ..)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let theirs: Vec<_> = primary
        .range(&ro, ..)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(mine.len() as u64, N - N / 10);
    assert_eq!(mine, theirs);
    eprintln!("{catch_ups} catch-ups, {level_files} tables at the end");
}

#[test]
fn secondary_is_read_only_and_leaves_the_primary_directory_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(&p, common::opts()).unwrap();
    primary.put(b"a", b"1").unwrap();
    primary.flush().unwrap();
    primary.put(b"b", b"2").unwrap();
    // A file the primary's flush thread deletes between `read_dir` and
    // `metadata` (one it made obsolete) is left out of the listing.
    let listing = |d: &std::path::Path| {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| {
                let e = e.unwrap();
                let len = match e.metadata() {
                    Ok(m) => m.len(),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
                    Err(err) => panic!("{err}"),
                };
                Some((e.file_name().into_string().unwrap(), len))
            })
            .collect();
        v.sort();
        v
    };
    let before = listing(&p);
    let sec = Db::open_as_secondary(&p, &s, common::opts()).unwrap();
    assert_eq!(sec.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(sec.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert!(matches!(sec.put(b"c", b"3"), Err(Error::ReadOnly(_))));
    assert!(matches!(sec.delete(b"a"), Err(Error::ReadOnly(_))));
    assert!(matches!(sec.flush(), Err(Error::ReadOnly(_))));
    assert!(matches!(
        sec.compact_range(None, None),
        Err(Error::ReadOnly(_))
    ));
    sec.try_catch_up_with_primary().unwrap();
    // Nothing created or grown there (the primary's own flush thread may
    // still be deleting files it made obsolete).
    let after = listing(&p);
    assert!(
        after.iter().all(|f| before.contains(f)),
        "the primary's directory changed: {before:?} -> {after:?}"
    );
    // Its own directory holds only its lock; a second secondary there is refused.
    let own: Vec<String> = listing(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(own, ["LOCK"]);
    assert!(matches!(
        Db::open_as_secondary(&p, &s, common::opts()),
        Err(Error::Locked { .. })
    ));
    // Its directory must not be the primary's.
    let err = Db::open_as_secondary(&p, &p, common::opts()).err().unwrap();
    assert!(err.to_string().contains("directory of its own"), "{err}");
    // No database there.
    let err = Db::open_as_secondary(
        dir.path().join("none"),
        dir.path().join("s2"),
        common::opts(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("CURRENT is missing"), "{err}");
    // A primary is not a secondary.
    let err = primary.try_catch_up_with_primary().unwrap_err();
    assert!(err.to_string().contains("not a secondary"), "{err}");
    assert_eq!(primary.secondary_path(), None);
    // The primary still works with a secondary attached.
    primary.put(b"c", b"3").unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(b"c").unwrap(), Some(b"3".to_vec()));
}

/// The table files in `dir`.
fn tables(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// An iterator begun before a catch-up keeps its view, though the
/// primary's compaction deleted the tables it reads; later reads see the
/// new state. (A snapshot alone does not keep a view: the primary's
/// compaction does not know it and drops the versions it would see.)
#[test]
fn catch_up_keeps_earlier_readers_views() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(
        &p,
        Options {
            disable_auto_compactions: true,
            ..common::opts()
        },
    )
    .unwrap();
    for i in 0..100u64 {
        primary.put(common::key(i), b"old").unwrap();
    }
    primary.flush().unwrap();
    let first_table = match tables(&p).as_slice() {
        [one] => one.clone(),
        other => panic!("one table expected after one flush: {other:?}"),
    };
    let sec = Db::open_as_secondary(&p, &s, common::opts()).unwrap();
    let mut it = sec.iter(&ReadOptions::default()).unwrap();
    for i in 0..100u64 {
        primary.put(common::key(i), b"new").unwrap();
    }
    primary.flush().unwrap();
    // Deletes its input tables before it returns.
    primary.compact_range(None, None).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(common::key(5)).unwrap(), Some(b"new".to_vec()));
    // The table the iterator reads is gone from the primary's directory.
    assert!(
        !tables(&p).contains(&first_table),
        "{first_table} was not deleted: {:?}",
        tables(&p)
    );
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), b"old");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 100);
}

/// The primary closes and reopens (a new MANIFEST; its WALs replayed into
/// tables and deleted): the secondary follows to the new files.
#[test]
fn secondary_follows_a_primary_that_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(&p, common::opts()).unwrap();
    primary.put(b"a", b"1").unwrap();
    let sec = Db::open_as_secondary(&p, &s, common::opts()).unwrap();
    assert_eq!(sec.get(b"a").unwrap(), Some(b"1".to_vec()));
    primary.put(b"b", b"2").unwrap();
    primary.close().unwrap();
    let primary = Db::open(&p, common::opts()).unwrap();
    primary.put(b"c", b"3").unwrap();
    primary.delete(b"a").unwrap();
    let cf = primary.create_cf("later", &Options::default()).unwrap();
    primary.put_cf(&cf, b"x", b"9").unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(b"a").unwrap(), None);
    assert_eq!(sec.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(sec.get(b"c").unwrap(), Some(b"3".to_vec()));
    let later = sec
        .cf_handle("later")
        .expect("a family created by the primary appears");
    assert_eq!(sec.get_cf(&later, b"x").unwrap(), Some(b"9".to_vec()));
    primary.drop_cf(&cf).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert!(sec.cf_handle("later").is_none());
    assert!(
        sec.get_cf(&later, b"x").is_err(),
        "a dropped family's handle fails"
    );
}

/// A WAL record still being written — or cut short by a crash — is never
/// shown in part: the secondary shows it only once it is complete.
#[test]
fn a_record_being_written_is_invisible_until_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(&p, common::opts()).unwrap();
    primary.put(b"before", b"1").unwrap();
    let wal = common::newest_wal(&p);
    let start = std::fs::metadata(&wal).unwrap().len() as usize;
    // One batch of two keys: one record.
    let mut b = batchkv::WriteBatch::new();
    b.put(b"torn-a", vec![b'a'; 3000]);
    b.put(b"torn-b", b"2");
    primary.write(&WriteOptions::default(), b).unwrap();
    primary.close().unwrap();
    let bytes = std::fs::read(&wal).unwrap();
    assert!(bytes.len() > start + 3000, "the batch is in the WAL");
    let record = bytes[start..].to_vec();
    // As if the primary were still writing it: the first half is on disk.
    let file = OpenOptions::new().write(true).open(&wal).unwrap();
    file.set_len(start as u64).unwrap();
    drop(file);
    let mut f = OpenOptions::new().append(true).open(&wal).unwrap();
    f.write_all(&record[..record.len() / 2]).unwrap();
    f.flush().unwrap();
    let sec = Db::open_as_secondary(&p, &s, common::opts()).unwrap();
    assert_eq!(sec.get(b"before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(sec.get(b"torn-a").unwrap(), None);
    assert_eq!(sec.get(b"torn-b").unwrap(), None);
    // All but the last byte: still incomplete.
    f.write_all(&record[record.len() / 2..record.len() - 1])
        .unwrap();
    f.flush().unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(b"torn-a").unwrap(), None);
    assert_eq!(sec.get(b"torn-b").unwrap(), None);
    // Complete: both keys at once.
    f.write_all(&record[record.len() - 1..]).unwrap();
    f.flush().unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(b"torn-a").unwrap(), Some(vec![b'a'; 3000]));
    assert_eq!(sec.get(b"torn-b").unwrap(), Some(b"2".to_vec()));
}

/// Damage followed by more records in a WAL is reported by the catch-up
/// as `Corruption` naming the WAL; nothing after it is shown.
#[test]
fn damage_in_the_middle_of_a_wal_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(&p, common::opts()).unwrap();
    primary.put(b"a", b"1").unwrap();
    let wal = common::newest_wal(&p);
    let mid = std::fs::metadata(&wal).unwrap().len();
    primary.put(b"b", b"2").unwrap();
    primary.put(b"c", b"3").unwrap();
    primary.close().unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[mid as usize + 8] ^= 0x40; // inside the record of "b"
    std::fs::write(&wal, &bytes).unwrap();
    let err = Db::open_as_secondary(&p, &s, common::opts()).err().unwrap();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".log"), "{err}");
}

/// `open_cf_as_secondary`: only the named families (and "default") are
/// shown; catch-ups follow their drop and re-creation, and never show
/// families of other names, existing or created later.
#[test]
fn open_cf_as_secondary_follows_the_named_families() {
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let primary = Db::open(&p, common::opts()).unwrap();
    let a = primary.create_cf("a", &Options::default()).unwrap();
    let b = primary.create_cf("b", &Options::default()).unwrap();
    primary.put(b"k", b"default").unwrap();
    primary.put_cf(&a, b"k", b"a1").unwrap();
    primary.put_cf(&b, b"k", b"b1").unwrap();
    primary.flush_cf(&a).unwrap();

    let err = Db::open_cf_as_secondary(&common::opts(), &p, &s, ["a", "nope"])
        .err()
        .expect("a family the primary lacks is refused");
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("\"nope\"")),
        "{err}"
    );
    let sec = Db::open_cf_as_secondary(&common::opts(), &p, &s, ["a"]).unwrap();
    assert_eq!(sec.cf_names(), ["default", "a"]);
    assert!(sec.cf_handle("b").is_none());
    let sa = sec.cf_handle("a").unwrap();
    assert_eq!(sec.get_cf(&sa, b"k").unwrap(), Some(b"a1".to_vec()));
    assert_eq!(sec.get(b"k").unwrap(), Some(b"default".to_vec()));

    // Writes to every family, a flush of the unfollowed one, a new family.
    primary.put_cf(&a, b"k2", b"a2").unwrap();
    primary.put_cf(&b, b"k2", b"b2").unwrap();
    primary.flush_cf(&b).unwrap();
    let c = primary.create_cf("c", &Options::default()).unwrap();
    primary.put_cf(&c, b"k", b"c1").unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get_cf(&sa, b"k2").unwrap(), Some(b"a2".to_vec()));
    assert_eq!(sec.cf_names(), ["default", "a"], "b and c are not followed");

    // The primary drops "a": so does the secondary; an iterator over it
    // keeps reading.
    let mut it = sec.iter_cf(&ReadOptions::default(), &sa).unwrap();
    primary.drop_cf(&a).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert!(sec.cf_handle("a").is_none());
    assert!(matches!(
        sec.get_cf(&sa, b"k"),
        Err(Error::InvalidArgument(_))
    ));
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!((it.key(), it.value()), (&b"k"[..], &b"a1"[..]));
    drop(it);

    // Created again under the listed name: followed again, empty.
    let a2 = primary.create_cf("a", &Options::default()).unwrap();
    primary.put_cf(&a2, b"new", b"yes").unwrap();
    sec.try_catch_up_with_primary().unwrap();
    let sa2 = sec.cf_handle("a").expect("re-created family is followed");
    assert_ne!(sa2.id(), sa.id());
    assert_eq!(sec.get_cf(&sa2, b"new").unwrap(), Some(b"yes".to_vec()));
    assert_eq!(sec.get_cf(&sa2, b"k").unwrap(), None);
    assert_eq!(sec.cf_names(), ["default", "a"]);
}

/// Per-family options reach a secondary: a family's merge operator must
/// be given (its recorded option string cannot hold it), at open and for
/// families the primary creates later.
#[test]
fn secondary_families_open_with_the_given_options() {
    use batchkv::merge_operators::U64AddOperator;
    let counting = || Options {
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    };
    let one = 1u64.to_le_bytes();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p");
    let primary = Db::open(&p, common::opts()).unwrap();
    let counts = primary.create_cf("counts", &counting()).unwrap();
    let other = primary.create_cf("other", &Options::default()).unwrap();
    for _ in 0..3 {
        primary
            .merge_cf(&WriteOptions::default(), &counts, b"n", one)
            .unwrap();
    }
    primary.put_cf(&other, b"x", b"1").unwrap();
    primary.flush_cf(&counts).unwrap();
    primary
        .merge_cf(&WriteOptions::default(), &counts, b"n", one)
        .unwrap();

    // Without the operator the family is refused, as a primary open is.
    let err = Db::open_cf_as_secondary(&common::opts(), &p, dir.path().join("s0"), ["counts"])
        .err()
        .expect("opened without its merge operator");
    assert!(err.to_string().contains("merge operator"), "{err}");
    // Not following it, no operator is needed.
    let sec =
        Db::open_cf_as_secondary(&common::opts(), &p, dir.path().join("s1"), ["other"]).unwrap();
    assert_eq!(sec.cf_names(), ["default", "other"]);
    drop(sec);

    let sec = Db::open_cf_descriptors_as_secondary(
        &common::opts(),
        &p,
        dir.path().join("s2"),
        vec![("counts".to_string(), counting())],
    )
    .unwrap();
    assert_eq!(sec.cf_names(), ["default", "counts"]);
    let sc = sec.cf_handle("counts").unwrap();
    assert_eq!(
        sec.get_cf(&sc, b"n").unwrap(),
        Some(4u64.to_le_bytes().to_vec())
    );

    // All families, options by name — also for one created later.
    let all = Db::open_as_secondary_with_cf_options(
        &p,
        dir.path().join("s3"),
        common::opts(),
        vec![
            ("counts".to_string(), counting()),
            ("later".to_string(), counting()),
        ],
    )
    .unwrap();
    assert_eq!(all.cf_names(), ["default", "counts", "other"]);
    let later = primary.create_cf("later", &counting()).unwrap();
    for _ in 0..2 {
        primary
            .merge_cf(&WriteOptions::default(), &later, b"m", one)
            .unwrap();
    }
    all.try_catch_up_with_primary().unwrap();
    sec.try_catch_up_with_primary().unwrap();
    let al = all.cf_handle("later").expect("created later, shown");
    assert_eq!(
        all.get_cf(&al, b"m").unwrap(),
        Some(2u64.to_le_bytes().to_vec())
    );
    assert!(sec.cf_handle("later").is_none(), "not listed, not shown");
    // The family's options are the given ones (a merge operator).
    assert!(al.options().merge_operator.is_some());
}
