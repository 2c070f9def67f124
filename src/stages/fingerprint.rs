//! Stage 1 for `--method simhash`: text column -> 64-bit SimHash fingerprint column.
//!
//! Over-frequent features (boilerplate headers and footers, templates) would pull unrelated pages
//! towards the same fingerprint, so a first pass over a deterministic sample of documents counts
//! each feature's document frequency ([`DocFrequency`]); features found in more than `max_df` of
//! the sampled documents are dropped. The sampled documents' features are kept from that pass
//! (memory bounded by the sample size), so no document is tokenised twice.
//!
//! Like the MinHash signature UDF: the whole column at once, rayon across documents, reused
//! buffers per thread. A document with no weighted feature (null, empty, or stop words only) gets
//! fingerprint 0 and a feature count of 0; later stages keep it out of the index (a singleton).

use std::sync::atomic::{AtomicU32, Ordering};

use polars::prelude::StringChunked;
use rayon::prelude::*;

use crate::simhash::{fingerprint, hamming};
use crate::text::features::{select_features, weighted_features, FeatureScratch};

/// Fingerprints of a run of documents and their feature counts.
#[derive(Debug, Clone, Default)]
pub struct Fingerprints {
    pub values: Vec<u64>,
    /// Distinct weighted features per document.
    pub features: Vec<u32>,
}

impl Fingerprints {
    /// Hamming distance between the fingerprints of documents `a` and `b`.
    #[inline]
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        hamming(self.values[a as usize], self.values[b as usize])
    }

    /// Appends another run of documents.
    pub fn extend(&mut self, other: Fingerprints) {
        self.values.extend_from_slice(&other.values);
        self.features.extend_from_slice(&other.features);
    }
}

/// Feature parameters shared by both passes.
#[derive(Debug, Clone, Copy)]
pub struct FeatureParams {
    pub ngram: usize,
    pub tf_cap: u32,
    pub top_k: usize,
}

/// Document frequencies of features over a sample, counted in a table of 2^22 hashed counters
/// (16 MiB; a collision can only make a feature look more frequent), then kept as one bit per
/// counter, set when the count is over the limit (512 KiB: the per-feature look-up stays in the
/// L2 cache instead of missing it on nearly every feature).
pub struct DocFrequency {
    /// Bit i set: counter i was over `max_df` of the sampled documents.
    frequent: Vec<u64>,
    /// Every `stride`-th document (global index) was sampled...
    stride: usize,
    /// ...and its features are kept here, indexed by global index / stride.
    sampled: Vec<Vec<(u64, f32)>>,
}

const DF_BITS: u32 = 22;

