//! Keys and values as the data commands take them (arguments as bytes,
//! hex with `--hex`, values from a file or stdin) and print them (escaped,
//! hex, or raw).

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;

use crate::escape::escape;

/// How a command reads its key/value arguments and prints its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Arguments are their own bytes; output is escaped ([`escape`]).
    Text,
    /// Arguments and output are hex (two digits per byte).
    Hex,
    /// Arguments are their own bytes; output is the bytes unchanged.
    Raw,
}

impl Format {
    /// The bytes an argument stands for: its bytes (any, on unix), or with
    /// [`Format::Hex`] the bytes its hex digits spell.
    pub fn arg(self, what: &str, arg: &OsStr) -> Result<Vec<u8>, String> {
        let bytes = os_bytes(what, arg)?;
        match self {
            Format::Hex => decode_hex(&bytes).map_err(|e| format!("{what}: {e}")),
            Format::Text | Format::Raw => Ok(bytes),
        }
    }

    /// `bytes` as printed: escaped, hex, or unchanged.
    pub fn show(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Format::Text => escape(bytes).into_bytes(),
            Format::Hex => encode_hex(bytes).into_bytes(),
            Format::Raw => bytes.to_vec(),
        }
    }
}

/// The bytes of an argument as the OS passed it.
#[cfg(unix)]
fn os_bytes(_what: &str, arg: &OsStr) -> Result<Vec<u8>, String> {
    use std::os::unix::ffi::OsStrExt;
    Ok(arg.as_bytes().to_vec())
}

/// The bytes of an argument: non-unix systems pass UTF-8 only.
#[cfg(not(unix))]
fn os_bytes(what: &str, arg: &OsStr) -> Result<Vec<u8>, String> {
    arg.to_str()
        .map(|s| s.as_bytes().to_vec())
        .ok_or_else(|| format!("{what} is not valid UTF-8 (use --hex)"))
}

/// Decodes hex digits (either case, two per byte, nothing else).
pub fn decode_hex(s: &[u8]) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!(
            "hex needs two digits per byte, got {} digits",
            s.len()
        ));
    }
    s.chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(format!(
                "not hex: {:?} at position {}",
                String::from_utf8_lossy(pair),
                2 * i
            )),
        })
        .collect()
}

fn digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Lowercase hex, two digits per byte.
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// The whole contents of `path`, as a value.
pub fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("reading the value from {}: {e}", path.display()))
}

/// Everything on stdin, as a value.
pub fn read_stdin() -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut v)
        .map_err(|e| format!("reading the value from stdin: {e}"))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_what_is_not_hex() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_hex(encode_hex(&all).as_bytes()).unwrap(), all);
        assert_eq!(decode_hex(b"00FFaB").unwrap(), [0, 0xff, 0xab]);
        assert_eq!(decode_hex(b"").unwrap(), Vec::<u8>::new());
        assert!(decode_hex(b"abc").unwrap_err().contains("two digits"));
        assert!(decode_hex(b"0g").unwrap_err().contains("not hex"));
        assert!(decode_hex(b"+1").is_err(), "a sign is not a digit");
    }

    #[test]
    fn formats_show_bytes_escaped_hex_or_raw() {
        let v = b"a\t\x1b";
        assert_eq!(Format::Text.show(v), b"a\\x09\\x1b");
        assert_eq!(Format::Hex.show(v), b"61091b");
        assert_eq!(Format::Raw.show(v), v);
    }
}
