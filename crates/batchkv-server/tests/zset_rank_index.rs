//! The sorted sets' rank index (`docs/format/server-keyspace.md` §5a):
//! random writes of every kind that changes a score index, ranks and
//! rank ranges checked against a model as they go, then the stored
//! records compared with the ones the format's definition gives for the
//! stored score index.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{q, Harness, Rng};

/// The format's fence level of an entry (`score key ‖ member`): trailing
/// all-zero 5-bit groups of fmix64(fnv1a64(entry)), at most 3.
fn fence_level(entry: &[u8]) -> u8 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in entry {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    (h.trailing_zeros() / 5).min(3) as u8
}

/// The format's score key: sorts bytewise as the scores do, -0 as +0.
fn score_key(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

fn entry(score: f64, member: &str) -> Vec<u8> {
    [&score_key(score)[..], member.as_bytes()].concat()
}

/// Members whose entry at score 7 has fence level `level`: the pool the
/// writes draw fences of every level from.
fn fences_at(level: u8, n: usize) -> Vec<String> {
    (0u64..)
        .map(|i| format!("f{level}:{i}"))
        .filter(|m| fence_level(&entry(7.0, m)) == level)
        .take(n)
        .collect()
}

/// The model of one sorted set: member → score.
type Model = HashMap<String, f64>;

fn ordered(m: &Model) -> Vec<(f64, String)> {
    let mut v: Vec<(f64, String)> = m.iter().map(|(k, s)| (*s, k.clone())).collect();
    v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then_with(|| a.1.cmp(&b.1)));
    v
}

/// ZRANK and ZREVRANK of every member of `key`, pipelined, against `m`.
fn check_ranks(c: &mut redis::Connection, key: &str, m: &Model, step: usize) {
    let order = ordered(m);
    assert_eq!(q::<usize>(c, &["ZCARD", key]), order.len(), "step {step}");
    for chunk in order.chunks(500).enumerate().map(|(i, ch)| (i * 500, ch)) {
        let (base, members) = chunk;
        let mut p = redis::pipe();
        for (_, mem) in members {
            p.cmd("ZRANK").arg(key).arg(mem);
            p.cmd("ZREVRANK").arg(key).arg(mem);
        }
        let got: Vec<i64> = p.query(c).unwrap();
        for (i, (_, mem)) in members.iter().enumerate() {
            let r = (base + i) as i64;
            let rev = order.len() as i64 - 1 - r;
            assert_eq!(
                (got[2 * i], got[2 * i + 1]),
                (r, rev),
                "step {step}: ranks of {mem} in {key}"
            );
        }
    }
}

/// ZRANGE and ZREVRANGE of short rank ranges across `key` (deep ones
/// start at the entry the rank index selects), against `m`.
fn check_rank_ranges(c: &mut redis::Connection, key: &str, m: &Model, step: usize) {
    let order: Vec<String> = ordered(m).into_iter().map(|(_, mem)| mem).collect();
    let n = order.len();
    let mut p = redis::pipe();
    let mut want = Vec::new();
    for start in (0..n).step_by(37) {
        let stop = (start + 5).min(n - 1);
        p.cmd("ZRANGE").arg(key).arg(start).arg(stop);
        want.push(order[start..=stop].to_vec());
        p.cmd("ZREVRANGE").arg(key).arg(start).arg(stop);
        want.push(
            order[n - 1 - stop..=n - 1 - start]
                .iter()
                .rev()
                .cloned()
                .collect(),
        );
    }
    let got: Vec<Vec<String>> = p.query(c).unwrap();
    assert_eq!(got, want, "step {step}: rank ranges of {key}");
}

