//! Administration commands: CONFIG (GET/SET taking effect, errors), CLIENT
//! (LIST, INFO, KILL closing connections, SETINFO, flags), the idle
//! `timeout`, SLOWLOG, INFO sections and commandstats, COMMAND
//! (DOCS/INFO/LIST/GETKEYS), every "Try X HELP" hint, and a comparison
//! with a real redis-server (when one is installed): byte for byte where
//! the replies are deterministic, by shape where values differ.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::reference::{RedisServer, Resp};
use common::{q, query_err, wait_blocked, Harness, Raw};
use redis::Value;

/// The `field:value` lines of an INFO text, by field.
fn info_fields(info: &str) -> BTreeMap<String, String> {
    info.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The `# Title` lines of an INFO text.
fn info_sections(info: &str) -> Vec<String> {
    info.lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(str::to_string)
        .collect()
}

/// One CLIENT LIST line as `field → value`.
fn client_fields(line: &str) -> BTreeMap<String, String> {
    line.split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The CLIENT LIST line of client `id`.
fn client_line(c: &mut redis::Connection, id: i64) -> BTreeMap<String, String> {
    let list: String = q(c, &["CLIENT", "LIST", "ID", &id.to_string()]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 1, "{list}");
    client_fields(lines[0])
}

/// Sends `cmd` on a raw connection and reads exactly `want`.
fn expect(r: &mut Raw, cmd: &str, want: &str) {
    r.expect(format!("{cmd}\r\n").as_bytes(), want.as_bytes());
}

#[test]
fn config_set_takes_pairs_and_get_takes_globs() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "slowlog-max-len",
            "5",
            "hash-max-ziplist-entries",
            "100",
            "maxmemory",
            "1kb",
            "save",
            "3600 1 300 100",
        ],
    );
    let got: HashMap<String, String> = q(
        &mut c,
        &[
            "CONFIG",
            "GET",
            "slowlog-max-len",
            "hash-max-*-entries",
            "maxmemory",
            "save",
        ],
    );
    let want: HashMap<String, String> = [
        ("slowlog-max-len", "5"),
        ("hash-max-listpack-entries", "100"),
        ("hash-max-ziplist-entries", "100"),
        ("maxmemory", "1024"),
        ("save", "3600 1 300 100"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
    // Redis's defaults for the encoding thresholds.
    let enc: HashMap<String, String> = q(&mut c, &["CONFIG", "GET", "*-max-*", "list-*"]);
    for (k, v) in [
        ("hash-max-listpack-value", "64"),
        ("set-max-intset-entries", "512"),
        ("zset-max-listpack-entries", "128"),
        ("zset-max-ziplist-value", "64"),
        ("list-max-listpack-size", "-2"),
        ("list-max-ziplist-size", "-2"),
        ("list-compress-depth", "0"),
    ] {
        assert_eq!(enc.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert!(q::<HashMap<String, String>>(&mut c, &["CONFIG", "GET", "nosuch*"]).is_empty());

    // Errors, and a failed SET changes nothing.
    let set_err = |c: &mut redis::Connection, args: &[&str]| {
        let mut all = vec!["CONFIG", "SET"];
        all.extend_from_slice(args);
        query_err(c, &all)
    };
    assert_eq!(
        set_err(&mut c, &["foo", "bar"]),
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    assert_eq!(
        set_err(&mut c, &["maxclients", "5", "timeout", "x"]),
        "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
    );
    let maxclients: Vec<String> = q(&mut c, &["CONFIG", "GET", "maxclients"]);
    assert_eq!(maxclients, ["maxclients", "10000"]);
    assert_eq!(
        set_err(&mut c, &["timeout", "1", "TIMEOUT", "2"]),
        "ERR CONFIG SET failed (possibly related to argument 'TIMEOUT') - duplicate parameter"
    );
    assert_eq!(
        set_err(&mut c, &["port", "1"]),
        "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"
    );
    assert_eq!(
        set_err(&mut c, &["slowlog-log-slower-than", "-2"]),
        "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive"
    );
    assert_eq!(
        set_err(&mut c, &["appendfsync", "sometimes"]),
        "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no"
    );
    assert_eq!(
        set_err(&mut c, &["timeout", "1", "maxclients"]),
        "ERR syntax error"
    );
    assert_eq!(
        set_err(&mut c, &["timeout"]),
        "ERR wrong number of arguments for 'config|set' command"
    );
    assert_eq!(
        query_err(&mut c, &["CONFIG", "REWRITE"]),
        "ERR The server is running without a config file"
    );
    assert_eq!(
        query_err(&mut c, &["CONFIG", "FOO"]),
        "ERR unknown subcommand 'FOO'. Try CONFIG HELP."
    );
    let help: Vec<String> = q(&mut c, &["CONFIG", "HELP"]);
    assert_eq!(help.len(), 11);
    assert!(help[0].starts_with("CONFIG <subcommand>"));
}

#[test]
fn config_set_changes_what_the_server_does() {
    let h = Harness::start();
    let mut c = h.conn();
    // appendfsync always: every write is fsynced by the engine.
    let syncs = |c: &mut redis::Connection| -> u64 {
        let info: String = q(c, &["INFO", "batchkv"]);
        info_fields(&info)["engine_wal_syncs"].parse().unwrap()
    };
    let before = syncs(&mut c);
    let _: () = q(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
    let _: () = q(&mut c, &["SET", "k", "v"]);
    assert!(syncs(&mut c) > before);
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("appendfsync:always\r\n"), "{info}");
    let _: () = q(&mut c, &["CONFIG", "SET", "appendfsync", "everysec"]);

    // proto-max-bulk-len: a longer bulk string is a protocol error.
    let _: () = q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    let mut raw = h.raw();
    raw.send(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n");
    let want = "-ERR Protocol error: invalid bulk length\r\n";
    assert_eq!(String::from_utf8_lossy(&raw.read_n(want.len())), want);
    assert!(raw.closed());

    // maxclients: the connection past the limit is turned away.
    let _: () = q(&mut c, &["CONFIG", "SET", "maxclients", "2"]);
    let mut second = h.raw();
    expect(&mut second, "PING", "+PONG\r\n");
    let mut third = h.raw();
    let want = "-ERR max number of clients reached\r\n";
    assert_eq!(String::from_utf8_lossy(&third.read_n(want.len())), want);
    assert!(third.closed());
}

#[test]
fn requirepass_set_at_runtime_applies_to_new_connections() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "requirepass", "sekret"]);
    // The connection that set it stays authenticated, as in Redis.
    assert_eq!(q::<String>(&mut c, &["PING"]), "PONG");
    let mut r = h.raw();
    expect(&mut r, "GET k", "-NOAUTH Authentication required.\r\n");
    expect(
        &mut r,
        "AUTH wrong",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(&mut r, "AUTH sekret", "+OK\r\n");
    expect(&mut r, "GET k", "$-1\r\n");
    let mut r2 = h.raw();
    expect(&mut r2, "AUTH default sekret", "+OK\r\n");
    // RESET forgets the authentication.
    expect(&mut r2, "RESET", "+RESET\r\n");
    expect(&mut r2, "GET k", "-NOAUTH Authentication required.\r\n");

    let _: () = q(&mut c, &["CONFIG", "SET", "requirepass", ""]);
    let mut r3 = h.raw();
    expect(&mut r3, "GET k", "$-1\r\n");
    expect(
        &mut r3,
        "AUTH x",
        "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n",
    );
    // Without a password the default user takes any.
    expect(&mut r3, "AUTH default anything", "+OK\r\n");
}

#[test]
fn idle_clients_are_closed_after_timeout_but_not_blocked_ones() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "timeout", "1"]);
    let mut idle = h.raw();
    expect(&mut idle, "PING", "+PONG\r\n");
    let mut blocked = h.raw();
    blocked.send(b"BLPOP bk 0\r\n");
    wait_blocked(&mut h.conn(), 1);
    let mut busy = h.raw();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        expect(&mut busy, "PING", "+PONG\r\n");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Idle for 2.5 s with a 1 s timeout (the check runs every second).
    assert!(idle.closed(), "the idle client is still connected");
    // The blocked client was left alone and still gets its element.
    let mut pusher = h.conn();
    let _: i64 = q(&mut pusher, &["RPUSH", "bk", "v"]);
    let want = "*2\r\n$2\r\nbk\r\n$1\r\nv\r\n";
    assert_eq!(String::from_utf8_lossy(&blocked.read_n(want.len())), want);
    expect(&mut busy, "PING", "+PONG\r\n");
    let _: () = q(&mut pusher, &["CONFIG", "SET", "timeout", "0"]);
}

