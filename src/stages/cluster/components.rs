//! `--cluster components`: connected components of the verified pairs (a union-find over all
//! documents, the edges streamed into it), one document kept per component by `--keep`, or the
//! earliest indexed document any member matched.

use super::{each_edge32, IndexMatches, KeepData, Outcome, NOT_TONIGHT};
use crate::config::Keep;
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::plan::Plan;
use crate::unionfind::UnionFind;

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

    /// The document kept in `doc`'s cluster ([`NOT_TONIGHT`] when it is in the retained index).
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
                    Keep::Column(_) | Keep::Ranked { .. } => match (priority(d), priority(best)) {
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

/// `--cluster components`: union-find over all documents with the edges streamed part by part,
/// exact copies joined to their first copy; the keeper of each cluster by the keep rule, or the
/// earliest indexed document any member matched.
pub(super) fn outcome(
    work: &OutputDir,
    plan: &Plan,
    first_copy: &[u32],
    index: &IndexMatches,
    keep: KeepData,
) -> Result<Outcome> {
    let n = plan.documents as usize;
    let mut uf = UnionFind::new(n);
    each_edge32(work, plan, &mut |x, y, _| uf.union(x, y))?;
    for (d, &f) in first_copy.iter().enumerate() {
        if f != d as u32 {
            uf.union(f, d as u32);
        }
    }
    let mut clusters = Clusters::build(
        uf,
        &plan.config.keep,
        |d| keep.text_len(d),
        |d| keep.priority(d),
    );
    drop(keep);
    // The earliest indexed document matched by any member wins the whole cluster.
    let mut anchor: ahash::AHashMap<u32, (u32, u32, usize)> = ahash::AHashMap::new();
    for (i, m) in index.matches.iter().enumerate() {
        let r = clusters.root[m.doc as usize];
        let e = anchor.entry(r).or_insert((m.batch, m.xdoc, i));
        if (m.batch, m.xdoc) < (e.0, e.1) {
            *e = (m.batch, m.xdoc, i);
        }
    }
    for &r in anchor.keys() {
        clusters.keeper[r as usize] = NOT_TONIGHT;
    }
    // Similarity to the keeper where a verified edge joins them (a second pass over the edges,
    // 4 bytes per document); the manifest computes the rest.
    let mut to_keeper = vec![f32::NAN; n];
    each_edge32(work, plan, &mut |x, y, s| {
        if clusters.keeper_of(y) == x {
            to_keeper[y as usize] = s;
        } else if clusters.keeper_of(x) == y {
            to_keeper[x as usize] = s;
        }
    })?;
    for d in 0..n as u32 {
        let f = first_copy[d as usize];
        if f != d && clusters.keeper_of(d) == f {
            to_keeper[d as usize] = 1.0;
        }
    }
    // A member matched to its cluster's indexed document directly: that similarity.
    for m in &index.matches {
        let (b, x, _) = anchor[&clusters.root[m.doc as usize]];
        if (m.batch, m.xdoc) == (b, x) {
            to_keeper[m.doc as usize] = m.similarity;
        }
    }
    let keeper = (0..n as u32).map(|d| clusters.keeper_of(d)).collect();
    let anchor_of = |d: u32| anchor.get(&clusters.root[d as usize]);
    let out = Outcome {
        keeper,
        similarity: to_keeper,
        cluster: (0..n as u32)
            .map(|d| {
                let id = clusters.cluster_id(d);
                let anchored = anchor_of(d).is_some();
                id.or(anchored.then(|| clusters.root[d as usize]))
                    .unwrap_or(NOT_TONIGHT)
            })
            .collect(),
        anchor: match anchor.is_empty() {
            true => Vec::new(),
            false => (0..n as u32)
                .map(|d| anchor_of(d).map_or(NOT_TONIGHT, |&(_, _, i)| i as u32))
                .collect(),
        },
    };
    Ok(out)
}
