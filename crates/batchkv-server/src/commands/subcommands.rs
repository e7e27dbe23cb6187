//! Container commands — CLIENT, COMMAND, CONFIG, OBJECT, SLOWLOG — and
//! their subcommands: arity, flags, key positions and documentation, as
//! redis-server 7.0.15 reports them (COMMAND INFO/DOCS; CLIENT SETINFO and
//! NO-TOUCH as Redis 7.2). `execute` checks a container's subcommand
//! (unknown: "unknown subcommand ... Try CONFIG HELP."; its own arity:
//! "wrong number of arguments for 'config|get' command") before the
//! container's handler runs, and counts it in its own statistics slot
//! (`cmdstat_config|get`). Only subcommands batchkv implements are listed.

use super::NO_KEYS;

/// One subcommand.
pub struct SubSpec {
    /// Lowercase, without the container's name (`get`).
    pub name: &'static str,
    /// Counting the container's name and the subcommand's.
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// First key, last key, step (positions from the container's name).
    pub keys: (i32, i32, i32),
    /// ACL categories without the `@`.
    pub acl: &'static [&'static str],
    /// COMMAND INFO's tips.
    pub tips: &'static [&'static str],
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
}

#[allow(clippy::too_many_arguments, reason = "a table row")]
const fn sub(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    acl: &'static [&'static str],
    tips: &'static [&'static str],
    summary: &'static str,
    since: &'static str,
    complexity: &'static str,
) -> SubSpec {
    SubSpec {
        name,
        arity,
        flags,
        keys,
        acl,
        tips,
        summary,
        since,
        complexity,
    }
}

/// The subcommands of container command `name`, if it is one.
pub fn of(name: &str) -> Option<&'static [SubSpec]> {
    Some(match name {
        "client" => CLIENT,
        "command" => COMMAND,
        "config" => CONFIG,
        "object" => OBJECT,
        "slowlog" => SLOWLOG,
        _ => return None,
    })
}

