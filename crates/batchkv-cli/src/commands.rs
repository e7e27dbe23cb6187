//! Data commands: put, get, delete, scan.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use batchkv::{Db, Options, ReadOptions};

/// The commands that work on a database directory.
#[derive(clap::Subcommand)]
pub enum DataCommand {
    /// Stores VALUE under KEY.
    Put { key: String, value: String },
    /// Prints the value of KEY (exit status 1 if absent).
    Get { key: String },
    /// Deletes KEY.
    Delete { key: String },
    /// Prints `key<TAB>value` lines in key order.
    Scan(ScanArgs),
}

/// Arguments of `scan`.
#[derive(clap::Args)]
pub struct ScanArgs {
    /// First key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// Last key (exclusive).
    #[arg(long)]
    to: Option<String>,
    /// At most this many keys.
    #[arg(long)]
    limit: Option<u64>,
    /// Print only the number of live keys.
    #[arg(long)]
    count: bool,
}

pub fn run(
    db: Option<PathBuf>,
    options: Option<String>,
    cmd: DataCommand,
) -> Result<ExitCode, Box<dyn std::error::Error + Send + Sync>> {
    let dir = db.ok_or("--db DIR is required for data commands")?;
    let opts: Options = match options {
        Some(s) => s.parse()?,
        None => Options::default(),
    };
    let db = Db::open(&dir, opts)?;
    let code = match cmd {
        DataCommand::Put { key, value } => {
            db.put(key, value)?;
            ExitCode::SUCCESS
        }
        DataCommand::Delete { key } => {
            db.delete(key)?;
            ExitCode::SUCCESS
        }
        DataCommand::Get { key } => match db.get(&key)? {
            Some(v) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&v)?;
                out.write_all(b"\n")?;
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("not found");
                ExitCode::from(1)
            }
        },
        DataCommand::Scan(args) => {
            scan(&db, args)?;
            ExitCode::SUCCESS
        }
    };
    db.close()?;
    Ok(code)
}

fn scan(db: &Db, args: ScanArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let ropts = ReadOptions {
        lower_bound: args.from.map(String::into_bytes),
        upper_bound: args.to.map(String::into_bytes),
        ..ReadOptions::default()
    };
    let mut it = db.iter(&ropts)?;
    it.seek_to_first();
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut n = 0u64;
    while it.valid() && n < limit {
        if !args.count {
            out.write_all(it.key())?;
            out.write_all(b"\t")?;
            out.write_all(it.value())?;
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
