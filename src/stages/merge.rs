//! Stage `merge` (one task): the manifest parts -> `manifest.parquet` and `summary.json` in the
//! output, the same for both methods.
//!
//! The parts are streamed into one Parquet file in row groups of exactly [`ROW_GROUP`] rows (the
//! last one shorter), so the file's bytes depend on the documents only, not on how many parts
//! they were computed in. The summary adds up the counters in the tasks' completion markers.

use std::collections::BTreeMap;

use polars::prelude::*;
use serde::Serialize;

use crate::config::{ClusterRule, Method};
use crate::error::{Error, Result};
use crate::index::batch::Written;
use crate::index::{BatchEntry, IndexPlan};
use crate::io::output::{parquet_writer, OutputDir, ParquetUse};
use crate::io::work::{part_file, peak_rss_mib, polars_err, TaskReport};
use crate::plan::require_stage;
use crate::plan::{Plan, Stage};
use crate::stages::candidates::CandidateStats;
use crate::stages::cluster::{ClusterStats, GiantStats};
use crate::stages::lookup::LookupStats;
use crate::stages::signatures::SignatureStats;
use crate::stages::verify::VerifyStats;
use crate::tally::Breakdown;

/// Rows per row group of the merged manifest (polars' default row group size).
pub(crate) const ROW_GROUP: usize = 512 * 512;

/// Wall times of the stages when one process ran them (`run`); `None` for a distributed run.
pub(crate) type StageWalls<'a> = Option<&'a [(Stage, f64)]>;

/// Time and memory of one stage.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StageReport {
    pub stage: String,
    /// Tasks the stage ran as.
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
pub(crate) struct Summary {
    pub tool: &'static str,
    pub version: &'static str,
    pub input_files: usize,
    pub documents_in: u64,
    pub documents_kept: u64,
    pub documents_dropped: u64,
    pub null_texts: u64,
    /// JSON Lines: lines of only whitespace, which are no documents (skipped).
    pub blank_lines: u64,
    /// Non-null texts with no token after normalisation (kept as singletons).
    pub empty_texts: u64,
    pub text_bytes: u64,
    pub clusters: u64,
    /// Documents whose normalised text equals an earlier document's (within the input, or with
    /// `--index` in the index): found by the exact pre-pass, similarity 1.0.
    pub exact_duplicates: u64,
    /// Cluster size -> number of clusters of that size (sizes >= 2).
    pub cluster_size_histogram: BTreeMap<String, u64>,
    pub candidates: CandidateStats,
    /// `--cluster keeper`: the giant buckets, each member compared with the bucket's documents
    /// kept before it (null with `components`).
    pub giant_buckets: Option<GiantStats>,
    /// Candidate pairs kept as edges (similarity >= threshold). MinHash counts only the pairs
    /// checked: see `exact_checks_skipped`.
    pub verified_pairs: u64,
    /// MinHash with `--cluster components`: candidate pairs that needed the exact check but
    /// whose documents were already joined by the verify task's edges, so no check could change
    /// a cluster (0 for SimHash and for `keeper`, which checks every pair).
    pub exact_checks_skipped: u64,
    /// Exact shingle sets read from the document store by verification (a verify task keeps
    /// sets for its later windows within a budget, so a document is usually read once; SimHash:
    /// the sets of pairs with a short document).
    pub documents_exact_sets: u64,
    pub method: Method,
    /// MinHash: LSH bands and rows (null for SimHash).
    pub lsh_bands: Option<usize>,
    pub lsh_rows: Option<usize>,
    /// MinHash: P(candidate | Jaccard = s) for the chosen bands x rows.
    pub lsh_s_curve: Option<BTreeMap<String, f64>>,
    /// SimHash: number of block tables (null for MinHash).
    pub simhash_tables: Option<usize>,
    pub stages: Vec<StageReport>,
    pub total_seconds: f64,
    pub peak_rss_mib: f64,
    pub docs_per_second: f64,
    pub mb_per_second: f64,
    pub threads: usize,
    /// `--index`: what tonight's batch met in the retained index and what the index is now.
    pub index: Option<IndexSummary>,
    /// Documents and text bytes, all and dropped, per input file, script class and
    /// `--report-group` value, and per text length (the report's figures).
    pub breakdown: SummaryBreakdown,
    /// `--reference`: documents holding benchmark text, per reference file and item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contamination: Option<crate::reference::ContaminationSummary>,
    /// `--paragraphs`: paragraphs and bytes removed from kept documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paragraphs: Option<crate::stages::paragraphs::ParagraphSummary>,
    /// `--substrings`: windows and bytes removed from kept documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substrings: Option<crate::stages::substrings::SubstringSummary>,
    /// `--sweep`: what each listed threshold would drop (the run's threshold's row counted the
    /// same way), per `--report-group` value the breakdown keeps too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<crate::stages::cluster::SweepRow>,
    /// Seconds spent writing report.html.
    pub report_seconds: f64,
    pub config: serde_json::Value,
}

