//! Replaying the WALs at open, per [`WalRecoveryMode`], and the
//! [`RecoveryReport`] that says what was replayed and what was not.
//!
//! Damage is classified by what follows it: a **tail** is damage with
//! nothing intact after it — no record later in its log and none in any
//! later log — which is what a crash leaves (a torn last write, zero fill
//! where unsynced data never reached the disk). Damage followed by intact
//! records is not: applying only a prefix drops acknowledged writes.
//! Per mode:
//!
//! | mode | tail | damage followed by intact records |
//! |---|---|---|
//! | `TolerateCorruptedTailRecords` (default) | kept prefix | open fails, naming the WAL, the offset and how to salvage |
//! | `AbsoluteConsistency` | open fails | open fails |
//! | `PointInTime` | kept prefix | kept prefix; the rest reported, copied to `lost/` |
//! | `SkipAnyCorruptedRecords` | kept prefix | damaged records skipped, the rest applied; copied to `lost/` |
//!
//! A failed open changes nothing on disk: the replayed memtables are
//! handed to the caller's sink (which writes them as tables) only once the
//! whole replay is accepted. In every mode a batch is applied whole or not
//! at all (one batch is one checksummed record).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::options::WalRecoveryMode;
use crate::wal;

/// Where recovery found a WAL damaged, and what that cost.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalDamage {
    /// The WAL file.
    pub file: PathBuf,
    /// Offset of the first damaged record.
    pub offset: u64,
    /// Which check failed.
    pub detail: String,
    /// Nothing intact follows the damage (no record later in this log, and
    /// none in any later log): the end of the write history, as a crash
    /// during the last write leaves it. False when intact records follow
    /// (they were not applied, or were applied after skipping the damage).
    pub torn_tail: bool,
    /// Intact records after the damage (in this log) that were not applied.
    pub records_dropped: u64,
    /// Bytes from the damage to the next applied record (or the end of the
    /// file) that were not applied.
    pub bytes_dropped: u64,
}

/// The outcome of a recovery in one word ([`RecoveryReport::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryStatus {
    /// Every logged write was replayed.
    Clean,
    /// The history ended in a tail (a torn or zero-filled last write), not
    /// applied; nothing intact was dropped.
    TailTruncated,
    /// Intact records were not applied, or damage was skipped over.
    Damaged,
}

impl RecoveryStatus {
    /// `clean`, `tail-truncated` or `damaged`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryStatus::Clean => "clean",
            RecoveryStatus::TailTruncated => "tail-truncated",
            RecoveryStatus::Damaged => "damaged",
        }
    }
}

/// What opening the database replayed from its WALs, and what it dropped.
/// An empty `damage` and `wals_dropped` mean every logged write was recovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// The recovery mode the open used.
    pub mode: WalRecoveryMode,
    /// The WALs whose records were applied, oldest first.
    pub wals_replayed: Vec<PathBuf>,
    /// Write batches applied from them.
    pub records_replayed: u64,
    /// Every damaged place found, in log order.
    pub damage: Vec<WalDamage>,
    /// Later WALs not applied because point-in-time recovery stopped in an
    /// earlier one, with the number of intact records each held.
    pub wals_dropped: Vec<(PathBuf, u64)>,
    /// Copies of the WALs whose intact records were dropped or skipped,
    /// kept in the database's `lost/` directory for salvage.
    pub kept_aside: Vec<PathBuf>,
}

impl RecoveryReport {
    /// True when acknowledged writes may be missing: some intact record was
    /// not applied, or damage was skipped over (not merely a torn tail).
    pub fn lost_writes(&self) -> bool {
        self.damage
            .iter()
            .any(|d| !d.torn_tail || d.records_dropped > 0)
            || self.wals_dropped.iter().any(|(_, n)| *n > 0)
    }

    /// Clean, tail-truncated or damaged.
    pub fn status(&self) -> RecoveryStatus {
        if self.lost_writes() {
            RecoveryStatus::Damaged
        } else if self.damage.is_empty() {
            RecoveryStatus::Clean
        } else {
            RecoveryStatus::TailTruncated
        }
    }

    /// Intact write batches found but not applied, in damaged logs and in
    /// later logs dropped whole.
    pub fn records_dropped(&self) -> u64 {
        self.damage.iter().map(|d| d.records_dropped).sum::<u64>()
            + self.wals_dropped.iter().map(|(_, n)| n).sum::<u64>()
    }

