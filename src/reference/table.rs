//! The n-gram table of a benchmark reference, and how a document is matched against it.
//!
//! An item is the set of hashes of its token n-grams (the tokens of dedup: [`crate::text::shingle::token_hashes`], so
//! every script is handled as dedup handles it). N-grams found in [`super::BOILERPLATE_ITEMS`] or more
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
//! item, side by side) plus a Bloom filter of ~1.25 bytes per n-gram in front of them, so a
//! document's n-grams cost one cache line each, and the ~1% that pass the filter one more: a
//! bucket's keys are uniform, so the key's place in it is guessed, not searched.

use rayon::prelude::*;

use crate::index::filter::Bloom;
use crate::text::shingle::ngrams;

use super::chunks::{entry, group, keep_items_grams, ItemChunk, Pairs, Usable, WAYS};
#[cfg(test)]
use super::chunks::{ChunkBuilder, CHUNK};

/// The matching table of a reference.
pub(crate) struct Table {
    n: usize,
    threshold: f64,
    filter: Bloom,
    /// Kept n-grams by bucket ([`split`]): `dir[b]..dir[b + 1]` are bucket b's entries, each
    /// an n-gram's key (high 32 bits) and its item (low 32), ascending (an n-gram of two items
    /// appears twice).
    dir: Vec<u32>,
    entries: Vec<u64>,
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

/// Buffers [`Table::find`] reuses from document to document.
#[derive(Default)]
pub(crate) struct Probes {
    grams: Vec<u64>,
    passing: Vec<u64>,
    guesses: Vec<usize>,
    found: Vec<(u32, u64)>,
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

impl Table {
    /// Builds the table of `items` (token-hash sequences, None for a null text), matched with
    /// n-grams of `n` tokens at `threshold`.
    #[cfg(test)]
    pub(crate) fn build(items: &[Option<Vec<u64>>], n: usize, threshold: f64) -> Table {
        let chunks = items
            .chunks(CHUNK)
            .map(|run| {
                let mut b = ChunkBuilder::default();
                run.iter().for_each(|t| b.push(t.as_deref(), n));
                b.finish()
            })
            .collect();
        Table::from_chunks(chunks, n, threshold)
    }

    /// Builds the table of the items of `chunks`, in reference order.
    pub(crate) fn from_chunks(mut chunks: Vec<ItemChunk>, n: usize, threshold: f64) -> Table {
        let mut first_of: ahash::AHashSet<u128> = ahash::AHashSet::new();
        for c in &mut chunks {
            let mut repeated = false;
            for (u, key) in c.usable.iter_mut().zip(&c.keys) {
                if *u == Usable::Yes && !first_of.insert(*key) {
                    *u = Usable::RepeatedText;
                    repeated = true;
                }
            }
            if repeated {
                c.drop_unusable();
            }
        }
        let Pairs { dir, mut pairs } = group(&chunks);
        let mut usable: Vec<Usable> = (chunks.iter())
            .flat_map(|c| c.usable.iter().copied())
            .collect();
        drop(chunks);
        // Per bucket, in parallel: sorted, an item's repeats counted once, and the n-grams of
        // BOILERPLATE_ITEMS or more items (the benchmark's boilerplate) left out, in place at the
        // bucket's start; then the buckets closed up.
        let mut buckets: Vec<&mut [u64]> = Vec::with_capacity(BUCKETS);
        let mut rest = pairs.as_mut_slice();
        for b in 0..BUCKETS {
            let (this, next) = rest.split_at_mut((dir[b + 1] - dir[b]) as usize);
            buckets.push(this);
            rest = next;
        }
        let kept: Vec<usize> = buckets
            .into_par_iter()
            .with_min_len(256)
            .map(keep_items_grams)
            .collect();
        // The kept entries closed up into a new list, a way (256 buckets) per task.
        let mut new_dir = Vec::with_capacity(BUCKETS + 1);
        let mut at = 0u32;
        for &k in &kept {
            new_dir.push(at);
            at += k as u32;
        }
        new_dir.push(at);
        let mut entries = vec![0u64; at as usize];
        let mut outs = Vec::with_capacity(WAYS);
        let mut rest = entries.as_mut_slice();
        for w in 0..WAYS {
            let len = new_dir[(w + 1) * WAYS] - new_dir[w * WAYS];
            let (this, next) = rest.split_at_mut(len as usize);
            outs.push(this);
            rest = next;
        }
        outs.into_par_iter().enumerate().for_each(|(w, out)| {
            let buckets = w * WAYS..(w + 1) * WAYS;
            let first = new_dir[buckets.start] as usize;
            for b in buckets {
                let (from, to) = (dir[b] as usize, new_dir[b] as usize - first);
                out[to..to + kept[b]].copy_from_slice(&pairs[from..from + kept[b]]);
            }
        });
        drop(pairs);
        let dir = new_dir;
        let mut filter = Bloom::with_keys(entries.len());
        // The filter's keys are the entries' hashes: ascending, by bucket then key.
        let (entries_at, dir_at) = (entries.as_slice(), dir.as_slice());
        let index = |h: u64| {
            let (b, k) = split(h);
            let bucket = &entries_at[dir_at[b] as usize..dir_at[b + 1] as usize];
            dir_at[b] as usize + bucket.partition_point(|&e| ((e >> 32) as u32) < k)
        };
        // Each item's count of entries is taken beside the filter's parallel fill.
        let (sizes, ()) = rayon::join(
            || {
                let mut sizes = vec![0u32; usable.len()];
                for &e in entries_at {
                    sizes[e as u32 as usize] += 1;
                }
                sizes
            },
            || {
                filter.insert_ranges(|lo, hi| {
                    let (from, to) = (index(lo), hi.map_or(entries_at.len(), index));
                    (split(lo).0..BUCKETS)
                        .take_while(move |&b| (dir_at[b] as usize) < to)
                        .flat_map(move |b| {
                            let range =
                                (dir_at[b] as usize).max(from)..(dir_at[b + 1] as usize).min(to);
                            entries_at[range]
                                .iter()
                                .map(move |&e| hash_of(b, (e >> 32) as u32))
                        })
                })
            },
        );
        for (u, &s) in usable.iter_mut().zip(&sizes) {
            if *u == Usable::Yes && s == 0 {
                *u = Usable::BoilerplateOnly;
            }
        }
        Table {
            n,
            threshold,
            filter,
            entries,
            dir,
            sizes,
            usable,
        }
    }

