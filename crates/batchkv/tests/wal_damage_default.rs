//! Issue 27, item 1: a WAL with a byte flipped in the middle used to be
//! recovered to the prefix before the damage by default (point-in-time),
//! dropping half the database to a `lost/` copy nobody was told about.
//! Damage followed by intact records is not what a crash leaves, so the
//! default (`tolerate-corrupted-tail`) now refuses the open with a
//! `Corruption` naming the WAL and the offset and saying how to salvage,
//! and changes nothing on disk; what a crash does leave (a torn tail, zero
//! fill, damage with nothing intact after it) is still accepted, and
//! reported.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batchkv::{Db, Error, Options, RecoveryStatus, WalRecoveryMode, WriteBatch, WriteOptions};

const N: u64 = 1000;

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-").repeat(8).into_bytes()
}

/// Writes keys `from..to`, one batch (one WAL record) each, and closes (a
/// clean close leaves logged writes in the WAL). Returns the newest WAL.
fn write_range(dir: &Path, from: u64, to: u64) -> PathBuf {
    let db = Db::open(dir, common::opts()).unwrap();
    for i in from..to {
        let mut b = WriteBatch::new();
        b.put(common::key(i), value(i));
        db.write(&WriteOptions::default(), b).unwrap();
    }
    db.close().unwrap();
    wals(dir).pop().expect("a WAL")
}

/// The WALs of `dir`, oldest first.
fn wals(dir: &Path) -> Vec<PathBuf> {
    let mut w: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    w.sort();
    w
}

/// Every file under `dir` (recursively) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else if p.file_name().is_some_and(|n| n != "LOCK") {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut data = std::fs::read(path).unwrap();
    f(&mut data);
    std::fs::write(path, &data).unwrap();
}

/// Keys present among `0..n`.
fn present(db: &Db, n: u64) -> Vec<u64> {
    (0..n)
        .filter(|&i| match db.get(common::key(i)).unwrap() {
            Some(v) => {
                assert_eq!(v, value(i), "key {i} has a wrong value");
                true
            }
            None => false,
        })
        .collect()
}

fn with_mode(mode: WalRecoveryMode) -> Options {
    Options {
        wal_recovery_mode: mode,
        ..common::opts()
    }
}

/// Asserts `r` is the default's refusal: `Corruption` in `wal` at an
/// offset in `offsets`, with the salvage advice.
fn assert_refused(r: Result<Db, Error>, wal: &Path, offsets: std::ops::RangeInclusive<u64>) {
    let e = match r {
        Ok(_) => panic!("opened over damage followed by intact records"),
        Err(e) => e,
    };
    let text = e.to_string();
    match &e {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(Path::new(file), wal, "{text}");
            assert!(offsets.contains(offset), "offset {offset}: {text}");
        }
        other => panic!("expected Corruption, got {other}"),
    }
    for advice in [
        "wal_recovery_mode=point-in-time",
        "skip-corrupted",
        "--wal-recovery",
    ] {
        assert!(text.contains(advice), "no {advice:?} in: {text}");
    }
}

#[test]
fn flipped_byte_mid_log_is_refused_by_default_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    let bad = 40_000u64; // inside the second 32 KiB block
    edit(&wal, |d| d[bad as usize] ^= 0x55);
    let before = snapshot(dir.path());

    assert_refused(
        Db::open(dir.path(), Options::default()),
        &wal,
        32 * 1024..=bad,
    );
    assert_refused(
        Db::open_read_only(dir.path(), Options::default()),
        &wal,
        32 * 1024..=bad,
    );
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a refused open wrote something"
    );
    assert!(!dir.path().join("lost").exists());

    // The salvage the message names works: the prefix, reported and kept.
    let db = Db::open(dir.path(), with_mode(WalRecoveryMode::PointInTime)).unwrap();
    let kept = present(&db, N);
    assert!(!kept.is_empty() && kept.len() < N as usize);
    assert!(db.recovery_report().lost_writes());
    assert_eq!(db.recovery_report().kept_aside.len(), 1);
    db.close().unwrap();
}

#[test]
fn zeroed_block_mid_log_is_refused_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    edit(&wal, |d| d[32 * 1024..64 * 1024].fill(0));
    assert_refused(
        Db::open(dir.path(), Options::default()),
        &wal,
        0..=32 * 1024,
    );
}

