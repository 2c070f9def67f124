//! Word-level diff of a document against its cluster's kept document, for `explain` and the
//! report: what a person reads to judge whether two documents are really duplicates.
//!
//! The diff (Myers, by [`similar`]) runs over the tokens the shingles see: whitespace-separated
//! words, and in scripts written without spaces (Chinese, Japanese, Thai, Khmer, ...) each
//! character with its marks, so a changed character is shown, not its whole sentence. It is
//! folded: runs of equal tokens longer than twice [`CONTEXT`] keep that many either side and
//! report the rest as a gap, so a 20 KB page with one changed sentence shows that sentence.

use serde::Serialize;

use crate::config::Tokenizer;
use crate::text::chars::{Chars, Class};
use crate::text::tokenize::split_word;
use crate::visible::visible;

/// Equal words kept either side of a change.
pub(crate) const CONTEXT: usize = 12;

/// A piece of a folded diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", content = "text", rename_all = "lowercase")]
pub(crate) enum Piece {
    /// In both texts.
    Same(String),
    /// Only in the kept document.
    Removed(String),
    /// Only in this document.
    Added(String),
    /// Equal words left out (their number).
    Gap(usize),
    /// Words of the document left out around a reference item ([`item_in_doc`]).
    Elided(usize),
    /// Further changes not shown (their number), past [`MAX_CHANGES`].
    More(usize),
}

/// Changes shown at most; the rest are counted ([`Piece::More`]).
pub(crate) const MAX_CHANGES: usize = 40;

/// The folded word diff from `keeper` to `doc` over their [`diff_tokens`] (spacing and line
/// breaks never count as a change, as in the shingles), shown joined by single spaces except
/// between characters of scripts written without spaces ([`separator`]).
pub(crate) fn word_diff(keeper: &str, doc: &str) -> Vec<Piece> {
    diff_of_tokens(&diff_tokens(keeper), &diff_tokens(doc), true)
}

/// Where a reference item sits in a document (`--reference`): the diff from the item to the
/// stretch of the document that holds it (from the first to the last run of three item words,
/// at most three item lengths, with [`CONTEXT`] words either side), the rest of the document
/// counted as gaps. `Same` pieces are the matched text; `Removed`, item words the document
/// lacks there; `Added`, the document's own words.
pub(crate) fn item_in_doc(item: &str, doc: &str) -> Vec<Piece> {
    let (a, b) = (diff_tokens(item), diff_tokens(doc));
    let lower = |t: &&str| t.to_lowercase();
    let grams: std::collections::HashSet<Vec<String>> = a
        .windows(3)
        .map(|w| w.iter().map(lower).collect())
        .collect();
    let hits: Vec<usize> = (b.windows(3).enumerate())
        .filter(|(_, w)| grams.contains(&w.iter().map(lower).collect::<Vec<_>>()))
        .map(|(i, _)| i)
        .collect();
    let (Some(&first), Some(&last)) = (hits.first(), hits.last()) else {
        return vec![Piece::Elided(b.len())];
    };
    let start = first.saturating_sub(CONTEXT);
    let end = (last + 3).min(first + 3 * a.len().max(1)).min(b.len());
    let end = (end + CONTEXT).min(b.len());
    let mut out = Vec::new();
    if start > 0 {
        out.push(Piece::Elided(start));
    }
    // The matched words are what is shown: never folded.
    out.extend(diff_of_tokens(&a, &b[start..end], false));
    if end < b.len() {
        out.push(Piece::Elided(b.len() - end));
    }
    out
}