static CLIENT: &[SubSpec] = &[
    sub(
        "caching",
        3,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Instruct the server about tracking or not keys in the next request",
        "6.0.0",
        "O(1)",
    ),
    sub(
        "getname",
        2,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Get the current connection name",
        "2.6.9",
        "O(1)",
    ),
    sub(
        "getredir",
        2,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Get tracking notifications redirection client ID if any",
        "6.0.0",
        "O(1)",
    ),
    sub(
        "help",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Show helpful text about the different subcommands",
        "5.0.0",
        "O(1)",
    ),
    sub(
        "id",
        2,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Returns the client ID for the current connection",
        "5.0.0",
        "O(1)",
    ),
    sub(
        "info",
        2,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &["nondeterministic_output"],
        "Returns information about the current client connection.",
        "6.2.0",
        "O(1)",
    ),
    sub(
        "kill",
        -3,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous", "connection"],
        &[],
        "Kill the connection of a client",
        "2.4.0",
        "O(N) where N is the number of client connections",
    ),
    sub(
        "list",
        -2,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous", "connection"],
        &["nondeterministic_output"],
        "Get the list of client connections",
        "2.4.0",
        "O(N) where N is the number of client connections",
    ),
    sub(
        "no-evict",
        3,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous", "connection"],
        &[],
        "Set client eviction mode for the current connection",
        "7.0.0",
        "O(1)",
    ),
    sub(
        "no-touch",
        3,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys",
        "7.2.0",
        "O(1)",
    ),
    sub(
        "pause",
        -3,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous", "connection"],
        &[],
        "Stop processing commands from clients for some time",
        "2.9.50",
        "O(1)",
    ),
    sub(
        "setinfo",
        4,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Sets information specific to the client or connection.",
        "7.2.0",
        "O(1)",
    ),
    sub(
        "setname",
        3,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Set the current connection name",
        "2.6.9",
        "O(1)",
    ),
    sub(
        "trackinginfo",
        2,
        &["noscript", "loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Return information about server assisted client side caching for the current connection",
        "6.2.0",
        "O(1)",
    ),
    sub(
        "unpause",
        2,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous", "connection"],
        &[],
        "Resume processing of clients that were paused",
        "6.2.0",
        "O(N) Where N is the number of paused clients",
    ),
];

static COMMAND: &[SubSpec] = &[
    sub(
        "count",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Get total number of Redis commands",
        "2.8.13",
        "O(1)",
    ),
    sub(
        "docs",
        -2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &["nondeterministic_output_order"],
        "Get array of specific Redis command documentation",
        "7.0.0",
        "O(N) where N is the number of commands to look up",
    ),
    sub(
        "getkeys",
        -4,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Extract keys given a full Redis command",
        "2.8.13",
        "O(N) where N is the number of arguments to the command",
    ),
    sub(
        "getkeysandflags",
        -4,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Extract keys and access flags given a full Redis command",
        "7.0.0",
        "O(N) where N is the number of arguments to the command",
    ),
    sub(
        "help",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &[],
        "Show helpful text about the different subcommands",
        "5.0.0",
        "O(1)",
    ),
    sub(
        "info",
        -2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &["nondeterministic_output_order"],
        "Get array of specific Redis command details, or all when no argument is given.",
        "2.8.13",
        "O(N) where N is the number of commands to look up",
    ),
    sub(
        "list",
        -2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow", "connection"],
        &["nondeterministic_output_order"],
        "Get an array of Redis command names",
        "7.0.0",
        "O(N) where N is the total number of Redis commands",
    ),
];

static CONFIG: &[SubSpec] = &[
    sub(
        "get",
        -3,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &[],
        "Get the values of configuration parameters",
        "2.0.0",
        "O(N) when N is the number of configuration parameters provided",
    ),
    sub(
        "help",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow"],
        &[],
        "Show helpful text about the different subcommands",
        "5.0.0",
        "O(1)",
    ),
    sub(
        "resetstat",
        2,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &[],
        "Reset the stats returned by INFO",
        "2.0.0",
        "O(1)",
    ),
    sub(
        "rewrite",
        2,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &[],
        "Rewrite the configuration file with the in memory configuration",
        "2.8.0",
        "O(1)",
    ),
    sub(
        "set",
        -4,
        &["admin", "noscript", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
        "Set configuration parameters to the given values",
        "2.0.0",
        "O(N) when N is the number of configuration parameters provided",
    ),
];

static OBJECT: &[SubSpec] = &[
    sub(
        "encoding",
        3,
        &["readonly"],
        (2, 2, 1),
        &["keyspace", "read", "slow"],
        &["nondeterministic_output"],
        "Inspect the internal encoding of a Redis object",
        "2.2.3",
        "O(1)",
    ),
    sub(
        "freq",
        3,
        &["readonly"],
        (2, 2, 1),
        &["keyspace", "read", "slow"],
        &["nondeterministic_output"],
        "Get the logarithmic access frequency counter of a Redis object",
        "4.0.0",
        "O(1)",
    ),
    sub(
        "help",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["keyspace", "slow"],
        &[],
        "Show helpful text about the different subcommands",
        "6.2.0",
        "O(1)",
    ),
    sub(
        "idletime",
        3,
        &["readonly"],
        (2, 2, 1),
        &["keyspace", "read", "slow"],
        &["nondeterministic_output"],
        "Get the time since a Redis object was last accessed",
        "2.2.3",
        "O(1)",
    ),
    sub(
        "refcount",
        3,
        &["readonly"],
        (2, 2, 1),
        &["keyspace", "read", "slow"],
        &["nondeterministic_output"],
        "Get the number of references to the value of the key",
        "2.2.3",
        "O(1)",
    ),
];

static SLOWLOG: &[SubSpec] = &[
    sub(
        "get",
        -2,
        &["admin", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &["request_policy:all_nodes", "nondeterministic_output"],
        "Get the slow log's entries",
        "2.2.12",
        "O(N) where N is the number of entries returned",
    ),
    sub(
        "help",
        2,
        &["loading", "stale"],
        NO_KEYS,
        &["slow"],
        &[],
        "Show helpful text about the different subcommands",
        "6.2.0",
        "O(1)",
    ),
    sub(
        "len",
        2,
        &["admin", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ],
        "Get the slow log's length",
        "2.2.12",
        "O(1)",
    ),
    sub(
        "reset",
        2,
        &["admin", "loading", "stale"],
        NO_KEYS,
        &["admin", "slow", "dangerous"],
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
        "Clear all entries from the slow log",
        "2.2.12",
        "O(N) where N is the number of entries in the slowlog",
    ),
];
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommands_are_lowercase_and_have_help() {
        for c in ["client", "command", "config", "object", "slowlog"] {
            let subs = of(c).unwrap();
            assert!(subs.iter().any(|s| s.name == "help"), "{c}");
            assert!(subs
                .iter()
                .all(|s| s.name == s.name.to_ascii_lowercase() && s.arity.abs() >= 2));
        }
    }
}