/// The breakdown in the summary: `--report-group` values limited to the largest and the
/// outliers ([`crate::report::keep_groups`]).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SummaryBreakdown {
    #[serde(flatten)]
    pub tallies: Breakdown,
    /// `--report-group` values in the input (the summary may keep fewer).
    pub groups_total: usize,
}

/// The retained index part of the summary.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct IndexSummary {
    pub location: String,
    pub batch: String,
    pub window: usize,
    /// The batches tonight was compared with, oldest first.
    pub compared_with: Vec<String>,
    /// Tonight's documents dropped against each earlier batch (their keeper is in it).
    pub dropped_against: BTreeMap<String, u64>,
    /// Tonight's documents dropped against another of tonight's documents.
    pub dropped_within_batch: u64,
    /// The batches in the window now, oldest first.
    pub batches: Vec<String>,
    /// Older batches kept for documents the window renewed (`--cluster keeper`), oldest first.
    pub lingering: Vec<String>,
    /// Documents of each earlier batch tonight's drops renewed (`--cluster keeper`).
    pub renewed: BTreeMap<String, u64>,
    /// The lingering batches and the window's, oldest first, with their documents and what
    /// their own runs dropped (the change from night to night).
    pub history: Vec<BatchHistory>,
    pub batches_added: Vec<String>,
    pub batches_expired: Vec<String>,
    /// Documents the next batch is compared with: the window's, and the lingering batches' live
    /// ones.
    pub documents_indexed: u64,
    /// Bytes of the index on disk (window, lingering, and batches kept for a rerun).
    pub index_bytes_on_disk: u64,
    pub index_bytes_per_document: f64,
    /// Bytes of tonight's batch on disk.
    pub batch_bytes: u64,
    pub batch_bytes_per_document: f64,
    /// Bytes of filters and block tables a lookup of the next batch holds in memory.
    pub filter_bytes_in_memory: u64,
    pub filter_bytes_per_document: f64,
    /// Filter passes (block reads) and candidates of tonight's lookups.
    pub lookup: LookupStats,
    /// The indexed documents tonight was dropped against with the most copies across nights.
    pub most_copied: Vec<crate::stages::cluster::Copied>,
    /// Lingering batches rewritten tonight to the documents still compared with.
    pub compacted: Vec<crate::index::compact::CompactedBatch>,
    /// Seconds the commit spent deciding and compacting them.
    pub compaction_seconds: f64,
}

/// A batch of the window: its documents and its own run's drops (null for batches committed
/// before drops were recorded).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BatchHistory {
    pub batch: String,
    pub documents: u64,
    pub dropped: Option<u64>,
    /// Out of the window, kept for documents the window renewed.
    pub lingering: bool,
}

/// P(candidate | s) at a few similarities, for the summary.
pub(crate) fn s_curve(bands: usize, rows: usize) -> BTreeMap<String, f64> {
    [0.5, 0.7, 0.8, 0.9]
        .iter()
        .map(|&s| {
            let p = crate::lsh::candidate_probability(s, bands, rows);
            (format!("{s}"), (p * 1e4).round() / 1e4)
        })
        .collect()
}

/// Writes `summary.json` into the output.
pub(crate) fn write_summary(dir: &OutputDir, summary: &Summary) -> Result<()> {
    let text = serde_json::to_string_pretty(summary).map_err(|e| Error::Output {
        path: "summary.json".into(),
        source: e.into(),
    })?;
    dir.write_bytes("summary.json", text.into_bytes())
}

