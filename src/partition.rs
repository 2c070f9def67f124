//! `--partition-by` and `--across`: a document's label (a column value) as a 64-bit key, and how
//! the keys enter the hashes that decide which documents meet.
//!
//! - `--partition-by`: the partition key is mixed into every band bucket key and the exact-text
//!   hash, so documents of different values never share a bucket, an exact-copy group or an
//!   index entry. Everything downstream (candidates, giant buckets, the keeper rule, lookups in
//!   the index) then sees each value's documents alone: the same decisions as one run per value,
//!   in one pass.
//! - `--across`: the across key makes the exact-copy group ([`copy_group`]: copies of one text
//!   with one value form a group, copies with different values are separate groups that meet in
//!   the band buckets, and in the index through the exact key, which does not hold it); pairs of
//!   one value are left out where candidates are listed, where giant buckets are compared and
//!   where the index is looked up, so a document is dropped only against one of another value.
//!
//! A key is a 64-bit hash of the value as a string (an integer 7 and a string "7" are one value);
//! null has a key of its own. Two distinct values share a key with probability ~2^-64 per pair of
//! values.

use polars::prelude::StringChunked;

use crate::lsh::mix64;

/// The key of a null value.
pub(crate) const NULL_KEY: u64 = 0x6e75_6c6c_6e75_6c6c;

/// The key of one label value.
pub(crate) fn key(value: Option<&str>) -> u64 {
    match value {
        // Seeded so that no value hashes to the same key as the null key by construction.
        Some(v) => xxhash_rust::xxh3::xxh3_64_with_seed(v.as_bytes(), 0x5eed_1abe1),
        None => NULL_KEY,
    }
}

/// A label as a run reads it from a JSON Lines field: a string, or an integer or a boolean as
/// its text; null none. None for another kind of value (a run refuses it).
pub(crate) fn json_label(v: &serde_json::Value) -> Option<Option<String>> {
    use serde_json::Value;
    match v {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        Value::Bool(b) => Some(Some(b.to_string())),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(Some(n.to_string())),
        _ => None,
    }
}

/// The keys of a column of labels.
pub(crate) fn keys(column: &StringChunked) -> impl Iterator<Item = u64> + '_ {
    column.iter().map(key)
}

/// A band bucket key within a partition (identity without `--partition-by`: `partition` 0).
#[inline]
pub(crate) fn band_key(key: u64, partition: u64) -> u64 {
    match partition {
        0 => key,
        p => mix64(key ^ mix64(p)),
    }
}

/// The exact-text hash of a document within its partition (0, no text, stays 0; identity
/// without `--partition-by`): what the exact pre-pass and the index match on.
pub(crate) fn exact_key(hash: u128, partition: u64) -> u128 {
    mix128(hash, partition, 1)
}

/// The exact-copy group of a document: its exact key within its `--across` value (identity
/// without `--across`), so copies of one text with another value are another group.
pub(crate) fn copy_group(exact: u128, across: u64) -> u128 {
    mix128(exact, across, 2)
}

/// `hash` and `key` hashed together (`tag` keeps the two uses apart); 0 and a 0 key leave
/// `hash` as it is.
fn mix128(hash: u128, key: u64, tag: u8) -> u128 {
    if hash == 0 || key == 0 {
        return hash;
    }
    let mut bytes = [0u8; 25];
    bytes[..16].copy_from_slice(&hash.to_le_bytes());
    bytes[16..24].copy_from_slice(&key.to_le_bytes());
    bytes[24] = tag;
    xxhash_rust::xxh3::xxh3_128(&bytes).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_values_apart() {
        assert_ne!(key(Some("en")), key(Some("zh")));
        assert_ne!(key(Some("")), key(None));
        assert_eq!(key(None), NULL_KEY);
        assert_eq!(key(Some("7")), key(Some("7")));
    }

    #[test]
    fn json_labels_are_read_as_a_run_reads_json_lines() {
        let label = |j: &str| json_label(&serde_json::from_str(j).unwrap());
        assert_eq!(label(r#""en""#), Some(Some("en".into())));
        assert_eq!(label("7"), Some(Some("7".into())));
        assert_eq!(label("true"), Some(Some("true".into())));
        assert_eq!(label("null"), Some(None));
        assert_eq!(label("1.5"), None);
        assert_eq!(label("[1]"), None);
    }

    #[test]
    fn mixing_is_identity_without_a_column() {
        assert_eq!(band_key(12345, 0), 12345);
        assert_eq!(exact_key(99, 0), 99);
        assert_eq!(copy_group(99, 0), 99);
        assert_eq!(exact_key(0, key(Some("en"))), 0);
    }

    #[test]
    fn mixing_separates_values() {
        let (en, zh) = (key(Some("en")), key(Some("zh")));
        assert_ne!(band_key(5, en), band_key(5, zh));
        assert_eq!(band_key(5, en), band_key(5, en));
        assert_ne!(exact_key(7, en), exact_key(7, zh));
        assert_ne!(copy_group(7, en), exact_key(7, en));
        assert_ne!(exact_key(7, en), 0);
    }
}
