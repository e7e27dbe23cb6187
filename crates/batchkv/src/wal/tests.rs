//! Writer + reader tests: round trips, every truncation point, flipped
//! bytes, padding, zero fill, and fuzz-like robustness.

use proptest::prelude::*;

use super::format::{BLOCK_SIZE, HEADER_SIZE};
use super::{ReadOutcome, Reader, Writer};
use crate::fs::mem::MemFile;

/// Record `i` of a test log: non-zero bytes that differ between records.
fn record(i: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| ((i * 31 + j * 7) % 251 + 1) as u8)
        .collect()
}

/// Writes `records`; returns the file bytes and each record's start offset.
fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let (file, bytes) = MemFile::new();
    let mut w = Writer::new(Box::new(file));
    let mut offsets = Vec::new();
    for r in records {
        let block = BLOCK_SIZE as u64;
        let mut at = w.file_len();
        if block - at % block < HEADER_SIZE as u64 {
            at = at.next_multiple_of(block);
        }
        offsets.push(at);
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
    let b = bytes.lock().unwrap().clone();
    assert_eq!(b.len() as u64, w.file_len());
    (b, offsets)
}

/// Reads records until the first non-record outcome.
fn read_until_stop(data: &[u8]) -> (Vec<(Vec<u8>, u64)>, ReadOutcome<'_>) {
    let mut r = Reader::new(data, "000001.log");
    let mut out = Vec::new();
    loop {
        match r.next() {
            ReadOutcome::Record { data, offset } => out.push((data.into_owned(), offset)),
            other => return (out, other),
        }
    }
}

/// Reads the whole file, resuming after corruption; returns every record
/// and every non-record outcome. Fails the test if the reader never ends.
fn read_everything(data: &[u8]) -> (Vec<(Vec<u8>, u64)>, Vec<ReadOutcome<'static>>) {
    let mut r = Reader::new(data, "000001.log");
    let mut recs = Vec::new();
    let mut problems = Vec::new();
    for _ in 0..100_000 {
        match r.next() {
            ReadOutcome::Record { data, offset } => recs.push((data.into_owned(), offset)),
            ReadOutcome::Eof => return (recs, problems),
            ReadOutcome::TornTail { offset, detail } => {
                problems.push(ReadOutcome::TornTail { offset, detail });
                assert_eq!(r.next(), ReadOutcome::Eof, "TornTail must be final");
                return (recs, problems);
            }
            ReadOutcome::Corrupt { offset, detail } => {
                problems.push(ReadOutcome::Corrupt { offset, detail })
            }
        }
    }
    panic!("reader did not terminate");
}

/// Every returned record must be an original record at its original offset,
/// in increasing order: the reader never invents or alters data.
fn assert_only_original_records(got: &[(Vec<u8>, u64)], records: &[Vec<u8>], offsets: &[u64]) {
    let mut next = 0;
    for (data, off) in got {
        let i = offsets[next..]
            .iter()
            .position(|o| o == off)
            .map(|p| p + next)
            .unwrap_or_else(|| panic!("record at unexpected offset {off}"));
        assert!(*data == records[i], "record at {off} has altered data");
        next = i + 1;
    }
}

#[test]
fn round_trip_records_of_many_sizes() {
    let sizes = [
        0,
        1,
        100,
        BLOCK_SIZE - HEADER_SIZE - 122, // fills the rest of block 0 exactly
        BLOCK_SIZE - HEADER_SIZE,       // exactly one whole block
        BLOCK_SIZE - HEADER_SIZE - 3,   // leaves 3 bytes of padding
        2,
        BLOCK_SIZE,
        5 * BLOCK_SIZE + 17,
        1 << 20,
        0,
        7,
    ];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(i, n))
        .collect();
    let (data, offsets) = write_log(&records);
    // Sanity of the layout the sizes were chosen for.
    assert_eq!(offsets[4], BLOCK_SIZE as u64);
    assert_eq!(offsets[6], 3 * BLOCK_SIZE as u64);
    let (got, end) = read_until_stop(&data);
    assert_eq!(end, ReadOutcome::Eof);
    let want: Vec<(Vec<u8>, u64)> = records.into_iter().zip(offsets).collect();
    assert!(got == want, "round trip changed records");
}

