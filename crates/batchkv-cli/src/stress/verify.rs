//! Whole-database verification against the oracle, used at the start and
//! end of every stress run and by `crashtest` after every kill.
//!
//! Every key is read twice — by a full scan and by `multi_get` (plus `get`
//! for a sample) — and both must agree and be allowed by the oracle: with
//! [`Mode::Live`] exactly the acknowledged state; with [`Mode::AfterCrash`]
//! also the pending one and the unpersisted WAL-less ones (see the oracle),
//! and batches in flight at the crash must be all-or-nothing; the state
//! found then becomes the acknowledged and durable one, so the next run
//! starts exact.

use std::collections::HashMap;

use batchkv::{BatchLookup, Db, ReadOptions};

use super::families::Families;

use super::oracle::{key_bytes, key_index, Observed, Oracle, OracleResult};

/// What a verification covered.
#[derive(Debug, Default, Clone, Copy)]
pub struct Report {
    /// Keys checked.
    pub keys: u64,
    /// Keys that had a write in flight.
    pub pending: u64,
    /// Batches that were in flight.
    pub batches: u64,
    /// Keys with acknowledged WAL-less writes not yet known to be durable.
    pub unpersisted: u64,
    /// Of those, keys found in an older state than acknowledged (the crash
    /// lost WAL-less writes, as it may).
    pub lost: u64,
}

/// What verification may assume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The database has been open in this process since the writes: every
    /// acknowledged write is visible, no write is in flight.
    Live,
    /// The database was reopened after a crash or a close: resolve what
    /// was in flight or unpersisted.
    AfterCrash,
}

/// Per batch in flight: keys found in their old state only, in their new
/// state only, and the key indexes (for messages).
#[derive(Default)]
struct BatchSeen {
    old: Vec<u64>,
    new: Vec<u64>,
}

pub fn verify_all(db: &Db, fams: &Families, oracle: &Oracle, mode: Mode) -> OracleResult<Report> {
    let n = oracle.num_keys();
    let dberr = |what: &str, e: batchkv::Error| format!("{what} failed: {e}");

    // 1. A full scan of every family.
    let mut scanned: Vec<Option<Vec<u8>>> = vec![None; n as usize];
    for cf in fams.all() {
        let mut it = db
            .iter_cf(&ReadOptions::default(), cf)
            .map_err(|e| dberr("creating an iterator", e))?;
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            let key = it.key();
            let i = key_index(key)
                .filter(|&i| i < n && fams.of(i).id() == cf.id())
                .ok_or_else(|| {
                    format!(
                        "scan of column family {} returned a key never written there: {:?}",
                        cf.name(),
                        String::from_utf8_lossy(key)
                    )
                })?;
            if prev.as_deref().is_some_and(|p| p >= key) {
                return Err(format!(
                    "scan out of order at {:?}",
                    String::from_utf8_lossy(key)
                ));
            }
            prev = Some(key.to_vec());
            scanned[i as usize] = Some(it.value().to_vec());
            it.next();
        }
        it.status().map_err(|e| dberr("scan", e))?;
    }

    // 2. multi_get in chunks (every strategy) and a sample of gets must agree.
    let strategies = [
        BatchLookup::PerKey,
        BatchLookup::Finger,
        BatchLookup::Bfs,
        BatchLookup::Auto,
    ];
    for (c, start) in (0..n).step_by(500).enumerate() {
        let keys: Vec<Vec<u8>> = (start..(start + 500).min(n)).map(key_bytes).collect();
        let ropts = ReadOptions {
            batch_lookup: Some(strategies[c % strategies.len()]),
            ..ReadOptions::default()
        };
        let query: Vec<(&batchkv::ColumnFamily, &[u8])> = keys
            .iter()
            .enumerate()
            .map(|(j, k)| (fams.of(start + j as u64), k.as_slice()))
            .collect();
        for (j, r) in db.multi_get_cf(&ropts, &query).into_iter().enumerate() {
            let i = start + j as u64;
            let got = r.map_err(|e| dberr(&format!("multi_get of key {i}"), e))?;
            if got != scanned[i as usize] {
                return Err(mismatch_reads(i, "multi_get", &got, &scanned[i as usize]));
            }
            if i.is_multiple_of(7) {
                let single = db
                    .get_cf(fams.of(i), &keys[j])
                    .map_err(|e| dberr("get", e))?;
                if single != got {
                    return Err(mismatch_reads(i, "get", &single, &got));
                }
            }
        }
    }

    // 3. Against the oracle; batches in flight all-or-nothing.
    let mut report = Report {
        keys: n,
        ..Report::default()
    };
    let mut batches: HashMap<u64, BatchSeen> = HashMap::new();
    for i in 0..n {
        let mut g = oracle.lock(i);
        let st = g.state();
        let obs = Observed::parse(i, scanned[i as usize].as_deref());
        let allowed = match mode {
            Mode::Live => st.pending.is_none() && obs.matches(st.acked),
            Mode::AfterCrash => st.allows_after_crash(&obs),
        };
        if !allowed {
            return Err(format!(
                "MISMATCH key {} (index {i}): expected {}, actual {}",
                String::from_utf8_lossy(&key_bytes(i)),
                st.describe(),
                obs.describe()
            ));
        }
        if let Some((p, batch)) = st.pending {
            report.pending += 1;
            if batch != 0 {
                // Two deletions look alike: such a key counts as neither.
                let is_old = st.allows_settled(&obs) && !obs.matches(p);
                let is_new = obs.matches(p) && !st.allows_settled(&obs);
                let seen = batches.entry(batch).or_default();
                if is_old {
                    seen.old.push(i);
                }
                if is_new {
                    seen.new.push(i);
                }
            }
        }
        if st.window_low != 0 {
            report.unpersisted += 1;
            if !st.allows(&obs) {
                report.lost += 1;
            }
        }
        if mode == Mode::AfterCrash {
            g.resolve(&obs)?;
        }
    }
    report.batches = batches.len() as u64;
    for (batch, seen) in &batches {
        if !seen.old.is_empty() && !seen.new.is_empty() {
            return Err(format!(
                "MISMATCH batch {batch:#x} partially applied: keys {:?} hold the batch's values, keys {:?} their older ones",
                seen.new, seen.old
            ));
        }
    }
    Ok(report)
}

fn mismatch_reads(i: u64, what: &str, a: &Option<Vec<u8>>, b: &Option<Vec<u8>>) -> String {
    let show = |v: &Option<Vec<u8>>| match v {
        Some(v) => format!("{:?}", String::from_utf8_lossy(v)),
        None => "absent".to_string(),
    };
    format!(
        "MISMATCH key {} (index {i}): {what} returned {}, the scan {}",
        String::from_utf8_lossy(&key_bytes(i)),
        show(a),
        show(b)
    )
}
