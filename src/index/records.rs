//! The record formats of a batch's per-document files: ids, short documents' shingle keys, and
//! MinHash (b-bit values) or SimHash records, with what a lookup estimates from them.

use crate::io::{u32_at, u64_at};

/// An `ids.bin` record: length, then the id's bytes.
pub(crate) fn id_record(id: &str) -> Vec<u8> {
    let mut r = (id.len() as u32).to_le_bytes().to_vec();
    r.extend_from_slice(id.as_bytes());
    r
}

/// A `keys.bin` record: document, key count, keys.
pub(crate) fn keys_record(doc: u32, keys: &[u32]) -> Vec<u8> {
    let mut r = Vec::with_capacity(8 + 4 * keys.len());
    r.extend_from_slice(&doc.to_le_bytes());
    r.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for k in keys {
        r.extend_from_slice(&k.to_le_bytes());
    }
    r
}

/// The docs.bin record of a MinHash document: the low 8 bits of each signature value (b-bit
/// minwise hashing), then its shingle count.
pub(crate) fn minhash_record(sig: &[u32], shingles: u32) -> Vec<u8> {
    let mut r: Vec<u8> = sig.iter().map(|&v| v as u8).collect();
    r.extend_from_slice(&shingles.to_le_bytes());
    r
}

/// The shingle count of a MinHash record.
pub(crate) fn minhash_record_shingles(rec: &[u8]) -> u32 {
    rec.len().checked_sub(4).map_or(0, |at| u32_at(rec, at))
}

/// Jaccard estimated from b-bit (8-bit) minima: a full signature `sig` against a record. Two
/// unequal minima agree in their low 8 bits with probability 1/256, which the estimate removes:
/// J = (agree - 1/256) / (1 - 1/256), clamped to [0, 1].
pub(crate) fn bbit_estimate(sig: &[u32], rec: &[u8]) -> f64 {
    let k = sig.len().min(rec.len().saturating_sub(4));
    if k == 0 {
        return 0.0;
    }
    let agree = sig.iter().zip(rec).filter(|(&v, &b)| v as u8 == b).count();
    let c = 1.0 / 256.0;
    ((agree as f64 / k as f64 - c) / (1.0 - c)).clamp(0.0, 1.0)
}

/// The docs.bin record of a SimHash document: fingerprint, feature count, shingle count.
pub(crate) fn simhash_record(fp: u64, features: u32, shingles: u32) -> Vec<u8> {
    let mut r = fp.to_le_bytes().to_vec();
    r.extend_from_slice(&features.to_le_bytes());
    r.extend_from_slice(&shingles.to_le_bytes());
    r
}

/// Fingerprint and feature count of a SimHash record.
pub(crate) fn simhash_record_parts(rec: &[u8]) -> (u64, u32) {
    if rec.len() < 12 {
        return (0, 0);
    }
    (u64_at(rec, 0), u32_at(rec, 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bbit_estimate_is_unbiased_for_unrelated_and_exact_for_equal() {
        let a: Vec<u32> = (0..128).map(|i| crate::lsh::mix64(i) as u32).collect();
        let b: Vec<u32> = (0..128)
            .map(|i| crate::lsh::mix64(i + 1000) as u32)
            .collect();
        assert_eq!(bbit_estimate(&a, &minhash_record(&a, 9)), 1.0);
        assert!(bbit_estimate(&a, &minhash_record(&b, 9)) < 0.05);
        let (fp, n) = simhash_record_parts(&simhash_record(u64::MAX - 3, 17, 4));
        assert_eq!((fp, n), (u64::MAX - 3, 17));
    }
}
