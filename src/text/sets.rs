//! Shingle sets compared exactly: the Jaccard of two sorted sets, the reusable table that
//! counts stored keys as sets ([`KeyTable`]), and the holding of documents' key sets a task keeps
//! between comparisons ([`ShingleSets`]).

/// Exact Jaccard similarity |A ∩ B| / |A ∪ B| of two sorted, deduplicated sets (1.0 for two empty
/// sets is never asked for: empty documents are not compared).
pub fn jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    if union == 0 {
        return 0.0;
    }
    inter as f64 / union as f64
}

/// Exact Jaccard of two documents' shingle keys as they are stored (any order, repeats allowed):
/// |A ∩ B| / |A ∪ B| of their distinct keys, with no sorting.
///
/// The keys of A go into an open-addressing table marked "A"; each key of B then either marks
/// its A entry "both" (one more common key), finds itself already counted, or goes in marked "B".
/// So `|A ∩ B|` = entries marked both and `|A ∪ B|` = |A| + entries marked B. One pass over
/// both documents' keys, against a sort of each (n log n) and a merge. [`KeyTable::jaccards`]
/// compares one A with several B's and loads A once.
///
/// The table has at least four times as many slots as keys (load <= 1/4: short probes; with the
/// key's low bits as its slot this is 1.35x faster than load <= 1/2 with a multiplied hash in
/// `kernels`, and eight times the keys is slower again), two beyond [`SPARSE_KEYS`] keys, and is
/// reused: nothing is cleared between comparisons.
///
/// Invariants (the stamp of a slot is a 30-bit number, times 4, plus its mark):
/// - Loading A takes a new stamp `s_a`; every slot with a smaller stamp is empty from then on.
/// - Each B takes a new stamp `s_b` > `s_a`. For it, a slot is A's when marked A or both with a
///   stamp >= `s_a` (both with `s_b`: already counted for this B), B's when marked B with `s_b`,
///   and empty otherwise: a slot marked B with an earlier B's stamp is empty again.
/// - That keeps every probe chain intact: A's keys went in before any B key, so no slot a B
///   claimed lies between an A key's home slot and the key; a B key's chain only crosses A's
///   slots and slots of its own B, which stay put while that B is counted.
#[derive(Debug, Default)]
pub struct KeyTable {
    /// Per slot: key in the low 32 bits, stamp (number x 4 + mark) in the high 32.
    slots: Vec<u64>,
    /// The last stamp number taken (slots with older numbers are stale).
    stamp: u32,
}

const MARK_A: u64 = 1;
const MARK_B: u64 = 2;
const MARK_BOTH: u64 = 3;
/// Keys of a comparison up to which the table gets four slots per key (a 2 MiB table).
const SPARSE_KEYS: usize = 1 << 16;
/// Stamp numbers have 30 bits; the table is cleared before they wrap.
const STAMPS: u32 = (1 << 30) - 1;

impl KeyTable {
    /// Exact Jaccard of the key multisets `a` and `b` (0 when both are empty).
    pub fn jaccard(&mut self, a: &[u32], b: &[u32]) -> f64 {
        let mut j = 0.0;
        self.jaccards(a, &[b], |_, x| j = x);
        j
    }

    /// Exact Jaccard of `a` with each of `others`, in order: `each(i, J(a, others[i]))`. A is
    /// loaded once for all of them, so a document compared with several others costs its keys
    /// once. Same values as [`KeyTable::jaccard`] of each pair.
    pub fn jaccards(&mut self, a: &[u32], others: &[&[u32]], mut each: impl FnMut(usize, f64)) {
        // Batches of B's small enough for the stamps.
        const BATCH: usize = 1 << 20;
        for (c, batch) in others.chunks(BATCH).enumerate() {
            self.jaccards_batch(a, batch, |n, j| each(c * BATCH + n, j));
        }
    }

