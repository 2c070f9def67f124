//! The search a lookup runs, shared by the `lookup` stage (a part's documents) and `serve` (a
//! request's texts): the queries' band keys and exact-text hashes through each batch's filters,
//! the candidates verified as batch mode verifies, the earliest verified match kept.

use ahash::AHashMap;
use rayon::prelude::*;

use super::{LookupStats, Match};
use crate::config::{IndexKeys, Method, Verify};
use crate::error::Result;
use crate::index::batch::{self, BatchReader};
use crate::index::labels;
use crate::io::output::OutputDir;
use crate::plan::Plan;
use crate::simhash;
use crate::stages::verify::decide::hamming_pair;
use crate::text::sets::{jaccard, ShingleSets};

/// The documents a lookup searches the index for: a part's (this stage), or `serve`'s requests.
/// Query `q` is the q-th of them.
pub(crate) trait Queries: Sync {
    /// Its signature (SimHash: the fingerprint record).
    fn sig(&self, q: usize) -> &[u32];
    /// Its shingle count.
    fn shingles(&self, q: usize) -> u32;
    /// The shingle sets (sorted, unique keys) of queries `qs` (sorted, unique), by query number:
    /// for the pairs verified on exact Jaccard.
    fn sets(&self, qs: Vec<u64>) -> Result<ShingleSets>;
}

/// The queries as the index looks them up: each band's keys in the order of their high bits (a
/// filter's block follows from them, so probing in that order walks every filter front to back
/// instead of missing the cache on each probe, which made the lookup cost grow with the number
/// of batches), the exact-text hashes likewise by the low 64 bits the exact filters hold, and
/// SimHash fingerprints.
pub(crate) struct Probes {
    fps: Vec<u64>,
    sorted: Vec<Vec<(u64, u32)>>,
    exact: Vec<u128>,
    exact_sorted: Vec<(u64, u32)>,
}

impl Probes {
    /// The probes of `n` queries with exact-text hashes `exact` (0: none) and, with
    /// `--partition-by`, each query's partition key (`partitions`, else empty).
    pub(crate) fn of(
        plan: &Plan,
        n: usize,
        queries: &impl Queries,
        exact: Vec<u128>,
        partitions: &[u64],
    ) -> Probes {
        let cfg = &plan.config;
        let bands = plan.bands();
        let simhash = cfg.method == Method::Simhash;
        // Band keys of the queries (none for a document without shingles or features).
        let indexed: Vec<bool> = (0..n)
            .into_par_iter()
            .map(|q| match simhash {
                true => simhash::record_features(queries.sig(q)) > 0,
                false => queries.shingles(q) > 0,
            })
            .collect();
        let fps: Vec<u64> = (0..n)
            .into_par_iter()
            .map(|q| match simhash {
                true => simhash::record_fingerprint(queries.sig(q)),
                false => 0,
            })
            .collect();
        let block_index = plan.block_index();
        let mut keys = vec![0u64; n * bands];
        keys.par_chunks_mut(bands.max(1))
            .enumerate()
            .for_each(|(q, out)| {
                match simhash {
                    true => block_index.bucket_keys(fps[q], out),
                    false => crate::lsh::band_keys(queries.sig(q), cfg.rows, out),
                }
                // With `--partition-by`, keys within the document's partition, as the batch
                // stored them.
                if let Some(&pk) = partitions.get(q) {
                    out.iter_mut()
                        .for_each(|k| *k = crate::partition::band_key(*k, pk));
                }
            });
        let sorted: Vec<Vec<(u64, u32)>> = (0..bands)
            .into_par_iter()
            .with_min_len(inline_below(n))
            .map(|b| {
                by_high_bits(
                    (0..n)
                        .filter(|&q| indexed[q])
                        .map(|q| (keys[q * bands + b], q as u32)),
                )
            })
            .collect();
        let exact_sorted = by_high_bits(
            (0..n)
                .filter(|&q| exact[q] != 0)
                .map(|q| (exact[q] as u64, q as u32)),
        );
        Probes {
            fps,
            sorted,
            exact,
            exact_sorted,
        }
    }
}

/// The index's batches `compare`, opened for lookups (shared with other tasks of the process).
pub(crate) fn open_batches(
    index: &OutputDir,
    compare: &[crate::index::BatchEntry],
    bands: usize,
) -> Result<Vec<std::sync::Arc<BatchReader>>> {
    compare
        .par_iter()
        .map(|e| BatchReader::open(index, e, bands))
        .collect()
}