#[test]
fn slowlog_records_commands_as_redis_does() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let _: () = q(&mut c, &["SLOWLOG", "RESET"]);
    let _: () = q(&mut c, &["CLIENT", "SETNAME", "me"]);
    let _: () = q(&mut c, &["SET", "k", &"x".repeat(200)]);
    // A GET answered by the batcher is logged too.
    let _: String = q(&mut c, &["GET", "k"]);
    let mut many = vec!["RPUSH".to_string(), "l".to_string()];
    many.extend((0..40).map(|i| i.to_string()));
    let many_refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let _: i64 = q(&mut c, &many_refs);
    // Without requirepass the default user takes any password.
    let _: () = q(&mut c, &["AUTH", "default", "secret"]);
    let entries: Vec<Value> = q(&mut c, &["SLOWLOG", "GET", "5"]);
    assert_eq!(entries.len(), 5);
    let fields = |v: &Value| -> Vec<Value> {
        let Value::Array(f) = v else { panic!("{v:?}") };
        assert_eq!(f.len(), 6, "{f:?}");
        f.clone()
    };
    let args = |v: &Value| -> Vec<String> {
        let f = fields(v);
        redis::from_redis_value(&f[3]).unwrap()
    };
    // Newest first; AUTH's arguments are hidden.
    assert_eq!(args(&entries[0]), ["AUTH", "(redacted)", "(redacted)"]);
    let rpush = args(&entries[1]);
    assert_eq!(rpush.len(), 32);
    assert_eq!(rpush[31], "... (11 more arguments)");
    let set = args(&entries[3]);
    assert_eq!(set[2], format!("{}... (72 more bytes)", "x".repeat(128)));
    assert_eq!(args(&entries[2]), ["GET", "k"]);
    assert_eq!(args(&entries[4]), ["CLIENT", "SETNAME", "me"]);
    let f = fields(&entries[0]);
    let (Value::Int(id0), Value::Int(time), Value::Int(micros)) = (&f[0], &f[1], &f[2]) else {
        panic!("{f:?}")
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - time).abs() < 60 && *micros >= 0);
    let Value::Int(id1) = fields(&entries[1])[0] else {
        panic!()
    };
    assert_eq!(*id0, id1 + 1);
    // Client address and name, as CLIENT INFO shows them.
    let me: String = q(&mut c, &["CLIENT", "INFO"]);
    let me = client_fields(me.trim_end());
    assert_eq!(
        redis::from_redis_value::<String>(&f[4]).unwrap(),
        me["addr"]
    );
    assert_eq!(redis::from_redis_value::<String>(&f[5]).unwrap(), "me");

    // EXEC is not logged; the commands it ran are.
    let _: () = q(&mut c, &["SLOWLOG", "RESET"]);
    let _: () = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("a")
        .arg("1")
        .ignore()
        .query(&mut c)
        .unwrap();
    let entries: Vec<Value> = q(&mut c, &["SLOWLOG", "GET", "-1"]);
    let names: Vec<String> = entries.iter().map(|e| args(e)[0].to_lowercase()).collect();
    assert!(names.contains(&"set".to_string()) && names.contains(&"multi".to_string()));
    assert!(!names.contains(&"exec".to_string()), "{names:?}");

    // slowlog-max-len bounds it; -1 turns it off; LEN, GET 0, errors.
    let _: () = q(&mut c, &["CONFIG", "SET", "slowlog-max-len", "2"]);
    for _ in 0..3 {
        let _: String = q(&mut c, &["PING"]);
    }
    assert_eq!(q::<i64>(&mut c, &["SLOWLOG", "LEN"]), 2);
    let _: () = q(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    let _: () = q(&mut c, &["SLOWLOG", "RESET"]);
    let _: String = q(&mut c, &["PING"]);
    assert_eq!(q::<i64>(&mut c, &["SLOWLOG", "LEN"]), 0);
    assert!(q::<Vec<Value>>(&mut c, &["SLOWLOG", "GET", "0"]).is_empty());
    assert_eq!(
        query_err(&mut c, &["SLOWLOG", "GET", "-2"]),
        "ERR count should be greater than or equal to -1"
    );
    let help: Vec<String> = q(&mut c, &["SLOWLOG", "HELP"]);
    assert!(help[0].starts_with("SLOWLOG <subcommand>"));

    // A command that blocks is logged when it is answered, as sent, not
    // when it blocks; a timed-out one too.
    let _: () = q(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let _: () = q(&mut c, &["CONFIG", "SET", "slowlog-max-len", "128"]);
    let mut blocked = h.raw();
    blocked.send(b"BLPOP bl 0\r\n");
    wait_blocked(&mut c, 1);
    let _: () = q(&mut c, &["SLOWLOG", "RESET"]);
    let last_args = |c: &mut redis::Connection| -> Vec<String> {
        let log: Vec<Vec<Value>> = q(c, &["SLOWLOG", "GET", "1"]);
        redis::from_redis_value(&log[0][3]).unwrap()
    };
    assert_eq!(last_args(&mut c), ["SLOWLOG", "RESET"]);
    let _: i64 = q(&mut c, &["LPUSH", "bl", "x"]);
    blocked.read_until(b"x\r\n");
    wait_blocked(&mut c, 0);
    let log: Vec<Vec<Value>> = q(&mut c, &["SLOWLOG", "GET", "-1"]);
    let blpop: Vec<Vec<String>> = log
        .iter()
        .map(|e| redis::from_redis_value::<Vec<String>>(&e[3]).unwrap())
        .filter(|a| a[0] == "BLPOP")
        .collect();
    assert_eq!(blpop, [["BLPOP", "bl", "0"]]);
    blocked.send(b"XREAD BLOCK 10 STREAMS s $\r\n");
    blocked.read_until(b"*-1\r\n");
    assert_eq!(
        last_args(&mut c),
        ["XREAD", "BLOCK", "10", "STREAMS", "s", "$"]
    );
}

#[test]
fn client_list_info_and_settings() {
    let h = Harness::start();
    let mut a = h.conn();
    let _: () = q(&mut a, &["CLIENT", "SETNAME", "alpha"]);
    let _: () = q(&mut a, &["SELECT", "3"]);
    let id_a: i64 = q(&mut a, &["CLIENT", "ID"]);
    let mut b = h.raw();
    expect(&mut b, "CLIENT SETNAME beta", "+OK\r\n");
    expect(&mut b, "MULTI", "+OK\r\n");
    expect(&mut b, "SET x 1", "+QUEUED\r\n");

    let list: String = q(&mut a, &["CLIENT", "LIST"]);
    assert!(list.ends_with('\n'));
    let lines: Vec<BTreeMap<String, String>> = list.lines().map(client_fields).collect();
    assert_eq!(lines.len(), 2, "{list}");
    let mine = lines.iter().find(|l| l["id"] == id_a.to_string()).unwrap();
    assert_eq!(
        (
            &*mine["name"],
            &*mine["db"],
            &*mine["cmd"],
            &*mine["flags"],
            &*mine["multi"]
        ),
        ("alpha", "3", "client|list", "N", "-1")
    );
    assert!(mine["addr"].starts_with("127.0.0.1:"));
    assert_eq!(mine["laddr"], h.server.addr().to_string());
    let theirs = lines.iter().find(|l| l["name"] == "beta").unwrap();
    assert_eq!((&*theirs["flags"], &*theirs["multi"]), ("x", "1"));
    assert_eq!(theirs["cmd"], "set");
    let id_b: i64 = theirs["id"].parse().unwrap();
    // CLIENT INFO is this client's line.
    let info: String = q(&mut a, &["CLIENT", "INFO"]);
    assert_eq!(client_fields(info.trim_end())["id"], id_a.to_string());
    assert_eq!(client_line(&mut a, id_b)["name"], "beta");
    let normal: String = q(&mut a, &["CLIENT", "LIST", "TYPE", "normal"]);
    assert_eq!(normal.lines().count(), 2);
    assert_eq!(
        q::<String>(&mut a, &["CLIENT", "LIST", "TYPE", "master"]),
        ""
    );
    assert_eq!(
        query_err(&mut a, &["CLIENT", "LIST", "TYPE", "foo"]),
        "ERR Unknown client type 'foo'"
    );
    assert_eq!(
        query_err(&mut a, &["CLIENT", "LIST", "ID", "x"]),
        "ERR Invalid client ID"
    );

    // SETINFO, NO-EVICT, NO-TOUCH show in CLIENT INFO.
    let _: () = q(&mut a, &["CLIENT", "SETINFO", "lib-name", "redis-rs"]);
    let _: () = q(&mut a, &["CLIENT", "SETINFO", "LIB-VER", "0.32"]);
    let _: () = q(&mut a, &["CLIENT", "NO-EVICT", "on"]);
    let _: () = q(&mut a, &["CLIENT", "NO-TOUCH", "on"]);
    let me = client_line(&mut a, id_a);
    assert_eq!(
        (&*me["lib-name"], &*me["lib-ver"], &*me["flags"]),
        ("redis-rs", "0.32", "eT")
    );
    assert_eq!(
        query_err(&mut a, &["CLIENT", "SETINFO", "lib-name", "a b"]),
        "ERR lib-name cannot contain spaces, newlines or special characters."
    );
    assert_eq!(
        query_err(&mut a, &["CLIENT", "SETINFO", "foo", "x"]),
        "ERR Unrecognized option 'foo'"
    );
    assert_eq!(
        query_err(&mut a, &["CLIENT", "NO-EVICT", "maybe"]),
        "ERR syntax error"
    );
    assert_eq!(
        q::<String>(&mut a, &["CLIENT", "PAUSE", "10", "WRITE"]),
        "OK"
    );
    assert_eq!(q::<String>(&mut a, &["CLIENT", "UNPAUSE"]), "OK");
    assert_eq!(q::<i64>(&mut a, &["CLIENT", "GETREDIR"]), -1);
    let help: Vec<String> = q(&mut a, &["CLIENT", "HELP"]);
    assert!(help[0].starts_with("CLIENT <subcommand>"));
}

#[test]
fn client_kill_closes_the_named_connections() {
    let h = Harness::start();
    let mut c = h.conn();
    let me: i64 = q(&mut c, &["CLIENT", "ID"]);
    let id_of = |r: &mut Raw| -> i64 {
        r.send(b"CLIENT ID\r\n");
        let line = String::from_utf8(r.read_until(b"\r\n")).unwrap();
        line.trim_start_matches(':').trim_end().parse().unwrap()
    };

    // New form, by ID.
    let mut victim = h.raw();
    let id = id_of(&mut victim);
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()]),
        1
    );
    assert!(victim.closed());
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()]),
        0
    );

    // Old form, by address: OK, then "No such client".
    let mut victim = h.raw();
    let id = id_of(&mut victim);
    let addr = client_line(&mut c, id)["addr"].clone();
    assert_eq!(q::<String>(&mut c, &["CLIENT", "KILL", &addr]), "OK");
    assert!(victim.closed());
    assert_eq!(
        query_err(&mut c, &["CLIENT", "KILL", &addr]),
        "ERR No such client"
    );

    // ADDR with SKIPME, LADDR, USER: the caller is spared by default.
    let mut v1 = h.raw();
    let mut v2 = h.raw();
    let (_, _) = (id_of(&mut v1), id_of(&mut v2));
    let laddr = h.server.addr().to_string();
    assert_eq!(
        q::<i64>(
            &mut c,
            &["CLIENT", "KILL", "LADDR", &laddr, "USER", "default"]
        ),
        2
    );
    assert!(v1.closed() && v2.closed());
    assert_eq!(q::<i64>(&mut c, &["CLIENT", "ID"]), me);

    // A blocked client is closed too.
    let mut blocked = h.raw();
    let id = id_of(&mut blocked);
    blocked.send(b"BLPOP nothing 0\r\n");
    wait_blocked(&mut h.conn(), 1);
    assert_eq!(client_line(&mut c, id)["flags"], "b");
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()]),
        1
    );
    assert!(blocked.closed());
    wait_blocked(&mut h.conn(), 0);

    // SKIPME no: a client may kill itself; it gets the reply first.
    let mut own = h.raw();
    let id = id_of(&mut own);
    expect(&mut own, &format!("CLIENT KILL ID {id}"), ":0\r\n");
    expect(
        &mut own,
        &format!("CLIENT KILL ID {id} SKIPME no"),
        ":1\r\n",
    );
    assert!(own.closed());

    for (args, want) in [
        (&["ID", "0"][..], "ERR client-id should be greater than 0"),
        (&["USER", "nobody"], "ERR No such user 'nobody'"),
        (&["TYPE", "foo"], "ERR Unknown client type 'foo'"),
        (&["SKIPME", "maybe"], "ERR syntax error"),
        (&["ID", "5", "foo"], "ERR syntax error"),
    ] {
        let mut all = vec!["CLIENT", "KILL"];
        all.extend_from_slice(args);
        assert_eq!(query_err(&mut c, &all), want, "{args:?}");
    }
    assert_eq!(q::<i64>(&mut c, &["CLIENT", "KILL", "TYPE", "master"]), 0);
}

