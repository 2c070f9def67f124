//! Text handling: normalisation, tokenisation, and shingling into 64-bit hash sets.

pub(crate) mod chars;
pub(crate) mod diff;
pub(crate) mod features;
pub(crate) mod normalize;
pub(crate) mod paragraphs;
pub(crate) mod script;
pub(crate) mod sets;
pub mod shingle;
pub(crate) mod substrings;
pub(crate) mod tokenize;
pub(crate) mod window_hash;
pub(crate) mod word_edges;

#[cfg(test)]
mod tests {
    use super::normalize::normalize;
    use super::shingle::{shingle_hashes, shingle_set, token_hash, token_hashes, Scratch};
    use super::tokenize::{tokens, MAX_TOKEN};
    use crate::config::Tokenizer;

    /// Runs the whole text path on `s`: normalise (and again: idempotent), tokenise and shingle
    /// with every tokenizer. Nothing may panic; sets are sorted and unique.
    fn check(s: &str) {
        let once = normalize(s);
        assert_eq!(
            normalize(&once),
            once,
            "normalise is not idempotent on {s:?}"
        );
        let mut scratch = Scratch::default();
        let (mut hashes, mut set) = (Vec::new(), Vec::new());
        for tok in [Tokenizer::Words, Tokenizer::Chars, Tokenizer::Jieba] {
            shingle_hashes(s, tok, 5, &mut scratch, &mut hashes);
            shingle_set(s, tok, 5, &mut scratch, &mut set);
            assert!(set.windows(2).all(|w| w[0] < w[1]));
            assert!(set.len() <= hashes.len().max(1));
            // The shingles of a text are those of its normalised form.
            let mut again = Vec::new();
            shingle_set(&once, tok, 5, &mut scratch, &mut again);
            assert_eq!(set, again, "{tok:?} on {s:?}");
            // Tokens are bounded, lose no character, and the hashing path makes the same ones.
            let t = tokens(&once, tok);
            assert!(
                t.iter().all(|x| !x.is_empty() && x.len() <= MAX_TOKEN),
                "{t:?}"
            );
            assert_eq!(t.concat(), once.replace(' ', ""), "{tok:?} on {s:?}");
            let mut hashes = Vec::new();
            token_hashes(&mut once.clone(), tok, &mut hashes);
            assert_eq!(hashes, t.iter().map(|x| token_hash(x)).collect::<Vec<_>>());
            // Segmentation is deterministic.
            assert_eq!(tokens(&once, tok), t);
        }
    }

    /// ZERO WIDTH SPACE is a word break: the same tokens as a space.
    fn zwsp_is_a_break(a: &str, b: &str) {
        for tok in [Tokenizer::Words, Tokenizer::Chars, Tokenizer::Jieba] {
            let spaced = tokens(&normalize(&format!("{a} {b}")), tok);
            let zwsp = tokens(&normalize(&format!("{a}\u{200B}{b}")), tok);
            assert_eq!(zwsp, spaced, "{tok:?} on {a:?} {b:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 3000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(21),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Any unicode text: control characters, every plane, combining marks.
        #[test]
        fn any_text_goes_through(s in "\\PC{0,60}|.{0,60}|[\u{0}-\u{1f}\u{300}-\u{36f}\u{7f}-\u{9f} a\u{4e00}]{0,40}") {
            check(&s);
        }

        /// Text of the scripts written without spaces, with their marks, digits, format
        /// characters, and runs longer than a token.
        #[test]
        fn spaceless_text_goes_through(s in "[\u{E01}-\u{E5B}\u{E81}-\u{EDF}\u{1780}-\u{17F9}\u{1000}-\u{109F}\u{200B}-\u{200D}\u{AD}\u{2060}\u{FEFF} a1字]{0,80}|[\u{E01}-\u{E3A}]{90,300}") {
            check(&s);
        }

        #[test]
        fn zero_width_space_is_a_word_break(a in "[\u{E01}-\u{E3A}\u{1780}-\u{17D3}a-z字\u{301}]{0,12}", b in "[\u{E01}-\u{E3A}\u{1780}-\u{17D3}a-z字\u{301}]{0,12}") {
            zwsp_is_a_break(&a, &b);
        }

        /// Any bytes, read as UTF-8 the way a lossy reader would (invalid sequences and lone
        /// surrogates become U+FFFD).
        #[test]
        fn any_bytes_go_through(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            check(&String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn a_megabyte_single_token_line_goes_through() {
        check(&"a".repeat(1 << 20));
        check(&"字".repeat(350_000));
        check(&format!("{}\u{301}", "é".repeat(300_000)));
    }
}
