//! SimHash fingerprints (Charikar 2002) and the block index that finds all pairs within Hamming
//! distance k without comparing all pairs (Manku, Jain, Das Sarma, WWW 2007).
//!
//! Fingerprint: every weighted feature (64-bit hash h, weight w > 0) adds +w to counter i when bit
//! i of h is 1 and -w otherwise; bit i of the fingerprint is 1 when counter i ends positive. Similar
//! feature multisets give fingerprints at small Hamming distance. Features are accumulated in
//! ascending hash order, so the floating-point sums (and the fingerprint) do not depend on the
//! order features were found in.
//!
//! Block index: cut the 64 bits into B > k blocks. Two fingerprints within distance k differ in at
//! most k blocks, so they agree exactly on at least B - k of them (pigeonhole). One table per choice
//! of B - k blocks out of B, keyed by those blocks' bits, therefore puts every such pair in a shared
//! bucket at least once. B = k + 1 gives k + 1 tables keyed by one block each (4 x 16 bits for
//! k = 3); a larger B gives C(B, B - k) tables with wider keys (Manku's permuted tables): more
//! tables, far smaller buckets when the corpus is large (a 16-bit key puts N / 65536 documents in an
//! average bucket).
//!
//! Features and the document-frequency filter: a document's features are its jieba tokens (or
//! runs of them) weighted by capped TF x IDF ([`crate::text::features`]). Over-frequent features
//! (boilerplate headers and footers, templates) would pull unrelated pages towards the same
//! fingerprint, so the features of a deterministic sample of documents (every stride-th one) are
//! counted ([`DocFrequency`]) and those found in more than `max_df` of the sampled documents are
//! left out of every fingerprint. A document with no weighted feature (null, empty, stop words
//! only) gets fingerprint 0 and a feature count of 0; it is kept out of the index (a singleton).

use polars::prelude::StringChunked;
use rayon::prelude::*;

use crate::lsh::mix64;
use crate::text::features::{select_features, weighted_features, FeatureScratch};

/// Fingerprint of weighted features `(hash, weight)`; features must be sorted by hash.
pub(crate) fn fingerprint(features: &[(u64, f32)]) -> u64 {
    debug_assert!(
        features.windows(2).all(|w| w[0].0 <= w[1].0),
        "features must be sorted by hash"
    );
    let mut acc = [0f32; 64];
    for &(h, w) in features {
        for (bit, a) in acc.iter_mut().enumerate() {
            *a += if (h >> bit) & 1 == 1 { w } else { -w };
        }
    }
    acc.iter().enumerate().fold(
        0u64,
        |fp, (bit, &a)| if a > 0.0 { fp | (1 << bit) } else { fp },
    )
}

/// Number of differing bits.
#[inline]
pub(crate) fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// A document as the document store keeps it for SimHash, in place of a MinHash signature: the
/// fingerprint's low and high 32 bits and the feature count.
#[inline]
pub(crate) fn to_record(fp: u64, features: u32) -> [u32; 3] {
    [fp as u32, (fp >> 32) as u32, features]
}

/// The fingerprint of a [`to_record`] record.
#[inline]
pub(crate) fn record_fingerprint(record: &[u32]) -> u64 {
    u64::from(record[0]) | u64::from(record[1]) << 32
}

/// The feature count of a [`to_record`] record (0: no fingerprint, not indexed).
#[inline]
pub(crate) fn record_features(record: &[u32]) -> u32 {
    record[2]
}

/// Similarity of two fingerprints `distance` bits apart: 1 - distance / 64.
#[inline]
pub(crate) fn similarity(distance: u32) -> f64 {
    1.0 - f64::from(distance) / 64.0
}

/// The block tables for distance k with B blocks.
#[derive(Debug, Clone)]
pub(crate) struct BlockIndex {
    /// Bit mask of each table's key (the union of its blocks).
    masks: Vec<u64>,
}

