//! Appends logical records to a log file, fragmenting them across 32 KiB
//! blocks (format: `docs/format/wal.md`).

use crate::error::{Error, Result};
use crate::fs::WritableFile;

use super::format::{encode_header, RecordType, BLOCK_SIZE, HEADER_SIZE, TRAILER_ZEROS};
use super::WalPredecessor;

/// Writes log records (WAL or MANIFEST) to one file.
///
/// Thread safety: `Writer` is `Send` but not shared; the WAL's group-commit
/// leader owns it while appending.
///
/// Invariants:
/// 1. `block_offset == file.len() % BLOCK_SIZE`: the writer's idea of its
///    position within the current block matches the bytes appended.
/// 2. After any failed append, flush or sync the writer is *failed*: every
///    later call returns that first error. Partially appended bytes cannot
///    be taken back, and a failed fsync must never be retried as if nothing
///    happened (docs/design.md §8), so the caller must switch to a new file.
pub(crate) struct Writer {
    file: Box<dyn WritableFile>,
    /// Bytes already used in the current block.
    block_offset: usize,
    /// The first error, once one happened (invariant 2).
    failed: Option<Error>,
}

impl Writer {
    /// Starts writing at the end of `file`. A new log is an empty file; a
    /// non-empty one continues in its last block.
    pub(crate) fn new(file: Box<dyn WritableFile>) -> Writer {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        Writer {
            file,
            block_offset,
            failed: None,
        }
    }

    /// Appends one logical record (possibly empty), split into FULL or
    /// FIRST/MIDDLE…/LAST fragments so that none crosses a block boundary.
    /// The bytes may sit in a user-space buffer until [`Writer::flush`].
    pub(crate) fn add_record(&mut self, data: &[u8]) -> Result<()> {
        self.check_not_failed()?;
        let r = self.write_fragments(data);
        self.remember_failure(r)
    }

    /// Writes the predecessor record a WAL created by a memtable switch
    /// starts with (`docs/format/wal.md` §2). Only as the first record of
    /// an empty file: it is one fragment at offset 0 (24 bytes always fit).
    pub(crate) fn add_predecessor(&mut self, p: &WalPredecessor) -> Result<()> {
        debug_assert_eq!(self.file.len(), 0, "a predecessor record starts a WAL");
        self.check_not_failed()?;
        let r = self.emit(RecordType::Predecessor, &p.encode());
        self.remember_failure(r)
    }

