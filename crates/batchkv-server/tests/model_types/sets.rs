//! Set commands: SADD, SREM, SISMEMBER, SMISMEMBER, SMEMBERS, SCARD,
//! SMOVE, SINTER/SUNION/SDIFF, their *STORE forms, SINTERCARD. Every reply
//! listing members is [`R::Members`] (member order).

use rand::rngs::StdRng;
use rand::Rng;

use super::{b, cmd, cmd_with, err, int_arg, key, pick, some_of, Model, Set, Step, R};

const MEMBERS: [&str; 6] = ["a", "b", "c", "1", "", "m:long"];

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Inter => "SINTER",
            Op::Union => "SUNION",
            Op::Diff => "SDIFF",
        }
    }
}

fn members_reply(s: &Set) -> R {
    R::Members(s.iter().cloned().collect())
}

impl Model {
    pub(crate) fn set_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let m = b(pick(rng, &MEMBERS));
        match rng.random_range(0..13) {
            0..=2 => {
                let ms = some_of(rng, &MEMBERS, 4);
                let want = self.with::<Set>(&k, |model, s| {
                    let mut s = s.unwrap_or_default();
                    let n = ms.iter().filter(|m| s.insert(m.to_vec())).count();
                    model.put(&k, s);
                    R::Int(n as i64)
                });
                (cmd_with("SADD", &[&k], &ms), want)
            }
            3 => {
                let ms = some_of(rng, &MEMBERS, 3);
                let want = self.with::<Set>(&k, |model, s| {
                    let mut s = s.unwrap_or_default();
                    let n = ms.iter().filter(|m| s.remove(*m)).count();
                    model.put(&k, s);
                    R::Int(n as i64)
                });
                (cmd_with("SREM", &[&k], &ms), want)
            }
            4 => {
                let want = self.with::<Set>(&k, |_, s| {
                    R::Int(i64::from(s.is_some_and(|s| s.contains(&m))))
                });
                (cmd(&[b"SISMEMBER", &k, &m]), want)
            }
            5 => {
                let ms = some_of(rng, &MEMBERS, 4);
                let want = self.with::<Set>(&k, |_, s| {
                    let s = s.unwrap_or_default();
                    R::Arr(
                        ms.iter()
                            .map(|m| R::Int(i64::from(s.contains(m))))
                            .collect(),
                    )
                });
                (cmd_with("SMISMEMBER", &[&k], &ms), want)
            }
            6 => {
                let want = self.with::<Set>(&k, |_, s| members_reply(&s.unwrap_or_default()));
                (cmd(&[b"SMEMBERS", &k]), want)
            }
            7 => {
                let want = self.with::<Set>(&k, |_, s| R::Int(s.map_or(0, |s| s.len() as i64)));
                (cmd(&[b"SCARD", &k]), want)
            }
            8 => self.smove(k, key(rng), m),
            9 => {
                let op = [Op::Inter, Op::Union, Op::Diff][rng.random_range(0..3)];
                let keys = some_of(rng, &super::KEYS, 3);
                let want = match self.set_op(op, &keys) {
                    Ok(s) => members_reply(&s),
                    Err(e) => e,
                };
                (cmd_with(op.name(), &[], &keys), want)
            }
            10 | 11 => {
                let op = [Op::Inter, Op::Union, Op::Diff][rng.random_range(0..3)];
                let keys = some_of(rng, &super::KEYS, 3);
                let name = format!("{}STORE", op.name());
                // Only the sources are checked: the destination is
                // replaced whatever it holds.
                let want = match self.set_op(op, &keys) {
                    Ok(s) => {
                        let n = s.len() as i64;
                        self.replace(&k, s);
                        R::Int(n)
                    }
                    Err(e) => e,
                };
                (cmd_with(&name, &[&k], &keys), want)
            }
            _ => self.sintercard(rng),
        }
    }

    /// The sets at `keys` (absent: empty; every key checked: any other
    /// type is WRONGTYPE).
    fn sets(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Set>>, R> {
        keys.iter().map(|k| self.get::<Set>(k)).collect()
    }

    /// `op` over the sets at `keys`.
    fn set_op(&self, op: Op, keys: &[Vec<u8>]) -> Result<Set, R> {
        let sets = self.sets(keys)?;
        let mut sets = sets.into_iter().map(Option::unwrap_or_default);
        let first = sets.next().unwrap_or_default();
        Ok(sets.fold(first, |acc, s| match op {
            Op::Inter => acc.intersection(&s).cloned().collect(),
            Op::Union => acc.union(&s).cloned().collect(),
            Op::Diff => acc.difference(&s).cloned().collect(),
        }))
    }

    /// SMOVE: 0 if `src` is absent (whatever `dst` holds), WRONGTYPE if
    /// either key holds another type; `src` = `dst` only checks the member.
    fn smove(&mut self, src: Vec<u8>, dst: Vec<u8>, m: Vec<u8>) -> Step {
        let args = cmd(&[b"SMOVE", &src, &dst, &m]);
        let s = match self.get::<Set>(&src) {
            Ok(None) => return (args, R::Int(0)),
            Err(e) => return (args, e),
            Ok(Some(s)) => s,
        };
        let d = match self.get::<Set>(&dst) {
            Err(e) => return (args, e),
            Ok(d) => d,
        };
        if !s.contains(&m) {
            return (args, R::Int(0));
        }
        if src != dst {
            let mut s = s;
            s.remove(&m);
            self.put(&src, s);
            let mut d = d.unwrap_or_default();
            d.insert(m);
            self.put(&dst, d);
        }
        (args, R::Int(1))
    }

    /// SINTERCARD numkeys key... [LIMIT n]: the intersection's size, at
    /// most n (0: no limit).
    fn sintercard(&mut self, rng: &mut StdRng) -> Step {
        let keys = some_of(rng, &super::KEYS, 3);
        let mut args = cmd_with("SINTERCARD", &[&int_arg(keys.len() as i64)], &keys);
        let limit = match rng.random_range(0..4) {
            0 => None,
            n => Some(n as usize - 1),
        };
        if let Some(l) = limit {
            args.extend([b("LIMIT"), int_arg(l as i64)]);
        }
        if rng.random_range(0..20) == 0 {
            args.extend([b("LIMIT"), b("-1")]);
            return (args, err("ERR LIMIT can't be negative"));
        }
        let want = match self.set_op(Op::Inter, &keys) {
            Ok(s) => R::Int(match limit {
                Some(l) if l > 0 => s.len().min(l),
                _ => s.len(),
            } as i64),
            Err(e) => e,
        };
        (args, want)
    }
}
