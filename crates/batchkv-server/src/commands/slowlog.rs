//! SLOWLOG GET, LEN, RESET and HELP over the log in `slowlog.rs` (which
//! `execute` fills).

use bytes::Bytes;

use super::{help_reply, parse_int, spec, CommandSpec, ConnState, NO_KEYS};
use crate::resp::Reply;
use crate::shared::Shared;

pub(super) static COMMANDS: &[CommandSpec] = &[spec("slowlog", -2, &[], NO_KEYS, slowlog)];

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

fn slowlog(shared: &Shared, _: &mut ConnState, a: &[Bytes]) -> Reply {
    match a[0].to_ascii_lowercase().as_slice() {
        b"get" => get(shared, a),
        b"len" => Reply::Int(shared.slowlog.len() as i64),
        b"reset" => {
            shared.slowlog.reset();
            Reply::ok()
        }
        _ => help_reply(HELP),
    }
}

/// SLOWLOG GET [count]: the newest `count` entries (10 by default, -1 for
/// all), each `[id, unix time, microseconds, [args], "ip:port", name]`.
fn get(shared: &Shared, a: &[Bytes]) -> Reply {
    let count = match a {
        [_] => Some(10),
        [_, n] => match parse_int(n) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return Reply::err("ERR count should be greater than or equal to -1"),
        },
        _ => return crate::errors::bad_subcommand(&a[0], "SLOWLOG"),
    };
    let entries = shared.slowlog.get(count);
    Reply::Array(
        entries
            .into_iter()
            .map(|e| {
                Reply::Array(vec![
                    Reply::Int(e.id as i64),
                    Reply::Int(e.time as i64),
                    Reply::Int(e.micros as i64),
                    Reply::Array(e.args.into_iter().map(Reply::Bulk).collect()),
                    Reply::bulk(Bytes::from(e.addr)),
                    Reply::Bulk(e.name),
                ])
            })
            .collect(),
    )
}
