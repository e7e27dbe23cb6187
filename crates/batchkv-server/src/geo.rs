//! Geohash arithmetic as Redis 7.0 does it (`geohash.c`,
//! `geohash_helper.c`), bit for bit: a position is a sorted-set score,
//! the 52-bit interleaving of 26-bit latitude and longitude cells over
//! [-85.05112878, 85.05112878] × [-180, 180]; searches scan the score
//! ranges of a center cell and its eight neighbours at a step chosen from
//! the radius, then keep the members within the shape. Distances are
//! haversine on a sphere of 6,372,797.560856 m, with the C library's
//! trigonometry (the same functions Redis calls).

pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// Bits per coordinate of a stored position.
pub const STEP_MAX: u8 = 26;
const EARTH_RADIUS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

/// A geohash: `step` bits per coordinate, latitude in the even bits and
/// longitude in the odd ones. Step 0 with no bits is "none" (a neighbour
/// left out of a search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    const NONE: Hash = Hash { bits: 0, step: 0 };

    fn is_none(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// A cell's extent.
#[derive(Clone, Copy, Debug)]
struct Area {
    lat: (f64, f64),
    long: (f64, f64),
}

fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    ((x | (x >> 16)) & 0x0000_0000_ffff_ffff) as u32
}

/// Redis's `geohashEncode` over `lat` and `long` ranges; `None` outside
/// them (or the Web Mercator limits).
fn encode(lat_r: (f64, f64), long_r: (f64, f64), long: f64, lat: f64, step: u8) -> Option<Hash> {
    if !(LONG_MIN..=LONG_MAX).contains(&long) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.0 || lat > lat_r.1 || long < long_r.0 || long > long_r.1 {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.0) / (lat_r.1 - lat_r.0) * cells;
    let long_off = (long - long_r.0) / (long_r.1 - long_r.0) * cells;
    // C converts the doubles to uint32_t by truncation.
    Some(Hash {
        bits: spread(lat_off as u32) | (spread(long_off as u32) << 1),
        step,
    })
}

/// The stored cell (a score's 52 bits) of a valid position.
pub fn encode_wgs84(long: f64, lat: f64) -> Option<u64> {
    encode(
        (LAT_MIN, LAT_MAX),
        (LONG_MIN, LONG_MAX),
        long,
        lat,
        STEP_MAX,
    )
    .map(|h| h.bits)
}

fn decode(h: Hash) -> Area {
    let (lat_s, long_s) = (LAT_MAX - LAT_MIN, LONG_MAX - LONG_MIN);
    let ilat = squash(h.bits);
    let ilong = squash(h.bits >> 1);
    let cells = (1u64 << h.step) as f64;
    Area {
        lat: (
            LAT_MIN + (f64::from(ilat) * 1.0 / cells) * lat_s,
            LAT_MIN + ((f64::from(ilat) + 1.0) * 1.0 / cells) * lat_s,
        ),
        long: (
            LONG_MIN + (f64::from(ilong) * 1.0 / cells) * long_s,
            LONG_MIN + ((f64::from(ilong) + 1.0) * 1.0 / cells) * long_s,
        ),
    }
}

