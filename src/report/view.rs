//! The manifest as the report reads it: two passes over its row groups, a few columns each,
//! keeping per document only the cluster ids of clustered ones and the similarities of drops
//! (the strings of the rows it may show are kept as the second pass meets them), so the report's
//! memory does not grow with the manifest's ids and file names.
//!
//! 1. [`first_pass`]: cluster sizes, the similarities of drops, the near-threshold sample, the
//!    rows of the contaminated items shown, the longest spans removed;
//! 2. [`second_pass`]: the members of the largest clusters, the kept rows of the ids the
//!    near-threshold drops name, and where each row the report may show is.

use std::collections::{BTreeMap, HashMap, HashSet};

use polars::prelude::*;

use crate::error::Result;
use crate::results::ManifestRows;

use super::spans::{self, RemovedSpan};
use super::{LARGEST, MEMBER_CANDIDATES, NEAR, PAIR_CANDIDATES};

/// A typed column of a row group's frame (`None` when the manifest lacks it).
fn col<'a, T>(
    rows: &ManifestRows,
    df: &'a DataFrame,
    name: &str,
    typed: impl Fn(&'a Column) -> PolarsResult<&'a T>,
) -> Result<Option<&'a T>> {
    let Ok(c) = df.column(name) else {
        return Ok(None);
    };
    typed(c).map(Some).map_err(|e| rows.error(e))
}

/// Like [`col`], for a column every manifest has.
fn need<'a, T>(
    rows: &ManifestRows,
    df: &'a DataFrame,
    name: &str,
    typed: impl Fn(&'a Column) -> PolarsResult<&'a T>,
) -> Result<&'a T> {
    let c = df.column(name).map_err(|e| rows.error(e))?;
    typed(c).map_err(|e| rows.error(e))
}

/// The columns both passes read, typed.
struct Core<'a> {
    keep: &'a BooleanChunked,
    cluster: &'a UInt64Chunked,
    sims: &'a Float32Chunked,
    ids: &'a StringChunked,
    dup_of: &'a StringChunked,
}

