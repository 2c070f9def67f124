//! A split-block Bloom filter (the layout Parquet and Impala use): each key sets 8 bits in one
//! 256-bit block, one bit per 32-bit word, so a lookup touches one cache line.
//!
//! Invariants: no false negatives (a key that was inserted is always reported); false positives
//! at about 1% with [`BITS_PER_KEY`] bits per key. Keys must already be well-mixed 64-bit hashes
//! (band keys and exact-text hashes are): the block comes from the high 32 bits and the bit
//! pattern from the low 32 bits. The serialised form is the words, little-endian.

/// Bits of filter per inserted key: ~0.8% false positives for a split-block filter.
pub(crate) const BITS_PER_KEY: usize = 12;

const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// The block of `key` in a filter of `blocks` blocks: its high 32 bits scaled, so it grows with
/// the key.
fn block_of(blocks: usize, key: u64) -> usize {
    (((key >> 32) * blocks as u64) >> 32) as usize
}

/// A split-block Bloom filter over 64-bit keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bloom {
    blocks: Vec<[u32; 8]>,
}

impl Bloom {
    /// An empty filter sized for `keys` keys.
    pub(crate) fn with_keys(keys: usize) -> Bloom {
        let n = (keys * BITS_PER_KEY).div_ceil(256).max(1);
        Bloom {
            blocks: vec![[0; 8]; n],
        }
    }

    fn block(&self, key: u64) -> usize {
        block_of(self.blocks.len(), key)
    }

    fn mask(key: u64) -> [u32; 8] {
        let low = key as u32;
        SALT.map(|s| 1u32 << (low.wrapping_mul(s) >> 27))
    }

    /// Adds a key.
    pub(crate) fn insert(&mut self, key: u64) {
        let b = self.block(key);
        for (w, m) in self.blocks[b].iter_mut().zip(Self::mask(key)) {
            *w |= m;
        }
    }

    /// Adds keys in parallel: the blocks are cut in ranges, and a range takes
    /// `keys_in(lo, hi)`, every key k with `lo <= k < hi` (`hi` None: no upper bound), the keys
    /// that fall in its blocks (a key's block grows with it). The caller need not hold its keys
    /// in one list.
    pub(crate) fn insert_ranges<I>(&mut self, keys_in: impl Fn(u64, Option<u64>) -> I + Sync)
    where
        I: Iterator<Item = u64>,
    {
        use rayon::prelude::*;
        const RANGE: usize = 1 << 14;
        let n = self.blocks.len();
        // The least key of block `s` or a later one: its high 32 bits the least h with
        // h * n >= s * 2^32.
        let first_key = |s: usize| {
            let high = ((s as u128) << 32).div_ceil(n as u128);
            u64::try_from(high << 32).ok()
        };
        self.blocks
            .par_chunks_mut(RANGE)
            .enumerate()
            .for_each(|(r, blocks)| {
                let first = r * RANGE;
                let lo = first_key(first).unwrap_or(u64::MAX);
                let hi = first_key(first + blocks.len()).filter(|_| first + blocks.len() < n);
                for k in keys_in(lo, hi) {
                    for (w, m) in blocks[block_of(n, k) - first].iter_mut().zip(Self::mask(k)) {
                        *w |= m;
                    }
                }
            });
    }

    /// False when `key` was certainly never inserted.
    #[inline(always)]
    pub(crate) fn contains(&self, key: u64) -> bool {
        let block = &self.blocks[self.block(key)];
        // All eight words without an early exit: a branch per word mispredicts on the misses
        // that most probes are, and the straight form compiles to a few vector instructions.
        let mut missing = 0u32;
        for (w, m) in block.iter().zip(Self::mask(key)) {
            missing |= u32::from(w & m == 0);
        }
        missing == 0
    }

    /// The items whose key may be in the filter ([`Bloom::contains`]), in order. With AVX2 the
    /// eight bit positions of a key are computed in a few vector instructions, about three times
    /// faster than the baseline build's scalar code; lookups probe millions of keys this way.
    pub(crate) fn may_contain<T: Copy>(&self, items: &[T], key: impl Fn(T) -> u64) -> Vec<T> {
        let mut out = Vec::new();
        self.may_contain_into(items, key, &mut out);
        out
    }

