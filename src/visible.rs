//! Corpus text on a terminal: its control characters shown, never emitted. A crawled page (or
//! an id, a file name) holding `ESC ] 0 ; ... BEL` or `ESC [ 2 J` would retitle or clear the
//! user's terminal, and a bidi override would reorder what the user reads.
//!
//! Shown as Rust escapes: C0 controls other than newline and tab, and DEL, as `\x1b`; C1
//! controls, bidi controls and the line and paragraph separators as `\u{202e}`. A backslash
//! stays as it is (the escapes are for a reader, not a parser).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// `s` with every control character a terminal would act on written out visibly.
pub(crate) fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            c if !hidden(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// A JSON text with the characters JSON leaves raw (DEL, C1, bidi controls, line separators)
/// written as `\uXXXX` escapes: the same JSON value, safe on a terminal. They can only occur
/// inside strings, where `\uXXXX` means the character itself.
pub(crate) fn json(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match hidden(c) {
            true => out.push_str(&format!("\\u{:04x}", c as u32)),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_and_text_is_kept() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\u{202e}d\u{0}e\r\u{9b}f";
        assert_eq!(
            visible(hostile),
            "a\\x1b]0;pwned\\x07b\\x1b[2Jc\\u{202e}d\\x00e\\x0d\\u{9b}f"
        );
        assert!(matches!(visible("plain\ttext\n中文"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_the_same_value() {
        let v = serde_json::json!({"id": "x\u{1b}[31m\u{202e}\u{85}y"});
        let text = serde_json::to_string(&v).unwrap();
        let safe = json(&text);
        assert!(!safe.chars().any(hidden), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
    }

    proptest::proptest! {
        #[test]
        fn nothing_hidden_gets_through(s in "[\u{0}-\u{ff}\u{200e}\u{202a}-\u{202e}\u{2066}-\u{2069}a\u{4e00}\\\\]{0,40}") {
            let v = visible(&s);
            proptest::prop_assert!(!v.chars().any(hidden));
            // Newlines and tabs pass, so a text keeps its lines.
            proptest::prop_assert_eq!(v.matches('\n').count(), s.matches('\n').count());
            let again = visible(&v).into_owned();
            proptest::prop_assert_eq!(again.as_str(), v.as_ref());
        }
    }
}
