//! Whose database is this? `batchkv serve` stores Redis keys with a
//! database byte and values with a header (`keyspace.rs`), so plain engine
//! data (written by the `batchkv` data commands or the library) and a
//! server's data look empty to each other. The server therefore marks its
//! databases, and refuses to serve plain data; the CLI refuses a marked
//! directory (`docs/format/server-keyspace.md` §7).
//!
//! The marker is the key [`SERVER_MARKER`] (value: the keyspace version,
//! `1`), in the reserved range `11` that no Redis command reaches and
//! FLUSHDB/FLUSHALL leave. Databases from before the marker are recognised
//! by their key ranges (`first_foreign_key`) and marked when a server
//! first opens them.

use std::path::Path;

use batchkv::{Db, ReadOptions};

use crate::keyspace::{
    decode_entry, decode_expiry_index_key, EXPIRY_INDEX, EXPIRY_INDEX_COMPLETE, NUM_DBS,
};
use crate::meta::{ELEMENTS, GROUPS, RANKS, SCORES};

/// The key every database written by `batchkv serve` holds.
pub const SERVER_MARKER: &[u8] = b"\x11batchkv_serve_keyspace";
/// The marker's value: the version of the keyspace layout.
const MARKER_VALUE: &[u8] = b"1";

/// How many entries from the start of an unmarked database are checked
/// against the server's layout (a bounded look: enough to tell plain data
/// from a server's, not a proof).
const CHECKED_ENTRIES: usize = 1000;

/// True if `db` was written by `batchkv serve`: it holds the marker, or,
/// written before the marker existed, the expiry index's completion key
/// (which every server since the index writes once it has indexed the
/// database).
pub fn written_by_server(db: &Db) -> batchkv::Result<bool> {
    Ok(db.get(SERVER_MARKER)?.is_some() || db.get(EXPIRY_INDEX_COMPLETE)?.is_some())
}

/// At server start, before any command: succeeds on a marked database,
/// and on an unmarked one that is empty or laid out as a server's (a
/// database from before the marker), which it marks. Fails, writing no
/// key, on a database holding a key the server never writes.
pub(crate) fn claim(db: &Db, dir: &Path) -> std::io::Result<()> {
    if db
        .get(SERVER_MARKER)
        .map_err(std::io::Error::other)?
        .is_some()
    {
        return Ok(());
    }
    if let Some(key) = first_foreign_key(db).map_err(std::io::Error::other)? {
        const SHOWN: usize = 64;
        let more = if key.len() > SHOWN { "..." } else { "" };
        return Err(std::io::Error::other(format!(
            "{} holds data not written by `batchkv serve`: the key \"{}{more}\" lies outside \
             the server's keyspace (docs/format/server-keyspace.md), so Redis clients would \
             see none of it. Serve a new or empty directory; the data commands \
             (`batchkv --db {} scan`) read this one",
            dir.display(),
            key[..key.len().min(SHOWN)].escape_ascii(),
            dir.display()
        )));
    }
    db.put(SERVER_MARKER, MARKER_VALUE)
        .map_err(std::io::Error::other)
}

/// The first key (among the first [`CHECKED_ENTRIES`] entries, and the
/// first key from byte `16` up) that the server's layout does not allow,
/// if any.
fn first_foreign_key(db: &Db) -> batchkv::Result<Option<Vec<u8>>> {
    let opts = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    let mut it = db.iter(&opts)?;
    it.seek_to_first();
    for _ in 0..CHECKED_ENTRIES {
        if !it.valid() {
            break;
        }
        if !server_entry(it.key(), it.value()) {
            return Ok(Some(it.key().to_vec()));
        }
        it.next();
    }
    // No server key range starts at `16` or above (the `ff` sync key of
    // old servers is only ever a tombstone).
    it.seek([GROUPS + 1]);
    let found = it.valid().then(|| it.key().to_vec());
    it.status()?;
    Ok(found)
}

/// Whether `key` → `value` fits the server's layout (§1 of the format
/// document): a value or collection record in a database, an expiry
/// index entry, a known marker, or an element key.
fn server_entry(key: &[u8], value: &[u8]) -> bool {
    match key.first() {
        Some(&db) if usize::from(db) < NUM_DBS => decode_entry(value).is_some(),
        Some(&EXPIRY_INDEX) => value.is_empty() && decode_expiry_index_key(key).is_some(),
        Some(0x11) => key == EXPIRY_INDEX_COMPLETE || key == SERVER_MARKER,
        // `12|13|14|15 ‖ db ‖ len(4) ‖ key ‖ version(8) ‖ …`
        Some(&ELEMENTS | &SCORES | &RANKS | &GROUPS) => {
            key.len() >= 14 && usize::from(key[1]) < NUM_DBS
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use batchkv::Options;

    use super::*;
    use crate::keyspace::encode_value;

    fn db_with(entries: &[(&[u8], &[u8])]) -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for (k, v) in entries {
            db.put(k, v).unwrap();
        }
        (dir, db)
    }

    #[test]
    fn an_empty_or_server_shaped_database_is_claimed_and_marked() {
        let (dir, db) = db_with(&[]);
        assert!(!written_by_server(&db).unwrap());
        claim(&db, dir.path()).unwrap();
        assert!(written_by_server(&db).unwrap());

        let v = encode_value(b"hello", Some(7));
        let index = crate::keyspace::expiry_index_key(7, b"\x00k");
        let (dir, db) = db_with(&[(b"\x00k", &v), (&index, b"")]);
        claim(&db, dir.path()).unwrap();
        assert_eq!(
            db.get(SERVER_MARKER).unwrap().as_deref(),
            Some(MARKER_VALUE)
        );
    }

    #[test]
    fn plain_data_is_refused_and_left_unmarked() {
        for entries in [
            &[(&b"hello"[..], &b"world"[..])][..],
            // Server-shaped keys first, a plain key after them.
            &[(b"\x00k", b"\x00v"), (b"zzz", b"1")],
            // A key in a database range whose value has no server header.
            &[(b"\x03k", b"\x09")],
        ] {
            let (dir, db) = db_with(entries);
            let err = claim(&db, dir.path()).unwrap_err().to_string();
            assert!(err.contains("not written by `batchkv serve`"), "{err}");
            assert!(!written_by_server(&db).unwrap());
        }
    }

    #[test]
    fn the_expiry_index_marker_identifies_a_server_database_from_before_the_marker() {
        let (_dir, db) = db_with(&[(EXPIRY_INDEX_COMPLETE, b"")]);
        assert!(written_by_server(&db).unwrap());
    }
}
