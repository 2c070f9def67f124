//! The MinHash kernels: one-permutation hashing with optimal densification, the classic sketch's
//! K hash functions (scalar, and AVX2 on x86-64), and the hash functions they share.

use crate::lsh::mix64;

/// One-permutation hashing with optimal densification (see the module comment): `sig[i]` is the
/// least `h(x) = permute(a, b, x)` over the keys in bin i (`h(x) K >> 32`); an empty bin copies
/// the bin found by probing `mix64(probe_seed ^ i << 32 ^ t) K >> 64` for t = 1, 2, ... until
/// a non-empty bin comes up (after 64 K misses, the next non-empty bin in order: never reached in
/// practice, but it bounds the loop). K <= 1024.
pub(super) fn oph_signature(a: u32, b: u32, probe_seed: u64, shingles: &[u32], out: &mut [u32]) {
    let mut sketch = OphSketch::new(a, b, probe_seed, out);
    sketch.binned(shingles.iter().copied()).for_each(drop);
    sketch.finish();
}

/// [`oph_signature`] taking its keys as they are made, so the loop that makes them (the n-gram
/// hashes) also bins them while they are in registers. `finish` densifies.
pub(crate) struct OphSketch<'a> {
    a: u32,
    b: u32,
    probe_seed: u64,
    out: &'a mut [u32],
    /// Bins that received the hash `u32::MAX` (a bin holding any other hash is not `u32::MAX`,
    /// so this is all that must be tracked per key to know which bins are empty).
    got_max: [u64; 16],
}

impl<'a> OphSketch<'a> {
    pub(super) fn new(a: u32, b: u32, probe_seed: u64, out: &'a mut [u32]) -> Self {
        out.fill(u32::MAX);
        OphSketch {
            a,
            b,
            probe_seed,
            out,
            got_max: [0; 16],
        }
    }

    /// `keys`, each binned as it goes by. The loop holds copies of the sketch's fields: through
    /// `&mut self` they would be reloaded after every store to a bin.
    #[inline(always)]
    pub(crate) fn binned<'s>(
        &'s mut self,
        keys: impl Iterator<Item = u32> + 's,
    ) -> impl Iterator<Item = u32> + 's {
        let (a, b) = (self.a, self.b);
        let out = &mut *self.out;
        let k = out.len() as u64;
        let got_max = &mut self.got_max;
        // `map`, not `inspect`: a `Map` keeps its source's trusted length, so a `Vec` extends
        // by it without a capacity check per key.
        #[allow(clippy::manual_inspect)]
        keys.map(move |x| {
            let h = permute(a, b, x);
            let bin = ((u64::from(h) * k) >> 32) as usize;
            if let Some(v) = out.get_mut(bin) {
                *v = (*v).min(h);
            }
            if h == u32::MAX {
                got_max[bin / 64] |= 1 << (bin % 64);
            }
            x
        })
    }

    /// Fills the empty bins from the others (none if no key was added).
    pub(crate) fn finish(self) {
        let (out, got_max) = (self.out, self.got_max);
        let k = out.len();
        let mut filled = [0u64; 16];
        for (i, &v) in out.iter().enumerate() {
            if v != u32::MAX || got_max[i / 64] >> (i % 64) & 1 == 1 {
                filled[i / 64] |= 1 << (i % 64);
            }
        }
        if filled == [0; 16] {
            return; // no key: the signature stays all u32::MAX
        }
        let full = |i: usize| filled[i / 64] >> (i % 64) & 1 == 1;
        for i in (0..k).filter(|&i| !full(i)) {
            let probe = (1..=64 * k as u64)
                .map(|t| {
                    let v = mix64(self.probe_seed ^ (i as u64) << 32 ^ t);
                    ((u128::from(v) * k as u128) >> 64) as usize
                })
                .find(|&j| full(j));
            let donor = probe.or_else(|| (1..k).map(|d| (i + d) % k).find(|&j| full(j)));
            if let Some(j) = donor {
                out[i] = out[j];
            }
        }
    }
}

/// Permutation `(a, b)` of key `x`: `a x + b mod 2^32` (`Sketch::Oph`).
#[inline(always)]
pub(super) fn permute(a: u32, b: u32, x: u32) -> u32 {
    a.wrapping_mul(x).wrapping_add(b)
}

/// The two hashes of key `x` under multiplier `a` (positions 2j and 2j + 1 of a signature): the
/// low half of the 64-bit product `p = a (x | 1)`, and its high half XOR its low half rotated by
/// 16 bits.
#[inline(always)]
pub(super) fn product_hashes(a: u32, x: u32) -> [u32; 2] {
    let p = u64::from(a) * u64::from(x | 1);
    let lo = p as u32;
    [lo, (p >> 32) as u32 ^ lo.rotate_left(16)]
}

/// Positions per block of the portable loop: the block's multipliers and minima stay in
/// registers while every shingle passes through, instead of loading and storing all K minima
/// once per shingle.
const BLOCK: usize = 16;

