//! ZMPOP and the blocking pops BZPOPMIN, BZPOPMAX and BZMPOP.
//!
//! A blocking pop is its non-blocking form: with nothing to pop it
//! answers a null array, which is its answer inside MULTI and tells the
//! connection to wait (`blocking.rs`); [`block_request`] names the keys,
//! the timeout, and the handler the waiting client runs each time it is
//! woken. That retry passes over keys holding another type (Redis serves
//! a blocked client from a sorted set only), where the first run answers
//! WRONGTYPE.

use std::time::Duration;

use bytes::Bytes;

use super::{pop_event, pop_from, Scored};
use crate::commands::coll::{self, Mpop, Others};
use crate::commands::lists::parse_timeout;
use crate::commands::strings::tri;
use crate::commands::{syntax_error, ConnState, Handler};
use crate::keyspace::db_key;
use crate::meta::Kind;
use crate::notify::{GENERIC, ZSET};
use crate::resp::Reply;
use crate::shared::Shared;

/// Flags of ZMPOP.
pub const MPOP: &[&str] = &["write", "movablekeys"];
/// Flags of BZPOPMIN and BZPOPMAX.
pub const BPOP: &[&str] = &["write", "noscript", "blocking", "fast"];
/// Flags of BZMPOP.
pub const BMPOP: &[&str] = &["write", "blocking", "movablekeys"];

/// The key popped from and the members popped, in order.
type Popped = (Bytes, Vec<Scored>);

/// Pops up to `count` members from the low end (the high end, `max`) of
/// the first non-empty sorted set among `keys` (`coll::pop_first`), and
/// publishes `zpopmin` (`zpopmax`) on its key, then `del` if emptied, as
/// Redis does for these commands and for a blocked client it serves.
fn pop_first(
    shared: &Shared,
    conn: &ConnState,
    keys: &[Bytes],
    max: bool,
    count: u64,
    others: Others,
) -> Result<Option<Popped>, Reply> {
    let popped = coll::pop_first(
        shared,
        conn.db,
        keys,
        Kind::ZSet,
        others,
        |s, w| Ok((pop_from(s, w, max, count)?, w.meta.size == 0)),
        |key, (_, emptied)| {
            if shared.notifies(ZSET | GENERIC) {
                shared.notify_removal(crate::notify::ZSET, pop_event(max), key, *emptied);
            }
        },
    )?;
    Ok(popped.map(|(key, (items, _))| (key, items)))
}

/// MIN or MAX (any case): whether it is MAX.
fn parse_max(b: &[u8]) -> Option<bool> {
    if b.eq_ignore_ascii_case(b"min") {
        Some(false)
    } else if b.eq_ignore_ascii_case(b"max") {
        Some(true)
    } else {
        None
    }
}

/// ZMPOP's and BZMPOP's arguments from `numkeys` on: `numkeys key...
/// MIN|MAX [COUNT n]` (`side`: whether MAX).
fn parse_mpop(a: &[Bytes]) -> Result<Mpop<'_, bool>, Reply> {
    coll::parse_mpop(a, parse_max)
}

/// ZMPOP's and BZMPOP's reply: `[key, [[member, score], ...]]` (nested in
/// RESP2 too), a null array if nothing was popped.
fn mpop_reply(popped: Option<Popped>) -> Reply {
    let Some((key, items)) = popped else {
        return Reply::NilArray;
    };
    let items = items
        .into_iter()
        .map(|(m, s)| Reply::Array(vec![Reply::bulk(m), Reply::Double(s)]))
        .collect();
    Reply::Array(vec![Reply::bulk(key), Reply::Array(items)])
}

/// ZMPOP: `numkeys key... MIN|MAX [COUNT n]`.
pub fn zmpop(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    let m = tri!(parse_mpop(a));
    mpop_reply(tri!(pop_first(
        shared,
        conn,
        m.keys,
        m.side,
        m.count,
        Others::Fail
    )))
}

/// BZPOPMIN and BZPOPMAX (`max`): `key... timeout`.
pub fn bzpop(shared: &Shared, conn: &ConnState, a: &[Bytes], max: bool) -> Reply {
    bzpop_with(shared, conn, a, max, Others::Fail)
}

