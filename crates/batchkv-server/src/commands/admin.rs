//! Connection and server commands: PING, ECHO, SELECT, AUTH, HELLO, INFO,
//! CONFIG GET, COMMAND, CLIENT, TIME.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::{all_commands, not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState};
use super::{A, F, NO_KEYS};
use crate::keyspace::{glob_match, NUM_DBS};
use crate::resp::Reply;
use crate::shared::Shared;

/// The Redis version reported to clients (the command set we follow).
pub const REDIS_VERSION: &str = "7.2.0";

/// Connection and server commands.
pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("ping", -1, F, NO_KEYS, |s, c, a| run(s, c, "ping", a)),
    spec("echo", 2, F, NO_KEYS, |s, c, a| run(s, c, "echo", a)),
    spec("select", 2, F, NO_KEYS, |s, c, a| run(s, c, "select", a)),
    spec("auth", -2, F, NO_KEYS, |s, c, a| run(s, c, "auth", a)),
    spec("hello", -1, F, NO_KEYS, |s, c, a| run(s, c, "hello", a)),
    spec("quit", -1, F, NO_KEYS, |_, _, _| Reply::ok()),
    spec("shutdown", -1, A, NO_KEYS, |_, _, _| Reply::ok()),
    spec("info", -1, &["loading"], NO_KEYS, |s, c, a| {
        run(s, c, "info", a)
    }),
    spec("config", -2, A, NO_KEYS, |s, c, a| run(s, c, "config", a)),
    spec("command", -1, &["loading"], NO_KEYS, |s, c, a| {
        run(s, c, "command", a)
    }),
    spec("client", -2, &["loading"], NO_KEYS, |s, c, a| {
        run(s, c, "client", a)
    }),
    spec("time", 1, F, NO_KEYS, |s, c, a| run(s, c, "time", a)),
];

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
            Some(_) => Reply::err("ERR DB index is out of range"),
            None => not_integer(),
        },
        "auth" => auth(shared, conn, a),
        "hello" => hello(shared, conn, a),
        "info" => info(shared, a),
        "config" => config(shared, a),
        "command" => command(a),
        "client" => client(conn, a),
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

fn check_password(shared: &Shared, user: Option<&[u8]>, pass: &[u8]) -> Result<(), Reply> {
    let wrong = || Reply::err("WRONGPASS invalid username-password pair or user is disabled.");
    if user.is_some_and(|u| u != b"default") {
        return Err(wrong());
    }
    match &shared.cfg.requirepass {
        None => Err(Reply::err(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        )),
        Some(p) if p.as_bytes() == pass => Ok(()),
        Some(_) => Err(wrong()),
    }
}

fn auth(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let r = match a {
        [pass] => check_password(shared, None, pass),
        [user, pass] => check_password(shared, Some(user), pass),
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
                if let Err(e) = check_password(shared, Some(&a[i + 1]), &a[i + 2]) {
                    return e;
                }
                conn.authenticated = true;
                i += 3;
            }
            b"SETNAME" if i + 1 < a.len() => {
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
    if name.is_some() {
        conn.name = name;
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

/// INFO sections: server, clients, stats, persistence, keyspace, batchkv.
fn info(shared: &Shared, a: &[Bytes]) -> Reply {
    let wanted: Vec<String> = a
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let mut out = String::new();
    let st = &shared.stats;
    if want("server") {
        let up = shared.started.elapsed().as_secs();
        let _ = write!(
            out,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nbatchkv_version:{}\r\nredis_mode:standalone\r\n\
             os:{}\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{up}\r\n\
             uptime_in_days:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            shared.port,
            up / 86400,
        );
    }
    if want("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n\r\n",
            shared.clients.load(Relaxed),
            shared.cfg.maxclients,
            shared.blocking.blocked_clients()
        );
    }
    if want("persistence") {
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\naof_enabled:1\r\nappendfsync:{}\r\nwal_syncs:{}\r\n\r\n",
            shared.cfg.appendfsync.as_str(),
            st.wal_syncs.load(Relaxed)
        );
    }
    if want("stats") {
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             rejected_connections:{}\r\nexpired_keys:{}\r\nexpiry_index_complete:{}\r\n\
             keyspace_hits:{}\r\nkeyspace_misses:{}\r\n\r\n",
            st.connections.load(Relaxed),
            st.commands.load(Relaxed),
            st.rejected_connections.load(Relaxed),
            st.expired_keys.load(Relaxed),
            u8::from(st.expiry_index_complete.load(Relaxed)),
            st.hits.load(Relaxed),
            st.misses.load(Relaxed),
        );
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        for db in 0..NUM_DBS as u8 {
            match super::keys::count_keys(shared, db) {
                Ok((0, _)) => {}
                Ok((n, exp)) => {
                    let _ = write!(out, "db{db}:keys={n},expires={exp},avg_ttl=0\r\n");
                }
                Err(e) => return e,
            }
        }
        out.push_str("\r\n");
    }
    if want("batchkv") {
        let s = shared.db.stats();
        let batches = st.batches.load(Relaxed);
        let keys = st.batched_keys.load(Relaxed);
        let _ = write!(
            out,
            "# batchkv\r\nbatching:{}\r\nread_batches:{batches}\r\nread_batched_keys:{keys}\r\n\
             avg_keys_per_batch:{:.2}\r\nmemtable:{}\r\nmemtable_entries:{}\r\nmemtable_bytes:{}\r\n\
             immutable_memtables:{}\r\nlast_sequence:{}\r\nflushes:{}\r\ncompactions:{}\r\n\
             files_per_level:{:?}\r\nsst_bytes_per_level:{:?}\r\ntable_readers_mem:{}\r\n\r\n",
            if shared.cfg.batch { "on" } else { "off" },
            if batches == 0 { 0.0 } else { keys as f64 / batches as f64 },
            s.memtable_kind,
            s.memtable_entries,
            s.memtable_bytes,
            s.immutable_memtables,
            s.last_sequence,
            s.flushes,
            s.compactions,
            s.files_per_level,
            s.sst_bytes_per_level,
            shared
                .db
                .property_int("batchkv.estimate-table-readers-mem")
                .unwrap_or(0),
        );
    }
    Reply::Bulk(Bytes::from(out))
}

