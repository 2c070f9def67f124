//! The keeper rule (`--cluster keeper`, the default): documents are taken in keep order, and a
//! document is kept unless a verified near-duplicate of it was kept before it; then it is
//! dropped against the most similar such document (ties to the earlier in keep order).
//!
//! Guarantees, whatever order the edges arrive in:
//! - every dropped document's keeper is kept and verified similar to it (no chain drift: a drop
//!   never rests on another drop);
//! - no two kept documents are a verified pair: the kept set is the greedy maximal independent
//!   set of the verified graph in keep order.
//!
//! Exact copies (one normalised text) are one node at the keep position of their best member:
//! they are verified pairs of each other with identical neighbours, so the best member decides
//! the group. Kept: the others are dropped against it (similarity 1). Dropped: all take its
//! keeper. Edges may name any member of a group. With `--across` a group is the copies of one
//! value, and a kept group keeps every member ([`Documents::copies_kept`]).
//!
//! Some pairs are only compared once the rule needs them ([`Lazy`]): a giant bucket's members
//! are compared with the bucket's documents kept so far, never with each other.
//!
//! Memory: ~25 bytes per document (8 of them edge offsets) and 8 per edge (edges are read twice,
//! never held as a list); 12 more per document with a keep order other than input order.

use super::order::{Best, Rank};
use crate::error::Result;
use crate::plan::doc32;

/// The one value that names no document of tonight, wherever the cluster task, the rule and the
/// manifest hold document numbers: the keeper of a document dropped before the rule runs (with
/// `--index`, its kept document is an indexed one, earlier than every document of tonight); no
/// cluster; no index match.
pub(crate) const NOT_TONIGHT: u32 = u32::MAX;

/// Comparisons made while the rule runs, against documents already kept.
pub(super) trait Lazy {
    /// Offers `(kept group, similarity)` for each verified near-duplicate of group `node` among
    /// the groups this source was told are kept.
    fn compare(&mut self, node: u64, offer: &mut dyn FnMut(u64, f32)) -> Result<()>;
    /// Group `node` is kept.
    fn kept(&mut self, node: u64);
}

/// No lazy comparisons.
#[cfg(test)]
pub(super) struct NoLazy;

#[cfg(test)]
impl Lazy for NoLazy {
    fn compare(&mut self, _: u64, _: &mut dyn FnMut(u64, f32)) -> Result<()> {
        Ok(())
    }
    fn kept(&mut self, _: u64) {}
}

/// The outcome per document.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Keepers {
    /// The document itself when kept (or never kept and alone, [`Documents::never_kept`]), its
    /// keeper when dropped, or [`NOT_TONIGHT`].
    pub keeper: Vec<u32>,
    /// Similarity to the keeper; NaN when kept or external.
    pub similarity: Vec<f32>,
}

/// What the rule reads about the documents.
pub(super) struct Documents<'a> {
    pub rank: &'a Rank,
    /// Each document's group: its first exact copy in input order (itself when it has none).
    pub group: &'a [u32],
    /// Whether a kept group keeps all its members (`--across`: copies of one value are all
    /// kept) instead of dropping them against its best member.
    pub copies_kept: bool,
    /// Documents never kept, by document (empty: none). Copies share it (it is a function of
    /// the text), so a group's first member speaks for the group.
    pub never_kept: &'a [bool],
}

impl Documents<'_> {
    fn never_kept(&self, g: u32) -> bool {
        self.never_kept.get(g as usize).copied().unwrap_or(false)
    }
}

const UNDECIDED: u8 = 0;
const KEPT: u8 = 1;
const DROPPED: u8 = 2;
/// Never kept and no kept near-duplicate: its own keeper in the outcome, though not kept.
const ALONE: u8 = 3;