    fn jaccards_batch(&mut self, a: &[u32], others: &[&[u32]], mut each: impl FnMut(usize, f64)) {
        let longest = others.iter().map(|b| b.len()).max().unwrap_or(0);
        let keys = a.len() + longest;
        // Four slots per key while the table is small enough to stay in cache, two beyond (a
        // table that size misses the cache either way, and its memory stays what it was).
        let per_key = if keys <= SPARSE_KEYS { 4 } else { 2 };
        let need = (per_key * keys).next_power_of_two().max(64);
        // One stamp for A and one per B; start from a clear table when they would wrap.
        if self.slots.len() < need || self.stamp as usize + 1 + others.len() > STAMPS as usize {
            self.slots = vec![0; need.max(self.slots.len())];
            self.stamp = 0;
        }
        let slots = &mut self.slots[..need];
        let mask = need - 1;
        // Keys are avalanche-mixed hash bits ([`shingle_key`]): their low bits are the slot.
        let home = |key: u32| key as usize & mask;
        self.stamp += 1;
        let sa = u64::from(self.stamp);
        let mut distinct_a = 0usize;
        for &key in a {
            let mut i = home(key);
            loop {
                let s = slots[i];
                if s >> 34 < sa {
                    slots[i] = (sa << 2 | MARK_A) << 32 | u64::from(key);
                    distinct_a += 1;
                    break;
                }
                if s as u32 == key {
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        for (n, b) in others.iter().enumerate() {
            self.stamp += 1;
            let sb = u64::from(self.stamp);
            let (mut only_b, mut common) = (0usize, 0usize);
            for &key in *b {
                let mut i = home(key);
                loop {
                    let s = slots[i];
                    let (number, mark) = (s >> 34, (s >> 32) & 3);
                    let of_a = mark != MARK_B && number >= sa;
                    if !of_a && number != sb {
                        // Empty: a key of B alone.
                        slots[i] = (sb << 2 | MARK_B) << 32 | u64::from(key);
                        only_b += 1;
                        break;
                    }
                    if s as u32 == key {
                        if of_a && !(mark == MARK_BOTH && number == sb) {
                            slots[i] = (sb << 2 | MARK_BOTH) << 32 | u64::from(key);
                            common += 1;
                        }
                        break;
                    }
                    i = (i + 1) & mask;
                }
            }
            let union = distinct_a + only_b;
            each(
                n,
                if union == 0 {
                    0.0
                } else {
                    common as f64 / union as f64
                },
            );
        }
    }
}

/// The shingle keys of a subset of documents, by document index: each document's 32-bit keys in
/// text order, repeats kept (as stored), which [`KeyTable`] compares as sets.
#[derive(Debug, Default)]
pub(crate) struct ShingleSets {
    docs: Vec<u64>,
    sets: Vec<Vec<u32>>,
}

impl ShingleSets {
    /// Keys `sets[i]` (any order, repeats allowed) of documents `docs[i]` (sorted, unique).
    pub(crate) fn new(docs: Vec<u64>, sets: Vec<Vec<u32>>) -> Self {
        debug_assert_eq!(docs.len(), sets.len());
        ShingleSets { docs, sets }
    }

    /// The set of `doc`, if it is held.
    pub(crate) fn get(&self, doc: u64) -> Option<&[u32]> {
        self.docs
            .binary_search(&doc)
            .ok()
            .map(|i| self.sets[i].as_slice())
    }

    /// Moves the held sets of `docs` (sorted, unique) out into a new holding; returns it and the
    /// documents of `docs` that were not held.
    pub(crate) fn take(&mut self, docs: &[u64]) -> (ShingleSets, Vec<u64>) {
        let mut taken = ShingleSets::default();
        let mut missing = Vec::new();
        let mut kept = ShingleSets::default();
        let mut held = std::mem::take(self).into_pairs().peekable();
        for &d in docs {
            while let Some((h, set)) = held.next_if(|(h, _)| *h < d) {
                kept.push(h, set);
            }
            match held.next_if(|(h, _)| *h == d) {
                Some((h, set)) => taken.push(h, set),
                None => missing.push(d),
            }
        }
        for (h, set) in held {
            kept.push(h, set);
        }
        *self = kept;
        (taken, missing)
    }

    /// Sorts and deduplicates every held set (what the retained index stores).
    pub(crate) fn sort_dedup(&mut self) {
        use rayon::prelude::*;
        self.sets.par_iter_mut().for_each(|s| {
            s.sort_unstable();
            s.dedup();
        });
    }

    /// The union of two holdings of disjoint documents.
    pub(crate) fn merge(self, other: ShingleSets) -> ShingleSets {
        let mut pairs: Vec<(u64, Vec<u32>)> = self.into_pairs().chain(other.into_pairs()).collect();
        pairs.sort_unstable_by_key(|(d, _)| *d);
        let mut out = ShingleSets::default();
        for (d, set) in pairs {
            out.push(d, set);
        }
        out
    }

    /// Keeps the sets of the lowest documents at or above `from`, as long as their keys total
    /// at most `budget`; drops the rest.
    pub(crate) fn keep_from(&mut self, from: u64, budget: usize) {
        let mut used = 0;
        let mut kept = ShingleSets::default();
        for (d, set) in std::mem::take(self)
            .into_pairs()
            .filter(|(d, _)| *d >= from)
        {
            used += set.len();
            if used > budget {
                break;
            }
            kept.push(d, set);
        }
        *self = kept;
    }

    fn push(&mut self, doc: u64, set: Vec<u32>) {
        debug_assert!(self.docs.last().is_none_or(|&l| l < doc));
        self.docs.push(doc);
        self.sets.push(set);
    }

    /// The held (document, set) pairs, by document.
    pub(crate) fn into_pairs(self) -> impl Iterator<Item = (u64, Vec<u32>)> {
        self.docs.into_iter().zip(self.sets)
    }

    #[cfg(test)]
    /// Number of documents held.
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::shingle::{chars_set as set, shingle_key};

    #[test]
    fn held_sets_move_merge_and_stay_within_budget() {
        let mut held = ShingleSets::new(vec![2, 5, 9], vec![vec![1], vec![2, 3], vec![4]]);
        let (taken, missing) = held.take(&[1, 5, 9, 12]);
        assert_eq!(missing, vec![1, 12]);
        assert_eq!(taken.get(5), Some(&[2, 3][..]));
        assert_eq!(taken.get(9), Some(&[4][..]));
        assert_eq!((held.len(), held.get(2)), (1, Some(&[1][..])));
        let fetched = ShingleSets::new(vec![1, 12], vec![vec![7], vec![8, 9]]);
        let mut all = taken.merge(fetched).merge(held);
        assert_eq!(all.docs, vec![1, 2, 5, 9, 12]);
        assert_eq!(all.get(12), Some(&[8, 9][..]));
        // From document 5 on, lowest first, at most 3 keys: 5 (2 keys) and 9 (1 key).
        all.keep_from(5, 3);
        assert_eq!(all.docs, vec![5, 9]);
        all.keep_from(0, 1);
        assert!(all.docs.is_empty());
    }

    #[test]
    fn jaccard_exact() {
        assert_eq!(jaccard(&[1u64, 2, 3, 4], &[3, 4, 5, 6]), 2.0 / 6.0);
        assert_eq!(jaccard(&[1u32, 2], &[1, 2]), 1.0);
        assert_eq!(jaccard(&[1u32], &[2]), 0.0);
        let a = set(
            "the quick brown fox jumps over the lazy dog again and again",
            3,
        );
        let b = set(
            "the quick brown fox jumps over the lazy cat again and again",
            3,
        );
        // 10 trigrams each, 3 differ on each side: 7 / 13.
        assert!((jaccard(&a, &b) - 7.0 / 13.0).abs() < 1e-12);
        // The 32-bit keys, unsorted and repeated, give the same value (no key collision here).
        let keys =
            |s: &[u64]| -> Vec<u32> { s.iter().rev().chain(s).map(|&h| shingle_key(h)).collect() };
        let mut table = KeyTable::default();
        assert_eq!(table.jaccard(&keys(&a), &keys(&b)), jaccard(&a, &b));
        assert_eq!(table.jaccard(&[], &[]), 0.0);
        assert_eq!(table.jaccard(&[5, 5], &[]), 0.0);
        assert_eq!(table.jaccard(&[0, 0, 9], &[9, 0]), 1.0);
        // Sets too large for four slots per key: two per key, the same values.
        let big: Vec<u32> = (0..70_000u32)
            .map(|i| i.wrapping_mul(0x9E37_79B1))
            .collect();
        let shifted: Vec<u32> = (35_000..105_000u32)
            .map(|i| i.wrapping_mul(0x9E37_79B1))
            .collect();
        assert!(big.len() + shifted.len() > SPARSE_KEYS);
        assert_eq!(table.jaccard(&big, &shifted), 35_000.0 / 105_000.0);
        assert_eq!(table.jaccard(&[1, 2, 3], &[3, 4]), 0.25);
        // Across the wrap of the stamps, entries of earlier pairs never count.
        table.stamp = STAMPS - 3;
        for _ in 0..4 {
            assert_eq!(table.jaccard(&[1, 2, 3], &[3, 4]), 0.25);
            assert_eq!(table.jaccard(&[4, 5], &[1, 5]), 1.0 / 3.0);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 300,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x7ab1e),
            failure_persistence: None,
            ..Default::default()
        })]
        /// The hash-table Jaccard of two key lists (repeats, any order, keys from a small range
        /// so that lists overlap and repeat, and sizes that make the table grow) equals the
        /// sorted-set merge, pair after pair on one reused table.
        #[test]
        fn table_jaccard_equals_sorted_merge(
            pairs in proptest::collection::vec(
                (proptest::collection::vec(0u32..600, 0..400), proptest::collection::vec(0u32..600, 0..900)),
                1..6,
            ),
        ) {
            let mut table = KeyTable::default();
            for (a, b) in pairs {
                let set = |v: &[u32]| {
                    let mut s = v.to_vec();
                    s.sort_unstable();
                    s.dedup();
                    s
                };
                proptest::prop_assert_eq!(table.jaccard(&a, &b), jaccard(&set(&a), &set(&b)));
            }
        }

        /// One A against several B's on one table gives each pair's Jaccard, in order, also
        /// when the B's repeat, share keys with each other or are empty.
        #[test]
        fn table_jaccards_equal_each_pair(
            a in proptest::collection::vec(0u32..300, 0..400),
            others in proptest::collection::vec(proptest::collection::vec(0u32..300, 0..500), 0..6),
            stamp in proptest::prop_oneof![proptest::strategy::Just(0u32), (STAMPS - 8)..STAMPS],
        ) {
            let mut table = KeyTable { stamp, ..KeyTable::default() };
            let bs: Vec<&[u32]> = others.iter().map(Vec::as_slice).collect();
            let mut got = Vec::new();
            table.jaccards(&a, &bs, |n, j| got.push((n, j)));
            let set = |v: &[u32]| {
                let mut s = v.to_vec();
                s.sort_unstable();
                s.dedup();
                s
            };
            let want: Vec<(usize, f64)> =
                others.iter().enumerate().map(|(n, b)| (n, jaccard(&set(&a), &set(b)))).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
