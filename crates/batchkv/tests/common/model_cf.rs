//! The model test's column-family part: random operations over the
//! default family and two more ("c1", "c2", each with its own random
//! memtable kind and write buffer), against one `BTreeMap` per family.
//! Operations pick a family; batches span families; flushes and
//! compactions are per family; reopens restore the families from the
//! MANIFEST; a family is sometimes dropped and recreated (its model
//! emptied). Snapshots are checked across families.

use std::collections::BTreeMap;

use batchkv::{ColumnFamily, Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Model = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

const FAMILIES: [&str; 3] = ["default", "c1", "c2"];

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:03}", rng.random_range(0..60u32)).into_bytes()
}

fn value(rng: &mut StdRng, step: usize) -> Vec<u8> {
    let len = rng.random_range(0..300usize);
    let mut v = format!("v{step}-").into_bytes();
    v.resize(v.len() + len, b'a' + (step % 26) as u8);
    v
}

fn cf_options(rng: &mut StdRng) -> Options {
    let memtable = ["skiplist", "vector", "sorted_hash:2048:64"][rng.random_range(0..3usize)];
    Options {
        memtable: memtable.parse().unwrap(),
        write_buffer_size: [32 << 10, 64 << 10, 1 << 20][rng.random_range(0..3usize)],
        level0_file_num_compaction_trigger: rng.random_range(2..5usize),
        ..Options::default()
    }
}

fn open(dir: &std::path::Path) -> (Db, Vec<ColumnFamily>) {
    let db = Db::open(dir, Options::default()).unwrap();
    let cfs = FAMILIES
        .iter()
        .map(|n| {
            db.cf_handle(n)
                .unwrap_or_else(|| panic!("family {n} missing after reopen"))
        })
        .collect();
    (db, cfs)
}

/// A full scan of family `f` against `model`.
fn check_family(
    db: &Db,
    cf: &ColumnFamily,
    ro: &ReadOptions,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    at: &str,
) {
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .range_cf(ro, cf, ..)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        got == want,
        "{at}: scan of {} differs: {} keys vs model {}",
        cf.name(),
        got.len(),
        want.len()
    );
}

/// Runs `steps` random operations for `seed`; panics at the first mismatch
/// with the seed and step.
pub fn run_cf_seed(seed: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut db = Db::open(dir.path(), Options::default()).unwrap();
    let mut cfs = vec![db.default_cf()];
    for name in &FAMILIES[1..] {
        cfs.push(db.create_cf(name, &cf_options(&mut rng)).unwrap());
    }
    let mut model: Model = vec![BTreeMap::new(); 3];
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for step in 0..steps {
        let at = format!("seed {seed} step {step}");
        let f = rng.random_range(0..3usize);
        match rng.random_range(0..100u32) {
            0..=29 => {
                let (k, v) = (key(&mut rng), value(&mut rng, step));
                db.put_cf(&cfs[f], &k, &v).unwrap();
                model[f].insert(k, v);
            }
            30..=37 => {
                let k = key(&mut rng);
                db.delete_cf(&cfs[f], &k).unwrap();
                model[f].remove(&k);
            }
            38..=40 => {
                let (mut a, mut b) = (key(&mut rng), key(&mut rng));
                if a > b {
                    std::mem::swap(&mut a, &mut b);
                }
                db.delete_range_cf(&WriteOptions::default(), &cfs[f], &a, &b)
                    .unwrap();
                model[f].retain(|k, _| k < &a || k >= &b);
            }
            41..=52 => {
                // One batch across families (atomic), some without the WAL.
                let mut batch = WriteBatch::new();
                let mut staged = model.clone();
                for _ in 0..rng.random_range(1..8) {
                    let g = rng.random_range(0..3usize);
                    let k = key(&mut rng);
                    if rng.random_bool(0.8) {
                        let v = value(&mut rng, step);
                        batch.put_cf(&cfs[g], &k, &v);
                        staged[g].insert(k, v);
                    } else {
                        batch.delete_cf(&cfs[g], &k);
                        staged[g].remove(&k);
                    }
                }
                let wo = WriteOptions {
                    sync: false,
                    disable_wal: rng.random_bool(0.2),
                };
                db.write(&wo, batch).unwrap();
                model = staged;
            }
            53..=64 => {
                let k = key(&mut rng);
                let got = db.get_cf(&cfs[f], &k).unwrap();
                assert_eq!(
                    got.as_ref(),
                    model[f].get(&k),
                    "{at}: get {:?} in {}",
                    String::from_utf8_lossy(&k),
                    FAMILIES[f]
                );
            }
            65..=71 => {
                let pairs: Vec<(usize, Vec<u8>)> = (0..rng.random_range(1..12))
                    .map(|_| (rng.random_range(0..3usize), key(&mut rng)))
                    .collect();
                let query: Vec<(&ColumnFamily, &[u8])> = pairs
                    .iter()
                    .map(|(g, k)| (&cfs[*g], k.as_slice()))
                    .collect();
                let got = db.multi_get_cf(&ReadOptions::default(), &query);
                for ((g, k), r) in pairs.iter().zip(got) {
                    assert_eq!(
                        r.unwrap().as_ref(),
                        model[*g].get(k),
                        "{at}: multi_get_cf in {}",
                        FAMILIES[*g]
                    );
                }
            }
            72..=75 => check_family(&db, &cfs[f], &ReadOptions::default(), &model[f], &at),
            76..=79 => {
                if snapshots.len() >= 3 {
                    snapshots.remove(0);
                }
                snapshots.push((db.snapshot(), model.clone()));
            }
            80..=83 => {
                if let Some((snap, frozen)) = snapshots.last() {
                    let ro = ReadOptions {
                        snapshot: Some(snap.clone()),
                        ..ReadOptions::default()
                    };
                    for g in 0..3 {
                        let k = key(&mut rng);
                        let got = db.get_cf_opt(&ro, &cfs[g], &k).unwrap();
                        assert_eq!(
                            got.as_ref(),
                            frozen[g].get(&k),
                            "{at}: snapshot get in {}",
                            FAMILIES[g]
                        );
                    }
                    check_family(&db, &cfs[f], &ro, &frozen[f], &format!("{at} (snapshot)"));
                }
            }
            84..=88 => db.flush_cf(&cfs[f]).unwrap(),
            89..=90 => db.compact_range_cf(&cfs[f], None, None).unwrap(),
            91..=95 => {
                // Close and reopen: every family comes back from the
                // MANIFEST with its options, and every write with it.
                snapshots.clear();
                cfs.clear();
                db.close().unwrap();
                (db, cfs) = open(dir.path());
                for g in 0..3 {
                    check_family(
                        &db,
                        &cfs[g],
                        &ReadOptions::default(),
                        &model[g],
                        &format!("{at} (reopen)"),
                    );
                }
            }
            _ => {
                // Drop and recreate a non-default family.
                let g = rng.random_range(1..3usize);
                snapshots.clear();
                db.drop_cf(&cfs[g]).unwrap();
                assert!(db.get_cf(&cfs[g], b"k000").is_err(), "{at}");
                cfs[g] = db.create_cf(FAMILIES[g], &cf_options(&mut rng)).unwrap();
                model[g].clear();
            }
        }
    }
    for g in 0..3 {
        check_family(
            &db,
            &cfs[g],
            &ReadOptions::default(),
            &model[g],
            &format!("seed {seed} end"),
        );
    }
}
