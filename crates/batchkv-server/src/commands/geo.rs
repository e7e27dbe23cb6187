//! Geospatial commands on sorted sets, as Redis 7.0 runs them: GEOADD
//! (ZADD of 52-bit cell scores), GEOPOS, GEODIST, GEOHASH, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms.
//! The arithmetic is `geo.rs`'s; a search scans the score ranges of up to
//! nine cells in Redis's order, so unsorted results come in Redis's order
//! too.

use bytes::{BufMut, Bytes, BytesMut};

use super::strings::tri;
use super::zsets::parse::parse_score;
use super::zsets::read_zset;
use super::{spec, syntax_error, CommandSpec, ConnState, KEY1};
use crate::batcher::Shape;
use crate::geo::{self, Shape as Area, ShapeKind};
use crate::keyspace::db_key;
use crate::ldouble::LDouble;
use crate::meta::{Kind, Meta};
use crate::resp::{self, Reply};
use crate::shared::Shared;

const WM: &[&str] = &["write", "denyoom"];
const RO: &[&str] = &["readonly"];
const MOVABLE_W: &[&str] = &["write", "denyoom", "movablekeys"];

pub(super) static COMMANDS: &[CommandSpec] = &[
    spec("geoadd", -5, WM, KEY1, geoadd),
    spec("geopos", -2, RO, KEY1, geopos)
        .batched(|a| (a.len() > 1).then(|| Shape::GeoPos(a.len() - 1))),
    spec("geodist", -4, RO, KEY1, geodist).batched(|a| match a.len() {
        3 => Some(Shape::GeoDist(Unit::M)),
        4 => Unit::parse(&a[3]).map(Shape::GeoDist),
        _ => None,
    }),
    spec("geohash", -2, RO, KEY1, geohash)
        .batched(|a| (a.len() > 1).then(|| Shape::GeoHash(a.len() - 1))),
    spec("geosearch", -7, RO, KEY1, |s, c, a| {
        search(s, c, a, Form::Search)
    }),
    spec("geosearchstore", -8, WM, (1, 2, 1), |s, c, a| {
        search(s, c, a, Form::SearchStore)
    }),
    spec("georadius", -6, MOVABLE_W, KEY1, |s, c, a| {
        search(s, c, a, Form::Radius { store: true })
    }),
    spec("georadius_ro", -6, RO, KEY1, |s, c, a| {
        search(s, c, a, Form::Radius { store: false })
    }),
    spec("georadiusbymember", -5, MOVABLE_W, KEY1, |s, c, a| {
        search(s, c, a, Form::ByMember { store: true })
    }),
    spec("georadiusbymember_ro", -5, RO, KEY1, |s, c, a| {
        search(s, c, a, Form::ByMember { store: false })
    }),
];

/// A longitude, latitude pair of arguments (Redis's
/// `extractLongLatOrReply`).
fn long_lat(a: &[Bytes]) -> Result<(f64, f64), Reply> {
    let long = parse_score(&a[0]).ok_or_else(not_float)?;
    let lat = parse_score(&a[1]).ok_or_else(not_float)?;
    if !(geo::LONG_MIN..=geo::LONG_MAX).contains(&long)
        || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&lat)
    {
        return Err(Reply::err(format!(
            "ERR invalid longitude,latitude pair {long:.6},{lat:.6}"
        )));
    }
    Ok((long, lat))
}

fn not_float() -> Reply {
    Reply::err("ERR value is not a valid float")
}

/// A distance unit: `m`, `km`, `ft`, `mi` (any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    M,
    Km,
    Ft,
    Mi,
}

impl Unit {
    pub fn parse(b: &[u8]) -> Option<Unit> {
        match b.to_ascii_lowercase().as_slice() {
            b"m" => Some(Unit::M),
            b"km" => Some(Unit::Km),
            b"ft" => Some(Unit::Ft),
            b"mi" => Some(Unit::Mi),
            _ => None,
        }
    }

