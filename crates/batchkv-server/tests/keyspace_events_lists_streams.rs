//! Keyspace notifications (`notify-keyspace-events`) of the list, stream
//! and consumer-group commands, blocked clients included: the exact
//! sequences redis-server 7.0.15 publishes for the same commands (success,
//! no-op, emptied and error cases), hard-coded from its output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use common::{q, wait_blocked, Harness};

/// Every class but `m` and `d`, with `new`: `A` hides `n`.
const WITH_NEW: &str = "KEg$lshzxetn";

/// Runs `line` (arguments separated by spaces) on `c`, ignoring errors.
fn run(c: &mut redis::Connection, line: &str) {
    let args: Vec<&str> = line.split(' ').collect();
    let _ = redis::cmd(args[0]).arg(&args[1..]).query::<redis::Value>(c);
}

/// With `notify-keyspace-events` set to `flags` on a flushed server:
/// runs `before`, then sends each of `blocked` on a connection of its own
/// (in order, each blocked before the next), then runs `script`, waits
/// for the blocked clients' replies, and returns the keyspace events
/// published meanwhile as `<key> <event>` joined by ", ".
fn events(h: &Harness, flags: &str, before: &[&str], blocked: &[&str], script: &[&str]) -> String {
    let mut c = h.conn();
    run(&mut c, "FLUSHALL");
    let _: () = q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", flags]);
    let mut sub = h.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@*").unwrap();
    ps.subscribe("done").unwrap();
    for line in before {
        run(&mut c, line);
    }
    std::thread::scope(|s| {
        for (i, line) in blocked.iter().enumerate() {
            let mut b = h.conn();
            s.spawn(move || run(&mut b, line));
            wait_blocked(&mut c, i + 1);
        }
        for line in script {
            run(&mut c, line);
        }
    });
    let _: i64 = q(&mut c, &["PUBLISH", "done", "x"]);
    let out = common::keyspace_events_until_done(&mut ps);
    drop(ps);
    let _: () = q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", ""]);
    out.join(", ")
}

/// Pushes, pops, LINSERT, LSET, LREM, LTRIM: an event only when the
/// command changed the list (LTRIM always), `del` after a removal that
/// emptied it.
#[test]
fn list_commands_publish_what_changed() {
    let h = Harness::start();
    let script = [
        "LPUSH l a b",
        "RPUSH l c",
        "LPUSHX l x",
        "RPUSHX l y",
        "LPUSHX nol x",
        "RPUSHX nol y",
        "LINSERT l BEFORE c z",
        "LINSERT l AFTER nope z",
        "LSET l 0 q",
        "LSET l 99 q",
        "LPOP l",
        "RPOP l",
        "LPOP l 0",
        "LPOP nol",
        "RPOP l 2",
        "LREM l 0 nope",
        "LREM l 1 z",
        "LTRIM l 0 -1",
        "LTRIM l 5 9",
        "LTRIM nol 0 1",
        "RPUSH l a b a",
        "LREM l 0 a",
        "LREM l 0 b",
        "SET str v",
        "LPUSH str x",
        "RPUSH l a b c",
        "LPOP l 5",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "l lpush, l rpush, l lpush, l rpush, l linsert, l lset, l lpop, l rpop, l rpop, \
         l ltrim, l ltrim, l del, l rpush, l lrem, l lrem, l del, str set, l rpush, l lpop, l del"
    );
    // Without `g`, no `del`; without `l`, only `del`.
    let script = ["RPUSH l a", "LPOP l", "RPUSH l a b", "LTRIM l 3 4"];
    assert_eq!(
        events(&h, "Kl", &[], &[], &script),
        "l rpush, l lpop, l rpush, l ltrim"
    );
    assert_eq!(events(&h, "Kg", &[], &[], &script), "l del, l del");
}

