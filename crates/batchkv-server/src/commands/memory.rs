//! MEMORY: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP.
//!
//! batchkv keeps a key in engine records (`meta.rs`), not in Redis's
//! in-memory objects, so MEMORY USAGE reports what those records hold:
//! the bytes of their engine keys and values plus the 8-byte sequence and
//! type trailer the engine stores with each, before compression, without
//! index and filter blocks. A collection's elements are sampled as Redis
//! samples them (the first SAMPLES elements in element order, 5 by
//! default, 0 for all) and their mean size is counted once per element
//! (twice for a sorted set, whose members are also in its score index).
//! STATS reports the process's memory (as INFO memory) and the engine's
//! memtables, SST files and table readers; PURGE does nothing (the
//! allocator returns memory on its own); MALLOC-STATS answers as
//! redis-server does when its allocator has no statistics to give.

use bytes::Bytes;

use super::strings::tri;
use super::{help_reply, parse_int, spec, syntax_error, CommandSpec, ConnState, NO_KEYS};
use crate::keyspace::{db_key, NUM_DBS};
use crate::meta::{self, Kind};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

pub(super) static COMMANDS: &[CommandSpec] = &[spec("memory", -2, &[], NO_KEYS, memory)];

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// The engine's per-record trailer: sequence number and type.
const RECORD_TRAILER: u64 = 8;
/// MEMORY USAGE's default SAMPLES.
const DEFAULT_SAMPLES: u64 = 5;

/// `execute` has checked the subcommand and its arity.
fn memory(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    match a[0].to_ascii_lowercase().as_slice() {
        b"usage" => usage(shared, conn, &a[1..]),
        b"stats" => stats(shared),
        b"doctor" => Reply::Verbatim(Bytes::from(doctor(shared))),
        b"malloc-stats" => Reply::Verbatim(Bytes::from_static(
            b"Stats not supported for the current allocator",
        )),
        b"purge" => Reply::ok(),
        _ => help_reply(HELP),
    }
}

/// MEMORY USAGE key [SAMPLES count]: nil for a missing key.
fn usage(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let mut samples = DEFAULT_SAMPLES;
    let mut rest = &a[1..];
    while let [opt, tail @ ..] = rest {
        match tail {
            [n, more @ ..] if opt.eq_ignore_ascii_case(b"samples") => {
                samples = match parse_int(n) {
                    None => return super::not_integer(),
                    Some(n) if n < 0 => return syntax_error(),
                    Some(0) => u64::MAX,
                    Some(n) => n as u64,
                };
                rest = more;
            }
            _ => return syntax_error(),
        }
    }
    let key = db_key(conn.db, &a[0]);
    let Some(raw) = tri!(shared.get_raw(&key)) else {
        return Reply::Nil;
    };
    let Some(v) = tri!(crate::shared::live_value(&raw)) else {
        return Reply::Nil;
    };
    let record = key.len() as u64 + raw.len() as u64 + RECORD_TRAILER;
    match v {
        Value::Str(..) => Reply::Int(record as i64),
        Value::Coll(m) => {
            let prefix = meta::element_prefix_len(&key) as u64 + RECORD_TRAILER;
            let (mut seen, mut bytes) = (0u64, 0u64);
            tri!(shared.scan_elements(&key, &m, false, |sub, value| {
                seen += 1;
                bytes += prefix + sub.len() as u64 + value.len() as u64;
                if m.kind == Kind::ZSet {
                    // The score index's record: prefix, score, member.
                    bytes += prefix + 8 + sub.len() as u64;
                }
                seen < samples
            }));
            let elements = if seen == 0 {
                0
            } else {
                (bytes as f64 / seen as f64 * m.size as f64) as u64
            };
            Reply::Int(record.saturating_add(elements) as i64)
        }
    }
}

/// The engine's memory and files, by RocksDB-style property.
fn engine_figures(shared: &Shared) -> [(&'static str, u64); 3] {
    let int = |p: &str| shared.db.property_int(p).unwrap_or(0);
    [
        ("engine.memtables", int("batchkv.cur-size-all-mem-tables")),
        (
            "engine.table-readers",
            int("batchkv.estimate-table-readers-mem"),
        ),
        ("engine.sst-files", int("batchkv.total-sst-files-size")),
    ]
}

/// Keys in every database (the kept counts, `keycount`).
fn total_keys(shared: &Shared) -> u64 {
    (0..NUM_DBS as u8)
        .filter_map(|db| shared.key_count(db).ok())
        .map(|c| c.keys)
        .sum()
}

/// MEMORY STATS: a map of figures, Redis's names where batchkv has the
/// same figure (`peak.allocated`, `total.allocated`, `keys.count`), the
/// engine's under `engine.`.
fn stats(shared: &Shared) -> Reply {
    let (rss, peak) = super::info::rss_and_peak();
    let mut out = vec![
        (Reply::bulk_str("peak.allocated"), Reply::Int(peak as i64)),
        (Reply::bulk_str("total.allocated"), Reply::Int(rss as i64)),
        (
            Reply::bulk_str("keys.count"),
            Reply::Int(total_keys(shared) as i64),
        ),
    ];
    for (name, v) in engine_figures(shared) {
        out.push((Reply::bulk_str(name), Reply::Int(v as i64)));
    }
    Reply::Map(out)
}

/// MEMORY DOCTOR's report: what memory holds, in words.
fn doctor(shared: &Shared) -> String {
    let (rss, _) = super::info::rss_and_peak();
    let mut out = format!(
        "batchkv keeps its data in the storage engine: memory holds memtables, cached blocks \
         and table readers, not the dataset. Resident memory: {rss} bytes."
    );
    for (name, v) in engine_figures(shared) {
        out.push_str(&format!(" {name}: {v} bytes."));
    }
    out.push('\n');
    out
}
