//! `--sweep`: what the run's rule would drop at each listed threshold, from the sweep stage's
//! pairs ([`crate::stages::sweep`]): the rule once per threshold over the pairs that reach it,
//! exact copies and keep order as the run's, then one pass over the parts' document files for
//! the text removed, per `--report-group` value too.
//!
//! The counts are those of a run at that threshold up to its candidates: the sweep's layout and
//! the run's together; the run's giant buckets compared lazily as a run at that threshold would
//! (`keeper`), the sweep's linked as a star. Memory: the rule's (~25 bytes per document and 8
//! per pair reaching the threshold, one threshold at a time) and a bit per document and
//! threshold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::groups::bit;
use super::keeper::Giants;
use super::order::keep_order;
use super::rule::{keepers, Documents};
use super::KeepData;
use crate::config::ClusterRule;
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{part_file, polars_err as pe, series, u32s, u64s, write_frame};
use crate::plan::{doc32, Plan};
use crate::stages::sweep::sweep_file;
use crate::unionfind::UnionFind;
use polars::prelude::Column;

/// Drops and text removed at one threshold (of a `--report-group` value, or of the run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Removed {
    pub dropped: u64,
    pub text_bytes: u64,
}

/// One threshold of the sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SweepRow {
    pub threshold: f64,
    pub dropped: u64,
    /// Text bytes of the dropped documents.
    pub text_bytes: u64,
    /// The share of pairs at exactly this similarity that the run's and the sweep's layouts
    /// together find as candidates.
    pub lsh_recall: f64,
    /// Per `--report-group` value (empty without one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, Removed>,
}

/// Streams the sweep pairs that reach threshold `i` (its bit) to `f`, part by part.
fn each_pair(
    work: &OutputDir,
    plan: &Plan,
    i: usize,
    f: &mut dyn FnMut(u32, u32, f32),
) -> Result<()> {
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&sweep_file(p))?;
        let (a, b) = (u64s(&df, "a", "cluster")?, u64s(&df, "b", "cluster")?);
        let reached = u32s(&df, "reached", "cluster")?;
        let sim = series(&df, "similarity", "cluster")?;
        let sim = sim.f32().map_err(pe("cluster"))?;
        for (((x, y), r), s) in a
            .into_iter()
            .zip(b)
            .zip(reached)
            .zip(sim.into_no_null_iter())
        {
            if r >> i & 1 == 1 {
                f(doc32(x), doc32(y), s);
            }
        }
    }
    Ok(())
}

/// A document the run keeps that a lower threshold of the sweep drops: the highest such
/// threshold (its index in `--sweep`), its keeper there and their similarity (NaN where the rule
/// does not know it).
#[derive(Debug, Clone, Copy)]
struct Below {
    at: usize,
    keeper: u32,
    similarity: f32,
}

/// Whether each document is kept in the run, from the cluster files just written.
fn kept_in_run(work: &OutputDir, plan: &Plan, never_kept: &[bool]) -> Result<Vec<bool>> {
    let mut kept = Vec::with_capacity(plan.documents as usize);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("cluster", p))?;
        let first = plan.part_range(p).start;
        let keeper = u64s(&df, "keeper", "cluster")?;
        kept.extend(
            keeper
                .iter()
                .enumerate()
                .map(|(j, &k)| k == first + j as u64),
        );
    }
    for (k, &never) in kept.iter_mut().zip(never_kept) {
        *k &= !never;
    }
    Ok(kept)
}

/// A bitmap of dropped documents per threshold, and the documents below the run's threshold.
type Dropped = (Vec<Vec<u64>>, BTreeMap<u32, Below>);