    /// Where the entries of n-gram `h` are looked for first: a bucket's keys are uniform over
    /// u32, so key k sits near k / 2^32 of the way through it (a binary search costs a miss per
    /// step). An n-gram of an empty bucket gives the bucket's end, possibly `entries.len()`:
    /// clamped, a place to read.
    fn guess(&self, h: u64) -> usize {
        let (b, k) = split(h);
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        let at = lo + ((u64::from(k) * (hi - lo) as u64) >> 32) as usize;
        at.min(self.entries.len().saturating_sub(1))
    }

    /// The entries of n-gram `h` (a range of `entries`).
    #[cfg(test)]
    fn entries_of(&self, h: u64) -> std::ops::Range<usize> {
        self.entries_from(h, self.guess(h))
    }

    /// The entries of n-gram `h`, walking from `at` ([`Table::guess`]), mostly within the
    /// cache line it starts in.
    fn entries_from(&self, h: u64, at: usize) -> std::ops::Range<usize> {
        let (b, k) = split(h);
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        let key = |i: usize| (self.entries[i] >> 32) as u32;
        let mut at = at.clamp(lo, hi);
        while at > lo && key(at - 1) >= k {
            at -= 1;
        }
        while at < hi && key(at) < k {
            at += 1;
        }
        let mut end = at;
        while end < hi && key(end) == k {
            end += 1;
        }
        at..end
    }

    /// The item of which a document with these token hashes holds the largest share of
    /// n-grams, if that share reaches the threshold. `scratch` is reused from call to call.
    pub(crate) fn find(&self, tokens: &[u64], scratch: &mut Probes) -> Option<Hit> {
        let shares = self.shares(tokens, scratch);
        let best = shares.into_iter().max_by(|a, b| {
            a.share
                .total_cmp(&b.share)
                .then_with(|| b.item.cmp(&a.item))
        })?;
        (f64::from(best.share) >= self.threshold - 1e-6).then_some(best)
    }

