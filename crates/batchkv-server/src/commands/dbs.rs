//! Commands that move keys between databases: MOVE and SWAPDB.
//!
//! A database is a one-byte key prefix (`keyspace.rs`), so both rewrite
//! stored keys: MOVE copies one key (a collection's elements under a new
//! version: O(elements)), SWAPDB rewrites both databases, their elements
//! and their expiry-index entries in one write (O(keys + elements), where
//! Redis swaps two pointers). Both are atomic: SWAPDB holds every key lock.
//! Both then wake the clients blocked (BLPOP, BZPOPMIN, ...) on the keys
//! they filled, as Redis 7 does.

use batchkv::WriteBatch;
use bytes::Bytes;

use super::strings::tri;
use super::{parse_int, spec, CommandSpec, ConnState, KEY1, NO_KEYS, W};
use crate::errors::{DB_OUT_OF_RANGE, SAME_OBJECT};
use crate::keyspace::{db_key, decode_expiry_index_key, expiry_index_key, EXPIRY_INDEX, NUM_DBS};
use crate::meta::{prefix_end, VERSIONED};
use crate::resp::Reply;
use crate::shared::Shared;

/// MOVE and SWAPDB.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("move", 3, W, KEY1, |s, c, a| move_key(s, c, a)),
    spec("swapdb", 3, W, NO_KEYS, |s, _, a| swapdb(s, a)),
];

/// A database index, `None` if out of range.
fn db_index(n: i64) -> Option<u8> {
    (0..NUM_DBS as i64).contains(&n).then_some(n as u8)
}

pub fn move_key(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let Some(n) = parse_int(&a[1]) else {
        return super::not_integer();
    };
    let Some(dst_db) = db_index(n) else {
        return Reply::err(DB_OUT_OF_RANGE);
    };
    if dst_db == conn.db {
        return Reply::err(SAME_OBJECT);
    }
    let src = db_key(conn.db, &a[0]);
    let dst = db_key(dst_db, &a[0]);
    let _g = shared.lock_keys(&[&src, &dst]);
    let Some(value) = tri!(shared.read_value(&src)) else {
        return Reply::Int(0);
    };
    if tri!(shared.read_value(&dst)).is_some() {
        return Reply::Int(0);
    }
    tri!(shared.move_value(&src, &value, &dst));
    // Redis adds the key to the destination first (its `new`).
    shared.publish_held_of(&dst);
    shared.notify(crate::notify::GENERIC, "move_from", &src);
    shared.notify(crate::notify::GENERIC, "move_to", &dst);
    Reply::Int(1)
}

pub fn swapdb(shared: &Shared, a: &[Bytes]) -> Reply {
    let Some(x) = parse_int(&a[0]) else {
        return Reply::err("ERR invalid first DB index");
    };
    let Some(y) = parse_int(&a[1]) else {
        return Reply::err("ERR invalid second DB index");
    };
    let (Some(x), Some(y)) = (db_index(x), db_index(y)) else {
        return Reply::err(DB_OUT_OF_RANGE);
    };
    if x == y {
        return Reply::ok();
    }
    let _g = shared.lock_all();
    let swap = |d: u8| if d == x { y } else { x };
    let mut b = WriteBatch::new();
    let mut moved: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Keys (db first), then the versioned ranges: elements, score and rank
    // indexes (db second).
    let versioned = VERSIONED.map(|f| (Some(f), 1));
    for (first, db_at) in [(None, 0usize)].into_iter().chain(versioned) {
        for d in [x, y] {
            let lo: Vec<u8> = first.into_iter().chain([d]).collect();
            let hi = prefix_end(&lo);
            tri!(shared.scan(&lo, &hi, false, false, |k, v| {
                let mut nk = k.to_vec();
                nk[db_at] = swap(d);
                moved.push((nk, v.to_vec()));
                true
            }));
            b.delete_range(&lo, &hi);
        }
    }
    tri!(shared.scan(
        &[EXPIRY_INDEX],
        &[EXPIRY_INDEX + 1],
        false,
        false,
        |k, _| {
            if let Some((t, key)) = decode_expiry_index_key(k) {
                if let Some(&d) = key.first().filter(|&&d| d == x || d == y) {
                    let mut nk = key.to_vec();
                    nk[0] = swap(d);
                    b.delete(k);
                    moved.push((expiry_index_key(t, &nk), Vec::new()));
                }
            }
            true
        }
    ));
    // Written after the range deletions in the same batch, so they stay.
    for (k, v) in moved {
        b.put(k, v);
    }
    // As Redis 7: clients blocked on keys that now hold data are served.
    shared.signal_dbs_after_write(&[x, y]);
    // The keys it moves are not new: SWAPDB publishes no notifications.
    tri!(shared.write_without_events(b));
    Reply::ok()
}
