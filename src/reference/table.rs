//! The n-gram table of a benchmark reference, and how a document is matched against it.
//!
//! An item is the set of hashes of its token n-grams (the tokens of dedup: [`crate::text::shingle::token_hashes`], so
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
//! Memory: 8 bytes per kept n-gram (48 bits of its hash as a bucket and a 32-bit key, and its
//! item) plus a Bloom filter of ~1.25 bytes per n-gram in front of them, so a document's n-grams
//! cost one cache line each and only the ~1% that pass the filter search a bucket (~80 keys).

use rayon::prelude::*;

use crate::index::filter::Bloom;
use crate::text::shingle::{exact_hash, ngrams};

/// An n-gram in this many distinct items or more is boilerplate. Items with one token sequence
/// are one item (so a test item two benchmarks both carry keeps its n-grams); two editions of an
/// item keep the n-grams around each difference. Three let 2% of the planted held-out items'
/// hosts through (n-grams of two items' boilerplate), two none (docs/PERFORMANCE.md).
pub(crate) const BOILERPLATE_ITEMS: usize = 2;

/// Why an item cannot be matched (each counted in the summary), or that it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Usable {
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
pub(crate) struct Table {
    n: usize,
    threshold: f64,
    filter: Bloom,
    /// Kept n-grams by bucket ([`split`]): `dir[b]..dir[b + 1]` are bucket b's entries, their
    /// keys ascending (an n-gram of two items appears twice), so a lookup searches ~80 keys.
    dir: Vec<u32>,
    keys: Vec<u32>,
    /// The item of each entry.
    items: Vec<u32>,
    /// Each item's count of kept distinct n-grams (0: not usable).
    sizes: Vec<u32>,
    usable: Vec<Usable>,
}

/// The item a document holds the largest share of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hit {
    pub item: u32,
    /// The share of the item's kept n-grams found in the document, in (0, 1].
    pub share: f32,
}

/// What the table needs of one item: [`Item::of`] its token hashes.
pub(crate) struct Item {
    usable: Usable,
    /// Hash of its token sequence (items of one sequence are one item).
    key: u128,
    /// Its n-gram hashes, in text order (repeats are removed when the table is built).
    grams: Vec<u64>,
}

impl Item {
    /// An item from its token hashes (None: a null text), matched with n-grams of `n` tokens.
    pub(crate) fn of(tokens: Option<&[u64]>, n: usize) -> Item {
        let (usable, key, grams) = match tokens {
            None => (Usable::Empty, 0, Vec::new()),
            Some([]) => (Usable::Empty, 0, Vec::new()),
            Some(t) if t.len() < n => (Usable::TooShort, 0, Vec::new()),
            Some(t) => {
                let mut grams = Vec::with_capacity(t.len() + 1 - n);
                ngrams(t, n, &mut grams);
                // The exact-text hash of dedup: one token sequence, one key.
                (Usable::Yes, exact_hash(t, 1, &mut Vec::new()), grams)
            }
        };
        Item { usable, key, grams }
    }
}

/// Buckets of the table: the top 16 bits of an n-gram's hash.
const BUCKETS: usize = 1 << 16;

/// An n-gram hash as (bucket, key): its top 16 bits and the 32 below them, 48 bits in all (two
/// n-grams of a 10M-n-gram reference share them with probability ~2^-48 * 10^7).
fn split(h: u64) -> (usize, u32) {
    ((h >> 48) as usize, (h >> 16) as u32)
}

/// What [`split`] keeps of an n-gram's hash, in place: the low 16 bits cleared. The Bloom filter
/// holds these (its block comes from the high 32 bits, its pattern from bits 16..32).
const KEPT: u64 = !0xffff;

/// [`KEPT`] bits of the hash of (bucket, key).
fn hash_of(b: usize, k: u32) -> u64 {
    ((b as u64) << 48) | (u64::from(k) << 16)
}

/// Every (key, item) of the usable items, grouped by bucket (unsorted within one): `dir` as in
/// [`Table`]. Counted and scattered by chunks of items in parallel, each chunk into positions of
/// its own, so the grouping is the same for any thread count.
struct Pairs {
    dir: Vec<u32>,
    pairs: Vec<(u32, u32)>,
}

