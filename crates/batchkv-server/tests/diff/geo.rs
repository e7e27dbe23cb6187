//! Generators for the geo commands. Each member has its own positions
//! (so that no two members share one and distance sorts have no ties);
//! searches center on those positions or on a member, with radii and
//! boxes from meters to thousands of kilometers, in every unit.

use super::compare::Cmp::Exact;
use super::generate::{b, cmd, Args, CmdGen, Gen, MEMBERS};

/// Two positions per member of [`MEMBERS`] (longitude, latitude), a few
/// hundred kilometers apart in Sicily, one far away.
const POSITIONS: [[(&str, &str); 2]; 9] = [
    [("13.361389", "38.115556"), ("13.4", "38.2")],
    [("15.087269", "37.502669"), ("15.1", "37.6")],
    [("12.758489", "38.788135"), ("12.9", "38.9")],
    [("13.583333", "37.316667"), ("-73.98", "40.75")],
    [("14.015482", "37.490055"), ("14.2", "37.3")],
    [("12.433", "37.8"), ("151.2", "-33.86")],
    [("15.55", "38.19"), ("15.6", "38.25")],
    [("14.8", "38.0"), ("14.81", "38.01")],
    [("13.9", "37.7"), ("13.95", "37.72")],
];

/// A member and one of its positions.
fn placed(g: &mut Gen) -> [Vec<u8>; 3] {
    let i = g.below(MEMBERS.len());
    let (long, lat) = POSITIONS[i][usize::from(g.chance(0.2))];
    [b(long), b(lat), b(MEMBERS[i])]
}

/// A center: a position of some member (or a bad one).
fn lon_lat(g: &mut Gen) -> [Vec<u8>; 2] {
    if g.chance(0.05) {
        return [g.pick(&["200", "x", "13"]), g.pick(&["38", "86", "y"])];
    }
    let (long, lat) = POSITIONS[g.below(POSITIONS.len())][usize::from(g.chance(0.2))];
    [b(long), b(lat)]
}

fn unit(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(&["m", "km", "mi", "ft", "KM"], &["parsec"], 0.03)
}

fn distance(g: &mut Gen) -> Vec<u8> {
    g.good_or_bad(
        &["0", "50", "1000", "30", "200", "5000", "0.5"],
        &["-1", "x"],
        0.03,
    )
}

/// GEOADD key [NX|XX] [CH] (longitude latitude member)+.
fn geoadd(g: &mut Gen) -> Args {
    let mut c = cmd("GEOADD", [g.key()]);
    for _ in 0..g.range(0, 2) {
        c.push(g.pick(&["NX", "XX", "CH", "nx"]));
    }
    for _ in 0..g.range(1, 3) {
        if g.chance(0.04) {
            c.extend([g.pick(&["181", "x"]), b("38"), g.member()]);
        } else {
            c.extend(placed(g));
        }
    }
    c
}

/// Reply options of a search: WITH*, ASC|DESC, COUNT [ANY].
fn reply_options(g: &mut Gen, with: bool) -> Vec<Vec<u8>> {
    let mut o = Vec::new();
    if with {
        for w in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
            if g.chance(0.3) {
                o.push(b(w));
            }
        }
    }
    if g.chance(0.5) {
        o.push(g.pick(&["ASC", "DESC"]));
    }
    if g.chance(0.3) {
        o.extend([b("COUNT"), g.pick(&["1", "2", "3", "0", "-1", "x"])]);
        if g.chance(0.3) {
            o.push(b("ANY"));
        }
    } else if g.chance(0.03) {
        o.push(b("ANY"));
    }
    o
}

/// GEOSEARCH's FROM and BY parts (sometimes one missing, or both forms).
fn search_area(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut o = Vec::new();
    if g.chance(0.5) {
        o.extend([b("FROMMEMBER"), g.member()]);
    } else if g.chance(0.97) {
        o.push(b("FROMLONLAT"));
        o.extend(lon_lat(g));
    }
    if g.chance(0.5) {
        o.extend([b("BYRADIUS"), distance(g), unit(g)]);
    } else if g.chance(0.97) {
        o.extend([b("BYBOX"), distance(g), distance(g), unit(g)]);
    }
    o
}

fn geosearch(g: &mut Gen) -> Args {
    let mut c = cmd("GEOSEARCH", [g.key()]);
    c.extend(search_area(g));
    c.extend(reply_options(g, true));
    c
}

fn geosearchstore(g: &mut Gen) -> Args {
    let mut c = cmd("GEOSEARCHSTORE", [g.key(), g.key()]);
    c.extend(search_area(g));
    let with = g.chance(0.05);
    c.extend(reply_options(g, with));
    if g.chance(0.4) {
        c.push(b("STOREDIST"));
    }
    c
}

/// GEORADIUS[_RO] and GEORADIUSBYMEMBER[_RO], with STORE or STOREDIST
/// for the writing forms.
fn georadius(g: &mut Gen, by_member: bool, ro: bool) -> Args {
    let name = match (by_member, ro) {
        (false, false) => "GEORADIUS",
        (false, true) => "GEORADIUS_RO",
        (true, false) => "GEORADIUSBYMEMBER",
        (true, true) => "GEORADIUSBYMEMBER_RO",
    };
    let mut c = cmd(name, [g.key()]);
    if by_member {
        c.push(g.member());
    } else {
        c.extend(lon_lat(g));
    }
    c.extend([distance(g), unit(g)]);
    let store = !ro && g.chance(0.3);
    let with = !store || g.chance(0.05);
    c.extend(reply_options(g, with));
    if store || (ro && g.chance(0.03)) {
        c.extend([g.pick(&["STORE", "STOREDIST"]), g.key()]);
    }
    c
}

/// The geo commands.
pub static COMMANDS: &[CmdGen] = &[
    CmdGen::new("geoadd", 8, Exact, geoadd),
    CmdGen::new("geopos", 3, Exact, |g| {
        let mut c = cmd("GEOPOS", [g.key()]);
        c.extend(g.members(0, 3));
        c
    }),
    CmdGen::new("geodist", 3, Exact, |g| {
        let mut c = cmd("GEODIST", [g.key(), g.member(), g.member()]);
        if g.chance(0.5) {
            c.push(unit(g));
        }
        c
    }),
    CmdGen::new("geohash", 2, Exact, |g| {
        let mut c = cmd("GEOHASH", [g.key()]);
        c.extend(g.members(0, 3));
        c
    }),
    CmdGen::new("geosearch", 6, Exact, geosearch),
    CmdGen::new("geosearchstore", 3, Exact, geosearchstore),
    CmdGen::new("georadius", 2, Exact, |g| georadius(g, false, false)),
    CmdGen::new("georadius_ro", 1, Exact, |g| georadius(g, false, true)),
    CmdGen::new("georadiusbymember", 2, Exact, |g| georadius(g, true, false)),
    CmdGen::new("georadiusbymember_ro", 1, Exact, |g| {
        georadius(g, true, true)
    }),
];
