//! The keeper rule in a few bytes per document, for `--keep first` without `--index` or
//! `--across` (the default): input order is keep order, so the rule decides the documents as
//! the parts hold them, and what it must remember of a decided document is one bit (kept),
//! except for a text with later copies that was dropped (its keeper and similarity, for them).
//!
//! The edges are read in ranges of parts: each edge is named by its two groups
//! ([`Groups`]) and belongs to the later one, where it is decided; a range holds at most
//! [`RANGE_BYTES_PER_DOC`] bytes per document of the run of them (a part's edges at least),
//! sorted. The outcome of a part goes to `cluster-rule/pP.parquet` as it is decided; once all
//! are, the cluster sizes are known (a sorted list of each keeper and its drops) and each part's
//! cluster file is written from its outcome.
//!
//! Memory (document numbers are 64-bit): a bit per document kept, [`Groups`] (~0.375 bytes per
//! document and 8 per later copy), 24 bytes per dropped text with later copies, 8 per dropped
//! document while deciding (then 12 per cluster, in their place), one range of edges (24 bytes
//! each) and the giant buckets' members ([`super::keeper::Giants`]). The result is the in-memory
//! rule's ([`super::rule`]), byte for byte: a property test holds them equal.

use std::ops::Range;

use polars::prelude::Column;

use super::groups::{bit, Groups};
use super::keeper::Giants;
use super::order::Best;
use super::rule::Lazy;
use super::{outcome_columns, ClusterStats};
use crate::error::Result;
use crate::io::doc_columns;
use crate::io::output::OutputDir;
use crate::io::work::{doc_column, f32s, part_file, u64s, write_frame};
use crate::plan::{doc32, Plan};

/// What a range of edges may hold, over the run's documents (or [`RANGE_BYTES`]).
const RANGE_BYTES_PER_DOC: usize = 2;
const RANGE_BYTES: usize = 32 << 20;

/// An edge between two groups: (later, earlier, similarity).
type Edge = (u64, u64, f32);

/// The rule's state as it goes through the documents in input order.
struct Decider<'a, L: Lazy> {
    groups: &'a Groups,
    lazy: L,
    /// Bit `g`: group `g` is kept.
    kept: Vec<u64>,
    /// Dropped groups with later copies: (group, keeper, similarity), ascending.
    dropped_texts: Vec<(u64, u64, f32)>,
    /// The keeper of every dropped document so far.
    drops: Vec<u64>,
}

impl<'a, L: Lazy> Decider<'a, L> {
    fn new(n: usize, groups: &'a Groups, lazy: L) -> Self {
        Decider {
            groups,
            lazy,
            kept: vec![0; n.div_ceil(64)],
            dropped_texts: Vec::new(),
            drops: Vec::new(),
        }
    }

    fn is_kept(&self, g: u64) -> bool {
        bit(&self.kept, g)
    }

    /// Decides document `d` (each in turn, in input order) from its edges to earlier groups
    /// (`earlier`: group and similarity); returns its keeper (itself when kept or alone) and the
    /// similarity to it (NaN when kept or alone). `never_kept`: it holds benchmark text.
    fn decide(&mut self, d: u64, earlier: &[(u64, f32)], never_kept: bool) -> Result<(u64, f32)> {
        let g = self.groups.group(d);
        let out = match g == d {
            true => self.decide_text(d, earlier, never_kept)?,
            // A later copy follows its text's decision.
            false if self.is_kept(g) => (g, 1.0),
            false => match self.dropped_texts.binary_search_by_key(&g, |t| t.0) {
                Ok(i) => (self.dropped_texts[i].1, self.dropped_texts[i].2),
                Err(_) => (d, f32::NAN),
            },
        };
        if out.0 != d {
            self.drops.push(out.0);
        }
        Ok(out)
    }

    /// A first copy: dropped against its most similar kept earlier neighbour, else kept (or
    /// alone when never kept), as [`super::rule`] decides a group.
    fn decide_text(&mut self, g: u64, earlier: &[(u64, f32)], never: bool) -> Result<(u64, f32)> {
        let mut best = Best::default();
        for &(u, s) in earlier {
            if self.is_kept(u) {
                best.offer(u, s, u);
            }
        }
        let kept = &self.kept;
        self.lazy.compare(g, &mut |u, s| {
            if bit(kept, u) {
                best.offer(u, s, u);
            }
        })?;
        Ok(match best.found() {
            Some((u, s)) => {
                if self.groups.has_copies(g) {
                    self.dropped_texts.push((g, u, s));
                }
                (u, s)
            }
            None if never => (g, f32::NAN),
            None => {
                self.kept[(g / 64) as usize] |= 1 << (g % 64);
                self.lazy.kept(g);
                (g, f32::NAN)
            }
        })
    }

