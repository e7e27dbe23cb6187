//! Random pipelines over every data type, every reply compared with a model
//! of Redis's semantics: the commands of each type, the keyspace commands
//! on every type, and WRONGTYPE across every pair of types (a few keys, so
//! that types collide). Batching on and off; the server restarts every 25
//! pipelines and tiny write buffers push elements through flushes and
//! compactions. `BATCHKV_SEED` replays a run; `BATCHKV_MODEL_PIPELINES`
//! sets its length.
//!
//! To add a type: a `Val` variant, its `type_name`, and a generator in
//! `Model::next` (a `match` arm calling a `fn <type>_command`).

mod common;

use std::collections::{BTreeMap, HashMap};

use common::Harness;
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
    Err(String),
    /// A TTL reply: -2 (no key), -1 (no expiry) or 1 (some time left).
    Ttl(i64),
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

type Hash = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Val {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "string",
            Val::Hash(_) => "hash",
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    val: Val,
    /// The key has an expiry (always far in the future here).
    ttl: bool,
}

#[derive(Default)]
struct Model {
    dbs: [HashMap<Vec<u8>, Entry>; 2],
    db: usize,
}

const KEYS: [&str; 5] = ["a", "b", "c", "k:1", "k:22"];
const FIELDS: [&str; 6] = ["f", "g", "h", "field:long", "", "1"];
const VALUES: [&str; 7] = ["", "1", "-5", "12", "abc", "3.5", "9223372036854775807"];

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn pick<'a>(rng: &mut StdRng, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

