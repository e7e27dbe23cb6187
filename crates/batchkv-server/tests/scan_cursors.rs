//! SCAN-family cursors never expire (`cursors.rs`): a cursor keeps
//! working after many other scans pushed it out of the server's table and
//! after a restart; every key present for the whole scan is returned, and
//! a cursor the table forgot resumes at its 3-byte prefix, not at the
//! start. No numeric cursor is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::BTreeSet;

use common::{q, Harness};

/// Runs `cmd key cursor COUNT count` (key omitted for SCAN) until the
/// cursor is 0; returns every item in order (members only for HSCAN and
/// ZSCAN, whose replies alternate member and value).
fn scan_from(
    c: &mut redis::Connection,
    cmd: &str,
    key: Option<&str>,
    mut cursor: String,
    count: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let mut args = vec![cmd.to_string()];
        args.extend(key.map(str::to_string));
        args.extend([cursor.clone(), "COUNT".into(), count.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (next, items): (String, Vec<String>) = q(c, &args);
        let step = if matches!(cmd, "HSCAN" | "ZSCAN") {
            2
        } else {
            1
        };
        out.extend(items.into_iter().step_by(step));
        if next == "0" {
            return out;
        }
        cursor = next;
    }
}

/// One page: `(next cursor, items)`.
fn page(c: &mut redis::Connection, args: &[&str]) -> (String, Vec<String>) {
    q(c, args)
}

#[test]
fn a_scan_cursor_survives_many_other_scans() {
    let h = Harness::start();
    let mut c = h.conn();
    let keys: BTreeSet<String> = (0..50).map(|i| format!("key:{i:03}")).collect();
    for k in &keys {
        let _: () = q(&mut c, &["SET", k, "v"]);
    }
    let (cursor, first) = page(&mut c, &["SCAN", "0", "COUNT", "5"]);
    assert_ne!(cursor, "0");
    // 70,000 other pages (the old table held 16,384 cursors; the new one
    // 65,536), pipelined on another connection.
    let mut r = h.raw();
    let mut pipeline = Vec::new();
    for _ in 0..70_000 {
        pipeline.extend_from_slice(b"SCAN 0 COUNT 1\r\n");
    }
    r.send(&pipeline);
    let mut replies = 0;
    let mut buf = Vec::new();
    while replies < 70_000 {
        let chunk = r.read_n(1);
        assert!(!chunk.is_empty(), "closed after {replies} replies");
        buf.extend_from_slice(&chunk);
        // Each reply is `*2\r\n$N\r\nCURSOR\r\n*1\r\n$7\r\nkey:000\r\n`.
        while let Some(end) = find(&buf, b"key:000\r\n") {
            buf.drain(..end + 9);
            replies += 1;
        }
    }
    let rest = scan_from(&mut c, "SCAN", None, cursor, 7);
    let got: BTreeSet<String> = first.into_iter().chain(rest).collect();
    assert_eq!(got, keys);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn cursors_survive_a_restart_and_resume_at_their_prefix() {
    let h = Harness::start();
    let mut c = h.conn();
    let keys: BTreeSet<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    for k in &keys {
        let _: () = q(&mut c, &["SET", k, "v"]);
    }
    let fields: Vec<String> = (0..300).map(|i| format!("f{i:03}")).collect();
    // Named to sort after the strings.
    for f in &fields {
        let _: () = q(&mut c, &["HSET", "~h", f, "v"]);
        let _: () = q(&mut c, &["SADD", "~s", f]);
        let _: () = q(&mut c, &["ZADD", "~z", "1", f]);
    }
    // Pages of 150 stop before the 151st key/element (`k150`, `f150`).
    let (scan_cursor, _) = page(&mut c, &["SCAN", "0", "COUNT", "150"]);
    let mut cursors = Vec::new();
    for cmd in ["HSCAN", "SSCAN", "ZSCAN"] {
        let key = &format!("~{}", cmd[..1].to_ascii_lowercase());
        let (cur, items) = page(&mut c, &[cmd, key, "0", "COUNT", "150"]);
        let step = if cmd == "SSCAN" { 1 } else { 2 };
        assert_eq!(items.len(), 150 * step, "{cmd}");
        cursors.push((cmd, key.to_string(), cur));
    }
    drop(c);
    let h = h.restart(|_| {});
    let mut c = h.conn();
    // The table is empty: each resumes at its cursor's prefix `k15` or
    // `f15`, that is exactly at the next item (3-byte prefixes here).
    let rest = scan_from(&mut c, "SCAN", None, scan_cursor, 1000);
    assert_eq!(rest.first().map(String::as_str), Some("k150"), "{rest:?}");
    assert_eq!(rest.len(), 153);
    for (cmd, key, cur) in cursors {
        let rest = scan_from(&mut c, cmd, Some(&key), cur, 1000);
        let mut sorted = rest.clone();
        sorted.sort();
        assert_eq!(sorted, fields[150..], "{cmd}");
    }
}

#[test]
fn any_numeric_cursor_is_accepted() {
    let h = Harness::start();
    let mut c = h.conn();
    for i in 0..200 {
        let _: () = q(&mut c, &["SET", &format!("a{i}"), "v"]);
        let _: () = q(&mut c, &["HSET", "h", &format!("a{i}"), "v"]);
    }
    // 201 keys (200 strings and `h`), 200 fields.
    for cursor in ["1", "5", "18446744073709551615", "123456789012345"] {
        let got = scan_from(&mut c, "SCAN", None, cursor.into(), 10);
        assert!(got.len() <= 201, "{cursor}");
        let got = scan_from(&mut c, "HSCAN", Some("h"), cursor.into(), 10);
        assert!(got.len() <= 200, "{cursor}");
    }
    // A small cursor has an empty prefix: the whole keyspace.
    assert_eq!(scan_from(&mut c, "SCAN", None, "7".into(), 50).len(), 201);
    // A cursor of one collection on another: its prefix, never an error.
    for i in 0..200 {
        let _: () = q(&mut c, &["HSET", "other", &format!("a{i}"), "v"]);
    }
    let (cur, _) = page(&mut c, &["HSCAN", "h", "0", "COUNT", "20"]);
    let got = scan_from(&mut c, "HSCAN", Some("other"), cur, 50);
    assert!(!got.is_empty());
}
