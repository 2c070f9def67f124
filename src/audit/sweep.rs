//! The audit of a run with `--sweep`: the documents the run keeps that a threshold of the sweep
//! below the run's would drop (`OUT/sweep-drops.parquet`, written by the run) are strata of
//! their own, one per such threshold (the highest that drops the document), so labels on them
//! say whether that threshold would be safe ([`super::score`]'s `thresholds`). They are sampled
//! as the run's drops are, by the hash of the dropped document's id.

use std::collections::HashMap;

use super::Band;
use crate::error::Result;
use crate::results::{in_output, ManifestRows};

/// A document the run keeps that a lower threshold drops.
#[derive(Debug, Clone, Copy)]
pub(super) struct SweepDrop {
    /// Its manifest row, and its keeper's at that threshold.
    pub row: u64,
    pub keeper_row: u64,
    pub similarity: f32,
    /// The highest threshold of the sweep that drops it.
    pub threshold: f64,
}

/// The run's sweep drops, by manifest row (none for a run without `--sweep`).
pub(super) fn read(out: &str) -> Result<Vec<SweepDrop>> {
    let path = in_output(out, crate::stages::sweep::DROPS);
    let Some(df) = super::output_frame(&path)? else {
        return Ok(Vec::new());
    };
    let err = super::frame_error(&path);
    let column = |name: &str| df.column(name).map_err(&err);
    let (row, keeper) = (
        column("row")?.u64().map_err(&err)?,
        column("keeper_row")?.u64().map_err(&err)?,
    );
    let (sim, threshold) = (
        column("similarity")?.f32().map_err(&err)?,
        column("threshold")?.f64().map_err(&err)?,
    );
    let mut drops: Vec<SweepDrop> = (0..df.height())
        .map(|i| SweepDrop {
            row: row.get(i).unwrap_or(0),
            keeper_row: keeper.get(i).unwrap_or(0),
            similarity: sim.get(i).unwrap_or(f32::NAN),
            threshold: threshold.get(i).unwrap_or(0.0),
        })
        .collect();
    drops.sort_by_key(|d| d.row);
    Ok(drops)
}

/// One band per threshold of the sweep below the run's that drops a document the run keeps,
/// ascending: "would drop at T", from T up to the next such threshold (or the run's).
pub(super) fn bands(drops: &[SweepDrop], threshold: f64) -> Vec<Band> {
    let mut at: Vec<f64> = drops.iter().map(|d| d.threshold).collect();
    at.sort_by(f64::total_cmp);
    at.dedup();
    (0..at.len())
        .map(|i| Band {
            group: None,
            name: format!("would drop at {}", at[i]),
            lo: at[i],
            hi: at.get(i + 1).copied().unwrap_or(threshold),
            sweep: Some(at[i]),
            drops: 0,
            sampled: 0,
        })
        .collect()
}

/// The id of each manifest row in `want`: one pass over the manifest.
pub(super) fn ids_at(rows: &ManifestRows, want: &[u64]) -> Result<HashMap<u64, String>> {
    let mut want = want.to_vec();
    want.sort_unstable();
    let mut found = HashMap::new();
    rows.each_group(&["id"], |first, df| {
        let err = |e| rows.error(e);
        let id = df.column("id").map_err(err)?.str().map_err(err)?;
        let (lo, hi) = (first as u64, (first + df.height()) as u64);
        let from = want.partition_point(|&r| r < lo);
        for &r in want[from..].iter().take_while(|&&r| r < hi) {
            let id = id.get((r - lo) as usize).unwrap_or_default();
            found.insert(r, id.to_string());
        }
        Ok(())
    })?;
    Ok(found)
}