impl<'a> Core<'a> {
    const COLUMNS: [&'static str; 5] = ["keep", "cluster_id", "similarity", "id", "duplicate_of"];

    fn of(rows: &ManifestRows, df: &'a DataFrame) -> Result<Core<'a>> {
        Ok(Core {
            keep: need(rows, df, "keep", |c| c.bool())?,
            cluster: need(rows, df, "cluster_id", |c| c.u64())?,
            sims: need(rows, df, "similarity", |c| c.f32())?,
            ids: need(rows, df, "id", |c| c.str())?,
            dup_of: need(rows, df, "duplicate_of", |c| c.str())?,
        })
    }
}

/// What the first pass finds.
pub(super) struct First {
    /// Similarities of the dropped documents to their keepers.
    pub similarities: Vec<f32>,
    /// Documents per cluster size (sizes >= 2).
    pub cluster_sizes: BTreeMap<u64, u64>,
    /// The [`LARGEST`] clusters, (cluster id, size), largest first.
    pub largest: Vec<(u64, u64)>,
    /// Dropped documents within [`NEAR`] above the lowest similarity of a drop: (hash of the
    /// id, row, the keeper's id), the [`PAIR_CANDIDATES`] smallest hashes, in hash order.
    pub near: Vec<(u64, usize, Option<String>)>,
    /// Per contaminated item shown, the rows whose `contaminated_by` names it, in order.
    pub item_rows: Vec<Vec<usize>>,
    /// `--substrings`: the longest spans removed, without ids and texts.
    pub spans: Vec<RemovedSpan>,
}

/// Pass 1 over the manifest (`lo`: the lowest similarity of a drop; `items`: the ids of the
/// contaminated items shown; `with_spans`: look for the longest spans removed).
pub(super) fn first_pass(
    rows: &ManifestRows,
    lo: f64,
    items: &[&str],
    with_spans: bool,
) -> Result<First> {
    let mut similarities = Vec::new();
    let mut clustered: Vec<u64> = Vec::new();
    let mut near: Vec<(u64, usize, Option<String>)> = Vec::new();
    let mut item_rows: Vec<Vec<usize>> = vec![Vec::new(); items.len()];
    let mut best = Vec::new();
    let columns = [&Core::COLUMNS[..], &["contaminated_by", "drop_spans"]].concat();
    rows.each_group(&columns, |first, df| {
        let core = Core::of(rows, df)?;
        let (keep, cluster, sims, ids, dup_of) =
            (core.keep, core.cluster, core.sims, core.ids, core.dup_of);
        for (k, s) in keep.iter().zip(sims.iter()) {
            if let (Some(false), Some(s)) = (k, s) {
                similarities.push(s);
            }
        }
        clustered.extend(cluster.iter().flatten());
        for (j, (k, s)) in keep.iter().zip(sims.iter()).enumerate() {
            let near_lo = s.is_some_and(|s| f64::from(s) >= lo - 1e-6 && f64::from(s) < lo + NEAR);
            if k == Some(false) && near_lo {
                let h = xxhash_rust::xxh3::xxh3_64(ids.get(j).unwrap_or("").as_bytes());
                near.push((h, first + j, dup_of.get(j).map(str::to_string)));
            }
        }
        if near.len() > 2 * PAIR_CANDIDATES {
            sample(&mut near);
        }
        if let Some(by) = col(rows, df, "contaminated_by", |c| c.str())? {
            for (j, x) in by.iter().enumerate() {
                let Some(x) = x else { continue };
                for (slot, _) in items.iter().enumerate().filter(|(_, &i)| i == x) {
                    item_rows[slot].push(first + j);
                }
            }
        }
        if let Some(c) = df.column("drop_spans").ok().filter(|_| with_spans) {
            spans::longest(c, first, &mut best).map_err(|e| rows.error(e))?;
        }
        Ok(())
    })?;
    sample(&mut near);
    clustered.sort_unstable();
    let mut size: Vec<(u64, u64)> = clustered
        .chunk_by(|a, b| a == b)
        .map(|run| (run[0], run.len() as u64))
        .collect();
    drop(clustered);
    let mut cluster_sizes: BTreeMap<u64, u64> = BTreeMap::new();
    for &(_, s) in &size {
        *cluster_sizes.entry(s).or_default() += 1;
    }
    size.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    size.truncate(LARGEST);
    Ok(First {
        similarities,
        cluster_sizes,
        largest: size,
        near,
        item_rows,
        spans: spans::removed(best),
    })
}

/// The near-threshold sample: the [`PAIR_CANDIDATES`] smallest (id hash, row).
fn sample(near: &mut Vec<(u64, usize, Option<String>)>) {
    near.sort_unstable_by_key(|x| (x.0, x.1));
    near.truncate(PAIR_CANDIDATES);
}

/// What the second pass finds.
pub(super) struct Second {
    /// Per largest cluster: its kept member's row (None when its keeper is in an earlier batch),
    /// up to [`MEMBER_CANDIDATES`] dropped members' rows, and the keeper's id when it is not in
    /// this run.
    pub keepers: Vec<Option<usize>>,
    pub candidates: Vec<Vec<usize>>,
    pub elsewhere: Vec<Option<String>>,
    /// The row of each kept document whose id a near-threshold drop names (the last one, should
    /// an id repeat).
    pub id_row: HashMap<String, usize>,
    /// Where each of those rows is, and of the rows `known` (what the report may show of them).
    pub at: HashMap<usize, RowAt>,
}

/// A row the report may show: where it is, and its strings.
#[derive(Debug, Clone, Default)]
pub(super) struct RowAt {
    pub file: String,
    pub row: u64,
    pub id: String,
    pub similarity: Option<f32>,
    pub contaminated_by: Option<String>,
    pub contamination: Option<f32>,
}

/// Pass 2 over the manifest: the members of the `largest` clusters, the kept rows of the ids
/// `wanted`, and where those rows and the rows `known` are.
pub(super) fn second_pass(
    rows: &ManifestRows,
    largest: &[(u64, u64)],
    wanted: &HashSet<&str>,
    known: &HashSet<usize>,
) -> Result<Second> {
    let slot_of: HashMap<u64, usize> = (largest.iter().enumerate())
        .map(|(i, &(c, _))| (c, i))
        .collect();
    let mut out = Second {
        keepers: vec![None; largest.len()],
        candidates: vec![Vec::new(); largest.len()],
        elsewhere: vec![None; largest.len()],
        id_row: HashMap::new(),
        at: HashMap::with_capacity(known.len()),
    };
    let more = ["file", "row", "contaminated_by", "contamination"];
    let columns = [&Core::COLUMNS[..], &more].concat();
    rows.each_group(&columns, |first, df| {
        let core = Core::of(rows, df)?;
        let (keep, cluster, ids, dup_of) = (core.keep, core.cluster, core.ids, core.dup_of);
        let sims = core.sims;
        let file = need(rows, df, "file", |c| c.str())?;
        let row = need(rows, df, "row", |c| c.u64())?;
        let by = col(rows, df, "contaminated_by", |c| c.str())?;
        let share = col(rows, df, "contamination", |c| c.f32())?;
        for (j, (k, c)) in keep.iter().zip(cluster.iter()).enumerate() {
            let i = first + j;
            let mut shown = known.contains(&i);
            if k == Some(true) {
                if let Some(id) = ids.get(j).filter(|id| wanted.contains(id)) {
                    out.id_row.insert(id.to_string(), i);
                    shown = true;
                }
            }
            if let Some(&slot) = c.and_then(|c| slot_of.get(&c)) {
                if k == Some(true) {
                    out.keepers[slot] = Some(i);
                    shown = true;
                } else {
                    if out.candidates[slot].len() < MEMBER_CANDIDATES {
                        out.candidates[slot].push(i);
                        shown = true;
                    }
                    if out.elsewhere[slot].is_none() {
                        out.elsewhere[slot] = dup_of.get(j).map(str::to_string);
                    }
                }
            }
            if shown {
                let at = RowAt {
                    file: file.get(j).unwrap_or("").to_string(),
                    row: row.get(j).unwrap_or(0),
                    id: ids.get(j).unwrap_or("").to_string(),
                    similarity: sims.get(j),
                    contaminated_by: by.and_then(|b| b.get(j)).map(str::to_string),
                    contamination: share.and_then(|s| s.get(j)),
                };
                out.at.insert(i, at);
            }
        }
        Ok(())
    })?;
    Ok(out)
}
