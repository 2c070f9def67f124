//! Stage `cluster` (one task): every part's edges and exact copies -> each document's keeper,
//! written per part (`cluster/pP.parquet`: keeper, cluster_id, similarity to the keeper where
//! the rule knows it). It also checks that ids are unique (unless `--allow-duplicate-ids`).
//!
//! Two rules (`--cluster`):
//! - `keeper` ([`keeper`] the task's part, [`rule`] the rule): documents in keep order, each dropped only
//!   against a verified near-duplicate kept before it; a cluster is a keeper and the documents
//!   dropped against it, its id the keeper's global index. With `--keep first` and no `--index`
//!   or `--across` (the default) it runs streamed, part by part ([`stream`]).
//! - `components`: the edges streamed into a union-find over all documents; one document kept
//!   per connected component (`--keep`). A cluster's root is its first document in input order
//!   ([`crate::unionfind::UnionFind`] makes the smaller root the root), whatever order the edges arrive in; its
//!   global index is the cluster's stable id.
//!
//! Memory: the id check and the exact-copy pass take a range of hashes at a time, 4 bytes per
//! document ([`hashes::passes`]); the streamed rule ~7 bytes per document on short documents
//! ([`stream`]); otherwise 28-30 bytes per document for `components` (union-find, sizes,
//! keepers, similarity, the outcome), ~24 bytes per document and 8 per verified edge for
//! `keeper`, plus 12 (a keep order and the rule's view of it) and the keep column with `--keep
//! longest` or `--keep COLUMN`.

use polars::prelude::*;
use serde::{Deserialize, Serialize};

mod components;
mod copies;
mod groups;
mod hashes;
mod keeper;
mod order;
mod rule;
mod stream;
mod sweep;

pub(crate) use rule::NOT_TONIGHT;

/// In cluster files, the keeper of a document dropped against an indexed document (the
/// in-memory rules' [`NOT_TONIGHT`]).
pub(crate) const INDEXED_KEEPER: u64 = u64::MAX;

pub use components::Clusters;
pub(crate) use copies::Copied;
use copies::{most_copied, prior_copies, write_copies};
use hashes::{check_unique_ids, first_copies};
pub(crate) use keeper::GiantStats;
pub(crate) use sweep::SweepRow;

use std::collections::BTreeMap;

use crate::config::{ClusterRule, Keep};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{doc_column, part_file, polars_err as pe, series, u32s, u64s, write_frame};
use crate::plan::{doc32, Plan};

/// Counters of the cluster task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClusterStats {
    pub documents_kept: u64,
    /// Documents whose normalised text equals an earlier document's (tonight's, or with
    /// `--index` an indexed one's): settled by the exact pre-pass.
    #[serde(default)]
    pub exact_duplicates: u64,
    /// `--index`: documents dropped against each earlier batch.
    #[serde(default)]
    pub dropped_against: std::collections::BTreeMap<String, u64>,
    pub clusters: u64,
    pub cluster_size_histogram: std::collections::BTreeMap<String, u64>,
    /// `--cluster keeper` with `--index`: documents of each earlier batch renewed tonight.
    #[serde(default)]
    pub renewed: std::collections::BTreeMap<String, u64>,
    /// `--cluster keeper`: how the giant buckets were resolved.
    #[serde(default)]
    pub giant_buckets: Option<keeper::GiantStats>,
    /// `--index`: the indexed documents tonight was dropped against with the most copies so far.
    #[serde(default)]
    pub most_copied: Vec<Copied>,
    /// `--reference`: documents holding benchmark text that are also near-duplicates of a kept
    /// document (tonight's or an indexed one).
    #[serde(default)]
    pub contaminated_duplicates: u64,
    /// `--sweep`: what each listed threshold would drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<sweep::SweepRow>,
}

/// A match of one of tonight's documents in the retained index (from the lookup stage).
#[derive(Debug, Clone)]
pub(crate) struct IndexMatch {
    pub doc: u32,
    /// Position of the batch in the plan's compare list (oldest first).
    pub batch: u32,
    pub xdoc: u32,
    pub similarity: f32,
    pub exact: bool,
    pub xid: String,
    pub xrec: Vec<u8>,
}

/// Every lookup task's matches.
#[derive(Debug, Default)]
pub(crate) struct IndexMatches {
    pub matches: Vec<IndexMatch>,
}

