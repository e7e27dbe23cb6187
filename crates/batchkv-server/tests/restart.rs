//! Data survives a restart under every appendfsync policy, including
//! values with an expiry.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use batchkv_server::AppendFsync;
use common::{q, Harness};

#[test]
fn restart_keeps_data_under_every_fsync_policy() {
    for policy in [AppendFsync::Always, AppendFsync::EverySec, AppendFsync::No] {
        let h = Harness::start_with(|c| c.appendfsync = policy);
        let mut c = h.conn();
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("SET")
                .arg(format!("k{i}"))
                .arg(format!("v{i}"))
                .ignore();
        }
        p.cmd("SELECT").arg("7").ignore();
        p.cmd("SET")
            .arg("in7")
            .arg("x")
            .arg("EX")
            .arg("1000")
            .ignore();
        p.cmd("SET")
            .arg("gone")
            .arg("x")
            .arg("PX")
            .arg("1")
            .ignore();
        let _: () = p.query(&mut c).unwrap();
        let _: i64 = q(&mut c, &["INCR", "n"]);
        drop(c);
        let h = h.restart(|c| c.appendfsync = policy);
        let mut c = h.conn();
        let keys: Vec<String> = (0..500).map(|i| format!("k{i}")).collect();
        let got: Vec<String> = redis::cmd("MGET").arg(&keys).query(&mut c).unwrap();
        let want: Vec<String> = (0..500).map(|i| format!("v{i}")).collect();
        assert_eq!(got, want, "{policy:?}");
        let _: () = q(&mut c, &["SELECT", "7"]);
        assert_eq!(q::<String>(&mut c, &["GET", "in7"]), "x");
        assert!(q::<i64>(&mut c, &["TTL", "in7"]) > 900);
        assert_eq!(q::<Option<String>>(&mut c, &["GET", "gone"]), None);
        assert_eq!(q::<i64>(&mut c, &["GET", "n"]), 1);
        // DBSIZE counts keys active expiry has not deleted yet, as Redis's
        // does: `gone` leaves once the sweeper reaches it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while q::<i64>(&mut c, &["DBSIZE"]) != 2 {
            assert!(std::time::Instant::now() < deadline, "DBSIZE stays above 2");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn everysec_syncs_the_wal_in_the_background() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "k", "v"]);
    std::thread::sleep(std::time::Duration::from_millis(1300));
    let info: String = q(&mut c, &["INFO", "persistence"]);
    assert!(info.contains("appendfsync:everysec"), "{info}");
    assert!(!info.contains("wal_syncs:0\r\n"), "{info}");
}
