//! The n-gram table of a benchmark reference, and how a document is matched against it.
//!
//! An item is the set of hashes of its token n-grams (the tokens of dedup: [`token_hashes`], so
//! every script is handled as dedup handles it). N-grams found in [`BOILERPLATE_ITEMS`] or more
//! distinct items are the benchmark's boilerplate ("Example 1:", "Input: nums = [...]",
//! constraint lines) and are left out of every item; so a document that shares only such lines
//! with the reference is never flagged. A document is contaminated by the item of which it holds
//! the largest share of the remaining n-grams, when that share reaches the threshold (ties to
//! the item first in the reference).
//!
//! Invariants:
//! - The table is a function of the items' texts in reference order (rayon only splits work),
//!   so every task that builds it gets the same one.
//! - A document's match is a function of its token hashes alone, so exact copies (one token
//!   sequence) always share it.
//!
//! Memory: 12 bytes per distinct kept n-gram (sorted hashes and their items) plus a Bloom filter
//! of ~1.25 bytes per n-gram in front of them, so a document's n-grams cost one cache line each
//! and only the ~1% that pass the filter search the sorted hashes.

use rayon::prelude::*;

use crate::index::filter::Bloom;
use crate::text::shingle::ngrams;

/// An n-gram in this many distinct items or more is boilerplate. Two, not one: a test item that
/// two benchmarks both carry (or two editions of one) still counts as benchmark text.
pub const BOILERPLATE_ITEMS: usize = 3;

/// Why an item cannot be matched (each counted in the summary), or that it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usable {
    Yes,
    /// Null or no token.
    Empty,
    /// Fewer tokens than n: too little text to tell it from ordinary prose.
    TooShort,
    /// The same token sequence as an earlier item (that one stands for both).
    RepeatedText,
    /// Every n-gram is boilerplate.
    BoilerplateOnly,
}

/// The matching table of a reference.
pub struct Table {
    n: usize,
    threshold: f64,
    filter: Bloom,
    /// Kept n-gram hashes, ascending (an n-gram of two items appears twice).
    hashes: Vec<u64>,
    /// The item of each entry of `hashes`.
    items: Vec<u32>,
    /// Each item's count of kept distinct n-grams (0: not usable).
    sizes: Vec<u32>,
    usable: Vec<Usable>,
}

/// The item a document holds the largest share of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub item: u32,
    /// The share of the item's kept n-grams found in the document, in (0, 1].
    pub share: f32,
}

