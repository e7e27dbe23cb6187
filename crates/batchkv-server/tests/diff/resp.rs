//! A minimal RESP2/RESP3 client for the differential test: commands are
//! encoded as arrays of bulk strings, and a reply is read back as the exact
//! bytes the server sent (plus its parsed outline, for the comparisons that
//! ignore element order).

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One reply: its raw bytes and, for aggregates, its elements (a map's
/// keys and values alternate, as on the wire).
#[derive(Clone, Debug)]
pub struct Frame {
    /// Every byte of the reply, nested elements included.
    pub raw: Vec<u8>,
    /// The type byte (`+`, `-`, `:`, `$`, `*`, `%`, `~`, `_`, `,`, ...).
    pub kind: u8,
    /// The header line without its type byte and CRLF (the length of a
    /// bulk or aggregate, the text of a simple reply).
    pub header: Vec<u8>,
    pub children: Vec<Frame>,
}

/// Largest length or element count accepted from a server, so that a
/// corrupt header cannot make the test allocate without bound.
const MAX_LEN: i64 = 1 << 28;

fn bad(what: &str, line: &[u8]) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what}: {}", line.escape_ascii()),
    )
}

/// Reads exactly one reply from `r`.
pub fn read_frame(r: &mut impl BufRead) -> io::Result<Frame> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(bad("truncated or malformed reply header", &line));
    }
    let kind = line[0];
    let header = line[1..line.len() - 2].to_vec();
    let len = || -> io::Result<i64> {
        std::str::from_utf8(&header)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|n| (-1..=MAX_LEN).contains(n))
            .ok_or_else(|| bad("bad length", &line))
    };
    let mut frame = Frame {
        raw: line.clone(),
        kind,
        header: header.clone(),
        children: Vec::new(),
    };
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
        b'$' | b'!' | b'=' => {
            let n = len()?;
            if n >= 0 {
                let mut body = vec![0u8; n as usize + 2];
                r.read_exact(&mut body)?;
                if !body.ends_with(b"\r\n") {
                    return Err(bad("bulk without CRLF", &body));
                }
                frame.raw.extend_from_slice(&body);
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = len()?;
            let count = if matches!(kind, b'%' | b'|') {
                n * 2
            } else {
                n
            };
            for _ in 0..count.max(0) {
                let child = read_frame(r)?;
                frame.raw.extend_from_slice(&child.raw);
                frame.children.push(child);
            }
        }
        _ => return Err(bad("unknown reply type", &line)),
    }
    Ok(frame)
}

/// Appends `args` to `out` as a RESP array of bulk strings.
pub fn encode(args: &[Vec<u8>], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A connection to one server.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    /// Connects, with a read timeout so that a server that never answers
    /// fails the test instead of hanging it.
    pub fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let sock = TcpStream::connect(addr)?;
        sock.set_read_timeout(Some(Duration::from_secs(20)))?;
        sock.set_nodelay(true)?;
        Ok(Conn {
            writer: sock.try_clone()?,
            reader: BufReader::with_capacity(1 << 16, sock),
        })
    }

    /// Sends already encoded commands.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.writer.write_all(bytes)
    }

    /// Reads the next reply.
    pub fn read(&mut self) -> io::Result<Frame> {
        read_frame(&mut self.reader)
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> io::Result<Frame> {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let mut buf = Vec::new();
        encode(&args, &mut buf);
        self.send(&buf)?;
        self.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Frame {
        read_frame(&mut &b[..]).unwrap()
    }

    #[test]
    fn frames_keep_their_exact_bytes() {
        let wire = b"%2\r\n$1\r\na\r\n*2\r\n:1\r\n_\r\n+x\r\n$-1\r\n,1.5\r\n";
        let f = parse(wire);
        assert_eq!(f.kind, b'%');
        assert_eq!(f.children.len(), 4);
        assert_eq!(f.children[1].children.len(), 2);
        assert_eq!(f.raw, wire[..wire.len() - 6].to_vec());
        let mut r = &wire[..];
        read_frame(&mut r).unwrap();
        assert_eq!(read_frame(&mut r).unwrap().raw, b",1.5\r\n");
        assert!(read_frame(&mut r).is_err());
    }

    #[test]
    fn malformed_replies_are_errors() {
        for b in [
            &b"$5\r\nab\r\n"[..],
            b"*x\r\n",
            b"?1\r\n",
            b"+ok",
            b"$999999999999\r\n",
        ] {
            assert!(read_frame(&mut &b[..]).is_err(), "{}", b.escape_ascii());
        }
    }
}
