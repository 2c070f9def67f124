//! Keep order (`--keep`): each document's position, from which the keeper rule decides the
//! documents in turn. Input order (`--keep first`, the default) is no array at all.

use super::KeepData;
use crate::config::Keep;
use crate::plan::Plan;

/// Each document's position in keep order (a permutation of 0..n). Input order, what `--keep
/// first` asks, is no array: 4 bytes per document, and the rule's order of its own 8, less.
pub(super) enum Rank {
    Input(usize),
    Of(Vec<u32>),
}

impl Rank {
    /// Document `d`'s position in keep order.
    #[inline]
    pub(super) fn of(&self, d: u32) -> u32 {
        match self {
            Rank::Input(_) => d,
            Rank::Of(rank) => rank[d as usize],
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Rank::Input(n) => *n,
            Rank::Of(rank) => rank.len(),
        }
    }
}

/// The kept neighbour a group is dropped against: the most similar, ties to the earlier in
/// keep order, whatever order they are offered in.
#[derive(Default)]
pub(super) struct Best {
    found: Option<(f32, u64, u64)>,
}

impl Best {
    /// Offers kept group `u`, similar at `s`, at position `pos` of keep order.
    #[inline]
    pub(super) fn offer(&mut self, u: u64, s: f32, pos: u64) {
        if (self.found).is_none_or(|(fs, fp, _)| s > fs || (s == fs && pos < fp)) {
            self.found = Some((s, pos, u));
        }
    }

    /// The group and its similarity, if any was offered.
    pub(super) fn found(&self) -> Option<(u64, f32)> {
        self.found.map(|(s, _, u)| (u, s))
    }
}

/// Keep order of the documents: each one's position (a permutation, smaller first).
pub(super) fn keep_order(plan: &Plan, keep: &KeepData) -> Rank {
    let n = plan.documents as usize;
    match &plan.config.keep {
        Keep::First => Rank::Input(n),
        Keep::Longest => Rank::Of(rank_by(n, |d| std::cmp::Reverse(keep.text_len(d)))),
        // Largest first; nulls (and NaN) last; ties to input order (the rank's second key).
        Keep::Column(_) | Keep::Ranked { .. } => Rank::Of(rank_by(n, |d| match keep.priority(d) {
            Some(x) if !x.is_nan() => (0, std::cmp::Reverse(order_bits(x))),
            _ => (1, std::cmp::Reverse(0)),
        })),
    }
}

/// An integer that sorts as the float does (total order).
fn order_bits(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// Keep order from a sort key per document: a smaller key comes first, ties to input order.
pub(super) fn rank_by<K: Ord + Send>(n: usize, key: impl Fn(u32) -> K + Sync) -> Vec<u32> {
    use rayon::prelude::*;
    let mut order: Vec<(K, u32)> = (0..n as u32).into_par_iter().map(|d| (key(d), d)).collect();
    order.par_sort_unstable();
    let mut rank = vec![0u32; n];
    for (r, &(_, d)) in order.iter().enumerate() {
        rank[d as usize] = r as u32;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_by_key_then_input_order() {
        let lens = [5, 9, 9, 1];
        let rank = rank_by(4, |d| std::cmp::Reverse(lens[d as usize]));
        assert_eq!(rank, vec![2, 0, 1, 3]);
    }
}
