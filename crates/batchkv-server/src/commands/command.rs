//! COMMAND, COMMAND INFO/COUNT/LIST/DOCS/GETKEYS/GETKEYSANDFLAGS/HELP,
//! with Redis 7's reply shapes, from the command table (`mod.rs`), the
//! container subcommands (`subcommands.rs`) and the documentation table
//! (`docs.rs`).
//!
//! Differences from Redis: the flags are batchkv's (the table's); key
//! specs are derived from the first/last/step key positions, flagged `RW`
//! for write commands and `RO` otherwise (Redis's finer access flags —
//! `access`, `update`, `insert`, `delete` — are not given; GETKEYSANDFLAGS
//! reports the same two); COMMAND DOCS has no argument descriptions; tips
//! come from Redis's table too.

use bytes::Bytes;

use super::docs;
use super::subcommands::{self, SubSpec};
use super::{all_commands, arity_ok_n, help_reply, lookup, parse_int, spec, syntax_error};
use super::{CommandSpec, ConnState, NO_KEYS};
use crate::keyspace::glob_match;
use crate::resp::Reply;
use crate::shared::Shared;

pub(super) static COMMANDS: &[CommandSpec] =
    &[spec("command", -1, &["loading", "stale"], NO_KEYS, command)];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

/// `execute` has checked the subcommand and its arity.
fn command(_: &Shared, _: &mut ConnState, a: &[Bytes]) -> Reply {
    let Some(sub) = a.first() else {
        return Reply::Array(all_commands().map(info).collect());
    };
    match sub.to_ascii_lowercase().as_slice() {
        b"count" => Reply::Int(all_commands().count() as i64),
        b"list" => list(&a[1..]),
        b"info" if a.len() == 1 => Reply::Array(all_commands().map(info).collect()),
        b"info" => Reply::Array(
            a[1..]
                .iter()
                .map(|n| match find(n) {
                    Some((c, None)) => info(c),
                    Some((c, Some(s))) => sub_info(c, s),
                    None => Reply::Nil,
                })
                .collect(),
        ),
        b"docs" => docs_reply(&a[1..]),
        b"getkeys" => match keys_of(&a[1..]) {
            Ok((keys, _)) => Reply::Array(
                keys.into_iter()
                    .map(|i| Reply::Bulk(a[1 + i].clone()))
                    .collect(),
            ),
            Err(e) => e,
        },
        b"getkeysandflags" => match keys_of(&a[1..]) {
            Ok((keys, write)) => Reply::Array(
                keys.into_iter()
                    .map(|i| {
                        Reply::Array(vec![
                            Reply::Bulk(a[1 + i].clone()),
                            Reply::Set(vec![Reply::Status(access(write).into())]),
                        ])
                    })
                    .collect(),
            ),
            Err(e) => e,
        },
        _ => help_reply(HELP),
    }
}

/// A command or subcommand by its full name (`get`, `config|get`).
fn find(name: &[u8]) -> Option<(&'static CommandSpec, Option<&'static SubSpec>)> {
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    match name.split_once('|') {
        None => Some((lookup(name.as_bytes())?, None)),
        Some((c, s)) => {
            let spec = lookup(c.as_bytes())?;
            let sub = subcommands::of(spec.name)?.iter().find(|x| x.name == s)?;
            Some((spec, Some(sub)))
        }
    }
}

/// `RO` or `RW`: the key flag of a command that writes or not.
fn access(write: bool) -> &'static str {
    if write {
        "RW"
    } else {
        "RO"
    }
}

fn statuses(items: impl Iterator<Item = String>) -> Reply {
    Reply::Set(items.map(Reply::Status).collect())
}

/// What one COMMAND INFO entry shows.
struct Entry<'a> {
    name: String,
    arity: i32,
    flags: &'a [&'a str],
    keys: (i32, i32, i32),
    acl: &'a [&'a str],
    tips: &'a [&'a str],
    /// The subcommands' entries (an empty set when there are none, as
    /// Redis answers).
    subs: Reply,
}

/// One COMMAND INFO entry: name, arity, flags, first key, last key, step,
/// ACL categories, tips, key specs, subcommands.
fn info(c: &'static CommandSpec) -> Reply {
    let (acl, tips) = docs::find(c.name).map_or((&[][..], &[][..]), |d| (d.acl, d.tips));
    let subs = match subcommands::of(c.name) {
        Some(list) => Reply::Array(list.iter().map(|s| sub_info(c, s)).collect()),
        None => Reply::Set(vec![]),
    };
    entry(Entry {
        name: c.name.to_string(),
        arity: c.arity,
        flags: c.flags,
        keys: (c.first_key, c.last_key, c.step),
        acl,
        tips,
        subs,
    })
}

