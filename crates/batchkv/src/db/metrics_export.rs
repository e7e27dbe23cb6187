//! `Db::export_metrics()` (cargo feature `metrics`): publishes
//! [`Db::statistics`] and the database's shape through the `metrics` facade.
//! The engine depends on the facade only; the application installs the
//! recorder (Prometheus exporter, statsd, …) and decides how often to call
//! this (e.g. from its own timer thread, or before each scrape).
//!
//! What is published (all names start with `batchkv.`):
//! - counters, set with `absolute` to the totals since open: the fields of
//!   [`Statistics`](crate::Statistics) (`batchkv.keys_written`, …);
//! - gauges: `batchkv.files` and `batchkv.sst_bytes` per `level` label,
//!   `batchkv.memtable_bytes`, `batchkv.immutable_memtables`,
//!   `batchkv.snapshots`, `batchkv.write_stopped`;
//! - latency summaries as gauges in seconds, `batchkv.latency` with labels
//!   `op` (`get`, `multi_get`, `multi_get_per_key`, `write`) and
//!   `quantile` (`0.5`, `0.95`, `0.99`, `0.999`, `1` for the max), plus a
//!   counter `batchkv.latency_count` per `op`. Summaries rather than
//!   `metrics` histograms: the engine keeps buckets, not samples, and
//!   re-emitting samples would make every export cost O(calls).

use super::Db;

impl Db {
    /// Publishes the statistics through the `metrics` facade (names in
    /// `db/metrics_export.rs`). Without an installed recorder this does
    /// nothing. Costs one [`Db::statistics`] call.
    pub fn export_metrics(&self) {
        let s = self.statistics();
        let counters: [(&'static str, u64); 16] = [
            ("batchkv.keys_written", s.keys_written),
            ("batchkv.bytes_written", s.bytes_written),
            ("batchkv.wal_bytes", s.wal_bytes),
            ("batchkv.wal_syncs", s.wal_syncs),
            ("batchkv.gets", s.gets),
            ("batchkv.multi_gets", s.multi_gets),
            ("batchkv.multi_get_keys", s.multi_get_keys),
            ("batchkv.hinted_inserts", s.hinted_inserts),
            ("batchkv.flushes", s.flushes),
            ("batchkv.flush_bytes", s.flush_bytes),
            ("batchkv.compactions", s.compactions),
            ("batchkv.compaction_bytes_read", s.compaction_bytes_read),
            (
                "batchkv.compaction_bytes_written",
                s.compaction_bytes_written,
            ),
            ("batchkv.stall_micros", s.stall_micros),
            ("batchkv.block_cache_hits", s.block_cache_hits),
            ("batchkv.block_cache_misses", s.block_cache_misses),
        ];
        for (name, v) in counters {
            metrics::counter!(name).absolute(v);
        }
        let shape = self.stats();
        for (level, (files, bytes)) in shape
            .files_per_level
            .iter()
            .zip(&shape.sst_bytes_per_level)
            .enumerate()
        {
            let level = level.to_string();
            metrics::gauge!("batchkv.files", "level" => level.clone()).set(*files as f64);
            metrics::gauge!("batchkv.sst_bytes", "level" => level).set(*bytes as f64);
        }
        metrics::gauge!("batchkv.memtable_bytes").set(shape.memtable_bytes as f64);
        metrics::gauge!("batchkv.immutable_memtables").set(shape.immutable_memtables as f64);
        let int = |name: &str| self.property_int(name).unwrap_or(0) as f64;
        metrics::gauge!("batchkv.snapshots").set(int("batchkv.num-snapshots"));
        metrics::gauge!("batchkv.write_stopped").set(int("batchkv.is-write-stopped"));
        for (op, l) in [
            ("get", s.get_latency),
            ("multi_get", s.multi_get_latency),
            ("multi_get_per_key", s.multi_get_per_key_latency),
            ("write", s.write_latency),
        ] {
            metrics::counter!("batchkv.latency_count", "op" => op).absolute(l.count);
            for (q, d) in [
                ("0.5", l.p50),
                ("0.95", l.p95),
                ("0.99", l.p99),
                ("0.999", l.p999),
                ("1", l.max),
            ] {
                metrics::gauge!("batchkv.latency", "op" => op, "quantile" => q)
                    .set(d.as_secs_f64());
            }
        }
    }
}
