//! Tokenisation of normalised text, by the Unicode script of each character.
//!
//! Text is first split at spaces. A word of a space-delimited script (Latin, Cyrillic, Arabic,
//! Devanagari, ...) is one token. Inside a word, characters of scripts written without spaces
//! are split further (see [`Class`]), depending on the tokenizer:
//! - `Words`: no further split (a Chinese or Thai sentence is one token; cheap, poor for them);
//! - `Chars`: every Han, kana or hangul character is its own token, and so is every character of
//!   Thai, Lao, Khmer, Myanmar and the Tai scripts, with its combining marks (a cluster);
//! - `Jieba`: as `Chars`, but runs of Han ideographs are segmented into words by jieba-rs
//!   (dictionary loaded once per process).
//!
//! No token is longer than [`MAX_TOKEN`] bytes: a longer run is cut into pieces ([`bounded`]).
//! Tokens are emitted through a callback as slices of the input: no allocation per token.

use std::sync::OnceLock;

use jieba_rs::Jieba;

use crate::config::Tokenizer;
use crate::text::chars::{Chars, Class};

/// The longest token, in bytes. A longer run of word characters (a base64 blob, a megabyte line
/// without spaces) is cut into pieces; words of real languages are shorter.
pub(crate) const MAX_TOKEN: usize = 96;

/// The shortest piece a long run is cut into, in bytes.
const MIN_PIECE: usize = 24;

#[cfg(test)]
/// True for Han ideographs (the characters jieba segments), by their Unicode script.
#[inline]
pub(crate) fn is_han(c: char) -> bool {
    Chars::get().class(c) == Class::Han
}

/// The process-wide jieba segmenter (loading its dictionary takes ~0.15 s, so it is done once and
/// only when a Han run is first seen).
pub(crate) fn jieba() -> &'static Jieba {
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
pub(crate) fn tokenize_marked<'a>(
    text: &'a str,
    tokenizer: Tokenizer,
    mut emit: impl FnMut(&'a str, bool),
) {
    let chars = Chars::get();
    for_each_word(text.as_bytes(), |start, end, ascii| {
        // A space is one byte, so both ends are char boundaries.
        let w = &text[start..end];
        if ascii || tokenizer == Tokenizer::Words {
            bounded(w, &mut |t| emit(t, false));
        } else {
            split_word(w, tokenizer, chars, &mut |t, han| {
                bounded(t, &mut |p| emit(p, han))
            });
        }
    });
}

/// Calls `f(start, end, ascii)` for every maximal run `bytes[start..end]` of non-space bytes, in
/// order; `ascii` says whether the run is all ASCII (so the caller need not scan it again).
///
/// The bytes are read 64 at a time and turned into two bit masks, one bit per byte: spaces, and
/// bytes with the high bit set (non-ASCII); with AVX2 each half is one `vpcmpeqb` + `vpmovmskb`.
/// From the space mask come the word starts (a non-space byte after a space) and the word ends
/// (a space after a non-space byte), so the loop runs once per word, not once per space; a word
/// is ASCII when no high bit falls between its start and end. A word still open at the end of a
/// block carries into the next one. The last, partial block is copied into a block of spaces,
/// which also ends the last word.
#[inline]
pub(crate) fn for_each_word(bytes: &[u8], f: impl WordSink) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked above).
        return unsafe { avx2::for_each_word(bytes, f) };
    }
    words_with(bytes, f, masks)
}

/// What [`for_each_word`] calls for each word: any `FnMut(start, end, ascii)`, or a type whose
/// `word` is `#[inline(always)]`, for a hot caller whose per-word work must be inlined into the
/// word loop whatever the inliner would choose for a closure.
pub(crate) trait WordSink {
    fn word(&mut self, start: usize, end: usize, ascii: bool);
}

impl<F: FnMut(usize, usize, bool)> WordSink for F {
    #[inline(always)]
    fn word(&mut self, start: usize, end: usize, ascii: bool) {
        self(start, end, ascii);
    }
}