#[test]
fn single_fragment_records_are_borrowed() {
    let (data, _) = write_log(&[record(0, 10), record(1, 2 * BLOCK_SIZE)]);
    let mut r = Reader::new(&data, "x.log");
    assert!(matches!(
        r.next(),
        ReadOutcome::Record {
            data: std::borrow::Cow::Borrowed(_),
            offset: 0
        }
    ));
    assert!(matches!(
        r.next(),
        ReadOutcome::Record {
            data: std::borrow::Cow::Owned(_),
            offset: 17
        }
    ));
    assert_eq!(r.next(), ReadOutcome::Eof);
    assert_eq!(r.next(), ReadOutcome::Eof);
}

#[test]
fn every_truncation_point_yields_a_prefix_then_torn_tail_or_eof() {
    let sizes = [10, 5000, 27_700, 0, 17, 30_000, 9, 4000]; // record 4 leaves 6 bytes of padding
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(i, n))
        .collect();
    let (data, offsets) = write_log(&records);
    assert!(data.len() > 2 * BLOCK_SIZE, "the log must span blocks");
    let mut ends: Vec<usize> = offsets[1..].iter().map(|&o| o as usize).collect();
    ends.push(data.len());
    // `ends[i]` is an upper bound on record i's last byte; the exact end is
    // the start of the next record unless padding separates them.
    for t in 0..=data.len() {
        let cut = &data[..t];
        let (got, end) = read_until_stop(cut);
        let j = got.len();
        assert_eq!(
            got[..],
            records
                .iter()
                .cloned()
                .zip(offsets.iter().copied())
                .take(j)
                .collect::<Vec<_>>()[..]
        );
        assert!(
            j == records.len() || t < ends[j],
            "record {j} complete at {t} but not returned"
        );
        match end {
            ReadOutcome::Eof => {
                // Clean only at a record boundary (or in its trailing padding,
                // or where the cut-off bytes are all zero).
                let clean = j == records.len()
                    || t <= offsets[j] as usize
                    || cut[offsets[j] as usize..].iter().all(|&b| b == 0);
                assert!(clean, "Eof at truncation {t} inside record {j}");
            }
            ReadOutcome::TornTail { offset, .. } => {
                assert_eq!(offset, offsets[j], "truncation {t}")
            }
            ReadOutcome::Corrupt { offset, detail } => {
                panic!("truncation {t} reported as corruption at {offset}: {detail}")
            }
            ReadOutcome::Record { .. } => unreachable!(),
        }
    }
}

#[test]
fn flipped_byte_is_corrupt_at_the_record_offset_or_torn_for_the_last_record() {
    let sizes = [50, 40_000, 20, 1000, 60];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(i, n))
        .collect();
    let (data, offsets) = write_log(&records);
    for (k, &start) in offsets.iter().enumerate() {
        let start = start as usize;
        let end = offsets.get(k + 1).map_or(data.len(), |&o| o as usize);
        // CRC byte, type byte, and payload bytes across the record (also in
        // later fragments of the fragmented one).
        let mut positions = vec![start, start + 6, start + HEADER_SIZE, end - 1];
        positions.extend((start..end).step_by(4099));
        for p in positions {
            let mut bad = data.clone();
            bad[p] ^= 0x5a;
            let (got, outcome) = read_until_stop(&bad);
            let want: Vec<_> = records
                .iter()
                .cloned()
                .zip(offsets.iter().copied())
                .take(k)
                .collect();
            assert!(
                got == want,
                "flip at {p}: records before {k} not returned intact"
            );
            let last = k == records.len() - 1;
            match outcome {
                ReadOutcome::Corrupt { offset, .. } => {
                    assert_eq!(offset, start as u64, "flip at {p}")
                }
                ReadOutcome::TornTail { offset, .. } if last => assert_eq!(offset, start as u64),
                other => panic!("flip at {p} in record {k}: {other:?}"),
            }
            // Resuming never yields altered data either.
            let (all, problems) = read_everything(&bad);
            assert_only_original_records(&all, &records, &offsets);
            assert!(!problems.is_empty());
        }
    }
}

