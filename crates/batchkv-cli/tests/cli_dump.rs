//! `batchkv dump wal FILE` and `batchkv dump manifest FILE`: every record
//! decoded, and damage reported with its offset instead of ending the dump.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::{Path, PathBuf};

use batchkv::{Db, Options, WriteBatch, WriteOptions};
use common::{batchkv, ok, show};

/// The files of `dir` whose names end in `suffix` or start with `prefix`.
fn files(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

fn dump(kind: &str, file: &Path) -> std::process::Output {
    batchkv(&["dump".as_ref(), kind.as_ref(), file.as_os_str()])
}

/// A database whose newest WAL holds 12 records of 10,000-byte values
/// (spanning four 32 KiB blocks) and one batch of every operation type.
fn db_with_wal(dir: &Path) -> PathBuf {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..12 {
        db.put(format!("k{i:02}"), vec![b'v'; 10_000]).unwrap();
    }
    let mut b = WriteBatch::new();
    b.put(b"tab\there", b"\x1b[0m");
    b.delete(b"k00");
    b.delete_range(b"k01", b"k03");
    b.merge(b"m", b"operand");
    db.write(&WriteOptions::default(), b).unwrap();
    db.close().unwrap();
    files(dir, |n| n.ends_with(".log")).pop().unwrap()
}

#[test]
fn dump_wal_prints_every_record_and_operation() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = db_with_wal(tmp.path());
    let out = ok(dump("wal", &wal));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("record offset=0 sequence=1 count=1\n"),
        "{text}"
    );
    assert!(
        text.contains("  put cf=0 key=k11 value_size=10000 value=vvvv"),
        "{text}"
    );
    assert!(text.contains("record offset="), "{text}");
    assert!(text.contains(" sequence=13 count=4\n"), "{text}");
    for line in [
        "  put cf=0 key=tab\\x09here value_size=4 value=\\x1b[0m\n",
        "  delete cf=0 key=k00\n",
        "  delete_range cf=0 begin=k01 end=k03\n",
        "  merge cf=0 key=m value_size=7 value=operand\n",
        "records: 13\n",
        "damaged: 0\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(!text.contains('\x1b'), "an escape code reached the output");
}

/// A WAL a memtable switch created starts with its predecessor record:
/// shown on its own line, before the records (the first at offset 31).
#[test]
fn dump_wal_shows_the_predecessor_record() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 * 1024,
        ..Options::default()
    };
    let db = Db::open(tmp.path(), opts).unwrap();
    for i in 0..20 {
        db.put(format!("k{i:02}"), vec![b'v'; 10_000]).unwrap();
    }
    db.close().unwrap();
    let wal = files(tmp.path(), |n| n.ends_with(".log")).pop().unwrap();
    let out = ok(dump("wal", &wal));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("predecessor "))
        .unwrap_or_else(|| panic!("no predecessor line in\n{text}"));
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields.len(), 4, "{line}");
    assert!(
        fields[1].starts_with("number=") && fields[2].starts_with("length="),
        "{line}"
    );
    let last_sequence: u64 = fields[3]
        .strip_prefix("last_sequence=")
        .unwrap()
        .parse()
        .unwrap();
    // The batches of this WAL follow the predecessor's last one.
    assert!(
        text.contains(&format!(
            "record offset=31 sequence={} count=1\n",
            last_sequence + 1
        )),
        "{text}"
    );
}

#[test]
fn dump_wal_reports_damage_with_its_offset_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = db_with_wal(tmp.path());
    let mut data = std::fs::read(&wal).unwrap();
    // Inside the record of k04 (the second block): its checksum fails.
    data[45_000] ^= 0x55;
    let damaged = tmp.path().join("damaged.log");
    std::fs::write(&damaged, &data).unwrap();
    let out = dump("wal", &damaged);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(text.contains("damage offset="), "{text}");
    assert!(text.contains("kind=corrupt"), "{text}");
    // Records after the damage are still printed.
    assert!(text.contains("key=k11 "), "{text}");
    assert!(text.contains("key=tab\\x09here "), "{text}");
    assert!(!text.contains("damaged: 0\n"), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("damaged"),
        "{}",
        show(&out)
    );
}

#[test]
fn dump_manifest_decodes_every_edit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let db = Db::open(dir, Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(b"b\n", b"2").unwrap();
        db.flush().unwrap();
        db.put(b"c", b"3").unwrap();
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        let cf = db.create_cf("second", &Options::default()).unwrap();
        db.put_cf(&cf, b"x", b"y").unwrap();
        db.flush_cf(&cf).unwrap();
        db.close().unwrap();
    }
    let manifest = files(dir, |n| n.starts_with("MANIFEST-")).pop().unwrap();
    let out = ok(dump("manifest", &manifest));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "edit offset=0 column_family=0\n",
        "  comparator=",
        "  log_number=",
        "  next_file=",
        "  last_sequence=",
        "  add_file level=0 number=",
        " smallest=a@1:value largest=b\\x0a@2:value",
        "  delete_file level=0 number=",
        "  add_file level=1 number=",
        "  add_column_family name=second options=",
        " column_family=1\n",
        "  max_column_family=1\n",
        "damaged: 0\n",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }

    // A flipped byte in the middle: reported with its offset, later edits
    // still printed.
    let mut data = std::fs::read(&manifest).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x55;
    let damaged = dir.join("damaged-manifest");
    std::fs::write(&damaged, &data).unwrap();
    let out = dump("manifest", &damaged);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("damage offset="), "{text}");
}

#[test]
fn dump_of_a_missing_file_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("000042.log");
    for kind in ["wal", "manifest"] {
        let out = dump(kind, &missing);
        assert!(!out.status.success(), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("000042.log"),
            "{}",
            show(&out)
        );
    }
}