fn cmd(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
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

impl Model {
    fn db(&mut self) -> &mut HashMap<Vec<u8>, Entry> {
        &mut self.dbs[self.db]
    }

    /// A random command, the reply it must get; applies its effect.
    fn next(&mut self, rng: &mut StdRng) -> (Vec<Vec<u8>>, R) {
        let k = b(pick(rng, &KEYS));
        match rng.random_range(0..10) {
            0..=1 => self.string_command(rng, k),
            2..=5 => self.hash_command(rng, k),
            _ => self.keyspace_command(rng, k),
        }
    }

    fn string_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> (Vec<Vec<u8>>, R) {
        let v = b(pick(rng, &VALUES));
        let cur = self.db().get(&k).cloned();
        match rng.random_range(0..4) {
            0 => {
                let want = match &cur {
                    None => R::Nil,
                    Some(Entry {
                        val: Val::Str(s), ..
                    }) => R::Bulk(s.clone()),
                    Some(_) => R::Err(WRONGTYPE.into()),
                };
                (cmd(&[b"GET", &k]), want)
            }
            1 => {
                // SET replaces any type and clears the TTL.
                self.db().insert(
                    k.clone(),
                    Entry {
                        val: Val::Str(v.clone()),
                        ttl: false,
                    },
                );
                (cmd(&[b"SET", &k, &v]), R::Ok)
            }
            2 => match cur {
                Some(Entry {
                    val: Val::Str(mut s),
                    ttl,
                }) => {
                    s.extend_from_slice(&v);
                    let n = s.len() as i64;
                    self.db().insert(
                        k.clone(),
                        Entry {
                            val: Val::Str(s),
                            ttl,
                        },
                    );
                    (cmd(&[b"APPEND", &k, &v]), R::Int(n))
                }
                None => {
                    self.db().insert(
                        k.clone(),
                        Entry {
                            val: Val::Str(v.clone()),
                            ttl: false,
                        },
                    );
                    (cmd(&[b"APPEND", &k, &v]), R::Int(v.len() as i64))
                }
                Some(_) => (cmd(&[b"APPEND", &k, &v]), R::Err(WRONGTYPE.into())),
            },
            _ => {
                // MGET answers nil for keys of other types.
                let k2 = b(pick(rng, &KEYS));
                let one = |e: Option<&Entry>| match e {
                    Some(Entry {
                        val: Val::Str(s), ..
                    }) => R::Bulk(s.clone()),
                    _ => R::Nil,
                };
                let want = R::Arr(vec![one(self.db().get(&k)), one(self.db().get(&k2))]);
                (cmd(&[b"MGET", &k, &k2]), want)
            }
        }
    }

    /// The hash at `k`: `Ok(None)` if absent, `Err` if another type.
    fn hash(&mut self, k: &[u8]) -> Result<Option<Hash>, R> {
        match self.db().get(k) {
            None => Ok(None),
            Some(Entry {
                val: Val::Hash(h), ..
            }) => Ok(Some(h.clone())),
            Some(_) => Err(R::Err(WRONGTYPE.into())),
        }
    }

    /// Stores hash `h` at `k` (deleting the key when empty), keeping the
    /// TTL of the hash it replaces.
    fn store_hash(&mut self, k: &[u8], h: BTreeMap<Vec<u8>, Vec<u8>>) {
        let ttl = self.db().get(k).is_some_and(|e| e.ttl);
        if h.is_empty() {
            self.db().remove(k);
        } else {
            self.db().insert(
                k.to_vec(),
                Entry {
                    val: Val::Hash(h),
                    ttl,
                },
            );
        }
    }

    fn hash_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> (Vec<Vec<u8>>, R) {
        let f = b(pick(rng, &FIELDS));
        let v = b(pick(rng, &VALUES));
        let cur = self.hash(&k);
        let fields = |rng: &mut StdRng| -> Vec<Vec<u8>> {
            (0..rng.random_range(1..5))
                .map(|_| b(pick(rng, &FIELDS)))
                .collect()
        };
        match rng.random_range(0..10) {
            0 | 1 => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = fields(rng)
                    .into_iter()
                    .map(|f| (f, b(pick(rng, &VALUES))))
                    .collect();
                let mut args = vec![b("HSET"), k.clone()];
                for (f, v) in &pairs {
                    args.push(f.clone());
                    args.push(v.clone());
                }
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => {
                        let mut h = h.unwrap_or_default();
                        let mut added = 0;
                        for (f, v) in pairs {
                            added += i64::from(h.insert(f, v).is_none());
                        }
                        self.store_hash(&k, h);
                        R::Int(added)
                    }
                };
                (args, want)
            }
            2 => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => h.and_then(|h| h.get(&f).cloned()).map_or(R::Nil, R::Bulk),
                };
                (cmd(&[b"HGET", &k, &f]), want)
            }
            3 => {
                let fs = fields(rng);
                let mut args = vec![b("HMGET"), k.clone()];
                args.extend(fs.iter().cloned());
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => {
                        let h = h.unwrap_or_default();
                        R::Arr(
                            fs.iter()
                                .map(|f| h.get(f).cloned().map_or(R::Nil, R::Bulk))
                                .collect(),
                        )
                    }
                };
                (args, want)
            }
            4 => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => R::Arr(
                        h.unwrap_or_default()
                            .into_iter()
                            .flat_map(|(f, v)| [R::Bulk(f), R::Bulk(v)])
                            .collect(),
                    ),
                };
                (cmd(&[b"HGETALL", &k]), want)
            }
            5 => {
                let fs = fields(rng);
                let mut args = vec![b("HDEL"), k.clone()];
                args.extend(fs.iter().cloned());
                let want = match cur {
                    Err(e) => e,
                    Ok(None) => R::Int(0),
                    Ok(Some(mut h)) => {
                        let n = fs.iter().filter(|f| h.remove(*f).is_some()).count();
                        self.store_hash(&k, h);
                        R::Int(n as i64)
                    }
                };
                (args, want)
            }
            6 => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => R::Int(h.map_or(0, |h| h.len() as i64)),
                };
                (cmd(&[b"HLEN", &k]), want)
            }
            7 => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => {
                        let mut h = h.unwrap_or_default();
                        match h.get(&f).map(|v| as_int(v)) {
                            Some(None) => R::Err("ERR hash value is not an integer".into()),
                            old => match old.flatten().unwrap_or(0).checked_add(3) {
                                None => R::Err("ERR increment or decrement would overflow".into()),
                                Some(n) => {
                                    h.insert(f.clone(), n.to_string().into_bytes());
                                    self.store_hash(&k, h);
                                    R::Int(n)
                                }
                            },
                        }
                    }
                };
                (cmd(&[b"HINCRBY", &k, &f, b"3"]), want)
            }
            8 => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => {
                        let mut h = h.unwrap_or_default();
                        if h.contains_key(&f) {
                            R::Int(0)
                        } else {
                            h.insert(f.clone(), v.clone());
                            self.store_hash(&k, h);
                            R::Int(1)
                        }
                    }
                };
                (cmd(&[b"HSETNX", &k, &f, &v]), want)
            }
            _ => {
                let want = match cur {
                    Err(e) => e,
                    Ok(h) => R::Arr(h.unwrap_or_default().into_keys().map(R::Bulk).collect()),
                };
                (cmd(&[b"HKEYS", &k]), want)
            }
        }
    }

    fn keyspace_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> (Vec<Vec<u8>>, R) {
        let k2 = b(pick(rng, &KEYS));
        let cur = self.db().get(&k).cloned();
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
                let want = match cur {
                    None => R::Err("ERR no such key".into()),
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
                    _ if k == k2 => {
                        R::Err("ERR source and destination objects are the same".into())
                    }
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

/// The server's reply in the model's terms (`ttl`: it answers TTL).
fn observed(reply: redis::RedisResult<redis::Value>, ttl: bool) -> R {
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
    match v {
        V::Okay => R::Ok,
        V::Nil => R::Nil,
        V::Int(n) if ttl => R::Ttl(if n > 0 { 1 } else { n }),
        V::Int(n) => R::Int(n),
        V::BulkString(b) => R::Bulk(b),
        V::SimpleString(s) if s == "OK" => R::Ok,
        V::SimpleString(s) => R::Status(s),
        V::Array(items) => R::Arr(items.into_iter().map(|i| observed(Ok(i), false)).collect()),
        V::ServerError(e) => R::Err(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn run_model(batch: bool) {
    let seed: u64 = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let pipelines: usize = std::env::var("BATCHKV_MODEL_PIPELINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    eprintln!("seed {seed} (BATCHKV_SEED), batch {batch}");
    let mut rng = StdRng::seed_from_u64(seed);
    let config = |c: &mut batchkv_server::Config| {
        c.batch = batch;
        c.options
            .apply_option_string("write_buffer_size=16384;target_file_size_base=16384")
            .unwrap();
    };
    let mut h = Harness::start_with(config);
    let mut con = h.conn();
    let mut model = Model::default();
    let mut commands = 0;
    let mut history: Vec<String> = Vec::new();
    for p in 0..pipelines {
        if p % 25 == 24 {
            drop(con);
            h = h.restart(config);
            con = h.conn();
            model.db = 0;
            history.push("-- restart --".into());
        }
        let n = rng.random_range(1..20);
        let mut pipe = redis::pipe();
        let mut want = Vec::new();
        for _ in 0..n {
            let (args, reply) = model.next(&mut rng);
            let c = pipe.cmd(std::str::from_utf8(&args[0]).unwrap());
            for a in &args[1..] {
                c.arg(a.as_slice());
            }
            want.push((args, reply));
        }
        con.send_packed_command(&pipe.get_packed_pipeline())
            .unwrap();
        for (i, (args, reply)) in want.into_iter().enumerate() {
            let got = observed(con.recv_response(), matches!(reply, R::Ttl(_)));
            let shown: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            history.push(format!("{shown:?}"));
            let from = history.len().saturating_sub(15);
            assert_eq!(
                got,
                reply,
                "seed {seed}, batch {batch}, pipeline {p}, command {i}: {shown:?}\nlast commands:\n{}",
                history[from..].join("\n")
            );
        }
        commands += n;
    }
    eprintln!("batch {batch}: {commands} commands matched the model");
}

#[test]
fn typed_commands_match_the_model_with_batching() {
    run_model(true);
}

#[test]
fn typed_commands_match_the_model_without_batching() {
    run_model(false);
}
