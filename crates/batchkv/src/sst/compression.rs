//! Block compression: the [`CompressionType`] option, its on-disk type byte,
//! and the compress/decompress pair used for data blocks.
//!
//! # Format (never change; `docs/format/sst.md` §1)
//! A compressed block's stored contents are
//! `varint32 uncompressed_len ‖ compressed bytes`, where the compressed
//! bytes are an LZ4 *block* (no frame) or one ZSTD frame. The trailer's type
//! byte says which (RocksDB's numbers: 0 none, 4 LZ4, 7 ZSTD). A block is
//! stored uncompressed (type 0) when compression would save less than an
//! eighth of its size.
//!
//! Decompression never trusts the declared length further than needed: it
//! must be below 4 GiB, within what the codec can expand to (LZ4 at most
//! 255:1, ZSTD at most 32768:1, and ZSTD's frame header must declare the
//! same size), and the codec must produce exactly that many bytes; only
//! then is the output buffer allocated.

use std::fmt;
use std::str::FromStr;

use crate::coding::{get_varint32, put_varint32};
use crate::error::{Error, Result};

/// Type byte of an uncompressed block. On disk — never change.
pub(crate) const TYPE_NONE: u8 = 0;
/// Type byte of an LZ4-compressed block. On disk — never change.
pub(crate) const TYPE_LZ4: u8 = 4;
/// Type byte of a ZSTD-compressed block. On disk — never change.
pub(crate) const TYPE_ZSTD: u8 = 7;

/// How SST data blocks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompressionType {
    /// Stored as is.
    #[default]
    None,
    /// LZ4 (fast; the level is ignored).
    Lz4,
    /// Zstandard at `compression_level`.
    Zstd,
}

impl CompressionType {
    /// The name written to the table properties and accepted by option strings.
    pub fn name(self) -> &'static str {
        match self {
            CompressionType::None => "none",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }

    fn type_byte(self) -> u8 {
        match self {
            CompressionType::None => TYPE_NONE,
            CompressionType::Lz4 => TYPE_LZ4,
            CompressionType::Zstd => TYPE_ZSTD,
        }
    }
}

impl fmt::Display for CompressionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `none|lz4|zstd` (case-insensitive; RocksDB's `kNoCompression`,
/// `kLZ4Compression` and `kZSTD` too).
impl FromStr for CompressionType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "no" | "knocompression" => Ok(CompressionType::None),
            "lz4" | "klz4compression" => Ok(CompressionType::Lz4),
            "zstd" | "kzstd" => Ok(CompressionType::Zstd),
            _ => Err(Error::InvalidArgument(format!(
                "compression: unknown type {s:?} (expected none, lz4 or zstd)"
            ))),
        }
    }
}

/// The ZSTD levels accepted for `compression_level`.
#[cfg(feature = "zstd")]
pub(crate) fn zstd_level_range() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

/// Without the `zstd` feature: never consulted for a decision, since
/// `compression=zstd` is refused first ([`zstd_missing`]); zstd's own range.
#[cfg(not(feature = "zstd"))]
pub(crate) fn zstd_level_range() -> std::ops::RangeInclusive<i32> {
    -131072..=22
}

/// Why `compression=zstd` is refused by a build without the `zstd` feature
/// (`None` when it has it).
pub(crate) fn zstd_missing() -> Option<&'static str> {
    if cfg!(feature = "zstd") {
        None
    } else {
        Some("compression: zstd is not supported by this build (enable batchkv's cargo feature \"zstd\", on by default)")
    }
}

/// Every type this build can write and read (tests iterate over it).
#[cfg(all(test, feature = "zstd"))]
pub(crate) const AVAILABLE: &[CompressionType] = &[
    CompressionType::None,
    CompressionType::Lz4,
    CompressionType::Zstd,
];
/// Every type this build can write and read (tests iterate over it).
#[cfg(all(test, not(feature = "zstd")))]
pub(crate) const AVAILABLE: &[CompressionType] = &[CompressionType::None, CompressionType::Lz4];

/// A ZSTD compression context; without the `zstd` feature a type with no
/// values, so a [`Compressor`] can never hold one.
#[cfg(feature = "zstd")]
type ZstdCompressor = zstd::bulk::Compressor<'static>;
#[cfg(not(feature = "zstd"))]
type ZstdCompressor = std::convert::Infallible;

/// Compresses data blocks for one table builder (keeps the ZSTD context).
pub(crate) struct Compressor {
    kind: CompressionType,
    zstd: Option<ZstdCompressor>,
    /// Holds the stored form of the last compressed block.
    out: Vec<u8>,
}

