//! List commands: LPUSH, RPUSH, LPOP/RPOP (with a count), LRANGE, LINDEX,
//! LSET, LINSERT, LREM, LTRIM, LPOS (RANK, COUNT, MAXLEN), LMOVE, LLEN.

use rand::rngs::StdRng;
use rand::Rng;

use super::{b, cmd, cmd_with, err, int_arg, key, pick, rank_range, some_of, List, Model, Step, R};

const ELEMS: [&str; 5] = ["x", "y", "z", "1", ""];
const INDEXES: [i64; 9] = [0, 1, 2, 4, -1, -2, -3, -5, 10];

fn index(rng: &mut StdRng) -> i64 {
    INDEXES[rng.random_range(0..INDEXES.len())]
}

/// `i` (negative: from the end) as a position in a list of `len`.
fn position(i: i64, len: usize) -> Option<usize> {
    let p = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&p).then_some(p as usize)
}

fn bulks(items: impl IntoIterator<Item = Vec<u8>>) -> R {
    R::Arr(items.into_iter().map(R::Bulk).collect())
}

/// Pops one element from the left (`left`) or right end.
fn pop_end(l: &mut List, left: bool) -> Option<Vec<u8>> {
    if left {
        l.pop_front()
    } else {
        l.pop_back()
    }
}

fn push_end(l: &mut List, left: bool, v: Vec<u8>) {
    if left {
        l.push_front(v);
    } else {
        l.push_back(v);
    }
}

fn side(rng: &mut StdRng) -> (bool, &'static str) {
    if rng.random_bool(0.5) {
        (true, "LEFT")
    } else {
        (false, "RIGHT")
    }
}

impl Model {
    pub(crate) fn list_command(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let e = b(pick(rng, &ELEMS));
        match rng.random_range(0..16) {
            0..=2 => {
                let (left, _) = side(rng);
                let es = some_of(rng, &ELEMS, 3);
                let want = self.with::<List>(&k, |model, l| {
                    let mut l = l.unwrap_or_default();
                    for e in &es {
                        push_end(&mut l, left, e.clone());
                    }
                    let n = l.len() as i64;
                    model.put(&k, l);
                    R::Int(n)
                });
                (
                    cmd_with(if left { "LPUSH" } else { "RPUSH" }, &[&k], &es),
                    want,
                )
            }
            3 | 4 => self.pop(rng, k),
            5 | 6 => {
                let (start, stop) = (index(rng), index(rng));
                let want = self.with::<List>(&k, |_, l| {
                    let l = l.unwrap_or_default();
                    bulks(l.range(rank_range(start, stop, l.len())).cloned())
                });
                (cmd(&[b"LRANGE", &k, &int_arg(start), &int_arg(stop)]), want)
            }
            7 => {
                let i = index(rng);
                let want = self.with::<List>(&k, |_, l| {
                    let l = l.unwrap_or_default();
                    position(i, l.len()).map_or(R::Nil, |p| R::Bulk(l[p].clone()))
                });
                (cmd(&[b"LINDEX", &k, &int_arg(i)]), want)
            }
            8 => {
                let i = index(rng);
                let want = self.with::<List>(&k, |model, l| {
                    let Some(mut l) = l else {
                        return err("ERR no such key");
                    };
                    let Some(p) = position(i, l.len()) else {
                        return err("ERR index out of range");
                    };
                    l[p] = e.clone();
                    model.put(&k, l);
                    R::Ok
                });
                (cmd(&[b"LSET", &k, &int_arg(i), &e]), want)
            }
            9 => self.linsert(rng, k, e),
            10 => {
                let count = [0, 1, 2, -1, -2][rng.random_range(0..5)];
                let want = self.with::<List>(&k, |model, l| {
                    let l = l.unwrap_or_default();
                    let (l, n) = lrem(l, count, &e);
                    model.put(&k, l);
                    R::Int(n)
                });
                (cmd(&[b"LREM", &k, &int_arg(count), &e]), want)
            }
            11 => {
                let (start, stop) = (index(rng), index(rng));
                let want = self.with::<List>(&k, |model, l| {
                    let l = l.unwrap_or_default();
                    let r = rank_range(start, stop, l.len());
                    model.put(&k, l.range(r).cloned().collect::<List>());
                    R::Ok
                });
                (cmd(&[b"LTRIM", &k, &int_arg(start), &int_arg(stop)]), want)
            }
            12 => self.lpos(rng, k, e),
            13 | 14 => self.lmove(rng, k),
            _ => {
                let want = self.with::<List>(&k, |_, l| R::Int(l.map_or(0, |l| l.len() as i64)));
                (cmd(&[b"LLEN", &k]), want)
            }
        }
    }

    /// LPOP or RPOP, with a count or without: without, one element or nil;
    /// with, an array (nil if the key is absent; empty for a count of 0).
    fn pop(&mut self, rng: &mut StdRng, k: Vec<u8>) -> Step {
        let (left, _) = side(rng);
        let name = if left { "LPOP" } else { "RPOP" };
        let count: Option<i64> =
            [None, None, Some(0), Some(1), Some(2), Some(5), Some(-1)][rng.random_range(0..7)];
        let mut args = cmd_with(name, &[&k], &[]);
        if let Some(c) = count {
            args.push(int_arg(c));
        }
        if count.is_some_and(|c| c < 0) {
            return (args, err("ERR value is out of range, must be positive"));
        }
        let want = self.with::<List>(&k, |model, l| {
            let Some(mut l) = l else {
                return R::Nil;
            };
            let Some(c) = count else {
                let v = pop_end(&mut l, left);
                model.put(&k, l);
                return v.map_or(R::Nil, R::Bulk);
            };
            let popped: Vec<_> = (0..c).map_while(|_| pop_end(&mut l, left)).collect();
            model.put(&k, l);
            bulks(popped)
        });
        (args, want)
    }

