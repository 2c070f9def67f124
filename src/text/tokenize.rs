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
    let mut word = |w: &'a str| {
        if tokenizer == Tokenizer::Words || w.is_ascii() {
            emit(w);
        } else {
            split_cjk(w, tokenizer, &mut emit);
        }
    };
    let mut start = 0;
    for_each_space(text.as_bytes(), |i| {
        if start < i {
            word(&text[start..i]); // a space is one byte, so both ends are char boundaries
        }
        start = i + 1;
    });
    if start < text.len() {
        word(&text[start..]);
    }
}

/// Calls `f` with the index of every b' ' in `bytes`, in order. Eight bytes at a time (SWAR): a
/// byte equal to 0x20 becomes 0 after XOR, and `((x & 0x7f..) + 0x7f..) | x` has its high bit
/// clear exactly in the zero bytes (no carry crosses bytes), so the set bits of the inverted mask
/// are the spaces.
#[inline]
fn for_each_space(bytes: &[u8], mut f: impl FnMut(usize)) {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let chunks = bytes.chunks_exact(8);
    let tail = chunks.remainder();
    for (c, chunk) in chunks.enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ 0x2020_2020_2020_2020;
        let mut zero = !(((x & LO7) + LO7) | x | LO7);
        while zero != 0 {
            f(c * 8 + (zero.trailing_zeros() / 8) as usize);
            zero &= zero - 1;
        }
    }
    let base = bytes.len() - tail.len();
    for (i, &b) in tail.iter().enumerate() {
        if b == b' ' {
            f(base + i);
        }
    }
}

/// Splits one whitespace-free word into non-CJK runs and CJK tokens.
fn split_cjk<'a>(word: &'a str, tokenizer: Tokenizer, emit: &mut impl FnMut(&'a str)) {
    let use_jieba = tokenizer == Tokenizer::Jieba;
    let mut start = 0; // start of the pending non-CJK run
    let mut iter = word.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if !is_cjk(c) {
            continue;
        }
        if start < i {
            emit(&word[start..i]);
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
                emit(w.word);
            }
            start = end;
        } else {
            let end = i + c.len_utf8();
            emit(&word[i..end]);
            start = end;
        }
    }
    if start < word.len() {
        emit(&word[start..]);
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

    #[test]
    fn space_search_finds_every_space() {
        for text in [
            "",
            " ",
            "a",
            "ab cd",
            "  a  b   c        d e f g h i ",
            "x\u{a0}y z",
            "éé é 中文 a",
        ] {
            let mut found = Vec::new();
            for_each_space(text.as_bytes(), |i| found.push(i));
            let want: Vec<usize> = text
                .bytes()
                .enumerate()
                .filter(|&(_, b)| b == b' ')
                .map(|(i, _)| i)
                .collect();
            assert_eq!(found, want, "{text:?}");
        }
        // Every byte value next to spaces, at every offset in a chunk.
        for off in 0..16 {
            for b in 0..=255u8 {
                let mut bytes = vec![b'x'; 24];
                bytes[off] = b;
                bytes[off + 1] = b' ';
                let mut found = Vec::new();
                for_each_space(&bytes, |i| found.push(i));
                let want: Vec<usize> = bytes
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| c == b' ')
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(found, want);
            }
        }
    }

    #[test]
    fn empty_and_whitespace() {
        assert!(toks("", Tokenizer::Chars).is_empty());
        assert!(toks(" \n\t ,,, ", Tokenizer::Jieba).is_empty());
    }
}