/// BZPOPMIN and BZPOPMAX: `[key, member, score]`, a null array if every
/// sorted set is empty.
fn bzpop_with(shared: &Shared, conn: &ConnState, a: &[Bytes], max: bool, others: Others) -> Reply {
    let Some((timeout, keys)) = a.split_last() else {
        return syntax_error();
    };
    tri!(parse_timeout(timeout));
    let Some((key, items)) = tri!(pop_first(shared, conn, keys, max, 1, others)) else {
        return Reply::NilArray;
    };
    match items.into_iter().next() {
        Some((m, s)) => Reply::Array(vec![Reply::bulk(key), Reply::bulk(m), Reply::Double(s)]),
        None => Reply::NilArray,
    }
}

/// BZMPOP: `timeout numkeys key... MIN|MAX [COUNT n]`.
pub fn bzmpop(shared: &Shared, conn: &ConnState, a: &[Bytes]) -> Reply {
    bzmpop_with(shared, conn, a, Others::Fail)
}

fn bzmpop_with(shared: &Shared, conn: &ConnState, a: &[Bytes], others: Others) -> Reply {
    let Some((timeout, rest)) = a.split_first() else {
        return syntax_error();
    };
    let m = tri!(parse_mpop(rest));
    tri!(parse_timeout(timeout));
    mpop_reply(tri!(pop_first(
        shared, conn, m.keys, m.side, m.count, others
    )))
}

/// For a blocking sorted-set pop `args` (name included) that answered a
/// null array: the stored keys it waits on, its timeout (`None`:
/// forever) and the handler a woken client runs (it passes over keys of
/// another type). `None` if `args` is not a valid one.
pub(crate) fn block_request(
    db: u8,
    args: &[Bytes],
) -> Option<(Vec<Vec<u8>>, Option<Duration>, Handler)> {
    let (name, a) = args.split_first()?;
    let (keys, timeout, retry): (&[Bytes], &Bytes, Handler) =
        match name.to_ascii_lowercase().as_slice() {
            b"bzpopmin" => {
                let (t, keys) = a.split_last()?;
                (keys, t, |s, c, a| bzpop_with(s, c, a, false, Others::Skip))
            }
            b"bzpopmax" => {
                let (t, keys) = a.split_last()?;
                (keys, t, |s, c, a| bzpop_with(s, c, a, true, Others::Skip))
            }
            b"bzmpop" => (parse_mpop(a.get(1..)?).ok()?.keys, a.first()?, |s, c, a| {
                bzmpop_with(s, c, a, Others::Skip)
            }),
            _ => return None,
        };
    let timeout = parse_timeout(timeout).ok()?;
    Some((keys.iter().map(|k| db_key(db, k)).collect(), timeout, retry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    #[test]
    fn mpop_arguments_are_checked_in_redis_order() {
        let a = args("2 a b MAX COUNT 3");
        let m = parse_mpop(&a).unwrap();
        assert_eq!((m.keys.len(), m.side, m.count), (2, true, 3));
        let a = args("1 a min");
        let m = parse_mpop(&a).unwrap();
        assert_eq!((m.keys.len(), m.side, m.count), (1, false, 1));
        let numkeys = Reply::err("ERR numkeys should be greater than 0");
        let count = Reply::err("ERR count should be greater than 0");
        for (line, want) in [
            ("0 a min", &numkeys),
            ("x a min", &numkeys),
            ("1 a min count 0", &count),
            ("1 a min count x", &count),
        ] {
            let a = args(line);
            assert_eq!(parse_mpop(&a).err(), Some(want.clone()), "{line}");
        }
        for bad in [
            "2 a min",
            "1 a foo",
            "1 a min count",
            "1 a min count 1 count 2",
        ] {
            let a = args(bad);
            assert_eq!(parse_mpop(&a).err(), Some(syntax_error()), "{bad}");
        }
    }

    #[test]
    fn block_requests_name_the_keys_waited_on() {
        let (keys, t, _) = block_request(0, &args("BZPOPMIN a b 0")).unwrap();
        assert_eq!(keys, [b"\x00a".to_vec(), b"\x00b".to_vec()]);
        assert_eq!(t, None);
        let (keys, t, _) = block_request(2, &args("bzmpop 1.5 2 x y max count 3")).unwrap();
        assert_eq!(keys, [b"\x02x".to_vec(), b"\x02y".to_vec()]);
        assert_eq!(t, Some(Duration::from_millis(1500)));
        assert!(block_request(0, &args("zpopmin a")).is_none());
        assert!(block_request(0, &args("bzmpop 0 5 x min")).is_none());
        assert!(block_request(0, &args("bzpopmax a -1")).is_none());
    }
}
