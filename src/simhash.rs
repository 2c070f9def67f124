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

/// Fingerprint of weighted features `(hash, weight)`; features must be sorted by hash.
pub fn fingerprint(features: &[(u64, f32)]) -> u64 {
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
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Similarity of two fingerprints `distance` bits apart: 1 - distance / 64.
#[inline]
pub fn similarity(distance: u32) -> f64 {
    1.0 - f64::from(distance) / 64.0
}

/// The block tables for distance k with B blocks.
#[derive(Debug, Clone)]
pub struct BlockIndex {
    /// Bit mask of each table's key (the union of its blocks).
    masks: Vec<u64>,
}

impl BlockIndex {
    /// Tables for `blocks` blocks and distance `k` (requires blocks > k, blocks <= 64).
    pub fn new(blocks: usize, k: usize) -> Self {
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
    pub fn tables(&self) -> usize {
        self.masks.len()
    }

    /// The bucket key of `fp` in table `t`: the masked bits (the table index is kept apart).
    #[inline]
    pub fn key(&self, t: usize, fp: u64) -> u64 {
        fp & self.masks[t]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