fn sub_info(c: &CommandSpec, s: &SubSpec) -> Reply {
    entry(Entry {
        name: format!("{}|{}", c.name, s.name),
        arity: s.arity,
        flags: s.flags,
        keys: s.keys,
        acl: s.acl,
        tips: s.tips,
        subs: Reply::Set(vec![]),
    })
}

fn entry(e: Entry<'_>) -> Reply {
    let write = e.flags.contains(&"write");
    Reply::Array(vec![
        Reply::bulk(Bytes::from(e.name)),
        Reply::Int(i64::from(e.arity)),
        statuses(e.flags.iter().map(|f| f.to_string())),
        Reply::Int(i64::from(e.keys.0)),
        Reply::Int(i64::from(e.keys.1)),
        Reply::Int(i64::from(e.keys.2)),
        statuses(e.acl.iter().map(|a| format!("@{a}"))),
        Reply::Set(e.tips.iter().map(|t| Reply::bulk_str(t)).collect()),
        key_specs(e.keys, write),
        e.subs,
    ])
}

/// The key spec of a command whose keys are at `first..=last` by `step`
/// (none if it has no key positions).
fn key_specs((first, last, step): (i32, i32, i32), write: bool) -> Reply {
    if first <= 0 {
        return Reply::Set(vec![]);
    }
    let s = Reply::bulk_str;
    let lastkey = if last < 0 { last } else { last - first };
    Reply::Set(vec![Reply::Map(vec![
        (
            s("flags"),
            Reply::Set(vec![Reply::Status(access(write).into())]),
        ),
        (
            s("begin_search"),
            Reply::Map(vec![
                (s("type"), s("index")),
                (
                    s("spec"),
                    Reply::Map(vec![(s("index"), Reply::Int(i64::from(first)))]),
                ),
            ]),
        ),
        (
            s("find_keys"),
            Reply::Map(vec![
                (s("type"), s("range")),
                (
                    s("spec"),
                    Reply::Map(vec![
                        (s("lastkey"), Reply::Int(i64::from(lastkey))),
                        (s("keystep"), Reply::Int(i64::from(step))),
                        (s("limit"), Reply::Int(0)),
                    ]),
                ),
            ]),
        ),
    ])])
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]:
/// every command and subcommand name (`config|get`).
fn list(a: &[Bytes]) -> Reply {
    let mut names: Vec<(String, &[&str])> = Vec::new();
    for c in all_commands() {
        names.push((
            c.name.to_string(),
            docs::find(c.name).map_or(&[][..], |d| d.acl),
        ));
        for s in subcommands::of(c.name).unwrap_or(&[]) {
            names.push((format!("{}|{}", c.name, s.name), s.acl));
        }
    }
    // `None`: keep all; `Some((true, v))`: ACL category v; `Some((false,
    // v))`: names matching glob v (a module: nothing).
    let filter = match a {
        [] => None,
        [f, kind, v] if f.eq_ignore_ascii_case(b"filterby") => {
            let v = String::from_utf8_lossy(v).to_ascii_lowercase();
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => return Reply::Array(vec![]),
                b"aclcat" => Some((true, v)),
                b"pattern" => Some((false, v)),
                _ => return syntax_error(),
            }
        }
        _ => return syntax_error(),
    };
    let keep = |name: &str, acl: &[&str]| match &filter {
        None => true,
        Some((true, cat)) => acl.contains(&cat.as_str()),
        Some((false, glob)) => glob_match(glob.as_bytes(), name.as_bytes()),
    };
    Reply::Array(
        names
            .into_iter()
            .filter(|(n, acl)| keep(n, acl))
            .map(|(n, _)| Reply::bulk(Bytes::from(n)))
            .collect(),
    )
}

/// COMMAND DOCS [name ...]: name → {summary, since, group, complexity
/// [, subcommands]}; unknown names are left out.
fn docs_reply(names: &[Bytes]) -> Reply {
    let found: Vec<_> = if names.is_empty() {
        all_commands().map(|c| (c, None)).collect()
    } else {
        names.iter().filter_map(|n| find(n)).collect()
    };
    Reply::Map(
        found
            .into_iter()
            .map(|(c, sub)| match sub {
                None => (Reply::bulk_str(c.name), command_doc(c)),
                Some(s) => (
                    Reply::bulk(Bytes::from(format!("{}|{}", c.name, s.name))),
                    sub_doc(c, s),
                ),
            })
            .collect(),
    )
}

