//! Recovery's check of a WAL's predecessor record (`wal::WalPredecessor`)
//! against what replay found of the WAL before it (`docs/format/wal.md` §4,
//! "Predecessor check").
//!
//! A memtable switch hands every record of the old WAL to the OS, then
//! writes the new WAL's first record: the old WAL's number, length and
//! last sequence number. The old WAL's fsync is owed, not paid
//! (`closed_wals.rs`), so a power loss may keep pages of the new WAL and
//! lose the end of the old one; a write with `sync` pays the old WAL's fsync
//! first, so none of the new WAL's writes can then have been acknowledged
//! as synced. The verdicts:
//!
//! - [`Verdict::LostTail`]: the old WAL ends before the recorded length —
//!   exactly that power-loss case. The history ends at the old WAL's end.
//! - [`Verdict::Mismatch`]: anything power loss cannot produce (the old
//!   WAL longer than recorded, another WAL between them, its sequence
//!   numbers not as recorded, or missing while not obsolete): corruption.
//! - [`Verdict::Consistent`]: as recorded, or nothing to compare with (the
//!   predecessor is obsolete, so deleted or left over, and not replayed).

use crate::wal::WalPredecessor;

/// The prefix of every [`Verdict::Mismatch`] detail: recovery's messages
/// and the refusal text recognise the damage by it.
pub(super) const MISMATCH: &str = "predecessor record mismatch";

/// What replay found of the WAL replayed just before the one being
/// checked (the WALs are replayed in file-number order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Replayed {
    /// Its file number.
    pub number: u64,
    /// Offset just past its last record read intact (past its own
    /// predecessor record if it holds no write batch; 0 if nothing).
    pub end: u64,
    /// The largest sequence number of its batches (0 if none).
    pub last_sequence: u64,
}

/// The outcome of checking WAL `number`'s predecessor record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing contradicts the record.
    Consistent,
    /// The predecessor's end was lost (power loss): the detail says where
    /// and how much.
    LostTail(String),
    /// The record contradicts what is on disk in a way power loss cannot:
    /// the detail names the files and numbers.
    Mismatch(String),
}

/// Where the WALs of the replay stand, for [`check`].
pub(super) struct Context<'a> {
    /// The WALs found on disk that recovery replays (sorted).
    pub on_disk: &'a [u64],
    /// The newest log number the MANIFEST records for a family: the engine
    /// deletes no WAL numbered from there on.
    pub newest_recorded: u64,
    /// The WAL replayed just before, if recovery may still compare with it.
    pub previous: Option<Replayed>,
}

/// Checks WAL `number`'s predecessor record `pred`.
pub(super) fn check(number: u64, pred: &WalPredecessor, cx: &Context<'_>) -> Verdict {
    let named = pred.number;
    let says = |what: String| Verdict::Mismatch(format!("{MISMATCH}: WAL {number} {what}"));
    if named >= number {
        return says(format!(
            "names WAL {named} as its predecessor, which is not an older WAL"
        ));
    }
    match cx.previous {
        Some(prev) if prev.number == named => compare(number, pred, prev),
        Some(prev) if prev.number > named => says(format!(
            "names WAL {named} as its predecessor, but WAL {} comes between them",
            prev.number
        )),
        _ if cx.on_disk.contains(&named) => {
            // Replayed, but not comparable (damage stopped recovery before).
            Verdict::Consistent
        }
        _ if named >= cx.newest_recorded => says(format!(
            "names WAL {named} as its predecessor, and WAL {named} is missing although it is \
             not obsolete (the MANIFEST records WAL {} as holding the writes since the last \
             flush, and the engine deletes no WAL from there on)",
            cx.newest_recorded
        )),
        // Older than every WAL the MANIFEST needs: deleted as obsolete.
        _ => Verdict::Consistent,
    }
}

