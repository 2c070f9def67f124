//! The local executor: runs every stage in this process, with rayon threads inside each stage.
//! Timing and peak memory are recorded per stage for `summary.json`.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::config::{Config, Method};
use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::io::{input, output};
use crate::lsh::candidate_probability;
use crate::simhash;
use crate::stages::{bands, candidates, cluster, fingerprint, manifest, signature, verify};

/// The per-document sketch the method computes.
enum Sketch {
    MinHash(signature::Signatures),
    SimHash(fingerprint::Fingerprints),
}

/// Wall time and process peak RSS after one stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage: &'static str,
    pub seconds: f64,
    /// Process peak resident set size (VmHWM) at the end of the stage, in MiB.
    pub peak_rss_mib: f64,
}

/// The machine-readable summary written to `summary.json` (and printed at the end).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub tool: &'static str,
    pub version: &'static str,
    pub input_files: usize,
    pub documents_in: u64,
    pub documents_kept: u64,
    pub documents_dropped: u64,
    pub null_texts: u64,
    /// Non-null texts with no token after normalisation (kept as singletons).
    pub empty_texts: u64,
    pub text_bytes: u64,
    pub clusters: u64,
    /// Cluster size -> number of clusters of that size (sizes >= 2).
    pub cluster_size_histogram: std::collections::BTreeMap<String, u64>,
    pub candidates: candidates::CandidateStats,
    pub verified_pairs: u64,
    /// Documents whose exact shingle sets were computed for verification.
    pub documents_reshingled: u64,
    pub method: Method,
    /// MinHash: LSH bands and rows (null for SimHash).
    pub lsh_bands: Option<usize>,
    pub lsh_rows: Option<usize>,
    /// MinHash: P(candidate | Jaccard = s) for the chosen bands x rows.
    pub lsh_s_curve: Option<std::collections::BTreeMap<String, f64>>,
    /// SimHash: number of block tables (null for MinHash).
    pub simhash_tables: Option<usize>,
    pub stages: Vec<StageReport>,
    pub total_seconds: f64,
    pub peak_rss_mib: f64,
    pub docs_per_second: f64,
    pub mb_per_second: f64,
    pub threads: usize,
    pub config: serde_json::Value,
}

/// Process peak RSS in MiB (Linux `VmHWM`); 0 where unavailable.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

struct Stages {
    reports: Vec<StageReport>,
    last: Instant,
}

impl Stages {
    fn done(&mut self, stage: &'static str) {
        let now = Instant::now();
        self.reports.push(StageReport {
            stage,
            seconds: (now - self.last).as_secs_f64(),
            peak_rss_mib: peak_rss_mib(),
        });
        self.last = now;
    }
}

fn bar(quiet: bool, len: u64, what: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    pb
}

/// Runs the whole pipeline (MinHash or SimHash) and writes `manifest.parquet` and `summary.json` under
/// `cfg.output`. Returns the summary.
pub fn run(cfg: &Config) -> Result<Summary> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.threads)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {} threads: {e}", cfg.threads)))?;
    pool.install(|| run_in_pool(cfg))
}

