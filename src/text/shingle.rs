//! Shingling: a document becomes the set of 64-bit hashes of its token n-grams.
//!
//! Each token is hashed once ([`token_hash`]: a token of up to 16 bytes is read as two 8-byte
//! words and mixed with two folded 64x64->128-bit multiplies, without branching on its length;
//! a longer one goes to xxh3; both are fixed functions, stable across platforms and versions,
//! unlike a seeded hasher); an n-gram's hash is the polynomial `((h1 * M + h2) * M + ...) + hn` finalised with
//! splitmix64, computed without building the n-gram string. A document with 1..n-1 tokens has one
//! shingle made of all its tokens (so short texts still compare), and an empty document none.
//! The output set is sorted and deduplicated, so set operations are linear merges.
//!
//! Exact verification compares *keys*: the low 32 bits of each shingle hash ([`shingle_key`]),
//! half the bytes to store, counted as sets by [`crate::text::sets::KeyTable`]. Two distinct shingles share a key with probability 2^-32, so two
//! documents of m shingles each have ~m^2 / 2^32 spurious common keys on average (2.3e-4 for
//! m = 1000): a Jaccard value is off by one shingle in fewer than one pair in 4,000.

use crate::config::Tokenizer;
use crate::lsh::mix64;
use crate::text::chars::Chars;
use crate::text::normalize::normalize_into;
use crate::text::tokenize::{bounded, for_each_word, split_word, WordSink, MAX_TOKEN};

const M: u64 = 0x9E37_79B9_7F4A_7C15;

/// Reusable per-thread buffers, so shingling allocates nothing per document in steady state.
#[derive(Default)]
pub struct Scratch {
    norm: String,
    token_hashes: Vec<u64>,
}

impl Scratch {
    /// The token hashes of the last document shingled with this scratch, in text order.
    pub fn token_hashes(&self) -> &[u64] {
        &self.token_hashes
    }
}

/// Spaces appended to a normalised text before it is tokenised (they add no token), so that the
/// 16 bytes from the start of any token can be read at once.
const PAD: &str = "                ";

/// Seeds of the short-token hash (wyhash's constants).
const S0: u64 = 0xa076_1d64_78bd_642f;
const S1: u64 = 0xe703_7ed1_a0b4_28db;
const S2: u64 = 0x8ebc_6af0_9c88_c6e3;

/// Masks keeping the first `len` bytes of a 16-byte window read as two little-endian words.
const MASKS: [(u64, u64); 17] = {
    let mut m = [(0u64, 0u64); 17];
    let mut len = 0;
    while len <= 16 {
        let lo = if len >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * len)) - 1
        };
        let hi = if len >= 16 {
            u64::MAX
        } else if len <= 8 {
            0
        } else {
            (1u64 << (8 * (len - 8))) - 1
        };
        m[len] = (lo, hi);
        len += 1;
    }
    m
};

/// The high and low halves of the 128-bit product, XORed.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The hash of the token made of the first `len` (<= 16) bytes of `window`: the bytes past `len`
/// are masked off, then the two words and the length are folded.
#[inline(always)]
fn short_hash(window: &[u8; 16], len: usize) -> u64 {
    let (lo_mask, hi_mask) = MASKS[len];
    let (lo, hi) = window.split_at(8);
    let word = |b: &[u8]| b.try_into().map_or(0, u64::from_le_bytes);
    let lo = word(lo) & lo_mask;
    let hi = word(hi) & hi_mask;
    fold(fold(lo ^ S0, hi ^ S1) ^ len as u64, S2)
}

/// Hashes one token.
#[inline]
pub fn token_hash(token: &str) -> u64 {
    let b = token.as_bytes();
    if b.len() <= 16 {
        let mut window = [0u8; 16];
        window[..b.len()].copy_from_slice(b);
        short_hash(&window, b.len())
    } else {
        xxhash_rust::xxh3::xxh3_64(b)
    }
}

/// [`token_hash`] of `padded[off..off + len]`, where `padded` holds at least 16 bytes from `off`
/// when `len <= 16` (the token is read in place, without copying).
#[inline(always)]
fn token_hash_at(padded: &[u8], off: usize, len: usize) -> u64 {
    if len <= 16 {
        if let Some(window) = padded
            .get(off..off + 16)
            .and_then(|w| <&[u8; 16]>::try_from(w).ok())
        {
            return short_hash(window, len);
        }
    }
    padded
        .get(off..off + len)
        .map_or(0, |t| match std::str::from_utf8(t) {
            Ok(t) => token_hash(t),
            Err(_) => xxhash_rust::xxh3::xxh3_64(t),
        })
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
    token_hashes(&mut scratch.norm, tokenizer, &mut scratch.token_hashes);
    ngrams(&scratch.token_hashes, ngram, out);
}

