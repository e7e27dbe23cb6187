//! Random pipelines of string and keyspace commands, every reply compared
//! with a model of Redis's semantics (values, TTL presence, error texts),
//! with batching on and off. The server restarts every few pipelines
//! (values and TTLs must survive), and tiny write buffers push the data
//! through flushes and compactions. `BATCHKV_SEED` replays a run;
//! `BATCHKV_MODEL_PIPELINES` sets its length.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::collections::HashMap;

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
    Status(&'static str),
    Arr(Vec<R>),
    /// An error reply: its full text.
    Err(&'static str),
    /// A TTL reply: -2 (no key), -1 (no expiry) or 1 (some seconds left).
    Ttl(i64),
}

#[derive(Clone, Debug)]
struct Entry {
    val: Vec<u8>,
    /// The key has an expiry (always far in the future here).
    ttl: bool,
}

/// The databases as the commands so far left them, and the connection's
/// selected database.
#[derive(Default)]
struct Model {
    dbs: [HashMap<Vec<u8>, Entry>; 2],
    db: usize,
}

const KEYS: [&str; 6] = ["a", "b", "c", "num", "long:key:1", "x"];
const VALUES: [&str; 9] = [
    "",
    "1",
    "-5",
    "12",
    "abc",
    "hello world",
    "9223372036854775807",
    "-9223372036854775808",
    "3.5",
];
const NOT_INT: &str = "ERR value is not an integer or out of range";

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn bulk_or_nil(e: Option<&Entry>) -> R {
    e.map_or(R::Nil, |e| R::Bulk(e.val.clone()))
}

/// Redis's `string2ll`: no sign but `-`, no leading zeros, no spaces.
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

/// Redis's GETRANGE on a string of `len` bytes: the byte range, if any.
fn range(len: i64, mut start: i64, mut end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize + 1))
}

impl Model {
    fn db(&mut self) -> &mut HashMap<Vec<u8>, Entry> {
        &mut self.dbs[self.db]
    }

    fn put(&mut self, k: &[u8], val: Vec<u8>, ttl: bool) {
        self.db().insert(k.to_vec(), Entry { val, ttl });
    }

