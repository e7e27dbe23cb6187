//! CLIENT: ID, GETNAME, SETNAME, INFO, LIST, KILL, SETINFO, NO-EVICT,
//! NO-TOUCH, PAUSE, UNPAUSE, REPLY (the connection applies its mode,
//! `ReplyMode`), UNBLOCK, GETREDIR, TRACKINGINFO, CACHING, HELP, with
//! Redis 7's replies. What one connection sees of the others comes from
//! the registry in `clients.rs`.
//!
//! Accepted without effect (batchkv has no eviction, LRU, or pausing):
//! NO-EVICT and NO-TOUCH (they set the `e`/`T` flags CLIENT LIST shows),
//! PAUSE and UNPAUSE (arguments checked as Redis checks them; clients are
//! not paused). Client-side caching is not supported: GETREDIR answers -1,
//! TRACKINGINFO "off", CACHING Redis's error for a client not tracking.

use std::time::Instant;

use bytes::Bytes;

use super::{
    help_reply, lossy, parse_int, spec, syntax_error, CommandSpec, ConnState, ReplyMode, NO_KEYS,
};
use crate::clients::{KillFilter, NO_EVICT, NO_TOUCH, UNBLOCK_ERROR, UNBLOCK_TIMEOUT};
use crate::errors::TIMEOUT_NEGATIVE;
use crate::resp::Reply;
use crate::shared::Shared;

pub(super) static COMMANDS: &[CommandSpec] = &[spec("client", -2, &[], NO_KEYS, client)];

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "    (batchkv: client side caching is not supported.)",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * ID <client-id> [<client-id> ...]",
    "      Return clients of specified IDs only.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "    (batchkv: accepted, but clients are not paused.)",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Prints this help.",
];

/// `execute` has checked the subcommand and its arity.
fn client(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    match a[0].to_ascii_lowercase().as_slice() {
        b"id" => Reply::Int(conn.id as i64),
        b"getname" => conn.name.clone().map_or(Reply::Nil, Reply::Bulk),
        b"setname" => setname(conn, &a[1]),
        b"info" => {
            let line = conn
                .client
                .info_line(Instant::now(), |s| shared.cmdstats.name(s).to_string());
            Reply::Verbatim(Bytes::from(line + "\n"))
        }
        b"list" => list(shared, &a[1..]),
        b"kill" => kill(shared, conn, &a[1..]),
        b"setinfo" => setinfo(conn, &a[1], &a[2]),
        b"no-evict" | b"no-touch" => {
            let flag = if a[0].eq_ignore_ascii_case(b"no-evict") {
                NO_EVICT
            } else {
                NO_TOUCH
            };
            match a[1].to_ascii_lowercase().as_slice() {
                b"on" => conn.client.set_flag(flag, true),
                b"off" => conn.client.set_flag(flag, false),
                _ => return syntax_error(),
            }
            Reply::ok()
        }
        b"pause" => pause(&a[0], &a[1..]),
        b"unblock" => unblock(shared, &a[1..]),
        b"reply" => {
            conn.reply = match a[1].to_ascii_lowercase().as_slice() {
                b"on" => ReplyMode::On,
                b"off" => ReplyMode::Off,
                b"skip" if conn.reply == ReplyMode::Off => ReplyMode::Off,
                b"skip" => ReplyMode::SkipSet,
                _ => return syntax_error(),
            };
            Reply::ok()
        }
        b"unpause" => Reply::ok(),
        b"getredir" => Reply::Int(-1),
        b"trackinginfo" => {
            let s = Reply::bulk_str;
            Reply::Map(vec![
                (s("flags"), Reply::Set(vec![s("off")])),
                (s("redirect"), Reply::Int(-1)),
                (s("prefixes"), Reply::Array(vec![])),
            ])
        }
        b"caching" => Reply::err(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with \
             OPTIN or OPTOUT mode enabled",
        ),
        _ => help_reply(HELP),
    }
}

/// Whether `v` may name a client or its library: printable ASCII without
/// spaces.
fn printable(v: &[u8]) -> bool {
    v.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// Redis's refusal of a client name that is not [`valid_name`].
pub(super) const BAD_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// Whether `name` may name a client (CLIENT SETNAME, HELLO SETNAME).
pub(super) fn valid_name(name: &[u8]) -> bool {
    printable(name)
}

fn setname(conn: &mut ConnState, name: &Bytes) -> Reply {
    if !valid_name(name) {
        return Reply::err(BAD_NAME);
    }
    conn.name = (!name.is_empty()).then(|| name.clone());
    Reply::ok()
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2).
fn setinfo(conn: &ConnState, attr: &Bytes, value: &Bytes) -> Reply {
    let lib_ver = match attr.to_ascii_lowercase().as_slice() {
        b"lib-name" => false,
        b"lib-ver" => true,
        _ => return Reply::Error(format!("ERR Unrecognized option '{}'", lossy(attr, 128))),
    };
    if !printable(value) {
        return Reply::Error(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            lossy(attr, 128)
        ));
    }
    conn.client.set_lib(lib_ver, value.clone());
    Reply::ok()
}

/// A client type of CLIENT LIST/KILL TYPE: `Some(pubsub)` for normal and
/// pub/sub clients, `Ok(None)` for a type no client has (master, replica).
fn client_type(t: &[u8]) -> Result<Option<bool>, Reply> {
    match t.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(Some(false)),
        b"pubsub" => Ok(Some(true)),
        b"master" | b"replica" | b"slave" => Ok(None),
        _ => Err(Reply::Error(format!(
            "ERR Unknown client type '{}'",
            lossy(t, 128)
        ))),
    }
}