/// A database whose two live WALs hold keys `0..300` (the older) and
/// `300..600` (the newer), as a crash between a memtable switch and the
/// flush leaves them. Built from a twin database: the twin's second WAL
/// (written after a reopen, so its sequence numbers continue the first's)
/// is copied in beside the first. Returns (older, newer).
fn two_wals(dir: &Path) -> (PathBuf, PathBuf) {
    let twin = tempfile::tempdir().unwrap();
    let older = write_range(dir, 0, 300);
    write_range(twin.path(), 0, 300);
    let newer = write_range(twin.path(), 300, 600);
    let name = newer.file_name().unwrap();
    assert!(name > older.file_name().unwrap());
    std::fs::copy(&newer, dir.join(name)).unwrap();
    assert_eq!(wals(dir).len(), 2);
    let db = Db::open_read_only(dir, Options::default()).unwrap();
    assert_eq!(present(&db, 600).len(), 600, "both WALs are replayed");
    drop(db);
    (older, dir.join(name))
}

#[test]
fn damage_in_an_older_log_than_the_last_is_refused_by_default() {
    // A torn tail in the older WAL: not the end of the history, since the
    // newer one holds intact writes.
    let dir = tempfile::tempdir().unwrap();
    let (older, _) = two_wals(dir.path());
    let len = std::fs::metadata(&older).unwrap().len();
    edit(&older, |d| d.truncate(d.len() - 50));
    assert_refused(Db::open(dir.path(), Options::default()), &older, 0..=len);

    // A flipped byte in the older WAL.
    let dir = tempfile::tempdir().unwrap();
    let (older, _) = two_wals(dir.path());
    edit(&older, |d| d[10_000] ^= 0x55);
    assert_refused(Db::open(dir.path(), Options::default()), &older, 0..=10_000);
}

#[test]
fn torn_tail_followed_only_by_empty_wals_is_accepted() {
    // What a crash during recovery leaves: the new WAL was created, the
    // MANIFEST edit that retires the old one was not written.
    let dir = tempfile::tempdir().unwrap();
    let (older, newer) = two_wals(dir.path());
    std::fs::write(&newer, b"").unwrap();
    edit(&older, |d| d.truncate(d.len() - 50));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(present(&db, 600), (0..299).collect::<Vec<_>>());
    let r = db.recovery_report();
    assert!(!r.lost_writes(), "{r:#?}");
    assert_eq!(r.damage.len(), 1);
    assert!(r.damage[0].torn_tail && r.damage[0].file == older, "{r:#?}");
}

#[test]
fn torn_tail_of_the_last_log_is_accepted_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    edit(&wal, |d| d.truncate(d.len() - 7));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(present(&db, N), (0..N - 1).collect::<Vec<_>>());
    let r = db.recovery_report();
    assert!(!r.lost_writes(), "{r:#?}");
    assert!(r.damage.len() == 1 && r.damage[0].torn_tail, "{r:#?}");
    assert!(r.kept_aside.is_empty());
}

/// Header offsets of the physical records of a log written without damage.
fn record_offsets(data: &[u8]) -> Vec<usize> {
    const BLOCK: usize = 32 * 1024;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 7 <= data.len() {
        if BLOCK - pos % BLOCK < 7 {
            pos += BLOCK - pos % BLOCK;
            continue;
        }
        out.push(pos);
        pos += 7 + usize::from(u16::from_le_bytes([data[pos + 4], data[pos + 5]]));
    }
    out
}

#[test]
fn damage_in_the_final_block_with_nothing_intact_after_it_is_a_tail() {
    // The last record's length shortened: a checksum mismatch with bytes
    // after it, none of which frames an intact record.
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    let mut at = 0;
    edit(&wal, |d| {
        at = *record_offsets(d).last().unwrap();
        d[at + 4] -= 1;
    });
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(present(&db, N), (0..N - 1).collect::<Vec<_>>());
    let r = db.recovery_report().clone();
    assert_eq!(r.status(), RecoveryStatus::TailTruncated, "{r:#?}");
    assert_eq!(r.damage[0].offset, at as u64);
    assert!(r.kept_aside.is_empty());
    db.close().unwrap();
}

#[test]
fn damage_in_the_final_block_with_intact_records_after_it_is_refused() {
    // A flipped byte in a record the reader cannot frame past (it skips
    // the rest of the block), with intact records after it in that block.
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    let mut at = 0;
    edit(&wal, |d| {
        let offsets = record_offsets(d);
        let last = *offsets.last().unwrap();
        at = offsets[offsets.len() - 3];
        assert_eq!(at / 32768, last / 32768, "in the same block");
        d[at + 20] ^= 0x55;
    });
    let e = match Db::open(dir.path(), Options::default()) {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(&format!("at offset {at}")) && e.contains("same block"),
        "{e}"
    );
    // Point in time keeps the prefix and says writes were lost.
    let db = Db::open(dir.path(), with_mode(WalRecoveryMode::PointInTime)).unwrap();
    assert_eq!(db.recovery_report().status(), RecoveryStatus::Damaged);
    assert_eq!(db.recovery_report().kept_aside.len(), 1);
    assert_eq!(present(&db, N).len() as u64, N - 3);
}

