//! The pipeline stages, one module per stage, in run order; each holds the stage's task (`run`)
//! and the algorithms only it uses. The stage list is [`crate::plan::Stage`]; what each task reads
//! and writes is in [`crate::plan`] and [`crate::io::work`].
//!
//! sample, frequencies (SimHash only) -> signatures -> candidates -> verify -> cluster ->
//! paragraphs (`--paragraphs`) -> substrings, sources (`--substrings`) -> manifest -> merge.

pub(crate) mod candidates;
pub(crate) mod cluster;
pub(crate) mod drop_spans;
pub(crate) mod frequencies;
pub(crate) mod index;
pub(crate) mod lookup;
pub(crate) mod manifest;
pub(crate) mod merge;
pub(crate) mod paragraphs;
pub(crate) mod sample;
pub(crate) mod signatures;
pub(crate) mod sources;
pub(crate) mod substrings;
pub(crate) mod verify;

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work;
use crate::plan::Plan;

/// The label keys (`partition` or `across`, [`crate::partition`]) of part `p`'s documents from
/// its `docs/pP.parquet`; empty when the run has no such column (`used` false).
pub(crate) fn label_keys(work: &OutputDir, p: usize, name: &str, used: bool) -> Result<Vec<u64>> {
    if !used {
        return Ok(Vec::new());
    }
    let df = work.read_parquet_columns(&work::part_file("docs", p), Some(&[name]))?;
    let s = work::series(&df, name, "docs")?;
    Ok(s.u64()
        .map_err(work::polars_err("docs"))?
        .into_no_null_iter()
        .collect())
}

/// Every document's `--across` key, by global index (empty without `--across`).
pub(crate) fn across_keys(work: &OutputDir, plan: &Plan) -> Result<Vec<u64>> {
    let used = plan.config.across.is_some();
    let mut keys = Vec::new();
    for p in 0..plan.parts.len() {
        keys.extend(label_keys(work, p, "across", used)?);
    }
    Ok(keys)
}

/// `--reference`: whether each document of part `p` holds a reference item (never kept), from
/// its `docs/pP.parquet`; empty without `--reference`.
pub(crate) fn contaminated(work: &OutputDir, plan: &Plan, p: usize) -> Result<Vec<bool>> {
    if plan.config.reference.is_none() {
        return Ok(Vec::new());
    }
    let df = work.read_parquet_columns(&work::part_file("docs", p), Some(&["contamination"]))?;
    let present = work::series(&df, "contamination", "docs")?.is_not_null();
    Ok(present.iter().map(|b| b == Some(true)).collect())
}

/// [`contaminated`] for every document, by global index.
pub(crate) fn all_contaminated(work: &OutputDir, plan: &Plan) -> Result<Vec<bool>> {
    let mut out = Vec::new();
    for p in 0..plan.parts.len() {
        out.extend(contaminated(work, plan, p)?);
    }
    Ok(out)
}

/// Each kept document's keep position (`u32::MAX` for the others), from the cluster task
/// (`--paragraphs`, `--substrings`).
pub(crate) fn keep_positions(work: &OutputDir, plan: &Plan) -> Result<Vec<u32>> {
    let mut rank = Vec::with_capacity(plan.documents as usize);
    for p in 0..plan.parts.len() {
        let df = work.read_parquet_columns(&work::part_file("cluster", p), Some(&["keep_rank"]))?;
        let s = work::series(&df, "keep_rank", "cluster")?;
        let s = s.u32().map_err(work::polars_err("cluster"))?;
        rank.extend(s.iter().map(|r| r.unwrap_or(u32::MAX)));
    }
    Ok(rank)
}

/// The documents at each keep position, from [`keep_positions`].
pub(crate) fn documents_by_position(rank: &[u32]) -> Vec<u32> {
    let mut doc_at = vec![cluster::NOT_TONIGHT; rank.len()];
    for (d, &k) in rank.iter().enumerate() {
        if let Some(slot) = doc_at.get_mut(k as usize) {
            *slot = d as u32;
        }
    }
    doc_at
}