    /// Each keeper with documents dropped against it, and how many: ascending. The keepers
    /// take the place of the drops (no second array of them).
    fn clusters(self) -> (DropCounts, L) {
        let mut keepers = self.drops;
        keepers.sort_unstable();
        let mut drops = Vec::new();
        let mut kept = 0;
        for i in 0..keepers.len() {
            match kept > 0 && keepers[kept - 1] == keepers[i] {
                // A cluster of more than 2^32 - 1 documents says so in 32 bits.
                true => drops[kept - 1] = u32::saturating_add(drops[kept - 1], 1),
                false => {
                    keepers[kept] = keepers[i];
                    drops.push(1u32);
                    kept += 1;
                }
            }
        }
        keepers.truncate(kept);
        keepers.shrink_to_fit();
        (DropCounts { keepers, drops }, self.lazy)
    }
}

/// Each keeper with documents dropped against it (ascending), and how many.
struct DropCounts {
    keepers: Vec<u64>,
    drops: Vec<u32>,
}

impl DropCounts {
    /// The drops of keeper `k`, when it is at `i` (0 otherwise).
    fn at(&self, i: usize, k: u64) -> u32 {
        match self.keepers.get(i) == Some(&k) {
            true => self.drops[i],
            false => 0,
        }
    }

    /// The drops of keeper `k` (0 for a document no one was dropped against).
    fn of(&self, k: u64) -> u32 {
        self.keepers.binary_search(&k).map_or(0, |i| self.drops[i])
    }
}

/// The edges whose later group is in `docs`, as (later, earlier, similarity) groups, sorted.
fn range_edges(
    work: &OutputDir,
    plan: &Plan,
    groups: &Groups,
    docs: Range<u64>,
) -> Result<Vec<Edge>> {
    let mut edges = Vec::new();
    super::each_edge(work, plan, &mut |a, b, s| {
        if let Some((l, e)) = later_earlier(groups, a, b) {
            if docs.contains(&l) {
                edges.push((l, e, s));
            }
        }
    })?;
    // Edges of one pair of groups in any order: the rule's choice does not depend on it.
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    Ok(edges)
}

/// An edge's two groups, later first; `None` within one group.
fn later_earlier(groups: &Groups, a: u64, b: u64) -> Option<(u64, u64)> {
    let (x, y) = (groups.group(a), groups.group(b));
    (x != y).then(|| (x.max(y), x.min(y)))
}

/// Consecutive parts whose edges fit in one range (a part at least).
fn part_ranges(work: &OutputDir, plan: &Plan, groups: &Groups) -> Result<Vec<Range<usize>>> {
    let mut per_part = vec![0usize; plan.parts.len()];
    super::each_edge(work, plan, &mut |a, b, _| {
        if let Some((l, _)) = later_earlier(groups, a, b) {
            per_part[plan.part_of(l)] += 1;
        }
    })?;
    let n = plan.documents as usize;
    let floor = crate::hooks::cluster_bytes(RANGE_BYTES);
    let budget = (RANGE_BYTES_PER_DOC * n).max(floor) / std::mem::size_of::<Edge>();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut held = 0;
    for (p, &e) in per_part.iter().enumerate() {
        match ranges.last_mut() {
            Some(r) if held + e <= budget => r.end = p + 1,
            _ => {
                ranges.push(p..p + 1);
                held = 0;
            }
        }
        held += e;
    }
    Ok(ranges)
}

fn rule_file(p: usize) -> String {
    part_file("cluster-rule", p)
}

/// The cluster task under the streamed rule: every part's cluster file, and the task's counts.
pub(super) fn run(work: &OutputDir, plan: &Plan, groups: Groups) -> Result<ClusterStats> {
    let n = plan.documents as usize;
    let refs = plan.config.reference.is_some();
    let giants = Giants::read(work, plan, |d| groups.group(d), Vec::new())?;
    let mut rule = Decider::new(n, &groups, giants);
    for parts in part_ranges(work, plan, &groups)? {
        let docs = plan.part_range(parts.start).start..plan.part_range(parts.end - 1).end;
        let edges = range_edges(work, plan, &groups, docs)?;
        let mut at = 0;
        for p in parts {
            let never = doc_columns::contaminated(work, p, refs)?;
            let r = plan.part_range(p);
            let (mut keeper, mut similarity) = (Vec::new(), Vec::new());
            let mut earlier: Vec<(u64, f32)> = Vec::new();
            for (j, d) in r.enumerate() {
                earlier.clear();
                while let Some(&(_, u, s)) = edges.get(at).filter(|e| e.0 == d) {
                    earlier.push((u, s));
                    at += 1;
                }
                let never = never.get(j).copied().unwrap_or(false);
                let (k, s) = rule.decide(d, &earlier, never)?;
                keeper.push(k);
                similarity.push(Some(s).filter(|s| !s.is_nan()));
            }
            let columns = vec![
                doc_column("keeper", keeper),
                Column::new("similarity".into(), similarity),
            ];
            write_frame(work, &rule_file(p), "cluster", columns)?;
        }
    }
    let (clusters, giants) = rule.clusters();
    let copies = groups.copies() as u64;
    drop(groups);
    let mut stats = write_parts(work, plan, &clusters, refs)?;
    stats.exact_duplicates = copies;
    stats.giant_buckets = Some(giants.stats());
    Ok(stats)
}

