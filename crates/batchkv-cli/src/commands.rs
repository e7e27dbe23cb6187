//! Data commands: put, get, delete, scan (`docs/cli.md`).
//!
//! Keys and values are bytes: an argument stands for its own bytes (any,
//! on unix), or with `--hex` for the bytes its hex digits spell; `put`
//! also takes its value from a file or stdin. Output is escaped
//! (`crate::escape`), hex with `--hex`, or the bytes unchanged with `--raw`.

use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use batchkv::{Db, Options, ReadOptions};

use crate::input::{read_file, read_stdin, Format};
use crate::open;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The commands that work on a database directory.
#[derive(clap::Subcommand)]
pub enum DataCommand {
    /// Stores a value under KEY: VALUE, the bytes of --value-file FILE, or
    /// all of stdin with --stdin (creates the database if missing).
    Put(PutArgs),
    /// Prints the value of KEY, escaped (exit status 1 if absent).
    Get(GetArgs),
    /// Deletes KEY.
    Delete(KeyArgs),
    /// Prints `key<TAB>value` lines in key order, escaped.
    Scan(ScanArgs),
}

/// Options every data command takes.
#[derive(clap::Args)]
pub struct Common {
    /// Keys and values are given (and printed) as hex: `00ff` is two bytes.
    #[arg(long)]
    hex: bool,
    /// Work on a directory written by `batchkv serve`, seeing its raw
    /// engine records (a database byte before each key, a header before
    /// each value).
    #[arg(long)]
    force: bool,
}

/// Choosing how output is printed (commands that print keys or values).
#[derive(clap::Args)]
pub struct OutputArgs {
    /// Print keys and values unescaped, as their bytes (`get` then prints
    /// exactly the value, without a newline).
    #[arg(long, conflicts_with = "hex")]
    raw: bool,
}

/// Arguments of `put`.
#[derive(clap::Args)]
#[command(
    group(clap::ArgGroup::new("source").required(true).args(["value", "value_file", "stdin"])),
    override_usage = "batchkv --db DIR put [OPTIONS] <KEY> <VALUE | --value-file FILE | --stdin>"
)]
pub struct PutArgs {
    /// The key.
    key: OsString,
    /// The value ("-" is the one-byte value "-"; use --stdin to read stdin).
    value: Option<OsString>,
    /// Read the value from FILE (its bytes as they are, also with --hex).
    #[arg(long, value_name = "FILE")]
    value_file: Option<PathBuf>,
    /// Read the value from stdin, to its end (its bytes as they are).
    #[arg(long)]
    stdin: bool,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `get`.
#[derive(clap::Args)]
pub struct GetArgs {
    /// The key.
    key: OsString,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `delete`.
#[derive(clap::Args)]
pub struct KeyArgs {
    /// The key.
    key: OsString,
    #[command(flatten)]
    common: Common,
}

/// Arguments of `scan`.
#[derive(clap::Args)]
pub struct ScanArgs {
    /// First key (inclusive).
    #[arg(long)]
    from: Option<OsString>,
    /// Last key (exclusive).
    #[arg(long)]
    to: Option<OsString>,
    /// At most this many keys.
    #[arg(long)]
    limit: Option<u64>,
    /// Print only the number of live keys.
    #[arg(long)]
    count: bool,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    output: OutputArgs,
}

impl Common {
    fn format(&self, output: Option<&OutputArgs>) -> Format {
        if self.hex {
            Format::Hex
        } else if output.is_some_and(|o| o.raw) {
            Format::Raw
        } else {
            Format::Text
        }
    }
}

pub fn run(
    db: Option<PathBuf>,
    options: Option<String>,
    cmd: DataCommand,
) -> Result<ExitCode, Error> {
    let dir = db.ok_or("--db DIR is required for data commands")?;
    let opts: Options = match options {
        Some(s) => s.parse()?,
        None => Options::default(),
    };
    match cmd {
        DataCommand::Put(a) => {
            let (key, value) = put_args(&a)?;
            let db = open::for_write(&dir, opts, a.common.force)?;
            db.put(key, value)?;
            close(db, ExitCode::SUCCESS)
        }
        DataCommand::Delete(a) => {
            let key = a.common.format(None).arg("key", &a.key)?;
            let db = open::for_write(&dir, opts, a.common.force)?;
            db.delete(key)?;
            close(db, ExitCode::SUCCESS)
        }
        DataCommand::Get(a) => {
            let f = a.common.format(Some(&a.output));
            let key = f.arg("key", &a.key)?;
            let db = open::for_read(&dir, opts, a.common.force)?;
            let code = get(&db, &key, f)?;
            close(db, code)
        }
        DataCommand::Scan(a) => {
            let f = a.common.format(Some(&a.output));
            let ropts = scan_options(&a, f)?;
            let db = open::for_read(&dir, opts, a.common.force)?;
            scan(&db, &ropts, &a, f)?;
            close(db, ExitCode::SUCCESS)
        }
    }
}

/// The key and value of `put`, read (from the argument, the file or
/// stdin) before the database is opened.
fn put_args(a: &PutArgs) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let f = a.common.format(None);
    let key = f.arg("key", &a.key)?;
    let value = match (&a.value, &a.value_file) {
        (Some(v), _) => f.arg("value", v)?,
        (None, Some(path)) => read_file(path)?,
        // The argument group makes --stdin the only source left.
        (None, None) => read_stdin()?,
    };
    Ok((key, value))
}

fn close(db: Db, code: ExitCode) -> Result<ExitCode, Error> {
    db.close()?;
    Ok(code)
}

/// Prints the value (a newline after it unless raw); exit status 1 and
/// "not found" on stderr if absent.
fn get(db: &Db, key: &[u8], f: Format) -> Result<ExitCode, Error> {
    let Some(v) = db.get(key)? else {
        eprintln!("not found");
        return Ok(ExitCode::from(1));
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&f.show(&v))?;
    if f != Format::Raw {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The bounds of a scan.
fn scan_options(args: &ScanArgs, f: Format) -> Result<ReadOptions, Error> {
    let bound = |b: &Option<OsString>, what| b.as_deref().map(|b| f.arg(what, b)).transpose();
    Ok(ReadOptions {
        lower_bound: bound(&args.from, "--from")?,
        upper_bound: bound(&args.to, "--to")?,
        ..ReadOptions::default()
    })
}

/// Prints `key<TAB>value` lines (or with `--count` their number).
fn scan(db: &Db, ropts: &ReadOptions, args: &ScanArgs, f: Format) -> Result<(), Error> {
    let mut it = db.iter(ropts)?;
    it.seek_to_first();
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut n = 0u64;
    while it.valid() && n < limit {
        if !args.count {
            out.write_all(&f.show(it.key()))?;
            out.write_all(b"\t")?;
            out.write_all(&f.show(it.value()))?;
            out.write_all(b"\n")?;
        }
        n += 1;
        it.next();
    }
    it.status()?;
    if args.count {
        writeln!(out, "{n}")?;
    }
    out.flush()?;
    Ok(())
}
