//! `dump wal FILE` and `dump manifest FILE`: the records of a log file,
//! decoded, one line per record or edit and one indented line per
//! operation or field; damage is a `damage` line in its place, and the
//! dump goes on after it (exit status 1 at the end).
//!
//! ```text
//! file: PATH
//! file_size: N
//! predecessor number=N length=N last_sequence=N   (dump wal, a WAL a memtable switch created)
//! record offset=0 sequence=1 count=2              (dump wal)
//!   put cf=0 key=K value_size=N value=V
//!   delete cf=0 key=K
//!   delete_range cf=0 begin=K end=K
//!   merge cf=0 key=K value_size=N value=V
//! edit offset=0 column_family=0                   (dump manifest)
//!   comparator=NAME
//!   log_number=N
//!   next_file=N
//!   last_sequence=N
//!   add_column_family name=NAME options=OPTIONS
//!   drop_column_family
//!   max_column_family=N
//!   delete_file level=L number=N
//!   add_file level=L number=N size=N entries=N smallest=K@SEQ:TYPE largest=K@SEQ:TYPE [global_seqno=N]
//! damage offset=N kind=corrupt|torn_tail detail=TEXT
//! records: N   (edits: N)
//! damaged: N
//! ```
//! Keys, values and names are escaped; a value is cut after
//! [`VALUE_SHOWN`] bytes (then `...`) unless `--full-values`.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use batchkv::{DumpKey, LogDamage, ManifestEdit, ManifestFileReader, WalFileReader, WalOp};

use crate::escape::escape;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Bytes of a value `dump wal` prints without `--full-values`.
pub const VALUE_SHOWN: usize = 64;

/// `dump wal FILE`.
pub fn wal(file: &Path, full_values: bool) -> Result<ExitCode, Error> {
    let reader = WalFileReader::open(file)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "file_size: {}", reader.file_size())?;
    if let Some(p) = reader.predecessor() {
        writeln!(
            out,
            "predecessor number={} length={} last_sequence={}",
            p.number, p.length, p.last_sequence
        )?;
    }
    let (mut records, mut damaged) = (0u64, 0u64);
    for item in reader.records() {
        match item {
            Ok(rec) => {
                records += 1;
                writeln!(
                    out,
                    "record offset={} sequence={} count={}",
                    rec.offset,
                    rec.sequence,
                    rec.ops.len()
                )?;
                for op in &rec.ops {
                    writeln!(out, "  {}", show_op(op, full_values))?;
                }
            }
            Err(d) => {
                damaged += 1;
                writeln!(out, "{}", show_damage(&d))?;
            }
        }
    }
    writeln!(out, "records: {records}")?;
    finish(out, file, damaged)
}

/// `dump manifest FILE`.
pub fn manifest(file: &Path) -> Result<ExitCode, Error> {
    let reader = ManifestFileReader::open(file)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "file_size: {}", reader.file_size())?;
    let (mut edits, mut damaged) = (0u64, 0u64);
    for item in reader.edits() {
        match item {
            Ok(edit) => {
                edits += 1;
                write_edit(&mut out, &edit)?;
            }
            Err(d) => {
                damaged += 1;
                writeln!(out, "{}", show_damage(&d))?;
            }
        }
    }
    writeln!(out, "edits: {edits}")?;
    finish(out, file, damaged)
}

/// Prints the damage count; exit status 1 (and a word on stderr) if any.
fn finish(mut out: impl Write, file: &Path, damaged: u64) -> Result<ExitCode, Error> {
    writeln!(out, "damaged: {damaged}")?;
    out.flush()?;
    if damaged == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{}: {damaged} damaged place(s), see the `damage` lines",
        file.display()
    );
    Ok(ExitCode::from(1))
}

fn show_op(op: &WalOp, full_values: bool) -> String {
    let key = escape(&op.key);
    let cf = op.column_family;
    let value = |name: &str| {
        let v = &op.value;
        let (shown, cut) = if full_values || v.len() <= VALUE_SHOWN {
            (&v[..], "")
        } else {
            (&v[..VALUE_SHOWN], "...")
        };
        format!("value_size={} {name}={}{cut}", v.len(), escape(shown))
    };
    match op.value_type {
        "value" => format!("put cf={cf} key={key} {}", value("value")),
        "deletion" => format!("delete cf={cf} key={key}"),
        "range_deletion" => format!("delete_range cf={cf} begin={key} end={}", escape(&op.value)),
        "merge" => format!("merge cf={cf} key={key} {}", value("value")),
        other => format!("{other} cf={cf} key={key} {}", value("value")),
    }
}

fn show_damage(d: &LogDamage) -> String {
    format!(
        "damage offset={} kind={} detail={}",
        d.offset,
        if d.torn_tail { "torn_tail" } else { "corrupt" },
        d.detail.escape_debug()
    )
}

fn show_key(k: &DumpKey) -> String {
    format!("{}@{}:{}", escape(&k.user_key), k.sequence, k.value_type)
}

fn write_edit(out: &mut impl Write, e: &ManifestEdit) -> std::io::Result<()> {
    writeln!(
        out,
        "edit offset={} column_family={}",
        e.offset, e.column_family
    )?;
    if let Some(c) = &e.comparator {
        writeln!(out, "  comparator={}", escape(c.as_bytes()))?;
    }
    let scalars = [
        ("log_number", e.log_number),
        ("next_file", e.next_file_number),
        ("last_sequence", e.last_sequence),
    ];
    for (name, v) in scalars {
        if let Some(v) = v {
            writeln!(out, "  {name}={v}")?;
        }
    }
    if let Some((name, options)) = &e.add_column_family {
        writeln!(
            out,
            "  add_column_family name={} options={}",
            escape(name.as_bytes()),
            escape(options.as_bytes())
        )?;
    }
    if e.drop_column_family {
        writeln!(out, "  drop_column_family")?;
    }
    if let Some(m) = e.max_column_family {
        writeln!(out, "  max_column_family={m}")?;
    }
    for (level, number) in &e.deleted_files {
        writeln!(out, "  delete_file level={level} number={number}")?;
    }
    for f in &e.new_files {
        write!(
            out,
            "  add_file level={} number={} size={} entries={} smallest={} largest={}",
            f.level,
            f.number,
            f.file_size,
            f.num_entries,
            show_key(&f.smallest),
            show_key(&f.largest)
        )?;
        if f.global_seqno != 0 {
            write!(out, " global_seqno={}", f.global_seqno)?;
        }
        writeln!(out)?;
    }
    Ok(())
}