#[test]
fn every_single_byte_flip_is_detected() {
    let sizes = [30, 20_000, 12_000, 5, 900];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(i, n))
        .collect();
    let (data, offsets) = write_log(&records);
    for p in 0..data.len() {
        let mut bad = data.clone();
        bad[p] = bad[p].wrapping_add(1 + (p % 255) as u8);
        let (all, problems) = read_everything(&bad);
        assert_only_original_records(&all, &records, &offsets);
        // Only block-trailer padding may change without notice.
        let in_padding =
            BLOCK_SIZE - p % BLOCK_SIZE < HEADER_SIZE && p < BLOCK_SIZE * (data.len() / BLOCK_SIZE);
        if !in_padding {
            assert!(!problems.is_empty(), "flip at {p} went unnoticed");
            assert!(all.len() < records.len(), "flip at {p} lost no record");
        }
    }
}

#[test]
fn checksum_mismatch_on_final_record_is_torn_but_earlier_is_corrupt() {
    let records = vec![record(0, 100), record(1, 100)];
    let (data, offsets) = write_log(&records);
    let mut bad = data.clone();
    let last = data.len() - 1;
    bad[last] ^= 1;
    let (got, outcome) = read_until_stop(&bad);
    assert_eq!(got.len(), 1);
    assert!(matches!(outcome, ReadOutcome::TornTail { offset, .. } if offset == offsets[1]));

    let mut bad = data.clone();
    bad[50] ^= 1;
    let (got, outcome) = read_until_stop(&bad);
    assert!(got.is_empty());
    assert!(matches!(outcome, ReadOutcome::Corrupt { offset: 0, .. }));
}

#[test]
fn corruption_resumes_at_the_next_block() {
    let records = vec![record(0, 100), record(1, BLOCK_SIZE), record(2, 50)];
    let (data, offsets) = write_log(&records);
    let mut bad = data.clone();
    bad[10] ^= 0xff; // record 0's payload
    let (all, problems) = read_everything(&bad);
    // Record 1 starts in block 0, whose rest is skipped, so its LAST
    // fragment arrives without a FIRST; record 2 is intact.
    assert_eq!(all, vec![(records[2].clone(), offsets[2])]);
    assert_eq!(problems.len(), 2);
    assert!(matches!(
        problems[0],
        ReadOutcome::Corrupt { offset: 0, .. }
    ));
    assert!(
        matches!(problems[1], ReadOutcome::Corrupt { offset, .. } if offset == BLOCK_SIZE as u64)
    );
}

#[test]
fn padding_of_every_width_is_skipped() {
    for pad in 0..HEADER_SIZE {
        let records = vec![record(0, BLOCK_SIZE - HEADER_SIZE - pad), record(1, 10)];
        let (data, offsets) = write_log(&records);
        assert_eq!(offsets[1], BLOCK_SIZE as u64);
        assert!(data[BLOCK_SIZE - pad..BLOCK_SIZE].iter().all(|&b| b == 0));
        let (got, end) = read_until_stop(&data);
        assert_eq!(end, ReadOutcome::Eof);
        assert_eq!(got, records.into_iter().zip(offsets).collect::<Vec<_>>());
    }
}

