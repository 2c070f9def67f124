//! Stage `verify`: the candidate pairs whose first document is in the part -> the edges the
//! signature estimate decides (`estimated/pP.parquet`) and the checks it leaves to the shingle
//! keys (`checks/pP.parquet`); with `--work-keys remade`, also the documents of those checks by
//! part (`needs/tT.bin`), for the keys stage. Stage `exact` ([`exact`]) then makes the checks and
//! writes the part's edges (`edges/pP.parquet`: a, b, similarity).
//!
//! MinHash:
//! LSH candidates include false positives (pairs below the threshold that collided in one band), so
//! each pair is checked:
//! - `Verify::Exact`: exact Jaccard of the two shingle sets (of 32-bit shingle keys, see
//!   [`crate::text::shingle::shingle_key`]), counted in a hash table from the keys as stored
//!   ([`crate::text::sets::KeyTable`]), without sorting them. The keys are read for the
//!   candidate documents only ([`crate::stages::keys::KeySource`]), so nothing but the
//!   signatures is held for the whole corpus. Precision against an exact ground truth is then 1
//!   (up to a 2^-32 key collision), and recall is only lost in LSH.
//! - `Verify::Auto` (default): the estimate decides a pair when it is more than 3 standard errors
//!   (`3 sqrt(t (1 - t) / K)`, 0.106 at t = 0.8, K = 128) from the threshold t, where a wrong call
//!   has probability ~0.1%; pairs inside that band, and pairs with a short document, are checked
//!   exactly. Most candidates are clear (copies, or chance collisions), so few sets are read.
//! - `Verify::Estimate`: signature agreement (standard error ~0.035 at J = 0.8, K = 128), except for
//!   pairs where either document has fewer than `min_shingles` shingles: there one differing token
//!   moves J by a large step, the estimate means little, and the exact check is used.
//!
//! Under `--cluster components` only connectivity matters downstream, so the exact task skips a
//! check where the two documents are already linked by its edges (about a third of the exact
//! checks on the development corpora; the manifest is unchanged); under `keeper` every check is
//! made, since any edge can decide who is kept.
//!
//! `decide.rs` holds how a pair is decided (estimate or exact, the batches, SimHash's check);
//! this file the verify task around it (windows, fetches, its files), `exact.rs` the exact task.
//!
//! SimHash: the candidates task already kept only pairs within Hamming distance k; a pair with a
//! short document (fewer than `--simhash-min-features` features, too few for a stable
//! fingerprint) must also reach the Jaccard threshold on its shingle sets ([`hamming_batch`],
//! [`jaccard_edges`]).
//!
//! Both tasks work through their pairs in windows of [`WINDOW`] first documents: the signatures
//! or sets of one window's documents are fetched at once (the exact task carries sets to later
//! windows within a budget), so memory follows the pairs, not the corpus.

pub(crate) mod decide;
pub(crate) mod exact;

use decide::fingerprint;

pub(crate) use decide::{
    docs_needing_sets, docs_of_pairs, estimate_batch, exact_batch, exact_edges, exact_jaccards,
    hamming_batch, jaccard_edges, needs_exact, short_docs, similarity, Edge, ExactPair,
};

use polars::prelude::Column;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{ClusterRule, Method};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::io::work::{self, doc_column, polars_err as pe, series, u64s, write_frame};
use crate::io::{doc_lists, pairs, store};
use crate::minhash::{estimate_jaccard, SigSource};
use crate::plan::{Plan, Stage};
use crate::simhash;
use crate::stages::candidates;
use crate::stages::keys::KeySource;
use crate::text::sets::ShingleSets;
use crate::unionfind::SparseUnionFind;

/// Counters of a verify task, or of an exact task (its own fields; the merge adds the two).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct VerifyStats {
    /// Distinct candidate pairs whose first document is in the part.
    pub candidate_pairs: u64,
    pub verified_pairs: u64,
    /// Pairs the estimate left to the exact check (SimHash: with a short document).
    #[serde(default)]
    pub exact_checks: u64,
    pub documents_exact_sets: u64,
    /// Pairs that needed the exact check but were skipped: their documents were already joined
    /// by this task's edges.
    pub exact_checks_skipped: u64,
    /// Documents whose keys no key file held, made from the shards by the exact task.
    #[serde(default)]
    pub keys_remade: u64,
}

/// Documents per window of the verify and manifest tasks: the pairs of one window share one
/// fetch of signatures and exact sets from the stores.
pub(crate) const WINDOW: u64 = 16_384;

/// Window of document `d` for batching: [`WINDOW`] consecutive documents.
fn window(d: u64) -> u64 {
    d / WINDOW
}

/// Whether MinHash pair (a, b) gets the exact Jaccard check under the plan's settings.
fn exact_check(plan: &Plan, a: u64, b: u64, sigs: &store::Fetched) -> bool {
    let cfg = &plan.config;
    let estimate = || estimate_jaccard(sigs.sig(a), sigs.sig(b));
    let (mode, threshold, min_shingles) = (cfg.verify, cfg.threshold, cfg.min_shingles);
    needs_exact(a, b, sigs, mode, threshold, min_shingles, estimate)
}

