//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG. The values are
//! strings in Redis's representation (`hll.rs`), so GET, DUMP-free
//! copies and every string command see the same bytes Redis would hold.
//! Writers hold the key's lock from read to write; a multi-key PFCOUNT
//! and PFMERGE's sources are one batched read.

use bytes::Bytes;

use super::strings::tri;
use super::{spec, CommandSpec, ConnState, ALL_KEYS, KEY1, WM};
use crate::errors::wrong_type;
use crate::hll;
use crate::keyspace::db_key;
use crate::notify::STRING;
use crate::resp::Reply;
use crate::shared::{Live, Shared, Value};

/// The HyperLogLog commands (PFSELFTEST is not implemented).
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("pfadd", -2, &["write", "denyoom", "fast"], KEY1, pfadd),
    spec("pfcount", -2, &["readonly"], ALL_KEYS, pfcount),
    spec("pfmerge", -2, WM, ALL_KEYS, pfmerge),
    spec(
        "pfdebug",
        3,
        &["write", "denyoom", "admin"],
        (2, 2, 1),
        pfdebug,
    ),
];

/// A string that is not a HyperLogLog (Redis's `isHLLObjectOrReply`).
fn not_hll() -> Reply {
    Reply::err("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

/// A HyperLogLog whose registers do not add up.
fn corrupt() -> Reply {
    Reply::err("INVALIDOBJ Corrupted HLL object detected")
}

/// The HyperLogLog at `key`, with its expiry: `None` if absent; a
/// collection or another string is an error.
fn read_hll(shared: &Shared, key: &[u8]) -> Result<Live, Reply> {
    match shared.read(key)? {
        Some((_, v)) if !hll::is_hll(&v) => Err(not_hll()),
        found => Ok(found),
    }
}

/// Raises `max` to the registers of every HyperLogLog at `keys` (absent
/// keys count as empty), read with one batched read. Also returns the
/// first key's value and expiry, and whether any of them is dense.
fn merge_all(shared: &Shared, keys: &[Vec<u8>], max: &mut [u8]) -> Result<(Live, bool), Reply> {
    let (mut first, mut dense) = (None, false);
    for (i, r) in shared.read_many(keys).into_iter().enumerate() {
        let (exp, v) = match r? {
            None => continue,
            Some(Value::Str(exp, v)) if hll::is_hll(&v) => (exp, v),
            Some(Value::Str(..)) => return Err(not_hll()),
            Some(Value::Coll(_)) => return Err(wrong_type()),
        };
        dense |= hll::is_dense(&v);
        hll::merge_into(max, &v).map_err(|_| corrupt())?;
        if i == 0 {
            first = Some((exp, v));
        }
    }
    Ok((first, dense))
}

/// PFADD key [element ...]: 1 if the key was created or a register
/// changed. The TTL is kept.
fn pfadd(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[0]);
    let _g = shared.lock_keys(&[&key]);
    let (exp, mut v, mut updated) = match tri!(read_hll(shared, &key)) {
        None => (None, hll::new_sparse(), true),
        Some((exp, v)) => (exp, v, false),
    };
    let sparse_max = shared.settings.hll_sparse_max_bytes();
    let mut changed = false;
    for e in &a[1..] {
        match hll::add(&mut v, e, sparse_max) {
            Ok(c) => changed |= c,
            Err(hll::Corrupt) => {
                // Redis changes its value in place: the elements added
                // before the damaged part stay added, and each of those
                // sparse updates (`hllSparseSet`) invalidated the cached
                // cardinality. A promotion to dense cannot precede the
                // error: dense values are never found damaged here.
                if changed {
                    hll::invalidate(&mut v);
                    tri!(shared.put(&key, &v, exp));
                }
                return corrupt();
            }
        }
    }
    updated |= changed;
    if updated {
        hll::invalidate(&mut v);
        tri!(shared.put(&key, &v, exp));
        shared.notify(STRING, "pfadd", &key);
    }
    Reply::Int(i64::from(updated))
}

/// PFCOUNT key [key ...]. One key: its cached cardinality, or the count
/// stored back as the cache (a write, as in Redis, which WATCH sees);
/// several: the union's, computed and not stored.
fn pfcount(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    if a.len() > 1 {
        let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
        let mut max = vec![0u8; hll::REGISTERS];
        tri!(merge_all(shared, &keys, &mut max));
        return Reply::Int(hll::count_registers(&max) as i64);
    }
    let key = db_key(conn.db, &a[0]);
    match tri!(read_hll(shared, &key)) {
        None => return Reply::Int(0),
        Some((_, v)) => {
            if let Some(card) = hll::cached(&v) {
                return Reply::Int(card as i64);
            }
        }
    }
    // A stale cache: counted and stored at the latest state, under the
    // key's lock (this read-only command ran at a snapshot).
    shared.latest(|| {
        let _g = shared.lock_keys(&[&key]);
        let Some((exp, mut v)) = tri!(read_hll(shared, &key)) else {
            return Reply::Int(0);
        };
        if let Some(card) = hll::cached(&v) {
            return Reply::Int(card as i64);
        }
        let Ok(card) = hll::count(&v) else {
            return corrupt();
        };
        hll::set_cached(&mut v, card);
        tri!(shared.put(&key, &v, exp));
        Reply::Int(card as i64)
    })
}

/// PFMERGE destkey [sourcekey ...]: the destination (itself one of the
/// sources) gets the registers' maxima; dense if any of them was. The
/// destination's TTL is kept.
fn pfmerge(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let keys: Vec<Vec<u8>> = a.iter().map(|k| db_key(conn.db, k)).collect();
    let _g = shared.lock_keys(&keys);
    let mut max = vec![0u8; hll::REGISTERS];
    let (dst, dense) = tri!(merge_all(shared, &keys, &mut max));
    let (exp, mut v) = dst.unwrap_or_else(|| (None, hll::new_sparse()));
    if dense && hll::to_dense(&mut v).is_err() {
        return corrupt();
    }
    let sparse_max = shared.settings.hll_sparse_max_bytes();
    for (i, &m) in max.iter().enumerate() {
        if m != 0 && hll::raise(&mut v, i, m, sparse_max).is_err() {
            return corrupt();
        }
    }
    hll::invalidate(&mut v);
    tri!(shared.put(&keys[0], &v, exp));
    // As Redis: a merge is published as a mass PFADD.
    shared.notify(STRING, "pfadd", &keys[0]);
    Reply::ok()
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. GETREG and TODENSE turn
/// a sparse value dense (stored).
fn pfdebug(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let key = db_key(conn.db, &a[1]);
    let _g = shared.lock_keys(&[&key]);
    // As Redis: the key before the subcommand.
    let Some((exp, mut v)) = tri!(read_hll(shared, &key)) else {
        return Reply::err("ERR The specified key does not exist");
    };
    let sparse = !hll::is_dense(&v);
    let densify = |v: &mut Vec<u8>| -> Result<(), Reply> {
        if sparse {
            hll::to_dense(v).map_err(|_| corrupt())?;
            shared.put(&key, v, exp)?;
        }
        Ok(())
    };
    match a[0].to_ascii_lowercase().as_slice() {
        b"getreg" => {
            tri!(densify(&mut v));
            Reply::Array(
                (0..hll::REGISTERS)
                    .map(|i| Reply::Int(i64::from(hll::register(&v, i))))
                    .collect(),
            )
        }
        b"decode" if sparse => Reply::Bulk(Bytes::from(hll::decode(&v))),
        b"decode" => Reply::err("ERR HLL encoding is not sparse"),
        b"encoding" => Reply::Simple(if sparse { "sparse" } else { "dense" }),
        b"todense" => {
            tri!(densify(&mut v));
            Reply::Int(i64::from(sparse))
        }
        _ => Reply::err(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(&a[0])
        )),
    }
}
