//! Reads logical records back from a whole log file held in memory, telling
//! a torn tail (the normal result of a crash) apart from corruption
//! (format and rules: `docs/format/wal.md`).

use std::borrow::Cow;

use crate::coding::decode_fixed32;
use crate::error::Error;

use super::format::{record_crc, RecordType, BLOCK_SIZE, HEADER_SIZE};
use super::WalPredecessor;
use crate::checksum::unmask_crc;

/// What [`Reader::next`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadOutcome<'a> {
    /// A complete, checksummed logical record. `data` borrows from the file
    /// for single-fragment records and is assembled for fragmented ones.
    Record {
        /// The record's bytes.
        data: Cow<'a, [u8]>,
        /// File offset of the record's first fragment header.
        offset: u64,
    },
    /// The file ended cleanly at a record boundary (or in zero fill).
    Eof,
    /// The file ends in the middle of a record: a partially written last
    /// write. Everything before `offset` was returned as records; nothing
    /// after it is readable. Later calls return [`ReadOutcome::Eof`].
    TornTail {
        /// Start of the incomplete record (its first fragment).
        offset: u64,
        /// What was cut short.
        detail: String,
    },
    /// Bad data followed by more data. Everything before `offset` was
    /// returned as records. Later calls resume after the bad fragment (the
    /// rest of its block, if its length is untrustworthy), as LevelDB does.
    Corrupt {
        /// Start of the logical record that is lost (its first fragment, or
        /// the bad fragment when no record was in progress).
        offset: u64,
        /// Which check failed.
        detail: String,
    },
}

/// The offset of the first intact physical record (framing within its
/// block, known type, checksum) that starts after `from`, trying every
/// byte offset — not only where the reader would resync. Recovery uses it
/// to tell damage with nothing intact after it (a tail) from damage whose
/// block still holds intact records the reader skipped because the damaged
/// record's length could not be trusted. Runs only after damage; a match
/// by chance needs a 32-bit checksum to agree.
pub(crate) fn intact_fragment_after(data: &[u8], from: usize) -> Option<usize> {
    (from + 1..data.len().saturating_sub(HEADER_SIZE - 1)).find(|&p| {
        let h = &data[p..p + HEADER_SIZE];
        let length = usize::from(u16::from_le_bytes([h[4], h[5]]));
        let fits = HEADER_SIZE + length <= BLOCK_SIZE - p % BLOCK_SIZE
            && p + HEADER_SIZE + length <= data.len();
        fits && matches!(RecordType::from_u8(h[6]), Some(t) if t != RecordType::Zero)
            && unmask_crc(decode_fixed32(h))
                == record_crc(h[6], &data[p + HEADER_SIZE..p + HEADER_SIZE + length])
    })
}

/// The predecessor record of the WAL `data`, if it starts with an intact
/// one (only the first record is read).
pub(crate) fn predecessor_of(data: &[u8], file_name: &str) -> Option<WalPredecessor> {
    let mut r = Reader::wal(data, file_name);
    let _ = r.next();
    r.predecessor()
}

/// One physical record, or why there is none.
enum Fragment<'a> {
    Ok {
        t: RecordType,
        payload: &'a [u8],
        offset: usize,
    },
    /// End of file, or only zero fill left.
    End,
    /// The file ends inside this fragment.
    Torn { offset: usize, detail: String },
    /// A bad fragment with more data after it.
    Bad { offset: usize, detail: String },
}

/// Iterates over the logical records of one log file.
///
/// Invariants:
/// 1. `pos` is the offset of the next physical record header (or of block
///    trailer padding); `pos <= data.len()` except transiently while
///    skipping a trailer.
/// 2. `pending`, if set, holds the offset and bytes of a record whose FIRST
///    fragment (and maybe MIDDLE fragments) were read and whose LAST was not.
/// 3. Every `Record` returned lies entirely before `pos`.
/// 4. A predecessor record (type 5) is never returned as a `Record`: in a
///    WAL reader, an intact one at offset 0 is kept in `predecessor`; one
///    anywhere else, or in a log that is not a WAL, is `Corrupt`.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    file: String,
    /// The log is a WAL: it may start with a predecessor record.
    wal: bool,
    /// The WAL's predecessor record, once read past.
    predecessor: Option<WalPredecessor>,
    pos: usize,
    pending: Option<(usize, Vec<u8>)>,
    /// One past the last non-zero byte: from here to the end is zero fill.
    zero_tail_start: usize,
    /// Where reading ran into the zero fill, once it has.
    zero_fill_from: Option<usize>,
}