    /// Meters per unit (Redis's `extractUnitOrReply`).
    pub fn meters(self) -> f64 {
        match self {
            Unit::M => 1.0,
            Unit::Km => 1000.0,
            Unit::Ft => 0.3048,
            Unit::Mi => 1609.34,
        }
    }
}

/// Meters per unit `m`, `km`, `ft`, `mi` (any case), or the error.
fn unit(b: &[u8]) -> Result<f64, Reply> {
    Unit::parse(b)
        .map(Unit::meters)
        .ok_or_else(|| Reply::err("ERR unsupported unit provided. please use M, KM, FT, MI"))
}

/// A distance argument with a custom error for a non-number.
fn number(b: &[u8], what: &str) -> Result<f64, Reply> {
    parse_score(b).ok_or_else(|| Reply::err(format!("ERR {what}")))
}

/// Appends a coordinate as Redis's `addReplyHumanLongDouble` writes it:
/// `%.17Lf` without trailing zeros; a bulk string in RESP2, a double in
/// RESP3.
fn encode_human(proto: u8, out: &mut BytesMut, v: f64) {
    let text = LDouble::from_f64(v).to_human();
    if proto >= 3 {
        out.put_u8(b',');
        out.put_slice(text.as_bytes());
        out.put_slice(b"\r\n");
    } else {
        resp::encode_bulk(out, text.as_bytes());
    }
}

/// Appends a position, longitude then latitude (GEOPOS's reply for one
/// member, WITHCOORD's pair).
fn encode_coordinates(proto: u8, out: &mut BytesMut, (long, lat): (f64, f64)) {
    resp::encode_array_header(out, 2);
    encode_human(proto, out, long);
    encode_human(proto, out, lat);
}

/// Appends GEOPOS's reply for a member with `score` (also the batched
/// GEOPOS's, `batcher.rs`).
pub(crate) fn encode_position(proto: u8, out: &mut BytesMut, score: f64) {
    encode_coordinates(proto, out, geo::decode_score(score));
}

/// A position as a reply (WITHCOORD).
fn coordinates(proto: u8, pos: (f64, f64)) -> Reply {
    let mut out = BytesMut::with_capacity(48);
    encode_coordinates(proto, &mut out, pos);
    Reply::Encoded(out)
}

/// A distance as Redis replies it: `%.4f`, a bulk string.
fn distance_reply(d: f64) -> Reply {
    Reply::bulk(format!("{d:.4}").into_bytes())
}

/// Appends GEODIST's reply for the two members' scores (`None` unless
/// both exist): the batched GEODIST's (`batcher.rs`), as [`geodist`]'s.
pub(crate) fn encode_distance(
    proto: u8,
    out: &mut BytesMut,
    scores: Option<(f64, f64)>,
    unit: Unit,
) {
    match scores {
        Some((s1, s2)) => {
            let d = distance_between(s1, s2) / unit.meters();
            resp::encode_bulk(out, format!("{d:.4}").as_bytes());
        }
        None => resp::encode_nil(proto, out),
    }
}

/// The distance in meters between the positions of two cell scores.
fn distance_between(s1: f64, s2: f64) -> f64 {
    let (x1, y1) = geo::decode_score(s1);
    let (x2, y2) = geo::decode_score(s2);
    geo::distance(x1, y1, x2, y2)
}

/// The scores of `members` in the set (one batched read).
fn scores(
    shared: &Shared,
    set: &Option<(Vec<u8>, Meta)>,
    members: &[&[u8]],
) -> Result<Vec<Option<f64>>, Reply> {
    let Some((k, m)) = set else {
        return Ok(vec![None; members.len()]);
    };
    Ok(super::coll::read_elements(shared, k, m, members)?
        .into_iter()
        .map(|v| {
            v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
                .map(f64::from_le_bytes)
        })
        .collect())
}

/// The scores of the members after the key in `a` (GEOPOS, GEOHASH).
fn scores_of_args(
    shared: &Shared,
    conn: &ConnState,
    a: &[Bytes],
) -> Result<Vec<Option<f64>>, Reply> {
    let set = read_zset(shared, conn, &a[0])?;
    let members: Vec<&[u8]> = a[1..].iter().map(|m| &m[..]).collect();
    scores(shared, &set, &members)
}

