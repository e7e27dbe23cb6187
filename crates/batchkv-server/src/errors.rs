//! The error replies that more than one place answers (commands, the
//! batcher, the shared read primitives), with Redis 7's texts where Redis
//! has the error: each text is written once, here.

use bytes::Bytes;

use crate::resp::Reply;

/// Redis's reply to a command on a key of the wrong type.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The error reply to a stored value this server did not write (no Redis
/// equivalent).
pub const CORRUPT: &str = "ERR corrupt value (not written by batchkv serve)";
/// A collection whose elements are fewer than its metadata's size (seen
/// by a walk that expected an element at a position).
pub const COLLECTION_SHORT: &str = "ERR corrupt collection: fewer elements than its size";

/// A float argument or stored value that does not parse (INCRBYFLOAT,
/// HINCRBYFLOAT, ZADD, ZINCRBY, ...).
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// INCRBYFLOAT/HINCRBYFLOAT whose sum is not finite.
pub const NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";
/// INCRBY/HINCRBY (and friends) past the i64 range.
pub const INCR_OVERFLOW: &str = "ERR increment or decrement would overflow";
/// A database number past the last (SELECT, MOVE, SWAPDB, COPY ... DB).
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";
/// A pop count that is negative (LPOP/RPOP, SPOP, ZPOPMIN/ZPOPMAX).
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// A count past what the command can return (HRANDFIELD, ZRANDMEMBER).
pub const OUT_OF_RANGE: &str = "ERR value is out of range";
/// A negative blocking timeout (BLPOP and friends, CLIENT PAUSE).
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
/// A key count of 0 or less (SINTERCARD, LMPOP, ZMPOP, ...).
pub const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
/// MOVE or COPY whose source is its destination.
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
/// A command that needs an existing key (RENAME, LSET).
pub const NO_SUCH_KEY: &str = "ERR no such key";
/// A SCAN-family cursor that is not a number.
pub const INVALID_CURSOR: &str = "ERR invalid cursor";

/// Redis's reply to a negative option value `what` (`LIMIT`, `COUNT`,
/// `MAXLEN`).
pub fn cannot_be_negative(what: &str) -> Reply {
    Reply::Error(format!("ERR {what} can't be negative"))
}

/// Redis's `getRangeLongFromObjectOrReply` error: an integer outside
/// `lo..=hi` (the RAND commands' counts).
pub fn out_of_range_between(lo: i64, hi: i64) -> Reply {
    Reply::Error(format!(
        "ERR value is out of range, value must between {lo} and {hi}"
    ))
}

/// [`CORRUPT`] as a reply.
pub fn corrupt() -> Reply {
    Reply::err(CORRUPT)
}

/// [`WRONGTYPE`] as a reply.
pub fn wrong_type() -> Reply {
    Reply::err(WRONGTYPE)
}

/// Redis's reply to an expiry that is not positive or overflows (SET EX,
/// GETEX, EXPIRE, ...), naming the command as the client typed it.
pub fn invalid_expire_time(cmd: &str) -> Reply {
    Reply::Error(format!("ERR invalid expire time in '{cmd}' command"))
}

/// Redis's reply to a container command (CONFIG, OBJECT, ...) with a
/// subcommand it does not know; `container` is the command's name, which
/// the text names in capitals.
pub fn unknown_subcommand(sub: &[u8], container: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(sub, 128),
        String::from_utf8_lossy(container).to_ascii_uppercase()
    ))
}

/// Redis's `addReplySubcommandSyntaxError`: a subcommand a container
/// command's own parser refuses (unknown, or the wrong number of
/// arguments for it). `container` is the command's name in capitals.
pub fn bad_subcommand(sub: &[u8], container: &str) -> Reply {
    Reply::Error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {container} HELP.",
        lossy(sub, 128)
    ))
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

/// `b` as text, cut at `max` bytes (Redis's `%.128s`), invalid UTF-8
/// replaced.
pub(crate) fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

/// Redis's reply to a command (or `container|sub`) given the wrong
/// number of arguments.
pub fn wrong_arity(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

pub fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

/// The reply to an argument that should be a 64-bit integer.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";

pub fn not_integer() -> Reply {
    Reply::err(NOT_INTEGER)
}

/// An engine error (I/O, corruption) as an error reply's text.
pub fn engine_error_text(e: impl std::fmt::Display) -> String {
    format!("ERR {e}")
}

/// An engine error (I/O, corruption) as a reply.
pub fn engine_error(e: impl std::fmt::Display) -> Reply {
    Reply::Error(engine_error_text(e))
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