    /// LINSERT BEFORE|AFTER pivot: the new length, -1 without the pivot,
    /// 0 if the key is absent.
    fn linsert(&mut self, rng: &mut StdRng, k: Vec<u8>, e: Vec<u8>) -> Step {
        let pivot = b(pick(rng, &ELEMS));
        let after = rng.random_bool(0.5);
        let want = self.with::<List>(&k, |model, l| {
            let Some(mut l) = l else {
                return R::Int(0);
            };
            let Some(p) = l.iter().position(|x| *x == pivot) else {
                return R::Int(-1);
            };
            l.insert(p + usize::from(after), e.clone());
            let n = l.len() as i64;
            model.put(&k, l);
            R::Int(n)
        });
        let place: &[u8] = if after { b"AFTER" } else { b"BEFORE" };
        (cmd(&[b"LINSERT", &k, place, &pivot, &e]), want)
    }

    /// LPOS element [RANK r] [COUNT c] [MAXLEN m] (options checked before
    /// the key).
    fn lpos(&mut self, rng: &mut StdRng, k: Vec<u8>, e: Vec<u8>) -> Step {
        let rank =
            [None, None, Some(1), Some(2), Some(-1), Some(-2), Some(0)][rng.random_range(0..7)];
        let count = [None, None, Some(0), Some(1), Some(2)][rng.random_range(0..5)];
        let maxlen = [None, None, Some(0), Some(1), Some(3)][rng.random_range(0..5)];
        let mut args = cmd(&[b"LPOS", &k, &e]);
        for (name, v) in [("RANK", rank), ("COUNT", count), ("MAXLEN", maxlen)] {
            if let Some(v) = v {
                args.extend([b(name), int_arg(v)]);
            }
        }
        if rank == Some(0) {
            let text = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                        second ... or use negative to start from the end of the list";
            return (args, err(text));
        }
        let want = self.with::<List>(&k, |_, l| {
            let Some(l) = l else {
                return if count.is_some() {
                    R::Arr(Vec::new())
                } else {
                    R::Nil
                };
            };
            let rank = rank.unwrap_or(1);
            let from_tail = rank < 0;
            let len = l.len();
            let scan = (0..len).take(match maxlen {
                Some(m) if m > 0 => m as usize,
                _ => len,
            });
            let mut found = Vec::new();
            let mut matches = 0;
            for i in scan {
                let pos = if from_tail { len - 1 - i } else { i };
                if l[pos] != e {
                    continue;
                }
                matches += 1;
                if matches >= rank.abs() {
                    found.push(pos as i64);
                    let enough = match count {
                        None => true,
                        Some(0) => false,
                        Some(c) => matches - rank.abs() + 1 >= c,
                    };
                    if enough {
                        break;
                    }
                }
            }
            match count {
                Some(_) => R::Arr(found.into_iter().map(R::Int).collect()),
                None => found.first().map_or(R::Nil, |p| R::Int(*p)),
            }
        });
        (args, want)
    }

    /// LMOVE src dst LEFT|RIGHT LEFT|RIGHT: nil if `src` is absent
    /// (whatever `dst` holds); WRONGTYPE if either holds another type.
    fn lmove(&mut self, rng: &mut StdRng, src: Vec<u8>) -> Step {
        let dst = key(rng);
        let (from_left, from) = side(rng);
        let (to_left, to) = side(rng);
        let args = cmd(&[b"LMOVE", &src, &dst, from.as_bytes(), to.as_bytes()]);
        let mut l = match self.get::<List>(&src) {
            Ok(None) => return (args, R::Nil),
            Err(e) => return (args, e),
            Ok(Some(l)) => l,
        };
        if let Err(e) = self.get::<List>(&dst) {
            return (args, e);
        }
        let Some(v) = pop_end(&mut l, from_left) else {
            unreachable!("a stored list is not empty");
        };
        if src == dst {
            push_end(&mut l, to_left, v.clone());
            self.put(&src, l);
        } else {
            self.put(&src, l);
            let mut d = self.get::<List>(&dst).ok().flatten().unwrap_or_default();
            push_end(&mut d, to_left, v.clone());
            self.put(&dst, d);
        }
        (args, R::Bulk(v))
    }
}

/// LREM: removes up to |count| occurrences of `e` (all for 0), from the
/// head (count > 0) or the tail (count < 0); the list and how many went.
fn lrem(l: List, count: i64, e: &[u8]) -> (List, i64) {
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let mut removed = 0;
    let mut keep = |x: &Vec<u8>| {
        if x == e && removed < limit {
            removed += 1;
            false
        } else {
            true
        }
    };
    let out: List = if count < 0 {
        let mut v: Vec<_> = l.into_iter().rev().filter(|x| keep(x)).collect();
        v.reverse();
        v.into()
    } else {
        l.into_iter().filter(|x| keep(x)).collect()
    };
    (out, removed as i64)
}
