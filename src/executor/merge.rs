//! The merge task: manifest parts -> `manifest.parquet` and `summary.json` in the output.
//!
//! The parts are streamed into one Parquet file in row groups of exactly [`ROW_GROUP`] rows (the
//! last one shorter), so the file's bytes depend on the documents only, not on how many parts
//! they were computed in. The summary adds up the tasks' completion markers.

use polars::prelude::*;

use crate::config::Method;
use crate::error::{Error, Result};
use crate::executor::tasks::{
    require_stage, ClusterStats, SignatureStats, TaskReport, VerifyStats,
};
use crate::executor::{s_curve, write_summary, StageReport, Summary};
use crate::io::output::{parquet_writer, OutputDir, ParquetUse};
use crate::plan::{Plan, Stage, STAGES};
use crate::stages::candidates::CandidateStats;

/// Rows per row group of the merged manifest (polars' default row group size).
pub const ROW_GROUP: usize = 512 * 512;

/// Wall times of the stages when one process ran them (`run`); `None` for a distributed run.
pub type StageWalls<'a> = Option<&'a [(Stage, f64)]>;

fn stats<T: serde::de::DeserializeOwned + Default>(r: &TaskReport) -> T {
    serde_json::from_value(r.stats.clone()).unwrap_or_default()
}

/// Writes the merged manifest and the summary; returns the summary as JSON (the merge task's
/// marker keeps it).
pub fn merge(work: &OutputDir, plan: &Plan, walls: StageWalls) -> Result<serde_json::Value> {
    let cfg = &plan.config;
    let mut reports: Vec<(Stage, Vec<TaskReport>)> = Vec::new();
    for stage in STAGES.iter().copied().filter(|&s| s != Stage::Merge) {
        reports.push((stage, require_stage(work, plan, stage)?));
    }
    let out = OutputDir::parse(&cfg.output);
    out.prepare()?;
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
    out.write_with("manifest.parquet", |w| {
        write_manifest(w, work, plan, metadata)
    })?;

    // Summary from the markers.
    let of = |s: Stage| -> &[TaskReport] {
        reports
            .iter()
            .find(|(x, _)| *x == s)
            .map_or(&[], |(_, r)| r.as_slice())
    };
    let mut sig = SignatureStats::default();
    for r in of(Stage::Signatures) {
        let s: SignatureStats = stats(r);
        sig.documents += s.documents;
        sig.text_bytes += s.text_bytes;
        sig.null_texts += s.null_texts;
        sig.empty_texts += s.empty_texts;
    }
    let mut cand = CandidateStats::default();
    for r in of(Stage::Candidates) {
        let s: CandidateStats = stats(r);
        cand.shared_buckets += s.shared_buckets;
        cand.largest_bucket = cand.largest_bucket.max(s.largest_bucket);
        cand.star_buckets += s.star_buckets;
    }
    let mut ver = VerifyStats::default();
    for r in of(Stage::Verify) {
        let s: VerifyStats = stats(r);
        ver.candidate_pairs += s.candidate_pairs;
        ver.verified_pairs += s.verified_pairs;
        ver.documents_exact_sets += s.documents_exact_sets;
        ver.exact_checks_skipped += s.exact_checks_skipped;
    }
    // Distinct pairs: each is counted by the verify task of its first document's part.
    cand.candidate_pairs = ver.candidate_pairs;
    let cl: ClusterStats = of(Stage::Cluster).first().map(stats).unwrap_or_default();
    let mut stages: Vec<StageReport> = reports
        .iter()
        .map(|(stage, rs)| StageReport {
            stage: stage.name().to_string(),
            tasks: rs.len(),
            seconds: walls
                .and_then(|w| w.iter().find(|(s, _)| s == stage).map(|&(_, t)| t))
                .unwrap_or_else(|| rs.iter().map(|r| r.seconds).sum()),
            peak_rss_mib: rs.iter().map(|r| r.peak_rss_mib).fold(0.0, f64::max),
        })
        .collect();
    stages.push(StageReport {
        stage: "merge".into(),
        tasks: 1,
        seconds: 0.0,
        peak_rss_mib: crate::executor::peak_rss_mib(),
    });
    let total: f64 = stages.iter().map(|s| s.seconds).sum();
    let summary = Summary {
        tool: "corpus-dedup",
        version: env!("CARGO_PKG_VERSION"),
        input_files: plan.files.len(),
        documents_in: plan.documents,
        documents_kept: cl.documents_kept,
        documents_dropped: plan.documents - cl.documents_kept,
        null_texts: sig.null_texts,
        empty_texts: sig.empty_texts,
        text_bytes: sig.text_bytes,
        clusters: cl.clusters,
        cluster_size_histogram: cl.cluster_size_histogram,
        candidates: cand,
        verified_pairs: ver.verified_pairs,
        exact_checks_skipped: ver.exact_checks_skipped,
        documents_exact_sets: ver.documents_exact_sets,
        method: Method::Minhash,
        lsh_bands: Some(cfg.bands),
        lsh_rows: Some(cfg.rows),
        lsh_s_curve: Some(s_curve(cfg.bands, cfg.rows)),
        simhash_tables: None,
        stages,
        total_seconds: total,
        peak_rss_mib: crate::executor::peak_rss_mib(),
        docs_per_second: plan.documents as f64 / total.max(1e-9),
        mb_per_second: sig.text_bytes as f64 / 1e6 / total.max(1e-9),
        threads: cfg.threads,
        config: cfg.to_json(),
    };
    write_summary(&out, &summary)?;
    Ok(serde_json::to_value(&summary).unwrap_or_default())
}

/// Streams the manifest parts into `w` in fixed-size row groups.
fn write_manifest(
    w: &mut dyn std::io::Write,
    work: &OutputDir,
    plan: &Plan,
    metadata: Vec<(String, String)>,
) -> Result<()> {
    let err = |e: PolarsError| Error::Output {
        path: "manifest.parquet".into(),
        msg: e.to_string(),
    };
    let part = |p: usize| work.read_parquet(&format!("manifest/p{p:05}.parquet"));
    let mut pending = part(0)?;
    let mut writer = parquet_writer(w, metadata, ParquetUse::Output)
        .batched(pending.schema())
        .map_err(err)?;
    // One batch of one chunk is one row group.
    let mut emit = |mut df: DataFrame| {
        df.rechunk_mut();
        writer.write_batch(&df).map_err(err)
    };
    for p in 1..=plan.parts.len() {
        while pending.height() >= ROW_GROUP {
            let rest = pending.slice(ROW_GROUP as i64, pending.height() - ROW_GROUP);
            emit(pending.slice(0, ROW_GROUP))?;
            pending = rest;
        }
        if p < plan.parts.len() {
            pending.vstack_mut_owned(part(p)?).map_err(err)?;
        }
    }
    if pending.height() > 0 {
        emit(pending)?;
    }
    writer.finish().map(|_| ()).map_err(err)
}
