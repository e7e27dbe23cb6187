//! Opening the database of a data command: read-only commands never create
//! anything, a path that is a file is named as such, and a directory
//! written by `batchkv serve` is refused unless `--force` is given.

use std::path::Path;

use batchkv::{Db, Options};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Opens the existing database in `dir` read-only (no lock taken, nothing
/// written): fails with "no database at DIR" if there is none.
pub fn for_read(dir: &Path, opts: Options, force: bool) -> Result<Db, Error> {
    require_database(dir)?;
    let db = Db::open_read_only(dir, opts)?;
    refuse_server_db(&db, dir, force)?;
    Ok(db)
}

/// Opens the database in `dir` for writing, creating it if missing (as
/// the options say). An existing database is checked read-only first, so
/// that a refused one is not written to.
pub fn for_write(dir: &Path, opts: Options, force: bool) -> Result<Db, Error> {
    refuse_file(dir)?;
    if has_database(dir) {
        let check = Db::open_read_only(dir, opts.clone())?;
        refuse_server_db(&check, dir, force)?;
    }
    Ok(Db::open(dir, opts)?)
}

fn refuse_file(dir: &Path) -> Result<(), Error> {
    if dir.is_file() {
        return Err(format!("{} is a file, not a database directory", dir.display()).into());
    }
    Ok(())
}

fn has_database(dir: &Path) -> bool {
    dir.join("CURRENT").is_file()
}

fn require_database(dir: &Path) -> Result<(), Error> {
    refuse_file(dir)?;
    let why = if !dir.exists() {
        "the directory does not exist"
    } else if !dir.is_dir() {
        "it is not a directory"
    } else if !has_database(dir) {
        "the directory has no CURRENT file"
    } else {
        return Ok(());
    };
    Err(format!(
        "no database at {}: {why} (only `put` and `delete` create a database)",
        dir.display()
    )
    .into())
}

fn refuse_server_db(db: &Db, dir: &Path, force: bool) -> Result<(), Error> {
    if force || !batchkv_server::marker::written_by_server(db)? {
        return Ok(());
    }
    Err(format!(
        "{dir} was written by `batchkv serve`: its keys carry a database byte and its \
         values a header (docs/format/server-keyspace.md), so data commands would see raw \
         records, not your keys. Use a Redis client against `batchkv serve --dir {dir}`, \
         or pass --force to work on the raw engine keys",
        dir = dir.display()
    )
    .into())
}
