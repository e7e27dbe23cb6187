//! The error replies that more than one place answers (commands, the
//! batcher, the shared read primitives), with Redis 7's texts where Redis
//! has the error: each text is written once, here.

use bytes::Bytes;

use crate::resp::Reply;

/// Redis's reply to a command on a key of the wrong type.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The error reply to a stored value this server did not write.
pub const CORRUPT: &str = "ERR corrupt value (not written by batchkv serve)";

pub fn corrupt() -> Reply {
    Reply::err("ERR corrupt value (not written by batchkv serve)")
}

pub fn wrong_type() -> Reply {
    Reply::err(WRONGTYPE)
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

pub fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

pub fn not_integer() -> Reply {
    Reply::err("ERR value is not an integer or out of range")
}

pub fn engine_error(e: impl std::fmt::Display) -> Reply {
    Reply::Error(format!("ERR {e}"))
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
}