/// [`word_diff`] of two token lists; runs of equal words folded when `fold_equal`.
fn diff_of_tokens(a: &[&str], b: &[&str], fold_equal: bool) -> Vec<Piece> {
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        a,
        b,
        Some(std::time::Instant::now() + std::time::Duration::from_secs(2)),
    );
    let mut out = Vec::new();
    let mut changes = 0;
    let last = ops.len().saturating_sub(1);
    for (i, op) in ops.iter().enumerate() {
        let (old, new) = (op.old_range(), op.new_range());
        match op.tag() {
            similar::DiffTag::Equal if fold_equal => out.extend(fold(&a[old], i == 0, i == last)),
            similar::DiffTag::Equal => out.push(Piece::Same(join(&a[old]))),
            tag => {
                changes += 1;
                if changes > MAX_CHANGES {
                    let left = ops[i..]
                        .iter()
                        .filter(|o| o.tag() != similar::DiffTag::Equal)
                        .count();
                    out.push(Piece::More(left));
                    break;
                }
                if tag != similar::DiffTag::Insert {
                    out.push(Piece::Removed(join(&a[old])));
                }
                if tag != similar::DiffTag::Delete {
                    out.push(Piece::Added(join(&b[new])));
                }
            }
        }
    }
    out
}

/// A run of equal words, shortened to [`CONTEXT`] words after the previous change and before
/// the next one.
fn fold(words: &[&str], first: bool, last: bool) -> Vec<Piece> {
    let keep_head = if first { 0 } else { CONTEXT };
    let keep_tail = if last { 0 } else { CONTEXT };
    if words.len() <= keep_head + keep_tail + 1 {
        return vec![Piece::Same(join(words))];
    }
    let mut out = Vec::new();
    if keep_head > 0 {
        out.push(Piece::Same(join(&words[..keep_head])));
    }
    out.push(Piece::Gap(words.len() - keep_head - keep_tail));
    if keep_tail > 0 {
        out.push(Piece::Same(join(&words[words.len() - keep_tail..])));
    }
    out
}

/// The tokens a diff compares: whitespace-separated words, split further as the `chars`
/// tokenizer splits them (each Han, kana or hangul character, and each character of a script
/// written without spaces with its marks, is a token), on the text as written.
pub(crate) fn diff_tokens(text: &str) -> Vec<&str> {
    let chars = Chars::get();
    let mut out = Vec::new();
    for w in text.split_whitespace() {
        if w.is_ascii() {
            out.push(w);
        } else {
            split_word(w, Tokenizer::Chars, chars, &mut |t, _| out.push(t));
        }
    }
    out
}

/// What is shown between two tokens (or pieces): nothing between characters of scripts written
/// without spaces, as they are written; a space otherwise.
pub(crate) fn separator(before: &str, after: &str) -> &'static str {
    let chars = Chars::get();
    let unspaced = |c: Option<char>| {
        c.is_some_and(|c| {
            matches!(
                chars.class(c),
                Class::Han | Class::Ideograph | Class::Cluster | Class::Mark
            )
        })
    };
    if unspaced(before.chars().next_back()) && unspaced(after.chars().next()) {
        ""
    } else {
        " "
    }
}

/// Tokens joined for display ([`separator`] between each two).
fn join(tokens: &[&str]) -> String {
    let mut s = String::new();
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            s.push_str(separator(tokens[i - 1], t));
        }
        s.push_str(t);
    }
    s
}

/// The text of a piece, for [`separator`] (a gap or a count stands apart: a space either side).
fn piece_text(p: &Piece) -> &str {
    match p {
        Piece::Same(t) | Piece::Removed(t) | Piece::Added(t) => t,
        Piece::Gap(_) | Piece::Elided(_) | Piece::More(_) => " ",
    }
}

/// Rendered pieces (one string per piece, as a renderer marked it up) joined with the
/// [`separator`] their texts call for.
pub(crate) fn join_rendered(pieces: &[Piece], rendered: &[String]) -> String {
    let mut s = String::new();
    for (i, r) in rendered.iter().enumerate() {
        if i > 0 {
            s.push_str(separator(
                piece_text(&pieces[i - 1]),
                piece_text(&pieces[i]),
            ));
        }
        s.push_str(r);
    }
    s
}

/// The diff for a terminal: removed words red and struck through, added ones green.
pub(crate) fn to_ansi(pieces: &[Piece]) -> String {
    render(pieces, ("\x1b[9;31m", "\x1b[0m"), ("\x1b[32m", "\x1b[0m"))
}

/// The diff as plain text (wdiff style): `[-removed-]` and `{+added+}`.
pub(crate) fn to_plain(pieces: &[Piece]) -> String {
    render(pieces, ("[-", "-]"), ("{+", "+}"))
}

