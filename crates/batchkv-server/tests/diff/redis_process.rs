//! A real `redis-server` child process on a free port, killed on drop.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::resp::Conn;

/// Whether a `redis-server` binary can be run (it is on PATH).
pub fn available() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The version line `redis-server --version` prints.
pub fn version() -> String {
    Command::new("redis-server")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A running redis-server without persistence.
pub struct RedisProcess {
    child: Child,
    pub addr: SocketAddr,
}

/// A port nobody listens on right now (bound to port 0, then released).
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl RedisProcess {
    /// Starts redis-server and waits until it answers PING. A port taken
    /// between choosing and binding it makes the server exit; that is
    /// retried on another port.
    pub fn start() -> Result<RedisProcess, String> {
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port().map_err(|e| e.to_string())?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("spawning redis-server: {e}"))?;
            let mut p = RedisProcess {
                child,
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
            };
            match p.wait_ready() {
                Ok(()) => return Ok(p),
                Err(e) => last = e,
            }
        }
        Err(format!("redis-server did not start: {last}"))
    }

    /// Waits (at most 10 s) for a PONG; an error if the process exited.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}"));
            }
            if let Ok(mut c) = Conn::connect(self.addr) {
                if c.call(&["PING"]).is_ok_and(|f| f.raw == b"+PONG\r\n") {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("no PONG within 10 s".into())
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
