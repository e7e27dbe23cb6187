//! Connection and server commands: PING, ECHO, SELECT, AUTH, HELLO, QUIT,
//! SHUTDOWN, TIME, MONITOR, SAVE, BGSAVE, LASTSAVE, DEBUG. (CLIENT, CONFIG, COMMAND, INFO and SLOWLOG have their
//! own modules.)

use bytes::Bytes;

use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState};
use super::{F, NO_AUTH, NO_KEYS};
use crate::errors::DB_OUT_OF_RANGE;
use crate::keyspace::NUM_DBS;
use crate::resp::Reply;
use crate::shared::Shared;

/// The Redis version reported to clients (the command set we follow).
pub const REDIS_VERSION: &str = "7.2.0";

/// Redis's flags of ECHO, SELECT, TIME.
const ANYTIME: &[&str] = &["loading", "stale", "fast"];

/// Connection and server commands (flags as Redis 7's).
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("ping", -1, F, NO_KEYS, |s, c, a| run(s, c, "ping", a)),
    spec("echo", 2, ANYTIME, NO_KEYS, |s, c, a| run(s, c, "echo", a)),
    spec("select", 2, ANYTIME, NO_KEYS, |s, c, a| {
        run(s, c, "select", a)
    }),
    spec("auth", -2, NO_AUTH, NO_KEYS, |s, c, a| run(s, c, "auth", a)),
    spec("hello", -1, NO_AUTH, NO_KEYS, |s, c, a| {
        run(s, c, "hello", a)
    }),
    spec("quit", -1, NO_AUTH, NO_KEYS, |_, _, _| Reply::ok()),
    spec(
        "shutdown",
        -1,
        &[
            "admin",
            "noscript",
            "loading",
            "stale",
            "no_multi",
            "allow_busy",
        ],
        NO_KEYS,
        |_, _, a| shutdown(a),
    ),
    spec("time", 1, ANYTIME, NO_KEYS, |s, c, a| run(s, c, "time", a)),
    spec(
        "save",
        1,
        &["admin", "noscript", "no_async_loading", "no_multi"],
        NO_KEYS,
        |s, _, _| save(s).unwrap_or_else(|e| e),
    ),
    spec(
        "bgsave",
        -1,
        &["admin", "noscript", "no_async_loading"],
        NO_KEYS,
        |s, _, a| bgsave(s, a),
    ),
    spec("lastsave", 1, ANYTIME, NO_KEYS, |s, _, _| {
        Reply::Int(last_save(s) as i64)
    }),
    spec(
        "monitor",
        1,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        |s, c, _| monitor(s, c),
    ),
    // Refused unless `enable-debug-command` allows the client
    // (`commands::execute`).
    spec(
        "debug",
        -2,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        |_, _, a| debug(a),
    ),
];

/// SAVE: every acknowledged write is already in the WAL; SAVE makes it
/// durable now (an fsync of the WAL, whatever `appendfsync` says), which
/// is what a Redis user saving before a backup or a shutdown wants.
fn save(shared: &Shared) -> Result<Reply, Reply> {
    shared.sync_wal().map_err(super::engine_error)?;
    let now = unix_secs();
    shared
        .stats
        .saves
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    shared
        .stats
        .last_save
        .store(now, std::sync::atomic::Ordering::Relaxed);
    Ok(Reply::ok())
}

/// BGSAVE [SCHEDULE]: a SAVE (an fsync: nothing runs in the background),
/// answered as Redis answers a started background save.
fn bgsave(shared: &Shared, a: &[Bytes]) -> Reply {
    match a {
        [] => {}
        [s] if s.eq_ignore_ascii_case(b"schedule") => {}
        _ => return syntax_error(),
    }
    match save(shared) {
        Ok(_) => Reply::Status("Background saving started".into()),
        Err(e) => e,
    }
}

/// LASTSAVE's Unix time: the last SAVE or BGSAVE, else the server's
/// start (as Redis starts its clock).
pub(super) fn last_save(shared: &Shared) -> u64 {
    match shared
        .stats
        .last_save
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        0 => unix_secs().saturating_sub(shared.started.elapsed().as_secs()),
        t => t,
    }
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// MONITOR: from now on the connection is also sent every command the
/// server runs (`monitor.rs`). Refused inside a transaction, as Redis
/// refuses it to a client that expects one reply per command.
fn monitor(shared: &Shared, conn: &mut ConnState) -> Reply {
    if crate::tx::active() {
        return Reply::err("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    if conn.monitor.is_none() {
        conn.monitor = Some(shared.monitors.subscribe(conn.id));
        conn.client.set_flag(crate::clients::MONITOR, true);
    }
    Reply::ok()
}

/// SHUTDOWN's options as Redis 7 checks them: NOSAVE, SAVE, NOW, FORCE
/// (nothing to save or wait for here: all shut down at once, the
/// database closed cleanly) and ABORT, alone, which cancels a pending
/// shutdown — there never is one, as Redis answers when idle. The
/// connection runs the shutdown after an OK (`commands::execute`).
fn shutdown(a: &[Bytes]) -> Reply {
    let (mut save, mut nosave, mut others, mut abort) = (false, false, false, false);
    for opt in a {
        match opt.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" | b"force" => others = true,
            b"abort" => abort = true,
            _ => return syntax_error(),
        }
    }
    if (abort && (save || nosave || others)) || (save && nosave) {
        return syntax_error();
    }
    if abort {
        return Reply::err("ERR No shutdown in progress.");
    }
    Reply::ok()
}

