//! Framing shared by every block of an SST file: [`BlockHandle`], the block
//! trailer (compression type + masked CRC32C), the fixed-size [`Footer`], and
//! [`read_block`], the one function through which every block is read (the
//! block cache slots in there later).
//!
//! Byte layouts and a worked example: `docs/format/sst.md`. Every constant
//! in this file is part of the on-disk format — never change.

use super::compression::decompress;
use crate::checksum::{mask_crc, unmask_crc};
use crate::coding::{
    decode_fixed32, decode_fixed64, get_varint64, put_fixed32, put_fixed64, put_varint64,
};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;

/// Length of the trailer after every block: 1 byte compression type and a
/// 4-byte masked CRC32C. Never change.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

/// Largest encoding of a [`BlockHandle`] (two 10-byte varint64s).
pub(crate) const MAX_BLOCK_HANDLE_LEN: usize = 20;

/// Magic number closing every batchkv SST file (an arbitrary constant,
/// stored little-endian). Never change.
pub(crate) const TABLE_MAGIC: u64 = 0x6b76_6274_6873_7331;

/// The only table format version this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Footer: metaindex handle ‖ index handle ‖ zero padding up to 40 bytes ‖
/// fixed32 format version ‖ fixed32 masked CRC32C of the preceding 44 bytes
/// ‖ fixed64 magic. Never change.
pub(crate) const FOOTER_LEN: usize = 2 * MAX_BLOCK_HANDLE_LEN + 4 + 4 + 8;

/// The CRC32C of a block's contents followed by its compression type byte.
#[inline]
pub(crate) fn block_crc(contents: &[u8], compression: u8) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(contents), &[compression])
}

/// Where a block lives: its offset in the file and the size of its contents
/// (the trailer is not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    /// Byte offset of the block's first byte.
    pub offset: u64,
    /// Length of the block contents, without the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends `varint64 offset ‖ varint64 size`.
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle from the front of `src`: `(handle, bytes consumed)`.
    pub(crate) fn decode_from(src: &[u8]) -> Option<(BlockHandle, usize)> {
        let (offset, n1) = get_varint64(src)?;
        let (size, n2) = get_varint64(&src[n1..])?;
        Some((BlockHandle { offset, size }, n1 + n2))
    }

    /// Decodes a handle that must fill `src` exactly (an index or metaindex value).
    pub(crate) fn decode_exact(src: &[u8]) -> Option<BlockHandle> {
        match BlockHandle::decode_from(src)? {
            (h, n) if n == src.len() => Some(h),
            _ => None,
        }
    }
}

/// The fixed-size record at the end of every table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The metaindex block (names → handles of the filter and properties blocks).
    pub metaindex: BlockHandle,
    /// The index block (separator key → data block handle).
    pub index: BlockHandle,
}

