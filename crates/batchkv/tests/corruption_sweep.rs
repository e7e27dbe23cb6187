//! Random bytes of SST files, WAL files, the MANIFEST and CURRENT are
//! corrupted (a few positions each, many seeds). Opening and reading the
//! database must then return `Corruption` naming the damaged file — or, for
//! a WAL under the default point-in-time mode, a prefix of its writes —
//! never wrong data and never a panic.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use batchkv::{Db, Error, Options, ReadOptions, WalRecoveryMode};
use rand::{Rng, SeedableRng};

/// Keys per flushed table, tables, and keys left only in the WAL.
const KEYS_PER_TABLE: u64 = 300;
const TABLES: u64 = 3;
const WAL_KEYS: u64 = 200;

fn value(i: u64) -> Vec<u8> {
    format!("v{i}-{}", "abcdefgh".repeat(1 + (i % 12) as usize)).into_bytes()
}

fn options(mode: WalRecoveryMode) -> Options {
    Options {
        block_size: 1024,
        wal_recovery_mode: mode,
        ..Options::default()
    }
}

/// Builds the database every round starts from: three tables and a WAL.
fn build_template(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options(WalRecoveryMode::PointInTime)).unwrap();
    let mut expected = BTreeMap::new();
    for i in 0..TABLES * KEYS_PER_TABLE + WAL_KEYS {
        db.put(common::key(i), value(i)).unwrap();
        expected.insert(common::key(i), value(i));
        if (i + 1) % KEYS_PER_TABLE == 0 && i < TABLES * KEYS_PER_TABLE {
            db.flush().unwrap();
        }
    }
    assert_eq!(db.stats().files_per_level[0], TABLES as usize);
    drop(db); // the last WAL_KEYS writes stay in the WAL only
    expected
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Flips 1–3 random bytes of `path` (each xor'ed with a non-zero mask).
fn corrupt(path: &Path, rng: &mut impl Rng) {
    let mut data = std::fs::read(path).unwrap();
    assert!(!data.is_empty(), "{} is empty", path.display());
    for _ in 0..rng.random_range(1..=3) {
        let pos = rng.random_range(0..data.len());
        data[pos] ^= rng.random_range(1..=255u8);
    }
    std::fs::write(path, data).unwrap();
}

fn files_matching(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| pred(n))
        .collect();
    names.sort();
    names
}

/// An error is acceptable only if it is `Corruption` naming `file`.
fn assert_names_corruption(err: &Error, file: &str, what: &str) {
    assert!(err.is_corruption(), "{what}: not a corruption error: {err}");
    assert!(
        err.to_string().contains(file),
        "{what}: error does not name {file}: {err}"
    );
}

/// What reading the damaged database saw.
struct Seen {
    /// Keys read successfully, with their values (checked against expected).
    present: BTreeMap<Vec<u8>, Vec<u8>>,
    /// A read reported corruption.
    errors: usize,
}

/// Reads every key with get, multi_get and a scan; every value returned
/// must be the one written, every error a corruption naming `file`.
fn read_everything(db: &Db, expected: &BTreeMap<Vec<u8>, Vec<u8>>, file: &str, what: &str) -> Seen {
    let mut seen = Seen {
        present: BTreeMap::new(),
        errors: 0,
    };
    // Creating the iterator opens every table, so it may fail already.
    match db.iter(&ReadOptions::default()) {
        Ok(mut it) => {
            it.seek_to_first();
            while it.valid() {
                let want = expected.get(it.key());
                assert_eq!(
                    want.map(Vec::as_slice),
                    Some(it.value()),
                    "{what}: scan returned wrong data"
                );
                seen.present.insert(it.key().to_vec(), it.value().to_vec());
                it.next();
            }
            if let Err(e) = it.status() {
                assert_names_corruption(&e, file, what);
                seen.errors += 1;
            }
        }
        Err(e) => {
            assert_names_corruption(&e, file, what);
            seen.errors += 1;
        }
    }
    let keys: Vec<&Vec<u8>> = expected.keys().collect();
    let batch = db.multi_get(&ReadOptions::default(), &keys);
    for (k, r) in keys.iter().zip(batch) {
        let single = db.get(k);
        for r in [r, single] {
            match r {
                Ok(Some(v)) => {
                    assert_eq!(&v, &expected[*k], "{what}: wrong value");
                    seen.present.insert(k.to_vec(), v);
                }
                Ok(None) => {}
                Err(e) => {
                    assert_names_corruption(&e, file, what);
                    seen.errors += 1;
                }
            }
        }
    }
    seen
}