/// The merge task: writes the merged manifest and the summary; returns the summary as JSON (the
/// merge task's marker keeps it).
pub(crate) fn run(work: &OutputDir, plan: &Plan, walls: StageWalls) -> Result<serde_json::Value> {
    let cfg = &plan.config;
    let minhash = cfg.method == Method::Minhash;
    let mut reports: Vec<(Stage, Vec<TaskReport>)> = Vec::new();
    for stage in plan.stages().into_iter().filter(|&s| s != Stage::Merge) {
        reports.push((stage, require_stage(work, plan, stage)?));
    }
    let out = OutputDir::parse(&cfg.output);
    out.prepare()?;
    out.write_with("manifest.parquet", |w| {
        write_manifest(w, work, plan, manifest_metadata(plan))
    })?;
    if !cfg.sweep.is_empty() {
        let name = crate::stages::sweep::BELOW;
        let below = work.read(name)?.ok_or_else(|| Error::WorkFile {
            path: work.location(name),
            source: "missing; the cluster task writes it: rerun the run".into(),
        })?;
        out.write_bytes(crate::stages::sweep::DROPS, below)?;
    }
    let of = |s: Stage| -> &[TaskReport] {
        reports
            .iter()
            .find(|(x, _)| *x == s)
            .map_or(&[], |(_, r)| r.as_slice())
    };
    let Totals {
        mut sig,
        cand,
        ver,
        cl,
        breakdown,
        groups_total,
    } = Totals::of(plan, &of);
    let index = match &plan.index {
        Some(ip) => Some(commit_index(
            work,
            plan,
            ip,
            &cl,
            of(Stage::Lookup),
            of(Stage::Index),
        )?),
        None => None,
    };
    let stages = stage_reports(&reports, walls);
    let mut sweep = cl.sweep.clone();
    for row in &mut sweep {
        row.groups.retain(|g, _| breakdown.by_group.contains_key(g));
    }
    let total: f64 = stages.iter().map(|s| s.seconds).sum();
    let paragraphs = cfg.paragraphs.as_ref().map(|pc| {
        crate::stages::paragraphs::ParagraphSummary::gather(
            pc.min_bytes,
            of(Stage::Paragraphs).iter().map(TaskReport::stats),
            &breakdown.by_file,
        )
    });
    let substrings = cfg.substrings.as_ref().map(|sc| {
        crate::stages::substrings::SubstringSummary::gather(
            sc.min_bytes,
            of(Stage::Substrings).iter().map(TaskReport::stats),
            (of(Stage::Settle).iter())
                .map(|t| t.stats::<crate::stages::sources::SourceStats>())
                .map(|s| s.listed)
                .sum(),
            &breakdown.by_file,
        )
    });
    let mut summary = Summary {
        tool: "corpus-dedup",
        version: env!("CARGO_PKG_VERSION"),
        input_files: plan.files.len(),
        documents_in: plan.documents,
        documents_kept: cl.documents_kept,
        documents_dropped: plan.documents - cl.documents_kept,
        null_texts: sig.null_texts,
        blank_lines: plan.files.iter().map(|f| f.blank_lines).sum(),
        empty_texts: sig.empty_texts,
        text_bytes: sig.text_bytes,
        clusters: cl.clusters,
        exact_duplicates: cl.exact_duplicates,
        cluster_size_histogram: cl.cluster_size_histogram.clone(),
        candidates: cand,
        giant_buckets: cl.giant_buckets.clone(),
        verified_pairs: ver.verified_pairs,
        exact_checks_skipped: ver.exact_checks_skipped,
        documents_exact_sets: ver.documents_exact_sets,
        method: cfg.method,
        lsh_bands: minhash.then_some(cfg.bands),
        lsh_rows: minhash.then_some(cfg.rows),
        lsh_s_curve: minhash.then(|| s_curve(cfg.bands, cfg.rows)),
        simhash_tables: (!minhash).then(|| plan.block_index().tables()),
        stages,
        total_seconds: total,
        peak_rss_mib: peak_rss_mib(),
        docs_per_second: plan.documents as f64 / total.max(1e-9),
        mb_per_second: sig.text_bytes as f64 / 1e6 / total.max(1e-9),
        threads: cfg.threads,
        index,
        breakdown: SummaryBreakdown {
            tallies: breakdown,
            groups_total,
        },
        contamination: cfg.reference.as_ref().map(|_| {
            crate::reference::ContaminationSummary::gather(
                std::mem::take(&mut sig.reference),
                std::mem::take(&mut sig.contaminated),
                cl.contaminated_duplicates,
            )
        }),
        paragraphs,
        substrings,
        sweep,
        report_seconds: 0.0,
        config: cfg.to_json(),
    };
    // The report is built from the summary (less its own time) and the manifest just written.
    let start = std::time::Instant::now();
    let report = crate::report::build_with(
        &cfg.output,
        serde_json::to_value(&summary).unwrap_or_default(),
    )?;
    let page = crate::report::html::render(&report);
    summary.report_seconds = start.elapsed().as_secs_f64();
    write_summary(&out, &summary)?;
    out.write_bytes(crate::report::REPORT, page.into_bytes())?;
    Ok(serde_json::to_value(&summary).unwrap_or_default())
}

