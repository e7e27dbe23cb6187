//! CONFIG GET, SET, RESETSTAT, REWRITE and HELP. The parameters, their
//! checks and effects are in `config/runtime.rs`; `execute` has already
//! checked the subcommand and its arity.

use bytes::Bytes;

use super::{help_reply, spec, CommandSpec, ConnState, NO_KEYS};
use crate::resp::Reply;
use crate::shared::Shared;

/// A container: its subcommands' flags are in `subcommands.rs`.
pub(super) static COMMANDS: &[CommandSpec] = &[spec("config", -2, &[], NO_KEYS, config)];

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

fn config(shared: &Shared, _: &mut ConnState, a: &[Bytes]) -> Reply {
    let rest: Vec<&[u8]> = a[1..].iter().map(|b| &b[..]).collect();
    match a[0].to_ascii_lowercase().as_slice() {
        b"get" => Reply::Map(
            shared
                .settings
                .get(&rest)
                .into_iter()
                .map(|(k, v)| (Reply::bulk(Bytes::from(k)), Reply::bulk(Bytes::from(v))))
                .collect(),
        ),
        b"set" => match shared.settings.set(&rest) {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::Error(format!("ERR {e}")),
        },
        b"resetstat" => {
            shared.stats.reset();
            shared.cmdstats.reset();
            shared.auth_failures.reset();
            Reply::ok()
        }
        // batchkv serve takes its configuration from the command line.
        b"rewrite" => Reply::err("ERR The server is running without a config file"),
        _ => help_reply(HELP),
    }
}