/// The word loop of [`for_each_word`], with `masks` computing a block's masks.
#[inline(always)]
fn words_with(bytes: &[u8], mut f: impl WordSink, masks: impl Fn(&[u8; 64]) -> (u64, u64)) {
    let mut st = WordState::default();
    let blocks = bytes.chunks_exact(64);
    let tail = blocks.remainder();
    for (i, block) in blocks.enumerate() {
        if let Ok(block) = <&[u8; 64]>::try_from(block) {
            let (spaces, high) = masks(block);
            st.block(i * 64, spaces, high, &mut f);
        }
    }
    let mut last = [b' '; 64];
    last[..tail.len()].copy_from_slice(tail);
    let (spaces, high) = masks(&last);
    st.block(bytes.len() - tail.len(), spaces, high, &mut f);
}

/// The space and high-bit masks of a block of 64 bytes (bit j for byte j).
#[inline(always)]
fn masks(block: &[u8; 64]) -> (u64, u64) {
    let (mut spaces, mut high) = (0u64, 0u64);
    for (j, &b) in block.iter().enumerate() {
        spaces |= u64::from(b == b' ') << j;
        high |= u64::from(b >> 7) << j;
    }
    (spaces, high)
}

/// A word left open at the end of the previous block: where it starts, and whether a non-ASCII
/// byte was seen in it.
#[derive(Default)]
struct WordState {
    open: Option<usize>,
    non_ascii: bool,
}

