//! Locality-sensitive hashing over MinHash signatures: b bands of r rows.
//!
//! Two documents with Jaccard similarity s agree on one MinHash value with probability s, on all r
//! values of a band with probability s^r, and so share at least one of b band buckets with
//! probability
//!
//! ```text
//! P(candidate | s) = 1 - (1 - s^r)^b
//! ```
//!
//! an S-curve whose steep part sits near (1/b)^(1/r). Every candidate is verified afterwards, so the
//! choice is biased towards recall: [`choose_bands`] takes the largest r (fewest false candidates)
//! whose best b = floor(K / r) still finds a pair at the threshold with the target probability.
//! With K = 128 and threshold 0.8 that is 18 x 7: P(0.8) = 0.986.

/// Probability that a pair with Jaccard `s` shares at least one band bucket.
pub(crate) fn candidate_probability(s: f64, bands: usize, rows: usize) -> f64 {
    1.0 - (1.0 - s.powi(rows as i32)).powi(bands as i32)
}

/// Chooses (bands, rows) with bands x rows <= `num_perm` and
/// `candidate_probability(threshold) >= target`, preferring the largest rows (fewest false
/// candidates). Falls back to (num_perm, 1) which maximises recall.
pub(crate) fn choose_bands(threshold: f64, num_perm: usize, target: f64) -> (usize, usize) {
    for rows in (1..=num_perm).rev() {
        let bands = num_perm / rows;
        if candidate_probability(threshold, bands, rows) >= target {
            return (bands, rows);
        }
    }
    (num_perm, 1)
}

/// Probability that a pair with Jaccard `s` shares a bucket of either of two layouts over one
/// signature of `num_perm` values, each (bands, rows) on the signature's first bands x rows
/// values: exact, by walking the values once (each agrees with probability `s`, independently)
/// with whether the current band of each layout has agreed so far as the state.
pub(crate) fn union_probability(
    s: f64,
    (b1, r1): (usize, usize),
    (b2, r2): (usize, usize),
    num_perm: usize,
) -> f64 {
    // P(no band has fully agreed yet, current bands of (first, second) still all-agreeing).
    let mut state = [[0.0f64; 2]; 2];
    state[1][1] = 1.0;
    for i in 0..num_perm {
        let (in1, in2) = (i < b1 * r1, i < b2 * r2);
        let (end1, end2) = (in1 && (i + 1) % r1 == 0, in2 && (i + 1) % r2 == 0);
        let mut next = [[0.0f64; 2]; 2];
        for (a1, row) in state.iter().enumerate() {
            for (a2, &p) in row.iter().enumerate() {
                for (agree, q) in [(true, s), (false, 1.0 - s)] {
                    let n1 = if in1 { a1 == 1 && agree } else { a1 == 1 };
                    let n2 = if in2 { a2 == 1 && agree } else { a2 == 1 };
                    // A band that ends fully agreeing is a shared bucket: not counted here.
                    if (end1 && n1) || (end2 && n2) {
                        continue;
                    }
                    next[usize::from(n1 || end1)][usize::from(n2 || end2)] += p * q;
                }
            }
        }
        state = next;
    }
    1.0 - state.iter().flatten().sum::<f64>()
}

/// `--sweep`'s bands beside the run's layout `run`: the rows a run at `lowest` would choose
/// ([`choose_bands`], so a band finds false candidates as rarely as there), and the fewest bands
/// of them with which the two layouts together find a pair at `lowest` with probability
/// `target` ([`union_probability`]).
pub(crate) fn choose_sweep_bands(
    lowest: f64,
    run: (usize, usize),
    num_perm: usize,
    target: f64,
) -> (usize, usize) {
    let rows = choose_bands(lowest, num_perm, target).1;
    let most = num_perm / rows;
    let bands = (1..=most)
        .find(|&b| union_probability(lowest, run, (b, rows), num_perm) >= target)
        .unwrap_or(most);
    (bands, rows)
}