impl IndexMatches {
    /// Reads the lookup files (none when the run has no lookup stage).
    pub(crate) fn read(work: &OutputDir, plan: &Plan) -> Result<IndexMatches> {
        let mut matches = Vec::new();
        if plan.tasks(crate::plan::Stage::Lookup) == 0 {
            return Ok(IndexMatches { matches });
        }
        let st = "cluster";
        for p in 0..plan.parts.len() {
            let df = work.read_parquet(&crate::io::work::lookup_file(p))?;
            let doc = u32s(&df, "doc", st)?;
            let batch = u32s(&df, "batch", st)?;
            let xdoc = u32s(&df, "xdoc", st)?;
            let sim = series(&df, "similarity", st)?;
            let exact = series(&df, "exact", st)?;
            let xid = series(&df, "xid", st)?;
            let xrec = series(&df, "xrec", st)?;
            let (sim, exact) = (sim.f32().map_err(pe(st))?, exact.bool().map_err(pe(st))?);
            let (xid, xrec) = (xid.str().map_err(pe(st))?, xrec.binary().map_err(pe(st))?);
            for i in 0..doc.len() {
                matches.push(IndexMatch {
                    doc: doc[i],
                    batch: batch[i],
                    xdoc: xdoc[i],
                    similarity: sim.get(i).unwrap_or(0.0),
                    exact: exact.get(i).unwrap_or(false),
                    xid: xid.get(i).unwrap_or("").to_string(),
                    xrec: xrec.get(i).unwrap_or(&[]).to_vec(),
                });
            }
        }
        Ok(IndexMatches { matches })
    }
}

/// What either rule decides, per document.
pub(crate) struct Outcome {
    /// The document itself when kept, its keeper when dropped, [`NOT_TONIGHT`] when its keeper is
    /// an indexed document.
    pub keeper: Vec<u32>,
    /// Similarity to the keeper where the rule knows it (NaN otherwise: the manifest computes it).
    pub similarity: Vec<f32>,
    /// Cluster id ([`NOT_TONIGHT`] for a document alone in its cluster).
    pub cluster: Vec<u32>,
    /// The index match (position in [`IndexMatches::matches`]) whose document is the keeper
    /// ([`NOT_TONIGHT`] unless the keeper is [`NOT_TONIGHT`]); empty when nothing matched the index.
    pub anchor: Vec<u32>,
}

impl Outcome {
    /// The index match whose document is `d`'s keeper, or [`NOT_TONIGHT`].
    fn anchor(&self, d: usize) -> u32 {
        self.anchor.get(d).copied().unwrap_or(NOT_TONIGHT)
    }

    /// (document, index match) of every document whose keeper is an indexed document.
    fn anchored(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        (self.anchor.iter().enumerate())
            .filter(|&(_, &a)| a != NOT_TONIGHT)
            .map(|(d, &a)| (d, a))
    }
}

/// [`each_edge`] for the in-memory rules, which number documents in 32 bits.
pub(crate) fn each_edge32(
    work: &OutputDir,
    plan: &Plan,
    f: &mut dyn FnMut(u32, u32, f32),
) -> Result<()> {
    each_edge(work, plan, &mut |a, b, s| f(doc32(a), doc32(b), s))
}

/// Streams every verified edge `(a, b, similarity)` of the run to `f`, part by part.
pub(crate) fn each_edge(
    work: &OutputDir,
    plan: &Plan,
    f: &mut dyn FnMut(u64, u64, f32),
) -> Result<()> {
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("edges", p))?;
        let (a, b) = (u64s(&df, "a", "cluster")?, u64s(&df, "b", "cluster")?);
        let sim = series(&df, "similarity", "cluster")?;
        let sim = sim.f32().map_err(pe("cluster"))?;
        for ((x, y), s) in a.into_iter().zip(b).zip(sim.into_no_null_iter()) {
            f(x, y, s);
        }
    }
    Ok(())
}

/// The keep data of the rule (`--keep longest`: text lengths; `--keep COLUMN`: priorities),
/// read only when the rule needs it.
pub(crate) struct KeepData {
    pub text_len: Vec<Option<f64>>,
    pub priority: Vec<Option<f64>>,
}

