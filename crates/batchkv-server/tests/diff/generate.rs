//! What the command tables are made of: a generator of random arguments
//! over a small shared pool of keys, fields and values (so that commands
//! collide, types included), and a table row type.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::compare::Cmp;

/// A command: its name, then its arguments.
pub type Args = Vec<Vec<u8>>;

/// How a row makes its command(s).
pub enum Make {
    /// One command.
    One(fn(&mut Gen) -> Args),
    /// Several commands, each compared on its own (a setup then the
    /// command, a transaction). The [`Draw`] makes one random command of
    /// the `One` rows of every table (what a transaction queues).
    Steps(fn(&mut Gen, Draw) -> Vec<Step>),
}

/// Makes one random single-command row's instance.
pub type Draw<'a> = &'a mut dyn FnMut(&mut Gen) -> Step;

/// One command to send and how to compare its reply.
#[derive(Clone, Debug)]
pub struct Step {
    /// The row (or part of a row) it counts under in the summary and the
    /// allow-list.
    pub name: &'static str,
    pub cmp: Cmp,
    pub args: Args,
    /// Sent on the other connection pair (the other protocol), e.g. a
    /// write between WATCH and EXEC from another client.
    pub other: bool,
    /// For EXEC ([`Cmp::Exec`]): the queued commands, whose replies are
    /// the elements of EXEC's array, each compared by its own mode.
    pub queued: Vec<Step>,
}

impl Step {
    pub fn new(name: &'static str, cmp: Cmp, args: Args) -> Step {
        Step {
            name,
            cmp,
            args,
            other: false,
            queued: Vec::new(),
        }
    }
}

/// One row of a command table: how to make a random instance of a
/// command, how often, and how its replies are compared.
pub struct CmdGen {
    /// The command's name (for the summary and the allow-list).
    pub name: &'static str,
    /// Relative frequency (most commands use 2-10; rare ones such as
    /// FLUSHDB use 1).
    pub weight: u32,
    pub cmp: Cmp,
    pub make: Make,
    /// Whether the test may drop or add an argument (to check arity and
    /// syntax errors); off where a shorter form has a random reply
    /// (HRANDFIELD without a count).
    pub mutate: bool,
    /// Whether a transaction may queue it (not EXEC, DISCARD).
    pub in_multi: bool,
}

impl CmdGen {
    pub const fn new(
        name: &'static str,
        weight: u32,
        cmp: Cmp,
        make: fn(&mut Gen) -> Args,
    ) -> CmdGen {
        CmdGen {
            name,
            weight,
            cmp,
            make: Make::One(make),
            mutate: true,
            in_multi: true,
        }
    }

    /// A row of several commands ([`Make::Steps`]); each step names its
    /// comparison mode.
    pub const fn steps(
        name: &'static str,
        weight: u32,
        make: fn(&mut Gen, Draw) -> Vec<Step>,
    ) -> CmdGen {
        CmdGen {
            name,
            weight,
            cmp: Cmp::Exact,
            make: Make::Steps(make),
            mutate: false,
            in_multi: false,
        }
    }

    /// This row, never queued in a transaction.
    pub const fn not_in_multi(self) -> CmdGen {
        CmdGen {
            in_multi: false,
            ..self
        }
    }

    /// This row without the argument-count mutation.
    pub const fn keep_arity(self) -> CmdGen {
        CmdGen {
            mutate: false,
            ..self
        }
    }
}

