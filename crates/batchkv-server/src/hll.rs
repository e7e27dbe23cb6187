//! HyperLogLog in Redis 7's string representation (PFADD, PFCOUNT,
//! PFMERGE), byte for byte: a value written here reads back in Redis and
//! the other way round, and the same additions give the same bytes.
//!
//! # Layout (Redis's `hyperloglog.c`; never change)
//! A 16-byte header, then the registers:
//! - `"HYLL"`, the encoding (0 dense, 1 sparse), 3 unused bytes (0), the
//!   cached cardinality as 8 bytes little-endian; the top bit of the last
//!   byte set means the cache is stale.
//! - Dense: 16,384 registers of 6 bits, register `i` at bit `6i`, least
//!   significant bit first (12,288 bytes; a dense value is exactly
//!   [`DENSE_LEN`] bytes).
//! - Sparse: opcodes covering the 16,384 registers in order:
//!   `00xxxxxx` ZERO, `xxxxxx + 1` registers of 0 (1–64);
//!   `01xxxxxx yyyyyyyy` XZERO, 14 bits + 1 registers of 0 (1–16,384);
//!   `1vvvvvxx` VAL, `xx + 1` registers (1–4) of value `vvvvv + 1` (1–32).
//!   A register above 32, or a sparse value growing past
//!   `hll-sparse-max-bytes`, turns it dense.
//!
//! An element goes to register `h mod 16384` of its MurmurHash64A `h`
//! (seed 0xadc83b19) with value 1 + the number of trailing zeros of
//! `h >> 14` (at most 51). The cardinality is Ertl's estimator over the
//! registers' histogram ("New cardinality estimation algorithms for
//! HyperLogLog sketches", 2017), as Redis computes it.

/// log2 of the number of registers.
const P: u32 = 14;
/// Registers in every HyperLogLog.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash left after the register index.
const Q: usize = 64 - P as usize;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Header bytes.
pub const HDR: usize = 16;
/// The length of a dense value.
pub const DENSE_LEN: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
/// Redis's `HLL_ALPHA_INF`, 1 / (2 ln 2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// A value that is a HyperLogLog by its header but whose registers do
/// not add up (Redis: `INVALIDOBJ Corrupted HLL object detected`).
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// Whether `v` is a HyperLogLog as Redis's `isHLLObjectOrReply` checks:
/// the header's magic and encoding, and a dense value's exact length.
pub fn is_hll(v: &[u8]) -> bool {
    v.len() >= HDR
        && &v[..4] == b"HYLL"
        && v[4] <= SPARSE
        && (v[4] != DENSE || v.len() == DENSE_LEN)
}

/// An empty HyperLogLog: sparse, one XZERO opcode for all registers,
/// cardinality 0 cached.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.resize(HDR, 0);
    push_xzero(&mut v, XZERO_MAX_LEN);
    v
}

/// Whether `v` (a HyperLogLog) is dense.
pub fn is_dense(v: &[u8]) -> bool {
    v[4] == DENSE
}

/// The cached cardinality, if not stale.
pub fn cached(v: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(v[8..16].try_into().unwrap_or_default());
    (card >> 63 == 0).then_some(card)
}

/// Stores `card` (below 2^63) as the cached cardinality.
pub fn set_cached(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// Redis's MurmurHash64A (little-endian word loads).
pub fn murmur64a(data: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes(w.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `ele` goes to and the value it offers it (1..=51).
pub fn register_of(ele: &[u8]) -> (usize, u8) {
    let h = murmur64a(ele, 0xadc8_3b19);
    let index = (h & (REGISTERS as u64 - 1)) as usize;
    // The set bit at Q ends the run: at most Q + 1.
    let rest = (h >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Register `i` of dense registers `regs`. The register straddling the
/// end reads a zero byte past it, as Redis's reads its string's
/// terminator.
fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

/// Visits dense registers `regs` in order, four (three bytes) at a time:
/// `f(register, value)`.
fn each_dense(regs: &[u8], mut f: impl FnMut(usize, u8)) {
    for (g, b) in regs.chunks_exact(3).enumerate() {
        let i = g * 4;
        f(i, b[0] & 0x3f);
        f(i + 1, (b[0] >> 6) | ((b[1] & 0x0f) << 2));
        f(i + 2, (b[1] >> 4) | ((b[2] & 0x03) << 4));
        f(i + 3, b[2] >> 2);
    }
}

fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    let max = u16::from(REGISTER_MAX);
    regs[byte] &= !((max << fb) as u8);
    regs[byte] |= (v << fb) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next &= !((max >> (8 - fb)) as u8);
        *next |= (v >> (8 - fb)) as u8;
    }
}

/// Raises dense register `i` to `count`; whether it changed.
fn dense_raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_set(regs, i, count);
        true
    } else {
        false
    }
}

fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push((l >> 8) as u8 | 0x40);
    v.push((l & 0xff) as u8);
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len - 1) as u8
}