fn command_doc(c: &CommandSpec) -> Reply {
    let s = Reply::bulk_str;
    let Some(d) = docs::find(c.name) else {
        return Reply::Map(vec![(s("group"), s("generic"))]);
    };
    let mut fields = vec![
        (s("summary"), s(d.summary)),
        (s("since"), s(d.since)),
        (s("group"), s(d.group)),
    ];
    // Redis documents a few commands (MONITOR) without one.
    if !d.complexity.is_empty() {
        fields.push((s("complexity"), s(d.complexity)));
    }
    if let Some(subs) = subcommands::of(c.name) {
        let docs = subs
            .iter()
            .map(|x| {
                (
                    Reply::bulk(Bytes::from(format!("{}|{}", c.name, x.name))),
                    sub_doc(c, x),
                )
            })
            .collect();
        fields.push((s("subcommands"), Reply::Map(docs)));
    }
    Reply::Map(fields)
}

fn sub_doc(c: &CommandSpec, x: &SubSpec) -> Reply {
    let s = Reply::bulk_str;
    let group = docs::find(c.name).map_or("generic", |d| d.group);
    Reply::Map(vec![
        (s("summary"), s(x.summary)),
        (s("since"), s(x.since)),
        (s("group"), s(group)),
        (s("complexity"), s(x.complexity)),
    ])
}

/// Commands whose keys follow a key count (`ZUNIONSTORE dst numkeys k
/// ...`): name, position of the count, positions of keys before it.
const COUNTED_KEYS: &[(&str, usize, &[usize])] = &[
    ("zunionstore", 2, &[1]),
    ("zinterstore", 2, &[1]),
    ("zdiffstore", 2, &[1]),
    ("zunion", 1, &[]),
    ("zinter", 1, &[]),
    ("zdiff", 1, &[]),
    ("zintercard", 1, &[]),
    ("sintercard", 1, &[]),
    ("lmpop", 1, &[]),
    ("blmpop", 2, &[]),
    ("zmpop", 1, &[]),
    ("bzmpop", 2, &[]),
];

/// SORT's keys as Redis finds them: the sorted key and the last STORE's
/// destination, stepping over LIMIT's two arguments and BY's and GET's
/// one (the patterns BY and GET name are not keys of the command).
fn sort_keys(cmd: &[Bytes]) -> Vec<usize> {
    let mut store = None;
    let mut i = 2;
    while i < cmd.len() {
        let a = &cmd[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < cmd.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    std::iter::once(1).chain(store).collect()
}

/// The positions of the keys in `cmd` (a full command: name and
/// arguments) and whether it writes, or Redis's GETKEYS error.
fn keys_of(cmd: &[Bytes]) -> Result<(Vec<usize>, bool), Reply> {
    let invalid = || Reply::err("ERR Invalid command specified");
    let spec = lookup(&cmd[0]).ok_or_else(invalid)?;
    let (arity, keys, flags) = match subcommands::of(spec.name) {
        Some(subs) if cmd.len() >= 2 => {
            let s = subs
                .iter()
                .find(|s| s.name.as_bytes().eq_ignore_ascii_case(&cmd[1]))
                .ok_or_else(invalid)?;
            (s.arity, s.keys, s.flags)
        }
        _ => (
            spec.arity,
            (spec.first_key, spec.last_key, spec.step),
            spec.flags,
        ),
    };
    let argc = cmd.len();
    if !arity_ok_n(arity, argc) {
        return Err(Reply::err(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let write = flags.contains(&"write");
    if let Some(&(_, at, before)) = COUNTED_KEYS.iter().find(|(n, ..)| *n == spec.name) {
        let bad = || Reply::err("ERR Invalid arguments specified for command");
        let n = cmd.get(at).and_then(|v| parse_int(v)).ok_or_else(bad)?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0 && at + n < argc)
            .ok_or_else(bad)?;
        let mut out = before.to_vec();
        out.extend(at + 1..=at + n);
        return Ok((out, write));
    }
    if spec.name == "xread" || spec.name == "xreadgroup" {
        // Redis's key spec: the first STREAMS, then half of what follows.
        let bad = || Reply::err("ERR Invalid arguments specified for command");
        let at = cmd
            .iter()
            .skip(1)
            .position(|a| a.eq_ignore_ascii_case(b"streams"))
            .ok_or_else(bad)?
            + 2;
        let n = (argc - at) / 2;
        if n == 0 {
            return Err(bad());
        }
        return Ok(((at..at + n).collect(), write));
    }
    if spec.name == "sort" {
        return Ok((sort_keys(cmd), write));
    }
    if keys.0 <= 0 {
        return Err(Reply::err("ERR The command has no key arguments"));
    }
    Ok((super::key_positions(keys, argc).collect(), write))
}
