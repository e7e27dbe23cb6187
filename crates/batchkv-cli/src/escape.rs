//! The one escaping rule for bytes the CLI prints as text (`dump`, and
//! `get`/`scan` unless `--raw`): printable ASCII except the space as is,
//! `\\` for a backslash, `\xNN` for any other byte. The result holds no
//! whitespace and no control byte, so one entry stays on one line, fields
//! split on spaces or tabs, and escape codes never reach a terminal.

/// `bytes` escaped (see the module documentation).
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x21..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_unprintable_bytes_and_backslashes() {
        assert_eq!(escape(b"key01"), "key01");
        assert_eq!(escape(b"a b\\\x00\xff"), "a\\x20b\\\\\\x00\\xff");
        assert_eq!(escape(b"\t\n\x1b[0m"), "\\x09\\x0a\\x1b[0m");
        assert_eq!(escape(b""), "");
    }
}