fn run_in_pool(cfg: &Config) -> Result<Summary> {
    let start = Instant::now();
    let mut st = Stages {
        reports: Vec::new(),
        last: start,
    };
    let out_dir = output::OutputDir::parse(&cfg.output);
    out_dir.prepare()?;

    // Read.
    let files = input::expand_inputs(&cfg.input)?;
    let pb = bar(cfg.quiet, files.len() as u64, "read");
    let corpus = Corpus::load(&files, cfg, |_| pb.inc(1))?;
    pb.finish_and_clear();
    if !cfg.allow_duplicate_ids {
        corpus.check_unique_ids()?;
    }
    let n = corpus.len();
    st.done("read");

    // Sketch every text: MinHash signatures or SimHash fingerprints.
    let mut text_bytes = 0u64;
    let mut null_texts = 0u64;
    for shard in &corpus.shards {
        text_bytes += shard
            .text
            .iter()
            .flatten()
            .map(|t| t.len() as u64)
            .sum::<u64>();
        null_texts += shard.text.null_count() as u64;
    }
    let tokenizer = cfg.effective_tokenizer();
    let pb = bar(cfg.quiet, n as u64, "signatures");
    let on_docs = |k| pb.inc(k);
    let sketch = match cfg.method {
        Method::Minhash => {
            let perms = signature::permutations(cfg);
            let mut sigs = signature::Signatures::default();
            for shard in &corpus.shards {
                sigs.extend(signature::signature_column(
                    &shard.text,
                    &perms,
                    tokenizer,
                    cfg.ngram,
                    &on_docs,
                ));
            }
            Sketch::MinHash(sigs)
        }
        Method::Simhash => {
            let params = fingerprint::FeatureParams {
                ngram: cfg.simhash_ngram,
                tf_cap: cfg.simhash_tf_cap,
                top_k: cfg.simhash_top_k,
            };
            let columns: Vec<_> = corpus.shards.iter().map(|s| &s.text).collect();
            let stride = n.div_ceil(cfg.simhash_df_sample.max(1)).max(1);
            let df = (cfg.simhash_max_df < 1.0).then(|| {
                fingerprint::DocFrequency::sample(&columns, stride, params, cfg.simhash_max_df)
            });
            let mut fps = fingerprint::Fingerprints::default();
            for (s, shard) in corpus.shards.iter().enumerate() {
                fps.extend(fingerprint::fingerprint_column(
                    &shard.text,
                    corpus.start(s),
                    params,
                    df.as_ref(),
                    &on_docs,
                ));
            }
            Sketch::SimHash(fps)
        }
    };
    pb.finish_and_clear();
    let featureless = match &sketch {
        Sketch::MinHash(s) => s.shingles.iter().filter(|&&c| c == 0).count(),
        Sketch::SimHash(f) => f.features.iter().filter(|&&c| c == 0).count(),
    } as u64;
    let empty_texts = featureless - null_texts;
    st.done("signatures");

    // Bands (LSH bands or SimHash block tables) -> candidates.
    let block_index = simhash::BlockIndex::new(cfg.simhash_blocks, cfg.hamming);
    let key_df = match &sketch {
        Sketch::MinHash(sigs) => bands::band_frame(sigs, cfg.bands, cfg.rows)?,
        Sketch::SimHash(fps) => bands::block_frame(fps, &block_index)?,
    };
    st.done("bands");
    let (pairs, cand_stats) = match &sketch {
        Sketch::MinHash(_) => candidates::candidate_pairs(key_df, cfg.max_bucket_pairs, None)?,
        Sketch::SimHash(fps) => {
            let near = |a: u32, b: u32| fps.distance(a, b) as usize <= cfg.hamming;
            candidates::candidate_pairs(key_df, cfg.simhash_max_bucket, Some(&near))?
        }
    };
    st.done("candidates");

    // Verify.
    let (sets, edges) = match &sketch {
        Sketch::MinHash(sigs) => {
            let need = verify::docs_needing_sets(
                &pairs,
                sigs,
                cfg.verify,
                cfg.threshold,
                cfg.min_shingles,
            );
            let sets = verify::ShingleSets::compute(&corpus, need, tokenizer, cfg.ngram);
            let edges = verify::verify_pairs(&pairs, &sets, sigs, cfg.threshold);
            (sets, edges)
        }
        Sketch::SimHash(fps) => {
            let need = verify::short_docs(&pairs, fps, cfg.simhash_min_features);
            let sets = verify::ShingleSets::compute(&corpus, need, tokenizer, cfg.ngram);
            let short = (cfg.simhash_min_features > 0).then_some((
                &sets,
                cfg.threshold,
                cfg.simhash_min_features,
            ));
            let edges = verify::verify_hamming(&pairs, fps, cfg.hamming, short);
            (sets, edges)
        }
    };
    drop(pairs);
    st.done("verify");

    // Cluster.
    let text_len = |d: u32| corpus.text(d).map_or(0, str::len);
    let priority = |d: u32| {
        let (s, r) = corpus.locate(d);
        corpus.shards[s].priority.as_ref().and_then(|p| p.get(r))
    };
    let clusters = cluster::cluster(n, &edges, &cfg.keep, text_len, priority);
    st.done("cluster");

    // Manifest.
    let similarity = |a: u32, b: u32| match &sketch {
        Sketch::MinHash(sigs) => verify::similarity(a, b, &sets, sigs),
        Sketch::SimHash(fps) => simhash::similarity(fps.distance(a, b)),
    };
    let mut df = manifest::manifest_frame(&corpus, &clusters, similarity)?;
    let metadata = vec![
        (
            "corpus_dedup.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (
            "corpus_dedup.config".to_string(),
            cfg.result_json().to_string(),
        ),
    ];
    out_dir.write_parquet("manifest.parquet", &mut df, metadata)?;
    st.done("manifest");

    let minhash = cfg.method == Method::Minhash;
    let kept = (0..n as u32)
        .filter(|&d| clusters.keeper_of(d) == d)
        .count() as u64;
    let hist = clusters.size_histogram();
    let total = start.elapsed().as_secs_f64();
    let summary = Summary {
        tool: "corpus-dedup",
        version: env!("CARGO_PKG_VERSION"),
        input_files: files.len(),
        documents_in: n as u64,
        documents_kept: kept,
        documents_dropped: n as u64 - kept,
        null_texts,
        empty_texts,
        text_bytes,
        clusters: hist.iter().map(|&(_, c)| c).sum(),
        cluster_size_histogram: hist.iter().map(|&(s, c)| (s.to_string(), c)).collect(),
        candidates: cand_stats,
        verified_pairs: edges.len() as u64,
        documents_reshingled: sets.len() as u64,
        method: cfg.method,
        lsh_bands: minhash.then_some(cfg.bands),
        lsh_rows: minhash.then_some(cfg.rows),
        lsh_s_curve: minhash.then(|| {
            [0.5, 0.7, 0.8, 0.9]
                .iter()
                .map(|&s| {
                    (
                        format!("{s}"),
                        (candidate_probability(s, cfg.bands, cfg.rows) * 1e4).round() / 1e4,
                    )
                })
                .collect()
        }),
        simhash_tables: (!minhash).then_some(block_index.tables()),
        stages: st.reports,
        total_seconds: total,
        peak_rss_mib: peak_rss_mib(),
        docs_per_second: n as f64 / total.max(1e-9),
        mb_per_second: text_bytes as f64 / 1e6 / total.max(1e-9),
        threads: cfg.threads,
        config: cfg.to_json(),
    };
    write_summary(&out_dir, &summary)?;
    Ok(summary)
}

fn write_summary(dir: &output::OutputDir, summary: &Summary) -> Result<()> {
    let text = serde_json::to_string_pretty(summary).map_err(|e| Error::Output {
        path: "summary.json".into(),
        msg: e.to_string(),
    })?;
    dir.write_bytes("summary.json", text.into_bytes())
}
