//! CRC masking shared by every on-disk format that stores a CRC32C (WAL and
//! MANIFEST records, SST block trailers and footers): LevelDB's scheme,
//! described in `docs/format/wal.md` and `docs/format/sst.md`.
//!
//! Computing the CRC of data that itself contains CRCs (a log file copied
//! into a log record, a table embedded in another file) is error-prone;
//! masking makes a stored CRC look unlike the CRC of its neighbours.

/// Added to the rotated CRC when masking. On disk, never change.
const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC before storing it: rotate right by 15 bits, add
/// [`MASK_DELTA`] (wrapping). On disk, never change.
#[inline]
pub(crate) fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
pub(crate) fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trips_and_changes_the_value() {
        for crc in [0u32, 1, 0xdead_beef, u32::MAX, crc32c::crc32c(b"foo")] {
            assert_ne!(mask_crc(crc), crc);
            assert_ne!(mask_crc(mask_crc(crc)), mask_crc(crc));
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
        }
    }

    /// Pins the on-disk value: the masked CRC-32C of "123456789" (whose
    /// CRC is RFC 3720's check value 0xe3069283), computed independently.
    #[test]
    fn masked_value_of_a_known_crc_is_pinned() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(mask_crc(0xe306_9283), 0xc78a_b0e5);
    }
}