    /// A random command: its arguments and the reply it must get; applies
    /// its effect.
    fn next(&mut self, rng: &mut StdRng) -> (Vec<Vec<u8>>, R) {
        let k = b(KEYS[rng.random_range(0..KEYS.len())]);
        let k2 = b(KEYS[rng.random_range(0..KEYS.len())]);
        let v = if rng.random_bool(0.2) {
            "v".repeat(rng.random_range(0..300)).into_bytes()
        } else {
            b(VALUES[rng.random_range(0..VALUES.len())])
        };
        let some_keys = |rng: &mut StdRng| -> Vec<Vec<u8>> {
            (0..rng.random_range(1..5))
                .map(|_| b(KEYS[rng.random_range(0..KEYS.len())]))
                .collect()
        };
        let cur = self.db().get(&k).cloned();
        let cmd = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
        match rng.random_range(0..30) {
            0..=2 => (cmd(&[b"GET", &k]), bulk_or_nil(cur.as_ref())),
            3 | 4 => {
                self.put(&k, v.clone(), false);
                (cmd(&[b"SET", &k, &v]), R::Ok)
            }
            5 => {
                if cur.is_some() {
                    (cmd(&[b"SET", &k, &v, b"NX"]), R::Nil)
                } else {
                    self.put(&k, v.clone(), false);
                    (cmd(&[b"SET", &k, &v, b"NX"]), R::Ok)
                }
            }
            6 => {
                if cur.is_some() {
                    self.put(&k, v.clone(), false);
                    (cmd(&[b"SET", &k, &v, b"XX"]), R::Ok)
                } else {
                    (cmd(&[b"SET", &k, &v, b"XX"]), R::Nil)
                }
            }
            7 => {
                self.put(&k, v.clone(), false);
                (cmd(&[b"SET", &k, &v, b"GET"]), bulk_or_nil(cur.as_ref()))
            }
            8 => {
                let ttl = cur.as_ref().is_some_and(|e| e.ttl);
                self.put(&k, v.clone(), ttl);
                (cmd(&[b"SET", &k, &v, b"KEEPTTL"]), R::Ok)
            }
            9 => {
                self.put(&k, v.clone(), true);
                (cmd(&[b"SET", &k, &v, b"EX", b"100000"]), R::Ok)
            }
            10 | 11 => {
                let keys = some_keys(rng);
                let want = keys.iter().map(|k| bulk_or_nil(self.db().get(k))).collect();
                let mut args = vec![b("MGET")];
                args.extend(keys);
                (args, R::Arr(want))
            }
            12 => {
                let mut args = vec![b("MSET")];
                for key in some_keys(rng) {
                    let val = b(VALUES[rng.random_range(0..VALUES.len())]);
                    self.put(&key, val.clone(), false);
                    args.push(key);
                    args.push(val);
                }
                (args, R::Ok)
            }
            13 => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = some_keys(rng)
                    .into_iter()
                    .map(|k| (k, b(VALUES[rng.random_range(0..VALUES.len())])))
                    .collect();
                let any = pairs.iter().any(|(k, _)| self.db().contains_key(k));
                if !any {
                    for (k, v) in &pairs {
                        self.put(k, v.clone(), false);
                    }
                }
                let mut args = vec![b("MSETNX")];
                for (k, v) in pairs {
                    args.push(k);
                    args.push(v);
                }
                (args, R::Int(i64::from(!any)))
            }
            14 => {
                let keys = some_keys(rng);
                let mut n = 0;
                for k in &keys {
                    n += i64::from(self.db().remove(k).is_some());
                }
                let mut args = vec![b("DEL")];
                args.extend(keys);
                (args, R::Int(n))
            }
            15 => {
                let keys = some_keys(rng);
                let n = keys.iter().filter(|k| self.db().contains_key(*k)).count();
                let mut args = vec![b("EXISTS")];
                args.extend(keys);
                (args, R::Int(n as i64))
            }
            16 | 17 => {
                let by: i64 = [1, -1, 7, i64::MAX, i64::MIN][rng.random_range(0..5)];
                let args = cmd(&[b"INCRBY", &k, by.to_string().as_bytes()]);
                let old = match &cur {
                    None => Some(0),
                    Some(e) => as_int(&e.val),
                };
                let Some(old) = old else {
                    return (args, R::Err(NOT_INT));
                };
                let Some(new) = old.checked_add(by) else {
                    return (args, R::Err("ERR increment or decrement would overflow"));
                };
                let ttl = cur.is_some_and(|e| e.ttl);
                self.put(&k, new.to_string().into_bytes(), ttl);
                (args, R::Int(new))
            }
            18 => {
                let (mut val, ttl) = cur.map_or((Vec::new(), false), |e| (e.val, e.ttl));
                val.extend_from_slice(&v);
                let n = val.len() as i64;
                self.put(&k, val, ttl);
                (cmd(&[b"APPEND", &k, &v]), R::Int(n))
            }
            19 => (
                cmd(&[b"STRLEN", &k]),
                R::Int(cur.map_or(0, |e| e.val.len() as i64)),
            ),
            20 => {
                let (s, e) = (rng.random_range(-8..8), rng.random_range(-8..8));
                let val = cur.map(|e| e.val).unwrap_or_default();
                let got =
                    range(val.len() as i64, s, e).map_or(Vec::new(), |(a, z)| val[a..z].to_vec());
                (
                    cmd(&[
                        b"GETRANGE",
                        &k,
                        s.to_string().as_bytes(),
                        e.to_string().as_bytes(),
                    ]),
                    R::Bulk(got),
                )
            }
            21 => {
                let off = rng.random_range(0..12usize);
                let args = cmd(&[b"SETRANGE", &k, off.to_string().as_bytes(), &v]);
                let (mut val, ttl) = cur.map_or((Vec::new(), false), |e| (e.val, e.ttl));
                if v.is_empty() {
                    return (args, R::Int(val.len() as i64));
                }
                if val.len() < off + v.len() {
                    val.resize(off + v.len(), 0);
                }
                val[off..off + v.len()].copy_from_slice(&v);
                let n = val.len() as i64;
                self.put(&k, val, ttl);
                (args, R::Int(n))
            }
            22 => {
                self.db().remove(&k);
                (cmd(&[b"GETDEL", &k]), bulk_or_nil(cur.as_ref()))
            }
            23 => {
                self.put(&k, v.clone(), false);
                (cmd(&[b"GETSET", &k, &v]), bulk_or_nil(cur.as_ref()))
            }
            24 => {
                let nx = rng.random_bool(0.5);
                let args = cmd(&[if nx { b"RENAMENX" } else { b"RENAME" }, &k, &k2]);
                let Some(e) = cur else {
                    return (args, R::Err("ERR no such key"));
                };
                if nx && (k == k2 || self.db().contains_key(&k2)) {
                    return (args, R::Int(0));
                }
                self.db().remove(&k);
                self.db().insert(k2, e);
                (args, if nx { R::Int(1) } else { R::Ok })
            }
            25 => {
                let args = cmd(&[b"COPY", &k, &k2]);
                if k == k2 {
                    return (
                        args,
                        R::Err("ERR source and destination objects are the same"),
                    );
                }
                match cur {
                    Some(e) if !self.db().contains_key(&k2) => {
                        self.db().insert(k2, e);
                        (args, R::Int(1))
                    }
                    _ => (args, R::Int(0)),
                }
            }
            26 => {
                let args = cmd(&[b"EXPIRE", &k, b"100000"]);
                match self.db().get_mut(&k) {
                    Some(e) => {
                        e.ttl = true;
                        (args, R::Int(1))
                    }
                    None => (args, R::Int(0)),
                }
            }
            27 => {
                let args = cmd(&[b"PERSIST", &k]);
                match self.db().get_mut(&k) {
                    Some(e) if e.ttl => {
                        e.ttl = false;
                        (args, R::Int(1))
                    }
                    _ => (args, R::Int(0)),
                }
            }
            28 => {
                let want = match &cur {
                    None => R::Ttl(-2),
                    Some(e) if !e.ttl => R::Ttl(-1),
                    Some(_) => R::Ttl(1),
                };
                (cmd(&[b"TTL", &k]), want)
            }
            _ => match rng.random_range(0..3) {
                0 => (
                    cmd(&[b"TYPE", &k]),
                    R::Status(if cur.is_some() { "string" } else { "none" }),
                ),
                1 => (cmd(&[b"DBSIZE"]), R::Int(self.db().len() as i64)),
                _ => {
                    self.db = rng.random_range(0..2);
                    (cmd(&[b"SELECT", self.db.to_string().as_bytes()]), R::Ok)
                }
            },
        }
    }
}