/// Which indexed documents a query may match: a lingering batch's live documents only
/// (`--cluster keeper`); with `--across`, only those of another value than the query's.
pub(crate) struct Live {
    alive: Vec<Option<Vec<u32>>>,
    /// Each batch's documents removed online since (sorted; else empty).
    pub removed: Vec<Vec<u32>>,
    /// `--across`: each query's value, and each batch's documents' values (else empty).
    mine: Vec<u64>,
    theirs: Vec<Vec<u64>>,
}

impl Live {
    /// The live documents of `compare`'s batches; `mine`: the queries' `--across` values.
    pub(crate) fn read(
        index: &OutputDir,
        compare: &[crate::index::BatchEntry],
        across: bool,
        mine: Vec<u64>,
    ) -> Result<Live> {
        let theirs = match across {
            true => compare
                .iter()
                .map(|e| labels::read(index, e))
                .collect::<Result<Vec<_>>>()?,
            false => Vec::new(),
        };
        Ok(Live {
            alive: crate::index::renew::alive(index, compare)?,
            removed: Vec::new(),
            mine,
            theirs,
        })
    }

    /// Removes the indexed documents with one of `ids` (removed online) from every match: their
    /// batches' ids are read through, as removal is rare. Returns how many it found.
    pub(crate) fn remove_ids(
        &mut self,
        readers: &[std::sync::Arc<BatchReader>],
        ids: &ahash::AHashSet<String>,
    ) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut found = 0;
        self.removed.resize(readers.len(), Vec::new());
        for (r, removed) in readers.iter().zip(&mut self.removed) {
            let docs = r.in_files();
            let mut gone: Vec<u32> = (r.ids(&docs)?.into_iter())
                .filter(|(_, id)| ids.contains(id))
                .map(|(x, _)| x)
                .collect();
            found += gone.len() as u64;
            removed.append(&mut gone);
            removed.sort_unstable();
            removed.dedup();
        }
        Ok(found)
    }

    /// Whether query `q` may match document `x` of batch `bi`.
    fn admits(&self, bi: usize, q: usize, x: u32) -> bool {
        let apart = (self.theirs.get(bi)).is_none_or(|t| t.get(x as usize) != self.mine.get(q));
        apart
            && self.alive[bi]
                .as_ref()
                .is_none_or(|a| a.binary_search(&x).is_ok())
            && (self.removed.get(bi)).is_none_or(|r| r.binary_search(&x).is_err())
    }
}

