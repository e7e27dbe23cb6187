//! INCRBYFLOAT and HINCRBYFLOAT compute in 80-bit `long double` and print
//! as Redis 7.0 does. Expected replies were taken from redis-server 7.0.15;
//! `same_replies_as_real_redis` also replays random commands on a real
//! redis-server when one is installed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{err_text, q, query_err, Harness, WRONGTYPE};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const NOT_FLOAT: &str = "ERR value is not a valid float";
const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
#[test]
fn incrbyfloat_long_double_results() {
    let h = Harness::start();
    let mut c = h.conn();
    let cases = [
        ("f", "0.1", "0.2", "0.3"),
        ("k", "1", "1e-20", "1"),
        ("m", "1.23456789012345678901", "0", "1.23456789012345679"),
        ("h", "0x10", "1", "17"),
        ("t", "0x1p-18", "0", "0.00000381469726562"),
        ("u", "-0.000000000000000006", "0", "-0.00000000000000001"),
        ("v", "18446744073709551615", "1", "18446744073709551616"),
        (
            "w",
            "123456789.123456789",
            "987654321.987654321",
            "1111111111.11111110995989293",
        ),
    ];
    for (key, start, by, want) in cases {
        assert_eq!(q::<String>(&mut c, &["SET", key, start]), "OK");
        assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", key, by]), want);
        assert_eq!(q::<String>(&mut c, &["GET", key]), want);
    }
    let g = {
        assert_eq!(q::<String>(&mut c, &["SET", "g", "1e308"]), "OK");
        q::<String>(&mut c, &["INCRBYFLOAT", "g", "0"])
    };
    assert_eq!(g.len(), 308);
    assert!(g.starts_with("99999999999999999996685879655845645660560099847415"));
    // Beyond double range, within long double range.
    let big = q::<String>(&mut c, &["INCRBYFLOAT", "k", "1e4000"]);
    assert_eq!(big.len(), 4000);
    assert!(big.starts_with("99999999999999999999654638730996237849324925835069"));
    assert!(big.ends_with("1956972190272729951206648276349901340672"));
}

#[test]
fn incrbyfloat_errors_as_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    for bad in [
        "nan", " 1", "1 ", "", "1e", "0x", "1e5000", "1e-5000", "abc",
    ] {
        assert_eq!(
            query_err(&mut c, &["INCRBYFLOAT", "n", bad]),
            NOT_FLOAT,
            "{bad:?}"
        );
    }
    for inf in ["inf", "-INF", "Infinity"] {
        assert_eq!(query_err(&mut c, &["INCRBYFLOAT", "n", inf]), NAN_OR_INF);
    }
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "n"]), 0);
    assert_eq!(q::<String>(&mut c, &["SET", "i", "inf"]), "OK");
    assert_eq!(query_err(&mut c, &["INCRBYFLOAT", "i", "1"]), NAN_OR_INF);
    assert_eq!(q::<String>(&mut c, &["SET", "x", "1e4932"]), "OK");
    assert_eq!(
        query_err(&mut c, &["INCRBYFLOAT", "x", "1e4932"]),
        NAN_OR_INF
    );
    assert_eq!(q::<String>(&mut c, &["GET", "x"]), "1e4932");
    // The key's type is checked before either operand.
    assert_eq!(q::<i64>(&mut c, &["HSET", "hh", "a", "b"]), 1);
    assert_eq!(query_err(&mut c, &["INCRBYFLOAT", "hh", "abc"]), WRONGTYPE);
    // A subnormal stored value is accepted and prints as 0.
    assert_eq!(q::<String>(&mut c, &["SET", "s", "1e-4940"]), "OK");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "s", "0"]), "0");
}

#[test]
fn incrbyfloat_keeps_the_ttl() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(q::<String>(&mut c, &["SET", "f", "1.5", "EX", "100"]), "OK");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "0x.8"]), "2");
    let ttl = q::<i64>(&mut c, &["TTL", "f"]);
    assert!((1..=100).contains(&ttl), "ttl {ttl}");
}

