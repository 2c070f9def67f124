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
//! item, side by side) plus a Bloom filter of ~1.25 bytes per n-gram in front of them, so a
//! document's n-grams cost one cache line each, and the ~1% that pass the filter one more: a
//! bucket's keys are uniform, so the key's place in it is guessed, not searched.

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

/// An entry of the table: an n-gram's key and its item.
fn entry(k: u32, item: u32) -> u64 {
    (u64::from(k) << 32) | u64::from(item)
}

/// Every entry of the usable items, grouped by bucket (unsorted within one): `dir` as in
/// [`Table`]. A radix partition in two passes of 256 ways (the top 8 bits of the bucket, then
/// the low 8), so each pass writes 256 streams that stay in cache, where one pass of 65,536 ways
/// misses on nearly every write. The order within a bucket is left to its sort, so the result is
/// the same for any thread count.
struct Pairs {
    dir: Vec<u32>,
    pairs: Vec<u64>,
}

/// Ways of each pass of [`scatter`].
const WAYS: usize = 256;

fn scatter(items: &[Item], usable: &[Usable]) -> Pairs {
    const CHUNK: usize = 4096;
    // An item's place in its chunk takes the 12 bits pass 1 leaves beside the hash's 48.
    const _: () = assert!(CHUNK.is_power_of_two() && CHUNK <= 1 << 12);
    let grams = |i: usize| match usable[i] {
        Usable::Yes => items[i].grams.as_slice(),
        _ => &[],
    };
    // Pass 1: by the top 8 bits, each chunk of items into positions of its own; an element is
    // the n-gram's 48 kept bits and its item's place in its chunk (12 bits: pass 2 knows each
    // chunk's positions).
    let chunks: Vec<std::ops::Range<usize>> = (0..items.len().div_ceil(CHUNK))
        .map(|c| c * CHUNK..((c + 1) * CHUNK).min(items.len()))
        .collect();
    let way = |h: u64| (h >> 56) as usize;
    let counts: Vec<[u32; WAYS]> = chunks
        .par_iter()
        .map(|r| {
            let mut c = [0u32; WAYS];
            for h in r.clone().flat_map(grams) {
                c[way(*h)] += 1;
            }
            c
        })
        .collect();
    let mut starts = vec![[0u32; WAYS]; chunks.len()];
    let mut parts = vec![0usize; WAYS + 1];
    let mut at = 0u32;
    for w in 0..WAYS {
        parts[w] = at as usize;
        for (c, counts) in counts.iter().enumerate() {
            starts[c][w] = at;
            at += counts[w];
        }
    }
    parts[WAYS] = at as usize;
    let mut mid = vec![0u64; at as usize];
    let out = SharedSlice(mid.as_mut_ptr());
    chunks
        .par_iter()
        .zip(starts.clone())
        .for_each(|(r, mut next)| {
            let out = &out;
            for i in r.clone() {
                for &h in grams(i) {
                    let w = way(h);
                    // SAFETY: chunk c writes only positions starts[c][w] .. starts[c][w] +
                    // counts[c][w] of each way w, which no other chunk is given, and all of them lie
                    // within `mid` (the counts sum to its length); `mid` outlives the loop.
                    unsafe {
                        out.0
                            .add(next[w] as usize)
                            .write(((h >> 16) << 12) | (i - r.start) as u64)
                    };
                    next[w] += 1;
                }
            }
        });
    // Pass 2: each part of pass 1 by the low 8 bits of the bucket, into the same positions of
    // `pairs`, as entries.
    let mut pairs = vec![0u64; mid.len()];
    let mut rest = pairs.as_mut_slice();
    let mut outs = Vec::with_capacity(WAYS);
    for w in 0..WAYS {
        let (this, next) = rest.split_at_mut(parts[w + 1] - parts[w]);
        outs.push(this);
        rest = next;
    }
    let dirs: Vec<[u32; WAYS]> = outs
        .into_par_iter()
        .enumerate()
        .map(|(w, out)| {
            let part = &mid[parts[w]..parts[w + 1]];
            let low = |x: u64| (x >> 44) as usize & (WAYS - 1);
            let mut next = [0u32; WAYS];
            for &x in part {
                next[low(x)] += 1;
            }
            let mut first = [0u32; WAYS];
            let mut at = 0u32;
            for (f, n) in first.iter_mut().zip(next.iter_mut()) {
                (*f, at) = (at, at + *n);
                *n = *f;
            }
            // The part holds each chunk's elements in chunk order, from its start.
            for (c, (s, n)) in starts.iter().zip(&counts).enumerate() {
                let from = (s[w] as usize) - parts[w];
                for &x in &part[from..from + n[w] as usize] {
                    let l = low(x);
                    let item = (c * CHUNK) as u32 + (x & (CHUNK as u64 - 1)) as u32;
                    out[next[l] as usize] = entry((x >> 12) as u32, item);
                    next[l] += 1;
                }
            }
            first.map(|f| f + parts[w] as u32)
        })
        .collect();
    let mut dir: Vec<u32> = dirs.into_iter().flatten().collect();
    dir.push(pairs.len() as u32);
    Pairs { dir, pairs }
}