/// One round: damage `file` in a copy of the template, open, read it all.
/// Returns `None` if the open failed (with a correct error).
fn damaged_round(
    template: &Path,
    file: &str,
    mode: WalRecoveryMode,
    seed: u64,
    expected: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> Option<Seen> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(template, dir.path());
    corrupt(&dir.path().join(file), &mut rng);
    let what = format!("{file} seed {seed} {mode:?}");
    let db = match Db::open(dir.path(), options(mode)) {
        Ok(db) => db,
        Err(e) => {
            assert_names_corruption(&e, file, &what);
            return None;
        }
    };
    let seen = read_everything(&db, expected, file, &what);
    drop(db);
    Some(seen)
}

#[test]
fn corrupted_sst_files_report_corruption_naming_the_file_never_wrong_data() {
    let template = tempfile::tempdir().unwrap();
    let expected = build_template(template.path());
    let tables = files_matching(template.path(), |n| n.ends_with(".sst"));
    assert_eq!(tables.len(), TABLES as usize);
    for seed in 0..60u64 {
        let file = &tables[seed as usize % tables.len()];
        if let Some(seen) = damaged_round(
            template.path(),
            file,
            WalRecoveryMode::PointInTime,
            seed,
            &expected,
        ) {
            // Silence is allowed only if nothing was lost.
            if seen.errors == 0 {
                assert_eq!(
                    seen.present.len(),
                    expected.len(),
                    "{file} seed {seed}: keys lost silently"
                );
            }
        }
    }
}

#[test]
fn corrupted_manifest_or_current_fails_the_open_or_loses_nothing() {
    let template = tempfile::tempdir().unwrap();
    let expected = build_template(template.path());
    let mut files = files_matching(template.path(), |n| n.starts_with("MANIFEST-"));
    assert_eq!(files.len(), 1);
    files.push("CURRENT".to_string());
    for seed in 0..60u64 {
        let file = &files[seed as usize % files.len()];
        if let Some(seen) = damaged_round(
            template.path(),
            file,
            WalRecoveryMode::PointInTime,
            seed,
            &expected,
        ) {
            assert_eq!(
                seen.errors, 0,
                "{file} seed {seed}: open succeeded, reads failed"
            );
            assert_eq!(
                seen.present.len(),
                expected.len(),
                "{file} seed {seed}: keys lost silently"
            );
        }
    }
}

#[test]
fn corrupted_wal_keeps_a_prefix_in_point_in_time_mode_and_fails_in_absolute_mode() {
    let template = tempfile::tempdir().unwrap();
    let expected = build_template(template.path());
    let wals = files_matching(template.path(), |n| n.ends_with(".log"));
    let wal = wals.last().expect("the template has a WAL");
    let flushed = TABLES * KEYS_PER_TABLE;
    for seed in 0..40u64 {
        let seen = damaged_round(
            template.path(),
            wal,
            WalRecoveryMode::PointInTime,
            seed,
            &expected,
        )
        .unwrap_or_else(|| panic!("seed {seed}: point-in-time open failed"));
        assert_eq!(seen.errors, 0, "seed {seed}");
        // Every flushed key, then a prefix of the WAL's writes.
        let n = seen.present.len() as u64;
        assert!(n >= flushed, "seed {seed}: flushed keys lost ({n} present)");
        for i in 0..n {
            assert!(
                seen.present.contains_key(&common::key(i)),
                "seed {seed}: hole at {i} of {n}"
            );
        }
        assert!(
            n < flushed + WAL_KEYS,
            "seed {seed}: the damage went unnoticed"
        );

        let absolute = damaged_round(
            template.path(),
            wal,
            WalRecoveryMode::AbsoluteConsistency,
            seed,
            &expected,
        );
        assert!(
            absolute.is_none(),
            "seed {seed}: absolute consistency opened a damaged WAL"
        );
    }
}

/// Regression (found by the sweep above): a damaged last MANIFEST record
/// was taken for a torn write and silently dropped, losing the table the
/// edit added (its WAL was already deleted). It must fail the open instead.
#[test]
fn regression_damaged_last_manifest_edit_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    build_template(dir.path());
    let manifest = files_matching(dir.path(), |n| n.starts_with("MANIFEST-")).remove(0);
    let path = dir.path().join(&manifest);
    let mut data = std::fs::read(&path).unwrap();
    *data.last_mut().unwrap() ^= 0x5a; // the last edit's payload: checksum mismatch
    std::fs::write(&path, data).unwrap();
    let err = Db::open(dir.path(), options(WalRecoveryMode::PointInTime))
        .err()
        .expect("the open must fail");
    assert_names_corruption(&err, &manifest, "last MANIFEST edit damaged");
}
