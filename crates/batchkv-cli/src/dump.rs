//! `batchkv dump sst FILE [--entries]`: prints an SST file's properties
//! (`name: value` per line) and, with `--entries`, one line per entry:
//! `key seq=N type=value|deletion value_size=N`, keys escaped (printable
//! ASCII as is, `\\` for a backslash, `\xNN` for any other byte).

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use batchkv::SstFileReader;

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
}

pub fn run(target: DumpTarget) -> Result<ExitCode, Box<dyn std::error::Error + Send + Sync>> {
    let DumpTarget::Sst { file, entries } = target;
    let reader = SstFileReader::open(&file)?;
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

/// Printable ASCII as is (`\\` for a backslash), `\xNN` for any other byte.
fn escape(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x21..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_unprintable_bytes_and_backslashes() {
        assert_eq!(escape(b"key01"), "key01");
        assert_eq!(escape(b"a b\\\x00\xff"), "a\\x20b\\\\\\x00\\xff");
        assert_eq!(escape(b""), "");
    }
}