#[test]
fn zero_fill_after_records_is_a_clean_end() {
    let records = vec![record(0, 10), record(1, 40_000)];
    let (mut data, _) = write_log(&records);
    data.extend_from_slice(&[0u8; 5000]);
    let (got, end) = read_until_stop(&data);
    assert_eq!(got.len(), 2);
    assert_eq!(end, ReadOutcome::Eof);
}

#[test]
fn zero_fill_is_told_apart_from_trailer_padding() {
    let records = vec![record(0, 10), record(1, 40_000)];
    let (mut data, _) = write_log(&records);
    let end = data.len();
    let read = |data: &[u8]| {
        let mut r = Reader::new(data, "f");
        while r.next() != ReadOutcome::Eof {}
        r.zero_fill()
    };
    assert_eq!(read(&data), None, "a clean end");
    data.extend_from_slice(&[0u8; 5000]);
    assert_eq!(read(&data), Some((end as u64, 5000)));
    // Padding of every width at a block's end is not zero fill.
    for pad in 1..HEADER_SIZE {
        let (mut data, _) = write_log(&[record(0, BLOCK_SIZE - HEADER_SIZE - pad)]);
        data.extend_from_slice(&vec![0u8; pad]);
        assert_eq!(data.len(), BLOCK_SIZE);
        assert_eq!(read(&data), None, "pad {pad}");
        data.push(0);
        assert_eq!(
            read(&data),
            Some(((BLOCK_SIZE - pad) as u64, pad as u64 + 1))
        );
    }
}

#[test]
fn first_fragment_then_zero_fill_is_torn() {
    let records = vec![record(0, 10), record(1, 40_000)];
    let (data, offsets) = write_log(&records);
    let mut cut = data[..BLOCK_SIZE].to_vec();
    cut.extend_from_slice(&[0u8; 100]);
    let (got, end) = read_until_stop(&cut);
    assert_eq!(got.len(), 1);
    assert!(matches!(end, ReadOutcome::TornTail { offset, .. } if offset == offsets[1]));
}

#[test]
fn fragment_sequence_errors_are_corrupt() {
    use super::format::{encode_header, RecordType};
    fn frag(t: RecordType, d: &[u8]) -> Vec<u8> {
        let mut v = encode_header(t, d).to_vec();
        v.extend_from_slice(d);
        v
    }
    // MIDDLE without FIRST, then a good FULL.
    let mut log = frag(RecordType::Middle, b"mm");
    log.extend(frag(RecordType::Full, b"ok"));
    let (all, problems) = read_everything(&log);
    assert_eq!(all, vec![(b"ok".to_vec(), 9)]);
    assert!(matches!(
        problems[..],
        [ReadOutcome::Corrupt { offset: 0, .. }]
    ));

    // FIRST, then FULL: the FIRST's record is lost, the FULL is kept.
    let mut log = frag(RecordType::First, b"ff");
    log.extend(frag(RecordType::Full, b"ok"));
    let (all, problems) = read_everything(&log);
    assert_eq!(all, vec![(b"ok".to_vec(), 9)]);
    assert!(matches!(
        problems[..],
        [ReadOutcome::Corrupt { offset: 0, .. }]
    ));

    // An unknown type with a valid checksum, followed by more data.
    let mut log = frag(RecordType::Full, b"a");
    let mut unknown = frag(RecordType::Full, b"zz");
    unknown[6] = 9;
    let crc = crate::checksum::mask_crc(super::format::record_crc(9, b"zz"));
    unknown[..4].copy_from_slice(&crc.to_le_bytes());
    log.extend(unknown);
    log.extend(frag(RecordType::Full, b"b"));
    let (all, problems) = read_everything(&log);
    assert_eq!(all, vec![(b"a".to_vec(), 0), (b"b".to_vec(), 17)]);
    assert!(matches!(
        problems[..],
        [ReadOutcome::Corrupt { offset: 8, .. }]
    ));
}