/// The exact-text hash of a document: a 128-bit hash (xxh3) of the token sequence of its
/// normalised text (each token's 64-bit hash, in order), so two texts that normalise to the same
/// words, whatever the spacing, are exact copies; 0 when it has no shingle (a null or empty text
/// is nobody's duplicate). Hashing the token hashes instead of the text costs 8 bytes per token.
/// `buf` is used (and reused between calls) only on a big-endian CPU: on a little-endian one the
/// token hashes' own memory is those bytes.
pub fn exact_hash(tokens: &[u64], shingles: usize, buf: &mut Vec<u8>) -> u128 {
    if shingles == 0 {
        return 0;
    }
    let bytes: &[u8] = if cfg!(target_endian = "little") {
        // SAFETY: any u64 is eight initialised bytes, u8 has alignment 1, and the length covers
        // exactly the tokens' memory, borrowed for as long as `tokens` is.
        unsafe { std::slice::from_raw_parts(tokens.as_ptr().cast::<u8>(), 8 * tokens.len()) }
    } else {
        buf.clear();
        for t in tokens {
            buf.extend_from_slice(&t.to_le_bytes());
        }
        buf
    };
    xxhash_rust::xxh3::xxh3_128(bytes).max(1)
}

/// The token hashes of `text`, normalised, as the shingles see them (in text order).
pub fn token_hashes_of<'a>(
    text: &str,
    tokenizer: Tokenizer,
    scratch: &'a mut Scratch,
) -> &'a [u64] {
    normalize_into(text, &mut scratch.norm);
    token_hashes(&mut scratch.norm, tokenizer, &mut scratch.token_hashes);
    &scratch.token_hashes
}

/// Writes the hash of each token of the normalised text `norm` into `out` (cleared first), in
/// order. `norm` is padded with spaces while its tokens are hashed in place, then restored.
pub fn token_hashes(norm: &mut String, tokenizer: Tokenizer, out: &mut Vec<u64>) {
    out.clear();
    let len = norm.len();
    norm.push_str(PAD);
    let padded: &str = norm;
    // The loop of `tokenize`, with the common case (a word that needs no further split) hashed
    // in place, through a sink whose per-word step is always inlined into the word loop (as a
    // closure it was inlined or not depending on unrelated code, moving the signature kernels
    // by ~10%).
    for_each_word(
        &padded.as_bytes()[..len],
        TokenSink {
            padded,
            tokenizer,
            out,
        },
    );
    norm.truncate(len);
}

/// The per-word step of [`token_hashes`]: hashes an ASCII word (or any word with
/// `Tokenizer::Words`) of up to [`MAX_TOKEN`] bytes in place, and passes other words on to be
/// split.
struct TokenSink<'a> {
    /// The normalised text with its spaces appended.
    padded: &'a str,
    tokenizer: Tokenizer,
    out: &'a mut Vec<u64>,
}

impl WordSink for TokenSink<'_> {
    #[inline(always)]
    fn word(&mut self, start: usize, end: usize, ascii: bool) {
        if end - start <= MAX_TOKEN && (ascii || self.tokenizer == Tokenizer::Words) {
            let hash = token_hash_at(self.padded.as_bytes(), start, end - start);
            self.out.push(hash);
        } else {
            split_word_hashes(self.padded, start..end, ascii, self.tokenizer, self.out);
        }
    }
}

/// The token hashes of the word `padded[word]`, split by script (unless it is ASCII or the
/// tokenizer is `Words`) and cut where longer than [`MAX_TOKEN`]: what `tokenize` makes of it.
/// For [`token_hashes`]; `padded` is the normalised text with its spaces appended.
#[inline(never)]
fn split_word_hashes(
    padded: &str,
    word: std::ops::Range<usize>,
    ascii: bool,
    tokenizer: Tokenizer,
    out: &mut Vec<u64>,
) {
    let Some(w) = padded.get(word) else {
        return;
    };
    let (bytes, base) = (padded.as_bytes(), padded.as_ptr() as usize);
    let mut push = |t: &str| out.push(token_hash_at(bytes, t.as_ptr() as usize - base, t.len()));
    if ascii || tokenizer == Tokenizer::Words {
        bounded(w, &mut push);
    } else {
        split_word(w, tokenizer, Chars::get(), &mut |t, _| {
            bounded(t, &mut push)
        });
    }
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

/// The 32-bit key of a shingle hash (its low half; the hash is avalanche-mixed).
#[inline]
pub fn shingle_key(hash: u64) -> u32 {
    hash as u32
}

/// Appends the n-gram hashes of a token-hash sequence to `out` (unsorted).
pub fn ngrams(hs: &[u64], n: usize, out: &mut Vec<u64>) {
    out.extend(ngram_hashes(hs, n));
}

/// The number of n-gram hashes [`ngram_hashes`] gives for `tokens` token hashes, without making
/// them.
pub(crate) fn shingle_count(tokens: usize, n: usize) -> usize {
    match tokens {
        0 => 0,
        _ if tokens < n => 1,
        _ => tokens + 1 - n,
    }
}

/// The n-gram hashes of a token-hash sequence, in order, with an exact length (so a `Vec`
/// extends by them without a capacity check per hash): one per n tokens from the first, or for
/// 1..n-1 tokens one of all of them.
#[inline]
pub(crate) fn ngram_hashes(hs: &[u64], n: usize) -> impl Iterator<Item = u64> + '_ {
    let poly = |t: &[u64]| {
        t.iter()
            .fold(0u64, |a, &h| a.wrapping_mul(M).wrapping_add(h))
    };
    let len = hs.len();
    let (first, rolled) = match len {
        0 => (None, &[][..]),
        _ if len < n => (Some(mix64(poly(hs).wrapping_add(len as u64))), &[][..]),
        _ => (Some(mix64(poly(&hs[..n]))), hs),
    };
    // Rolling polynomial (mod 2^64): drop the oldest token's term h * M^(n-1), shift, add the
    // next. Written as acc * M + (next - oldest * M^n), the same value, so that only one multiply
    // and one add depend on the previous n-gram (the loop is bound by that chain).
    let top = (0..n).fold(1u64, |p, _| p.wrapping_mul(M));
    let mut acc = poly(&rolled[..n.min(rolled.len())]);
    let next = rolled.get(n..).unwrap_or(&[]);
    first
        .into_iter()
        .chain(rolled.iter().zip(next).map(move |(&oldest, &next)| {
            acc = acc
                .wrapping_mul(M)
                .wrapping_add(next.wrapping_sub(oldest.wrapping_mul(top)));
            mix64(acc)
        }))
}

