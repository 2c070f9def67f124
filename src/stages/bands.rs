//! Stage 2, bands: signature (or fingerprint) column -> (band, bucket, doc) rows.
//!
//! Each document with at least one shingle contributes `bands` rows (the "explode" of its band
//! keys); the bucket is a 64-bit hash of the band's `rows` signature values (see `lsh::band_key`).
//! Documents without shingles are left out: they can be no one's near-duplicate.

use polars::prelude::*;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::lsh::band_key;
use crate::simhash::BlockIndex;
use crate::stages::fingerprint::Fingerprints;
use crate::stages::signature::Signatures;

/// Builds the long (band: u32, bucket: u64, doc: u32) frame for the documents with at least one
/// shingle: `bands` rows each, in document order.
pub fn band_frame(sigs: &Signatures, bands: usize, rows: usize) -> Result<DataFrame> {
    let docs: Vec<u32> = (0..sigs.len() as u32)
        .filter(|&d| sigs.shingles[d as usize] > 0)
        .collect();
    key_frame(&docs, bands, |d, out| {
        let sig = sigs.get(d);
        for (b, key) in out.iter_mut().enumerate() {
            *key = band_key(b, &sig[b * rows..(b + 1) * rows]);
        }
    })
}

/// The same frame for SimHash: one row per (table, document), the bucket being the fingerprint's
/// bits under the table's mask; documents without features are left out.
pub fn block_frame(fps: &Fingerprints, index: &BlockIndex) -> Result<DataFrame> {
    let docs: Vec<u32> = (0..fps.values.len() as u32)
        .filter(|&d| fps.features[d as usize] > 0)
        .collect();
    key_frame(&docs, index.tables(), |d, out| {
        let fp = fps.values[d as usize];
        for (t, key) in out.iter_mut().enumerate() {
            *key = index.key(t, fp);
        }
    })
}

/// Explodes `per_doc` keys of each document into (band, bucket, doc) rows; `keys(doc, out)` fills
/// the document's keys, in parallel.
pub fn key_frame(
    docs: &[u32],
    per_doc: usize,
    keys: impl Fn(u32, &mut [u64]) + Sync,
) -> Result<DataFrame> {
    let mut bucket = vec![0u64; docs.len() * per_doc];
    bucket
        .par_chunks_mut(per_doc.max(1))
        .zip(docs.par_iter())
        .with_min_len(64)
        .for_each(|(out, &d)| keys(d, out));
    let band: Vec<u32> = (0..docs.len()).flat_map(|_| 0..per_doc as u32).collect();
    let doc: Vec<u32> = docs
        .iter()
        .flat_map(|&d| std::iter::repeat_n(d, per_doc))
        .collect();
    DataFrame::new(
        bucket.len(),
        vec![
            Column::new("band".into(), band),
            Column::new("bucket".into(), bucket),
            Column::new("doc".into(), doc),
        ],
    )
    .map_err(|source| Error::Polars {
        stage: "bands",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_band_and_doc_skipping_empties() {
        let sigs = Signatures {
            k: 4,
            values: vec![1, 2, 3, 4, 9, 9, 9, 9, 1, 2, 3, 5],
            shingles: vec![3, 0, 3],
        };
        let df = band_frame(&sigs, 2, 2).unwrap();
        assert_eq!(df.height(), 4);
        let doc: Vec<u32> = df
            .column("doc")
            .unwrap()
            .u32()
            .unwrap()
            .into_no_null_iter()
            .collect();
        assert_eq!(doc, vec![0, 0, 2, 2]);
        let bucket: Vec<u64> = df
            .column("bucket")
            .unwrap()
            .u64()
            .unwrap()
            .into_no_null_iter()
            .collect();
        assert_eq!(bucket[0], bucket[2]); // first band equal
        assert_ne!(bucket[1], bucket[3]); // second band differs
    }
}