/// Runs the rule. `each_edge` streams every verified pair `(a, b, similarity)` to its callback
/// and is called twice; `external(group)` tells groups dropped before the rule runs.
pub(super) fn keepers(
    docs: &Documents,
    external: impl Fn(u32) -> bool,
    each_edge: impl FnMut(&mut dyn FnMut(u32, u32, f32)) -> Result<()>,
    lazy: &mut impl Lazy,
) -> Result<Keepers> {
    let order = Order::of(docs);
    let earlier = Earlier::of(docs, &order, each_edge)?;
    let decided = Decided::of(docs, &order, &earlier, external, lazy)?;
    drop(earlier);
    Ok(decided.per_document(docs, &order))
}

/// The keep order of the groups: each group's best member, and the documents in keep order.
/// Empty in input order, where a group's first member (the group itself) is its best and the
/// documents are in keep order already.
struct Order {
    best: Vec<u32>,
    by_rank: Vec<u32>,
}

impl Order {
    fn of(docs: &Documents) -> Order {
        let Rank::Of(rank) = docs.rank else {
            return Order {
                best: Vec::new(),
                by_rank: Vec::new(),
            };
        };
        let n = rank.len();
        let mut best: Vec<u32> = (0..n as u32).collect();
        let mut by_rank = vec![0u32; n];
        for d in 0..n {
            let g = docs.group[d] as usize;
            if rank[d] < rank[best[g] as usize] {
                best[g] = d as u32;
            }
            by_rank[rank[d] as usize] = d as u32;
        }
        Order { best, by_rank }
    }

    /// Group `g`'s best member: the first in keep order.
    #[inline]
    fn best(&self, g: u32) -> u32 {
        self.best.get(g as usize).copied().unwrap_or(g)
    }

    /// The document at position `r` of keep order.
    #[inline]
    fn at(&self, r: usize) -> u32 {
        self.by_rank.get(r).copied().unwrap_or(r as u32)
    }

    /// A group's place in keep order: its best member's.
    fn pos(&self, docs: &Documents, g: u32) -> u32 {
        docs.rank.of(self.best(g))
    }
}

/// Each edge between two groups, stored at the later one in keep order with its similarity:
/// when a group is decided, its neighbours decided before it (compressed rows by group).
struct Earlier {
    offsets: Vec<usize>,
    adj: Vec<(u32, f32)>,
}

impl Earlier {
    fn of(
        docs: &Documents,
        order: &Order,
        mut each_edge: impl FnMut(&mut dyn FnMut(u32, u32, f32)) -> Result<()>,
    ) -> Result<Earlier> {
        let group = docs.group;
        let n = group.len();
        let later_earlier = |a: u32, b: u32| {
            let (x, y) = (group[a as usize], group[b as usize]);
            match x == y {
                true => None,
                false if order.pos(docs, x) > order.pos(docs, y) => Some((x, y)),
                false => Some((y, x)),
            }
        };
        let mut offsets = vec![0usize; n + 1];
        each_edge(&mut |a, b, _| {
            if let Some((l, _)) = later_earlier(a, b) {
                offsets[l as usize + 1] += 1;
            }
        })?;
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut adj = vec![(0u32, 0f32); offsets[n]];
        // Each group's start serves as its cursor (no second array of offsets): once filled it
        // is the group's end, and the offsets move up one place to be the starts again.
        each_edge(&mut |a, b, s| {
            if let Some((l, e)) = later_earlier(a, b) {
                let at = &mut offsets[l as usize];
                if let Some(slot) = adj.get_mut(*at) {
                    *slot = (e, s);
                }
                *at += 1;
            }
        })?;
        offsets.copy_within(0..n, 1);
        offsets[0] = 0;
        Ok(Earlier { offsets, adj })
    }

    /// The groups before `g` in keep order that are near-duplicates of it, with similarity.
    fn of_group(&self, g: usize) -> &[(u32, f32)] {
        &self.adj[self.offsets[g]..self.offsets[g + 1]]
    }
}