impl BlockIndex {
    /// Tables for `blocks` blocks and distance `k` (requires blocks > k, blocks <= 64).
    pub(crate) fn new(blocks: usize, k: usize) -> Self {
        assert!(blocks > k && blocks <= 64, "need k < blocks <= 64");
        // Block j covers bits [start_j, start_{j+1}); widths differ by at most one bit.
        let bounds: Vec<u32> = (0..=blocks).map(|j| (j * 64 / blocks) as u32).collect();
        let block_mask = |j: usize| {
            let (lo, hi) = (bounds[j], bounds[j + 1]);
            let width = hi - lo;
            (if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            }) << lo
        };
        let mut masks = Vec::new();
        let keep = blocks - k;
        // Every subset of `keep` blocks, in lexicographic order of block indices.
        let mut chosen: Vec<usize> = (0..keep).collect();
        loop {
            masks.push(chosen.iter().fold(0u64, |m, &j| m | block_mask(j)));
            // Advance to the next combination.
            let mut i = keep;
            while i > 0 && chosen[i - 1] == blocks - keep + i - 1 {
                i -= 1;
            }
            if i == 0 {
                break;
            }
            chosen[i - 1] += 1;
            for t in i..keep {
                chosen[t] = chosen[t - 1] + 1;
            }
        }
        BlockIndex { masks }
    }

    /// Number of tables.
    pub(crate) fn tables(&self) -> usize {
        self.masks.len()
    }

    /// The bucket key of `fp` in table `t`: the masked bits (the table index is kept apart).
    #[inline]
    pub(crate) fn key(&self, t: usize, fp: u64) -> u64 {
        fp & self.masks[t]
    }

    /// The bucket keys of `fp` in every table, mixed ([`mix64`] is a bijection, so buckets are
    /// the same) so that the high bits, which pick a candidates task's bucket range, are uniform.
    #[inline]
    pub(crate) fn bucket_keys(&self, fp: u64, out: &mut [u64]) {
        for (t, key) in out.iter_mut().enumerate() {
            *key = mix64(self.key(t, fp));
        }
    }
}

/// Fingerprints of a run of documents and their feature counts.
#[derive(Debug, Clone, Default)]
pub struct Fingerprints {
    pub values: Vec<u64>,
    /// Distinct weighted features per document (0: no fingerprint).
    pub features: Vec<u32>,
}

/// Feature parameters (`--simhash-ngram`, `--simhash-tf-cap`, `--simhash-top-k`).
#[derive(Debug, Clone, Copy)]
pub struct FeatureParams {
    pub ngram: usize,
    pub tf_cap: u32,
    pub top_k: usize,
}

/// Weighted features of one text, sorted by hash (before the frequency filter).
pub(crate) type Features = Vec<(u64, f32)>;

/// The features of `n` texts, `text(i)` for i in 0..n, in parallel.
pub(crate) fn features_of<'t>(
    text: impl Fn(usize) -> Option<&'t str> + Sync,
    n: usize,
    params: FeatureParams,
) -> Vec<Features> {
    (0..n)
        .into_par_iter()
        .with_min_len(16)
        .map_init(FeatureScratch::default, |scratch, i| {
            let mut f = Vec::new();
            if let Some(t) = text(i) {
                weighted_features(t, params.ngram, params.tf_cap, scratch, &mut f);
            }
            f
        })
        .collect()
}

/// Which features are over-frequent: document frequencies over a sample, counted in 2^22 hashed
/// counters (a collision can only make a feature look more frequent), kept as one bit per counter
/// (512 KiB, so the per-feature look-up stays in the L2 cache).
#[derive(Debug, Clone, PartialEq)]
pub struct DocFrequency {
    /// Bit i set: counter i was over the limit.
    frequent: Vec<u64>,
}

const DF_BITS: u32 = 22;