#[test]
fn info_has_redis_sections_and_fields() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "k", "v"]);
    let default: String = q(&mut c, &["INFO"]);
    let sections = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Errorstats",
        "Cluster",
        "Keyspace",
        "batchkv",
    ];
    assert_eq!(info_sections(&default), sections);
    assert_eq!(
        info_sections(&q::<String>(&mut c, &["INFO", "DEFAULT"])),
        sections
    );
    let all: String = q(&mut c, &["INFO", "all"]);
    assert!(info_sections(&all).contains(&"Commandstats".to_string()));
    assert_eq!(
        info_sections(&q::<String>(&mut c, &["INFO", "everything"])),
        info_sections(&all)
    );
    assert_eq!(q::<String>(&mut c, &["INFO", "nosuch"]), "");
    let two: String = q(&mut c, &["INFO", "SERVER", "clients"]);
    assert_eq!(info_sections(&two), ["Server", "Clients"]);
    // Sections are separated by one empty line; no trailing one.
    assert!(two.contains("\r\n\r\n# Clients\r\n") && !two.ends_with("\r\n\r\n"));

    let f = info_fields(&all);
    for field in [
        "redis_version",
        "redis_mode",
        "os",
        "arch_bits",
        "process_id",
        "run_id",
        "tcp_port",
        "uptime_in_seconds",
        "connected_clients",
        "maxclients",
        "blocked_clients",
        "used_memory",
        "used_memory_human",
        "used_memory_rss",
        "used_memory_peak",
        "maxmemory",
        "maxmemory_policy",
        "mem_fragmentation_ratio",
        "loading",
        "rdb_changes_since_last_save",
        "aof_enabled",
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "rejected_connections",
        "expired_keys",
        "evicted_keys",
        "keyspace_hits",
        "keyspace_misses",
        "total_error_replies",
        "role",
        "connected_slaves",
        "master_repl_offset",
        "used_cpu_sys",
        "used_cpu_user",
        "used_cpu_sys_children",
        "used_cpu_user_children",
        "cluster_enabled",
        "db0",
    ] {
        assert!(f.contains_key(field), "INFO all lacks {field}: {all}");
    }
    assert_eq!((&*f["role"], &*f["connected_slaves"]), ("master", "0"));
    assert!(f["used_memory"].parse::<u64>().unwrap() > 0);
    assert!(f["used_cpu_user"].parse::<f64>().unwrap() >= 0.0);
    assert_eq!(f["tcp_port"], h.server.addr().port().to_string());
    assert_eq!(f["db0"], "keys=1,expires=0,avg_ttl=0");
    assert_eq!(f["run_id"].len(), 40);

    // RESP3: a verbatim string.
    let mut raw = h.raw();
    raw.send(b"HELLO 3\r\n");
    raw.read_until(b"modules\r\n*0\r\n");
    raw.send(b"INFO cluster\r\n");
    let want = "=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n";
    assert_eq!(String::from_utf8_lossy(&raw.read_n(want.len())), want);
}

