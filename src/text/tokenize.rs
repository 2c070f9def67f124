//! Tokenisation of normalised text into words, with per-script handling of CJK.
//!
//! Space-delimited scripts split on whitespace. CJK text has no spaces, so a run of CJK characters
//! inside a whitespace-delimited word is split further, depending on the tokenizer:
//! - `Words`: no further split (a Chinese sentence is one token; cheap, poor for Chinese);
//! - `Chars`: every ideograph, kana or hangul character is its own token;
//! - `Jieba`: runs of Han ideographs are segmented into words by jieba-rs (dictionary loaded once
//!   per process); kana and hangul stay one token per character.
//!
//! Tokens are emitted through a callback as slices of the input: no allocation per token.

use std::sync::OnceLock;

use jieba_rs::Jieba;

use crate::config::Tokenizer;

/// True for CJK ideographs (Han), kana and hangul syllables: the characters that are their own
/// tokens under `Chars` (ranges as in the corpus' canonical tokenizer).
#[inline]
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF)
}

/// True for Han ideographs (the characters jieba segments).
#[inline]
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// The process-wide jieba segmenter (loading its dictionary takes ~0.15 s, so it is done once and
/// only when a Han run is first seen).
pub fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Calls `emit` for each token of normalised `text` (whose only whitespace is ' '), in order.
pub fn tokenize<'a>(text: &'a str, tokenizer: Tokenizer, mut emit: impl FnMut(&'a str)) {
    tokenize_marked(text, tokenizer, |t, _| emit(t));
}

/// [`tokenize`], also telling for each token whether it is a word jieba segmented from a run of
/// Han characters (true only with the `Jieba` tokenizer): exactly the tokens made of Han
/// characters only.
pub fn tokenize_marked<'a>(
    text: &'a str,
    tokenizer: Tokenizer,
    mut emit: impl FnMut(&'a str, bool),
) {
    for_each_word(text.as_bytes(), |start, end, ascii| {
        // A space is one byte, so both ends are char boundaries.
        let w = &text[start..end];
        if ascii || tokenizer == Tokenizer::Words {
            emit(w, false);
        } else {
            split_cjk(w, tokenizer, &mut emit);
        }
    });
}

/// Calls `f(start, end, ascii)` for every maximal run `bytes[start..end]` of non-space bytes, in
/// order; `ascii` says whether the run is all ASCII (so the caller need not scan it again).
///
/// Both searches look at a chunk of bytes at once and turn it into two bit masks, one bit per
/// byte: spaces, and bytes with the high bit set (non-ASCII). Words are the gaps between space
/// bits; a word is ASCII when no high bit falls inside it. With AVX2 a chunk is 32 bytes
/// (`vpcmpeqb` + `vpmovmskb`); otherwise 8 bytes in a u64 (SWAR: a byte equal to 0x20 becomes 0
/// after XOR, and `((x & 0x7f..) + 0x7f..) | x` has its high bit clear exactly in the zero bytes,
/// no carry crossing bytes), with the mask bit of byte j at bit 8j + 7.
#[inline]
pub fn for_each_word(bytes: &[u8], mut f: impl FnMut(usize, usize, bool)) {
    let mut st = WordState::default();
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked above).
        done = unsafe { avx2::chunks(bytes, &mut st, &mut f) };
    }
    let chunks = bytes[done..].chunks_exact(8);
    for (c, chunk) in chunks.enumerate() {
        const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let x = w ^ 0x2020_2020_2020_2020;
        let spaces = !(((x & LO7) + LO7) | x | LO7);
        st.chunk(done + c * 8, spaces, w & !LO7, 3, &mut f);
    }
    let tail = done + (bytes.len() - done) / 8 * 8;
    for (i, &b) in bytes[tail..].iter().enumerate() {
        st.chunk(tail + i, u64::from(b == b' '), u64::from(b >> 7), 0, &mut f);
    }
    if st.start < bytes.len() {
        f(st.start, bytes.len(), !st.non_ascii);
    }
}

/// The word being scanned: where it starts, and whether a non-ASCII byte was seen in it.
#[derive(Default)]
struct WordState {
    start: usize,
    non_ascii: bool,
}

impl WordState {
    /// Takes one chunk starting at byte `base`: `spaces` and `high` have the bit of byte j at
    /// position `(j << shift) + (1 << shift) - 1` (shift 3 for SWAR, 0 for one bit per byte).
    #[inline(always)]
    fn chunk(
        &mut self,
        base: usize,
        mut spaces: u64,
        mut high: u64,
        shift: u32,
        f: &mut impl FnMut(usize, usize, bool),
    ) {
        while spaces != 0 {
            let b = spaces.trailing_zeros();
            let pos = base + (b >> shift) as usize;
            let below = (1u64 << b) - 1;
            let ascii = !self.non_ascii && high & below == 0;
            if self.start < pos {
                f(self.start, pos, ascii);
            }
            self.start = pos + 1;
            self.non_ascii = false;
            high &= !(below | (1u64 << b));
            spaces &= spaces - 1;
        }
        self.non_ascii |= high != 0;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::WordState;
    use std::arch::x86_64::*;

    /// Scans the whole 32-byte chunks of `bytes`; returns how many bytes were scanned.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn chunks(
        bytes: &[u8],
        st: &mut WordState,
        f: &mut impl FnMut(usize, usize, bool),
    ) -> usize {
        let space = _mm256_set1_epi8(b' ' as i8);
        let n = bytes.len() / 32 * 32;
        let mut i = 0;
        while i < n {
            // SAFETY: i + 32 <= bytes.len(); unaligned load.
            let v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(i) as *const __m256i) };
            let spaces = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, space)) as u32;
            let high = _mm256_movemask_epi8(v) as u32;
            st.chunk(i, u64::from(spaces), u64::from(high), 0, f);
            i += 32;
        }
        n
    }
}