/// LMOVE and its forms: the push on the destination, then the pop on the
/// source (and its `del`), a rotation both on one key; LMPOP and the
/// blocking forms run at once pop as LPOP/RPOP do.
#[test]
fn moves_and_multi_key_pops_publish_in_redis_order() {
    let h = Harness::start();
    let script = [
        "RPUSH s a b c",
        "LMOVE s d LEFT RIGHT",
        "RPOPLPUSH s d",
        "LMOVE d d LEFT RIGHT",
        "RPOPLPUSH d d",
        "LMOVE s d RIGHT LEFT",
        "LMOVE s d LEFT LEFT",
        "SET str v",
        "LMOVE d str LEFT LEFT",
        "BLMOVE d e LEFT RIGHT 0",
        "BRPOPLPUSH d e 0",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "s rpush, d rpush, s lpop, d lpush, s rpop, d rpush, d lpop, d lpush, d rpop, d lpush, \
         s rpop, s del, str set, e rpush, d lpop, e lpush, d rpop"
    );
    let script = [
        "RPUSH l2 a b c",
        "LMPOP 2 l1 l2 LEFT",
        "LMPOP 2 l1 l2 RIGHT COUNT 5",
        "LMPOP 1 l1 LEFT",
        "RPUSH l1 x y z w",
        "BLMPOP 0 2 l1 l2 RIGHT COUNT 2",
        "BLPOP l2 l1 0",
        "BRPOP l1 0",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "l2 rpush, l2 lpop, l2 rpop, l2 del, l1 rpush, l1 rpop, l1 lpop, l1 rpop, l1 del"
    );
}

/// `new` (from the write) comes before the command's own events.
#[test]
fn new_keys_come_first() {
    let h = Harness::start();
    let script = [
        "RPUSH s a",
        "LMOVE s d LEFT LEFT",
        "XGROUP CREATE st g $ MKSTREAM",
        "XADD st2 MAXLEN 0 1-1 f v",
    ];
    assert_eq!(
        events(&h, WITH_NEW, &[], &[], &script),
        "s new, s rpush, d new, d lpush, s lpop, s del, st new, st xgroup-create, \
         st2 new, st2 xadd, st2 xtrim"
    );
}

/// A blocked BLPOP, BRPOP, BLMOVE, BRPOPLPUSH or BLMPOP publishes its pop
/// (and push, and `del`) when it is served, after the event of the push
/// that served it; two clients blocked on one key in the order they
/// blocked.
#[test]
fn blocked_list_clients_publish_when_served() {
    let h = Harness::start();
    for (blocked, script, want) in [
        (
            &["BLPOP bl 0", "BRPOP bl 0"][..],
            &["RPUSH bl x y z"][..],
            "bl rpush, bl lpop, bl rpop",
        ),
        (
            &["BLPOP bl 0"],
            &["RPUSH bl x"],
            "bl rpush, bl lpop, bl del",
        ),
        (
            &["BLMOVE src dst RIGHT LEFT 0", "BRPOPLPUSH src dst 0"],
            &["LPUSH src x y"],
            "src lpush, dst lpush, src rpop, dst lpush, src rpop, src del",
        ),
        (
            &["BLMPOP 0 2 m1 m2 LEFT COUNT 3"],
            &["RPUSH m2 x y"],
            "m2 rpush, m2 lpop, m2 del",
        ),
        (
            &["BLPOP k 0"],
            &["MULTI", "RPUSH k 1", "RPUSH k 2", "EXEC"],
            "k rpush, k rpush, k lpop",
        ),
    ] {
        assert_eq!(events(&h, "KEA", &[], blocked, script), want, "{blocked:?}");
    }
}

/// XADD (and its trim), XTRIM, XDEL and XSETID: events only when
/// something changed (XSETID always).
#[test]
fn stream_commands_publish_what_changed() {
    let h = Harness::start();
    let script = [
        "XADD s 1-1 f v",
        "XADD s MAXLEN 1 2-1 f v",
        "XADD s MAXLEN 5 3-1 f v",
        "XADD s 1-1 f v",
        "XADD nos NOMKSTREAM * f v",
        "XADD s MINID 3 4-1 f v",
        "XTRIM s MAXLEN 5",
        "XTRIM s MAXLEN 1",
        "XTRIM nos MAXLEN 1",
        "XDEL s 9-9",
        "XDEL s 4-1 4-1",
        "XDEL nos 1-1",
        "XSETID s 10-0",
        "XSETID s 1-0",
        "XSETID nos 1-1",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "s xadd, s xadd, s xtrim, s xadd, s xadd, s xtrim, s xtrim, s xdel, s xsetid, s xsetid"
    );
}