/// A sparse opcode at `p` of `s`: its kind, registers covered, bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Zero,
    XZero,
    Val(u8),
}

/// The opcode at `s[p]`: kind, run length, byte length. An XZERO cut
/// off at the end reads a zero second byte (Redis's terminator).
fn op_at(s: &[u8], p: usize) -> (Op, usize, usize) {
    let b = s[p];
    if b & 0x80 != 0 {
        (Op::Val(((b >> 2) & 0x1f) + 1), usize::from(b & 0x3) + 1, 1)
    } else if b & 0x40 != 0 {
        let lo = usize::from(s.get(p + 1).copied().unwrap_or(0));
        (Op::XZero, ((usize::from(b & 0x3f) << 8) | lo) + 1, 2)
    } else {
        (Op::Zero, usize::from(b & 0x3f) + 1, 1)
    }
}

/// Visits the runs of sparse registers `ops`: `f(first register, run
/// length, value)`; whether they cover exactly [`REGISTERS`]. A VAL run
/// past the end stops the walk (Redis's overflow check).
fn sparse_runs(ops: &[u8], mut f: impl FnMut(usize, usize, u8)) -> bool {
    let (mut p, mut i) = (0, 0);
    while p < ops.len() {
        let (op, run, len) = op_at(ops, p);
        let value = match op {
            Op::Val(v) => {
                if i + run > REGISTERS {
                    return false;
                }
                v
            }
            _ => 0,
        };
        f(i, run, value);
        i += run;
        p += len;
    }
    i == REGISTERS
}

/// Turns sparse `v` dense (a dense one is left as is), keeping the
/// header's cache bytes.
pub fn to_dense(v: &mut Vec<u8>) -> Result<(), Corrupt> {
    if v[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HDR].copy_from_slice(&v[..HDR]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR..];
    let whole = sparse_runs(&v[HDR..], |first, run, value| {
        if value != 0 {
            for r in first..first + run {
                dense_set(regs, r, value);
            }
        }
    });
    if !whole {
        return Err(Corrupt);
    }
    *v = dense;
    Ok(())
}

/// Adds `ele` to HyperLogLog `v`; whether a register changed. A sparse
/// value longer than `sparse_max` bytes after the change turns dense.
pub fn add(v: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = register_of(ele);
    raise(v, index, count, sparse_max)
}

/// Raises register `index` of `v` to `count`; whether it changed.
pub fn raise(v: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if v[4] == DENSE {
        return Ok(dense_raise(&mut v[HDR..], index, count));
    }
    match sparse_raise(v, index, count, sparse_max)? {
        Some(changed) => Ok(changed),
        None => {
            // Promote: the register is below `count` (a sparse register
            // holds at most 32), so the dense raise changes it.
            to_dense(v)?;
            Ok(dense_raise(&mut v[HDR..], index, count))
        }
    }
}