fn scatter(items: &[Item], usable: &[Usable]) -> Pairs {
    const CHUNK: usize = 4096;
    let grams = |i: usize| match usable[i] {
        Usable::Yes => items[i].grams.as_slice(),
        _ => &[],
    };
    let chunks: Vec<std::ops::Range<usize>> = (0..items.len().div_ceil(CHUNK))
        .map(|c| c * CHUNK..((c + 1) * CHUNK).min(items.len()))
        .collect();
    let counts: Vec<Vec<u32>> = chunks
        .par_iter()
        .map(|r| {
            let mut c = vec![0u32; BUCKETS];
            for i in r.clone() {
                for &h in grams(i) {
                    c[split(h).0] += 1;
                }
            }
            c
        })
        .collect();
    // Each chunk's first position in each bucket.
    let mut dir = vec![0u32; BUCKETS + 1];
    let mut starts = vec![vec![0u32; BUCKETS]; chunks.len()];
    let mut at = 0u32;
    for b in 0..BUCKETS {
        dir[b] = at;
        for (c, counts) in counts.iter().enumerate() {
            starts[c][b] = at;
            at += counts[b];
        }
    }
    dir[BUCKETS] = at;
    let mut pairs = vec![(0u32, 0u32); at as usize];
    let out = SharedSlice(pairs.as_mut_ptr());
    chunks.par_iter().zip(starts).for_each(|(r, mut next)| {
        let out = &out;
        for i in r.clone() {
            for &h in grams(i) {
                let (b, k) = split(h);
                // SAFETY: chunk c writes only positions starts[c][b] .. starts[c][b] +
                // counts[c][b] of each bucket b, which no other chunk is given, and all of them
                // lie within `pairs` (the counts sum to its length); `pairs` outlives the loop.
                unsafe { out.0.add(next[b] as usize).write((k, i as u32)) };
                next[b] += 1;
            }
        }
    });
    Pairs { dir, pairs }
}

/// A pointer the scatter's chunks write disjoint positions through.
struct SharedSlice(*mut (u32, u32));
// SAFETY: used only by `scatter`, whose chunks write disjoint positions.
unsafe impl Sync for SharedSlice {}

impl Table {
    /// Builds the table of `items` (token-hash sequences, None for a null text), matched with
    /// n-grams of `n` tokens at `threshold`.
    #[cfg(test)]
    pub(crate) fn build(items: &[Option<Vec<u64>>], n: usize, threshold: f64) -> Table {
        let items = items
            .par_iter()
            .map(|t| Item::of(t.as_deref(), n))
            .collect();
        Table::from_items(items, n, threshold)
    }

    /// Builds the table of `items` in reference order.
    pub(crate) fn from_items(items: Vec<Item>, n: usize, threshold: f64) -> Table {
        let mut usable: Vec<Usable> = items.iter().map(|i| i.usable).collect();
        let mut first_of: ahash::AHashSet<u128> = ahash::AHashSet::new();
        for (u, item) in usable.iter_mut().zip(&items) {
            if *u == Usable::Yes && !first_of.insert(item.key) {
                *u = Usable::RepeatedText;
            }
        }
        let Pairs { dir, mut pairs } = scatter(&items, &usable);
        drop(items);
        // Per bucket, in parallel: sorted in place, an item's repeats counted once, and the
        // n-grams of BOILERPLATE_ITEMS or more items (the benchmark's boilerplate) left out.
        let mut buckets: Vec<&mut [(u32, u32)]> = Vec::with_capacity(BUCKETS);
        let mut rest = pairs.as_mut_slice();
        for b in 0..BUCKETS {
            let (this, next) = rest.split_at_mut((dir[b + 1] - dir[b]) as usize);
            buckets.push(this);
            rest = next;
        }
        let kept: Vec<Vec<(u32, u32)>> = buckets
            .into_par_iter()
            .with_min_len(256)
            .map(|run| {
                run.sort_unstable();
                let mut out = Vec::with_capacity(run.len());
                for same in run.chunk_by(|x, y| x.0 == y.0) {
                    // Sorted: an item's repeats are neighbours.
                    let first = |j: usize| j == 0 || same[j - 1].1 != same[j].1;
                    let distinct = (0..same.len()).filter(|&j| first(j)).count();
                    if distinct < BOILERPLATE_ITEMS {
                        out.extend((0..same.len()).filter(|&j| first(j)).map(|j| same[j]));
                    }
                }
                out
            })
            .collect();
        drop(pairs);
        let total: usize = kept.iter().map(Vec::len).sum();
        let mut dir = Vec::with_capacity(BUCKETS + 1);
        let (mut keys, mut owners) = (Vec::with_capacity(total), Vec::with_capacity(total));
        let mut filter = Bloom::with_keys(total);
        let mut sizes = vec![0u32; usable.len()];
        for (b, bucket) in kept.into_iter().enumerate() {
            dir.push(keys.len() as u32);
            for (k, i) in bucket {
                keys.push(k);
                owners.push(i);
                sizes[i as usize] += 1;
                filter.insert(hash_of(b, k));
            }
        }
        dir.push(keys.len() as u32);
        for (u, &s) in usable.iter_mut().zip(&sizes) {
            if *u == Usable::Yes && s == 0 {
                *u = Usable::BoilerplateOnly;
            }
        }
        Table {
            n,
            threshold,
            filter,
            keys,
            items: owners,
            dir,
            sizes,
            usable,
        }
    }

    /// The entries of n-gram `h`: a range of `keys` and `items`.
    fn entries(&self, h: u64) -> std::ops::Range<usize> {
        let (b, k) = split(h);
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        let at = lo + self.keys[lo..hi].partition_point(|&x| x < k);
        let end = at + self.keys[at..hi].iter().take_while(|&&x| x == k).count();
        at..end
    }