/// Splits one whitespace-free word into non-CJK runs and CJK tokens.
fn split_cjk<'a>(word: &'a str, tokenizer: Tokenizer, emit: &mut impl FnMut(&'a str, bool)) {
    let use_jieba = tokenizer == Tokenizer::Jieba;
    let mut start = 0; // start of the pending non-CJK run
    let mut iter = word.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if !is_cjk(c) {
            continue;
        }
        if start < i {
            emit(&word[start..i], false);
        }
        if use_jieba && is_han(c) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = iter.peek() {
                if !is_han(d) {
                    break;
                }
                end = j + d.len_utf8();
                iter.next();
            }
            for w in jieba().cut(&word[i..end], false) {
                emit(w.word, true);
            }
            start = end;
        } else {
            let end = i + c.len_utf8();
            emit(&word[i..end], false);
            start = end;
        }
    }
    if start < word.len() {
        emit(&word[start..], false);
    }
}

/// Convenience: collects the tokens of `text` into owned strings.
pub fn tokens(text: &str, tokenizer: Tokenizer) -> Vec<String> {
    let mut v = Vec::new();
    tokenize(text, tokenizer, |t| v.push(t.to_string()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::normalize::normalize;

    fn toks(s: &str, t: Tokenizer) -> Vec<String> {
        tokens(&normalize(s), t)
    }

    #[test]
    fn english_words() {
        assert_eq!(
            toks("The quick, brown fox.", Tokenizer::Chars),
            ["the", "quick", "brown", "fox"]
        );
        assert_eq!(
            toks("The quick, brown fox.", Tokenizer::Jieba),
            ["the", "quick", "brown", "fox"]
        );
    }

    #[test]
    fn chinese_chars() {
        assert_eq!(
            toks("我们中出了一个叛徒", Tokenizer::Chars),
            ["我", "们", "中", "出", "了", "一", "个", "叛", "徒"]
        );
        assert_eq!(
            toks("我们中出了一个叛徒", Tokenizer::Words),
            ["我们中出了一个叛徒"]
        );
    }

    #[test]
    fn chinese_jieba() {
        let t = toks("我们中出了一个叛徒", Tokenizer::Jieba);
        assert_eq!(t.concat(), "我们中出了一个叛徒");
        assert!(t.len() < 9 && t.len() > 1, "{t:?}");
        assert!(
            t.contains(&"我们".to_string()) && t.contains(&"叛徒".to_string()),
            "{t:?}"
        );
    }

    #[test]
    fn mixed_script() {
        assert_eq!(
            toks("用Rust写的工具v2", Tokenizer::Chars),
            ["用", "rust", "写", "的", "工", "具", "v2"]
        );
        let j = toks("用Rust写的工具v2", Tokenizer::Jieba);
        assert_eq!(j.first().map(String::as_str), Some("用"));
        assert!(
            j.contains(&"rust".to_string()) && j.contains(&"工具".to_string()),
            "{j:?}"
        );
        assert_eq!(j.last().map(String::as_str), Some("v2"));
        // Kana and hangul are one token per character in both modes.
        assert_eq!(toks("カナ한국", Tokenizer::Jieba), ["カ", "ナ", "한", "국"]);
    }

    fn words(bytes: &[u8]) -> Vec<(usize, usize, bool)> {
        let mut found = Vec::new();
        for_each_word(bytes, |a, b, ascii| found.push((a, b, ascii)));
        found
    }

    fn naive_words(bytes: &[u8]) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 0..=bytes.len() {
            if i == bytes.len() || bytes[i] == b' ' {
                if start < i {
                    out.push((start, i, bytes[start..i].is_ascii()));
                }
                start = i + 1;
            }
        }
        out
    }

    #[test]
    fn word_search_finds_every_word() {
        for text in [
            "",
            " ",
            "a",
            "ab cd",
            "  a  b   c        d e f g h i ",
            "x\u{a0}y z",
            "éé é 中文 a",
        ] {
            assert_eq!(
                words(text.as_bytes()),
                naive_words(text.as_bytes()),
                "{text:?}"
            );
        }
        // Every byte value next to spaces, at every offset of a 32-byte chunk, on both sides of
        // chunk ends (and in the scalar tail).
        for off in 0..70 {
            for b in 0..=255u8 {
                let mut bytes = vec![b'x'; 75];
                bytes[off] = b;
                bytes[off + 1] = b' ';
                assert_eq!(words(&bytes), naive_words(&bytes));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(7),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The chunked word search agrees with a byte-by-byte one on any mix of spaces, ASCII
        /// and high bytes, at any length.
        #[test]
        fn word_search_agrees(bytes in proptest::collection::vec(
            proptest::sample::select(vec![b' ', b' ', b'a', b'z', 0x80, 0xe4, 0xff]), 0..200)) {
            proptest::prop_assert_eq!(words(&bytes), naive_words(&bytes));
        }
    }

    #[test]
    fn empty_and_whitespace() {
        assert!(toks("", Tokenizer::Chars).is_empty());
        assert!(toks(" \n\t ,,, ", Tokenizer::Jieba).is_empty());
    }
}
