//! Stage 5, cluster: verified edges -> duplicate clusters -> the one document kept per cluster.
//!
//! Union-find with path halving; a union makes the smaller index the root, so every cluster's
//! root is its first document in input order whatever order the edges arrive in. That root's global
//! index is the cluster's stable id. Memory: 12 bytes per document (parent/root, size, keeper).

use crate::config::Keep;
use crate::stages::verify::Edge;

/// Disjoint sets over document indices 0..n.
#[derive(Debug, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// n singletons.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    /// The root (smallest member) of `x`'s set.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True for no documents.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Every document's root, in place of the parent array (no second array).
    pub fn into_roots(mut self) -> Vec<u32> {
        for d in 0..self.parent.len() as u32 {
            let r = self.find(d);
            self.parent[d as usize] = r;
        }
        self.parent
    }

    /// Merges the sets of `a` and `b`; the smaller root becomes the root.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }
}

/// Disjoint sets over any document indices, held only for the documents joined so far (a hash
/// map from each non-root document to its parent): what one verify task has learned about
/// connectivity. Same rules as [`UnionFind`] (path halving, the smaller root wins).
#[derive(Debug, Clone, Default)]
pub struct SparseUnionFind {
    parent: ahash::AHashMap<u32, u32>,
}

impl SparseUnionFind {
    /// The root of `x`'s set: the first document along parents with no parent of its own (`x`
    /// itself when it was never joined below another root).
    pub fn find(&mut self, mut x: u32) -> u32 {
        while let Some(&p) = self.parent.get(&x) {
            let Some(&grand) = self.parent.get(&p) else {
                return p;
            };
            self.parent.insert(x, grand);
            x = grand;
        }
        x
    }

    /// Merges the sets of `a` and `b`.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent.insert(hi, lo);
        }
    }

    /// True when `a` and `b` are in the same set.
    pub fn connected(&mut self, a: u32, b: u32) -> bool {
        self.find(a) == self.find(b)
    }
}

/// Cluster assignment of every document.
#[derive(Debug, Clone)]
pub struct Clusters {
    /// Root (first member) of each document's cluster; a singleton is its own root.
    pub root: Vec<u32>,
    /// Member count of each root's cluster (indexed by document; meaningful at roots).
    pub size: Vec<u32>,
    /// The kept document of each root's cluster (indexed by document; meaningful at roots).
    pub keeper: Vec<u32>,
}

impl Clusters {
    /// Cluster id of `doc`: its root, or None for a singleton.
    pub fn cluster_id(&self, doc: u32) -> Option<u32> {
        let r = self.root[doc as usize];
        (self.size[r as usize] > 1).then_some(r)
    }

    /// The document kept in `doc`'s cluster.
    pub fn keeper_of(&self, doc: u32) -> u32 {
        self.keeper[self.root[doc as usize] as usize]
    }

    /// Histogram of cluster sizes >= 2: (size, count), ascending by size.
    pub fn size_histogram(&self) -> Vec<(u32, u64)> {
        let mut h = std::collections::BTreeMap::new();
        for (d, &r) in self.root.iter().enumerate() {
            if d as u32 == r && self.size[d] > 1 {
                *h.entry(self.size[d]).or_insert(0u64) += 1;
            }
        }
        h.into_iter().collect()
    }
}

/// Builds clusters from edges over `n` documents and picks each cluster's keeper with `keep`.
/// `text_len(d)` and `priority(d)` are consulted only for `Keep::Longest` / `Keep::Column`.
pub fn cluster(
    n: usize,
    edges: &[Edge],
    keep: &Keep,
    text_len: impl Fn(u32) -> usize,
    priority: impl Fn(u32) -> Option<f64>,
) -> Clusters {
    let mut uf = UnionFind::new(n);
    for e in edges {
        uf.union(e.a, e.b);
    }
    Clusters::build(uf, keep, text_len, priority)
}

