//! Crashes of `batchkv serve` under writing clients. Four clients send
//! random SET (some with an expiry), DEL, INCR, APPEND and MSET over their
//! own string keys, and HSET (several fields), HDEL, HINCRBY and DEL over
//! their own hashes, until the server crashes at a random moment; tiny
//! write buffers make flushes and compactions run meanwhile. After a
//! restart each client's keys must hold the state after a prefix of its
//! commands (its acknowledged ones, then the one in flight, whole: an MSET
//! or a many-field HSET all or nothing), so recovery neither invents nor
//! reorders writes, and:
//! - after `kill -9` of the process, under every `--appendfsync` policy,
//!   that prefix includes every acknowledged command (a process crash
//!   keeps the page cache, so a write is safe once it is in the WAL, and
//!   the server must not acknowledge it earlier);
//! - after a power loss (an in-process server on a [`FaultInjectionFs`]:
//!   power cut, unsynced data dropped), with `always` it includes every
//!   acknowledged command; with `everysec` and `no` it may be shorter.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use batchkv::{FaultInjectionFs, PosixFs};
use batchkv_server::{AppendFsync, Config, Server};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{serve, wait, Served};

const CLIENTS: usize = 4;
const KEYS_PER_CLIENT: usize = 48;
/// Crash cycles per policy; `BATCHKV_CRASH_CYCLES` sets more for a longer
/// run.
const CYCLES_PER_POLICY: usize = 3;
/// Engine options for both kinds of server: flushes and compactions every
/// few hundred commands.
const SMALL_BUFFERS: &str =
    "write_buffer_size=65536;max_bytes_for_level_base=262144;target_file_size_base=65536";

/// What one client's keys hold (`None`: absent); a hash as its
/// [`encode_hash`] form.
type State = HashMap<String, Option<Vec<u8>>>;

/// Hashes per client.
const HASHES_PER_CLIENT: usize = 6;
/// Fields a hash's commands choose from.
const FIELDS: usize = 12;

type Hash = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

/// A hash's state as bytes (fields in order, each field and value
/// length-prefixed); `None` for an empty (deleted) hash.
fn encode_hash(h: &Hash) -> Option<Vec<u8>> {
    if h.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for (f, v) in h {
        for part in [f, v] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    Some(out)
}

fn decode_hash(b: Option<&[u8]>) -> Hash {
    let mut h = Hash::new();
    let mut b = b.unwrap_or_default();
    let take = |b: &mut &[u8]| {
        let n = u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
        let part = b[4..4 + n].to_vec();
        *b = &b[4 + n..];
        part
    };
    while !b.is_empty() {
        let f = take(&mut b);
        let v = take(&mut b);
        h.insert(f, v);
    }
    h
}

fn hash_key(client: usize, k: usize) -> String {
    format!("c{client}:h{k}")
}

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

/// The client's string keys (its hashes are [`hash_key`]).
fn all_keys(client: usize) -> Vec<String> {
    let mut v: Vec<String> = (0..KEYS_PER_CLIENT).map(|k| key(client, k)).collect();
    v.push(counter(client));
    v
}

/// A random hash command over `client`'s hashes.
fn next_hash_op(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    let k = hash_key(client, rng.random_range(0..HASHES_PER_CLIENT));
    let mut h = decode_hash(held(now, &k));
    let field = |rng: &mut StdRng| format!("f{}", rng.random_range(0..FIELDS)).into_bytes();
    let mut args = Vec::new();
    match rng.random_range(0..100) {
        0..50 => {
            args.extend([bytes("HSET"), bytes(&k)]);
            for _ in 0..rng.random_range(1..5) {
                let (f, v) = (field(rng), value(rng, client, seq));
                h.insert(f.clone(), v.clone());
                args.extend([f, v]);
            }
        }
        50..70 => {
            let f = field(rng);
            h.remove(&f);
            args.extend([bytes("HDEL"), bytes(&k), f]);
        }
        70..90 => {
            // Counters live in their own field, so HINCRBY never meets text.
            let f = bytes("n");
            let n: i64 = h
                .get(&f)
                .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
            h.insert(f.clone(), (n + 1).to_string().into_bytes());
            args.extend([bytes("HINCRBY"), bytes(&k), f, bytes("1")]);
        }
        _ => {
            h.clear();
            args.extend([bytes("DEL"), bytes(&k)]);
        }
    }
    Op {
        args,
        effect: vec![(k, encode_hash(&h))],
    }
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

fn held<'a>(state: &'a State, k: &str) -> Option<&'a [u8]> {
    state.get(k).and_then(|v| v.as_deref())
}

