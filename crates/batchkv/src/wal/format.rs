//! The physical log record format shared by the WAL and the MANIFEST: block
//! size, header layout and record types (the CRC masking is
//! [`crate::checksum`]'s, shared with the SST format).
//!
//! Byte-level description with a worked example: `docs/format/wal.md`.
//! Every constant in this file is on disk — never change it.

use crate::checksum::mask_crc;

/// Size of a log block. A physical record never crosses a block boundary.
/// On disk, never change.
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a physical record header: masked CRC32C (4) ‖ length (2) ‖ type (1).
/// On disk, never change.
pub(crate) const HEADER_SIZE: usize = 7;

/// Zero bytes written into a block's trailer when fewer than
/// [`HEADER_SIZE`] bytes remain in it.
pub(crate) const TRAILER_ZEROS: [u8; HEADER_SIZE - 1] = [0; HEADER_SIZE - 1];

/// The type byte of a physical record. On disk — never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// Reserved for zero-filled (preallocated) space; never written.
    Zero = 0,
    /// A whole logical record in one fragment.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// An interior fragment.
    Middle = 3,
    /// The final fragment.
    Last = 4,
    /// A WAL's predecessor record ([`WalPredecessor`](super::WalPredecessor)):
    /// whole in one fragment, and only at offset 0 of a WAL.
    Predecessor = 5,
}

impl RecordType {
    /// Decodes a type byte; `None` for bytes this version does not know.
    pub(crate) fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            0 => Some(RecordType::Zero),
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            5 => Some(RecordType::Predecessor),
            _ => None,
        }
    }
}

/// The (unmasked) CRC32C of a physical record: over the type byte, then the data.
#[inline]
pub(crate) fn record_crc(type_byte: u8, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&[type_byte]), data)
}

/// Builds the header of a physical record carrying `data` (at most
/// `BLOCK_SIZE - HEADER_SIZE` bytes, so the length fits in 16 bits).
#[inline]
pub(crate) fn encode_header(t: RecordType, data: &[u8]) -> [u8; HEADER_SIZE] {
    debug_assert!(data.len() <= BLOCK_SIZE - HEADER_SIZE);
    let crc = mask_crc(record_crc(t as u8, data));
    let len = data.len() as u16;
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h[4..6].copy_from_slice(&len.to_le_bytes());
    h[6] = t as u8;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_published_check_value() {
        // CRC-32C of "123456789" is 0xe3069283 (RFC 3720 check value).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        // The record CRC covers the type byte first.
        assert_eq!(record_crc(b'1', b"23456789"), 0xe306_9283);
    }

    #[test]
    fn header_layout() {
        use crate::checksum::unmask_crc;
        let h = encode_header(RecordType::Last, b"abc");
        assert_eq!(&h[4..], &[3, 0, 4]);
        let stored = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        assert_eq!(unmask_crc(stored), record_crc(4, b"abc"));
    }

    #[test]
    fn record_types_decode() {
        for b in 0..=5u8 {
            assert_eq!(RecordType::from_u8(b).map(|t| t as u8), Some(b));
        }
        assert_eq!(RecordType::from_u8(6), None);
        assert_eq!(RecordType::from_u8(0xff), None);
    }
}
