//! Shingling: a document becomes the set of 64-bit hashes of its token n-grams.
//!
//! Each token is hashed once with xxh3 (stable across platforms and versions, unlike a seeded
//! hasher); an n-gram's hash is the polynomial `((h1 * M + h2) * M + ...) + hn` finalised with
//! splitmix64, computed without building the n-gram string. A document with 1..n-1 tokens has one
//! shingle made of all its tokens (so short texts still compare), and an empty document none.
//! The output set is sorted and deduplicated, so set operations are linear merges.
//!
//! Exact verification compares *keys*: the low 32 bits of each shingle hash ([`exact_set`]), half
//! the bytes to store and sort. Two distinct shingles share a key with probability 2^-32, so two
//! documents of m shingles each have ~m^2 / 2^32 spurious common keys on average (2.3e-4 for
//! m = 1000): a Jaccard value is off by one shingle in fewer than one pair in 4,000.

use crate::config::Tokenizer;
use crate::lsh::mix64;
use crate::text::{normalize::normalize_into, tokenize::tokenize};

const M: u64 = 0x9E37_79B9_7F4A_7C15;

/// Reusable per-thread buffers, so shingling allocates nothing per document in steady state.
#[derive(Default)]
pub struct Scratch {
    norm: String,
    token_hashes: Vec<u64>,
}

/// Hashes one token.
#[inline]
pub fn token_hash(token: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(token.as_bytes())
}

/// Writes the shingle hashes of `text` into `out` (cleared first), in text order, repeats
/// included: enough for MinHash, where a repeat cannot change a minimum.
pub fn shingle_hashes(
    text: &str,
    tokenizer: Tokenizer,
    ngram: usize,
    scratch: &mut Scratch,
    out: &mut Vec<u64>,
) {
    out.clear();
    normalize_into(text, &mut scratch.norm);
    let hs = &mut scratch.token_hashes;
    hs.clear();
    tokenize(&scratch.norm, tokenizer, |t| hs.push(token_hash(t)));
    ngrams(hs, ngram, out);
}

/// Writes the sorted, deduplicated shingle set of `text` into `out` (cleared first).
pub fn shingle_set(
    text: &str,
    tokenizer: Tokenizer,
    ngram: usize,
    scratch: &mut Scratch,
    out: &mut Vec<u64>,
) {
    shingle_hashes(text, tokenizer, ngram, scratch, out);
    out.sort_unstable();
    out.dedup();
}

/// Writes the sorted, deduplicated 32-bit keys of shingle hashes `hashes` (any order, repeats
/// allowed) into `out` (cleared first): the set that exact Jaccard compares.
pub fn exact_set(hashes: impl IntoIterator<Item = u64>, out: &mut Vec<u32>) {
    out.clear();
    out.extend(hashes.into_iter().map(shingle_key));
    out.sort_unstable();
    out.dedup();
}

/// The 32-bit key of a shingle hash (its low half; the hash is avalanche-mixed).
#[inline]
pub fn shingle_key(hash: u64) -> u32 {
    hash as u32
}

/// Appends the n-gram hashes of a token-hash sequence to `out` (unsorted).
pub fn ngrams(hs: &[u64], n: usize, out: &mut Vec<u64>) {
    let len = hs.len();
    if len == 0 {
        return;
    }
    if len < n {
        let acc = hs
            .iter()
            .fold(0u64, |a, &h| a.wrapping_mul(M).wrapping_add(h));
        out.push(mix64(acc.wrapping_add(len as u64)));
        return;
    }
    // Rolling polynomial (mod 2^64): drop the oldest token's term h * M^(n-1), shift, add the next.
    out.reserve(len - n + 1);
    let top = (1..n).fold(1u64, |p, _| p.wrapping_mul(M));
    let mut acc = hs[..n]
        .iter()
        .fold(0u64, |a, &h| a.wrapping_mul(M).wrapping_add(h));
    out.push(mix64(acc));
    for i in n..len {
        acc = acc
            .wrapping_sub(hs[i - n].wrapping_mul(top))
            .wrapping_mul(M)
            .wrapping_add(hs[i]);
        out.push(mix64(acc));
    }
}

/// Exact Jaccard similarity |A ∩ B| / |A ∪ B| of two sorted, deduplicated sets (1.0 for two empty
/// sets is never asked for: empty documents are not compared).
pub fn jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    if union == 0 {
        return 0.0;
    }
    inter as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        shingle_set(text, Tokenizer::Chars, n, &mut Scratch::default(), &mut out);
        out
    }

    #[test]
    fn counts() {
        assert_eq!(set("a b c d e f g", 5).len(), 3);
        assert_eq!(set("a b c", 5).len(), 1);
        assert_eq!(set("", 5).len(), 0);
        // Repeated n-grams collapse into one set element.
        assert_eq!(set("x y x y x y", 2).len(), 2);
    }

    #[test]
    fn normalisation_makes_noise_invisible() {
        assert_eq!(
            set("Hello,   WORLD! this is a test", 3),
            set("hello world this is a test.", 3)
        );
        assert_eq!(
            set("你好，世界！今天天气很好", 5),
            set("你好 世界 今天天气很好", 5)
        );
    }

    #[test]
    fn rolling_ngrams_equal_direct_ones() {
        let hs: Vec<u64> = (0..40).map(|i| mix64(i * 7 + 1)).collect();
        for n in 1..8 {
            let mut rolled = Vec::new();
            ngrams(&hs, n, &mut rolled);
            let direct: Vec<u64> = hs
                .windows(n)
                .map(|w| {
                    mix64(
                        w.iter()
                            .fold(0u64, |a, &h| a.wrapping_mul(M).wrapping_add(h)),
                    )
                })
                .collect();
            assert_eq!(rolled, direct, "n = {n}");
        }
    }

    #[test]
    fn order_matters() {
        assert_ne!(set("a b c", 5), set("c b a", 5));
        assert_ne!(set("a b c d e", 5), set("e d c b a", 5));
    }

    #[test]
    fn jaccard_exact() {
        assert_eq!(jaccard(&[1u64, 2, 3, 4], &[3, 4, 5, 6]), 2.0 / 6.0);
        assert_eq!(jaccard(&[1u32, 2], &[1, 2]), 1.0);
        assert_eq!(jaccard(&[1u32], &[2]), 0.0);
        let a = set(
            "the quick brown fox jumps over the lazy dog again and again",
            3,
        );
        let b = set(
            "the quick brown fox jumps over the lazy cat again and again",
            3,
        );
        // 10 trigrams each, 3 differ on each side: 7 / 13.
        assert!((jaccard(&a, &b) - 7.0 / 13.0).abs() < 1e-12);
        // The 32-bit keys give the same value (no key collision here).
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        exact_set(a.iter().copied(), &mut ka);
        exact_set(b.iter().copied(), &mut kb);
        assert_eq!(jaccard(&ka, &kb), jaccard(&a, &b));
        exact_set([3u64 << 32 | 7, 7, 1 << 40 | 2], &mut ka);
        assert_eq!(ka, vec![2, 7]);
    }
}
