//! Replaying the WALs at open, per [`WalRecoveryMode`], and the
//! [`RecoveryReport`] that says what was replayed and what was not.
//!
//! Damage is classified by what follows it: a **torn tail** is a record
//! cut short by the end of the last log (the normal result of a crash
//! during a write); **corruption** is damage followed by more data (in the
//! same log or in later ones), so applying only a prefix may drop
//! acknowledged writes. Per mode:
//!
//! | mode | torn tail | corruption |
//! |---|---|---|
//! | `AbsoluteConsistency` | open fails | open fails |
//! | `TolerateCorruptedTailRecords` | kept prefix | open fails |
//! | `PointInTime` (default) | kept prefix | kept prefix; the rest reported, copied to `lost/` |
//! | `SkipAnyCorruptedRecords` | kept prefix | damaged records skipped, the rest applied; copied to `lost/` |
//!
//! A failed open changes nothing on disk. In every mode a batch is applied
//! whole or not at all (one batch is one checksummed record).

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
    /// The log ends inside the damaged record and no later log holds
    /// anything: the normal end of a log after a crash during a write.
    /// False for damage followed by more data.
    pub torn_tail: bool,
    /// Intact records after the damage (in this log) that were not applied.
    pub records_dropped: u64,
    /// Bytes from the damage to the next applied record (or the end of the
    /// file) that were not applied.
    pub bytes_dropped: u64,
}

/// What opening the database replayed from its WALs, and what it dropped.
/// An empty `damage` and `wals_dropped` mean every logged write was recovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
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
}

/// The name of the directory damaged WALs are copied to.
pub(crate) const LOST_DIR: &str = "lost";

/// Replays `logs` (oldest first) into memtables from `new_mems`, which
/// gives, for a log number, a fresh memtable for each column family whose
/// records that log may hold unflushed (records of other families —
/// dropped, or already flushed past this log — are skipped); `sink`
/// receives each filled memtable with its family. Returns the report and
/// the largest sequence number applied.
/// How to replay: the recovery mode, and whether damaged WALs may be
/// copied to `lost/` (not by a read-only open, which writes nothing).
#[derive(Debug, Clone, Copy)]
pub(super) struct ReplayPolicy {
    pub mode: WalRecoveryMode,
    pub keep_damaged: bool,
}

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
    let mut report = RecoveryReport::default();
    let mut stopped = false;
    let mut aside: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for (i, &number) in logs.iter().enumerate() {
        let path = super::filename::path(dir, super::filename::FileKind::Wal, number);
        let data = fs.read_all(&path)?;
        let is_last = i + 1 == logs.len();
        if stopped {
            // Point-in-time recovery stopped in an earlier log: applying
            // this one would leave a hole in the write order.
            let intact = count_records(&data, &path);
            report.wals_dropped.push((path.clone(), intact));
            if intact > 0 {
                aside.push((path, data));
            }
            continue;
        }
        let mems = new_mems(number);
        let log = replay_one(&data, &path, mode, is_last, &mems, max_sequence)?;
        report.wals_replayed.push(path.clone());
        report.records_replayed += log.applied;
        stopped = log.stopped;
        let harmful = log.damage.iter().any(|d| !d.torn_tail);
        report.damage.extend(log.damage);
        if harmful {
            aside.push((path, data));
        }
        for (cf, mem) in mems {
            if mem.num_entries() > 0 {
                sink(cf, mem)?;
            }
        }
    }
    // A stop is only a torn tail if no later log holds anything.
    if report.wals_dropped.iter().any(|(_, n)| *n > 0) {
        if let Some(d) = report.damage.last_mut() {
            d.torn_tail = false;
        }
    }
    // Copy before the caller's MANIFEST edit makes these logs obsolete, so
    // a crash at any point leaves either the original or the copy.
    for (path, data) in aside.into_iter().filter(|_| policy.keep_damaged) {
        report.kept_aside.push(keep_aside(fs, dir, &path, &data)?);
    }
    Ok(report)
}

/// One log's replay.
struct LogReplay {
    applied: u64,
    damage: Vec<WalDamage>,
    /// Nothing after the first damage was applied (point in time).
    stopped: bool,
}

fn replay_one(
    data: &[u8],
    path: &Path,
    mode: WalRecoveryMode,
    is_last: bool,
    mems: &[(u32, Arc<dyn MemTable>)],
    max_sequence: &mut u64,
) -> Result<LogReplay> {
    let file = path.display().to_string();
    let mut reader = wal::Reader::new(data, &file);
    let mut out = LogReplay {
        applied: 0,
        damage: Vec::new(),
        stopped: false,
    };
    loop {
        let (offset, detail, torn) = match reader.next() {
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
                    Err(e) => (offset, e.to_string(), false),
                }
            }
            wal::ReadOutcome::Eof => break,
            wal::ReadOutcome::TornTail { offset, detail } => (offset, detail, true),
            // More data follows, even if none of it reads as a record (the
            // reader skips the rest of a block whose lengths it cannot trust).
            wal::ReadOutcome::Corrupt { offset, detail } => (offset, detail, false),
        };
        if mode == WalRecoveryMode::AbsoluteConsistency {
            return Err(reader.corruption(offset, detail));
        }
        if out.stopped {
            continue; // already counting what follows the first damage
        }
        if let Some(prev) = out.damage.last_mut() {
            if prev.bytes_dropped == 0 {
                // Skip mode: more damage, with nothing intact in between.
                prev.bytes_dropped = offset - prev.offset;
            }
        }
        out.damage.push(WalDamage {
            file: path.to_path_buf(),
            offset,
            detail,
            torn_tail: torn,
            records_dropped: 0,
            bytes_dropped: 0,
        });
        out.stopped = matches!(
            mode,
            WalRecoveryMode::PointInTime | WalRecoveryMode::TolerateCorruptedTailRecords
        );
    }
    let len = data.len() as u64;
    if let Some(d) = out.damage.last_mut() {
        if d.bytes_dropped == 0 {
            d.bytes_dropped = len - d.offset;
        }
    }
    if mode == WalRecoveryMode::TolerateCorruptedTailRecords {
        if let Some(d) = out.damage.iter().find(|d| !d.torn_tail || !is_last) {
            return Err(Error::corruption(
                file,
                d.offset,
                format!(
                    "{} ({} intact records follow it{})",
                    d.detail,
                    d.records_dropped,
                    if is_last { "" } else { "; not the last WAL" }
                ),
            ));
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
