//! SORT and SORT_RO over lists, sets and sorted sets, with Redis 7.0's
//! options (BY, LIMIT, GET, ASC|DESC, ALPHA, STORE), argument checks and
//! errors. The keys BY and GET patterns name are read with one batched
//! read per pattern (two for hash fields), at one snapshot.
//!
//! Where Redis's order is its hash table's (a set with `BY nosort` and no
//! STORE) the members come in member order; ALPHA compares bytes up to
//! the first NUL (Redis: `strcoll`, byte order in the C locale).

use std::cmp::Ordering;

use bytes::Bytes;

use super::strings::tri;
use super::zsets::parse::strtod;
use super::{not_integer, parse_int, spec, syntax_error, CommandSpec, ConnState, KEY1};
use crate::errors::wrong_type;
use crate::keyspace::db_key;
use crate::meta::{self, Kind, Meta};
use crate::notify::{GENERIC, LIST};
use crate::resp::Reply;
use crate::shared::{Shared, Value};

pub(super) static COMMANDS: &[CommandSpec] = &[
    spec(
        "sort",
        -2,
        &["write", "denyoom", "movablekeys"],
        KEY1,
        |s, c, a| sort(s, c, a, false),
    ),
    spec(
        "sort_ro",
        -2,
        &["readonly", "movablekeys"],
        KEY1,
        |s, c, a| sort(s, c, a, true),
    ),
];

/// SORT's options as given.
struct Options {
    desc: bool,
    alpha: bool,
    /// LIMIT offset count (Redis's defaults: 0, -1).
    limit: (i64, i64),
    store: Option<Bytes>,
    /// BY's pattern, if it has a `*` (without one nothing is sorted).
    by: Option<Bytes>,
    dont_sort: bool,
    gets: Vec<Bytes>,
}

fn parse(a: &[Bytes], read_only: bool) -> Result<Options, Reply> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
    };
    let mut j = 1;
    while j < a.len() {
        let left = a.len() - j - 1;
        let word = a[j].to_ascii_lowercase();
        match word.as_slice() {
            b"asc" => o.desc = false,
            b"desc" => o.desc = true,
            b"alpha" => o.alpha = true,
            b"limit" if left >= 2 => {
                let start = parse_int(&a[j + 1]).ok_or_else(not_integer)?;
                let count = parse_int(&a[j + 2]).ok_or_else(not_integer)?;
                o.limit = (start, count);
                j += 2;
            }
            b"store" if left >= 1 && !read_only => {
                o.store = Some(a[j + 1].clone());
                j += 1;
            }
            b"by" if left >= 1 => {
                // A pattern without `*` (C's strchr: up to a NUL) sorts
                // nothing; a later BY with one sorts again.
                let p = &a[j + 1];
                let star = p.iter().take_while(|&&c| c != 0).any(|&c| c == b'*');
                o.dont_sort = !star;
                o.by = Some(p.clone());
                j += 1;
            }
            b"get" if left >= 1 => {
                o.gets.push(a[j + 1].clone());
                j += 1;
            }
            _ => return Err(syntax_error()),
        }
        j += 1;
    }
    Ok(o)
}

