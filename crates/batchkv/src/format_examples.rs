//! Pins the worked examples of `docs/format/wal.md` §6 and
//! `docs/format/manifest.md` §5 byte for byte: each example is produced by
//! the real encoders and compared with the hex printed in the document. If
//! one of these tests fails, the on-disk format changed: fix the code, or
//! (for a deliberate new format version) the document and the test together.

use std::path::Path;
use std::sync::Arc;

use crate::batch::WriteBatch;
use crate::checksum::unmask_crc;
use crate::fs::mem::MemFs;
use crate::fs::FileSystem;
use crate::key::{pack_trailer, ValueType};
use crate::version::{FileMetaData, VersionEdit, VersionSet};
use crate::wal::format::BLOCK_SIZE;
use crate::wal::test_util::log_of;

#[test]
fn wal_worked_example_bytes_match_the_format_doc() {
    // One record: put("key", "v1"); delete("old") at sequence 7.
    let mut batch = WriteBatch::new();
    batch.put("key", "v1");
    batch.delete("old");
    batch.set_sequence(7);
    let log = log_of(&[batch.rep()]);
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0x73, 0x0e, 0x66, 0xd2,                         // masked CRC
        0x19, 0x00,                                     // length 25
        0x01,                                           // FULL
        0x07, 0, 0, 0, 0, 0, 0, 0,                      // sequence 7
        0x02, 0, 0, 0,                                  // count 2
        0x01, 0x03, b'k', b'e', b'y', 0x02, b'v', b'1', // put
        0x00, 0x03, b'o', b'l', b'd',                   // delete
    ];
    assert_eq!(log, expected);
    assert_eq!(
        unmask_crc(u32::from_le_bytes([log[0], log[1], log[2], log[3]])),
        0x91cd_97f1
    );

    // A 40,000-byte record: FIRST filling block 0, LAST at block 1.
    let big = vec![0x61u8; 40_000];
    let log = log_of(&[&big]);
    assert_eq!(log.len(), 40_014);
    assert_eq!(&log[..7], &[0x66, 0x0a, 0x1d, 0xd5, 0xf9, 0x7f, 0x02]);
    assert_eq!(
        &log[BLOCK_SIZE..BLOCK_SIZE + 7],
        &[0xc8, 0x2c, 0x0a, 0x38, 0x47, 0x1c, 0x04]
    );
}

#[test]
fn manifest_worked_example_bytes_match_the_format_doc() {
    // A new database: CURRENT and MANIFEST-000001.
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::with_files(&[]));
    let dir = Path::new("/db");
    VersionSet::create_new(&fs, dir).unwrap();
    assert_eq!(
        fs.read_all(&dir.join("CURRENT")).unwrap(),
        b"MANIFEST-000001\n"
    );
    assert!(
        !fs.exists(&dir.join("000001.dbtmp")),
        "temp file renamed away"
    );
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0x28, 0xa2, 0x9b, 0xfc, 0x22, 0x00, 0x01,       // header: CRC, length 34, FULL
        0x01, 0x1a,                                     // tag 1, length 26
        b'b', b'a', b't', b'c', b'h', b'k', b'v', b'.', b'B', b'y', b't', b'e', b'w',
        b'i', b's', b'e', b'C', b'o', b'm', b'p', b'a', b'r', b'a', b't', b'o', b'r',
        0x02, 0x00,                                     // log number 0
        0x03, 0x02,                                     // next file number 2
        0x04, 0x00,                                     // last sequence 0
    ];
    assert_eq!(fs.read_all(&dir.join("MANIFEST-000001")).unwrap(), expected);

    // A flush edit.
    let ik = |user_key: &[u8], seq: u64, t: ValueType| {
        let mut k = user_key.to_vec();
        k.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
        k
    };
    let edit = VersionEdit {
        log_number: Some(3),
        next_file_number: Some(5),
        last_sequence: Some(9),
        deleted_files: vec![(0, 2)],
        new_files: vec![(
            0,
            FileMetaData {
                number: 4,
                file_size: 1234,
                smallest: ik(b"a", 9, ValueType::Value),
                largest: ik(b"z", 7, ValueType::Deletion),
                num_entries: 3,
                global_seqno: 0,
                pinned: Default::default(),
            },
        )],
        ..VersionEdit::default()
    };
    let mut encoded = Vec::new();
    edit.encode(&mut encoded);
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0x02, 0x03,                                     // log number 3
        0x03, 0x05,                                     // next file number 5
        0x04, 0x09,                                     // last sequence 9
        0x06, 0x00, 0x02,                               // deleted: level 0, file 2
        0x07, 0x00, 0x04,                               // new: level 0, file 4
        0xd2, 0x09,                                     // file size 1234
        0x09, b'a', 0x01, 0x09, 0, 0, 0, 0, 0, 0,       // smallest "a"@9 value
        0x09, b'z', 0x00, 0x07, 0, 0, 0, 0, 0, 0,       // largest "z"@7 deletion
        0x03,                                           // 3 entries
    ];
    assert_eq!(encoded, expected);
    assert_eq!(VersionEdit::decode(&encoded, "m", 0).unwrap(), edit);
}
