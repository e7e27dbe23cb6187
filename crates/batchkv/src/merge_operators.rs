//! Ready-made merge operators: [`U64AddOperator`] (counters) and
//! [`StringAppendOperator`] (delimited lists).

use crate::merge::MergeOperator;

/// A counter: every operand and value is a `u64` encoded as exactly
/// **8 bytes, little-endian**; merging adds them (wrapping on overflow).
/// A missing base counts as 0. An operand or base of another length makes
/// the merge fail ([`Error::MergeFailed`](crate::Error::MergeFailed)), so a
/// stray non-counter value is reported rather than misread.
///
/// ```
/// # use batchkv::merge_operators::U64AddOperator;
/// assert_eq!(U64AddOperator::encode(5), 5u64.to_le_bytes());
/// assert_eq!(U64AddOperator::decode(&7u64.to_le_bytes()), Some(7));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct U64AddOperator;

impl U64AddOperator {
    /// The 8-byte little-endian encoding of `n` (an operand or a value).
    pub fn encode(n: u64) -> [u8; 8] {
        n.to_le_bytes()
    }

    /// Decodes a value or operand; `None` unless it is exactly 8 bytes.
    pub fn decode(b: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }
}

impl MergeOperator for U64AddOperator {
    fn name(&self) -> &str {
        "batchkv.U64AddOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut sum = match existing {
            Some(b) => Self::decode(b)?,
            None => 0,
        };
        for o in operands {
            sum = sum.wrapping_add(Self::decode(o)?);
        }
        Some(Self::encode(sum).to_vec())
    }

    fn partial_merge(&self, _key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let sum = Self::decode(left)?.wrapping_add(Self::decode(right)?);
        Some(Self::encode(sum).to_vec())
    }
}

/// Appends each operand to the value, separated by `delimiter` (RocksDB's
/// `StringAppendOperator`): base `"a"`, operands `"b"`, `"c"` with `,`
/// give `"a,b,c"`; with no base the first operand starts the value.
#[derive(Debug, Clone)]
pub struct StringAppendOperator {
    delimiter: Vec<u8>,
}

impl StringAppendOperator {
    /// Joins with `delimiter` (may be empty or several bytes).
    pub fn new(delimiter: impl AsRef<[u8]>) -> StringAppendOperator {
        StringAppendOperator {
            delimiter: delimiter.as_ref().to_vec(),
        }
    }
}

impl MergeOperator for StringAppendOperator {
    fn name(&self) -> &str {
        "batchkv.StringAppendOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut first = true;
        for part in existing.into_iter().chain(operands.iter().copied()) {
            if !first {
                out.extend_from_slice(&self.delimiter);
            }
            out.extend_from_slice(part);
            first = false;
        }
        Some(out)
    }

    fn partial_merge(&self, _key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(left.len() + self.delimiter.len() + right.len());
        out.extend_from_slice(left);
        out.extend_from_slice(&self.delimiter);
        out.extend_from_slice(right);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_adds_wrapping_and_rejects_bad_lengths() {
        let op = U64AddOperator;
        let (a, b) = (U64AddOperator::encode(u64::MAX), U64AddOperator::encode(3));
        assert_eq!(
            op.full_merge(b"k", Some(&a), &[&b]),
            Some(U64AddOperator::encode(2).to_vec())
        );
        assert_eq!(
            op.full_merge(b"k", None, &[&b, &b]),
            Some(U64AddOperator::encode(6).to_vec())
        );
        assert_eq!(op.full_merge(b"k", Some(b"short"), &[&b]), None);
        assert_eq!(op.full_merge(b"k", None, &[b"123456789"]), None);
        assert_eq!(
            op.partial_merge(b"k", &b, &b),
            Some(U64AddOperator::encode(6).to_vec())
        );
    }

    #[test]
    fn append_joins_in_order_with_the_delimiter() {
        let op = StringAppendOperator::new(",");
        assert_eq!(
            op.full_merge(b"k", Some(b"a"), &[b"b", b"c"]),
            Some(b"a,b,c".to_vec())
        );
        assert_eq!(
            op.full_merge(b"k", None, &[b"b", b"c"]),
            Some(b"b,c".to_vec())
        );
        assert_eq!(
            op.full_merge(b"k", Some(b""), &[b"x"]),
            Some(b",x".to_vec())
        );
        // Partial then full equals full over all operands.
        let p = op.partial_merge(b"k", b"b", b"c").unwrap();
        assert_eq!(
            op.full_merge(b"k", Some(b"a"), &[&p]),
            Some(b"a,b,c".to_vec())
        );
    }
}