/// Redis's `hllSparseSet`: raises register `index` of sparse `v` in
/// place, splitting the opcode that covers it and merging equal VAL runs
/// around it afterwards. `None`: the value must turn dense first (a count
/// above 32, or growth past `sparse_max`).
fn sparse_raise(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<Option<bool>, Corrupt> {
    if count > VAL_MAX_VALUE {
        return Ok(None);
    }
    // Step 1: the opcode covering `index`, at `p`; the one before, at
    // `prev`.
    let (mut p, mut first, mut prev) = (HDR, 0usize, None);
    let (op, span, oplen) = loop {
        if p >= v.len() {
            return Err(Corrupt);
        }
        let (op, span, oplen) = op_at(v, p);
        if index < first + span {
            break (op, span, oplen);
        }
        prev = Some(p);
        p += oplen;
        first += span;
    };
    if p + oplen > v.len() {
        // An XZERO opcode cut off at the end.
        return Err(Corrupt);
    }
    // Step 2: the trivial updates in place.
    match op {
        Op::Val(old) if old >= count => return Ok(Some(false)),
        Op::Val(_) | Op::Zero if span == 1 => v[p] = val_op(count, 1),
        _ => {
            // The general case: the opcode becomes up to 5 bytes, the
            // run before `index`, the register, the run after.
            let last = first + span - 1;
            let mut seq = Vec::with_capacity(5);
            let run = |seq: &mut Vec<u8>, len: usize| match op {
                Op::Val(old) => seq.push(val_op(old, len)),
                _ if len > ZERO_MAX_LEN => push_xzero(seq, len),
                _ => seq.push((len - 1) as u8),
            };
            if index != first {
                run(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                run(&mut seq, last - index);
            }
            // Step 3: the new sequence replaces the opcode.
            if seq.len() > oplen && v.len() + seq.len() - oplen > sparse_max {
                return Ok(None);
            }
            v.splice(p..p + oplen, seq);
        }
    }
    // Step 4: merge adjacent VAL opcodes of one value (up to 4 registers),
    // looking at up to 5 opcodes from the one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut budget = 5;
    while p < v.len() && budget > 0 {
        budget -= 1;
        let (op, span, oplen) = op_at(v, p);
        let Op::Val(v1) = op else {
            p += oplen;
            continue;
        };
        if let Some((Op::Val(v2), span2, _)) = (p + 1 < v.len()).then(|| op_at(v, p + 1)) {
            if v1 == v2 && span + span2 <= VAL_MAX_LEN {
                v[p + 1] = val_op(v1, span + span2);
                v.remove(p);
                // Try the merged run with the next one.
                continue;
            }
        }
        p += 1;
    }
    Ok(Some(true))
}

/// Raises `max[i]` to register `i` of HyperLogLog `v`, for every `i`.
pub fn merge_into(max: &mut [u8], v: &[u8]) -> Result<(), Corrupt> {
    let regs = &v[HDR..];
    if v[4] == DENSE {
        each_dense(regs, |i, r| max[i] = max[i].max(r));
        return Ok(());
    }
    let whole = sparse_runs(regs, |first, run, value| {
        if value != 0 {
            for m in &mut max[first..first + run] {
                *m = (*m).max(value);
            }
        }
    });
    if whole {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The cardinality HyperLogLog `v` estimates (its registers; the cache
/// is not read).
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    let mut hist = [0u64; 64];
    let regs = &v[HDR..];
    if v[4] == DENSE {
        each_dense(regs, |_, r| hist[usize::from(r)] += 1);
    } else {
        let mut i = 0;
        let mut p = 0;
        while p < regs.len() {
            let (op, run, len) = op_at(regs, p);
            let value = if let Op::Val(v) = op { v } else { 0 };
            hist[usize::from(value)] += run as u64;
            i += run;
            p += len;
        }
        if i != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&hist))
}

/// The cardinality registers `max` (one byte each, as [`merge_into`]
/// fills them) estimate.
pub fn count_registers(max: &[u8]) -> u64 {
    let mut hist = [0u64; 64];
    // Eight at a time: most registers of a small union are 0.
    for word in max.chunks(8) {
        if word.iter().all(|&r| r == 0) {
            hist[0] += word.len() as u64;
        } else {
            for &r in word {
                hist[usize::from(r.min(63))] += 1;
            }
        }
    }
    estimate(&hist)
}

/// Ertl's estimator over the registers' histogram, in Redis's order of
/// operations (`hllCount`).
fn estimate(hist: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - hist[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += hist[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(hist[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

/// Register `i` of HyperLogLog `v` (PFDEBUG GETREG reads a dense one).
pub fn register(v: &[u8], i: usize) -> u8 {
    dense_get(&v[HDR..], i)
}

/// PFDEBUG DECODE's text for sparse `v`: `z:len`, `Z:len` and
/// `v:value,len` per opcode, space-separated.
pub fn decode(v: &[u8]) -> String {
    let ops = &v[HDR..];
    let mut out = Vec::new();
    let mut p = 0;
    while p < ops.len() {
        let (op, run, len) = op_at(ops, p);
        out.push(match op {
            Op::Zero => format!("z:{run}"),
            Op::XZero => format!("Z:{run}"),
            Op::Val(v) => format!("v:{v},{run}"),
        });
        p += len;
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 3000;

    /// The registers of `v`, whatever its encoding.
    fn registers(v: &[u8]) -> Vec<u8> {
        let mut max = vec![0u8; REGISTERS];
        merge_into(&mut max, v).unwrap();
        max
    }

    #[test]
    fn an_empty_hll_is_redis_s_18_bytes() {
        let v = new_sparse();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[..5], b"HYLL\x01");
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert!(is_hll(&v));
        assert_eq!(cached(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode(&v), "Z:16384");
    }

    /// Known MurmurHash64A values (Redis's seed): the register and count
    /// of "a" as `PFADD h a` then `PFDEBUG GETREG h` shows on
    /// redis-server 7.0.
    #[test]
    fn murmur_matches_redis() {
        // MurmurHash64A of "" with seed 0 is 0.
        assert_eq!(murmur64a(b"", 0), 0);
        let v = {
            let mut v = new_sparse();
            assert_eq!(add(&mut v, b"a", MAX), Ok(true));
            v
        };
        let regs = registers(&v);
        let set: Vec<(usize, u8)> = regs
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != 0)
            .map(|(i, &r)| (i, r))
            .collect();
        assert_eq!(set, vec![register_of(b"a")]);
        assert_eq!(count(&v), Ok(1));
    }

    /// The bytes redis-server 7.0.15 holds after `PFADD hx a b c`, then
    /// after `PFCOUNT hx` (cache 3).
    #[test]
    fn pfadd_bytes_are_redis_s() {
        let mut v = new_sparse();
        for e in [&b"a"[..], b"b", b"c"] {
            assert_eq!(add(&mut v, e, MAX), Ok(true));
        }
        invalidate(&mut v);
        let mut want = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
        want.extend_from_slice(b"`\xf3\x80P\xb1\x84K\xfb\x80BZ");
        assert_eq!(v, want);
        assert_eq!(decode(&v), "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
        assert_eq!(cached(&v), None);
        assert_eq!(count(&v), Ok(3));
        set_cached(&mut v, 3);
        assert_eq!(&v[8..16], &[3, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn sparse_and_dense_agree_and_promotion_keeps_every_register() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        assert_eq!(dense.len(), DENSE_LEN);
        for i in 0..5000u32 {
            let e = format!("element:{i}");
            let a = add(&mut sparse, e.as_bytes(), MAX).unwrap();
            let b = add(&mut dense, e.as_bytes(), MAX).unwrap();
            assert_eq!(a, b, "{e}");
            assert!(is_dense(&sparse) || sparse.len() <= MAX, "{}", sparse.len());
            assert_eq!(registers(&sparse), registers(&dense), "after {e}");
        }
        assert!(is_dense(&sparse), "5000 elements pass 3000 bytes");
        assert_eq!(sparse, dense);
        let n = count(&dense).unwrap();
        assert!((4800..=5200).contains(&n), "{n}");
    }

    #[test]
    fn sparse_runs_merge_and_split_as_redis_s() {
        let mut v = new_sparse();
        // Registers 0..4 raised to 1 in order: Z split, then VAL runs
        // merged up to 4.
        for i in 0..6 {
            raise(&mut v, i, 1, MAX).unwrap();
        }
        assert_eq!(decode(&v), "v:1,4 v:1,2 Z:16378");
        raise(&mut v, 100, 3, MAX).unwrap();
        // 94 zero registers before it: one XZERO (a ZERO holds 64 at most).
        assert_eq!(decode(&v), "v:1,4 v:1,2 Z:94 v:3,1 Z:16283");
        // Raising inside a VAL run splits it; the split's tail then
        // merges with the run after it.
        raise(&mut v, 1, 2, MAX).unwrap();
        assert_eq!(decode(&v), "v:1,1 v:2,1 v:1,4 Z:94 v:3,1 Z:16283");
        raise(&mut v, 70, 1, MAX).unwrap();
        assert_eq!(
            decode(&v),
            "v:1,1 v:2,1 v:1,4 z:64 v:1,1 z:29 v:3,1 Z:16283"
        );
        // A lower or equal count changes nothing.
        assert_eq!(raise(&mut v, 1, 2, MAX), Ok(false));
        assert_eq!(raise(&mut v, 100, 1, MAX), Ok(false));
        let regs = registers(&v);
        assert_eq!(&regs[..7], &[1, 2, 1, 1, 1, 1, 0]);
        assert_eq!(regs[100], 3);
    }

    #[test]
    fn counts_above_32_and_growth_past_the_limit_turn_dense() {
        let mut v = new_sparse();
        raise(&mut v, 7, 33, MAX).unwrap();
        assert!(is_dense(&v));
        assert_eq!(register(&v, 7), 33);
        let mut v = new_sparse();
        // Every other register: each raise adds bytes until the limit.
        let mut i = 0;
        while !is_dense(&v) {
            raise(&mut v, i, 2, 100).unwrap();
            assert!(is_dense(&v) || v.len() <= 100);
            i += 2;
        }
        assert_eq!(register(&v, i - 2), 2);
    }

    #[test]
    fn damaged_values_are_corrupt_not_panics() {
        let mut v = new_sparse();
        v.truncate(17); // half an XZERO opcode
        assert_eq!(count(&v), Err(Corrupt));
        assert_eq!(to_dense(&mut v.clone()), Err(Corrupt));
        let mut max = vec![0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &v), Err(Corrupt));
        // Opcodes covering too few registers, or too many.
        let mut short = new_sparse();
        short.truncate(HDR);
        short.push(0x05);
        assert_eq!(count(&short), Err(Corrupt));
        assert_eq!(raise(&mut short, 9, 1, MAX), Err(Corrupt));
        // A raise inside an XZERO opcode cut off at the end.
        assert_eq!(raise(&mut v, 5, 1, MAX), Err(Corrupt));
        let mut long = new_sparse();
        long.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(count(&long), Err(Corrupt));
        let mut max = vec![0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &long), Err(Corrupt));
        // Dense values must be exactly their length.
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        d.push(0);
        assert!(!is_hll(&d));
        assert!(!is_hll(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"));
        assert!(!is_hll(b"HYLL"));
    }

    #[test]
    fn dense_registers_decode_four_per_three_bytes() {
        let mut regs = vec![0u8; DENSE_LEN - HDR];
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, ((i * 7 + i / 5) % 64) as u8);
        }
        let mut seen = 0;
        each_dense(&regs, |i, r| {
            assert_eq!(r, dense_get(&regs, i), "register {i}");
            assert_eq!(r, ((i * 7 + i / 5) % 64) as u8);
            seen += 1;
        });
        assert_eq!(seen, REGISTERS);
    }

    #[test]
    fn the_cache_is_little_endian_with_a_stale_bit() {
        let mut v = new_sparse();
        set_cached(&mut v, 0x0102);
        assert_eq!(&v[8..16], &[2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(cached(&v), Some(0x0102));
        invalidate(&mut v);
        assert_eq!(v[15], 0x80);
        assert_eq!(cached(&v), None);
    }

    #[test]
    fn merged_registers_count_the_union() {
        let (mut a, mut b) = (new_sparse(), new_sparse());
        for i in 0..300u32 {
            add(&mut a, format!("a{i}").as_bytes(), MAX).unwrap();
            add(&mut b, format!("b{i}").as_bytes(), MAX).unwrap();
        }
        let mut max = vec![0u8; REGISTERS];
        merge_into(&mut max, &a).unwrap();
        merge_into(&mut max, &b).unwrap();
        let n = count_registers(&max);
        assert!((570..=630).contains(&n), "{n}");
    }
}