    /// The item of which a document with these token hashes holds the largest share of
    /// n-grams, if that share reaches the threshold. `buf` is scratch space, reused.
    pub(crate) fn find(&self, tokens: &[u64], buf: &mut Vec<u64>) -> Option<Hit> {
        let shares = self.shares(tokens, buf);
        let best = shares.into_iter().max_by(|a, b| {
            a.share
                .total_cmp(&b.share)
                .then_with(|| b.item.cmp(&a.item))
        })?;
        (f64::from(best.share) >= self.threshold - 1e-6).then_some(best)
    }

    /// Every item the document shares a kept n-gram with, and the share, in item order.
    pub(crate) fn shares(&self, tokens: &[u64], buf: &mut Vec<u64>) -> Vec<Hit> {
        if tokens.len() < self.n || self.keys.is_empty() {
            return Vec::new();
        }
        buf.clear();
        ngrams(tokens, self.n, buf);
        let mut found: Vec<(u32, u64)> = Vec::new();
        for h in buf.iter_mut() {
            *h &= KEPT;
        }
        for h in self.filter.may_contain(buf, |h| h) {
            found.extend(self.items[self.entries(h)].iter().map(|&i| (i, h)));
        }
        if found.is_empty() {
            return Vec::new();
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
    pub(crate) fn usable(&self, i: usize) -> Usable {
        self.usable[i]
    }

    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.usable.len()
    }

    /// Bytes the table holds.
    pub(crate) fn bytes(&self) -> usize {
        self.filter.bytes() + 8 * self.keys.len() + 4 * self.dir.len() + 5 * self.sizes.len()
    }

    /// Appends the table, serialised, to `out` (read back by [`Table::decode`]).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.n as u32).to_le_bytes());
        out.extend_from_slice(&self.threshold.to_le_bytes());
        self.filter.write(out);
        for v in [&self.dir, &self.keys, &self.items, &self.sizes] {
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            for x in v.iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out.extend(self.usable.iter().map(|&u| u as u8));
    }

    /// A table from the start of `bytes` as [`Table::encode`] wrote it (None when it is not
    /// one: too short, or values out of range).
    pub(crate) fn decode(bytes: &[u8]) -> Option<Table> {
        let n = crate::io::u32_at(bytes.get(..4)?, 0) as usize;
        let threshold = f64::from_le_bytes(bytes.get(4..12)?.try_into().ok()?);
        let (filter, used) = Bloom::read(bytes.get(12..)?)?;
        let mut at = 12 + used;
        let mut arrays: Vec<Vec<u32>> = Vec::with_capacity(4);
        for _ in 0..4 {
            let len = u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?) as usize;
            at += 8;
            let body = bytes.get(at..at.checked_add(len.checked_mul(4)?)?)?;
            let mut v = vec![0u32; len];
            crate::io::read_u32s_le(body, &mut v);
            arrays.push(v);
            at += 4 * len;
        }
        let sizes = arrays.pop()?;
        let items = arrays.pop()?;
        let keys = arrays.pop()?;
        let dir = arrays.pop()?;
        let usable: Vec<Usable> = (bytes.get(at..at + sizes.len())?.iter())
            .map(|&b| Usable::from_u8(b))
            .collect::<Option<_>>()?;
        let consistent = dir.len() == BUCKETS + 1
            && dir.last().is_some_and(|&d| d as usize == keys.len())
            && dir.windows(2).all(|w| w[0] <= w[1])
            && keys.len() == items.len()
            && items.iter().all(|&i| (i as usize) < sizes.len());
        consistent.then_some(Table {
            n,
            threshold,
            filter,
            dir,
            keys,
            items,
            sizes,
            usable,
        })
    }
}

impl Usable {
    fn from_u8(b: u8) -> Option<Usable> {
        [
            Usable::Yes,
            Usable::Empty,
            Usable::TooShort,
            Usable::RepeatedText,
            Usable::BoilerplateOnly,
        ]
        .into_iter()
        .find(|&u| u as u8 == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tokenizer;
    use crate::text::shingle::{token_hashes_of, Scratch};
    use proptest::prelude::*;

    fn tokens(text: &str) -> Vec<u64> {
        token_hashes_of(text, Tokenizer::Chars, &mut Scratch::default()).to_vec()
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
        // The shared boilerplate is in several items: left out; each item keeps its own n-grams and
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
        let shares = t.shares(&tokens(&page), &mut buf);
        assert_eq!(shares[0].share, (t.sizes[0] - 7) as f32 / t.sizes[0] as f32);
    }

    #[test]
    fn a_table_reads_back_as_written() {
        let t = Table::build(&items(), 8, 0.3);
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        let back = Table::decode(&bytes).unwrap();
        assert_eq!(
            (back.keys, back.items, back.dir, back.sizes),
            (
                t.keys.clone(),
                t.items.clone(),
                t.dir.clone(),
                t.sizes.clone()
            )
        );
        assert_eq!(back.usable, t.usable);
        assert!(Table::decode(&bytes[..bytes.len() - 3]).is_none());
        assert!(Table::decode(&[]).is_none());
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