/// XGROUP's subcommands, and the consumers XREADGROUP, XCLAIM and
/// XAUTOCLAIM create (only when they serve or claim something).
#[test]
fn group_commands_publish_what_changed() {
    let h = Harness::start();
    let script = [
        "XGROUP CREATE s g $ MKSTREAM",
        "XGROUP CREATE s g $",
        "XGROUP CREATE s g2 0",
        "XGROUP CREATE nos g $",
        "XGROUP SETID s g 0",
        "XGROUP CREATECONSUMER s g c1",
        "XGROUP CREATECONSUMER s g c1",
        "XGROUP DELCONSUMER s g nobody",
        "XGROUP DELCONSUMER s g c1",
        "XGROUP DESTROY s g2",
        "XGROUP DESTROY s g2",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "s xgroup-create, s xgroup-create, s xgroup-setid, s xgroup-createconsumer, \
         s xgroup-delconsumer, s xgroup-destroy"
    );
    // Redis's own test (tests/unit/pubsub.tcl), flags Kt.
    let script = [
        "XGROUP CREATE mystream mygroup $ MKSTREAM",
        "XGROUP CREATECONSUMER mystream mygroup Bob",
        "XADD mystream 1 field1 A",
        "XREADGROUP GROUP mygroup Alice STREAMS mystream >",
        "XCLAIM mystream mygroup Mike 0 1-0 FORCE",
        "XGROUP DELCONSUMER mystream mygroup Lee",
        "XAUTOCLAIM mystream mygroup Bob 0 1-0",
        "XGROUP DELCONSUMER mystream mygroup Bob",
    ];
    assert_eq!(
        events(&h, "Kt", &[], &[], &script),
        "mystream xgroup-create, mystream xgroup-createconsumer, mystream xadd, \
         mystream xgroup-createconsumer, mystream xgroup-createconsumer, \
         mystream xgroup-delconsumer"
    );
    let script = [
        "XGROUP CREATE s g $ MKSTREAM",
        "XREADGROUP GROUP g c1 STREAMS s >",
        "XREADGROUP GROUP g c2 STREAMS s 0",
        "XADD s 1-1 f v",
        "XADD s 2-1 f v",
        "XREADGROUP GROUP g c3 COUNT 1 STREAMS s s > >",
        "XCLAIM s g c4 100000 1-1",
        "XCLAIM s g c4 0 9-9",
        "XAUTOCLAIM s g c5 100000 0",
        "XAUTOCLAIM s g c6 0 0 COUNT 1",
        "XACK s g 2-1",
        "XDEL s 1-1",
        "XCLAIM s g c7 0 1-1",
        "XAUTOCLAIM s g c8 0 0",
    ];
    assert_eq!(
        events(&h, "KEA", &[], &[], &script),
        "s xgroup-create, s xgroup-createconsumer, s xadd, s xadd, s xgroup-createconsumer, \
         s xgroup-createconsumer, s xdel"
    );
}

/// A blocked XREADGROUP creates its consumer when it is served, after
/// the XADD that served it.
#[test]
fn blocked_readgroup_creates_its_consumer_when_served() {
    let h = Harness::start();
    assert_eq!(
        events(
            &h,
            "KEA",
            &["XGROUP CREATE s g $ MKSTREAM"],
            &["XREADGROUP GROUP g cb BLOCK 0 STREAMS s >"],
            &["XADD s MAXLEN 1 1-1 f v"],
        ),
        "s xgroup-create, s xadd, s xgroup-createconsumer"
    );
}
