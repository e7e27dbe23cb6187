//! What `bench --db DIR` may do with DIR before opening an engine on it.
//!
//! The rule is that bench never deletes what it did not create:
//!
//! 1. A missing or empty directory is used (created).
//! 2. A directory holding the selected engine's database is refused unless
//!    `--use_existing_db` (open it) or `--destroy_db` is given. With
//!    `--destroy_db` the database's lock is taken first — a database another
//!    process has open is left alone — and only the files the engine names
//!    are deleted: other files, subdirectories and the directory stay.
//! 3. Any other non-empty directory is refused, naming some of its files,
//!    whatever the flags (except `--use_existing_db`, which opens what is
//!    there and lets the engine judge it).
//!
//! Which names belong to a database is a property of the engine
//! ([`Layout`]); batchkv's come from `crates/batchkv/src/filename.rs`.

use std::path::Path;

use batchkv::{FileSystem, PosixFs};

use super::engine::BenchResult;

/// How an engine names the files in its database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `CURRENT`, `LOCK`, `MANIFEST-N`, `N.log`, `N.sst`, `N.dbtmp`.
    Batchkv,
    /// RocksDB and Speedb: batchkv's names plus `IDENTITY`, `LOG`,
    /// `LOG.old.N`, `OPTIONS-N`, `N.blob`, `N.ldb`.
    RocksFamily,
    /// fjall: no file list here, so no directory is recognized as its
    /// database and `--destroy_db` is refused.
    Opaque,
}

impl Layout {
    pub fn of(engine: &str) -> Layout {
        match engine {
            "batchkv" => Layout::Batchkv,
            "rocksdb" | "speedb" => Layout::RocksFamily,
            _ => Layout::Opaque,
        }
    }

    /// True if a regular file called `name` is one the engine creates.
    pub fn owns(self, name: &str) -> bool {
        let numbered = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let numbered_with = |exts: &[&str]| {
            name.split_once('.')
                .is_some_and(|(stem, ext)| numbered(stem) && exts.contains(&ext))
        };
        match self {
            Layout::Batchkv => {
                matches!(name, "CURRENT" | "LOCK" | "OPTIONS")
                    || name.strip_prefix("MANIFEST-").is_some_and(numbered)
                    || numbered_with(&["log", "sst", "dbtmp"])
            }
            Layout::RocksFamily => {
                matches!(name, "CURRENT" | "LOCK" | "IDENTITY" | "LOG")
                    || name.strip_prefix("MANIFEST-").is_some_and(numbered)
                    || name.strip_prefix("LOG.old.").is_some_and(numbered)
                    || name
                        .strip_prefix("OPTIONS-")
                        .is_some_and(|n| numbered(n.strip_suffix(".dbtmp").unwrap_or(n)))
                    || numbered_with(&["log", "sst", "dbtmp", "blob", "ldb"])
            }
            Layout::Opaque => false,
        }
    }

    /// True if `name` alone says a database lives here (a database is
    /// never without one, even while being destroyed: see [`destroy`]).
    fn is_marker(self, name: &str) -> bool {
        self != Layout::Opaque && (name == "CURRENT" || name.starts_with("MANIFEST-"))
    }
}

/// What a directory holds, for the selected engine.
#[derive(Debug, PartialEq, Eq)]
pub enum Contents {
    /// Missing, or no entries at all.
    Empty,
    /// The engine's database; `others` are the entries it does not own.
    Database { others: Vec<String> },
    /// Entries, and no database of the engine among them.
    Foreign { names: Vec<String> },
}

/// Looks at `dir` with `layout`'s eyes.
pub fn inspect(dir: &Path, layout: Layout) -> BenchResult<Contents> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::Empty),
        Err(e) => return Err(format!("cannot list --db {}: {e}", dir.display()).into()),
    };
    let (mut owned, mut others) = (Vec::new(), Vec::new());
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list --db {}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && layout.owns(&name) {
            owned.push(name);
        } else {
            others.push(name);
        }
    }
    owned.sort();
    others.sort();
    Ok(if owned.is_empty() && others.is_empty() {
        Contents::Empty
    } else if owned.iter().any(|n| layout.is_marker(n)) || (others.is_empty() && !owned.is_empty())
    {
        // A marker, or nothing but the engine's files (a database whose
        // creation or destruction was cut short).
        Contents::Database { others }
    } else {
        others.extend(owned);
        others.sort();
        Contents::Foreign { names: others }
    })
}

