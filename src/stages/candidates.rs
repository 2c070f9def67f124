//! Stage `candidates`: the band rows of one band and bucket range, from every part -> candidate
//! document pairs, cut by the part of their first document (`candidates/tT.bin`, [`crate::io::pairs`]).
//!
//! Documents sharing a (band, bucket) are candidates. Grouping the rows by (band, bucket) (a
//! sort of (band, bucket, doc) rows, then one pass over the runs) collects each bucket's members;
//! a bucket of m <= `max_bucket_pairs` members yields all m(m-1)/2 pairs, a larger one (templated
//! pages, boilerplate) links every member to its first member only: m - 1 pairs. Star links give
//! the same connected components as all pairs *when the links verify*; members that only resemble
//! each other and not the first one are still found through their other bands, so the cap costs
//! little recall and bounds the work at O(rows) however large a bucket grows.
//!
//! SimHash buckets are different: a block bucket only says that some bits agree, so a star would
//! link unrelated documents and lose real pairs. There a `pair_filter` (the full Hamming check, a
//! popcount) runs inside the bucket while listing all pairs, so only near pairs are emitted, and
//! the cap for all pairs is much higher (`--simhash-max-bucket`); above it the star is the fallback
//! and recall drops (counted in `star_buckets`: raise `--simhash-blocks` then).
//!
//! With `--cluster keeper` a giant bucket gives no pairs: its members are written to
//! `giant/tT.parquet` (bucket, doc; only by tasks that found one), and the cluster task compares
//! each member with the
//! bucket's documents kept so far (a star on the first member would leave near-duplicates of
//! each other that do not resemble the first one uncompared, and kept side by side).
//!
//! The tasks after the run's own (`--sweep`, [`Plan::sweep_layout`]) list the pairs of the
//! sweep's bands, in `sweep-candidates/tT.bin`, a giant bucket as a star.
//!
//! Output invariant: pairs (a, b) with a < b, sorted and unique.

use rayon::prelude::*;
use serde::Serialize;

use polars::prelude::Column;

use crate::config::ClusterRule;
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{u32s, u64s, write_frame};
use crate::io::{band_rows, doc_lists, pairs, work};
use crate::plan::{Plan, Stage};
use crate::simhash::hamming;

/// Counters for the summary.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct CandidateStats {
    /// Buckets with two or more members.
    pub shared_buckets: u64,
    /// Members of the largest bucket.
    pub largest_bucket: u64,
    /// Buckets linked as a star because they exceeded `max_bucket_pairs`.
    pub star_buckets: u64,
    /// `--cluster keeper`: buckets over the cap, resolved against their kept documents by the
    /// cluster task instead of a star.
    #[serde(default)]
    pub giant_buckets: u64,
    /// Distinct candidate pairs.
    pub candidate_pairs: u64,
}

/// A test a pair must pass to be listed from a bucket (for SimHash: Hamming distance <= k).
pub(crate) type PairFilter<'a> = &'a (dyn Fn(u64, u64) -> bool + Sync);

