//! Stage `sweep` (`--sweep`, one task per part): the distinct candidate pairs whose first
//! document is in the part, from the run's layout and the sweep's ([`Plan::sweep_layout`]) ->
//! which of the sweep's thresholds each pair reaches (`sweep/pP.parquet`: a, b, similarity,
//! reached, a bit per threshold in the order of `--sweep`).
//!
//! Each threshold is decided as a run at that threshold verifies: the signature estimate where
//! it is clear of the threshold, exact Jaccard of the shingle keys where it is near it or a
//! document is short ([`needs_exact`]), so a pair's bit for `t` is the verify stage's answer at
//! `t`. The exact Jaccard is computed once per pair, for all the thresholds that need it, and
//! not at all where the exact task already made the check (`sweep/exact/pP.parquet`). The
//! cluster task then runs the rule once per threshold over the pairs that reach it
//! (`cluster/sweep.rs`). Nothing here changes the run's own edges or manifest.

use polars::prelude::Column;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{self, doc_column, polars_err as pe, series, u64s, write_frame};
use crate::minhash::{estimate_jaccard, SigSource};
use crate::plan::{Plan, Stage};
use crate::stages::keys::KeySource;
use crate::stages::verify::{exact_jaccards, fetch_sigs, needs_exact, part_pairs, WINDOW};
use crate::text::sets::ShingleSets;

/// Counters of a sweep task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct SweepStats {
    /// Distinct candidate pairs of both layouts whose first document is in the part.
    pub candidate_pairs: u64,
    /// Pairs the sweep's layout alone found.
    pub sweep_only_pairs: u64,
    /// Pairs that reach the lowest threshold.
    pub reached_pairs: u64,
    /// Pairs whose exact Jaccard was computed (near a threshold, or with a short document).
    pub exact_checks: u64,
}

/// The documents the run keeps that a threshold of the sweep below the run's drops (manifest
/// row, the keeper's row there, their similarity, the highest such threshold), written by the
/// cluster task; and where the merge task puts it in the output, for `audit`.
pub(crate) const BELOW: &str = "sweep/below.parquet";
pub(crate) const DROPS: &str = "sweep-drops.parquet";

/// Part `p`'s sweep file.
pub(crate) fn sweep_file(p: usize) -> String {
    work::part_file("sweep", p)
}

/// Part `p`'s Jaccards the exact task computed (`--sweep`).
fn computed_file(p: usize) -> String {
    work::part_file("sweep/exact", p)
}

/// Writes the exact task's checks of part `p` with their Jaccard, for the sweep task.
pub(crate) fn write_computed(
    work: &OutputDir,
    p: usize,
    mut computed: Vec<(u64, u64, f64)>,
) -> Result<()> {
    computed.sort_unstable_by_key(|&(a, b, _)| (a, b));
    let columns = vec![
        doc_column("a", computed.iter().map(|c| c.0).collect()),
        doc_column("b", computed.iter().map(|c| c.1).collect()),
        Column::new(
            "jaccard".into(),
            computed.iter().map(|c| c.2).collect::<Vec<f64>>(),
        ),
    ];
    write_frame(work, &computed_file(p), "exact", columns)
}

/// Reads what [`write_computed`] wrote.
fn read_computed(work: &OutputDir, p: usize) -> Result<Known> {
    let df = work.read_parquet(&computed_file(p))?;
    let (a, b) = (u64s(&df, "a", "sweep")?, u64s(&df, "b", "sweep")?);
    let j = series(&df, "jaccard", "sweep")?;
    let j = j.f64().map_err(pe("sweep"))?;
    Ok(Known {
        pairs: a.into_iter().zip(b).collect(),
        jaccard: j.into_no_null_iter().collect(),
    })
}

/// A bit for each threshold of `sweep` (in its order) at which `at(i, threshold)` holds.
fn mask(sweep: &[f64], at: impl Fn(usize, f64) -> bool) -> u32 {
    (sweep.iter().enumerate())
        .filter(|&(i, &t)| at(i, t))
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The thresholds (bits, in the order of `sweep`) a pair reaches: at those of `exact` (bits) on
/// its exact Jaccard `j`, at the others on its estimate `s`.
fn reached(sweep: &[f64], s: f64, j: Option<f64>, exact: u32) -> u32 {
    mask(sweep, |i, t| match exact >> i & 1 {
        1 => j.unwrap_or(s) >= t,
        _ => s >= t,
    })
}

/// The Jaccards the exact task computed: (a, b) ascending, and each pair's.
struct Known {
    pairs: Vec<(u64, u64)>,
    jaccard: Vec<f64>,
}

impl Known {
    fn get(&self, pair: &(u64, u64)) -> Option<f64> {
        self.pairs.binary_search(pair).ok().map(|i| self.jaccard[i])
    }
}

/// A window of pairs: each one's estimate, the thresholds at which verify would check it
/// exactly and the exact task's Jaccard where it made the check; the other checks, and the sets
/// they need.
struct Window<'a> {
    pairs: &'a [(u64, u64)],
    decided: Vec<(f64, u32, Option<f64>)>,
    unknown: Vec<(u64, u64)>,
    sets: ShingleSets,
}

