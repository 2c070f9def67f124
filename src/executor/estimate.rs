//! What a run will need on disk, said before it starts: the work directory at its largest, and
//! per stage its tasks and the bytes it writes.
//!
//! Measured, not guessed: the plan's stages run on a sample of the input (the first rows of up to
//! [`SAMPLE_FILES`] files spread over the list, [`SAMPLE_DOCS`] documents in all, one thread, a
//! scratch directory), and again on half of it; what a document more wrote between the two (a
//! task's fixed bytes cancel out) is scaled to the whole input. The sample never reads more than
//! its rows (the start of a file; an object-store file is fetched whole, so only the smallest of
//! those is sampled). With `--index` the sample is the first batch of an empty index in its
//! scratch directory: it keeps the files an indexed run keeps (the band rows for the index stage,
//! the store's signatures), but has no lookup (it would need tonight's index, and writes little);
//! `--reference` is not loaded.
//! The store, key and band files, most of the work directory, grow with the documents: within
//! 6% on the development corpora. What grows with the pairs does not: a sample holds a fraction
//! of each document's near-duplicates when they are spread over the corpus, so with
//! `--work-keys remade` the pair-signatures and keys stages are underestimated (0.25-0.92 of
//! the work directory there: dev-large's pairs are mostly across its shards); a disk that fills
//! anyway fails naming the file, and the rerun resumes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::executor::run_task;
use crate::io::output::OutputDir;
use crate::plan::{Plan, Stage};

/// Documents the sample holds at most.
pub(crate) const SAMPLE_DOCS: u64 = 2_048;
/// Files the sample's rows come from at most.
pub(crate) const SAMPLE_FILES: usize = 8;
/// What a run will need.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Estimate {
    /// Documents of the sample the rates were measured on.
    pub sample_documents: u64,
    /// The work directory at its largest (the band rows go once the candidates are found; every
    /// other work file stays until the run succeeds).
    pub work_bytes: u64,
    pub stages: BTreeMap<String, StageEstimate>,
}

/// One stage's needs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct StageEstimate {
    pub tasks: u64,
    /// Work files the stage writes (the merge: the output).
    pub written_bytes: u64,
}

impl Estimate {
    /// One line for a person, beside the free bytes of the work directory's disk when known.
    pub(crate) fn summary(&self, free: Option<u64>) -> String {
        let bytes = crate::report::numbers::bytes;
        let free = free.map_or(String::new(), |free| {
            format!(" ({} free there)", bytes(free))
        });
        format!(
            "estimate: the work directory takes up to {}{free}, measured on {} sampled documents",
            bytes(self.work_bytes),
            self.sample_documents
        )
    }
}

/// Measures `plan`'s stages on a sample of its input and scales them to the whole.
pub(crate) fn estimate(plan: &Plan) -> Result<Estimate> {
    // The first MiB of some files the plan did not count: how many documents the sample may
    // read of them.
    let heads: BTreeMap<usize, (u64, u64)> = crate::plan::heads(&plan.files)?.into_iter().collect();
    let (Some(half), Some(whole)) = (
        sample_plan(plan, &heads, SAMPLE_DOCS / 2),
        sample_plan(plan, &heads, SAMPLE_DOCS),
    ) else {
        return Ok(Estimate::default());
    };
    let documents = plan.documents_or_estimate();
    let dir = scratch_dir();
    let result = (|| {
        let small = run_sample(&half, &dir.join("half"))?;
        let large = run_sample(&whole, &dir.join("whole"))?;
        Ok(scale(plan, documents, &small, &large))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A plan of the first rows of up to [`SAMPLE_FILES`] files spread over `plan`'s list, `docs`
/// documents at most, one part, no reference, and with `--index` a first batch (no batch to
/// compare with; [`run_sample`] puts its index in scratch); None for an empty input. A file
/// the plan did not count gives the documents of its first MiB at most (`heads`).
fn sample_plan(plan: &Plan, heads: &BTreeMap<usize, (u64, u64)>, docs: u64) -> Option<Plan> {
    let known: Vec<crate::plan::InputFile> = (plan.files.iter().enumerate())
        .filter_map(|(i, f)| match f.uncounted {
            false => Some(f.clone()),
            true => heads.get(&i).map(|&(rows, _)| {
                let mut g = f.clone();
                g.rows = rows;
                g.row_groups = vec![rows];
                g.uncounted = false;
                g
            }),
        })
        .collect();
    let with_rows: Vec<&crate::plan::InputFile> = known.iter().filter(|f| f.rows > 0).collect();
    // Object-store files are fetched whole to read any row of them: only the smallest is
    // sampled when the input holds one.
    let remote = with_rows
        .iter()
        .filter(|f| crate::io::object::is_url(&f.file))
        .min_by_key(|f| f.bytes);
    let chosen: Vec<&crate::plan::InputFile> = match remote {
        Some(f) => vec![*f],
        None => crate::plan::spread(&with_rows, SAMPLE_FILES),
    };
    if chosen.is_empty() {
        return None;
    }
    let per_file = (docs / chosen.len() as u64).max(1);
    let mut files = Vec::with_capacity(chosen.len());
    let mut next = 0u64;
    for f in chosen {
        // Its first row group (or the share of it the sample takes), read from the file's start.
        let first_group = f.row_groups.first().copied().unwrap_or(f.rows);
        let rows = per_file.min(f.rows).min(first_group.max(1));
        let mut g = f.clone();
        g.rows = rows;
        g.first_doc = next;
        g.row_groups = vec![rows];
        g.group_starts = Vec::new();
        // Read from the start like any counted file: no `lines` stage for a sample.
        g.ranges = Vec::new();
        next += rows;
        files.push(g);
    }
    let mut config = plan.config.clone();
    config.reference = None;
    let index = plan.index.as_ref().map(|ip| crate::index::IndexPlan {
        compare: Vec::new(),
        generation: 0,
        frequencies: None,
        fold: Vec::new(),
        folded_through: 0,
        removed: Vec::new(),
        ..ip.clone()
    });
    config.threads = 1;
    config.quiet = true;
    Some(Plan {
        config,
        files,
        documents: next,
        parts: vec![(0, next)],
        part_files: Vec::new(),
        bucket_ranges: 1,
        index,
        reference: Vec::new(),
        ..plan.clone()
    })
}

fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!(
        "corpus-dedup-estimate-{}-{nanos}",
        std::process::id()
    ))
}

/// The files under `dir` and their sizes.
fn dir_files(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => dir_files(&e.path(), out),
            _ => {
                out.insert(e.path(), e.metadata().map_or(0, |m| m.len()));
            }
        }
    }
}

