//! `kill -9` of `batchkv serve` loses no acknowledged write, under every
//! `--appendfsync` policy: a process crash keeps the OS page cache, so a
//! write is safe once it is in the WAL, and the server must not
//! acknowledge it earlier. Clients write (SET, DEL, INCR, APPEND, MSET,
//! SET with an expiry) until the server is killed at a random moment;
//! after a restart every key must hold its last acknowledged value, or,
//! for the one command per client that was in flight, the value that
//! command would have written (MSET all or nothing). Tiny write buffers
//! make flushes and compactions run during the writes.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{serve, wait};

const CLIENTS: usize = 4;
const KEYS_PER_CLIENT: usize = 48;
/// Kill cycles per policy; `BATCHKV_KILL9_CYCLES` sets more for a longer run.
const CYCLES_PER_POLICY: usize = 3;

/// What one client believes the database holds for its keys.
type Model = HashMap<String, Option<Vec<u8>>>;

/// One command: its arguments and the values it leaves its keys with.
struct Op {
    args: Vec<Vec<u8>>,
    effect: Vec<(String, Option<Vec<u8>>)>,
}

fn key(client: usize, k: usize) -> String {
    format!("c{client}:k{k}")
}

fn counter(client: usize) -> String {
    format!("c{client}:n")
}

fn all_keys(client: usize) -> Vec<String> {
    let mut v: Vec<String> = (0..KEYS_PER_CLIENT).map(|k| key(client, k)).collect();
    v.push(counter(client));
    v
}

fn value(rng: &mut StdRng, client: usize, seq: u64) -> Vec<u8> {
    let mut v = format!("{client}-{seq}-").into_bytes();
    let pad = rng.random_range(0..400);
    v.extend(std::iter::repeat_n(b'a' + (seq % 26) as u8, pad));
    v
}

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// A random command over `client`'s keys, given what they hold now.
fn next_op(rng: &mut StdRng, client: usize, seq: u64, model: &Model) -> Op {
    let k = key(client, rng.random_range(0..KEYS_PER_CLIENT));
    match rng.random_range(0..100) {
        0..40 => {
            let v = value(rng, client, seq);
            Op {
                args: vec![bytes("SET"), bytes(&k), v.clone()],
                effect: vec![(k, Some(v))],
            }
        }
        40..50 => {
            // An expiry far in the future: the value must survive too.
            let v = value(rng, client, seq);
            Op {
                args: vec![
                    bytes("SET"),
                    bytes(&k),
                    v.clone(),
                    bytes("EX"),
                    bytes("86400"),
                ],
                effect: vec![(k, Some(v))],
            }
        }
        50..60 => Op {
            args: vec![bytes("DEL"), bytes(&k)],
            effect: vec![(k, None)],
        },
        60..75 => {
            let c = counter(client);
            let now: i64 = match model.get(&c).cloned().flatten() {
                Some(v) => String::from_utf8(v).unwrap().parse().unwrap(),
                None => 0,
            };
            Op {
                args: vec![bytes("INCR"), bytes(&c)],
                effect: vec![(c, Some((now + 1).to_string().into_bytes()))],
            }
        }
        75..88 => {
            let suffix = format!("+{seq}").into_bytes();
            let mut v = model.get(&k).cloned().flatten().unwrap_or_default();
            v.extend_from_slice(&suffix);
            Op {
                args: vec![bytes("APPEND"), bytes(&k), suffix],
                effect: vec![(k, Some(v))],
            }
        }
        _ => {
            let mut args = vec![bytes("MSET")];
            let mut effect = Vec::new();
            for _ in 0..3 {
                let k = key(client, rng.random_range(0..KEYS_PER_CLIENT));
                let v = value(rng, client, seq);
                args.push(bytes(&k));
                args.push(v.clone());
                // A key named twice takes its last value, as in Redis.
                effect.retain(|(e, _): &(String, _)| *e != k);
                effect.push((k, Some(v)));
            }
            Op { args, effect }
        }
    }
}

/// The end of one client's run: its model of acknowledged values and the
/// command that got no reply (if any).
struct ClientEnd {
    model: Model,
    in_flight: Option<Op>,
}

