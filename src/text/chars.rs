//! What the Unicode Character Database says about each character, as the text path needs it:
//! its token [`Class`] (by Script, Script_Extensions, Line_Break and General_Category), whether
//! it is invisible (Default_Ignorable_Code_Point), and whether normalisation leaves it as it is.
//! One byte per character of the Basic Multilingual Plane, computed once per process.

use std::sync::OnceLock;

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, LineBreak, Script,
};
use icu_properties::script::ScriptWithExtensions;
use icu_properties::{CodePointMapData, CodePointSetData, CodePointSetDataBorrowed};
use unicode_normalization::{char::canonical_combining_class, is_nfkc_quick, IsNormalized};
use unicode_properties::{GeneralCategoryGroup as Group, UnicodeGeneralCategory};

/// How a character is tokenised (see `text::tokenize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Class {
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

/// The properties of every character of the Basic Multilingual Plane (~65k lookups, about a
/// millisecond, once per process); characters above it are looked up each time.
pub(crate) struct Chars(Box<[u8]>);

/// The bits of a [`Chars`] entry besides the class (bits 0-2).
const IGNORABLE_BIT: u8 = 0x80;
const PLAIN_BIT: u8 = 0x40;
const INERT_BIT: u8 = 0x20;
const WORD_BIT: u8 = 0x10;
const CLASS_BITS: u8 = 0x07;

/// The Default_Ignorable_Code_Point set of the Unicode Character Database.
const IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

impl Chars {
    /// The process-wide table.
    pub(crate) fn get() -> &'static Chars {
        static TABLE: OnceLock<Chars> = OnceLock::new();
        TABLE.get_or_init(|| {
            let table = (0..=0xFFFFu32)
                .map(|u| char::from_u32(u).map_or(0, entry)) // surrogates: never in a str
                .collect();
            Chars(table)
        })
    }

    /// The entry of `c`: from the table, or computed above the BMP.
    #[inline]
    fn entry(&self, c: char) -> u8 {
        match self.0.get(c as usize) {
            Some(&e) => e,
            None => entry(c),
        }
    }

    /// The token class of `c`.
    #[inline]
    pub(crate) fn class(&self, c: char) -> Class {
        ALL[usize::from(self.entry(c) & CLASS_BITS)]
    }

    /// Whether `c` is a Default_Ignorable_Code_Point (an invisible format character).
    #[inline]
    pub(crate) fn ignorable(&self, c: char) -> bool {
        self.entry(c) & IGNORABLE_BIT != 0
    }

    /// Whether the lowercase, punctuation and space mapping after NFKC leaves `c` as it is
    /// (see [`plain`]).
    #[inline]
    pub(crate) fn plain(&self, c: char) -> bool {
        self.entry(c) & PLAIN_BIT != 0
    }

    /// Whether normalisation leaves `c` as it is whatever surrounds it (see [`inert`]).
    #[inline]
    pub(crate) fn inert(&self, c: char) -> bool {
        self.entry(c) & INERT_BIT != 0
    }

    /// Whether `c` is part of a word of a space-delimited script (a letter or digit of class
    /// [`Class::Word`]) or a combining mark (part of the character before it): `--substrings`
    /// never cuts between two such characters, nor before a mark.
    #[inline]
    pub(crate) fn in_word(&self, c: char) -> bool {
        self.entry(c) & WORD_BIT != 0
    }
}

/// The table entry of `c`.
fn entry(c: char) -> u8 {
    let mut e = class_from_properties(c) as u8;
    if IGNORABLE.contains(c) {
        e |= IGNORABLE_BIT;
    }
    if plain(c) {
        e |= PLAIN_BIT;
    }
    if inert(c) {
        e |= INERT_BIT;
    }
    let class = ALL[usize::from(e & CLASS_BITS)];
    if class == Class::Mark || class == Class::Word && c.is_alphanumeric() {
        e |= WORD_BIT;
    }
    e
}

/// Every class, in the order of their values.
const ALL: [Class; 5] = [
    Class::Word,
    Class::Ideograph,
    Class::Han,
    Class::Cluster,
    Class::Mark,
];

/// Unicode punctuation (Pc, Pd, Ps, Pe, Pi, Pf, Po), which normalisation turns into spaces.
/// ASCII symbols such as `$`, `+`, `<` are category S*, not punctuation, and stay.
#[inline]
pub(crate) fn is_punctuation(c: char) -> bool {
    c.general_category_group() == Group::Punctuation
}

/// What normalisation does to `c` after NFKC: U+200B ZERO WIDTH SPACE becomes a space, another
/// default-ignorable character nothing (both also before NFKC: see `normalize`), a
/// punctuation or white-space character a space, any other character its lowercase form.
pub(crate) fn plain(c: char) -> bool {
    let mut lower = c.to_lowercase();
    c != '\u{200B}'
        && !IGNORABLE.contains(c)
        && !is_punctuation(c)
        && !c.is_whitespace()
        && lower.next() == Some(c)
        && lower.next().is_none()
}

/// Whether `c` comes out of normalisation as it is, next to any characters: it is [`plain`], NFKC
/// leaves it as it is (NFKC_Quick_Check=Yes, so it never composes with a character before it),
/// and it is a starter (combining class 0, so canonical reordering never moves it). Text may be
/// normalised in pieces cut between two such characters.
pub(crate) fn inert(c: char) -> bool {
    plain(c)
        && canonical_combining_class(c) == 0
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_are_classed_by_their_properties() {
        let c = Chars::get();
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
            assert_eq!(c.class(ch), class, "{ch:?} U+{:04X}", ch as u32);
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

    #[test]
    fn inert_characters_are_those_normalisation_keeps() {
        let c = Chars::get();
        for ch in ['a', '字', 'ก', 'ក', 'က', 'я'] {
            assert!(c.inert(ch) && c.plain(ch), "{ch:?}");
        }
        // Upper case, punctuation, compatibility forms, composing and reordered marks are not.
        for ch in [
            'A', ',', '\u{FF21}', '\u{0E33}', '\u{0301}', '\u{0E48}', '\u{1161}', '\u{200B}',
        ] {
            assert!(!c.inert(ch), "U+{:04X}", ch as u32);
        }
        // A Thai tone mark is plain (unchanged after NFKC) but not inert (it is reordered).
        assert!(c.plain('\u{0E48}'));
    }
}
