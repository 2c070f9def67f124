//! How a candidate pair is decided: on the signature estimate or on the exact Jaccard of the
//! stored shingle keys ([`needs_exact`]), in batches ([`estimate_batch`], [`exact_batch`]), and
//! SimHash's Hamming check with its short-document rule ([`hamming_batch`], [`jaccard_edges`]).

use rayon::prelude::*;

use crate::config::Verify;
use crate::minhash::{estimate_jaccard, SigSource};
use crate::simhash;
use crate::text::sets::{KeyTable, ShingleSets};
use crate::unionfind::SparseUnionFind;

/// A verified duplicate pair (a < b) and its similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Edge {
    pub a: u64,
    pub b: u64,
    pub similarity: f32,
}

/// Whether a pair must be verified on exact shingle sets under `mode`. `estimate` gives the
/// pair's signature estimate, and is called only when the mode needs it (a caller that has the
/// estimate already passes it in rather than computing it twice).
pub(crate) fn needs_exact(
    a: u64,
    b: u64,
    sigs: &impl SigSource,
    mode: Verify,
    threshold: f64,
    min_shingles: usize,
    estimate: impl FnOnce() -> f64,
) -> bool {
    let short = |d: u64| (sigs.shingles(d) as usize) < min_shingles;
    let k = sigs.k() as f64;
    match mode {
        Verify::Exact => true,
        Verify::Estimate => short(a) || short(b),
        Verify::Auto => {
            let margin = 3.0 * (threshold * (1.0 - threshold) / k).sqrt() + 1.0 / k;
            short(a) || short(b) || (estimate() - threshold).abs() <= margin
        }
    }
}

/// The documents of the pairs that need the exact check (sorted, unique): both documents of such
/// a pair, so its Jaccard can be computed.
pub(crate) fn docs_needing_sets(
    pairs: &[(u64, u64)],
    sigs: &impl SigSource,
    mode: Verify,
    threshold: f64,
    min_shingles: usize,
) -> Vec<u64> {
    docs_of_pairs(pairs, |a, b| {
        let estimate = || estimate_jaccard(sigs.sig(a), sigs.sig(b));
        needs_exact(a, b, sigs, mode, threshold, min_shingles, estimate)
    })
}

/// Both documents of every pair for which `select(a, b)` holds, sorted and unique.
pub(crate) fn docs_of_pairs(
    pairs: &[(u64, u64)],
    select: impl Fn(u64, u64) -> bool + Sync,
) -> Vec<u64> {
    let mut docs: Vec<u64> = pairs
        .par_iter()
        .filter(|&&(a, b)| select(a, b))
        .flat_map_iter(|&(a, b)| [a, b])
        .collect();
    docs.par_sort_unstable();
    docs.dedup();
    docs
}

/// Similarity of a pair: exact Jaccard of the shingle sets when `exact` (the pair needs the exact
/// check, per [`needs_exact`]; both sets must then be held), the signature estimate otherwise.
/// Which method applies depends on the pair alone, never on what other sets happen to be held,
/// so the result does not depend on how pairs are batched into tasks.
pub(crate) fn similarity(
    a: u64,
    b: u64,
    exact: bool,
    sets: &ShingleSets,
    sigs: &impl SigSource,
) -> f64 {
    match exact.then(|| held_jaccard(a, b, sets)).flatten() {
        Some(j) => j,
        None => estimate_jaccard(sigs.sig(a), sigs.sig(b)),
    }
}

thread_local! {
    /// Each thread's table for [`held_jaccard`] (reused across pairs, never cleared).
    static TABLE: std::cell::RefCell<KeyTable> = std::cell::RefCell::default();
}

/// Exact Jaccard of a pair whose two shingle sets are held (None, and a debug assertion, when one
/// is not: callers fetch the sets of the pairs they check exactly).
fn held_jaccard(a: u64, b: u64, sets: &ShingleSets) -> Option<f64> {
    let j = sets
        .get(a)
        .zip(sets.get(b))
        .map(|(x, y)| TABLE.with_borrow_mut(|t| t.jaccard(x, y)));
    debug_assert!(
        j.is_some(),
        "exact check of ({a}, {b}) without both shingle sets"
    );
    j
}

