//! Expired keys are deleted in the background (not only hidden); a key
//! whose expiry was replaced by a later SET is kept.

mod common;

use std::time::Duration;

use common::{q, Harness};

#[test]
fn expired_keys_are_deleted_from_the_engine() {
    let h = Harness::start();
    let mut c = h.conn();
    let mut p = redis::pipe();
    for i in 0..50 {
        p.cmd("SET")
            .arg(format!("t{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .ignore();
    }
    for i in 0..10 {
        p.cmd("SET").arg(format!("p{i}")).arg("v").ignore();
    }
    p.cmd("SELECT").arg(4).ignore();
    p.cmd("SET")
        .arg("t-in-4")
        .arg("v")
        .arg("PX")
        .arg(100)
        .ignore();
    // Written with an expiry, then again without: must survive.
    p.cmd("SET")
        .arg("revived")
        .arg("old")
        .arg("PX")
        .arg(100)
        .ignore();
    p.cmd("SET").arg("revived").arg("new").ignore();
    let _: () = p.query(&mut c).unwrap();
    // The sweeper examines a slice every 100 ms.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let info: String = q(&mut c, &["INFO", "stats"]);
        if info.contains("expired_keys:51\r\n") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let info: String = q(&mut c, &["INFO", "stats"]);
    assert!(info.contains("expired_keys:51\r\n"), "{info}");
    drop(c);
    let Harness { server, dir } = h;
    server.shutdown();
    server.join().unwrap();
    let db = batchkv::Db::open(dir.path(), batchkv::Options::default()).unwrap();
    let mut it = db.iter(&batchkv::ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(String::from_utf8_lossy(it.key()).into_owned());
        it.next();
    }
    keys.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("\0p{i}")).collect();
    want.push("\u{4}revived".into());
    want.sort();
    assert_eq!(keys, want);
}
