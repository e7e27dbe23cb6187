//! Issue 27, item 1: `batchkv serve` on a damaged WAL printed only
//! "listening on" and INFO said nothing. Now the default refuses to start
//! (the error names the WAL), and with a salvaging recovery mode INFO
//! persistence shows the last recovery's outcome.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::path::{Path, PathBuf};

use batchkv::WalRecoveryMode;
use batchkv_server::{Config, Server};
use common::{q, Harness};

/// A stopped server's directory whose WAL holds 2,000 SETs, one record
/// each (`--batch off`: a pipeline's SETs are not grouped into one
/// record), so damage drops the records from the damaged one's block on.
fn written() -> tempfile::TempDir {
    let h = Harness::start_with(|c| c.batch = false);
    let mut c = h.conn();
    let mut p = redis::pipe();
    for i in 0..2000 {
        p.cmd("SET")
            .arg(format!("k{i}"))
            .arg("v".repeat(100))
            .ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    drop(c);
    h.stop()
}

fn wal(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap()
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut data = std::fs::read(path).unwrap();
    assert!(data.len() > 64 * 1024, "{} bytes", data.len());
    f(&mut data);
    std::fs::write(path, &data).unwrap();
}

fn config(dir: &Path, mode: Option<WalRecoveryMode>) -> Config {
    let mut cfg = Config::new(dir);
    cfg.threads = 2;
    if let Some(m) = mode {
        cfg.options.wal_recovery_mode = m;
    }
    cfg
}

/// `field:value` of INFO persistence.
fn persistence(server: &Server, field: &str) -> String {
    let mut c = redis::Client::open(format!("redis://{}/", server.addr()))
        .unwrap()
        .get_connection()
        .unwrap();
    let info: String = q(&mut c, &["INFO", "persistence"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .to_string()
}

#[test]
fn damaged_wal_refuses_start_and_salvage_shows_in_info() {
    let dir = written();
    let wal = wal(dir.path());
    edit(&wal, |d| d[40_000] ^= 0x55);

    let e = match Server::start(config(dir.path(), None)) {
        Ok(_) => panic!("served over a damaged WAL"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(&wal.display().to_string()) && e.contains("--wal-recovery"),
        "{e}"
    );

    let server = Server::start(config(dir.path(), Some(WalRecoveryMode::PointInTime))).unwrap();
    assert_eq!(persistence(&server, "wal_recovery_status"), "damaged");
    let dropped: u64 = persistence(&server, "wal_recovery_dropped_records")
        .parse()
        .unwrap();
    assert!(dropped > 0, "{dropped}");
    let copy = persistence(&server, "wal_recovery_lost_copy");
    assert!(copy.ends_with(&format!(
        "lost/{}",
        wal.file_name().unwrap().to_str().unwrap()
    )));
    assert!(Path::new(&copy).exists(), "{copy}");
    let offset: u64 = persistence(&server, "wal_recovery_offset").parse().unwrap();
    assert!((32 * 1024..=40_000).contains(&offset), "{offset}");
    drop(server);
}

#[test]
fn torn_tail_and_clean_recoveries_show_in_info() {
    let dir = written();
    edit(&wal(dir.path()), |d| d.truncate(d.len() - 3));
    let server = Server::start(config(dir.path(), None)).unwrap();
    assert_eq!(
        persistence(&server, "wal_recovery_status"),
        "tail-truncated"
    );
    assert_eq!(persistence(&server, "wal_recovery_dropped_records"), "0");
    assert_eq!(persistence(&server, "wal_recovery_lost_copy"), "");
    drop(server);

    let h = Harness::start();
    assert_eq!(persistence(&h.server, "wal_recovery_status"), "clean");
}