#[test]
fn hincrbyfloat_as_redis() {
    let h = Harness::start();
    let mut c = h.conn();
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "a", "0.1"]),
        "0.1"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "a", "0.2"]),
        "0.3"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "b", "0x10"]),
        "16"
    );
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "a"]), "0.3");
    let e = q::<String>(&mut c, &["HINCRBYFLOAT", "h", "e", "1e4932"]);
    assert_eq!(e.len(), 4933);
    assert!(e.starts_with("10000000000000000000060189493879638913238377742545"));
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "h", "e", "1e4932"]),
        NAN_OR_INF
    );
    // The increment first: not a float, then infinite; then the type.
    assert_eq!(q::<String>(&mut c, &["SET", "str", "x"]), "OK");
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "str", "f", "abc"]),
        NOT_FLOAT
    );
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "str", "f", "inf"]),
        "ERR value is NaN or Infinity"
    );
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "str", "f", "1"]),
        WRONGTYPE
    );
    for inf in ["inf", "-inf", "INFINITY"] {
        assert_eq!(
            query_err(&mut c, &["HINCRBYFLOAT", "h", "c", inf]),
            "ERR value is NaN or Infinity"
        );
    }
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "h", "c", "nan"]),
        NOT_FLOAT
    );
    assert_eq!(q::<i64>(&mut c, &["HSET", "h", "s", "b", "d", "inf"]), 2);
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "h", "s", "1"]),
        "ERR hash value is not a float"
    );
    assert_eq!(
        query_err(&mut c, &["HINCRBYFLOAT", "h", "d", "1"]),
        NAN_OR_INF
    );
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "c"]), 0);
}

/// A redis-server on a free local port, killed when dropped.
struct RealRedis {
    child: Child,
    port: u16,
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RealRedis {
    fn start() -> Result<RealRedis, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--port", &port.to_string()])
            .current_dir(std::env::temp_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run redis-server: {e}"))?;
        let server = RealRedis { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("redis-server did not start listening".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

fn run(c: &mut redis::Connection, args: &[String]) -> Result<redis::Value, String> {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query(c).map_err(err_text)
}

fn operand(rng: &mut StdRng) -> String {
    let sign = ["", "-", "+"][rng.random_range(0..3)];
    let m = rng.random::<u64>() >> rng.random_range(0..64);
    match rng.random_range(0..8) {
        0 => format!("{sign}{m}"),
        1 => format!("{sign}{m}.{}", rng.random::<u32>()),
        2 => format!("{sign}{m}e{}", rng.random_range(-4960..4940)),
        3 => format!("{sign}0x{m:x}p{}", rng.random_range(-16450..16390)),
        4 => format!("{sign}0.{:018}", rng.random_range(0..1_000_000_000_000u64)),
        5 => format!("{sign}{m}e{}", rng.random_range(-40..40)),
        6 => format!("{sign}0x{m:X}.{:x}", rng.random::<u16>()),
        _ => ["inf", "nan", " 1", "1e", "", "abc", "0", "-0"][rng.random_range(0..8)].to_string(),
    }
}

/// Random SET/HSET/INCRBYFLOAT/HINCRBYFLOAT/GET/HGET on a few keys, sent
/// to both servers: every reply must be the same.
#[test]
fn same_replies_as_real_redis() {
    let real = match RealRedis::start() {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: no reference redis-server ({why})");
            return;
        }
    };
    let h = Harness::start();
    let (mut ours, mut theirs) = (h.conn(), real.conn());
    let mut rng = StdRng::seed_from_u64(7);
    let keys = ["s1", "s2", "h1", "h2"];
    let steps = 600;
    for i in 0..steps {
        let key = keys[rng.random_range(0..keys.len())].to_string();
        let field = ["f", "g"][rng.random_range(0..2)].to_string();
        let args: Vec<String> = match rng.random_range(0..6) {
            0 => vec!["SET".into(), key, operand(&mut rng)],
            1 => vec!["HSET".into(), key, field, operand(&mut rng)],
            2 | 3 => vec!["INCRBYFLOAT".into(), key, operand(&mut rng)],
            4 => vec!["HINCRBYFLOAT".into(), key, field, operand(&mut rng)],
            _ if key.starts_with('h') => vec!["HGET".into(), key, field],
            _ => vec!["GET".into(), key],
        };
        let (a, b) = (run(&mut ours, &args), run(&mut theirs, &args));
        assert_eq!(a, b, "step {i}: {args:?}");
    }
    eprintln!("{steps} random commands gave the same replies as redis-server");
}
