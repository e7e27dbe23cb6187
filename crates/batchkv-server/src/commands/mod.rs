//! Command dispatch: the command table (arity, flags — also what COMMAND
//! reports), authentication, and the per-connection state commands change.
//!
//! Every command runs synchronously against the engine; reads that can be
//! batched (GET, MGET) are taken out of a pipeline by the connection before
//! they get here (see `conn.rs`).

mod admin;
mod keys;
mod strings;

use bytes::Bytes;

use crate::resp::Reply;
use crate::server::Shared;

/// One command's static description (Redis's COMMAND INFO fields).
pub struct CommandSpec {
    pub name: &'static str,
    /// Positive: exact argument count (name included); negative: at least.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
}

const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    first_key: i32,
    last_key: i32,
    step: i32,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key,
        last_key,
        step,
    }
}

const W: &[&str] = &["write"];
const R: &[&str] = &["readonly", "fast"];
const F: &[&str] = &["fast"];
const A: &[&str] = &["admin"];

/// Every command the server knows.
pub static COMMANDS: &[CommandSpec] = &[
    spec("ping", -1, F, 0, 0, 0),
    spec("echo", 2, F, 0, 0, 0),
    spec("select", 2, F, 0, 0, 0),
    spec("auth", -2, F, 0, 0, 0),
    spec("hello", -1, F, 0, 0, 0),
    spec("quit", -1, F, 0, 0, 0),
    spec("shutdown", -1, A, 0, 0, 0),
    spec("get", 2, R, 1, 1, 1),
    spec("mget", -2, R, 1, -1, 1),
    spec("set", -3, W, 1, 1, 1),
    spec("setnx", 3, W, 1, 1, 1),
    spec("setex", 4, W, 1, 1, 1),
    spec("psetex", 4, W, 1, 1, 1),
    spec("getdel", 2, W, 1, 1, 1),
    spec("getset", 3, W, 1, 1, 1),
    spec("getex", -2, W, 1, 1, 1),
    spec("mset", -3, W, 1, -1, 2),
    spec("msetnx", -3, W, 1, -1, 2),
    spec("append", 3, W, 1, 1, 1),
    spec("strlen", 2, R, 1, 1, 1),
    spec("getrange", 4, R, 1, 1, 1),
    spec("substr", 4, R, 1, 1, 1),
    spec("setrange", 4, W, 1, 1, 1),
    spec("incr", 2, W, 1, 1, 1),
    spec("decr", 2, W, 1, 1, 1),
    spec("incrby", 3, W, 1, 1, 1),
    spec("decrby", 3, W, 1, 1, 1),
    spec("incrbyfloat", 3, W, 1, 1, 1),
    spec("del", -2, W, 1, -1, 1),
    spec("unlink", -2, W, 1, -1, 1),
    spec("exists", -2, R, 1, -1, 1),
    spec("type", 2, R, 1, 1, 1),
    spec("expire", -3, W, 1, 1, 1),
    spec("pexpire", -3, W, 1, 1, 1),
    spec("expireat", -3, W, 1, 1, 1),
    spec("pexpireat", -3, W, 1, 1, 1),
    spec("ttl", 2, R, 1, 1, 1),
    spec("pttl", 2, R, 1, 1, 1),
    spec("expiretime", 2, R, 1, 1, 1),
    spec("pexpiretime", 2, R, 1, 1, 1),
    spec("persist", 2, W, 1, 1, 1),
    spec("keys", 2, &["readonly"], 0, 0, 0),
    spec("scan", -2, &["readonly"], 0, 0, 0),
    spec("dbsize", 1, &["readonly"], 0, 0, 0),
    spec("randomkey", 1, &["readonly"], 0, 0, 0),
    spec("rename", 3, W, 1, 2, 1),
    spec("renamenx", 3, W, 1, 2, 1),
    spec("copy", -3, W, 1, 2, 1),
    spec("flushdb", -1, W, 0, 0, 0),
    spec("flushall", -1, W, 0, 0, 0),
    spec("info", -1, &["loading"], 0, 0, 0),
    spec("config", -2, A, 0, 0, 0),
    spec("command", -1, &["loading"], 0, 0, 0),
    spec("client", -2, &["loading"], 0, 0, 0),
    spec("time", 1, F, 0, 0, 0),
];

/// Finds a command by its (case-insensitive) name.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
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
}

/// What the connection does after writing a command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Continue,
    /// QUIT: close this connection after the reply.
    Close,
    /// SHUTDOWN: stop the server (the connection closes without a reply).
    Shutdown,
}

