//! Which of the primary's column families a secondary instance shows, and
//! the options each opens with.
//!
//! - [`Db::open_as_secondary`](crate::Db::open_as_secondary): every family,
//!   and those the primary creates later.
//! - [`Db::open_as_secondary_with_cf_options`](crate::Db::open_as_secondary_with_cf_options):
//!   the same, with options given by name (also for families created
//!   later under such a name).
//! - [`Db::open_cf_as_secondary`](crate::Db::open_cf_as_secondary) and
//!   [`Db::open_cf_descriptors_as_secondary`](crate::Db::open_cf_descriptors_as_secondary):
//!   only the named families and "default" (RocksDB's secondary opens a
//!   subset too). Each must exist at open; one the primary drops is
//!   dropped here, and one it creates again under a listed name is shown
//!   again; families of other names are never shown.
//!
//! A family without given options opens with the option string the
//! MANIFEST records for it; "default" always opens with the instance's
//! own options.

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::options::Options;
use crate::version::{VersionSet, DEFAULT_CF_NAME};

/// The families a secondary follows.
pub(super) struct Families {
    /// `None`: all of them; `Some`: these names (and "default").
    only: Option<BTreeSet<String>>,
    /// Options by family name; the others use their recorded strings.
    pub options: Vec<(String, Options)>,
}

impl Families {
    /// Every family, with `options` for those named there.
    pub fn all(options: Vec<(String, Options)>) -> Families {
        Families {
            only: None,
            options,
        }
    }

    /// Only the families `names` (and "default"), with `options` for those
    /// named there.
    pub fn only(names: BTreeSet<String>, options: Vec<(String, Options)>) -> Families {
        Families {
            only: Some(names),
            options,
        }
    }

    fn follows(&self, name: &str) -> bool {
        name == DEFAULT_CF_NAME || self.only.as_ref().is_none_or(|o| o.contains(name))
    }

    /// `InvalidArgument` naming the first listed family the primary's
    /// state `vs` does not have (as RocksDB refuses to open it).
    pub fn check_listed_exist(&self, vs: &VersionSet, primary: &str) -> Result<()> {
        let Some(only) = &self.only else {
            return Ok(());
        };
        for name in only {
            if !vs.column_families().values().any(|c| &c.name == name) {
                return Err(Error::InvalidArgument(format!(
                    "column family {name:?} to open as a secondary does not exist in \
                     {primary} (its families: {:?})",
                    vs.column_families()
                        .values()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                )));
            }
        }
        Ok(())
    }

    /// Removes from `vs` the families this secondary does not show, so
    /// their tables are not opened and their WAL records not read.
    pub fn select(&self, vs: &mut VersionSet) {
        vs.retain_families(|c| self.follows(&c.name));
    }
}