    /// [`Bloom::may_contain`] into `out` (cleared first), so a caller probing many lists
    /// reuses one buffer.
    pub(crate) fn may_contain_into<T: Copy>(
        &self,
        items: &[T],
        key: impl Fn(T) -> u64,
        out: &mut Vec<T>,
    ) {
        out.clear();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { self.may_contain_avx2(items, key, out) };
        }
        self.may_contain_scalar(items, key, out)
    }

    // A plain loop, inlined with `contains` into the AVX2 copy: a closure passed to an iterator
    // adapter is compiled on its own, without AVX2.
    #[inline(always)]
    fn may_contain_scalar<T: Copy>(&self, items: &[T], key: impl Fn(T) -> u64, out: &mut Vec<T>) {
        for &t in items {
            if self.contains(key(t)) {
                out.push(t);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn may_contain_avx2<T: Copy>(
        &self,
        items: &[T],
        key: impl Fn(T) -> u64,
        out: &mut Vec<T>,
    ) {
        self.may_contain_scalar(items, key, out)
    }

    /// Size in bytes (in memory and serialised).
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * 32
    }

    /// Appends the serialised filter (a u32 block count, then the words) to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for b in &self.blocks {
            for w in b {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
    }

    /// Reads a filter written by [`Bloom::write`] from the start of `bytes`; returns it and the
    /// bytes it used, or None when `bytes` is too short.
    pub(crate) fn read(bytes: &[u8]) -> Option<(Bloom, usize)> {
        let n = crate::io::u32_at(bytes.get(..4)?, 0) as usize;
        let body = bytes.get(4..4 + n * 32)?;
        if n == 0 {
            return None;
        }
        let mut blocks = vec![[0u32; 8]; n];
        for (block, bytes) in blocks.iter_mut().zip(body.chunks_exact(32)) {
            crate::io::read_u32s_le(bytes, block);
        }
        Some((Bloom { blocks }, 4 + n * 32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsh::mix64;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let n = 20_000;
        let mut f = Bloom::with_keys(n);
        for i in 0..n as u64 {
            f.insert(mix64(i));
        }
        assert!((0..n as u64).all(|i| f.contains(mix64(i))));
        let fp = (n as u64..n as u64 + 100_000)
            .filter(|&i| f.contains(mix64(i)))
            .count();
        assert!(fp < 1_500, "false positives {fp} of 100000");
        // The vectorised batch probe answers exactly as the single probe.
        let keys: Vec<u64> = (0..2 * n as u64).map(mix64).collect();
        let one: Vec<u64> = keys.iter().copied().filter(|&k| f.contains(k)).collect();
        assert_eq!(f.may_contain(&keys, |k| k), one);
        let mut scalar = vec![7];
        f.may_contain_scalar(&keys, |k| k, &mut scalar);
        assert_eq!(scalar[1..], one);
        let mut bytes = Vec::new();
        f.write(&mut bytes);
        let (g, used) = Bloom::read(&bytes).unwrap();
        assert_eq!((g, used), (f.clone(), bytes.len()));
        assert!(Bloom::read(&bytes[..bytes.len() - 1]).is_none());
        assert_eq!(f.bytes() * 8 / n, 12);
    }

    #[test]
    fn keys_inserted_by_ranges_in_parallel_make_the_same_filter() {
        // Enough keys for several ranges of blocks, and a few for one.
        for count in [500_000u64, 10] {
            let mut keys: Vec<u64> = (0..count).map(mix64).chain([0, u64::MAX]).collect();
            keys.sort_unstable();
            let (mut one, mut all) = (Bloom::with_keys(keys.len()), Bloom::with_keys(keys.len()));
            keys.iter().for_each(|&k| one.insert(k));
            all.insert_ranges(|lo, hi| {
                let end = hi.map_or(keys.len(), |hi| keys.partition_point(|&k| k < hi));
                keys[keys.partition_point(|&k| k < lo)..end].iter().copied()
            });
            assert!(one == all);
        }
        assert!(Bloom::with_keys(500_000).blocks.len() > 1 << 14);
    }
}