/// Each group's decision (by its first member): its state, and when dropped, the group kept
/// before it that it is dropped against and their similarity.
struct Decided {
    state: Vec<u8>,
    to: Vec<u32>,
    sim: Vec<f32>,
}

impl Decided {
    /// Decides the groups in keep order: a group is dropped against its most similar kept
    /// neighbour decided before it (ties to the earlier), else kept (or alone, when never kept).
    fn of(
        docs: &Documents,
        order: &Order,
        earlier: &Earlier,
        external: impl Fn(u32) -> bool,
        lazy: &mut impl Lazy,
    ) -> Result<Decided> {
        let n = docs.rank.len();
        let mut state = vec![UNDECIDED; n];
        let mut to = vec![NOT_TONIGHT; n];
        let mut sim = vec![f32::NAN; n];
        for r in 0..n {
            let d = order.at(r);
            let g = docs.group[d as usize];
            if order.best(g) != d {
                continue;
            }
            let gi = g as usize;
            if external(g) {
                state[gi] = DROPPED;
                continue;
            }
            let mut best = Best::default();
            for &(u, s) in earlier.of_group(gi) {
                if state[u as usize] == KEPT {
                    best.offer(u.into(), s, order.pos(docs, u).into());
                }
            }
            lazy.compare(g.into(), &mut |u, s| {
                let u = doc32(u);
                if state[u as usize] == KEPT {
                    best.offer(u.into(), s, order.pos(docs, u).into());
                }
            })?;
            match best.found().map(|(u, s)| (doc32(u), s)) {
                Some((u, s)) => {
                    state[gi] = DROPPED;
                    to[gi] = u;
                    sim[gi] = s;
                }
                None if docs.never_kept(g) => state[gi] = ALONE,
                None => {
                    state[gi] = KEPT;
                    lazy.kept(g.into());
                }
            }
        }
        Ok(Decided { state, to, sim })
    }

