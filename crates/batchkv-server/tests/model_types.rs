//! Random pipelines over every data type, every reply compared with a model
//! of Redis's semantics: the commands of strings, hashes, sets, sorted sets
//! and lists, the keyspace commands on every type, WRONGTYPE across every
//! pair of types (a few keys, so that types collide), and MULTI/EXEC blocks
//! (EXEC answers each queued command's reply; a command rejected while
//! queuing makes EXEC abort, and DISCARD drops the queue). Batching on and
//! off; the server restarts every 25 pipelines and tiny write buffers push
//! elements through flushes and compactions.
//!
//! `BATCHKV_SEED` replays a run; `BATCHKV_MODEL_PIPELINES` sets its length.
//! `BATCHKV_MODEL_REDIS=redis://127.0.0.1:PORT/` runs the model against
//! that server instead (a real redis-server, to check the model itself:
//! run one test, it FLUSHALLs; set replies are compared sorted there, as
//! Redis answers them in its hash table's order, and without restarts).
//!
//! To add a type: a `Val` variant, its `type_name`, a [`Typed`] impl, and a
//! generator in `Model::command` (a `match` arm calling the `fn
//! <type>_command` of its module).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;
#[path = "model_types/hashes.rs"]
mod hashes;
#[path = "model_types/lists.rs"]
mod lists;
#[path = "model_types/sets.rs"]
mod sets;
#[path = "model_types/strings.rs"]
mod strings;
#[path = "model_types/zsets.rs"]
mod zsets;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use common::{Harness, WRONGTYPE};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A reply as the model predicts it.
#[derive(Clone, Debug, PartialEq)]
enum R {
    Ok,
    Nil,
    Int(i64),
    Bulk(Vec<u8>),
    Status(String),
    Arr(Vec<R>),
    /// A set's members or a hash's fields, in member order: the server's
    /// order (Redis's is its hash table's or insertion order, see
    /// [`observed`]).
    Members(Vec<Vec<u8>>),
    /// A hash's fields and values (flat), in field order (as `Members`).
    FieldValues(Vec<Vec<u8>>),
    Err(String),
    /// A TTL reply: -2 (no key), -1 (no expiry) or 1 (some time left).
    Ttl(i64),
}

fn wrongtype() -> R {
    R::Err(WRONGTYPE.into())
}

fn err(text: &str) -> R {
    R::Err(text.into())
}

type Hash = BTreeMap<Vec<u8>, Vec<u8>>;
type Set = BTreeSet<Vec<u8>>;
/// A sorted set: member → score (never NaN; -0 stored as 0, as Redis's
/// small sorted sets store it).
type ZSet = BTreeMap<Vec<u8>, f64>;
type List = VecDeque<Vec<u8>>;

#[derive(Clone, Debug)]
enum Val {
    Str(Vec<u8>),
    Hash(Hash),
    Set(Set),
    ZSet(ZSet),
    List(List),
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "string",
            Val::Hash(_) => "hash",
            Val::Set(_) => "set",
            Val::ZSet(_) => "zset",
            Val::List(_) => "list",
        }
    }

    /// An empty collection does not exist (Redis deletes the key).
    fn is_empty(&self) -> bool {
        match self {
            Val::Str(_) => false,
            Val::Hash(h) => h.is_empty(),
            Val::Set(s) => s.is_empty(),
            Val::ZSet(z) => z.is_empty(),
            Val::List(l) => l.is_empty(),
        }
    }
}

/// A model type stored in a [`Val`] variant.
trait Typed: Clone + Default {
    /// The value if `v` is of this type.
    fn view(v: &Val) -> Option<&Self>;
    fn wrap(self) -> Val;
}