/// What a stage wrote (files new or changed since `before`) and the bytes under `dir` after it.
fn written_since(dir: &Path, before: &BTreeMap<PathBuf, u64>) -> (u64, BTreeMap<PathBuf, u64>) {
    let mut after = BTreeMap::new();
    dir_files(dir, &mut after);
    let written = (after.iter())
        .filter(|(path, bytes)| before.get(*path) != Some(bytes))
        .map(|(_, bytes)| bytes)
        .sum();
    (written, after)
}

/// What one sample's run wrote and spent.
struct SampleRun {
    documents: u64,
    /// Per stage: bytes written.
    stages: Vec<(Stage, u64)>,
    /// The work directory at its largest, after some stage (the band rows are removed once the
    /// candidates stage is done; every other work file is kept until success).
    work_bytes: u64,
}

/// Runs `sample`'s stages with work and output under `dir`.
fn run_sample(sample: &Plan, dir: &Path) -> Result<SampleRun> {
    let mut sample = sample.clone();
    let (out, work_dir) = (dir.join("out"), dir.join("work"));
    sample.config.output = out.display().to_string();
    if let Some(ip) = &mut sample.index {
        ip.location = dir.join("index").display().to_string();
        sample.config.index = Some(ip.location.clone());
    }
    std::fs::create_dir_all(&out).map_err(|e| Error::Output {
        path: out.display().to_string(),
        source: e.into(),
    })?;
    let work = OutputDir::Local(work_dir.clone()).scratch();
    work.write_bytes(crate::io::work::PLAN, sample.to_json())?;
    let (mut stages, mut peak) = (Vec::new(), 0);
    let mut files = BTreeMap::new();
    dir_files(dir, &mut files);
    for stage in sample.stages() {
        for t in 0..sample.tasks(stage) {
            run_task(&work, &sample, stage, t, None)?;
        }
        let (written, after) = written_since(dir, &files);
        stages.push((stage, written));
        let work_now: u64 = (after.iter())
            .filter(|(path, _)| path.starts_with(&work_dir))
            .map(|(_, bytes)| bytes)
            .sum();
        peak = peak.max(work_now);
        files = after;
    }
    Ok(SampleRun {
        documents: sample.documents,
        stages,
        work_bytes: peak,
    })
}

/// The whole run's needs (of `documents` documents) from two samples: the larger one's figures
/// plus, for each further document, what a document more cost between the two.
fn scale(plan: &Plan, documents: u64, small: &SampleRun, large: &SampleRun) -> Estimate {
    let n = documents as f64;
    let (s1, s2) = (small.documents as f64, large.documents as f64);
    let extra = (n - s2).max(0.0);
    let grown = |a: f64, b: f64| match s2 > s1 {
        true => b + extra * ((b - a) / (s2 - s1)).max(0.0),
        false => b * n / s2.max(1.0),
    };
    let mut est = Estimate {
        sample_documents: large.documents,
        work_bytes: grown(small.work_bytes as f64, large.work_bytes as f64) as u64,
        ..Estimate::default()
    };
    for (i, &(stage, written)) in large.stages.iter().enumerate() {
        let before = small
            .stages
            .get(i)
            .filter(|x| x.0 == stage)
            .map_or(0, |x| x.1);
        let bytes = grown(before as f64, written as f64);
        est.stages.insert(
            stage.name().to_string(),
            StageEstimate {
                tasks: plan.tasks(stage) as u64,
                written_bytes: bytes as u64,
            },
        );
    }
    est
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(documents: u64, work_bytes: u64, written: u64) -> SampleRun {
        SampleRun {
            documents,
            stages: vec![(Stage::Signatures, written)],
            work_bytes,
        }
    }

    #[test]
    fn a_document_more_costs_what_it_cost_between_the_samples() {
        // 100 fixed bytes, then 10 per document: 10,100 for a thousand documents.
        let plan_of = |documents| Plan {
            documents,
            ..crate::plan::tests::tiny_plan()
        };
        let (small, large) = (sample(100, 1_100, 1_000), sample(200, 2_100, 2_000));
        let e = scale(&plan_of(1_000), 1_000, &small, &large);
        assert_eq!(e.work_bytes, 10_100);
        assert_eq!(e.stages["signatures"].written_bytes, 10_000);
        assert_eq!(e.sample_documents, 200);
        // A corpus no larger than the sample: the sample's own figures.
        let e = scale(&plan_of(200), 200, &small, &large);
        assert_eq!(e.work_bytes, 2_100);
        // Both samples the whole corpus (fewer documents than the half sample asks for).
        let e = scale(
            &plan_of(50),
            50,
            &sample(50, 700, 600),
            &sample(50, 700, 600),
        );
        assert_eq!(e.work_bytes, 700);
    }
}
