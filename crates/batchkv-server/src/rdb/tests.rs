use super::*;
use proptest::prelude::*;

pub(super) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `body` (type byte and value) with an RDB 10 footer.
pub(super) fn payload(body: &[u8]) -> Vec<u8> {
    with_footer(body, RDB_VERSION)
}

pub(super) fn with_footer(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = CRC64.checksum(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// `p` with its CRC recomputed (its last 8 bytes replaced).
pub(super) fn fix_crc(p: &[u8]) -> Vec<u8> {
    let n = p.len() - 8;
    let mut p = p[..n].to_vec();
    let crc = CRC64.checksum(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

pub(super) fn b(x: &str) -> Vec<u8> {
    x.as_bytes().to_vec()
}
fn s(x: &str) -> Object {
    Object::String(b(x))
}
fn l<S: AsRef<str>>(items: &[S]) -> Object {
    Object::List(items.iter().map(|x| b(x.as_ref())).collect())
}
fn set(items: &[&str]) -> Object {
    Object::Set(items.iter().map(|x| b(x)).collect())
}
fn h(pairs: &[(&str, &str)]) -> Object {
    Object::Hash(pairs.iter().map(|(f, v)| (b(f), b(v))).collect())
}
fn z(pairs: &[(&str, f64)]) -> Object {
    Object::ZSet(pairs.iter().map(|(m, s)| (b(m), *s)).collect())
}

/// `o` with set members, hash fields and sorted set members in order
/// (their payload order is the server's hash table's).
fn sorted(o: Object) -> Object {
    match o {
        Object::Set(mut v) => {
            v.sort();
            Object::Set(v)
        }
        Object::Hash(mut v) => {
            v.sort_by(|a, b| a.0.cmp(&b.0));
            Object::Hash(v)
        }
        Object::ZSet(mut v) => {
            v.sort_by(|a, b| a.0.cmp(&b.0));
            Object::ZSet(v)
        }
        o => o,
    }
}

/// DUMP payloads of redis-server 7.0.15 (the first group), and values
/// of the old RDB files in Redis's test suite (`tests/assets`, written
/// by Redis 2.x to 7.0) wrapped as payloads with their file's RDB
/// version, each RESTOREd by redis-server 7.0.15; the expected values
/// are what that server answered (GET, LRANGE, SMEMBERS, HGETALL,
/// ZRANGE WITHSCORES).
fn redis_payloads() -> Vec<(&'static str, &'static str, Object)> {
    vec![
    (
        "s_raw",
        "000b68656c6c6f20776f726c640a000bfc49b9a6c7a034",
        s("hello world"),
    ),
    (
        "s_int8",
        "00c00c0a003c2af8515c04bcd5",
        s("12"),
    ),
    (
        "s_neg",
        "00c0ff0a000c937e2485089dc5",
        s("-1"),
    ),
    (
        "s_int16",
        "00c118fc0a004602355e70225a90",
        s("-1000"),
    ),
    (
        "s_int32",
        "00c240420f000a004ff5eb5407088b03",
        s("1000000"),
    ),
    (
        "s_big",
        "000b31323334353637383930310a00304e52d727176510",
        s("12345678901"),
    ),
    (
        "s_007",
        "00033030370a007258e27b4c69bad9",
        s("007"),
    ),
    (
        "s_empty",
        "00000a005d9b5c400f7fa2da",
        s(""),
    ),
    (
        "s_lzf",
        "00c30a406402616261e056010161620a0017383d942096d863",
        s("abababababababababababababababababababababababababababababababababababababababababababababababababab"),
    ),
    (
        "l_small",
        concat!(
        "120102c331408e1f8e00000008000101dffe02c12c02f270110104f4000efad5feffffff09800185",
        "0868656c6c6f06e06478e05a000166ff0a00be70ce895e841e5f",
    ),
        l(&["1", "-2", "300", "70000", "-5000000000", "", "hello", &*"x".repeat(100)]),
    ),
    (
        "l_multi",
        concat!(
        "120502c32940a30ea30000000400a56974656d2d302d7ae01400002680260031e01d260032e01d26",
        "0033e016260126ff02c32940a30ea30000000400a56974656d2d342d7ae01400002680260035e01d",
        "260036e01d260037e016260126ff02c33240a50ea50000000400a56974656d2d382d7ae014000026",
        "80260039e0172600a6604d013130e016270027a0270031e016270127ff02c32a40a70fa700000004",
        "00a66974656d2d31322d7ae014000027a0270033e01e270034e01e270035e016270127ff02c32a40",
        "a70fa70000000400a66974656d2d31362d7ae014000027a0270037e01e270038e01e270039e01627",
        "0127ff0a00ab98b804ac9d9374",
    ),
        l(&(0..20)
            .map(|i| format!("item-{i}-{}", "z".repeat(30)))
            .collect::<Vec<_>>()),
    ),
    (
        "l_plain",
        concat!(
        "1203020e0e000000010085736d616c6c06ff01c30940c8015050e0bb00015050020f0f0000000100",
        "86736d616c6c3207ff0a000a1155a1869177f0",
    ),
        l(&["small", &*"P".repeat(200), "small2"]),
    ),
    (
        "set_i16",
        "0b100200000004000000fbff0100020003000a00c8e4dfb66f7396f0",
        set(&["-5", "1", "2", "3"]),
    ),
    (
        "set_i32",
        "0b10040000000200000090eefeff701101000a0007ff04afa1c53d15",
        set(&["-70000", "70000"]),
    ),
    (
        "set_i64",
        "0bc31218040800000002200300012003c000200b00000a00329e8b7bf1a33c7b",
        set(&["1", "4294967296"]),
    ),
    (
        "set_ht",
        "0204c0010163016201610a007cb963324492d34d",
        set(&["1", "a", "b", "c"]),
    ),
    (
        "h_lp",
        "101c1c0000000600826631038276310382663203020182663303ded402ff0a0043cbb5054b00e0b1",
        h(&[("f1", "v1"), ("f2", "2"), ("f3", "-300")]),
    ),
    (
        "h_ht",
        "0403026633c30928017979e01b00017979026632c0020266310276310a00fa2c9716544543b5",
        h(&[("f3", &*"y".repeat(40)), ("f2", "2"), ("f1", "v1")]),
    ),
    (
        "z_lp",
        concat!(
        "11c33f404618460000000c00816302842d696e6605816602972d312e323530e003001b31652d3035",
        "188165020001816102010181620283322e35048164028320350104ff0a00fef9dfa1477273ad",
    ),
        z(&[("c", f64::NEG_INFINITY), ("f", -1.25e-05), ("e", 0.0), ("a", 1.0), ("b", 2.5), ("d", f64::INFINITY)]),
    ),
    (
        "z_sl",
        concat!(
        "05060164000000000000f07f016200000000000004400161000000000000f03f0165000000000000",
        "000001662d431cebe236eabe0163000000000000f0ff0a003b2079beba20db5b",
    ),
        z(&[("c", f64::NEG_INFINITY), ("f", -1.25e-05), ("e", 0.0), ("a", 1.0), ("b", 2.5), ("d", f64::INFINITY)]),
    ),
    (
        "hash-zipmap.rdb hash (type 9, RDB 3)",
        "0910020266310200763102663202007632ff0300ead239e970a5b6e0",
        h(&[("f1", "v1"), ("f2", "v2")]),
    ),
    (
        "encodings.rdb zset (type 3, RDB 4)",
        concat!(
        "030c026262023230026363023330036262620332303004626262620a353030303030303030300363",
        "63630333303004636363630931323334353637383901610131026161023130016201320361616103",
        "31303001630133046161616104313030300400ccdca26b492040f9",
    ),
        z(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("aa", 10.0), ("bb", 20.0), ("cc", 30.0), ("aaa", 100.0), ("bbb", 200.0), ("ccc", 300.0), ("aaaa", 1000.0), ("cccc", 123456789.0), ("bbbb", 5000000000.0)]),
    ),
    (
        "encodings.rdb set_zipped_1 (type 11, RDB 4)",
        "0b1002000000040000000100020003000400040082622918c487161e",
        set(&["1", "2", "3", "4"]),
    ),
    (
        "encodings.rdb list_zipped (type 10, RDB 4)",
        concat!(
        "0a303000000025000000080000c0010004c0020004c0030004016103016203016303d0a086010006",
        "e000bca06501000000ff04004d40f1bdecce17f6",
    ),
        l(&["1", "2", "3", "a", "b", "c", "100000", "6000000000"]),
    ),
    (
        "encodings.rdb string (type 0, RDB 4)",
        "000b48656c6c6f20576f726c640400eba890c3c29e6c7b",
        s("Hello World"),
    ),
    (
        "encodings.rdb compressible (type 0, RDB 4)",
        "00c3094089016161e07c0001616104002ba79f99ea28a18a",
        s(&"a".repeat(137)),
    ),
    (
        "encodings.rdb set_zipped_2 (type 11, RDB 4)",
        "0b180400000004000000a0860100400d0300e0930400801a0600040070adf9f67eca4883",
        set(&["100000", "200000", "300000", "400000"]),
    ),
    (
        "encodings.rdb number (type 0, RDB 4)",
        "00c00a0400415fd37a52e2d510",
        s("10"),
    ),
    (
        "encodings.rdb set_zipped_3 (type 11, RDB 4)",
        concat!(
        "0b38080000000600000000ca9a3b000000000094357700000000005ed0b20000000000286bee0000",
        "000000f2052a0100000000bca065010000000400f087319769501ce5",
    ),
        set(&["1000000000", "2000000000", "3000000000", "4000000000", "5000000000", "6000000000"]),
    ),
    (
        "encodings.rdb set (type 2, RDB 4)",
        "02080a36303030303030303030c2a08601000161c0010162c0020163c003040032577e410b428fc9",
        set(&["1", "100000", "2", "3", "6000000000", "a", "b", "c"]),
    ),
    (
        "encodings.rdb list (type 1, RDB 4)",
        concat!(
        "0118c001c002c003016101620163c2a08601000a36303030303030303030c001c002c00301610162",
        "0163c2a08601000a36303030303030303030c001c002c003016101620163c2a08601000a36303030",
        "3030303030300400efcc7e864423e2f7",
    ),
        l(&["1", "2", "3", "a", "b", "c", "100000", "6000000000", "1", "2", "3", "a", "b", "c", "100000", "6000000000", "1", "2", "3", "a", "b", "c", "100000", "6000000000"]),
    ),
    (
        "encodings.rdb hash_zipped (type 13, RDB 4)",
        concat!(
        "0d20200000001b000000060000016103c0010004016203c0020004016303c00300ff040027e6e281",
        "8b41d72c",
    ),
        h(&[("a", "1"), ("b", "2"), ("c", "3")]),
    ),
    (
        "encodings.rdb zset_zipped (type 12, RDB 4)",
        concat!(
        "0c20200000001b000000060000016103c0010004016203c0020004016303c00300ff0400ed928b05",
        "7bb22856",
    ),
        z(&[("a", 1.0), ("b", 2.0), ("c", 3.0)]),
    ),
    (
        "encodings.rdb hash (type 4, RDB 4)",
        concat!(
        "040b0162c002026161c00a0163c00303616161c064026262c014026363c01e03626262c1c8000363",
        "6363c12c0103646464c19001036565650a353030303030303030300161c0010400f296a87264e05b",
        "65",
    ),
        h(&[("b", "2"), ("aa", "10"), ("c", "3"), ("aaa", "100"), ("bb", "20"), ("cc", "30"), ("bbb", "200"), ("ccc", "300"), ("ddd", "400"), ("eee", "5000000000"), ("a", "1")]),
    ),
    (
        "hash-ziplist.rdb hash (type 13, RDB 9)",
        "0d1b1b00000016000000040000026631040276310402663204027632ff0900777d2e23e132521f",
        h(&[("f1", "v1"), ("f2", "v2")]),
    ),
    (
        "list-quicklist.rdb list (type 14, RDB 8)",
        "0e010d0d0000000a000000010000f8ff080010ebd801dd1c4d8d",
        l(&["7"]),
    ),
    (
        "list-quicklist.rdb x (type 0, RDB 8)",
        "00c0070800cde0a41d2ab244aa",
        s("7"),
    ),
    (
        "zset-ziplist.rdb zset (type 12, RDB 10)",
        "0c191900000016000000040000036f6e6505f2020374776f05f3ff0a0060e90b962c140aca",
        z(&[("one", 1.0), ("two", 2.0)]),
    ),
    ]
}

#[test]
fn restores_redis_payloads() {
    for (name, p, expected) in redis_payloads() {
        let got = restore(&hex(p)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(sorted(got), sorted(expected), "{name}");
    }
}

#[test]
fn redis_encodings_covered() {
    let types: std::collections::BTreeSet<u8> =
        redis_payloads().iter().map(|(_, p, _)| hex(p)[0]).collect();
    let want = [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 16, 17, 18];
    assert_eq!(types.into_iter().collect::<Vec<_>>(), want);
}

/// Byte for byte what redis-server 7.0.15 DUMPs (values without LZF,
/// whose compressor output may differ).
#[test]
fn dump_matches_redis() {
    let redis: std::collections::HashMap<_, _> = redis_payloads()
        .into_iter()
        .map(|(name, p, _)| (name, hex(p)))
        .collect();
    let cases = [
        ("s_raw", s("hello world")),
        ("s_int8", s("12")),
        ("s_neg", s("-1")),
        ("s_int16", s("-1000")),
        ("s_int32", s("1000000")),
        ("s_big", s("12345678901")),
        ("s_007", s("007")),
        ("s_empty", s("")),
        ("set_ht", set(&["1", "c", "b", "a"])),
        (
            "z_sl",
            z(&[
                ("d", f64::INFINITY),
                ("b", 2.5),
                ("a", 1.0),
                ("e", 0.0),
                ("f", -1.25e-5),
                ("c", f64::NEG_INFINITY),
            ]),
        ),
    ];
    for (name, obj) in cases {
        assert_eq!(dump(&obj), redis[name], "{name}");
    }
}

/// The listpack `dump` writes for a list is the one Redis keeps.
#[test]
fn listpack_matches_redis() {
    let (_, p, expected) = redis_payloads()
        .into_iter()
        .find(|(name, _, _)| *name == "l_small")
        .unwrap();
    let p = hex(p);
    let mut r = Reader::new(&p[..p.len() - 10]);
    assert_eq!(r.u8().unwrap(), ty::LIST_QUICKLIST_2);
    assert_eq!(r.len().unwrap(), 1);
    assert_eq!(r.len().unwrap(), CONTAINER_PACKED);
    let redis_lp = r.string().unwrap();
    let Object::List(items) = expected else {
        unreachable!()
    };
    let mut ours = Vec::new();
    put_quicklist(&mut ours, &items);
    let mut r = Reader::new(&ours);
    assert_eq!(r.len().unwrap(), 1);
    assert_eq!(r.len().unwrap(), CONTAINER_PACKED);
    assert_eq!(r.string().unwrap(), redis_lp);
}

pub(super) fn round_trip(obj: &Object) {
    let p = dump(obj);
    assert_eq!(restore(&p).as_ref(), Ok(obj), "{obj:?}");
}

#[test]
fn round_trips() {
    let binary: Vec<u8> = (0..=255).collect();
    let big = "x".repeat(100_000);
    let ints = [
        "0",
        "12",
        "-1",
        "127",
        "-128",
        "128",
        "-129",
        "4095",
        "-4096",
        "4096",
        "32767",
        "-32768",
        "32768",
        "8388607",
        "-8388608",
        "8388608",
        "2147483647",
        "-2147483648",
        "2147483648",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "007",
        "-0",
        "+1",
        " 1",
        "1 ",
        "",
    ];
    for x in ints {
        round_trip(&s(x));
    }
    round_trip(&Object::String(binary.clone()));
    round_trip(&s(&big));
    round_trip(&s(&"abcdefgh".repeat(1000)));
    round_trip(&l(&ints));
    round_trip(&Object::List(vec![
        binary.clone(),
        Vec::new(),
        binary.clone(),
    ]));
    // Many nodes, and elements longer than a node.
    let many: Vec<String> = (0..10_000).map(|i| format!("element-{i}")).collect();
    round_trip(&l(&many));
    round_trip(&l(&[
        &*big,
        "a",
        &*"y".repeat(5000),
        &*"z".repeat(70_000),
        "b",
    ]));
    let strs = (0..64)
        .chain([100, 4095, 4096, 5000])
        .map(|n| "q".repeat(n));
    round_trip(&l(&strs.collect::<Vec<_>>()));
    round_trip(&set(&ints));
    round_trip(&Object::Set(vec![binary.clone(), b("a")]));
    round_trip(&Object::Set(many.iter().map(|x| b(x)).collect()));
    round_trip(&h(&[("f", ""), ("", "v"), ("12", &big)]));
    round_trip(&Object::Hash(vec![(binary.clone(), binary.clone())]));
    round_trip(&z(&[
        ("a", -0.0),
        ("b", f64::INFINITY),
        ("c", f64::NEG_INFINITY),
        ("d", 1e300),
        ("e", f64::MIN_POSITIVE),
        ("f", 5e-324),
        ("12", -1.5),
    ]));
    let Ok(Object::ZSet(v)) = restore(&dump(&z(&[("a", -0.0)]))) else {
        panic!()
    };
    assert!(v[0].1.is_sign_negative());
    // Empty collections come back empty (the caller refuses them, as
    // Redis does).
    for empty in [l::<&str>(&[]), set(&[]), h(&[]), z(&[])] {
        round_trip(&empty);
    }
}

#[test]
fn plain_nodes() {
    let items: Vec<Vec<u8>> = vec![b("a"), vec![b'p'; 300], b("b"), b("c"), vec![7; 100]];
    let mut body = vec![ty::LIST_QUICKLIST_2];
    put_quicklist_with(&mut body, &items, 100);
    // packed [a], plain, packed [b c], plain
    assert_eq!(
        &body[..3],
        &[ty::LIST_QUICKLIST_2, 4, CONTAINER_PACKED as u8]
    );
    assert_eq!(restore(&payload(&body)), Ok(Object::List(items)));
}

#[test]
fn long_strings_compressed() {
    let p = dump(&s(&"ab".repeat(600)));
    assert_eq!(p[1], 0xC3);
    assert!(p.len() < 40);
    // Incompressible: raw.
    let noise: Vec<u8> = (0..100u32).map(|i| (i * 7919 % 251) as u8).collect();
    let p = dump(&Object::String(noise.clone()));
    assert_eq!(&p[1..3], &[0x40, 100]);
    round_trip(&Object::String(noise));
}

#[test]
fn footer_checks() {
    let good = dump(&s("hello"));
    assert!(restore(&good).is_ok());
    for n in 0..10 {
        assert_eq!(restore(&good[..n]), Err(PayloadError::VersionOrChecksum));
    }
    let mut bad = good.clone();
    bad[2] ^= 1;
    assert_eq!(restore(&bad), Err(PayloadError::VersionOrChecksum));
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x80;
    assert_eq!(restore(&bad), Err(PayloadError::VersionOrChecksum));
    // Version 11 (Redis 7.2), even with a good CRC.
    let v11 = with_footer(&good[..good.len() - 10], 11);
    assert_eq!(restore(&v11), Err(PayloadError::VersionOrChecksum));
    // Older versions are fine.
    let v6 = with_footer(&good[..good.len() - 10], 6);
    assert_eq!(restore(&v6), Ok(s("hello")));
    // The footer is checked before the body.
    assert_eq!(
        restore(&with_footer(&[0x99], 11)),
        Err(PayloadError::VersionOrChecksum)
    );
}

#[test]
fn malformed_bodies() {
    let bad = |body: &[u8]| {
        assert_eq!(restore(&payload(body)), Err(BadFormat), "{body:02x?}");
    };
    // Empty body, unknown types.
    bad(&[]);
    for t in [8, 22, 100, 255] {
        bad(&[t, 0]);
    }
    // Trailing bytes after a value.
    bad(&[0, 1, b'a', 0]);
    bad(&[2, 1, 1, b'a', 1]);
    // Truncated strings, lengths and integers.
    bad(&[0, 5, b'a']);
    bad(&[0, 0x40]);
    bad(&[0, 0x80, 0, 0]);
    bad(&[0, 0xC1, 1]);
    bad(&[0, 0xC4]);
    bad(&[0, 0x82]);
    // Huge counts without the data: no huge allocation.
    bad(&[1, 0x81, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    bad(&[
        4, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0,
    ]);
    bad(&[0, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
    // An encoded length where a count belongs.
    bad(&[1, 0xC1, 0, 0]);
    // LZF: a huge original length, a wrong one, garbage.
    bad(&[
        0, 0xC3, 3, 0x80, 0x7F, 0xFF, 0xFF, 0xFF, 2, b'a', b'b', b'c',
    ]);
    let mut lzf_body = vec![0];
    put_string(&mut lzf_body, "ab".repeat(600).as_bytes());
    assert_eq!(lzf_body[1], 0xC3);
    let mut wrong_len = lzf_body.clone();
    wrong_len[3] = 99;
    bad(&wrong_len);
    bad(&[0, 0xC3, 2, 5, 0xE0, 0xFF]);
    bad(&[0, 0xC3, 1, 0, 0]);
    // Duplicates.
    bad(&[2, 2, 1, b'a', 1, b'a']);
    bad(&[4, 2, 1, b'f', 1, b'1', 1, b'f', 1, b'2']);
    let mut zdup = vec![5, 2];
    for _ in 0..2 {
        zdup.extend_from_slice(&[1, b'm']);
        zdup.extend_from_slice(&1.0f64.to_le_bytes());
    }
    bad(&zdup);
    // NaN scores, binary and text; an unparsable text score.
    let mut znan = vec![5, 1, 1, b'm'];
    znan.extend_from_slice(&f64::NAN.to_le_bytes());
    bad(&znan);
    bad(&[3, 1, 1, b'm', 253]);
    bad(&[3, 1, 1, b'm', 3, b'n', b'a', b'n']);
    bad(&[3, 1, 1, b'm', 3, b'1', b'x', b'2']);
    assert_eq!(
        restore(&payload(&[
            3, 2, 1, b'm', 254, 1, b'n', 4, b'-', b'2', b'.', b'5'
        ])),
        Ok(z(&[("m", f64::INFINITY), ("n", -2.5)]))
    );
    // Quicklist: unknown container, empty node.
    bad(&[18, 1, 3, 1, b'a']);
    bad(&[18, 1, 1, 0]);
    bad(&[18, 1, 2, 0]);
}

/// A listpack blob of `items` as an RDB string.
pub(super) fn lp_blob(items: &[&str]) -> Vec<u8> {
    let mut entries = Vec::new();
    for i in items {
        lp_put_entry(&mut entries, i.as_bytes());
    }
    listpack(&entries, items.len())
}

fn with_blob(t: u8, blob: &[u8]) -> Vec<u8> {
    let mut body = vec![t];
    put_len(&mut body, blob.len() as u64);
    body.extend_from_slice(blob);
    payload(&body)
}

#[test]
fn listpacks() {
    let items = ["a", "1", "-4096", "70000", "-5000000000", "", "b"];
    let lp = lp_blob(&items);
    assert_eq!(restore(&with_blob(16, &lp[..])), Err(BadFormat)); // odd count
    assert_eq!(restore(&with_blob(20, &lp)), Ok(set(&items)));
    assert_eq!(
        restore(&with_blob(
            17,
            &lp_blob(&["a", "1", "b", "-inf", "c", "2.5"])
        )),
        Ok(z(&[("a", 1.0), ("b", f64::NEG_INFINITY), ("c", 2.5)]))
    );
    let bad = |blob: &[u8], t: u8| {
        assert_eq!(restore(&with_blob(t, blob)), Err(BadFormat), "{blob:02x?}");
    };
    bad(&lp_blob(&["a", "b", "a", "c"]), 16); // duplicate field
    bad(&lp_blob(&["a", "b", "a"]), 20); // duplicate member
    bad(&lp_blob(&["a", "x", "b", "1"]), 17); // score "x"
    bad(&lp_blob(&["a", "nan"]), 17);
    // Header disagreeing with the content.
    let mut wrong_total = lp.clone();
    wrong_total[0] += 1;
    bad(&wrong_total, 20);
    let mut wrong_count = lp.clone();
    wrong_count[4] += 1;
    bad(&wrong_count, 20);
    let mut unknown_count = lp.clone();
    unknown_count[4] = 0xFF;
    unknown_count[5] = 0xFF;
    assert_eq!(restore(&with_blob(20, &unknown_count)), Ok(set(&items)));
    // A wrong back length; no terminator; a bad encoding byte.
    let mut wrong_back = lp.clone();
    wrong_back[8] ^= 1; // "a" entry: 0x81 'a' 0x02
    bad(&wrong_back, 20);
    let mut no_eof = lp.clone();
    let n = no_eof.len();
    no_eof[n - 1] = 0;
    bad(&no_eof, 20);
    bad(&[7, 0, 0, 0, 1, 0, 0xF5, 0xFF], 20);
    bad(&[6, 0, 0, 0, 0, 0], 20);
    // Empty, valid: an empty set (the caller refuses it).
    assert_eq!(
        restore(&with_blob(20, &[7, 0, 0, 0, 0, 0, 0xFF])),
        Ok(set(&[]))
    );
}

#[test]
fn intsets() {
    let is = |width: u32, vals: &[i64]| {
        let mut v = width.to_le_bytes().to_vec();
        v.extend_from_slice(&(vals.len() as u32).to_le_bytes());
        for x in vals {
            v.extend_from_slice(&x.to_le_bytes()[..width as usize]);
        }
        v
    };
    assert_eq!(
        restore(&with_blob(11, &is(8, &[-5, 1, 1 << 40]))),
        Ok(set(&["-5", "1", "1099511627776"]))
    );
    let bad = |blob: &[u8]| assert_eq!(restore(&with_blob(11, blob)), Err(BadFormat));
    bad(&is(2, &[2, 1]));
    bad(&is(2, &[1, 1]));
    bad(&is(3, &[1, 2]));
    let mut short = is(4, &[1, 2]);
    short.pop();
    bad(&short);
    let mut wrong_count = is(4, &[1, 2]);
    wrong_count[4] = 3;
    bad(&wrong_count);
    bad(&[2, 0, 0]);
}

/// Redis's own corrupt payloads (`tests/integration/corrupt-dump.tcl`),
/// CRCs recomputed: each is "Bad data format" there.
#[test]
fn redis_corrupt_payloads() {
    let cases = [
        // hash with valid zip list header, invalid entry len
        "0d1b1b00000016000000040000026100040262000414630004026400ff0900d910549215f55f52",
        // invalid zlbytes header
        "0d1b2500000016000000040000026100040262000402630004026400ff0900b7f76e9f434314c6",
        // valid zipped hash header, dup records
        "0d1b1b00000016000000040000026100040262000402610004026400ff0900a1983678cc8e932e",
        // quicklist big ziplist prev len
        "0e0113130000000e0000000200000261000e026200ff0900499730b20da1edaa",
        // quicklist small ziplist prev len
        "0e0113130000000e00000002000002610002026200ff0900c77103970775b063",
        // quicklist ziplist wrong count
        "0e0113130000000e00000003000002610004026200ff09004de20a2f0825df91",
        // quicklist encoded_len is 0
        "120101000a008fc6c0571c0ab33c",
        // quicklist listpack entry start with EOF
        "1201020b0b0000000100816102ffff0a007ed8de5b0dd770b8",
        // quicklist ziplist tail followed by extra data which start with 0xff
        "0e0111110000000a000000010000f6ffb06c9cff09009c3747494dde94f5",
        // dict init to huge size
        "0281c000025f31c0020900b21be5172e15f46c",
        // huge string
        "0081010900f62bb67a8587724d",
        // empty quicklist
        "0ec02b150000000a000000010000e06258eadf22000000ff0900df35d267dc0e89ab",
    ];
    for c in cases {
        assert_eq!(restore(&fix_crc(&hex(c))), Err(BadFormat), "{c}");
    }
    // quicklist with empty ziplist: an empty list, which the caller
    // refuses.
    let empty = "0e010b0b0000000a0000000000ff0900c26937833c7ffe6f";
    assert_eq!(restore(&fix_crc(&hex(empty))), Ok(l::<&str>(&[])));
}

pub(super) fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40),
        any::<i64>().prop_map(|i| i.to_string().into_bytes()),
        (0u8..4, 20usize..300).prop_map(|(c, n)| vec![b'a' + c; n]),
    ]
}

fn score_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("not NaN", |f| !f.is_nan()),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        (-1000i32..1000).prop_map(f64::from),
    ]
}

fn object_strategy() -> impl Strategy<Value = Object> {
    prop_oneof![
        bytes_strategy().prop_map(Object::String),
        prop::collection::vec(bytes_strategy(), 0..300).prop_map(Object::List),
        prop::collection::btree_set(bytes_strategy(), 0..40)
            .prop_map(|s| Object::Set(s.into_iter().collect())),
        prop::collection::btree_map(bytes_strategy(), bytes_strategy(), 0..40)
            .prop_map(|m| Object::Hash(m.into_iter().collect())),
        prop::collection::btree_map(bytes_strategy(), score_strategy(), 0..40)
            .prop_map(|m| Object::ZSet(m.into_iter().collect())),
    ]
}

/// The redis-server payloads and some of `dump`'s, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = redis_payloads().iter().map(|(_, p, _)| hex(p)).collect();
    v.push(with_blob(20, &lp_blob(&["a", "1", "-4096", "x"])));
    v.push(dump(&l(&(0..300)
        .map(|i| i.to_string())
        .collect::<Vec<_>>())));
    v.push(dump(&z(&[("a", 1.0), ("b", 2.0)])));
    v
}

/// Edits (flip bits, set, insert, remove a byte) to `p`'s body, which
/// is then cut at `cut`; with a recomputed footer.
pub(super) fn mutated(
    p: &[u8],
    edits: &[(prop::sample::Index, u8, u8)],
    cut: Option<prop::sample::Index>,
) -> Vec<u8> {
    let mut body = p[..p.len() - 10].to_vec();
    for (at, byte, kind) in edits {
        let i = at.index(body.len().max(1));
        match kind {
            0 if i < body.len() => body[i] ^= byte | 1,
            1 if i < body.len() => body[i] = *byte,
            2 => body.insert(i.min(body.len()), *byte),
            _ if i < body.len() => {
                body.remove(i);
            }
            _ => {}
        }
    }
    if let Some(c) = cut {
        body.truncate(c.index(body.len() + 1));
    }
    payload(&body)
}

proptest! {
    #[test]
    fn prop_round_trip(obj in object_strategy()) {
        prop_assert_eq!(restore(&dump(&obj)), Ok(obj));
    }

    /// Flipped, inserted, removed bytes and truncation, with the footer
    /// recomputed so that the body parser sees them: never a panic.
    #[test]
    fn prop_mutations_never_panic(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..6),
        cut in any::<Option<prop::sample::Index>>(),
    ) {
        let seeds = seeds();
        let _ = restore(&mutated(&seeds[seed.index(seeds.len())], &edits, cut));
    }

    #[test]
    fn prop_random_bodies_never_panic(
        t in 0u8..24,
        rest in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut body = vec![t];
        body.extend_from_slice(&rest);
        let _ = restore(&payload(&body));
    }
}