/// The keys every command draws from: few, so that every type meets every
/// other on the same key.
pub const KEYS: [&str; 9] = ["a", "b", "c", "ab", "x:1", "s:2", "z:2", "l:2", "z:lex"];
/// Where the sorted-set table copies a set with all scores 0 for its lex
/// ranges (one of [`KEYS`]).
pub const LEX_KEY: &str = "z:lex";
/// Hash fields.
pub const FIELDS: [&str; 4] = ["f1", "f2", "f3", "ab"];
/// Set and sorted-set members: text (`ab` is also a key and a field) and
/// integers (Redis keeps a set of integers as an intset), the empty one.
pub const MEMBERS: [&str; 9] = ["m1", "m2", "m3", "ab", "1", "2", "-3", "10", ""];
/// List elements: a small pool, so that LPOS, LREM and LINSERT find them.
const LIST_VALUES: [&str; 6] = ["a", "b", "c", "1", "-1", ""];
/// Scores (ZADD, ZINCRBY): integers, decimals, exponents, infinities,
/// both zeros.
const SCORES: [&str; 16] = [
    "0",
    "1",
    "-1",
    "2.5",
    "-0",
    "0.1",
    "1e3",
    "inf",
    "-inf",
    "+inf",
    "3",
    "-2.75",
    "1.5e-3",
    "100",
    "10",
    "0.30000000000000004",
];
/// Score range bounds (ZCOUNT, ZRANGEBYSCORE, ...), exclusive ones too.
const SCORE_BOUNDS: [&str; 14] = [
    "-inf", "+inf", "inf", "0", "(0", "-0", "1", "(1", "2.5", "(2.5", "-1", "100", "(-inf", "(3",
];
/// Lex range bounds (ZLEXCOUNT, ZRANGEBYLEX, ...).
const LEX_BOUNDS: [&str; 10] = ["-", "+", "[m1", "(m1", "[m2", "(ab", "[", "(", "[1", "[m3"];
/// Values: integers, decimals (exact in binary or not), exponents, text,
/// binary bytes. INCRBYFLOAT and HINCRBYFLOAT compute in an emulated long
/// double, so `1e400` (finite there, not in a double) must match too.
const VALUES: [&str; 20] = [
    "",
    "0",
    "1",
    "-1",
    "7",
    "-12",
    "100",
    "3.5",
    "-0.25",
    "0.5",
    "abc",
    "hello world",
    "01",
    " 2",
    "a\0\r\nb\u{ff}",
    "4503599627370496",
    "0.1",
    "-2e3",
    "1e400",
    "18446744073709551616",
];

/// The random source of one run, and the time the run's absolute expiry
/// times are based on.
pub struct Gen {
    rng: StdRng,
    /// Unix time (s) when the run started.
    now_s: u64,
    /// The key the current command prefers (its table's "home" key, set by
    /// the test before each command): each type mostly works on its own
    /// key, so that its commands mostly meet their own type, and sometimes
    /// on any key. `None`: any key.
    pub home: Option<&'static str>,
    /// The table's second key (for its multi-key commands and its bulk
    /// rows), if it has one.
    pub second: Option<&'static str>,
}

