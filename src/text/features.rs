//! Weighted features for SimHash: TF-IDF over jieba tokens.
//!
//! Tokens come from the `Jieba` tokenizer (Han runs segmented by jieba-rs, other scripts split on
//! whitespace, punctuation already removed by normalisation). A token's weight is
//! `min(tf, tf_cap) * idf`:
//! - Chinese words take their IDF from jieba's own table (the one `jieba_rs::TfIdf` ships), looked
//!   up once per distinct word and thread; single-character words and words jieba treats as stop
//!   words weigh 0, as in jieba's keyword extraction;
//! - other tokens take jieba's median IDF (so their weight is a capped term frequency), and jieba's
//!   English stop words weigh 0.
//!
//! The cap keeps one token repeated many times (templated lists, spam) from deciding every bit.
//! With `top_k > 0` only the heaviest `top_k` features are kept (ties by hash).

use std::cell::RefCell;
use std::sync::OnceLock;

use ahash::AHashMap;
use jieba_rs::{KeywordExtract, TfIdf, DEFAULT_STOP_WORDS};

use crate::config::Tokenizer;
use crate::lsh::mix64;
use crate::text::normalize::normalize_into;
use crate::text::shingle::token_hash;
#[cfg(test)]
use crate::text::tokenize::is_han;
use crate::text::tokenize::{jieba, tokenize_marked};

fn tfidf() -> &'static TfIdf {
    static T: OnceLock<TfIdf> = OnceLock::new();
    T.get_or_init(TfIdf::default)
}

/// jieba's median IDF: the weight its extractor gives a word missing from the table.
pub(crate) fn median_idf() -> f32 {
    static M: OnceLock<f32> = OnceLock::new();
    *M.get_or_init(|| {
        // An ASCII word is never in the Chinese IDF table, so its TF-IDF alone is the median IDF.
        let kw = tfidf().extract_keywords(jieba(), "qxzvq", 1, vec![]);
        kw.first().map_or(10.0, |k| k.weight as f32)
    })
}

thread_local! {
    /// IDF of Chinese words by token hash, filled on first sight (per thread, so no locking).
    static IDF_CACHE: RefCell<AHashMap<u64, f32>> = RefCell::new(AHashMap::new());
}

/// Token hashes of jieba's English stop words.
fn stop_hashes() -> &'static ahash::AHashSet<u64> {
    static S: OnceLock<ahash::AHashSet<u64>> = OnceLock::new();
    S.get_or_init(|| DEFAULT_STOP_WORDS.iter().map(|w| token_hash(w)).collect())
}

#[cfg(test)]
/// IDF of one token whose hash is `h` (0 for stop words and single Han characters).
pub(crate) fn idf(token: &str, h: u64) -> f32 {
    let han = !token.is_ascii() && token.chars().all(is_han);
    IDF_CACHE.with(|c| token_idf(token, h, han, &mut c.borrow_mut()))
}

/// The IDF for a token already known to be (`han`) or not to be a word of Han characters only,
/// with the calling thread's cache at hand.
fn token_idf(token: &str, h: u64, han: bool, cache: &mut AHashMap<u64, f32>) -> f32 {
    if !han {
        return if stop_hashes().contains(&h) {
            0.0
        } else {
            median_idf()
        };
    }
    // A single Han character (3 bytes in the BMP, 4 in CJK extension B and beyond).
    if token.chars().nth(1).is_none() {
        return 0.0;
    }
    if let Some(&v) = cache.get(&h) {
        return v;
    }
    let kw = tfidf().extract_keywords(jieba(), token, 1, vec![]);
    let v = match kw.first() {
        Some(k) if k.keyword == token => k.weight as f32,
        Some(_) => median_idf(), // jieba segments it differently on its own: treat as unknown
        None => 0.0,             // a stop word
    };
    cache.insert(h, v);
    v
}

/// Reusable buffers.
#[derive(Default)]
pub(crate) struct FeatureScratch {
    norm: String,
    tokens: Vec<(u64, f32)>,
}