impl DocFrequency {
    /// Counts the features of each sampled document (`sampled` documents in all, some of which may
    /// have no features) and marks those in more than `max_df` of them.
    pub fn from_sample<'a>(
        features: impl Iterator<Item = &'a [(u64, f32)]>,
        sampled: u64,
        max_df: f64,
    ) -> Self {
        let mut counts = vec![0u32; 1 << DF_BITS];
        for f in features {
            for &(h, _) in f {
                counts[Self::slot(h)] += 1;
            }
        }
        let limit = ((sampled as f64 * max_df).floor() as u32).max(1);
        let mut frequent = vec![0u64; counts.len() / 64];
        for (i, c) in counts.into_iter().enumerate() {
            if c > limit {
                frequent[i / 64] |= 1 << (i % 64);
            }
        }
        DocFrequency { frequent }
    }

    fn slot(h: u64) -> usize {
        (h >> (64 - DF_BITS)) as usize
    }

    /// True when the feature is not over-frequent.
    #[inline]
    pub fn keep(&self, h: u64) -> bool {
        let slot = Self::slot(h);
        self.frequent[slot / 64] >> (slot % 64) & 1 == 0
    }

    /// The filter as bytes (little-endian bit words), for the work directory.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.frequent.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// The filter from [`DocFrequency::to_bytes`]; None when the length is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != (1usize << DF_BITS) / 8 {
            return None;
        }
        let frequent = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        Some(DocFrequency { frequent })
    }
}