/// Each threshold's dropped documents (a bitmap per threshold) under the run's rule, and the
/// documents the run keeps that a threshold below it drops.
fn dropped(
    work: &OutputDir,
    plan: &Plan,
    first_copy: &[u32],
    never_kept: &[bool],
    across: &[u64],
) -> Result<Dropped> {
    let cfg = &plan.config;
    let n = plan.documents as usize;
    let keep = KeepData::read(work, plan)?;
    let rank = keep_order(plan, &keep);
    let kept = kept_in_run(work, plan, never_kept)?;
    let mut below = BTreeMap::new();
    let mut out = Vec::new();
    let never = |d: usize| never_kept.get(d).copied().unwrap_or(false);
    for i in 0..cfg.sweep.len() {
        let mut bits = vec![0u64; n.div_ceil(64)];
        let (keeper, similarity): (Vec<u32>, Vec<f32>) = match cfg.cluster {
            ClusterRule::Keeper => {
                let docs = Documents {
                    rank: &rank,
                    group: first_copy,
                    copies_kept: cfg.across.is_some(),
                    never_kept,
                };
                let each = |f: &mut dyn FnMut(u32, u32, f32)| each_pair(work, plan, i, f);
                // The run's giant buckets, compared as a run at this threshold compares them.
                let mut at = plan.clone();
                at.config.threshold = cfg.sweep[i];
                let group = |d: u64| u64::from(first_copy[d as usize]);
                let mut giants = Giants::read(work, &at, group, across.to_vec())?;
                let k = keepers(&docs, |_| false, each, &mut giants)?;
                (k.keeper, k.similarity)
            }
            ClusterRule::Components => {
                let mut uf = UnionFind::new(n);
                each_pair(work, plan, i, &mut |x, y, _| uf.union(x, y))?;
                for (d, &f) in first_copy.iter().enumerate() {
                    if f != d as u32 {
                        uf.union(f, d as u32);
                    }
                }
                let c = super::Clusters::build(
                    uf,
                    &cfg.keep,
                    |d| keep.text_len(d),
                    |d| keep.priority(d),
                );
                let keeper = (0..n as u32).map(|d| c.keeper_of(d)).collect();
                (keeper, vec![f32::NAN; n])
            }
        };
        for (d, &k) in keeper.iter().enumerate() {
            if k != d as u32 || never(d) {
                bits[d / 64] |= 1 << (d % 64);
            }
            // Higher thresholds come later: the highest below the run's that drops it stays.
            if k != d as u32 && kept[d] && cfg.sweep[i] < cfg.threshold {
                let (keeper, similarity) = (k, similarity[d]);
                below.insert(
                    d as u32,
                    Below {
                        at: i,
                        keeper,
                        similarity,
                    },
                );
            }
        }
        out.push(bits);
    }
    Ok((out, below))
}

/// Writes the documents the run keeps that a lower threshold drops, by document (their
/// manifest row), for the output ([`crate::stages::sweep::DROPS`], which `audit` samples).
fn write_below(work: &OutputDir, plan: &Plan, below: &BTreeMap<u32, Below>) -> Result<()> {
    let column = |f: &dyn Fn(u32, &Below) -> u64| -> Vec<u64> {
        below.iter().map(|(&d, b)| f(d, b)).collect()
    };
    let columns = vec![
        Column::new("row".into(), column(&|d, _| u64::from(d))),
        Column::new("keeper_row".into(), column(&|_, b| u64::from(b.keeper))),
        Column::new(
            "similarity".into(),
            below.values().map(|b| b.similarity).collect::<Vec<f32>>(),
        ),
        Column::new(
            "threshold".into(),
            below
                .values()
                .map(|b| plan.config.sweep[b.at])
                .collect::<Vec<f64>>(),
        ),
    ];
    write_frame(work, crate::stages::sweep::BELOW, "cluster", columns)
}

/// The sweep's rows: each threshold's drops and text removed, per group too.
pub(super) fn rows(
    work: &OutputDir,
    plan: &Plan,
    first_copy: &[u32],
    never_kept: &[bool],
    across: &[u64],
) -> Result<Vec<SweepRow>> {
    let cfg = &plan.config;
    let (bits, below) = dropped(work, plan, first_copy, never_kept, across)?;
    write_below(work, plan, &below)?;
    let mut rows: Vec<SweepRow> = (cfg.sweep.iter())
        .map(|&t| SweepRow {
            threshold: t,
            dropped: 0,
            text_bytes: 0,
            lsh_recall: plan.sweep_recall(t),
            groups: BTreeMap::new(),
        })
        .collect();
    for p in 0..plan.parts.len() {
        let df = work.read_parquet(&part_file("docs", p))?;
        let text_len = u32s(&df, "text_len", "cluster")?;
        let group = match cfg.report_group.is_some() {
            true => Some(series(&df, "group", "cluster")?),
            false => None,
        };
        let group = group
            .as_ref()
            .map(|g| g.str().map_err(pe("cluster")))
            .transpose()?;
        let first = plan.part_range(p).start;
        for (j, &len) in text_len.iter().enumerate() {
            let d = first + j as u64;
            for (row, bits) in rows.iter_mut().zip(&bits) {
                if !bit(bits, d) {
                    continue;
                }
                row.dropped += 1;
                row.text_bytes += u64::from(len);
                if let Some(g) = &group {
                    let name = g.get(j).unwrap_or("(null)");
                    let r = row.groups.entry(name.to_string()).or_default();
                    r.dropped += 1;
                    r.text_bytes += u64::from(len);
                }
            }
        }
    }
    Ok(rows)
}
