//! Comparing replies byte for byte with a real redis-server: a raw
//! connection that reads whole replies, and a redis-server child process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A raw connection reading whole replies as the bytes the server sent.
pub struct Resp {
    r: BufReader<TcpStream>,
}

impl Resp {
    /// Connects and, for `proto` 3, switches to RESP3 (HELLO 3).
    pub fn connect(addr: SocketAddr, proto: u8) -> std::io::Result<Resp> {
        let s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut r = Resp {
            r: BufReader::new(s),
        };
        if proto == 3 {
            r.call(&["HELLO", "3"]);
        }
        Ok(r)
    }

    /// Sends one command and returns its whole reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        self.pipeline(&[args]).pop().unwrap_or_default()
    }

    /// Sends the commands with one write (a pipeline) and returns their
    /// whole replies.
    pub fn pipeline<C: AsRef<[A]>, A: AsRef<[u8]>>(&mut self, cmds: &[C]) -> Vec<String> {
        let mut req = Vec::new();
        for args in cmds {
            let args = args.as_ref();
            req.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                let a = a.as_ref();
                req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                req.extend_from_slice(a);
                req.extend_from_slice(b"\r\n");
            }
        }
        self.r.get_mut().write_all(&req).unwrap();
        cmds.iter()
            .map(|_| {
                let mut out = Vec::new();
                self.read_reply(&mut out);
                String::from_utf8_lossy(&out).into_owned()
            })
            .collect()
    }

    /// Sends one command without reading its reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.r.get_mut().write_all(&req).unwrap();
    }

    /// Reads the next whole reply (or push message).
    pub fn read(&mut self) -> String {
        let mut out = Vec::new();
        self.read_reply(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Whether a reply (or push) arrives within `wait` (without reading
    /// it); restores the 10 s read timeout.
    pub fn pending(&mut self, wait: Duration) -> bool {
        if !self.r.buffer().is_empty() {
            return true;
        }
        self.r.get_mut().set_read_timeout(Some(wait)).unwrap();
        let got = matches!(self.r.fill_buf(), Ok(b) if !b.is_empty());
        self.r
            .get_mut()
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        got
    }

    /// The text of the bulk or verbatim string reply to `args` (without a
    /// verbatim string's `txt:`).
    pub fn text<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        let raw = self.call(args);
        let body = raw.split_once("\r\n").map_or("", |(_, b)| b);
        let body = body.strip_suffix("\r\n").unwrap_or(body);
        body.strip_prefix("txt:").unwrap_or(body).to_string()
    }

    /// Appends one whole reply (nested ones included) to `out`.
    fn read_reply(&mut self, out: &mut Vec<u8>) {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).unwrap();
        assert!(line.ends_with(b"\r\n"), "truncated reply {line:?}");
        let n: i64 = std::str::from_utf8(&line[1..line.len() - 2])
            .unwrap_or("0")
            .parse()
            .unwrap_or(0);
        let kind = line[0];
        out.extend_from_slice(&line);
        match kind {
            b'$' | b'=' | b'!' if n >= 0 => {
                let mut body = vec![0; n as usize + 2];
                self.r.read_exact(&mut body).unwrap();
                out.extend_from_slice(&body);
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let items = if matches!(kind, b'%' | b'|') {
                    2 * n
                } else {
                    n
                };
                for _ in 0..items.max(0) {
                    self.read_reply(out);
                }
            }
            _ => {}
        }
    }
}

/// A redis-server child on a free port, killed when dropped.
pub struct RedisServer {
    child: std::process::Child,
    pub addr: SocketAddr,
}

impl RedisServer {
    /// Starts `redis-server` (no persistence); the error says why not
    /// (not on PATH, did not start).
    pub fn start() -> Result<RedisServer, String> {
        // The port is free when picked but not held: another test's
        // server or a client's ephemeral port can take it first. Then
        // redis-server exits, or (worse) the port answers for another
        // server: retry until the server answering is this child.
        let mut last = String::new();
        for _ in 0..8 {
            match RedisServer::try_start() {
                Ok(server) => return Ok(server),
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    fn try_start() -> Result<RedisServer, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--bind", "127.0.0.1"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("redis-server is not runnable: {e}"))?;
        let mut server = RedisServer {
            child,
            addr: ([127, 0, 0, 1], port).into(),
        };
        let pid = format!("process_id:{}", server.child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("redis-server on port {port} exited: {status}"));
            }
            if let Ok(s) = TcpStream::connect(server.addr) {
                // A reset or a timeout counts as another server's answer:
                // retry on a new port rather than fail the test.
                if matches!(is_process(s, &pid), Ok(true)) {
                    return Ok(server);
                }
                return Err(format!("port {port} answers for another server"));
            }
            if Instant::now() > deadline {
                return Err("redis-server did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether the server on `s` is the process whose INFO line is `pid`
/// (`process_id:N`): reads its reply to INFO server.
fn is_process(mut s: TcpStream, pid: &str) -> std::io::Result<bool> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk)?;
        reply.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&reply);
        if n == 0 || text.contains(pid) {
            return Ok(text.contains(pid));
        }
        // A whole bulk reply (`$len\r\n` body `\r\n`) or an error line.
        let complete = match text.split_once("\r\n") {
            Some((head, _)) if head.starts_with('$') => head[1..]
                .parse::<usize>()
                .is_ok_and(|len| reply.len() >= head.len() + 2 + len + 2),
            Some(_) => true,
            None => false,
        };
        if complete {
            return Ok(false);
        }
    }
}

impl RedisServer {
    /// [`RedisServer::start`], or `None` after printing `SKIPPED: why`
    /// (for tests that compare with redis-server where it is missing).
    pub fn start_or_skip() -> Option<RedisServer> {
        RedisServer::start()
            .map_err(|why| eprintln!("SKIPPED: {why}"))
            .ok()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