/// CLIENT LIST [TYPE type | ID id ...]: one line per client, by id.
fn list(shared: &Shared, a: &[Bytes]) -> Reply {
    let all = shared.clients_reg.all();
    let chosen: Vec<_> = match a {
        [] => all,
        [opt, t] if opt.eq_ignore_ascii_case(b"type") => match client_type(t) {
            Ok(Some(pubsub)) => all
                .into_iter()
                .filter(|c| c.subscribed() == pubsub)
                .collect(),
            Ok(None) => Vec::new(),
            Err(e) => return e,
        },
        [opt, ids @ ..] if opt.eq_ignore_ascii_case(b"id") && !ids.is_empty() => {
            let mut wanted = Vec::with_capacity(ids.len());
            for id in ids {
                match parse_int(id) {
                    Some(n) => wanted.push(n),
                    None => return Reply::err("ERR Invalid client ID"),
                }
            }
            all.into_iter()
                .filter(|c| wanted.contains(&(c.id as i64)))
                .collect()
        }
        _ => return syntax_error(),
    };
    let now = Instant::now();
    let mut out = String::new();
    for c in chosen {
        out.push_str(&c.info_line(now, |s| shared.cmdstats.name(s).to_string()));
        out.push('\n');
    }
    Reply::Verbatim(Bytes::from(out))
}

/// CLIENT KILL addr (old form: OK or "No such client"; may kill the
/// caller) or CLIENT KILL option value ... (ID, TYPE, ADDR, LADDR, USER,
/// SKIPME: how many were killed). A killed caller gets its reply, then
/// its connection closes (`execute`).
fn kill(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    if let [addr] = a {
        let filter = KillFilter {
            addr: Some(String::from_utf8_lossy(addr).into_owned()),
            ..Default::default()
        };
        return match shared.clients_reg.kill(&filter, conn.id) {
            0 => Reply::err("ERR No such client"),
            _ => Reply::ok(),
        };
    }
    let filter = match kill_filter(a) {
        Ok(f) => f,
        Err(e) => return e,
    };
    Reply::Int(shared.clients_reg.kill(&filter, conn.id) as i64)
}

/// The new form's options, checked in order as Redis checks them.
fn kill_filter(a: &[Bytes]) -> Result<KillFilter, Reply> {
    let mut f = KillFilter {
        skip_me: true,
        ..Default::default()
    };
    let mut i = 0;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(syntax_error());
        };
        let text = || String::from_utf8_lossy(v).into_owned();
        match a[i].to_ascii_lowercase().as_slice() {
            b"id" => match parse_int(v) {
                Some(id) if id > 0 => f.id = Some(id as u64),
                _ => return Err(Reply::err("ERR client-id should be greater than 0")),
            },
            b"type" => match client_type(v)? {
                Some(pubsub) => f.pubsub = Some(pubsub),
                None => f.nobody = true,
            },
            b"addr" => f.addr = Some(text()),
            b"laddr" => f.laddr = Some(text()),
            // Only the default user exists: it matches every client.
            b"user" if v.as_ref() == b"default" => {}
            b"user" => {
                return Err(Reply::Error(format!(
                    "ERR No such user '{}'",
                    lossy(v, 128)
                )))
            }
            b"skipme" => match v.to_ascii_lowercase().as_slice() {
                b"yes" => f.skip_me = true,
                b"no" => f.skip_me = false,
                _ => return Err(syntax_error()),
            },
            _ => return Err(syntax_error()),
        }
        i += 2;
    }
    Ok(f)
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if client `id` was blocked in a
/// blocking command (it answers as if timed out, or `-UNBLOCKED`), else 0.
fn unblock(shared: &Shared, a: &[Bytes]) -> Reply {
    let Some(id) = parse_int(&a[0]) else {
        return super::not_integer();
    };
    let how = match a {
        [_] => UNBLOCK_TIMEOUT,
        [_, r] if r.eq_ignore_ascii_case(b"timeout") => UNBLOCK_TIMEOUT,
        [_, r] if r.eq_ignore_ascii_case(b"error") => UNBLOCK_ERROR,
        [_, _] => return Reply::err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        _ => return crate::errors::bad_subcommand(b"unblock", "CLIENT"),
    };
    let unblocked = u64::try_from(id)
        .ok()
        .and_then(|id| shared.clients_reg.get(id))
        .is_some_and(|c| c.request_unblock(how));
    Reply::Int(i64::from(unblocked))
}

/// CLIENT PAUSE timeout [WRITE|ALL]: checked as Redis checks it; no
/// effect (module docs).
fn pause(sub: &[u8], a: &[Bytes]) -> Reply {
    match parse_int(&a[0]) {
        Some(ms) if ms < 0 => return Reply::err(TIMEOUT_NEGATIVE),
        Some(_) => {}
        None => return Reply::err("ERR timeout is not an integer or out of range"),
    }
    match a {
        [_] => Reply::ok(),
        [_, mode] if mode.eq_ignore_ascii_case(b"write") || mode.eq_ignore_ascii_case(b"all") => {
            Reply::ok()
        }
        [_, _] => Reply::err("ERR CLIENT PAUSE mode must be WRITE or ALL"),
        _ => crate::errors::bad_subcommand(sub, "CLIENT"),
    }
}