/// A random command over `client`'s keys, given what they hold now.
fn next_op(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    if rng.random_bool(0.3) {
        return next_hash_op(rng, client, seq, now);
    }
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
            let n: i64 =
                held(now, &c).map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
            Op {
                args: vec![bytes("INCR"), bytes(&c)],
                effect: vec![(c, Some((n + 1).to_string().into_bytes()))],
            }
        }
        75..88 => {
            let suffix = format!("+{seq}").into_bytes();
            let mut v = held(now, &k).unwrap_or_default().to_vec();
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

/// One client's commands in one cycle: the state its keys started from,
/// the acknowledged commands in order, and the one that got no reply.
struct ClientRun {
    start: State,
    acked: Vec<Op>,
    in_flight: Option<Op>,
}

/// How the clients learn that the server is going away.
struct Signals {
    /// Acknowledged commands, all clients.
    acked: AtomicU64,
    /// Error replies are expected (the power is being cut); before that an
    /// error reply fails the test.
    errors_expected: AtomicBool,
}

/// Sends random commands until the connection fails or, once expected,
/// an error reply comes.
fn run_client(port: u16, client: usize, seed: u64, start: State, sig: &Signals) -> ClientRun {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    con.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut now = start.clone();
    let mut acked = Vec::new();
    for seq in 0.. {
        let op = next_op(&mut rng, client, seq, &now);
        let mut cmd = redis::cmd(std::str::from_utf8(&op.args[0]).unwrap());
        for a in &op.args[1..] {
            cmd.arg(a.as_slice());
        }
        match cmd.query::<redis::Value>(&mut con) {
            Ok(_) => {
                for (k, v) in &op.effect {
                    now.insert(k.clone(), v.clone());
                }
                acked.push(op);
                sig.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let lost_server = e.is_io_error() || e.is_connection_dropped();
                if !lost_server && !sig.errors_expected.load(Ordering::Relaxed) {
                    panic!("client {client}: {:?}: {e}", op.args[0]);
                }
                return ClientRun {
                    start,
                    acked,
                    in_flight: Some(op),
                };
            }
        }
    }
    unreachable!()
}

/// The longest prefix of `run`'s commands (acknowledged ones, then the
/// one in flight) after which the client's keys hold `got`, if any does.
fn surviving_prefix(run: &ClientRun, got: &State) -> Option<usize> {
    let mut now = run.start.clone();
    let differs = |now: &State, k: &str| held(now, k) != held(got, k);
    let mut mismatched = got.keys().filter(|k| differs(&now, k)).count();
    let mut longest = (mismatched == 0).then_some(0);
    for (i, op) in run.acked.iter().chain(&run.in_flight).enumerate() {
        for (k, v) in &op.effect {
            let before = differs(&now, k);
            now.insert(k.clone(), v.clone());
            let after = differs(&now, k);
            mismatched = mismatched + after as usize - before as usize;
        }
        if mismatched == 0 {
            longest = Some(i + 1);
        }
    }
    longest
}

fn read_keys(con: &mut redis::Connection, client: usize) -> State {
    let keys = all_keys(client);
    let got: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(con).unwrap();
    let mut state: State = keys.into_iter().zip(got).collect();
    for k in (0..HASHES_PER_CLIENT).map(|k| hash_key(client, k)) {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL").arg(&k).query(con).unwrap();
        state.insert(k, encode_hash(&pairs.into_iter().collect()));
    }
    state
}

/// A running server the test can crash.
trait Crashable {
    fn port(&self) -> u16;
    /// Crashes it; when this returns, its clients' connections are gone.
    fn crash(self, sig: &Signals);
    /// Stops it cleanly.
    fn stop(self);
}

/// `batchkv serve` as a process, crashed with SIGKILL.
impl Crashable for Served {
    fn port(&self) -> u16 {
        self.port
    }

    fn crash(mut self, _: &Signals) {
        self.child.kill().unwrap();
        assert!(!wait(&mut self.child).success(), "killed");
    }

    fn stop(mut self) {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap();
        // A successful SHUTDOWN closes the connection without a reply.
        let _ = redis::cmd("SHUTDOWN").query::<()>(&mut con);
        assert!(wait(&mut self.child).success(), "SHUTDOWN exits with 0");
    }
}

/// An in-process server on a fault-injecting filesystem, crashed by
/// cutting the power.
struct PoweredServer {
    server: Server,
    fs: FaultInjectionFs,
}

impl Crashable for PoweredServer {
    fn port(&self) -> u16 {
        self.server.addr().port()
    }

    fn crash(self, sig: &Signals) {
        sig.errors_expected.store(true, Ordering::Relaxed);
        self.fs.power_off();
        // Every later write fails; shutting down closes the connections
        // (its WAL sync and the database's close fail too, and may say so).
        self.server.shutdown();
        let _ = self.server.join();
        self.fs.lose_unsynced_data().unwrap();
    }

    fn stop(self) {
        self.server.shutdown();
        self.server.join().unwrap();
    }
}

fn seed() -> u64 {
    let seed = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} (BATCHKV_SEED)");
    seed
}