    /// Every item the document shares a kept n-gram with, and the share, in item order.
    pub(crate) fn shares(&self, tokens: &[u64], scratch: &mut Probes) -> Vec<Hit> {
        if tokens.len() < self.n || self.entries.is_empty() {
            return Vec::new();
        }
        let Probes {
            grams,
            passing,
            guesses,
            found,
        } = scratch;
        grams.clear();
        ngrams(tokens, self.n, grams);
        // The kept bits only: the filter and the table see nothing else of a hash.
        self.filter.may_contain_into(grams, |h| h & KEPT, passing);
        // Each passing n-gram's entries are a cache miss in a large table: the places of all
        // of them are read before any is searched, so the misses overlap instead of queueing.
        guesses.clear();
        guesses.extend(passing.iter().map(|&h| self.guess(h)));
        let touched = guesses.iter().fold(0, |x, &g| x ^ self.entries[g]);
        std::hint::black_box(touched);
        found.clear();
        for (&h, &g) in passing.iter().zip(guesses.iter()) {
            let entries = &self.entries[self.entries_from(h, g)];
            found.extend(entries.iter().map(|&e| (e as u32, h & KEPT)));
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
        self.filter.bytes() + 8 * self.entries.len() + 4 * self.dir.len() + 5 * self.sizes.len()
    }

    /// Appends the table, serialised, to `out` (read back by [`Table::decode`]).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.n as u32).to_le_bytes());
        out.extend_from_slice(&self.threshold.to_le_bytes());
        self.filter.write(out);
        let keys: Vec<u32> = self.entries.iter().map(|&e| (e >> 32) as u32).collect();
        let items: Vec<u32> = self.entries.iter().map(|&e| e as u32).collect();
        for v in [&self.dir, &keys, &items, &self.sizes] {
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
        consistent.then(|| Table {
            n,
            threshold,
            filter,
            dir,
            entries: keys
                .iter()
                .zip(&items)
                .map(|(&k, &i)| entry(k, i))
                .collect(),
            sizes,
            usable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tokenizer;
    use crate::reference::BOILERPLATE_ITEMS;
    use crate::text::shingle::{token_hashes_of, Scratch};
    use proptest::prelude::*;

    fn tokens(text: &str) -> Vec<u64> {
        token_hashes_of(text, Tokenizer::Chars, &mut Scratch::default()).to_vec()
    }

    impl Table {
        /// [`Table::find`] of a document's tokens.
        fn find_in(&self, tokens: &[u64]) -> Option<Hit> {
            self.find(tokens, &mut Probes::default())
        }

        /// [`Table::shares`] likewise.
        fn shares_in(&self, tokens: &[u64]) -> Vec<Hit> {
            self.shares(tokens, &mut Probes::default())
        }
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
        let item = "Given an array of integers return the indices of the two numbers that add up to the target value";
        let hit = t.find_in(&tokens(&format!("{BOILER} {item}"))).unwrap();
        assert_eq!((hit.item, hit.share), (0, 1.0));
        let page = format!(
            "Welcome to my blog about cooking. Today: {item}. Leave a comment below, thanks."
        );
        assert_eq!(t.find_in(&tokens(&page)).unwrap().item, 0);
        // Its first 80%.
        let words: Vec<&str> = item.split(' ').collect();
        let part = words[..words.len() * 8 / 10].join(" ");
        let hit = t.find_in(&tokens(&part)).unwrap();
        assert!(hit.share > 0.3 && hit.share < 0.8, "{hit:?}");
        // Boilerplate only: nothing.
        assert_eq!(
            t.find_in(&tokens(&format!("{BOILER} something else entirely here"))),
            None
        );
        assert_eq!(t.find_in(&tokens("a b c")), None);
        // The page holds the item without its boilerplate: its own n-grams, not the straddling.
        let shares = t.shares_in(&tokens(&page));
        assert_eq!(shares[0].share, (t.sizes[0] - 7) as f32 / t.sizes[0] as f32);
    }

    #[test]
    fn a_table_reads_back_as_written() {
        let t = Table::build(&items(), 8, 0.3);
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        let back = Table::decode(&bytes).unwrap();
        assert_eq!(
            (back.entries, back.dir, back.sizes),
            (t.entries.clone(), t.dir.clone(), t.sizes.clone())
        );
        assert_eq!(back.usable, t.usable);
        assert!(Table::decode(&bytes[..bytes.len() - 3]).is_none());
        assert!(Table::decode(&[]).is_none());
    }

    /// The table of items given as n-gram hashes (each its own text), cut in chunks of
    /// `per_chunk` items.
    fn table_of(items: impl Iterator<Item = Vec<u64>>, per_chunk: usize) -> Table {
        let items: Vec<Vec<u64>> = items.collect();
        let chunks = (items.chunks(per_chunk).enumerate())
            .map(|(c, run)| {
                let mut b = ChunkBuilder::default();
                for (i, grams) in run.iter().enumerate() {
                    b.push_grams(Usable::Yes, (c * per_chunk + i) as u128, grams);
                }
                b.finish()
            })
            .collect();
        Table::from_chunks(chunks, 8, 0.3)
    }

    proptest! {
        /// The grouped build holds exactly the entries a plain sort of every (n-gram, item) gives:
        /// each n-gram of fewer than BOILERPLATE_ITEMS items once per item, by bucket, key and
        /// item; for any cut of the items in chunks. The filter passes every entry.
        #[test]
        fn the_build_is_a_plain_sort_of_the_items_grams(
            items in proptest::collection::vec(
                proptest::collection::vec((0u64..300, any::<u64>()), 0..40), 1..40),
            per_chunk in 1usize..8,
        ) {
            // Hashes from a few hundred values (so n-grams repeat within and across items),
            // spread over every way.
            let hash = |&(v, _): &(u64, u64)| crate::lsh::mix64(v) & KEPT;
            let items: Vec<Vec<u64>> = items.iter().map(|i| i.iter().map(hash).collect()).collect();
            let t = table_of(items.iter().cloned(), per_chunk);
            let mut of: std::collections::BTreeMap<u64, std::collections::BTreeSet<u32>> = Default::default();
            for (i, grams) in items.iter().enumerate() {
                for &h in grams {
                    of.entry(h).or_default().insert(i as u32);
                }
            }
            let mut want = Vec::new();
            for (h, its) in of.iter().filter(|(_, its)| its.len() < BOILERPLATE_ITEMS) {
                want.extend(its.iter().map(|&i| (split(*h), i)));
            }
            let got: Vec<((usize, u32), u32)> = (0..BUCKETS)
                .flat_map(|b| (t.dir[b]..t.dir[b + 1]).map(move |i| (b, i as usize)))
                .map(|(b, i)| ((b, (t.entries[i] >> 32) as u32), t.entries[i] as u32))
                .collect();
            prop_assert_eq!(got, want);
            for (h, _) in of.iter().filter(|(_, its)| its.len() < BOILERPLATE_ITEMS) {
                prop_assert!(t.filter.contains(*h));
            }
        }

        /// A document made of an item's own text always finds that item with its full share, and
        /// shares never exceed 1.
        #[test]
        fn an_item_finds_itself(words in proptest::collection::vec("[a-z]{1,6}", 8..40), pick in 0usize..3) {
            let mut texts: Vec<Option<Vec<u64>>> = items();
            let doc = words.join(" ");
            texts[pick] = Some(tokens(&doc));
            let t = Table::build(&texts, 8, 0.3);
            for h in t.shares_in(&tokens(&doc)) {
                prop_assert!(h.share <= 1.0);
            }
            if t.usable(pick) == Usable::Yes && t.sizes[pick] > 0 {
                let hit = t.find_in(&tokens(&doc));
                prop_assert!(hit.is_some_and(|h| h.share == 1.0));
            }
        }

        /// The guessed lookup finds exactly a brute-force scan's entries, in crowded buckets
        /// (every n-gram in 4 buckets), keys repeated across items and skewed keys alike.
        #[test]
        fn lookup_finds_what_a_scan_finds(
            grams in proptest::collection::vec((0u64..4, 0u32..2000, any::<u32>()), 1..600),
            probes in proptest::collection::vec((0u64..4, 0u32..2000, any::<u32>()), 1..50),
        ) {
            // Keys small (0..2000) or anywhere, so guesses land both far and near.
            let hash = |&(b, k, wide): &(u64, u32, u32)| hash_of(b as usize, if k % 2 == 0 { k } else { wide });
            let t = table_of(grams.chunks(7).map(|c| c.iter().map(hash).collect()), 3);
            for h in grams.iter().chain(&probes).map(hash) {
                let (b, k) = split(h);
                let want: Vec<usize> = (t.dir[b] as usize..t.dir[b + 1] as usize)
                    .filter(|&i| (t.entries[i] >> 32) as u32 == k)
                    .collect();
                prop_assert_eq!(t.entries_of(h).collect::<Vec<_>>(), want);
            }
        }
    }
}
