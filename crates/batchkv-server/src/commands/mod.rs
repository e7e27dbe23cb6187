//! Command dispatch: the command table (arity, flags — also what COMMAND
//! reports), authentication, and the per-connection state commands change.
//!
//! Every command runs synchronously against the engine; reads that can be
//! batched (GET, MGET) are taken out of a pipeline by the connection before
//! they get here (see `conn.rs`).

mod admin;
mod bits;
mod coll;
mod dbs;
mod hashes;
mod keys;
pub(crate) mod lists;
mod object;
mod pubsub;
mod sets;
mod strings;
mod tx;
mod zsets;

use std::collections::HashMap;

use bytes::Bytes;

use crate::resp::Reply;
use crate::shared::Shared;

/// What runs a command: the shared state, the connection, and the
/// arguments after the name (their count already checked against the
/// arity).
pub type Handler = fn(&Shared, &mut ConnState, &[Bytes]) -> Reply;

/// One command: Redis's COMMAND INFO fields and its handler. Each module
/// lists its commands in a `COMMANDS` table; [`lookup`] finds them all.
pub struct CommandSpec {
    pub name: &'static str,
    /// Positive: exact argument count (name included); negative: at least.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub handler: Handler,
}

pub(crate) const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        handler,
    }
}

/// Flags: a write command.
pub(crate) const W: &[&str] = &["write"];
/// A write that may allocate (Redis's `denyoom`).
pub(crate) const WM: &[&str] = &["write", "denyoom"];
/// A fast read.
pub(crate) const R: &[&str] = &["readonly", "fast"];
/// A read whose cost grows with the data (Redis: no `fast`).
pub(crate) const RS: &[&str] = &["readonly"];
pub(crate) const F: &[&str] = &["fast"];
pub(crate) const A: &[&str] = &["admin"];
/// Key positions: none; the first argument; all arguments from the first.
pub(crate) const NO_KEYS: (i32, i32, i32) = (0, 0, 0);
pub(crate) const KEY1: (i32, i32, i32) = (1, 1, 1);
pub(crate) const ALL_KEYS: (i32, i32, i32) = (1, -1, 1);

/// Every module's command table.
static TABLES: &[&[CommandSpec]] = &[
    admin::COMMANDS,
    strings::COMMANDS,
    keys::COMMANDS,
    hashes::COMMANDS,
    dbs::COMMANDS,
    object::COMMANDS,
    bits::COMMANDS,
    sets::COMMANDS,
    tx::COMMANDS,
    lists::COMMANDS,
    zsets::COMMANDS,
    pubsub::COMMANDS,
];

/// Every command the server knows, in table order.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// Finds a command by its (case-insensitive) name.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    static BY_NAME: std::sync::OnceLock<HashMap<&'static [u8], &'static CommandSpec>> =
        std::sync::OnceLock::new();
    let map = BY_NAME.get_or_init(|| all_commands().map(|c| (c.name.as_bytes(), c)).collect());
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    map.get(&*lower).copied()
}

/// Whether `argc` (name included) satisfies `spec`'s arity.
pub fn arity_ok(spec: &CommandSpec, argc: usize) -> bool {
    if spec.arity >= 0 {
        argc == spec.arity as usize
    } else {
        argc >= (-spec.arity) as usize
    }
}

/// Per-connection state.
pub struct ConnState {
    pub id: u64,
    pub db: u8,
    /// 2 or 3 (HELLO).
    pub proto: u8,
    pub authenticated: bool,
    pub name: Option<Bytes>,
    /// MULTI/EXEC and WATCH state (`tx.rs`).
    pub tx: tx::TxState,
    /// Pub/Sub subscriptions and queued messages.
    pub pubsub: crate::pubsub::Session,
}

/// What the connection does after writing a command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Continue,
    /// QUIT: close this connection after the reply.
    Close,
    /// SHUTDOWN: stop the server (the connection closes without a reply).
    Shutdown,
    /// A blocking command (BLPOP, ...) found nothing to pop: the reply is
    /// its answer if it cannot block (inside MULTI); otherwise the
    /// connection waits and runs it again (`blocking::wait`).
    Block,
}