/// Compares the predecessor as replayed with the record of it.
fn compare(number: u64, pred: &WalPredecessor, prev: Replayed) -> Verdict {
    let (n, len, seq) = (pred.number, pred.length, pred.last_sequence);
    let recorded =
        format!("WAL {number} records WAL {n} as {len} bytes long, ending at sequence {seq}");
    let found = format!(
        "WAL {n} ends at offset {} (sequence {})",
        prev.end, prev.last_sequence
    );
    if prev.end < len && prev.last_sequence <= seq {
        return Verdict::LostTail(format!(
            "{found}, but {recorded}: its last {} bytes were lost while later WALs' writes \
             survived (a power loss that wrote the newer WAL's pages first; none of those \
             writes was acknowledged as synced), so the write history ends here",
            len - prev.end
        ));
    }
    if prev.end == len && prev.last_sequence == seq {
        return Verdict::Consistent;
    }
    let why = if prev.end > len {
        "a WAL is never written after the next one starts"
    } else {
        "its sequence numbers are not the ones written"
    };
    Verdict::Mismatch(format!("{MISMATCH}: {recorded}, but {found}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pred(number: u64, length: u64, last_sequence: u64) -> WalPredecessor {
        WalPredecessor::new(number, length, last_sequence)
    }

    fn after(prev: Replayed) -> Context<'static> {
        Context {
            on_disk: &[],
            newest_recorded: 1,
            previous: Some(prev),
        }
    }

    const PREV: Replayed = Replayed {
        number: 7,
        end: 5000,
        last_sequence: 120,
    };

    #[test]
    fn as_recorded_is_consistent() {
        assert_eq!(
            check(9, &pred(7, 5000, 120), &after(PREV)),
            Verdict::Consistent
        );
    }

    #[test]
    fn shorter_than_recorded_is_a_lost_tail() {
        let Verdict::LostTail(d) = check(9, &pred(7, 6000, 130), &after(PREV)) else {
            panic!("not a lost tail");
        };
        assert!(
            d.starts_with(
                "WAL 7 ends at offset 5000 (sequence 120), but WAL 9 records WAL 7 as 6000 \
                 bytes long, ending at sequence 130: its last 1000 bytes were lost"
            ),
            "{d}"
        );
    }

    #[test]
    fn longer_than_recorded_is_corruption() {
        assert_eq!(
            check(9, &pred(7, 4000, 110), &after(PREV)),
            Verdict::Mismatch(
                "predecessor record mismatch: WAL 9 records WAL 7 as 4000 bytes long, ending at \
                 sequence 110, but WAL 7 ends at offset 5000 (sequence 120): a WAL is never \
                 written after the next one starts"
                    .into()
            )
        );
    }

    #[test]
    fn other_sequence_numbers_are_corruption() {
        // The recorded length, another last sequence.
        let v = check(9, &pred(7, 5000, 121), &after(PREV));
        assert!(
            matches!(&v, Verdict::Mismatch(d) if d.ends_with("(sequence 120): its sequence numbers are not the ones written")),
            "{v:?}"
        );
        // Shorter, yet ending at a later sequence than recorded.
        let v = check(9, &pred(7, 6000, 100), &after(PREV));
        assert!(
            matches!(&v, Verdict::Mismatch(d) if d.contains("its sequence numbers are not")),
            "{v:?}"
        );
    }

    #[test]
    fn another_wal_between_them_is_corruption() {
        assert_eq!(
            check(9, &pred(5, 5000, 120), &after(PREV)),
            Verdict::Mismatch(
                "predecessor record mismatch: WAL 9 names WAL 5 as its predecessor, but WAL 7 \
                 comes between them"
                    .into()
            )
        );
        let v = check(9, &pred(9, 0, 0), &after(PREV));
        assert!(
            matches!(&v, Verdict::Mismatch(d) if d.ends_with("names WAL 9 as its predecessor, which is not an older WAL")),
            "{v:?}"
        );
    }

    #[test]
    fn a_missing_predecessor_is_corruption_unless_obsolete() {
        let cx = |newest_recorded| Context {
            on_disk: &[9],
            newest_recorded,
            previous: None,
        };
        let v = check(9, &pred(7, 5000, 120), &cx(6));
        assert!(
            matches!(&v, Verdict::Mismatch(d) if d.starts_with(
                "predecessor record mismatch: WAL 9 names WAL 7 as its predecessor, and WAL 7 \
                 is missing although it is not obsolete (the MANIFEST records WAL 6"
            )),
            "{v:?}"
        );
        // Below the MANIFEST's newest log number: obsolete, so deleted.
        assert_eq!(check(9, &pred(7, 5000, 120), &cx(8)), Verdict::Consistent);
    }
}