/// `s` as bytes.
pub fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// A command from its name and arguments.
pub fn cmd(name: &str, args: impl IntoIterator<Item = Vec<u8>>) -> Args {
    let mut v = vec![b(name)];
    v.extend(args);
    v
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Gen {
            rng: StdRng::seed_from_u64(seed),
            now_s,
            home: None,
            second: None,
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        self.rng.random_range(lo..=hi)
    }

    /// An index below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    /// One of `xs`, as bytes.
    pub fn pick(&mut self, xs: &[&str]) -> Vec<u8> {
        b(xs[self.below(xs.len())])
    }

    /// Usually one of the valid `good`, with probability `p_bad` one of
    /// `bad`.
    pub fn good_or_bad(&mut self, good: &[&str], bad: &[&str], p_bad: f64) -> Vec<u8> {
        if self.chance(p_bad) {
            self.pick(bad)
        } else {
            self.pick(good)
        }
    }

    /// A key: the home key ([`Gen::home`]) with probability 0.9 (0.75 when
    /// the table has a second key, which takes 0.15), else any.
    pub fn key(&mut self) -> Vec<u8> {
        let Some(home) = self.home else {
            return self.pick(&KEYS);
        };
        let x: f64 = self.rng.random();
        match self.second {
            Some(second) if (0.75..0.9).contains(&x) => b(second),
            _ if x < 0.9 => b(home),
            _ => self.pick(&KEYS),
        }
    }

    /// The table's second key (its home key if it has none).
    pub fn second_key(&mut self) -> Vec<u8> {
        match self.second.or(self.home) {
            Some(k) => b(k),
            None => self.pick(&KEYS),
        }
    }

    /// `lo..=hi` keys (repeats allowed).
    pub fn keys(&mut self, lo: i64, hi: i64) -> Vec<Vec<u8>> {
        (0..self.range(lo, hi)).map(|_| self.key()).collect()
    }

    pub fn field(&mut self) -> Vec<u8> {
        self.pick(&FIELDS)
    }

    /// `lo..=hi` fields (repeats allowed).
    pub fn fields(&mut self, lo: i64, hi: i64) -> Vec<Vec<u8>> {
        (0..self.range(lo, hi)).map(|_| self.field()).collect()
    }

    pub fn member(&mut self) -> Vec<u8> {
        self.pick(&MEMBERS)
    }

    /// `lo..=hi` members (repeats allowed).
    pub fn members(&mut self, lo: i64, hi: i64) -> Vec<Vec<u8>> {
        (0..self.range(lo, hi)).map(|_| self.member()).collect()
    }

    /// A list element: mostly from a small pool, sometimes any value.
    pub fn list_value(&mut self) -> Vec<u8> {
        if self.chance(0.2) {
            return self.value();
        }
        self.pick(&LIST_VALUES)
    }

    /// A score, sometimes not a valid one.
    pub fn score(&mut self) -> Vec<u8> {
        self.good_or_bad(&SCORES, &["nan", "abc", "", "1x", "(1", "1e400"], 0.04)
    }

    /// A score range bound, sometimes not a valid one.
    pub fn score_bound(&mut self) -> Vec<u8> {
        self.good_or_bad(&SCORE_BOUNDS, &["abc", "(", "nan", "[1", ""], 0.04)
    }

    /// A lex range bound, sometimes not a valid one.
    pub fn lex_bound(&mut self) -> Vec<u8> {
        self.good_or_bad(&LEX_BOUNDS, &["m1", "", "+x", "-a"], 0.04)
    }

    /// A value to store: usually from the shared pool, sometimes a longer
    /// string.
    pub fn value(&mut self) -> Vec<u8> {
        if self.chance(0.05) {
            let n = self.range(0, 200) as usize;
            return vec![b'v'; n];
        }
        self.pick(&VALUES)
    }

    /// An integer argument (increment, count): small, extreme (to reach
    /// overflow), or not an integer as Redis parses it.
    pub fn int_arg(&mut self) -> Vec<u8> {
        if self.chance(0.05) {
            return self.pick(&["9223372036854775807", "-9223372036854775808"]);
        }
        self.good_or_bad(
            &["0", "1", "-1", "5", "-7", "100"],
            &[
                "abc",
                "1.5",
                "",
                "+1",
                "01",
                " 1",
                "99999999999999999999",
                "-0",
            ],
            0.08,
        )
    }

    /// A float increment: exact in binary or not, with exponents, near
    /// the ends of a double's range; or invalid.
    pub fn float_arg(&mut self) -> Vec<u8> {
        if self.chance(0.03) {
            return self.pick(&[
                "1e308",
                "-1e308",
                "1.7976931348623157e308",
                "5e-324",
                "1e-320",
            ]);
        }
        self.good_or_bad(
            &[
                "1",
                "-1",
                "0.5",
                "-1.25",
                "2.5",
                "10",
                "1e2",
                "0",
                "-0",
                "3",
                "0.1",
                "-0.3",
                "1.1",
                "3.14159",
                "1e-5",
                "-2.5e-3",
                "123456789.123",
                "5e20",
                "0.7",
                "-1E3",
            ],
            &[
                "abc", "", "1.2.3", " 1", "inf", "-inf", "nan", "0x10", "1e400",
            ],
            0.08,
        )
    }

    /// A string index (GETRANGE and the like).
    pub fn index(&mut self) -> Vec<u8> {
        if self.chance(0.05) {
            return self.pick(&["9223372036854775807", "-9223372036854775808", "x", "1.0"]);
        }
        b(&self.range(-12, 12).to_string())
    }

    /// A relative expiry in seconds: days, never reached during a run; all
    /// below [`Gen::at_s`]'s times, and far apart from each other so that
    /// when two servers set them a few ms apart their order stays the same.
    pub fn ttl_s(&mut self) -> Vec<u8> {
        b(&(self.range(1, 4) * 100_000).to_string())
    }

    pub fn ttl_ms(&mut self) -> Vec<u8> {
        b(&(self.range(1, 4) * 100_000_000 + 7).to_string())
    }

    /// An absolute expiry (Unix s), beyond every [`Gen::ttl_s`].
    pub fn at_s(&mut self) -> Vec<u8> {
        b(&(self.now_s + 1_000_000 + self.range(0, 2) as u64 * 100_000).to_string())
    }

    pub fn at_ms(&mut self) -> Vec<u8> {
        b(&((self.now_s + 1_000_000 + self.range(0, 2) as u64 * 100_000) * 1000).to_string())
    }

    /// An invalid or immediate expiry: zero and negative times (delete the
    /// key, or an error for SET), overflow, not a number.
    pub fn bad_ttl(&mut self) -> Vec<u8> {
        self.pick(&[
            "0",
            "-1",
            "-100",
            "abc",
            "9223372036854775807",
            "9223372036854775",
        ])
    }

    /// `s` with its letters' case changed at random (command names and
    /// options are case-insensitive).
    pub fn mixed_case(&mut self, s: &[u8]) -> Vec<u8> {
        s.iter()
            .map(|&c| {
                if self.chance(0.5) {
                    c.to_ascii_lowercase()
                } else {
                    c.to_ascii_uppercase()
                }
            })
            .collect()
    }
}