#[test]
fn zero_filled_tail_is_accepted_and_reported() {
    // What a power loss can leave: the file's length reached the disk, the
    // data of its last pages did not.
    let dir = tempfile::tempdir().unwrap();
    let wal = write_range(dir.path(), 0, N);
    let (mut cut, mut lost) = (0, 0u64);
    edit(&wal, |d| {
        // The last 10 logical records (FULL or FIRST fragments) start here.
        let starts: Vec<usize> = record_offsets(d)
            .into_iter()
            .filter(|&o| matches!(d[o + 6], 1 | 2))
            .collect();
        cut = starts[starts.len() - 10];
        lost = 10;
        d[cut..].fill(0);
    });
    // Absolute consistency refuses it, like any damage (and changes nothing).
    let e = Db::open(dir.path(), with_mode(WalRecoveryMode::AbsoluteConsistency));
    assert!(matches!(e, Err(Error::Corruption { .. })));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(present(&db, N), (0..N - lost).collect::<Vec<_>>());
    let r = db.recovery_report();
    assert_eq!(r.status(), RecoveryStatus::TailTruncated, "{r:#?}");
    assert_eq!(r.damage[0].offset, cut as u64);
    assert!(r.damage[0].detail.contains("zero fill"), "{r:#?}");
}

#[test]
fn the_report_says_clean_tail_or_damaged() {
    let dir = tempfile::tempdir().unwrap();
    write_range(dir.path(), 0, 10);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let r = db.recovery_report();
    assert_eq!(r.status(), RecoveryStatus::Clean);
    assert_eq!(r.mode, WalRecoveryMode::TolerateCorruptedTailRecords);
    assert_eq!((r.records_dropped(), r.bytes_dropped()), (0, 0));
    assert_eq!(r.status().as_str(), "clean");
}

#[test]
fn mode_names_parse_in_every_spelling() {
    for (names, mode) in [
        (
            [
                "tolerate-corrupted-tail",
                "tolerate_corrupted_tail_records",
                "kTolerateCorruptedTailRecords",
            ],
            WalRecoveryMode::TolerateCorruptedTailRecords,
        ),
        (
            ["absolute", "absolute_consistency", "kAbsoluteConsistency"],
            WalRecoveryMode::AbsoluteConsistency,
        ),
        (
            ["point-in-time", "point_in_time", "kPointInTimeRecovery"],
            WalRecoveryMode::PointInTime,
        ),
        (
            [
                "skip-corrupted",
                "skip_any_corrupted_records",
                "kSkipAnyCorruptedRecords",
            ],
            WalRecoveryMode::SkipAnyCorruptedRecords,
        ),
    ] {
        for n in names {
            let o: Options = format!("wal_recovery_mode={n}").parse().unwrap();
            assert_eq!(o.wal_recovery_mode, mode, "{n}");
        }
        assert_eq!(mode.name().parse::<WalRecoveryMode>().unwrap(), mode);
    }
    assert_eq!(
        Options::default().wal_recovery_mode,
        WalRecoveryMode::TolerateCorruptedTailRecords
    );
    let e = "wal_recovery_mode=sometimes"
        .parse::<Options>()
        .unwrap_err();
    assert!(e.to_string().contains("point-in-time"), "{e}");
}

