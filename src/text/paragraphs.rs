//! Paragraphs of a text for `--paragraphs`: where each starts and ends, and a hash of its
//! normalised text.
//!
//! - A text with a blank line (a line of whitespace only) between two lines of text is cut at its
//!   blank lines; a text without one at its line breaks (its lines are its only boundaries:
//!   wrapped prose, lists, logs; see docs/ARCHITECTURE.md for what the data showed).
//! - A paragraph's span runs from its first character (indentation included) to the first
//!   character of the next paragraph, or the end of the text: it takes the line breaks after it
//!   with it. The spans tile the text from its first paragraph on, so removing some leaves the
//!   others separated as they were, and every span starts and ends on a line boundary (a
//!   character boundary, whatever the text holds).
//! - Normalised text: whitespace runs as one space, trimmed. Case and punctuation are kept: two
//!   code lines that differ in one operator, or two entries that differ in a version number, are
//!   different paragraphs (dedup's normalisation would make them one and lose the difference).
//! - The size of a paragraph is the bytes of its text without the whitespace around it.

use xxhash_rust::xxh3::xxh3_64;

/// One paragraph of a text: its span (byte offsets) and its normalised text's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paragraph {
    pub start: usize,
    pub end: usize,
    pub hash: u64,
}

/// Reused buffers of [`paragraphs`].
#[derive(Default)]
pub(crate) struct Scratch {
    lines: Vec<(usize, usize, bool)>,
    norm: Vec<u8>,
}

/// Appends to `out` the paragraphs of `text` whose text is at least `min_bytes` long (smaller
/// ones, headings and one-word lines, are never removed and so never listed).
pub(crate) fn paragraphs(
    text: &str,
    min_bytes: usize,
    scratch: &mut Scratch,
    out: &mut Vec<Paragraph>,
) {
    // Every line: (start, end without its line break, whitespace only).
    let lines = &mut scratch.lines;
    lines.clear();
    let mut at = 0;
    for line in text.split('\n') {
        lines.push((at, at + line.len(), line.trim().is_empty()));
        at += line.len() + 1;
    }
    let first = lines.iter().position(|l| !l.2);
    let last = lines.iter().rposition(|l| !l.2);
    let (Some(first), Some(last)) = (first, last) else {
        return; // whitespace only
    };
    let by_blank_lines = lines[first..last].iter().any(|l| l.2);
    // Units: runs of text lines (cut at blank lines) or single text lines.
    let mut unit: Option<(usize, usize)> = None; // (start, end of its last text line)
    let mut emit = |unit: (usize, usize), next: usize, out: &mut Vec<Paragraph>| {
        let body = text[unit.0..unit.1].trim();
        if body.len() >= min_bytes.max(1) {
            out.push(Paragraph {
                start: unit.0,
                end: next,
                hash: hash(body, &mut scratch.norm),
            });
        }
    };
    let mut after_blank = true;
    for &(start, end, blank) in &lines[first..=last] {
        if blank {
            after_blank = true;
            continue;
        }
        match unit.as_mut() {
            Some(u) if by_blank_lines && !after_blank => u.1 = end,
            _ => {
                if let Some(u) = unit {
                    emit(u, start, out);
                }
                unit = Some((start, end));
            }
        }
        after_blank = false;
    }
    if let Some(u) = unit {
        emit(u, text.len(), out);
    }
}

/// The hash of a paragraph's normalised text (whitespace runs as one space).
fn hash(body: &str, buf: &mut Vec<u8>) -> u64 {
    buf.clear();
    for w in body.split_whitespace() {
        if !buf.is_empty() {
            buf.push(b' ');
        }
        buf.extend_from_slice(w.as_bytes());
    }
    xxh3_64(buf)
}

/// The hash of a paragraph's text as [`paragraphs`] computes it (for the report and `explain`).
#[cfg(test)]
pub(crate) fn text_hash(body: &str) -> u64 {
    hash(body, &mut Vec::new())
}

