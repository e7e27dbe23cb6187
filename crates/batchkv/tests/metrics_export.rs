//! `Db::export_metrics()` (feature `metrics`) publishes the statistics
//! through the `metrics` facade: checked with metrics-util's debugging
//! recorder (`cargo test -p batchkv --features metrics --test
//! metrics_export`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "metrics")]
mod common;

use batchkv::{Db, ReadOptions};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[test]
fn export_publishes_counters_gauges_and_latency_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::opts()).unwrap();
    for i in 0..20u64 {
        db.put(common::key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    for i in 0..7u64 {
        db.get(common::key(i)).unwrap();
    }
    db.multi_get(&ReadOptions::default(), &[common::key(1), common::key(2)]);

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || db.export_metrics());
    let found = snapshotter.snapshot().into_vec();
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<&DebugValue> {
        found.iter().find_map(|(k, _, _, v)| {
            let key = k.key();
            let matches = key.name() == name
                && labels.iter().all(|(l, want)| {
                    key.labels()
                        .any(|lab| lab.key() == *l && lab.value() == *want)
                });
            matches.then_some(v)
        })
    };
    assert_eq!(value("batchkv.gets", &[]), Some(&DebugValue::Counter(7)));
    assert_eq!(
        value("batchkv.keys_written", &[]),
        Some(&DebugValue::Counter(20))
    );
    assert_eq!(value("batchkv.flushes", &[]), Some(&DebugValue::Counter(1)));
    assert_eq!(
        value("batchkv.latency_count", &[("op", "multi_get_per_key")]),
        Some(&DebugValue::Counter(2))
    );
    match value("batchkv.files", &[("level", "0")]) {
        Some(DebugValue::Gauge(f)) => assert_eq!(f.into_inner(), 1.0),
        other => panic!("batchkv.files{{level=0}}: {other:?}"),
    }
    let (p50, max) = match (
        value("batchkv.latency", &[("op", "get"), ("quantile", "0.5")]),
        value("batchkv.latency", &[("op", "get"), ("quantile", "1")]),
    ) {
        (Some(DebugValue::Gauge(a)), Some(DebugValue::Gauge(b))) => {
            (a.into_inner(), b.into_inner())
        }
        other => panic!("get latency gauges: {other:?}"),
    };
    assert!(p50 > 0.0 && p50 <= max && max < 10.0, "p50 {p50} max {max}");
    db.close().unwrap();
}
