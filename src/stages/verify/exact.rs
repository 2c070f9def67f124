//! Stage `exact` (one task per part): the verify task's checks that need shingle keys, made on
//! the keys the keys stage wrote -> the part's edges (`edges/pP.parquet`: a, b, similarity),
//! the estimate's and these together.
//!
//! MinHash: exact Jaccard, in windows of first documents with the sets of later windows carried
//! within a budget, the likely edges first ([`exact_batch`]); under `--cluster components` a
//! check whose documents are already linked is skipped. SimHash: a pair with a short document
//! must also reach the Jaccard threshold ([`jaccard_edges`]). With `--sweep` every check's
//! Jaccard is kept for the sweep task (`sweep/exact/pP.parquet`).

use crate::config::{ClusterRule, Method};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{self, f32s, part_file, u64s};
use crate::plan::Plan;
use crate::stages::keys::KeySource;
use crate::text::sets::ShingleSets;
use crate::unionfind::SparseUnionFind;

use super::{
    exact_batch, fetch_sets, jaccard_edges, read_edges, window, write_edges, ExactPair,
    VerifyStats, CARRY_KEYS, WINDOW,
};

/// The exact task of part `p`.
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<VerifyStats> {
    let cfg = &plan.config;
    let mut edges = read_edges(work, &work::estimated_file(p), "exact")?;
    let df = work.read_parquet(&work::checks_file(p))?;
    let (a, b) = (u64s(&df, "a", "exact")?, u64s(&df, "b", "exact")?);
    let estimate = f32s(&df, "estimate", "exact")?;
    let checks: Vec<ExactPair> = (a.into_iter().zip(b).zip(estimate))
        .map(|((a, b), estimate)| ExactPair { a, b, estimate })
        .collect();
    let mut joined = SparseUnionFind::default();
    for e in &edges {
        joined.union(e.a, e.b);
    }
    let mut keys = KeySource::new(work, plan, true);
    let (mut exact_sets, mut skipped) = (0u64, 0u64);
    let mut carry = ShingleSets::default();
    let mut found_edges = 0u64;
    // `--sweep`: every check's Jaccard, which the sweep task then need not compute again.
    let mut computed = Vec::new();
    for batch in checks.chunk_by(|x, y| window(x.a) == window(y.a)) {
        let (found, sets) = match cfg.method {
            Method::Minhash => {
                let links = (cfg.cluster == ClusterRule::Components).then_some(&mut joined);
                let fetch = |need| {
                    let (sets, read) = fetch_sets(&mut keys, need, &mut carry)?;
                    exact_sets += read;
                    Ok(sets)
                };
                let sweep = (!cfg.sweep.is_empty()).then_some(&mut computed);
                let (found, sets, skip) = exact_batch(batch, cfg.threshold, links, fetch, sweep)?;
                skipped += skip;
                (found, sets)
            }
            Method::Simhash => {
                let pairs: Vec<(u64, u64)> = batch.iter().map(|c| (c.a, c.b)).collect();
                let need = super::docs_of_pairs(&pairs, |_, _| true);
                let (sets, read) = fetch_sets(&mut keys, need, &mut carry)?;
                exact_sets += read;
                (jaccard_edges(batch, &sets, cfg.threshold), sets)
            }
        };
        found_edges += found.len() as u64;
        edges.extend(found);
        // Checks are sorted by first document: what later windows can use lies beyond this one.
        let next = (window(batch[0].a) + 1) * WINDOW;
        carry = std::mem::take(&mut carry).merge(sets);
        carry.keep_from(next, CARRY_KEYS);
    }
    edges.sort_unstable_by_key(|e| (e.a, e.b));
    write_edges(work, &part_file("edges", p), &edges)?;
    if !cfg.sweep.is_empty() {
        crate::stages::sweep::write_computed(work, p, computed)?;
    }
    Ok(VerifyStats {
        verified_pairs: found_edges,
        documents_exact_sets: exact_sets,
        exact_checks_skipped: skipped,
        keys_remade: keys.remade,
        ..VerifyStats::default()
    })
}