    /// Bytes of the damaged logs not applied (later logs dropped whole
    /// are not counted: see [`RecoveryReport::wals_dropped`]).
    pub fn bytes_dropped(&self) -> u64 {
        self.damage.iter().map(|d| d.bytes_dropped).sum()
    }
}

/// The name of the directory damaged WALs are copied to.
pub(crate) const LOST_DIR: &str = "lost";

/// How to replay: the recovery mode, and whether damaged WALs may be
/// copied to `lost/` (not by a read-only open, which writes nothing).
#[derive(Debug, Clone, Copy)]
pub(super) struct ReplayPolicy {
    pub mode: WalRecoveryMode,
    pub keep_damaged: bool,
    /// A WAL the MANIFEST says holds unflushed writes that does not exist
    /// (the newest log number a flush recorded: never deleted while the
    /// MANIFEST names it). Its writes are lost: damage, never a tail.
    pub missing: Option<u64>,
}

/// Replays `logs` (oldest first) into memtables from `new_mems`, which
/// gives, for a log number, a fresh memtable for each column family whose
/// records that log may hold unflushed (records of other families —
/// dropped, or already flushed past this log — are skipped). Once the
/// whole replay is accepted by the mode, `sink` receives each filled
/// memtable with its family, oldest first; a refused replay returns the
/// `Corruption` error having called `sink` for nothing and written
/// nothing. Returns the report and raises `max_sequence` to the largest
/// sequence number applied.
pub(super) fn replay_logs(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    logs: &[u64],
    policy: ReplayPolicy,
    mut new_mems: impl FnMut(u64) -> Vec<(u32, Arc<dyn MemTable>)>,
    mut sink: impl FnMut(u32, Arc<dyn MemTable>) -> Result<()>,
    max_sequence: &mut u64,
) -> Result<RecoveryReport> {
    let mode = policy.mode;
    let mut report = RecoveryReport {
        mode,
        ..RecoveryReport::default()
    };
    let mut stopped = false;
    // Logs with damage or dropped records, with their bytes: which to copy
    // to `lost/` is known only at the end.
    let mut suspects: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut filled: Vec<(u32, Arc<dyn MemTable>)> = Vec::new();
    let mut numbers = logs.to_vec();
    numbers.extend(policy.missing);
    numbers.sort_unstable();
    for number in numbers {
        let path = crate::filename::path(dir, crate::filename::FileKind::Wal, number);
        if policy.missing == Some(number) {
            if !stopped {
                report.damage.push(WalDamage {
                    file: path,
                    offset: 0,
                    detail: MISSING.to_string(),
                    torn_tail: false,
                    records_dropped: 0,
                    bytes_dropped: 0,
                });
                stopped = mode != WalRecoveryMode::SkipAnyCorruptedRecords;
            }
            continue;
        }
        let data = fs.read_all(&path)?;
        if stopped {
            // Recovery stopped in an earlier log: applying this one would
            // leave a hole in the write order.
            let intact = count_records(&data, &path);
            if intact > 0 {
                not_a_tail(&mut report.damage);
                suspects.push((path.clone(), data));
            }
            report.wals_dropped.push((path, intact));
            continue;
        }
        let mems = new_mems(number);
        let log = replay_one(&data, &path, mode, &mems, max_sequence)?;
        if log.applied > 0 || log.damage.iter().any(|d| d.records_dropped > 0) {
            not_a_tail(&mut report.damage);
        }
        report.wals_replayed.push(path.clone());
        report.records_replayed += log.applied;
        stopped = log.stopped;
        if !log.damage.is_empty() {
            suspects.push((path, data));
        }
        report.damage.extend(log.damage);
        filled.extend(mems.into_iter().filter(|(_, m)| m.num_entries() > 0));
    }
    let refused = match mode {
        WalRecoveryMode::AbsoluteConsistency => report.damage.first(),
        WalRecoveryMode::TolerateCorruptedTailRecords => {
            report.damage.iter().find(|d| !d.torn_tail)
        }
        WalRecoveryMode::PointInTime | WalRecoveryMode::SkipAnyCorruptedRecords => None,
    };
    if let Some(d) = refused {
        return Err(refusal(d, &report));
    }
    for (cf, mem) in filled {
        sink(cf, mem)?;
    }
    // Copy before the caller's MANIFEST edit makes these logs obsolete, so
    // a crash at any point leaves either the original or the copy.
    for (path, data) in suspects.into_iter().filter(|_| policy.keep_damaged) {
        let harmful = report.damage.iter().any(|d| d.file == path && !d.torn_tail)
            || report
                .wals_dropped
                .iter()
                .any(|(p, n)| *p == path && *n > 0);
        if harmful {
            report.kept_aside.push(keep_aside(fs, dir, &path, &data)?);
        }
    }
    Ok(report)
}