/// ZRANGEBYSCORE and ZREVRANGEBYSCORE with deep LIMIT offsets (the entry
/// at the offset is selected by rank, not walked to) and ZCOUNT (long
/// ranges counted by rank), against `m`: bounds inclusive and exclusive,
/// infinite, between and on scores of members, ranges short and long.
fn check_score_offsets(c: &mut redis::Connection, key: &str, m: &Model, step: usize) {
    let order = ordered(m);
    // (argument, lower bound test, upper bound test)
    let bound = |arg: &str| -> (String, f64, bool) {
        let (ex, num) = match arg.strip_prefix('(') {
            Some(n) => (true, n),
            None => (false, arg),
        };
        let v = match num {
            "-inf" => f64::NEG_INFINITY,
            "+inf" => f64::INFINITY,
            n => n.parse().unwrap(),
        };
        (arg.to_string(), v, ex)
    };
    let mut p = redis::pipe();
    let mut want: Vec<Vec<String>> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    // -inf to +inf is the set's size without a read; "(-inf" and "(+inf"
    // leave out the infinite scores.
    for min in ["-inf", "(-inf", "-50", "(7", "7", "100", "(295", "7.5"] {
        for max in ["+inf", "(+inf", "250", "(250", "(7"] {
            let (min_arg, lo, lo_ex) = bound(min);
            let (max_arg, hi, hi_ex) = bound(max);
            let inside: Vec<&String> = order
                .iter()
                .filter(|(s, _)| if lo_ex { *s > lo } else { *s >= lo })
                .filter(|(s, _)| if hi_ex { *s < hi } else { *s <= hi })
                .map(|(_, mem)| mem)
                .collect();
            // ZCOUNT: ranges of 64 or more are counted by the ranks of
            // their ends.
            p.cmd("ZCOUNT").arg(key).arg(&min_arg).arg(&max_arg);
            counts.push(inside.len());
            for off in [64, 65, 100, 700, 2500, 5000] {
                p.cmd("ZRANGEBYSCORE")
                    .arg(key)
                    .arg(&min_arg)
                    .arg(&max_arg)
                    .arg("LIMIT")
                    .arg(off)
                    .arg(5);
                want.push(
                    inside
                        .iter()
                        .skip(off)
                        .take(5)
                        .map(|s| s.to_string())
                        .collect(),
                );
                p.cmd("ZREVRANGEBYSCORE")
                    .arg(key)
                    .arg(&max_arg)
                    .arg(&min_arg)
                    .arg("LIMIT")
                    .arg(off)
                    .arg(5);
                want.push(
                    inside
                        .iter()
                        .rev()
                        .skip(off)
                        .take(5)
                        .map(|s| s.to_string())
                        .collect(),
                );
            }
        }
    }
    let got: Vec<redis::Value> = p.query(c).unwrap();
    let (mut ranges, mut n) = (want.iter(), counts.iter());
    for (i, g) in got.into_iter().enumerate() {
        if let redis::Value::Int(g) = g {
            let w = *n.next().unwrap();
            assert_eq!(g as usize, w, "step {step}: reply {i}, ZCOUNT of {key}");
        } else {
            let g: Vec<String> = redis::from_redis_value(&g).unwrap();
            let w = ranges.next().unwrap();
            assert_eq!(
                &g, w,
                "step {step}: reply {i}, a score range of {key} with a deep offset"
            );
        }
    }
    assert!(ranges.next().is_none() && n.next().is_none());
}