/// The pairs whose exact Jaccard (on the held `sets`) is at least `threshold`, in input order.
pub(crate) fn exact_edges(pairs: &[(u64, u64)], sets: &ShingleSets, threshold: f64) -> Vec<Edge> {
    reaching(pairs, &exact_jaccards(pairs, sets), threshold)
}

/// The pairs whose Jaccard (`jaccards`, one per pair) is at least `threshold`, as edges.
fn reaching(pairs: &[(u64, u64)], jaccards: &[f64], threshold: f64) -> Vec<Edge> {
    (pairs.iter().zip(jaccards))
        .filter(|&(_, &s)| s >= threshold)
        .map(|(&(a, b), &s)| Edge {
            a,
            b,
            similarity: s as f32,
        })
        .collect()
}

/// The exact Jaccard of each pair (on the held `sets`), in input order. Consecutive pairs with
/// the same first document share one load of its keys ([`KeyTable::jaccards`]): pairs come
/// sorted, and a document is often checked against several.
pub(crate) fn exact_jaccards(pairs: &[(u64, u64)], sets: &ShingleSets) -> Vec<f64> {
    let groups: Vec<&[(u64, u64)]> = pairs.chunk_by(|x, y| x.0 == y.0).collect();
    groups
        .par_iter()
        .with_min_len(16)
        .flat_map_iter(|group| {
            let a = group[0].0;
            let others: Vec<&[u32]> = group
                .iter()
                .map(|&(_, b)| sets.get(b).unwrap_or_default())
                .collect();
            debug_assert!(
                sets.get(a).is_some() && group.iter().all(|&(_, b)| sets.get(b).is_some()),
                "exact checks of {a} without all their shingle sets"
            );
            // NaN (no edge at any threshold) where the first document's set is not held.
            let mut out = vec![f64::NAN; group.len()];
            if let Some(keys) = sets.get(a) {
                TABLE.with_borrow_mut(|t| t.jaccards(keys, &others, |n, s| out[n] = s));
            }
            out
        })
        .collect()
}

/// A candidate pair that needs the exact check, with its signature estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ExactPair {
    pub a: u64,
    pub b: u64,
    pub estimate: f32,
}

/// First pass of MinHash verification over a batch of pairs: the edges of the pairs the estimate
/// decides, and the pairs that need the exact check (per [`needs_exact`] under `mode`), both in
/// input order. Each pair's estimate is computed once, for both.
pub(crate) fn estimate_batch(
    pairs: &[(u64, u64)],
    sigs: &impl SigSource,
    mode: Verify,
    threshold: f64,
    min_shingles: usize,
) -> (Vec<Edge>, Vec<ExactPair>) {
    let decided: Vec<(f64, bool)> = pairs
        .par_iter()
        .with_min_len(64)
        .map(|&(a, b)| {
            let s = estimate_jaccard(sigs.sig(a), sigs.sig(b));
            let exact = needs_exact(a, b, sigs, mode, threshold, min_shingles, || s);
            (s, exact)
        })
        .collect();
    let mut edges = Vec::new();
    let mut checks = Vec::new();
    for (&(a, b), &(s, x)) in pairs.iter().zip(&decided) {
        if x {
            checks.push(ExactPair {
                a,
                b,
                estimate: s as f32,
            });
        } else if s >= threshold {
            edges.push(Edge {
                a,
                b,
                similarity: s as f32,
            });
        }
    }
    (edges, checks)
}