/// Each query's earliest verified match in `readers` (by batch, then document), and whether it
/// has an exact copy there: per batch from the oldest, the exact pre-pass, then the band keys
/// through the filters, then verification of the candidates that could beat the match so far.
pub(crate) fn search(
    plan: &Plan,
    readers: &[std::sync::Arc<BatchReader>],
    probes: &Probes,
    live: &Live,
    queries: &impl Queries,
) -> Result<(Vec<Option<Match>>, Vec<bool>, LookupStats)> {
    let cfg = &plan.config;
    let bands = plan.bands();
    let n = probes.exact.len();
    let mut stats = LookupStats {
        filter_bytes: readers.iter().map(|r| r.memory_bytes() as u64).sum(),
        ..LookupStats::default()
    };
    let simhash = cfg.method == Method::Simhash;
    let mut best: Vec<Option<Match>> = vec![None; n];
    // Queries with an exact copy in the index (their earliest match may still be a
    // near-duplicate with a smaller number in the same batch).
    let mut copy: Vec<bool> = vec![false; n];
    for (bi, r) in readers.iter().enumerate() {
        let bi = bi as u32;
        // A query with a match in an earlier batch looks no further.
        let open = |q: usize, best: &[Option<Match>]| best[q].is_none_or(|m| m.0 >= bi);
        // 1. Exact copies.
        let exact: Vec<(usize, u128)> = r
            .exact_may_have(&probes.exact_sorted)
            .into_iter()
            .map(|(_, q)| q as usize)
            .filter(|&q| best[q].is_none())
            .map(|q| (q, probes.exact[q]))
            .collect();
        let found = r.find_exact(&exact)?;
        for (q, x) in found
            .into_iter()
            .filter(|&(q, x)| live.admits(bi as usize, q, x))
        {
            best[q] = Some((bi, x, 1.0));
            copy[q] = true;
        }
        // 2. Band keys through the filters, then the sorted keys (bands in parallel).
        let per_band: Vec<(u64, Vec<(usize, u32)>)> = (0..bands)
            .into_par_iter()
            .with_min_len(inline_below(n))
            .map(|b| {
                // The filter first, in key order; the few keys that pass are then checked
                // against the matches so far (in query order that would miss the cache).
                let keys: Vec<(usize, u64)> = r
                    .band_may_have(b, &probes.sorted[b])
                    .into_iter()
                    .map(|(key, q)| (q as usize, key))
                    .filter(|&(q, _)| open(q, &best))
                    .collect();
                // SimHash: a bucket only says that one block of bits agrees; the records carry
                // the fingerprints, so only pairs within the Hamming distance become candidates.
                let near = |q: usize, fp: u64| {
                    !simhash || simhash::hamming(probes.fps[q], fp) as usize <= cfg.hamming
                };
                Ok((keys.len() as u64, r.find_band(b, &keys, near)?))
            })
            .collect::<Result<_>>()?;
        let mut cands: Vec<(usize, u32)> = Vec::new();
        for (passes, found) in per_band {
            stats.filter_passes += passes;
            cands.extend(found);
        }
        cands.retain(|&(q, x)| live.admits(bi as usize, q, x));
        cands.par_sort_unstable();
        cands.dedup();
        // A candidate that cannot beat the query's match so far needs no verification.
        cands.retain(|&(q, x)| best[q].is_none_or(|m| (bi, x) < (m.0, m.1)));
        stats.candidates += cands.len() as u64;
        for (q, m) in verify(cfg, queries, r, &cands)? {
            if best[q].is_none_or(|b| (m.0, m.1) < (b.0, b.1)) {
                best[q] = Some((bi, m.1, m.2));
            }
        }
    }
    Ok((best, copy, stats))
}

/// A search of fewer queries than this runs its per-band work on the calling thread: `serve`'s
/// requests are a text or a few, for which handing each batch's bands to the pool (a wake-up
/// and a wait each) costs more than it saves.
const INLINE_QUERIES: usize = 64;

/// The least number of bands a parallel step over bands takes at a time for `n` queries.
fn inline_below(n: usize) -> usize {
    match n < INLINE_QUERIES {
        true => usize::MAX,
        false => 1,
    }
}

/// Bits of a key [`by_high_bits`] orders by: 4,096 runs, each of which falls in a few cache lines
/// of any filter (a 1M-key filter is 1.5 MB).
const ORDER_BITS: u32 = 12;

/// The (key, query) pairs ordered by the top [`ORDER_BITS`] bits of the key, in two passes
/// (a counting sort), which is all the filters' locality needs; the order of the pairs within a
/// run is their input order, so the result is deterministic.
fn by_high_bits(items: impl Iterator<Item = (u64, u32)> + Clone) -> Vec<(u64, u32)> {
    // A few items (a request's): a stable sort gives the same order without the counts.
    if items.clone().nth(INLINE_QUERIES).is_none() {
        let mut out: Vec<(u64, u32)> = items.collect();
        out.sort_by_key(|&(k, _)| k >> (64 - ORDER_BITS));
        return out;
    }
    by_counts(items)
}

