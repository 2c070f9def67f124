//! Text handling: normalisation, tokenisation, and shingling into 64-bit hash sets.

pub mod diff;
pub mod features;
pub mod normalize;
pub mod script;
pub mod sets;
pub mod shingle;
pub mod tokenize;
pub mod visible;

#[cfg(test)]
mod tests {
    use super::normalize::normalize;
    use super::shingle::{shingle_hashes, shingle_set, Scratch};
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