/// For a terminal: the words' control characters are shown ([`visible`]), the marks are ours.
fn render(pieces: &[Piece], removed: (&str, &str), added: (&str, &str)) -> String {
    let parts: Vec<String> = pieces
        .iter()
        .map(|p| match p {
            Piece::Same(t) => visible(t).into_owned(),
            Piece::Removed(t) => format!("{}{}{}", removed.0, visible(t), removed.1),
            Piece::Added(t) => format!("{}{}{}", added.0, visible(t), added.1),
            Piece::Gap(n) => format!("[... {n} equal words ...]"),
            Piece::Elided(n) => format!("[... {n} words ...]"),
            Piece::More(n) => format!("[... {n} more changes ...]"),
        })
        .collect();
    join_rendered(pieces, &parts)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_item_is_shown_where_the_document_holds_it() {
        let host: Vec<String> = (0..200).map(|i| format!("h{i}")).collect();
        let item = "what is the capital city of france answer paris";
        let doc = format!(
            "{} {} {}",
            host[..100].join(" "),
            "What is the capital city of Spain? answer paris",
            host[100..].join(" ")
        );
        let d = item_in_doc(item, &doc);
        assert_eq!(d[0], Piece::Elided(100 - CONTEXT));
        assert!(matches!(d.last(), Some(Piece::Elided(_))));
        let same: Vec<&Piece> = d.iter().filter(|p| matches!(p, Piece::Same(_))).collect();
        assert!(!same.is_empty());
        assert!(
            d.contains(&Piece::Removed("france".into()))
                || d.contains(&Piece::Removed("france answer".into())),
            "{d:?}"
        );
        assert_eq!(
            item_in_doc(item, "nothing alike here"),
            vec![Piece::Elided(3)]
        );
    }

    use super::*;

    #[test]
    fn a_changed_word_is_shown_with_context_and_the_rest_folded() {
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let keeper = words.join(" ");
        let mut changed = words.clone();
        changed[50] = "NEW".into();
        let doc = changed.join(" ");
        let d = word_diff(&keeper, &doc);
        assert!(d.contains(&Piece::Removed("w50".into())));
        assert!(d.contains(&Piece::Added("NEW".into())));
        assert_eq!(d[0], Piece::Gap(50 - CONTEXT));
        assert!(matches!(d.last(), Some(Piece::Gap(n)) if *n == 49 - CONTEXT));
        let plain = to_plain(&d);
        assert!(plain.contains("[-w50-] {+NEW+}"), "{plain}");
        assert!(plain.contains("w38 w39"), "{plain}");
        assert!(!plain.contains("w37 "), "{plain}");
    }

    #[test]
    fn equal_texts_fold_to_one_gap_and_short_ones_stay_whole() {
        let t = "a b c d e f g h i j k l m n o p q r s t u v w x y z ".repeat(3);
        assert_eq!(word_diff(&t, &t), vec![Piece::Gap(78)]);
        // Spacing is not a change.
        assert_eq!(word_diff("a  b\nc", "a b c"), vec![Piece::Gap(3)]);
        assert_eq!(
            to_plain(&word_diff("one two three", "one 2 three")),
            "one [-two-] {+2+} three"
        );
        assert_eq!(word_diff("", ""), Vec::<Piece>::new());
    }

    #[test]
    fn unspaced_scripts_are_diffed_by_character_and_shown_as_written() {
        // One changed character in a Chinese sentence and in a Thai one: that character, not
        // the sentence, with the text around it unspaced.
        assert_eq!(
            to_plain(&word_diff("我们今天去公园", "我们明天去公园")),
            "我们[-今-]{+明+}天去公园"
        );
        assert_eq!(
            to_plain(&word_diff("ภาษาไทยง่ายมาก", "ภาษาไทยยากมาก")),
            "ภาษาไทย[-ง่-]{+ย+}า[-ย-]{+ก+}มาก"
        );
        // Mixed with spaced words: spaces where the words were.
        assert_eq!(
            to_plain(&word_diff("Rust 很快 safe", "Rust 很慢 safe")),
            "Rust 很[-快-]{+慢+} safe"
        );
    }
}
