//! Unicode scripts, from the Unicode Character Database as compiled into `icu_properties`: how
//! each character is tokenised (its [`Class`]), and which script a document is mostly written in
//! (for the report's breakdown).

use std::sync::OnceLock;

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, LineBreak, Script,
};
use icu_properties::script::ScriptWithExtensions;
use icu_properties::{
    CodePointMapData, CodePointSetData, CodePointSetDataBorrowed, PropertyNamesLong,
    PropertyNamesShort, PropertyParser,
};

/// How a character is tokenised (see `text::tokenize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// Part of a word of a space-delimited script (letters, digits, symbols): words end at spaces.
    Word,
    /// A kana, hangul, bopomofo or Yi character: its own token.
    Ideograph,
    /// A Han ideograph: its own token, or part of a jieba word under `--tokenizer jieba`.
    Han,
    /// A character of a script written without spaces between words (Line_Break=SA: Thai, Lao,
    /// Khmer, Myanmar, Tai scripts): with its combining marks, its own token.
    Cluster,
    /// A combining mark (general category M): stays with the character before it.
    Mark,
}

/// The class of every character of the Basic Multilingual Plane and whether it is ignorable,
/// looked up once per process (~65k property lookups, about a millisecond); characters above it
/// are looked up each time.
pub struct Classes(Box<[u8]>);

/// The bit of a [`Classes`] entry that marks a Default_Ignorable_Code_Point.
const IGNORABLE_BIT: u8 = 0x80;

/// The Default_Ignorable_Code_Point set of the Unicode Character Database.
const IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

impl Classes {
    /// The process-wide table.
    pub fn get() -> &'static Classes {
        static TABLE: OnceLock<Classes> = OnceLock::new();
        TABLE.get_or_init(|| {
            let table = (0..=0xFFFFu32)
                .map(|u| match char::from_u32(u) {
                    Some(c) => {
                        let ignorable = if IGNORABLE.contains(c) {
                            IGNORABLE_BIT
                        } else {
                            0
                        };
                        class_from_properties(c) as u8 | ignorable
                    }
                    None => Class::Word as u8, // surrogates: never in a str
                })
                .collect();
            Classes(table)
        })
    }

    /// The class of `c`.
    #[inline]
    pub fn of(&self, c: char) -> Class {
        match self.0.get(c as usize) {
            Some(&entry) => ALL[usize::from(entry & !IGNORABLE_BIT)],
            None => class_from_properties(c),
        }
    }

    /// Whether `c` is a Default_Ignorable_Code_Point (invisible format characters).
    #[inline]
    pub fn ignorable(&self, c: char) -> bool {
        match self.0.get(c as usize) {
            Some(&entry) => entry & IGNORABLE_BIT != 0,
            None => IGNORABLE.contains(c),
        }
    }
}

/// Every class, in the order of their values.
const ALL: [Class; 5] = [
    Class::Word,
    Class::Ideograph,
    Class::Han,
    Class::Cluster,
    Class::Mark,
];

/// The class of `c`, from its general category, script, script extensions and line-break class.
fn class_from_properties(c: char) -> Class {
    if GeneralCategoryGroup::Mark.contains(CodePointMapData::<GeneralCategory>::new().get(c)) {
        return Class::Mark;
    }
    let ideographic = |s: Script| match s {
        Script::Han => Some(Class::Han),
        Script::Hiragana | Script::Katakana | Script::Hangul | Script::Bopomofo | Script::Yi => {
            Some(Class::Ideograph)
        }
        _ => None,
    };
    let script = CodePointMapData::<Script>::new().get(c);
    if let Some(class) = ideographic(script) {
        return class;
    }
    // A character shared by scripts (the kana length mark U+30FC, iteration marks) is
    // ideographic when every script it is used with is.
    if script == Script::Common {
        let scx = ScriptWithExtensions::new();
        let mut shared = scx.get_script_extensions_val(c).iter().peekable();
        if shared.peek().is_some() && shared.all(|s| ideographic(s).is_some()) {
            return Class::Ideograph;
        }
    }
    if CodePointMapData::<LineBreak>::new().get(c) == LineBreak::ComplexContext {
        return Class::Cluster;
    }
    Class::Word
}

/// Bytes sampled from the start of a document (cut back to a character boundary).
const SAMPLE: usize = 256;

/// The script a document is mostly written in: the script with the most letters in its first
/// [`SAMPLE`] bytes (hiragana and katakana count as one, kana), as its ISO 15924 code in four
/// bytes; 0 when there is no letter.
pub fn classify(text: &str) -> u32 {
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
pub fn name(code: u32) -> String {
    let bytes = code.to_be_bytes();
    let short = std::str::from_utf8(&bytes).unwrap_or("");
    PropertyParser::<Script>::new()
        .get_strict(short)
        .and_then(|s| PropertyNamesLong::<Script>::new().get(s))
        .map_or_else(|| "none".to_string(), str::to_string)
}

/// A label for a person of a name from [`name`].
pub fn label(name: &str) -> String {
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

    #[test]
    fn characters_are_classed_by_their_properties() {
        let c = Classes::get();
        for (ch, class) in [
            ('a', Class::Word),
            ('é', Class::Word),
            ('я', Class::Word),
            ('7', Class::Word),
            ('字', Class::Han),
            ('\u{20000}', Class::Han), // CJK extension B
            ('\u{3005}', Class::Han),  // 々
            ('か', Class::Ideograph),
            ('ｶ', Class::Ideograph),  // halfwidth katakana
            ('ー', Class::Ideograph), // the kana length mark (script Common)
            ('한', Class::Ideograph),
            ('\u{1100}', Class::Ideograph), // a Hangul jamo
            ('ก', Class::Cluster),
            ('ກ', Class::Cluster),
            ('ក', Class::Cluster),
            ('က', Class::Cluster),
            ('\u{0E48}', Class::Mark), // Thai tone mark
            ('\u{0301}', Class::Mark),
            ('๑', Class::Word), // Thai digit: a number, not a letter of the run
        ] {
            assert_eq!(c.of(ch), class, "{ch:?} U+{:04X}", ch as u32);
        }
        for (i, class) in ALL.into_iter().enumerate() {
            assert_eq!(class as usize, i);
        }
        for ch in [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{AD}',
            '\u{FEFF}',
            '\u{E0001}',
        ] {
            assert!(c.ignorable(ch), "U+{:04X}", ch as u32);
        }
        for ch in ['a', ' ', '字', 'ก', '\u{0E48}'] {
            assert!(!c.ignorable(ch), "U+{:04X}", ch as u32);
        }
    }
}
