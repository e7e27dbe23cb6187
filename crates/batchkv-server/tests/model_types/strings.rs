//! String commands: GET, SET, APPEND, MGET.

use rand::rngs::StdRng;
use rand::Rng;

use super::{b, cmd, key, pick, Model, Step, R};

pub(crate) const VALUES: [&str; 7] = ["", "1", "-5", "12", "abc", "3.5", "9223372036854775807"];

impl Model {
    pub(crate) fn string_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let v = b(pick(rng, &VALUES));
        match rng.random_range(0..4) {
            0 => {
                let want = self.with::<Vec<u8>>(&k, |_, s| s.map_or(R::Nil, R::Bulk));
                (cmd(&[b"GET", &k]), want)
            }
            1 => {
                // SET replaces any type and clears the TTL.
                self.replace(&k, v.clone());
                (cmd(&[b"SET", &k, &v]), R::Ok)
            }
            2 => {
                let want = self.with::<Vec<u8>>(&k, |m, s| {
                    let mut s = s.unwrap_or_default();
                    s.extend_from_slice(&v);
                    let n = s.len() as i64;
                    m.put(&k, s);
                    R::Int(n)
                });
                (cmd(&[b"APPEND", &k, &v]), want)
            }
            _ => {
                // MGET answers nil for keys of other types.
                let k2 = key(rng);
                let one = |k: &[u8]| {
                    self.get::<Vec<u8>>(k)
                        .ok()
                        .flatten()
                        .map_or(R::Nil, R::Bulk)
                };
                let want = R::Arr(vec![one(&k), one(&k2)]);
                (cmd(&[b"MGET", &k, &k2]), want)
            }
        }
    }
}