/// [`by_high_bits`] by a counting sort.
fn by_counts(items: impl Iterator<Item = (u64, u32)> + Clone) -> Vec<(u64, u32)> {
    let run = |k: u64| (k >> (64 - ORDER_BITS)) as usize;
    let mut start = vec![0usize; (1 << ORDER_BITS) + 1];
    for (k, _) in items.clone() {
        start[run(k) + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut out = vec![(0, 0); start[1 << ORDER_BITS]];
    for (k, q) in items {
        let at = &mut start[run(k)];
        out[*at] = (k, q);
        *at += 1;
    }
    out
}

/// The verified candidates among `cands` (part position, document of batch `r`):
/// (part position, (batch, document, similarity, exact)).
fn verify(
    cfg: &crate::Config,
    queries: &impl Queries,
    r: &BatchReader,
    cands: &[(usize, u32)],
) -> Result<Vec<(usize, Match)>> {
    let mut xs: Vec<u32> = cands.iter().map(|c| c.1).collect();
    xs.par_sort_unstable();
    xs.dedup();
    let recs = r.records(&xs)?;
    let simhash = cfg.method == Method::Simhash;
    // Short documents need their shingle sets: tonight's from the store, the batch's from its
    // keys file (a batch stores the keys of every document that can be in such a pair).
    let short_q = |q: usize| -> bool {
        if simhash {
            cfg.simhash_min_features > 0
                && (simhash::record_features(queries.sig(q)) as usize) < cfg.simhash_min_features
        } else {
            (queries.shingles(q) as usize) < cfg.min_shingles
        }
    };
    let short_x = |x: u32| -> bool {
        let rec = recs.get(&x).map_or(&[][..], Vec::as_slice);
        if simhash {
            let (_, f) = batch::simhash_record_parts(rec);
            cfg.simhash_min_features > 0 && (f as usize) < cfg.simhash_min_features
        } else {
            (batch::minhash_record_shingles(rec) as usize) < cfg.min_shingles
        }
    };
    // MinHash pairs checked on exact Jaccard, by the rule of batch mode ([`verify::needs_exact`],
    // on the 8-bit estimate): short documents always, and with `--index-keys all` also pairs
    // near the threshold.
    let all_keys = !simhash && cfg.index_keys == IndexKeys::All;
    let k = cfg.num_perm as f64;
    let margin = 3.0 * (cfg.threshold * (1.0 - cfg.threshold) / k).sqrt() + 1.0 / k;
    let needs_exact = |q: usize, x: u32| -> bool {
        if short_q(q) || short_x(x) {
            return true;
        }
        if !all_keys {
            return false;
        }
        let rec = recs.get(&x).map_or(&[][..], Vec::as_slice);
        match cfg.verify {
            Verify::Exact => true,
            Verify::Estimate => false,
            Verify::Auto => {
                let est = batch::bbit_estimate(queries.sig(q), rec);
                (est - cfg.threshold).abs() <= margin
            }
        }
    };
    let pairs_short: Vec<(usize, u32)> = cands
        .iter()
        .copied()
        .filter(|&(q, x)| needs_exact(q, x))
        .collect();
    let mut tq: Vec<u64> = pairs_short.iter().map(|&(q, _)| q as u64).collect();
    tq.sort_unstable();
    tq.dedup();
    let mut tx: Vec<u32> = pairs_short.iter().map(|&(_, x)| x).collect();
    tx.sort_unstable();
    tx.dedup();
    // Both sides as sorted sets.
    let tonight = queries.sets(tq)?;
    let theirs: AHashMap<u32, Vec<u32>> = r.keys(&tx)?;
    let exact_j = |q: usize, x: u32| -> Option<f64> {
        Some(jaccard(tonight.get(q as u64)?, theirs.get(&x)?))
    };
    Ok(cands
        .par_iter()
        .with_min_len(64)
        .filter_map(|&(q, x)| {
            let rec = recs.get(&x)?;
            let short = needs_exact(q, x);
            let mine = queries.sig(q);
            let sim = if simhash {
                let (fp, _) = batch::simhash_record_parts(rec);
                let exact = || exact_j(q, x).unwrap_or(0.0);
                let mine = simhash::record_fingerprint(mine);
                hamming_pair(mine, fp, cfg.hamming, short, exact, cfg.threshold)?
            } else if short {
                exact_j(q, x).unwrap_or(0.0)
            } else {
                batch::bbit_estimate(mine, rec)
            };
            (sim >= cfg.threshold || simhash).then_some((q, (0, x, sim as f32)))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_high_bits_orders_by_the_top_bits_and_keeps_every_pair() {
        let items: Vec<(u64, u32)> = (0..5000u32)
            .map(|q| (crate::lsh::mix64(u64::from(q % 3000)), q))
            .collect();
        let out = by_high_bits(items.iter().copied());
        assert!(out.windows(2).all(|w| w[0].0 >> 52 <= w[1].0 >> 52));
        let (mut a, mut b) = (items.clone(), out.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(by_high_bits(items.iter().copied()), out);
        // A request's few items, runs shared: the stable sort gives the counting sort's order.
        let few: Vec<(u64, u32)> = (0..40u32)
            .map(|q| ((u64::from(q % 3) << 60) | u64::from(40 - q), q))
            .collect();
        assert_eq!(
            by_high_bits(few.iter().copied()),
            by_counts(few.iter().copied())
        );
    }
}
