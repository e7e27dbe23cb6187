//! INFO [section ...]: Redis 7's sections and field names — server,
//! clients, memory, persistence, stats, replication, cpu, modules,
//! commandstats, errorstats, cluster, keyspace — plus `batchkv` (the
//! engine). No argument or `default`: every section but commandstats;
//! `all` and `everything`: every section. Section names are
//! case-insensitive; unknown ones are left out.
//!
//! What batchkv cannot know as Redis does is reported as follows:
//! - memory: there is no allocator accounting, so `used_memory` is the
//!   process's resident set (as `used_memory_rss`, from /proc), and the
//!   engine's own use (memtables, table readers, block cache capacity) is
//!   in the `batchkv` section; fragmentation ratios are 1.00.
//! - persistence: the engine's WAL plays the AOF's part (`aof_enabled:1`,
//!   `appendfsync`); there are no RDB snapshots (`rdb_*` say none ran).
//!   `wal_recovery_*` (batchkv's own) say what the WAL replay at start
//!   recovered and dropped.
//! - fields about features batchkv lacks (replication, forks, eviction,
//!   client-side caching, network byte counts, latency histograms — there
//!   is no `latencystats` section) are 0 or Redis's idle values.

use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::{spec, CommandSpec, ConnState, NO_KEYS};
use crate::keyspace::NUM_DBS;
use crate::resp::Reply;
use crate::shared::Shared;

pub(super) static COMMANDS: &[CommandSpec] =
    &[spec("info", -1, &["loading", "stale"], NO_KEYS, info)];

/// Every section, in Redis's order; `true`: in the default set.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("cluster", true),
    ("keyspace", true),
    ("batchkv", true),
];

fn info(shared: &Shared, _: &mut ConnState, a: &[Bytes]) -> Reply {
    let asked: Vec<String> = a
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let every = asked.iter().any(|s| s == "all" || s == "everything");
    let defaults = asked.is_empty() || asked.iter().any(|s| s == "default");
    let mut parts = Vec::new();
    for &(name, default) in SECTIONS {
        if every || (defaults && default) || asked.iter().any(|s| s == name) {
            match section(shared, name) {
                Ok(text) => parts.push(text),
                Err(e) => return e,
            }
        }
    }
    Reply::Verbatim(Bytes::from(parts.join("\r\n")))
}

/// One section: its `# Title` line and its `field:value` lines.
fn section(shared: &Shared, name: &str) -> Result<String, Reply> {
    let fields = match name {
        "server" => server(shared),
        "clients" => clients(shared),
        "memory" => memory(shared),
        "persistence" => persistence(shared),
        "stats" => stats(shared),
        "replication" => replication(shared),
        "cpu" => cpu(),
        "modules" => String::new(),
        "commandstats" => shared.cmdstats.commandstats(),
        "errorstats" => shared.cmdstats.errorstats(),
        "cluster" => "cluster_enabled:0\r\n".into(),
        "keyspace" => keyspace(shared)?,
        _ => batchkv(shared),
    };
    let title = match name {
        "cpu" => "CPU".to_string(),
        "batchkv" => "batchkv".to_string(),
        _ => {
            let mut t = name.to_string();
            t[..1].make_ascii_uppercase();
            t
        }
    };
    Ok(format!("# {title}\r\n{fields}"))
}

/// `field:value\r\n` lines.
fn lines(fields: &[(&str, String)]) -> String {
    let mut s = String::new();
    for (k, v) in fields {
        let _ = write!(s, "{k}:{v}\r\n");
    }
    s
}

fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

fn server(shared: &Shared) -> String {
    let up = shared.started.elapsed().as_secs();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let os = format!("Linux {} {}", release.trim(), std::env::consts::ARCH);
    let exe = std::env::current_exe().map_or(String::new(), |p| p.display().to_string());
    let now = unix_micros();
    lines(&[
        ("redis_version", super::admin::REDIS_VERSION.into()),
        ("redis_git_sha1", "00000000".into()),
        ("redis_git_dirty", "0".into()),
        ("redis_build_id", "0".into()),
        ("redis_mode", "standalone".into()),
        ("os", os),
        ("arch_bits", (usize::BITS).to_string()),
        ("monotonic_clock", "POSIX clock_gettime".into()),
        ("multiplexing_api", "epoll".into()),
        ("atomicvar_api", "c11-builtin".into()),
        ("gcc_version", "0.0.0".into()),
        ("process_id", std::process::id().to_string()),
        ("process_supervised", "no".into()),
        ("run_id", shared.run_id.clone()),
        ("tcp_port", shared.port.to_string()),
        ("server_time_usec", now.to_string()),
        ("uptime_in_seconds", up.to_string()),
        ("uptime_in_days", (up / 86400).to_string()),
        ("hz", "10".into()),
        ("configured_hz", "10".into()),
        (
            "lru_clock",
            ((now / 1_000_000) & ((1 << 24) - 1)).to_string(),
        ),
        ("executable", exe),
        ("config_file", String::new()),
        ("io_threads_active", "0".into()),
        ("batchkv_version", env!("CARGO_PKG_VERSION").into()),
    ])
}