/// The manifest's key-value metadata: version, the configuration a rerun must match, the
/// inputs, and the reference files (`--reference`).
fn manifest_metadata(plan: &Plan) -> Vec<(String, String)> {
    let mut metadata = vec![
        (
            "corpus_dedup.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (
            "corpus_dedup.config".to_string(),
            plan.config.result_json().to_string(),
        ),
        (
            crate::results::INPUTS_KEY.to_string(),
            crate::results::inputs_json(plan).to_string(),
        ),
    ];
    if !plan.reference.is_empty() {
        metadata.push((
            crate::results::REFERENCE_KEY.to_string(),
            serde_json::json!(plan.reference).to_string(),
        ));
    }
    metadata
}

/// The stages' counters summed over their tasks' markers.
struct Totals {
    sig: SignatureStats,
    cand: CandidateStats,
    ver: VerifyStats,
    cl: ClusterStats,
    breakdown: Breakdown,
    /// `--report-group` values before the report keeps the outliers.
    groups_total: usize,
}

impl Totals {
    fn of<'a>(plan: &Plan, of: &dyn Fn(Stage) -> &'a [TaskReport]) -> Totals {
        let mut sig = SignatureStats::default();
        for r in of(Stage::Signatures) {
            let s: SignatureStats = r.stats();
            sig.documents += s.documents;
            sig.text_bytes += s.text_bytes;
            sig.null_texts += s.null_texts;
            sig.empty_texts += s.empty_texts;
            sig.contaminated.extend(s.contaminated);
            if sig.reference.is_empty() {
                sig.reference = s.reference;
            }
        }
        let mut cand = CandidateStats::default();
        // The run's own layout (`--sweep`'s bands follow it).
        for r in of(Stage::Candidates).iter().take(plan.run_candidates()) {
            let s: CandidateStats = r.stats();
            cand.shared_buckets += s.shared_buckets;
            cand.largest_bucket = cand.largest_bucket.max(s.largest_bucket);
            cand.star_buckets += s.star_buckets;
            cand.giant_buckets += s.giant_buckets;
        }
        let mut ver = VerifyStats::default();
        for r in of(Stage::Verify).iter().chain(of(Stage::Exact)) {
            let s: VerifyStats = r.stats();
            ver.candidate_pairs += s.candidate_pairs;
            ver.verified_pairs += s.verified_pairs;
            ver.documents_exact_sets += s.documents_exact_sets;
            ver.exact_checks_skipped += s.exact_checks_skipped;
        }
        // Distinct pairs: each is counted by the verify task of its first document's part.
        cand.candidate_pairs = ver.candidate_pairs;
        let cl: ClusterStats = of(Stage::Cluster)
            .first()
            .map(TaskReport::stats)
            .unwrap_or_default();
        let mut breakdown = Breakdown::default();
        for r in of(Stage::Manifest) {
            breakdown.merge(r.stats());
        }
        let groups_total = breakdown.by_group.len();
        let overall = (plan.documents - cl.documents_kept) as f64 / plan.documents.max(1) as f64;
        breakdown.by_group =
            crate::report::keep_groups(std::mem::take(&mut breakdown.by_group), overall);
        Totals {
            sig,
            cand,
            ver,
            cl,
            breakdown,
            groups_total,
        }
    }
}

/// Each stage's tasks, wall time (the local run's, else the tasks' sum) and peak memory, and
/// the merge's.
fn stage_reports(reports: &[(Stage, Vec<TaskReport>)], walls: StageWalls) -> Vec<StageReport> {
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
        peak_rss_mib: peak_rss_mib(),
    });
    stages
}