#[test]
fn commandstats_count_calls_failures_and_rejections() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "n", "x"]);
    let _: () = q(&mut c, &["CONFIG", "RESETSTAT"]);
    for _ in 0..3 {
        let _: () = q(&mut c, &["SET", "k", "1"]);
    }
    // GETs go through the batcher.
    for _ in 0..2 {
        let _: String = q(&mut c, &["GET", "k"]);
    }
    let _ = query_err(&mut c, &["INCR", "n"]);
    let _ = query_err(&mut c, &["HSET", "h"]);
    let _ = query_err(&mut c, &["CONFIG", "GET"]);
    let _: Vec<String> = q(&mut c, &["CONFIG", "GET", "timeout"]);
    let _ = query_err(&mut c, &["NOSUCH"]);
    let info: String = q(&mut c, &["INFO", "commandstats"]);
    let stats = info_fields(&info);
    let calls = |name: &str| -> BTreeMap<String, String> {
        let v = stats
            .get(&format!("cmdstat_{name}"))
            .unwrap_or_else(|| panic!("no cmdstat_{name}: {info}"));
        v.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(calls("set")["calls"], "3");
    assert_eq!(calls("get")["calls"], "2");
    let incr = calls("incr");
    assert_eq!((&*incr["calls"], &*incr["failed_calls"]), ("1", "1"));
    let hset = calls("hset");
    assert_eq!((&*hset["calls"], &*hset["rejected_calls"]), ("0", "1"));
    assert_eq!(calls("config|get")["calls"], "1");
    assert_eq!(calls("config|get")["rejected_calls"], "1");
    assert!(calls("set")["usec_per_call"].contains('.'));
    // RESETSTAT counts itself after the reset, as in Redis.
    assert_eq!(calls("config|resetstat")["calls"], "1");
    let errors: String = q(&mut c, &["INFO", "errorstats"]);
    // INCR's, HSET's, CONFIG GET's and the unknown command's errors.
    assert!(errors.contains("errorstat_ERR:count=4\r\n"), "{errors}");
    let st: String = q(&mut c, &["INFO", "stats"]);
    assert_eq!(info_fields(&st)["total_error_replies"], "4");
    // RESETSTAT, 3 SET, 2 GET, INCR, CONFIG GET, INFO commandstats and
    // errorstats (a command counts once it has run).
    assert_eq!(info_fields(&st)["total_commands_processed"], "10");
}