impl DocFrequency {
    /// Counts features in every `stride`-th document of `columns` (taken as one sequence).
    /// `max_df` is the largest fraction of sampled documents a kept feature may appear in.
    pub fn sample(
        columns: &[&StringChunked],
        stride: usize,
        params: FeatureParams,
        max_df: f64,
    ) -> Self {
        let counts: Vec<AtomicU32> = (0..1usize << DF_BITS).map(|_| AtomicU32::new(0)).collect();
        let mut sampled: Vec<Vec<(u64, f32)>> = Vec::new();
        let mut offset = 0usize;
        for texts in columns {
            let n = texts.len();
            // Global positions 0, stride, 2 stride, ...: the first one inside this column.
            let first = (stride - offset % stride) % stride;
            let rows: Vec<usize> = (first..n).step_by(stride).collect();
            let feats: Vec<Vec<(u64, f32)>> = rows
                .par_iter()
                .with_min_len(16)
                .map_init(FeatureScratch::default, |scratch, &i| {
                    let mut f = Vec::new();
                    if let Some(t) = texts.get(i) {
                        weighted_features(t, params.ngram, params.tf_cap, scratch, &mut f);
                        for &(h, _) in &f {
                            counts[(h >> (64 - DF_BITS)) as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    f
                })
                .collect();
            sampled.extend(feats);
            offset += n;
        }
        let limit = ((sampled.len() as f64 * max_df).floor() as u32).max(1);
        let mut frequent = vec![0u64; counts.len() / 64];
        for (i, c) in counts.into_iter().enumerate() {
            if c.into_inner() > limit {
                frequent[i / 64] |= 1 << (i % 64);
            }
        }
        DocFrequency {
            frequent,
            stride,
            sampled,
        }
    }

    /// The features of document `doc` (global index) if it was sampled.
    fn take_sampled(&self, doc: usize) -> Option<&[(u64, f32)]> {
        (doc % self.stride == 0)
            .then(|| self.sampled.get(doc / self.stride).map(Vec::as_slice))
            .flatten()
    }

    /// True when the feature is not over-frequent.
    #[inline]
    pub fn keep(&self, h: u64) -> bool {
        let slot = (h >> (64 - DF_BITS)) as usize;
        self.frequent[slot / 64] >> (slot % 64) & 1 == 0
    }
}

/// Fingerprints every text of a column whose first row has global index `offset`. `on_docs`
/// reports progress from worker threads.
pub fn fingerprint_column(
    texts: &StringChunked,
    offset: usize,
    params: FeatureParams,
    df: Option<&DocFrequency>,
    on_docs: &(dyn Fn(u64) + Sync),
) -> Fingerprints {
    let n = texts.len();
    let (values, features): (Vec<u64>, Vec<u32>) = (0..n)
        .into_par_iter()
        .with_min_len(16)
        .map_init(
            || (FeatureScratch::default(), Vec::new()),
            |(scratch, feats), i| {
                let r = match texts.get(i) {
                    Some(t) => {
                        match df.and_then(|d| d.take_sampled(offset + i)) {
                            Some(f) => {
                                feats.clear();
                                feats.extend_from_slice(f);
                            }
                            None => {
                                weighted_features(t, params.ngram, params.tf_cap, scratch, feats)
                            }
                        }
                        select_features(feats, |h| df.is_none_or(|d| d.keep(h)), params.top_k);
                        (
                            fingerprint(feats),
                            u32::try_from(feats.len()).unwrap_or(u32::MAX),
                        )
                    }
                    None => (0, 0),
                };
                on_docs(1);
                r
            },
        )
        .unzip();
    Fingerprints { values, features }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn near_duplicates_are_close_and_others_far() {
        let a = "The quick brown fox jumps over the lazy dog while the farmer watches from his old red tractor near the barn";
        let b = "The quick brown fox jumps over the lazy dog while the farmer watches from his old blue tractor near the barn";
        let c = "Completely different words about databases indexes transactions replication and consensus protocols today";
        let texts = StringChunked::new(
            "t".into(),
            &[Some(a), Some(b), Some(c), None, Some("the of and")],
        );
        let f = fingerprint_column(
            &texts,
            0,
            FeatureParams {
                ngram: 1,
                tf_cap: 4,
                top_k: 0,
            },
            None,
            &|_| {},
        );
        assert!(
            hamming(f.values[0], f.values[1]) <= 8,
            "{}",
            hamming(f.values[0], f.values[1])
        );
        assert!(hamming(f.values[0], f.values[2]) > 12);
        assert_eq!(f.features[3], 0);
        assert_eq!(f.features[4], 0); // stop words only
    }

    #[test]
    fn over_frequent_features_are_dropped() {
        let boiler = "home news about contact";
        let texts: Vec<String> = (0..50)
            .map(|i| format!("{boiler} unique{i} words{i} here{i}"))
            .collect();
        let col = StringChunked::new(
            "t".into(),
            texts
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
        );
        let p = FeatureParams {
            ngram: 1,
            tf_cap: 4,
            top_k: 0,
        };
        let df = DocFrequency::sample(&[&col], 2, p, 0.5);
        let with = fingerprint_column(&col, 0, p, None, &|_| {});
        let without = fingerprint_column(&col, 0, p, Some(&df), &|_| {});
        assert_eq!(with.features[0], 7);
        assert_eq!(without.features[0], 3); // the four boilerplate words are gone
        assert_eq!(without.features[1], 3); // a document outside the sample too
                                            // Sampled features reused from the first pass give the same fingerprints as recomputing.
        let split = [col.slice(0, 21), col.slice(21, 29)];
        let df2 = DocFrequency::sample(&[&split[0], &split[1]], 2, p, 0.5);
        let mut again = fingerprint_column(&split[0], 0, p, Some(&df2), &|_| {});
        again.extend(fingerprint_column(&split[1], 21, p, Some(&df2), &|_| {}));
        assert_eq!(again.values, without.values);
    }
}