/// Similarity of a pair computed as verification computes it (MinHash: exact Jaccard or the
/// estimate, per [`needs_exact`]; SimHash: 1 - hamming / 64), from what [`fetch_for_pairs`]
/// fetched for it.
pub(crate) fn pair_similarity(
    plan: &Plan,
    a: u64,
    b: u64,
    sigs: &store::Fetched,
    sets: &ShingleSets,
) -> f64 {
    match plan.config.method {
        Method::Minhash => similarity(a, b, exact_check(plan, a, b, sigs), sets, sigs),
        Method::Simhash => {
            simhash::similarity(simhash::hamming(fingerprint(sigs, a), fingerprint(sigs, b)))
        }
    }
}

/// The documents whose shingle sets [`check_pairs`] needs for `pairs` (sorted, unique).
pub(crate) fn sets_needed(plan: &Plan, pairs: &[(u64, u64)], sigs: &store::Fetched) -> Vec<u64> {
    let cfg = &plan.config;
    match cfg.method {
        Method::Minhash => {
            docs_needing_sets(pairs, sigs, cfg.verify, cfg.threshold, cfg.min_shingles)
        }
        Method::Simhash if cfg.simhash_min_features > 0 => {
            short_docs(pairs, sigs, cfg.simhash_min_features)
        }
        Method::Simhash => Vec::new(),
    }
}

/// The verified pairs among `pairs`, checked as a verify task checks them (every check made),
/// from their signatures and the sets [`sets_needed`] names.
pub(crate) fn check_pairs(
    plan: &Plan,
    pairs: &[(u64, u64)],
    sigs: &store::Fetched,
    sets: &ShingleSets,
) -> Vec<Edge> {
    let cfg = &plan.config;
    match cfg.method {
        Method::Minhash => {
            let (mut edges, checks) =
                estimate_batch(pairs, sigs, cfg.verify, cfg.threshold, cfg.min_shingles);
            let exact: Vec<(u64, u64)> = checks.iter().map(|c| (c.a, c.b)).collect();
            edges.extend(exact_edges(&exact, sets, cfg.threshold));
            edges
        }
        Method::Simhash => {
            let (mut edges, checks) =
                hamming_batch(pairs, sigs, cfg.hamming, cfg.simhash_min_features);
            edges.extend(jaccard_edges(&checks, sets, cfg.threshold));
            edges
        }
    }
}

/// Signatures (and ids, when `ids`) of the documents of `pairs` and of `also`.
pub(crate) fn fetch_sigs(
    work: &OutputDir,
    plan: &Plan,
    pairs: &[(u64, u64)],
    also: Vec<u64>,
    ids: bool,
) -> Result<store::Fetched> {
    let mut docs = docs_of_pairs(pairs, |_, _| true);
    docs.extend(also);
    docs.par_sort_unstable();
    docs.dedup();
    let wanted = store::Wanted {
        signatures: true,
        ids,
    };
    store::fetch(work, &plan.parts, plan.store_layout(), docs, wanted)
}

/// The shingle sets of `need` (sorted, unique): those found in `held` are moved out of it
/// instead of being read again; the second value counts the sets read from `keys`.
fn fetch_sets(
    keys: &mut KeySource,
    need: Vec<u64>,
    held: &mut ShingleSets,
) -> Result<(ShingleSets, u64)> {
    let (reused, missing) = held.take(&need);
    let read = missing.len() as u64;
    Ok((reused.merge(keys.sets(missing)?), read))
}

/// What comparing `pairs` needs from the stores: signatures and ids of their documents and of
/// `also` ([`fetch_sigs`]), and the shingle sets of the documents of MinHash pairs that need
/// exact Jaccard (per [`docs_needing_sets`], through [`fetch_sets`]). For the manifest stage,
/// after the key files may have been released.
pub(crate) fn fetch_for_pairs(
    work: &OutputDir,
    plan: &Plan,
    pairs: &[(u64, u64)],
    also: Vec<u64>,
) -> Result<(store::Fetched, ShingleSets)> {
    let cfg = &plan.config;
    let sigs = fetch_sigs(work, plan, pairs, also, true)?;
    let need = match cfg.method {
        Method::Minhash => {
            docs_needing_sets(pairs, &sigs, cfg.verify, cfg.threshold, cfg.min_shingles)
        }
        Method::Simhash => Vec::new(),
    };
    let mut keys = KeySource::after_release(work, plan);
    let (sets, _) = fetch_sets(&mut keys, need, &mut ShingleSets::default())?;
    Ok((sigs, sets))
}

/// Shingle keys a verify task keeps between windows: the sets of documents in later windows,
/// lowest first (their pairs come next), up to this many keys (64 MiB), so that a document
/// whose pairs span windows is usually read once.
const CARRY_KEYS: usize = 16 << 20;

