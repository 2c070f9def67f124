//! A sort for the large arrays of records the substring stages order (millions of windows by
//! hash, decisions by document and offset): one pass moves the records into ~2k buckets by their
//! key's leading bits, then each bucket sorts in cache. A comparison sort over the whole array
//! goes through it ~20 times instead.

use rayon::prelude::*;

/// `v` in the order `sort_unstable` would give it, `key` being an order-preserving `u64` of its
/// order's leading fields: one pass moves the records into buckets by the key's leading bits
/// (into a second array, which replaces `v`), then each bucket sorts in cache, in parallel,
/// comparing keys alone (cheaper than whole records), then the few runs of equal keys in full.
pub(crate) fn sorted_by_leading_key<T: Ord + Copy + Send>(
    mut v: Vec<T>,
    key: impl Fn(&T) -> u64 + Sync,
) -> Vec<T> {
    let sort = |bucket: &mut [T]| {
        bucket.sort_unstable_by_key(&key);
        for run in bucket.chunk_by_mut(|a, b| key(a) == key(b)) {
            if run.len() > 1 {
                run.sort_unstable();
            }
        }
    };
    let (lo, hi) = v
        .iter()
        .map(&key)
        .fold((u64::MAX, 0), |(l, h), k| (l.min(k), h.max(k)));
    if v.len() < RADIX_MIN || hi == lo {
        sort(&mut v);
        return v;
    }
    let shift = (64 - (hi - lo).leading_zeros()).saturating_sub(RADIX_BITS);
    let bucket = |x: &T| ((key(x) - lo) >> shift) as usize;
    let mut at = vec![0usize; ((hi - lo) >> shift) as usize + 3];
    for x in &v {
        at[bucket(x) + 2] += 1;
    }
    for b in 2..at.len() {
        at[b] += at[b - 1];
    }
    // Bucket `b` starts at `at[b + 1]`, which the pass below moves to its end.
    let mut out = vec![v[0]; v.len()];
    for x in &v {
        let slot = &mut at[bucket(x) + 1];
        out[*slot] = *x;
        *slot += 1;
    }
    drop(v);
    let mut buckets = Vec::with_capacity(at.len());
    let mut rest = &mut out[..];
    for w in at.windows(2) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        buckets.push(head);
        rest = tail;
    }
    buckets.into_par_iter().for_each(sort);
    out
}

/// Bits of the bucket pass: ~2k buckets, a few hundred to a few thousand records each.
const RADIX_BITS: u32 = 11;
/// Fewer records than this are sorted as one bucket.
const RADIX_MIN: usize = 1 << 14;

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 48,
            rng_seed: proptest::test_runner::RngSeed::Fixed(57),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The bucket pass and bucket sorts give `sort_unstable`'s order for any keys: spread
        /// wide or narrow (a few values: long runs of equal keys), above and below the size that
        /// takes the bucket pass.
        #[test]
        fn sorting_by_leading_key_equals_a_full_sort(
            seed: u64,
            n in 0usize..(3 * RADIX_MIN),
            key_bits in 1u32..=64,
        ) {
            let mut s = seed | 1;
            let mut next = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let v: Vec<(u64, u32)> = (0..n)
                .map(|_| (next() >> (64 - key_bits), next() as u32 % 4))
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(sorted_by_leading_key(v, |x| x.0), want);
        }
    }
}