/// CONFIG GET with the parameters clients and redis-benchmark ask for.
fn config(shared: &Shared, a: &[Bytes]) -> Reply {
    let sub = a[0].to_ascii_lowercase();
    match sub.as_slice() {
        b"get" if a.len() >= 2 => {
            let c = &shared.cfg;
            let params: Vec<(&str, String)> = vec![
                ("save", String::new()),
                ("appendonly", "yes".into()),
                ("appendfsync", c.appendfsync.as_str().into()),
                ("databases", NUM_DBS.to_string()),
                ("maxclients", c.maxclients.to_string()),
                ("port", shared.port.to_string()),
                ("bind", c.bind.clone()),
                ("requirepass", c.requirepass.clone().unwrap_or_default()),
                ("maxmemory", "0".into()),
                ("maxmemory-policy", "noeviction".into()),
                ("proto-max-bulk-len", c.proto_max_bulk_len.to_string()),
                (
                    "client-query-buffer-limit",
                    c.client_query_buffer_limit.to_string(),
                ),
                ("timeout", "0".into()),
                ("dir", c.dir.display().to_string()),
            ];
            let mut out = Vec::new();
            for (name, value) in &params {
                if a[1..]
                    .iter()
                    .any(|p| glob_match(&p.to_ascii_lowercase(), name.as_bytes()))
                {
                    out.push((
                        Reply::bulk(Bytes::copy_from_slice(name.as_bytes())),
                        Reply::bulk(Bytes::from(value.clone())),
                    ));
                }
            }
            Reply::Map(out)
        }
        b"set" => Reply::err("ERR CONFIG SET is not supported by batchkv serve"),
        b"resetstat" => Reply::ok(),
        _ => Reply::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(&a[0])
        )),
    }
}

fn command_info(c: &super::CommandSpec) -> Reply {
    Reply::Array(vec![
        Reply::bulk(Bytes::from_static(c.name.as_bytes())),
        Reply::Int(i64::from(c.arity)),
        Reply::Array(c.flags.iter().map(|f| Reply::Status((*f).into())).collect()),
        Reply::Int(i64::from(c.first_key)),
        Reply::Int(i64::from(c.last_key)),
        Reply::Int(i64::from(c.step)),
    ])
}

fn command(a: &[Bytes]) -> Reply {
    let Some(sub) = a.first() else {
        return Reply::Array(all_commands().map(command_info).collect());
    };
    match sub.to_ascii_lowercase().as_slice() {
        b"count" => Reply::Int(all_commands().count() as i64),
        b"list" => Reply::Array(
            COMMANDS
                .iter()
                .map(|c| Reply::bulk(Bytes::from_static(c.name.as_bytes())))
                .collect(),
        ),
        b"info" => {
            if a.len() == 1 {
                return Reply::Array(all_commands().map(command_info).collect());
            }
            Reply::Array(
                a[1..]
                    .iter()
                    .map(|n| super::lookup(n).map_or(Reply::NilArray, command_info))
                    .collect(),
            )
        }
        // Clients (redis-cli) only need a well-formed answer.
        b"docs" => Reply::Map(vec![]),
        _ => Reply::Error(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(sub)
        )),
    }
}

fn client(conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let sub = a[0].to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"setname", 2) => {
            if a[1].iter().any(|&c| c <= b' ' || c > b'~') {
                return Reply::err(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            conn.name = (!a[1].is_empty()).then(|| a[1].clone());
            Reply::ok()
        }
        (b"getname", 1) => match &conn.name {
            Some(n) => Reply::Bulk(n.clone()),
            None => Reply::Nil,
        },
        (b"id", 1) => Reply::Int(conn.id as i64),
        (b"setinfo", 3) => Reply::ok(),
        (b"info", 1) => Reply::bulk(Bytes::from(format!(
            "id={} name={} db={} resp={}\n",
            conn.id,
            conn.name
                .as_ref()
                .map_or(String::new(), |n| String::from_utf8_lossy(n).into_owned()),
            conn.db,
            conn.proto
        ))),
        _ => Reply::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(&a[0])
        )),
    }
}