    /// The outcome per document: a kept group's best member keeps itself and its copies are
    /// dropped against it (or all keep themselves, [`Documents::copies_kept`]); a dropped
    /// group's members are dropped against the best member of the group it was dropped against.
    fn per_document(&self, docs: &Documents, order: &Order) -> Keepers {
        let n = docs.rank.len();
        let mut keeper = vec![NOT_TONIGHT; n];
        let mut similarity = vec![f32::NAN; n];
        for d in 0..n {
            let g = docs.group[d] as usize;
            let best = order.best(g as u32);
            match self.state[g] {
                KEPT if best as usize == d || docs.copies_kept => keeper[d] = d as u32,
                KEPT => (keeper[d], similarity[d]) = (best, 1.0),
                ALONE => keeper[d] = d as u32,
                _ if self.to[g] != NOT_TONIGHT => {
                    (keeper[d], similarity[d]) = (order.best(self.to[g]), self.sim[g])
                }
                _ => {}
            }
        }
        Keepers { keeper, similarity }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(
        rank: &[u32],
        group: &[u32],
        edges: &[(u32, u32, f32)],
        external: &[u32],
        lazy: &mut impl Lazy,
    ) -> Keepers {
        run_never(rank, group, edges, external, &[], lazy)
    }

    fn run_never(
        rank: &[u32],
        group: &[u32],
        edges: &[(u32, u32, f32)],
        external: &[u32],
        never_kept: &[bool],
        lazy: &mut impl Lazy,
    ) -> Keepers {
        run_ranked(
            &Rank::Of(rank.to_vec()),
            group,
            edges,
            external,
            never_kept,
            lazy,
        )
    }

    fn run_ranked(
        rank: &Rank,
        group: &[u32],
        edges: &[(u32, u32, f32)],
        external: &[u32],
        never_kept: &[bool],
        lazy: &mut impl Lazy,
    ) -> Keepers {
        let docs = Documents {
            rank,
            group,
            copies_kept: false,
            never_kept,
        };
        let each = |f: &mut dyn FnMut(u32, u32, f32)| {
            edges.iter().for_each(|&(a, b, s)| f(a, b, s));
            Ok(())
        };
        keepers(&docs, |g| external.contains(&g), each, lazy).unwrap()
    }

    #[test]
    fn a_chain_keeps_its_ends() {
        // 0 - 1 - 2 - 3 - 4 in input order: components would keep 0 only; the rule keeps 0, 2, 4.
        let edges: Vec<_> = (0..4).map(|i| (i, i + 1, 0.85)).collect();
        let k = run(&[0, 1, 2, 3, 4], &[0, 1, 2, 3, 4], &edges, &[], &mut NoLazy);
        assert_eq!(k.keeper, vec![0, 0, 2, 2, 4]);
        assert!(k.similarity[0].is_nan() && k.similarity[1] == 0.85);
    }

    #[test]
    fn most_similar_keeper_then_keep_order() {
        // 3 resembles kept 0 (0.82), 1 (0.9) and 2 (0.9): 1 and 2 tie, 1 is earlier.
        let edges = [(0, 3, 0.82), (1, 3, 0.9), (2, 3, 0.9)];
        let k = run(&[0, 1, 2, 3], &[0, 1, 2, 3], &edges, &[], &mut NoLazy);
        assert_eq!(k.keeper, vec![0, 1, 2, 1]);
        // Keep order reversed (3 first): 3 is kept, the rest dropped against it.
        let k = run(&[3, 2, 1, 0], &[0, 1, 2, 3], &edges, &[], &mut NoLazy);
        assert_eq!(k.keeper, vec![3, 3, 3, 3]);
    }

    #[test]
    fn copies_follow_their_best_member() {
        // 0 and 2 share a text (group 0); 1 resembles it; keep order 2, 1, 0.
        let k = run(&[2, 1, 0], &[0, 1, 0], &[(0, 1, 0.9)], &[], &mut NoLazy);
        assert_eq!(k.keeper, vec![2, 2, 2]);
        assert_eq!(k.similarity[0], 1.0);
        // 1 first: the group is dropped against it, both members.
        let k = run(&[1, 0, 2], &[0, 1, 0], &[(2, 1, 0.9)], &[], &mut NoLazy);
        assert_eq!(k.keeper, vec![1, 1, 1]);
        // External: dropped, and blocks nothing.
        let k = run(&[0, 1, 2], &[0, 1, 0], &[(0, 1, 0.9)], &[0], &mut NoLazy);
        assert_eq!(k.keeper, vec![NOT_TONIGHT, 1, NOT_TONIGHT]);
    }

    #[test]
    fn copies_kept_keeps_every_member_of_a_kept_group() {
        // 0 and 2 share a text (group 0); 1 resembles it. Kept group: both members kept.
        let each = |f: &mut dyn FnMut(u32, u32, f32)| {
            f(0, 1, 0.9);
            Ok(())
        };
        let docs = Documents {
            rank: &Rank::Input(3),
            group: &[0, 1, 0],
            copies_kept: true,
            never_kept: &[],
        };
        let k = keepers(&docs, |_| false, each, &mut NoLazy).unwrap();
        assert_eq!(k.keeper, vec![0, 0, 2]);
        // 1 first: the group is dropped against it, every member.
        let docs = Documents {
            rank: &Rank::Of(vec![1, 0, 2]),
            ..docs
        };
        let k = keepers(&docs, |_| false, each, &mut NoLazy).unwrap();
        assert_eq!(k.keeper, vec![1, 1, 1]);
    }

    #[test]
    fn never_kept_documents_keep_nothing_from_being_kept() {
        // 0 - 1 - 2 in keep order, 0 never kept: 1 is kept (nothing kept to drop it against),
        // 2 dropped against 1; 0 stands alone.
        let edges = [(0, 1, 0.9), (1, 2, 0.85)];
        let never = [true, false, false];
        let k = run_never(&[0, 1, 2], &[0, 1, 2], &edges, &[], &never, &mut NoLazy);
        assert_eq!(k.keeper, vec![0, 1, 1]);
        // 1 never kept: 0 kept, 1 dropped against it, 2 kept (its only neighbour is not kept).
        let never = [false, true, false];
        let k = run_never(&[0, 1, 2], &[0, 1, 2], &edges, &[], &never, &mut NoLazy);
        assert_eq!(k.keeper, vec![0, 0, 2]);
        assert_eq!(k.similarity[1], 0.9);
        // A never-kept group of copies: every member alone.
        let k = run_never(
            &[0, 1, 2],
            &[0, 0, 2],
            &[],
            &[],
            &[true, true, false],
            &mut NoLazy,
        );
        assert_eq!(k.keeper, vec![0, 1, 2]);
        // External wins: dropped before the rule.
        let k = run_never(&[0, 1], &[0, 1], &[], &[0], &[true, false], &mut NoLazy);
        assert_eq!(k.keeper, vec![NOT_TONIGHT, 1]);
    }

    /// Pairs given only through [`Lazy`]: offered when the other group is kept.
    struct Hidden {
        adj: Vec<Vec<(u32, f32)>>,
        kept: Vec<bool>,
    }

    impl Lazy for Hidden {
        fn compare(&mut self, node: u64, offer: &mut dyn FnMut(u64, f32)) -> Result<()> {
            for &(u, s) in &self.adj[node as usize] {
                if self.kept[u as usize] {
                    offer(u.into(), s);
                }
            }
            Ok(())
        }
        fn kept(&mut self, node: u64) {
            self.kept[node as usize] = true;
        }
    }

    /// The rule by brute force on the graph of documents: copies are pairs of similarity 1 and
    /// share their group's pairs; documents in keep order, each against every earlier one.
    fn reference(
        rank: &[u32],
        group: &[u32],
        pairs: &[(u32, u32, f32)],
        external: &[u32],
        never: &[bool],
    ) -> Vec<u32> {
        let n = rank.len();
        let mut s = vec![vec![0f32; n]; n];
        for &(a, b, x) in pairs {
            for c in 0..n {
                for d in 0..n {
                    let (gc, gd) = (group[c], group[d]);
                    let (ga, gb) = (group[a as usize], group[b as usize]);
                    if (gc, gd) == (ga, gb) || (gc, gd) == (gb, ga) {
                        s[c][d] = s[c][d].max(x);
                    }
                }
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&d| rank[d]);
        let mut keeper = vec![NOT_TONIGHT; n];
        for (i, &d) in order.iter().enumerate() {
            if external.contains(&group[d]) {
                continue;
            }
            let mut found: Option<(f32, usize)> = None;
            for &e in &order[..i] {
                let x = if group[e] == group[d] { 1.0 } else { s[d][e] };
                let kept = keeper[e] == e as u32 && !never[e];
                if kept && x > 0.0 && found.is_none_or(|(fs, _)| x > fs) {
                    found = Some((x, e));
                }
            }
            keeper[d] = found.map_or(d as u32, |(_, e)| e as u32);
        }
        keeper
    }

    /// A generated case: keep ranks, copy groups, (a, b, similarity, lazy) edges, documents
    /// matched externally, groups never kept.
    type Case = (
        Vec<u32>,
        Vec<u32>,
        Vec<(u32, u32, f32, bool)>,
        Vec<u32>,
        Vec<bool>,
    );

    fn case() -> impl Strategy<Value = Case> {
        (2usize..14).prop_flat_map(|n| {
            let perm = Just((0..n as u32).collect::<Vec<_>>()).prop_shuffle();
            // Each document's group: itself, or an earlier document's group.
            let group = proptest::collection::vec(0u32..4, n).prop_map(|picks| {
                let mut g: Vec<u32> = Vec::with_capacity(picks.len());
                for (d, p) in picks.into_iter().enumerate() {
                    let copy = p == 0 && d > 0;
                    g.push(if copy { g[d / 2] } else { d as u32 });
                }
                g
            });
            let sims = prop::sample::select(vec![0.8f32, 0.85, 0.9, 0.95]);
            let edge = (0..n as u32, 0..n as u32, sims, any::<bool>());
            let edges = proptest::collection::vec(edge, 0..3 * n);
            let external = proptest::collection::vec(0..n as u32, 0..2);
            let never = proptest::collection::vec(prop::bool::weighted(0.2), n);
            (perm, group, edges, external, never)
        })
    }

    proptest! {
        #[test]
        fn equals_brute_force((rank, group, raw, external, never_g) in case()) {
            let n = rank.len();
            let never: Vec<bool> = (0..n).map(|d| never_g[group[d] as usize]).collect();
            // One similarity per pair of groups (copies have identical neighbours), given on any
            // member; some pairs only through the lazy source.
            let mut seen = std::collections::BTreeMap::new();
            let (mut edges, mut hidden) = (Vec::new(), Hidden { adj: vec![Vec::new(); n], kept: vec![false; n] });
            for (a, b, s, lazy) in raw {
                let (ga, gb) = (group[a as usize], group[b as usize]);
                let key = (ga.min(gb), ga.max(gb));
                if ga == gb || seen.contains_key(&key) {
                    continue;
                }
                seen.insert(key, s);
                if lazy {
                    hidden.adj[ga as usize].push((gb, s));
                    hidden.adj[gb as usize].push((ga, s));
                } else {
                    edges.push((a, b, s));
                }
            }
            let all: Vec<(u32, u32, f32)> =
                seen.iter().map(|(&(a, b), &s)| (a, b, s)).collect();
            let got = run_never(&rank, &group, &edges, &external, &never, &mut hidden);
            let want = reference(&rank, &group, &all, &external, &never);
            let best = |g: u32| (0..n).filter(|&d| group[d] == g).min_by_key(|&d| rank[d]);
            for d in 0..n {
                let kept = |x: u32| x != NOT_TONIGHT && got.keeper[x as usize] == x && !never[x as usize];
                prop_assert_eq!(kept(d as u32), want[d] == d as u32 && !never[d], "doc {}", d);
                let g = group[d];
                let decides = best(g) == Some(d) || kept(best(g).unwrap_or(0) as u32);
                if decides {
                    // The deciding member, and copies of a kept text: exactly the reference.
                    prop_assert_eq!(got.keeper[d], want[d], "doc {}", d);
                } else if got.keeper[d] != NOT_TONIGHT && got.keeper[d] != d as u32 {
                    // Copies of a dropped text take its keeper: kept, and a verified pair.
                    prop_assert!(kept(got.keeper[d]));
                    prop_assert!(got.similarity[d] >= 0.8);
                }
            }
            // No two kept documents form a verified pair.
            for &(a, b, _) in &all {
                let k = |x: u32| (0..n as u32).any(|d| group[d as usize] == x && got.keeper[d as usize] == d && !never[d as usize]);
                prop_assert!(!(k(a) && k(b)), "kept pair {} {}", a, b);
            }
        }
    }

    proptest! {
        #[test]
        fn input_order_needs_no_rank((rank, group, raw, external, never_g) in case()) {
            let n = rank.len();
            let never: Vec<bool> = (0..n).map(|d| never_g[group[d] as usize]).collect();
            let edges: Vec<(u32, u32, f32)> = raw.iter().map(|&(a, b, s, _)| (a, b, s)).collect();
            let identity = Rank::Of((0..n as u32).collect());
            let want = run_ranked(&identity, &group, &edges, &external, &never, &mut NoLazy);
            let got = run_ranked(&Rank::Input(n), &group, &edges, &external, &never, &mut NoLazy);
            let bits = |k: &Keepers| k.similarity.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&got), bits(&want));
            prop_assert_eq!(got.keeper, want.keeper);
        }
    }
}
