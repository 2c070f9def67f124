//! The writing system a document is mostly in, for the report's breakdown (a cheap stand-in for
//! language identification that separates what the tokenisers treat differently: CJK text is
//! shingled by character or jieba word, other text by whitespace word).

use serde::{Deserialize, Serialize};

use crate::text::tokenize::is_cjk;

/// Bytes sampled from the start of a document (cut back to a character boundary).
const SAMPLE: usize = 256;

/// A document's script class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Script {
    /// At least 60% of the letters are Latin.
    Latin,
    /// At least 60% of the letters are CJK (Han, kana, hangul).
    Cjk,
    /// CJK and other letters, neither at 60%.
    Mixed,
    /// Mostly other scripts (Cyrillic, Arabic, Devanagari, ...).
    Other,
    /// No letters (empty, digits, punctuation) or a null text.
    None,
}

impl Script {
    pub const ALL: [Script; 5] = [
        Script::Latin,
        Script::Cjk,
        Script::Mixed,
        Script::Other,
        Script::None,
    ];

    /// A label for a person.
    pub fn label(self) -> &'static str {
        match self {
            Script::Latin => "Latin script",
            Script::Cjk => "CJK (Chinese, Japanese, Korean)",
            Script::Mixed => "mixed CJK and other",
            Script::Other => "other scripts",
            Script::None => "no letters",
        }
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(c: u8) -> Script {
        Script::ALL.get(c as usize).copied().unwrap_or(Script::None)
    }
}

/// The script class of the letters in the first [`SAMPLE`] bytes of `text`. ASCII bytes are
/// counted as bytes; only other characters are decoded (it runs on every document).
pub fn classify(text: &str) -> Script {
    let mut end = text.len().min(SAMPLE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text.as_bytes()[..end];
    // Most documents start in ASCII: a vectorised check, then the first letter decides.
    if head.is_ascii() {
        return if head.iter().any(u8::is_ascii_alphabetic) {
            Script::Latin
        } else {
            Script::None
        };
    }
    let (mut letters, mut cjk, mut latin) = (0u32, 0u32, 0u32);
    let mut i = 0;
    while i < head.len() {
        let b = head[i];
        if b < 0x80 {
            if b.is_ascii_alphabetic() {
                letters += 1;
                latin += 1;
            }
            i += 1;
            continue;
        }
        let Some(c) = text[i..end].chars().next() else {
            break;
        };
        i += c.len_utf8();
        // Range checks first: the general letter test is a table search.
        if is_cjk(c) {
            cjk += 1;
        } else if ('\u{00C0}'..='\u{024F}').contains(&c) && c.is_alphabetic() {
            latin += 1;
        } else if !c.is_alphabetic() {
            continue;
        }
        letters += 1;
    }
    if letters == 0 {
        return Script::None;
    }
    let share = |n: u32| n as f64 / letters as f64;
    if share(cjk) >= 0.6 {
        Script::Cjk
    } else if share(latin) >= 0.6 {
        Script::Latin
    } else if cjk > 0 {
        Script::Mixed
    } else {
        Script::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_told_apart() {
        assert_eq!(classify("The quick brown fox, café."), Script::Latin);
        assert_eq!(
            classify("Ça a été très intéressant, déjà vu"),
            Script::Latin
        );
        assert_eq!(classify("今天天气很好，我们去公园。"), Script::Cjk);
        assert_eq!(classify("Rust 编程语言很快而且很安全 safe"), Script::Mixed);
        assert_eq!(classify("Привет, как дела?"), Script::Other);
        assert_eq!(classify("12345 -- !!"), Script::None);
        assert_eq!(classify("１２３ ——"), Script::None);
        assert_eq!(classify(""), Script::None);
        // The sample is cut at a character boundary.
        assert_eq!(classify(&"字".repeat(1000)), Script::Cjk);
        for s in Script::ALL {
            assert_eq!(Script::from_code(s.code()), s);
        }
    }
}