/// GEOADD key [NX|XX] [CH] longitude latitude member ...: ZADD of the
/// members' cell scores.
fn geoadd(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let mut first = 1;
    let (mut nx, mut xx) = (false, false);
    while let Some(o) = a.get(first) {
        match o.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"ch" => {}
            _ => break,
        }
        first += 1;
    }
    let rest = &a[first..];
    if rest.is_empty() || !rest.len().is_multiple_of(3) || (nx && xx) {
        return syntax_error();
    }
    let mut zadd: Vec<Bytes> = a[..first].to_vec();
    for t in rest.chunks(3) {
        let (long, lat) = tri!(long_lat(t));
        let bits = geo::encode_wgs84(long, lat).unwrap_or(0);
        zadd.push(Bytes::from(bits.to_string()));
        zadd.push(t[2].clone());
    }
    super::zsets::zadd(shared, conn, &zadd)
}

/// GEOPOS key member ...: each member's position, nil if absent.
fn geopos(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let found = tri!(scores_of_args(shared, conn, a));
    Reply::Array(
        found
            .into_iter()
            .map(|s| match s {
                None => Reply::NilArray,
                Some(s) => coordinates(conn.proto, geo::decode_score(s)),
            })
            .collect(),
    )
}

/// GEODIST key member1 member2 [unit].
fn geodist(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let per = match a.len() {
        3 => 1.0,
        4 => tri!(unit(&a[3])),
        _ => return syntax_error(),
    };
    let set = tri!(read_zset(shared, conn, &a[0]));
    let found = tri!(scores(shared, &set, &[&a[1], &a[2]]));
    match (found[0], found[1]) {
        (Some(s1), Some(s2)) => distance_reply(distance_between(s1, s2) / per),
        _ => Reply::Nil,
    }
}