impl WordState {
    /// Takes the block of 64 bytes at `base` with masks `spaces` and `high`.
    #[inline(always)]
    fn block(&mut self, base: usize, spaces: u64, high: u64, f: &mut impl WordSink) {
        let words = !spaces;
        // Bit j of `before`: byte j - 1 is a word byte (for j = 0, the open word's last byte).
        let before = words << 1 | u64::from(self.open.is_some());
        let mut starts = words & !before;
        let mut ends = spaces & before;
        if let Some(start) = self.open {
            if ends == 0 {
                self.non_ascii |= high != 0; // the whole block is inside the open word
                return;
            }
            let e = ends.trailing_zeros();
            let ascii = !self.non_ascii && high & ((1u64 << e) - 1) == 0;
            f.word(start, base + e as usize, ascii);
            ends &= ends - 1;
            self.open = None;
        }
        while starts != 0 {
            let s = starts.trailing_zeros();
            starts &= starts - 1;
            if ends == 0 {
                // The word runs to the end of the block.
                self.open = Some(base + s as usize);
                self.non_ascii = high >> s != 0;
                return;
            }
            let e = ends.trailing_zeros();
            ends &= ends - 1;
            let inside = ((1u64 << e) - 1) & !((1u64 << s) - 1);
            f.word(base + s as usize, base + e as usize, high & inside == 0);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::for_each_word`] compiled for AVX2, masks from two 32-byte halves.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn for_each_word(bytes: &[u8], f: impl super::WordSink) {
        super::words_with(bytes, f, |block| {
            // SAFETY: AVX2 is available (this function's contract); a block has 64 bytes, read
            // with unaligned loads.
            unsafe {
                let space = _mm256_set1_epi8(b' ' as i8);
                let lo = _mm256_loadu_si256(block.as_ptr() as *const __m256i);
                let hi = _mm256_loadu_si256(block.as_ptr().add(32) as *const __m256i);
                let mask = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
                let spaces =
                    mask(_mm256_cmpeq_epi8(lo, space)) | mask(_mm256_cmpeq_epi8(hi, space)) << 32;
                (spaces, mask(lo) | mask(hi) << 32)
            }
        })
    }
}

/// Splits one whitespace-free, non-ASCII word by the [`Class`] of each character: a run of word
/// characters is one token; a Han, kana or hangul character, or a cluster of a script written
/// without spaces, is its own token with the combining marks after it; with `Jieba`, a run of
/// Han characters is cut into jieba's words (marked `true`). Tokens may exceed [`MAX_TOKEN`].
pub(crate) fn split_word<'a>(
    word: &'a str,
    tokenizer: Tokenizer,
    chars: &Chars,
    emit: &mut impl FnMut(&'a str, bool),
) {
    let use_jieba = tokenizer == Tokenizer::Jieba;
    let mut start = 0; // start of the pending token
    let mut single = false; // the pending token is one character (with its marks), not a run
    let mut iter = word.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        match chars.class(c) {
            Class::Mark => {}
            Class::Word => {
                if single {
                    emit(&word[start..i], false);
                    (start, single) = (i, false);
                }
            }
            Class::Han if use_jieba => {
                if start < i {
                    emit(&word[start..i], false);
                }
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = iter.peek() {
                    if chars.class(d) != Class::Han {
                        break;
                    }
                    end = j + d.len_utf8();
                    iter.next();
                }
                for w in jieba().cut(&word[i..end], false) {
                    emit(w.word, true);
                }
                (start, single) = (end, false);
            }
            Class::Han | Class::Ideograph | Class::Cluster => {
                if start < i {
                    emit(&word[start..i], false);
                }
                (start, single) = (i, true);
            }
        }
    }
    if start < word.len() {
        emit(&word[start..], false);
    }
}

/// Calls `emit` with `token`, or, when it is longer than [`MAX_TOKEN`] bytes, with its pieces.
#[inline]
pub(crate) fn bounded<'a>(token: &'a str, emit: &mut impl FnMut(&'a str)) {
    if token.len() <= MAX_TOKEN {
        emit(token);
    } else {
        cut_long(token, emit);
    }
}

/// The pieces of a long token: each at least [`MIN_PIECE`] and at most [`MAX_TOKEN`] bytes (the
/// last one may be shorter), cut at the first character boundary where the four bytes before it
/// hash to 0 mod 16, else at the last boundary within [`MAX_TOKEN`]. The cuts depend on the
/// content, not on the offset: after an edit the pieces are the same again from the first
/// content-defined cut past it.
#[cold]
#[inline(never)]
fn cut_long<'a>(token: &'a str, emit: &mut impl FnMut(&'a str)) {
    let b = token.as_bytes();
    let mut start = 0;
    while b.len() - start > MAX_TOKEN {
        let mut last = start; // the last boundary seen in the window
        for j in start + MIN_PIECE..=start + MAX_TOKEN {
            if !token.is_char_boundary(j) {
                continue;
            }
            last = j;
            let four = u32::from_le_bytes([b[j - 4], b[j - 3], b[j - 2], b[j - 1]]);
            if four.wrapping_mul(0x9E37_79B1) >> 28 == 0 {
                break;
            }
        }
        if last == start {
            break; // not reached: a character is at most 4 bytes, so the window holds a boundary
        }
        emit(&token[start..last]);
        start = last;
    }
    emit(&token[start..]);
}

#[cfg(test)]
/// Convenience: collects the tokens of `text` into owned strings.
pub(crate) fn tokens(text: &str, tokenizer: Tokenizer) -> Vec<String> {
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

    /// Real sentences of the scripts written without spaces: every character is kept, in order,
    /// and each token is one character with its combining marks.
    #[test]
    fn spaceless_scripts_are_split_into_clusters() {
        for (text, first) in [
            ("ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ", ["ภ", "า", "ษ", "า"]),
            ("ພາສາລາວເປັນພາສາທາງການຂອງລາວ", ["ພ", "າ", "ສ", "າ"]),
            ("ភាសាខ្មែរគឺជាភាសាផ្លូវការ", ["ភា", "សា", "ខ\u{17D2}", "មែ"]),
            ("မြန်မာဘာသာစကားသည်", ["မြ", "န်", "မာ", "ဘာ"]),
        ] {
            let t = toks(text, Tokenizer::Chars);
            assert_eq!(t[..4], first, "{text}");
            // (NFKC spells Thai SARA AM and Lao AM as two characters.)
            assert_eq!(t.concat(), normalize(text));
            assert_eq!(toks(text, Tokenizer::Jieba), t);
            // Words: one run, cut into pieces when longer than MAX_TOKEN.
            let w = toks(text, Tokenizer::Words);
            assert_eq!(
                w.len(),
                normalize(text).len().div_ceil(MAX_TOKEN).max(w.len())
            );
            assert_eq!(w.concat(), normalize(text));
        }
        // A consonant with its vowel and tone marks is one token.
        assert_eq!(toks("ที่นี่", Tokenizer::Chars), ["ที่", "นี่"]);
    }

    #[test]
    fn mixed_scripts_split_where_the_script_changes() {
        assert_eq!(
            toks("ร้านกาแฟcoffeeในกรุง 2024", Tokenizer::Chars),
            [
                "ร้", "า", "น", "ก", "า", "แ", "ฟ", "coffee", "ใ", "น", "ก", "รุ", "ง", "2024"
            ]
        );
        assert_eq!(
            toks("東京タワーはTokyo Towerです", Tokenizer::Chars),
            ["東", "京", "タ", "ワ", "ー", "は", "tokyo", "tower", "で", "す"]
        );
        // Cyrillic and Arabic words stay whole.
        assert_eq!(toks("Привет мир", Tokenizer::Chars), ["привет", "мир"]);
        assert_eq!(
            toks("مرحبا بالعالم", Tokenizer::Chars),
            ["مرحبا", "بالعالم"]
        );
    }

    #[test]
    fn cjk_beyond_the_common_blocks_is_split_too() {
        // CJK extension B, halfwidth katakana (NFKC makes it full width), Hangul jamo.
        assert_eq!(
            toks("\u{20000}\u{20001}", Tokenizer::Chars),
            ["\u{20000}", "\u{20001}"]
        );
        assert_eq!(toks("ｶﾀｶﾅ", Tokenizer::Chars), ["カ", "タ", "カ", "ナ"]);
        assert_eq!(toks("\u{1100}\u{1100}", Tokenizer::Chars).len(), 2);
    }

    #[test]
    fn format_characters_neither_glue_nor_split_words() {
        // ZERO WIDTH SPACE is a word break (Khmer web text puts it between words).
        assert_eq!(toks("one\u{200B}two", Tokenizer::Chars), ["one", "two"]);
        assert_eq!(toks("ខ្មែរ\u{200B}ភាសា", Tokenizer::Words), ["ខ្មែរ", "ភាសា"]);
        // The others are removed: a word with a soft hyphen, ZWNJ, ZWJ, word joiner or BOM in it
        // is the word without them.
        for f in ['\u{AD}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}'] {
            assert_eq!(
                toks(&format!("dedup{f}lication"), Tokenizer::Chars),
                ["deduplication"]
            );
        }
        assert_eq!(toks("می\u{200C}خواهم", Tokenizer::Chars), ["میخواهم"]);
    }

    #[test]
    fn long_runs_are_cut_into_bounded_pieces() {
        let word = "a".repeat(MAX_TOKEN);
        assert_eq!(toks(&word, Tokenizer::Chars), [word]);
        let mut rng = 7u64;
        let mut letters = String::new();
        for _ in 0..20_000 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            letters.push(['x', 'y', 'z', 'é', 'ж', 'a'][(rng >> 60) as usize % 6]);
        }
        for tok in [Tokenizer::Words, Tokenizer::Chars, Tokenizer::Jieba] {
            let t = toks(&letters, tok);
            assert!(t.len() > letters.len() / MAX_TOKEN, "{tok:?}: {}", t.len());
            assert!(t.iter().all(|p| p.len() <= MAX_TOKEN));
            assert_eq!(t.concat(), letters);
            // An edit near the start moves no cut after the piece it is in.
            let edited = toks(&format!("q{letters}"), tok);
            assert_eq!(edited[edited.len() - t.len() + 2..], t[2..], "{tok:?}");
        }
        // A character with a megabyte of combining marks, too.
        let marks = format!("a{}", "\u{301}\u{302}".repeat(1 << 18));
        assert!(toks(&marks, Tokenizer::Chars)
            .iter()
            .all(|p| p.len() <= MAX_TOKEN));
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
    fn portable_word_search_agrees() {
        // The portable masks (used without AVX2) against the naive search.
        let text = "  ab c  éé 中文 x  ".repeat(9);
        for n in 0..text.len() {
            let bytes = &text.as_bytes()[..n];
            let mut found = Vec::new();
            words_with(bytes, |a, b, ascii| found.push((a, b, ascii)), masks);
            assert_eq!(found, naive_words(bytes), "{n}");
        }
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
        // Every byte value next to spaces, at every offset of a 64-byte block, on both sides of
        // the block end (and in the space-padded last block).
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