/// The shingle set of `text` with the `chars` tokenizer (for tests).
#[cfg(test)]
pub(crate) fn chars_set(text: &str, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    shingle_set(text, Tokenizer::Chars, n, &mut Scratch::default(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(60),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The n-gram hashes the column kernel draws from [`ngram_hashes`] are each n-gram's
        /// polynomial, for any text and n (fewer tokens than n: one hash of all of them).
        #[test]
        fn ngram_hashes_are_each_ngrams_polynomial(text in "\\PC{0,80}|[a-zA-Z \u{e9}\u{4e00}\u{e01}.]{0,80}", n in 1usize..7) {
            let mut scratch = Scratch::default();
            let tokens = token_hashes_of(&text, Tokenizer::Chars, &mut scratch).to_vec();
            let poly = |t: &[u64]| t.iter().fold(0u64, |a, &h| a.wrapping_mul(M).wrapping_add(h));
            let direct: Vec<u64> = match tokens.len() {
                0 => Vec::new(),
                len if len < n => vec![mix64(poly(&tokens).wrapping_add(len as u64))],
                _ => tokens.windows(n).map(|w| mix64(poly(w))).collect(),
            };
            let mut rolled = Vec::new();
            ngrams(&tokens, n, &mut rolled);
            proptest::prop_assert_eq!(&rolled, &direct);
            proptest::prop_assert_eq!(shingle_count(tokens.len(), n), direct.len());
            proptest::prop_assert_eq!(ngram_hashes(&tokens, n).collect::<Vec<_>>(), direct);
        }
    }

    fn set(text: &str, n: usize) -> Vec<u64> {
        chars_set(text, n)
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
    fn token_hash_in_place_equals_copied() {
        // Every length around the 8- and 16-byte edges, at every offset in a padded buffer
        // (bytes after the token must not matter), and a non-ASCII token.
        let text = "abcdefghijklmnopqrstuvwxyz0123456789 é世界 ";
        let mut padded = text.to_string();
        padded.push_str(PAD);
        for off in 0..text.len() {
            for len in 0..=(text.len() - off) {
                if let Some(t) = text.get(off..off + len) {
                    assert_eq!(token_hash_at(padded.as_bytes(), off, len), token_hash(t));
                }
            }
        }
        // No padding needed past 16 bytes, and a short read past the end falls back.
        assert_eq!(token_hash_at(b"abc", 0, 3), token_hash("abc"));
    }

    #[test]
    fn token_hash_separates_tokens() {
        // Lengths and trailing NULs are told apart; the hash is a fixed function.
        let h = |t: &str| token_hash(t);
        assert_ne!(h(""), h("\0"));
        assert_ne!(h("a"), h("a\0"));
        assert_ne!(h("abcdefgh"), h("abcdefgh\0"));
        assert_ne!(h("ab"), h("ba"));
        // 2M distinct tokens of 6 to 16 bytes (zero-padded hex numbers) hash without a
        // collision (expected collisions for a 64-bit hash: ~1e-7).
        let n = 2_000_000u64;
        let hashes: std::collections::HashSet<u64> = (0..n)
            .map(|i| h(&format!("{:0>w$x}", i, w = 6 + (i % 11) as usize)))
            .collect();
        assert_eq!(hashes.len() as u64, n);
    }

    #[test]
    fn order_matters() {
        assert_ne!(set("a b c", 5), set("c b a", 5));
        assert_ne!(set("a b c d e", 5), set("e d c b a", 5));
    }
}