/// Writes the weighted features of `text` into `out`, sorted by hash, one entry per distinct
/// feature. A feature is a run of `ngram` consecutive tokens (stop words included, so word order
/// counts); its weight is the sum of its tokens' IDFs times its capped term frequency, and a
/// feature of stop words only is dropped.
pub(crate) fn weighted_features(
    text: &str,
    ngram: usize,
    tf_cap: u32,
    scratch: &mut FeatureScratch,
    out: &mut Vec<(u64, f32)>,
) {
    out.clear();
    normalize_into(text, &mut scratch.norm);
    let toks = &mut scratch.tokens;
    toks.clear();
    IDF_CACHE.with(|c| {
        let cache = &mut *c.borrow_mut();
        tokenize_marked(&scratch.norm, Tokenizer::Jieba, |t, han| {
            let h = token_hash(t);
            toks.push((h, token_idf(t, h, han, cache)));
        });
    });
    let n = ngram.max(1);
    if n > 1 {
        let grams: Vec<(u64, f32)> = toks
            .windows(n)
            .map(|w| {
                let h = w.iter().fold(0u64, |a, &(h, _)| {
                    a.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(h)
                });
                (mix64(h), w.iter().map(|&(_, x)| x).sum())
            })
            .collect();
        *toks = grams;
    }
    toks.retain(|&(_, w)| w > 0.0);
    toks.sort_unstable_by_key(|&(h, _)| h);
    let mut i = 0;
    while i < toks.len() {
        let (h, w) = toks[i];
        let mut j = i + 1;
        while j < toks.len() && toks[j].0 == h {
            j += 1;
        }
        let tf = ((j - i) as u32).min(tf_cap.max(1));
        out.push((h, w * tf as f32));
        i = j;
    }
}

/// Drops the features for which `keep(hash)` is false (over-frequent in the corpus), then keeps
/// the heaviest `top_k` (ties by hash; 0 keeps all). The result stays sorted by hash.
///
/// A document whose features are *all* over-frequent (a licence text or a template repeated across
/// the corpus) keeps them all: with none left it would have no fingerprint and could never be
/// matched, not even with an exact copy of itself.
pub(crate) fn select_features(
    feats: &mut Vec<(u64, f32)>,
    keep: impl Fn(u64) -> bool,
    top_k: usize,
) {
    if feats.iter().any(|&(h, _)| keep(h)) {
        feats.retain(|&(h, _)| keep(h));
    }
    if top_k > 0 && feats.len() > top_k {
        feats.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        feats.truncate(top_k);
        feats.sort_unstable_by_key(|&(h, _)| h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feats(t: &str, cap: u32, k: usize) -> Vec<(u64, f32)> {
        let mut out = Vec::new();
        weighted_features(t, 1, cap, &mut FeatureScratch::default(), &mut out);
        select_features(&mut out, |_| true, k);
        out
    }

    #[test]
    fn idf_values() {
        let m = median_idf();
        assert!(m > 1.0 && m < 20.0, "median idf {m}");
        let idf = |t: &str| idf(t, token_hash(t));
        assert_eq!(idf("the"), 0.0);
        assert_eq!(idf("rust"), m);
        assert_eq!(idf("的"), 0.0);
        // One Han character of CJK extension B (4 bytes) too.
        assert_eq!(idf("\u{20000}"), 0.0);
        // A rare word has a higher IDF than a common one.
        assert!(
            idf("北京烤鸭") > idf("我们"),
            "{} {}",
            idf("北京烤鸭"),
            idf("我们")
        );
    }

    #[test]
    fn term_frequency_is_capped_and_stop_words_dropped() {
        let f = feats("the cat the cat the cat cat cat cat cat dog", 3, 0);
        let m = median_idf();
        assert_eq!(f.len(), 2); // cat, dog; "the" is a stop word
        let w: Vec<f32> = f.iter().map(|x| x.1).collect();
        assert!(w.contains(&(3.0 * m)) && w.contains(&m));
        assert!(f.windows(2).all(|p| p[0].0 < p[1].0));
    }

    #[test]
    fn chinese_features_and_top_k() {
        let f = feats(
            "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。",
            4,
            0,
        );
        assert!(f.len() >= 4, "{f:?}");
        let top = feats(
            "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。",
            4,
            2,
        );
        assert_eq!(top.len(), 2);
        let max = f.iter().map(|x| x.1).fold(0.0, f32::max);
        assert!(top.iter().any(|x| x.1 == max));
    }

    #[test]
    fn over_frequent_features_are_dropped_unless_nothing_is_left() {
        let mut f = vec![(1, 1.0), (2, 2.0), (3, 3.0)];
        select_features(&mut f, |h| h != 2, 0);
        assert_eq!(f, vec![(1, 1.0), (3, 3.0)]);
        // Every feature over-frequent: all are kept.
        select_features(&mut f, |_| false, 0);
        assert_eq!(f, vec![(1, 1.0), (3, 3.0)]);
        select_features(&mut f, |_| false, 1);
        assert_eq!(f, vec![(3, 3.0)]);
    }

    #[test]
    fn ngram_features_keep_word_order() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut s = FeatureScratch::default();
        weighted_features("red fox jumps high", 2, 4, &mut s, &mut a);
        weighted_features("high jumps fox red", 2, 4, &mut s, &mut b);
        assert_eq!(a.len(), 3);
        assert!(a.iter().all(|x| !b.contains(x)));
        weighted_features("red fox jumps high", 1, 4, &mut s, &mut a);
        weighted_features("high jumps fox red", 1, 4, &mut s, &mut b);
        assert_eq!(a, b);
    }
}