/// Copies the files of `from` into a new temporary directory.
fn copy_of(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "LOCK") {
            std::fs::copy(&p, to.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    to
}

/// A damaged database (keys `0..keys` written) built by `make` in a fresh
/// directory.
struct Case {
    name: &'static str,
    keys: u64,
    dir: tempfile::TempDir,
}

fn case(name: &'static str, make: impl FnOnce(&Path) -> u64) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let keys = make(dir.path());
    Case { name, keys, dir }
}

/// One cell of the table: what opening a copy of `c` in `mode` does.
fn outcome(c: &Case, mode: WalRecoveryMode) -> (bool, String) {
    let dir = copy_of(c.dir.path());
    match Db::open(dir.path(), with_mode(mode)) {
        Err(Error::Corruption { file, offset, .. }) => {
            let name = Path::new(&file).file_name().unwrap().to_string_lossy();
            (false, format!("refused: {name} at {offset}"))
        }
        Err(e) => panic!("{}: {mode}: unexpected error {e}", c.name),
        Ok(db) => {
            let kept = present(&db, c.keys);
            let r = db.recovery_report().clone();
            db.close().unwrap();
            let prefix = kept.iter().copied().eq(0..kept.len() as u64);
            (
                true,
                format!(
                    "opens: {}/{} keys{}, {}, {} dropped{}",
                    kept.len(),
                    c.keys,
                    if prefix { "" } else { " (not a prefix)" },
                    r.status().as_str(),
                    r.records_dropped(),
                    if r.kept_aside.is_empty() {
                        ""
                    } else {
                        ", copy in lost/"
                    }
                ),
            )
        }
    }
}

/// The table of `docs/format/wal.md` §4 (damage kind × mode), printed with
/// `--nocapture`; the assertions pin which cells open.
#[test]
fn damage_kind_by_mode_table() {
    let last_wal = |dir: &Path| wals(dir).pop().unwrap();
    let cases = [
        case("torn tail (last 5 bytes cut)", |d| {
            edit(&write_range(d, 0, N), |w| w.truncate(w.len() - 5));
            N
        }),
        case("zero-filled tail (last 10 records zeroed)", |d| {
            edit(&write_range(d, 0, N), |w| {
                let starts: Vec<usize> = record_offsets(w)
                    .into_iter()
                    .filter(|&o| matches!(w[o + 6], 1 | 2))
                    .collect();
                let cut = starts[starts.len() - 10];
                w[cut..].fill(0);
            });
            N
        }),
        case("final block, nothing intact after", |d| {
            edit(&write_range(d, 0, N), |w| {
                let at = *record_offsets(w).last().unwrap();
                w[at + 4] -= 1;
            });
            N
        }),
        case("final block, intact records after", |d| {
            edit(&write_range(d, 0, N), |w| {
                let o = record_offsets(w);
                w[o[o.len() - 3] + 20] ^= 0x55;
            });
            N
        }),
        case("flipped byte mid-log", |d| {
            edit(&write_range(d, 0, N), |w| w[40_000] ^= 0x55);
            N
        }),
        case("zeroed block mid-log", |d| {
            edit(&write_range(d, 0, N), |w| w[32_768..65_536].fill(0));
            N
        }),
        case("older WAL torn, newer holds records", |d| {
            let (older, _) = two_wals(d);
            edit(&older, |w| w.truncate(w.len() - 50));
            600
        }),
        case("older WAL flipped byte", |d| {
            let (older, _) = two_wals(d);
            edit(&older, |w| w[10_000] ^= 0x55);
            600
        }),
        case("older WAL torn, newer empty", |d| {
            let (older, newer) = two_wals(d);
            std::fs::write(newer, b"").unwrap();
            edit(&older, |w| w.truncate(w.len() - 50));
            600
        }),
        case("older WAL missing", |d| {
            let (older, _) = two_wals(d);
            std::fs::remove_file(older).unwrap();
            600
        }),
        case("only WAL missing", |d| {
            write_range(d, 0, N);
            std::fs::remove_file(last_wal(d)).unwrap();
            N
        }),
    ];
    let modes = [
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::SkipAnyCorruptedRecords,
    ];
    println!(
        "| damage | {} |",
        modes.map(|m| format!("`{m}`")).join(" | ")
    );
    println!("|---|---|---|---|---|");
    for c in &cases {
        let cells: Vec<(bool, String)> = modes.iter().map(|&m| outcome(c, m)).collect();
        println!(
            "| {} | {} |",
            c.name,
            cells
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let opens: Vec<bool> = cells.iter().map(|(o, _)| *o).collect();
        // What a crash leaves opens in every mode but absolute; anything
        // else is refused by the default and absolute, opened by the
        // salvaging modes.
        let crash_like = matches!(
            c.name,
            "torn tail (last 5 bytes cut)"
                | "zero-filled tail (last 10 records zeroed)"
                | "final block, nothing intact after"
                | "older WAL torn, newer empty"
        );
        assert_eq!(
            opens,
            [crash_like, false, true, true],
            "{}: {cells:?}",
            c.name
        );
        for (open, text) in &cells[2..] {
            assert!(*open);
            let status = if crash_like {
                "tail-truncated"
            } else {
                "damaged"
            };
            assert!(text.contains(status), "{}: {text}", c.name);
        }
    }
}