#[test]
fn reader_names_its_file_in_errors() {
    let r = Reader::new(b"", "000042.log");
    assert_eq!(r.file_name(), "000042.log");
    let e = r.corruption(7, "bad");
    assert!(e.is_corruption());
    assert_eq!(e.to_string(), "corruption in 000042.log at offset 7: bad");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let (all, _) = read_everything(&data);
        // Nothing can be longer than the file it came from.
        prop_assert!(all.iter().all(|(d, o)| d.len() + (*o as usize) < data.len()));
    }

    #[test]
    fn mutated_logs_never_yield_altered_records(
        sizes in proptest::collection::vec(0usize..50_000, 1..6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let records: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| record(i, n)).collect();
        let (mut data, offsets) = write_log(&records);
        for (at, x) in flips {
            let p = at.index(data.len());
            data[p] ^= x;
        }
        if do_cut {
            data.truncate(cut.index(data.len() + 1));
        }
        let (all, _) = read_everything(&data);
        assert_only_original_records(&all, &records, &offsets);
    }
}

/// A physical record of type `t` carrying `data`, bytes as written.
fn physical(t: super::format::RecordType, data: &[u8]) -> Vec<u8> {
    let mut out = super::format::encode_header(t, data).to_vec();
    out.extend_from_slice(data);
    out
}

#[test]
fn a_wal_reader_keeps_the_predecessor_record_apart() {
    use super::WalPredecessor;
    let (file, bytes) = MemFile::new();
    let mut w = Writer::new(Box::new(file));
    let p = WalPredecessor::new(12, 3456, 78);
    w.add_predecessor(&p).unwrap();
    w.add_record(b"batch").unwrap();
    let data = bytes.lock().unwrap().clone();
    let mut r = Reader::wal(&data, "000013.log");
    assert_eq!(r.predecessor(), None, "read on the first call");
    assert!(matches!(r.next(), ReadOutcome::Record { data, offset: 31 } if &data[..] == b"batch"));
    assert_eq!(r.predecessor(), Some(p));
    assert_eq!(r.next(), ReadOutcome::Eof);
    assert_eq!(super::predecessor_of(&data, "x"), Some(p));
    // Cut inside it: a torn tail at 0, and no predecessor.
    let mut r = Reader::wal(&data[..20], "000013.log");
    assert!(matches!(r.next(), ReadOutcome::TornTail { offset: 0, .. }));
    assert_eq!(r.predecessor(), None);
}

#[test]
fn a_predecessor_record_anywhere_else_is_corruption() {
    use super::format::RecordType;
    let pred = super::WalPredecessor::new(1, 2, 3).encode();
    let full = physical(RecordType::Full, b"first");
    // After a record, in a WAL.
    let data = [full.clone(), physical(RecordType::Predecessor, &pred)].concat();
    let mut r = Reader::wal(&data, "000002.log");
    assert!(matches!(r.next(), ReadOutcome::Record { .. }));
    assert_eq!(
        r.next(),
        ReadOutcome::Corrupt {
            offset: 12,
            detail: "predecessor record at 12: only a WAL's first record may be one".into()
        }
    );
    assert_eq!(r.predecessor(), None);
    // In a log that is not a WAL (a MANIFEST), even at offset 0.
    let data = physical(RecordType::Predecessor, &pred);
    assert_eq!(
        Reader::new(&data, "MANIFEST-000001").next(),
        ReadOutcome::Corrupt {
            offset: 0,
            detail: "record type 5 (a WAL's predecessor record) at 0 in a log that is not a WAL"
                .into()
        }
    );
    // With data of the wrong size.
    let data = [physical(RecordType::Predecessor, &pred[..20]), full].concat();
    let mut r = Reader::wal(&data, "000002.log");
    assert_eq!(
        r.next(),
        ReadOutcome::Corrupt {
            offset: 0,
            detail: "predecessor record of 20 bytes (it has exactly 24) at 0".into()
        }
    );
    assert!(matches!(r.next(), ReadOutcome::Record { offset: 27, .. }));
}