/// The detail of the damage a missing WAL is.
pub(super) const MISSING: &str =
    "the WAL is missing: the MANIFEST records it as holding the writes since \
                       the last flush, and it was never deleted by the engine";

/// The error of a mode that refuses `d`: names the WAL and the offset,
/// says what follows the damage, and how to open anyway.
fn refusal(d: &WalDamage, report: &RecoveryReport) -> Error {
    let in_later: u64 = report.wals_dropped.iter().map(|(_, n)| n).sum();
    let follows = if d.detail == MISSING {
        format!("its writes are lost, and {in_later} intact write batches in later WALs follow it")
    } else if d.torn_tail {
        "nothing intact follows it (a torn or lost last write)".to_string()
    } else if d.records_dropped + in_later == 0 {
        "intact records follow it in the same block (the damaged record's length could not be \
         trusted, so they cannot be read in order)"
            .to_string()
    } else {
        format!(
            "{} intact write batches follow it{}",
            d.records_dropped + in_later,
            if in_later > 0 {
                format!(" ({in_later} of them in later WALs)")
            } else {
                String::new()
            }
        )
    };
    let (why, how) = if report.mode == WalRecoveryMode::AbsoluteConsistency {
        (
            "wal_recovery_mode=absolute refuses any WAL damage",
            "To open, reopen with wal_recovery_mode=tolerate-corrupted-tail (accepts damage only \
             at the end of the write history), point-in-time (keeps the writes before the \
             damage) or skip-corrupted (also applies the intact writes after it)",
        )
    } else {
        (
            "Damage followed by intact writes is not what a crash leaves",
            "To salvage, reopen with wal_recovery_mode=point-in-time (keeps the writes before \
             the damage) or skip-corrupted (also applies the intact writes after it)",
        )
    };
    Error::corruption(
        d.file.display().to_string(),
        d.offset,
        format!(
            "{}; {follows}. {why}: the open is refused and nothing was changed on disk. {how} — \
             CLI and batchkv serve: --wal-recovery MODE; a writable open that drops or skips \
             writes first copies the WAL to lost/",
            d.detail
        ),
    )
}

/// Intact records follow every damage found so far.
fn not_a_tail(damage: &mut [WalDamage]) {
    damage.iter_mut().for_each(|d| d.torn_tail = false);
}

/// One log's replay.
struct LogReplay {
    applied: u64,
    damage: Vec<WalDamage>,
    /// Per damage: the reader could not follow the framing past it (a
    /// `Corrupt` outcome, or a record that is not a batch), so intact
    /// records may hide right after it.
    unframed: Vec<bool>,
    /// Nothing after the first damage was applied (every mode but skip).
    stopped: bool,
}

impl LogReplay {
    /// Records damage at `offset`; every mode but skip stops applying here.
    fn damaged(
        &mut self,
        path: &Path,
        (offset, detail, unframed): (u64, String, bool),
        mode: WalRecoveryMode,
    ) {
        if let Some(prev) = self.damage.last_mut() {
            if prev.bytes_dropped == 0 {
                // Skip mode: more damage, with nothing intact in between.
                prev.bytes_dropped = offset - prev.offset;
            }
        }
        self.damage.push(WalDamage {
            file: path.to_path_buf(),
            offset,
            detail,
            torn_tail: true,
            records_dropped: 0,
            bytes_dropped: 0,
        });
        self.unframed.push(unframed);
        self.stopped = mode != WalRecoveryMode::SkipAnyCorruptedRecords;
    }
}

