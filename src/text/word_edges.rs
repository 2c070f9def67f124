//! Where `--substrings` may cut a text: never inside a word of a space-delimited script (a run
//! of letters or digits, with their combining marks) and never before a combining mark; anywhere
//! else (at white space and punctuation, and between two characters of a script written without
//! spaces: Han, kana, hangul, Thai, Khmer, ...). A window starts and ends at such an edge, so a
//! removed span, a union of windows, never leaves a word fragment behind.

use super::chars::{Chars, Class};

/// The most bytes walked back to find an edge. A longer word (a base64 blob, a long identifier)
/// has no edge within reach, and no window ends inside it: its bytes stay.
pub(crate) const MAX_WORD: usize = 64;

/// Whether a span may begin or end before byte `i` of `text` (a character start, or the end).
#[inline]
pub(crate) fn is_edge(text: &[u8], i: usize) -> bool {
    if i == 0 || i >= text.len() {
        return true;
    }
    let (before, at) = (text[i - 1], text[i]);
    match before.is_ascii() && at.is_ascii() {
        true => !(before.is_ascii_alphanumeric() && at.is_ascii_alphanumeric()),
        false => is_edge_beside_non_ascii(text, i),
    }
}

/// [`is_edge`] where a byte on either side is not ASCII.
fn is_edge_beside_non_ascii(text: &[u8], i: usize) -> bool {
    // Before ASCII white space or punctuation, or before a CJK ideograph (U+4000..U+9FFF, three
    // bytes led by 0xE4..=0xE9: never part of a spaced word, never a mark).
    let at = text[i];
    if at.is_ascii() && !at.is_ascii_alphanumeric() || (0xe4..=0xe9).contains(&at) {
        return true;
    }
    let chars = Chars::get();
    let Some(c) = char_at(text, i) else {
        return true;
    };
    if chars.class(c) == Class::Mark {
        return false;
    }
    !(chars.in_word(c) && char_before(text, i).is_some_and(|b| chars.in_word(b)))
}

/// The last edge at or before byte `x` of `text`, at most [`MAX_WORD`] bytes back.
#[inline]
pub(crate) fn at_or_before(text: &[u8], x: usize) -> Option<usize> {
    let char_start = |j: usize| text.get(j).is_none_or(|&b| (b & 0xc0) != 0x80);
    (x.saturating_sub(MAX_WORD)..=x)
        .rev()
        .find(|&j| char_start(j) && is_edge(text, j))
}

/// The character starting at byte `i`, if the bytes there are one.
#[inline]
fn char_at(text: &[u8], i: usize) -> Option<char> {
    let lead = u32::from(text[i]);
    let (len, mut c) = match lead {
        0..=0x7f => return char::from_u32(lead),
        0xc0..=0xdf => (2, lead & 0x1f),
        0xe0..=0xef => (3, lead & 0x0f),
        0xf0..=0xf7 => (4, lead & 0x07),
        _ => return None,
    };
    for k in 1..len {
        let b = u32::from(*text.get(i + k)?);
        if b & 0xc0 != 0x80 {
            return None;
        }
        c = c << 6 | (b & 0x3f);
    }
    char::from_u32(c)
}

/// The character ending before byte `i`.
#[inline]
fn char_before(text: &[u8], i: usize) -> Option<char> {
    let start = (i.saturating_sub(4)..i)
        .rev()
        .find(|&j| (text[j] & 0xc0) != 0x80)?;
    char_at(text, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(s: &str) -> Vec<usize> {
        (0..=s.len())
            .filter(|&i| s.is_char_boundary(i) && is_edge(s.as_bytes(), i))
            .collect()
    }

    #[test]
    fn words_of_spaced_scripts_are_never_cut() {
        assert_eq!(edges("ab cd"), [0, 2, 3, 5]);
        assert_eq!(edges("x-1,y"), [0, 1, 2, 3, 4, 5]);
        // Cyrillic and Devanagari words, marks included (U+094D virama, U+0947 vowel sign).
        assert_eq!(edges("мир да"), [0, 6, 7, 11]);
        assert_eq!(edges("नमस्ते"), [0, 18]);
        assert_eq!(edges("e\u{301}"), [0, 3]);
    }

    #[test]
    fn scripts_without_spaces_are_cut_between_characters_but_not_before_marks() {
        assert_eq!(edges("字字"), [0, 3, 6]);
        // Thai: ก ็ ข (the mark stays with its consonant).
        assert_eq!(edges("ก\u{e47}ข"), [0, 6, 9]);
    }

    #[test]
    fn the_walk_back_stops_at_an_edge_or_gives_up_past_a_long_word() {
        let t = format!("ab {}", "x".repeat(100));
        let t = t.as_bytes();
        assert_eq!(at_or_before(t, 2), Some(2));
        assert_eq!(at_or_before(t, 1), Some(0));
        assert_eq!(at_or_before(t, 30), Some(3));
        assert_eq!(at_or_before(t, 90), None);
        assert_eq!(at_or_before(t, t.len()), Some(t.len()));
        // Invalid UTF-8 and NUL: edges everywhere.
        assert_eq!(at_or_before(&[0xff, 0xfe, b'a'], 2), Some(2));
        assert!(is_edge(b"a\0b", 1));
    }
}
