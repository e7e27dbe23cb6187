//! Fuzz target bodies: one function per decoder, each taking arbitrary
//! bytes and panicking only when the decoder breaks its contract.
//!
//! The same functions are driven by the cargo-fuzz targets in `fuzz/`
//! (through the non-default `fuzzing` feature) and, on stable Rust, by the
//! seeded mutation test in [`tests`] (`cargo test -p batchkv --release
//! fuzz_`). How to run libFuzzer: `fuzz/README.md`.
//!
//! The contract every decoder is held to:
//! 1. No panic, whatever the bytes.
//! 2. No allocation sized by a length field the input cannot back (a 4 GiB
//!    length is rejected before anything is allocated); the stable test
//!    measures the largest single allocation of each call.
//! 3. The result is `Ok` or a proper [`Error`]: `Corruption` naming the
//!    file (and the offset given, where the API takes one) for stored data,
//!    `InvalidArgument` for option strings.
//! 4. No loop without progress: scans are bounded by the input size.
//! 5. What decodes is self-consistent (a decoded batch iterates exactly its
//!    count of entries, a decoded edit re-encodes to the same edit, …).
//!
//! Not a stable API: hidden from the docs and compiled only for tests and
//! with the `fuzzing` feature.

mod sst;

use std::path::Path;
use std::sync::Arc;

use crate::batch::WriteBatch;
use crate::checksum::mask_crc;
use crate::error::Error;
use crate::key::{ValueType, MAX_SEQUENCE};
use crate::options::Options;
use crate::version::{Version, VersionEdit, VersionSet, NUM_LEVELS};
use crate::wal::format::{record_crc, BLOCK_SIZE, HEADER_SIZE};
use crate::wal::{ReadOutcome, Reader};

pub use sst::{block, range_del_block, table};

#[cfg(test)]
mod tests;

/// File name the WAL target gives its log in errors.
const WAL_FILE: &str = "000007.log";
/// File name and record offset the batch and edit targets report.
const RECORD_FILE: &str = "000009.log";
const RECORD_OFFSET: u64 = 1234;
const MANIFEST_FILE: &str = "MANIFEST-000001";

/// Panics unless `e` is a `Corruption` naming `file` (and `offset`, if
/// given) — or, in a build without the `zstd` feature, an `Unsupported`
/// (a mutated type byte may say ZSTD) naming them.
fn assert_corruption(e: &Error, file: &str, offset: Option<u64>) {
    match e {
        Error::Corruption {
            file: f, offset: o, ..
        } => {
            assert_eq!(f, file, "corruption names the wrong file: {e}");
            if let Some(offset) = offset {
                assert_eq!(*o, offset, "corruption names the wrong offset: {e}");
            }
        }
        #[cfg(not(feature = "zstd"))]
        Error::Unsupported {
            file: f, offset: o, ..
        } => {
            assert_eq!(f, file, "unsupported names the wrong file: {e}");
            if let Some(offset) = offset {
                assert_eq!(*o, offset, "unsupported names the wrong offset: {e}");
            }
        }
        other => panic!("expected Corruption in {file}, got {other:?}"),
    }
}

/// A whole WAL file: read every record (the reader resumes after
/// corruption) and decode each as a [`WriteBatch`].
pub fn wal_log(data: &[u8]) {
    let mut reader = Reader::wal(data, WAL_FILE);
    let len = data.len() as u64;
    // Each outcome consumes at least one fragment header, except a
    // fragment-sequence error that re-reads its fragment once.
    let max_outcomes = 2 * (data.len() / HEADER_SIZE + 1) + 2;
    for _ in 0..max_outcomes {
        match reader.next() {
            ReadOutcome::Record { data: rec, offset } => {
                assert!(offset < len, "record offset {offset} past the end ({len})");
                assert!(rec.len() <= data.len(), "record longer than the file");
                write_batch_at(rec.into_owned(), WAL_FILE, offset);
            }
            ReadOutcome::Eof => return,
            ReadOutcome::TornTail { offset, detail } => {
                assert!(offset <= len, "torn tail at {offset} past the end ({len})");
                assert_corruption(&reader.corruption(offset, detail), WAL_FILE, Some(offset));
                assert_eq!(reader.next(), ReadOutcome::Eof, "read past a torn tail");
                return;
            }
            ReadOutcome::Corrupt { offset, .. } => {
                assert!(offset < len, "corruption at {offset} past the end ({len})");
            }
        }
    }
    panic!("log reader made no progress in {max_outcomes} calls");
}

/// One WAL record payload: [`WriteBatch::from_rep`], then iterate.
pub fn write_batch(data: &[u8]) {
    write_batch_at(data.to_vec(), RECORD_FILE, RECORD_OFFSET);
}

