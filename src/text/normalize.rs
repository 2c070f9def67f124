//! Text normalisation: Unicode NFKC, lowercase, every punctuation character (general category P*)
//! and every whitespace character replaced by a plain space. Runs of spaces are collapsed
//! implicitly by the tokenizer, which splits on spaces. This matches the canonical form the
//! development corpus' ground truth is computed on.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// Writes the normalised form of `text` into `out` (cleared first).
///
/// Fast path: ASCII characters and CJK unified ideographs (U+4E00..U+9FFF) are unchanged by NFKC
/// and are starters that compose with nothing before them, so they are copied directly (ASCII
/// lowercased, through a byte table, a whole run at a time). Every other run of characters goes
/// through NFKC as one segment, together with the fast character just before it (which a
/// following combining mark may compose with). A segment ends at a fast character followed by
/// another fast character, so NFKC of the pieces equals NFKC of the whole text.
pub fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len());
    let bytes = text.as_bytes();
    if text.is_ascii() {
        push_ascii(bytes, out);
        return;
    }
    let mut slow_start: Option<usize> = None; // byte offset where the pending NFKC segment begins
    let mut i = 0;
    while i < bytes.len() {
        // In a run of ASCII bytes every character but the last is followed by an ASCII (fast)
        // character: the run, less its last byte, is copied at once.
        let run = bytes[i..].iter().take_while(|b| b.is_ascii()).count();
        if run >= 2 {
            if let Some(start) = slow_start.take() {
                push_nfkc(&text[start..i], out);
            }
            push_ascii(&bytes[i..i + run - 1], out);
            i += run - 1;
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        let next = i + c.len_utf8();
        let next_fast = text[next..].chars().next().is_none_or(is_fast);
        if is_fast(c) && next_fast {
            if let Some(start) = slow_start.take() {
                push_nfkc(&text[start..i], out);
            }
            push_fast(c, out);
        } else if slow_start.is_none() {
            slow_start = Some(i);
        }
        i = next;
    }
    if let Some(start) = slow_start {
        push_nfkc(&text[start..], out);
    }
}

/// Appends ASCII bytes mapped through [`ASCII_MAP`].
#[inline]
fn push_ascii(ascii: &[u8], out: &mut String) {
    debug_assert!(ascii.is_ascii());
    // SAFETY: ASCII_MAP maps every ASCII byte to an ASCII byte, so `out` stays valid UTF-8.
    unsafe { out.as_mut_vec() }.extend(ascii.iter().map(|&b| ASCII_MAP[(b & 0x7f) as usize]));
}

/// Characters with a known normalised form that never combine with a preceding character:
/// ASCII, CJK ideographs (unchanged by NFKC), and the [`table_ascii`] characters.
#[inline]
fn is_fast(c: char) -> bool {
    c.is_ascii() || ('\u{4E00}'..='\u{9FFF}').contains(&c) || table_ascii(c).is_some()
}

/// The normalised form of common punctuation and full-width forms of Chinese text when it is
/// one ASCII character: U+3001 '、' and U+FF0C '，' become a space, U+FF21 'Ａ' becomes 'a'.
/// NFKC decomposes each of them to one ASCII character (a starter, which composes with nothing
/// before it), so, like ASCII, they take the fast path when the next character is fast too.
/// A unit test checks every entry against [`normalize_reference`].
#[inline]
fn table_ascii(c: char) -> Option<u8> {
    // Byte i: the form of character `first + i`; 0 when it is not a single ASCII character.
    const GENERAL_PUNCTUATION: &[u8] = b"       \0             \0\0 "; // U+2010..U+2027
    const CJK_SYMBOLS: &[u8] = b"    \0\0\0\0          \0\0            \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0 \0\0\0\0\0\0\0\0\0\0\0\0 \0\0"; // U+3000..U+303F
    const FULLWIDTH: &[u8] = b"\0   $      +    0123456789  <=>  abcdefghijklmnopqrstuvwxyz   ^ `abcdefghijklmnopqrstuvwxyz | ~       "; // U+FF00..U+FF65
    let (table, first) = match c as u32 {
        0x2010..=0x2027 => (GENERAL_PUNCTUATION, 0x2010),
        0x3000..=0x303F => (CJK_SYMBOLS, 0x3000),
        0xFF00..=0xFF65 => (FULLWIDTH, 0xFF00),
        _ => return None,
    };
    match table[(c as u32 - first) as usize] {
        0 => None,
        b => Some(b),
    }
}

/// Normalised form of each ASCII byte: lowercase; punctuation and whitespace become a space.
const ASCII_MAP: [u8; 128] = {
    let mut m = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        m[i] = if is_ascii_punctuation(c) || c == b' ' || (c >= 0x09 && c <= 0x0D) {
            b' '
        } else {
            c.to_ascii_lowercase()
        };
        i += 1;
    }
    m
};