impl Footer {
    /// Appends exactly [`FOOTER_LEN`] bytes.
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        let start = dst.len();
        self.metaindex.encode_to(dst);
        self.index.encode_to(dst);
        dst.resize(start + 2 * MAX_BLOCK_HANDLE_LEN, 0);
        put_fixed32(dst, FORMAT_VERSION);
        let crc = mask_crc(crc32c::crc32c(&dst[start..]));
        put_fixed32(dst, crc);
        put_fixed64(dst, TABLE_MAGIC);
        debug_assert_eq!(dst.len() - start, FOOTER_LEN);
    }

    /// Decodes and checks a footer found at `offset` of `file`.
    pub(crate) fn decode(src: &[u8], file: &str, offset: u64) -> Result<Footer> {
        let bad = |detail: String| Error::corruption(file, offset, detail);
        if src.len() != FOOTER_LEN {
            return Err(bad(format!(
                "footer is {} bytes, expected {FOOTER_LEN}",
                src.len()
            )));
        }
        let magic = decode_fixed64(&src[FOOTER_LEN - 8..]);
        if magic != TABLE_MAGIC {
            return Err(bad(format!(
                "bad table magic number {magic:#018x} (expected {TABLE_MAGIC:#018x}); not a batchkv table"
            )));
        }
        let stored = unmask_crc(decode_fixed32(&src[FOOTER_LEN - 12..]));
        let computed = crc32c::crc32c(&src[..FOOTER_LEN - 12]);
        if stored != computed {
            return Err(bad(format!(
                "footer checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            )));
        }
        let version = decode_fixed32(&src[2 * MAX_BLOCK_HANDLE_LEN..]);
        if version != FORMAT_VERSION {
            return Err(bad(format!("unsupported table format version {version}")));
        }
        let handles = &src[..2 * MAX_BLOCK_HANDLE_LEN];
        let (metaindex, n1) = BlockHandle::decode_from(handles)
            .ok_or_else(|| bad("footer: malformed metaindex handle".into()))?;
        let (index, n2) = BlockHandle::decode_from(&handles[n1..])
            .ok_or_else(|| bad("footer: malformed index handle".into()))?;
        if handles[n1 + n2..].iter().any(|&b| b != 0) {
            return Err(bad("footer: non-zero padding".into()));
        }
        Ok(Footer { metaindex, index })
    }
}

/// Reads the contents of the block at `handle` (trailer stripped,
/// decompressed), checking that it lies inside `[0, limit)`, if `verify`
/// its checksum, and that its compression type is known.
///
/// This is the single place a block comes off the file; the block cache
/// sits in front of it (in `Table`).
pub(crate) fn read_block(
    file: &dyn RandomAccessFile,
    file_name: &str,
    handle: BlockHandle,
    limit: u64,
    verify: bool,
) -> Result<Vec<u8>> {
    let len = stored_block_len(file_name, handle, limit)?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, handle.offset)?;
    finish_block(buf, file_name, handle, verify)
}

/// Bytes the block at `handle` takes in the file (contents and trailer),
/// checking that they lie inside `[0, limit)`.
pub(crate) fn stored_block_len(file_name: &str, handle: BlockHandle, limit: u64) -> Result<usize> {
    let end = handle
        .offset
        .checked_add(handle.size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
    let len = match end {
        Some(end) if end <= limit => (handle.size as usize) + BLOCK_TRAILER_LEN,
        _ => {
            return Err(Error::corruption(
                file_name,
                handle.offset,
                format!(
                    "block handle out of range: offset {} size {} (blocks end at {limit})",
                    handle.offset, handle.size
                ),
            ))
        }
    };
    Ok(len)
}

/// The block at `handle` from its stored bytes `buf` (contents and
/// trailer, [`stored_block_len`] long): checksum checked if `verify`,
/// trailer stripped, decompressed.
pub(crate) fn finish_block(
    mut buf: Vec<u8>,
    file_name: &str,
    handle: BlockHandle,
    verify: bool,
) -> Result<Vec<u8>> {
    let n = handle.size as usize;
    debug_assert_eq!(buf.len(), n + BLOCK_TRAILER_LEN, "a whole stored block");
    let compression = buf[n];
    if verify {
        let stored = unmask_crc(decode_fixed32(&buf[n + 1..]));
        let computed = block_crc(&buf[..n], compression);
        if stored != computed {
            return Err(Error::corruption(
                file_name,
                handle.offset,
                format!(
                    "block checksum mismatch: stored {stored:#010x}, computed {computed:#010x}, \
                     file {file_name} offset {} size {}",
                    handle.offset, handle.size
                ),
            ));
        }
    }
    buf.truncate(n);
    decompress(buf, compression, file_name, handle.offset)
}

/// Appends the trailer of a block stored as `contents` with compression
/// type byte `compression` to `dst`.
pub(crate) fn put_block_trailer(dst: &mut Vec<u8>, contents: &[u8], compression: u8) {
    dst.push(compression);
    put_fixed32(dst, mask_crc(block_crc(contents, compression)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_round_trip_and_exact_decode() {
        for (o, s) in [(0u64, 0u64), (1, 127), (300, 1 << 40), (u64::MAX, u64::MAX)] {
            let h = BlockHandle { offset: o, size: s };
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            assert!(buf.len() <= MAX_BLOCK_HANDLE_LEN);
            assert_eq!(BlockHandle::decode_exact(&buf), Some(h));
            buf.push(0);
            assert_eq!(BlockHandle::decode_exact(&buf), None);
            // A truncated handle never decodes.
            assert_eq!(BlockHandle::decode_from(&buf[..1]), None);
        }
    }

    #[test]
    fn footer_round_trip_and_rejects_any_flipped_byte() {
        let f = Footer {
            metaindex: BlockHandle {
                offset: 1000,
                size: 45,
            },
            index: BlockHandle {
                offset: 1050,
                size: 300,
            },
        };
        let mut buf = Vec::new();
        f.encode_to(&mut buf);
        assert_eq!(buf.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&buf, "t.sst", 7).unwrap(), f);
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            let err = Footer::decode(&bad, "t.sst", 7).unwrap_err();
            assert!(err.is_corruption(), "byte {i}: {err}");
        }
    }
}
