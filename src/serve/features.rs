//! A request's texts signed as a run signs its documents, by the index's method (MinHash
//! signatures, or SimHash fingerprint records through the index's feature filter), with their
//! shingle sets and exact-text hashes; and the rule that verifies one of them against a document
//! retained online, as batch verification decides the pair.

use polars::prelude::{NamedFrom, StringChunked};

use crate::config::{Config, Method};
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::minhash::{estimate_jaccard, Permutations, SigSource, Signatures};
use crate::plan::Plan;
use crate::simhash::{self, BlockIndex, DocFrequency, FeatureParams};
use crate::stages::lookup::Queries;
use crate::stages::verify::decide::{hamming_pair, needs_exact};
use crate::text::sets::{jaccard, ShingleSets};

/// How the index's documents were signed.
pub(crate) enum Signer {
    Minhash(Permutations),
    Simhash {
        params: FeatureParams,
        /// The index's feature filter (over-frequent features left out), once a batch wrote it.
        df: Option<DocFrequency>,
        blocks: BlockIndex,
    },
}

impl Signer {
    /// The signer of `plan`, a run with the settings of `index`, whose feature filter (SimHash)
    /// is the index-relative file `frequencies`.
    pub(crate) fn of(index: &OutputDir, plan: &Plan, frequencies: Option<&str>) -> Result<Signer> {
        let cfg = &plan.config;
        Ok(match cfg.method {
            Method::Minhash => Signer::Minhash(Permutations::of(cfg)),
            Method::Simhash => Signer::Simhash {
                params: crate::stages::sample::params(cfg),
                df: frequencies
                    .map(|name| crate::stages::frequencies::read_index(index, name))
                    .transpose()?,
                blocks: plan.block_index(),
            },
        })
    }

    /// Band tables (SimHash: block tables) a document is filed under.
    pub(crate) fn tables(&self, cfg: &Config) -> usize {
        match self {
            Signer::Minhash(_) => cfg.bands,
            Signer::Simhash { blocks, .. } => blocks.tables(),
        }
    }

    /// The keys of signature `sig` in each table, within `--partition-by` key `partition` (0:
    /// none); none for a document without shingles (SimHash: without weighted features), which
    /// stays out of the tables as in a run.
    pub(crate) fn keys(&self, cfg: &Config, doc: Doc<'_>, partition: u64) -> Option<Vec<u64>> {
        let (sig, shingles, _) = doc;
        let mut keys = vec![0u64; self.tables(cfg)];
        match self {
            Signer::Minhash(_) if shingles > 0 => crate::lsh::band_keys(sig, cfg.rows, &mut keys),
            Signer::Simhash { blocks, .. } if simhash::record_features(sig) > 0 => {
                blocks.bucket_keys(simhash::record_fingerprint(sig), &mut keys)
            }
            _ => return None,
        }
        for k in &mut keys {
            *k = crate::partition::band_key(*k, partition);
        }
        Some(keys)
    }

    /// The similarity of query `q` to retained document `d` (each its signature, shingle count
    /// and sorted shingle set) when batch verification makes them an edge, else None: MinHash by
    /// the estimate where it is clear, exact Jaccard near the threshold or for a short text;
    /// SimHash within the Hamming distance, a short text also reaching the Jaccard threshold.
    pub(crate) fn verified(&self, cfg: &Config, q: Doc<'_>, d: Doc<'_>) -> Option<f64> {
        match self {
            Signer::Minhash(_) => {
                let pair = Two([(q.0, q.1), (d.0, d.1)]);
                let est = estimate_jaccard(q.0, d.0);
                let rule = (cfg.verify, cfg.threshold, cfg.min_shingles);
                let sim = match needs_exact(0, 1, &pair, rule.0, rule.1, rule.2, || est) {
                    true => jaccard(q.2, d.2),
                    false => est,
                };
                (sim >= cfg.threshold).then_some(sim)
            }
            Signer::Simhash { .. } => {
                let fp = simhash::record_fingerprint;
                let few =
                    |s: &[u32]| (simhash::record_features(s) as usize) < cfg.simhash_min_features;
                let short = cfg.simhash_min_features > 0 && (few(q.0) || few(d.0));
                let jaccard = || jaccard(q.2, d.2);
                hamming_pair(fp(q.0), fp(d.0), cfg.hamming, short, jaccard, cfg.threshold)
            }
        }
    }
}