impl Clusters {
    /// Clusters from a union-find that has seen every edge (edges can be streamed into it, so
    /// they are never all held): roots (the union-find's array, reused), sizes and keepers,
    /// 12 bytes per document in all.
    pub fn build(
        uf: UnionFind,
        keep: &Keep,
        text_len: impl Fn(u32) -> usize,
        priority: impl Fn(u32) -> Option<f64>,
    ) -> Clusters {
        let root = uf.into_roots();
        let n = root.len();
        let mut size = vec![0u32; n];
        for &r in &root {
            size[r as usize] += 1;
        }
        // Documents are visited in input order, so a strict "better than" keeps the first on ties.
        let mut keeper: Vec<u32> = (0..n as u32).collect();
        if *keep != Keep::First {
            for d in 0..n as u32 {
                let r = root[d as usize] as usize;
                if size[r] < 2 || d as usize == r {
                    continue;
                }
                let best = keeper[r];
                let better = match keep {
                    Keep::First => false,
                    Keep::Longest => text_len(d) > text_len(best),
                    Keep::Column(_) => match (priority(d), priority(best)) {
                        (Some(x), Some(y)) => x > y,
                        (Some(x), None) => !x.is_nan(),
                        _ => false,
                    },
                };
                if better {
                    keeper[r] = d;
                }
            }
        }
        Clusters { root, size, keeper }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_union_find_agrees_with_dense() {
        let mut dense = UnionFind::new(1000);
        let mut sparse = SparseUnionFind::default();
        let mut x = 7u64;
        for _ in 0..600 {
            x = crate::lsh::mix64(x);
            let (a, b) = ((x % 1000) as u32, ((x >> 20) % 1000) as u32);
            dense.union(a, b);
            sparse.union(a, b);
        }
        for d in 0..1000 {
            assert_eq!(sparse.find(d), dense.find(d), "{d}");
        }
        assert!(sparse.connected(5, 5));
        assert_eq!(sparse.find(5000), 5000);
    }

    fn e(a: u32, b: u32) -> Edge {
        Edge {
            a,
            b,
            similarity: 0.9,
        }
    }

    #[test]
    fn union_find_roots_are_smallest_members() {
        let mut uf = UnionFind::new(10);
        uf.union(5, 9);
        uf.union(9, 3);
        uf.union(7, 8);
        assert_eq!(uf.find(9), 3);
        assert_eq!(uf.find(5), 3);
        assert_eq!(uf.find(8), 7);
        assert_eq!(uf.find(0), 0);
        uf.union(8, 5);
        assert_eq!(uf.find(7), 3);
    }

    #[test]
    fn edge_order_does_not_matter() {
        let edges = vec![e(1, 4), e(4, 6), e(2, 3), e(0, 6)];
        let mut rev = edges.clone();
        rev.reverse();
        let a = cluster(8, &edges, &Keep::First, |_| 0, |_| None);
        let b = cluster(8, &rev, &Keep::First, |_| 0, |_| None);
        assert_eq!(a.root, b.root);
        assert_eq!(a.root, vec![0, 0, 2, 2, 0, 5, 0, 7]);
        assert_eq!(a.cluster_id(5), None);
        assert_eq!(a.cluster_id(6), Some(0));
        assert_eq!(a.size_histogram(), vec![(2, 1), (4, 1)]);
    }

    #[test]
    fn keep_rules() {
        let edges = vec![e(0, 1), e(1, 2), e(3, 4)];
        let lens = [10usize, 30, 30, 5, 5];
        let longest = cluster(5, &edges, &Keep::Longest, |d| lens[d as usize], |_| None);
        assert_eq!(longest.keeper_of(0), 1); // 1 and 2 tie at 30: first wins
        assert_eq!(longest.keeper_of(4), 3); // tie: first wins
        let pr = [Some(1.0), None, Some(3.0), None, Some(0.0)];
        let col = cluster(
            5,
            &edges,
            &Keep::Column("p".into()),
            |_| 0,
            |d| pr[d as usize],
        );
        assert_eq!(col.keeper_of(1), 2);
        assert_eq!(col.keeper_of(3), 4); // a value beats a null
        let first = cluster(5, &edges, &Keep::First, |_| 0, |_| None);
        assert_eq!(first.keeper_of(2), 0);
    }
}
