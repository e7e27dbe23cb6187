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
//! A WAL that a memtable switch created starts with a predecessor record
//! (the WAL before it, its length and last sequence number); before
//! applying it, replay checks that record against what it found of that
//! WAL (`predecessor_check.rs`). An older WAL that ends before its recorded
//! length lost its end in a power failure that kept newer, unsynced writes:
//! every mode but skip ends the history there instead of applying them
//! after the hole (absolute refuses); a record power loss cannot explain
//! is damage followed by intact records.
//!
//! A failed open changes nothing on disk: the replayed memtables are
//! handed to the caller's sink (which writes them as tables) only once the
//! whole replay is accepted. In every mode a batch is applied whole or not
//! at all (one batch is one checksummed record).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::predecessor_check::{self, Replayed, Verdict};
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
    /// The damage is the lost end of this WAL: the next WAL's predecessor
    /// record says it was longer. A power loss kept the next WAL's pages
    /// (none of its writes acknowledged as synced: a synced write makes the
    /// older WALs durable first) and not this one's last ones. Every mode
    /// but absolute opens: the default and point-in-time end the history
    /// here (the later WALs are not applied and are copied to `lost/`),
    /// skip-corrupted applies them anyway.
    pub predecessor_hole: bool,
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
    /// The newest log number the MANIFEST records for a family (0 if
    /// none): a WAL numbered from there on is never deleted by the engine,
    /// so a predecessor record naming a missing one is corruption.
    pub newest_recorded: u64,
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
    // The WAL replayed just before, while its predecessor check is still
    // meaningful: it was applied up to its end, or stopped only by damage
    // at its end (nothing intact after it in that WAL).
    let mut previous: Option<(Replayed, PathBuf)> = None;
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
                    predecessor_hole: false,
                });
                stopped = mode != WalRecoveryMode::SkipAnyCorruptedRecords;
            }
            previous = None;
            continue;
        }
        let data = fs.read_all(&path)?;
        let file = path.display().to_string();
        let pred = wal::predecessor_of(&data, &file);
        if let Some(pred) = pred.filter(|p| policy.missing != Some(p.number)) {
            let cx = predecessor_check::Context {
                on_disk: logs,
                newest_recorded: policy.newest_recorded,
                previous: previous.as_ref().map(|p| p.0),
            };
            match predecessor_check::check(number, &pred, &cx) {
                Verdict::Consistent => {}
                Verdict::LostTail(detail) => {
                    if let Some((prev, prev_path)) = &previous {
                        lost_tail(&mut report.damage, prev, prev_path, detail);
                    }
                    stopped |= mode != WalRecoveryMode::SkipAnyCorruptedRecords;
                }
                Verdict::Mismatch(detail) => {
                    report.damage.push(WalDamage {
                        file: path.clone(),
                        offset: 0,
                        detail,
                        torn_tail: false,
                        records_dropped: 0,
                        bytes_dropped: 0,
                        predecessor_hole: false,
                    });
                    stopped |= mode != WalRecoveryMode::SkipAnyCorruptedRecords;
                }
            }
        }
        previous = None;
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
        if !log.stopped || log.damage.iter().all(|d| d.torn_tail) {
            let end = match (log.end, pred) {
                (0, Some(_)) => wal::PREDECESSOR_RECORD_LEN,
                (end, _) => end,
            };
            let replayed = Replayed {
                number,
                end,
                last_sequence: log.last_sequence,
            };
            previous = Some((replayed, path.clone()));
        }
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
        WalRecoveryMode::TolerateCorruptedTailRecords => report
            .damage
            .iter()
            .find(|d| !d.torn_tail && !d.predecessor_hole),
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
        // Not a WAL whose only damage is its lost end: every record it
        // still holds was applied.
        let harmful = report
            .damage
            .iter()
            .any(|d| d.file == path && !d.torn_tail && !d.predecessor_hole)
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
    } else if d.detail.starts_with(predecessor_check::MISMATCH) {
        format!("{in_later} intact write batches in this WAL and later ones were not applied")
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

/// Marks the damage that ends WAL `prev` (or records it, if the WAL ended
/// at a record boundary) as its lost end: the next WAL's predecessor
/// record says it was longer ([`WalDamage::predecessor_hole`]).
fn lost_tail(damage: &mut Vec<WalDamage>, prev: &Replayed, prev_path: &Path, detail: String) {
    let at_end = |d: &&mut WalDamage| d.file == prev_path && d.offset >= prev.end;
    match damage.last_mut().filter(at_end) {
        Some(d) => {
            d.detail = format!("{}; {detail}", d.detail);
            d.predecessor_hole = true;
        }
        None => damage.push(WalDamage {
            file: prev_path.to_path_buf(),
            offset: prev.end,
            detail,
            torn_tail: true,
            records_dropped: 0,
            bytes_dropped: 0,
            predecessor_hole: true,
        }),
    }
}

/// Intact records follow every damage found so far.
fn not_a_tail(damage: &mut [WalDamage]) {
    damage.iter_mut().for_each(|d| d.torn_tail = false);
}

/// One log's replay.
struct LogReplay {
    applied: u64,
    /// Offset just past the last record applied (0 if none).
    end: u64,
    /// The largest sequence number applied from this log (0 if none).
    last_sequence: u64,
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
            predecessor_hole: false,
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
    let mut reader = wal::Reader::wal(data, &file);
    let mut out = LogReplay {
        applied: 0,
        end: 0,
        last_sequence: 0,
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
                        if let Some(n) = (batch.len() as u64).checked_sub(1) {
                            out.last_sequence = out.last_sequence.max(batch.sequence() + n);
                        }
                        out.applied += 1;
                        out.end = reader.position() as u64;
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

/// Intact records in a whole log (a predecessor record is not one).
fn count_records(data: &[u8], path: &Path) -> u64 {
    let file = path.display().to_string();
    let mut reader = wal::Reader::wal(data, &file);
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

#[cfg(test)]
mod tests {
    //! The predecessor check as replay applies it, per mode, on WALs built
    //! by the real writer (`predecessor_check.rs` has the verdicts).
    use super::*;
    use crate::db::memtable_factory::MemTableFactory;
    use crate::fs::mem::MemFile;
    use crate::options::Options;
    use crate::wal::WalPredecessor;

    const DIR: &str = "/db";

    /// A WAL holding one single-put batch per sequence number in `seqs`,
    /// after the predecessor record `pred` if given; with the end of each
    /// record.
    fn wal_of(pred: Option<WalPredecessor>, seqs: std::ops::Range<u64>) -> (Vec<u8>, Vec<u64>) {
        let (file, bytes) = MemFile::new();
        let mut w = wal::Writer::new(Box::new(file));
        if let Some(p) = pred {
            w.add_predecessor(&p).unwrap();
        }
        let mut ends = Vec::new();
        for s in seqs {
            let mut b = WriteBatch::new();
            b.put(format!("k{s:04}").as_bytes(), b"v");
            b.set_sequence(s);
            w.add_record(b.rep()).unwrap();
            ends.push(w.file_len());
        }
        let data = bytes.lock().unwrap().clone();
        (data, ends)
    }

    fn path(n: u64) -> PathBuf {
        crate::filename::path(Path::new(DIR), crate::filename::FileKind::Wal, n)
    }

    /// Replays the WALs `files` (number, bytes) in `mode`; returns the
    /// report or the error text, and the keys applied.
    fn replay(
        files: &[(u64, Vec<u8>)],
        mode: WalRecoveryMode,
    ) -> (std::result::Result<RecoveryReport, String>, u64) {
        let fs: Arc<dyn FileSystem> = Arc::new(crate::fs::mem::MemFs::with_files(
            &files
                .iter()
                .map(|(n, d)| (path(*n), d.clone()))
                .collect::<Vec<_>>(),
        ));
        let factory = MemTableFactory::new(&Options::default());
        let mut applied = 0;
        let logs: Vec<u64> = files.iter().map(|f| f.0).collect();
        let mut max_sequence = 0;
        let r = replay_logs(
            &fs,
            Path::new(DIR),
            &logs,
            ReplayPolicy {
                mode,
                keep_damaged: false,
                missing: None,
                newest_recorded: 3,
            },
            |n| vec![(0, factory.create(n))],
            |_, m| {
                applied += m.num_entries();
                Ok(())
            },
            &mut max_sequence,
        );
        (r.map_err(|e| e.to_string()), applied)
    }

    /// WAL 5 with sequences 1..=40 and WAL 8, which follows it, with
    /// 41..=60.
    fn two_wals() -> (Vec<u8>, Vec<u64>, Vec<u8>) {
        let (w5, ends5) = wal_of(None, 1..41);
        let len = w5.len() as u64;
        let (w8, _) = wal_of(Some(WalPredecessor::new(5, len, 40)), 41..61);
        (w5, ends5, w8)
    }

    const ALL: [WalRecoveryMode; 4] = [
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::SkipAnyCorruptedRecords,
    ];

    #[test]
    fn wals_as_recorded_replay_whole_in_every_mode() {
        let (w5, _, w8) = two_wals();
        for mode in ALL {
            let (r, applied) = replay(&[(5, w5.clone()), (8, w8.clone())], mode);
            let r = r.unwrap();
            assert_eq!((applied, r.status()), (60, RecoveryStatus::Clean), "{mode}");
        }
    }

    #[test]
    fn a_lost_end_of_the_older_wal_ends_the_history_there() {
        let (w5, ends5, w8) = two_wals();
        // Cut at a record boundary (nothing looks damaged in WAL 5), and
        // mid-record (a torn tail, which would refuse the open by itself).
        for (cut, what) in [(ends5[29], "boundary"), (ends5[29] + 5, "torn")] {
            let files = [(5, w5[..cut as usize].to_vec()), (8, w8.clone())];
            for mode in ALL {
                let (r, applied) = replay(&files, mode);
                let ctx = format!("{what}, {mode}");
                match mode {
                    WalRecoveryMode::AbsoluteConsistency => {
                        let e = r.unwrap_err();
                        assert!(e.contains("000005.log"), "{ctx}: {e}");
                        assert!(e.contains("but WAL 8 records WAL 5 as"), "{ctx}: {e}");
                    }
                    WalRecoveryMode::SkipAnyCorruptedRecords => {
                        let r = r.unwrap();
                        assert_eq!(applied, 50, "{ctx}");
                        assert!(
                            r.damage[0].predecessor_hole && !r.damage[0].torn_tail,
                            "{ctx}"
                        );
                        assert_eq!(r.status(), RecoveryStatus::Damaged, "{ctx}");
                    }
                    _ => {
                        let r = r.unwrap();
                        assert_eq!(applied, 30, "{ctx}: a prefix, WAL 8 not applied");
                        assert_eq!(r.wals_dropped, vec![(path(8), 20)], "{ctx}");
                        assert_eq!(r.damage.len(), 1, "{ctx}: {r:#?}");
                        let d = &r.damage[0];
                        assert!(d.predecessor_hole && !d.torn_tail, "{ctx}: {d:?}");
                        assert_eq!((d.file.clone(), d.offset), (path(5), ends5[29]), "{ctx}");
                        let lost = (w5.len() as u64) - ends5[29];
                        assert!(
                            d.detail.contains(&format!(
                                "WAL 5 ends at offset {} (sequence 30), but WAL 8 records WAL 5 \
                                 as {} bytes long, ending at sequence 40: its last {lost} bytes \
                                 were lost",
                                ends5[29],
                                w5.len()
                            )),
                            "{ctx}: {}",
                            d.detail
                        );
                        assert_eq!(r.status(), RecoveryStatus::Damaged, "{ctx}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_lost_end_with_nothing_after_it_is_a_tail() {
        // The newer WAL holds only its predecessor record.
        let (w5, ends5) = wal_of(None, 1..41);
        let (w8, _) = wal_of(Some(WalPredecessor::new(5, w5.len() as u64, 40)), 41..41);
        let files = [(5, w5[..ends5[9] as usize].to_vec()), (8, w8)];
        let (r, applied) = replay(&files, WalRecoveryMode::TolerateCorruptedTailRecords);
        let r = r.unwrap();
        assert_eq!(applied, 10);
        assert_eq!(r.status(), RecoveryStatus::TailTruncated, "{r:#?}");
    }

    #[test]
    fn an_older_wal_longer_than_recorded_is_refused() {
        let (w5, ends5, _) = two_wals();
        // WAL 8 recorded WAL 5 when it held 30 batches; it holds 40.
        let (w8, _) = wal_of(Some(WalPredecessor::new(5, ends5[29], 30)), 41..61);
        let files = [(5, w5.clone()), (8, w8)];
        let (r, _) = replay(&files, WalRecoveryMode::TolerateCorruptedTailRecords);
        let e = r.unwrap_err();
        assert!(
            e.starts_with(&format!(
                "corruption in /db/000008.log at offset 0: predecessor record mismatch: WAL 8 \
                 records WAL 5 as {} bytes long, ending at sequence 30, but WAL 5 ends at offset \
                 {} (sequence 40): a WAL is never written after the next one starts; 20 intact \
                 write batches in this WAL and later ones were not applied",
                ends5[29],
                w5.len()
            )),
            "{e}"
        );
        // Point-in-time keeps the prefix before WAL 8.
        let (r, applied) = replay(&files, WalRecoveryMode::PointInTime);
        assert_eq!(
            (applied, r.unwrap().status()),
            (40, RecoveryStatus::Damaged)
        );
    }

    #[test]
    fn a_missing_predecessor_that_is_not_obsolete_is_refused() {
        let (_, _, w8) = two_wals();
        // The MANIFEST's newest log number is 3 (`replay`): WAL 5 was never
        // obsolete.
        let (r, _) = replay(&[(8, w8)], WalRecoveryMode::TolerateCorruptedTailRecords);
        let e = r.unwrap_err();
        assert!(
            e.contains("/db/000008.log at offset 0: predecessor record mismatch: WAL 8 names WAL 5 as its predecessor, and WAL 5 is missing"),
            "{e}"
        );
    }

    #[test]
    fn a_wal_between_a_wal_and_its_predecessor_is_refused() {
        let (w5, _, w8) = two_wals();
        let (w7, _) = wal_of(None, 41..41);
        let (r, _) = replay(
            &[(5, w5), (7, w7), (8, w8)],
            WalRecoveryMode::TolerateCorruptedTailRecords,
        );
        let e = r.unwrap_err();
        assert!(
            e.contains("WAL 8 names WAL 5 as its predecessor, but WAL 7 comes between them"),
            "{e}"
        );
    }

    #[test]
    fn wals_without_a_predecessor_record_replay_as_before() {
        // The older one cut short at a record boundary: nothing can tell.
        let (w5, ends5) = wal_of(None, 1..41);
        let (w8, _) = wal_of(None, 41..61);
        let files = [(5, w5[..ends5[29] as usize].to_vec()), (8, w8)];
        let (r, applied) = replay(&files, WalRecoveryMode::TolerateCorruptedTailRecords);
        assert_eq!((applied, r.unwrap().status()), (50, RecoveryStatus::Clean));
    }
}
