//! Crashes of `batchkv serve` under writing clients. Four clients send
//! random SET (some with an expiry), DEL, INCR, APPEND and MSET over their
//! own string keys, HSET (several fields), HDEL, HINCRBY and DEL over their
//! own hashes, SADD (several members) and SREM over their sets, ZADD
//! (several members), ZINCRBY and ZREM over their sorted sets, RPUSH
//! (several elements) and LPOP (with a count) over their lists, and
//! MULTI/EXEC transactions of 2 to 6 of these commands, until the server
//! crashes at a random moment; tiny write buffers make flushes and
//! compactions run meanwhile. After a restart each client's keys must hold
//! the state after a prefix of its commands (its acknowledged ones, then
//! the one in flight, whole: an MSET, a many-field HSET or a transaction
//! all or nothing), so recovery neither invents nor reorders writes, and:
//! - after `kill -9` of the process, under every `--appendfsync` policy,
//!   that prefix includes every acknowledged command (a process crash
//!   keeps the page cache, so a write is safe once it is in the WAL, and
//!   the server must not acknowledge it earlier);
//! - after a power loss (an in-process server on a [`FaultInjectionFs`]:
//!   power cut, unsynced data dropped), with `always` it includes every
//!   acknowledged command; with `everysec` and `no` it may be shorter.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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

/// What one client's keys hold (`None`: absent); a collection as its
/// [`encode`]d form.
type State = HashMap<String, Option<Vec<u8>>>;

/// Hashes per client.
const HASHES_PER_CLIENT: usize = 6;
/// Fields a hash's commands choose from.
const FIELDS: usize = 12;

/// Sets, sorted sets and lists per client.
const SETS_PER_CLIENT: usize = 4;
/// Members a set's or a sorted set's commands choose from.
const MEMBERS: usize = 10;
/// Scores (and ZINCRBY increments): binary fractions, so that sums are
/// exact and never -0.
const SCORES: [&str; 5] = ["0", "1.5", "-2", "0.25", "3"];

type Hash = BTreeMap<Vec<u8>, Vec<u8>>;
type Set = BTreeSet<Vec<u8>>;
/// Member → score.
type ZSet = BTreeMap<Vec<u8>, f64>;
type List = VecDeque<Vec<u8>>;

/// A collection's state as bytes: its parts, each length-prefixed;
/// `None` for an empty (deleted) collection.
fn encode<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for part in parts {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
    (!out.is_empty()).then_some(out)
}

/// The parts [`encode`] wrote (none for an absent collection).
fn decode(b: Option<&[u8]>) -> Vec<Vec<u8>> {
    let mut b = b.unwrap_or_default();
    let mut parts = Vec::new();
    while !b.is_empty() {
        let n = u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
        parts.push(b[4..4 + n].to_vec());
        b = &b[4 + n..];
    }
    parts
}

/// A hash as its fields and values in field order.
fn encode_hash(h: &Hash) -> Option<Vec<u8>> {
    encode(h.iter().flat_map(|(f, v)| [&f[..], &v[..]]))
}

fn decode_hash(b: Option<&[u8]>) -> Hash {
    let parts = decode(b);
    parts
        .chunks(2)
        .map(|fv| (fv[0].clone(), fv[1].clone()))
        .collect()
}

/// A set as its members in order.
fn encode_set(s: &Set) -> Option<Vec<u8>> {
    encode(s.iter().map(|m| &m[..]))
}

fn decode_set(b: Option<&[u8]>) -> Set {
    decode(b).into_iter().collect()
}

/// A sorted set as its members in member order, each followed by its
/// score's bits (8 bytes, little-endian).
fn encode_zset(z: &ZSet) -> Option<Vec<u8>> {
    let bits: Vec<[u8; 8]> = z.values().map(|s| s.to_bits().to_le_bytes()).collect();
    encode(z.keys().zip(&bits).flat_map(|(m, s)| [&m[..], &s[..]]))
}

fn decode_zset(b: Option<&[u8]>) -> ZSet {
    let parts = decode(b);
    parts
        .chunks(2)
        .map(|ms| {
            let bits = u64::from_le_bytes(ms[1][..].try_into().unwrap());
            (ms[0].clone(), f64::from_bits(bits))
        })
        .collect()
}

/// A list as its elements in order.
fn encode_list(l: &List) -> Option<Vec<u8>> {
    encode(l.iter().map(|e| &e[..]))
}

fn decode_list(b: Option<&[u8]>) -> List {
    decode(b).into()
}

