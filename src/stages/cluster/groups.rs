//! Exact-copy groups without an array per document: which documents are later copies of an
//! earlier text (a bitmap with a running count per 64 documents) and, for those alone, the
//! first copy. A run with a copy rate `c` holds ~0.375 + 8c bytes per document (two bitmaps and a
//! count per 64) instead of 8.

use crate::plan::doc32;

/// Each document's group: its first exact copy in input order (itself when it has none).
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// Bit `d`: document `d` is a later copy.
    later: Vec<u64>,
    /// Later copies before each word of `later`.
    before: Vec<u64>,
    /// The first copy of each later copy, in document order.
    first: Vec<u64>,
    /// Bit `g`: document `g` is a first copy with later copies.
    has_copies: Vec<u64>,
}

/// Bit `d` of a bitmap (false beyond its end).
pub(super) fn bit(bits: &[u64], d: u64) -> bool {
    bits.get((d / 64) as usize)
        .is_some_and(|w| w >> (d % 64) & 1 == 1)
}

impl Groups {
    /// The groups of `n` documents from (later copy, its first copy) pairs, in any order.
    pub(super) fn new(n: usize, mut pairs: Vec<(u64, u64)>) -> Groups {
        pairs.sort_unstable();
        let words = n.div_ceil(64);
        let (mut later, mut has_copies) = (vec![0u64; words], vec![0u64; words]);
        for &(d, g) in &pairs {
            later[d as usize / 64] |= 1 << (d % 64);
            has_copies[g as usize / 64] |= 1 << (g % 64);
        }
        let mut before = Vec::with_capacity(words);
        let mut count = 0u64;
        for w in &later {
            before.push(count);
            count += u64::from(w.count_ones());
        }
        let first = pairs.into_iter().map(|(_, g)| g).collect();
        Groups {
            later,
            before,
            first,
            has_copies,
        }
    }

    /// Document `d`'s group.
    #[inline]
    pub(super) fn group(&self, d: u64) -> u64 {
        if !bit(&self.later, d) {
            return d;
        }
        let (w, b) = ((d / 64) as usize, d % 64);
        let below = (self.later[w] & ((1u64 << b) - 1)).count_ones();
        self.first[(self.before[w] + u64::from(below)) as usize]
    }

    /// Whether group `g` has later copies.
    pub(super) fn has_copies(&self, g: u64) -> bool {
        bit(&self.has_copies, g)
    }

    /// The number of later copies.
    pub(super) fn copies(&self) -> usize {
        self.first.len()
    }

    /// Every document's group, as an array (the in-memory rules: fewer than 2^32 documents).
    pub(super) fn dense(&self, n: usize) -> Vec<u32> {
        (0..n as u64).map(|d| doc32(self.group(d))).collect()
    }
}

/// Generated groups for tests: document `d` copies document `firsts[d]` when that is earlier
/// and not itself a copy; each document's group.
#[cfg(test)]
pub(super) fn dense_groups(firsts: &[u32]) -> Vec<u32> {
    let mut dense: Vec<u32> = (0..firsts.len() as u32).collect();
    for (d, &f) in firsts.iter().enumerate() {
        if (f as usize) < d && dense[f as usize] == f {
            dense[d] = f;
        }
    }
    dense
}

/// [`Groups`] of each document's group (tests).
#[cfg(test)]
pub(super) fn from_dense(dense: &[u32]) -> Groups {
    let pairs = (0..dense.len() as u32)
        .filter(|&d| dense[d as usize] != d)
        .map(|d| (u64::from(d), u64::from(dense[d as usize])))
        .rev()
        .collect();
    Groups::new(dense.len(), pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn group_is_the_first_copy(firsts in proptest::collection::vec(0u32..40, 1..300)) {
            let n = firsts.len();
            let dense = dense_groups(&firsts);
            let g = from_dense(&dense);
            prop_assert_eq!(g.dense(n), dense.clone());
            prop_assert_eq!(g.copies(), (0..n).filter(|&d| dense[d] != d as u32).count());
            for x in 0..n as u32 {
                let has = (0..n).any(|d| dense[d] == x && d as u32 != x);
                prop_assert_eq!(g.has_copies(x.into()), has);
            }
            prop_assert_eq!(g.group(n as u64 + 100), n as u64 + 100);
        }
    }
}