impl Table {
    /// Builds the table of `items`, given as token-hash sequences (None: a null text), matched
    /// with n-grams of `n` tokens at `threshold`.
    pub fn build(items: &[Option<Vec<u64>>], n: usize, threshold: f64) -> Table {
        let mut usable = vec![Usable::Yes; items.len()];
        // Distinct n-grams per item, and one item per token sequence.
        let sets: Vec<Vec<u64>> = items
            .par_iter()
            .map(|tokens| match tokens {
                Some(t) if t.len() >= n => {
                    let mut set = Vec::with_capacity(t.len() + 1 - n);
                    ngrams(t, n, &mut set);
                    set.sort_unstable();
                    set.dedup();
                    set
                }
                _ => Vec::new(),
            })
            .collect();
        let mut first_of: ahash::AHashMap<u128, u32> = ahash::AHashMap::new();
        for (i, tokens) in items.iter().enumerate() {
            usable[i] = match tokens {
                None => Usable::Empty,
                Some(t) if t.is_empty() => Usable::Empty,
                Some(t) if t.len() < n => Usable::TooShort,
                Some(t) => {
                    let bytes: Vec<u8> = t.iter().flat_map(|h| h.to_le_bytes()).collect();
                    let key = xxhash_rust::xxh3::xxh3_128(&bytes);
                    match first_of.entry(key) {
                        std::collections::hash_map::Entry::Occupied(_) => Usable::RepeatedText,
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(i as u32);
                            Usable::Yes
                        }
                    }
                }
            };
        }
        let mut pairs: Vec<(u64, u32)> = sets
            .iter()
            .enumerate()
            .filter(|&(i, _)| usable[i] == Usable::Yes)
            .flat_map(|(i, set)| set.iter().map(move |&h| (h, i as u32)))
            .collect();
        drop(sets);
        pairs.par_sort_unstable();
        let mut sizes = vec![0u32; items.len()];
        let (mut hashes, mut owners) = (Vec::new(), Vec::new());
        for run in pairs.chunk_by(|a, b| a.0 == b.0) {
            if run.len() >= BOILERPLATE_ITEMS {
                continue;
            }
            for &(h, i) in run {
                hashes.push(h);
                owners.push(i);
                sizes[i as usize] += 1;
            }
        }
        drop(pairs);
        for (u, &s) in usable.iter_mut().zip(&sizes) {
            if *u == Usable::Yes && s == 0 {
                *u = Usable::BoilerplateOnly;
            }
        }
        let mut filter = Bloom::with_keys(hashes.len());
        for &h in &hashes {
            filter.insert(h);
        }
        Table {
            n,
            threshold,
            filter,
            hashes,
            items: owners,
            sizes,
            usable,
        }
    }

    /// The item of which a document with these token hashes holds the largest share of
    /// n-grams, if that share reaches the threshold. `buf` is scratch space, reused.
    pub fn find(&self, tokens: &[u64], buf: &mut Vec<u64>) -> Option<Hit> {
        let shares = self.shares(tokens, buf);
        let best = shares.into_iter().max_by(|a, b| {
            a.share
                .total_cmp(&b.share)
                .then_with(|| b.item.cmp(&a.item))
        })?;
        (f64::from(best.share) >= self.threshold - 1e-6).then_some(best)
    }

    /// Every item the document shares a kept n-gram with, and the share, in item order.
    pub fn shares(&self, tokens: &[u64], buf: &mut Vec<u64>) -> Vec<Hit> {
        if tokens.len() < self.n || self.hashes.is_empty() {
            return Vec::new();
        }
        buf.clear();
        ngrams(tokens, self.n, buf);
        let mut found: Vec<(u32, u64)> = Vec::new();
        for h in self.filter.may_contain(buf, |h| h) {
            let at = self.hashes.partition_point(|&x| x < h);
            let equal = self.hashes[at..].iter().take_while(|&&x| x == h).count();
            found.extend(self.items[at..at + equal].iter().map(|&i| (i, h)));
        }
        found.sort_unstable();
        found.dedup();
        found
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| Hit {
                item: run[0].0,
                share: run.len() as f32 / self.sizes[run[0].0 as usize].max(1) as f32,
            })
            .collect()
    }

    /// Whether item `i` can be matched, or why not.
    pub fn usable(&self, i: usize) -> Usable {
        self.usable[i]
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.usable.len()
    }

    /// True when there are no items.
    pub fn is_empty(&self) -> bool {
        self.usable.is_empty()
    }

    /// Bytes the table holds.
    pub fn bytes(&self) -> usize {
        self.filter.bytes() + 12 * self.hashes.len() + 5 * self.sizes.len()
    }

    /// The kept n-grams of item `i` found in a document (for showing where it matched): the
    /// token positions (start of each n-gram) in `tokens`.
    pub fn matched_positions(&self, item: u32, tokens: &[u64]) -> Vec<usize> {
        if tokens.len() < self.n {
            return Vec::new();
        }
        let mut buf = Vec::new();
        ngrams(tokens, self.n, &mut buf);
        buf.iter()
            .enumerate()
            .filter(|&(_, &h)| {
                let at = self.hashes.partition_point(|&x| x < h);
                self.hashes[at..]
                    .iter()
                    .zip(&self.items[at..])
                    .take_while(|(&x, _)| x == h)
                    .any(|(_, &i)| i == item)
            })
            .map(|(p, _)| p)
            .collect()
    }

    /// Tokens per n-gram.
    pub fn n(&self) -> usize {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tokenizer;
    use crate::text::shingle::{token_hashes_of, Scratch};
    use proptest::prelude::*;

    fn tokens(text: &str) -> Vec<u64> {
        token_hashes_of(text, Tokenizer::Chars, &mut Scratch::default())
    }

    const BOILER: &str = "Example 1: Input: nums = [2,7,11,15], target = 9 Output: [0,1] Constraints: 1 <= nums.length <= 10^4";

    fn items() -> Vec<Option<Vec<u64>>> {
        let texts = [
            format!("{BOILER} Given an array of integers return the indices of the two numbers that add up to the target value"),
            format!("{BOILER} Find the longest substring of a string without repeating characters and report its length please"),
            format!("{BOILER} Merge two sorted linked lists into one sorted list by splicing together the nodes of both lists"),
            "too short".to_string(),
        ];
        let mut v: Vec<Option<Vec<u64>>> = texts.iter().map(|t| Some(tokens(t))).collect();
        v.push(None);
        v.push(Some(tokens(&texts[1])));
        v
    }

    #[test]
    fn boilerplate_short_empty_and_repeated_items() {
        let t = Table::build(&items(), 8, 0.3);
        assert_eq!(t.usable(0), Usable::Yes);
        assert_eq!(t.usable(3), Usable::TooShort);
        assert_eq!(t.usable(4), Usable::Empty);
        assert_eq!(t.usable(5), Usable::RepeatedText);
        // The shared boilerplate is in 3 items: left out; each item keeps its own n-grams and
        // the 7 that straddle the boilerplate's end.
        let own = tokens("Given an array of integers return the indices of the two numbers that add up to the target value").len() + 1 - 8;
        assert_eq!(t.sizes[0] as usize, own + 7);
        let only = [
            Some(tokens(&format!("{BOILER} a"))),
            Some(tokens(&format!("{BOILER} b"))),
            Some(tokens(&format!("{BOILER} c"))),
        ];
        let t = Table::build(&only, 8, 0.3);
        assert!(t.usable(0) == Usable::BoilerplateOnly || t.sizes[0] <= 1);
    }

    #[test]
    fn finds_the_item_whole_inside_and_partly_but_not_its_boilerplate() {
        let t = Table::build(&items(), 8, 0.3);
        let mut buf = Vec::new();
        let item = "Given an array of integers return the indices of the two numbers that add up to the target value";
        let hit = t
            .find(&tokens(&format!("{BOILER} {item}")), &mut buf)
            .unwrap();
        assert_eq!((hit.item, hit.share), (0, 1.0));
        let page = format!(
            "Welcome to my blog about cooking. Today: {item}. Leave a comment below, thanks."
        );
        assert_eq!(t.find(&tokens(&page), &mut buf).unwrap().item, 0);
        // Its first 80%.
        let words: Vec<&str> = item.split(' ').collect();
        let part = words[..words.len() * 8 / 10].join(" ");
        let hit = t.find(&tokens(&part), &mut buf).unwrap();
        assert!(hit.share > 0.3 && hit.share < 0.8, "{hit:?}");
        // Boilerplate only: nothing.
        assert_eq!(
            t.find(
                &tokens(&format!("{BOILER} something else entirely here")),
                &mut buf
            ),
            None
        );
        assert_eq!(t.find(&tokens("a b c"), &mut buf), None);
        // The page holds the item without its boilerplate: its own n-grams, not the straddling.
        let positions = t.matched_positions(0, &tokens(&page));
        assert_eq!(positions.len(), t.sizes[0] as usize - 7);
    }

    proptest! {
        /// A document made of an item's own text always finds that item with its full share, and
        /// shares never exceed 1.
        #[test]
        fn an_item_finds_itself(words in proptest::collection::vec("[a-z]{1,6}", 8..40), pick in 0usize..3) {
            let mut texts: Vec<Option<Vec<u64>>> = items();
            let doc = words.join(" ");
            texts[pick] = Some(tokens(&doc));
            let t = Table::build(&texts, 8, 0.3);
            let mut buf = Vec::new();
            for h in t.shares(&tokens(&doc), &mut buf) {
                prop_assert!(h.share <= 1.0);
            }
            if t.usable(pick) == Usable::Yes && t.sizes[pick] > 0 {
                let hit = t.find(&tokens(&doc), &mut buf);
                prop_assert!(hit.is_some_and(|h| h.share == 1.0));
            }
        }
    }
}