/// The candidates task `t`: band `t / ranges`, bucket range `t % ranges`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, t: usize) -> Result<CandidateStats> {
    let (b, r) = (t / plan.bucket_ranges, t % plan.bucket_ranges);
    let simhash = plan.config.method == crate::config::Method::Simhash;
    let mut rows = Vec::new();
    // SimHash: each document's fingerprint (a document has one row per band).
    let mut fps: ahash::AHashMap<u64, u64> = ahash::AHashMap::new();
    for p in 0..plan.parts.len() {
        // The file numbers the part's documents from 0.
        let first = plan.parts[p].0;
        band_rows::read(work, &work::band_rows_file(b, r, p), |bucket, local, fp| {
            let doc = first + u64::from(local);
            rows.push((bucket, doc));
            if simhash {
                fps.insert(doc, fp);
            }
        })?;
    }
    // A `--sweep` band's task: its pairs are the sweep's alone, a giant bucket a star.
    let sweep = t >= plan.run_candidates();
    let keeper = plan.config.cluster == ClusterRule::Keeper && !sweep;
    let k = plan.config.hamming as u32;
    let near = |a: u64, b: u64| {
        let (x, y) = (fps.get(&a), fps.get(&b));
        x.zip(y).is_some_and(|(x, y)| hamming(*x, *y) <= k)
    };
    // `--across`: pairs of one value never drop anything, so they are not listed.
    let across =
        crate::io::doc_columns::across_keys(work, plan.parts.len(), plan.config.across.is_some())?;
    let apart = |a: u64, b: u64| across[a as usize] != across[b as usize];
    let near_apart = |a: u64, b: u64| apart(a, b) && near(a, b);
    let cap = match simhash {
        true => plan.config.simhash_max_bucket,
        false => plan.config.max_bucket_pairs,
    };
    let filter: Option<PairFilter> = match (simhash, across.is_empty()) {
        (true, true) => Some(&near),
        (true, false) => Some(&near_apart),
        (false, false) => Some(&apart),
        (false, true) => None,
    };
    let (found, giants, stats) = pairs_of_rows(rows, cap, filter, keeper);
    let starts: Vec<u64> = plan.parts.iter().map(|&(first, _)| first).collect();
    let name = match sweep {
        true => work::sweep_pairs_file(t),
        false => work::pairs_file(t),
    };
    work.write_bytes(&name, pairs::encode(&found, &starts))?;
    if !plan.store_layout().in_records {
        let mut docs: Vec<u64> = found.iter().flat_map(|&(a, b)| [a, b]).collect();
        docs.extend(giants.iter().flatten());
        docs.sort_unstable();
        docs.dedup();
        work.write_bytes(
            &work::pair_docs_file(t),
            doc_lists::encode(&docs, &plan.parts),
        )?;
    }
    // Written only where there are giant buckets (the task's `giant_buckets` says so), since
    // nearly every task has none.
    if keeper && !giants.is_empty() {
        let (bucket, doc): (Vec<u32>, Vec<u64>) = giants
            .iter()
            .enumerate()
            .flat_map(|(g, m)| m.iter().map(move |&d| (g as u32, d)))
            .unzip();
        let columns = vec![
            Column::new("bucket".into(), bucket),
            Column::new("doc".into(), doc),
        ];
        write_frame(work, &work::giant_file(t), "candidates", columns)?;
    }
    Ok(stats)
}

/// Removes part `p`'s band row files, from part `p`'s task of the first stage after this one
/// (every candidates task is then complete): nothing reads them again unless the index stage keeps them
/// (`--index`), and they are the largest work files after the store's (~160 bytes per
/// document), so the work directory at its largest is smaller by them. A rerun finds the
/// candidates tasks complete and never asks for them; removing a removed file is nothing.
pub(crate) fn release_band_rows(work: &OutputDir, plan: &Plan, p: usize) -> Result<()> {
    if plan.index.is_some() {
        return Ok(());
    }
    for t in 0..plan.tasks(Stage::Candidates) {
        let (b, r) = (t / plan.bucket_ranges, t % plan.bucket_ranges);
        work.remove(&work::band_rows_file(b, r, p))?;
    }
    Ok(())
}

/// Groups one band's (bucket, doc) rows (any order) by bucket and lists the candidate pairs:
/// a sort of 16-byte tuples and one pass over the runs, with no allocation per group (nearly
/// every group is a singleton). With `defer_giant`, buckets over `max_bucket_pairs` give no
/// pairs and are returned as member lists instead (in bucket order).
pub fn pairs_of_rows(
    mut rows: Vec<(u64, u64)>,
    max_bucket_pairs: usize,
    pair_filter: Option<PairFilter>,
    defer_giant: bool,
) -> (Vec<(u64, u64)>, Vec<Vec<u64>>, CandidateStats) {
    rows.par_sort_unstable();
    let doc: Vec<u64> = rows.iter().map(|r| r.1).collect();
    let mut members: Vec<&[u64]> = Vec::new();
    let mut start = 0;
    for run in rows.chunk_by(|x, y| x.0 == y.0) {
        if run.len() > 1 {
            members.push(&doc[start..start + run.len()]);
        }
        start += run.len();
    }
    drop(rows);
    let giant = |m: &[u64]| m.len() > max_bucket_pairs;
    let giants: Vec<Vec<u64>> = match defer_giant {
        true => members
            .iter()
            .filter(|m| giant(m))
            .map(|m| m.to_vec())
            .collect(),
        false => Vec::new(),
    };
    if defer_giant {
        members.retain(|m| !giant(m));
    }
    let over = members.iter().filter(|m| giant(m)).count() as u64;
    let mut stats = CandidateStats {
        shared_buckets: members.len() as u64 + giants.len() as u64,
        largest_bucket: members
            .iter()
            .map(|m| m.len())
            .chain(giants.iter().map(Vec::len))
            .max()
            .unwrap_or(0) as u64,
        star_buckets: over,
        giant_buckets: giants.len() as u64,
        candidate_pairs: 0,
    };
    let mut pairs: Vec<(u64, u64)> = members
        .par_iter()
        .flat_map_iter(|m| bucket_pairs(m, max_bucket_pairs, pair_filter))
        .collect();
    pairs.par_sort_unstable();
    pairs.dedup();
    stats.candidate_pairs = pairs.len() as u64;
    (pairs, giants, stats)
}