fn cycles() -> usize {
    std::env::var("BATCHKV_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CYCLES_PER_POLICY)
}

/// Rounds of: `start` a server, let the clients write, crash it at a
/// random moment, `start` it again and check every client's keys; with
/// `keeps_acked`, every acknowledged command must have survived.
fn crash_cycles<S: Crashable>(
    ctx: &str,
    rng: &mut StdRng,
    keeps_acked: bool,
    mut start: impl FnMut() -> S,
) {
    let mut states: Vec<State> = vec![State::new(); CLIENTS];
    let (mut acked_total, mut lost_total) = (0, 0);
    for cycle in 0..cycles() {
        let ctx = format!("{ctx}, cycle {cycle}");
        let server = start();
        let port = server.port();
        let sig = Arc::new(Signals {
            acked: AtomicU64::new(0),
            errors_expected: AtomicBool::new(false),
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let start = std::mem::take(&mut states[c]);
                let sig = sig.clone();
                let seed = rng.random();
                std::thread::spawn(move || run_client(port, c, seed, start, &sig))
            })
            .collect();
        // Crash once the clients are well under way, at a random moment
        // (a client that failed before that ends the wait too).
        let t = Instant::now();
        while sig.acked.load(Ordering::Relaxed) < 200 && !clients.iter().any(|h| h.is_finished()) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{ctx}: clients stalled"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(50..400)));
        server.crash(&sig);
        let runs: Vec<ClientRun> = clients.into_iter().map(|h| h.join().unwrap()).collect();
        let server = start();
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port()))
            .unwrap()
            .get_connection()
            .unwrap();
        for (c, run) in runs.iter().enumerate() {
            let got = read_keys(&mut con, c);
            let Some(n) = surviving_prefix(run, &got) else {
                panic!("{ctx}: client {c}'s keys match no prefix of its commands: {got:?}");
            };
            assert!(
                !keeps_acked || n >= run.acked.len(),
                "{ctx}: client {c}: {} commands acknowledged, only {n} survived",
                run.acked.len()
            );
            acked_total += run.acked.len();
            lost_total += run.acked.len().saturating_sub(n);
            states[c] = got;
        }
        drop(con);
        server.stop();
    }
    eprintln!("{ctx}: {acked_total} commands acknowledged, {lost_total} of them lost");
}

#[test]
fn kill9_loses_no_acknowledged_write_under_any_fsync_policy() {
    let seed = seed();
    let mut rng = StdRng::seed_from_u64(seed);
    for policy in ["no", "everysec", "always"] {
        let dir = tempfile::tempdir().unwrap();
        let args = ["--appendfsync", policy, "--options", SMALL_BUFFERS];
        let ctx = format!("seed {seed}, kill -9, --appendfsync {policy}");
        crash_cycles(&ctx, &mut rng, true, || serve(dir.path(), &args));
    }
}

#[test]
fn power_loss_keeps_every_acknowledged_write_with_appendfsync_always() {
    let seed = seed();
    let mut rng = StdRng::seed_from_u64(seed);
    for policy in [AppendFsync::Always, AppendFsync::EverySec, AppendFsync::No] {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultInjectionFs::new(Arc::new(PosixFs));
        let mut cfg = Config::new(dir.path());
        cfg.appendfsync = policy;
        cfg.threads = 2;
        cfg.options.apply_option_string(SMALL_BUFFERS).unwrap();
        let ctx = format!("seed {seed}, power loss, --appendfsync {}", policy.as_str());
        crash_cycles(&ctx, &mut rng, policy == AppendFsync::Always, || {
            PoweredServer {
                server: Server::start_with_fs(cfg.clone(), Arc::new(fs.clone())).unwrap(),
                fs: fs.clone(),
            }
        });
    }
}
