//! `--partition-by` and `--across`: a document's label (a column value) as a 64-bit key, and how
//! the keys enter the hashes that decide which documents meet.
//!
//! - `--partition-by`: the partition key is mixed into every band bucket key and the exact-text
//!   hash, so documents of different values never share a bucket, an exact-copy group or an
//!   index entry. Everything downstream (candidates, giant buckets, the keeper rule, lookups in
//!   the index) then sees each value's documents alone: the same decisions as one run per value,
//!   in one pass.
//! - `--across`: the across key is mixed into the exact-text hash only (copies of one text with
//!   one value form a group, copies with different values are separate groups that meet in the
//!   band buckets); pairs of one value are left out where candidates are listed and where giant
//!   buckets are compared, so a document is dropped only against a document of another value.
//!
//! A key is a 64-bit hash of the value as a string (an integer 7 and a string "7" are one value);
//! null has a key of its own. Two distinct values share a key with probability ~2^-64 per pair of
//! values.

use polars::prelude::StringChunked;

use crate::lsh::mix64;

/// The key of a null value.
pub const NULL_KEY: u64 = 0x6e75_6c6c_6e75_6c6c;

/// The key of one label value.
pub fn key(value: Option<&str>) -> u64 {
    match value {
        // Seeded so that no value hashes to the same key as the null key by construction.
        Some(v) => xxhash_rust::xxh3::xxh3_64_with_seed(v.as_bytes(), 0x5eed_1abe1),
        None => NULL_KEY,
    }
}

/// The keys of a column of labels.
pub fn keys(column: &StringChunked) -> impl Iterator<Item = u64> + '_ {
    column.iter().map(key)
}

/// A band bucket key within a partition (identity without `--partition-by`: `partition` 0).
#[inline]
pub fn band_key(key: u64, partition: u64) -> u64 {
    match partition {
        0 => key,
        p => mix64(key ^ mix64(p)),
    }
}

/// The exact-text hash of a document within its partition and across value (0, no text,
/// stays 0; identity when both keys are 0).
pub fn exact_key(hash: u128, partition: u64, across: u64) -> u128 {
    if hash == 0 || (partition == 0 && across == 0) {
        return hash;
    }
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(&hash.to_le_bytes());
    bytes[16..24].copy_from_slice(&partition.to_le_bytes());
    bytes[24..].copy_from_slice(&across.to_le_bytes());
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
    fn mixing_is_identity_without_a_column() {
        assert_eq!(band_key(12345, 0), 12345);
        assert_eq!(exact_key(99, 0, 0), 99);
        assert_eq!(exact_key(0, key(Some("en")), 0), 0);
    }

    #[test]
    fn mixing_separates_values() {
        let (en, zh) = (key(Some("en")), key(Some("zh")));
        assert_ne!(band_key(5, en), band_key(5, zh));
        assert_eq!(band_key(5, en), band_key(5, en));
        assert_ne!(exact_key(7, en, 0), exact_key(7, zh, 0));
        assert_ne!(exact_key(7, 0, en), exact_key(7, en, 0));
        assert_ne!(exact_key(7, en, 0), 0);
    }
}
