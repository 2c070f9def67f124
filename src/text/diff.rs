//! Word-level diff of a document against its cluster's kept document, for `explain` and the
//! report: what a person reads to judge whether two documents are really duplicates.
//!
//! The diff (Myers over whitespace-separated words, by [`similar`]) is folded: runs of equal
//! words longer than twice [`CONTEXT`] keep that many words either side and report the rest as
//! a gap, so a 20 KB page with one changed sentence shows that sentence.

use serde::Serialize;

use crate::text::visible::visible;

/// Equal words kept either side of a change.
pub const CONTEXT: usize = 12;

/// A piece of a folded diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", content = "text", rename_all = "lowercase")]
pub enum Piece {
    /// In both texts.
    Same(String),
    /// Only in the kept document.
    Removed(String),
    /// Only in this document.
    Added(String),
    /// Equal words left out (their number).
    Gap(usize),
    /// Further changes not shown (their number), past [`MAX_CHANGES`].
    More(usize),
}

/// Changes shown at most; the rest are counted ([`Piece::More`]).
pub const MAX_CHANGES: usize = 40;

/// The folded word diff from `keeper` to `doc`. Words are compared as whitespace-separated
/// tokens (spacing and line breaks never count as a change, as in the shingles) and shown
/// joined by single spaces.
pub fn word_diff(keeper: &str, doc: &str) -> Vec<Piece> {
    let a: Vec<&str> = keeper.split_whitespace().collect();
    let b: Vec<&str> = doc.split_whitespace().collect();
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &a,
        &b,
        Some(std::time::Instant::now() + std::time::Duration::from_secs(2)),
    );
    let mut out = Vec::new();
    let mut changes = 0;
    let last = ops.len().saturating_sub(1);
    for (i, op) in ops.iter().enumerate() {
        let (old, new) = (op.old_range(), op.new_range());
        match op.tag() {
            similar::DiffTag::Equal => out.extend(fold(&a[old], i == 0, i == last)),
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
                    out.push(Piece::Removed(a[old].join(" ")));
                }
                if tag != similar::DiffTag::Delete {
                    out.push(Piece::Added(b[new].join(" ")));
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
        return vec![Piece::Same(words.join(" "))];
    }
    let mut out = Vec::new();
    if keep_head > 0 {
        out.push(Piece::Same(words[..keep_head].join(" ")));
    }
    out.push(Piece::Gap(words.len() - keep_head - keep_tail));
    if keep_tail > 0 {
        out.push(Piece::Same(words[words.len() - keep_tail..].join(" ")));
    }
    out
}

/// The diff for a terminal: removed words red and struck through, added ones green.
pub fn to_ansi(pieces: &[Piece]) -> String {
    render(pieces, ("\x1b[9;31m", "\x1b[0m"), ("\x1b[32m", "\x1b[0m"))
}

/// The diff as plain text (wdiff style): `[-removed-]` and `{+added+}`.
pub fn to_plain(pieces: &[Piece]) -> String {
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
            Piece::More(n) => format!("[... {n} more changes ...]"),
        })
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
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
}