/// ASCII punctuation per Unicode categories P*: everything `u8::is_ascii_punctuation` lists except
/// the symbols (category S*) $ + < = > ^ ` | ~.
const fn is_ascii_punctuation(c: u8) -> bool {
    c.is_ascii_punctuation()
        && !matches!(
            c,
            b'$' | b'+' | b'<' | b'=' | b'>' | b'^' | b'`' | b'|' | b'~'
        )
}

#[inline]
fn push_fast(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(ASCII_MAP[c as usize] as char);
    } else if let Some(b) = table_ascii(c) {
        out.push(b as char);
    } else {
        out.push(c); // a CJK ideograph: no case, not punctuation, not whitespace
    }
}

fn push_nfkc(segment: &str, out: &mut String) {
    for c in segment.nfkc() {
        for l in c.to_lowercase() {
            out.push(if is_punctuation(l) || l.is_whitespace() {
                ' '
            } else {
                l
            });
        }
    }
}

/// The reference form, without the fast path: NFKC of the whole text, lowercase, punctuation to
/// spaces. `normalize_into` must agree with it on every input.
pub fn normalize_reference(text: &str) -> String {
    let mut out = String::new();
    push_nfkc(text, &mut out);
    out
}

/// Unicode punctuation (Pc, Pd, Ps, Pe, Pi, Pf, Po). ASCII symbols such as `$`, `+`, `<` are
/// category S*, not punctuation, and stay.
#[inline]
pub fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return is_ascii_punctuation(c as u8);
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
        assert_eq!(
            normalize("Hello, World!  It's  fine."),
            "hello  world   it s  fine "
        );
        assert_eq!(
            normalize("a\tb\nc\u{b}d\u{a0}é\u{3000}f"),
            "a b c d e\u{301} f".nfc().collect::<String>()
        );
        assert_eq!(normalize("a+b=c $5"), "a+b=c $5");
    }

    #[test]
    fn chinese_and_fullwidth() {
        // Full-width letters and digits fold to ASCII under NFKC; CJK punctuation becomes spaces.
        assert_eq!(normalize("ＡＢＣ１２３，你好。"), "abc123 你好 ");
        assert_eq!(normalize("《红楼梦》——曹雪芹"), " 红楼梦   曹雪芹");
    }

    #[test]
    fn fast_path_agrees_with_reference() {
        for t in [
            "e\u{301}t\u{e9} caf\u{e9}", // combining accent after an ASCII letter
            "中\u{301}文，ＡＢＣ。ｶﾀｶﾅ ①②③ ﬁ", // mark after an ideograph, full-width, half-width kana, ligature
            "Ünïcödé ΣΑΣ İstanbul ǅ",
            "漢字\u{3099}か\u{3099}", // (non-)composing voiced marks
            "",
            "\u{301}leading mark",
        ] {
            assert_eq!(normalize(t), normalize_reference(t), "{t:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(7),
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn fast_path_agrees_on_random_text(s in "[a-zA-Z \\.,\u{300}-\u{36f}\u{4e00}-\u{4e10}\u{ff01}-\u{ff65}\u{3000}-\u{303f}\u{2010}-\u{2027}\u{c0}-\u{17f}\u{3040}-\u{30ff}\u{ac00}-\u{ac10}\u{1100}-\u{1112}\u{1161}-\u{1175}]{0,40}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }

        /// Mostly ASCII with scattered marks, ideographs and full-width letters: exercises the
        /// run-at-a-time ASCII copy next to NFKC segments.
        #[test]
        fn ascii_runs_agree(s in "([a-zA-Z .,!]{0,7}[\u{300}-\u{36f}\u{4e00}-\u{4e10}\u{e9}\u{ff21}-\u{ff3a}\u{3002}]?){0,12}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }
    }

    #[test]
    fn table_characters_match_reference() {
        let ranges = [0x2000..0x2070u32, 0x3000..0x3040, 0xFF00..0xFFF0];
        let mut fast = 0;
        for c in ranges.into_iter().flatten().filter_map(char::from_u32) {
            if let Some(b) = table_ascii(c) {
                fast += 1;
                assert_eq!(
                    normalize_reference(&c.to_string()),
                    (b as char).to_string(),
                    "{c:?}"
                );
                // Before and after ASCII, an ideograph, a combining mark, another table character.
                for ctx in ["a", "中", "\u{301}", "\u{338}", "\u{3099}", "，", "Ａ", " "] {
                    for t in [
                        format!("{c}{ctx}"),
                        format!("{ctx}{c}"),
                        format!("x{c}{c}{ctx}y"),
                    ] {
                        assert_eq!(normalize(&t), normalize_reference(&t), "{t:?}");
                    }
                }
            }
        }
        assert_eq!(fast, 150);
    }

    #[test]
    fn mixed() {
        assert_eq!(normalize("Rust 语言：Fast！"), "rust 语言 fast ");
    }
}
