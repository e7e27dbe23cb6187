//! One check of every read path against a `BTreeMap` model, shared by the
//! feature tests whose effects every read path must honour (range deletes,
//! merge operators).
#![allow(dead_code)]

use std::collections::BTreeMap;

use batchkv::{BatchLookup, Db, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn k(i: u64) -> Vec<u8> {
    super::key(i)
}

/// Compares every read path of `db` (at `ro`'s snapshot) with `m` over keys
/// `key(0..n)` and keys between them: get; multi_get and multi_get_with under
/// every batch strategy (small batches too); iterators both ways, seeks with
/// direction changes, seek_for_prev; `range` both ways and `prefix`.
pub fn check_every_read_path(db: &Db, ro: &ReadOptions, m: &Model, n: u64) {
    let mut probes: Vec<Vec<u8>> = (0..n).map(k).collect();
    probes.extend((0..n).step_by(7).map(|i| {
        let mut x = k(i);
        x.push(b'!');
        x
    }));
    for p in &probes {
        assert_eq!(db.get_opt(ro, p).unwrap(), m.get(p).cloned(), "get {p:?}");
    }
    for lookup in [
        None,
        Some(BatchLookup::PerKey),
        Some(BatchLookup::Finger),
        Some(BatchLookup::Bfs),
        Some(BatchLookup::Auto),
    ] {
        let ro = ReadOptions {
            batch_lookup: lookup,
            ..ro.clone()
        };
        for (p, r) in probes.iter().zip(db.multi_get(&ro, &probes)) {
            assert_eq!(r.unwrap(), m.get(p).cloned(), "multi_get {lookup:?} {p:?}");
        }
        for chunk in probes.chunks(3) {
            let mut seen = 0;
            db.multi_get_with(&ro, chunk, |i, r| {
                assert_eq!(r.unwrap(), m.get(&chunk[i]).map(Vec::as_slice));
                seen += 1;
            });
            assert_eq!(seen, chunk.len());
        }
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut it = db.iter(ro).unwrap();
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(fwd, want, "forward scan");
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert_eq!(back, want, "backward scan");
    // Direction changes at every key: next then prev returns to the key.
    for p in &probes {
        it.seek(p);
        let exp = m
            .range(p.clone()..)
            .next()
            .map(|(k, v)| (k.clone(), v.clone()));
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
            exp
        );
        if it.valid() {
            it.prev();
            let exp = m
                .range(..p.clone())
                .next_back()
                .map(|(k, v)| (k.clone(), v.clone()));
            assert_eq!(
                it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
                exp,
                "seek+prev {p:?}"
            );
            if it.valid() {
                it.next();
                let exp = m.range(p.clone()..).next().map(|(k, _)| k.clone());
                assert_eq!(it.valid().then(|| it.key().to_vec()), exp, "…+next {p:?}");
            }
        }
        it.seek_for_prev(p);
        let exp = m
            .range(..=p.clone())
            .next_back()
            .map(|(k, v)| (k.clone(), v.clone()));
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
            exp,
            "seek_for_prev {p:?}"
        );
    }
    for (a, b) in [(0, n / 3), (n / 4, n / 2 + 3), (n / 2, n)] {
        let exp: Vec<_> = m
            .range(k(a)..k(b))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let got: Vec<_> = db
            .range(ro, k(a).as_slice()..k(b).as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, exp, "range {a}..{b}");
        let back: Vec<_> = db
            .range(ro, k(a).as_slice()..k(b).as_slice())
            .unwrap()
            .rev()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, exp.into_iter().rev().collect::<Vec<_>>(), "range rev");
    }
    let got: Vec<_> = db
        .prefix(ro, b"key0000001")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let exp: Vec<_> = m
        .iter()
        .filter(|(k, _)| k.starts_with(b"key0000001"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, exp, "prefix");
}
