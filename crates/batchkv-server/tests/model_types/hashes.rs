//! Hash commands: HSET, HGET, HMGET, HGETALL, HDEL, HLEN, HINCRBY,
//! HSETNX, HKEYS.

use rand::rngs::StdRng;
use rand::Rng;

use super::strings::VALUES;
use super::{as_int, b, cmd, cmd_with, err, pick, some_of, Hash, Model, Step, R};

const FIELDS: [&str; 6] = ["f", "g", "h", "field:long", "", "1"];

impl Model {
    pub(crate) fn hash_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let f = b(pick(rng, &FIELDS));
        let v = b(pick(rng, &VALUES));
        match rng.random_range(0..10) {
            0 | 1 => self.hset(rng, k),
            2 => {
                let want = self.with::<Hash>(&k, |_, h| {
                    h.and_then(|h| h.get(&f).cloned()).map_or(R::Nil, R::Bulk)
                });
                (cmd(&[b"HGET", &k, &f]), want)
            }
            3 => {
                let fs = some_of(rng, &FIELDS, 4);
                let want = self.with::<Hash>(&k, |_, h| {
                    let h = h.unwrap_or_default();
                    R::Arr(
                        fs.iter()
                            .map(|f| h.get(f).cloned().map_or(R::Nil, R::Bulk))
                            .collect(),
                    )
                });
                (cmd_with("HMGET", &[&k], &fs), want)
            }
            4 => {
                let want = self.with::<Hash>(&k, |_, h| {
                    R::FieldValues(
                        h.unwrap_or_default()
                            .into_iter()
                            .flat_map(|(f, v)| [f, v])
                            .collect(),
                    )
                });
                (cmd(&[b"HGETALL", &k]), want)
            }
            5 => {
                let fs = some_of(rng, &FIELDS, 4);
                let want = self.with::<Hash>(&k, |m, h| {
                    let mut h = h.unwrap_or_default();
                    let n = fs.iter().filter(|f| h.remove(*f).is_some()).count();
                    m.put(&k, h);
                    R::Int(n as i64)
                });
                (cmd_with("HDEL", &[&k], &fs), want)
            }
            6 => {
                let want = self.with::<Hash>(&k, |_, h| R::Int(h.map_or(0, |h| h.len() as i64)));
                (cmd(&[b"HLEN", &k]), want)
            }
            7 => {
                let want = self.with::<Hash>(&k, |m, h| {
                    let mut h = h.unwrap_or_default();
                    match h.get(&f).map(|v| as_int(v)) {
                        Some(None) => err("ERR hash value is not an integer"),
                        old => match old.flatten().unwrap_or(0).checked_add(3) {
                            None => err("ERR increment or decrement would overflow"),
                            Some(n) => {
                                h.insert(f.clone(), n.to_string().into_bytes());
                                m.put(&k, h);
                                R::Int(n)
                            }
                        },
                    }
                });
                (cmd(&[b"HINCRBY", &k, &f, b"3"]), want)
            }
            8 => {
                let want = self.with::<Hash>(&k, |m, h| {
                    let mut h = h.unwrap_or_default();
                    if h.contains_key(&f) {
                        return R::Int(0);
                    }
                    h.insert(f.clone(), v.clone());
                    m.put(&k, h);
                    R::Int(1)
                });
                (cmd(&[b"HSETNX", &k, &f, &v]), want)
            }
            _ => {
                let want = self.with::<Hash>(&k, |_, h| {
                    R::Members(h.unwrap_or_default().into_keys().collect())
                });
                (cmd(&[b"HKEYS", &k]), want)
            }
        }
    }

    /// HSET of 1 to 4 fields; replies with the number of new fields.
    fn hset(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = some_of(rng, &FIELDS, 4)
            .into_iter()
            .map(|f| (f, b(pick(rng, &VALUES))))
            .collect();
        let flat: Vec<Vec<u8>> = pairs
            .iter()
            .flat_map(|(f, v)| [f.clone(), v.clone()])
            .collect();
        let want = self.with::<Hash>(&k, |m, h| {
            let mut h = h.unwrap_or_default();
            let added = pairs
                .into_iter()
                .filter(|(f, v)| h.insert(f.clone(), v.clone()).is_none())
                .count();
            m.put(&k, h);
            R::Int(added as i64)
        });
        (cmd_with("HSET", &[&k], &flat), want)
    }
}