/// Adds tonight's batch to the index (after the manifest is written, before the summary) and
/// reports what happened.
fn commit_index(
    work: &OutputDir,
    plan: &Plan,
    ip: &IndexPlan,
    cl: &ClusterStats,
    lookups: &[TaskReport],
    written: &[TaskReport],
) -> Result<IndexSummary> {
    let mut w = Written::default();
    for r in written {
        w += r.stats::<Written>();
    }
    let mut lookup = LookupStats::default();
    for r in lookups {
        let s: LookupStats = r.stats();
        lookup.matched += s.matched;
        lookup.exact += s.exact;
        lookup.filter_passes += s.filter_passes;
        lookup.candidates += s.candidates;
        lookup.filter_bytes = lookup.filter_bytes.max(s.filter_bytes);
    }
    // SimHash: the feature filter tonight sampled becomes the index's (kept for every batch).
    let frequencies = if plan.samples_features() {
        work.read(crate::io::work::FREQUENCIES)?
    } else {
        None
    };
    let dropped = plan.documents - cl.documents_kept;
    // `keeper` batches hold the kept documents only (stages::index::Numbering).
    let held = match plan.config.cluster {
        ClusterRule::Keeper => Some(cl.documents_kept),
        ClusterRule::Components => None,
    };
    let added = BatchEntry {
        name: ip.batch.clone(),
        dir: ip.dir.clone(),
        documents: plan.documents,
        held,
        bytes: w.bytes,
        filter_bytes: w.memory,
        dropped: Some(dropped),
        lingering: false,
        renews: ip
            .compare
            .iter()
            .filter_map(|b| Some((b.dir.clone(), *cl.renewed.get(&b.name)?)))
            .collect(),
        compacted: None,
    };
    let c = crate::index::commit(ip, added, frequencies, plan.bands())?;
    // A lingering batch counts the documents still compared with.
    let compare_next: Vec<BatchEntry> = c.lingering.iter().chain(&c.window).cloned().collect();
    let alive = crate::index::renew::alive(&ip.dir(), &compare_next)?;
    let documents: u64 = compare_next
        .iter()
        .zip(&alive)
        .map(|(b, a)| a.as_ref().map_or(b.held(), |a| a.len() as u64))
        .sum();
    let per = |bytes: u64, docs: u64| (bytes as f64 / docs.max(1) as f64 * 10.0).round() / 10.0;
    let against: u64 = cl.dropped_against.values().sum();
    Ok(IndexSummary {
        location: ip.location.clone(),
        batch: ip.batch.clone(),
        window: ip.window,
        compared_with: ip.compare.iter().map(|b| b.name.clone()).collect(),
        dropped_against: cl.dropped_against.clone(),
        dropped_within_batch: dropped - against,
        history: c
            .lingering
            .iter()
            .chain(&c.window)
            .map(|b| BatchHistory {
                batch: b.name.clone(),
                documents: b.documents,
                dropped: b.dropped,
                lingering: b.lingering,
            })
            .collect(),
        batches: c.window.iter().map(|b| b.name.clone()).collect(),
        lingering: c.lingering.iter().map(|b| b.name.clone()).collect(),
        renewed: cl.renewed.clone(),
        most_copied: cl.most_copied.clone(),
        compacted: c.compacted.clone(),
        compaction_seconds: c.compaction_seconds,
        batches_added: c.batches_added,
        batches_expired: c.batches_expired,
        documents_indexed: documents,
        index_bytes_on_disk: c.bytes_on_disk,
        index_bytes_per_document: per(c.bytes_on_disk, documents),
        batch_bytes: w.bytes,
        batch_bytes_per_document: per(w.bytes, held.unwrap_or(plan.documents)),
        filter_bytes_in_memory: c.filter_bytes,
        filter_bytes_per_document: per(c.filter_bytes, documents),
        lookup,
    })
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
        source: e.into(),
    };
    // `--paragraphs`: a part's packed drop_spans become the output's list column.
    let part = |p: usize| -> Result<DataFrame> {
        let mut df = work.read_parquet(&part_file("manifest", p))?;
        if let Ok(packed) = df.column("drop_spans") {
            let list = crate::stages::drop_spans::unpack_spans(packed)?;
            df.with_column(list).map_err(polars_err("merge"))?;
        }
        Ok(df)
    };
    let mut pending = part(0)?;
    // The only file this task writes: its columns are encoded on polars' threads.
    let mut writer = parquet_writer(w, metadata, ParquetUse::Output)
        .set_parallel(true)
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