#[test]
fn command_docs_info_list_and_getkeys() {
    let h = Harness::start();
    let mut c = h.conn();
    let count: i64 = q(&mut c, &["COMMAND", "COUNT"]);
    let all: Vec<Value> = q(&mut c, &["COMMAND"]);
    assert_eq!(all.len() as i64, count);
    let names: Vec<String> = all
        .iter()
        .map(|v| {
            let Value::Array(f) = v else { panic!("{v:?}") };
            assert_eq!(f.len(), 10, "COMMAND INFO has Redis 7's 10 fields: {f:?}");
            redis::from_redis_value(&f[0]).unwrap()
        })
        .collect();
    let list: Vec<String> = q(&mut c, &["COMMAND", "LIST"]);
    for n in &names {
        assert!(list.contains(n), "COMMAND LIST lacks {n}");
    }
    for sub in [
        "config|get",
        "client|kill",
        "command|docs",
        "slowlog|get",
        "object|encoding",
    ] {
        assert!(list.contains(&sub.to_string()), "COMMAND LIST lacks {sub}");
    }
    let conf: Vec<String> = q(&mut c, &["COMMAND", "LIST", "FILTERBY", "PATTERN", "conf*"]);
    assert_eq!(conf[0], "config");
    assert!(conf.len() >= 6);

    // Every command is documented.
    let docs: HashMap<String, HashMap<String, Value>> = q(&mut c, &["COMMAND", "DOCS"]);
    assert_eq!(docs.len(), names.len());
    for n in &names {
        let d = &docs[n];
        for field in ["summary", "since", "group", "complexity"] {
            if field == "complexity" && n == "monitor" {
                // Redis gives none.
                assert!(!d.contains_key(field));
                continue;
            }
            let v: String = redis::from_redis_value(&d[field]).unwrap();
            assert!(!v.is_empty(), "{n} {field}");
        }
    }
    let get: HashMap<String, HashMap<String, String>> = q(&mut c, &["COMMAND", "DOCS", "get"]);
    assert_eq!(get["get"]["summary"], "Get the value of a key");
    assert_eq!(get["get"]["group"], "string");
    assert!(q::<Vec<Value>>(&mut c, &["COMMAND", "DOCS", "nosuch"]).is_empty());

    let info: Vec<Value> = q(
        &mut c,
        &["COMMAND", "INFO", "config", "config|get", "nosuch"],
    );
    let Value::Array(config) = &info[0] else {
        panic!("{info:?}")
    };
    let Value::Array(subs) = &config[9] else {
        panic!("{config:?}")
    };
    assert!(subs.len() >= 5);
    let Value::Array(config_get) = &info[1] else {
        panic!("{info:?}")
    };
    assert_eq!(config_get[1], Value::Int(-3));
    assert_eq!(info[2], Value::Nil);

    let keys = |c: &mut redis::Connection, args: &[&str]| -> Vec<String> {
        let mut all = vec!["COMMAND", "GETKEYS"];
        all.extend_from_slice(args);
        q(c, &all)
    };
    assert_eq!(keys(&mut c, &["GET", "k"]), ["k"]);
    assert_eq!(keys(&mut c, &["MSET", "a", "1", "b", "2"]), ["a", "b"]);
    assert_eq!(
        keys(
            &mut c,
            &["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"]
        ),
        ["d", "a", "b"]
    );
    assert_eq!(
        keys(&mut c, &["BLMPOP", "0", "2", "a", "b", "LEFT"]),
        ["a", "b"]
    );
    assert_eq!(keys(&mut c, &["BLPOP", "a", "b", "0"]), ["a", "b"]);
    assert_eq!(keys(&mut c, &["OBJECT", "ENCODING", "k"]), ["k"]);
    // SORT: the sorted key and the last STORE's destination; BY and GET
    // patterns and LIMIT's numbers are not keys.
    assert_eq!(
        keys(&mut c, &["SORT", "abc", "STORE", "def"]),
        ["abc", "def"]
    );
    assert_eq!(
        keys(
            &mut c,
            &[
                "SORT", "l", "BY", "store", "GET", "store", "LIMIT", "0", "1", "STORE", "a",
                "STORE", "b"
            ]
        ),
        ["l", "b"]
    );
    assert_eq!(keys(&mut c, &["SORT_RO", "abc"]), ["abc"]);
    for (args, want) in [
        (&["FOO", "x"][..], "ERR Invalid command specified"),
        (
            &["SET", "a"],
            "ERR Invalid number of arguments specified for command",
        ),
        (&["PING", "x"], "ERR The command has no key arguments"),
        (
            &["ZUNIONSTORE", "d", "5", "a"],
            "ERR Invalid arguments specified for command",
        ),
        (
            &["GET"],
            "ERR wrong number of arguments for 'command|getkeys' command",
        ),
    ] {
        let mut all = vec!["COMMAND", "GETKEYS"];
        all.extend_from_slice(args);
        assert_eq!(query_err(&mut c, &all), want, "{args:?}");
    }
    let flags: Value = q(&mut c, &["COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"]);
    assert_eq!(
        flags,
        Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"k".to_vec()),
            Value::Array(vec![Value::SimpleString("RW".into())]),
        ])])
    );
}

