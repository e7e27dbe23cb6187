//! Bank transfers in transactions, killed with SIGKILL: a child process
//! moves money between accounts from several threads (each transfer one
//! optimistic transaction, retried on conflict; half of the threads commit
//! with `sync`), while a reader thread checks that every snapshot it reads
//! inside a transaction adds up. The parent kills it at a random point,
//! reopens the database and checks that the total never changed, no
//! account is negative, and every acknowledged transfer is there (each
//! thread's transfer counter, written in the same transaction, is at least
//! the last one the child printed). Several kill cycles on one database.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use batchkv::{Db, Options, TransactionOptions, WriteBatch, WriteOptions};
use rand::{Rng, SeedableRng};

const CHILD_DIR: &str = "BATCHKV_BANK_DIR";
const ACCOUNTS: u64 = 20;
const INITIAL: i64 = 1000;
const THREADS: u64 = 4;

fn account(i: u64) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

/// The key of thread `t`'s count of committed transfers.
fn counter(t: u64) -> Vec<u8> {
    format!("done{t}").into_bytes()
}

fn num(v: Option<Vec<u8>>) -> i64 {
    let v = v.expect("key present");
    String::from_utf8(v).unwrap().parse().unwrap()
}

fn opts() -> Options {
    Options {
        // Small memtables: flushes and compactions run while transferring.
        write_buffer_size: 32 * 1024,
        ..common::opts()
    }
}

/// The sum of all accounts as one snapshot sees them.
fn total(db: &Db) -> i64 {
    let keys: Vec<Vec<u8>> = (0..ACCOUNTS).map(account).collect();
    db.transaction()
        .multi_get(&keys)
        .into_iter()
        .map(|r| num(r.unwrap()))
        .sum()
}

/// The child: creates the accounts (one batch) if missing, then transfers
/// until killed, printing `ACK <thread> <count>` after each commit.
#[test]
#[ignore = "child process of the bank kill9 test"]
fn bank_child() {
    let dir = std::env::var(CHILD_DIR).expect("run by the bank kill9 parent test");
    // A failed check in any thread ends the process at once (the parent
    // then sees it stop acknowledging), not just that thread.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("bank_child: {info}");
        std::process::abort();
    }));
    let db = Db::open(&dir, opts()).unwrap();
    if db.get(account(0)).unwrap().is_none() {
        let mut b = WriteBatch::new();
        for a in 0..ACCOUNTS {
            b.put(account(a), INITIAL.to_string());
        }
        for t in 0..THREADS {
            b.put(counter(t), "0");
        }
        let sync = WriteOptions {
            sync: true,
            ..WriteOptions::default()
        };
        db.write(&sync, b).unwrap();
    }
    let out = std::sync::Mutex::new(std::io::stdout());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, out) = (&db, &out);
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(rand::rng().random());
                let opts = TransactionOptions {
                    write_options: WriteOptions {
                        sync: t % 2 == 0,
                        ..WriteOptions::default()
                    },
                };
                loop {
                    let (from, to) = (rng.random_range(0..ACCOUNTS), rng.random_range(0..ACCOUNTS));
                    if from == to {
                        continue;
                    }
                    let amount = rng.random_range(1..50);
                    let done = loop {
                        let mut txn = db.transaction_opt(&opts);
                        let a = num(txn.get_for_update(account(from)).unwrap());
                        let b = num(txn.get_for_update(account(to)).unwrap());
                        let done = num(txn.get_for_update(counter(t)).unwrap()) + 1;
                        if a >= amount {
                            txn.put(account(from), (a - amount).to_string()).unwrap();
                            txn.put(account(to), (b + amount).to_string()).unwrap();
                        }
                        txn.put(counter(t), done.to_string()).unwrap();
                        match txn.commit() {
                            Ok(()) => break done,
                            Err(e) if e.is_conflict() => continue,
                            Err(e) => panic!("commit: {e}"),
                        }
                    };
                    let mut out = out.lock().unwrap();
                    writeln!(out, "ACK {t} {done}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
        // A reader: every snapshot adds up.
        s.spawn(|| loop {
            assert_eq!(total(&db), ACCOUNTS as i64 * INITIAL, "a snapshot's total");
        });
    });
}

/// Starts the child, lets it acknowledge `acks` transfers, kills it;
/// returns the last count acknowledged by each thread.
fn run_and_kill(dir: &std::path::Path, acks: usize) -> [i64; THREADS as usize] {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "bank_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env(common::MEMTABLE_ENV, common::memtable())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut last = [0i64; THREADS as usize];
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (t, n) = rest.split_once(' ').unwrap();
            let (t, n): (usize, i64) = (t.parse().unwrap(), n.parse().unwrap());
            assert!(n > last[t], "thread {t}'s counter went back: {n}");
            last[t] = n;
            seen += 1;
            if seen >= acks {
                break;
            }
        }
    }
    if seen >= acks {
        child.kill().unwrap(); // SIGKILL
    }
    let status = child.wait().unwrap();
    assert!(
        seen >= acks,
        "the child ended after {seen} of {acks} acknowledgements ({status})"
    );
    last
}

#[test]
fn transfers_keep_the_total_across_kill9_and_acknowledged_ones_survive() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut acked = [0i64; THREADS as usize];
    for cycle in 0..4 {
        let last = run_and_kill(dir.path(), rng.random_range(200..1500));
        for t in 0..THREADS as usize {
            acked[t] = acked[t].max(last[t]);
        }
        let db = Db::open(dir.path(), opts()).unwrap();
        assert_eq!(
            total(&db),
            ACCOUNTS as i64 * INITIAL,
            "cycle {cycle}: total"
        );
        for a in 0..ACCOUNTS {
            assert!(
                num(db.get(account(a)).unwrap()) >= 0,
                "cycle {cycle}: account {a}"
            );
        }
        for (t, &n) in acked.iter().enumerate() {
            let done = num(db.get(counter(t as u64)).unwrap());
            assert!(
                done >= n,
                "cycle {cycle}: thread {t} acknowledged {n} transfers, {done} survived"
            );
        }
        // The reopened database takes transactions too.
        let mut txn = db.transaction();
        let a = num(txn.get_for_update(account(0)).unwrap());
        txn.put(account(0), a.to_string()).unwrap();
        txn.commit().unwrap();
        db.close().unwrap();
    }
}