/// Fingerprints every text of a column. `sampled(i)` gives the features of row `i` when the
/// sample already computed them (so no text is featurised twice); `df` filters over-frequent
/// features.
pub fn fingerprint_column<'s>(
    texts: &StringChunked,
    sampled: impl Fn(usize) -> Option<&'s [(u64, f32)]> + Sync,
    params: FeatureParams,
    df: Option<&DocFrequency>,
) -> Fingerprints {
    let (values, features): (Vec<u64>, Vec<u32>) = (0..texts.len())
        .into_par_iter()
        .with_min_len(16)
        .map_init(
            || (FeatureScratch::default(), Vec::new()),
            |(scratch, feats), i| {
                let Some(t) = texts.get(i) else {
                    return (0, 0);
                };
                match sampled(i) {
                    Some(f) => {
                        feats.clear();
                        feats.extend_from_slice(f);
                    }
                    None => weighted_features(t, params.ngram, params.tf_cap, scratch, feats),
                }
                select_features(feats, |h| df.is_none_or(|d| d.keep(h)), params.top_k);
                (
                    fingerprint(feats),
                    u32::try_from(feats.len()).unwrap_or(u32::MAX),
                )
            },
        )
        .unzip();
    Fingerprints { values, features }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;
    use proptest::prelude::*;

    #[test]
    fn fingerprint_by_hand() {
        // One feature: the fingerprint is its hash.
        assert_eq!(fingerprint(&[(0b1011, 1.0)]), 0b1011);
        // Two features, the heavier wins where they disagree; ties (0) give 0 bits.
        assert_eq!(fingerprint(&[(0b0011, 1.0), (0b0101, 2.0)]), 0b0101);
        assert_eq!(fingerprint(&[(0b0011, 1.0), (0b0101, 1.0)]), 0b0001);
        // Three equal features: majority vote per bit.
        assert_eq!(
            fingerprint(&[(0b0011, 1.0), (0b0110, 1.0), (0b1100, 1.0)]),
            0b0110
        );
        assert_eq!(fingerprint(&[]), 0);
    }

    #[test]
    fn hamming_counts_bits() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0b1010, 0b0110), 2);
        assert_eq!(hamming(u64::MAX, 0), 64);
    }

    #[test]
    fn table_counts() {
        assert_eq!(BlockIndex::new(4, 3).tables(), 4);
        assert_eq!(BlockIndex::new(6, 3).tables(), 20); // C(6, 3)
        assert_eq!(BlockIndex::new(1, 0).tables(), 1);
        let b = BlockIndex::new(4, 3);
        assert_eq!(b.key(0, u64::MAX), 0xFFFF);
        assert_eq!(b.key(3, u64::MAX), 0xFFFF << 48);
        // Masks of one-block tables tile the 64 bits.
        let b = BlockIndex::new(5, 4);
        assert_eq!((0..5).fold(0u64, |m, t| m | b.key(t, u64::MAX)), u64::MAX);
        assert_eq!(
            (0..5).map(|t| b.key(t, u64::MAX).count_ones()).sum::<u32>(),
            64
        );
    }

    fn index_pairs(
        fps: &[u64],
        blocks: usize,
        k: usize,
    ) -> std::collections::BTreeSet<(usize, usize)> {
        let idx = BlockIndex::new(blocks, k);
        let mut out = std::collections::BTreeSet::new();
        for t in 0..idx.tables() {
            let mut buckets: std::collections::HashMap<u64, Vec<usize>> = Default::default();
            for (i, &f) in fps.iter().enumerate() {
                buckets.entry(idx.key(t, f)).or_default().push(i);
            }
            for m in buckets.values() {
                for (x, &a) in m.iter().enumerate() {
                    for &b in &m[x + 1..] {
                        if hamming(fps[a], fps[b]) as usize <= k {
                            out.insert((a, b));
                        }
                    }
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            rng_seed: proptest::test_runner::RngSeed::Fixed(11),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        /// The block index finds exactly the brute-force set of pairs within distance k.
        #[test]
        fn pigeonhole_index_is_complete(base in proptest::collection::vec(any::<u64>(), 1..12),
                                        flips in proptest::collection::vec((0usize..12, 0u32..64), 0..200),
                                        k in 0usize..=8, extra in 0usize..3) {
            // Near-duplicates: copies of a few bases with random bit flips.
            let mut fps = base.clone();
            for (i, &(src, bit)) in flips.iter().enumerate() {
                let mut f = base[src % base.len()] ^ (1 << bit);
                if i % 3 == 0 { f ^= 1 << ((bit + 7) % 64); }
                fps.push(f);
            }
            let mut brute = std::collections::BTreeSet::new();
            for a in 0..fps.len() {
                for b in a + 1..fps.len() {
                    if hamming(fps[a], fps[b]) as usize <= k { brute.insert((a, b)); }
                }
            }
            prop_assert_eq!(index_pairs(&fps, k + 1 + extra, k), brute);
        }
    }

    #[test]
    fn near_duplicates_are_close_and_others_far() {
        let a = "The quick brown fox jumps over the lazy dog while the farmer watches from his old red tractor near the barn";
        let b = "The quick brown fox jumps over the lazy dog while the farmer watches from his old blue tractor near the barn";
        let c = "Completely different words about databases indexes transactions replication and consensus protocols today";
        let texts = StringChunked::new(
            "t".into(),
            &[Some(a), Some(b), Some(c), None, Some("the of and")],
        );
        let params = FeatureParams {
            ngram: 1,
            tf_cap: 4,
            top_k: 0,
        };
        let f = fingerprint_column(&texts, |_| None, params, None);
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
        // Every second document sampled (25 of 50): the boilerplate words are in all of them.
        let rows: Vec<usize> = (0..50).step_by(2).collect();
        let sample = features_of(|i| col.get(rows[i]), rows.len(), p);
        let df = DocFrequency::from_sample(sample.iter().map(Vec::as_slice), 25, 0.5);
        let with = fingerprint_column(&col, |_| None, p, None);
        let without = fingerprint_column(&col, |_| None, p, Some(&df));
        assert_eq!(with.features[0], 7);
        assert_eq!(without.features[0], 3); // the four boilerplate words are gone
        assert_eq!(without.features[1], 3); // a document outside the sample too
                                            // Sampled features reused give the same fingerprints as recomputing them.
        let reused = fingerprint_column(
            &col,
            |i| (i % 2 == 0).then(|| sample[i / 2].as_slice()),
            p,
            Some(&df),
        );
        assert_eq!(reused.values, without.values);
        assert_eq!(DocFrequency::from_bytes(&df.to_bytes()), Some(df));
    }
}