/// Sorts a bucket's entries and keeps, at its start, each n-gram of fewer than
/// [`BOILERPLATE_ITEMS`] distinct items once per item; returns how many it kept.
fn keep_items_grams(run: &mut [u64]) -> usize {
    run.sort_unstable();
    let mut kept = 0;
    let mut j = 0;
    while j < run.len() {
        let key = run[j] >> 32;
        let end = j + run[j..].iter().take_while(|&&e| e >> 32 == key).count();
        // Sorted: an item's repeats are neighbours.
        let distinct = 1 + (j + 1..end).filter(|&p| run[p - 1] != run[p]).count();
        if distinct < BOILERPLATE_ITEMS {
            let mut last = None;
            for p in j..end {
                if last != Some(run[p]) {
                    last = Some(run[p]);
                    run[kept] = run[p];
                    kept += 1;
                }
            }
        }
        j = end;
    }
    kept
}

/// A pointer the scatter's chunks write disjoint positions through.
struct SharedSlice(*mut u64);
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
        // 100k small vectors: freed on the pool, not on the thread that waits for the table.
        rayon::spawn(move || drop(items));
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
        let mut entries = pairs;
        let mut new_dir = Vec::with_capacity(BUCKETS + 1);
        let mut at = 0;
        for (b, &k) in kept.iter().enumerate() {
            new_dir.push(at as u32);
            entries.copy_within(dir[b] as usize..dir[b] as usize + k, at);
            at += k;
        }
        new_dir.push(at as u32);
        entries.truncate(at);
        entries.shrink_to_fit();
        let dir = new_dir;
        let mut sizes = vec![0u32; usable.len()];
        for &e in &entries {
            sizes[e as u32 as usize] += 1;
        }
        // The filter's keys, ascending (by bucket, then key) as `insert_sorted` needs.
        let hashes: Vec<u64> = (0..BUCKETS)
            .into_par_iter()
            .with_min_len(1024)
            .flat_map_iter(|b| {
                let e = &entries[dir[b] as usize..dir[b + 1] as usize];
                e.iter().map(move |&e| hash_of(b, (e >> 32) as u32))
            })
            .collect();
        let mut filter = Bloom::with_keys(entries.len());
        filter.insert_sorted(&hashes);
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

    /// The entries of n-gram `h` (a range of `entries`). A bucket's keys are uniform over u32,
    /// so key k sits near k / 2^32 of the way through it: the lookup starts there and walks,
    /// mostly within the cache line it starts in (a binary search costs a miss per step).
    fn entries_of(&self, h: u64) -> std::ops::Range<usize> {
        let (b, k) = split(h);
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        let key = |i: usize| (self.entries[i] >> 32) as u32;
        let mut at = lo + ((u64::from(k) * (hi - lo) as u64) >> 32) as usize;
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
        if tokens.len() < self.n || self.entries.is_empty() {
            return Vec::new();
        }
        buf.clear();
        ngrams(tokens, self.n, buf);
        for h in buf.iter_mut() {
            *h &= KEPT;
        }
        let mut found: Vec<(u32, u64)> = Vec::new();
        for h in self.filter.may_contain(buf, |h| h) {
            found.extend(
                self.entries[self.entries_of(h)]
                    .iter()
                    .map(|&e| (e as u32, h)),
            );
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

    impl Table {
        /// [`Table::find`] of a document's tokens.
        fn find_in(&self, tokens: &[u64]) -> Option<Hit> {
            self.find(tokens, &mut Vec::new())
        }

        /// [`Table::shares`] likewise.
        fn shares_in(&self, tokens: &[u64]) -> Vec<Hit> {
            self.shares(tokens, &mut Vec::new())
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

    proptest! {
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
            let items: Vec<Item> = grams.chunks(7).enumerate().map(|(i, c)| Item {
                usable: Usable::Yes,
                key: i as u128,
                grams: c.iter().map(hash).collect(),
            }).collect();
            let t = Table::from_items(items, 8, 0.3);
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