/// A few names for a message: `a, b, c and 4 more`.
fn some_names(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// Makes `dir` ready for a fresh (or, with `use_existing`, reused) run of
/// `engine`; see the module documentation for the rules.
pub fn prepare(engine: &str, dir: &Path, use_existing: bool, destroy_db: bool) -> BenchResult<()> {
    if use_existing && destroy_db {
        return Err("--use_existing_db and --destroy_db contradict each other".into());
    }
    if use_existing {
        return Ok(());
    }
    let layout = Layout::of(engine);
    match inspect(dir, layout)? {
        Contents::Empty => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create --db {}: {e}", dir.display()))?;
            Ok(())
        }
        Contents::Foreign { names } => Err(format!(
            "--db {} is not empty and holds no {engine} database{} ({}); bench deletes \
             nothing it did not create: choose a missing or empty directory",
            dir.display(),
            if layout == Layout::Opaque {
                " that bench could recognize"
            } else {
                ""
            },
            some_names(&names)
        )
        .into()),
        Contents::Database { .. } if !destroy_db => Err(format!(
            "--db {} holds a {engine} database: pass --use_existing_db to run on it, or \
             --destroy_db to delete its files (and only those) first",
            dir.display()
        )
        .into()),
        Contents::Database { others }
            if layout == Layout::Batchkv && others.iter().any(|n| n != "lost") =>
        {
            // batchkv creates a database only in an empty directory (its
            // salvage directory `lost/` aside), so bench would delete the
            // database and then fail: refuse before deleting anything.
            Err(format!(
                "--db {} holds a batchkv database and other files ({}); batchkv creates a \
                 database only in an empty directory: move them away first",
                dir.display(),
                some_names(&others)
            )
            .into())
        }
        Contents::Database { others } => {
            match layout {
                Layout::Batchkv => destroy(dir, layout)?,
                Layout::RocksFamily => super::peers::destroy(engine, dir)?,
                Layout::Opaque => unreachable!("an opaque layout recognizes no database"),
            }
            if !others.is_empty() {
                println!(
                    "--destroy_db: deleted the {engine} database in {}; kept {}",
                    dir.display(),
                    some_names(&others)
                );
            }
            Ok(())
        }
    }
}

/// Deletes the batchkv database in `dir` while holding its `LOCK`: the
/// files [`Layout::Batchkv`] owns, `CURRENT` first and the MANIFESTs last,
/// so a destruction cut short still leaves a recognizable database.
fn destroy(dir: &Path, layout: Layout) -> BenchResult<()> {
    let lock_path = dir.join("LOCK");
    let lock = PosixFs.lock(&lock_path).map_err(|e| match e {
        batchkv::Error::Locked { .. } => format!(
            "--destroy_db: the database in {} is in use by another process (its LOCK is \
             held); nothing was deleted",
            dir.display()
        ),
        e => format!("--destroy_db: cannot lock {}: {e}", lock_path.display()),
    })?;
    let mut names: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_file() && layout.owns(&name) && name != "LOCK" {
            names.push(name);
        }
    }
    let rank = |n: &str| match n {
        "CURRENT" => 0,
        n if n.starts_with("MANIFEST-") => 2,
        _ => 1,
    };
    names.sort_by_key(|n| rank(n));
    for name in &names {
        std::fs::remove_file(dir.join(name))
            .map_err(|e| format!("--destroy_db: removing {}: {e}", dir.join(name).display()))?;
    }
    drop(lock);
    std::fs::remove_file(&lock_path)
        .map_err(|e| format!("--destroy_db: removing {}: {e}", lock_path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batchkv_owns_exactly_its_names() {
        let l = Layout::Batchkv;
        for n in [
            "CURRENT",
            "LOCK",
            "OPTIONS",
            "MANIFEST-000004",
            "000012.log",
            "7.sst",
            "000003.dbtmp",
        ] {
            assert!(l.owns(n), "{n}");
        }
        for n in [
            "notes.log",
            "MANIFEST-",
            "MANIFEST-x",
            ".sst",
            "000001.sst.bak",
            "OPTIONS-000001",
            "LOG",
            "IDENTITY",
            "current",
        ] {
            assert!(!l.owns(n), "{n}");
        }
    }

    #[test]
    fn rocks_family_owns_its_extra_names() {
        let l = Layout::RocksFamily;
        for n in [
            "IDENTITY",
            "LOG",
            "LOG.old.1700000000",
            "OPTIONS-000007",
            "OPTIONS-000007.dbtmp",
            "000009.blob",
        ] {
            assert!(l.owns(n), "{n}");
        }
        assert!(!l.owns("LOG.txt"));
        assert!(!Layout::Opaque.owns("CURRENT"));
    }

    #[test]
    fn inspect_tells_empty_database_and_foreign_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        assert_eq!(inspect(&d, Layout::Batchkv).unwrap(), Contents::Empty);
        std::fs::create_dir(&d).unwrap();
        assert_eq!(inspect(&d, Layout::Batchkv).unwrap(), Contents::Empty);
        std::fs::write(d.join("000001.log"), "").unwrap();
        std::fs::write(d.join("LOCK"), "").unwrap();
        // Only the engine's files: an unfinished database.
        assert_eq!(
            inspect(&d, Layout::Batchkv).unwrap(),
            Contents::Database { others: vec![] }
        );
        std::fs::write(d.join("notes.txt"), "").unwrap();
        assert!(matches!(
            inspect(&d, Layout::Batchkv).unwrap(),
            Contents::Foreign { .. }
        ));
        std::fs::write(d.join("CURRENT"), "MANIFEST-000001\n").unwrap();
        assert_eq!(
            inspect(&d, Layout::Batchkv).unwrap(),
            Contents::Database {
                others: vec!["notes.txt".into()]
            }
        );
        // A directory named like a database file is not one.
        let e = tmp.path().join("e");
        std::fs::create_dir_all(e.join("CURRENT")).unwrap();
        assert!(matches!(
            inspect(&e, Layout::Batchkv).unwrap(),
            Contents::Foreign { .. }
        ));
        assert!(matches!(
            inspect(&d, Layout::Opaque).unwrap(),
            Contents::Foreign { .. }
        ));
    }

    #[test]
    fn messages_name_a_few_files() {
        let names: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert_eq!(some_names(&names), "f0, f1, f2, f3, f4 and 3 more");
        assert_eq!(some_names(&names[..2]), "f0, f1");
    }
}