/// The verify task of part `p`: the distinct candidate pairs whose first document is in the
/// part -> the edges the estimate (SimHash: the Hamming distance) decides, the checks that need
/// shingle keys, and the documents of those checks by part (for the keys stage).
pub(crate) fn run(work: &OutputDir, plan: &Plan, p: usize) -> Result<VerifyStats> {
    // The first stage after candidates releases the band rows (pair-signatures, when it runs).
    if plan.tasks(Stage::PairSignatures) == 0 {
        candidates::release_band_rows(work, plan, p)?;
    }
    let pairs = part_pairs(
        work,
        plan,
        p,
        (0..plan.run_candidates()).map(work::pairs_file),
    )?;
    let cfg = &plan.config;
    let (mut edges, mut checks) = (Vec::new(), Vec::new());
    for batch in pairs.chunk_by(|x, y| window(x.0) == window(y.0)) {
        let sigs = fetch_sigs(work, plan, batch, Vec::new(), false)?;
        let (found, exact) = match cfg.method {
            Method::Minhash => {
                estimate_batch(batch, &sigs, cfg.verify, cfg.threshold, cfg.min_shingles)
            }
            Method::Simhash => hamming_batch(batch, &sigs, cfg.hamming, cfg.simhash_min_features),
        };
        edges.extend(found);
        checks.extend(exact);
    }
    if plan.tasks(Stage::Keys) > 0 {
        write_needs(work, plan, p, &edges, &checks)?;
    }
    write_edges(work, &work::estimated_file(p), &edges)?;
    write_frame(
        work,
        &work::checks_file(p),
        "verify",
        vec![
            doc_column("a", checks.iter().map(|c| c.a).collect()),
            doc_column("b", checks.iter().map(|c| c.b).collect()),
            Column::new(
                "estimate".into(),
                checks.iter().map(|c| c.estimate).collect::<Vec<f32>>(),
            ),
        ],
    )?;
    Ok(VerifyStats {
        candidate_pairs: pairs.len() as u64,
        verified_pairs: edges.len() as u64,
        exact_checks: checks.len() as u64,
        ..VerifyStats::default()
    })
}

/// The distinct pairs whose first document is in part `p`, from the candidate pair files
/// `names`, sorted.
pub(crate) fn part_pairs(
    work: &OutputDir,
    plan: &Plan,
    p: usize,
    names: impl IntoIterator<Item = String>,
) -> Result<Vec<(u64, u64)>> {
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for name in names {
        let part = (p, plan.parts[p].0);
        pairs::read_part(work, &name, plan.parts.len(), part, &mut pairs)?;
    }
    // Sorted runs, one per candidates file: a merge sort finds them.
    pairs.par_sort();
    pairs.dedup();
    Ok(pairs)
}

/// `--work-keys remade`: writes the documents of verify task `p`'s `checks` by part, for the
/// keys stage. Under `components` a check whose documents the estimate's `edges` already link
/// is skipped ([`exact::run`]): its documents need no keys for it.
fn write_needs(
    work: &OutputDir,
    plan: &Plan,
    p: usize,
    edges: &[Edge],
    checks: &[ExactPair],
) -> Result<()> {
    let mut joined = SparseUnionFind::default();
    if plan.config.cluster == ClusterRule::Components {
        for e in edges {
            joined.union(e.a, e.b);
        }
    }
    let open: Vec<(u64, u64)> = (checks.iter())
        .filter(|c| !joined.connected(c.a, c.b))
        .map(|c| (c.a, c.b))
        .collect();
    let needs = docs_of_pairs(&open, |_, _| true);
    work.write_bytes(&work::needs_file(p), doc_lists::encode(&needs, &plan.parts))
}

/// Writes `edges` (sorted by (a, b)) as a frame of a, b, similarity.
fn write_edges(work: &OutputDir, name: &str, edges: &[Edge]) -> Result<()> {
    let a: Vec<u64> = edges.iter().map(|e| e.a).collect();
    let b: Vec<u64> = edges.iter().map(|e| e.b).collect();
    let similarity: Vec<f32> = edges.iter().map(|e| e.similarity).collect();
    write_frame(
        work,
        name,
        "verify",
        vec![
            doc_column("a", a),
            doc_column("b", b),
            Column::new("similarity".into(), similarity),
        ],
    )
}

/// Reads a frame written by [`write_edges`].
fn read_edges(work: &OutputDir, name: &str, stage: &'static str) -> Result<Vec<Edge>> {
    let df = work.read_parquet(name)?;
    let (a, b) = (u64s(&df, "a", stage)?, u64s(&df, "b", stage)?);
    let s = series(&df, "similarity", stage)?;
    let s = s.f32().map_err(pe(stage))?;
    Ok((a.into_iter().zip(b).zip(s.into_no_null_iter()))
        .map(|((a, b), similarity)| Edge { a, b, similarity })
        .collect())
}
