//! Union-find over document indices: the dense one the cluster stage streams every edge into,
//! and a sparse one a verify task keeps for the documents its edges joined.
//!
//! Invariant: a union makes the smaller root the root, so every set's root is its first document
//! in input order whatever order the unions come in (the cluster id and the `first` keep rule
//! rely on it). Path halving keeps finds near O(1).

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
pub(crate) struct SparseUnionFind {
    parent: ahash::AHashMap<u64, u64>,
}

impl SparseUnionFind {
    /// The root of `x`'s set: the first document along parents with no parent of its own (`x`
    /// itself when it was never joined below another root).
    pub(crate) fn find(&mut self, mut x: u64) -> u64 {
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
    pub(crate) fn union(&mut self, a: u64, b: u64) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent.insert(hi, lo);
        }
    }

    /// True when `a` and `b` are in the same set.
    pub(crate) fn connected(&mut self, a: u64, b: u64) -> bool {
        self.find(a) == self.find(b)
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
            sparse.union(a.into(), b.into());
        }
        for d in 0..1000u32 {
            assert_eq!(sparse.find(d.into()), u64::from(dense.find(d)), "{d}");
        }
        assert!(sparse.connected(5, 5));
        assert_eq!(sparse.find(5000), 5000);
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
}