/// The position (longitude, latitude) a score stands for: its cell's
/// center, clamped to the limits (Redis's `decodeGeohash`).
pub fn decode_score(score: f64) -> (f64, f64) {
    let a = decode(Hash {
        bits: c_to_u64(score),
        step: STEP_MAX,
    });
    let long = ((a.long.0 + a.long.1) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((a.lat.0 + a.lat.1) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (long, lat)
}

/// C's `(uint64_t)` of a double as x86-64 compilers emit it (scores
/// that are not positions, from ZADD, decode as Redis decodes them):
/// below 2^63 a truncating `cvttsd2si`, else the same of `x - 2^63` with
/// the top bit flipped; `cvttsd2si` of what int64 cannot hold is
/// `i64::MIN`.
fn c_to_u64(x: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    let cvtt = |v: f64| -> i64 {
        if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
            i64::MIN
        } else {
            v as i64
        }
    };
    if x < TWO63 {
        cvtt(x) as u64
    } else {
        (cvtt(x - TWO63) as u64) ^ (1 << 63)
    }
}

/// GEOHASH's 11-character standard geohash of a score (its position
/// re-encoded over [-90, 90] × [-180, 180]).
pub fn standard_geohash(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (long, lat) = decode_score(score);
    let bits = encode((-90.0, 90.0), (-180.0, 180.0), long, lat, 26).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn deg_rad(d: f64) -> f64 {
    d * D_R
}

fn rad_deg(r: f64) -> f64 {
    r / D_R
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Haversine distance in meters (Redis 7.0's `geohashGetDistance`).
pub fn distance(long1: f64, lat1: f64, long2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(long2) - deg_rad(long1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// A search area: around `center` (longitude, latitude), a circle of
/// `radius` or a box of `width` × `height`, in units of `unit` meters.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub center: (f64, f64),
    pub unit: f64,
    pub kind: ShapeKind,
}

#[derive(Clone, Copy, Debug)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

impl Shape {
    /// The distance from the center to a position, if the position is in
    /// the shape (Redis's `geoAppendIfWithinShape`).
    pub fn distance_within(&self, long: f64, lat: f64) -> Option<f64> {
        let (cx, cy) = self.center;
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(cx, cy, long, lat);
                (d <= r * self.unit).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (w, h) = (width * self.unit, height * self.unit);
                if lat_distance(lat, cy) > h / 2.0 {
                    return None;
                }
                if distance(long, lat, cx, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(cx, cy, long, lat))
            }
        }
    }

    /// `[min_long, min_lat, max_long, max_lat]` (`geohashBoundingBox`).
    fn bounds(&self) -> [f64; 4] {
        let (long, lat) = self.center;
        let (h, w) = match self.kind {
            ShapeKind::Radius(r) => (self.unit * r, self.unit * r),
            ShapeKind::Box { width, height } => {
                (self.unit * (height / 2.0), self.unit * (width / 2.0))
            }
        };
        let lat_delta = rad_deg(h / EARTH_RADIUS);
        let top = rad_deg(w / EARTH_RADIUS / deg_rad(lat + lat_delta).cos());
        let bottom = rad_deg(w / EARTH_RADIUS / deg_rad(lat - lat_delta).cos());
        let d = if lat < 0.0 { bottom } else { top };
        [long - d, lat - lat_delta, long + d, lat + lat_delta]
    }

    /// The score ranges `[min, max)` a search scans, in Redis's order:
    /// the center cell, then north, south, east, west, north-east,
    /// north-west, south-east, south-west (`membersOfAllNeighbors`;
    /// a neighbour equal to the one scanned before it is skipped).
    pub fn ranges(&self) -> Vec<(f64, f64)> {
        let b = self.bounds();
        let (long, lat) = self.center;
        let radius = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.unit;
        let mut step = estimate_step(radius, lat);
        let cell = |step| {
            encode((LAT_MIN, LAT_MAX), (LONG_MIN, LONG_MAX), long, lat, step)
                .unwrap_or(Hash { bits: 0, step })
        };
        let mut hash = cell(step);
        let mut n = neighbors(hash);
        let too_near = {
            let (north, south) = (decode(n[0]), decode(n[1]));
            let (east, west) = (decode(n[2]), decode(n[3]));
            north.lat.1 < b[3] || south.lat.0 > b[1] || east.long.1 < b[2] || west.long.0 > b[0]
        };
        if step > 1 && too_near {
            step -= 1;
            hash = cell(step);
            n = neighbors(hash);
        }
        let area = decode(hash);
        // n: north, south, east, west, NE, NW, SE, SW.
        if step >= 2 {
            let none = |n: &mut [Hash; 8], i: &[usize]| i.iter().for_each(|&i| n[i] = Hash::NONE);
            if area.lat.0 < b[1] {
                none(&mut n, &[1, 7, 6]);
            }
            if area.lat.1 > b[3] {
                none(&mut n, &[0, 4, 5]);
            }
            if area.long.0 < b[0] {
                none(&mut n, &[3, 7, 5]);
            }
            if area.long.1 > b[2] {
                none(&mut n, &[2, 6, 4]);
            }
        }
        let order = [hash, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]];
        let mut out = Vec::with_capacity(9);
        let mut last: Option<Hash> = None;
        for (i, h) in order.iter().enumerate() {
            if h.is_none() {
                continue;
            }
            // Redis compares with the last processed one only after the
            // first (its index 0 never counts as "processed").
            if last.is_some_and(|l| l == *h) && i > 0 {
                continue;
            }
            let shift = 52 - u32::from(h.step) * 2;
            let min = h.bits << shift;
            let max = (h.bits + 1) << shift;
            out.push((min as f64, max as f64));
            if i > 0 {
                last = Some(*h);
            }
        }
        out
    }
}

/// Redis's `geohashEstimateStepsByRadius`.
fn estimate_step(mut range: f64, lat: f64) -> u8 {
    if range == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The cell `hash` moved by `dx` in longitude (odd bits) and `dy` in
/// latitude (even bits), wrapping within its step (`geohash_move_x/y`).
fn moved(hash: Hash, dx: i8, dy: i8) -> Hash {
    let shift = 64 - u32::from(hash.step) * 2;
    let mv = |bits: u64, own: u64, other: u64, d: i8| -> u64 {
        if d == 0 {
            return bits;
        }
        let mut x = bits & own;
        let y = bits & other;
        let zz = other.checked_shr(shift).unwrap_or(0);
        if d > 0 {
            x = x.wrapping_add(zz.wrapping_add(1));
        } else {
            x |= zz;
            x = x.wrapping_sub(zz.wrapping_add(1));
        }
        x &= own.checked_shr(shift).unwrap_or(0);
        x | y
    };
    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let bits = mv(hash.bits, ODD, EVEN, dx);
    let bits = mv(bits, EVEN, ODD, dy);
    Hash {
        bits,
        step: hash.step,
    }
}

/// North, south, east, west, north-east, north-west, south-east,
/// south-west of `hash`.
fn neighbors(hash: Hash) -> [Hash; 8] {
    [
        moved(hash, 0, 1),
        moved(hash, 0, -1),
        moved(hash, 1, 0),
        moved(hash, -1, 0),
        moved(hash, 1, 1),
        moved(hash, -1, 1),
        moved(hash, 1, -1),
        moved(hash, -1, -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_to_their_cell_centers() {
        // Palermo, as in Redis's documentation: GEOADD then GEOPOS.
        let bits = encode_wgs84(13.361389, 38.115556).unwrap();
        assert_eq!(bits, 3_479_099_956_230_698);
        let (long, lat) = decode_score(bits as f64);
        assert!((long - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(&standard_geohash(bits as f64), b"sqc8b49rny0");
        assert_eq!(encode_wgs84(181.0, 0.0), None);
        assert_eq!(encode_wgs84(0.0, 85.06), None);
    }

    #[test]
    fn distance_is_haversine_on_redis_s_sphere() {
        // Palermo - Catania: 166274.1516 m in Redis's documentation.
        let p = decode_score(encode_wgs84(13.361389, 38.115556).unwrap() as f64);
        let c = decode_score(encode_wgs84(15.087269, 37.502669).unwrap() as f64);
        let d = distance(p.0, p.1, c.0, c.1);
        assert_eq!(format!("{d:.4}"), "166274.1516");
    }

    #[test]
    fn scores_convert_as_c_does_on_x86_64() {
        assert_eq!(c_to_u64(5.9), 5);
        assert_eq!(c_to_u64(-1.0), u64::MAX);
        assert_eq!(c_to_u64(-1e300), 1 << 63);
        assert_eq!(c_to_u64(1e19), 10_000_000_000_000_000_000);
        assert_eq!(c_to_u64(1e300), 0);
        assert_eq!(c_to_u64(f64::INFINITY), 0);
        assert_eq!(c_to_u64(f64::NEG_INFINITY), 1 << 63);
    }

    #[test]
    fn neighbours_wrap_around_their_step() {
        let h = Hash { bits: 0, step: 1 };
        let n = neighbors(h);
        // Step 1: 2 × 2 cells; west of column 0 wraps to column 1.
        assert_eq!(n[3].bits, 0b10);
        assert_eq!(n[0].bits, 0b01);
        assert_eq!(n[4].bits, 0b11);
    }
}