fn hash_key(client: usize, k: usize) -> String {
    format!("c{client}:h{k}")
}

fn set_key(client: usize, k: usize) -> String {
    format!("c{client}:s{k}")
}

fn zset_key(client: usize, k: usize) -> String {
    format!("c{client}:z{k}")
}

fn list_key(client: usize, k: usize) -> String {
    format!("c{client}:l{k}")
}

/// One command's arguments.
type Args = Vec<Vec<u8>>;

/// One command, or a MULTI/EXEC transaction of several (`cmds`), and the
/// values it leaves its keys with.
struct Op {
    cmds: Vec<Args>,
    effect: Vec<(String, Option<Vec<u8>>)>,
}

impl Op {
    fn one(args: Args, effect: Vec<(String, Option<Vec<u8>>)>) -> Op {
        Op {
            cmds: vec![args],
            effect,
        }
    }

    fn is_transaction(&self) -> bool {
        self.cmds.len() > 1
    }
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
    Op::one(args, vec![(k, encode_hash(&h))])
}

fn member(rng: &mut StdRng) -> Vec<u8> {
    format!("m{}", rng.random_range(0..MEMBERS)).into_bytes()
}

/// A random set command over `client`'s sets: SADD of 1 to 4 members,
/// SREM of 1 or 2, DEL.
fn next_set_op(rng: &mut StdRng, client: usize, now: &State) -> Op {
    let k = set_key(client, rng.random_range(0..SETS_PER_CLIENT));
    let mut s = decode_set(held(now, &k));
    let mut args = Vec::new();
    match rng.random_range(0..100) {
        0..60 => {
            args.extend([bytes("SADD"), bytes(&k)]);
            for _ in 0..rng.random_range(1..5) {
                let m = member(rng);
                s.insert(m.clone());
                args.push(m);
            }
        }
        60..95 => {
            args.extend([bytes("SREM"), bytes(&k)]);
            for _ in 0..rng.random_range(1..3) {
                let m = member(rng);
                s.remove(&m);
                args.push(m);
            }
        }
        _ => {
            s.clear();
            args.extend([bytes("DEL"), bytes(&k)]);
        }
    }
    Op::one(args, vec![(k, encode_set(&s))])
}

/// A random sorted-set command over `client`'s sorted sets: ZADD of 1 to
/// 3 members, ZINCRBY, ZREM.
fn next_zset_op(rng: &mut StdRng, client: usize, now: &State) -> Op {
    let k = zset_key(client, rng.random_range(0..SETS_PER_CLIENT));
    let mut z = decode_zset(held(now, &k));
    let score = |rng: &mut StdRng| SCORES[rng.random_range(0..SCORES.len())];
    let mut args = Vec::new();
    match rng.random_range(0..100) {
        0..50 => {
            args.extend([bytes("ZADD"), bytes(&k)]);
            for _ in 0..rng.random_range(1..4) {
                let (s, m) = (score(rng), member(rng));
                z.insert(m.clone(), s.parse().unwrap());
                args.extend([bytes(s), m]);
            }
        }
        50..75 => {
            let (by, m) = (score(rng), member(rng));
            let old = z.get(&m).copied().unwrap_or(0.0);
            z.insert(m.clone(), old + by.parse::<f64>().unwrap());
            args.extend([bytes("ZINCRBY"), bytes(&k), bytes(by), m]);
        }
        _ => {
            let m = member(rng);
            z.remove(&m);
            args.extend([bytes("ZREM"), bytes(&k), m]);
        }
    }
    Op::one(args, vec![(k, encode_zset(&z))])
}

/// A random list command over `client`'s lists: RPUSH of 1 to 3
/// elements, LPOP with or without a count.
fn next_list_op(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    let k = list_key(client, rng.random_range(0..SETS_PER_CLIENT));
    let mut l = decode_list(held(now, &k));
    let mut args = Vec::new();
    if rng.random_bool(0.5) {
        args.extend([bytes("RPUSH"), bytes(&k)]);
        for i in 0..rng.random_range(1..4) {
            let mut e = value(rng, client, seq);
            e.extend(format!("/{i}").into_bytes());
            l.push_back(e.clone());
            args.push(e);
        }
    } else {
        args.extend([bytes("LPOP"), bytes(&k)]);
        let n = rng.random_range(0..4);
        if n > 0 {
            args.push(n.to_string().into_bytes());
        }
        for _ in 0..n.max(1) {
            l.pop_front();
        }
    }
    Op::one(args, vec![(k, encode_list(&l))])
}