impl Compressor {
    /// A compressor for `kind`; `level` is used by ZSTD only.
    pub(crate) fn new(kind: CompressionType, level: i32) -> Result<Compressor> {
        let zstd = match kind {
            #[cfg(feature = "zstd")]
            CompressionType::Zstd => Some(zstd::bulk::Compressor::new(level).map_err(|e| {
                Error::InvalidArgument(format!("compression_level: {level} rejected by zstd: {e}"))
            })?),
            #[cfg(not(feature = "zstd"))]
            CompressionType::Zstd => {
                let _ = level;
                return Err(Error::InvalidArgument(
                    zstd_missing().unwrap_or_default().to_string(),
                ));
            }
            _ => None,
        };
        Ok(Compressor {
            kind,
            zstd,
            out: Vec::new(),
        })
    }

    /// The bytes to store for `raw` and their type byte: the compressed form
    /// if it saves at least an eighth, else `raw` itself with [`TYPE_NONE`].
    pub(crate) fn compress<'a>(&'a mut self, raw: &'a [u8]) -> (&'a [u8], u8) {
        if self.kind == CompressionType::None || raw.len() > u32::MAX as usize {
            return (raw, TYPE_NONE);
        }
        self.out.clear();
        put_varint32(&mut self.out, raw.len() as u32);
        let ok = match (self.kind, &mut self.zstd) {
            (CompressionType::Lz4, _) => {
                self.out.extend_from_slice(&lz4_flex::block::compress(raw));
                true
            }
            #[cfg(feature = "zstd")]
            (CompressionType::Zstd, Some(z)) => match z.compress(raw) {
                Ok(c) => {
                    self.out.extend_from_slice(&c);
                    true
                }
                // A compression failure only costs the space saving.
                Err(_) => false,
            },
            #[cfg(not(feature = "zstd"))]
            (_, Some(never)) => match *never {},
            _ => false,
        };
        if !ok || self.out.len() > raw.len() - raw.len() / 8 {
            return (raw, TYPE_NONE);
        }
        (&self.out, self.kind.type_byte())
    }
}

/// The most a ZSTD frame can expand: each block yields at most 128 KiB and
/// takes at least 4 stored bytes (an RLE block: 3-byte header, 1 byte).
#[cfg(feature = "zstd")]
const ZSTD_MAX_RATIO: usize = (128 << 10) / 4;