/// ZLEXCOUNT, and ZRANGEBYLEX and ZREVRANGEBYLEX with deep LIMIT offsets,
/// over ranges short and long of `key` against `m` (members in the range
/// bytewise, whatever their scores: a set of one score is counted, and
/// its offsets found, by ranks; a set of mixed scores walks its members).
fn check_lex_counts(c: &mut redis::Connection, key: &str, m: &Model, step: usize) {
    let mut members: Vec<&String> = m.keys().collect();
    members.sort();
    let mut p = redis::pipe();
    let mut want = Vec::new();
    let mut r = redis::pipe();
    let mut want_ranges: Vec<Vec<String>> = Vec::new();
    let bounds = [
        "-", "+", "[", "[m1", "(m1", "[m2000", "(m2000", "[m9", "[f", "[m15", "(m15",
    ];
    for min in bounds {
        for max in bounds {
            let ok_lo = |x: &str| match min {
                "-" => true,
                "+" => false,
                b => {
                    let (ex, v) = (b.starts_with('('), &b[1..]);
                    if ex {
                        x > v
                    } else {
                        x >= v
                    }
                }
            };
            let ok_hi = |x: &str| match max {
                "+" => true,
                "-" => false,
                b => {
                    let (ex, v) = (b.starts_with('('), &b[1..]);
                    if ex {
                        x < v
                    } else {
                        x <= v
                    }
                }
            };
            p.cmd("ZLEXCOUNT").arg(key).arg(min).arg(max);
            let inside: Vec<&String> = members
                .iter()
                .copied()
                .filter(|x| ok_lo(x) && ok_hi(x))
                .collect();
            want.push(inside.len());
            // Deep offsets: selected by rank in a set of one score.
            for off in [64usize, 100, 1000, 3000] {
                r.cmd("ZRANGEBYLEX")
                    .arg(key)
                    .arg(min)
                    .arg(max)
                    .arg("LIMIT")
                    .arg(off)
                    .arg(5);
                want_ranges.push(
                    inside
                        .iter()
                        .skip(off)
                        .take(5)
                        .map(|x| x.to_string())
                        .collect(),
                );
                r.cmd("ZREVRANGEBYLEX")
                    .arg(key)
                    .arg(max)
                    .arg(min)
                    .arg("LIMIT")
                    .arg(off)
                    .arg(5);
                want_ranges.push(
                    inside
                        .iter()
                        .rev()
                        .skip(off)
                        .take(5)
                        .map(|x| x.to_string())
                        .collect(),
                );
            }
        }
    }
    let got: Vec<usize> = p.query(c).unwrap();
    assert_eq!(got, want, "step {step}: ZLEXCOUNTs of {key}");
    let got: Vec<Vec<String>> = r.query(c).unwrap();
    for (i, (g, w)) in got.iter().zip(&want_ranges).enumerate() {
        assert_eq!(
            g, w,
            "step {step}: lex range {i} of {key} with a deep offset"
        );
    }
    assert_eq!(got.len(), want_ranges.len());
}