/// A document as [`Signer::verified`] reads it: signature, shingle count, sorted shingle set.
pub(crate) type Doc<'a> = (&'a [u32], u32, &'a [u32]);

/// The texts of a request, signed and shingled as a run signs its documents.
pub(crate) struct Features {
    pub sigs: Signatures,
    /// Sorted, unique shingle keys.
    pub sets: Vec<Vec<u32>>,
    /// Exact-text hashes, within each text's partition.
    pub exact: Vec<u128>,
    /// `--partition-by` keys of the texts (empty: the index has no partitions).
    pub partitions: Vec<u64>,
}

impl Features {
    /// The features of `texts`, each within its `--partition-by` key in `partitions` (empty:
    /// none).
    pub(crate) fn of(
        texts: &[&str],
        partitions: Vec<u64>,
        cfg: &Config,
        signer: &Signer,
    ) -> Features {
        let column = StringChunked::new("text".into(), texts);
        let perms = match signer {
            Signer::Minhash(perms) => Some(perms),
            Signer::Simhash { .. } => None,
        };
        let (mut sigs, keys) = crate::stages::signatures::signature_column(
            &column,
            perms,
            cfg.effective_tokenizer(),
            cfg.ngram,
            None,
        );
        if let Signer::Simhash { params, df, .. } = signer {
            // Features computed afresh: a run's sample shares its features, not its results.
            let fps = simhash::fingerprint_column(&column, |_| None, *params, df.as_ref());
            let records = fps.values.iter().zip(&fps.features);
            sigs.k = 3;
            sigs.values = records
                .flat_map(|(&f, &n)| simhash::to_record(f, n))
                .collect();
        }
        let sets = (0..texts.len())
            .map(|d| {
                let mut s = keys.get(d).to_vec();
                s.sort_unstable();
                s.dedup();
                s
            })
            .collect();
        let exact = (0..texts.len())
            .map(|d| {
                crate::partition::exact_key(keys.exact(d), partitions.get(d).copied().unwrap_or(0))
            })
            .collect();
        Features {
            sigs,
            sets,
            exact,
            partitions,
        }
    }

    /// The `--partition-by` key of text `q` (0: none).
    pub(crate) fn partition(&self, q: usize) -> u64 {
        self.partitions.get(q).copied().unwrap_or(0)
    }

    /// Query `q` as [`Signer::verified`] reads it.
    pub(crate) fn doc(&self, q: usize) -> Doc<'_> {
        (
            self.sigs.get(q as u32),
            self.sigs.shingles[q],
            &self.sets[q],
        )
    }
}

impl Queries for Features {
    fn sig(&self, q: usize) -> &[u32] {
        self.sigs.get(q as u32)
    }
    fn shingles(&self, q: usize) -> u32 {
        self.sigs.shingles[q]
    }
    fn sets(&self, qs: Vec<u64>) -> Result<ShingleSets> {
        let sets = qs.iter().map(|&q| self.sets[q as usize].clone()).collect();
        Ok(ShingleSets::new(qs, sets))
    }
}

/// Two signatures as the verify rule reads them (documents 0 and 1).
struct Two<'a>([(&'a [u32], u32); 2]);

impl SigSource for Two<'_> {
    fn k(&self) -> usize {
        self.0[0].0.len()
    }
    fn sig(&self, doc: u64) -> &[u32] {
        self.0[doc as usize & 1].0
    }
    fn shingles(&self, doc: u64) -> u32 {
        self.0[doc as usize & 1].1
    }
}
