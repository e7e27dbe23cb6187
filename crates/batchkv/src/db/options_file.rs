//! The `OPTIONS` file (`docs/format/options.md`): the options of the last
//! open, and the merge operator each column family was opened with, which
//! the next open checks (RocksDB refuses to open with another merge
//! operator than the one its OPTIONS file records).
//!
//! Layout: `#` comment lines and `name=value` lines (the default family's
//! options, in `Options::set`'s syntax); then, if any family has a merge
//! operator, a `[merge_operators]` section with one `family=operator` line
//! per such family, both names percent-encoded ([`encode`]). A file without
//! that section (written before it existed, or with no operator in use)
//! records nothing, and any operator may be used.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::FileSystem;
use crate::options::Options;

/// The header of the section that records merge operators. On disk.
const SECTION: &str = "[merge_operators]";

/// Replaces `OPTIONS` in `dir` atomically (temp file `temp`, fsync,
/// rename, directory fsync) with `opts` and `operators` — (family name,
/// merge operator name) for each live family that has one. A crash leaves
/// the old file or the new one, and at worst a temp file the next sweep
/// deletes.
pub(super) fn write(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    operators: &[(String, String)],
    temp: u64,
) -> Result<()> {
    let mut text = opts.options_file_text();
    if !operators.is_empty() {
        text.push('\n');
        text.push_str(SECTION);
        text.push_str(
            "\n# column family=merge operator name (percent-encoded); checked at every open\n",
        );
        for (cf, op) in operators {
            text.push_str(&format!("{}={}\n", encode(cf), encode(op)));
        }
    }
    let tmp = filename::path(dir, FileKind::Temp, temp);
    let mut f = fs.new_writable(&tmp)?;
    f.append(text.as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(filename::OPTIONS))?;
    fs.sync_dir(dir)
}

/// (family name, merge operator name) of each of `families` that has an
/// operator: what [`write`] records.
pub(super) fn merge_operator_names<'a>(
    families: impl IntoIterator<Item = (&'a str, &'a Options)>,
) -> Vec<(String, String)> {
    families
        .into_iter()
        .filter_map(|(name, o)| {
            let op = o.merge_operator.as_ref()?;
            Some((name.to_string(), op.name().to_string()))
        })
        .collect()
}

/// Rewrites `OPTIONS` of an open database after its families changed:
/// `opts` are the database's, `families` each live family's name and
/// options. A failure is logged, not returned: the family change is
/// durable already. A stale file misses a new family (opened later with
/// any operator) or names a dropped one's operator (checked against a new
/// family of that name; the open's error says how to fix the file).
pub(super) fn rewrite<'a>(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    families: impl IntoIterator<Item = (&'a str, &'a Options)>,
    temp: u64,
) {
    let operators = merge_operator_names(families);
    if let Err(e) = write(fs, dir, opts, &operators, temp) {
        log::warn!(
            "could not rewrite {}: {e}",
            dir.join(filename::OPTIONS).display()
        );
    }
}

/// The merge operators `dir/OPTIONS` records, by family name; `None` when
/// there is no OPTIONS file or it has no `[merge_operators]` section.
pub(super) fn recorded_merge_operators(
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<Option<BTreeMap<String, String>>> {
    let path = dir.join(filename::OPTIONS);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let data = fs.read_all(&path)?;
    let file = path.display().to_string();
    let bad = |offset: usize, why: String| Error::corruption(&file, offset as u64, why);
    let text = std::str::from_utf8(&data)
        .map_err(|e| bad(e.valid_up_to(), "the OPTIONS file is not UTF-8".to_string()))?;
    let mut recorded = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        let line = line.trim();
        if line == SECTION {
            recorded = Some(BTreeMap::new());
            continue;
        }
        let Some(map) = recorded.as_mut() else {
            continue;
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            // A section a later version added: not ours to read.
            break;
        }
        let (cf, op) = line.split_once('=').ok_or_else(|| {
            bad(
                at,
                format!("{SECTION}: expected family=operator, got {line:?}"),
            )
        })?;
        let decoded = |s: &str| {
            decode(s).ok_or_else(|| bad(at, format!("{SECTION}: bad encoding in {line:?}")))
        };
        map.insert(decoded(cf)?, decoded(op)?);
    }
    Ok(recorded)
}