impl<'a> Reader<'a> {
    /// Reads the log (not a WAL: a MANIFEST) whose whole contents are
    /// `data`; `file_name` names it in errors built with
    /// [`Reader::corruption`].
    pub(crate) fn new(data: &'a [u8], file_name: &str) -> Reader<'a> {
        let zero_tail_start = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        Reader {
            data,
            file: file_name.to_string(),
            wal: false,
            predecessor: None,
            pos: 0,
            pending: None,
            zero_tail_start,
            zero_fill_from: None,
        }
    }

    /// Reads the WAL whose whole contents are `data`: as [`Reader::new`],
    /// and an intact predecessor record at offset 0 is read past and kept
    /// ([`Reader::predecessor`]).
    pub(crate) fn wal(data: &'a [u8], file_name: &str) -> Reader<'a> {
        let mut r = Reader::new(data, file_name);
        r.wal = true;
        r
    }

    /// Reads the log (a WAL if `wal`) whose contents so far are `data`,
    /// starting at `pos`, which must be where an earlier reader of the same
    /// file stood after returning a record ([`Reader::position`]), or 0. A
    /// log being appended to is read this way, each time with more of its
    /// bytes.
    pub(crate) fn resume(data: &'a [u8], pos: usize, file_name: &str, wal: bool) -> Reader<'a> {
        let mut r = Reader::new(data, file_name);
        r.wal = wal;
        r.pos = pos.min(data.len());
        r
    }

    /// The WAL's predecessor record, once the reader has read past it (any
    /// call to [`Reader::next`] does); `None` for a WAL that starts without
    /// one (created at open, or by a version before it existed).
    pub(crate) fn predecessor(&self) -> Option<WalPredecessor> {
        self.predecessor
    }

    /// The offset just past the last record returned (after a
    /// [`ReadOutcome::Record`]): where [`Reader::resume`] continues.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// After [`ReadOutcome::Eof`]: the offset and length of the zero fill
    /// that ended the file where a record header was expected, if it is
    /// more than a block trailer's padding. The writer never writes zeros
    /// there (it preallocates nothing), so such fill is space the OS
    /// allocated but whose data never reached the disk: writes lost in a
    /// power failure. `None` for a file that ends at a record boundary.
    pub(crate) fn zero_fill(&self) -> Option<(u64, u64)> {
        let from = self.zero_fill_from?;
        let len = self.data.len() - from;
        let left_in_block = BLOCK_SIZE - from % BLOCK_SIZE;
        if left_in_block < HEADER_SIZE && len <= left_in_block {
            return None; // trailer padding
        }
        Some((from as u64, len as u64))
    }

    /// The file name given to [`Reader::new`].
    #[cfg(test)]
    pub(crate) fn file_name(&self) -> &str {
        &self.file
    }

    /// Builds an [`Error::Corruption`] naming this log, for callers that turn
    /// a [`ReadOutcome::Corrupt`] or [`ReadOutcome::TornTail`] into an error.
    pub(crate) fn corruption(&self, offset: u64, detail: impl Into<String>) -> Error {
        Error::corruption(self.file.clone(), offset, detail)
    }

    /// Returns the next logical record, or why there is none.
    #[allow(clippy::should_implement_trait)] // not an Iterator: outcomes go on after Eof-like states
    pub(crate) fn next(&mut self) -> ReadOutcome<'a> {
        loop {
            match self.read_fragment() {
                Fragment::End => {
                    return match self.pending.take() {
                        Some((start, _)) => ReadOutcome::TornTail {
                            offset: start as u64,
                            detail: format!(
                                "record starting at {start} has no LAST fragment before the end of the file"
                            ),
                        },
                        None => ReadOutcome::Eof,
                    };
                }
                Fragment::Torn { offset, detail } => {
                    let start = self.pending.take().map_or(offset, |(s, _)| s);
                    return ReadOutcome::TornTail {
                        offset: start as u64,
                        detail,
                    };
                }
                Fragment::Bad { offset, detail } => {
                    let start = self.pending.take().map_or(offset, |(s, _)| s);
                    return ReadOutcome::Corrupt {
                        offset: start as u64,
                        detail,
                    };
                }
                Fragment::Ok { t, payload, offset } => {
                    if let Some(out) = self.assemble(t, payload, offset) {
                        return out;
                    }
                }
            }
        }
    }

    /// Feeds one good fragment into the record being assembled; returns an
    /// outcome when a record completes or the fragment sequence is invalid.
    fn assemble(
        &mut self,
        t: RecordType,
        payload: &'a [u8],
        offset: usize,
    ) -> Option<ReadOutcome<'a>> {
        match (t, self.pending.as_mut()) {
            (RecordType::Full, None) => Some(ReadOutcome::Record {
                data: Cow::Borrowed(payload),
                offset: offset as u64,
            }),
            (RecordType::First, None) => {
                self.pending = Some((offset, payload.to_vec()));
                None
            }
            (RecordType::Middle, Some((_, buf))) => {
                buf.extend_from_slice(payload);
                None
            }
            (RecordType::Last, Some(_)) => {
                // The match arm guarantees `pending` is set.
                let (start, mut buf) = self.pending.take()?;
                buf.extend_from_slice(payload);
                Some(ReadOutcome::Record {
                    data: Cow::Owned(buf),
                    offset: start as u64,
                })
            }
            (RecordType::Full | RecordType::First, Some(_)) => {
                // The record in progress is lost; re-read this fragment on
                // the next call, with nothing pending.
                let (start, _) = self.pending.take()?;
                self.pos = offset;
                Some(ReadOutcome::Corrupt {
                    offset: start as u64,
                    detail: format!(
                        "{t:?} fragment at {offset} while the record starting at {start} has no LAST fragment"
                    ),
                })
            }
            (RecordType::Middle | RecordType::Last, None) => Some(ReadOutcome::Corrupt {
                offset: offset as u64,
                detail: format!("{t:?} fragment at {offset} without a FIRST fragment"),
            }),
            (RecordType::Predecessor, pending) => {
                let start = pending.map(|(s, _)| *s);
                self.pending = None;
                let detail = match (self.wal, offset, start) {
                    (false, _, _) => format!(
                        "record type 5 (a WAL's predecessor record) at {offset} in a log that is not a WAL"
                    ),
                    (true, 0, None) => match WalPredecessor::decode(payload) {
                        Ok(p) => {
                            self.predecessor = Some(p);
                            return None;
                        }
                        Err(e) => format!("{e} at 0"),
                    },
                    (true, _, _) => format!(
                        "predecessor record at {offset}: only a WAL's first record may be one"
                    ),
                };
                Some(ReadOutcome::Corrupt {
                    offset: start.unwrap_or(offset) as u64,
                    detail,
                })
            }
            (RecordType::Zero, _) => Some(ReadOutcome::Corrupt {
                offset: self.pending.take().map_or(offset, |(s, _)| s) as u64,
                detail: format!("reserved record type 0 at {offset}"),
            }),
        }
    }

    /// Reads the physical record at `pos`, skipping block trailers.
    fn read_fragment(&mut self) -> Fragment<'a> {
        let len = self.data.len();
        loop {
            if self.pos >= len || self.pos >= self.zero_tail_start {
                // Only zero fill (preallocated or never-written pages) is left.
                if self.pos < len && self.pending.is_none() {
                    self.zero_fill_from.get_or_insert(self.pos);
                }
                self.pos = len;
                return Fragment::End;
            }
            let left_in_block = BLOCK_SIZE - self.pos % BLOCK_SIZE;
            if left_in_block < HEADER_SIZE {
                self.pos += left_in_block; // trailer padding
                continue;
            }
            let start = self.pos;
            let rest = &self.data[start..];
            if rest.len() < HEADER_SIZE {
                self.pos = len;
                return Fragment::Torn {
                    offset: start,
                    detail: format!(
                        "header at {start} cut short: {} of {HEADER_SIZE} bytes",
                        rest.len()
                    ),
                };
            }
            let stored_crc = decode_fixed32(rest);
            let length = usize::from(u16::from_le_bytes([rest[4], rest[5]]));
            let type_byte = rest[6];
            let end = start + HEADER_SIZE + length;
            if end > len {
                self.pos = len;
                return Fragment::Torn {
                    offset: start,
                    detail: format!(
                        "record at {start} of length {length} runs past the end of the file ({len} bytes)"
                    ),
                };
            }
            if HEADER_SIZE + length > left_in_block {
                self.pos = start + left_in_block;
                return Fragment::Bad {
                    offset: start,
                    detail: format!(
                        "record at {start} of length {length} crosses the block boundary ({left_in_block} bytes left in block)"
                    ),
                };
            }
            let payload = &rest[HEADER_SIZE..HEADER_SIZE + length];
            let computed = record_crc(type_byte, payload);
            if unmask_crc(stored_crc) != computed {
                let detail = format!(
                    "checksum mismatch in record at {start}: stored {:#010x}, computed {computed:#010x}",
                    unmask_crc(stored_crc)
                );
                if end >= self.zero_tail_start {
                    // The last thing in the file: a partially written final write.
                    self.pos = len;
                    return Fragment::Torn {
                        offset: start,
                        detail,
                    };
                }
                // The length may be garbage too: drop the rest of the block.
                self.pos = start + left_in_block;
                return Fragment::Bad {
                    offset: start,
                    detail,
                };
            }
            self.pos = end;
            return match RecordType::from_u8(type_byte) {
                Some(t) => Fragment::Ok {
                    t,
                    payload,
                    offset: start,
                },
                None => Fragment::Bad {
                    offset: start,
                    detail: format!("unknown record type {type_byte} at {start}"),
                },
            };
        }
    }
}
