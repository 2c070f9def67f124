//! Stage `cluster` (one task): every part's edges, streamed into a union-find over all documents
//! -> clusters, the one document kept per cluster (`--keep`), written per part
//! (`cluster/pP.parquet`: keeper, cluster_id, similarity to the keeper where an edge gives it).
//! It also checks that ids are unique (unless `--allow-duplicate-ids`).
//!
//! A cluster's root is its first document in input order ([`UnionFind`] makes the smaller root
//! the root), whatever order the edges arrive in; its global index is the cluster's stable id.
//! Memory: 16-18 bytes per document (root, size, keeper, similarity to the keeper), plus the
//! keep column with `--keep longest` or `--keep COLUMN`; the edges are never all held.

use polars::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::Keep;
use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use crate::io::store;
use crate::io::work::{part_file, polars_err as pe, series, u32s, write_frame};
use crate::plan::Plan;
use crate::unionfind::UnionFind;

/// Counters of the cluster task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClusterStats {
    pub documents_kept: u64,
    pub clusters: u64,
    pub cluster_size_histogram: std::collections::BTreeMap<String, u64>,
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

/// Fails on the first id that occurs twice (unless allowed), naming both places. Ids are
/// compared by 64-bit hash (12 bytes per document while checking); equal hashes are confirmed on
/// the ids themselves.
fn check_unique_ids(work: &OutputDir, plan: &Plan) -> Result<()> {
    let mut hashes: Vec<(u64, u32)> = Vec::with_capacity(plan.documents as usize);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("docs", p))?;
        let s = series(&df, "id_hash", "cluster")?;
        let first = plan.parts[p].0 as u32;
        hashes.extend(
            s.u64()
                .map_err(pe("cluster"))?
                .into_no_null_iter()
                .enumerate()
                .map(|(i, h)| (h, first + i as u32)),
        );
    }
    hashes.par_sort_unstable();
    let ids = store::Wanted {
        ids: true,
        keys: false,
    };
    // Report the id that repeats first in input order (as a sequential scan would).
    let mut first_repeat: Option<(u32, u32)> = None;
    for w in hashes.windows(2) {
        let ((h0, x), (h1, y)) = (w[0], w[1]);
        if h0 != h1 || first_repeat.is_some_and(|(_, best)| best <= y) {
            continue;
        }
        let f = store::fetch(work, &plan.parts, plan.store_k(), vec![x, y], ids)?;
        if f.id(x) == f.id(y) {
            first_repeat = Some((x, y));
        }
    }
    if let Some((x, y)) = first_repeat {
        let f = store::fetch(work, &plan.parts, plan.store_k(), vec![x, y], ids)?;
        let place = |d: u32| {
            let (file, row) = plan.locate(d as u64);
            format!("{file} row {row}")
        };
        return Err(Error::DuplicateId {
            id: f.id(x).to_string(),
            first: place(x),
            second: place(y),
        });
    }
    Ok(())
}

/// The cluster task: union-find over all documents with the edges streamed part by part, then the
/// keeper of each cluster, written per part.
pub fn run(work: &OutputDir, plan: &Plan) -> Result<ClusterStats> {
    let cfg = &plan.config;
    if !cfg.allow_duplicate_ids {
        check_unique_ids(work, plan)?;
    }
    let n = plan.documents as usize;
    let mut uf = UnionFind::new(n);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("edges", p))?;
        let (a, b) = (u32s(&df, "a", "cluster")?, u32s(&df, "b", "cluster")?);
        for (x, y) in a.into_iter().zip(b) {
            uf.union(x, y);
        }
    }
    // Keep data, read only when the rule needs it.
    let keep_column = |name: &str| -> Result<Vec<Option<f64>>> {
        let mut out = Vec::with_capacity(n);
        for p in 0..plan.parts.len() {
            let df = work.read_parquet(&part_file("docs", p))?;
            let c = df
                .column(name)
                .map_err(pe("cluster"))?
                .cast(&DataType::Float64)
                .map_err(pe("cluster"))?;
            out.extend(c.f64().map_err(pe("cluster"))?.iter());
        }
        Ok(out)
    };
    let (text_len, priority) = match &cfg.keep {
        crate::config::Keep::First => (Vec::new(), Vec::new()),
        crate::config::Keep::Longest => (keep_column("text_len")?, Vec::new()),
        crate::config::Keep::Column(_) => (Vec::new(), keep_column("priority")?),
    };
    let clusters = Clusters::build(
        uf,
        &cfg.keep,
        |d| text_len[d as usize].unwrap_or(0.0) as usize,
        |d| priority[d as usize],
    );
    drop((text_len, priority));
    // Similarity to the keeper where a verified edge joins them (a second pass over the edges,
    // 4 bytes per document); the manifest computes the rest.
    let mut to_keeper = vec![f32::NAN; n];
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("edges", p))?;
        let (a, b) = (u32s(&df, "a", "cluster")?, u32s(&df, "b", "cluster")?);
        let sim = series(&df, "similarity", "cluster")?;
        let sim = sim.f32().map_err(pe("cluster"))?;
        for ((x, y), s) in a.into_iter().zip(b).zip(sim.into_no_null_iter()) {
            if clusters.keeper_of(y) == x {
                to_keeper[y as usize] = s;
            } else if clusters.keeper_of(x) == y {
                to_keeper[x as usize] = s;
            }
        }
    }
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let docs = r.start as u32..r.end as u32;
        let keeper: Vec<u32> = docs.clone().map(|d| clusters.keeper_of(d)).collect();
        let similarity: Vec<Option<f32>> = docs
            .clone()
            .map(|d| Some(to_keeper[d as usize]).filter(|s| !s.is_nan()))
            .collect();
        let cluster_id: Vec<Option<u64>> = docs
            .map(|d| clusters.cluster_id(d).map(u64::from))
            .collect();
        write_frame(
            work,
            &part_file("cluster", p),
            "cluster",
            vec![
                Column::new("keeper".into(), keeper),
                Column::new("cluster_id".into(), cluster_id),
                Column::new("similarity".into(), similarity),
            ],
        )?;
    }
    let hist = clusters.size_histogram();
    Ok(ClusterStats {
        documents_kept: (0..n as u32)
            .filter(|&d| clusters.keeper_of(d) == d)
            .count() as u64,
        clusters: hist.iter().map(|&(_, c)| c).sum(),
        cluster_size_histogram: hist.iter().map(|&(s, c)| (s.to_string(), c)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(a: u32, b: u32) -> (u32, u32) {
        (a, b)
    }

    fn cluster(
        n: usize,
        edges: &[(u32, u32)],
        keep: &Keep,
        text_len: impl Fn(u32) -> usize,
        priority: impl Fn(u32) -> Option<f64>,
    ) -> Clusters {
        let mut uf = UnionFind::new(n);
        for &(a, b) in edges {
            uf.union(a, b);
        }
        Clusters::build(uf, keep, text_len, priority)
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