/// DEBUG: HELP and PANIC (a panic inside the command, which the panic
/// boundary turns into `-ERR internal error`: the server's panic path,
/// for tests; Redis's DEBUG PANIC stops the server).
fn debug(a: &[Bytes]) -> Reply {
    match a[0].to_ascii_lowercase().as_slice() {
        b"help" if a.len() == 1 => super::help_reply(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "PANIC",
            "    Panic inside the command (the reply is -ERR internal error; the panic",
            "    and its backtrace are logged).",
            "HELP",
            "    Print this help.",
        ]),
        b"panic" if a.len() == 1 => panic!("DEBUG PANIC"),
        _ => crate::errors::bad_subcommand(&a[0], "DEBUG"),
    }
}

fn run(shared: &Shared, conn: &mut ConnState, name: &str, a: &[Bytes]) -> Reply {
    match name {
        "ping" => match a {
            [] | [_] if conn.proto == 2 && conn.pubsub.is_subscribed() => {
                super::pubsub::subscribed_pong(a.first())
            }
            [] => Reply::Simple("PONG"),
            [m] => Reply::Bulk(m.clone()),
            _ => super::wrong_arity("ping"),
        },
        "echo" => Reply::Bulk(a[0].clone()),
        "select" => match parse_int(&a[0]) {
            Some(n) if (0..NUM_DBS as i64).contains(&n) => {
                conn.db = n as u8;
                Reply::ok()
            }
            Some(_) => Reply::err(DB_OUT_OF_RANGE),
            None => not_integer(),
        },
        "auth" => auth(shared, conn, a),
        "hello" => hello(shared, conn, a),
        "time" => {
            let us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros());
            Reply::Array(vec![
                Reply::bulk(Bytes::from((us / 1_000_000).to_string())),
                Reply::bulk(Bytes::from((us % 1_000_000).to_string())),
            ])
        }
        _ => super::unknown_command(&[Bytes::copy_from_slice(name.as_bytes())]),
    }
}

/// Checks a password (of `user`, if given) against `requirepass`, as
/// Redis's default user: without a password it accepts any password given
/// with the user name, and refuses the one-argument AUTH.
fn check_password(shared: &Shared, user: Option<&[u8]>, pass: &[u8]) -> Result<(), Reply> {
    let wrong = || Reply::err("WRONGPASS invalid username-password pair or user is disabled.");
    if user.is_some_and(|u| u != b"default") {
        return Err(wrong());
    }
    match (shared.settings.requirepass(), user) {
        (None, None) => Err(Reply::err(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        )),
        (None, Some(_)) => Ok(()),
        (Some(p), _) if crate::security::password_matches(pass, p.as_bytes()) => Ok(()),
        (Some(_), _) => Err(wrong()),
    }
}

/// [`check_password`], a failure counted and logged
/// (`security::AuthFailures`) — except AUTH without any password set,
/// a configuration mistake rather than a wrong guess (Redis counts only
/// refused credentials).
fn authenticate(
    shared: &Shared,
    conn: &ConnState,
    user: Option<&[u8]>,
    pass: &[u8],
) -> Result<(), Reply> {
    let r = check_password(shared, user, pass);
    if let Err(Reply::Error(e)) = &r {
        if e.starts_with("WRONGPASS") {
            shared
                .auth_failures
                .record(&conn.client.addr, std::time::Instant::now());
        }
    }
    r
}

fn auth(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let r = match a {
        [pass] => authenticate(shared, conn, None, pass),
        [user, pass] => authenticate(shared, conn, Some(user), pass),
        _ => return syntax_error(),
    };
    match r {
        Ok(()) => {
            conn.authenticated = true;
            Reply::ok()
        }
        Err(e) => e,
    }
}

fn hello(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let mut proto = conn.proto;
    let mut i = 0;
    if let Some(v) = a.first() {
        match parse_int(v) {
            Some(p @ 2..=3) => proto = p as u8,
            Some(_) => return Reply::err("NOPROTO unsupported protocol version"),
            None => return Reply::err("ERR Protocol version is not an integer or out of range"),
        }
        i = 1;
    }
    let mut name = None;
    while i < a.len() {
        let opt = a[i].to_ascii_uppercase();
        match opt.as_slice() {
            b"AUTH" if i + 2 < a.len() => {
                if let Err(e) = authenticate(shared, conn, Some(&a[i + 1]), &a[i + 2]) {
                    return e;
                }
                conn.authenticated = true;
                i += 3;
            }
            b"SETNAME" if i + 1 < a.len() => {
                if !super::client::valid_name(&a[i + 1]) {
                    return Reply::err(super::client::BAD_NAME);
                }
                name = Some(a[i + 1].clone());
                i += 2;
            }
            _ => {
                return Reply::Error(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&a[i])
                ))
            }
        }
    }
    if !conn.authenticated {
        return Reply::err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(n) = name {
        // An empty name clears it, as CLIENT SETNAME "" does.
        conn.name = (!n.is_empty()).then_some(n);
    }
    conn.proto = proto;
    let s = Reply::bulk_str;
    Reply::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Reply::Int(i64::from(proto))),
        (s("id"), Reply::Int(conn.id as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Reply::Array(vec![])),
    ])
}