/// Second pass: the exact checks of a batch, skipping those whose answer cannot matter.
///
/// `joined` (`--cluster components`; None checks every pair) links the documents of every edge
/// found so far (all estimate-decided edges of the task, then the exact edges as they are
/// found). A pair whose documents are already linked is skipped: its edge could only join a cluster with itself, so the clusters, the kept documents
/// and the manifest are the same as with every pair checked (the manifest computes a
/// similarity to the kept document the same way when no edge gives it). Pairs whose estimate
/// reaches the threshold (likely edges) are checked first, then the others, so more of the
/// latter are skipped. Sets come from `fetch_sets` (documents sorted and unique, not already
/// fetched for this batch). Which pairs are skipped depends only on the pairs and the order of
/// batches, so the edges are the same at any thread count. `computed` (`--sweep`) gets every
/// check made with its Jaccard. Returns the edges, the sets fetched
/// and the number of checks skipped.
pub(crate) fn exact_batch(
    checks: &[ExactPair],
    threshold: f64,
    mut joined: Option<&mut SparseUnionFind>,
    mut fetch_sets: impl FnMut(Vec<u64>) -> crate::error::Result<ShingleSets>,
    mut computed: Option<&mut Vec<(u64, u64, f64)>>,
) -> crate::error::Result<(Vec<Edge>, ShingleSets, u64)> {
    let mut edges = Vec::new();
    let mut sets = ShingleSets::default();
    let mut skipped = 0;
    for likely in [true, false] {
        let mut todo = Vec::new();
        for c in checks {
            if (f64::from(c.estimate) >= threshold) == likely {
                if joined.as_mut().is_some_and(|j| j.connected(c.a, c.b)) {
                    skipped += 1;
                } else {
                    todo.push((c.a, c.b));
                }
            }
        }
        let mut need = docs_of_pairs(&todo, |_, _| true);
        need.retain(|&d| sets.get(d).is_none());
        sets = sets.merge(fetch_sets(need)?);
        let jaccards = exact_jaccards(&todo, &sets);
        if let Some(all) = computed.as_mut() {
            all.extend(todo.iter().zip(&jaccards).map(|(&(a, b), &j)| (a, b, j)));
        }
        let found = reaching(&todo, &jaccards, threshold);
        if let Some(j) = joined.as_mut() {
            for e in &found {
                j.union(e.a, e.b);
            }
        }
        edges.extend(found);
    }
    Ok((edges, sets, skipped))
}

/// SimHash pairs within Hamming distance `k` as the verify task decides them: edges at
/// 1 - distance / 64, except a pair with a document of fewer than `min_features` features
/// (0: none), which becomes a check on the shingle sets ([`jaccard_edges`]) with that
/// similarity as its estimate.
pub(crate) fn hamming_batch(
    pairs: &[(u64, u64)],
    fps: &impl SigSource,
    k: usize,
    min_features: usize,
) -> (Vec<Edge>, Vec<ExactPair>) {
    let few = |x: u64| (simhash::record_features(fps.sig(x)) as usize) < min_features;
    let mut edges = Vec::new();
    let mut checks = Vec::new();
    for &(a, b) in pairs {
        let d = simhash::hamming(fingerprint(fps, a), fingerprint(fps, b));
        if d as usize > k {
            continue;
        }
        let similarity = simhash::similarity(d) as f32;
        match min_features > 0 && (few(a) || few(b)) {
            true => checks.push(ExactPair {
                a,
                b,
                estimate: similarity,
            }),
            false => edges.push(Edge { a, b, similarity }),
        }
    }
    (edges, checks)
}

/// One SimHash pair as verification decides it: within Hamming distance `k` of fingerprints `a`
/// and `b`, and a pair with a short document (`short`) also on its shingle sets, whose Jaccard
/// (`jaccard`, asked only within the distance) must reach `threshold`. Its similarity, else None.
pub(crate) fn hamming_pair(
    a: u64,
    b: u64,
    k: usize,
    short: bool,
    jaccard: impl FnOnce() -> f64,
    threshold: f64,
) -> Option<f64> {
    let distance = simhash::hamming(a, b);
    let kept = distance as usize <= k && (!short || jaccard() >= threshold);
    kept.then(|| simhash::similarity(distance))
}

/// The checks of [`hamming_batch`] whose shingle sets (held in `sets`) reach `threshold`, as
/// edges at their Hamming similarity.
pub(crate) fn jaccard_edges(checks: &[ExactPair], sets: &ShingleSets, threshold: f64) -> Vec<Edge> {
    checks
        .par_iter()
        .with_min_len(64)
        .filter(|c| held_jaccard(c.a, c.b, sets).unwrap_or(0.0) >= threshold)
        .map(|c| Edge {
            a: c.a,
            b: c.b,
            similarity: c.estimate,
        })
        .collect()
}

