//! The `batchkv` command-line tool: data commands on a database directory,
//! `bench`, a db_bench-compatible benchmark, and `stress`/`crashtest`.

mod bench;
mod commands;
mod dump;
mod escape;
mod input;
mod logging;
mod open;
mod stress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// jemalloc, not the system allocator: `serve`'s per-command buffers are
/// small and short-lived and often freed on another thread than the one
/// that allocated them; with glibc's malloc an HSET of 50 clients took
/// 8-15 % more server CPU, and mimalloc lost 5-10 % on MSET
/// (docs/perf/history/2026-11-30-allocator.md). In `bench`, batchkv's and
/// fjall's allocations go through it; RocksDB and Speedb allocate in C++
/// through the C library's malloc.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "batchkv",
    version,
    about = "batchkv: an LSM key-value store built for batched reads"
)]
struct Cli {
    /// Database directory (data commands).
    #[arg(long, global = true)]
    db: Option<PathBuf>,
    /// Options string applied when opening, e.g. "write_buffer_size=64MB".
    #[arg(long, global = true)]
    options: Option<String>,
    #[command(flatten)]
    global: logging::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Data(commands::DataCommand),
    /// Runs db_bench-style benchmarks.
    Bench(Box<bench::BenchArgs>),
    /// Prints the contents of one file of a database: `dump sst|wal|manifest FILE`.
    #[command(subcommand)]
    Dump(dump::DumpTarget),
    /// Random operations checked against an expected-state oracle.
    Stress(stress::StressArgs),
    /// Kill -9 cycles around `stress`, verifying after every kill.
    Crashtest(stress::CrashtestArgs),
    /// Serves the database over the Redis protocol (RESP2/RESP3).
    Serve(batchkv_server::ServeArgs),
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let logfile = match &cli.command {
        Command::Serve(args) => args.logfile.clone(),
        _ => None,
    };
    if let Err(e) = logging::init(cli.global.log_level, logfile.as_deref()) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    cli.options = cli.global.options(cli.options.take());
    let result = match cli.command {
        Command::Bench(args) => bench::run(*args),
        Command::Data(cmd) => commands::run(cli.db, cli.options, cmd),
        Command::Dump(target) => dump::run(target),
        Command::Stress(args) => stress::run_stress(args),
        Command::Crashtest(args) => stress::run_crashtest(args),
        Command::Serve(args) => {
            batchkv_server::Config::from_args(args, cli.db, cli.options.as_deref())
                .map_err(Into::into)
                .and_then(|cfg| batchkv_server::run(cfg).map_err(Into::into))
                .map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