/// The portable MinHash loop: `out[i]` is the least `product_hashes(mult[i / 2], x)[i % 2]` over
/// the keys, for each block of positions in turn.
#[inline(always)]
pub(super) fn signature_kernel(mult: &[u32], shingles: &[u32], out: &mut [u32]) {
    out.fill(u32::MAX);
    for (o, m) in out.chunks_mut(BLOCK).zip(mult.chunks(BLOCK / 2)) {
        match <&[u32; BLOCK / 2]>::try_from(m) {
            Ok(m) if o.len() == BLOCK => {
                let mut least = [u32::MAX; BLOCK];
                for &x in shingles {
                    for j in 0..BLOCK / 2 {
                        let [lo, fold] = product_hashes(m[j], x);
                        least[2 * j] = least[2 * j].min(lo);
                        least[2 * j + 1] = least[2 * j + 1].min(fold);
                    }
                }
                o.copy_from_slice(&least);
            }
            // The last, partial block (K not a multiple of BLOCK).
            _ => {
                for &x in shingles {
                    for (i, o) in o.iter_mut().enumerate() {
                        *o = (*o).min(product_hashes(m[i / 2], x)[i % 2]);
                    }
                }
            }
        }
    }
}

/// The MinHash loop for AVX2, eight positions per 256-bit register of 32-bit minima: per key and
/// eight positions one `vpmuludq` (the four products of the group's multipliers), one `vpshufb`
/// and one `vpxor` (each 64-bit product `hi:lo` becomes the lanes `lo, hi ^ rot16(lo)`), one
/// `vpminud`.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    /// Positions per group (one register of minima): four multipliers.
    const G: usize = 8;

    /// The multipliers of each whole group of 8 positions, in the even 32-bit lanes (the low
    /// halves of the 64-bit lanes `vpmuludq` reads); the odd lanes are zero.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Packed {
        mult: Vec<[u32; G]>,
    }

    impl Packed {
        /// Lays out the whole groups of `mult` (a tail of K mod 8 positions stays scalar).
        pub(crate) fn new(mult: &[u32]) -> Self {
            let group = |c: &[u32]| std::array::from_fn(|j| if j % 2 == 0 { c[j / 2] } else { 0 });
            Packed {
                mult: mult.chunks_exact(G / 2).map(group).collect(),
            }
        }
    }

    /// Groups per pass (a constant, so the loop over them unrolls and their minima live in
    /// registers; the multipliers come from L1 as memory operands).
    const PASS: usize = 4;

    /// Groups `g .. g + N` of the signature of `shingles`, written into `out`.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn pass<const N: usize>(p: &Packed, g: usize, shingles: &[u32], out: &mut [u32]) {
        // Per 64-bit lane: zero the low 32-bit lane, and move the low half rotated by 16 bits
        // (bytes 2, 3, 0, 1) into the high lane (-1 = 0x80: a zero byte).
        let rot_lo_into_hi = _mm256_setr_epi8(
            -1, -1, -1, -1, 2, 3, 0, 1, -1, -1, -1, -1, 10, 11, 8, 9, //
            -1, -1, -1, -1, 2, 3, 0, 1, -1, -1, -1, -1, 10, 11, 8, 9,
        );
        let mut m = [_mm256_set1_epi32(-1); N];
        for &x in shingles {
            let xv = _mm256_set1_epi32((x | 1) as i32);
            for (i, mi) in m.iter_mut().enumerate() {
                // SAFETY: `p.mult[g + i]` is 8 u32 (32 bytes), what an unaligned load reads.
                let a = unsafe { _mm256_loadu_si256(p.mult[g + i].as_ptr().cast()) };
                let prod = _mm256_mul_epu32(a, xv);
                let h = _mm256_xor_si256(prod, _mm256_shuffle_epi8(prod, rot_lo_into_hi));
                *mi = _mm256_min_epu32(*mi, h);
            }
        }
        for (i, mi) in m.iter().enumerate() {
            let at = (g + i) * G;
            // SAFETY: `out[at..at + G]` (bounds-checked) is 8 u32, what the store writes.
            unsafe { _mm256_storeu_si256(out[at..at + G].as_mut_ptr().cast(), *mi) };
        }
    }

    /// Signature of `shingles` into `out` (length K); `packed` from the same multipliers `mult`.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn signature(p: &Packed, mult: &[u32], shingles: &[u32], out: &mut [u32]) {
        let groups = p.mult.len().min(out.len() / G);
        // PASS groups per pass over the shingles, so their minima stay in registers.
        let mut g = 0;
        while g + PASS <= groups {
            // SAFETY: AVX2 is present (this function's contract).
            unsafe { pass::<PASS>(p, g, shingles, out) };
            g += PASS;
        }
        while g < groups {
            // SAFETY: as above.
            unsafe { pass::<1>(p, g, shingles, out) };
            g += 1;
        }
        let done = groups * G;
        super::signature_kernel(&mult[done / 2..], shingles, &mut out[done..]);
    }
}
