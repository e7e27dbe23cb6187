//! Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, PUBSUB (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB,
//! HELP), and the RESP2 "subscribed" context that restricts a subscribed
//! connection's commands. Subscriptions and delivery are in `pubsub.rs`.

use bytes::Bytes;

use super::{spec, CommandSpec, ConnState, NO_KEYS};
use crate::pubsub::Kind;
use crate::resp::Reply;
use crate::shared::Shared;

/// Redis's flags for the (un)subscribe commands.
const SUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];
/// Redis's flags for PUBLISH.
const PUB: &[&str] = &["pubsub", "loading", "stale", "fast"];

/// Pub/Sub commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("subscribe", -2, SUB, NO_KEYS, |s, c, a| {
        c.pubsub.subscribe(&s.pubsub, c.id, Kind::Channel, a)
    }),
    spec("unsubscribe", -1, SUB, NO_KEYS, |_, c, a| {
        c.pubsub.unsubscribe(Kind::Channel, a)
    }),
    spec("psubscribe", -2, SUB, NO_KEYS, |s, c, a| {
        c.pubsub.subscribe(&s.pubsub, c.id, Kind::Pattern, a)
    }),
    spec("punsubscribe", -1, SUB, NO_KEYS, |_, c, a| {
        c.pubsub.unsubscribe(Kind::Pattern, a)
    }),
    spec("publish", 3, PUB, NO_KEYS, publish),
    spec("pubsub", -2, &[], NO_KEYS, |s, _, a| pubsub(s, a)),
];

/// PUBLISH: the receiver count, after the messages for this connection
/// itself (a RESP3 subscriber publishing to its own channel). Inside EXEC
/// the other receivers get the message once the transaction commits
/// (`tx::defer_publish`): a transaction that runs again does not send it
/// twice.
fn publish(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let (n, own) = if crate::tx::defer_publish(&a[0], &a[1], conn.id) {
        shared.pubsub.count(conn.id, &a[0], &a[1])
    } else {
        shared.pubsub.publish(conn.id, &a[0], &a[1])
    };
    if own.is_empty() {
        return Reply::Int(n as i64);
    }
    let mut frames: Vec<Reply> = own.iter().map(|m| m.to_reply()).collect();
    frames.push(Reply::Int(n as i64));
    Reply::Frames(frames)
}

/// Commands a RESP2 connection with subscriptions may run (Redis's list;
/// the sharded ones are not implemented, so they are unknown commands).
const ALLOWED_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// The error a RESP2 connection with subscriptions gets instead of running
/// command `name` with `args` (name included), or `None` to run it: only
/// (P)(UN)SUBSCRIBE, PING, QUIT and RESET run there. RESP3 connections
/// may run every command.
pub(super) fn subscribed_context(conn: &ConnState, name: &str, args: &[Bytes]) -> Option<Reply> {
    if conn.proto >= 3 || !conn.pubsub.is_subscribed() || ALLOWED_SUBSCRIBED.contains(&name) {
        return None;
    }
    let full = match args.get(1) {
        // A container's error names `cmd|sub`.
        Some(sub) if super::subcommands::of(name).is_some() => {
            format!("{name}|{}", String::from_utf8_lossy(sub).to_lowercase())
        }
        _ => name.to_string(),
    };
    Some(Reply::Error(format!(
        "ERR Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET \
         are allowed in this context"
    )))
}

/// PING's reply in a RESP2 connection with subscriptions: `pong` and the
/// message (empty without one) as an array, as Redis.
pub(super) fn subscribed_pong(msg: Option<&Bytes>) -> Reply {
    Reply::Array(vec![
        Reply::bulk(Bytes::from_static(b"pong")),
        Reply::Bulk(msg.cloned().unwrap_or_default()),
    ])
}

/// Checks PUBSUB's arguments past what the command table checks (its
/// subcommand and their arities, `subcommands.rs`, before a command is run
/// or queued): Redis's error for CHANNELS with more than a pattern.
fn check_pubsub_args(a: &[Bytes]) -> Result<(), Reply> {
    let sub = a[0].to_ascii_lowercase();
    if matches!(sub.as_slice(), b"channels" | b"shardchannels") && a.len() > 2 {
        return Err(crate::errors::bad_subcommand(&a[0], "PUBSUB"));
    }
    Ok(())
}

/// PUBSUB <subcommand> ...: replies and errors as Redis 7.0's.
fn pubsub(shared: &Shared, a: &[Bytes]) -> Reply {
    if let Err(e) = check_pubsub_args(a) {
        return e;
    }
    let b = &shared.pubsub;
    match a[0].to_ascii_lowercase().as_slice() {
        b"channels" => Reply::Array(
            b.channels(a.get(1).map(|p| &p[..]))
                .into_iter()
                .map(Reply::Bulk)
                .collect(),
        ),
        b"numsub" => numsub(a, |c| b.numsub(c)),
        b"numpat" => Reply::Int(b.numpat() as i64),
        // Sharded channels are not implemented: there are none.
        b"shardchannels" => Reply::Array(vec![]),
        b"shardnumsub" => numsub(a, |_| 0),
        _ => help(),
    }
}

/// NUMSUB's reply: channel, count, channel, count, ... (a flat array in
/// RESP2 and RESP3, as Redis 7.0).
fn numsub(a: &[Bytes], count: impl Fn(&[u8]) -> usize) -> Reply {
    let mut out = Vec::with_capacity(2 * (a.len() - 1));
    for c in &a[1..] {
        out.push(Reply::Bulk(c.clone()));
        out.push(Reply::Int(count(c) as i64));
    }
    Reply::Array(out)
}

fn help() -> Reply {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Simple(l)).collect())
}