/// Reads what a window needs: its signatures, to decide each pair, and its checks' sets.
fn prepare<'a>(
    work: &OutputDir,
    plan: &Plan,
    pairs: &'a [(u64, u64)],
    known: &Known,
    keys: &mut KeySource,
) -> Result<Window<'a>> {
    let cfg = &plan.config;
    let sigs = fetch_sigs(work, plan, pairs, Vec::new(), false)?;
    let decided: Vec<(f64, u32, Option<f64>)> = pairs
        .par_iter()
        .with_min_len(64)
        .map(|&(x, y)| {
            let s = estimate_jaccard(sigs.sig(x), sigs.sig(y));
            let (verify, min) = (cfg.verify, cfg.min_shingles);
            let exact = mask(&cfg.sweep, |_, t| {
                needs_exact(x, y, &sigs, verify, t, min, || s)
            });
            let j = (exact != 0).then(|| known.get(&(x, y))).flatten();
            (s, exact, j)
        })
        .collect();
    let unknown: Vec<(u64, u64)> = (pairs.iter().zip(&decided))
        .filter(|&(_, &(_, exact, j))| exact != 0 && j.is_none())
        .map(|(&pair, _)| pair)
        .collect();
    let mut checked: Vec<u64> = unknown.iter().flat_map(|&(x, y)| [x, y]).collect();
    checked.sort_unstable();
    checked.dedup();
    let sets = keys.sets(checked)?;
    Ok(Window {
        pairs,
        decided,
        unknown,
        sets,
    })
}

/// Each pair of a window: its similarity (exact where a threshold needs it), the thresholds it
/// reaches, and whether it was checked exactly.
fn finish(plan: &Plan, w: &Window) -> Vec<(f32, u32, bool)> {
    let mut fresh = exact_jaccards(&w.unknown, &w.sets).into_iter();
    (w.decided.iter())
        .map(|&(s, exact, known)| {
            let j = match exact != 0 {
                true => known.or_else(|| fresh.next()),
                false => None,
            };
            let bits = reached(&plan.config.sweep, s, j, exact);
            (j.unwrap_or(s) as f32, bits, exact != 0)
        })
        .collect()
}

/// The sweep task of part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<SweepStats> {
    let run_pairs = part_pairs(
        work,
        plan,
        p,
        (0..plan.run_candidates()).map(work::pairs_file),
    )?;
    let sweep_tasks = plan.run_candidates()..plan.tasks(Stage::Candidates);
    let mut pairs = part_pairs(work, plan, p, sweep_tasks.map(work::sweep_pairs_file))?;
    let sweep_only = pairs
        .iter()
        .filter(|x| run_pairs.binary_search(x).is_err())
        .count() as u64;
    // Two sorted runs: the merge sort merges them.
    pairs.extend(run_pairs);
    pairs.par_sort();
    pairs.dedup();
    let mut stats = SweepStats {
        candidate_pairs: pairs.len() as u64,
        sweep_only_pairs: sweep_only,
        ..SweepStats::default()
    };
    let known = read_computed(work, p)?;
    let mut keys = KeySource::new(work, plan, true);
    let (mut a, mut b, mut sim, mut reach) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // A window's exact Jaccards are computed while the next one's sets are read.
    let windows: Vec<&[(u64, u64)]> = pairs
        .chunk_by(|x, y| x.0 / WINDOW == y.0 / WINDOW)
        .collect();
    let mut next = (windows.first())
        .map(|w| prepare(work, plan, w, &known, &mut keys))
        .transpose()?;
    let mut at = 0;
    while let Some(window) = next.take() {
        at += 1;
        let (found, after) = rayon::join(
            || finish(plan, &window),
            || {
                (windows.get(at))
                    .map(|w| prepare(work, plan, w, &known, &mut keys))
                    .transpose()
            },
        );
        next = after?;
        for (&(x, y), &(s, bits, exact)) in window.pairs.iter().zip(&found) {
            stats.exact_checks += u64::from(exact);
            if bits != 0 {
                a.push(x);
                b.push(y);
                sim.push(s);
                reach.push(bits);
            }
        }
    }
    stats.reached_pairs = a.len() as u64;
    let columns = vec![
        doc_column("a", a),
        doc_column("b", b),
        Column::new("similarity".into(), sim),
        Column::new("reached".into(), reach),
    ];
    write_frame(work, &sweep_file(p), "sweep", columns)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::reached;

    #[test]
    fn each_threshold_is_decided_on_what_verify_would_use_there() {
        let sweep = [0.7, 0.8, 0.9];
        // Estimate 0.85, exact 0.78: near 0.8 and 0.9 the exact value decides, far below 0.7
        // the estimate does.
        assert_eq!(reached(&sweep, 0.85, Some(0.78), 0b110), 0b001);
        // The estimate alone: 0.7 and 0.8 reached, 0.9 not.
        assert_eq!(reached(&sweep, 0.85, None, 0), 0b011);
        // A threshold is reached at exactly its value.
        assert_eq!(reached(&sweep, 0.5, Some(0.9), 0b111), 0b111);
        assert_eq!(reached(&sweep, 0.5, Some(0.69), 0b111), 0);
    }
}