macro_rules! typed {
    ($t:ty, $variant:ident) => {
        impl Typed for $t {
            fn view(v: &Val) -> Option<&Self> {
                match v {
                    Val::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn wrap(self) -> Val {
                Val::$variant(self)
            }
        }
    };
}
typed!(Vec<u8>, Str);
typed!(Hash, Hash);
typed!(Set, Set);
typed!(ZSet, ZSet);
typed!(List, List);

#[derive(Clone, Debug)]
struct Entry {
    val: Val,
    /// The key has an expiry (always far in the future here).
    ttl: bool,
}

type Db = HashMap<Vec<u8>, Entry>;

/// One command and the reply it must get.
type Step = (Vec<Vec<u8>>, R);

#[derive(Default)]
struct Model {
    dbs: [Db; 2],
    db: usize,
    /// (command's type, key's type) pairs answered WRONGTYPE so far.
    wrongtype_pairs: BTreeSet<(&'static str, &'static str)>,
}

const KEYS: [&str; 5] = ["a", "b", "c", "k:1", "k:22"];
const TYPES: [&str; 5] = ["string", "hash", "set", "zset", "list"];

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn pick<'a>(rng: &mut StdRng, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    b(pick(rng, &KEYS))
}

/// 1 to `max` random picks from `xs` (repeats possible).
fn some_of(rng: &mut StdRng, xs: &[&str], max: usize) -> Vec<Vec<u8>> {
    (0..rng.random_range(1..=max))
        .map(|_| b(pick(rng, xs)))
        .collect()
}

fn cmd(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// `name`, then `rest` (a command with a variable number of arguments).
fn cmd_with(name: &str, first: &[&[u8]], rest: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut args = vec![b(name)];
    args.extend(first.iter().map(|p| p.to_vec()));
    args.extend(rest.iter().cloned());
    args
}

fn int_arg(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

fn as_int(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty()
        || !digits.bytes().all(|c| c.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
        || s == "-0"
    {
        return None;
    }
    s.parse().ok()
}

/// Redis's index range `start..=stop` over `len` items (negative counts
/// from the end) as a half-open range; empty if nothing is selected.
fn rank_range(start: i64, stop: i64, len: usize) -> std::ops::Range<usize> {
    let n = len as i64;
    let start = if start < 0 { n + start } else { start }.max(0);
    let stop = if stop < 0 { n + stop } else { stop };
    if start > stop || start >= n {
        return 0..0;
    }
    start as usize..(stop.min(n - 1) + 1) as usize
}

impl Model {
    fn db(&mut self) -> &mut Db {
        &mut self.dbs[self.db]
    }

    fn entry(&self, k: &[u8]) -> Option<&Entry> {
        self.dbs[self.db].get(k)
    }

    fn type_of(&self, k: &[u8]) -> Option<&'static str> {
        self.entry(k).map(|e| e.val.type_name())
    }

    /// The value at `k` as a `T`: `Ok(None)` if absent, WRONGTYPE if of
    /// another type.
    fn get<T: Typed>(&self, k: &[u8]) -> Result<Option<T>, R> {
        match self.entry(k) {
            None => Ok(None),
            Some(e) => T::view(&e.val).cloned().map(Some).ok_or_else(wrongtype),
        }
    }

    /// Runs `f` on the value at `k` as a `T` (`None` if absent), or
    /// answers WRONGTYPE.
    fn with<T: Typed>(&mut self, k: &[u8], f: impl FnOnce(&mut Self, Option<T>) -> R) -> R {
        match self.get::<T>(k) {
            Err(e) => e,
            Ok(v) => f(self, v),
        }
    }

    /// Stores `v` at `k`, keeping the TTL of the value it updates; an
    /// empty collection deletes the key.
    fn put<T: Typed>(&mut self, k: &[u8], v: T) {
        let ttl = self.entry(k).is_some_and(|e| e.ttl);
        self.set_entry(k, v.wrap(), ttl);
    }

    /// Replaces whatever `k` holds with `v`, a new key (no TTL); an empty
    /// collection deletes the key.
    fn replace<T: Typed>(&mut self, k: &[u8], v: T) {
        self.set_entry(k, v.wrap(), false);
    }

    fn set_entry(&mut self, k: &[u8], val: Val, ttl: bool) {
        if val.is_empty() {
            self.db().remove(k);
        } else {
            self.db().insert(k.to_vec(), Entry { val, ttl });
        }
    }

    /// A random command (or MULTI/EXEC block) and the replies it must get;
    /// applies its effect.
    fn next(&mut self, rng: &mut StdRng) -> Vec<Step> {
        if rng.random_range(0..16) == 0 {
            return self.transaction(rng);
        }
        vec![self.command(rng)]
    }

    /// A random command other than MULTI/EXEC, the reply it must get;
    /// applies its effect.
    fn command(&mut self, rng: &mut StdRng) -> Step {
        let k = key(rng);
        let key_type = self.type_of(&k);
        let (ty, step) = match rng.random_range(0..15) {
            0..=1 => ("string", self.string_command(rng, k)),
            2..=3 => ("hash", self.hash_command(rng, k)),
            4..=6 => ("set", self.set_command(rng, k)),
            7..=9 => ("zset", self.zset_command(rng, k)),
            10..=12 => ("list", self.list_command(rng, k)),
            _ => return self.keyspace_command(rng, k),
        };
        if let (R::Err(e), Some(kt)) = (&step.1, key_type) {
            if e == WRONGTYPE && kt != ty {
                self.wrongtype_pairs.insert((ty, kt));
            }
        }
        step
    }

    /// MULTI, 1 to 5 queued commands, then EXEC (their replies, applied in
    /// order); or DISCARD, or a command rejected while queuing (wrong
    /// arity) so that EXEC aborts: then none of them applies.
    fn transaction(&mut self, rng: &mut StdRng) -> Vec<Step> {
        let saved = (self.dbs.clone(), self.db, self.wrongtype_pairs.clone());
        let n = rng.random_range(1..=5);
        let (discard, reject) = match rng.random_range(0..10) {
            0 => (true, None),
            1 => (false, Some(rng.random_range(0..n))),
            _ => (false, None),
        };
        let mut steps = vec![(cmd(&[b"MULTI"]), R::Ok)];
        let mut replies = Vec::new();
        for i in 0..n {
            if reject == Some(i) {
                let arity = "ERR wrong number of arguments for 'sadd' command";
                steps.push((cmd(&[b"SADD", &key(rng)]), err(arity)));
            }
            let (args, reply) = self.command(rng);
            steps.push((args, R::Status("QUEUED".into())));
            replies.push(reply);
        }
        if discard || reject.is_some() {
            (self.dbs, self.db, self.wrongtype_pairs) = saved;
        }
        steps.push(if discard {
            (cmd(&[b"DISCARD"]), R::Ok)
        } else if reject.is_some() {
            let abort = "EXECABORT Transaction discarded because of previous errors.";
            (cmd(&[b"EXEC"]), err(abort))
        } else {
            (cmd(&[b"EXEC"]), R::Arr(replies))
        });
        steps
    }

    fn keyspace_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let k2 = key(rng);
        let cur = self.entry(&k).cloned();
        match rng.random_range(0..10) {
            0 => {
                let n = i64::from(self.db().remove(&k).is_some());
                let m = if k2 != k {
                    i64::from(self.db().remove(&k2).is_some())
                } else {
                    0
                };
                (cmd(&[b"DEL", &k, &k2]), R::Int(n + m))
            }
            1 => {
                let n = [&k, &k2]
                    .iter()
                    .filter(|x| self.db().contains_key(**x))
                    .count();
                (cmd(&[b"EXISTS", &k, &k2]), R::Int(n as i64))
            }
            2 => (
                cmd(&[b"TYPE", &k]),
                R::Status(cur.as_ref().map_or("none", |e| e.val.type_name()).into()),
            ),
            3 => {
                if let Some(e) = self.db().get_mut(&k) {
                    e.ttl = true;
                }
                (
                    cmd(&[b"EXPIRE", &k, b"100000"]),
                    R::Int(i64::from(cur.is_some())),
                )
            }
            4 => {
                let want = match &cur {
                    None => R::Ttl(-2),
                    Some(e) if !e.ttl => R::Ttl(-1),
                    Some(_) => R::Ttl(1),
                };
                (cmd(&[b"TTL", &k]), want)
            }
            5 => {
                let had = cur.as_ref().is_some_and(|e| e.ttl);
                if let Some(e) = self.db().get_mut(&k) {
                    e.ttl = false;
                }
                (cmd(&[b"PERSIST", &k]), R::Int(i64::from(had)))
            }
            6 => {
                // The value moves with its TTL.
                let want = match cur {
                    None => err("ERR no such key"),
                    Some(e) => {
                        self.db().remove(&k);
                        self.db().insert(k2.clone(), e);
                        R::Ok
                    }
                };
                (cmd(&[b"RENAME", &k, &k2]), want)
            }
            7 => {
                let want = match cur {
                    _ if k == k2 => err("ERR source and destination objects are the same"),
                    None => R::Int(0),
                    Some(_) if self.db().contains_key(&k2) => R::Int(0),
                    Some(e) => {
                        self.db().insert(k2.clone(), e);
                        R::Int(1)
                    }
                };
                (cmd(&[b"COPY", &k, &k2]), want)
            }
            8 => (cmd(&[b"DBSIZE"]), R::Int(self.db().len() as i64)),
            _ => {
                self.db = rng.random_range(0..2);
                (cmd(&[b"SELECT", self.db.to_string().as_bytes()]), R::Ok)
            }
        }
    }
}

/// The server's reply in the model's terms, shaped by the reply `want`
/// expected (a TTL, a set's members; `exact_order`: the members must come
/// in member order, else they are sorted first).
fn observed(reply: redis::RedisResult<redis::Value>, want: &R, exact_order: bool) -> R {
    use redis::Value as V;
    let v = match reply {
        Ok(v) => v,
        Err(e) => {
            return R::Err(match (e.code(), e.detail()) {
                (Some(c), Some(d)) => format!("{c} {d}"),
                _ => e.to_string(),
            })
        }
    };
    match (v, want) {
        (V::Array(items), R::Members(_) | R::FieldValues(_)) => {
            let mut got = Vec::new();
            for i in items {
                match i {
                    V::BulkString(m) => got.push(m),
                    other => return R::Arr(vec![observed(Ok(other), &R::Nil, exact_order)]),
                }
            }
            if let R::FieldValues(_) = want {
                let mut pairs: Vec<&[Vec<u8>]> = got.chunks(2).collect();
                if !exact_order {
                    pairs.sort();
                }
                return R::FieldValues(pairs.concat());
            }
            if !exact_order {
                got.sort();
            }
            R::Members(got)
        }
        (V::Okay, _) => R::Ok,
        (V::Nil, _) => R::Nil,
        (V::Int(n), R::Ttl(_)) => R::Ttl(if n > 0 { 1 } else { n }),
        (V::Int(n), _) => R::Int(n),
        (V::BulkString(b), _) => R::Bulk(b),
        (V::SimpleString(s), _) if s == "OK" => R::Ok,
        (V::SimpleString(s), _) => R::Status(s),
        (V::Array(items), want) => {
            let wants: &[R] = match want {
                R::Arr(w) => w,
                _ => &[],
            };
            R::Arr(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        observed(Ok(item), wants.get(i).unwrap_or(&R::Nil), exact_order)
                    })
                    .collect(),
            )
        }
        (V::ServerError(e), _) => R::Err(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        (other, _) => panic!("unexpected reply {other:?}"),
    }
}

/// Where the model runs: an in-process server it restarts, or (to check
/// the model) an outside server such as a real redis-server.
enum Target {
    Own(Harness),
    Outside(redis::Client),
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn run_model(batch: bool) {
    let seed = env_num("BATCHKV_SEED").unwrap_or_else(rand::random);
    let pipelines = env_num("BATCHKV_MODEL_PIPELINES").unwrap_or(4000) as usize;
    eprintln!("seed {seed} (BATCHKV_SEED), batch {batch}");
    let mut rng = StdRng::seed_from_u64(seed);
    let config = |c: &mut batchkv_server::Config| {
        c.batch = batch;
        c.options
            .apply_option_string("write_buffer_size=16384;target_file_size_base=16384")
            .unwrap();
    };
    let mut target = match std::env::var("BATCHKV_MODEL_REDIS") {
        Ok(url) => Target::Outside(redis::Client::open(url).unwrap()),
        Err(_) => Target::Own(Harness::start_with(config)),
    };
    let exact_order = matches!(target, Target::Own(_));
    let mut con = match &target {
        Target::Own(h) => h.conn(),
        Target::Outside(c) => {
            let mut con = c.get_connection().unwrap();
            redis::cmd("FLUSHALL").exec(&mut con).unwrap();
            con
        }
    };
    let mut model = Model::default();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut history: VecDeque<String> = VecDeque::new();
    for p in 0..pipelines {
        if p % 25 == 24 {
            if let Target::Own(h) = target {
                drop(con);
                let h = h.restart(config);
                con = h.conn();
                target = Target::Own(h);
            } else {
                redis::cmd("SELECT").arg(0).exec(&mut con).unwrap();
            }
            model.db = 0;
            history.push_back("-- restart --".into());
        }
        let mut pipe = redis::pipe();
        let mut want = Vec::new();
        for _ in 0..rng.random_range(1..20) {
            for (args, reply) in model.next(&mut rng) {
                let c = pipe.cmd(std::str::from_utf8(&args[0]).unwrap());
                for a in &args[1..] {
                    c.arg(a.as_slice());
                }
                want.push((args, reply));
            }
        }
        con.send_packed_command(&pipe.get_packed_pipeline())
            .unwrap();
        for (i, (args, reply)) in want.into_iter().enumerate() {
            let got = observed(con.recv_response(), &reply, exact_order);
            let shown: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            history.push_back(format!("{shown:?}"));
            if history.len() > 20 {
                history.pop_front();
            }
            assert_eq!(
                got,
                reply,
                "seed {seed}, batch {batch}, pipeline {p}, command {i}: {shown:?}\nlast commands:\n{}",
                Vec::from(history.clone()).join("\n")
            );
            *counts.entry(shown[0].to_ascii_uppercase()).or_default() += 1;
        }
    }
    let total: usize = counts.values().sum();
    eprintln!("batch {batch}: {total} commands matched the model: {counts:?}");
    eprintln!(
        "WRONGTYPE pairs (command type, key type): {:?}",
        model.wrongtype_pairs
    );
    if pipelines >= 1000 {
        // The generators reach every pair of types (a guard against a
        // generator that stopped colliding types).
        for ty in TYPES {
            for kt in TYPES {
                assert!(
                    ty == kt || model.wrongtype_pairs.contains(&(ty, kt)),
                    "no {ty} command met a {kt} key"
                );
            }
        }
    }
}

#[test]
fn typed_commands_match_the_model_with_batching() {
    run_model(true);
}

#[test]
fn typed_commands_match_the_model_without_batching() {
    run_model(false);
}
