//! Per-document columns that later stages read back from earlier stages' part files: the label
//! keys and contamination flags of `docs/pP.parquet` (signatures) and the keep positions of
//! `cluster/pP.parquet`. Each reader takes the part count, not the plan, so `io` stays below it.

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work;

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

/// Every document's `--across` key over `parts` parts, by global index (empty when `used` is
/// false: no `--across`).
pub(crate) fn across_keys(work: &OutputDir, parts: usize, used: bool) -> Result<Vec<u64>> {
    let mut keys = Vec::new();
    for p in 0..parts {
        keys.extend(label_keys(work, p, "across", used)?);
    }
    Ok(keys)
}

/// `--reference`: whether each document of part `p` holds a reference item (never kept), from
/// its `docs/pP.parquet`; empty when `used` is false (no `--reference`).
pub(crate) fn contaminated(work: &OutputDir, p: usize, used: bool) -> Result<Vec<bool>> {
    if !used {
        return Ok(Vec::new());
    }
    let df = work.read_parquet_columns(&work::part_file("docs", p), Some(&["contamination"]))?;
    let present = work::series(&df, "contamination", "docs")?.is_not_null();
    Ok(present.iter().map(|b| b == Some(true)).collect())
}

/// [`contaminated`] for every document of `parts` parts, by global index.
pub(crate) fn all_contaminated(work: &OutputDir, parts: usize, used: bool) -> Result<Vec<bool>> {
    let mut out = Vec::new();
    for p in 0..parts {
        out.extend(contaminated(work, p, used)?);
    }
    Ok(out)
}

/// Each of `documents` documents' keep position over `parts` parts (`u32::MAX` for those not
/// kept), from the cluster task (`--paragraphs`, `--substrings`).
pub(crate) fn keep_positions(work: &OutputDir, parts: usize, documents: u64) -> Result<Vec<u32>> {
    let mut rank = Vec::with_capacity(documents as usize);
    for p in 0..parts {
        let df = work.read_parquet_columns(&work::part_file("cluster", p), Some(&["keep_rank"]))?;
        let s = work::series(&df, "keep_rank", "cluster")?;
        let s = s.u32().map_err(work::polars_err("cluster"))?;
        rank.extend(s.iter().map(|r| r.unwrap_or(u32::MAX)));
    }
    Ok(rank)
}
