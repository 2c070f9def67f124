//! The table's build input: items tokenised in runs of [`CHUNK`] ([`ChunkBuilder`] ->
//! [`ItemChunk`]), their n-grams grouped by a two-pass radix partition ([`group`]) and each
//! bucket's boilerplate left out ([`keep_items_grams`]).

use rayon::prelude::*;

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

/// An entry of the table: an n-gram's key and its item.
pub(super) fn entry(k: u32, item: u32) -> u64 {
    (u64::from(k) << 32) | u64::from(item)
}

impl Usable {
    pub(super) fn from_u8(b: u8) -> Option<Usable> {
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

/// Items as the table's build takes them: a run of up to [`CHUNK`] consecutive items of the
/// reference, tokenised together ([`ChunkBuilder`]). Their n-grams are held in one buffer,
/// already grouped by the top 8 bits of their hash (the grouping's first pass, done while the
/// run's n-grams are in cache, so the build holds no per-item lists and no second copy).
pub(crate) struct ItemChunk {
    pub(super) usable: Vec<Usable>,
    /// Hash of each item's token sequence (items of one sequence are one item).
    pub(super) keys: Vec<u128>,
    /// An n-gram's 48 kept bits (above the low 16) << 12, or'ed with its item's place
    /// in the run; `ways[w]..ways[w + 1]` hold the n-grams of way w (the top 8 bits).
    pub(super) grams: Vec<u64>,
    pub(super) ways: Vec<u32>,
}

impl ItemChunk {
    /// Leaves out the n-grams of items no longer usable (repeats of an earlier item's text).
    pub(super) fn drop_unusable(&mut self) {
        let mut kept = 0;
        for w in 0..WAYS {
            let (from, to) = (self.ways[w] as usize, self.ways[w + 1] as usize);
            self.ways[w] = kept as u32;
            for i in from..to {
                let x = self.grams[i];
                if self.usable[(x & (CHUNK as u64 - 1)) as usize] == Usable::Yes {
                    self.grams[kept] = x;
                    kept += 1;
                }
            }
        }
        self.ways[WAYS] = kept as u32;
        self.grams.truncate(kept);
    }
}

/// Items per [`ItemChunk`]: an item's place in its run takes the 12 bits beside an n-gram's 48.
pub(crate) const CHUNK: usize = 4096;

const _: () = assert!(CHUNK <= 1 << 12);

/// Ways of the grouping's passes: the top 8 bits of an n-gram's hash, then the next 8.
pub(super) const WAYS: usize = 256;

/// The way of a packed n-gram of [`ItemChunk::grams`] (its hash's top 8 bits).
pub(super) fn way_of(x: u64) -> usize {
    (x >> 52) as usize & (WAYS - 1)
}

/// Makes an [`ItemChunk`] from its items in order; reused from run to run.
#[derive(Default)]
pub(crate) struct ChunkBuilder {
    usable: Vec<Usable>,
    keys: Vec<u128>,
    /// Packed n-grams in item order, and each way's count.
    grams: Vec<u64>,
    counts: Vec<u32>,
    scratch: Vec<u64>,
}

impl ChunkBuilder {
    /// Adds an item from its token hashes (None: a null text), matched with n-grams of `n`
    /// tokens.
    pub(crate) fn push(&mut self, tokens: Option<&[u64]>, n: usize) {
        match tokens {
            None | Some([]) => self.push_grams(Usable::Empty, 0, &[]),
            Some(t) if t.len() < n => self.push_grams(Usable::TooShort, 0, &[]),
            Some(t) => {
                let mut grams = std::mem::take(&mut self.scratch);
                grams.clear();
                ngrams(t, n, &mut grams);
                // The exact-text hash of dedup: one token sequence, one key.
                self.push_grams(Usable::Yes, exact_hash(t, 1, &mut Vec::new()), &grams);
                self.scratch = grams;
            }
        }
    }

    /// Adds an item from its n-gram hashes in text order (repeats are removed when the table
    /// is built).
    pub(super) fn push_grams(&mut self, usable: Usable, key: u128, grams: &[u64]) {
        assert!(self.usable.len() < CHUNK, "a chunk holds {CHUNK} items");
        let place = self.usable.len() as u64;
        self.usable.push(usable);
        self.keys.push(key);
        self.counts.resize(WAYS, 0);
        for &h in grams {
            let x = ((h >> 16) << 12) | place;
            self.counts[way_of(x)] += 1;
            self.grams.push(x);
        }
    }

    /// The chunk of the items pushed since the last call (their n-grams grouped by way).
    pub(crate) fn finish(&mut self) -> ItemChunk {
        self.counts.resize(WAYS, 0);
        let mut ways = Vec::with_capacity(WAYS + 1);
        let mut at = 0u32;
        for c in &mut self.counts {
            ways.push(at);
            (at, *c) = (at + *c, at);
        }
        ways.push(at);
        let mut grams = vec![0u64; self.grams.len()];
        for &x in &self.grams {
            let next = &mut self.counts[way_of(x)];
            grams[*next as usize] = x;
            *next += 1;
        }
        self.grams.clear();
        self.counts.clear();
        ItemChunk {
            usable: std::mem::take(&mut self.usable),
            keys: std::mem::take(&mut self.keys),
            grams,
            ways,
        }
    }
}

/// Every entry of the chunks' items, grouped by bucket (unsorted within one): `dir` as in
/// [`super::Table`]. The chunks hold their n-grams grouped by the top 8 bits of the hash (the first
/// pass of a radix partition); here each way is parted by the next 8 bits, in parallel, into
/// its own range. Two passes of 256 ways keep the streams written in cache, where one pass of
/// 65,536 ways misses on nearly every write. The order within a bucket is left to its sort,
/// so the result is the same for any thread count.
pub(super) struct Pairs {
    pub(super) dir: Vec<u32>,
    pub(super) pairs: Vec<u64>,
}

pub(super) fn group(chunks: &[ItemChunk]) -> Pairs {
    let mut firsts = Vec::with_capacity(chunks.len());
    let mut items = 0u32;
    for c in chunks {
        firsts.push(items);
        items += c.usable.len() as u32;
    }
    let size = |w: usize| -> usize {
        (chunks.iter())
            .map(|c| (c.ways[w + 1] - c.ways[w]) as usize)
            .sum()
    };
    let sizes: Vec<usize> = (0..WAYS).map(size).collect();
    let mut pairs = vec![0u64; sizes.iter().sum()];
    let mut outs = Vec::with_capacity(WAYS);
    let mut rest = pairs.as_mut_slice();
    for &len in &sizes {
        let (this, next) = rest.split_at_mut(len);
        outs.push(this);
        rest = next;
    }
    let mut start = 0;
    let starts: Vec<u32> = (sizes.iter())
        .map(|&len| {
            start += len;
            (start - len) as u32
        })
        .collect();
    let low = |x: u64| (x >> 44) as usize & (WAYS - 1);
    let dirs: Vec<[u32; WAYS]> = outs
        .into_par_iter()
        .enumerate()
        .map(|(w, out)| {
            let parts = || {
                chunks.iter().zip(&firsts).map(move |(c, &first)| {
                    (&c.grams[c.ways[w] as usize..c.ways[w + 1] as usize], first)
                })
            };
            let mut next = [0u32; WAYS];
            for (part, _) in parts() {
                for &x in part {
                    next[low(x)] += 1;
                }
            }
            let mut first = [0u32; WAYS];
            let mut at = 0u32;
            for (f, n) in first.iter_mut().zip(next.iter_mut()) {
                (*f, at) = (at, at + *n);
                *n = *f;
            }
            for (part, first) in parts() {
                for &x in part {
                    let l = low(x);
                    let item = first + (x & (CHUNK as u64 - 1)) as u32;
                    out[next[l] as usize] = entry((x >> 12) as u32, item);
                    next[l] += 1;
                }
            }
            first.map(|f| f + starts[w])
        })
        .collect();
    let mut dir: Vec<u32> = dirs.into_iter().flatten().collect();
    dir.push(pairs.len() as u32);
    Pairs { dir, pairs }
}

/// Sorts a bucket's entries and keeps, at its start, each n-gram of fewer than
/// [`BOILERPLATE_ITEMS`] distinct items once per item; returns how many it kept.
pub(super) fn keep_items_grams(run: &mut [u64]) -> usize {
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