    /// Hands buffered bytes to the operating system (survives a process crash).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.check_not_failed()?;
        let r = self.file.flush();
        self.remember_failure(r)
    }

    /// Flushes and fsyncs the file (survives power loss).
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.check_not_failed()?;
        let r = self.file.sync();
        self.remember_failure(r)
    }

    /// Bytes appended to the file so far (including padding and headers).
    pub(crate) fn file_len(&self) -> u64 {
        self.file.len()
    }

    fn check_not_failed(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn remember_failure(&mut self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    fn write_fragments(&mut self, data: &[u8]) -> Result<()> {
        let mut left = data;
        let mut first = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                // Too small for a header: zero-fill the trailer (readers skip it).
                self.file.append(&TRAILER_ZEROS[..leftover])?;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let last = n == left.len();
            let t = match (first, last) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            self.emit(t, &left[..n])?;
            left = &left[n..];
            first = false;
            if last {
                return Ok(());
            }
        }
    }

    fn emit(&mut self, t: RecordType, fragment: &[u8]) -> Result<()> {
        let header = encode_header(t, fragment);
        self.file.append(&header)?;
        self.file.append(fragment)?;
        self.block_offset += HEADER_SIZE + fragment.len();
        debug_assert!(self.block_offset <= BLOCK_SIZE);
        debug_assert_eq!(
            self.block_offset as u64,
            (self.file.len() - 1) % BLOCK_SIZE as u64 + 1,
            "invariant 1"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::mem::MemFile;

    #[test]
    fn small_record_is_one_full_fragment() {
        let (file, bytes) = MemFile::new();
        let mut w = Writer::new(Box::new(file));
        w.add_record(b"hello").unwrap();
        let b = bytes.lock().unwrap().clone();
        assert_eq!(b.len(), HEADER_SIZE + 5);
        assert_eq!(&b[4..7], &[5, 0, RecordType::Full as u8]);
        assert_eq!(&b[7..], b"hello");
        assert_eq!(w.file_len(), 12);
    }

    #[test]
    fn pads_block_trailer_with_zeros() {
        let (file, bytes) = MemFile::new();
        let mut w = Writer::new(Box::new(file));
        // Leave exactly 3 bytes in the first block.
        w.add_record(&vec![7u8; BLOCK_SIZE - HEADER_SIZE - 3])
            .unwrap();
        w.add_record(b"x").unwrap();
        let b = bytes.lock().unwrap().clone();
        assert_eq!(&b[BLOCK_SIZE - 3..BLOCK_SIZE], &[0, 0, 0]);
        assert_eq!(b[BLOCK_SIZE + 6], RecordType::Full as u8);
        assert_eq!(b.len(), BLOCK_SIZE + HEADER_SIZE + 1);
    }

    #[test]
    fn exactly_header_sized_leftover_gets_an_empty_first_fragment() {
        let (file, bytes) = MemFile::new();
        let mut w = Writer::new(Box::new(file));
        w.add_record(&vec![7u8; BLOCK_SIZE - 2 * HEADER_SIZE])
            .unwrap();
        w.add_record(b"ab").unwrap();
        let b = bytes.lock().unwrap().clone();
        let h = BLOCK_SIZE - HEADER_SIZE;
        assert_eq!(&b[h + 4..h + 7], &[0, 0, RecordType::First as u8]);
        assert_eq!(
            &b[BLOCK_SIZE + 4..BLOCK_SIZE + 7],
            &[2, 0, RecordType::Last as u8]
        );
    }

    #[test]
    fn large_record_fragments_first_middle_last() {
        let (file, bytes) = MemFile::new();
        let mut w = Writer::new(Box::new(file));
        w.add_record(&vec![1u8; 3 * BLOCK_SIZE]).unwrap();
        let b = bytes.lock().unwrap().clone();
        let types: Vec<u8> = (0..4).map(|i| b[i * BLOCK_SIZE + 6]).collect();
        assert_eq!(types, vec![2, 3, 3, 4]);
    }

    #[test]
    fn continues_in_the_last_block_of_a_non_empty_file() {
        let (file, bytes) = MemFile::new();
        let mut w = Writer::new(Box::new(file));
        w.add_record(&vec![1u8; BLOCK_SIZE - 20]).unwrap();
        let reopened = MemFile::sharing(bytes.clone());
        let mut w2 = Writer::new(Box::new(reopened));
        w2.add_record(&[2u8; 30]).unwrap();
        let b = bytes.lock().unwrap().clone();
        // 13 bytes were left: the second record starts as a FIRST fragment there.
        assert_eq!(b[BLOCK_SIZE - 13 + 6], RecordType::First as u8);
        assert_eq!(b[BLOCK_SIZE + 6], RecordType::Last as u8);
    }

    #[test]
    fn failure_is_sticky() {
        let (mut file, bytes) = MemFile::new();
        file.fail_after = Some(10);
        let mut w = Writer::new(Box::new(file));
        assert!(w.add_record(b"0123456789abc").is_err());
        let len_after_failure = bytes.lock().unwrap().len();
        // Later calls return the first error and write nothing.
        assert!(matches!(w.add_record(b"x"), Err(Error::Io { .. })));
        assert!(w.sync().is_err());
        assert!(w.flush().is_err());
        assert_eq!(bytes.lock().unwrap().len(), len_after_failure);
    }
}