fn replay_one(
    data: &[u8],
    path: &Path,
    mode: WalRecoveryMode,
    mems: &[(u32, Arc<dyn MemTable>)],
    max_sequence: &mut u64,
) -> Result<LogReplay> {
    let file = path.display().to_string();
    let mut reader = wal::Reader::new(data, &file);
    let mut out = LogReplay {
        applied: 0,
        damage: Vec::new(),
        unframed: Vec::new(),
        stopped: false,
    };
    loop {
        let found = match reader.next() {
            wal::ReadOutcome::Record { data: rec, offset } => {
                if out.stopped {
                    count_dropped(&mut out.damage);
                    continue;
                }
                match WriteBatch::from_rep(rec.to_vec(), &file, offset) {
                    Ok(batch) => {
                        close_gap(&mut out.damage, offset);
                        apply(&batch, mems, max_sequence)?;
                        out.applied += 1;
                        continue;
                    }
                    // A checksummed record that is not a batch: damage too.
                    Err(e) => (offset, e.to_string(), true),
                }
            }
            wal::ReadOutcome::Eof => {
                if let Some((offset, len)) = reader.zero_fill().filter(|_| !out.stopped) {
                    let detail = format!(
                        "zero fill from offset {offset} to the end of the file ({len} bytes) \
                         where a record was expected: space whose data never reached the disk"
                    );
                    out.damaged(path, (offset, detail, false), mode);
                }
                break;
            }
            // Whether more intact data follows is decided by what comes
            // next (the reader resumes after a `Corrupt`).
            wal::ReadOutcome::TornTail { offset, detail } => (offset, detail, false),
            wal::ReadOutcome::Corrupt { offset, detail } => (offset, detail, true),
        };
        // After the first damage of a mode that stops, only counting is left.
        if !out.stopped {
            out.damaged(path, found, mode);
        }
    }
    // The damage nothing intact followed (a suffix: an intact record marks
    // all damage before it). The reader skips the rest of a block after a
    // record whose length it cannot trust: look there for intact records
    // the skip hid (a flipped byte in the final block is not a torn write).
    if let Some(i) = (0..out.damage.len()).find(|&i| out.damage[i].torn_tail && out.unframed[i]) {
        if wal::intact_fragment_after(data, out.damage[i].offset as usize).is_some() {
            not_a_tail(&mut out.damage[i..]);
        }
    }
    let len = data.len() as u64;
    if let Some(d) = out.damage.last_mut() {
        if d.bytes_dropped == 0 {
            d.bytes_dropped = len - d.offset;
        }
    }
    Ok(out)
}

/// An intact record after the damage that is not applied: charge it to the damage.
fn count_dropped(damage: &mut [WalDamage]) {
    damage.iter_mut().for_each(|d| d.torn_tail = false);
    if let Some(d) = damage.last_mut() {
        d.records_dropped += 1;
    }
}

/// An intact record at `offset` is applied after damage (skip mode): the
/// damage ends there.
fn close_gap(damage: &mut [WalDamage], offset: u64) {
    damage.iter_mut().for_each(|d| d.torn_tail = false);
    if let Some(d) = damage.last_mut() {
        if d.bytes_dropped == 0 {
            d.bytes_dropped = offset - d.offset;
        }
    }
}

fn apply(
    batch: &WriteBatch,
    mems: &[(u32, Arc<dyn MemTable>)],
    max_sequence: &mut u64,
) -> Result<()> {
    let mut seq = batch.sequence();
    for entry in batch.iter() {
        if let Some((_, mem)) = mems.iter().find(|(cf, _)| *cf == entry.cf) {
            mem.insert(seq, entry.value_type, entry.key, entry.value)?;
        }
        seq += 1;
    }
    if !batch.is_empty() {
        *max_sequence = (*max_sequence).max(seq - 1);
    }
    Ok(())
}

/// Intact records in a whole log.
fn count_records(data: &[u8], path: &Path) -> u64 {
    let file = path.display().to_string();
    let mut reader = wal::Reader::new(data, &file);
    let mut n = 0;
    loop {
        match reader.next() {
            wal::ReadOutcome::Record { .. } => n += 1,
            wal::ReadOutcome::Eof | wal::ReadOutcome::TornTail { .. } => return n,
            wal::ReadOutcome::Corrupt { .. } => {}
        }
    }
}

/// Copies a damaged WAL to `lost/` (durably) and returns the copy's path.
fn keep_aside(fs: &Arc<dyn FileSystem>, dir: &Path, path: &Path, data: &[u8]) -> Result<PathBuf> {
    let lost = dir.join(LOST_DIR);
    fs.create_dir_all(&lost)?;
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let copy = lost.join(name);
    let mut f = fs.new_writable(&copy)?;
    f.append(data)?;
    f.sync()?;
    drop(f);
    fs.sync_dir(&lost)?;
    fs.sync_dir(dir)?;
    Ok(copy)
}