impl KeepData {
    fn read(work: &OutputDir, plan: &Plan) -> Result<KeepData> {
        let n = plan.documents as usize;
        let column = |name: &str| -> Result<Vec<Option<f64>>> {
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
        Ok(match &plan.config.keep {
            Keep::First => KeepData {
                text_len: Vec::new(),
                priority: Vec::new(),
            },
            Keep::Longest => KeepData {
                text_len: column("text_len")?,
                priority: Vec::new(),
            },
            Keep::Column(_) | Keep::Ranked { .. } => KeepData {
                text_len: Vec::new(),
                priority: column("priority")?,
            },
        })
    }

    fn text_len(&self, d: u32) -> usize {
        self.text_len[d as usize].unwrap_or(0.0) as usize
    }

    fn priority(&self, d: u32) -> Option<f64> {
        self.priority[d as usize]
    }
}

/// The cluster task: the rule of `--cluster` over every document, written per part; with
/// `--sweep`, the rule again at each listed threshold, counted.
pub(crate) fn run(work: &OutputDir, plan: &Plan) -> Result<ClusterStats> {
    let cfg = &plan.config;
    if !cfg.allow_duplicate_ids {
        check_unique_ids(work, plan)?;
    }
    let across =
        crate::io::doc_columns::across_keys(work, plan.parts.len(), plan.config.across.is_some())?;
    let groups = first_copies(work, plan, &across)?;
    let sweep = match cfg.sweep.is_empty() {
        true => None,
        false => Some((groups.dense(plan.documents as usize), across.clone())),
    };
    let mut stats = match streamed(plan) {
        true => stream::run(work, plan, groups)?,
        false => rule_outcome(work, plan, groups, across)?,
    };
    if let Some((first_copy, across)) = sweep {
        let contaminated = crate::io::doc_columns::all_contaminated(
            work,
            plan.parts.len(),
            cfg.reference.is_some(),
        )?;
        stats.sweep = sweep::rows(work, plan, &first_copy, &contaminated, &across)?;
    }
    Ok(stats)
}

/// The in-memory rules' outcome ([`keeper`], [`components`]), written per part.
fn rule_outcome(
    work: &OutputDir,
    plan: &Plan,
    groups: groups::Groups,
    across: Vec<u64>,
) -> Result<ClusterStats> {
    let cfg = &plan.config;
    let n = plan.documents as usize;
    let first_copy = groups.dense(n);
    drop(groups);
    let index = IndexMatches::read(work, plan)?;
    let keep = KeepData::read(work, plan)?;
    // `--reference`: documents holding benchmark text, never kept.
    let contaminated = crate::io::doc_columns::all_contaminated(
        work,
        plan.parts.len(),
        plan.config.reference.is_some(),
    )?;
    let (out, giant, renewed) = match cfg.cluster {
        ClusterRule::Components => {
            let out = components::outcome(work, plan, &first_copy, &index, keep)?;
            (out, None, Default::default())
        }
        ClusterRule::Keeper => {
            let (out, giant) =
                keeper::outcome(work, plan, &first_copy, &index, keep, across, &contaminated)?;
            let renewed = keeper::write_renewals(work, plan, &out, &index)?;
            (out, Some(giant), renewed)
        }
    };
    let exact_in_index: ahash::AHashSet<u32> = index
        .matches
        .iter()
        .filter(|m| m.exact)
        .map(|m| m.doc)
        .collect();
    // Under `--across` copies of one value are all kept: only dropped ones count.
    let copy_dropped = |d: u32| cfg.across.is_none() || out.keeper[d as usize] != d;
    let exact_duplicates = (0..n as u32)
        .filter(|&d| {
            (first_copy[d as usize] != d && copy_dropped(d)) || exact_in_index.contains(&d)
        })
        .count() as u64;
    drop(first_copy);
    let prior = prior_copies(plan, &index)?;
    let size = cluster_sizes(&out, &index, &prior);
    let kept =
        |d: usize| out.keeper[d] == d as u32 && !contaminated.get(d).copied().unwrap_or(false);
    if plan.index.is_some() {
        write_copies(work, plan, &out, &index, &size, &kept)?;
    }
    let names: Vec<&str> = plan
        .index
        .iter()
        .flat_map(|ip| ip.compare.iter().map(|b| b.name.as_str()))
        .collect();
    let mut dropped_against = std::collections::BTreeMap::new();
    for (_, a) in out.anchored() {
        let b = index.matches[a as usize].batch as usize;
        *dropped_against.entry(names[b].to_string()).or_insert(0u64) += 1;
    }
    // `--paragraphs`, `--substrings`: each kept document's position in keep order, for their
    // stages.
    let rank = match cfg.paragraphs.is_some() || cfg.substrings.is_some() {
        true => Some(order::keep_order(plan, &KeepData::read(work, plan)?)),
        false => None,
    };
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let docs = r.start as usize..r.end as usize;
        let keeper = (out.keeper[docs.clone()].iter())
            .map(|&k| {
                if k == NOT_TONIGHT {
                    INDEXED_KEEPER
                } else {
                    k.into()
                }
            })
            .collect();
        let cluster_id = (out.cluster[docs.clone()].iter())
            .map(|&c| (c != NOT_TONIGHT).then_some(u64::from(c)))
            .collect();
        let mut columns = outcome_columns(
            keeper,
            &out.similarity[docs.clone()],
            cluster_id,
            size[docs.clone()].to_vec(),
        );
        if let Some(rank) = &rank {
            let keep_rank: Vec<Option<u32>> = docs
                .clone()
                .map(|d| kept(d).then_some(rank.of(d as u32)))
                .collect();
            columns.push(Column::new("keep_rank".into(), keep_rank));
        }
        if let Some(ip) = &plan.index {
            // The batch of each dropped document's keeper, and for an indexed keeper its id and
            // record (the record only where the similarity must still be computed).
            let mut batch: Vec<Option<&str>> = Vec::new();
            let mut id: Vec<Option<&str>> = Vec::new();
            let mut rec: Vec<Option<&[u8]>> = Vec::new();
            for d in docs {
                match out.anchor(d) {
                    NOT_TONIGHT => {
                        let dropped = out.keeper[d] != d as u32;
                        batch.push(dropped.then_some(ip.batch.as_str()));
                        id.push(None);
                        rec.push(None);
                    }
                    a => {
                        let m = &index.matches[a as usize];
                        batch.push(Some(names[m.batch as usize]));
                        id.push(Some(m.xid.as_str()));
                        let known = !out.similarity[d].is_nan();
                        rec.push((!known).then_some(m.xrec.as_slice()));
                    }
                }
            }
            columns.push(Column::new("duplicate_of_batch".into(), batch));
            columns.push(Column::new("indexed_id".into(), id));
            columns.push(Column::new("indexed_record".into(), rec));
        }
        write_frame(work, &part_file("cluster", p), "cluster", columns)?;
    }
    let hist = size_histogram(&out.cluster);
    let most_copied = most_copied(&out, &index, &size, &names);
    Ok(ClusterStats {
        most_copied,
        exact_duplicates,
        dropped_against,
        documents_kept: (0..n).filter(|&d| kept(d)).count() as u64,
        contaminated_duplicates: (0..n)
            .filter(|&d| contaminated.get(d).copied().unwrap_or(false) && out.keeper[d] != d as u32)
            .count() as u64,
        clusters: hist.iter().map(|&(_, c)| c).sum(),
        cluster_size_histogram: hist.iter().map(|&(s, c)| (s.to_string(), c)).collect(),
        giant_buckets: giant,
        renewed,
        sweep: Vec::new(),
    })
}