/// Each part's cluster file from its outcome and the cluster sizes; the counts of the task.
fn write_parts(
    work: &OutputDir,
    plan: &Plan,
    clusters: &DropCounts,
    refs: bool,
) -> Result<ClusterStats> {
    let keepers = &clusters.keepers;
    let ranks = plan.config.paragraphs.is_some() || plan.config.substrings.is_some();
    let mut stats = ClusterStats::default();
    for p in 0..plan.parts.len() {
        let r = plan.part_range(p);
        let df = work.read_parquet(&rule_file(p))?;
        let keeper = u64s(&df, "keeper", "cluster")?;
        let similarity = f32s(&df, "similarity", "cluster")?;
        let never = doc_columns::contaminated(work, p, refs)?;
        let mut cluster = Vec::with_capacity(keeper.len());
        let mut size = Vec::with_capacity(keeper.len());
        let mut keep_rank: Vec<Option<u32>> = Vec::new();
        // The part's own keepers by a cursor in order (a search for each was ~10% of the task at
        // 10^7), the others' (a dropped document's) looked up.
        let mut at = keepers.partition_point(|&k| k < r.start);
        for (j, (d, &k)) in r.zip(&keeper).enumerate() {
            let drops = match k == d {
                true => {
                    while keepers.get(at).is_some_and(|&x| x < d) {
                        at += 1;
                    }
                    clusters.at(at, d)
                }
                false => clusters.of(k),
            };
            cluster.push((k != d || drops > 0).then_some(k));
            size.push(drops.saturating_add(1));
            let contaminated = never.get(j).copied().unwrap_or(false);
            let kept = k == d && !contaminated;
            stats.documents_kept += u64::from(kept);
            stats.contaminated_duplicates += u64::from(contaminated && k != d);
            if ranks {
                keep_rank.push(kept.then(|| doc32(d)));
            }
        }
        let mut columns = outcome_columns(keeper, &similarity, cluster, size);
        if ranks {
            columns.push(Column::new("keep_rank".into(), keep_rank));
        }
        write_frame(work, &part_file("cluster", p), "cluster", columns)?;
        work.remove(&rule_file(p))?;
    }
    stats.clusters = keepers.len() as u64;
    let mut hist = std::collections::BTreeMap::new();
    for &drops in &clusters.drops {
        *hist.entry(u64::from(drops) + 1).or_insert(0u64) += 1;
    }
    stats.cluster_size_histogram = hist.into_iter().map(|(s, c)| (s.to_string(), c)).collect();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::super::groups::{dense_groups, from_dense};
    use super::super::order::Rank;
    use super::super::rule::{keepers, Documents, NoLazy};
    use super::*;
    use proptest::prelude::*;

    /// The streamed rule over documents in input order, its edges given in memory.
    fn streamed(group: &[u32], edges: &[(u32, u32, f32)], never: &[bool]) -> Vec<(u32, f32)> {
        let n = group.len();
        let groups = from_dense(group);
        let mut sorted: Vec<Edge> = (edges.iter())
            .filter_map(|&(a, b, s)| {
                later_earlier(&groups, a.into(), b.into()).map(|(l, e)| (l, e, s))
            })
            .collect();
        sorted.sort_unstable_by_key(|e| (e.0, e.1));
        let mut rule = Decider::new(n, &groups, NoLazy);
        (0..n as u64)
            .map(|d| {
                let earlier: Vec<(u64, f32)> = (sorted.iter())
                    .filter(|e| e.0 == d)
                    .map(|e| (e.1, e.2))
                    .collect();
                let (k, s) = rule.decide(d, &earlier, never[d as usize]).unwrap();
                (doc32(k), s)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn streamed_rule_equals_the_rule(
            firsts in proptest::collection::vec(0u32..30, 1..60),
            raw in proptest::collection::vec((0u32..60, 0u32..60, 80u32..101), 0..120),
            never in proptest::collection::vec(proptest::bool::weighted(0.1), 60),
        ) {
            let n = firsts.len();
            let group = dense_groups(&firsts);
            // Copies share never-kept (it is a function of the text).
            let never: Vec<bool> = (0..n).map(|d| never[group[d] as usize]).collect();
            let edges: Vec<(u32, u32, f32)> = raw.iter()
                .filter(|&&(a, b, _)| (a as usize) < n && (b as usize) < n && a != b)
                .map(|&(a, b, s)| (a, b, s as f32 / 100.0))
                .collect();
            let docs = Documents { rank: &Rank::Input(n), group: &group, copies_kept: false, never_kept: &never };
            let each = |f: &mut dyn FnMut(u32, u32, f32)| {
                edges.iter().for_each(|&(a, b, s)| f(a, b, s));
                Ok(())
            };
            let want = keepers(&docs, |_| false, each, &mut NoLazy).unwrap();
            let got = streamed(&group, &edges, &never);
            for (d, &(keeper, x)) in got.iter().enumerate() {
                prop_assert_eq!(keeper, want.keeper[d], "keeper of {}", d);
                let y = want.similarity[d];
                prop_assert!(x == y || (x.is_nan() && y.is_nan()), "similarity of {}", d);
            }
        }
    }
}
