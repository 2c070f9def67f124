//! Sorting millions of small records (`--substrings`' windows and their decisions): one counting
//! pass spreads them into buckets by a leading key, and each bucket, small enough to stay in
//! cache, is sorted on its own. A comparison sort of the whole array moves every record
//! through memory about log2(n) times; this moves it twice.

use rayon::prelude::*;

/// Below this many records a plain sort is as fast.
const SMALL: usize = 1 << 12;
/// Records per bucket on average: a bucket's sort then runs in the first-level cache.
const PER_BUCKET: usize = 64;

/// Sorts `v` as `sort_unstable` does. `key` must never decrease along the order (`a <= b`
/// implies `key(a) <= key(b)`), like the leading fields of a tuple; records are bucketed by the
/// high bits of `key(x) - min`, so keys spread evenly (hashes, document numbers) make even
/// buckets.
pub(crate) fn sort_by_leading_key<T, K>(v: &mut Vec<T>, key: K)
where
    T: Ord + Copy + Send,
    K: Fn(&T) -> u64 + Sync,
{
    if v.len() < SMALL {
        v.sort_unstable();
        return;
    }
    let (lo, hi) = v.iter().fold((u64::MAX, 0), |(lo, hi), x| {
        let k = key(x);
        (lo.min(k), hi.max(k))
    });
    // The fewest high bits of the keys' spread that give about PER_BUCKET records a bucket.
    let bits = (v.len() / PER_BUCKET).next_power_of_two().trailing_zeros();
    let spread = 64 - (hi - lo).leading_zeros();
    let shift = spread.saturating_sub(bits);
    let buckets = (((hi - lo) >> shift) + 1) as usize;
    let bucket = |x: &T| ((key(x) - lo) >> shift) as usize;
    let mut starts = vec![0usize; buckets + 1];
    for x in v.iter() {
        starts[bucket(x) + 1] += 1;
    }
    for b in 0..buckets {
        starts[b + 1] += starts[b];
    }
    let mut at = starts.clone();
    let mut out = vec![v[0]; v.len()];
    for x in v.iter() {
        let b = bucket(x);
        out[at[b]] = *x;
        at[b] += 1;
    }
    let mut slices = Vec::with_capacity(buckets);
    let mut rest = out.as_mut_slice();
    for b in 0..buckets {
        let (head, tail) = rest.split_at_mut(starts[b + 1] - starts[b]);
        slices.push(head);
        rest = tail;
    }
    slices
        .par_iter_mut()
        .with_min_len(256)
        .for_each(|s| s.sort_unstable());
    *v = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 64,
            rng_seed: proptest::test_runner::RngSeed::Fixed(57),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Any records, keys spread wide or narrow, many or few: the order `sort_unstable` gives.
        #[test]
        fn sorts_as_sort_unstable(
            seed in 0u64..u64::MAX,
            n in 0usize..20_000,
            width in 0u32..64,
        ) {
            let mut s = seed;
            let mut v: Vec<(u64, u32, u32)> = (0..n)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let k = if width == 0 { 7 } else { (s >> 1) >> (63 - width.min(63)) };
                    (k, (s >> 40) as u32 % 3, (s >> 20) as u32 % 5)
                })
                .collect();
            let mut expected = v.clone();
            expected.sort_unstable();
            sort_by_leading_key(&mut v, |x| x.0);
            proptest::prop_assert_eq!(v, expected);
        }
    }

    #[test]
    fn extreme_keys_and_a_key_made_of_two_fields() {
        let mut v: Vec<(u32, u32, u8)> = (0..50_000u32)
            .map(|i| (i.wrapping_mul(2654435761) % 1000, i % 7, (i % 3) as u8))
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_by_leading_key(&mut v, |x| (u64::from(x.0) << 32) | u64::from(x.1));
        assert_eq!(v, expected);
        let mut w: Vec<u64> = (0..10_000u64)
            .map(|i| if i % 2 == 0 { u64::MAX - i } else { i })
            .collect();
        let mut expected = w.clone();
        expected.sort_unstable();
        sort_by_leading_key(&mut w, |&x| x);
        assert_eq!(w, expected);
    }
}
