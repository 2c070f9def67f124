//! The polynomial hashes of `--substrings`' windows ([`super::substrings`]): two polynomials
//! over a text's bytes, one modulo the Mersenne prime 2^61 - 1 (collisions bounded for any text),
//! one modulo 2^64 (no reduction step), kept as prefix sums every [`BLOCK`] bytes so that a
//! window of any length costs O(1).

/// The first polynomial's modulus (a Mersenne prime) and the two polynomials' bases (the
/// second's odd, so its powers never vanish modulo 2^64).
pub(super) const P: u64 = (1 << 61) - 1;
pub(super) const BASES: [u64; 2] = [0x1d2c_3b4a_5968_7f1b % P, 0x0a3f_9e27_c41d_6b55];

/// `a * b` modulo [`P`].
#[inline]
pub(super) const fn mul_mod(a: u64, b: u64) -> u64 {
    let x = a as u128 * b as u128;
    let r = (x as u64 & P) + (x >> 61) as u64;
    if r >= P {
        r - P
    } else {
        r
    }
}

/// `x` modulo [`P`], for any `x`.
#[inline]
pub(super) const fn reduce(x: u64) -> u64 {
    let r = (x & P) + (x >> 61);
    if r >= P {
        r - P
    } else {
        r
    }
}

/// Values of both polynomials: the first modulo [`P`], the second modulo 2^64.
pub(super) type Sums = [u64; 2];

/// `a * b` in each polynomial's ring.
#[inline]
pub(super) const fn times(a: Sums, b: Sums) -> Sums {
    [mul_mod(a[0], b[0]), a[1].wrapping_mul(b[1])]
}

/// `a * shift + d`: the sums of `a`'s bytes followed by bytes whose sums are `d`, `shift` the
/// bases to the power of their count; `d[0]` any sum of values below [`P`].
#[inline]
pub(super) fn shifted_plus(a: Sums, shift: Sums, d: Sums) -> Sums {
    let x = times(a, shift);
    [reduce(x[0] + reduce(d[0])), x[1].wrapping_add(d[1])]
}

/// `b - a * shift`: the sums of the bytes after `a`'s in `b`'s.
#[inline]
pub(super) fn minus_shifted(b: Sums, a: Sums, shift: Sums) -> Sums {
    let x = times(a, shift);
    [reduce(b[0] + P - x[0]), b[1].wrapping_sub(x[1])]
}

/// The prefix sums are kept every [`BLOCK`] bytes: a block's sum is a sum of table values (no
/// multiply chained byte to byte), and a sum at any byte is its block's plus at most 7 values.
pub(super) const BLOCK: usize = 8;

/// BASES^j for j in 0..=BLOCK.
pub(super) const POWERS: [Sums; BLOCK + 1] = {
    let mut t = [[1u64; 2]; BLOCK + 1];
    let mut j = 1;
    while j <= BLOCK {
        t[j] = times(t[j - 1], BASES);
        j += 1;
    }
    t
};

/// Per place `j` and byte `b`, `(b + 1) * BASES^j` in each polynomial's ring: byte `b` `j`
/// places before the end of what is summed. Eight of the first's (below P) add up without
/// overflow.
pub(super) static DIGITS: [[Sums; 256]; BLOCK] = {
    let mut t = [[[0u64; 2]; 256]; BLOCK];
    let mut j = 0;
    while j < BLOCK {
        let mut b = 0;
        while b < 256 {
            t[j][b] = times([b as u64 + 1; 2], POWERS[j]);
            b += 1;
        }
        j += 1;
    }
    t
};

/// `prev` (the prefix sum before `bytes`) followed by `bytes` (at most [`BLOCK`] of them, the
/// last at place 0).
#[inline]
pub(super) fn extend(prev: Sums, bytes: &[u8]) -> Sums {
    let n = bytes.len();
    let mut d = [0u64; 2];
    for (j, &b) in bytes.iter().enumerate() {
        let v = DIGITS[n - 1 - j][b as usize];
        d = [d[0] + v[0], d[1].wrapping_add(v[1])];
    }
    shifted_plus(prev, POWERS[n], d)
}