fn write_batch_at(rep: Vec<u8>, file: &str, offset: u64) {
    let batch = match WriteBatch::from_rep(rep.clone(), file, offset) {
        Ok(b) => b,
        Err(e) => return assert_corruption(&e, file, Some(offset)),
    };
    assert_eq!(batch.rep(), &rep[..]);
    let entries: Vec<_> = batch.iter().collect();
    assert_eq!(entries.len(), batch.len(), "iterated count != header count");
    if let Some(n) = (entries.len() as u64).checked_sub(1) {
        let last = batch.sequence().checked_add(n);
        assert!(
            last.is_some_and(|s| s <= MAX_SEQUENCE),
            "batch at sequence {} with {} entries runs past the largest sequence number",
            batch.sequence(),
            entries.len()
        );
    }
    // Rebuilding from the decoded entries gives the same entries.
    let mut again = WriteBatch::new();
    for e in &entries {
        match e.value_type {
            ValueType::Value => again.put_in(e.cf, e.key, e.value),
            ValueType::RangeDeletion => again.delete_range_in(e.cf, e.key, e.value),
            ValueType::Deletion => again.delete_in(e.cf, e.key),
            ValueType::Merge => again.merge_in(e.cf, e.key, e.value),
        }
    }
    again.set_sequence(batch.sequence());
    assert!(again.iter().eq(entries.iter().copied()));
    assert_eq!(
        (again.max_key_len(), again.max_value_len()),
        (batch.max_key_len(), batch.max_value_len())
    );
}

/// One MANIFEST record payload: [`VersionEdit::decode`], re-encode, apply.
pub fn version_edit(data: &[u8]) {
    let edit = match VersionEdit::decode(data, MANIFEST_FILE, RECORD_OFFSET) {
        Ok(e) => e,
        Err(e) => return assert_corruption(&e, MANIFEST_FILE, Some(RECORD_OFFSET)),
    };
    if let Some(seq) = edit.last_sequence {
        assert!(seq <= MAX_SEQUENCE, "last sequence {seq} accepted");
    }
    let mut encoded = Vec::new();
    edit.encode(&mut encoded);
    assert!(encoded.len() <= data.len(), "re-encoding grew the edit");
    match VersionEdit::decode(&encoded, MANIFEST_FILE, 0) {
        Ok(again) => assert_eq!(again, edit, "edit does not survive re-encoding"),
        Err(e) => panic!("re-encoded edit does not decode: {e}"),
    }
    match Version::default().apply(&edit, MANIFEST_FILE) {
        Ok(v) => check_version(&v),
        Err(e) => assert_corruption(&e, MANIFEST_FILE, None),
    }
}

/// Level 0 newest first; the other levels sorted by smallest key.
fn check_version(v: &Version) {
    assert_eq!(v.levels.len(), NUM_LEVELS);
    assert!(v.levels[0].windows(2).all(|w| w[0].number >= w[1].number));
    for files in &v.levels[1..] {
        assert!(files.windows(2).all(|w| {
            crate::key::compare_internal_keys(&w[0].smallest, &w[1].smallest).is_le()
        }));
    }
}

/// A whole MANIFEST file, recovered through the real
/// [`VersionSet::recover`] from an in-memory directory whose `CURRENT`
/// names it. The first byte holds flags: bit 0 recomputes every record
/// checksum first ([`reseal_log_checksums`]) so that mutated edits reach
/// the decoder and the version logic behind the log reader.
pub fn manifest(data: &[u8]) {
    let Some((&flags, data)) = data.split_first() else {
        return;
    };
    let mut data = data.to_vec();
    if flags & 1 != 0 {
        reseal_log_checksums(&mut data);
    }
    let dir = Path::new("/fuzz-db");
    let fs = crate::fs::mem::MemFs::with_files(&[
        (
            dir.join("CURRENT"),
            format!("{MANIFEST_FILE}\n").into_bytes(),
        ),
        (dir.join(MANIFEST_FILE), data),
    ]);
    let manifest_path = dir.join(MANIFEST_FILE).display().to_string();
    match VersionSet::recover(Arc::new(fs), dir) {
        Ok(vs) => {
            assert!(vs.last_sequence() <= MAX_SEQUENCE);
            check_version(&vs.current());
        }
        // A well-formed MANIFEST of another comparator.
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("comparator"), "{msg}"),
        Err(e) => assert_corruption(&e, &manifest_path, None),
    }
}

/// Rewrites the checksum of every physical record whose header frames it
/// inside its block, walking the log as the reader does. Harness code: it
/// trusts nothing and skips what it cannot frame.
pub(crate) fn reseal_log_checksums(log: &mut [u8]) {
    let mut pos = 0;
    while pos + HEADER_SIZE <= log.len() {
        let left_in_block = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left_in_block < HEADER_SIZE {
            pos += left_in_block;
            continue;
        }
        let length = usize::from(u16::from_le_bytes([log[pos + 4], log[pos + 5]]));
        let end = pos + HEADER_SIZE + length;
        if end > log.len() || HEADER_SIZE + length > left_in_block {
            pos += left_in_block;
            continue;
        }
        let crc = mask_crc(record_crc(log[pos + 6], &log[pos + HEADER_SIZE..end]));
        log[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// An option string: [`Options::from_str`](std::str::FromStr), and the
/// first `name=value` through [`Options::set`].
pub fn options(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let invalid = |e: Error| assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    match s.parse::<Options>() {
        Ok(o) => assert!(o.validate().is_ok(), "parsed options do not validate"),
        Err(e) => invalid(e),
    }
    if let Some((name, value)) = s.split_once('=') {
        let value = value.split(';').next().unwrap_or_default();
        if let Err(e) = Options::default().set(name, value) {
            invalid(e);
        }
    }
}
