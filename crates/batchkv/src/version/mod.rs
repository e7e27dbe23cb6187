//! Versions: which SST files are live at each level, and the MANIFEST that
//! records every change to that set.

pub(crate) mod dump;
pub(crate) mod edit;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub(crate) use edit::{FileMetaData, VersionEdit};
pub(crate) use set::{read_current, set_current, ManifestState, VersionSet, DEFAULT_CF_NAME};
pub(crate) use version::{Version, NUM_LEVELS};