/// 64-bit bucket key of one band: a seeded mix of the band's `rows` signature values. Distinct
/// bands never share a key space because the band index seeds the hash.
#[inline]
pub(crate) fn band_key(band: usize, values: &[u32]) -> u64 {
    let mut h = (band as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for &v in values {
        h = mix64(h ^ u64::from(v));
    }
    h
}

/// The bucket keys of one signature, band by band (`out.len()` bands of `rows` values each).
#[inline]
pub fn band_keys(sig: &[u32], rows: usize, out: &mut [u64]) {
    for (b, key) in out.iter_mut().enumerate() {
        *key = band_key(b, &sig[b * rows..(b + 1) * rows]);
    }
}

/// The splitmix64 finaliser: a bijective avalanche mix of 64 bits.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_matches_known_values() {
        // Known points of the S-curve 1 - (1 - s^r)^b at s = 0.8.
        assert!((candidate_probability(0.8, 16, 8) - 0.947).abs() < 0.001);
        assert!((candidate_probability(0.8, 20, 6) - 0.998).abs() < 0.001);
        assert!((candidate_probability(0.8, 9, 13) - 0.40).abs() < 0.01);
        assert_eq!(candidate_probability(1.0, 3, 4), 1.0);
        assert_eq!(candidate_probability(0.0, 3, 4), 0.0);
    }

    #[test]
    fn probability_is_monotone_in_s() {
        let mut last = 0.0;
        for i in 0..=100 {
            let p = candidate_probability(i as f64 / 100.0, 18, 7);
            assert!(p >= last);
            last = p;
        }
    }

    #[test]
    fn chooses_recall_biased_bands() {
        assert_eq!(choose_bands(0.8, 128, 0.95), (18, 7));
        for &(t, k) in &[(0.5, 128), (0.7, 64), (0.9, 256), (0.95, 16)] {
            let (b, r) = choose_bands(t, k, 0.95);
            assert!(b * r <= k);
            assert!(candidate_probability(t, b, r) >= 0.95);
            // One more row per band would miss the target.
            let b2 = k / (r + 1);
            assert!(b2 == 0 || candidate_probability(t, b2, r + 1) < 0.95 || r + 1 > k);
        }
    }

    #[test]
    fn the_union_of_two_layouts_is_exact() {
        // One layout alone (the other has no bands) is the S-curve.
        for s in [0.3, 0.7, 0.9] {
            let alone = union_probability(s, (18, 7), (0, 5), 128);
            assert!((alone - candidate_probability(s, 18, 7)).abs() < 1e-12);
        }
        // The same layout twice finds nothing more.
        let twice = union_probability(0.7, (18, 7), (18, 7), 128);
        assert!((twice - candidate_probability(0.7, 18, 7)).abs() < 1e-12);
        // Two bands of one value each: 1 - (1 - s)^2 whatever the other layout.
        assert!((union_probability(0.5, (2, 1), (1, 1), 2) - 0.75).abs() < 1e-12);
        // Against a Monte Carlo estimate of 18 x 7 with 12 x 5 at 0.7 (200k pairs: 0.9525).
        assert!((union_probability(0.7, (18, 7), (12, 5), 128) - 0.953).abs() < 0.002);
    }

    #[test]
    fn a_sweep_adds_the_fewest_bands_that_reach_its_lowest_threshold() {
        let run = choose_bands(0.8, 128, 0.95);
        assert_eq!(choose_sweep_bands(0.7, run, 128, 0.95), (12, 5));
        for lowest in [0.5, 0.6, 0.75] {
            let (b, r) = choose_sweep_bands(lowest, run, 128, 0.95);
            assert!(union_probability(lowest, run, (b, r), 128) >= 0.95);
            assert!(b == 1 || union_probability(lowest, run, (b - 1, r), 128) < 0.95);
        }
    }

    #[test]
    fn band_keys_differ_by_band() {
        assert_ne!(band_key(0, &[1, 2, 3]), band_key(1, &[1, 2, 3]));
        assert_ne!(band_key(0, &[1, 2, 3]), band_key(0, &[1, 2, 4]));
        assert_eq!(band_key(5, &[7, 8]), band_key(5, &[7, 8]));
    }
}
