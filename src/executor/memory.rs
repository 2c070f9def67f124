//! The in-memory pipeline, used for SimHash: every stage in this process on the whole corpus,
//! with rayon threads inside each stage (MinHash runs as resumable tasks, see `local`). Timing and
//! peak memory are recorded per stage for `summary.json`.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use polars::prelude::Column;

use crate::config::{Config, Method};
use crate::corpus::Corpus;
use crate::error::Result;
use crate::executor::{peak_rss_mib, write_summary, StageReport, Summary};
use crate::io::{input, output};
use crate::simhash;
use crate::stages::{bands, candidates, cluster, fingerprint, manifest, verify};

struct Stages {
    reports: Vec<StageReport>,
    last: Instant,
}

impl Stages {
    fn done(&mut self, stage: &'static str) {
        let now = Instant::now();
        self.reports.push(StageReport {
            stage: stage.to_string(),
            tasks: 1,
            seconds: (now - self.last).as_secs_f64(),
            peak_rss_mib: peak_rss_mib(),
        });
        self.last = now;
    }
}

pub fn bar(quiet: bool, len: u64, what: &str) -> ProgressBar {
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

/// Runs the whole SimHash pipeline and writes `manifest.parquet` and `summary.json` under
/// `cfg.output`. Returns the summary. Call it inside the run's thread pool.
pub fn run_simhash(cfg: &Config) -> Result<Summary> {
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

    // Fingerprint every text.
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
    let pb = bar(cfg.quiet, n as u64, "fingerprints");
    let on_docs = |k| pb.inc(k);
    let params = fingerprint::FeatureParams {
        ngram: cfg.simhash_ngram,
        tf_cap: cfg.simhash_tf_cap,
        top_k: cfg.simhash_top_k,
    };
    let columns: Vec<_> = corpus.shards.iter().map(|s| &s.text).collect();
    let stride = n.div_ceil(cfg.simhash_df_sample.max(1)).max(1);
    let df = (cfg.simhash_max_df < 1.0)
        .then(|| fingerprint::DocFrequency::sample(&columns, stride, params, cfg.simhash_max_df));
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
    pb.finish_and_clear();
    let featureless = fps.features.iter().filter(|&&c| c == 0).count() as u64;
    let empty_texts = featureless - null_texts;
    st.done("signatures");

    // Block tables -> candidates (full Hamming check inside each bucket).
    let block_index = simhash::BlockIndex::new(cfg.simhash_blocks, cfg.hamming);
    let key_df = bands::block_frame(&fps, &block_index)?;
    st.done("bands");
    let near = |a: u32, b: u32| fps.distance(a, b) as usize <= cfg.hamming;
    let (pairs, cand_stats) =
        candidates::candidate_pairs(key_df, cfg.simhash_max_bucket, Some(&near))?;
    st.done("candidates");

    // Verify: Hamming distance, plus exact Jaccard for pairs with a short document.
    let need = verify::short_docs(&pairs, &fps, cfg.simhash_min_features);
    let tokenizer = cfg.effective_tokenizer();
    let sets = verify::ShingleSets::compute(|d| corpus.text(d), need, tokenizer, cfg.ngram);
    let short =
        (cfg.simhash_min_features > 0).then_some((&sets, cfg.threshold, cfg.simhash_min_features));
    let edges = verify::verify_hamming(&pairs, &fps, cfg.hamming, short);
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
    let ids: Vec<String> = (0..n as u32).map(|d| corpus.id(d)).collect();
    let mut files_rows = Vec::with_capacity(n);
    for shard in &corpus.shards {
        files_rows.extend((0..shard.len() as u64).map(|r| (shard.file.clone(), r)));
    }
    let keeper = |d: u32| clusters.keeper_of(d);
    let rows = manifest::ManifestRows {
        files: files_rows,
        keep: (0..n as u32).map(|d| keeper(d) == d).collect(),
        duplicate_of: (0..n as u32)
            .map(|d| (keeper(d) != d).then(|| ids[keeper(d) as usize].clone()))
            .collect(),
        similarity: (0..n as u32)
            .map(|d| {
                (keeper(d) != d).then(|| simhash::similarity(fps.distance(d, keeper(d))) as f32)
            })
            .collect(),
        ids,
    };
    let cluster_id: Vec<Option<u64>> = (0..n as u32)
        .map(|d| clusters.cluster_id(d).map(u64::from))
        .collect();
    let mut df = manifest::manifest_frame(rows, Column::new("cluster_id".into(), cluster_id))?;
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
    out_dir.write_parquet(
        "manifest.parquet",
        &mut df,
        metadata,
        output::ParquetUse::Output,
    )?;
    st.done("manifest");

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
        exact_checks_skipped: 0,
        documents_exact_sets: sets.len() as u64,
        method: Method::Simhash,
        lsh_bands: None,
        lsh_rows: None,
        lsh_s_curve: None,
        simhash_tables: Some(block_index.tables()),
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