/// One random write to `key` through the server, mirrored in `m`.
fn random_write(
    c: &mut redis::Connection,
    rng: &mut Rng,
    key: &str,
    m: &mut Model,
    pool: &[String],
) {
    let pick = |rng: &mut Rng| pool[rng.below(pool.len())].clone();
    let score = |rng: &mut Rng| -> f64 {
        match rng.below(20) {
            0 => 7.0,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            _ => (rng.below(400) as f64) - 100.0,
        }
    };
    match rng.below(10) {
        // ZADD of up to 60 members; fences at score 7 often.
        0..=3 => {
            let mut args = vec!["ZADD".to_string(), key.to_string()];
            for _ in 0..1 + rng.below(60) {
                let mem = pick(rng);
                let s = if mem.starts_with('f') && rng.below(2) == 0 {
                    7.0
                } else {
                    score(rng)
                };
                args.push(if s.is_infinite() {
                    (if s > 0.0 { "+inf" } else { "-inf" }).to_string()
                } else {
                    s.to_string()
                });
                args.push(mem.clone());
                m.insert(mem, s);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let _: i64 = q(c, &args);
        }
        4 => {
            let mem = pick(rng);
            let by = rng.below(7) as f64 - 3.0;
            let _: f64 = q(c, &["ZINCRBY", key, &by.to_string(), &mem]);
            let s = m.entry(mem).or_insert(0.0);
            *s += by;
        }
        5 | 6 => {
            let mut args = vec!["ZREM".to_string(), key.to_string()];
            for _ in 0..1 + rng.below(40) {
                let mem = pick(rng);
                m.remove(&mem);
                args.push(mem);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let _: i64 = q(c, &args);
        }
        7 => {
            let n = 1 + rng.below(30);
            let max = rng.below(2) == 0;
            let cmd = if max { "ZPOPMAX" } else { "ZPOPMIN" };
            let _: Vec<String> = q(c, &[cmd, key, &n.to_string()]);
            let order = ordered(m);
            let gone: Vec<&(f64, String)> = if max {
                order.iter().rev().take(n).collect()
            } else {
                order.iter().take(n).collect()
            };
            for (_, mem) in gone {
                m.remove(mem);
            }
        }
        8 => {
            let lo = rng.below(400) as f64 - 100.0;
            let hi = lo + rng.below(8) as f64;
            let _: i64 = q(
                c,
                &["ZREMRANGEBYSCORE", key, &lo.to_string(), &hi.to_string()],
            );
            m.retain(|_, s| !(*s >= lo && *s <= hi));
        }
        _ => {
            let order = ordered(m);
            if order.is_empty() {
                return;
            }
            let start = rng.below(order.len());
            let stop = start + rng.below(20);
            let _: i64 = q(
                c,
                &[
                    "ZREMRANGEBYRANK",
                    key,
                    &start.to_string(),
                    &stop.to_string(),
                ],
            );
            for (_, mem) in order.iter().skip(start).take(stop - start + 1) {
                m.remove(mem);
            }
        }
    }
}

/// One write of hundreds of members to `key` (a long run of removed or
/// added fences), mirrored in `m`: a removal of 500 consecutive ranks, or
/// an add of 400 members scored past the top (appended).
fn big_write(c: &mut redis::Connection, rng: &mut Rng, key: &str, m: &mut Model, pool: &[String]) {
    if rng.below(2) == 0 && m.len() > 600 {
        let start = rng.below(m.len() - 500);
        let order = ordered(m);
        let _: i64 = q(
            c,
            &[
                "ZREMRANGEBYRANK",
                key,
                &start.to_string(),
                &(start + 499).to_string(),
            ],
        );
        for (_, mem) in &order[start..start + 500] {
            m.remove(mem);
        }
    } else {
        let mut args = vec!["ZADD".to_string(), key.to_string()];
        for i in 0..400 {
            let mem = pool[rng.below(pool.len())].clone();
            let s = 1000.0 + i as f64;
            args.push(s.to_string());
            args.push(mem.clone());
            m.insert(mem, s);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: i64 = q(c, &args);
    }
}

/// Groups the keys of range `first` by their collection
/// (`db ‖ len ‖ user key ‖ version`, after `first`): collection → (rest
/// → value).
type Grouped = BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>>;

fn stored_groups(db: &batchkv::Db, first: u8) -> Grouped {
    let opts = batchkv::ReadOptions {
        lower_bound: Some(vec![first]),
        upper_bound: Some(vec![first + 1]),
        ..Default::default()
    };
    let mut it = db.iter(&opts).unwrap();
    it.seek([first]);
    let mut out = Grouped::new();
    while it.valid() {
        let k = it.key();
        let len = u32::from_be_bytes(k[2..6].try_into().unwrap()) as usize;
        let at = 6 + len + 8;
        out.entry(k[1..at].to_vec())
            .or_default()
            .insert(k[at..].to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

/// The records the format defines for a score index of `entries`
/// (ascending): per level, for each fence, the number of entries after
/// the level's previous fence up to and including it.
fn expected_records(entries: &[Vec<u8>]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    for level in 1..=3u8 {
        let mut since = 0u64;
        for e in entries {
            since += 1;
            if fence_level(e) >= level {
                out.insert([&[level][..], e].concat(), since.to_le_bytes().to_vec());
                since = 0;
            }
        }
    }
    out
}

/// Every sorted set's stored rank index equals the definition over its
/// stored score index (all `live` sets have versions with bit 62: created
/// by this server), and no records are left without a set (a dropped
/// set's records go with it).
fn check_stored(dir: &std::path::Path, live: usize) {
    let db = batchkv::Db::open(dir, batchkv::Options::default()).unwrap();
    let scores = stored_groups(&db, 0x13);
    let ranks = stored_groups(&db, 0x14);
    assert_eq!(scores.len(), live, "sorted sets");
    for (set, entries) in &scores {
        let version = u64::from_be_bytes(set[set.len() - 8..].try_into().unwrap());
        assert_ne!(version & (1 << 62), 0, "a new set's version has bit 62");
        let entries: Vec<Vec<u8>> = entries.keys().cloned().collect();
        assert_eq!(
            ranks.get(set).cloned().unwrap_or_default(),
            expected_records(&entries),
            "rank records of {}",
            set.escape_ascii()
        );
    }
    for set in ranks.keys() {
        assert!(
            scores.contains_key(set),
            "rank records of a set without members: {}",
            set.escape_ascii()
        );
    }
}

#[test]
fn rank_index_matches_its_definition_under_random_writes() {
    let mut pool: Vec<String> = (0..3000).map(|i| format!("m{i}")).collect();
    for level in 1..=3 {
        pool.extend(fences_at(level, 40 / usize::from(level)));
    }
    let mut h = Harness::start();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut big = Model::new();
    let mut small = Model::new();
    let mut c = h.conn();
    // A large set first, so that blocks of every level exist.
    for chunk in pool.chunks(500) {
        let mut args = vec!["ZADD".to_string(), "big".to_string()];
        for mem in chunk {
            let s = if mem.starts_with('f') {
                7.0
            } else {
                rng.below(400) as f64 - 100.0
            };
            args.push(s.to_string());
            args.push(mem.clone());
            big.insert(mem.clone(), s);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: i64 = q(&mut c, &args);
    }
    check_ranks(&mut c, "big", &big, 0);
    // A set of one score (ZLEXCOUNT's defined case), changed a little at
    // every step.
    let mut lex = Model::new();
    for chunk in pool.chunks(500) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg("lex");
        for mem in chunk {
            cmd.arg(0).arg(mem);
            lex.insert(mem.clone(), 0.0);
        }
        let _: i64 = cmd.query(&mut c).unwrap();
    }
    for step in 1..=400 {
        random_write(&mut c, &mut rng, "big", &mut big, &pool);
        random_write(&mut c, &mut rng, "small", &mut small, &pool[..200]);
        if step % 100 == 0 {
            big_write(&mut c, &mut rng, "big", &mut big, &pool);
        }
        if step % 50 == 0 {
            check_ranks(&mut c, "big", &big, step);
            check_ranks(&mut c, "small", &small, step);
            check_rank_ranges(&mut c, "big", &big, step);
            check_score_offsets(&mut c, "big", &big, step);
            check_lex_counts(&mut c, "lex", &lex, step);
            check_lex_counts(&mut c, "big", &big, step);
        }
        let mem = &pool[rng.below(pool.len())];
        if rng.below(2) == 0 {
            let _: i64 = q(&mut c, &["ZADD", "lex", "0", mem]);
            lex.insert(mem.clone(), 0.0);
        } else {
            let _: i64 = q(&mut c, &["ZREM", "lex", mem]);
            lex.remove(mem);
        }
        if step == 200 {
            // Across a restart.
            drop(c);
            h = h.restart(|_| {});
            c = h.conn();
        }
    }
    // Pipelines of writes to one set: the server runs them as one write
    // group, each command reading the ones before it through the group's
    // overlay.
    for round in 0..30 {
        let mut p = redis::pipe();
        for _ in 0..12 {
            let mem = pool[rng.below(pool.len())].clone();
            match rng.below(3) {
                0 => {
                    let s = if mem.starts_with('f') {
                        7.0
                    } else {
                        rng.below(50) as f64
                    };
                    p.cmd("ZADD").arg("big").arg(s).arg(&mem).ignore();
                    big.insert(mem, s);
                }
                1 => {
                    p.cmd("ZREM").arg("big").arg(&mem).ignore();
                    big.remove(&mem);
                }
                _ => {
                    p.cmd("ZINCRBY").arg("big").arg(2).arg(&mem).ignore();
                    *big.entry(mem).or_insert(0.0) += 2.0;
                }
            }
        }
        let () = p.query(&mut c).unwrap();
        if round % 10 == 9 {
            check_ranks(&mut c, "big", &big, 400 + round);
        }
    }
    // Copies, a *STORE result, a rename and a transaction's writes keep
    // (or build) the index too.
    let _: i64 = q(&mut c, &["COPY", "big", "copy"]);
    let _: i64 = q(&mut c, &["ZUNIONSTORE", "union", "2", "big", "small"]);
    let _: () = q(&mut c, &["RENAME", "small", "renamed"]);
    let mut t = redis::pipe();
    t.atomic()
        .cmd("ZADD")
        .arg("copy")
        .arg(7)
        .arg(&pool[3000])
        .ignore()
        .cmd("ZREM")
        .arg("copy")
        .arg(&pool[3001])
        .ignore()
        .cmd("ZRANK")
        .arg("copy")
        .arg(&pool[3000]);
    let _: (i64,) = t.query(&mut c).unwrap();
    let mut copy = big.clone();
    copy.insert(pool[3000].clone(), 7.0);
    copy.remove(&pool[3001]);
    check_ranks(&mut c, "copy", &copy, 401);
    check_ranks(&mut c, "renamed", &small, 401);
    let mut union = big.clone();
    for (mem, s) in &small {
        *union.entry(mem.clone()).or_insert(0.0) += s;
    }
    let union: Model = union
        .into_iter()
        .map(|(k, s)| (k, if s.is_nan() { 0.0 } else { s }))
        .collect();
    check_ranks(&mut c, "union", &union, 401);
    // A deleted set's records go with it.
    let _: i64 = q(&mut c, &["DEL", "big"]);
    drop(c);
    let dir = h.stop();
    let live = [&copy, &small, &union, &lex]
        .iter()
        .filter(|m| !m.is_empty())
        .count();
    check_stored(dir.path(), live);
}

/// A sorted set written by a server from before the rank index (a version
/// without bit 62, no records): its ranks are walked, writes to it add no
/// records, and COPY makes an indexed set of it.
#[test]
fn sets_from_before_the_index_are_walked_and_copies_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300usize;
    let version: u64 = 1_700_000_000_000_000; // microseconds, bit 62 clear
    {
        let db = batchkv::Db::open(dir.path(), batchkv::Options::default()).unwrap();
        let mut b = batchkv::WriteBatch::new();
        let mut meta = vec![0x02, 0x03];
        meta.extend_from_slice(&0u64.to_le_bytes());
        meta.extend_from_slice(&version.to_le_bytes());
        meta.extend_from_slice(&(n as u64).to_le_bytes());
        b.put(b"\x00old", meta);
        let prefix = |first: u8| {
            let mut p = vec![first, 0];
            p.extend_from_slice(&3u32.to_be_bytes());
            p.extend_from_slice(b"old");
            p.extend_from_slice(&version.to_be_bytes());
            p
        };
        for i in 0..n {
            let (score, member) = (i as f64, format!("m{i}"));
            b.put(
                [prefix(0x12), member.clone().into_bytes()].concat(),
                score.to_le_bytes(),
            );
            b.put([prefix(0x13), entry(score, &member)].concat(), []);
        }
        db.write(&batchkv::WriteOptions::default(), b).unwrap();
    }
    let server = common::start_in(dir.path(), |_| {});
    let url = format!("redis://{}/", server.addr());
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut old: Model = (0..n).map(|i| (format!("m{i}"), i as f64)).collect();
    check_ranks(&mut c, "old", &old, 0);
    let _: i64 = q(&mut c, &["ZADD", "old", "7", "f1:x", "150.5", "m3"]);
    let _: i64 = q(&mut c, &["ZREM", "old", "m10", "m200"]);
    old.insert("f1:x".into(), 7.0);
    old.insert("m3".into(), 150.5);
    old.remove("m10");
    old.remove("m200");
    check_ranks(&mut c, "old", &old, 1);
    let _: i64 = q(&mut c, &["COPY", "old", "new"]);
    check_ranks(&mut c, "new", &old, 2);
    let _: i64 = q(&mut c, &["ZADD", "new", "7", "f1:y", "-1", "m5"]);
    let mut new = old.clone();
    new.insert("f1:y".into(), 7.0);
    new.insert("m5".into(), -1.0);
    check_ranks(&mut c, "new", &new, 3);
    drop(c);
    server.shutdown();
    server.join().unwrap();
    let db = batchkv::Db::open(dir.path(), batchkv::Options::default()).unwrap();
    let scores = stored_groups(&db, 0x13);
    let ranks = stored_groups(&db, 0x14);
    // Only the copy has records, and they match its score index.
    let (copy, entries) = scores.iter().find(|(set, _)| set[5..8] == *b"new").unwrap();
    let entries: Vec<Vec<u8>> = entries.keys().cloned().collect();
    assert_eq!(ranks.len(), 1, "only the copy is indexed");
    assert_eq!(ranks.get(copy).unwrap(), &expected_records(&entries));
}
