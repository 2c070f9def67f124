//! Executors: [`local`] runs a whole job in this process (MinHash as the tasks of [`tasks`] on
//! rayon threads, resumable; SimHash in memory, [`memory`]); [`tasks`] is also what
//! `corpus-dedup task` runs on a cluster node; [`merge`] assembles the outputs.

pub mod local;
pub mod memory;
pub mod merge;
pub mod tasks;

use serde::Serialize;

use crate::config::Method;
use crate::stages::candidates::CandidateStats;

/// Time and memory of one stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage: String,
    /// Tasks the stage ran as (1 for the in-memory SimHash pipeline).
    pub tasks: usize,
    /// Wall time of the stage when one process ran it (`run`); otherwise the sum of its tasks'
    /// times.
    pub seconds: f64,
    /// Largest peak RSS of a process that ran one of its tasks, MiB (in `run`: the process peak
    /// so far).
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
    pub candidates: CandidateStats,
    /// Candidate pairs kept as edges (similarity >= threshold). MinHash counts only the pairs
    /// checked: see `exact_checks_skipped`.
    pub verified_pairs: u64,
    /// MinHash: candidate pairs that needed the exact check but whose documents were already
    /// joined by the verify task's edges, so no check could change a cluster (0 for SimHash).
    pub exact_checks_skipped: u64,
    /// Exact shingle sets read from the document store by verification (a verify task keeps
    /// sets for its later windows within a budget, so a document is usually read once); for
    /// SimHash, the sets computed from the text.
    pub documents_exact_sets: u64,
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

/// P(candidate | s) at a few similarities, for the summary.
pub fn s_curve(bands: usize, rows: usize) -> std::collections::BTreeMap<String, f64> {
    [0.5, 0.7, 0.8, 0.9]
        .iter()
        .map(|&s| {
            let p = crate::lsh::candidate_probability(s, bands, rows);
            (format!("{s}"), (p * 1e4).round() / 1e4)
        })
        .collect()
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

/// Writes `summary.json` into the output.
pub fn write_summary(dir: &crate::io::output::OutputDir, summary: &Summary) -> crate::Result<()> {
    let text = serde_json::to_string_pretty(summary).map_err(|e| crate::Error::Output {
        path: "summary.json".into(),
        msg: e.to_string(),
    })?;
    dir.write_bytes("summary.json", text.into_bytes())
}
