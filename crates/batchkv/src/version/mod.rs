//! Versions: the set of live SST files per level, changed by edits logged in
//! the MANIFEST.

pub(crate) mod edit;