/// `text` without the byte ranges `spans` (ordered, disjoint); what is wrong with a span that
/// is not a range of the text on character boundaries after the one before it.
pub fn cut(text: &str, spans: &[(u64, u64)]) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    for &(s, e) in spans {
        let (s, e) = (s as usize, e as usize);
        let fits = at <= s && s < e && e <= text.len();
        if !fits || !text.is_char_boundary(s) || !text.is_char_boundary(e) {
            return Err(format!(
                "drop span [{s}, {e}) is not a range of its {}-byte text on character boundaries after the span before it",
                text.len()
            ));
        }
        out.push_str(&text[at..s]);
        at = e;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str, min: usize) -> Vec<&str> {
        let mut out = Vec::new();
        paragraphs(text, min, &mut Scratch::default(), &mut out);
        out.iter().map(|p| &text[p.start..p.end]).collect()
    }

    #[test]
    fn blank_lines_cut_paragraphs_and_spans_take_the_breaks_after_them() {
        let t = "\n\ntitle line\nsecond line\n\n  \r\nnext one\r\n\r\nlast";
        assert_eq!(
            spans(t, 1),
            [
                "title line\nsecond line\n\n  \r\n",
                "next one\r\n\r\n",
                "last"
            ]
        );
    }

    #[test]
    fn a_text_without_blank_lines_is_cut_at_lines() {
        assert_eq!(spans("a b\nc d\n", 1), ["a b\n", "c d\n"]);
        // Blank lines only around the text are no blank line between two lines of text.
        assert_eq!(spans("\n\n a\nb\n\n", 1), [" a\n", "b\n\n"]);
    }

    #[test]
    fn small_paragraphs_are_not_listed_and_whitespace_only_texts_have_none() {
        assert_eq!(
            spans("Title\n\nA longer paragraph.\n\nEnd", 10),
            ["A longer paragraph.\n\n"]
        );
        assert!(spans(" \n\t\r\n ", 1).is_empty());
        assert!(spans("", 1).is_empty());
    }

    #[test]
    fn a_ten_megabyte_paragraph_is_one_span() {
        let big = "word ".repeat(2 << 20);
        let t = format!("intro line\n\n{big}\n\n{big}");
        let mut out = Vec::new();
        paragraphs(&t, 100, &mut Scratch::default(), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].start, out[1].end), (12, t.len()));
        assert_eq!(out[0].hash, out[1].hash);
    }

    #[test]
    fn cut_removes_spans_and_names_a_bad_one() {
        assert_eq!(cut("ab\n\ncd\n\nef", &[(0, 4), (8, 10)]).unwrap(), "cd\n\n");
        assert_eq!(cut("abc", &[]).unwrap(), "abc");
        for bad in [[(2u64, 1u64)], [(0, 9)], [(1, 2)]] {
            let err = cut("é\nxyz", &bad).unwrap_err();
            assert!(err.contains("6-byte text"), "{err}");
        }
        assert!(cut("abcdef", &[(2, 4), (3, 5)]).is_err());
    }

    #[test]
    fn the_hash_is_of_the_text_with_whitespace_runs_as_one_space() {
        let mut a = Vec::new();
        let mut s = Scratch::default();
        paragraphs(
            "x  =\ta + b\r\n\r\nx = a - b\n\nx = a + b",
            1,
            &mut s,
            &mut a,
        );
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].hash, a[2].hash);
        assert_ne!(a[0].hash, a[1].hash);
        assert_eq!(a[2].hash, text_hash("x = a + b"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(49),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Spans are ordered, disjoint, on character boundaries, start at a line's start, and
        /// each holds exactly one paragraph's text (plus whitespace after it).
        #[test]
        fn spans_fall_on_line_starts(s in "[a\u{0}é字 \t\r\n]{0,80}", min in 1usize..4) {
            let mut out = Vec::new();
            paragraphs(&s, min, &mut Scratch::default(), &mut out);
            let mut at = 0;
            for p in &out {
                proptest::prop_assert!(at <= p.start && p.start < p.end && p.end <= s.len());
                proptest::prop_assert!(s.is_char_boundary(p.start) && s.is_char_boundary(p.end));
                proptest::prop_assert!(p.start == 0 || s.as_bytes()[p.start - 1] == b'\n');
                let body = s[p.start..p.end].trim();
                proptest::prop_assert!(body.len() >= min);
                proptest::prop_assert_eq!(p.hash, text_hash(body));
                at = p.end;
            }
        }
    }
}