/// Redis's reply to an unknown command.
pub fn unknown_command(args: &[Bytes]) -> Reply {
    let mut s = format!(
        "ERR unknown command '{}', with args beginning with: ",
        lossy(&args[0], 128)
    );
    for a in &args[1..] {
        s.push_str(&format!("'{}' ", lossy(a, 128)));
    }
    Reply::Error(s)
}

fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

pub fn wrong_arity(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
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

/// Checks authentication and arity, then runs the command.
pub fn execute(shared: &Shared, conn: &mut ConnState, args: &[Bytes]) -> (Reply, After) {
    let Some(spec) = lookup(&args[0]) else {
        return (unknown_command(args), After::Continue);
    };
    if !conn.authenticated && !matches!(spec.name, "auth" | "hello" | "quit") {
        return (
            Reply::err("NOAUTH Authentication required."),
            After::Continue,
        );
    }
    if !arity_ok(spec, args.len()) {
        return (wrong_arity(spec.name), After::Continue);
    }
    shared
        .stats
        .commands
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let a = &args[1..];
    let reply = match spec.name {
        "get" => strings::get(shared, conn, a),
        "mget" => strings::mget(shared, conn, a),
        "set" => strings::set(shared, conn, a),
        "setnx" => strings::setnx(shared, conn, a),
        "setex" => strings::setex(shared, conn, a, 1000, "setex"),
        "psetex" => strings::setex(shared, conn, a, 1, "psetex"),
        "getdel" => strings::getdel(shared, conn, a),
        "getset" => strings::getset(shared, conn, a),
        "getex" => strings::getex(shared, conn, a),
        "mset" => strings::mset(shared, conn, a, false),
        "msetnx" => strings::mset(shared, conn, a, true),
        "append" => strings::append(shared, conn, a),
        "strlen" => strings::strlen(shared, conn, a),
        "getrange" | "substr" => strings::getrange(shared, conn, a),
        "setrange" => strings::setrange(shared, conn, a),
        "incr" => strings::incr_by(shared, conn, &a[0], Some(1)),
        "decr" => strings::incr_by(shared, conn, &a[0], Some(-1)),
        "incrby" => strings::incr_by(shared, conn, &a[0], parse_int(&a[1])),
        "decrby" => match parse_int(&a[1]) {
            Some(i64::MIN) => Reply::err("ERR decrement would overflow"),
            by => strings::incr_by(shared, conn, &a[0], by.map(|b| -b)),
        },
        "incrbyfloat" => strings::incr_by_float(shared, conn, a),
        "del" | "unlink" => keys::del(shared, conn, a),
        "exists" => keys::exists(shared, conn, a),
        "type" => keys::type_of(shared, conn, a),
        "expire" => keys::expire(shared, conn, a, 1000, false, "expire"),
        "pexpire" => keys::expire(shared, conn, a, 1, false, "pexpire"),
        "expireat" => keys::expire(shared, conn, a, 1000, true, "expireat"),
        "pexpireat" => keys::expire(shared, conn, a, 1, true, "pexpireat"),
        "ttl" => keys::ttl(shared, conn, a, 1000, false),
        "pttl" => keys::ttl(shared, conn, a, 1, false),
        "expiretime" => keys::ttl(shared, conn, a, 1000, true),
        "pexpiretime" => keys::ttl(shared, conn, a, 1, true),
        "persist" => keys::persist(shared, conn, a),
        "keys" => keys::keys(shared, conn, a),
        "scan" => keys::scan(shared, conn, a),
        "dbsize" => keys::dbsize(shared, conn),
        "randomkey" => keys::randomkey(shared, conn),
        "rename" => keys::rename(shared, conn, a, false),
        "renamenx" => keys::rename(shared, conn, a, true),
        "copy" => keys::copy(shared, conn, a),
        "flushdb" => keys::flush(shared, Some(conn.db), a),
        "flushall" => keys::flush(shared, None, a),
        "quit" => return (Reply::ok(), After::Close),
        "shutdown" => return (Reply::ok(), After::Shutdown),
        _ => admin::run(shared, conn, spec.name, a),
    };
    (reply, After::Continue)
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
        for (i, c) in COMMANDS.iter().enumerate() {
            assert!(COMMANDS[..i].iter().all(|o| o.name != c.name), "{}", c.name);
        }
        let get = lookup(b"GeT").unwrap();
        assert!(arity_ok(get, 2) && !arity_ok(get, 3));
        let mget = lookup(b"mget").unwrap();
        assert!(arity_ok(mget, 5) && !arity_ok(mget, 1));
    }
}