/// Redis's reply to an unknown command: the name cut at 128 bytes, then
/// arguments while the echoed text is under 128 bytes, the last one cut to
/// fit (CR/LF become spaces when the error is encoded).
pub fn unknown_command(args: &[Bytes]) -> Reply {
    let mut echoed = String::new();
    for a in &args[1..] {
        if echoed.len() >= 128 {
            break;
        }
        echoed.push_str(&format!("'{}' ", lossy(a, 128 - echoed.len())));
    }
    Reply::Error(format!(
        "ERR unknown command '{}', with args beginning with: {echoed}",
        lossy(&args[0], 128)
    ))
}

pub(crate) fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

pub fn wrong_arity(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// A SCAN-family reply: the next cursor and this page's items.
pub fn scan_reply(next: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![
        Reply::bulk(Bytes::from(next.to_string())),
        Reply::Array(items),
    ])
}

pub fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

pub fn not_integer() -> Reply {
    Reply::err("ERR value is not an integer or out of range")
}

pub fn engine_error(e: impl std::fmt::Display) -> Reply {
    Reply::Error(format!("ERR {e}"))
}

/// Parses an integer argument as Redis does (`string2ll`).
pub fn parse_int(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with('+') || s.len() > 20 {
        return None;
    }
    if s.len() > 1 && (s.starts_with('0') || s.starts_with("-0")) {
        return None;
    }
    s.parse().ok()
}

/// Checks authentication and arity, then runs the command (or queues it
/// inside MULTI, `tx.rs`).
pub fn execute(shared: &Shared, conn: &mut ConnState, args: &[Bytes]) -> (Reply, After) {
    let Some(spec) = lookup(&args[0]) else {
        return (
            tx::rejected(conn, None, unknown_command(args)),
            After::Continue,
        );
    };
    if !conn.authenticated && !matches!(spec.name, "auth" | "hello" | "quit" | "reset") {
        let e = Reply::err("NOAUTH Authentication required.");
        return (tx::rejected(conn, Some(spec), e), After::Continue);
    }
    if !arity_ok(spec, args.len()) {
        let e = wrong_arity(spec.name);
        return (tx::rejected(conn, Some(spec), e), After::Continue);
    }
    // Redis checks a subcommand and its arity before queuing too.
    if spec.name == "object" {
        if let Some(e) = object::check_subcommand(&args[1..]) {
            return (tx::rejected(conn, Some(spec), e), After::Continue);
        }
    }
    if let Some(e) = pubsub::subscribed_context(conn, spec.name, args) {
        return (tx::rejected(conn, Some(spec), e), After::Continue);
    }
    if let Some(queued) = tx::queue(conn, spec, args) {
        return (queued, After::Continue);
    }
    shared
        .stats
        .commands
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let reply = (spec.handler)(shared, conn, &args[1..]);
    let after = match spec.name {
        "quit" => After::Close,
        "shutdown" => After::Shutdown,
        // A blocking command answers nil exactly when it would block.
        _ if spec.flags.contains(&"blocking") && matches!(reply, Reply::Nil | Reply::NilArray) => {
            After::Block
        }
        _ => After::Continue,
    };
    (reply, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text_matches_redis() {
        let args = vec![Bytes::from("FOO"), Bytes::from("a"), Bytes::from("b")];
        assert_eq!(
            unknown_command(&args),
            Reply::err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
        );
    }

    #[test]
    fn unknown_command_echo_is_capped_like_redis() {
        let mut args = vec![Bytes::from("FOO")];
        args.extend(std::iter::repeat_n(Bytes::from("a".repeat(50)), 10));
        let want = format!(
            "ERR unknown command 'FOO', with args beginning with: '{a}' '{a}' '{b}' ",
            a = "a".repeat(50),
            b = "a".repeat(22)
        );
        assert_eq!(unknown_command(&args), Reply::Error(want));
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"0"), Some(0));
        for bad in [
            &b"+1"[..],
            b"01",
            b"1.0",
            b"",
            b" 1",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn command_names_are_unique_and_arity_is_checked() {
        let all: Vec<_> = all_commands().collect();
        for (i, c) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|o| o.name != c.name), "{}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(lookup(c.name.to_uppercase().as_bytes()).is_some());
        }
        let get = lookup(b"GeT").unwrap();
        assert!(arity_ok(get, 2) && !arity_ok(get, 3));
        let mget = lookup(b"mget").unwrap();
        assert!(arity_ok(mget, 5) && !arity_ok(mget, 1));
    }
}