/// Whether the cluster task runs the keeper rule streamed ([`stream`]): `--cluster keeper`,
/// `--keep first`, without `--index` or `--across`.
fn streamed(plan: &Plan) -> bool {
    plan.index.is_none() && crate::plan::in_memory_rule(&plan.config).is_none()
}

/// The columns of a cluster file every rule writes for a part's documents.
fn outcome_columns(
    keeper: Vec<u64>,
    similarity: &[f32],
    cluster_id: Vec<Option<u64>>,
    size: Vec<u32>,
) -> Vec<Column> {
    let similarity: Vec<Option<f32>> = similarity
        .iter()
        .map(|&s| Some(s).filter(|s| !s.is_nan()))
        .collect();
    vec![
        doc_column("keeper", keeper),
        Column::new("cluster_id".into(), cluster_id),
        Column::new("cluster_size".into(), size),
        Column::new("similarity".into(), similarity),
    ]
}

/// Each document's cluster size: a kept document and the documents dropped against it in this
/// run; a dropped document carries its keeper's. An indexed keeper counts its copies before
/// tonight (`prior`, by (batch, number)) and tonight's documents dropped against it.
fn cluster_sizes(
    out: &Outcome,
    index: &IndexMatches,
    prior: &BTreeMap<(u32, u32), u32>,
) -> Vec<u32> {
    let n = out.keeper.len();
    let mut size = vec![0u32; n];
    let mut indexed: ahash::AHashMap<(u32, u32), u32> = ahash::AHashMap::new();
    let of_anchor = |d: usize| {
        let m = &index.matches[out.anchor(d) as usize];
        (m.batch, m.xdoc)
    };
    for (d, &k) in out.keeper.iter().enumerate() {
        match k {
            NOT_TONIGHT => {
                let x = of_anchor(d);
                let before = prior.get(&x).copied().unwrap_or(1);
                *indexed.entry(x).or_insert(before) += 1;
            }
            k => size[k as usize] += 1,
        }
    }
    (0..n)
        .map(|d| match out.keeper[d] {
            NOT_TONIGHT => indexed[&of_anchor(d)],
            k => size[k as usize],
        })
        .collect()
}

/// Histogram of cluster sizes >= 2 (members of this run): (size, count), ascending by size.
fn size_histogram(cluster: &[u32]) -> Vec<(u32, u64)> {
    let mut size: ahash::AHashMap<u32, u32> = ahash::AHashMap::new();
    for &c in cluster.iter().filter(|&&c| c != NOT_TONIGHT) {
        *size.entry(c).or_insert(0) += 1;
    }
    let mut h = std::collections::BTreeMap::new();
    for &s in size.values().filter(|&&s| s > 1) {
        *h.entry(s).or_insert(0u64) += 1;
    }
    h.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unionfind::UnionFind;

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