/// GEOHASH key member ...: 11-character standard geohashes.
fn geohash(shared: &Shared, conn: &mut ConnState, a: &[Bytes]) -> Reply {
    let found = tri!(scores_of_args(shared, conn, a));
    Reply::Array(
        found
            .into_iter()
            .map(|s| {
                s.map_or(Reply::Nil, |s| {
                    Reply::bulk(geo::standard_geohash(s).to_vec())
                })
            })
            .collect(),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Search,
    SearchStore,
    /// GEORADIUS (with STORE/STOREDIST allowed) and GEORADIUS_RO.
    Radius {
        store: bool,
    },
    ByMember {
        store: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// One match: member, score, distance (meters), position.
struct Point {
    member: Vec<u8>,
    score: f64,
    dist: f64,
    pos: (f64, f64),
}

/// The position of `member` in the set, if it has one.
fn member_position(
    shared: &Shared,
    set: &Option<(Vec<u8>, Meta)>,
    member: &[u8],
) -> Result<Option<(f64, f64)>, Reply> {
    Ok(scores(shared, set, &[member])?[0].map(geo::decode_score))
}

/// The search commands (Redis's `georadiusGeneric`): arguments checked in
/// Redis's order, then the cells scanned, sorted, replied or stored.
fn search(shared: &Shared, conn: &mut ConnState, a: &[Bytes], form: Form) -> Reply {
    let (src_at, store_form) = match form {
        Form::SearchStore => (1, true),
        _ => (0, false),
    };
    let store_dst = store_form.then(|| db_key(conn.db, &a[0]));
    let src = db_key(conn.db, &a[src_at]);
    // A write locks the source and the destination (named later for
    // STORE); a read runs at the command's snapshot.
    let _g = matches!(
        form,
        Form::SearchStore | Form::Radius { store: true } | Form::ByMember { store: true }
    )
    .then(|| {
        let mut keys = vec![src.clone()];
        keys.extend(search_dst(conn.db, a, form));
        keys.extend(store_dst.clone());
        shared.lock_keys(&keys)
    });
    shared.at_snapshot(|| search_locked(shared, conn, a, form, src, store_dst))
}

/// GEORADIUS's STORE/STOREDIST destination, found before the locks.
fn search_dst(db: u8, a: &[Bytes], form: Form) -> Option<Vec<u8>> {
    let base = match form {
        Form::Radius { store: true } => 5,
        Form::ByMember { store: true } => 4,
        _ => return None,
    };
    let mut i = base;
    let mut dst = None;
    while i < a.len() {
        let w = a[i].to_ascii_lowercase();
        if (w == b"store" || w == b"storedist") && i + 1 < a.len() {
            dst = Some(db_key(db, &a[i + 1]));
            i += 1;
        } else if w == b"count" && i + 1 < a.len() {
            i += 1;
        }
        i += 1;
    }
    dst
}

fn search_locked(
    shared: &Shared,
    conn: &mut ConnState,
    a: &[Bytes],
    form: Form,
    src: Vec<u8>,
    mut store: Option<Vec<u8>>,
) -> Reply {
    let set = match shared.read_meta(&src, Kind::ZSet) {
        Ok(m) => m.map(|m| (src.clone(), m)),
        Err(e) => return e,
    };
    let mut center = None;
    let mut kind = None;
    let mut per = 1.0;
    let base = match form {
        Form::Radius { .. } => {
            center = Some(tri!(long_lat(&a[1..3])));
            let r = tri!(radius(&a[3..5]));
            kind = Some(ShapeKind::Radius(r.0));
            per = r.1;
            5
        }
        Form::ByMember { .. } if set.is_none() => 4,
        Form::ByMember { .. } => {
            match tri!(member_position(shared, &set, &a[1])) {
                Some(p) => center = Some(p),
                None => return Reply::err("ERR could not decode requested zset member"),
            }
            let r = tri!(radius(&a[2..4]));
            kind = Some(ShapeKind::Radius(r.0));
            per = r.1;
            4
        }
        Form::Search => 1,
        Form::SearchStore => 2,
    };
    let geosearch = matches!(form, Form::Search | Form::SearchStore);
    let may_store = matches!(
        form,
        Form::Radius { store: true } | Form::ByMember { store: true }
    );
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut order = Order::None;
    let mut count: i64 = 0;
    let mut storedist = false;
    let rest = &a[base..];
    let mut i = 0;
    while i < rest.len() {
        let left = rest.len() - i - 1;
        let w = rest[i].to_ascii_lowercase();
        match w.as_slice() {
            b"withdist" => withdist = true,
            b"withhash" => withhash = true,
            b"withcoord" => withcoord = true,
            b"any" => any = true,
            b"asc" => order = Order::Asc,
            b"desc" => order = Order::Desc,
            b"count" if left >= 1 => {
                count = tri!(super::parse_int(&rest[i + 1]).ok_or_else(super::not_integer));
                if count <= 0 {
                    return Reply::err("ERR COUNT must be > 0");
                }
                i += 1;
            }
            b"store" | b"storedist" if left >= 1 && may_store => {
                storedist = w == b"storedist";
                store = Some(db_key(conn.db, &rest[i + 1]));
                i += 1;
            }
            b"storedist" if form == Form::SearchStore => storedist = true,
            b"frommember" if left >= 1 && geosearch && !fromloc => {
                if set.is_some() {
                    match tri!(member_position(shared, &set, &rest[i + 1])) {
                        Some(p) => center = Some(p),
                        None => return Reply::err("ERR could not decode requested zset member"),
                    }
                }
                frommember = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && geosearch && !frommember => {
                center = Some(tri!(long_lat(&rest[i + 1..i + 3])));
                fromloc = true;
                i += 2;
            }
            b"byradius" if left >= 2 && geosearch && !bybox => {
                let r = tri!(radius(&rest[i + 1..i + 3]));
                kind = Some(ShapeKind::Radius(r.0));
                per = r.1;
                byradius = true;
                i += 2;
            }
            b"bybox" if left >= 3 && geosearch && !byradius => {
                let w = tri!(number(&rest[i + 1], "need numeric width"));
                let h = tri!(number(&rest[i + 2], "need numeric height"));
                if h < 0.0 || w < 0.0 {
                    return Reply::err("ERR height or width cannot be negative");
                }
                per = tri!(unit(&rest[i + 3]));
                kind = Some(ShapeKind::Box {
                    width: w,
                    height: h,
                });
                bybox = true;
                i += 3;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        let what = if form == Form::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Reply::err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    let name = super::TYPED_NAME;
    if geosearch && !(frommember || fromloc) {
        return Reply::err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        ));
    }
    if geosearch && !(byradius || bybox) {
        return Reply::err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        ));
    }
    if any && count == 0 {
        return Reply::err("ERR the ANY argument requires COUNT argument");
    }
    // The STORE destination's event (an empty result publishes `del`).
    let event = if geosearch {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    let (Some((k, m)), Some(center), Some(kind)) = (&set, center, kind) else {
        return match store {
            Some(dst) => {
                tri!(super::zsets::store_scored(shared, &dst, Vec::new(), event));
                Reply::Int(0)
            }
            None => Reply::Array(Vec::new()),
        };
    };
    if count != 0 && order == Order::None && !any {
        order = Order::Asc;
    }
    let shape = Area {
        center,
        unit: per,
        kind,
    };
    let limit = if any { count as usize } else { 0 };
    let mut found: Vec<Point> = Vec::new();
    for (min, max) in shape.ranges() {
        if limit != 0 && found.len() >= limit {
            break;
        }
        tri!(super::zsets::visit_scores(
            shared,
            k,
            m,
            min,
            max,
            |member, score| {
                let pos = geo::decode_score(score);
                if let Some(dist) = shape.distance_within(pos.0, pos.1) {
                    found.push(Point {
                        member: member.to_vec(),
                        score,
                        dist,
                        pos,
                    });
                }
                !(limit != 0 && found.len() >= limit)
            }
        ));
    }
    if order != Order::None {
        // Redis: a full sort is glibc's qsort (a stable merge sort); a
        // COUNT below the matches is `pqsort`, whose order of equal
        // distances is its own.
        let mut cmp = |x: &Point, y: &Point| {
            let o = x
                .dist
                .partial_cmp(&y.dist)
                .unwrap_or(std::cmp::Ordering::Equal);
            if order == Order::Desc {
                o.reverse()
            } else {
                o
            }
        };
        let n = count as usize;
        if count != 0 && n < found.len() {
            crate::pqsort::pqsort(&mut found, 0, n - 1, &mut cmp);
        } else {
            found.sort_by(cmp);
        }
    }
    if count != 0 {
        found.truncate(count as usize);
    }
    if let Some(dst) = store {
        let n = found.len();
        let items = found
            .into_iter()
            .map(|p| {
                let s = if storedist { p.dist / per } else { p.score };
                (p.member, s)
            })
            .collect();
        tri!(super::zsets::store_scored(shared, &dst, items, event));
        return Reply::Int(n as i64);
    }
    let proto = conn.proto;
    let options = usize::from(withdist) + usize::from(withhash) + usize::from(withcoord);
    Reply::Array(
        found
            .into_iter()
            .map(|p| {
                if options == 0 {
                    return Reply::bulk(p.member);
                }
                let mut row = vec![Reply::bulk(p.member)];
                if withdist {
                    row.push(distance_reply(p.dist / per));
                }
                if withhash {
                    row.push(Reply::Int(p.score as i64));
                }
                if withcoord {
                    row.push(coordinates(proto, p.pos));
                }
                Reply::Array(row)
            })
            .collect(),
    )
}

/// A radius and its unit (`extractDistanceOrReply`): `(radius, meters
/// per unit)`.
fn radius(a: &[Bytes]) -> Result<(f64, f64), Reply> {
    let r = number(&a[0], "need numeric radius")?;
    if r < 0.0 {
        return Err(Reply::err("ERR radius cannot be negative"));
    }
    Ok((r, unit(&a[1])?))
}
