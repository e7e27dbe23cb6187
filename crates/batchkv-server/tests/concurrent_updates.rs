//! Read-modify-write commands from many clients lose no update.

mod common;

use common::{q, Harness};

#[test]
fn concurrent_incr_append_setnx_lose_nothing() {
    const CLIENTS: usize = 16;
    const ROUNDS: usize = 200;
    let h = Harness::start();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let client = h.client();
            std::thread::spawn(move || {
                let mut c = client.get_connection().unwrap();
                let mut won = 0;
                for i in 0..ROUNDS {
                    let _: i64 = q(&mut c, &["INCR", "counter"]);
                    let _: i64 = q(&mut c, &["INCRBY", "by3", "3"]);
                    let _: i64 = q(&mut c, &["APPEND", "log", "x"]);
                    won += q::<i64>(&mut c, &["SETNX", &format!("lock{i}"), &t.to_string()]);
                    // Plain writes to the counter's neighbours must not
                    // interfere.
                    let _: () = q(&mut c, &["SET", &format!("other{t}"), "v"]);
                }
                won
            })
        })
        .collect();
    let won: i64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let mut c = h.conn();
    let total = (CLIENTS * ROUNDS) as i64;
    assert_eq!(q::<i64>(&mut c, &["GET", "counter"]), total);
    assert_eq!(q::<i64>(&mut c, &["GET", "by3"]), 3 * total);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "log"]), total);
    assert_eq!(won, ROUNDS as i64, "exactly one SETNX wins per key");
}

#[test]
fn concurrent_msetnx_and_rename_stay_consistent() {
    let h = Harness::start();
    let mut c = h.conn();
    let _: () = q(&mut c, &["SET", "token", "1"]);
    // Clients pass one token around by RENAME: it must exist exactly once.
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let client = h.client();
            std::thread::spawn(move || {
                let mut c = client.get_connection().unwrap();
                for i in 0..100 {
                    let from = if (i + t) % 2 == 0 { "token" } else { "token2" };
                    let to = if from == "token" { "token2" } else { "token" };
                    let _ = redis::cmd("RENAME").arg(from).arg(to).query::<()>(&mut c);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "token", "token2"]), 1);
}