fn clients(shared: &Shared) -> String {
    lines(&[
        (
            "connected_clients",
            shared.clients.load(Relaxed).to_string(),
        ),
        ("cluster_connections", "0".into()),
        ("maxclients", shared.settings.maxclients().to_string()),
        ("client_recent_max_input_buffer", "0".into()),
        ("client_recent_max_output_buffer", "0".into()),
        (
            "blocked_clients",
            shared.blocking.blocked_clients().to_string(),
        ),
        ("tracking_clients", "0".into()),
        ("clients_in_timeout_table", "0".into()),
    ])
}

/// A `/proc` file's `Name:  N kB` field, in bytes.
fn proc_kb(path: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Redis's `bytesToHuman`: `512B`, `1.50K`, `2.00M`, `1.00G`, ...
fn human(n: u64) -> String {
    if n < 1024 {
        return format!("{n}B");
    }
    let mut unit = 1024.0;
    for suffix in ['K', 'M', 'G', 'T', 'P'] {
        if (n as f64) < unit * 1024.0 {
            return format!("{:.2}{suffix}", n as f64 / unit);
        }
        unit *= 1024.0;
    }
    format!("{n}B")
}

/// The process's resident memory and the most of it INFO or MEMORY STATS
/// has seen, in bytes.
pub(super) fn rss_and_peak() -> (u64, u64) {
    static PEAK: AtomicU64 = AtomicU64::new(0);
    let rss = proc_kb("/proc/self/status", "VmRSS");
    (rss, PEAK.fetch_max(rss, Relaxed).max(rss))
}

fn memory(shared: &Shared) -> String {
    let (rss, peak) = rss_and_peak();
    let total = proc_kb("/proc/meminfo", "MemTotal");
    let config = |names: &[&[u8]]| {
        shared
            .settings
            .get(names)
            .into_iter()
            .next()
            .map_or(String::new(), |(_, v)| v)
    };
    let maxmemory: u64 = config(&[b"maxmemory"]).parse().unwrap_or(0);
    let perc = if peak == 0 {
        0.0
    } else {
        rss as f64 * 100.0 / peak as f64
    };
    lines(&[
        ("used_memory", rss.to_string()),
        ("used_memory_human", human(rss)),
        ("used_memory_rss", rss.to_string()),
        ("used_memory_rss_human", human(rss)),
        ("used_memory_peak", peak.to_string()),
        ("used_memory_peak_human", human(peak)),
        ("used_memory_peak_perc", format!("{perc:.2}%")),
        ("total_system_memory", total.to_string()),
        ("total_system_memory_human", human(total)),
        ("maxmemory", maxmemory.to_string()),
        ("maxmemory_human", human(maxmemory)),
        ("maxmemory_policy", config(&[b"maxmemory-policy"])),
        ("mem_fragmentation_ratio", "1.00".into()),
        ("mem_fragmentation_bytes", "0".into()),
        ("mem_allocator", "libc".into()),
        ("lazyfree_pending_objects", "0".into()),
    ])
}

fn persistence(shared: &Shared) -> String {
    let write_ok = shared.db.property_int("batchkv.background-errors") != Some(1);
    lines(&[
        ("loading", "0".into()),
        ("async_loading", "0".into()),
        ("rdb_changes_since_last_save", "0".into()),
        ("rdb_bgsave_in_progress", "0".into()),
        (
            "rdb_last_save_time",
            super::admin::last_save(shared).to_string(),
        ),
        ("rdb_last_bgsave_status", "ok".into()),
        ("rdb_last_bgsave_time_sec", "-1".into()),
        ("rdb_current_bgsave_time_sec", "-1".into()),
        ("rdb_saves", shared.stats.saves.load(Relaxed).to_string()),
        ("aof_enabled", "1".into()),
        ("aof_rewrite_in_progress", "0".into()),
        ("aof_rewrite_scheduled", "0".into()),
        ("aof_last_rewrite_time_sec", "-1".into()),
        ("aof_current_rewrite_time_sec", "-1".into()),
        ("aof_last_bgrewrite_status", "ok".into()),
        ("aof_rewrites", "0".into()),
        (
            "aof_last_write_status",
            if write_ok { "ok" } else { "err" }.into(),
        ),
        ("appendfsync", shared.settings.appendfsync().as_str().into()),
        (
            "wal_syncs",
            shared.stats.wal_syncs.load(Relaxed).to_string(),
        ),
    ]) + &wal_recovery(shared.db.recovery_report())
}

/// The outcome of the WAL replay at the last start (`docs/format/wal.md`
/// §4): status `clean`, `tail-truncated` (a crash's torn or zero-filled
/// last write, not applied) or `damaged` (intact writes not applied or
/// skipped over: a salvaging `--wal-recovery` mode was used); the first
/// damaged WAL and offset (`-1` if none); and the copies kept in `lost/`
/// (comma-separated).
fn wal_recovery(r: &batchkv::RecoveryReport) -> String {
    let first = r.damage.first();
    let kept: Vec<String> = r
        .kept_aside
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    lines(&[
        ("wal_recovery_status", r.status().as_str().into()),
        ("wal_recovery_mode", r.mode.name().into()),
        (
            "wal_recovery_replayed_records",
            r.records_replayed.to_string(),
        ),
        (
            "wal_recovery_dropped_records",
            r.records_dropped().to_string(),
        ),
        ("wal_recovery_dropped_bytes", r.bytes_dropped().to_string()),
        (
            "wal_recovery_file",
            first.map_or(String::new(), |d| d.file.display().to_string()),
        ),
        (
            "wal_recovery_offset",
            first.map_or("-1".into(), |d| d.offset.to_string()),
        ),
        ("wal_recovery_lost_copy", kept.join(",")),
    ])
}

fn stats(shared: &Shared) -> String {
    let st = &shared.stats;
    let n = |a: &AtomicU64| a.load(Relaxed).to_string();
    lines(&[
        ("total_connections_received", n(&st.connections)),
        ("total_commands_processed", n(&st.commands)),
        (
            "instantaneous_ops_per_sec",
            shared.cmdstats.ops_per_sec().to_string(),
        ),
        ("total_net_input_bytes", "0".into()),
        ("total_net_output_bytes", "0".into()),
        ("rejected_connections", n(&st.rejected_connections)),
        ("sync_full", "0".into()),
        ("sync_partial_ok", "0".into()),
        ("sync_partial_err", "0".into()),
        ("expired_keys", n(&st.expired_keys)),
        ("expired_stale_perc", "0.00".into()),
        ("expired_time_cap_reached_count", "0".into()),
        ("evicted_keys", "0".into()),
        ("evicted_clients", "0".into()),
        ("keyspace_hits", n(&st.hits)),
        ("keyspace_misses", n(&st.misses)),
        ("pubsub_channels", "0".into()),
        ("pubsub_patterns", "0".into()),
        ("latest_fork_usec", "0".into()),
        ("total_forks", "0".into()),
        ("migrate_cached_sockets", "0".into()),
        ("unexpected_error_replies", "0".into()),
        (
            "total_error_replies",
            shared.cmdstats.total_errors().to_string(),
        ),
        ("total_reads_processed", "0".into()),
        ("total_writes_processed", "0".into()),
        (
            "acl_access_denied_auth",
            shared.auth_failures.total().to_string(),
        ),
        (
            "expiry_index_complete",
            u8::from(st.expiry_index_complete.load(Relaxed)).to_string(),
        ),
    ])
}

fn replication(shared: &Shared) -> String {
    lines(&[
        ("role", "master".into()),
        ("connected_slaves", "0".into()),
        ("master_failover_state", "no-failover".into()),
        ("master_replid", shared.run_id.clone()),
        ("master_replid2", "0".repeat(40)),
        ("master_repl_offset", "0".into()),
        ("second_repl_offset", "-1".into()),
        ("repl_backlog_active", "0".into()),
        ("repl_backlog_size", "1048576".into()),
        ("repl_backlog_first_byte_offset", "0".into()),
        ("repl_backlog_histlen", "0".into()),
    ])
}

/// The utime, stime, cutime, cstime fields of a /proc `stat` file, in
/// clock ticks.
fn cpu_ticks(path: &str) -> [u64; 4] {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The fields after the command name (in parentheses) start with the
    // state, field 3; utime..cstime are fields 14..=17.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let mut f = rest
        .split_ascii_whitespace()
        .skip(11)
        .map(|v| v.parse().unwrap_or(0));
    [(); 4].map(|()| f.next().unwrap_or(0))
}

/// CPU seconds of the process, its waited-for children and its main
/// thread, from /proc (ticks of 1/100 s, Linux's USER_HZ).
fn cpu() -> String {
    let secs = |t: u64| format!("{}.{:06}", t / 100, (t % 100) * 10_000);
    let [user, sys, cuser, csys] = cpu_ticks("/proc/self/stat");
    let main = format!("/proc/self/task/{}/stat", std::process::id());
    let [main_user, main_sys, ..] = cpu_ticks(&main);
    lines(&[
        ("used_cpu_sys", secs(sys)),
        ("used_cpu_user", secs(user)),
        ("used_cpu_sys_children", secs(csys)),
        ("used_cpu_user_children", secs(cuser)),
        ("used_cpu_sys_main_thread", secs(main_sys)),
        ("used_cpu_user_main_thread", secs(main_user)),
    ])
}

fn keyspace(shared: &Shared) -> Result<String, Reply> {
    let mut out = String::new();
    for db in 0..NUM_DBS as u8 {
        let c = shared.key_count(db)?;
        let (n, exp) = (c.keys, c.expires);
        if n > 0 {
            let _ = write!(out, "db{db}:keys={n},expires={exp},avg_ttl=0\r\n");
        }
    }
    Ok(out)
}

/// The engine: batched reads, memtables, levels, caches.
fn batchkv(shared: &Shared) -> String {
    let s = shared.db.stats();
    let engine = shared.db.statistics();
    let st = &shared.stats;
    let batches = st.batches.load(Relaxed);
    let keys = st.batched_keys.load(Relaxed);
    // Items per batch, two decimals ("0.00" before any batch).
    let per_batch =
        |items: u64, batches: u64| format!("{:.2}", items as f64 / batches.max(1) as f64);
    let prop = |p: &str| shared.db.property_int(p).unwrap_or(0).to_string();
    let write_batches = st.write_batches.load(Relaxed);
    let write_commands = st.write_batched_commands.load(Relaxed);
    lines(&[
        (
            "batching",
            if shared.cfg.batch { "on" } else { "off" }.into(),
        ),
        ("read_batches", batches.to_string()),
        ("read_batched_keys", keys.to_string()),
        ("avg_keys_per_batch", per_batch(keys, batches)),
        ("write_batches", write_batches.to_string()),
        ("write_batched_commands", write_commands.to_string()),
        (
            "avg_commands_per_write_batch",
            per_batch(write_commands, write_batches),
        ),
        ("hinted_inserts", engine.hinted_inserts.to_string()),
        ("runtime", shared.cfg.schedule.name().into()),
        (
            "connection_moves",
            st.connection_moves.load(Relaxed).to_string(),
        ),
        ("helped_reads", st.helped_reads.load(Relaxed).to_string()),
        (
            "thread_loads",
            st.balance
                .get()
                .map_or_else(String::new, |b| b.loads_percent()),
        ),
        // The engine's point reads and batched reads (each `multi_get` and
        // the keys it read), all callers together.
        ("engine_gets", engine.gets.to_string()),
        ("engine_multi_gets", engine.multi_gets.to_string()),
        ("engine_multi_get_keys", engine.multi_get_keys.to_string()),
        ("memtable", s.memtable_kind.into()),
        ("memtable_entries", s.memtable_entries.to_string()),
        ("memtable_bytes", s.memtable_bytes.to_string()),
        ("immutable_memtables", s.immutable_memtables.to_string()),
        ("last_sequence", s.last_sequence.to_string()),
        ("flushes", s.flushes.to_string()),
        ("compactions", s.compactions.to_string()),
        ("files_per_level", format!("{:?}", s.files_per_level)),
        (
            "sst_bytes_per_level",
            format!("{:?}", s.sst_bytes_per_level),
        ),
        (
            "table_readers_mem",
            prop("batchkv.estimate-table-readers-mem"),
        ),
        (
            "block_cache_capacity",
            shared.cfg.options.block_cache_size.to_string(),
        ),
        ("block_cache_hits", engine.block_cache_hits.to_string()),
        ("block_cache_misses", engine.block_cache_misses.to_string()),
        ("estimate_num_keys", prop("batchkv.estimate-num-keys")),
        ("engine_wal_syncs", engine.wal_syncs.to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_redis() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(7_409_664), "7.07M");
        assert_eq!(human(25_276_510_208), "23.54G");
    }
}
