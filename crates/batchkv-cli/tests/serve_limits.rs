//! `batchkv serve` and the file-descriptor limit (`RLIMIT_NOFILE`): at
//! start `--maxclients` is fitted under it (the soft limit raised as far as
//! allowed, else maxclients lowered), and when descriptors run out anyway
//! the accept loop backs off instead of spinning. The limits are set on
//! the server process only (`pre_exec`, `prlimit`), never on the test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use common::{serve_with, Served};

/// Sends `cmd` (inline) and returns the reply, read until it has `lines`
/// CRLF-terminated lines.
fn ask(port: u16, cmd: &str, lines: usize) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
    let mut buf = [0u8; 512];
    let mut got = Vec::new();
    while got.windows(2).filter(|w| w == b"\r\n").count() < lines {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The server's `maxclients` (CONFIG GET).
fn maxclients(port: u16) -> u64 {
    let reply = ask(port, "CONFIG GET maxclients", 5);
    reply
        .lines()
        .nth(4)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("CONFIG GET maxclients: {reply:?}"))
}

/// The soft and hard `Max open files` of process `pid`.
fn open_files_limits(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

/// Starts a server whose process begins with the descriptor limits
/// `soft` and `hard` (`None`: the hard limit the test has).
fn serve_limited(dir: &std::path::Path, args: &[&str], soft: u64, hard: Option<u64>) -> Served {
    serve_with(dir, args, |cmd| {
        // SAFETY: `setrlimit` and `getrlimit` are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                let mut cur = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut cur) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let lim = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard.map_or(cur.rlim_max, |h| h as libc::rlim_t),
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    })
}

/// Descriptors the server reserves with `max_open_files=50`: 32 (Redis's
/// minimum) + 16 (engine files besides tables) + 50 (table cache).
const RESERVED: u64 = 98;

#[test]
fn a_low_soft_limit_is_raised_for_maxclients() {
    let (_, test_hard) = open_files_limits(std::process::id());
    let needed = 1000 + RESERVED;
    if test_hard < needed {
        eprintln!("skipped: the hard limit {test_hard} is below {needed}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = serve_limited(
        dir.path(),
        &["--maxclients", "1000", "--options", "max_open_files=50"],
        200,
        None,
    );
    let (soft, hard) = open_files_limits(s.child.id());
    assert_eq!(soft, needed, "the soft limit is raised to what is needed");
    assert_eq!(hard, test_hard, "the hard limit is kept");
    assert_eq!(maxclients(s.port), 1000);
}

#[test]
fn maxclients_is_lowered_to_what_the_limit_allows() {
    // Beyond any limit the OS allows (fs.nr_open), even to root: the soft
    // limit stays at the hard one, 300, and maxclients is what fits.
    let dir = tempfile::tempdir().unwrap();
    let s = serve_limited(
        dir.path(),
        &[
            "--maxclients",
            "2000000000",
            "--options",
            "max_open_files=50",
        ],
        300,
        Some(300),
    );
    assert_eq!(open_files_limits(s.child.id()), (300, 300));
    assert_eq!(maxclients(s.port), 300 - RESERVED);
    assert_eq!(ask(s.port, "PING", 1), "+PONG\r\n");
}

#[test]
fn a_limit_too_low_for_the_engine_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_batchkv"));
    cmd.args([
        "serve",
        "--port",
        "0",
        "--maxclients",
        "2000000000",
        "--dir",
    ])
    .arg(dir.path())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    // SAFETY: as in `serve_limited`.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 200,
                rlim_max: 200,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // A server that starts anyway must not hang the test.
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve started with 200 descriptors for 1,048 reserved and 2e9 clients");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("'ulimit -n' of 200 is not enough"),
        "{stderr}"
    );
}

/// CPU time (user + system) of process `pid` so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) in parens.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (1-based), 12 and 13 here.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Lowers the soft descriptor limit of running process `pid`.
fn set_soft_limit(pid: u32, soft: u64) {
    let (_, hard) = open_files_limits(pid);
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: valid pointers; a null old-limit pointer is allowed.
    let r = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// When `accept` fails with EMFILE, the pending connection stays queued
/// and the listener stays readable: a loop that retries at once spins a
/// core (3.5 CPU-s in 5 s before the fix). With the backoff the server
/// uses almost nothing while out of descriptors, and serves again once
/// some are free.
#[test]
fn accept_backs_off_while_descriptors_run_out() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve_limited(dir.path(), &[], 4096, None);
    let pid = s.child.id();
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count() as u64;
    // Room for two more connections only.
    set_soft_limit(pid, open + 2);
    let held: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(("127.0.0.1", s.port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(pid) - before;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    eprintln!("{used} ticks ({hz}/s) of CPU in 2 s while out of descriptors");
    // A spinning loop used 1.1 s here (110 ticks before the fix); the
    // backoff wakes 10 times a second.
    assert!(
        used * 4 < hz * 2,
        "{used} ticks ({hz}/s) of CPU in 2 s while out of descriptors"
    );
    drop(held);
    set_soft_limit(pid, 4096);
    assert_eq!(ask(s.port, "PING", 1), "+PONG\r\n");
}