/// Sends random commands until the connection fails (the server was
/// killed); every acknowledged command updates the model.
fn run_client(
    port: u16,
    client: usize,
    seed: u64,
    mut model: Model,
    acked: &AtomicU64,
) -> ClientEnd {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    for seq in 0.. {
        let op = next_op(&mut rng, client, seq, &model);
        let mut cmd = redis::cmd(std::str::from_utf8(&op.args[0]).unwrap());
        for a in &op.args[1..] {
            cmd.arg(a.as_slice());
        }
        match cmd.query::<redis::Value>(&mut con) {
            Ok(redis::Value::ServerError(e)) => panic!("client {client}: {:?}: {e:?}", op.args[0]),
            Ok(_) => {
                for (k, v) in op.effect {
                    model.insert(k, v);
                }
                acked.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                return ClientEnd {
                    model,
                    in_flight: Some(op),
                }
            }
        }
    }
    unreachable!()
}

/// Reads every key of `client` from a restarted server and checks it
/// against the acknowledged model (and the in-flight command's effect);
/// returns what the database holds, the next run's model.
fn verify(con: &mut redis::Connection, client: usize, end: &ClientEnd, ctx: &str) -> Model {
    let keys = all_keys(client);
    let got: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(con).unwrap();
    let got: Model = keys.into_iter().zip(got).collect();
    let new: HashMap<&str, &Option<Vec<u8>>> = end
        .in_flight
        .iter()
        .flat_map(|op| op.effect.iter().map(|(k, v)| (k.as_str(), v)))
        .collect();
    let mut applied = Vec::new();
    for (k, v) in &got {
        let acked = end.model.get(k).cloned().flatten();
        if *v == acked {
            continue;
        }
        match new.get(k.as_str()) {
            Some(n) if **n == *v => applied.push(k.clone()),
            _ => panic!(
                "{ctx}: {k} holds {:?}, acknowledged {:?}, in flight {:?}",
                v.as_deref().map(String::from_utf8_lossy),
                acked.as_deref().map(String::from_utf8_lossy),
                new.get(k.as_str())
                    .map(|n| n.as_deref().map(String::from_utf8_lossy))
            ),
        }
    }
    // An in-flight MSET is all or nothing: if one key shows its value,
    // every key it wrote must (unless that value equals the old one).
    if !applied.is_empty() {
        for (k, v) in &end.in_flight.as_ref().unwrap().effect {
            assert_eq!(&got[k], v, "{ctx}: in-flight command applied in part ({k})");
        }
    }
    got
}

#[test]
fn kill9_loses_no_acknowledged_write_under_any_fsync_policy() {
    let seed: u64 = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} (BATCHKV_SEED)");
    let mut rng = StdRng::seed_from_u64(seed);
    let opts = [
        "--options",
        "write_buffer_size=65536;max_bytes_for_level_base=262144;target_file_size_base=65536",
    ];
    let cycles = std::env::var("BATCHKV_KILL9_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CYCLES_PER_POLICY);
    for policy in ["no", "everysec", "always"] {
        let dir = tempfile::tempdir().unwrap();
        let mut models: Vec<Model> = vec![Model::new(); CLIENTS];
        for cycle in 0..cycles {
            let ctx = format!("seed {seed}, --appendfsync {policy}, cycle {cycle}");
            let mut args = vec!["--appendfsync", policy];
            args.extend(opts);
            let mut server = serve(dir.path(), &args);
            let port = server.port;
            let acked = Arc::new(AtomicU64::new(0));
            let handles: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let model = std::mem::take(&mut models[c]);
                    let acked = acked.clone();
                    let s = rng.random();
                    std::thread::spawn(move || run_client(port, c, s, model, &acked))
                })
                .collect();
            // Kill once the clients are well under way, at a random moment
            // (a client that failed before that ends the wait too).
            let start = Instant::now();
            while acked.load(Ordering::Relaxed) < 200 && !handles.iter().any(|h| h.is_finished()) {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "{ctx}: clients stalled"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(50..400)));
            server.child.kill().unwrap();
            assert!(!wait(&mut server.child).success(), "{ctx}: killed");
            let ends: Vec<ClientEnd> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let n = acked.load(Ordering::Relaxed);
            let mut server = serve(dir.path(), &args);
            let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port))
                .unwrap()
                .get_connection()
                .unwrap();
            for (c, end) in ends.iter().enumerate() {
                models[c] = verify(&mut con, c, end, &ctx);
            }
            eprintln!("{ctx}: {n} acknowledged commands, every one found after kill -9");
            let _: () = redis::cmd("SHUTDOWN").query(&mut con).unwrap_or(());
            assert!(
                wait(&mut server.child).success(),
                "{ctx}: SHUTDOWN exits with status 0"
            );
        }
    }
}