/// The server's reply in the model's terms (`ttl`: it answers TTL).
fn observed(reply: redis::RedisResult<redis::Value>, ttl: bool) -> R {
    use redis::Value as V;
    let v = match reply {
        Ok(v) => v,
        Err(e) => {
            let text = match (e.code(), e.detail()) {
                (Some(c), Some(d)) => format!("{c} {d}"),
                _ => e.to_string(),
            };
            return R::Err(Box::leak(text.into_boxed_str()));
        }
    };
    match v {
        V::Okay => R::Ok,
        V::Nil => R::Nil,
        V::Int(n) if ttl => R::Ttl(if n > 0 { 1 } else { n }),
        V::Int(n) => R::Int(n),
        V::BulkString(b) => R::Bulk(b),
        V::SimpleString(s) if s == "OK" => R::Ok,
        V::SimpleString(s) => R::Status(Box::leak(s.into_boxed_str())),
        V::Array(items) => R::Arr(items.into_iter().map(|i| observed(Ok(i), false)).collect()),
        V::ServerError(e) => {
            let text = match e.details() {
                Some(d) => format!("{} {d}", e.code()),
                None => e.code().to_string(),
            };
            R::Err(Box::leak(text.into_boxed_str()))
        }
        other => panic!("unexpected reply {other:?}"),
    }
}

fn pipelines() -> usize {
    std::env::var("BATCHKV_MODEL_PIPELINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

fn run_model(batch: bool) {
    let seed: u64 = std::env::var("BATCHKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
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
    for p in 0..pipelines() {
        if p % 25 == 24 {
            drop(con);
            h = h.restart(config);
            con = h.conn();
            model.db = 0;
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
            assert_eq!(
                got, reply,
                "seed {seed}, batch {batch}, pipeline {p}, command {i}: {shown:?}"
            );
        }
        commands += n;
    }
    eprintln!("batch {batch}: {commands} commands matched the model");
}

#[test]
fn random_commands_match_the_model_with_batching() {
    run_model(true);
}

#[test]
fn random_commands_match_the_model_without_batching() {
    run_model(false);
}
