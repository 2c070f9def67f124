//! The script a document is mostly written in, for the report's breakdown: Unicode Script
//! property values (Latin, Cyrillic, Han, Thai, ...) from `icu_properties`.

use icu_properties::props::Script;
use icu_properties::{CodePointMapData, PropertyNamesLong, PropertyNamesShort, PropertyParser};

/// Bytes sampled from the start of a document (cut back to a character boundary).
const SAMPLE: usize = 256;

/// The script a document is mostly written in: the script with the most letters in its first
/// [`SAMPLE`] bytes (hiragana and katakana count as one, kana), as its ISO 15924 code in four
/// bytes; 0 when there is no letter.
pub(crate) fn classify(text: &str) -> u32 {
    let mut end = text.len().min(SAMPLE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    // Most documents start in ASCII: a vectorised check, then any letter decides.
    if head.is_ascii() {
        return if head.bytes().any(|b| b.is_ascii_alphabetic()) {
            code(Script::Latin)
        } else {
            0
        };
    }
    let scripts = CodePointMapData::<Script>::new();
    // Letters per script, in the order first seen; a ninth script is not counted.
    let mut counts = [(Script::Unknown, 0u32); 8];
    let mut seen = 0;
    for c in head.chars() {
        let s = if c.is_ascii() {
            if !c.is_ascii_alphabetic() {
                continue;
            }
            Script::Latin
        } else {
            match scripts.get(c) {
                Script::Common | Script::Inherited | Script::Unknown => continue,
                Script::Hiragana | Script::Katakana => Script::KatakanaOrHiragana,
                s => s,
            }
        };
        match counts[..seen].iter_mut().find(|(x, _)| *x == s) {
            Some((_, n)) => *n += 1,
            None if seen < 8 => {
                counts[seen] = (s, 1);
                seen += 1;
            }
            None => {}
        }
    }
    // The first script seen wins a tie, so the result does not depend on the table's order.
    let mut best: Option<(Script, u32)> = None;
    for &(s, n) in &counts[..seen] {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((s, n));
        }
    }
    best.map_or(0, |(s, _)| code(s))
}

/// The ISO 15924 code of `script` (`Thai`, `Latn`, `Hani`) in four bytes.
fn code(script: Script) -> u32 {
    let short = PropertyNamesShort::<Script>::new()
        .get(script)
        .unwrap_or("");
    let mut b = [0u8; 4];
    for (d, s) in b.iter_mut().zip(short.bytes()) {
        *d = s;
    }
    u32::from_be_bytes(b)
}

/// The name of a document script from [`classify`], as the summary spells it: the Unicode name
/// (`Latin`, `Cyrillic`, `Han`, `Thai`, `Katakana_Or_Hiragana`), or `none` for no letters.
pub(crate) fn name(code: u32) -> String {
    let bytes = code.to_be_bytes();
    let short = std::str::from_utf8(&bytes).unwrap_or("");
    PropertyParser::<Script>::new()
        .get_strict(short)
        .and_then(|s| PropertyNamesLong::<Script>::new().get(s))
        .map_or_else(|| "none".to_string(), str::to_string)
}

/// A label for a person of a name from [`name`].
pub(crate) fn label(name: &str) -> String {
    match name {
        "Katakana_Or_Hiragana" => "Kana (Hiragana, Katakana)".to_string(),
        "none" => "no letters".to_string(),
        n => n.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> String {
        name(classify(text))
    }

    #[test]
    fn documents_are_named_by_their_script() {
        assert_eq!(script("The quick brown fox, café."), "Latin");
        assert_eq!(script("Ça a été très intéressant, déjà vu"), "Latin");
        assert_eq!(script("今天天气很好，我们去公园。"), "Han");
        assert_eq!(script("ひらがなとカタカナの文"), "Katakana_Or_Hiragana");
        assert_eq!(script("한국어 문장입니다"), "Hangul");
        assert_eq!(script("Привет, как дела?"), "Cyrillic");
        assert_eq!(script("مرحبا بالعالم"), "Arabic");
        assert_eq!(script("नमस्ते दुनिया"), "Devanagari");
        assert_eq!(script("ภาษาไทยไม่มีช่องว่าง"), "Thai");
        assert_eq!(script("ພາສາລາວ"), "Lao");
        assert_eq!(script("ភាសាខ្មែរ"), "Khmer");
        assert_eq!(script("မြန်မာဘာသာ"), "Myanmar");
        assert_eq!(script("12345 -- !!"), "none");
        assert_eq!(script("１２３ ——"), "none");
        assert_eq!(script(""), "none");
        // The most letters win: two Latin words in Thai text.
        assert_eq!(script("ร้านกาแฟ coffee shop ในกรุงเทพ"), "Thai");
        // The sample is cut at a character boundary.
        assert_eq!(script(&"字".repeat(1000)), "Han");
        assert_eq!(label("Katakana_Or_Hiragana"), "Kana (Hiragana, Katakana)");
        assert_eq!(label("Old_Italic"), "Old Italic");
    }
}