#[cfg(feature = "zstd")]
thread_local! {
    /// One ZSTD decompression context per thread (creating one allocates).
    static ZSTD_DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Turns a block's stored contents of type `kind` into its raw contents.
/// `file`/`offset` name the block in errors; every failure is `Corruption`.
pub(crate) fn decompress(stored: Vec<u8>, kind: u8, file: &str, offset: u64) -> Result<Vec<u8>> {
    let bad = |detail: String| Error::corruption(file, offset, detail);
    if kind == TYPE_NONE {
        return Ok(stored);
    }
    if kind != TYPE_LZ4 && kind != TYPE_ZSTD {
        return Err(bad(format!("unknown block compression type {kind}")));
    }
    let (raw_len, n) = get_varint32(&stored)
        .ok_or_else(|| bad("compressed block: malformed uncompressed length".into()))?;
    let raw_len = raw_len as usize;
    let src = &stored[n..];
    let out = if kind == TYPE_LZ4 {
        if raw_len > src.len().saturating_mul(255).saturating_add(16) {
            return Err(bad(format!(
                "lz4 block of {} bytes cannot expand to {raw_len}",
                src.len()
            )));
        }
        let mut out = vec![0u8; raw_len];
        match lz4_flex::block::decompress_into(src, &mut out) {
            Ok(got) if got == raw_len => out,
            Ok(got) => {
                return Err(bad(format!(
                    "lz4 block decompressed to {got} bytes, expected {raw_len}"
                )))
            }
            Err(e) => return Err(bad(format!("lz4 block does not decompress: {e}"))),
        }
    } else {
        decompress_zstd(src, raw_len, file, offset)?
    };
    Ok(out)
}

/// A ZSTD block without the `zstd` feature: the data may be fine, this
/// build cannot read it.
#[cfg(not(feature = "zstd"))]
fn decompress_zstd(_src: &[u8], _raw_len: usize, file: &str, offset: u64) -> Result<Vec<u8>> {
    Err(Error::Unsupported {
        file: file.to_string(),
        offset,
        detail: "ZSTD-compressed block, and this build of batchkv has no zstd support (cargo feature \"zstd\")".into(),
    })
}

/// The raw contents of a ZSTD block (`src` after the length varint).
#[cfg(feature = "zstd")]
fn decompress_zstd(src: &[u8], raw_len: usize, file: &str, offset: u64) -> Result<Vec<u8>> {
    let bad = |detail: String| Error::corruption(file, offset, detail);
    let out = {
        // Reserve no more than the stored bytes can expand to (the frame
        // header's size is as untrusted as the varint).
        if raw_len > src.len().saturating_mul(ZSTD_MAX_RATIO) {
            return Err(bad(format!(
                "zstd block of {} bytes cannot expand to {raw_len}",
                src.len()
            )));
        }
        match zstd::zstd_safe::get_frame_content_size(src) {
            Ok(Some(size)) if size == raw_len as u64 => {}
            other => {
                return Err(bad(format!(
                    "zstd frame declares size {other:?}, block header {raw_len}"
                )))
            }
        }
        let mut out = Vec::with_capacity(raw_len);
        let res = ZSTD_DECOMPRESSOR.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
            }
            match slot.as_mut() {
                Some(d) => d
                    .decompress_to_buffer(src, &mut out)
                    .map_err(|e| e.to_string()),
                None => Err("no zstd context".to_string()),
            }
        });
        match res {
            Ok(got) if got == raw_len => out,
            Ok(got) => {
                return Err(bad(format!(
                    "zstd block decompressed to {got} bytes, expected {raw_len}"
                )))
            }
            Err(e) => return Err(bad(format!("zstd block does not decompress: {e}"))),
        }
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressible(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 7) as u8).collect()
    }

    #[test]
    fn round_trip_each_type() {
        let raw = compressible(5000);
        for (kind, level) in [
            (CompressionType::Lz4, 0),
            (CompressionType::Zstd, 1),
            (CompressionType::Zstd, 19),
        ]
        .into_iter()
        .filter(|(k, _)| AVAILABLE.contains(k))
        {
            let mut c = Compressor::new(kind, level).unwrap();
            let (stored, t) = c.compress(&raw);
            assert_eq!(t, kind.type_byte());
            assert!(stored.len() < raw.len() / 4, "{kind}: {}", stored.len());
            let back = decompress(stored.to_vec(), t, "f", 0).unwrap();
            assert_eq!(back, raw);
        }
    }

    #[test]
    fn incompressible_blocks_stay_raw() {
        // Pseudo-random bytes: no codec saves an eighth.
        let mut x = 0x1234_5678_9abc_def0u64;
        let raw: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for &kind in &AVAILABLE[1..] {
            let mut c = Compressor::new(kind, 3).unwrap();
            let (stored, t) = c.compress(&raw);
            assert_eq!((stored, t), (&raw[..], TYPE_NONE));
        }
        let mut c = Compressor::new(CompressionType::None, 0).unwrap();
        assert_eq!(c.compress(&compressible(1000)).1, TYPE_NONE);
    }

    #[test]
    fn damaged_compressed_blocks_are_corruption() {
        let raw = compressible(3000);
        for &kind in &AVAILABLE[1..] {
            let mut c = Compressor::new(kind, 3).unwrap();
            let (stored, t) = c.compress(&raw);
            let stored = stored.to_vec();
            // Wrong declared length, truncation, every flipped byte.
            let mut longer = Vec::new();
            put_varint32(&mut longer, 3001);
            longer.extend_from_slice(&stored[2..]);
            assert!(decompress(longer, t, "f", 0).unwrap_err().is_corruption());
            let cut = stored[..stored.len() - 3].to_vec();
            assert!(decompress(cut, t, "f", 0).unwrap_err().is_corruption());
            for i in 0..stored.len() {
                let mut b = stored.clone();
                b[i] ^= 0x55;
                // A flip may still decode (the checksum catches those);
                // it must never panic or return a wrong-sized block.
                if let Ok(out) = decompress(b, t, "f", 0) {
                    assert_eq!(out.len(), raw.len());
                }
            }
        }
        let err = decompress(vec![1, 2, 3], 9, "f.sst", 77).unwrap_err();
        assert!(err.to_string().contains("unknown block compression type 9"));
    }

    #[test]
    fn names_parse_back() {
        for k in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            assert_eq!(k.name().parse::<CompressionType>().unwrap(), k);
        }
        assert_eq!(
            "kZSTD".parse::<CompressionType>().unwrap(),
            CompressionType::Zstd
        );
        let err = "snappy".parse::<CompressionType>().unwrap_err();
        assert!(err.to_string().contains("compression"), "{err}");
    }
}