/// The stored key and element that pattern `p` names for `element`, with
/// the hash field after `->` if any; `None` if `p` has no `*` (Redis's
/// `lookupKeyByPattern`; `#` is handled by the caller).
fn pattern_key(db: u8, p: &[u8], element: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let star = p.iter().position(|&c| c == b'*')?;
    // A `->` after the `*` with something after it names a hash field.
    let field_at = p[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&f| f + 2 < p.len());
    let (post_end, field) = match field_at {
        Some(f) => (f, Some(p[f + 2..].to_vec())),
        None => (p.len(), None),
    };
    let mut key = Vec::with_capacity(p.len() + element.len());
    key.extend_from_slice(&p[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(&p[star + 1..post_end]);
    Some((db_key(db, &key), field))
}

/// The value pattern `p` gives for each of `elements`: the element itself
/// for `#`; a string's value, or a hash field's with `->field`; `None`
/// where the key is missing or of another type, or `p` has no `*`.
fn lookup(
    shared: &Shared,
    db: u8,
    p: &[u8],
    elements: &[Vec<u8>],
) -> Result<Vec<Option<Vec<u8>>>, Reply> {
    if p == b"#" {
        return Ok(elements.iter().cloned().map(Some).collect());
    }
    let named: Vec<_> = elements.iter().map(|e| pattern_key(db, p, e)).collect();
    let mut out = vec![None; elements.len()];
    let (mut at, mut keys) = (Vec::new(), Vec::new());
    for (i, n) in named.iter().enumerate() {
        if let Some((k, _)) = n {
            at.push(i);
            keys.push(k.clone());
        }
    }
    // Hash fields found: (index, element key), read in a second batch.
    let mut fields = Vec::new();
    for ((&i, key), v) in at.iter().zip(&keys).zip(shared.read_many(&keys)) {
        let field = named[i].as_ref().and_then(|(_, f)| f.as_deref());
        match (v?, field) {
            (Some(Value::Str(_, d)), None) => out[i] = Some(d),
            (Some(Value::Coll(m)), Some(f)) if m.kind == Kind::Hash => {
                fields.push((i, meta::element_key(key, m.version, f)));
            }
            _ => {}
        }
    }
    if !fields.is_empty() {
        let ekeys: Vec<&[u8]> = fields.iter().map(|(_, k)| k.as_slice()).collect();
        let vals = shared.get_many(&batchkv::ReadOptions::default(), &ekeys)?;
        for ((i, _), v) in fields.iter().zip(vals) {
            out[*i] = v;
        }
    }
    Ok(out)
}

/// Compares byte strings as C's `strcmp` (and `strcoll` in the C locale):
/// up to the first NUL of each.
fn c_string_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let cut = |s: &[u8]| -> usize { s.iter().position(|&c| c == 0).unwrap_or(s.len()) };
    a[..cut(a)].cmp(&b[..cut(b)])
}

/// A sort key's number as SORT reads it: C's `strtod` of the whole string
/// (up to a NUL; an empty string is 0), no range error, not NaN.
fn sort_number(b: &[u8]) -> Option<f64> {
    let (v, n, erange) = strtod(b);
    let ends = b.get(n).is_none_or(|&c| c == 0);
    (ends && !erange && !v.is_nan()).then_some(v)
}

/// The elements of the collection `m` at `key` in its own order: a list's,
/// a sorted set's by score (descending with `desc`), a set's by member.
fn elements(shared: &Shared, key: &[u8], m: &Meta, desc: bool) -> Result<Vec<Vec<u8>>, Reply> {
    let mut out = Vec::with_capacity(m.size.min(1 << 16) as usize);
    match m.kind {
        Kind::List => {
            out = super::lists::read_values(shared, key, m, 0, m.size)?;
            if desc {
                out.reverse();
            }
        }
        Kind::ZSet => out = super::zsets::members_by_score(shared, key, m, desc)?,
        _ => shared.scan_elements(key, m, false, |sub, _| {
            out.push(sub.to_vec());
            true
        })?,
    }
    Ok(out)
}

/// SORT and SORT_RO (`read_only`: no STORE).
fn sort(shared: &Shared, conn: &mut ConnState, a: &[Bytes], read_only: bool) -> Reply {
    let mut o = tri!(parse(a, read_only));
    let key = db_key(conn.db, &a[0]);
    let dst = o.store.as_ref().map(|d| db_key(conn.db, d));
    // STORE holds both keys' locks; a read alone needs only the snapshot.
    let _g = dst.as_ref().map(|d| shared.lock_keys(&[&key, d]));
    // Read at one snapshot: the collection and every key the patterns
    // name, as Redis sees them in one command.
    let result = shared.at_snapshot(|| sorted(shared, conn.db, &key, &mut o));
    let out = tri!(result);
    let Some(dst) = dst else {
        return Reply::Array(
            out.into_iter()
                .map(|v| v.map_or(Reply::Nil, Reply::bulk))
                .collect(),
        );
    };
    // A missing GET value is stored as an empty string.
    let vals: Vec<Vec<u8>> = out.into_iter().map(Option::unwrap_or_default).collect();
    // Redis: `sortstore`, or `del` if an empty result deleted a key.
    let deleted =
        vals.is_empty() && shared.notifies(GENERIC) && tri!(shared.read_value(&dst)).is_some();
    tri!(super::lists::replace(shared, &dst, &vals));
    if !vals.is_empty() {
        shared.notify(LIST, "sortstore", &dst);
    } else if deleted {
        shared.notify(GENERIC, "del", &dst);
    }
    Reply::Int(vals.len() as i64)
}

/// The reply's values (`None`: a GET that found nothing) of SORT with
/// options `o` on the key `key`.
fn sorted(
    shared: &Shared,
    db: u8,
    key: &[u8],
    o: &mut Options,
) -> Result<Vec<Option<Vec<u8>>>, Reply> {
    let m = match shared.read_value(key)? {
        None => None,
        Some(Value::Coll(m)) if matches!(m.kind, Kind::List | Kind::Set | Kind::ZSet) => Some(m),
        Some(_) => return Err(wrong_type()),
    };
    // A set is sorted (ALPHA) where Redis must not show its hash order.
    if o.dont_sort && o.store.is_some() && m.is_some_and(|m| m.kind == Kind::Set) {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = m.map_or(0, |m| m.size) as i64;
    // Redis's LIMIT arithmetic: an empty range is start > end.
    let start = o.limit.0.max(0);
    let mut end = if o.limit.1 < 0 {
        len - 1
    } else {
        start.saturating_add(o.limit.1) - 1
    };
    let (start, end) = if start >= len {
        (len - 1, len - 2)
    } else {
        end = end.min(len - 1);
        (start, end)
    };
    let mut items = match &m {
        Some(m) => elements(shared, key, m, o.dont_sort && o.desc)?,
        None => Vec::new(),
    };
    if !o.dont_sort {
        sort_items(shared, db, &mut items, o)?;
    }
    let picked: Vec<Vec<u8>> = if end >= start {
        items
            .into_iter()
            .skip(start as usize)
            .take((end - start + 1) as usize)
            .collect()
    } else {
        Vec::new()
    };
    if o.gets.is_empty() {
        return Ok(picked.into_iter().map(Some).collect());
    }
    let looked: Vec<Vec<Option<Vec<u8>>>> = o
        .gets
        .iter()
        .map(|p| lookup(shared, db, p, &picked))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(picked.len() * looked.len());
    for i in 0..picked.len() {
        for g in &looked {
            out.push(g[i].clone());
        }
    }
    Ok(out)
}

/// Sorts `items` as Redis's `sortCompare`: by number (ties by the bytes
/// of the elements), or with ALPHA by bytes; by BY's values where given.
fn sort_items(shared: &Shared, db: u8, items: &mut Vec<Vec<u8>>, o: &Options) -> Result<(), Reply> {
    // BY's values, moved out one per element (never copied).
    let mut by = match &o.by {
        Some(p) => Some(lookup(shared, db, p, items)?.into_iter()),
        None => None,
    };
    let mut keyed: Vec<(Vec<u8>, Option<Vec<u8>>, f64)> = Vec::with_capacity(items.len());
    let mut bad_number = false;
    for e in items.drain(..) {
        let by_val = by.as_mut().map(|values| values.next().flatten());
        let score = if o.alpha {
            0.0
        } else {
            // A missing BY value sorts as 0.
            let src = match &by_val {
                Some(v) => v.as_deref(),
                None => Some(e.as_slice()),
            };
            match src.map(sort_number) {
                Some(Some(v)) => v,
                Some(None) => {
                    bad_number = true;
                    0.0
                }
                None => 0.0,
            }
        };
        keyed.push((e, by_val.flatten(), score));
    }
    if bad_number {
        return Err(Reply::err(
            "ERR One or more scores can't be converted into double",
        ));
    }
    let store = o.store.is_some();
    let cmp = |a: &(Vec<u8>, Option<Vec<u8>>, f64), b: &(Vec<u8>, Option<Vec<u8>>, f64)| {
        let c = if !o.alpha {
            a.2.partial_cmp(&b.2)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.0.cmp(&b.0))
        } else if o.by.is_some() {
            match (&a.1, &b.1) {
                (Some(x), Some(y)) if store => x.cmp(y),
                (Some(x), Some(y)) => c_string_cmp(x, y),
                (None, None) => Ordering::Equal,
                (None, _) => Ordering::Less,
                (_, None) => Ordering::Greater,
            }
        } else if store {
            a.0.cmp(&b.0)
        } else {
            c_string_cmp(&a.0, &b.0)
        };
        if o.desc {
            c.reverse()
        } else {
            c
        }
    };
    keyed.sort_by(cmp);
    items.extend(keyed.into_iter().map(|(e, _, _)| e));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_substitute_the_first_star_and_split_hash_fields() {
        let k = |p: &str, e: &str| pattern_key(0, p.as_bytes(), e.as_bytes());
        assert_eq!(k("w_*", "3"), Some((db_key(0, b"w_3"), None)));
        assert_eq!(k("*_*", "x"), Some((db_key(0, b"x_*"), None)));
        assert_eq!(
            k("h_*->f", "3"),
            Some((db_key(0, b"h_3"), Some(b"f".to_vec())))
        );
        // Nothing after the arrow: a plain key.
        assert_eq!(k("h_*->", "3"), Some((db_key(0, b"h_3->"), None)));
        // An arrow before the star is part of the key.
        assert_eq!(k("a->*", "3"), Some((db_key(0, b"a->3"), None)));
        assert_eq!(k("nostar", "3"), None);
    }

    #[test]
    fn numbers_are_read_as_strtod_reads_them() {
        assert_eq!(sort_number(b"10"), Some(10.0));
        assert_eq!(sort_number(b" 1.5"), Some(1.5));
        assert_eq!(sort_number(b""), Some(0.0));
        assert_eq!(sort_number(b"0x10"), Some(16.0));
        assert_eq!(sort_number(b"inf"), Some(f64::INFINITY));
        assert_eq!(sort_number(b"1\0junk"), Some(1.0));
        for bad in [&b"a"[..], b"1 ", b"nan", b"1e999", b" "] {
            assert_eq!(sort_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn c_strings_end_at_nul() {
        assert_eq!(c_string_cmp(b"a\0b", b"a\0c"), Ordering::Equal);
        assert_eq!(c_string_cmp(b"a", b"ab"), Ordering::Less);
    }
}