/// Both documents of every SimHash candidate pair in which a document has fewer than
/// `min_features` features (its Jaccard check needs both sets); sorted and unique.
pub(crate) fn short_docs(
    pairs: &[(u64, u64)],
    fps: &impl SigSource,
    min_features: usize,
) -> Vec<u64> {
    let few = |d: u64| (simhash::record_features(fps.sig(d)) as usize) < min_features;
    docs_of_pairs(pairs, |a, b| few(a) || few(b))
}

/// A SimHash fingerprint kept in the store as two values.
pub(super) fn fingerprint(fps: &impl SigSource, doc: u64) -> u64 {
    simhash::record_fingerprint(fps.sig(doc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minhash::Signatures;

    #[test]
    fn which_pairs_need_the_exact_check() {
        // K = 100; doc 1 is short; docs 0/2 agree on 80 of 100 values (at the threshold), 0/3 on 20.
        let mut values = vec![0u32; 400];
        for i in 0..100 {
            values[100 + i] = 0;
            values[200 + i] = if i < 80 { 0 } else { 1 };
            values[300 + i] = if i < 20 { 0 } else { 2 };
        }
        let sigs = Signatures {
            k: 100,
            values,
            shingles: vec![100, 3, 100, 100],
        };
        let pairs = [(0, 1), (0, 2), (0, 3)];
        assert_eq!(
            docs_needing_sets(&pairs, &sigs, Verify::Estimate, 0.8, 10),
            vec![0, 1]
        );
        assert_eq!(
            docs_needing_sets(&pairs, &sigs, Verify::Auto, 0.8, 10),
            vec![0, 1, 2]
        );
        assert_eq!(
            docs_needing_sets(&pairs, &sigs, Verify::Exact, 0.8, 10),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn the_pair_decides_exact_or_estimate() {
        let sigs = Signatures {
            k: 2,
            values: vec![1, 2, 1, 3],
            shingles: vec![4, 4],
        };
        let none = ShingleSets::default();
        assert_eq!(similarity(0, 1, false, &none, &sigs), 0.5);
        let sets = ShingleSets::new(vec![0, 1], vec![vec![1, 2, 3, 4], vec![1, 2, 3, 4]]);
        assert_eq!(similarity(0, 1, true, &sets, &sigs), 1.0);
        // Held sets are not used for a pair that does not need them.
        assert_eq!(similarity(0, 1, false, &sets, &sigs), 0.5);
        let edges = exact_edges(&[(0, 1)], &sets, 0.8);
        assert_eq!(
            edges,
            vec![Edge {
                a: 0,
                b: 1,
                similarity: 1.0
            }]
        );
        // Decided by the estimate (0.5): no edge, no exact check.
        let (edges, checks) = estimate_batch(&[(0, 1)], &sigs, Verify::Estimate, 0.8, 0);
        assert!(edges.is_empty() && checks.is_empty());
    }

    #[test]
    fn exact_checks_of_linked_documents_are_skipped() {
        // K = 100, `auto`: the estimate decides pairs outside 0.8 +- 0.13. Docs 0-1 and 1-2
        // agree on 95 values (decided edges); 0-2 on 90, so it needs the exact check, but 0 and
        // 2 are already linked through 1. 3-4 agree on 80 (a likely edge, checked first); 3-5
        // and 4-5 on 70 are checked after it, since 5 is joined to neither.
        let values: Vec<u32> = (0..6u32)
            .flat_map(|d| {
                (0..100u32).map(move |i| match d {
                    0 if i < 5 => 1000 + i,
                    2 if (5..10).contains(&i) => 2000 + i,
                    0..=2 => 100 + i,
                    4 if i >= 80 => 3000 + i,
                    5 if i >= 70 => 4000 + i,
                    _ => 500 + i,
                })
            })
            .collect();
        let sigs = Signatures {
            k: 100,
            values,
            shingles: vec![20; 6],
        };
        let pairs = [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5)];
        let (edges, checks) = estimate_batch(&pairs, &sigs, Verify::Auto, 0.8, 10);
        assert_eq!(
            edges.iter().map(|e| (e.a, e.b)).collect::<Vec<_>>(),
            vec![(0, 1), (1, 2)]
        );
        assert_eq!(checks.len(), 4);
        assert_eq!(checks[2].estimate, 0.7);
        let mut joined = SparseUnionFind::default();
        for e in &edges {
            joined.union(e.a, e.b);
        }
        // Sets: 3 and 4 share 9 of 10 keys (J = 0.9 / 1.1 ≈ 0.82), 5 shares few with either.
        let set = |r: std::ops::Range<u32>| r.collect::<Vec<u32>>();
        let all = ShingleSets::new(
            vec![0, 2, 3, 4, 5],
            vec![set(0..10), set(0..10), set(0..10), set(1..11), set(50..60)],
        );
        let mut asked = Vec::new();
        let mut computed = Vec::new();
        let fetch = |need: Vec<u64>| {
            asked.push(need.clone());
            Ok(ShingleSets::new(
                need.clone(),
                need.iter()
                    .map(|&d| all.get(d).unwrap_or(&[]).to_vec())
                    .collect(),
            ))
        };
        let (found, sets, skipped) =
            exact_batch(&checks, 0.8, Some(&mut joined), fetch, Some(&mut computed))
                .unwrap_or_default();
        // Every check made, with its Jaccard: 3-4 at 9 / 11, 3-5 and 4-5 at 0.
        let made: Vec<(u64, u64)> = computed.iter().map(|&(a, b, _)| (a, b)).collect();
        assert_eq!(made, [(3, 4), (3, 5), (4, 5)]);
        assert!((computed[0].2 - 9.0 / 11.0).abs() < 1e-12 && computed[1].2 == 0.0);
        // 0-2 skipped; likely round: 3-4 checked (an edge); other round: 3-5 and 4-5 checked.
        assert_eq!(skipped, 1);
        assert_eq!(asked, vec![vec![3, 4], vec![5]]);
        assert_eq!(
            found.iter().map(|e| (e.a, e.b)).collect::<Vec<_>>(),
            vec![(3, 4)]
        );
        assert_eq!(sets.len(), 3);
        assert!(joined.connected(3, 4) && !joined.connected(3, 5));
    }

    #[test]
    fn hamming_verification_with_short_check() {
        // Fingerprints and feature counts as the store keeps them.
        let fps = Signatures {
            k: 3,
            values: [
                (0b0000u64, 100),
                (0b0111, 100),
                (0b1111_0000, 100),
                (0b0001, 5),
            ]
            .into_iter()
            .flat_map(|(f, n)| simhash::to_record(f, n))
            .collect(),
            shingles: vec![10; 4],
        };
        let pairs = [(0, 1), (0, 2), (0, 3)];
        // Without the short check: every pair within distance 3 is an edge.
        let (e, checks) = hamming_batch(&pairs, &fps, 3, 0);
        assert_eq!(
            e.iter().map(|e| (e.a, e.b)).collect::<Vec<_>>(),
            vec![(0, 1), (0, 3)]
        );
        assert!(checks.is_empty());
        assert_eq!(e[0].similarity, 1.0 - 3.0 / 64.0);
        assert_eq!(short_docs(&pairs, &fps, 10), vec![0, 3]);
        // Doc 3 is short: its pair needs Jaccard >= 0.8 too.
        let (e, checks) = hamming_batch(&pairs, &fps, 3, 10);
        assert_eq!(e.len(), 1);
        assert_eq!((checks[0].a, checks[0].b), (0, 3));
        assert_eq!(checks[0].estimate, 1.0 - 1.0 / 64.0);
        let sets = ShingleSets::new(vec![0, 3], vec![vec![1, 2, 3, 4, 5], vec![1, 2, 3, 4, 6]]);
        assert!(jaccard_edges(&checks, &sets, 0.8).is_empty());
        let sets = ShingleSets::new(vec![0, 3], vec![vec![1, 2, 3, 4, 5], vec![1, 2, 3, 4, 5]]);
        let e = jaccard_edges(&checks, &sets, 0.8);
        assert_eq!((e.len(), e[0].similarity), (1, 1.0 - 1.0 / 64.0));
    }
}
