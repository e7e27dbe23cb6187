//! The predecessor record a WAL starts with when a memtable switch created
//! it (RocksDB's `PredecessorWALInfo`): the number of the WAL it follows,
//! that WAL's length in bytes at the switch, and the last sequence number
//! written to it. Recovery compares it with what it found of that WAL, so
//! the lost end of an older WAL cannot go unnoticed while writes of a newer
//! one survive (`db/wal_replay.rs`).
//!
//! On disk it is one physical record of type 5 ([`RecordType::Predecessor`](super::format::RecordType))
//! at offset 0, whose data is exactly
//! `fixed64 number ‖ fixed64 length ‖ fixed64 last_sequence` (24 bytes,
//! little-endian); `docs/format/wal.md` §2.

use crate::coding::decode_fixed64;
use crate::key::SequenceNumber;

/// Bytes of a predecessor record's data. On disk, never change.
pub(crate) const ENCODED_LEN: usize = 24;

/// Bytes of the whole physical record (header and data): where the first
/// write batch of a WAL that starts with one begins.
pub(crate) const RECORD_LEN: u64 = (super::format::HEADER_SIZE + ENCODED_LEN) as u64;

/// What a WAL's predecessor record says about the WAL before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalPredecessor {
    /// The file number of the WAL this one follows.
    pub number: u64,
    /// That WAL's length in bytes when it was closed: every byte of it had
    /// been handed to the OS.
    pub length: u64,
    /// The largest sequence number in a write batch of that WAL (0 if it
    /// holds none).
    pub last_sequence: SequenceNumber,
}

impl WalPredecessor {
    /// The predecessor record of a WAL that follows WAL `number`.
    pub(crate) fn new(number: u64, length: u64, last_sequence: SequenceNumber) -> WalPredecessor {
        WalPredecessor {
            number,
            length,
            last_sequence,
        }
    }

    /// The record's data.
    pub(crate) fn encode(&self) -> [u8; ENCODED_LEN] {
        let mut out = [0u8; ENCODED_LEN];
        out[..8].copy_from_slice(&self.number.to_le_bytes());
        out[8..16].copy_from_slice(&self.length.to_le_bytes());
        out[16..].copy_from_slice(&self.last_sequence.to_le_bytes());
        out
    }

    /// Decodes a record's data; the error says what is wrong with it.
    pub(crate) fn decode(data: &[u8]) -> Result<WalPredecessor, String> {
        if data.len() != ENCODED_LEN {
            return Err(format!(
                "predecessor record of {} bytes (it has exactly {ENCODED_LEN})",
                data.len()
            ));
        }
        Ok(WalPredecessor {
            number: decode_fixed64(&data[..8]),
            length: decode_fixed64(&data[8..16]),
            last_sequence: decode_fixed64(&data[16..]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_three_little_endian_fixed64s() {
        let p = WalPredecessor::new(7, 0x0102, 0x0a0b_0c0d);
        let bytes = p.encode();
        assert_eq!(
            bytes,
            [
                7, 0, 0, 0, 0, 0, 0, 0, //
                2, 1, 0, 0, 0, 0, 0, 0, //
                0x0d, 0x0c, 0x0b, 0x0a, 0, 0, 0, 0,
            ]
        );
        assert_eq!(WalPredecessor::decode(&bytes), Ok(p));
    }

    #[test]
    fn the_worked_example_bytes_match_the_format_doc() {
        let (file, bytes) = crate::fs::mem::MemFile::new();
        let mut w = crate::wal::Writer::new(Box::new(file));
        w.add_predecessor(&WalPredecessor::new(7, 4242, 77))
            .unwrap();
        let written = bytes.lock().unwrap().clone();
        let doc: Vec<u8> = [
            "bc 4c a0 56 18 00 05",
            "07 00 00 00 00 00 00 00",
            "92 10 00 00 00 00 00 00",
            "4d 00 00 00 00 00 00 00",
        ]
        .join(" ")
        .split(' ')
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect();
        assert_eq!(written, doc);
        assert_eq!(written.len() as u64, RECORD_LEN);
    }

    #[test]
    fn any_other_length_is_refused_with_its_size() {
        let bytes = WalPredecessor::new(1, 2, 3).encode();
        assert_eq!(
            WalPredecessor::decode(&bytes[..23]),
            Err("predecessor record of 23 bytes (it has exactly 24)".to_string())
        );
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(WalPredecessor::decode(&longer)
            .unwrap_err()
            .contains("of 25 bytes"));
    }
}