/// Refuses to open when a family the OPTIONS file (`path`) records a merge
/// operator for is opened with another one, or with none: its merge
/// operands would be merged wrongly, or fail to read. `families` gives
/// each live family's name and the operator it opens with.
pub(super) fn check_merge_operators<'a>(
    path: &Path,
    recorded: &BTreeMap<String, String>,
    families: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<()> {
    for (cf, given) in families {
        let Some(wrote) = recorded.get(cf) else {
            continue;
        };
        if given == Some(wrote.as_str()) {
            continue;
        }
        let opened = match given {
            Some(g) => format!("merge operator {g:?}"),
            None => "no merge operator".to_string(),
        };
        let how = if cf == crate::version::DEFAULT_CF_NAME {
            "Options::merge_operator"
        } else {
            "its options in Db::open_with_cf_options, or \
             Db::open_as_secondary_with_cf_options for a secondary"
        };
        return Err(Error::InvalidArgument(format!(
            "column family {cf:?} was written with merge operator {wrote:?} (recorded in {}) \
             but is opened with {opened}: its merge operands would not read back as written. \
             Open it with the operator named {wrote:?} ({how}); to change operators \
             deliberately, delete its line from the {SECTION} section of that file",
            path.display()
        )));
    }
    Ok(())
}

/// Percent-encodes the bytes of `s` that would break a `name=value` line:
/// `%`, `=`, `#`, `[`, `]`, whitespace, control and non-ASCII bytes.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'=' | b'#' | b'[' | b']') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Inverse of [`encode`]; `None` for a bad escape or bytes that are not UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::PosixFs;

    #[test]
    fn names_round_trip_through_the_encoding() {
        for s in ["default", "a=b", "50% [x] #1", "tab\there", "ünï", ""] {
            let e = encode(s);
            assert!(!e.contains(['=', '#', '[', ']', ' ', '\t']), "{e}");
            assert_eq!(decode(&e).as_deref(), Some(s));
        }
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%FF"), None, "not UTF-8");
    }

    #[test]
    fn the_section_is_written_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        assert_eq!(recorded_merge_operators(&fs, dir.path()).unwrap(), None);
        // No operator in use: no section, nothing recorded.
        write(&fs, dir.path(), &Options::default(), &[], 9).unwrap();
        assert_eq!(recorded_merge_operators(&fs, dir.path()).unwrap(), None);
        let ops = vec![
            ("default".to_string(), "add".to_string()),
            ("odd = name".to_string(), "append(,)".to_string()),
        ];
        write(&fs, dir.path(), &Options::default(), &ops, 9).unwrap();
        let rec = recorded_merge_operators(&fs, dir.path()).unwrap().unwrap();
        assert_eq!(rec.len(), 2);
        assert_eq!(rec["odd = name"], "append(,)");
        // The default family's options still read back.
        Options::from_options_file(dir.path().join("OPTIONS")).unwrap();
        let path = dir.path().join("OPTIONS");
        check_merge_operators(&path, &rec, [("default", Some("add")), ("other", None)]).unwrap();
        let err = check_merge_operators(&path, &rec, [("default", Some("sub"))]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("\"add\"") && msg.contains("\"sub\""), "{msg}");
        let err = check_merge_operators(&path, &rec, [("odd = name", None)]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no merge operator"), "{msg}");
        // A family's operator is given in either open that takes per-family options.
        assert!(
            msg.contains("Db::open_with_cf_options")
                && msg.contains("Db::open_as_secondary_with_cf_options"),
            "{msg}"
        );
    }

    #[test]
    fn a_malformed_section_is_corruption_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("OPTIONS"),
            "write_buffer_size=1024\n[merge_operators]\nno equals sign\n",
        )
        .unwrap();
        let err = recorded_merge_operators(&PosixFs, dir.path()).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(err.to_string().contains("OPTIONS"), "{err}");
    }
}
