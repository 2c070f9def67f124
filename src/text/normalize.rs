//! Text normalisation: Unicode NFKC, lowercase, every punctuation character (general category P*)
//! replaced by a space. Whitespace runs are collapsed implicitly by the tokenizer, which splits on
//! them. This matches the canonical form the development corpus' ground truth is computed on.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Writes the normalised form of `text` into `out` (cleared first). ASCII text skips NFKC, which
/// leaves it unchanged anyway.
pub fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len());
    if text.is_ascii() {
        for b in text.bytes() {
            let c = b.to_ascii_lowercase() as char;
            out.push(if is_punctuation(c) { ' ' } else { c });
        }
        return;
    }
    for c in text.nfkc() {
        for l in c.to_lowercase() {
            out.push(if is_punctuation(l) { ' ' } else { l });
        }
    }
}

/// Unicode punctuation (Pc, Pd, Ps, Pe, Pi, Pf, Po). ASCII symbols such as `$`, `+`, `<` are
/// category S*, not punctuation, and stay.
#[inline]
pub fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        // ASCII punctuation per Unicode categories P*: everything `is_ascii_punctuation` lists
        // except the symbols $ + < = > ^ ` | ~.
        return c.is_ascii_punctuation() && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~');
    }
    c.general_category_group() == GeneralCategoryGroup::Punctuation
}

/// Convenience wrapper returning a new string.
pub fn normalize(text: &str) -> String {
    let mut s = String::new();
    normalize_into(text, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english() {
        assert_eq!(normalize("Hello, World!  It's  fine."), "hello  world   it s  fine ");
        assert_eq!(normalize("a+b=c $5"), "a+b=c $5");
    }

    #[test]
    fn chinese_and_fullwidth() {
        // Full-width letters and digits fold to ASCII under NFKC; CJK punctuation becomes spaces.
        assert_eq!(normalize("ＡＢＣ１２３，你好。"), "abc123 你好 ");
        assert_eq!(normalize("《红楼梦》——曹雪芹"), " 红楼梦   曹雪芹");
    }

    #[test]
    fn mixed() {
        assert_eq!(normalize("Rust 语言：Fast！"), "rust 语言 fast ");
    }
}