/// A MULTI/EXEC of 2 to 6 random commands (no transaction inside): one
/// op whose effect is each key's value after the last of them.
fn next_transaction(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    let mut state = now.clone();
    let mut cmds = Vec::new();
    let mut effect: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for _ in 0..rng.random_range(2..=6) {
        let op = next_command(rng, client, seq, &state);
        for (k, v) in op.effect {
            state.insert(k.clone(), v.clone());
            effect.retain(|(e, _)| *e != k);
            effect.push((k, v));
        }
        cmds.extend(op.cmds);
    }
    Op { cmds, effect }
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

/// A random command or transaction over `client`'s keys, given what they
/// hold now.
fn next_op(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    if rng.random_bool(0.1) {
        return next_transaction(rng, client, seq, now);
    }
    next_command(rng, client, seq, now)
}

/// A random command over `client`'s keys of any type.
fn next_command(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    match rng.random_range(0..100) {
        0..25 => next_hash_op(rng, client, seq, now),
        25..40 => next_set_op(rng, client, now),
        40..55 => next_zset_op(rng, client, now),
        55..70 => next_list_op(rng, client, seq, now),
        _ => next_string_op(rng, client, seq, now),
    }
}

/// A random command over `client`'s string keys.
fn next_string_op(rng: &mut StdRng, client: usize, seq: u64, now: &State) -> Op {
    let k = key(client, rng.random_range(0..KEYS_PER_CLIENT));
    match rng.random_range(0..100) {
        0..40 => {
            let v = value(rng, client, seq);
            Op::one(vec![bytes("SET"), bytes(&k), v.clone()], vec![(k, Some(v))])
        }
        40..50 => {
            // An expiry far in the future: the value must survive too.
            let v = value(rng, client, seq);
            Op::one(
                vec![
                    bytes("SET"),
                    bytes(&k),
                    v.clone(),
                    bytes("EX"),
                    bytes("86400"),
                ],
                vec![(k, Some(v))],
            )
        }
        50..60 => Op::one(vec![bytes("DEL"), bytes(&k)], vec![(k, None)]),
        60..75 => {
            let c = counter(client);
            let n: i64 =
                held(now, &c).map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
            Op::one(
                vec![bytes("INCR"), bytes(&c)],
                vec![(c, Some((n + 1).to_string().into_bytes()))],
            )
        }
        75..88 => {
            let suffix = format!("+{seq}").into_bytes();
            let mut v = held(now, &k).unwrap_or_default().to_vec();
            v.extend_from_slice(&suffix);
            Op::one(vec![bytes("APPEND"), bytes(&k), suffix], vec![(k, Some(v))])
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
            Op::one(args, effect)
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

/// Sends `op` (a transaction as MULTI, its commands, EXEC, in one write)
/// and reads its reply (a transaction's: EXEC's).
fn send(con: &mut redis::Connection, op: &Op) -> redis::RedisResult<redis::Value> {
    let mut pipe = redis::pipe();
    if op.is_transaction() {
        pipe.atomic();
    }
    for args in &op.cmds {
        let c = pipe.cmd(std::str::from_utf8(&args[0]).unwrap());
        for a in &args[1..] {
            c.arg(a.as_slice());
        }
    }
    pipe.query::<redis::Value>(con)
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
        match send(&mut con, &op) {
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
                    panic!("client {client}: {:?}: {e}", op.cmds);
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
    for k in 0..SETS_PER_CLIENT {
        let (s, z, l) = (set_key(client, k), zset_key(client, k), list_key(client, k));
        let members: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(&s).query(con).unwrap();
        state.insert(s, encode_set(&members.into_iter().collect()));
        let scored: Vec<(Vec<u8>, String)> = redis::cmd("ZRANGE")
            .arg(&z)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap();
        let scored: ZSet = scored
            .into_iter()
            .map(|(m, s)| (m, s.parse().unwrap()))
            .collect();
        state.insert(z, encode_zset(&scored));
        let elems: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&l)
            .arg(0)
            .arg(-1)
            .query(con)
            .unwrap();
        state.insert(l, encode_list(&elems.into_iter().collect()));
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
    let (mut acked_total, mut lost_total, mut tx_total) = (0, 0, 0);
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
            tx_total += run.acked.iter().filter(|op| op.is_transaction()).count();
            lost_total += run.acked.len().saturating_sub(n);
            states[c] = got;
        }
        drop(con);
        server.stop();
    }
    eprintln!(
        "{ctx}: {acked_total} commands acknowledged ({tx_total} of them transactions), \
         {lost_total} of them lost"
    );
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
