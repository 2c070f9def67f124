//! What a signatures task computes per document, by method: MinHash signatures and band keys
//! ([`super::column::signature_column`]) or SimHash fingerprints and block keys, for one chunk at a time.

use polars::prelude::StringChunked;
use rayon::prelude::*;

use crate::config::{Config, Method, WorkKeys};
use crate::corpus::Corpus;
use crate::error::Result;
use crate::io::output::OutputDir;
use crate::minhash::{Permutations, Signatures};
use crate::plan::Plan;
use crate::reference::Table;
use crate::simhash::{self, BlockIndex, DocFrequency, FeatureParams, Features};
use crate::stages::{frequencies, sample};

use super::column::{exact_column, signature_column_keeping, ShingleKeys};

/// What a task computes per document, by method.
pub(super) enum Kernel {
    Minhash {
        perms: Permutations,
        rows: usize,
        /// `--sweep`: the rows of its bands, which follow the run's `bands` (none: 0).
        sweep_rows: usize,
        bands: usize,
        /// Whether the chunk's shingle keys are kept (`--work-keys stored`).
        keys: bool,
    },
    Simhash {
        index: BlockIndex,
        params: FeatureParams,
        df: Option<DocFrequency>,
        /// Features of the part's sampled documents (global index, features), ascending.
        sampled: Vec<(u64, Features)>,
        /// Whether short documents are re-checked on their shingle sets.
        short: bool,
        /// Whether the chunk's shingle keys are kept (short-document checks, `--work-keys
        /// stored`).
        keys: bool,
    },
}

/// One chunk's results: signatures (SimHash: fingerprints as two values, feature counts),
/// shingle keys, `bands` band keys per document, ids.
pub(super) struct Chunk {
    pub(super) sigs: Signatures,
    pub(super) keys: ShingleKeys,
    pub(super) band_keys: Vec<u64>,
    pub(super) ids: Vec<String>,
}

impl Kernel {
    pub(super) fn new(work: &OutputDir, plan: &Plan, p: usize) -> Result<Kernel> {
        let cfg = &plan.config;
        Ok(match cfg.method {
            Method::Minhash => Kernel::Minhash {
                perms: Permutations::of(cfg),
                rows: cfg.rows,
                sweep_rows: plan.sweep_layout().map_or(0, |(_, rows)| rows),
                bands: cfg.bands,
                keys: cfg.work_keys != WorkKeys::Remade,
            },
            Method::Simhash => {
                let indexed = plan
                    .index
                    .as_ref()
                    .and_then(|ip| Some((ip.dir(), ip.frequencies.clone()?)));
                let (df, sampled) = if let Some((index, name)) = indexed {
                    (Some(frequencies::read_index(&index, &name)?), Vec::new())
                } else if plan.samples_features() {
                    (Some(frequencies::read(work)?), sample::read(work, p)?)
                } else {
                    (None, Vec::new())
                };
                Kernel::Simhash {
                    index: plan.block_index(),
                    params: sample::params(cfg),
                    df,
                    sampled,
                    short: cfg.simhash_min_features > 0,
                    keys: cfg.simhash_min_features > 0 && cfg.work_keys != WorkKeys::Remade,
                }
            }
        })
    }

    /// Stored values per document.
    pub(super) fn k(&self) -> usize {
        match self {
            Kernel::Minhash { perms, .. } => perms.len(),
            Kernel::Simhash { .. } => 3,
        }
    }

    /// Whether document `d` of a chunk has band rows: a shingle (MinHash) or a weighted feature
    /// (SimHash); the others are null or empty and stay singletons.
    pub(super) fn indexed(&self, sigs: &Signatures, d: usize) -> bool {
        match self {
            Kernel::Minhash { .. } => sigs.shingles[d] > 0,
            Kernel::Simhash { .. } => simhash::record_features(sigs.get(d as u32)) > 0,
        }
    }

    /// The chunk's results for its text columns `texts` (one per shard of `corpus`: the shards'
    /// own, or with raw copies made null, [`super::read::without_copies`]); `first` is the global index of its
    /// first document.
    pub(super) fn compute(
        &self,
        corpus: &Corpus,
        texts: &[StringChunked],
        first: u64,
        bands: usize,
        cfg: &Config,
        reference: Option<&Table>,
    ) -> Chunk {
        let tokenizer = cfg.effective_tokenizer();
        let n = corpus.len();
        let mut sigs = Signatures {
            k: self.k(),
            ..Signatures::default()
        };
        let mut keys = ShingleKeys::default();
        for (s, text) in texts.iter().enumerate() {
            let (sg, kk) = match self {
                Kernel::Minhash { perms, keys, .. } => {
                    let (p, n) = (Some(perms), cfg.ngram);
                    signature_column_keeping(text, p, tokenizer, n, reference, *keys)
                }
                Kernel::Simhash {
                    params,
                    df,
                    sampled,
                    short,
                    keys: with_keys,
                    ..
                } => {
                    let at = first + corpus.start(s) as u64;
                    let of = |i: usize| {
                        let d = at + i as u64;
                        sampled
                            .binary_search_by_key(&d, |(x, _)| *x)
                            .ok()
                            .map(|j| sampled[j].1.as_slice())
                    };
                    let fps = simhash::fingerprint_column(text, of, *params, df.as_ref());
                    let (counts, keys) = if *short {
                        let (counts, keys) = signature_column_keeping(
                            text, None, tokenizer, cfg.ngram, reference, *with_keys,
                        );
                        (counts.shingles, keys)
                    } else {
                        let keys = exact_column(text, tokenizer, cfg.ngram, reference);
                        (vec![0; text.len()], keys)
                    };
                    let values = fps.values.iter().zip(&fps.features);
                    let sg = Signatures {
                        k: 3,
                        values: values
                            .flat_map(|(&f, &n)| simhash::to_record(f, n))
                            .collect(),
                        shingles: counts,
                    };
                    (sg, keys)
                }
            };
            sigs.extend(sg);
            keys.extend(kk);
        }
        let mut band_keys = vec![0u64; n * bands];
        band_keys
            .par_chunks_mut(bands.max(1))
            .enumerate()
            .with_min_len(64)
            .for_each(|(d, out)| match self {
                Kernel::Minhash {
                    rows,
                    sweep_rows,
                    bands,
                    ..
                } => {
                    let (run, sweep) = out.split_at_mut(*bands);
                    crate::lsh::band_keys(sigs.get(d as u32), *rows, run);
                    crate::lsh::band_keys(sigs.get(d as u32), *sweep_rows, sweep);
                }
                Kernel::Simhash { index, .. } => {
                    index.bucket_keys(simhash::record_fingerprint(sigs.get(d as u32)), out)
                }
            });
        let ids = (0..n as u32)
            .into_par_iter()
            .map(|d| corpus.id(d))
            .collect();
        Chunk {
            sigs,
            keys,
            band_keys,
            ids,
        }
    }
}
