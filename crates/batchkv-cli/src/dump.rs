//! `batchkv dump sst|wal|manifest FILE`: prints one file of a database,
//! keys and values escaped (`crate::escape`). Output formats: `docs/cli.md`.
//!
//! `dump sst FILE [--entries]`: the table's properties (`name: value` per
//! line) and, with `--entries`, one line per entry:
//! `key seq=N type=value|deletion|range_deletion|merge value_size=N`.
//! `dump wal` and `dump manifest`: see [`logs`].

mod logs;

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use batchkv::SstFileReader;

use crate::escape::escape;

/// What to dump.
#[derive(clap::Subcommand)]
pub enum DumpTarget {
    /// An SST file: its properties, and optionally its entries.
    Sst {
        /// Path of the `.sst` file.
        file: PathBuf,
        /// Also print every entry (key, sequence, type, value size).
        #[arg(long)]
        entries: bool,
    },
    /// A WAL file (`NNNNNN.log`): every record (offset, sequence,
    /// operation count) and its operations; damage is reported with its
    /// offset and the dump goes on. Exit status 1 if damage was found.
    Wal {
        /// Path of the `.log` file.
        file: PathBuf,
        /// Print whole values (default: the first 64 bytes, then `...`).
        #[arg(long)]
        full_values: bool,
    },
    /// A MANIFEST file: every version edit decoded (log number, next file,
    /// last sequence, files added and deleted with their levels, sizes and
    /// key ranges, column families); damage is reported with its offset
    /// and the dump goes on. Exit status 1 if damage was found.
    Manifest {
        /// Path of the `MANIFEST-NNNNNN` file.
        file: PathBuf,
    },
}

pub fn run(target: DumpTarget) -> Result<ExitCode, Box<dyn std::error::Error + Send + Sync>> {
    match target {
        DumpTarget::Sst { file, entries } => sst(&file, entries),
        DumpTarget::Wal { file, full_values } => logs::wal(&file, full_values),
        DumpTarget::Manifest { file } => logs::manifest(&file),
    }
}

fn sst(
    file: &std::path::Path,
    entries: bool,
) -> Result<ExitCode, Box<dyn std::error::Error + Send + Sync>> {
    let reader = SstFileReader::open(file)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "file_size: {}", reader.file_size())?;
    for (name, value) in reader.properties() {
        writeln!(out, "{name}: {value}")?;
    }
    if entries {
        for e in reader.entries() {
            let e = e?;
            writeln!(
                out,
                "{} seq={} type={} value_size={}",
                escape(&e.user_key),
                e.sequence,
                e.value_type,
                e.value_size
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