/// The names in every "Try X HELP." hint of the server's sources.
fn help_hints() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for part in text.split("Try ").skip(1) {
                if let Some((name, _)) = part.split_once(" HELP") {
                    if !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c == '{' || c == '}')
                    {
                        out.push(name.to_string());
                    }
                }
            }
            // The containers named in calls of the error constructors
            // (`errors.rs`): `bad_subcommand(sub, "CLIENT")`,
            // `unknown_subcommand(sub, b"object")`.
            for call in ["bad_subcommand(", "unknown_subcommand("] {
                for part in text.split(call).skip(1) {
                    let args = part.split_once(')').map_or("", |(a, _)| a);
                    if let Some(quoted) = args.rsplit('"').nth(1) {
                        if !quoted.is_empty() && quoted.chars().all(|c| c.is_ascii_alphabetic()) {
                            out.push(quoted.to_ascii_uppercase());
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_help_hint_names_a_real_help_subcommand() {
    let hints = help_hints();
    // The generic unknown-subcommand error builds the name at runtime.
    assert!(hints.iter().any(|h| h == "{}"), "{hints:?}");
    let named: Vec<&String> = hints.iter().filter(|h| *h != "{}").collect();
    for want in ["CLIENT", "CONFIG", "OBJECT", "SLOWLOG"] {
        assert!(named.iter().any(|h| *h == want), "{hints:?}");
    }
    let h = Harness::start_with(|c| c.enable_debug_command = batchkv_server::DebugCommand::Yes);
    let mut c = h.conn();
    // Every container's hint (generic or literal) leads to a HELP reply.
    let mut containers: Vec<String> = named.iter().map(|s| s.to_string()).collect();
    containers.extend(["COMMAND".to_string()]);
    containers.sort();
    containers.dedup();
    for name in &containers {
        let help: Vec<String> = q(&mut c, &[name, "HELP"]);
        assert!(
            help.len() > 3 && help[0].starts_with(&format!("{name} <subcommand>")),
            "{name}: {help:?}"
        );
        // DEBUG's own text, as Redis's.
        let unknown = if name == "DEBUG" {
            "unknown subcommand or wrong number of arguments for"
        } else {
            "unknown subcommand"
        };
        assert_eq!(
            query_err(&mut c, &[name, "nosuch"]),
            format!("ERR {unknown} 'nosuch'. Try {name} HELP.")
        );
    }
}

/// Commands whose replies are the same bytes on redis-server 7.0.15 and
/// batchkv (one per line; `|` separates arguments where one has spaces).
const SAME_REPLIES: &str = "\
config set slowlog-log-slower-than -1
config set foo bar
config set maxclients
config set maxclients abc
config set maxclients 10 timeout
config set timeout -1
config set timeout 5 timeout 6
config set TIMEOUT 5 timeout 6
config set timeout 1.5
config set timeout 01
config set appendfsync foo
config set slowlog-log-slower-than -5
config set slowlog-max-len -1
config set slowlog-max-len 1mb
config set list-max-listpack-size -99999999999
config set hash-max-listpack-entries -1
config set maxmemory abc
config set maxmemory -1
config set maxmemory 1.5mb
config set maxmemory-policy foo
config|set|save|3600
config|set|save|  
config|set|save|0 1
config|set|save|3600 1  300 100
config|set|save|3600 1 300 100
config get save
config set save \"\"
config set notify-keyspace-events Z
config set notify-keyspace-events KEA
config get notify-keyspace-events
config set notify-keyspace-events nm$
config get notify-keyspace-events
config set notify-keyspace-events An
config get notify-keyspace-events
config set appendonly maybe
config set proto-max-bulk-len abc
config set client-query-buffer-limit 100
config set databases 4
config set maxclients 0
config set maxclients 99999999999
config set maxclients 5 foo 1
config set lua-time-limit -1
config set timeout 0x1
config get
config set
config
config foo
config resetstat x
config rewrite
config get nosuch
config help
config get hash-max-listpack-entries
config get hash-max-listpack-value
config get hash-max-ziplist-entries
config get hash-max-ziplist-value
config get set-max-intset-entries
config get zset-max-listpack-entries
config get zset-max-listpack-value
config get zset-max-ziplist-entries
config get zset-max-ziplist-value
config get list-max-listpack-size
config get list-max-ziplist-size
config get list-compress-depth
config get TIMEOUT
config get lua-time-limit
config get maxmemory
config get maxmemory-policy
config get slowlog-log-slower-than
config get slowlog-max-len
config get maxclients
config get client-query-buffer-limit
config get appendfsync
config set hash-max-ziplist-entries 100 zset-max-listpack-value 32 list-max-listpack-size -3
config get hash-max-listpack-entries
config get zset-max-ziplist-value
config get list-max-ziplist-size
config set maxmemory 1kb maxmemory-policy ALLKEYS-LRU
config get maxmemory
config get maxmemory-policy
config set maxmemory 0 maxmemory-policy noeviction timeout 0
client
client foo
client id x
client setname a
client getname
client|setname|a b
client setname
client getname
client list type foo
client list foo
client list id abc
client list id
client list id 0 abc
client list id 99999
client list id -1
client list type master
client list type replica
client kill 1.2.3.4:5
client kill addr 1.2.3.4:5
client kill id 999
client kill id abc
client kill id 0
client kill foo bar
client kill skipme maybe
client kill user nobody
client kill laddr 1.1.1.1:1
client kill maxage 1
client kill id
client kill id 5 foo
client kill type pubsub
client kill type master
client kill type foo
client kill user default id 99999
client no-evict on
client no-evict maybe
client no-evict off
client pause 10
client pause abc
client pause -1
client pause 1.5
client pause 10 foo
client pause 10 all x
client pause 10 write
client unpause
client getredir
client trackinginfo
client caching yes
client help x
slowlog
slowlog foo
slowlog get abc
slowlog get -2
slowlog get 0
slowlog get 1 2
slowlog len x
slowlog reset x
slowlog help
slowlog reset
slowlog len
command foo
command count x
command list x
command list filterby foo x
command list filterby module x
command info foo
command info config|get slowlog|get client|kill
command docs foo
command getkeys
command getkeys get
command getkeys foo x
command getkeys set a
command getkeys get k
command getkeys mset a 1 b 2
command getkeys mset a 1 b
command getkeys zunionstore d 2 a b
command getkeys zunionstore d x a
command getkeys zunionstore d 5 a
command getkeys zunionstore d 0 a
command getkeys zinterstore d 1 a weights 2
command getkeys sintercard 2 a b limit 1
command getkeys lmpop 1 a left
command getkeys blmpop 0 2 a b left
command getkeys bitop and d a b
command getkeys lcs a b
command getkeys rename a b
command getkeys object freq k
command getkeys object help
command getkeys config foo
command getkeys config get x
command getkeys ping x
command getkeys blpop a b 0
command getkeys xread streams a b 0 0
command getkeys xread count 1 STREAMS a b 0
command getkeys xread count 1 x streams
command getkeys xadd s * f v
command getkeys GET k
command help
info foo
info foo bar
object foo
object encoding
object help x
object help
auth x
auth default x
auth x y
hello 4
hello x
hello 3 auth x y
hello 3 foo
get
nosuchcommand a b";

/// Runs [`SAME_REPLIES`] on a new connection to `addr` (RESP3 after
/// `HELLO 3` if `resp3`): each line with its raw reply.
fn run_same(addr: SocketAddr, resp3: bool) -> Vec<(String, String)> {
    let mut c = Resp::connect(addr, 2).expect("connect");
    if resp3 {
        c.call(&["HELLO", "3"]);
    }
    SAME_REPLIES
        .lines()
        .map(|line| {
            let args: Vec<&str> = if line.contains('|') && !line.starts_with("command") {
                line.split('|').collect()
            } else {
                line.split(' ')
                    .map(|a| if a == "\"\"" { "" } else { a })
                    .collect()
            };
            (line.to_string(), c.call(&args))
        })
        .collect()
}

/// The field names of a CLIENT LIST line, without Redis 7.2's additions
/// (`watch`, `lib-name`, `lib-ver`: batchkv reports 7.2's fields).
fn client_field_names(line: &str) -> Vec<String> {
    client_fields(line)
        .into_keys()
        .filter(|k| !matches!(k.as_str(), "watch" | "lib-name" | "lib-ver"))
        .collect()
}

#[test]
fn same_replies_as_redis_server() {
    let Some(redis) = RedisServer::start_or_skip() else {
        return;
    };
    let h = Harness::start();
    let ours = h.server.addr();
    assert!(SAME_REPLIES.lines().count() > 180);
    for resp3 in [false, true] {
        let want = run_same(redis.addr, resp3);
        let got = run_same(ours, resp3);
        for ((cmd, w), (_, g)) in want.iter().zip(&got) {
            assert_eq!(g, w, "RESP{}: {cmd}", if resp3 { 3 } else { 2 });
        }
    }
    // COMMAND LIST: the same names (in another order).
    let sorted = |addr: SocketAddr| {
        let mut c = Resp::connect(addr, 2).unwrap();
        let raw = c.call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "co*"]);
        let mut lines: Vec<String> = raw.split("\r\n").map(str::to_string).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(redis.addr), sorted(ours));
    compare_shapes(redis.addr, ours);
    compare_command_tables(redis.addr, ours);
}

/// CLIENT LIST/INFO, INFO and SLOWLOG: same fields and shapes.
fn compare_shapes(theirs: SocketAddr, ours: SocketAddr) {
    let mut a = Resp::connect(theirs, 2).unwrap();
    let mut b = Resp::connect(ours, 2).unwrap();
    for args in [&["CLIENT", "INFO"][..], &["CLIENT", "LIST"]] {
        let (x, y) = (a.text(args), b.text(args));
        assert_eq!(
            client_field_names(x.trim_end()),
            client_field_names(y.trim_end()),
            "{args:?}"
        );
        assert!(x.ends_with('\n') && y.ends_with('\n'));
    }
    // INFO: the default sections (batchkv adds its own), and the fields of
    // the sections batchkv reports whole.
    let sections = |c: &mut Resp, arg: &str| -> Vec<String> {
        info_sections(&c.text(&["INFO", arg]))
            .into_iter()
            .filter(|s| !matches!(s.as_str(), "batchkv" | "Latencystats"))
            .collect()
    };
    for arg in ["default", "all", "everything"] {
        assert_eq!(sections(&mut a, arg), sections(&mut b, arg), "INFO {arg}");
    }
    for s in ["clients", "replication", "cpu", "cluster", "modules"] {
        let names = |c: &mut Resp| -> Vec<String> {
            info_fields(&c.text(&["INFO", s])).into_keys().collect()
        };
        assert_eq!(names(&mut a), names(&mut b), "INFO {s}");
    }
    // SLOWLOG entries: the same six fields for the same command.
    for c in [&mut a, &mut b] {
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        c.call(&["SLOWLOG", "RESET"]);
        c.call(&["CLIENT", "SETNAME", "cmp"]);
        c.call(&["SET", "key", &"v".repeat(130)]);
    }
    let entry = |c: &mut Resp| -> Vec<String> {
        let raw = c.call(&["SLOWLOG", "GET", "1"]);
        // Drop id, timestamp, duration, lengths and the client's port.
        raw.split("\r\n")
            .enumerate()
            .filter(|(i, l)| !(2..=4).contains(i) && !l.starts_with('$'))
            .map(|(_, l)| l.split(':').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(entry(&mut a), entry(&mut b));
}

/// COMMAND INFO (arity, key positions) and COMMAND DOCS (summary, since,
/// group, complexity) of every batchkv command match Redis's.
fn compare_command_tables(theirs: SocketAddr, ours: SocketAddr) {
    let client = |addr: SocketAddr| {
        redis::Client::open(format!("redis://{addr}/"))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut a, mut b) = (client(theirs), client(ours));
    let all: Vec<Value> = q(&mut b, &["COMMAND"]);
    for v in all {
        let Value::Array(mine) = v else { panic!() };
        let name: String = redis::from_redis_value(&mine[0]).unwrap();
        let info: Vec<Value> = q(&mut a, &["COMMAND", "INFO", &name]);
        let Value::Array(redis_info) = &info[0] else {
            panic!("redis-server has no {name}")
        };
        for i in [1, 3, 4, 5] {
            assert_eq!(mine[i], redis_info[i], "COMMAND INFO {name} field {i}");
        }
        let docs = |c: &mut redis::Connection| -> HashMap<String, Value> {
            let d: HashMap<String, HashMap<String, Value>> = q(c, &["COMMAND", "DOCS", &name]);
            d[&name].clone()
        };
        let (x, y) = (docs(&mut a), docs(&mut b));
        for field in ["summary", "since", "group", "complexity"] {
            assert_eq!(x.get(field), y.get(field), "COMMAND DOCS {name} {field}");
        }
    }
}

#[test]
fn client_reply_off_skip_and_on() {
    let h = Harness::start();
    let mut r = h.raw();
    let mut exchange = |send: &str, want: &str| {
        r.send(send.replace(';', "\r\n").as_bytes());
        let got = r.read_until(want.as_bytes());
        assert_eq!(String::from_utf8_lossy(&got), want, "after {send:?}");
    };
    // OFF silences every reply, its own and those of batched reads and
    // grouped writes included, until ON (answered).
    exchange(
        "CLIENT REPLY OFF;PING a;SET k v;SET j w;GET k;GET j;MGET k j;BLPOP nolist 0.05;CLIENT REPLY ON;",
        "+OK\r\n",
    );
    // SKIP silences itself and the next command; SKIP twice, the command
    // after the second.
    exchange("CLIENT REPLY SKIP;PING a;PING b;", "$1\r\nb\r\n");
    exchange(
        "CLIENT REPLY SKIP;CLIENT REPLY SKIP;PING a;PING b;",
        "$1\r\nb\r\n",
    );
    exchange(
        "CLIENT REPLY SKIP;GET k;GET k;GET j;",
        "$1\r\nv\r\n$1\r\nw\r\n",
    );
    exchange(
        "CLIENT REPLY SKIP;SET a 1;SET b 2;GET b;",
        "+OK\r\n$1\r\n2\r\n",
    );
    // ON clears a pending skip; SKIP while OFF changes nothing.
    exchange(
        "CLIENT REPLY SKIP;CLIENT REPLY ON;PING;",
        "+OK\r\n+PONG\r\n",
    );
    exchange(
        "CLIENT REPLY OFF;CLIENT REPLY SKIP;PING a;CLIENT REPLY ON;",
        "+OK\r\n",
    );
    exchange(
        "CLIENT REPLY FOO;CLIENT REPLY;",
        "-ERR syntax error\r\n-ERR wrong number of arguments for 'client|reply' command\r\n",
    );
    // Subscription confirmations and messages are pushed while OFF.
    exchange(
        "CLIENT REPLY OFF;SUBSCRIBE ch;",
        "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    );
    let mut c = h.conn();
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "ch", "hi"]), 1);
    exchange(
        "UNSUBSCRIBE;CLIENT REPLY ON;",
        "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n\
         *3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n+OK\r\n",
    );
}

#[test]
fn client_unblock_answers_a_blocked_command() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut blocked = h.raw();
    blocked.send(b"CLIENT ID\r\n");
    let line = blocked.read_until(b"\r\n");
    let id = String::from_utf8_lossy(&line[1..line.len() - 2]).to_string();
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "UNBLOCK", &id]),
        0,
        "not blocked"
    );
    q::<()>(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    for (cmd, how, want) in [
        ("BLPOP l 0", None, "*-1\r\n"),
        ("BRPOP l 0", Some("TIMEOUT"), "*-1\r\n"),
        (
            "BZPOPMIN z 0",
            Some("ERROR"),
            "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
        ),
        ("XREAD BLOCK 0 STREAMS s $", Some("error"), "-UNBLOCKED"),
        (
            "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >",
            None,
            "*-1\r\n",
        ),
    ] {
        blocked.send(format!("{cmd}\r\n").as_bytes());
        wait_blocked(&mut c, 1);
        let mut args = vec!["CLIENT", "UNBLOCK", &id];
        args.extend(how);
        assert_eq!(q::<i64>(&mut c, &args), 1, "{cmd}");
        let got = blocked.read_until(b"\r\n");
        assert!(
            got.starts_with(want.as_bytes()),
            "{cmd}: {}",
            String::from_utf8_lossy(&got)
        );
        wait_blocked(&mut c, 0);
        // Answered and not blocked any more: nothing to unblock, and the
        // next command is served as usual.
        assert_eq!(q::<i64>(&mut c, &["CLIENT", "UNBLOCK", &id]), 0);
        blocked.expect(b"PING\r\n", b"+PONG\r\n");
    }
    // A blocked command's error answer counts as its failure: one call
    // (when it blocked), failed, and its error in the error statistics.
    let errors: String = q(&mut c, &["INFO", "errorstats"]);
    assert!(errors.contains("errorstat_UNBLOCKED:count=2"), "{errors}");
    let stats: String = q(&mut c, &["INFO", "commandstats"]);
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_bzpopmin:"))
        .unwrap();
    assert!(
        line.contains("calls=1,") && line.ends_with("rejected_calls=0,failed_calls=1"),
        "{line}"
    );
    assert_eq!(
        query_err(&mut c, &["CLIENT", "UNBLOCK", &id, "FOO"]),
        "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
    );
    assert_eq!(
        query_err(&mut c, &["CLIENT", "UNBLOCK", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["CLIENT", "UNBLOCK", "-5"]), 0);
}

#[test]
fn memory_usage_stats_and_help() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(
        q::<Option<i64>>(&mut c, &["MEMORY", "USAGE", "nosuch"]),
        None
    );
    q::<()>(&mut c, &["SET", "s", &"x".repeat(1000)]);
    let s: i64 = q(&mut c, &["MEMORY", "USAGE", "s"]);
    assert!((1000..1100).contains(&s), "{s}");
    for (key, kind) in [("h", "HSET"), ("z", "ZADD")] {
        let mut small = vec![kind, key];
        let mut large = vec![kind, "big"];
        let fields: Vec<String> = (0..1000).map(|i| format!("{i:08}")).collect();
        // HSET takes field value, ZADD score member.
        let pair = |f: &'static str| if kind == "HSET" { [f, "1"] } else { ["1", f] };
        let fields: Vec<&'static str> = fields.into_iter().map(|f| &*f.leak()).collect();
        for f in &fields[..10] {
            small.extend(pair(f));
        }
        for f in &fields {
            large.extend(pair(f));
        }
        q::<i64>(&mut c, &small);
        q::<i64>(&mut c, &large);
        let small: i64 = q(&mut c, &["MEMORY", "USAGE", key]);
        let all: i64 = q(&mut c, &["MEMORY", "USAGE", "big", "SAMPLES", "0"]);
        let sampled: i64 = q(&mut c, &["MEMORY", "USAGE", "big"]);
        // Every element is the same size: sampling 5 estimates all.
        assert_eq!(sampled, all, "{kind}");
        assert!(all > 50 * small, "{kind}: {all} vs {small}");
        q::<i64>(&mut c, &["DEL", "big"]);
    }
    for (args, want) in [
        (
            &["MEMORY", "USAGE", "s", "SAMPLES", "-1"][..],
            "ERR syntax error",
        ),
        (&["MEMORY", "USAGE", "s", "FOO"], "ERR syntax error"),
        (
            &["MEMORY", "USAGE", "s", "SAMPLES", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["MEMORY", "USAGE"],
            "ERR wrong number of arguments for 'memory|usage' command",
        ),
        (
            &["MEMORY", "FOO"],
            "ERR unknown subcommand 'FOO'. Try MEMORY HELP.",
        ),
    ] {
        assert_eq!(query_err(&mut c, args), want, "{args:?}");
    }
    let stats: HashMap<String, i64> = q(&mut c, &["MEMORY", "STATS"]);
    assert_eq!(stats["keys.count"], 3);
    assert!(stats["total.allocated"] > 0 && stats["peak.allocated"] >= stats["total.allocated"]);
    assert!(stats["engine.memtables"] > 0);
    let doctor: String = q(&mut c, &["MEMORY", "DOCTOR"]);
    assert!(doctor.contains("Resident memory"), "{doctor}");
    assert_eq!(q::<String>(&mut c, &["MEMORY", "PURGE"]), "OK");
    let help: Vec<String> = q(&mut c, &["MEMORY", "HELP"]);
    assert!(help.iter().any(|l| l.starts_with("USAGE <key>")));
    let keys: Vec<String> = q(&mut c, &["COMMAND", "GETKEYS", "MEMORY", "USAGE", "s"]);
    assert_eq!(keys, ["s"]);
}

#[test]
fn monitor_shows_every_command_run_as_redis_does() {
    let h = Harness::start();
    let mut mon = h.raw();
    mon.expect(b"MONITOR\r\n", b"+OK\r\n");
    let mut c = h.raw();
    // Single commands, batched reads, grouped writes, a transaction and
    // one refused at queuing, redacted passwords; CONFIG (admin) and an
    // unknown command are not shown.
    c.send(
        b"SET \"a b\" \"x\\\"y\"\r\nSELECT 3\r\nGET a\r\nGET b\r\nMGET a b\r\nSET x 1\r\nSET y 2\r\n\
          INCR x\r\nINCR x\r\nCONFIG GET maxmemory\r\nNOSUCH\r\nSELECT 0\r\nMULTI\r\nSET foo bar\r\n\
          EXEC\r\nMULTI\r\nSYNTAX ERR\r\nEXEC\r\nAUTH secret\r\nHELLO 2 AUTH default pw\r\nPING\r\n",
    );
    c.read_until(b"+PONG\r\n");
    let want = [
        "[0] \"SET\" \"a b\" \"x\\\"y\"",
        "[3] \"SELECT\" \"3\"",
        "[3] \"GET\" \"a\"",
        "[3] \"GET\" \"b\"",
        "[3] \"MGET\" \"a\" \"b\"",
        "[3] \"SET\" \"x\" \"1\"",
        "[3] \"SET\" \"y\" \"2\"",
        "[3] \"INCR\" \"x\"",
        "[3] \"INCR\" \"x\"",
        "[0] \"SELECT\" \"0\"",
        "[0] \"MULTI\"",
        "[0] \"SET\" \"foo\" \"bar\"",
        "[0] \"EXEC\"",
        "[0] \"MULTI\"",
        "[0] \"EXEC\"",
        "[0] \"AUTH\" \"(redacted)\"",
        "[0] \"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"",
        "[0] \"PING\"",
    ];
    let got = mon.read_until(b"\"PING\"\r\n");
    let got = String::from_utf8(got).unwrap();
    let lines: Vec<String> = got
        .lines()
        .map(|l| {
            // "+secs.micros [db addr] args": keep "[db] args".
            let (stamp, rest) = l.split_once(" [").unwrap();
            let (secs, micros) = stamp.trim_start_matches('+').split_once('.').unwrap();
            assert!(
                secs.parse::<u64>().unwrap() > 1_700_000_000 && micros.len() == 6,
                "{l}"
            );
            let (db_addr, args) = rest.split_once("] ").unwrap();
            format!("[{}] {args}", db_addr.split(' ').next().unwrap())
        })
        .collect();
    assert_eq!(lines, want);

    // CLIENT LIST flags the monitor `O`; MONITOR inside MULTI is refused
    // at EXEC.
    let mut q_conn = h.conn();
    let list: String = q(&mut q_conn, &["CLIENT", "LIST"]);
    assert!(list.lines().any(|l| l.contains(" flags=O ")), "{list}");
    c.send(b"MULTI\r\nMONITOR\r\nEXEC\r\n");
    let got = c.read_until(b"client\r\n");
    assert!(
        got.ends_with(b"*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n"),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn save_bgsave_and_lastsave_sync_the_wal() {
    let h = Harness::start_with(|c| c.appendfsync = batchkv_server::AppendFsync::No);
    let mut c = h.conn();
    let start: i64 = q(&mut c, &["LASTSAVE"]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - 5..=now).contains(&start), "{start} {now}");
    let syncs = |c: &mut redis::Connection| -> u64 {
        let info: String = q(c, &["INFO", "persistence"]);
        info_fields(&info)["rdb_saves"].parse().unwrap()
    };
    assert_eq!(syncs(&mut c), 0);
    // `appendfsync no`: only SAVE syncs the WAL.
    let engine_syncs = |c: &mut redis::Connection| -> u64 {
        let info: String = q(c, &["INFO", "batchkv"]);
        info_fields(&info)["engine_wal_syncs"].parse().unwrap()
    };
    let _: () = q(&mut c, &["SET", "k", "v"]);
    let before = engine_syncs(&mut c);
    assert_eq!(q::<String>(&mut c, &["SAVE"]), "OK");
    assert_eq!(engine_syncs(&mut c), before + 1);
    assert_eq!(
        q::<String>(&mut c, &["BGSAVE", "SCHEDULE"]),
        "Background saving started"
    );
    assert_eq!(syncs(&mut c), 2);
    assert!(q::<i64>(&mut c, &["LASTSAVE"]) >= start);
    assert_eq!(query_err(&mut c, &["BGSAVE", "FOO"]), "ERR syntax error");
    // SAVE is refused inside MULTI (EXEC then aborts); BGSAVE is not.
    let mut r = h.raw();
    r.send(b"MULTI\r\nSAVE\r\nEXEC\r\nMULTI\r\nBGSAVE\r\nEXEC\r\n");
    let got = r.read_until(b"started\r\n");
    assert_eq!(
        String::from_utf8_lossy(&got),
        "+OK\r\n-ERR Command not allowed inside a transaction\r\n\
         -EXECABORT Transaction discarded because of previous errors.\r\n\
         +OK\r\n+QUEUED\r\n*1\r\n+Background saving started\r\n"
    );
}