/// Pairs of one bucket's sorted members that pass the filter: all pairs, or a star on the first
/// member when the bucket is larger than `max_bucket_pairs`.
fn bucket_pairs(
    m: &[u64],
    max_bucket_pairs: usize,
    pair_filter: Option<PairFilter>,
) -> Vec<(u64, u64)> {
    let pass = |a, b| pair_filter.is_none_or(|f| f(a, b));
    if m.len() > max_bucket_pairs {
        return m[1..]
            .iter()
            .map(|&x| (m[0], x))
            .filter(|&(a, b)| pass(a, b))
            .collect();
    }
    let mut out = Vec::new();
    for (i, &a) in m.iter().enumerate() {
        for &b in &m[i + 1..] {
            if pass(a, b) {
                out.push((a, b));
            }
        }
    }
    out
}

/// Calls `f` with the (bucket, doc) rows of each candidates task's giant file (`--cluster
/// keeper`), in task order, for the tasks that found giant buckets; `stage` names the reader in
/// errors.
pub(crate) fn each_giant_file(
    work: &OutputDir,
    plan: &Plan,
    stage: &'static str,
    mut f: impl FnMut(Vec<u32>, Vec<u64>),
) -> Result<()> {
    let reports = crate::plan::require_stage(work, plan, Stage::Candidates)?;
    for (t, r) in reports.iter().enumerate() {
        if r.stats::<CandidateStats>().giant_buckets == 0 {
            continue;
        }
        let df = work.read_parquet(&work::giant_file(t))?;
        f(u32s(&df, "bucket", stage)?, u64s(&df, "doc", stage)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_from_shared_buckets() {
        // docs 0,1,2 share bucket 7; docs 1,3 share bucket 9; doc 4 is alone in bucket 8. The
        // document numbers need more than 32 bits.
        let h = 1u64 << 33;
        let rows = vec![
            (7, h + 2),
            (7, h),
            (7, h + 1),
            (9, h + 1),
            (9, h + 3),
            (8, h + 4),
        ];
        let (pairs, _, stats) = pairs_of_rows(rows.clone(), 64, None, false);
        let at = |x: &[(u64, u64)]| -> Vec<(u64, u64)> {
            x.iter().map(|&(a, b)| (a - h, b - h)).collect()
        };
        assert_eq!(at(&pairs), vec![(0, 1), (0, 2), (1, 2), (1, 3)]);
        let odd_sum = |a: u64, b: u64| (a + b) % 2 == 1;
        assert_eq!(
            at(&pairs_of_rows(rows, 64, Some(&odd_sum), false).0),
            vec![(0, 1), (1, 2)]
        );
        assert_eq!(stats.shared_buckets, 2);
        assert_eq!(stats.largest_bucket, 3);
    }

    #[test]
    fn giant_bucket_is_linear() {
        let rows: Vec<(u64, u64)> = (0..5000).map(|d| (1, d)).collect();
        let (pairs, _, stats) = pairs_of_rows(rows.clone(), 64, None, false);
        assert_eq!(pairs.len(), 4999);
        assert!(pairs.iter().all(|&(a, _)| a == 0));
        assert_eq!(stats.star_buckets, 1);
        // Deferred (keeper): no pairs, the members as a list; a small bucket still gives pairs.
        let mut rows = rows;
        rows.extend([(5, 7), (5, 9)]);
        let (pairs, giants, stats) = pairs_of_rows(rows, 64, None, true);
        assert_eq!(pairs, vec![(7, 9)]);
        assert_eq!(giants, vec![(0..5000).collect::<Vec<u64>>()]);
        assert_eq!((stats.star_buckets, stats.giant_buckets), (0, 1));
        assert_eq!((stats.shared_buckets, stats.largest_bucket), (2, 5000));
    }
}
